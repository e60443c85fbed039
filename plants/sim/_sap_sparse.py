"""Block-sparse (supernodal) Cholesky of SAP's Newton Hessian on an island of trees (numba).

Seed 001 §IV-D: H = A + Jᵀ G J has one dense block per kinematic tree (A's block plus the contacts
on the tree) and one off-diagonal block per pair of trees in contact; an island (trees connected by
contacts) of many trees (a pile of objects) is sparse. The trees are the supernodes: a
minimum-degree elimination order on the tree graph (symbolic, once per step: the contact set is
fixed during the solve) gives the block pattern of the factor L, fill included; each Newton
iteration then assembles H's blocks into that pattern and factors them right-looking,

    L_kk = chol(H_kk),   L_ik = H_ik L_kkᵀ⁻¹ (i ∈ struct(k)),   H_ij −= L_ik L_jkᵀ (i, j ∈ struct(k)),

so the cost follows the pattern (O(Σ_k |struct(k)|² s³) for trees of s dofs), not the island's
size m (a dense Cholesky costs m³/3). The dense per-island Cholesky of
:func:`~plants.sim._sap_kernels.newton_solve` is the reference (``tests/test_sim_scale.py``).
"""

from __future__ import annotations

import numpy as np

from lcs._numba import njit

__all__ = ["symbolic_blocks", "block_cholesky", "block_cholesky_solve"]


@njit(cache=True)
def symbolic_blocks(n, edge_a, edge_b):  # pragma: no cover - compiled
    """Minimum-degree elimination of a graph of ``n`` supernodes with edges (edge_a[e], edge_b[e]).

    Returns ``(order, pos, slot, ptr, struct, n_blocks)``: ``order[k]`` is the node eliminated k-th
    and ``pos`` its inverse; ``struct[ptr[k]:ptr[k+1]]`` are the positions i > k of the nonzero blocks
    L_ik of column k (fill included, ascending); ``slot[i, k]`` (i ≥ k, positions) indexes the block
    storage of L_ik (−1: structurally zero); the n diagonal blocks are slots 0 … n−1.
    """
    adj = np.zeros((n, n), dtype=np.bool_)
    for e in range(edge_a.shape[0]):
        a = edge_a[e]
        b = edge_b[e]
        if a != b:
            adj[a, b] = True
            adj[b, a] = True
    deg = np.zeros(n, dtype=np.int64)
    for a in range(n):
        for b in range(n):
            if adj[a, b]:
                deg[a] += 1
    gone = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    cap = 4 * n + 16
    nbr_nodes = np.empty(cap, dtype=np.int64)  # each column's neighbours (nodes) at its elimination
    nptr = np.zeros(n + 1, dtype=np.int64)
    nb = np.empty(n, dtype=np.int64)
    for step in range(n):
        best = -1
        best_deg = n + 1
        for t in range(n):  # the remaining node of least degree (ties: the lowest index)
            if not gone[t] and deg[t] < best_deg:
                best = t
                best_deg = deg[t]
        order[step] = best
        gone[best] = True
        m = 0
        for u in range(n):
            if adj[best, u] and not gone[u]:
                nb[m] = u
                m += 1
        if nptr[step] + m > cap:
            while nptr[step] + m > cap:
                cap *= 2
            grown = np.empty(cap, dtype=np.int64)
            grown[: nptr[step]] = nbr_nodes[: nptr[step]]
            nbr_nodes = grown
        for x in range(m):
            u = nb[x]
            nbr_nodes[nptr[step] + x] = u
            adj[best, u] = False
            adj[u, best] = False
            deg[u] -= 1
        nptr[step + 1] = nptr[step] + m
        for x in range(m):  # the neighbours become a clique (fill)
            u = nb[x]
            for y in range(x + 1, m):
                w = nb[y]
                if not adj[u, w]:
                    adj[u, w] = True
                    adj[w, u] = True
                    deg[u] += 1
                    deg[w] += 1
    pos = np.empty(n, dtype=np.int64)
    for k in range(n):
        pos[order[k]] = k
    struct = np.empty(nptr[n], dtype=np.int64)
    slot = np.full((n, n), -1, dtype=np.int64)
    for k in range(n):
        slot[k, k] = k
    n_blocks = n
    for k in range(n):
        a = nptr[k]
        b = nptr[k + 1]
        for x in range(a, b):
            struct[x] = pos[nbr_nodes[x]]
        struct[a:b] = np.sort(struct[a:b])
        for x in range(a, b):
            slot[struct[x], k] = n_blocks
            n_blocks += 1
    return order, pos, slot, nptr, struct, n_blocks


@njit(cache=True)
def block_cholesky(blocks, size, slot, ptr, struct):  # pragma: no cover - compiled
    """Factor in place the block matrix whose lower blocks (positions i ≥ k) are
    ``blocks[slot[i, k], :size[i], :size[k]]`` (diagonal blocks: lower triangle read), into L's blocks.
    ``size[k]``: the dofs of the k-th eliminated supernode. Returns False if a pivot is not positive
    and finite (H not positive definite)."""
    n = size.shape[0]
    for k in range(n):
        s = size[k]
        Lkk = blocks[k]
        for j in range(s):  # dense Cholesky of the diagonal block
            d = Lkk[j, j]
            for m in range(j):
                d -= Lkk[j, m] * Lkk[j, m]
            if not (d > 0.0) or not np.isfinite(d):
                return False
            d = np.sqrt(d)
            Lkk[j, j] = d
            for i in range(j + 1, s):
                acc = Lkk[i, j]
                for m in range(j):
                    acc -= Lkk[i, m] * Lkk[j, m]
                Lkk[i, j] = acc / d
        for x in range(ptr[k], ptr[k + 1]):  # L_ik = H_ik L_kkᵀ⁻¹ (row by row: L_kk y = H_ik[r]ᵀ)
            i = struct[x]
            B = blocks[slot[i, k]]
            for r in range(size[i]):
                for c in range(s):
                    acc = B[r, c]
                    for m in range(c):
                        acc -= Lkk[c, m] * B[r, m]
                    B[r, c] = acc / Lkk[c, c]
        for x in range(ptr[k], ptr[k + 1]):  # H_ij −= L_ik L_jkᵀ, i ≥ j in struct(k)
            i = struct[x]
            Bi = blocks[slot[i, k]]
            for y in range(ptr[k], x + 1):
                j = struct[y]
                Bj = blocks[slot[j, k]]
                T = blocks[slot[i, j]]
                for r in range(size[i]):
                    for c in range(size[j]):
                        acc = 0.0
                        for m in range(s):
                            acc += Bi[r, m] * Bj[c, m]
                        T[r, c] -= acc
    return True


@njit(cache=True)
def block_cholesky_solve(blocks, size, slot, ptr, struct, offset, x):  # pragma: no cover - compiled
    """x ← (L Lᵀ)⁻¹ x for the factor of :func:`block_cholesky`; the k-th eliminated supernode's
    entries are ``x[offset[k]:offset[k] + size[k]]``."""
    n = size.shape[0]
    for k in range(n):  # forward: L y = x
        s = size[k]
        o = offset[k]
        Lkk = blocks[k]
        for r in range(s):
            acc = x[o + r]
            for m in range(r):
                acc -= Lkk[r, m] * x[o + m]
            x[o + r] = acc / Lkk[r, r]
        for p in range(ptr[k], ptr[k + 1]):
            i = struct[p]
            B = blocks[slot[i, k]]
            oi = offset[i]
            for r in range(size[i]):
                acc = 0.0
                for m in range(s):
                    acc += B[r, m] * x[o + m]
                x[oi + r] -= acc
    for k in range(n - 1, -1, -1):  # backward: Lᵀ x = y
        s = size[k]
        o = offset[k]
        for p in range(ptr[k], ptr[k + 1]):
            i = struct[p]
            B = blocks[slot[i, k]]
            oi = offset[i]
            for m in range(s):
                acc = 0.0
                for r in range(size[i]):
                    acc += B[r, m] * x[oi + r]
                x[o + m] -= acc
        Lkk = blocks[k]
        for r in range(s - 1, -1, -1):
            acc = x[o + r]
            for m in range(r + 1, s):
                acc -= Lkk[m, r] * x[o + m]
            x[o + r] = acc / Lkk[r, r]
