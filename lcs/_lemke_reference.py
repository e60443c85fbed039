"""Pure-numpy reference implementation of Lemke's method (lexicographic, covering vector).

Same algorithm as the compiled kernel in :mod:`lcs._lemke_kernel`, written with array
operations instead of scalar loops. It is slower (Python overhead per pivot) and exists so the
tests can check the compiled kernel against an independent implementation.
"""

from __future__ import annotations

import numpy as np

from ._lemke_kernel import PIVOT_TOL, STATUS_MAX_ITER, STATUS_RAY, STATUS_SOLVED, TIE_TOL


def _lexmin(pdiv: np.ndarray, rhs: np.ndarray, Binv: np.ndarray, cand: np.ndarray,
            z0_row: int) -> int:
    table = np.column_stack([rhs[cand], Binv[cand]]) / pdiv[cand, None]
    alive = np.arange(cand.size)
    for col in range(table.shape[1]):
        vals = table[alive, col]
        best = vals.min()
        alive = alive[vals <= best + TIE_TOL * (1.0 + abs(best))]
        if col == 0 and z0_row in cand[alive]:
            return z0_row
        if alive.size == 1:
            break
    return int(cand[alive[0]])


def lemke_reference(M: np.ndarray, q: np.ndarray, d: np.ndarray | None = None,
                    max_iter: int | None = None) -> tuple[int, np.ndarray, int]:
    """Solve LCP(q, M) by Lemke's method; returns (status, z, pivots). z is NaN on failure."""
    M = np.asarray(M, dtype=float)
    q = np.asarray(q, dtype=float)
    n = q.size
    d = np.ones(n) if d is None else np.asarray(d, dtype=float)
    max_iter = 50 * (n + 1) if max_iter is None else max_iter
    if np.all(q >= 0):
        return STATUS_SOLVED, np.zeros(n), 0
    # Normalise: LCP(q/beta, M/alpha) has the solution z * alpha / beta (see the kernel).
    alpha = float(np.abs(M).max()) or 1.0
    beta = float(np.abs(q).max())
    q_orig, M_orig = q, M
    M, q = M / alpha, q / beta
    Binv = np.eye(n)
    rhs = q.copy()
    basis = np.arange(n)

    def pivot(col: np.ndarray, r: int) -> None:
        Binv[r] /= col[r]
        rhs[r] /= col[r]
        f = col.copy()
        f[r] = 0.0
        Binv[:] -= np.outer(f, Binv[r])
        rhs[:] -= f * rhs[r]

    r = _lexmin(d, rhs, Binv, np.arange(n), -1)
    pivot(-d, r)
    leaving, basis[r], z0_row, it = basis[r], 2 * n, r, 1
    status = STATUS_MAX_ITER
    while it < max_iter:
        entering = leaving + n if leaving < n else leaving - n
        col = Binv[:, entering].copy() if entering < n else -(Binv @ M[:, entering - n])
        thr = PIVOT_TOL * max(1.0, np.abs(col).max())
        cand = np.flatnonzero(col > thr)
        if cand.size == 0:
            status = STATUS_RAY
            break
        pdiv = np.where(col > thr, col, 1.0)
        r = _lexmin(pdiv, rhs, Binv, cand, z0_row)
        pivot(col, r)
        leaving, basis[r] = basis[r], entering
        it += 1
        if leaving == 2 * n:
            status = STATUS_SOLVED
            break
    if status != STATUS_SOLVED:
        return status, np.full(n, np.nan), it
    z = np.zeros(n)
    is_z = (basis >= n) & (basis < 2 * n)
    z[basis[is_z] - n] = np.maximum(rhs[is_z], 0.0) * beta / alpha
    M, q = M_orig, q_orig
    a = basis[is_z] - n
    if a.size:
        try:
            zp = np.zeros(n)
            zp[a] = np.linalg.solve(M[np.ix_(a, a)], -q[a])
            res = lambda v: np.abs(np.minimum(v, M @ v + q)).max()  # noqa: E731
            if res(zp) <= res(z):
                z = zp
        except np.linalg.LinAlgError:
            pass
    return status, z, it
