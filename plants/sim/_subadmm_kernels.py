"""The SubADMM iteration over the slack pieces, compiled (numba, ``cache=True``), and its numpy
reference.

Profiling SubADMM on 8 A1s (67 pieces, 144 dofs) showed ~130 µs per iteration, nearly all in the
~20 small numpy operations of the piece gather, the z/λ-step and the scatter, the same for every
variant. :func:`piece_step` does them in one pass over the pieces, so that what remains per
iteration is the variant's own linear solve (the quantity Table III compares).

With ``u_ij = −λ_i`` (eq. 39) and ``z_ij = J_ij v̂ + (λ_i⁺ − λ_i)/β`` the right-hand side of the
next v-step (eq. 34) is ``b + Σ_p J_pᵀ (β z_p + λ_i⁺) = b + Σ_p J_pᵀ (β J_p v̂ + 2λ_i⁺ − λ_i)``, so
the slacks need not be stored for plain ADMM (they are, for the over-relaxed variant). Reference: :func:`piece_step_numpy` (``tests/test_subadmm_body.py``
compares both).

The linear solves of the split variants are compiled too, so that all three variants pay the same
(small) per-call cost and Table III compares the structures: :func:`ldlt_solve_trees` (SubADMM:
Featherstone's LDLᵀ of each tree, from Pinocchio's factor) and :func:`block_matvec` (No Body: the
per-tree dense inverse). No Sub uses SuperLU's own (C) solve.
"""

from __future__ import annotations

import math

import numpy as np

from ._sap_kernels import HAVE_NUMBA, njit
from .contact_laws import strict_operator

__all__ = ["HAVE_NUMBA", "piece_step", "piece_step_numpy", "ldlt_solve_trees", "ldlt_solve_trees_numpy", "block_matvec"]


@njit(cache=True)
def piece_step(blocks, cols, contact, count, v, lam, e, mu, rho, beta, b, lam_out, rhs_out, alpha, z):  # pragma: no cover - compiled
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
    n_p, _, s = blocks.shape
    n_c = lam.shape[0]
    n_v = v.shape[0]
    jv_p = np.empty((n_p, 3))
    jv = np.zeros((n_c, 3))
    for p in range(n_p):
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        for t in range(s):
            col = cols[p, t]
            if col < n_v:
                x = v[col]
                a0 += blocks[p, 0, t] * x
                a1 += blocks[p, 1, t] * x
                a2 += blocks[p, 2, t] * x
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
    dmax = 0.0
    for i in range(n_c):
        k = beta / count[i]
        x0 = lam[i, 0] - k * (jv[i, 0] + e[i, 0])
        x1 = lam[i, 1] - k * (jv[i, 1] + e[i, 1])
        x2 = lam[i, 2] - k * (jv[i, 2] + e[i, 2])
        ln = max(x2, 0.0) / rho[i]  # strict operator (eq. 17)
        st = math.hypot(x0, x1)
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
    rhs_out[:] = b
    for p in range(n_p):
        i = contact[p]
        z0 = jv_p[p, 0] + (lam_out[i, 0] - lam[i, 0]) / beta
        z1 = jv_p[p, 1] + (lam_out[i, 1] - lam[i, 1]) / beta
        z2 = jv_p[p, 2] + (lam_out[i, 2] - lam[i, 2]) / beta
        z[p, 0] = z0
        z[p, 1] = z1
        z[p, 2] = z2
        w0 = beta * z0 + lam_out[i, 0]
        w1 = beta * z1 + lam_out[i, 1]
        w2 = beta * z2 + lam_out[i, 2]
        for t in range(s):
            col = cols[p, t]
            if col < n_v:
                rhs_out[col] += blocks[p, 0, t] * w0 + blocks[p, 1, t] * w1 + blocks[p, 2, t] * w2
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
def block_matvec(inv, idx, y, out):  # pragma: no cover - compiled
    """``out[idx[t]] = inv[t] @ y[idx[t]]`` for every tree t (a per-tree explicit inverse)."""
    T, s = idx.shape
    for t in range(T):
        for i in range(s):
            acc = 0.0
            for j in range(s):
                acc += inv[t, i, j] * y[idx[t, j]]
            out[idx[t, i]] = acc
