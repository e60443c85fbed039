r"""The LCP projection of C3 (seed 003 §V-B3, "LCP Projection").

In the limiting case where the projection weight ``U`` puts no penalty on the force entries,
the projection (23) has optimal value 0: keep the state and input of ``v_k`` and simulate the
complementarity constraint there,

.. math::

    \delta_k^x = v_k^x, \qquad \delta_k^u = v_k^u, \qquad
    \delta_k^\lambda = \mathrm{LCP}(E_k v_k^x + H_k v_k^u + c_k,\; F_k) .

``U`` is therefore ignored. All N knots are solved in ONE call of
:func:`lcs.solve_lcp_batch` (compiled Lemke, lexicographic pivoting).

This module also holds the input checks shared by every projection in this package
(:func:`_validate`, :func:`natural_residual`).
"""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np

from lcs import LCPStatus, solve_lcp_batch
from lcs.errors import LCSValueError

from ..errors import C3TypeError, C3ValueError
from .base import Projection, ProjectionData, ProjectionResult, ProjectionStatus

__all__ = ["LCPProjection", "natural_residual", "slack"]


# ----------------------------------------------------------------------------- shared helpers
def _as_float(name: str, a: object) -> np.ndarray:
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise C3TypeError(f"{name} must be a real array, got {type(a).__name__}") from exc
    return arr


def _check_finite(name: str, a: np.ndarray) -> None:
    if not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise C3ValueError(f"{name} has a non-finite entry {a[tuple(bad)]} at index "
                           f"{tuple(int(i) for i in bad)}")


def _data_arrays(data: ProjectionData, n_cols: int | None = None, u_dim: int | None = None
                 ) -> tuple[np.ndarray, ...]:
    """Shape-checked float arrays ``(E, F, H, c, U)`` of ``data`` (finiteness not checked).

    Args:
        data: LCS data of the N knots.
        n_cols, u_dim: the square ``U`` blocks are expected of size ``u_dim``, default
            ``n_cols``, default n_z = n_x + n_lambda + n_u.
    """
    if not isinstance(data, ProjectionData):
        raise C3TypeError(f"data must be a ProjectionData, got {type(data).__name__}")
    E = _as_float("E", data.E)
    F = _as_float("F", data.F)
    H = _as_float("H", data.H)
    c = _as_float("c", data.c)
    U = _as_float("U", data.U)
    if E.ndim != 3:
        raise C3ValueError(f"E must have shape (N, n_lambda, n_x), got {E.shape}")
    N, n_lam, n_x = E.shape
    if H.ndim != 3 or H.shape[:2] != (N, n_lam):
        raise C3ValueError(f"H must have shape ({N}, {n_lam}, n_u), got {H.shape}")
    n_cols = n_x + n_lam + H.shape[2] if n_cols is None else n_cols
    u_dim = n_cols if u_dim is None else u_dim
    for name, arr, shape in (("F", F, (N, n_lam, n_lam)), ("c", c, (N, n_lam)),
                             ("U", U, (N, u_dim, u_dim))):
        if arr.shape != shape:
            raise C3ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    return E, F, H, c, U


def _validate(v: object, data: ProjectionData, n_cols: int | None = None,
              u_dim: int | None = None) -> tuple[np.ndarray, ...]:
    """Check ``v`` and ``data`` (shapes and finiteness) and return float arrays
    ``(v, E, F, H, c, U)``.

    Args:
        v: the points to project, expected (N, n_cols); None checks ``data`` only.
        data: LCS data of the N knots.
        n_cols: expected number of columns of ``v`` (default n_z = n_x + n_lambda + n_u).
        u_dim: expected size of the square ``U`` blocks (default ``n_cols``).
    """
    E, F, H, c, U = _data_arrays(data, n_cols, u_dim)
    N, n_lam, n_x = E.shape
    n_z = n_x + n_lam + H.shape[2]
    n_cols = n_z if n_cols is None else n_cols
    if v is None:  # data only
        vv = np.zeros((N, n_cols))
    else:
        vv = _as_float("v", v)
        if vv.shape != (N, n_cols):
            raise C3ValueError(f"v must have shape ({N}, {n_cols}) (N knots x "
                               f"{'n_z' if n_cols == n_z else 'n_z + n_lambda'}), "
                               f"got {vv.shape}")
    for name, arr in (("v", vv), ("E", E), ("F", F), ("H", H), ("c", c), ("U", U)):
        _check_finite(name, arr)
    return vv, E, F, H, c, U


def slack(delta: np.ndarray, data: ProjectionData) -> np.ndarray:
    """``E x + F lambda + H u + c`` of every knot of ``delta`` (N, >= n_z); shape (N, n_lambda)."""
    E, F, H, c = (np.asarray(a, dtype=float) for a in (data.E, data.F, data.H, data.c))
    n_x, n_lam = E.shape[2], E.shape[1]
    n_u = H.shape[2]
    x = delta[:, :n_x]
    lam = delta[:, n_x:n_x + n_lam]
    u = delta[:, n_x + n_lam:n_x + n_lam + n_u]
    return (np.einsum("kij,kj->ki", E, x) + np.einsum("kij,kj->ki", F, lam)
            + np.einsum("kij,kj->ki", H, u) + c)


def natural_residual(delta: np.ndarray, data: ProjectionData) -> np.ndarray:
    """Per-knot complementarity violation ``max_i |min(lambda_i, s_i)|`` with
    ``s = E x + F lambda + H u + c``; shape (N,). Zero exactly on the complementarity set."""
    n_x, n_lam = data.E.shape[2], data.E.shape[1]
    lam = delta[:, n_x:n_x + n_lam]
    s = slack(delta, data)
    if n_lam == 0:
        return np.zeros(delta.shape[0])
    return np.abs(np.minimum(lam, s)).max(axis=1)


# ----------------------------------------------------------------------------- LCP projection
class LCPProjection(Projection):
    """The paper's LCP-based approximate projection (seed 003 §V-B3).

    ``delta^x = v^x``, ``delta^u = v^u`` and ``delta^lambda`` solves
    ``LCP(E v^x + H v^u + c, F)``; the weight ``U`` is not used. Exact (and the true projection)
    when ``U`` has no penalty on lambda.

    Args:
        tol: relative natural-residual tolerance of the Lemke solver (``solve_lcp_batch``).
        max_iterations: Lemke pivot budget per knot; default ``50 (n_lambda + 1)``.
        covering_vector: (n_lambda,) strictly positive Lemke covering vector; default ones.
        accept_residual: a knot whose Lemke basis is INACCURATE (relative natural residual
            above ``tol``) is still returned, with status APPROXIMATE, when that residual is at
            most ``accept_residual``; above it the knot is FAILED. ``0`` disables this.

    Per-knot status: OPTIMAL (LCP solved), APPROXIMATE (see ``accept_residual``), INFEASIBLE
    (Lemke ray termination with a PSD ``F``: the LCP has no solution), FAILED (ray termination
    with a non-PSD ``F``, pivot budget exhausted, or too inaccurate). INFEASIBLE and FAILED rows
    of ``delta`` are NaN. ``iterations`` holds the Lemke pivot counts.
    """

    name: ClassVar[str] = "lcp"

    def __init__(self, tol: float = 1e-9, max_iterations: int | None = None,
                 covering_vector: np.ndarray | None = None, accept_residual: float = 1e-6):
        if not (np.isfinite(tol) and tol > 0):
            raise C3ValueError(f"tol must be a positive number, got {tol}")
        if max_iterations is not None and int(max_iterations) < 1:
            raise C3ValueError(f"max_iterations must be >= 1, got {max_iterations}")
        if not (np.isfinite(accept_residual) and accept_residual >= 0):
            raise C3ValueError(f"accept_residual must be >= 0, got {accept_residual}")
        self.tol = float(tol)
        self.max_iterations = None if max_iterations is None else int(max_iterations)
        self.covering_vector = (None if covering_vector is None
                                else np.asarray(covering_vector, dtype=float))
        self.accept_residual = float(accept_residual)

    def project(self, v: np.ndarray, data: ProjectionData, admm_iteration: int = 0
                ) -> ProjectionResult:
        """Project all knots with one batched Lemke call."""
        t0 = time.perf_counter()
        v, E, F, H, c, _ = _validate(v, data)
        N, n_lam, n_x = E.shape
        delta = v.copy()
        if n_lam == 0:
            return ProjectionResult(delta, np.zeros(N, np.int64), time.perf_counter() - t0,
                                    np.zeros(N, np.int64))
        x = v[:, :n_x]
        u = v[:, n_x + n_lam:]
        q = np.einsum("kij,kj->ki", E, x) + np.einsum("kij,kj->ki", H, u) + c
        # a time-invariant LCS (all F_k equal, e.g. a broadcast view) is passed once
        Fs = F[:1] if (F.strides[0] == 0 or np.all(F == F[:1])) else F
        try:
            res = solve_lcp_batch(Fs, q, tol=self.tol, max_iterations=self.max_iterations,
                                  covering_vector=self.covering_vector)
        except LCSValueError as exc:  # e.g. a bad covering vector
            raise C3ValueError(str(exc)) from exc
        st = np.asarray(res.status)
        status = np.full(N, ProjectionStatus.FAILED, dtype=np.int64)
        status[st == LCPStatus.SOLVED] = ProjectionStatus.OPTIMAL
        status[st == LCPStatus.INFEASIBLE] = ProjectionStatus.INFEASIBLE
        if self.accept_residual > 0:
            close = (st == LCPStatus.INACCURATE) & (res.residual <= self.accept_residual)
            status[close] = ProjectionStatus.APPROXIMATE
        delta[:, n_x:n_x + n_lam] = res.z
        delta[status >= ProjectionStatus.INFEASIBLE] = np.nan
        return ProjectionResult(delta, status, time.perf_counter() - t0,
                                np.asarray(res.iterations, dtype=np.int64))
