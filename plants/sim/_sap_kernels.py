"""Compiled per-contact kernels of SAP (numba, ``cache=True``).

Profiling the simulator on small scenes (5-cube stack: 36 contacts; Franka push: 1-3 contacts)
showed the SAP solve dominated by the *number* of small numpy operations, not by their size: the
region masks, fancy-indexed assignments and Hessian blocks of the R-norm projection cost
~25 array operations per evaluation, repeated in every Newton and line-search iteration. These
kernels do the same arithmetic in one pass over the contacts without temporaries.

The pure-numpy reference is :func:`plants.sim.sap._project_numpy` (and the line-search terms are
plain numpy expressions in ``tests/test_sap.py``); the tests compare both to round-off.
"""

from __future__ import annotations

import math

import numpy as np

from lcs._numba import HAVE_NUMBA, njit

from ._sap_sparse import block_cholesky, block_cholesky_solve, symbolic_blocks


__all__ = ["HAVE_NUMBA", "project_into", "line_search_terms", "delassus_blocks", "regularization", "newton_solve",
           "island_layout", "cholesky_inplace", "cholesky_solve_inplace"]


@njit(cache=True)
def project_into(y, R, mu, mu_hat, mu_tilde2, want_hessian, gamma, G):  # pragma: no cover
    """R-norm projection γ = P_F(y) per contact (seed 001 App. C), and G_i = ∂P/∂y R_i⁻¹ (App. D).

    Written into ``gamma`` (n_c, 3) and, if ``want_hessian``, ``G`` (n_c, 3, 3).

    Same regions and boundaries as the numpy reference: stiction ``y_r ≤ μ y_n`` and ``y_n ≥ 0``;
    no contact ``y_n ≤ −μ̂ y_r``; sliding otherwise.
    """
    n = y.shape[0]
    for i in range(n):
        y0 = y[i, 0]
        y1 = y[i, 1]
        yn = y[i, 2]
        yr = math.sqrt(y0 * y0 + y1 * y1)
        m = mu[i]
        if yr <= m * yn and yn >= 0.0:  # stiction
            gamma[i, 0] = y0
            gamma[i, 1] = y1
            gamma[i, 2] = yn
            if want_hessian:
                for a in range(3):
                    for b in range(3):
                        G[i, a, b] = 0.0
                G[i, 0, 0] = 1.0 / R[i, 0]
                G[i, 1, 1] = 1.0 / R[i, 1]
                G[i, 2, 2] = 1.0 / R[i, 2]
        elif yn <= -mu_hat[i] * yr:  # no contact
            gamma[i, 0] = 0.0
            gamma[i, 1] = 0.0
            gamma[i, 2] = 0.0
            if want_hessian:
                for a in range(3):
                    for b in range(3):
                        G[i, a, b] = 0.0
        else:  # sliding (y_r > 0 here)
            mh = mu_hat[i]
            f = 1.0 / (1.0 + mu_tilde2[i])
            t0 = y0 / yr
            t1 = y1 / yr
            gn = f * (yn + mh * yr)
            gamma[i, 0] = m * gn * t0
            gamma[i, 1] = m * gn * t1
            gamma[i, 2] = gn
            if want_hessian:
                Rt = R[i, 0]
                Rn = R[i, 2]
                c_perp = gn / yr
                c_par = mh * f
                s = m / Rt
                G[i, 0, 0] = s * (c_perp * (1.0 - t0 * t0) + c_par * t0 * t0)
                G[i, 1, 1] = s * (c_perp * (1.0 - t1 * t1) + c_par * t1 * t1)
                g01 = s * (c_par - c_perp) * t0 * t1
                G[i, 0, 1] = g01
                G[i, 1, 0] = g01
                o = m * f / Rn
                G[i, 0, 2] = o * t0
                G[i, 1, 2] = o * t1
                G[i, 2, 0] = o * t0
                G[i, 2, 1] = o * t1
                G[i, 2, 2] = f / Rn


@njit(cache=True)
def line_search_terms(alpha, vc0, dvc, v_hat, R, mu, mu_hat, mu_tilde2, want_hessian):  # noqa: D417
    """Contact terms of ℓ(α) = ℓ_p(v + αΔv) along a Newton direction (seed 001 §IV-B).

    With y(α) = −R⁻¹(v_c0 + αΔv_c − v̂) and γ(α) = P_F(y(α)), returns
    ``(Δv_c·γ, Δv_cᵀ G Δv_c if want_hessian else 0, Σ γᵀRγ)``: ℓ'(α) = Δpᵀe(α) − Δv_c·γ,
    ℓ''(α) = ΔvᵀΔp + Δv_cᵀGΔv_c and ℓ(α) = ½‖e(α)‖²_A + ½ΣγᵀRγ.
    """
    n = vc0.shape[0]
    y = np.empty((n, 3))
    for i in range(n):
        for a in range(3):
            y[i, a] = -(vc0[i, a] + alpha * dvc[i, a] - v_hat[i, a]) / R[i, a]
    gamma = np.empty((n, 3))
    G = np.empty((n, 3, 3))
    project_into(y, R, mu, mu_hat, mu_tilde2, want_hessian, gamma, G)
    d_gamma = 0.0
    d2 = 0.0
    cost = 0.0
    for i in range(n):
        for a in range(3):
            d_gamma += dvc[i, a] * gamma[i, a]
            cost += gamma[i, a] * R[i, a] * gamma[i, a]
            if want_hessian:
                for b in range(3):
                    d2 += dvc[i, a] * G[i, a, b] * dvc[i, b]
    return d_gamma, d2, cost


@njit(cache=True)
def delassus_blocks(A, J, tree_starts, contact_trees):  # pragma: no cover - compiled
    """(n_c, 3, 3) diagonal blocks W_ii = Σ_t J_{i,t} A_t⁻¹ J_{i,t}ᵀ of the Delassus operator.

    ``A`` is block diagonal over the trees (``tree_starts``); each contact touches the ≤ 2 trees in
    ``contact_trees`` (−1 = world). One inverse per touched tree, then O(s²) per contact and side.
    Reference: :meth:`plants.sim.contact_problem.ContactProblem.delassus_diagonal`.
    """
    n_c = contact_trees.shape[0]
    n_t = tree_starts.shape[0] - 1
    W = np.zeros((n_c, 3, 3))
    s_max = 0
    for t in range(n_t):
        s_max = max(s_max, tree_starts[t + 1] - tree_starts[t])
    inv = np.zeros((n_t, s_max, s_max))
    done = np.zeros(n_t, dtype=np.bool_)
    X = np.empty((3, s_max))
    for i in range(n_c):
        for side in range(2):
            t = contact_trees[i, side]
            if t < 0:
                continue
            a = tree_starts[t]
            s = tree_starts[t + 1] - a
            if not done[t]:
                inv[t, :s, :s] = np.linalg.inv(np.ascontiguousarray(A[a : a + s, a : a + s]))
                done[t] = True
            for r in range(3):  # X = J_{i,t} A_t⁻¹
                for k in range(s):
                    acc = 0.0
                    for l in range(s):
                        acc += J[3 * i + r, a + l] * inv[t, l, k]
                    X[r, k] = acc
            for r in range(3):
                for c in range(3):
                    acc = 0.0
                    for k in range(s):
                        acc += X[r, k] * J[3 * i + c, a + k]
                    W[i, r, c] += acc
    return W


@njit(cache=True)
def regularization(W, dt, k, tau, phi0, mu, beta, sigma):  # pragma: no cover - compiled
    """Per-contact R = (R_t, R_t, R_n), v̂, μ̃², μ̂ and w of seed 001 eqs. (29)-(30).

    From the Delassus blocks ``W`` (n_c, 3, 3).
    Reference: :func:`plants.sim.sap._sap_parameters_numpy`.
    """
    n_c = W.shape[0]
    R = np.empty((n_c, 3))
    v_hat = np.zeros((n_c, 3))
    mu_tilde2 = np.empty(n_c)
    mu_hat = np.empty(n_c)
    w = np.empty(n_c)
    near_rigid = beta * beta / (4.0 * math.pi * math.pi)
    for i in range(n_c):
        acc = 0.0
        for a in range(3):
            for b in range(3):
                acc += W[i, a, b] * W[i, a, b]
        wi = math.sqrt(acc) / 3.0
        w[i] = wi
        r_phys = 1.0 / (dt * k[i] * (dt + tau[i]))  # 0 for k = inf
        Rn = max(near_rigid * wi, r_phys)
        Rt = sigma * wi
        R[i, 0] = Rt
        R[i, 1] = Rt
        R[i, 2] = Rn
        v_hat[i, 2] = -phi0[i] / (dt + tau[i])
        ratio = Rt / Rn
        mu_tilde2[i] = mu[i] * mu[i] * ratio
        mu_hat[i] = mu[i] * ratio
    return R, v_hat, mu_tilde2, mu_hat, w


# ----------------------------------------------------------------------------- the whole Newton solve
# Profiling a step of the small scenes (cube-slide: 4 contacts, 6 dofs; cube-rest-5: 36 contacts,
# 30 dofs) showed SAP's solve costing 45-60 µs of Python and numpy call overhead around ~5 µs of
# arithmetic (docs/sap.md §9). ``newton_solve`` runs Algorithm 2 of seed 001 as one compiled call:
# the same steps as :meth:`plants.sim.sap.SAPSolver._solve_reference` (the readable reference it is
# tested against), with the contact Jacobian used through its tree blocks (each contact touches at
# most two trees: J v, Jᵀγ and Jᵀ G J cost O(n_c s), O(n_c s²) with s the tree size) and H factored
# by a dense Cholesky per island (connected group of trees).

SOLVED, MAX_ITERATIONS, LINE_SEARCH_FAILED, NUMERICAL_ERROR = 0, 1, 2, 3  # ContactSolverStatus values
LAPACK_ABOVE = 96
"""Islands of more dofs than this are factored by LAPACK (``np.linalg.cholesky``, blocked) instead of
the plain loops of :func:`cholesky_inplace`, which win below it (no copy, no call)."""


@njit(cache=True)
def _find(parent, i):  # pragma: no cover - compiled
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit(cache=True)
def island_layout(tree_starts, contact_trees, islands):  # pragma: no cover - compiled
    """Islands of trees coupled by contacts (union-find), as a dof layout.

    Returns ``(n_isl, isl_start, isl_dofs, local)``: island k owns the dofs
    ``isl_dofs[isl_start[k]:isl_start[k+1]]`` (ascending), ``local[d]`` is dof d's index within its
    island. ``islands=False``: one island with every dof.
    """
    n_t = tree_starts.shape[0] - 1
    n_v = tree_starts[n_t]
    parent = np.arange(n_t)
    if islands:
        for i in range(contact_trees.shape[0]):
            a = contact_trees[i, 0]
            b = contact_trees[i, 1]
            if a >= 0 and b >= 0:
                ra = _find(parent, a)
                rb = _find(parent, b)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    else:
        for t in range(n_t):
            parent[t] = 0
    label = np.full(n_t, -1, dtype=np.int64)
    n_isl = 0
    root_label = np.full(n_t, -1, dtype=np.int64)
    for t in range(n_t):
        r = _find(parent, t)
        if root_label[r] < 0:
            root_label[r] = n_isl
            n_isl += 1
        label[t] = root_label[r]
    size = np.zeros(n_isl, dtype=np.int64)
    for t in range(n_t):
        size[label[t]] += tree_starts[t + 1] - tree_starts[t]
    isl_start = np.zeros(n_isl + 1, dtype=np.int64)
    for k in range(n_isl):
        isl_start[k + 1] = isl_start[k] + size[k]
    fill = isl_start[:-1].copy()
    isl_dofs = np.empty(n_v, dtype=np.int64)
    local = np.empty(n_v, dtype=np.int64)
    for t in range(n_t):  # trees in ascending order: each island's dofs ascend
        k = label[t]
        for d in range(tree_starts[t], tree_starts[t + 1]):
            local[d] = fill[k] - isl_start[k]
            isl_dofs[fill[k]] = d
            fill[k] += 1
    return n_isl, isl_start, isl_dofs, local


@njit(cache=True)
def _contact_dofs(tree_starts, contact_trees):  # pragma: no cover - compiled
    """(dofs (n_c, 2 s_max), count (n_c,)): the dofs of the (one or two distinct) trees of each contact."""
    n_c = contact_trees.shape[0]
    n_t = tree_starts.shape[0] - 1
    s_max = 1
    for t in range(n_t):
        s_max = max(s_max, tree_starts[t + 1] - tree_starts[t])
    dofs = np.zeros((n_c, 2 * s_max), dtype=np.int64)
    count = np.zeros(n_c, dtype=np.int64)
    for i in range(n_c):
        n = 0
        for side in range(2):
            t = contact_trees[i, side]
            if t < 0 or (side == 1 and t == contact_trees[i, 0]):
                continue
            for d in range(tree_starts[t], tree_starts[t + 1]):
                dofs[i, n] = d
                n += 1
        count[i] = n
    return dofs, count


@njit(cache=True)
def _tree_matvec(A, x, tree_starts, out):  # pragma: no cover - compiled
    """out = A x for A block diagonal over the trees."""
    for t in range(tree_starts.shape[0] - 1):
        a = tree_starts[t]
        b = tree_starts[t + 1]
        for i in range(a, b):
            acc = 0.0
            for j in range(a, b):
                acc += A[i, j] * x[j]
            out[i] = acc


@njit(cache=True)
def _jac_matvec(J, dofs, count, x, out):  # pragma: no cover - compiled
    """out (n_c, 3) = (J x) per contact, through the tree blocks."""
    for i in range(count.shape[0]):
        for r in range(3):
            acc = 0.0
            row = 3 * i + r
            for k in range(count[i]):
                d = dofs[i, k]
                acc += J[row, d] * x[d]
            out[i, r] = acc


@njit(cache=True)
def _jac_tmatvec(J, dofs, count, g, out):  # pragma: no cover - compiled
    """out (n_v,) = Jᵀ g, g (n_c, 3)."""
    out[:] = 0.0
    for i in range(count.shape[0]):
        for k in range(count[i]):
            d = dofs[i, k]
            out[d] += J[3 * i, d] * g[i, 0] + J[3 * i + 1, d] * g[i, 1] + J[3 * i + 2, d] * g[i, 2]


@njit(cache=True)
def cholesky_inplace(L, n):  # pragma: no cover - compiled
    """Lower Cholesky factor of the SPD matrix in ``L[:n, :n]`` (lower triangle read), in place.
    Returns False when a pivot is not positive and finite (the matrix is not SPD)."""
    for j in range(n):
        s = L[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not (s > 0.0) or not math.isfinite(s):
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            acc = L[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / d
    return True


@njit(cache=True)
def cholesky_solve_inplace(L, n, x):  # pragma: no cover - compiled
    """x ← (L Lᵀ)⁻¹ x for the factor of :func:`cholesky_inplace`."""
    for i in range(n):
        acc = x[i]
        for k in range(i):
            acc -= L[i, k] * x[k]
        x[i] = acc / L[i, i]
    for i in range(n - 1, -1, -1):
        acc = x[i]
        for k in range(i + 1, n):
            acc -= L[k, i] * x[k]
        x[i] = acc / L[i, i]


@njit(cache=True)
def _delassus_blocks_cholesky(A, J, tree_starts, contact_trees):  # pragma: no cover - compiled
    """:func:`delassus_blocks` (same per-side sum) with each touched tree's block Cholesky-factored
    instead of inverted: W_ii += Xᵀ X, X = L_t⁻¹ J_{i,t}ᵀ (the 6×6 LAPACK inverses cost ~1.5 µs each)."""
    n_c = contact_trees.shape[0]
    n_t = tree_starts.shape[0] - 1
    W = np.zeros((n_c, 3, 3))
    s_max = 0
    for t in range(n_t):
        s_max = max(s_max, tree_starts[t + 1] - tree_starts[t])
    L = np.empty((n_t, s_max, s_max))
    done = np.zeros(n_t, dtype=np.bool_)
    X = np.empty((3, s_max))
    for i in range(n_c):
        for side in range(2):
            t = contact_trees[i, side]
            if t < 0:
                continue
            a = tree_starts[t]
            s = tree_starts[t + 1] - a
            if not done[t]:
                for r in range(s):
                    for c in range(r + 1):
                        L[t, r, c] = A[a + r, a + c]
                if not cholesky_inplace(L[t], s):  # A is SPD; a failure gives NaN, caught as NUMERICAL_ERROR
                    L[t, :s, :s] = np.nan
                done[t] = True
            for r in range(3):  # forward substitution L x = J_{i,t}ᵀ column r
                for k in range(s):
                    acc = J[3 * i + r, a + k]
                    for m in range(k):
                        acc -= L[t, k, m] * X[r, m]
                    X[r, k] = acc / L[t, k, k]
            for r in range(3):
                for c in range(3):
                    acc = 0.0
                    for k in range(s):
                        acc += X[r, k] * X[c, k]
                    W[i, r, c] += acc
    return W


@njit(cache=True)
def _sap_cost(A, v, v_star, Av_star, J, dofs, count, y_shift, Rinv, R, mu, mu_hat, mu_tilde2, tree_starts,
              Av, vc, gamma, G, jc, grad):  # pragma: no cover - compiled
    """ℓ_p(v), with A v, γ, G, Jᵀγ and ∇ℓ_p written into the buffers (SAPSolver._evaluate)."""
    n_v = v.shape[0]
    n_c = count.shape[0]
    _tree_matvec(A, v, tree_starts, Av)
    _jac_matvec(J, dofs, count, v, vc)
    y = np.empty((n_c, 3))
    for i in range(n_c):
        for r in range(3):
            y[i, r] = y_shift[i, r] - vc[i, r] * Rinv[i, r]
    project_into(y, R, mu, mu_hat, mu_tilde2, True, gamma, G)
    _jac_tmatvec(J, dofs, count, gamma, jc)
    eAe = 0.0
    for d in range(n_v):
        ae = Av[d] - Av_star[d]
        eAe += (v[d] - v_star[d]) * ae
        grad[d] = ae - jc[d]
    gRg = 0.0
    for i in range(n_c):
        for r in range(3):
            gRg += gamma[i, r] * R[i, r] * gamma[i, r]
    return 0.5 * eAe + 0.5 * gRg


@njit(cache=True)
def _ls_at(alpha, hess, vc0, dvc, v_hat, R, mu, mu_hat, mu_tilde2, dpe, dvdp, eAe):  # pragma: no cover
    dg, dGd, gRg = line_search_terms(alpha, vc0, dvc, v_hat, R, mu, mu_hat, mu_tilde2, hess)
    d1 = dpe + alpha * dvdp - dg
    if not hess:
        return 0.5 * eAe + alpha * dpe + 0.5 * alpha * alpha * dvdp + 0.5 * gRg, d1
    return d1, dvdp + dGd


@njit(cache=True)
def newton_solve(A, v_star, v_guess, J, phi0, mu, stiffness, dissipation, dt, tree_starts, contact_trees, M_diag,
                 beta, sigma, rel_tol, abs_tol, max_iterations, exact, alpha_max, armijo_rho, armijo_c,
                 ls_max_iterations, ls_rel_tol, islands, sparse_above, v, gamma_out, history):  # pragma: no cover - compiled
    """SAP (seed 001 Algorithm 2) in one call; see the section comment above.

    Contacts whose Jacobian rows are all zero (inert) are left out and get zero impulses. Writes the
    solution into ``v`` (n_v,), the impulses into ``gamma_out`` (n_c, 3) and the stopping quantity
    per iteration into ``history`` (max_iterations + 1,).

    Returns ``(status, iterations, line-search iterations, len(history), cost, scale)`` with ``scale``
    = max(‖D A v‖, ‖D Jᵀγ‖) of the returned iterate (the momentum error's denominator).
    """
    n_v = A.shape[0]
    n_all = phi0.shape[0]
    # ---- inert contacts (zero Jacobian) out: their W_ii = 0 would zero R_i. A contact's row is
    # nonzero only on the columns of its trees (ContactProblem.contact_trees), so only those are
    # read and copied: O(n_c s), not O(n_c n_v) (the other columns of Jk are never read)
    keep = np.empty(n_all, dtype=np.int64)
    n_c = 0
    for i in range(n_all):
        nz = False
        for side in range(2):
            t = contact_trees[i, side]
            if t < 0:
                continue
            for r in range(3):
                for d in range(tree_starts[t], tree_starts[t + 1]):
                    if J[3 * i + r, d] != 0.0:
                        nz = True
                        break
                if nz:
                    break
            if nz:
                break
        if nz:
            keep[n_c] = i
            n_c += 1
    keep = keep[:n_c]
    Jk = np.empty((3 * n_c, n_v))
    ct = np.empty((n_c, 2), dtype=np.int64)
    phi_k = np.empty(n_c)
    mu_k = np.empty(n_c)
    k_k = np.empty(n_c)
    tau_k = np.empty(n_c)
    for j in range(n_c):
        i = keep[j]
        for side in range(2):
            t = contact_trees[i, side]
            if t < 0:
                continue
            for r in range(3):
                for d in range(tree_starts[t], tree_starts[t + 1]):
                    Jk[3 * j + r, d] = J[3 * i + r, d]
        ct[j, 0] = contact_trees[i, 0]
        ct[j, 1] = contact_trees[i, 1]
        phi_k[j] = phi0[i]
        mu_k[j] = mu[i]
        k_k[j] = stiffness[i]
        tau_k[j] = dissipation[i]
    # ---- regularization (eqs. 29-30) and the per-problem data of the workspace
    W = _delassus_blocks_cholesky(A, Jk, tree_starts, ct)
    R, v_hat, mu_tilde2, mu_hat, w = regularization(W, dt, k_k, tau_k, phi_k, mu_k, beta, sigma)
    Rinv = 1.0 / R
    y_shift = v_hat * Rinv
    D = 1.0 / np.sqrt(M_diag)
    Av_star = np.empty(n_v)
    _tree_matvec(A, v_star, tree_starts, Av_star)
    dofs, count = _contact_dofs(tree_starts, ct)
    n_isl, isl_start, isl_dofs, local = island_layout(tree_starts, ct, islands)
    isl_of = np.empty(n_v, dtype=np.int64)
    s_isl = 0
    for k in range(n_isl):
        s_isl = max(s_isl, isl_start[k + 1] - isl_start[k])
        for m in range(isl_start[k], isl_start[k + 1]):
            isl_of[isl_dofs[m]] = k
    # ---- contacts bucketed by island (counting sort), and the block-sparse islands' symbolic
    # factorization (_sap_sparse: trees as supernodes, minimum-degree order), once per solve
    c_isl = np.zeros(n_isl + 1, dtype=np.int64)
    for i in range(n_c):
        if count[i] > 0:
            c_isl[isl_of[dofs[i, 0]] + 1] += 1
    for k in range(n_isl):
        c_isl[k + 1] += c_isl[k]
    c_fill = c_isl[:-1].copy()
    c_list = np.empty(max(c_isl[n_isl], 1), dtype=np.int64)
    for i in range(n_c):
        if count[i] > 0:
            k = isl_of[dofs[i, 0]]
            c_list[c_fill[k]] = i
            c_fill[k] += 1
    n_t = tree_starts.shape[0] - 1
    tree_of_dof = np.empty(n_v, dtype=np.int64)
    for t in range(n_t):
        for d in range(tree_starts[t], tree_starts[t + 1]):
            tree_of_dof[d] = t
    sp_of = np.full(n_isl, -1, dtype=np.int64)  # island -> entry of the lists below (-1: dense, -2: pending)
    tpos = np.zeros(n_t, dtype=np.int64)  # a sparse island's tree -> its elimination position
    # per block-sparse island: trees in elimination order, block slots, column pointers, column
    # structures, supernode sizes and offsets, block storage (empty lists: no allocation per array)
    sp_trees = [np.zeros(1, dtype=np.int64) for _ in range(0)]
    sp_slot = [np.zeros((1, 1), dtype=np.int64) for _ in range(0)]
    sp_ptr = [np.zeros(1, dtype=np.int64) for _ in range(0)]
    sp_struct = [np.zeros(1, dtype=np.int64) for _ in range(0)]
    sp_size = [np.zeros(1, dtype=np.int64) for _ in range(0)]
    sp_off = [np.zeros(1, dtype=np.int64) for _ in range(0)]
    sp_blocks = [np.zeros((1, 1, 1)) for _ in range(0)]
    s_isl_dense = 0
    for k in range(n_isl):
        a0 = isl_start[k]
        m = isl_start[k + 1] - a0
        nt_k = 0
        for ii in range(m):
            if isl_dofs[a0 + ii] == tree_starts[tree_of_dof[isl_dofs[a0 + ii]]]:
                nt_k += 1
        if m <= sparse_above or nt_k < 3:
            s_isl_dense = max(s_isl_dense, m)
            continue
        sp_of[k] = -2  # block-sparse: its symbolic factorization at its first Newton direction
    s_isl = max(s_isl_dense, 1)
    xs = np.empty(n_v)  # right-hand side of a block-sparse island
    L = np.empty((s_isl, s_isl))
    x = np.empty(s_isl)
    # ---- Newton iterations
    for d in range(n_v):
        v[d] = v_guess[d]
    Av = np.empty(n_v)
    vc = np.empty((n_c, 3))
    gamma = np.empty((n_c, 3))
    G = np.empty((n_c, 3, 3))
    jc = np.empty(n_v)
    grad = np.empty(n_v)
    dv = np.empty(n_v)
    dp = np.empty(n_v)
    e0 = np.empty(n_v)
    Ae0 = np.empty(n_v)
    vc0 = np.empty((n_c, 3))
    dvc = np.empty((n_c, 3))
    GJ = np.empty((3, dofs.shape[1]))
    status = MAX_ITERATIONS
    it = 0
    ls_total = 0
    n_hist = 0
    cost = _sap_cost(A, v, v_star, Av_star, Jk, dofs, count, y_shift, Rinv, R, mu_k, mu_hat, mu_tilde2,
                     tree_starts, Av, vc, gamma, G, jc, grad)
    while True:
        res2 = 0.0
        sa = 0.0
        sj = 0.0
        for d in range(n_v):
            res2 += (D[d] * grad[d]) ** 2
            sa += (D[d] * Av[d]) ** 2
            sj += (D[d] * jc[d]) ** 2
        res = math.sqrt(res2)
        scale = math.sqrt(max(sa, sj))
        history[n_hist] = res
        n_hist += 1
        if not math.isfinite(res):
            status = NUMERICAL_ERROR
            break
        if res < abs_tol + rel_tol * scale:  # eq. (26)
            status = SOLVED
            break
        if it >= max_iterations:
            break
        # ---- Newton direction: H Δv = −∇ℓ, H = A + Jᵀ G J, one dense Cholesky per island
        failed = False
        for k in range(n_isl):
            a0 = isl_start[k]
            m = isl_start[k + 1] - a0
            if c_isl[k + 1] == c_isl[k]:  # no contact on the island: ∇ℓ = A (v − v*) there, so Δv = v* − v
                for ii in range(m):
                    di = isl_dofs[a0 + ii]
                    dv[di] = v_star[di] - v[di]
                continue
            j_sp = sp_of[k]
            if j_sp == -2:  # first direction on this block-sparse island: order and pattern (symbolic)
                nt_k = 0
                for ii in range(m):
                    if isl_dofs[a0 + ii] == tree_starts[tree_of_dof[isl_dofs[a0 + ii]]]:
                        nt_k += 1
                trees_k = np.empty(nt_k, dtype=np.int64)
                nt_k = 0
                for ii in range(m):
                    d = isl_dofs[a0 + ii]
                    t = tree_of_dof[d]
                    if d == tree_starts[t]:
                        tpos[t] = nt_k  # (local index until the order is known)
                        trees_k[nt_k] = t
                        nt_k += 1
                ea = np.empty(c_isl[k + 1] - c_isl[k], dtype=np.int64)
                eb = np.empty_like(ea)
                for x_ in range(c_isl[k], c_isl[k + 1]):
                    i = c_list[x_]
                    ta = ct[i, 0]
                    tb = ct[i, 1]
                    ea[x_ - c_isl[k]] = tpos[ta] if ta >= 0 else tpos[tb]
                    eb[x_ - c_isl[k]] = tpos[tb] if tb >= 0 else tpos[ta]
                order, pos, slot, ptr, struct, n_blocks = symbolic_blocks(nt_k, ea, eb)
                size = np.empty(nt_k, dtype=np.int64)
                off = np.empty(nt_k, dtype=np.int64)
                o = 0
                s_max_k = 0
                for p in range(nt_k):
                    t = trees_k[order[p]]
                    size[p] = tree_starts[t + 1] - tree_starts[t]
                    off[p] = o
                    o += size[p]
                    s_max_k = max(s_max_k, size[p])
                for p in range(nt_k):
                    tpos[trees_k[order[p]]] = p
                sp_of[k] = len(sp_trees)
                sp_trees.append(trees_k[order])
                sp_slot.append(slot)
                sp_ptr.append(ptr)
                sp_struct.append(struct)
                sp_size.append(size)
                sp_off.append(off)
                sp_blocks.append(np.empty((n_blocks, s_max_k, s_max_k)))
                j_sp = sp_of[k]
            if j_sp >= 0:  # block-sparse island (_sap_sparse)
                trees_k, slot, size, off, blocks = sp_trees[j_sp], sp_slot[j_sp], sp_size[j_sp], sp_off[j_sp], sp_blocks[j_sp]
                blocks[:] = 0.0
                for p in range(trees_k.shape[0]):
                    a = tree_starts[trees_k[p]]
                    for r in range(size[p]):
                        xs[off[p] + r] = -grad[a + r]
                        for c in range(r + 1):
                            blocks[p, r, c] = A[a + r, a + c]
                for x_ in range(c_isl[k], c_isl[k + 1]):  # Jᵢᵀ Gᵢ Jᵢ into the blocks of the contact's trees
                    i = c_list[x_]
                    nd = count[i]
                    for r in range(3):
                        for q in range(nd):
                            dq = dofs[i, q]
                            GJ[r, q] = G[i, r, 0] * Jk[3 * i, dq] + G[i, r, 1] * Jk[3 * i + 1, dq] + G[i, r, 2] * Jk[3 * i + 2, dq]
                    # the contact's dofs are its trees' dof ranges one after the other (_contact_dofs):
                    # tree x's entries k ∈ [q0_x, q0_x + n_x); blocks (x, y) with pos x ≥ pos y, lower
                    # triangle of the diagonal ones
                    t0_ = tree_of_dof[dofs[i, 0]]
                    n0_ = tree_starts[t0_ + 1] - tree_starts[t0_]
                    t1_ = tree_of_dof[dofs[i, nd - 1]]
                    n_sides = 1 if nd == n0_ else 2
                    for sx in range(n_sides):
                        tx = t0_ if sx == 0 else t1_
                        qx = 0 if sx == 0 else n0_
                        nx = n0_ if sx == 0 else nd - n0_
                        ax = tree_starts[tx]
                        for sy in range(n_sides):
                            ty = t0_ if sy == 0 else t1_
                            if tpos[tx] < tpos[ty]:
                                continue
                            qy = 0 if sy == 0 else n0_
                            ny = n0_ if sy == 0 else nd - n0_
                            B = blocks[slot[tpos[tx], tpos[ty]]]
                            for r in range(nx):
                                d = ax + r
                                j0 = Jk[3 * i, d]
                                j1 = Jk[3 * i + 1, d]
                                j2 = Jk[3 * i + 2, d]
                                for c in range(r + 1 if sx == sy else ny):
                                    B[r, c] += j0 * GJ[0, qy + c] + j1 * GJ[1, qy + c] + j2 * GJ[2, qy + c]
                if not block_cholesky(blocks, size, slot, sp_ptr[j_sp], sp_struct[j_sp]):
                    failed = True
                    break
                block_cholesky_solve(blocks, size, slot, sp_ptr[j_sp], sp_struct[j_sp], off, xs)
                for p in range(trees_k.shape[0]):
                    a = tree_starts[trees_k[p]]
                    for r in range(size[p]):
                        dv[a + r] = xs[off[p] + r]
                continue
            for ii in range(m):
                di = isl_dofs[a0 + ii]
                x[ii] = -grad[di]
                for jj in range(ii + 1):
                    L[ii, jj] = A[di, isl_dofs[a0 + jj]]
            for x_ in range(c_isl[k], c_isl[k + 1]):  # contacts of this island: Jᵢᵀ Gᵢ Jᵢ on their tree blocks
                i = c_list[x_]
                nd = count[i]
                for r in range(3):
                    for q in range(nd):
                        dq = dofs[i, q]
                        GJ[r, q] = G[i, r, 0] * Jk[3 * i, dq] + G[i, r, 1] * Jk[3 * i + 1, dq] + G[i, r, 2] * Jk[3 * i + 2, dq]
                for p in range(nd):
                    dp_ = dofs[i, p]
                    lp = local[dp_]
                    for q in range(nd):
                        dq = dofs[i, q]
                        lq = local[dq]
                        if lq > lp:
                            continue
                        L[lp, lq] += Jk[3 * i, dp_] * GJ[0, q] + Jk[3 * i + 1, dp_] * GJ[1, q] + Jk[3 * i + 2, dp_] * GJ[2, q]
            if m <= LAPACK_ABOVE:
                if not cholesky_inplace(L, m):
                    failed = True
                    break
                cholesky_solve_inplace(L, m, x)
            else:  # a large island: LAPACK's blocked dpotrf (raises LinAlgError if not SPD)
                Hs = np.empty((m, m))
                for ii in range(m):
                    for jj in range(ii + 1):
                        Hs[ii, jj] = L[ii, jj]
                        Hs[jj, ii] = L[ii, jj]
                Lf = np.linalg.cholesky(Hs)
                cholesky_solve_inplace(Lf, m, x)
            for ii in range(m):
                dv[isl_dofs[a0 + ii]] = x[ii]
        if failed:
            status = NUMERICAL_ERROR
            break
        it += 1
        # ---- line search along Δv (exact: rtsafe on ℓ'(α); or Armijo backtracking)
        _jac_matvec(Jk, dofs, count, dv, dvc)
        _tree_matvec(A, dv, tree_starts, dp)
        for d in range(n_v):
            e0[d] = v[d] - v_star[d]
        eAe = 0.0
        if not exact:  # ℓ(α) itself is needed by Armijo alone (the exact search uses ℓ' and ℓ'')
            _tree_matvec(A, e0, tree_starts, Ae0)
            for d in range(n_v):
                eAe += e0[d] * Ae0[d]
        dvdp = 0.0
        dpe = 0.0
        d0 = 0.0
        for d in range(n_v):
            dvdp += dv[d] * dp[d]
            dpe += dp[d] * e0[d]
            d0 += grad[d] * dv[d]
        for i in range(n_c):  # J v at this v: the last _sap_cost's
            for r in range(3):
                vc0[i, r] = vc[i, r]
        if not d0 < 0:
            status = LINE_SEARCH_FAILED
            break
        if not exact:
            alpha = alpha_max
            n_ls = ls_max_iterations
            for n in range(1, ls_max_iterations + 1):
                ell, _ = _ls_at(alpha, False, vc0, dvc, v_hat, R, mu_k, mu_hat, mu_tilde2, dpe, dvdp, eAe)
                if ell < cost + armijo_c * alpha * d0:
                    n_ls = n
                    break
                alpha *= armijo_rho
        else:
            a_max = alpha_max
            f_hi, _ = _ls_at(a_max, True, vc0, dvc, v_hat, R, mu_k, mu_hat, mu_tilde2, dpe, dvdp, eAe)
            n_ls = 1
            if f_hi <= 0:
                alpha = a_max
            else:
                lo = 0.0
                hi = a_max
                alpha = min(1.0, a_max)
                dx_old = hi - lo
                dx = dx_old
                ls_scale = -d0
                f, df = _ls_at(alpha, True, vc0, dvc, v_hat, R, mu_k, mu_hat, mu_tilde2, dpe, dvdp, eAe)
                n_ls += 1
                while n_ls < ls_max_iterations + 2:
                    if abs(f) <= ls_rel_tol * ls_scale:
                        break
                    if f < 0:
                        lo = alpha
                    else:
                        hi = alpha
                    newton_ok = False
                    if df > 0:
                        trial = alpha - f / df
                        newton_ok = lo < trial < hi and abs(2.0 * f) <= abs(dx_old * df)
                    dx_old = dx
                    if newton_ok:
                        dx = f / df
                        alpha = alpha - dx
                    else:
                        dx = 0.5 * (hi - lo)
                        alpha = lo + dx
                    if hi - lo <= 4 * 2.220446049250313e-16 * hi:
                        break
                    f, df = _ls_at(alpha, True, vc0, dvc, v_hat, R, mu_k, mu_hat, mu_tilde2, dpe, dvdp, eAe)
                    n_ls += 1
        ls_total += n_ls
        for d in range(n_v):
            v[d] = v[d] + alpha * dv[d]
        cost = _sap_cost(A, v, v_star, Av_star, Jk, dofs, count, y_shift, Rinv, R, mu_k, mu_hat, mu_tilde2,
                         tree_starts, Av, vc, gamma, G, jc, grad)
    sa = 0.0
    sj = 0.0
    for d in range(n_v):
        sa += (D[d] * Av[d]) ** 2
        sj += (D[d] * jc[d]) ** 2
    gamma_out[:, :] = 0.0
    for j in range(n_c):
        for r in range(3):
            gamma_out[keep[j], r] = gamma[j, r]
    return status, it, ls_total, n_hist, cost, math.sqrt(max(sa, sj))
