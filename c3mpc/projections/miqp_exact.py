r"""Exact MIQP projection of C3 (seed 003 eq. 23) by a compiled branch and bound.

Problem, per knot (``z = [x; lambda; u]``)::

    min_delta (delta - v)^T U (delta - v)
    s.t.      0 <= lambda  ⟂  s = E x + F lambda + H u + c >= 0

Method
------
1. **Reduction to a least-distance problem (LDP).** Write the ``p = 2 n_lambda`` constraint
   functions as ``g_j^T delta + h_j`` (``j < n_lambda``: ``lambda_j``; ``j >= n_lambda``: the
   slack ``s_j``). Coordinates of ``delta`` that appear in no constraint (a state column of E or
   an input column of H that is all zero) are eliminated exactly: for fixed constrained
   coordinates ``C`` the unconstrained ones ``D`` are optimal at
   ``delta_D = v_D - P (delta_C - v_C)`` with ``U_DD P = U_DC``, which leaves the Schur
   complement ``S = U_CC - U_CD P`` as the metric on ``C``. With ``S = L L^T`` and
   ``t = L^T (delta_C - v_C)`` the projection becomes ``min |t|^2`` subject to
   ``a_j^T t + r_j >= 0`` with ``a_j = L^{-1} g_j`` and ``r_j = g_j^T v + h_j``. Everything the
   search needs is the Gram matrix ``K = A^T A = G_C^T S^{-1} G_C`` (p x p, depends on U, E, F, H
   only, so it is cached between calls) and ``r`` (depends on v and c, computed per call). The
   primal point is recovered from the multipliers ``mu`` as ``delta = v + T^T mu``.
2. **Node QPs** (one complementarity pair either free, ``lambda_j = 0`` or ``s_j = 0``) are
   solved with the Goldfarb-Idnani dual active-set method applied to the LDP, working only with
   ``K``: an LDL^T factorisation of the active Gram block is updated on every add (bordering) and
   drop (rank-one update), linearly dependent constraints take the pure dual step, and a
   violated constraint that cannot be added proves infeasibility. Equality constraints (fixed
   pairs) are added with the orientation that reduces their violation and are never dropped.
   The dual objective of every GI iterate is a valid lower bound of the node, so a node is
   abandoned as soon as it reaches the incumbent (early cut-off).
3. **Branch and bound**, depth first. A child inherits its parent's active set and factorisation
   (one or two GI steps per node instead of a cold solve). Branching is on the free pair whose
   both members are positive with the largest ``min(w_lambda/|a_lambda|, w_s/|a_s|)`` (the
   distance to the nearer of the two hyperplanes). Since a node's optimum ``t*`` is the
   projection onto a convex superset of the child's feasible set, every child satisfies
   ``|t'|^2 >= |t*|^2 + (w_j/|a_j|)^2``; this bound orders the two children (the smaller first)
   and prunes them without a QP solve. The first dive usually ends at the optimum. Optional
   initial incumbents (both off by default, they did not pay for themselves on the paper's
   plants): the LCP projection of the paper (``delta_x``, ``delta_u = v``,
   ``delta_lambda = LCP(E v_x + H v_u + c, F)``, compiled Lemke from :mod:`lcs`) and the leaf
   QP of the mode found by the previous call for the same knot (``warm_start``).
4. The incumbent's multipliers get up to three steps of iterative refinement against the active
   constraints' residuals computed directly in ``delta``; active ``lambda`` entries are then set
   to exactly 0 and tiny negative ``lambda`` entries are clipped.

All knots are solved in one compiled call. The reduction (step 1) is cached per knot and redone
only for knots whose E, F, H or U changed (compared element-wise in the kernel); for a diagonal U
it runs on the nonzeros of G only.

Guarantees
----------
* With a positive definite Schur complement ``S`` (true whenever U is positive definite, and
  also for zero weights on coordinates that appear in no constraint, e.g. the cart-pole input
  with ``H = 0``), the result is a global minimiser of eq. 23 up to the relative optimality gap
  ``rel_gap`` (default 1e-9) and the feasibility tolerance ``feas_tol`` (default 1e-10,
  relative to ``max(1, |r|_inf)``). Ties on zero-weight unconstrained coordinates are broken
  by keeping them at ``v`` (zero pivots of ``U_DD`` give zero rows of ``P``; e.g. the
  cart-pole input stays at ``v_u``).
* If a Cholesky pivot of ``S`` is below ``regularization * max(diag S)`` (S singular or nearly
  so: a zero or tiny weight on a coordinate that enters a constraint, e.g. ``U_uu = 0`` with
  ``H != 0``), ``S + eps I`` with ``eps = regularization * max(diag S)`` is used instead and
  reported in :attr:`ExactMIQPProjection.regularization_used`. The result is then the exact
  minimiser of the regularised objective, and its U-objective exceeds the true optimum by at
  most ``eps * |delta*_C - v_C|^2`` for any true minimiser ``delta*`` (the regularisation
  prefers small moves of the zero-weight coordinates). The default ``regularization = 1e-8``
  balances this bias against accuracy: the search works with the Gram matrix K, whose condition
  number grows like ``max(diag S) / eps``; at 1e-10 the complementarity residual of such
  problems degrades to ~1e-7 (vs ~1e-9 at 1e-8).
* INFEASIBLE is returned only when the root relaxation or every leaf is infeasible (GI proves
  it); no big-M constant or variable box is involved, unlike the Gurobi formulation.
* ``max_nodes`` bounds the search; if it runs out (or a node QP hits its iteration cap, which
  indicates numerical trouble) the best incumbent (or, if there is none yet, the LCP
  projection when Lemke solves it) is returned with status APPROXIMATE, else FAILED with NaN.

:func:`reference_projection` (enumeration of every active set, numpy KKT solves) and
:func:`reference_node_qp` are the pure-numpy references the tests compare the kernels against.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np

from lcs._lemke_kernel import enumerate_tiny, lemke, njit

from ..errors import C3ValueError
from .base import Projection, ProjectionData, ProjectionResult, ProjectionStatus
from .lcp import _data_arrays

__all__ = ["ExactMIQPProjection", "reference_projection", "reference_node_qp",
           "solve_node_qp"]

# Node-QP outcomes.
_OPT = 0
_INFEAS = 1
_CUTOFF = 2
_MAXIT = 3

# Knot outcomes (== ProjectionStatus values).
_ST_OPTIMAL = int(ProjectionStatus.OPTIMAL)
_ST_APPROX = int(ProjectionStatus.APPROXIMATE)
_ST_INFEAS = int(ProjectionStatus.INFEASIBLE)
_ST_FAILED = int(ProjectionStatus.FAILED)


# ============================================================================ preprocessing
@njit(cache=True)
def _chol(S, n, thr):
    """In-place lower Cholesky of S[:n, :n]; False if a pivot is <= thr."""
    for j in range(n):
        d = S[j, j]
        for k in range(j):
            d -= S[j, k] * S[j, k]
        if d <= thr:
            return False
        d = np.sqrt(d)
        S[j, j] = d
        for i in range(j + 1, n):
            s = S[i, j]
            for k in range(j):
                s -= S[i, k] * S[j, k]
            S[i, j] = s / d
    return True


@njit(cache=True)
def _psd_solve(A, B, n):
    """A solution X of A X = B for a symmetric PSD A (n x n) with B in its range: LDL^T without
    pivoting in which pivots <= 1e-12 max(diag A) are treated as zero (for a PSD matrix the
    rest of such a column is then negligible too) and the matching components of X set to 0.
    This keeps the zero-weight unconstrained coordinates at v."""
    L = A.copy()
    d = np.zeros(n)
    scale = 0.0
    for j in range(n):
        scale = max(scale, A[j, j])
    thr = 1e-12 * scale
    for j in range(n):
        dj = L[j, j]
        for k in range(j):
            dj -= L[j, k] * L[j, k] * d[k]
        if dj <= thr:
            d[j] = 0.0
            for i in range(j + 1, n):
                L[i, j] = 0.0
            continue
        d[j] = dj
        for i in range(j + 1, n):
            s = L[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k] * d[k]
            L[i, j] = s / dj
    X = B.copy()
    for col in range(B.shape[1]):
        for i in range(n):
            s = X[i, col]
            for k in range(i):
                s -= L[i, k] * X[k, col]
            X[i, col] = s
        for i in range(n - 1, -1, -1):
            s = X[i, col] / d[i] if d[i] > 0.0 else 0.0
            for k in range(i + 1, n):
                s -= L[k, i] * X[k, col]
            X[i, col] = s if d[i] > 0.0 else 0.0
    return X


@njit(cache=True)
def _prepare_diag(G, U, reg, nx, m, posC, idxC, nC, K, T, Sll, Pl):
    """:func:`_prepare_knot` for a diagonal U: S = diag(U_CC), unconstrained coordinates stay
    at v (P = 0), and K = G_C^T S^-1 G_C is accumulated over the nonzeros of G only."""
    nz, p = G.shape
    sd = np.empty(nz)
    scale = 0.0
    for a in range(nC):
        scale = max(scale, U[idxC[a], idxC[a]])
    if scale <= 0.0:
        scale = 1.0
    eps = 0.0
    for a in range(nC):
        if U[idxC[a], idxC[a]] <= reg * scale:
            # (an invalid negative weight is shifted up to reg * scale as well)
            eps = max(eps, reg * scale - min(U[idxC[a], idxC[a]], 0.0))
    for j in range(nz):
        sd[j] = U[j, j] + eps
    for i in range(p):
        for j in range(p):
            K[i, j] = 0.0
        for j in range(nz):
            T[i, j] = 0.0
    nzi = np.empty(p, np.int64)
    for a in range(nC):
        row = idxC[a]
        inv = 1.0 / sd[row]
        cnt = 0
        for col in range(p):
            g = G[row, col]
            if g != 0.0:
                nzi[cnt] = col
                cnt += 1
                T[col, row] = g * inv
        for x in range(cnt):
            i = nzi[x]
            gi = G[row, i] * inv
            for y in range(cnt):
                K[i, nzi[y]] += gi * G[row, nzi[y]]
    for i in range(p):
        K[p, i] = 1.0 / np.sqrt(K[i, i]) if K[i, i] > 0.0 else np.inf
    for i in range(m):
        for j in range(m):
            Sll[i, j] = 0.0
        Sll[i, i] = sd[nx + i]
        for j in range(nz):
            Pl[j, i] = 0.0
        Pl[nx + i, i] = 1.0
    return eps


@njit(cache=True)
def _prepare_knot(E, F, H, U, reg, K, T, Sll, Pl):
    """Reduce one knot to the LDP data (see the module docstring).

    Writes K (p + 1, p): rows 0..p-1 = G_C^T S^-1 G_C, row p = 1 / |a_j| = K_jj^-1/2 (inf
    for a zero normal); T (p, n_z) with delta = v + T^T mu; Sll (m, m) the lambda block of the
    (regularised) metric S; Pl (n_z, m) with delta - v = Pl (lambda - v_lambda) for a point that
    changes only lambda. Returns the regularisation eps added to S (0 if none).
    """
    m, nx = E.shape
    nu = H.shape[1]
    nz = nx + m + nu
    p = 2 * m
    G = np.zeros((nz, p))
    for i in range(m):
        G[nx + i, i] = 1.0
        for j in range(nx):
            G[j, m + i] = E[i, j]
        for j in range(m):
            G[nx + j, m + i] = F[i, j]
        for j in range(nu):
            G[nx + m + j, m + i] = H[i, j]
    # Constrained (C) and unconstrained (D) coordinates.
    posC = -np.ones(nz, np.int64)
    idxC = np.empty(nz, np.int64)
    idxD = np.empty(nz, np.int64)
    nC = 0
    nD = 0
    for j in range(nz):
        used = False
        for col in range(p):
            if G[j, col] != 0.0:
                used = True
                break
        if used:
            posC[j] = nC
            idxC[nC] = j
            nC += 1
        else:
            idxD[nD] = j
            nD += 1
    diag = True  # diagonal U: S = diag(U_CC), no coupling; a sparse fast path
    for a in range(nz):
        for b in range(nz):
            if a != b and U[a, b] != 0.0:
                diag = False
    if diag:
        return _prepare_diag(G, U, reg, nx, m, posC, idxC, nC, K, T, Sll, Pl)
    S = np.empty((nC, nC))
    for a in range(nC):
        for b in range(nC):
            S[a, b] = 0.5 * (U[idxC[a], idxC[b]] + U[idxC[b], idxC[a]])
    P = np.zeros((nD, nC))
    coupled = False
    for a in range(nD):
        for b in range(nC):
            if U[idxD[a], idxC[b]] != 0.0 or U[idxC[b], idxD[a]] != 0.0:
                coupled = True
    if coupled:
        Udd = np.empty((nD, nD))
        for a in range(nD):
            for b in range(nD):
                Udd[a, b] = 0.5 * (U[idxD[a], idxD[b]] + U[idxD[b], idxD[a]])
        Udc = np.empty((nD, nC))
        for a in range(nD):
            for b in range(nC):
                Udc[a, b] = 0.5 * (U[idxD[a], idxC[b]] + U[idxC[b], idxD[a]])
        P = _psd_solve(Udd, Udc, nD)  # a solution of Udd P = Udc (Udc is in range(Udd))
        for a in range(nC):
            for b in range(nC):
                s = 0.0
                for k in range(nD):
                    s += Udc[k, a] * P[k, b]
                S[a, b] -= s
        for a in range(nC):  # re-symmetrise
            for b in range(a):
                s = 0.5 * (S[a, b] + S[b, a])
                S[a, b] = s
                S[b, a] = s
    scale = 0.0
    for a in range(nC):
        scale = max(scale, S[a, a])
    if scale <= 0.0:
        scale = 1.0
    Lc = S.copy()
    eps = 0.0
    if not _chol(Lc, nC, reg * scale):
        eps = reg * scale
        for a in range(nC):
            S[a, a] += eps
        Lc = S.copy()
        shift = max(eps, 1e-12 * scale)
        while not _chol(Lc, nC, 0.0):  # S not PSD beyond round-off (invalid U): grow the shift
            shift *= 10.0
            eps += shift
            for a in range(nC):
                S[a, a] += shift
            Lc = S.copy()
    # X = S^-1 G_C  (nC x p)
    X = np.empty((nC, p))
    for col in range(p):
        for a in range(nC):
            s = G[idxC[a], col]
            for k in range(a):
                s -= Lc[a, k] * X[k, col]
            X[a, col] = s / Lc[a, a]
        for a in range(nC - 1, -1, -1):
            s = X[a, col]
            for k in range(a + 1, nC):
                s -= Lc[k, a] * X[k, col]
            X[a, col] = s / Lc[a, a]
    for i in range(p):
        for j in range(i, p):
            s = 0.0
            for a in range(nC):
                s += G[idxC[a], i] * X[a, j]
            K[i, j] = s
            K[j, i] = s
        K[p, i] = 1.0 / np.sqrt(K[i, i]) if K[i, i] > 0.0 else np.inf
    for a in range(nC):
        for col in range(p):
            T[col, idxC[a]] = X[a, col]
    for a in range(nD):
        for col in range(p):
            s = 0.0
            for b in range(nC):
                s -= P[a, b] * X[b, col]
            T[col, idxD[a]] = s
    for i in range(m):
        pi = posC[nx + i]
        for j in range(m):
            Sll[i, j] = S[pi, posC[nx + j]]
        for j in range(nz):
            Pl[j, i] = 0.0
        Pl[nx + i, i] = 1.0
        for a in range(nD):
            Pl[idxD[a], i] = -P[a, pi]
    return eps


# ============================================================================ node QP (GI)
# Packed per-level state (one level = one node of the current dive):
#   LVF[lv, 0:p+1, :]  unit lower factor L of the active Gram block K[A, A] = L D L^T
#   LVF[lv, p+1, :]    D          LVF[lv, p+2, :]  multipliers u (by active position)
#   LVF[lv, p+3, :]    w = constraint values at the node point (by constraint)
#   LVF[lv, p+4, :]    1.0 where the constraint is an equality (fixed pair member)
#   LVF[lv, p+5, :]    1.0 where the constraint is active
#   LVF[lv, p+6, 0]    node value, [1] bound of the pending sibling
#   LVI[lv, 0:p]       active constraint indices, LVI[lv, p] their number,
#   LVI[lv, p+1]       pending sibling constraint (-1 if none)
# Work rows WS[0..3] (y, ell, rdir, vt), WS[4] = r, WS[5] = LCP q, WS[6] = LCP z.
# Kx[k, 0:p, :] = K, Kx[k, p, :] = 1 / |a_j| = K_jj^-1/2 (inf for a zero normal).
# Few array arguments per call matter here: every array argument of a non-inlined numba call
# costs reference counting, which dominated the run time of an earlier, unpacked version.
_WY, _WELL, _WRD, _WVT, _WR, _WQ, _WZ = range(7)


@njit(cache=True)
def _ldl_drop(LVF, LVI, lv, WS, nA, l, p):
    """Remove active position l from the LDL^T factor (rank-one update of the trailing block).
    Returns the new number of active constraints."""
    RD = p + 1
    RU = p + 2
    alpha = LVF[lv, RD, l]
    for i in range(l + 1, nA):
        WS[_WVT, i] = LVF[lv, i, l]
    for j in range(l + 1, nA):
        pj = WS[_WVT, j]
        dj = LVF[lv, RD, j]
        dnew = dj + alpha * pj * pj
        beta = pj * alpha / dnew
        alpha = dj * alpha / dnew
        LVF[lv, RD, j] = dnew
        for i in range(j + 1, nA):
            WS[_WVT, i] -= pj * LVF[lv, i, j]
            LVF[lv, i, j] += beta * WS[_WVT, i]
    for i in range(l, nA - 1):
        LVI[lv, i] = LVI[lv, i + 1]
        LVF[lv, RU, i] = LVF[lv, RU, i + 1]
        LVF[lv, RD, i] = LVF[lv, RD, i + 1]
        for b in range(l):
            LVF[lv, i, b] = LVF[lv, i + 1, b]
        for b in range(l, i):
            LVF[lv, i, b] = LVF[lv, i + 1, b + 1]
    return nA - 1


@njit(cache=True)
def _gi(Kx, k, LVF, LVI, lv, WS, ftol, dep_tol, cutoff, maxit):
    """Goldfarb-Idnani dual active set on the LDP ``min |t|^2, a_j^T t + r_j >= 0 (= 0 if eq)``.

    Continues from the dual-feasible state of level ``lv`` (active set, multipliers, LDL^T
    factor of K[A, A]) with ``r = WS[4]``. Returns (outcome, lower bound, iterations); on _OPT
    the bound is the node optimum |t*|^2 and LVF[lv, p+3] holds the constraint values there.
    """
    p = Kx.shape[2]
    RD = p + 1
    RU = p + 2
    RW = p + 3
    REQ = p + 4
    RIN = p + 5
    nA = LVI[lv, p]
    it = 0
    while True:
        for j in range(p):
            LVF[lv, RW, j] = WS[_WR, j]
        for a in range(nA):
            ua = LVF[lv, RU, a]
            if ua != 0.0:
                ja = LVI[lv, a]
                for j in range(p):  # K is symmetric: row access, contiguous
                    LVF[lv, RW, j] += Kx[k, ja, j] * ua
        lb = 0.0
        for a in range(nA):
            ja = LVI[lv, a]
            lb -= LVF[lv, RU, a] * (WS[_WR, ja] + LVF[lv, RW, ja])
        if lb >= cutoff:
            LVI[lv, p] = nA
            return _CUTOFF, lb, it
        q = -1
        best = 0.0
        for j in range(p):
            if LVF[lv, RIN, j] != 0.0:
                continue
            wj = LVF[lv, RW, j]
            viol = abs(wj) if LVF[lv, REQ, j] != 0.0 else -wj
            if viol > ftol:
                sc = viol * Kx[k, p, j]
                if sc > best:
                    best = sc
                    q = j
        if q < 0:
            LVI[lv, p] = nA
            return _OPT, lb, it
        sigma = 1.0 if LVF[lv, RW, q] < 0.0 else -1.0
        wq = sigma * LVF[lv, RW, q]  # < 0: the oriented constraint is violated
        uq = 0.0
        kappa = Kx[k, q, q]
        while True:
            it += 1
            if it > maxit:
                LVI[lv, p] = nA
                return _MAXIT, lb, it
            # y = L^-1 (sigma K[A, q]); ell = D^-1 y; d = |z|^2; rdir = L^-T ell = K_AA^-1 k
            d = kappa
            for a in range(nA):
                s = sigma * Kx[k, LVI[lv, a], q]
                for b in range(a):
                    s -= LVF[lv, a, b] * WS[_WY, b]
                WS[_WY, a] = s
                e = s / LVF[lv, RD, a]
                WS[_WELL, a] = e
                d -= s * e
            for a in range(nA - 1, -1, -1):
                s = WS[_WELL, a]
                for b in range(a + 1, nA):
                    s -= LVF[lv, b, a] * WS[_WRD, b]
                WS[_WRD, a] = s
            t1 = np.inf
            l = -1
            for a in range(nA):
                ra = WS[_WRD, a]
                if ra > 0.0 and LVF[lv, REQ, LVI[lv, a]] == 0.0:
                    ratio = LVF[lv, RU, a] / ra
                    if ratio < t1:
                        t1 = ratio
                        l = a
            if d > dep_tol * kappa and d > 0.0:
                t2 = -wq / d
            else:
                t2 = np.inf
            if t2 == np.inf and t1 == np.inf:
                LVI[lv, p] = nA
                return _INFEAS, lb, it
            if t2 <= t1:  # full step: q becomes active
                for a in range(nA):
                    LVF[lv, RU, a] -= t2 * WS[_WRD, a]
                uq += t2
                for b in range(nA):
                    LVF[lv, nA, b] = sigma * WS[_WELL, b]
                LVF[lv, RD, nA] = d
                LVI[lv, nA] = q
                LVF[lv, RU, nA] = sigma * uq
                LVF[lv, RIN, q] = 1.0
                nA += 1
                break
            # partial step: drop the blocking constraint l and retry q
            for a in range(nA):
                LVF[lv, RU, a] -= t1 * WS[_WRD, a]
            LVF[lv, RU, l] = 0.0
            uq += t1
            wq += t1 * d
            LVF[lv, RIN, LVI[lv, l]] = 0.0
            nA = _ldl_drop(LVF, LVI, lv, WS, nA, l, p)


# ============================================================================ branch and bound
@njit(cache=True)
def _copy_level(LVF, LVI, s, d, p):
    """Copy the state of level s to level d (a child starts from its parent's state)."""
    nA = LVI[s, p]
    LVI[d, p] = nA
    for a in range(nA):
        LVI[d, a] = LVI[s, a]
        for b in range(a):
            LVF[d, a, b] = LVF[s, a, b]
    for row in range(p + 1, p + 6):
        for j in range(p):
            LVF[d, row, j] = LVF[s, row, j]
    LVF[d, p + 6, 0] = LVF[s, p + 6, 0]


@njit(cache=True)
def _cut(best, rel_gap, abs_gap):
    if best == np.inf:
        return np.inf
    return best - max(abs_gap, rel_gap * best)


@njit(cache=True)
def _lcp_incumbent(k, v, E, F, H, c, Sll, Pl, WS, delta, m, nx, nu):
    """The LCP projection (delta_x, delta_u = v, delta_lambda = LCP(E v_x + H v_u + c, F)) as
    an incumbent in ``delta``; returns its (reduced-metric) value or inf."""
    nz = nx + m + nu
    q = WS[_WQ, :m]
    z = WS[_WZ, :m]
    qs = 1.0
    for i in range(m):
        s = c[k, i]
        for j in range(nx):
            s += E[k, i, j] * v[k, j]
        for j in range(nu):
            s += H[k, i, j] * v[k, nx + m + j]
        q[i] = s
        qs = max(qs, abs(s))
    Fk = F[k]
    ok = False
    if m <= 3:
        ok = enumerate_tiny(Fk, q, 1e-12 * qs, z)
    if not ok:
        st, _ = lemke(Fk, q, np.ones(m), 50 * (m + 1), z)
        ok = st == 0
    if not ok:
        return np.inf
    worst = 0.0
    for i in range(m):
        wi = q[i]
        for j in range(m):
            wi += Fk[i, j] * z[j]
        worst = max(worst, abs(min(z[i], wi)))
    if worst > 1e-9 * qs:
        return np.inf
    obj = 0.0
    for i in range(m):
        di = z[i] - v[k, nx + i]
        for j in range(m):
            obj += di * Sll[k, i, j] * (z[j] - v[k, nx + j])
    for j in range(nz):
        delta[k, j] = v[k, j]
    for i in range(m):
        di = z[i] - v[k, nx + i]
        if di != 0.0:
            for j in range(nz):
                delta[k, j] += Pl[k, j, i] * di
    for i in range(m):
        delta[k, nx + i] = z[i]
    return obj


@njit(cache=True)
def _finish(k, v, E, F, H, c, T, LVF, LVI, INC, WS, delta, m, nx, nu):
    """delta = v + T^T u for the incumbent active set (slot INC), with iterative refinement of
    the multipliers against the active constraints' residuals computed in delta (up to 3
    steps, while the residual decreases); active lambda entries are then set to exactly 0."""
    p = 2 * m
    nz = nx + m + nu
    RD = p + 1
    RU = p + 2
    nA = LVI[INC, p]
    prev = np.inf
    for it in range(4):
        for j in range(nz):
            delta[k, j] = v[k, j]
        for a in range(nA):
            ua = LVF[INC, RU, a]
            ja = LVI[INC, a]
            for j in range(nz):  # T is stored transposed: contiguous in j
                delta[k, j] += T[k, ja, j] * ua
        if nA == 0 or it == 3:
            break
        worst = 0.0
        scale = 1.0
        for a in range(nA):
            ja = LVI[INC, a]
            if ja < m:
                res = delta[k, nx + ja]
                mag = abs(res)
            else:
                i = ja - m
                res = c[k, i]
                mag = abs(res)
                for j in range(nx):
                    t = E[k, i, j] * delta[k, j]
                    res += t
                    mag += abs(t)
                for j in range(m):
                    t = F[k, i, j] * delta[k, nx + j]
                    res += t
                    mag += abs(t)
                for j in range(nu):
                    t = H[k, i, j] * delta[k, nx + m + j]
                    res += t
                    mag += abs(t)
            worst = max(worst, abs(res))
            scale = max(scale, mag)
            s = -res
            for b in range(a):
                s -= LVF[INC, a, b] * WS[_WY, b]
            WS[_WY, a] = s
        if worst <= 1e-15 * scale or worst >= prev:
            break
        prev = worst
        for a in range(nA - 1, -1, -1):
            s = WS[_WY, a] / LVF[INC, RD, a]
            for b in range(a + 1, nA):
                s -= LVF[INC, b, a] * WS[_WRD, b]
            WS[_WRD, a] = s
        for a in range(nA):
            LVF[INC, RU, a] += WS[_WRD, a]
    for a in range(nA):
        ja = LVI[INC, a]
        if ja < m:
            delta[k, nx + ja] = 0.0


@njit(cache=True)
def _bb_knot(k, v, E, F, H, c, Kx, T, Sll, Pl, mode, fopt, iopt, LVF, LVI, WS, delta, stats):
    """Branch and bound for knot k. Returns the knot status and the number of node QPs.

    ``mode[k]`` is in/out: on entry the previous mode (warm start, -1 if none), on success the
    mode of the result (0: lambda_i = 0, 1: slack_i = 0); unchanged for a failed knot.
    """
    N, m, nx = E.shape
    nu = H.shape[2]
    nz = nx + m + nu
    p = 2 * m
    REQ = p + 4
    RW = p + 3
    RM = p + 6
    rel_gap = fopt[_FO_RELGAP]
    abs_gap = fopt[_FO_ABSGAP]
    dep_tol = fopt[_FO_DEP]
    max_nodes = iopt[_IO_MAXNODES]
    use_leaf = iopt[_IO_LEAF] != 0 and mode[k, 0] >= 0
    # r = G^T v + h
    rmax = 1.0
    for i in range(m):
        WS[_WR, i] = v[k, nx + i]
        s = c[k, i]
        for j in range(nx):
            s += E[k, i, j] * v[k, j]
        for j in range(m):
            s += F[k, i, j] * v[k, nx + j]
        for j in range(nu):
            s += H[k, i, j] * v[k, nx + m + j]
        WS[_WR, m + i] = s
    for j in range(p):
        rmax = max(rmax, abs(WS[_WR, j]))
    ftol = fopt[_FO_FEAS] * rmax
    maxit = 10 * p + 50
    nodes = 0
    gi_it = 0
    trouble = False
    LEAF = m + 1
    INC = m + 2  # slot of the incumbent's active set
    best = np.inf
    inc_kind = 0  # 0 none, 1 LCP point (already in delta), 2 QP active set (slot INC)

    # ---- incumbent (a): the LCP projection
    if iopt[_IO_LCP] != 0:
        obj = _lcp_incumbent(k, v, E, F, H, c, Sll, Pl, WS, delta, m, nx, nu)
        if obj < best:
            best = obj
            inc_kind = 1
    # ---- incumbent (b): the leaf QP of the previous mode
    if use_leaf:
        LVI[LEAF, p] = 0
        for j in range(p):
            LVF[LEAF, REQ, j] = 0.0
            LVF[LEAF, p + 5, j] = 0.0
        for i in range(m):
            if mode[k, i] == 0:
                LVF[LEAF, REQ, i] = 1.0
            else:
                LVF[LEAF, REQ, m + i] = 1.0
        out, lb, its = _gi(Kx, k, LVF, LVI, LEAF, WS, ftol, dep_tol,
                           _cut(best, rel_gap, abs_gap), maxit)
        nodes += 1
        gi_it += its
        if out == _OPT:
            LVF[LEAF, RM, 0] = lb
            best = lb
            inc_kind = 2
            _copy_level(LVF, LVI, LEAF, INC, p)
        elif out == _MAXIT:
            trouble = True

    # ---- root
    LVI[0, p] = 0
    for j in range(p):
        LVF[0, REQ, j] = 0.0
        LVF[0, p + 5, j] = 0.0
    for lev in range(m + 1):
        LVI[lev, p + 1] = -1
    ROOT = LEAF - LEAF  # level 0 (not a literal: one compiled signature of _gi)
    out, lb, its = _gi(Kx, k, LVF, LVI, ROOT, WS, ftol, dep_tol,
                       _cut(best, rel_gap, abs_gap), maxit)
    nodes += 1
    gi_it += its
    LVF[0, RM, 0] = lb
    if out == _INFEAS and inc_kind == 0:
        stats[0] += gi_it
        for j in range(nz):
            delta[k, j] = np.nan
        return _ST_INFEAS, nodes
    if out == _MAXIT or out == _INFEAS:  # (infeasible despite an incumbent: round-off)
        trouble = True
    have = out == _OPT
    lev = 0
    stopped = False
    # Invariant: no sibling is pending at levels >= the level of the node being processed.
    while True:
        par = -1  # parent level of the next child to solve, and the constraint it fixes
        jfix = -1
        if have:
            have = False
            obj = LVF[lev, RM, 0]
            if obj < _cut(best, rel_gap, abs_gap):
                # branch on the free pair with both members positive that is farthest from
                # complementarity: max_i min(w_lambda / |a_lambda|, w_s / |a_s|)
                bi = -1
                bsc = -1.0
                for i in range(m):
                    if LVF[lev, REQ, i] != 0.0 or LVF[lev, REQ, m + i] != 0.0:
                        continue
                    wl = LVF[lev, RW, i]
                    ws = LVF[lev, RW, m + i]
                    if wl <= ftol or ws <= ftol:
                        continue
                    sc = min(wl * Kx[k, p, i], ws * Kx[k, p, m + i])
                    if sc > bsc:
                        bsc = sc
                        bi = i
                if bi < 0:  # complementary: new incumbent
                    best = obj
                    inc_kind = 2
                    _copy_level(LVF, LVI, lev, INC, p)
                else:
                    dl = LVF[lev, RW, bi] * Kx[k, p, bi]
                    ds = LVF[lev, RW, m + bi] * Kx[k, p, m + bi]
                    # children bounds: obj + (distance to the fixed member's hyperplane)^2;
                    # the child with the smaller bound is solved first
                    bl = obj + dl * dl
                    bs = obj + ds * ds
                    if bl <= bs:
                        jfix, b1, j2, b2 = bi, bl, m + bi, bs
                    else:
                        jfix, b1, j2, b2 = m + bi, bs, bi, bl
                    LVI[lev, p + 1] = j2
                    LVF[lev, RM, 1] = b2
                    if b1 < _cut(best, rel_gap, abs_gap):
                        par = lev
        if par < 0:  # backtrack to the deepest pending sibling
            l = lev
            while l >= 0:
                j = LVI[l, p + 1]
                if j >= 0:
                    LVI[l, p + 1] = -1
                    if LVF[l, RM, 1] < _cut(best, rel_gap, abs_gap):
                        par = l
                        jfix = j
                        break
                l -= 1
            if par < 0:
                break
        if nodes >= max_nodes:
            stopped = True
            break
        n1 = par + 1
        _copy_level(LVF, LVI, par, n1, p)
        LVF[n1, REQ, jfix] = 1.0
        out, lb, its = _gi(Kx, k, LVF, LVI, n1, WS, ftol, dep_tol, _cut(best, rel_gap, abs_gap),
                           maxit)
        nodes += 1
        gi_it += its
        LVF[n1, RM, 0] = lb
        if out == _MAXIT:
            trouble = True
        if out == _OPT:
            lev = n1
            have = True
        else:
            lev = par
    stats[0] += gi_it

    if inc_kind == 0 and (stopped or trouble) and iopt[_IO_LCP] == 0:
        # the search was cut short without a feasible point: fall back on the LCP projection
        if _lcp_incumbent(k, v, E, F, H, c, Sll, Pl, WS, delta, m, nx, nu) < np.inf:
            inc_kind = 1
    if inc_kind == 0:
        for j in range(nz):
            delta[k, j] = np.nan
        if stopped or trouble:
            return _ST_FAILED, nodes
        return _ST_INFEAS, nodes
    if inc_kind == 2:
        _finish(k, v, E, F, H, c, T, LVF, LVI, INC, WS, delta, m, nx, nu)
    for i in range(m):
        if delta[k, nx + i] < 0.0:
            delta[k, nx + i] = 0.0
    # mode of the result: 0 if lambda_i is the zero member, else 1
    for i in range(m):
        s = c[k, i]
        for j in range(nx):
            s += E[k, i, j] * delta[k, j]
        for j in range(m):
            s += F[k, i, j] * delta[k, nx + j]
        for j in range(nu):
            s += H[k, i, j] * delta[k, nx + m + j]
        mode[k, i] = 0 if delta[k, nx + i] <= s else 1
    if stopped or trouble:
        return _ST_APPROX, nodes
    return _ST_OPTIMAL, nodes


# Option slots of the entry kernel.
_FO_REG, _FO_RELGAP, _FO_ABSGAP, _FO_FEAS, _FO_DEP = range(5)
_IO_MAXNODES, _IO_LCP, _IO_LEAF, _IO_FORCE = range(4)


@njit(cache=True)
def _same(a, b):
    """Element-wise equality of two 2-D arrays of the same shape (branch-free inner loop)."""
    for i in range(a.shape[0]):
        diff = 0
        for j in range(a.shape[1]):
            diff |= a[i, j] != b[i, j]
        if diff:
            return False
    return True


@njit(cache=True)
def _copy2(src, dst):
    """dst[:, :] = src for 2-D arrays of the same shape (explicit loops: a slice assignment
    would compile numba's shape-mismatch error formatting, which costs seconds of compile)."""
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j]


@njit(cache=True)
def _all_finite(a):
    """True if every entry of the 2-D array is finite."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if not np.isfinite(a[i, j]):
                return False
    return True


@njit(cache=True)
def _project_all(v, E, F, H, c, U, Ec, Fc, Hc, Uc, Kx, T, Sll, Pl, eps, mode, fopt, iopt,
                 delta_out, status_out, nodes_out, stats):
    """All knots in one compiled call.

    Knots whose E, F, H or U differ from the cached copies (Ec, Fc, Hc, Uc) are re-prepared
    (Kx, T, Sll, Pl, eps); ``iopt[_IO_FORCE]`` forces it for every knot. Returns -1 (and
    solves nothing) if an input is not finite, else the number of re-prepared knots. ``stats``
    accumulates [Goldfarb-Idnani iterations].
    """
    N, m, nx = E.shape
    p = 2 * m
    if not (_all_finite(v) and _all_finite(c)):
        return -1
    force = iopt[_IO_FORCE] != 0
    nprep = 0
    for k in range(N):
        if (force or not _same(E[k], Ec[k]) or not _same(F[k], Fc[k])
                or not _same(H[k], Hc[k]) or not _same(U[k], Uc[k])):
            if not (_all_finite(E[k]) and _all_finite(F[k]) and _all_finite(H[k])
                    and _all_finite(U[k])):
                return -1
            _copy2(E[k], Ec[k])
            _copy2(F[k], Fc[k])
            _copy2(H[k], Hc[k])
            _copy2(U[k], Uc[k])
            eps[k] = _prepare_knot(E[k], F[k], H[k], U[k], fopt[_FO_REG], Kx[k], T[k], Sll[k],
                                   Pl[k])
            nprep += 1
    nlev = m + 3
    LVF = np.zeros((nlev, p + 7, p + 1))
    LVI = np.zeros((nlev, p + 2), np.int64)
    WS = np.zeros((7, p + 1))
    for k in range(N):
        st, nn = _bb_knot(k, v, E, F, H, c, Kx, T, Sll, Pl, mode, fopt, iopt, LVF, LVI, WS,
                          delta_out, stats)
        status_out[k] = st
        nodes_out[k] = nn
    return nprep


@njit(cache=True)
def _node_qp_kernel(K, r, eq, feas_tol, dep_tol, u_out):
    """One cold node QP (for tests): returns (outcome, |t*|^2); u_out gets the multipliers."""
    p = r.shape[0]
    Kx = np.zeros((1, p + 1, p))
    for i in range(p):
        for j in range(p):
            Kx[0, i, j] = K[i, j]
        Kx[0, p, i] = 1.0 / np.sqrt(K[i, i]) if K[i, i] > 0.0 else np.inf
    LVF = np.zeros((1, p + 7, p + 1))
    LVI = np.zeros((1, p + 2), np.int64)
    WS = np.zeros((7, p + 1))
    rmax = 1.0
    for j in range(p):
        WS[_WR, j] = r[j]
        rmax = max(rmax, abs(r[j]))
        LVF[0, p + 4, j] = 1.0 if eq[j] else 0.0
    out, lb, _ = _gi(Kx, 0, LVF, LVI, 0, WS, feas_tol * rmax, dep_tol, np.inf, 10 * p + 50)
    for j in range(p):
        u_out[j] = 0.0
    for a in range(LVI[0, p]):
        u_out[LVI[0, a]] = LVF[0, p + 2, a]
    return out, lb


# ============================================================================ references
def _kkt_eq(U: np.ndarray, v: np.ndarray, Gc: np.ndarray, hc: np.ndarray
            ) -> np.ndarray | None:
    """argmin (y-v)^T U (y-v) s.t. Gc^T y + hc = 0 (U positive definite); None if the
    equalities are inconsistent."""
    n = v.size
    k = Gc.shape[1]
    if k == 0:
        return v.copy()
    Kkt = np.zeros((n + k, n + k))
    Kkt[:n, :n] = 2.0 * U
    Kkt[:n, n:] = -Gc
    Kkt[n:, :n] = Gc.T
    rhs = np.concatenate([2.0 * U @ v, -hc])
    sol, *_ = np.linalg.lstsq(Kkt, rhs, rcond=None)
    y = sol[:n]
    if np.abs(Gc.T @ y + hc).max() > 1e-8 * max(1.0, np.abs(hc).max(), np.abs(Gc).max()
                                                  * np.abs(y).max()):
        return None
    return y


def _constraint_data(E, F, H, c):
    m, nx = E.shape
    nu = H.shape[1]
    nz = nx + m + nu
    G = np.zeros((nz, 2 * m))
    G[nx:nx + m, :m] = np.eye(m)
    G[:, m:] = np.hstack([E, F, H]).T
    h = np.concatenate([np.zeros(m), c])
    return G, h


def reference_node_qp(U: Any, v: Any, G: Any, h: Any, eq: Any, tol: float = 1e-9
                      ) -> tuple[float, np.ndarray | None]:
    """Pure-numpy node QP by enumerating active sets (U positive definite, small p).

    ``min (y-v)^T U (y-v)`` s.t. ``G[:, j]^T y + h_j = 0`` for ``eq[j]``, ``>= 0`` otherwise.
    Returns (optimal value, y), or (inf, None) if infeasible.
    """
    U = np.asarray(U, float)
    v = np.asarray(v, float)
    G = np.asarray(G, float)
    h = np.asarray(h, float)
    eq = np.asarray(eq, bool)
    ineq = np.flatnonzero(~eq)
    eqi = list(np.flatnonzero(eq))
    best, ybest = np.inf, None
    scale = max(1.0, float(np.abs(G.T @ v + h).max(initial=0.0)))
    for k in range(len(ineq) + 1):
        for act in itertools.combinations(ineq, k):
            idx = eqi + list(act)
            y = _kkt_eq(U, v, G[:, idx], h[idx])
            if y is None:
                continue
            if ineq.size and (G[:, ineq].T @ y + h[ineq]).min() < -tol * scale:
                continue
            f = float((y - v) @ U @ (y - v))
            if f < best:
                best, ybest = f, y
    return best, ybest


def reference_projection(v: Any, E: Any, F: Any, H: Any, c: Any, U: Any, tol: float = 1e-9
                         ) -> tuple[float, np.ndarray | None]:
    """Brute-force MIQP projection of one knot (U positive definite, n_lambda <= ~6).

    Enumerates every pair of index sets (lambda_i = 0 for i in A, s_i = 0 for i in B) with
    A ∪ B = all pairs (3^n_lambda systems), solves each equality-constrained QP by a KKT solve
    and keeps the best one whose remaining inequalities hold. The optimum of eq. 23 is among
    them (it is the equality-constrained minimiser of its own active set). Returns
    (value, delta) or (inf, None) if infeasible.
    """
    v = np.asarray(v, float)
    E, F, H, c, U = (np.asarray(a, float) for a in (E, F, H, c, U))
    m = c.size
    G, h = _constraint_data(E, F, H, c)
    best, ybest = np.inf, None
    scale = max(1.0, float(np.abs(G.T @ v + h).max(initial=0.0)))
    for choice in itertools.product((0, 1, 2), repeat=m):  # 0: lam=0, 1: s=0, 2: both
        idx = [i for i in range(m) if choice[i] in (0, 2)]
        idx += [m + i for i in range(m) if choice[i] in (1, 2)]
        y = _kkt_eq(U, v, G[:, idx], h[idx])
        if y is None:
            continue
        if (G.T @ y + h).min() < -tol * scale:
            continue
        f = float((y - v) @ U @ (y - v))
        if f < best:
            best, ybest = f, y
    return best, ybest


def solve_node_qp(U: Any, v: Any, G: Any, h: Any, eq: Any, feas_tol: float = 1e-10,
                  dep_tol: float = 1e-11) -> tuple[int, float, np.ndarray]:
    """The compiled node-QP solver on explicit data (U positive definite), for tests.

    Returns (outcome: 0 optimal / 1 infeasible / 3 iteration cap, value, y).
    """
    U = np.asarray(U, float)
    v = np.asarray(v, float)
    G = np.asarray(G, float)
    h = np.asarray(h, float)
    Uinv_G = np.linalg.solve(U, G)
    K = G.T @ Uinv_G
    r = G.T @ v + h
    mu = np.empty(G.shape[1])
    out, val = _node_qp_kernel(np.ascontiguousarray(K), r, np.asarray(eq, np.bool_),
                               feas_tol, dep_tol, mu)
    return int(out), float(val), v + Uinv_G @ mu


# ============================================================================ the class
class ExactMIQPProjection(Projection):
    """Exact MIQP projection (seed eq. 23) by compiled branch and bound; see the module doc.

    Args:
        regularization: relative Cholesky-pivot threshold below which the reduced metric S is
            regularised by ``regularization * max(diag S) * I`` (see Guarantees).
        rel_gap: relative optimality gap for pruning (``abs_gap`` absolute).
        feas_tol: feasibility / complementarity tolerance relative to ``max(1, |r|_inf)``.
        max_nodes: node budget per knot (APPROXIMATE when exhausted).
        warm_start: solve the leaf QP of the mode found by the previous call for the same knot
            (the same ADMM iteration of the previous solve when there is one, see
            ``warm_key``) as an initial incumbent. Off by default: on the paper's plants the
            depth-first search finds the optimum on its first dive anyway, so the extra leaf QP
            costs more than the pruning it buys (see docs/BENCHMARKS.md).
        lcp_heuristic: use the LCP projection of the paper (Lemke on
            ``LCP(E v_x + H v_u + c, F)``) as an initial incumbent. Off by default for the same
            reason.
        warm_key: ``"admm_iteration"`` keys the warm-start memory by the ``admm_iteration``
            argument (falling back to the last call); ``"last"`` always uses the last call.
        dep_tol: a constraint whose normal has ``|z|^2 <= dep_tol |a_q|^2`` after projection
            onto the complement of the active normals counts as linearly dependent.

    Attributes:
        regularization_used: (N,) eps added to S per knot (0 where the projection is exact).
        stats: int64 counters accumulated over calls: [Goldfarb-Idnani iterations].
    """

    name = "miqp"

    def __init__(self, *, regularization: float = 1e-8, rel_gap: float = 1e-9,
                 abs_gap: float = 0.0, feas_tol: float = 1e-10, max_nodes: int = 100_000,
                 warm_start: bool = False, lcp_heuristic: bool = False,
                 warm_key: str = "admm_iteration", dep_tol: float = 1e-11):
        if not (np.isfinite(regularization) and 0.0 < regularization < 1.0):
            raise C3ValueError(f"regularization must be in (0, 1), got {regularization}")
        for nm, val in (("rel_gap", rel_gap),
                        ("abs_gap", abs_gap), ("feas_tol", feas_tol), ("dep_tol", dep_tol)):
            if not np.isfinite(val) or val < 0:
                raise C3ValueError(f"{nm} must be a finite non-negative number, got {val}")
        if warm_key not in ("admm_iteration", "last"):
            raise C3ValueError(f"warm_key must be 'admm_iteration' or 'last', got {warm_key!r}")
        self.warm_key = warm_key
        if int(max_nodes) < 1:
            raise C3ValueError(f"max_nodes must be >= 1, got {max_nodes}")
        self.regularization = float(regularization)
        self.rel_gap = float(rel_gap)
        self.abs_gap = float(abs_gap)
        self.feas_tol = float(feas_tol)
        self.dep_tol = float(dep_tol)
        self.max_nodes = int(max_nodes)
        self.warm_start = bool(warm_start)
        self.lcp_heuristic = bool(lcp_heuristic)
        self._fopt = np.array([self.regularization, self.rel_gap, self.abs_gap, self.feas_tol,
                               self.dep_tol])
        self._iopt = np.array([self.max_nodes, int(self.lcp_heuristic), int(self.warm_start), 0],
                              np.int64)
        self.stats = np.zeros(1, np.int64)
        self._cache: dict[str, Any] | None = None
        self._modes: dict[int, np.ndarray] = {}
        self._checked_U: tuple[Any, np.ndarray] | None = None  # (the object, its values)
        self._last_mode: np.ndarray | None = None

    # ------------------------------------------------------------------ data handling
    def _arrays(self, data: ProjectionData) -> tuple[np.ndarray, ...]:
        return tuple(np.ascontiguousarray(a) for a in _data_arrays(data))

    def check(self, data: ProjectionData) -> None:
        """Shapes, finiteness and U symmetric positive semidefinite.

        The U checks (an eigen-decomposition per knot) are skipped when U is the very array
        (same object, unchanged) that passed them last time: C3 passes its own U at every
        re-linearisation, and only E, F, H, c change there.
        """
        E, F, H, c, U = self._arrays(data)
        for nm, a in (("E", E), ("F", F), ("H", H), ("c", c)):
            if not np.all(np.isfinite(a)):
                raise C3ValueError(f"{nm} contains NaN or Inf")
        checked = self._checked_U
        if checked is not None and checked[0] is data.U and np.array_equal(checked[1], U):
            return
        if not np.all(np.isfinite(U)):
            raise C3ValueError("U contains NaN or Inf")
        if not np.allclose(U, np.swapaxes(U, 1, 2), rtol=1e-10, atol=1e-12):
            raise C3ValueError("U must be symmetric")
        ev = np.linalg.eigvalsh(U)
        scale = np.maximum(1.0, np.abs(ev).max(axis=1))
        if np.any(ev.min(axis=1) < -1e-10 * scale):
            raise C3ValueError("U must be positive semidefinite")
        self._checked_U = (data.U, U.copy())

    def _cache_for(self, E, H, U) -> tuple[dict[str, np.ndarray], bool]:
        """The per-knot cache (allocated on the first call and when the dimensions change)."""
        shapes = (E.shape, H.shape, U.shape)
        if self._cache is not None and self._cache["shapes"] == shapes:
            return self._cache, False
        N, m, nx = E.shape
        nz = U.shape[1]
        p = 2 * m
        self._cache = {
            "shapes": shapes,
            "Ec": np.zeros(E.shape), "Fc": np.zeros((N, m, m)), "Hc": np.zeros(H.shape),
            "Uc": np.zeros(U.shape), "Kx": np.zeros((N, p + 1, p)),
            "T": np.zeros((N, p, nz)), "Sll": np.zeros((N, m, m)), "Pl": np.zeros((N, nz, m)),
            "eps": np.zeros(N), "mode": np.full((N, m), -1, np.int64),
        }
        self._modes.clear()
        self._last_mode = None
        return self._cache, True

    @property
    def regularization_used(self) -> np.ndarray | None:
        """(N,) eps added to the reduced metric S per knot (0 where the projection is exact)."""
        return None if self._cache is None else self._cache["eps"].copy()

    def reset(self) -> None:
        """Forget cached factorizations and warm-start modes."""
        self._cache = None
        self._modes.clear()
        self._last_mode = None

    # ------------------------------------------------------------------ projection
    def project(self, v: np.ndarray, data: ProjectionData, admm_iteration: int = 0
                ) -> ProjectionResult:
        """Project every knot's ``v[k]`` onto its complementarity set (exactly)."""
        t0 = time.perf_counter()
        E, F, H, c, U = self._arrays(data)
        N, m, nx = E.shape
        nz = U.shape[1]
        v = np.ascontiguousarray(v, dtype=float)
        if v.shape != (N, nz):
            raise C3ValueError(f"v must have shape ({N}, {nz}), got {v.shape}")
        if m == 0:
            if not np.all(np.isfinite(v)):
                raise C3ValueError("v must be finite")
            return ProjectionResult(v.copy(), np.zeros(N, np.int64), time.perf_counter() - t0,
                                    np.zeros(N, np.int64))
        cache, fresh = self._cache_for(E, H, U)
        if self.warm_start:
            # per-key mode memory, updated in place by the kernel (failed knots keep theirs)
            key = int(admm_iteration) if self.warm_key == "admm_iteration" else 0
            mode = self._modes.get(key)
            if mode is None:
                mode = (self._last_mode.copy() if self._last_mode is not None
                        else np.full((N, m), -1, np.int64))
                self._modes[key] = mode
            self._last_mode = mode
        else:
            mode = cache["mode"]
        self._iopt[_IO_FORCE] = 1 if fresh else 0
        delta = np.empty((N, nz))
        status = np.empty(N, np.int64)
        nodes = np.empty(N, np.int64)
        ret = _project_all(v, E, F, H, c, U, cache["Ec"], cache["Fc"], cache["Hc"],
                           cache["Uc"], cache["Kx"], cache["T"], cache["Sll"],
                           cache["Pl"], cache["eps"], mode, self._fopt, self._iopt, delta,
                           status, nodes, self.stats)
        if ret < 0:
            self._cache = None  # the caches may be partly updated
            raise C3ValueError("v, E, F, H, c and U must be finite")
        return ProjectionResult(delta, status, time.perf_counter() - t0, nodes)
