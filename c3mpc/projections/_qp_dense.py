r"""Batched dense active-set solver for the N small QPs of the convex projection (seed eq. 24).

Each knot k solves ``min ½ δᵀ P_k δ + q_kᵀ δ  s.t.  C_k δ ≥ b_k`` with a strictly convex,
block-diagonal ``P_k`` that changes only when the LCS or the weight ``U`` changes, while ``q_k``
(and ``b_k`` through ``c``) change every ADMM iteration. So:

* :func:`factor` computes, once per LCS, ``J0_k = L_k^{-T}`` from the Cholesky factor
  ``P_k = L_k L_kᵀ`` for all knots in one batched call;
* :func:`solve_all` runs the Goldfarb-Idnani dual active-set method (:mod:`c3mpc._dense_qp`)
  knot by knot inside one compiled loop, starting from the unconstrained minimiser
  ``-P_k^{-1} q_k = -J0 J0ᵀ q_k``;
* :func:`certify` checks every knot's point against the KKT conditions of its QP to a relative
  tolerance, recovering the multipliers of the active constraints from one batched
  least-squares solve (normal equations masked to the active set). A knot that is not
  certified is left to the caller (the OSQP path of :class:`ConvexQPProjection`).
"""

from __future__ import annotations

import numpy as np

from lcs._lemke_kernel import njit

from .._dense_qp import GI_OPTIMAL, gi_solve

__all__ = ["factor", "solve_all", "certify"]


def factor(P: np.ndarray) -> np.ndarray | None:
    """``J0 = L^{-T}`` of every (N, n, n) symmetric positive definite ``P``.

    Returns None if any Cholesky fails (P not numerically positive definite).
    """
    try:
        L = np.linalg.cholesky(P)
    except np.linalg.LinAlgError:
        return None
    Linv = np.linalg.inv(L)
    if not np.all(np.isfinite(Linv)):
        return None
    return np.ascontiguousarray(np.swapaxes(Linv, 1, 2))


@njit(cache=True)
def _solve_all(J0, q, C, b, tol, max_iter, x_out, act_out, status_out, iters_out):
    N, n = q.shape
    x0 = np.empty(n)
    for k in range(N):
        # x0 = -J0 (J0ᵀ q)
        w = J0[k].T @ q[k]
        x0[:] = -(J0[k] @ w)
        st, it = gi_solve(J0[k], x0, C[k], b[k], tol[k], max_iter, x_out[k], act_out[k])
        status_out[k] = st
        iters_out[k] = it


def solve_all(J0: np.ndarray, q: np.ndarray, C: np.ndarray, b: np.ndarray,
              rel_tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Goldfarb-Idnani on every knot.

    Args:
        J0: (N, n, n) from :func:`factor`.
        q: (N, n) linear terms.
        C: (N, m, n) constraint rows of ``C δ ≥ b``.
        b: (N, m) right-hand sides.
        rel_tol: feasibility tolerance relative to ``max(1, max|b_k|)``.

    Returns:
        ``(x (N, n), active (N, m) bool, optimal (N,) bool, iterations (N,))``.
    """
    N, n = q.shape
    m = b.shape[1]
    x = np.zeros((N, n))
    act = np.zeros((N, m), np.int64)
    status = np.zeros(N, np.int64)
    iters = np.zeros(N, np.int64)
    tol = rel_tol * np.maximum(1.0, np.abs(b).max(axis=1, initial=0.0))
    _solve_all(np.ascontiguousarray(J0), np.ascontiguousarray(q), np.ascontiguousarray(C),
               np.ascontiguousarray(b), tol, 20 * (n + 1), x, act, status, iters)
    optimal = (status == GI_OPTIMAL) & np.all(np.isfinite(x), axis=1)
    return x, act.astype(bool), optimal, iters


def certify(x: np.ndarray, active: np.ndarray, P: np.ndarray, q: np.ndarray, C: np.ndarray,
            b: np.ndarray, tol: float) -> np.ndarray:
    """(N,) bool: knot k's ``x_k`` satisfies the KKT conditions of its QP to ``tol`` (relative).

    Multipliers ``y ≥ 0`` of the active rows solve ``C_Aᵀ y = P x + q`` in the least-squares
    sense (``(S C Cᵀ S + I − S) y = S C (P x + q)`` with S the active-set mask); then primal
    feasibility ``C x − b ≥ −tol·s_p``, dual feasibility ``y ≥ −tol·s_d``, stationarity
    ``|P x + q − Cᵀ y| ≤ tol·s_d`` and complementarity (inactive rows have y = 0 by
    construction) are checked, with ``s_p = max(1, |b|, |x|)``, ``s_d = max(1, |q|, |y|)``.
    """
    S = active.astype(float)
    r = np.einsum("kij,kj->ki", P, x) + q
    M = S[:, :, None] * C
    G = M @ np.swapaxes(M, 1, 2)
    m = b.shape[1]
    G[:, np.arange(m), np.arange(m)] += 1.0 - S
    try:
        y = np.linalg.solve(G, np.einsum("kij,kj->ki", M, r)[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        return np.zeros(x.shape[0], dtype=bool)
    y = S * y
    slack = np.einsum("kij,kj->ki", C, x) - b
    stat = np.abs(r - np.einsum("kji,kj->ki", C, y)).max(axis=1)
    s_p = np.maximum(1.0, np.maximum(np.abs(b).max(axis=1), np.abs(x).max(axis=1)))
    s_d = np.maximum(1.0, np.maximum(np.abs(q).max(axis=1), np.abs(y).max(axis=1)))
    return (np.all(np.isfinite(y), axis=1) & np.all(np.isfinite(x), axis=1)
            & (slack.min(axis=1) >= -tol * s_p) & (y.min(axis=1) >= -tol * s_d)
            & (stat <= tol * s_d))
