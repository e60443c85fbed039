"""Compiled pivoting kernels for the LCP: Lemke's method and a tiny-problem enumeration.

These are scalar-loop kernels compiled with numba (``cache=True``, so the compile cost is paid
once per machine). Pivoting is inherently sequential, which is why it lives here and not in
numpy; :mod:`lcs._lemke_reference` keeps a pure-numpy implementation of the same algorithm that
the tests compare these kernels against.

Variables are numbered ``0..n-1`` for w, ``n..2n-1`` for z and ``2n`` for the artificial z0.
Status codes: see :class:`lcs.lcp.LCPStatus` (0 solved, 1 ray termination, 2 max iterations).
"""

from __future__ import annotations

import numpy as np

from ._numba import njit


STATUS_SOLVED = 0
STATUS_RAY = 1
STATUS_MAX_ITER = 2

#: Relative tolerance under which two ratios of the minimum-ratio test count as tied.
TIE_TOL = 1e-11
#: Pivot elements must exceed this (relative to the largest entry of the column).
PIVOT_TOL = 1e-12


@njit(cache=True)
def _natural_residual(M, q, z):
    """max_i |min(z_i, (Mz+q)_i)| for a candidate solution z."""
    n = q.shape[0]
    worst = 0.0
    for i in range(n):
        wi = q[i]
        for j in range(n):
            wi += M[i, j] * z[j]
        r = abs(min(z[i], wi))
        if r > worst:
            worst = r
    return worst


@njit(cache=True)
def _lexmin_row(pdiv, rhs, Binv, cand, ncand, z0_row):
    """Lexicographic minimum-ratio test.

    Among the candidate rows ``cand[:ncand]`` (all with ``pdiv[i] > 0``) pick the row whose
    vector ``(rhs_i, Binv[i, 0], ..., Binv[i, n-1]) / pdiv[i]`` is lexicographically smallest.
    The rows of ``[rhs | Binv]`` are linearly independent, so the minimum is unique and Lemke's
    method cannot cycle. If the row holding z0 ties on the first column it is chosen, which
    ends the method.
    """
    n = rhs.shape[0]
    # First column: the ordinary ratio test.
    best = np.inf
    for k in range(ncand):
        i = cand[k]
        v = rhs[i] / pdiv[i]
        if v < best:
            best = v
    tol = TIE_TOL * (1.0 + abs(best))
    m = 0
    for k in range(ncand):
        i = cand[k]
        if rhs[i] / pdiv[i] <= best + tol:
            cand[m] = i
            m += 1
    if m == 1:
        return cand[0]
    for k in range(m):
        if cand[k] == z0_row:
            return z0_row
    # Break ties column by column of Binv.
    for col in range(n):
        best = np.inf
        for k in range(m):
            i = cand[k]
            v = Binv[i, col] / pdiv[i]
            if v < best:
                best = v
        tol = TIE_TOL * (1.0 + abs(best))
        m2 = 0
        for k in range(m):
            i = cand[k]
            if Binv[i, col] / pdiv[i] <= best + tol:
                cand[m2] = i
                m2 += 1
        m = m2
        if m == 1:
            break
    return cand[0]


@njit(cache=True)
def _pivot(Binv, rhs, col, r):
    """Gauss-Jordan pivot of the basis inverse and right-hand side on row ``r``."""
    n = rhs.shape[0]
    piv = col[r]
    for j in range(n):
        Binv[r, j] /= piv
    rhs[r] /= piv
    for i in range(n):
        if i != r:
            f = col[i]
            if f != 0.0:
                for j in range(n):
                    Binv[i, j] -= f * Binv[r, j]
                rhs[i] -= f * rhs[r]


@njit(cache=True)
def _polish(M, q, basis, z):
    """Re-solve M_aa z_a = -q_a on the final basis; keep it if it lowers the residual.

    The final basis matrix of Lemke's method is nonsingular exactly when M_aa is, so one dense
    solve removes the round-off accumulated over the pivots.
    """
    n = q.shape[0]
    na = 0
    idx = np.empty(n, np.int64)
    for i in range(n):
        b = basis[i]
        if n <= b < 2 * n:
            idx[na] = b - n
            na += 1
    if na == 0:
        return
    Maa = np.empty((na, na))
    qa = np.empty(na)
    for a in range(na):
        qa[a] = -q[idx[a]]
        for b in range(na):
            Maa[a, b] = M[idx[a], idx[b]]
    # A singular Maa cannot be a final Lemke basis in exact arithmetic; guard anyway.
    if not _solve_small(Maa, qa, na):
        return
    za = qa
    zp = np.zeros(n)
    for a in range(na):
        zp[idx[a]] = za[a]
    if _natural_residual(M, q, zp) <= _natural_residual(M, q, z):
        for i in range(n):
            z[i] = zp[i]


@njit(cache=True)
def lemke(M, q, d, max_iter, z_out):
    """Lemke's complementary pivoting method with covering vector ``d > 0``.

    Args:
        M: (n, n) LCP matrix.
        q: (n,) LCP vector.
        d: (n,) covering vector, strictly positive.
        max_iter: pivot budget.
        z_out: (n,) output buffer, written with the solution on success.

    Returns:
        (status, number of pivots).
    """
    n = q.shape[0]
    trivial = True
    for i in range(n):
        if q[i] < 0.0:
            trivial = False
            break
    if trivial:
        for i in range(n):
            z_out[i] = 0.0
        return STATUS_SOLVED, 0

    # Work on LCP(q/beta, M/alpha), whose solution is z * alpha / beta: with max|M| = max|q| = 1
    # the pivot tolerances are meaningful whatever the units of the problem.
    alpha = 0.0
    beta = 0.0
    for i in range(n):
        beta = max(beta, abs(q[i]))
        for j in range(n):
            alpha = max(alpha, abs(M[i, j]))
    if alpha == 0.0:
        alpha = 1.0
    Ms = M / alpha
    Binv = np.eye(n)
    rhs = q / beta
    basis = np.arange(n)
    col = np.empty(n)
    pdiv = np.empty(n)
    cand = np.empty(n, np.int64)

    # Pivot 1: z0 enters (column -d); every row is a candidate with divisor d_i.
    for i in range(n):
        col[i] = -d[i]
        pdiv[i] = d[i]
        cand[i] = i
    r = _lexmin_row(pdiv, rhs, Binv, cand, n, -1)
    _pivot(Binv, rhs, col, r)
    leaving = basis[r]
    basis[r] = 2 * n
    z0_row = r
    it = 1

    status = STATUS_MAX_ITER
    while it < max_iter:
        entering = leaving + n if leaving < n else leaving - n
        if entering < n:  # a w column: e_j
            for i in range(n):
                col[i] = Binv[i, entering]
        else:  # a z column: -M[:, j]
            j = entering - n
            for i in range(n):
                s = 0.0
                for k in range(n):
                    s += Binv[i, k] * Ms[k, j]
                col[i] = -s
        cmax = 0.0
        for i in range(n):
            if abs(col[i]) > cmax:
                cmax = abs(col[i])
        thr = PIVOT_TOL * max(1.0, cmax)
        ncand = 0
        for i in range(n):
            if col[i] > thr:
                cand[ncand] = i
                pdiv[i] = col[i]
                ncand += 1
        if ncand == 0:
            status = STATUS_RAY
            break
        r = _lexmin_row(pdiv, rhs, Binv, cand, ncand, z0_row)
        _pivot(Binv, rhs, col, r)
        leaving = basis[r]
        basis[r] = entering
        it += 1
        if leaving == 2 * n:
            status = STATUS_SOLVED
            break

    if status != STATUS_SOLVED:
        for i in range(n):
            z_out[i] = np.nan
        return status, it
    for i in range(n):
        z_out[i] = 0.0
    for i in range(n):
        b = basis[i]
        if n <= b < 2 * n:
            z_out[b - n] = max(rhs[i], 0.0) * beta / alpha
    _polish(M, q, basis, z_out)
    return STATUS_SOLVED, it


@njit(cache=True)
def _solve_small(A, b, m):
    """Gaussian elimination with partial pivoting on the leading m x m block (in place).

    Returns False when the block is numerically singular.
    """
    scale = 0.0
    for i in range(m):
        for j in range(m):
            scale = max(scale, abs(A[i, j]))
    if scale == 0.0:
        return False
    for k in range(m):
        p = k
        for i in range(k + 1, m):
            if abs(A[i, k]) > abs(A[p, k]):
                p = i
        if abs(A[p, k]) <= 1e-13 * scale:
            return False
        if p != k:
            for j in range(m):
                A[k, j], A[p, j] = A[p, j], A[k, j]
            b[k], b[p] = b[p], b[k]
        for i in range(k + 1, m):
            f = A[i, k] / A[k, k]
            for j in range(k, m):
                A[i, j] -= f * A[k, j]
            b[i] -= f * b[k]
    for k in range(m - 1, -1, -1):
        s = b[k]
        for j in range(k + 1, m):
            s -= A[k, j] * b[j]
        b[k] = s / A[k, k]
    return True


#: Largest n handled by complementary-basis enumeration (2**n systems of size <= n).
TINY_N = 3


@njit(cache=True)
def enumerate_tiny(M, q, tol, z_out):
    """Fast path for n <= TINY_N: try every complementary basis, sparsest first.

    Returns True and writes ``z_out`` when a basis gives a solution with natural residual
    ``<= tol``; returns False otherwise (e.g. only singular bases solve it), in which case the
    caller falls back to Lemke's method.
    """
    n = q.shape[0]
    A = np.empty((n, n))
    b = np.empty(n)
    idx = np.empty(n, np.int64)
    z = np.empty(n)
    for k in range(n + 1):  # number of active (positive) z entries
        for mask in range(1 << n):
            cnt = 0
            for i in range(n):
                if (mask >> i) & 1:
                    idx[cnt] = i
                    cnt += 1
            if cnt != k:
                continue
            for a in range(cnt):
                b[a] = -q[idx[a]]
                for c in range(cnt):
                    A[a, c] = M[idx[a], idx[c]]
            if cnt > 0 and not _solve_small(A, b, cnt):
                continue
            for i in range(n):
                z[i] = 0.0
            for a in range(cnt):
                z[idx[a]] = max(b[a], 0.0) if b[a] > -tol else b[a]
            if _natural_residual(M, q, z) <= tol:
                for i in range(n):
                    z_out[i] = z[i]
                return True
    return False


STATUS_INACCURATE = 4


@njit(cache=True)
def solve_batch(M, q, d, max_iter, tol, z_out, w_out, res_out, status_out, iter_out):
    """Solve ``B`` independent LCPs; ``M`` is (1, n, n) (shared) or (B, n, n).

    Writes z, w = M z + q, the relative natural residual max|min(z, w)| / max(1, max|q|), the
    status (SOLVED, or INACCURATE when that residual exceeds ``tol``) and the pivot count.
    Returns the number of problems that were not solved, or -1 (and solves nothing) when an
    entry of M or q is not finite.
    """
    nb = q.shape[0]
    n = q.shape[1]
    shared = M.shape[0] == 1
    for k in range(M.shape[0]):
        for i in range(n):
            for j in range(n):
                if not np.isfinite(M[k, i, j]):
                    return -1
    for k in range(nb):
        for i in range(n):
            if not np.isfinite(q[k, i]):
                return -1
    failed = 0
    for k in range(nb):
        Mk = M[0] if shared else M[k]
        qk = q[k]
        qscale = 1.0
        for i in range(n):
            qscale = max(qscale, abs(qk[i]))
        if n <= TINY_N and enumerate_tiny(Mk, qk, 1e-3 * tol * qscale, z_out[k]):
            s, it = STATUS_SOLVED, 0
        else:
            s, it = lemke(Mk, qk, d, max_iter, z_out[k])
        iter_out[k] = it
        if s != STATUS_SOLVED:
            for i in range(n):
                w_out[k, i] = np.nan
            res_out[k] = np.inf
            status_out[k] = s
            failed += 1
            continue
        worst = 0.0
        for i in range(n):
            wi = qk[i]
            for j in range(n):
                wi += Mk[i, j] * z_out[k, j]
            w_out[k, i] = wi
            worst = max(worst, abs(min(z_out[k, i], wi)))
        res_out[k] = worst / qscale
        if res_out[k] <= tol:
            status_out[k] = STATUS_SOLVED
        else:
            status_out[k] = STATUS_INACCURATE
            failed += 1
    return failed
