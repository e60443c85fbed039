"""Compiled Schur-complement solve of NSN (numba, ``cache=True``).

Each NSN Newton step solves ``(J̃ Â⁻¹ J̃ᵀ + C + εI) Δγ = rhs`` by Jacobi-preconditioned conjugate
residual. The rows of ``J̃`` are the contact rows of ``J`` scaled per row (the FB derivative on
the normal row, 0 or 1 on the friction rows): ``J̃ = D J``, so the Schur matrix is ``D W D + C``
with the Delassus operator ``W = J Â⁻¹ Jᵀ``, fixed for the whole solve: a sum of one dense block
per tree over the contacts touching it, formed once per solve (:class:`DelassusBlocks`). Every
conjugate-residual iteration is then one pass over the blocks
(:func:`schur_conjugate_residual`) instead of ``J``, a tree solve and ``Jᵀ`` in numpy (profiled:
57 % of an NSN solve on 8 A1s). The numpy reference is
:func:`plants.sim.nsn.conjugate_residual` with the explicit products (tests compare both).
"""

from __future__ import annotations

import numpy as np

from ._sap_kernels import HAVE_NUMBA, njit

__all__ = ["HAVE_NUMBA", "DelassusBlocks", "schur_conjugate_residual", "schur_matvec"]


class DelassusBlocks:
    """``W = J Â⁻¹ Jᵀ = Σ_t J_t Â_t⁻¹ J_tᵀ`` as one dense block per tree t over the contacts
    touching it (``Â`` is block diagonal over the trees), in flat arrays for the compiled kernels.
    Per tree, not per island: a robot in a pile couples only the contacts on it, so the blocks
    hold Σ_t (3 k_t)² numbers instead of the islands' Σ (3 K)² (on 27 A1s in three islands of 79
    contacts: ≈ 3× fewer, and they stay in cache).

    Args:
        J: (3 n_c, n_v) contact Jacobian; X: (n_v, 3 n_c) ``Â⁻¹ Jᵀ``.
        tree_starts: (n_trees + 1,) dof offsets; contact_trees: (n_c, 2) trees of each contact (−1: world).

    Attributes:
        data: the blocks, row-major, tree k's at ``ptr[k]``; rows: the flat rows (3 i + r) of the
            contacts touching tree k at ``rows[row_ptr[k]:row_ptr[k + 1]]``.
    """

    def __init__(self, J: np.ndarray, X: np.ndarray, tree_starts: np.ndarray, contact_trees: np.ndarray):
        rows, blocks = [], []
        ct = np.asarray(contact_trees)
        for t in range(len(tree_starts) - 1):
            contacts = np.flatnonzero((ct[:, 0] == t) | (ct[:, 1] == t))
            if contacts.size == 0:
                continue
            dofs = np.arange(tree_starts[t], tree_starts[t + 1])
            flat = (3 * contacts[:, None] + np.arange(3)[None, :]).reshape(-1)
            rows.append(flat)
            blocks.append(J[np.ix_(flat, dofs)] @ X[np.ix_(dofs, flat)])
        sizes = np.array([r.size for r in rows], dtype=np.int64)
        self.rows = np.concatenate([np.zeros(0, np.int64), *rows]).astype(np.int64)
        self.row_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.ptr = np.concatenate([[0], np.cumsum(sizes * sizes)]).astype(np.int64)
        self.data = np.concatenate([np.zeros(0), *(b.reshape(-1) for b in blocks)])
        self.work = np.empty(2 * int(sizes.max(initial=0)))

    def dense(self, n: int) -> np.ndarray:
        """(n, n) the whole ``W`` (tests)."""
        out = np.zeros((n, n))
        for k in range(self.row_ptr.size - 1):
            r = self.rows[self.row_ptr[k] : self.row_ptr[k + 1]]
            out[np.ix_(r, r)] += self.data[self.ptr[k] : self.ptr[k + 1]].reshape(r.size, r.size)
        return out


@njit(cache=True, fastmath={"reassoc", "contract"})
def schur_matvec(data, ptr, rows, row_ptr, D, Cs, K, x, work, out):  # pragma: no cover - compiled
    """``out = D ∘ (W (D ∘ x)) + Cs ∘ x``, plus ``K_i (K_i · x_{i,t})`` on the friction rows of contact i.

    Args:
        data, ptr, rows, row_ptr: :class:`DelassusBlocks`; D, Cs, x, out: (3 n_c,); K: (n_c, 2)
        (zeros when the friction blocks are ``W 1``); work: (2 × max block size,) scratch.
    """
    for q in range(out.size):
        out[q] = Cs[q] * x[q]
    for k in range(row_ptr.size - 1):
        r0 = row_ptr[k]
        m = row_ptr[k + 1] - r0
        p0 = ptr[k]
        for b in range(m):
            q = rows[r0 + b]
            work[b] = D[q] * x[q]
        for a in range(m):
            s = 0.0
            for b in range(m):
                s += data[p0 + a * m + b] * work[b]
            q = rows[r0 + a]
            out[q] += D[q] * s
    for i in range(K.shape[0]):
        t = K[i, 0] * x[3 * i] + K[i, 1] * x[3 * i + 1]
        out[3 * i] += K[i, 0] * t
        out[3 * i + 1] += K[i, 1] * t


@njit(cache=True)
def schur_conjugate_residual(data, ptr, rows, row_ptr, D, Cs, K, b, diag, max_iterations, rel_tol, work,
                             x):  # pragma: no cover - compiled
    """Jacobi-preconditioned conjugate residual on the Schur matrix of :func:`schur_matvec`, from
    x = 0, the iteration of :func:`plants.sim.nsn.conjugate_residual`. Writes ``x``; returns the
    iterations."""
    n = b.size
    x[:] = 0.0
    Pinv = 1.0 / diag
    r = b.copy()
    z = Pinv * r
    Az = np.empty(n)
    schur_matvec(data, ptr, rows, row_ptr, D, Cs, K, z, work, Az)
    p = z.copy()
    Ap = Az.copy()
    PAp = np.empty(n)
    rho = 0.0
    z0 = 0.0
    for i in range(n):
        rho += z[i] * Az[i]
        z0 += z[i] * z[i]
    z0 = np.sqrt(z0)
    k = 0
    for it in range(1, max_iterations + 1):
        k = it
        den = 0.0
        for i in range(n):
            PAp[i] = Pinv[i] * Ap[i]
            den += Ap[i] * PAp[i]
        if den <= 0 or rho == 0:
            k -= 1
            break
        a = rho / den
        zn = 0.0
        for i in range(n):
            x[i] += a * p[i]
            r[i] -= a * Ap[i]
            z[i] -= a * PAp[i]
            zn += z[i] * z[i]
        if np.sqrt(zn) <= rel_tol * z0:
            break
        schur_matvec(data, ptr, rows, row_ptr, D, Cs, K, z, work, Az)
        rho_new = 0.0
        for i in range(n):
            rho_new += z[i] * Az[i]
        beta = rho_new / rho
        rho = rho_new
        for i in range(n):
            p[i] = z[i] + beta * p[i]
            Ap[i] = Az[i] + beta * Ap[i]
    return k
