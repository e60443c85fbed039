"""Jacobi-preconditioned Conjugate Residual (Saad 2003, Alg. 6.20 with a preconditioner), run for a
fixed number of iterations as in seed 004 (10 by default) and Macklin et al. 2019 §8.2. Written
against the array's own namespace, so NumPy and CuPy arrays both work (:mod:`.backend`)."""

from __future__ import annotations

import numpy as np

__all__ = ["conjugate_residual"]


def _namespace(a):
    """numpy, or cupy for a CuPy array (imported only then)."""
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def conjugate_residual(K, b: np.ndarray, iterations: int = 10, x0: np.ndarray | None = None,
                       diagonal: np.ndarray | None = None) -> np.ndarray:
    """Approximate K⁻¹b for a symmetric positive semi-definite K after ``iterations``
    preconditioned CR iterations (diagonal preconditioner; stops early on a zero residual).

    Args:
        K: (m, m) array, or a callable x ↦ K x (then ``diagonal`` is required).
        b: (m,) right-hand side.
        iterations: fixed iteration count (seed 004: 10).
        x0: start (default 0).
        diagonal: (m,) diag(K) for the preconditioner (default: from the array K).
    """
    xp = _namespace(b)
    if callable(K):
        if diagonal is None:
            raise ValueError("diagonal is required when K is given as a callable")
        matvec = K
    else:
        K = np.asarray(K)
        matvec = K.__matmul__
        diagonal = np.diag(K) if diagonal is None else diagonal
    d = xp.array(diagonal, dtype=float)
    d[~(d > 0)] = 1.0
    Minv = 1.0 / d
    x = xp.zeros_like(b) if x0 is None else x0.copy()
    r = b - matvec(x) if x0 is not None else b.copy()
    z = Minv * r
    p = z.copy()
    Kz = matvec(z)
    Kp = Kz.copy()
    rho = z @ Kz
    for _ in range(iterations):
        if not rho > 0:
            break
        MKp = Minv * Kp
        denom = Kp @ MKp
        if not denom > 0:
            break
        alpha = rho / denom
        x += alpha * p
        z -= alpha * MKp
        Kz = matvec(z)
        rho_new = z @ Kz
        beta = rho_new / rho
        rho = rho_new
        p = z + beta * p
        Kp = Kz + beta * Kp
    return x
