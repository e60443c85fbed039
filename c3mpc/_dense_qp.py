r"""Goldfarb-Idnani dual active-set method for small dense strictly convex QPs (compiled).

Solves

.. math::  \min_x \tfrac12 x^\top H x + g^\top x \quad \text{s.t.}\quad C x \ge b

given ``J0 = L^{-T}`` for the Cholesky factor ``H = L L^T`` (so ``J0 J0^T = H^{-1}``) and the
unconstrained minimiser ``x0 = -H^{-1} g``. This is the right tool for C3's QP step with
inequalities: the condensed Hessian of each ADMM iteration is factored once and cached, the
method starts from the (cheap) unconstrained solution, and typically only a handful of
constraints become active. Reference: D. Goldfarb and A. Idnani, "A numerically stable dual
method for solving strictly convex quadratic programs", Math. Programming 27 (1983).

The invariants kept are ``J^T N_A = [R; 0]`` with R upper triangular, N_A the normals of the
active constraints, and J orthogonal in the H metric (J^T H J = I). Adding or dropping a
constraint updates J and R with Givens rotations, O(n^2) each.

Status codes: 0 optimal, 1 infeasible, 2 iteration limit.
"""

from __future__ import annotations

import numpy as np

from lcs._lemke_kernel import njit

__all__ = ["gi_solve", "GI_OPTIMAL", "GI_INFEASIBLE", "GI_MAX_ITER"]

GI_OPTIMAL = 0
GI_INFEASIBLE = 1
GI_MAX_ITER = 2


@njit(cache=True)
def _rotate_cols(Jt, i, j, c, s):
    """Columns i, j of J (rows of the stored transpose Jt) <- c J_i + s J_j, -s J_i + c J_j."""
    for r in range(Jt.shape[1]):
        a = Jt[i, r]
        b = Jt[j, r]
        Jt[i, r] = c * a + s * b
        Jt[j, r] = -s * a + c * b


@njit(cache=True)
def gi_solve(J0, x0, C, b, tol, max_iter, x_out, active_out):
    """Goldfarb-Idnani on ``C x >= b``.

    J is kept transposed (row k of ``Jt`` is column k of J) so that the column operations of
    the method (dot products, axpys, Givens rotations) run over contiguous memory, and each
    constraint normal is used through its nonzero entries (bounds are unit vectors).

    Args:
        J0: (n, n) L^{-T} with H = L L^T (not modified).
        x0: (n,) unconstrained minimiser -H^{-1} g.
        C: (m, n) constraint normals, b: (m,) right-hand sides.
        tol: feasibility tolerance (absolute, on C x - b).
        max_iter: budget of add/drop steps.
        x_out: (n,) solution buffer.
        active_out: (m,) int buffer; 1 where the constraint is active at the solution.

    Returns:
        (status, number of add/drop steps).
    """
    n = x0.shape[0]
    m = b.shape[0]
    Jt = J0.T.copy()  # C-contiguous transpose: Jt[k] is column k of J
    R = np.zeros((n, n))
    A = np.empty(n, np.int64)  # active constraint indices (at most n)
    u = np.zeros(n + 1)  # multipliers of the active set (+ slot for the one being added)
    q = 0
    x = x0.copy()
    d = np.empty(n)
    z = np.empty(n)
    r = np.empty(n)
    is_active = np.zeros(m, np.int64)
    cnorm = np.empty(m)
    nnz = np.zeros(m, np.int64)
    nzidx = np.empty((m, n), np.int64)
    for i in range(m):
        nrm = 0.0
        for k in range(n):
            if C[i, k] != 0.0:
                nrm += C[i, k] * C[i, k]
                nzidx[i, nnz[i]] = k
                nnz[i] += 1
        cnorm[i] = np.sqrt(nrm) if nrm > 0 else 1.0
    it = 0
    while True:
        # Step 1: most violated constraint.
        p = -1
        worst = -tol
        for i in range(m):
            if is_active[i] == 1:
                continue
            s = -b[i]
            for t in range(nnz[i]):
                k = nzidx[i, t]
                s += C[i, k] * x[k]
            if s / cnorm[i] < worst:  # violation per unit normal
                worst = s / cnorm[i]
                p = i
        if p < 0:
            for k in range(n):
                x_out[k] = x[k]
            for i in range(m):
                active_out[i] = is_active[i]
            return GI_OPTIMAL, it
        u_p = 0.0
        # Step 2: move towards satisfying constraint p, dropping blocking ones as needed.
        while True:
            it += 1
            if it > max_iter:
                for k in range(n):
                    x_out[k] = x[k]
                return GI_MAX_ITER, it
            for k in range(n):  # d = J^T n+  (sparse n+)
                s = 0.0
                for t in range(nnz[p]):
                    i = nzidx[p, t]
                    s += Jt[k, i] * C[p, i]
                d[k] = s
            for i in range(n):  # z = J2 d2
                z[i] = 0.0
            for k in range(q, n):
                dk = d[k]
                if dk != 0.0:
                    for i in range(n):
                        z[i] += Jt[k, i] * dk
            for k in range(q - 1, -1, -1):  # r = R^{-1} d1 (back substitution)
                s = d[k]
                for jj in range(k + 1, q):
                    s -= R[k, jj] * r[jj]
                r[k] = s / R[k, k]
            # Partial step length t1 (dual): first active multiplier to reach zero.
            t1 = np.inf
            kdrop = -1
            for k in range(q):
                if r[k] > 0.0:
                    tk = u[k] / r[k]
                    if tk < t1:
                        t1 = tk
                        kdrop = k
            # Full step length t2 (primal): satisfy constraint p exactly.
            zn = 0.0
            for t in range(nnz[p]):
                i = nzidx[p, t]
                zn += z[i] * C[p, i]
            znorm = 0.0
            for i in range(n):
                znorm += z[i] * z[i]
            if znorm <= 1e-28 or zn <= 0.0:
                t2 = np.inf
            else:
                s = -b[p]
                for t in range(nnz[p]):
                    i = nzidx[p, t]
                    s += C[p, i] * x[i]
                t2 = -s / zn
            t = min(t1, t2)
            if t == np.inf:
                return GI_INFEASIBLE, it
            if t2 < np.inf:
                for i in range(n):
                    x[i] += t * z[i]
            for k in range(q):
                u[k] -= t * r[k]
            u_p += t
            if t2 <= t1:
                # Add p: rotate d[q+1:] into d[q], updating J's columns.
                for jj in range(n - 1, q, -1):
                    a = d[jj - 1]
                    bb = d[jj]
                    if bb == 0.0:
                        continue
                    h = np.hypot(a, bb)
                    c = a / h
                    s = bb / h
                    d[jj - 1] = h
                    d[jj] = 0.0
                    _rotate_cols(Jt, jj - 1, jj, c, s)
                for k in range(q + 1):
                    R[k, q] = d[k]
                A[q] = p
                u[q] = u_p
                is_active[p] = 1
                q += 1
                break
            # Drop constraint kdrop: delete its column of R and re-triangularise.
            is_active[A[kdrop]] = 0
            for k in range(kdrop, q - 1):
                A[k] = A[k + 1]
                u[k] = u[k + 1]
                for i in range(n):
                    R[i, k] = R[i, k + 1]
            for i in range(n):
                R[i, q - 1] = 0.0
            q -= 1
            for k in range(kdrop, q):
                a = R[k, k]
                bb = R[k + 1, k]
                if bb == 0.0:
                    continue
                h = np.hypot(a, bb)
                c = a / h
                s = bb / h
                for jj in range(k, q):
                    ra = R[k, jj]
                    rb = R[k + 1, jj]
                    R[k, jj] = c * ra + s * rb
                    R[k + 1, jj] = -s * ra + c * rb
                R[k + 1, k] = 0.0
                _rotate_cols(Jt, k, k + 1, c, s)
