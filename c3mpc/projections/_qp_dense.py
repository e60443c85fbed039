r"""Batched dense active-set solver for the N small QPs of the convex projection (seed eq. 24).

Each knot k solves ``min ½ δᵀ P_k δ + q_kᵀ δ  s.t.  C_k δ ≥ b_k`` with a strictly convex,
block-diagonal ``P_k`` that changes only when the LCS or the weight ``U`` changes, while ``q_k``
(and ``b_k`` through ``c``) change every ADMM iteration. So:

* :func:`factor` computes, once per LCS, ``J0_k = L_k^{-T}`` from the Cholesky factor
  ``P_k = L_k L_kᵀ`` for all knots in one batched call;
* :func:`solve_all` runs the Goldfarb-Idnani dual active-set method (:mod:`c3mpc._dense_qp`)
  knot by knot inside one compiled loop, starting from the unconstrained minimiser
  ``-P_k^{-1} q_k = -J0 J0ᵀ q_k``;
* every knot's point is checked against the KKT conditions of its QP to a relative tolerance,
  recovering the multipliers of the active constraints by least squares (normal equations of
  the active rows), in the same compiled loop; :func:`certify` is the batched pure-numpy
  reference of that check (tested against it). A knot that is not certified is left to the
  caller (the OSQP path of :class:`ConvexQPProjection`).
"""

from __future__ import annotations

import numpy as np

from lcs._lemke_kernel import njit

from .._dense_qp import GI_OPTIMAL, gi_solve

__all__ = ["factor", "solve_all", "certify", "WarmStart"]


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
def _certify_one(x, act, P, q, C, b, tol):
    """Compiled twin of :func:`certify` for one knot (same conditions, same scales)."""
    n = x.shape[0]
    m = b.shape[0]
    r = P @ x + q
    idx = np.flatnonzero(act)
    na = idx.size
    y = np.zeros(m)
    if na > 0:
        CA = np.empty((na, n))
        for a in range(na):
            CA[a] = C[idx[a]]
        G = CA @ CA.T
        g = CA @ r
        # Cholesky of the (SPD when C_A has full row rank) normal matrix; fail on a tiny pivot
        if not _chol_inplace(G, na):
            return False
        L = G  # lower triangle
        z = np.empty(na)
        for i in range(na):
            s = g[i]
            for t in range(i):
                s -= L[i, t] * z[t]
            z[i] = s / L[i, i]
        ya = np.empty(na)
        for i in range(na - 1, -1, -1):
            s = z[i]
            for t in range(i + 1, na):
                s -= L[t, i] * ya[t]
            ya[i] = s / L[i, i]
        for a in range(na):
            y[idx[a]] = ya[a]
    return _kkt_ok(x, y, r, C, b, q, tol)


@njit(cache=True)
def _kkt_ok(x, y, r, C, b, q, tol):
    """KKT check of ``x`` with multipliers ``y`` (zero off the active set), ``r = P x + q``."""
    stat = np.abs(r - C.T @ y).max()
    slack = C @ x - b
    s_p = max(1.0, max(np.abs(b).max(), np.abs(x).max()))
    s_d = max(1.0, max(np.abs(q).max(), np.abs(y).max()))
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        return False
    comp = np.abs(y * slack).max()
    return (slack.min() >= -tol * s_p and y.min() >= -tol * s_d and stat <= tol * s_d
            and comp <= tol * s_p * s_d)


@njit(cache=True)
def _chol_inplace(G, na):
    """Lower Cholesky factor of G[:na, :na] in place; False on a tiny pivot (singular)."""
    gmax = 0.0
    for i in range(na):
        gmax = max(gmax, G[i, i])
    for j in range(na):
        s = G[j, j]
        for t in range(j):
            s -= G[j, t] * G[j, t]
        if not s > 1e-14 * gmax:
            return False
        G[j, j] = np.sqrt(s)
        for i in range(j + 1, na):
            s2 = G[i, j]
            for t in range(j):
                s2 -= G[i, t] * G[j, t]
            G[i, j] = s2 / G[j, j]
    return True


@njit(cache=True)
def _warm_one(J0, P, q, C, b, x0, kkt_tol, W, act, LG, valid, x_out):
    """Try last call's active set: equality-constrained solve in the range space of P^{-1}.

    With ``W = J0ᵀ Cᵀ`` (so ``C P^{-1} Cᵀ = Wᵀ W``), the multipliers of the active rows solve
    ``(W_Aᵀ W_A) y = b_A − C_A x0`` and ``x = x0 + J0 W_A y``. The Cholesky factor of
    ``W_Aᵀ W_A`` is kept in ``LG`` while the active set (and the LCS) stay the same.
    Returns True when the point passes the KKT check.
    """
    n = x0.shape[0]
    m = b.shape[0]
    idx = np.flatnonzero(act)
    na = idx.size
    if not valid[0]:
        for a in range(na):
            for c in range(a + 1):
                s = 0.0
                for i in range(n):
                    s += W[i, idx[a]] * W[i, idx[c]]
                LG[a, c] = s
        if not _chol_inplace(LG, na):
            return False
        valid[0] = True
    ya = np.empty(na)
    for a in range(na):  # rhs = b_A - C_A x0
        s = b[idx[a]]
        for i in range(n):
            s -= C[idx[a], i] * x0[i]
        ya[a] = s
    for i in range(na):  # forward, then backward substitution with LG
        s = ya[i]
        for t in range(i):
            s -= LG[i, t] * ya[t]
        ya[i] = s / LG[i, i]
    for i in range(na - 1, -1, -1):
        s = ya[i]
        for t in range(i + 1, na):
            s -= LG[t, i] * ya[t]
        ya[i] = s / LG[i, i]
    wy = np.zeros(n)
    y = np.zeros(m)
    for a in range(na):
        y[idx[a]] = ya[a]
        for i in range(n):
            wy[i] += W[i, idx[a]] * ya[a]
    x = x0 + J0 @ wy
    if not _kkt_ok(x, y, P @ x + q, C, b, q, kkt_tol):
        return False
    x_out[:] = x
    return True


@njit(cache=True)
def _solve_all(J0, P, q, C, b, tol, max_iter, kkt_tol, x_out, act_out, status_out, iters_out,
               cert_out, use_warm, W, wact, LG, wvalid):
    N, n = q.shape
    x0 = np.empty(n)
    for k in range(N):
        # x0 = -J0 (J0ᵀ q)
        w = J0[k].T @ q[k]
        x0[:] = -(J0[k] @ w)
        if use_warm and _warm_one(J0[k], P[k], q[k], C[k], b[k], x0, kkt_tol, W[k], wact[k],
                                  LG[k], wvalid[k:k + 1], x_out[k]):
            act_out[k] = wact[k]
            status_out[k] = GI_OPTIMAL
            iters_out[k] = 0
            cert_out[k] = True
            continue
        st, it = gi_solve(J0[k], x0, C[k], b[k], tol[k], max_iter, x_out[k], act_out[k])
        status_out[k] = st
        iters_out[k] = it
        cert_out[k] = st == GI_OPTIMAL and _certify_one(x_out[k], act_out[k], P[k], q[k], C[k],
                                                        b[k], kkt_tol)
        if use_warm:  # next call starts from this active set (its factor is rebuilt lazily)
            wact[k] = act_out[k]
            wvalid[k] = False


class WarmStart:
    """Active sets of the previous call and their factors, per knot (for :func:`solve_all`).

    Valid for one ``(J0, C)``: make a new one when the LCS or U changes.
    """

    def __init__(self, J0: np.ndarray, C: np.ndarray):
        self.W = np.ascontiguousarray(np.swapaxes(J0, 1, 2) @ np.swapaxes(C, 1, 2))  # J0ᵀ Cᵀ
        N, m = C.shape[0], C.shape[1]
        self.active = np.zeros((N, m), np.int64)
        self.LG = np.zeros((N, m, m))
        self.valid = np.zeros(N, np.bool_)


def solve_all(J0: np.ndarray, P: np.ndarray, q: np.ndarray, C: np.ndarray, b: np.ndarray,
              kkt_tol: float = 1e-9, rel_tol: float = 1e-10, warm: WarmStart | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Goldfarb-Idnani on every knot, each point KKT-certified (compiled twin of :func:`certify`).

    Args:
        J0: (N, n, n) from :func:`factor` of ``P``.
        P: (N, n, n) Hessians (for the certificate).
        q: (N, n) linear terms.
        C: (N, m, n) constraint rows of ``C δ ≥ b``.
        b: (N, m) right-hand sides.
        kkt_tol: relative tolerance of the KKT certificate.
        rel_tol: Goldfarb-Idnani's feasibility tolerance relative to ``max(1, max|b_k|)``.
        warm: if given, each knot first tries its active set of the previous call (an exact
            equality-constrained solve with a cached factor, accepted only if it passes the
            KKT check; iterations 0), else runs Goldfarb-Idnani; updated in place.

    Returns:
        ``(x (N, n), active (N, m) bool, certified (N,) bool, iterations (N,))``; certified
        means: the method ended optimal and the point passed the KKT check.
    """
    N, n = q.shape
    m = b.shape[1]
    x = np.zeros((N, n))
    act = np.zeros((N, m), np.int64)
    status = np.zeros(N, np.int64)
    iters = np.zeros(N, np.int64)
    cert = np.zeros(N, np.bool_)
    tol = rel_tol * np.maximum(1.0, np.abs(b).max(axis=1, initial=0.0))
    if warm is None:
        W, wact, LG, wvalid = np.zeros((N, 1, 1)), np.zeros((N, m), np.int64), \
            np.zeros((N, 1, 1)), np.zeros(N, np.bool_)
    else:
        W, wact, LG, wvalid = warm.W, warm.active, warm.LG, warm.valid
    _solve_all(J0, np.ascontiguousarray(P), np.ascontiguousarray(q), np.ascontiguousarray(C),
               np.ascontiguousarray(b), tol, 20 * (n + 1), float(kkt_tol), x, act, status, iters,
               cert, warm is not None, W, wact, LG, wvalid)
    return x, act.astype(bool), cert, iters


def certify(x: np.ndarray, active: np.ndarray, P: np.ndarray, q: np.ndarray, C: np.ndarray,
            b: np.ndarray, tol: float) -> np.ndarray:
    """(N,) bool: knot k's ``x_k`` satisfies the KKT conditions of its QP to ``tol`` (relative).

    Multipliers ``y ≥ 0`` of the active rows solve ``C_Aᵀ y = P x + q`` in the least-squares
    sense (``(S C Cᵀ S + I − S) y = S C (P x + q)`` with S the active-set mask); then primal
    feasibility ``C x − b ≥ −tol·s_p``, dual feasibility ``y ≥ −tol·s_d``, stationarity
    ``|P x + q − Cᵀ y| ≤ tol·s_d`` and complementarity ``|y_i (C x − b)_i| ≤ tol·s_p·s_d``
    (inactive rows have y = 0 by construction) are checked, with ``s_p = max(1, |b|, |x|)``,
    ``s_d = max(1, |q|, |y|)``.
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
    comp = np.abs(y * slack).max(axis=1)
    return (np.all(np.isfinite(y), axis=1) & np.all(np.isfinite(x), axis=1)
            & (slack.min(axis=1) >= -tol * s_p) & (y.min(axis=1) >= -tol * s_d)
            & (stat <= tol * s_d) & (comp <= tol * s_p * s_d))
