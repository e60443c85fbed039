"""The SubADMM iteration over the slack pieces, compiled (numba, ``cache=True``), and its numpy
reference.

Profiling SubADMM on 8 A1s (67 pieces, 144 dofs) showed ~130 µs per iteration, nearly all in the
~20 small numpy operations of the piece gather, the z/λ-step and the scatter, the same for every
variant. :func:`piece_step` does them in one pass over the pieces, so that what remains per
iteration is the variant's own linear solve (the quantity Table III compares).

With ``u_ij = −λ_i`` (eq. 39) and ``z_ij = J_ij v̂ + (λ_i⁺ − λ_i)/β`` the right-hand side of the
next v-step (eq. 34) is ``b + Σ_p J_pᵀ (β z_p + λ_i⁺) = b + Σ_p J_pᵀ (β J_p v̂ + 2λ_i⁺ − λ_i)``, so
the slacks need not be stored for plain ADMM (they are, for the over-relaxed variant).
Reference: :func:`piece_step_numpy` (``tests/test_subadmm_body.py``
compares both).

SubADMM (body splitting) iterates with the body structure instead: :func:`body_piece_step` (forward
pass of body velocities, the contact point's velocity per piece, backward pass of body wrenches; reference
:func:`body_piece_step_numpy`). Each variant runs k iterations per compiled call
(:func:`iterate_body`, :func:`iterate_rows_ltdl`, :func:`iterate_rows_cholesky`,
:func:`iterate_rows_sparse_lu`), so none pays a Python call per iteration.

The builds, factorizations and solves of the split variants are compiled too, so that Table III
compares structures, not interpreters: :func:`body_split_ltdl` / :func:`ltdl_solve_trees`
(SubADMM: composite-rigid-body build of the point masses, Featherstone's LTDL with branch-induced
sparsity) and :func:`tree_split_cholesky` / :func:`cholesky_solve_trees` (No Body: Σ J_pᵀJ_p per
tree, dense Cholesky). :func:`ldlt_solve_trees` solves with Pinocchio's own LDLᵀ factors (the
reference path). No Sub factors with SuperLU (C) and solves with its factors in
:func:`sparse_lu_solve`.
"""

from __future__ import annotations

import math

import numpy as np

from ._sap_kernels import HAVE_NUMBA, njit
from .contact_laws import strict_operator

__all__ = ["HAVE_NUMBA", "piece_step", "piece_step_numpy", "ldlt_solve_trees", "ldlt_solve_trees_numpy",
           "body_split_ltdl", "ltdl_solve_trees", "tree_split_cholesky", "cholesky_solve_trees", "body_piece_step",
           "body_piece_step_numpy", "body_piece_structure", "iterate_body", "iterate_rows_ltdl",
           "iterate_rows_cholesky", "iterate_rows_sparse_lu", "sparse_lu_solve", "strict_triangles",
           "gather_piece_rows", "piece_index", "body_pseudo_density", "rows_velocity", "rows_scatter",
           "body_velocity", "body_scatter", "tree_matvec", "tree_dual_residual", "whole_system_csc",
           "group_gather", "group_scatter", "island_group_layout", "group_local_starts",
           "group_body_arrays", "group_rows_arrays"]


@njit(cache=True)
def _contact_step(jv, lam, e, mu, rho, beta, count, lam_out):  # pragma: no cover - compiled
    """The z/λ-step per contact (eq. 38, strict operator) from the summed piece velocities ``jv``
    (n_c, 3). Writes ``lam_out``; returns ``max_i ‖λ_i⁺ − λ_i‖``."""
    dmax = 0.0
    for i in range(lam.shape[0]):
        k = beta / count[i]
        x0 = lam[i, 0] - k * (jv[i, 0] + e[i, 0])
        x1 = lam[i, 1] - k * (jv[i, 1] + e[i, 1])
        x2 = lam[i, 2] - k * (jv[i, 2] + e[i, 2])
        ln = max(x2, 0.0) / rho[i]  # strict operator (eq. 17)
        st = math.sqrt(x0 * x0 + x1 * x1)
        radius = mu[i] * ln
        if st > radius:
            sc = radius / st if st > 0.0 else 1.0
            x0 *= sc
            x1 *= sc
        d0 = x0 - lam[i, 0]
        d1 = x1 - lam[i, 1]
        d2 = ln - lam[i, 2]
        dmax = max(dmax, math.sqrt(d0 * d0 + d1 * d1 + d2 * d2))
        lam_out[i, 0] = x0
        lam_out[i, 1] = x1
        lam_out[i, 2] = ln
    return dmax


@njit(cache=True, inline="always")
def _slack_update(p, i, jv_p, lam, lam_out, beta, z):  # pragma: no cover - compiled
    """Piece p of contact i: z_p = J_p v̂ + (λ_i⁺ − λ_i)/β (stored in ``z``); returns the
    v-step weight w_p = β z_p + λ_i⁺ (3 floats)."""
    z0 = jv_p[p, 0] + (lam_out[i, 0] - lam[i, 0]) / beta
    z1 = jv_p[p, 1] + (lam_out[i, 1] - lam[i, 1]) / beta
    z2 = jv_p[p, 2] + (lam_out[i, 2] - lam[i, 2]) / beta
    z[p, 0] = z0
    z[p, 1] = z1
    z[p, 2] = z2
    return beta * z0 + lam_out[i, 0], beta * z1 + lam_out[i, 1], beta * z2 + lam_out[i, 2]


@njit(cache=True, inline="always")
def _row_times(blocks, cols, p, v, n_v):  # pragma: no cover - compiled
    """``J_p v`` (3 numbers) of piece ``p`` of compact rows (blocks (n_p, 3, s), cols (n_p, s),
    n_v = padding)."""
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    for t in range(blocks.shape[2]):
        col = cols[p, t]
        if col < n_v:
            x = v[col]
            a0 += blocks[p, 0, t] * x
            a1 += blocks[p, 1, t] * x
            a2 += blocks[p, 2, t] * x
    return a0, a1, a2


@njit(cache=True, inline="always")
def _row_scatter(blocks, cols, p, w0, w1, w2, out, n_v):  # pragma: no cover - compiled
    """``out += J_pᵀ (w0, w1, w2)`` for piece ``p`` of compact rows (n_v = padding)."""
    for t in range(blocks.shape[2]):
        col = cols[p, t]
        if col < n_v:
            out[col] += blocks[p, 0, t] * w0 + blocks[p, 1, t] * w1 + blocks[p, 2, t] * w2


@njit(cache=True)
def piece_step(blocks, cols, contact, count, v, lam, e, mu, rho, beta, b, lam_out, rhs_out, alpha,
               z):  # pragma: no cover - compiled
    """One z/λ-step (eq. 35-38) and the next v-step right-hand side (eq. 34).

    Args:
        blocks: (n_p, 3, s) compact piece rows; cols: (n_p, s) their dofs (n_v = padding).
        contact: (n_p,) contact of each piece; count: (n_c,) ``|Z_i|``.
        v: (n_v,) the v-step result; lam: (n_c, 3) impulses before the step.
        e: (n_c, 3) bias; mu: (n_c,) friction; rho: (n_c,) ``1 + βc/|Z_i|``; beta: penalty.
        b: (n_v,) ``Â v̂*``.
        lam_out: output (n_c, 3) impulses; rhs_out: output (n_v,) next right-hand side.
        alpha: over-relaxation α ∈ (0, 2) (1 = plain ADMM): ``h_p = α J_p v̂ + (1 − α) z_p`` replaces
            ``J_p v̂`` in the z/λ-step (Boyd et al. 2011 §3.4.3).
        z: (n_p, 3) slacks, read (when α ≠ 1) and overwritten with ``h_p + (λ⁺ − λ)/β``.

    Returns:
        ``max_i ‖λ_i⁺ − λ_i‖`` (θ_p = that / β).
    """
    n_p = blocks.shape[0]
    n_c = lam.shape[0]
    n_v = v.shape[0]
    jv_p = np.empty((n_p, 3))
    jv = np.zeros((n_c, 3))
    for p in range(n_p):
        a0, a1, a2 = _row_times(blocks, cols, p, v, n_v)
        # (written out here and in _body_pieces: one shared inline helper for these lines made
        # every variant 25-35 % slower, measured; docs/contact-solvers.md §4.4)
        if alpha != 1.0:
            a0 = alpha * a0 + (1.0 - alpha) * z[p, 0]
            a1 = alpha * a1 + (1.0 - alpha) * z[p, 1]
            a2 = alpha * a2 + (1.0 - alpha) * z[p, 2]
        jv_p[p, 0] = a0
        jv_p[p, 1] = a1
        jv_p[p, 2] = a2
        i = contact[p]
        jv[i, 0] += a0
        jv[i, 1] += a1
        jv[i, 2] += a2
    dmax = _contact_step(jv, lam, e, mu, rho, beta, count, lam_out)
    rhs_out[:] = b
    for p in range(n_p):
        w0, w1, w2 = _slack_update(p, contact[p], jv_p, lam, lam_out, beta, z)
        _row_scatter(blocks, cols, p, w0, w1, w2, rhs_out, n_v)
    return dmax


def piece_step_numpy(blocks, cols, contact, count, v, lam, e, mu, rho, beta, b, lam_out, rhs_out, alpha, z) -> float:
    """Reference of :func:`piece_step` (same arguments and outputs), in numpy."""
    n_c, n_v = lam.shape[0], v.shape[0]
    v_ext = np.append(v, 0.0)
    jv_p = alpha * np.einsum("pks,ps->pk", blocks, v_ext[cols]) + (1.0 - alpha) * z
    jv = np.zeros((n_c, 3))
    np.add.at(jv, contact, jv_p)
    new = strict_operator(lam - beta * (jv + e) / count[:, None], mu, rho)
    z[:] = jv_p + (new - lam)[contact] / beta
    w = beta * z + new[contact]
    contrib = np.einsum("pks,pk->ps", blocks, w)
    rhs_out[:] = b + np.bincount(cols.reshape(-1), weights=contrib.reshape(-1), minlength=n_v + 1)[:n_v]
    lam_out[:] = new
    return float(np.linalg.norm(new - lam, axis=1).max(initial=0.0))


@njit(cache=True, fastmath=True)
def ldlt_solve_trees(U, Dinv, nv_subtree, starts, y, out):  # pragma: no cover - compiled
    """Solve ``M x = y`` for M block diagonal over trees, each block factored ``U D Uᵀ`` by
    Featherstone's branch-induced sparse LDLᵀ (``pinocchio.cholesky.decompose``: U unit upper
    triangular, row k nonzero only on the dofs of the subtree below k).

    Args:
        U: (n_trees, s, s) each tree's ``data.U`` (zero padded); Dinv: (n_v,) ``1/D``.
        nv_subtree: (n_v,) ``data.nvSubtree_fromRow`` per dof (within its tree).
        starts: (n_trees + 1,) dof offsets; y: (n_v,) right-hand side; out: (n_v,) solution.
    """
    out[:] = y
    for t in range(starts.size - 1):
        st = starts[t]
        n = starts[t + 1] - st
        x = out[st : st + n]
        Ut = U[t]
        sub = nv_subtree[st : st + n]
        for k in range(n - 2, -1, -1):  # x ← U⁻¹ x (only the subtree's entries of row k)
            acc = 0.0
            row = Ut[k]
            for j in range(k + 1, k + sub[k]):
                acc += row[j] * x[j]
            x[k] -= acc
        for k in range(n):
            x[k] *= Dinv[st + k]
        for k in range(n - 1):  # x ← U⁻ᵀ x
            xk = x[k]
            row = Ut[k]
            for j in range(k + 1, k + sub[k]):
                x[j] -= row[j] * xk


def ldlt_solve_trees_numpy(U, Dinv, nv_subtree, starts, y, out) -> None:
    """Reference of :func:`ldlt_solve_trees`: dense ``(U D Uᵀ)⁻¹ y`` per tree."""
    D = 1.0 / Dinv
    for t in range(starts.size - 1):
        sl = slice(starts[t], starts[t + 1])
        n = starts[t + 1] - starts[t]
        Ut = U[t, :n, :n]
        out[sl] = np.linalg.solve(Ut @ np.diag(D[sl]) @ Ut.T, y[sl])


@njit(cache=True)
def body_split_ltdl(A, inv_scale, Jw, piece_joint, piece_point, weight, joint_parent, joint_v, joint_nv, joint_tree,
                    tree_starts, dof_parent, related, K):  # pragma: no cover - compiled
    """Build and factor the body-split subsystem matrices (seed 000 eq. 40-41) of all trees.

    ``K_t = Â_t + Σ_b J_bᵀ H_b J_b`` with ``H_b = β Σ_i [I −[p_i]; [p_i] −[p_i]²]`` the (world-frame,
    about the origin, linear part first) spatial inertia of point masses β at the contact points
    on body b (App. A), by the composite-rigid-body recursion: composite inertias
    ``Y_j = Σ_{b ∈ subtree(j)} H_b``, then ``K[a, j] = S_aᵀ Y_j S_j`` for every ancestor a of j
    (the motion subspaces S are the columns of the world Jacobian ``Jw``). Then Featherstone's
    LTDL factorization ``K = Lᵀ D L`` with branch-induced sparsity (RBDA Table 6.3), in place.

    Args:
        A: (n_v, n_v) the problem's A; inv_scale: 1/(1 − θ) (``Â = A/(1 − θ)``).
        Jw: (6, n_v) world-frame joint Jacobian (linear rows first).
        piece_joint: (n_p,) body (joint) of each piece; piece_point: (n_p, 3) its world contact
            point; weight: the point mass β.
        joint_parent, joint_v, joint_nv, joint_tree: (n_joints,) parent joint (0 = world), first
            dof, dof count and tree of each joint (joint 0 = world).
        tree_starts: (n_trees + 1,) dof offsets; dof_parent: (n_v,) parent dof (−1 at a root).
        related: (n_trees, s, s) True where one dof is an ancestor of (or is) the other: the only
            entries a mass matrix can have (branch-induced sparsity).
        K: output (n_trees, s, s): the factors (D on the diagonal, L strictly below).

    Returns:
        0 on success, 1 if a pivot D is not positive (not SPD), 2 if ``A`` has an entry outside the
        branch-induced pattern (then it is not a mass matrix plus a diagonal: use another variant).
    """
    n_trees = tree_starts.size - 1
    for t in range(n_trees):
        st = tree_starts[t]
        n = tree_starts[t + 1] - st
        for i in range(n):
            for j in range(n):
                x = A[st + i, st + j]
                if not related[t, i, j] and x != 0.0:
                    return 2
                K[t, i, j] = x * inv_scale
    nj = joint_parent.size
    Y = np.zeros((nj, 6, 6))
    active = np.zeros(nj, dtype=np.bool_)
    for q in range(piece_joint.size):  # H_b: a point mass β at each contact point (eq. 44)
        j = piece_joint[q]
        active[j] = True
        x = piece_point[q, 0]
        y = piece_point[q, 1]
        z = piece_point[q, 2]
        w = weight
        for r in range(3):
            Y[j, r, r] += w
        # upper right −w[p], lower left w[p]
        Y[j, 0, 4] += w * z
        Y[j, 0, 5] -= w * y
        Y[j, 1, 3] -= w * z
        Y[j, 1, 5] += w * x
        Y[j, 2, 3] += w * y
        Y[j, 2, 4] -= w * x
        Y[j, 4, 0] += w * z
        Y[j, 5, 0] -= w * y
        Y[j, 3, 1] -= w * z
        Y[j, 5, 1] += w * x
        Y[j, 3, 2] += w * y
        Y[j, 4, 2] -= w * x
        # lower right −w[p]² = w(|p|² I − p pᵀ)
        Y[j, 3, 3] += w * (y * y + z * z)
        Y[j, 4, 4] += w * (x * x + z * z)
        Y[j, 5, 5] += w * (x * x + y * y)
        Y[j, 3, 4] -= w * x * y
        Y[j, 4, 3] -= w * x * y
        Y[j, 3, 5] -= w * x * z
        Y[j, 5, 3] -= w * x * z
        Y[j, 4, 5] -= w * y * z
        Y[j, 5, 4] -= w * y * z
    for j in range(nj - 1, 0, -1):  # children come after their parents in the joint order
        p = joint_parent[j]
        if active[j] and p > 0:
            active[p] = True
            for r in range(6):
                for c in range(6):
                    Y[p, r, c] += Y[j, r, c]
    F = np.empty((6, 6))
    for j in range(1, nj):
        if not active[j]:
            continue
        v0 = joint_v[j]
        n = joint_nv[j]
        t = joint_tree[j]
        st = tree_starts[t]
        for r in range(6):  # F = Y_j S_j
            for c in range(n):
                acc = 0.0
                for k in range(6):
                    acc += Y[j, r, k] * Jw[k, v0 + c]
                F[r, c] = acc
        a = j
        while a > 0:
            va = joint_v[a]
            na = joint_nv[a]
            for r in range(na):
                for c in range(n):
                    acc = 0.0
                    for k in range(6):
                        acc += Jw[k, va + r] * F[k, c]
                    K[t, va - st + r, v0 - st + c] += acc
                    if a != j:
                        K[t, v0 - st + c, va - st + r] += acc
            a = joint_parent[a]
    status = 0
    for t in range(n_trees):  # LTDL (RBDA Table 6.3), tree-local indices
        st = tree_starts[t]
        n = tree_starts[t + 1] - st
        Kt = K[t]
        for k in range(n - 1, -1, -1):
            if not Kt[k, k] > 0.0:
                return 1
            i = dof_parent[st + k]
            while i >= 0:
                il = i - st
                a = Kt[k, il] / Kt[k, k]
                j = i
                while j >= 0:
                    jl = j - st
                    Kt[il, jl] -= a * Kt[k, jl]
                    j = dof_parent[j]
                Kt[k, il] = a
                i = dof_parent[i]
    return status


@njit(cache=True)
def ltdl_solve_trees(K, dof_parent, tree_starts, y, out):  # pragma: no cover - compiled
    """Solve with the factors of :func:`body_split_ltdl` (RBDA Table 6.4): ``out = K⁻¹ y``."""
    out[:] = y
    for t in range(tree_starts.size - 1):
        st = tree_starts[t]
        n = tree_starts[t + 1] - st
        Kt = K[t]
        for k in range(n - 1, -1, -1):  # x ← L⁻ᵀ x
            xk = out[st + k]
            j = dof_parent[st + k]
            while j >= 0:
                out[j] -= Kt[k, j - st] * xk
                j = dof_parent[j]
        for k in range(n):
            out[st + k] /= Kt[k, k]
        for k in range(n):  # x ← L⁻¹ x
            acc = 0.0
            j = dof_parent[st + k]
            while j >= 0:
                acc += Kt[k, j - st] * out[j]
                j = dof_parent[j]
            out[st + k] -= acc


@njit(cache=True)
def tree_split_cholesky(A, blocks, cols, piece_tree, tree_starts, beta, L):  # pragma: no cover - compiled
    """"No Body" in one compiled pass: per tree ``K_t = A_t + β Σ_p J_pᵀJ_p`` from the pieces of the
    tree (dense), then its dense Cholesky ``K_t = L_t L_tᵀ`` in place.

    Args:
        A: (n_v, n_v); blocks: (n_p, 3, s) piece rows on ``cols`` (n_p, s) (n_v = padding);
        piece_tree: (n_p,) tree of each piece; tree_starts: (n_trees + 1,); beta: penalty.
        L: output (n_trees, s_max, s_max), lower triangle.

    Returns:
        0 on success, 1 if the matrix is not positive definite.
    """
    n_trees = tree_starts.size - 1
    n_v = A.shape[0]
    for t in range(n_trees):
        st = tree_starts[t]
        n = tree_starts[t + 1] - st
        for i in range(n):
            for j in range(n):
                L[t, i, j] = A[st + i, st + j]
    n_p, _, s = blocks.shape
    for p in range(n_p):
        t = piece_tree[p]
        st = tree_starts[t]
        for a in range(s):
            ca = cols[p, a]
            if ca >= n_v:
                continue
            for b in range(s):
                cb = cols[p, b]
                if cb >= n_v:
                    continue
                L[t, ca - st, cb - st] += beta * (blocks[p, 0, a] * blocks[p, 0, b] + blocks[p, 1, a] * blocks[p, 1, b]
                                                  + blocks[p, 2, a] * blocks[p, 2, b])
    for t in range(n_trees):
        n = tree_starts[t + 1] - tree_starts[t]
        Lt = L[t]
        for j in range(n):
            d = Lt[j, j]
            for k in range(j):
                d -= Lt[j, k] * Lt[j, k]
            if not d > 0.0:
                return 1
            d = math.sqrt(d)
            Lt[j, j] = d
            for i in range(j + 1, n):
                x = Lt[i, j]
                for k in range(j):
                    x -= Lt[i, k] * Lt[j, k]
                Lt[i, j] = x / d
    return 0


@njit(cache=True)
def cholesky_solve_trees(L, tree_starts, y, out):  # pragma: no cover - compiled
    """``out = (L Lᵀ)⁻¹ y`` per tree with the factors of :func:`tree_split_cholesky`."""
    for t in range(tree_starts.size - 1):
        st = tree_starts[t]
        n = tree_starts[t + 1] - st
        Lt = L[t]
        for i in range(n):
            x = y[st + i]
            for k in range(i):
                x -= Lt[i, k] * out[st + k]
            out[st + i] = x / Lt[i, i]
        for i in range(n - 1, -1, -1):  # Lᵀ x = y column by column (rows of L are contiguous)
            x = out[st + i] / Lt[i, i]
            out[st + i] = x
            for k in range(i):
                out[st + k] -= Lt[i, k] * x


# ----------------------------------------------------------------------------- body-level iteration
# With body splitting every piece is J_p = J_{i,b} J_b (eq. 30-31) with J_{i,b} = ±F_i [I −[p_i]]
# (3×6, eq. 44) and J_b the world-frame Jacobian of body b. So all piece velocities J_p v̂ come from
# one forward pass over the bodies (V_b = V_parent(b) + S_b v̂_b, the spatial velocity of every body,
# O(n) per tree) and per piece J_{i,b} V_b = ±F_i (v_b + ω_b × p_i), the velocity of the contact
# point in the contact frame; the right-hand side Σ_p J_pᵀ w_p from one backward pass (wrench of
# each body Σ_{p on b} J_{i,b}ᵀ w_p = (g, p_i × g) with g = ±F_iᵀ w_p, accumulated to the root,
# projected on each joint's motion subspace S_b: RNEA-like, O(n)). Only the bodies on the paths from
# a body in contact to its root (``active``) are visited; the generated twin of these passes
# (plants.sim._tree_codegen) visits every joint of a tree that has pieces.


@njit(cache=True, inline="always")
def _body_forward(active, joint_parent, joint_v, joint_nv, S, v, V):  # pragma: no cover - compiled
    """Forward pass of :func:`body_piece_step`: the spatial velocity of each active body (V[0] = 0)."""
    # the 6-vectors live in locals (same bits, ≈ 7 % faster than indexing V[j, r] / W[j, r])
    for q in range(active.size):
        j = active[q]
        pa = joint_parent[j]
        V0 = V[pa, 0]
        V1 = V[pa, 1]
        V2 = V[pa, 2]
        V3 = V[pa, 3]
        V4 = V[pa, 4]
        V5 = V[pa, 5]
        for c in range(joint_v[j], joint_v[j] + joint_nv[j]):
            x = v[c]
            V0 += S[c, 0] * x
            V1 += S[c, 1] * x
            V2 += S[c, 2] * x
            V3 += S[c, 3] * x
            V4 += S[c, 4] * x
            V5 += S[c, 5] * x
        V[j, 0] = V0
        V[j, 1] = V1
        V[j, 2] = V2
        V[j, 3] = V3
        V[j, 4] = V4
        V[j, 5] = V5


@njit(cache=True, inline="always")
def _body_pieces(Fp, piece_joint, contact, count, lam, e, mu, rho, beta, lam_out, alpha, z, V,
                 W):  # pragma: no cover - compiled
    """Middle of :func:`body_piece_step`: the pieces' contact-point velocities, the z/λ-step per
    contact, the slacks, and the body wrenches ``W_b += Σ_{p on b} J_{i,b}ᵀ w_p``. Returns
    ``max ‖λ⁺ − λ‖``."""
    n_p = Fp.shape[0]
    n_c = lam.shape[0]
    jv_p = np.empty((n_p, 3))
    jv = np.zeros((n_c, 3))
    relax = alpha != 1.0
    for p in range(n_p):
        i = contact[p]
        a0, a1, a2 = _point_velocity(Fp, p, V, piece_joint[p])
        if relax:  # written out as in piece_step (a shared inline helper was slower)
            a0 = alpha * a0 + (1.0 - alpha) * z[p, 0]
            a1 = alpha * a1 + (1.0 - alpha) * z[p, 1]
            a2 = alpha * a2 + (1.0 - alpha) * z[p, 2]
        jv_p[p, 0] = a0
        jv_p[p, 1] = a1
        jv_p[p, 2] = a2
        jv[i, 0] += a0
        jv[i, 1] += a1
        jv[i, 2] += a2
    dmax = _contact_step(jv, lam, e, mu, rho, beta, count, lam_out)
    for p in range(n_p):  # body wrenches Σ J_{i,b}ᵀ w_p
        w0, w1, w2 = _slack_update(p, contact[p], jv_p, lam, lam_out, beta, z)
        _add_point_wrench(Fp, p, w0, w1, w2, W, piece_joint[p])
    return dmax


@njit(cache=True, inline="always")
def _body_backward(active, joint_parent, joint_v, joint_nv, S, W, rhs_out):  # pragma: no cover - compiled
    """Backward pass of :func:`body_piece_step`: project each active body's wrench on its joint's
    motion subspace into ``rhs_out``, pass it to the parent; leaves W zero."""
    for q in range(active.size - 1, -1, -1):
        j = active[q]
        pa = joint_parent[j]
        W0 = W[j, 0]
        W1 = W[j, 1]
        W2 = W[j, 2]
        W3 = W[j, 3]
        W4 = W[j, 4]
        W5 = W[j, 5]
        for c in range(joint_v[j], joint_v[j] + joint_nv[j]):
            rhs_out[c] += S[c, 0] * W0 + S[c, 1] * W1 + S[c, 2] * W2 + S[c, 3] * W3 + S[c, 4] * W4 + S[c, 5] * W5
        W[pa, 0] += W0
        W[pa, 1] += W1
        W[pa, 2] += W2
        W[pa, 3] += W3
        W[pa, 4] += W4
        W[pa, 5] += W5
        W[j, 0] = 0.0
        W[j, 1] = 0.0
        W[j, 2] = 0.0
        W[j, 3] = 0.0
        W[j, 4] = 0.0
        W[j, 5] = 0.0
    for r in range(6):
        W[0, r] = 0.0


@njit(cache=True)
def body_piece_step(Fp, piece_joint, contact, count, v, lam, e, mu, rho, beta, b, lam_out, rhs_out, alpha, z,
                    S, active, joint_parent, joint_v, joint_nv, V, W):  # pragma: no cover - compiled
    """:func:`piece_step` with the body structure of the pieces (same arguments and outputs, but
    the pieces as ``J_p = Jib[p] J_{piece_joint[p]}``, ``Jib[p] = ±F_i [I −[p_i]]``, eq. 44).

    Args:
        Fp: (n_p, 4, 3) per piece the signed contact frame ``±F_i`` and the world point ``p_i``
            (:func:`body_piece_structure`);
        piece_joint: (n_p,) its body (joint); S: (n_v, 6) the transposed world-frame joint Jacobian
        (row c = motion subspace of dof c, contiguous); active: (n_a,) the joints on the paths from the bodies in
        contact to their roots, ascending (parents first); joint_parent, joint_v, joint_nv:
        (n_joints,) parent (0 = world), first dof, dof count; V, W: (n_joints, 6) scratch (W zero
        on entry and on return; V[0] = 0, the world). Other arguments as :func:`piece_step`.
    """
    _body_forward(active, joint_parent, joint_v, joint_nv, S, v, V)
    dmax = _body_pieces(Fp, piece_joint, contact, count, lam, e, mu, rho, beta, lam_out, alpha, z, V, W)
    rhs_out[:] = b
    _body_backward(active, joint_parent, joint_v, joint_nv, S, W, rhs_out)
    return dmax


def body_piece_step_numpy(Jib, piece_joint, contact, count, v, lam, e, mu, rho, beta, b, lam_out, rhs_out, alpha, z,
                          Jw, joint_support) -> float:
    """Reference of :func:`body_piece_step` in numpy: the body Jacobians as ``Jw`` masked by
    ``joint_support`` (n_joints, n_v), no recursion. Same outputs."""
    n_c = lam.shape[0]
    Jb = Jw[None, :, :] * joint_support[piece_joint][:, None, :]  # (n_p, 6, n_v)
    V = np.einsum("psn,n->ps", Jb, v)
    jv_p = alpha * np.einsum("pks,ps->pk", Jib, V) + (1.0 - alpha) * z
    jv = np.zeros((n_c, 3))
    np.add.at(jv, contact, jv_p)
    new = strict_operator(lam - beta * (jv + e) / count[:, None], mu, rho)
    z[:] = jv_p + (new - lam)[contact] / beta
    w = beta * z + new[contact]
    rhs_out[:] = b + np.einsum("psn,ps->n", Jb, np.einsum("pks,pk->ps", Jib, w))
    lam_out[:] = new
    return float(np.linalg.norm(new - lam, axis=1).max(initial=0.0))


# ----------------------------------------------------------------------------- islands in parallel
# With ``SubADMMOptions.threads`` > 1 the trees are split into groups of whole islands (trees
# coupled through contacts): no contact, piece or dof is shared between groups, so each group runs
# the serial loop on its own copies of the arrays, on its own thread, with the same operations in the
# same order as the serial run (same bits). These move the iteration state in and out of a group.

GROUP_GAP = 16  # rows between groups in the arrays the iteration writes: 16 rows ≥ 128 bytes, so no cache
# line holds two threads' state (false sharing made the 2-group body iteration on 8 A1s ≈ 30 % slower)


@njit(cache=True)
def group_gather(dofs, contacts, pieces, rhs, lam, z, rho, rhs_l, lam_l, z_l, rho_l):  # pragma: no cover
    """Copy the state of one group (its dofs, contacts, pieces) into its local arrays."""
    for i in range(dofs.size):
        rhs_l[i] = rhs[dofs[i]]
    for i in range(contacts.size):
        c = contacts[i]
        lam_l[i, 0] = lam[c, 0]
        lam_l[i, 1] = lam[c, 1]
        lam_l[i, 2] = lam[c, 2]
        rho_l[i] = rho[c]
    for i in range(pieces.size):
        q = pieces[i]
        z_l[i, 0] = z[q, 0]
        z_l[i, 1] = z[q, 1]
        z_l[i, 2] = z[q, 2]


@njit(cache=True)
def group_scatter(dofs, contacts, pieces, v_l, rhs_l, lam_l, z_l, v, rhs, lam, z):  # pragma: no cover
    """Copy one group's iteration state (v, rhs, λ, z) back into the whole arrays."""
    for i in range(dofs.size):
        v[dofs[i]] = v_l[i]
        rhs[dofs[i]] = rhs_l[i]
    for i in range(contacts.size):
        c = contacts[i]
        lam[c, 0] = lam_l[i, 0]
        lam[c, 1] = lam_l[i, 1]
        lam[c, 2] = lam_l[i, 2]
    for i in range(pieces.size):
        q = pieces[i]
        z[q, 0] = z_l[i, 0]
        z[q, 1] = z_l[i, 1]
        z[q, 2] = z_l[i, 2]


@njit(cache=True)
def island_group_layout(n_groups, tree_starts, contact_trees, piece_contact):  # pragma: no cover - compiled
    """Assign whole islands (trees coupled through contacts; union-find over ``contact_trees``) to
    at most ``n_groups`` groups, balancing dofs + 3 × contacts (largest island first, onto the
    lightest group), and lay the trees, contacts, pieces and dofs out group after group.

    Returns:
        ``(n_used, tree_perm, tp, contact_perm, cp, piece_perm, pp, dof_perm, dp, contact_rank,
        dof_rank)``: the number of non-empty groups; each ``*_perm`` lists the items of group 0,
        then group 1, … (ascending within a group) and ``*p`` (n_used + 1,) the group pointers;
        ``contact_rank`` / ``dof_rank``: each contact's / dof's position within its group.
    """
    n_t = tree_starts.size - 1
    n_c = contact_trees.shape[0]
    root = np.arange(n_t)
    for i in range(n_c):
        a, b = contact_trees[i, 0], contact_trees[i, 1]
        if a >= 0 and b >= 0:
            while root[a] != a:
                a = root[a]
            while root[b] != b:
                b = root[b]
            if a != b:
                root[max(a, b)] = min(a, b)
    for t in range(n_t):
        r = t
        while root[r] != r:
            r = root[r]
        root[t] = r
    weight = np.zeros(n_t)
    for t in range(n_t):
        weight[root[t]] += tree_starts[t + 1] - tree_starts[t]
    contact_tree = np.empty(n_c, dtype=np.int64)
    for i in range(n_c):
        contact_tree[i] = contact_trees[i, 0] if contact_trees[i, 0] >= 0 else contact_trees[i, 1]
        weight[root[contact_tree[i]]] += 3.0
    load = np.zeros(n_groups)
    island_group = np.full(n_t, -1, dtype=np.int64)
    for r in np.argsort(-weight, kind="mergesort"):
        if root[r] != r:
            continue  # not an island root
        g = int(np.argmin(load))
        island_group[r] = g
        load[g] += weight[r]
    used = np.full(n_groups, -1, dtype=np.int64)  # renumber the non-empty groups by first tree
    n_used = 0
    group = np.empty(n_t, dtype=np.int64)
    for t in range(n_t):
        g = island_group[root[t]]
        if used[g] < 0:
            used[g] = n_used
            n_used += 1
        group[t] = used[g]
    tp = np.zeros(n_used + 1, dtype=np.int64)
    dp = np.zeros(n_used + 1, dtype=np.int64)
    cp = np.zeros(n_used + 1, dtype=np.int64)
    pp = np.zeros(n_used + 1, dtype=np.int64)
    for t in range(n_t):
        tp[group[t] + 1] += 1
        dp[group[t] + 1] += tree_starts[t + 1] - tree_starts[t]
    for i in range(n_c):
        cp[group[contact_tree[i]] + 1] += 1
    for q in range(piece_contact.size):
        pp[group[contact_tree[piece_contact[q]]] + 1] += 1
    for g in range(n_used):
        tp[g + 1] += tp[g]
        dp[g + 1] += dp[g]
        cp[g + 1] += cp[g]
        pp[g + 1] += pp[g]
    tree_perm = np.empty(n_t, dtype=np.int64)
    dof_perm = np.empty(tree_starts[n_t], dtype=np.int64)
    dof_rank = np.empty(tree_starts[n_t], dtype=np.int64)
    contact_perm = np.empty(n_c, dtype=np.int64)
    contact_rank = np.empty(n_c, dtype=np.int64)
    piece_perm = np.empty(piece_contact.size, dtype=np.int64)
    nt, nd, nc, npc = tp[:-1].copy(), dp[:-1].copy(), cp[:-1].copy(), pp[:-1].copy()
    for t in range(n_t):
        g = group[t]
        tree_perm[nt[g]] = t
        nt[g] += 1
        for c in range(tree_starts[t], tree_starts[t + 1]):
            dof_perm[nd[g]] = c
            dof_rank[c] = nd[g] - dp[g]
            nd[g] += 1
    for i in range(n_c):
        g = group[contact_tree[i]]
        contact_perm[nc[g]] = i
        contact_rank[i] = nc[g] - cp[g]
        nc[g] += 1
    for q in range(piece_contact.size):
        g = group[contact_tree[piece_contact[q]]]
        piece_perm[npc[g]] = q
        npc[g] += 1
    return n_used, tree_perm, tp, contact_perm, cp, piece_perm, pp, dof_perm, dp, contact_rank, dof_rank


@njit(cache=True)
def group_local_starts(tree_starts, tree_perm, tp):  # pragma: no cover - compiled
    """The tree starts of each group from 0, group after group ((n_trees + n_groups,): group g at
    ``tp[g] + g``)."""
    out = np.empty(tree_perm.size + tp.size - 1, dtype=np.int64)
    for g in range(tp.size - 1):
        k = tp[g] + g
        out[k] = 0
        for q in range(tp[g], tp[g + 1]):
            t = tree_perm[q]
            out[k + 1] = out[k] + tree_starts[t + 1] - tree_starts[t]
            k += 1
    return out


@njit(cache=True)
def _group_common(n_groups, tree_starts, contact_trees, piece_contact, count, e, mu, b, tree_group,
                  blocks):  # pragma: no cover - compiled
    """What the parallel layouts of both split variants share: :func:`island_group_layout` and the
    per-tree, per-contact and per-dof arrays gathered in it (``blocks``: the per-tree factors)."""
    layout = island_group_layout(n_groups, tree_starts, contact_trees, piece_contact)
    n_used, tree_perm, tp, contact_perm, cp, piece_perm, pp, dof_perm, dp, contact_rank, dof_rank = layout
    n_t, n_c, n_v = tree_perm.size, contact_perm.size, dof_perm.size
    F = np.empty((n_t, blocks.shape[1], blocks.shape[2]))
    tg = np.empty(n_t, dtype=np.int64)
    for q in range(n_t):
        F[q] = blocks[tree_perm[q]]
        tg[q] = tree_group[tree_perm[q]]
    contact_l = np.empty(piece_perm.size, dtype=np.int64)
    for q in range(piece_perm.size):
        contact_l[q] = contact_rank[piece_contact[piece_perm[q]]]
    count_l = np.empty(n_c)
    e_l = np.empty((n_c, 3))
    mu_l = np.empty(n_c)
    for q in range(n_c):
        i = contact_perm[q]
        count_l[q] = count[i]
        e_l[q] = e[i]
        mu_l[q] = mu[i]
    b_l = np.empty(n_v)
    for q in range(n_v):
        b_l[q] = b[dof_perm[q]]
    return layout, F, tg, group_local_starts(tree_starts, tree_perm, tp), contact_l, count_l, e_l, mu_l, b_l


@njit(cache=True)
def group_body_arrays(n_groups, tree_starts, contact_trees, piece_contact, count, e, mu, b, K, tree_group, Fp,
                      piece_joint, S, joint_tree, tree_joint0):  # pragma: no cover - compiled
    """The arrays of the parallel body iteration (``iterate_body_passes_groups`` of the generated
    modules, in the order of ``_tree_codegen.BODY_GROUP_FIELDS``), built in one pass from the serial
    ones: the layout of :func:`island_group_layout`, the static arrays gathered in it, dofs / joints /
    contacts renumbered from 0 in each group (joint 0 of a group: the world), the state allocated.

    Returns:
        ``(n_used, (tp, pp, cp, dp, jp), arrays + (dofs, contacts, pieces))``.
    """
    layout, F, tg, starts, contact_l, count_l, e_l, mu_l, b_l = _group_common(
        n_groups, tree_starts, contact_trees, piece_contact, count, e, mu, b, tree_group, K)
    n_used, tree_perm, tp, contact_perm, cp, piece_perm, pp, dof_perm, dp, contact_rank, dof_rank = layout
    n_t, n_c, n_p, n_v = tree_perm.size, contact_perm.size, piece_perm.size, dof_perm.size
    n_joints = np.zeros(n_t, dtype=np.int64)  # joints per tree
    for j in range(1, joint_tree.size):
        n_joints[joint_tree[j]] += 1
    tree_rank = np.empty(n_t, dtype=np.int64)
    j0 = np.empty(n_t, dtype=np.int64)
    jp = np.zeros(n_used + 1, dtype=np.int64)
    for g in range(n_used):
        k = 1  # joint 0 of the group: the world
        for q in range(tp[g], tp[g + 1]):
            tree_rank[tree_perm[q]] = q
            j0[q] = k
            k += n_joints[tree_perm[q]]
        jp[g + 1] = jp[g] + k
    active = np.zeros(n_t, dtype=np.bool_)
    Fp_l = np.empty((n_p, 4, 3))
    pj_l = np.empty(n_p, dtype=np.int64)
    for q in range(n_p):
        p = piece_perm[q]
        Fp_l[q] = Fp[p]
        t = joint_tree[piece_joint[p]]
        pj_l[q] = piece_joint[p] - tree_joint0[t] + j0[tree_rank[t]]
        active[tree_rank[t]] = True
    S_l = np.empty((n_v, S.shape[1]))
    for q in range(n_v):
        S_l[q] = S[dof_perm[q]]
    gap = GROUP_GAP * n_used  # the written arrays leave GROUP_GAP rows after each group (no false sharing)
    arrays = (F, tg, starts, Fp_l, pj_l, contact_l, count_l, np.empty(n_v + gap), np.empty((n_c + gap, 3)),
              np.empty((n_c + gap, 3)), e_l, mu_l, np.empty(n_c + gap), b_l, np.empty(n_v + gap),
              np.empty((n_p + gap, 3)), S_l, j0, active, np.zeros((jp[n_used] + gap, 6)),
              np.zeros((jp[n_used] + gap, 6)), dof_perm, contact_perm, piece_perm)
    return n_used, (tp, pp, cp, dp, jp), arrays


@njit(cache=True)
def group_rows_arrays(n_groups, tree_starts, contact_trees, piece_contact, count, e, mu, b, L, tree_group, blocks,
                      cols):  # pragma: no cover - compiled
    """The arrays of No Body's parallel row iteration (``iterate_rows_groups`` of the generated
    Cholesky modules, in the order of ``_tree_codegen.ROWS_GROUP_FIELDS``): as
    :func:`group_body_arrays`, with the pieces' row blocks and their columns renumbered (padding
    column: the group's dof count)."""
    layout, F, tg, starts, contact_l, count_l, e_l, mu_l, b_l = _group_common(
        n_groups, tree_starts, contact_trees, piece_contact, count, e, mu, b, tree_group, L)
    n_used, tree_perm, tp, contact_perm, cp, piece_perm, pp, dof_perm, dp, contact_rank, dof_rank = layout
    n_c, n_p, n_v = contact_perm.size, piece_perm.size, dof_perm.size
    blocks_l = np.empty((n_p, blocks.shape[1], blocks.shape[2]))
    cols_l = np.empty((n_p, cols.shape[1]), dtype=np.int64)
    for g in range(n_used):
        for q in range(pp[g], pp[g + 1]):
            p = piece_perm[q]
            blocks_l[q] = blocks[p]
            for k in range(cols.shape[1]):
                c = cols[p, k]
                cols_l[q, k] = dof_rank[c] if c < n_v else dp[g + 1] - dp[g]
    gap = GROUP_GAP * n_used
    arrays = (F, starts, tg, blocks_l, cols_l, contact_l, count_l, np.empty(n_v + gap), np.empty((n_c + gap, 3)),
              np.empty((n_c + gap, 3)), e_l, mu_l, np.empty(n_c + gap), b_l, np.empty(n_v + gap),
              np.empty((n_p + gap, 3)), dof_perm, contact_perm, piece_perm)
    return n_used, (tp, pp, cp, dp, np.zeros_like(tp)), arrays


# ----------------------------------------------------------------------------- compiled iteration loops
# ``k`` ADMM iterations (v-step, z/λ-step) in one compiled call per variant: the loop then costs no
# Python call per iteration for any of the three (what a C++ implementation pays), so Table III
# compares the variants' own work. ``lam`` is updated in place (``lam_prev`` is scratch), ``v`` is
# the last v-step, ``rhs`` the next right-hand side. Each returns the last ``max ‖λ⁺ − λ‖``.


@njit(cache=True)
def iterate_body(k, K, dof_parent, tree_starts, Fp, piece_joint, contact, count, v, lam, lam_prev, e, mu, rho,
                 beta, b, rhs, alpha, z, S, active, joint_parent, joint_v, joint_nv, V, W):  # pragma: no cover
    """SubADMM: LTDL solve (:func:`ltdl_solve_trees`) + :func:`body_piece_step`, ``k`` times."""
    dmax = 0.0
    for _ in range(k):
        ltdl_solve_trees(K, dof_parent, tree_starts, rhs, v)
        lam_prev[:] = lam
        dmax = body_piece_step(Fp, piece_joint, contact, count, v, lam_prev, e, mu, rho, beta, b, lam, rhs, alpha,
                               z, S, active, joint_parent, joint_v, joint_nv, V, W)
    return dmax


@njit(cache=True)
def iterate_rows_ltdl(k, K, dof_parent, tree_starts, blocks, cols, contact, count, v, lam, lam_prev, e, mu, rho,
                      beta, b, rhs, alpha, z):  # pragma: no cover - compiled
    """SubADMM's LTDL solve with the dense-row :func:`piece_step` (no body recursion), ``k`` times."""
    dmax = 0.0
    for _ in range(k):
        ltdl_solve_trees(K, dof_parent, tree_starts, rhs, v)
        lam_prev[:] = lam
        dmax = piece_step(blocks, cols, contact, count, v, lam_prev, e, mu, rho, beta, b, lam, rhs, alpha, z)
    return dmax


@njit(cache=True)
def iterate_rows_cholesky(k, L, tree_starts, blocks, cols, contact, count, v, lam, lam_prev, e, mu, rho, beta, b,
                          rhs, alpha, z):  # pragma: no cover - compiled
    """No Body: per-tree Cholesky solve (:func:`cholesky_solve_trees`) + :func:`piece_step`, ``k`` times."""
    dmax = 0.0
    for _ in range(k):
        cholesky_solve_trees(L, tree_starts, rhs, v)
        lam_prev[:] = lam
        dmax = piece_step(blocks, cols, contact, count, v, lam_prev, e, mu, rho, beta, b, lam, rhs, alpha, z)
    return dmax


@njit(cache=True)
def strict_triangles(Lp, Li, Lx, Up, Ui, Ux):  # pragma: no cover - compiled
    """SuperLU's CSC factors without their diagonals (L's is 1): ``(Lp, Li, Lx, Up, Ui, Ux, 1/diag(U))``
    for :func:`sparse_lu_solve` (no diagonal search or triangle test per entry in the solve)."""
    n = Lp.size - 1
    Lp2 = np.zeros(n + 1, dtype=np.int64)
    Li2 = np.empty(Li.size, dtype=np.int64)
    Lx2 = np.empty(Li.size)
    Up2 = np.zeros(n + 1, dtype=np.int64)
    Ui2 = np.empty(Ui.size, dtype=np.int64)
    Ux2 = np.empty(Ui.size)
    Udinv = np.zeros(n)
    a = 0
    c = 0
    for j in range(n):
        for q in range(Lp[j], Lp[j + 1]):
            if Li[q] > j:
                Li2[a] = Li[q]
                Lx2[a] = Lx[q]
                a += 1
        Lp2[j + 1] = a
        for q in range(Up[j], Up[j + 1]):
            if Ui[q] == j:
                Udinv[j] = 1.0 / Ux[q]
            elif Ui[q] < j:
                Ui2[c] = Ui[q]
                Ux2[c] = Ux[q]
                c += 1
        Up2[j + 1] = c
    return Lp2, Li2[:a], Lx2[:a], Up2, Ui2[:c], Ux2[:c], Udinv


@njit(cache=True)
def sparse_lu_solve(Lp, Li, Lx, Up, Ui, Ux, Udinv, perm_r, perm_c, y, work, out):  # pragma: no cover - compiled
    """``out = A⁻¹ y`` with SuperLU's factors ``Pr A Pc = L U`` (CSC, diagonals split off by
    :func:`strict_triangles`): the triangular solves of ``SuperLU.solve`` without the Python call."""
    n = y.size
    for i in range(n):
        work[perm_r[i]] = y[i]
    for j in range(n):  # L x = b (unit diagonal), column-oriented forward substitution
        xj = work[j]
        for q in range(Lp[j], Lp[j + 1]):
            work[Li[q]] -= Lx[q] * xj
    for j in range(n - 1, -1, -1):  # U x = b, column-oriented back substitution
        xj = work[j] * Udinv[j]
        work[j] = xj
        for q in range(Up[j], Up[j + 1]):
            work[Ui[q]] -= Ux[q] * xj
    for i in range(n):
        out[i] = work[perm_c[i]]


@njit(cache=True)
def iterate_rows_sparse_lu(k, Lp, Li, Lx, Up, Ui, Ux, Udinv, perm_r, perm_c, work, blocks, cols, contact, count, v, lam,
                           lam_prev, e, mu, rho, beta, b, rhs, alpha, z):  # pragma: no cover - compiled
    """No Sub: whole-system sparse LU solve (:func:`sparse_lu_solve`) + :func:`piece_step`, ``k`` times."""
    dmax = 0.0
    for _ in range(k):
        sparse_lu_solve(Lp, Li, Lx, Up, Ui, Ux, Udinv, perm_r, perm_c, rhs, work, v)
        lam_prev[:] = lam
        dmax = piece_step(blocks, cols, contact, count, v, lam_prev, e, mu, rho, beta, b, lam, rhs, alpha, z)
    return dmax


@njit(cache=True)
def body_piece_structure(frames, points, contact, side, piece_joint, joint_parent, Fp, mark):  # pragma: no cover
    """The per-piece contact data of the body iteration, ``Fp[p] = (±F_i, p_i)`` (rows t1, t2, n of the
    contact frame, − on side a, then the world contact point), and the active joints (those on the
    paths from the pieces' bodies to their roots, ascending). ``J_p = Jib[p] J_b`` with the 3×6
    ``Jib[p] = ±F_i [I −[p_i]]`` (eq. 44) is applied as ``J_p v̂ = ±F_i (v_b + ω_b × p_i)``, the
    velocity of the contact point, and ``J_pᵀ w = J_bᵀ (g, p_i × g)`` with ``g = ±F_iᵀ w``: 12
    numbers per piece to load instead of 18.

    Args:
        frames: (n_c, 3, 3) contact frames (rows t1, t2, n); points: (n_c, 3) world points;
        contact, side, piece_joint: (n_p,) of the pieces; joint_parent: (n_joints,);
        Fp: output (n_p, 4, 3); mark: (n_joints,) bool scratch.

    Returns:
        (n_a,) the active joints.
    """
    mark[:] = False
    for p in range(contact.size):
        i = contact[p]
        sg = -1.0 if side[p] == 0 else 1.0
        for k in range(3):
            Fp[p, k, 0] = sg * frames[i, k, 0]
            Fp[p, k, 1] = sg * frames[i, k, 1]
            Fp[p, k, 2] = sg * frames[i, k, 2]
        Fp[p, 3, 0] = points[i, 0]
        Fp[p, 3, 1] = points[i, 1]
        Fp[p, 3, 2] = points[i, 2]
        j = piece_joint[p]
        while j > 0 and not mark[j]:
            mark[j] = True
            j = joint_parent[j]
    return np.flatnonzero(mark).astype(np.int64)


@njit(cache=True, inline="always")
def _point_velocity(Fp, p, V, j):  # pragma: no cover - compiled
    """``J_p v̂ = ±F_i (v_b + ω_b × p_i)`` (3 floats) from body j's spatial velocity (linear first)."""
    px = Fp[p, 3, 0]
    py = Fp[p, 3, 1]
    pz = Fp[p, 3, 2]
    wx = V[j, 3]
    wy = V[j, 4]
    wz = V[j, 5]
    ux = V[j, 0] + (wy * pz - wz * py)
    uy = V[j, 1] + (wz * px - wx * pz)
    uz = V[j, 2] + (wx * py - wy * px)
    return (Fp[p, 0, 0] * ux + Fp[p, 0, 1] * uy + Fp[p, 0, 2] * uz,
            Fp[p, 1, 0] * ux + Fp[p, 1, 1] * uy + Fp[p, 1, 2] * uz,
            Fp[p, 2, 0] * ux + Fp[p, 2, 1] * uy + Fp[p, 2, 2] * uz)


@njit(cache=True, inline="always")
def _add_point_wrench(Fp, p, w0, w1, w2, W, j):  # pragma: no cover - compiled
    """``W_j += (g, p_i × g)`` with ``g = ±F_iᵀ w``: the body wrench of the piece's impulse weight w."""
    gx = Fp[p, 0, 0] * w0 + Fp[p, 1, 0] * w1 + Fp[p, 2, 0] * w2
    gy = Fp[p, 0, 1] * w0 + Fp[p, 1, 1] * w1 + Fp[p, 2, 1] * w2
    gz = Fp[p, 0, 2] * w0 + Fp[p, 1, 2] * w1 + Fp[p, 2, 2] * w2
    px = Fp[p, 3, 0]
    py = Fp[p, 3, 1]
    pz = Fp[p, 3, 2]
    W[j, 0] += gx
    W[j, 1] += gy
    W[j, 2] += gz
    W[j, 3] += py * gz - pz * gy
    W[j, 4] += pz * gx - px * gz
    W[j, 5] += px * gy - py * gx


@njit(cache=True)
def gather_piece_rows(J, contact, tree_a, tree_b, tree_starts, width, blocks, cols):  # pragma: no cover - compiled
    """The compact row blocks of the pieces: piece p holds rows ``3 contact[p] : 3 contact[p] + 3`` of
    ``J`` on the dofs of tree ``tree_a[p]`` and (if ≥ 0 and different) tree ``tree_b[p]``, in
    ascending dof order, padded with column n_v and zeros up to ``width``.

    Args:
        J: (3 n_c, n_v); contact, tree_a, tree_b: (n_p,) (−1 = no tree); tree_starts: (n_trees + 1,);
        width: columns per piece; blocks: output (n_p, 3, width); cols: output (n_p, width).
    """
    n_v = J.shape[1]
    for p in range(contact.size):
        a = tree_a[p]
        b = tree_b[p]
        if b == a:
            b = -1
        if a >= 0 and b >= 0 and tree_starts[b] < tree_starts[a]:
            a, b = b, a
        if a < 0:
            a, b = b, -1
        t = 0
        r = 3 * contact[p]
        for tree in (a, b):
            if tree < 0:
                continue
            for c in range(tree_starts[tree], tree_starts[tree + 1]):
                cols[p, t] = c
                for k in range(3):
                    blocks[p, k, t] = J[r + k, c]
                t += 1
        for u in range(t, width):
            cols[p, u] = n_v
            for k in range(3):
                blocks[p, k, u] = 0.0


# ----------------------------------------------------------------------------- compiled setup (all variants)
# The per-solve setup (pieces, β₀, z⁰ = J_p v̂⁰, the first right-hand side, θ_d) was ~0.2 ms of numpy
# calls on 8 A1s, as much as 40 iterations. These kernels do it in one pass each; every variant uses
# them (the row ones for No Body / No Sub / SubADMM's row ablation, the body ones for SubADMM).


@njit(cache=True)
def piece_index(contact_trees, split_same_tree):  # pragma: no cover - compiled
    """The pieces of the split variants, sorted by contact (side a before side b).

    Args:
        contact_trees: (n_c, 2) tree of each side (−1 = world).
        split_same_tree: a contact within one tree gets a piece per side (body splitting) instead of one.

    Returns:
        ``(contact, tree, side, count)``: (n_p,) contact, tree and side (0 = a, 1 = b) of each piece,
        (n_c,) float ``|Z_i|`` (at least 1).
    """
    n_c = contact_trees.shape[0]
    n_p = 0
    for i in range(n_c):
        a = contact_trees[i, 0]
        b = contact_trees[i, 1]
        n_p += (a >= 0) + (b >= 0 and (b != a or split_same_tree))
    contact = np.empty(n_p, dtype=np.int64)
    tree = np.empty(n_p, dtype=np.int64)
    side = np.empty(n_p, dtype=np.int64)
    count = np.empty(n_c)
    p = 0
    for i in range(n_c):
        a = contact_trees[i, 0]
        b = contact_trees[i, 1]
        first = p
        if a >= 0:
            contact[p] = i
            tree[p] = a
            side[p] = 0
            p += 1
        if b >= 0 and (b != a or split_same_tree):
            contact[p] = i
            tree[p] = b
            side[p] = 1
            p += 1
        count[i] = max(p - first, 1)
    return contact, tree, side, count


@njit(cache=True)
def body_pseudo_density(joints, mass):  # pragma: no cover - compiled
    """β₀ of §VI-D over bodies: exp(mean over the bodies in contact with mass > 0 of
    log(mass / contact pieces)), bodies in ascending joint order; −1 if there is none.

    Args:
        joints: (n_c, 2) joint of each contact side (0 = world); mass: (n_joints,) body masses.
    """
    counts = np.zeros(mass.size, dtype=np.int64)
    for i in range(joints.shape[0]):
        for s in range(2):
            if joints[i, s] > 0:
                counts[joints[i, s]] += 1
    acc = 0.0
    m = 0
    for j in range(1, mass.size):
        if counts[j] > 0 and mass[j] > 0:
            acc += math.log(mass[j] / counts[j])
            m += 1
    return math.exp(acc / m) if m else -1.0


@njit(cache=True)
def rows_velocity(blocks, cols, v, out):  # pragma: no cover - compiled
    """``out[p] = J_p v`` for compact piece rows (blocks (n_p, 3, s), cols (n_p, s), n_v = padding)."""
    n_v = v.size
    for p in range(blocks.shape[0]):
        out[p, 0], out[p, 1], out[p, 2] = _row_times(blocks, cols, p, v, n_v)


@njit(cache=True)
def rows_scatter(blocks, cols, contact, w, lam, out):  # pragma: no cover - compiled
    """``out += Σ_p J_pᵀ (w_p + λ_{contact[p]})`` for compact piece rows (``w`` (n_p, 3) or empty for
    zero; ``out`` (n_v,))."""
    n_p = blocks.shape[0]
    n_v = out.size
    has_w = w.shape[0] == n_p
    for p in range(n_p):
        i = contact[p]
        w0 = lam[i, 0]
        w1 = lam[i, 1]
        w2 = lam[i, 2]
        if has_w:
            w0 += w[p, 0]
            w1 += w[p, 1]
            w2 += w[p, 2]
        _row_scatter(blocks, cols, p, w0, w1, w2, out, n_v)


@njit(cache=True)
def body_velocity(Fp, piece_joint, active, joint_parent, joint_v, joint_nv, S, v, V, out):  # pragma: no cover
    """``out[p] = J_p v`` (the pieces' contact-point velocities) with the body velocities V from one
    forward pass over the active joints (arguments as :func:`body_piece_step`; V[0] must be 0)."""
    _body_forward(active, joint_parent, joint_v, joint_nv, S, v, V)
    for p in range(Fp.shape[0]):
        out[p, 0], out[p, 1], out[p, 2] = _point_velocity(Fp, p, V, piece_joint[p])


@njit(cache=True)
def body_scatter(Fp, piece_joint, contact, w, lam, active, joint_parent, joint_v, joint_nv, S, W,
                 out):  # pragma: no cover - compiled
    """``out += Σ_p J_pᵀ (w_p + λ_{contact[p]})`` by one backward pass of body wrenches (``w`` (n_p, 3)
    or empty for zero; W (n_joints, 6) zero on entry and on return)."""
    n_p = Fp.shape[0]
    has_w = w.shape[0] == n_p
    for p in range(n_p):
        i = contact[p]
        w0 = lam[i, 0]
        w1 = lam[i, 1]
        w2 = lam[i, 2]
        if has_w:
            w0 += w[p, 0]
            w1 += w[p, 1]
            w2 += w[p, 2]
        _add_point_wrench(Fp, p, w0, w1, w2, W, piece_joint[p])
    _body_backward(active, joint_parent, joint_v, joint_nv, S, W, out)


@njit(cache=True)
def tree_matvec(A, tree_starts, x, out):  # pragma: no cover - compiled
    """``out = A x`` for ``A`` block diagonal over ``tree_starts`` (only the diagonal blocks are read)."""
    for t in range(tree_starts.size - 1):
        st = tree_starts[t]
        en = tree_starts[t + 1]
        for i in range(st, en):
            acc = 0.0
            for j in range(st, en):
                acc += A[i, j] * x[j]
            out[i] = acc


@njit(cache=True)
def tree_dual_residual(A, tree_starts, v, b, Jtl, Av):  # pragma: no cover - compiled
    """θ_d of eq. (42): ``max_j ‖A_j v_j − b_j − (Σ J_pᵀλ)_j‖`` over the trees, with ``A`` block
    diagonal over ``tree_starts`` (only the diagonal blocks are read). Writes ``Av`` (n_v,)."""
    worst = 0.0
    for t in range(tree_starts.size - 1):
        st = tree_starts[t]
        en = tree_starts[t + 1]
        acc = 0.0
        for i in range(st, en):
            x = 0.0
            for j in range(st, en):
                x += A[i, j] * v[j]
            Av[i] = x
            r = x - b[i] - Jtl[i]
            acc += r * r
        worst = max(worst, acc)
    return math.sqrt(worst)


@njit(cache=True)
def whole_system_csc(A, tree_starts, blocks, cols, beta):  # pragma: no cover - compiled
    """"No Sub" (eq. 28): the whole ``A + β Σ_p J_pᵀJ_p`` in CSC form (sorted row indices), built in
    one compiled pass, the counterpart of the compiled SubADMM and No Body builds (it was a numpy /
    ``scipy.sparse`` assembly costing 5× the SuperLU factorization on 8 A1s).

    The pattern is block structured over the trees: block (a, b) is dense when a = b (``A`` is block
    diagonal over ``tree_starts``) or when a piece spans trees a and b (a contact between them),
    else empty. Values are summed as ``scipy.sparse`` sums duplicates: ``A`` first, then the pieces
    in order.

    Args:
        A: (n_v, n_v); tree_starts: (n_trees + 1,); blocks: (n_p, 3, s) piece rows on ``cols``
        (n_p, s) (n_v = padding); beta: penalty.

    Returns:
        ``(indptr, indices, data)`` of the CSC matrix.
    """
    n_t = tree_starts.size - 1
    n_v = A.shape[0]
    dof_tree = np.empty(n_v, dtype=np.int64)
    for t in range(n_t):
        for i in range(tree_starts[t], tree_starts[t + 1]):
            dof_tree[i] = t
    coupled = np.zeros((n_t, n_t), dtype=np.bool_)
    for t in range(n_t):
        coupled[t, t] = True
    n_p, _, s = blocks.shape
    width = np.zeros(n_p, dtype=np.int64)  # columns of each piece before the padding (ascending)
    for p in range(n_p):
        m = 0
        while m < s and cols[p, m] < n_v:
            m += 1
        width[p] = m
        if m > 0:  # a piece's columns are one or two whole trees: its first and last column's
            ta = dof_tree[cols[p, 0]]
            tb = dof_tree[cols[p, m - 1]]
            coupled[ta, tb] = True
            coupled[tb, ta] = True
    seg = np.full((n_t, n_t), -1, dtype=np.int64)  # offset of tree a's rows in a column of tree b
    col_rows = np.zeros(n_t, dtype=np.int64)
    for tb in range(n_t):
        off = 0
        for ta in range(n_t):
            if coupled[ta, tb]:
                seg[ta, tb] = off
                off += tree_starts[ta + 1] - tree_starts[ta]
        col_rows[tb] = off
    indptr = np.zeros(n_v + 1, dtype=np.int64)
    for j in range(n_v):
        indptr[j + 1] = indptr[j] + col_rows[dof_tree[j]]
    indices = np.empty(indptr[n_v], dtype=np.int64)
    data = np.zeros(indptr[n_v])
    for j in range(n_v):
        tb = dof_tree[j]
        q = indptr[j]
        for ta in range(n_t):
            if coupled[ta, tb]:
                for i in range(tree_starts[ta], tree_starts[ta + 1]):
                    indices[q] = i
                    q += 1
    for t in range(n_t):
        st = tree_starts[t]
        for j in range(st, tree_starts[t + 1]):
            base = indptr[j] + seg[t, t] - st
            for i in range(st, tree_starts[t + 1]):
                data[base + i] += A[i, j]
    for p in range(n_p):  # a piece's columns: one or two runs of consecutive dofs (whole trees)
        m = width[p]
        if m == 0:
            continue
        t0 = dof_tree[cols[p, 0]]
        m1 = 1
        while m1 < m and dof_tree[cols[p, m1]] == t0:
            m1 += 1
        t1 = dof_tree[cols[p, m - 1]]
        for b in range(m):
            cb = cols[p, b]
            tb = dof_tree[cb]
            x0 = blocks[p, 0, b]
            x1 = blocks[p, 1, b]
            x2 = blocks[p, 2, b]
            off = indptr[cb] + seg[t0, tb] + cols[p, 0] - tree_starts[t0]
            for a in range(m1):
                data[off + a] += beta * (blocks[p, 0, a] * x0 + blocks[p, 1, a] * x1 + blocks[p, 2, a] * x2)
            if m1 < m:
                off = indptr[cb] + seg[t1, tb] + cols[p, m1] - tree_starts[t1] - m1
                for a in range(m1, m):
                    data[off + a] += beta * (blocks[p, 0, a] * x0 + blocks[p, 1, a] * x1 + blocks[p, 2, a] * x2)
    return indptr, indices, data
