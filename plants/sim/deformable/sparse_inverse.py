"""The explicit sparse inverse of seed 004 §4.2: A = Pᵀ L Lᵀ P, S = L⁻¹ P, A⁻¹ = Sᵀ S (Eq. 7).

A is the constant SPD system matrix of the local-global solver. It is factored once with a
fill-reducing ordering P (SuperLU's minimum-degree ordering of A + Aᵀ, run in symmetric mode
with diagonal pivoting, so that P A Pᵀ = L D Lᵀ and the Cholesky factor is L D^½; the paper
uses nested dissection, which scipy does not ship). Then S = L⁻¹ P is formed column by column:
by Theorem 1 (Bridson & Tang 1999; Benzi & Tůma 2000) column k of L⁻¹ is non-zero only at k and
its ancestors in the elimination tree 𝒯(A), so each column is a triangular solve along one
root path (Fig. 4). Each global solve is then two sparse mat-vecs, q = Sᵀ (S b).

The column kernel is compiled with numba; :func:`sparse_inverse_factor_numpy` is the dense
reference it is tested against. So are the two products of the global step on (n, 3) blocks of
node positions, S b and Sᵀ y (:func:`csr_matmul`, :func:`csr_rmatmul`, both reading S's CSR
arrays, so Sᵀ needs no second copy): SciPy's ``csr_matvecs`` loops over the k right-hand sides
inside each non-zero with a generic stride and ran at half the speed of a row loop with three
scalar accumulators (4.9k-vertex ball: 92 ms vs 45 ms per S b); SciPy's product is their
reference and runs for any other k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from lcs._numba import HAVE_NUMBA, njit

__all__ = ["SparseInverse", "elimination_tree", "cholesky_min_degree", "sparse_inverse_factor_numpy", "linv_scipy",
           "csr_matmul", "csr_rmatmul", "HAVE_NUMBA"]


def cholesky_min_degree(A: sp.spmatrix) -> tuple[sp.csc_matrix, np.ndarray]:
    """(L, p): lower Cholesky factor L (csc) and ordering p with A[p][:, p] = L Lᵀ.

    Raises:
        ValueError: A is not square, not symmetric or not positive definite.
    """
    A = sp.csc_matrix(A, dtype=float)
    n = A.shape[0]
    if A.shape != (n, n):
        raise ValueError(f"A must be square, got {A.shape}")
    if n and abs(A - A.T).max() > 1e-12 * max(abs(A).max(), 1e-300):
        raise ValueError("A must be symmetric")
    lu = sla.splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options=dict(SymmetricMode=True))
    if not np.array_equal(lu.perm_r, lu.perm_c):  # pragma: no cover - SymmetricMode with threshold 0
        raise ValueError("the symmetric-mode factorization pivoted off the diagonal: A is not SPD")
    d = lu.U.diagonal()
    if (d <= 0).any():
        raise ValueError("A is not positive definite (a non-positive pivot)")
    L = (lu.L @ sp.diags(np.sqrt(d))).tocsc()
    p = np.empty(n, dtype=np.int64)
    p[lu.perm_c] = np.arange(n)
    L.sort_indices()
    return L, p


def elimination_tree(M: sp.spmatrix) -> np.ndarray:
    """(n,) parent of each column in the elimination tree of a structurally symmetric matrix
    (−1 at roots), from its *pattern* by Liu's algorithm with path compression (CSparse's
    ``cs_etree``). Pass A (permuted) or its Cholesky factor L (lower; its pattern is taken as
    L + Lᵀ): fill does not change the tree. The pattern, not the values: reading the tree off L's
    first sub-diagonal non-zero breaks when a factor entry cancels to an exact zero and is dropped
    (a stiff 30×6×6 bar did that, and S then missed entries)."""
    M = sp.csc_matrix(M)
    n = M.shape[0]
    P = (abs(M) + abs(M).T).tocsc()  # structural symmetry (values irrelevant)
    P.sort_indices()
    return _etree_kernel(n, P.indptr.astype(np.int64), P.indices.astype(np.int64))


@njit(cache=True)
def _etree_kernel(n, indptr, indices):  # pragma: no cover - compiled
    parent = np.full(n, -1, np.int64)
    ancestor = np.full(n, -1, np.int64)
    for k in range(n):
        for p in range(indptr[k], indptr[k + 1]):
            i = indices[p]
            while i != -1 and i < k:
                inext = ancestor[i]
                ancestor[i] = k
                if inext == -1:
                    parent[i] = k
                i = inext
    return parent


@njit(cache=True)
def _linv_columns(parent, Lp, Li, Lx):  # pragma: no cover - compiled
    """CSC (indptr, rows, values) of L⁻¹ from L's CSC (Lp, Li, Lx; rows sorted, the diagonal
    first in each column) and its etree.

    Column k of L⁻¹ is the forward substitution x = L⁻¹e_k along k's root path, in increasing
    order (a parent follows its children): x_i = w_i / L_ii, then column i of L is scattered,
    w_j −= L_ji x_i. The rows j > i of column i are ancestors of i, so every update lands on the
    path: the work per column is Σ nnz(L[:, i]) over its path. A row-oriented substitution
    (x_i = (δ_ik − L[i, :i]·x)/L_ii) reads whole rows of L, mostly against zeros; near the root
    those rows are long (12 min at 19.7k vertices)."""
    n = parent.size
    depth = np.zeros(n, np.int64)
    for k in range(n - 1, -1, -1):
        depth[k] = 1 + (depth[parent[k]] if parent[k] >= 0 else 0)
    indptr = np.zeros(n + 1, np.int64)
    for k in range(n):
        indptr[k + 1] = indptr[k] + depth[k]
    rows = np.empty(indptr[n], np.int64)
    vals = np.empty(indptr[n], np.float64)
    w = np.zeros(n)
    for k in range(n):
        pos = indptr[k]
        w[k] = 1.0
        i = k
        while i != -1:
            p0 = Lp[i]
            x = w[i] / Lx[p0]
            w[i] = 0.0
            rows[pos] = i
            vals[pos] = x
            pos += 1
            for p in range(p0 + 1, Lp[i + 1]):
                w[Li[p]] -= Lx[p] * x
            i = parent[i]
    return indptr, rows, vals


@njit(cache=True)
def _csr_matmul3_kernel(indptr, indices, data, x, out):  # pragma: no cover - compiled
    """out = M x for M in CSR (indptr, indices, data) and x (n_cols, 3) C-contiguous."""
    for i in range(out.shape[0]):
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            v = data[p]
            a0 += v * x[j, 0]
            a1 += v * x[j, 1]
            a2 += v * x[j, 2]
        out[i, 0] = a0
        out[i, 1] = a1
        out[i, 2] = a2
    return out


@njit(cache=True)
def _csr_rmatmul3_kernel(indptr, indices, data, y, out):  # pragma: no cover - compiled
    """out = Mᵀ y for M in CSR and y (n_rows, 3) C-contiguous (a scatter over M's rows)."""
    out[:] = 0.0
    for i in range(indptr.size - 1):
        y0 = y[i, 0]
        y1 = y[i, 1]
        y2 = y[i, 2]
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            v = data[p]
            out[j, 0] += v * y0
            out[j, 1] += v * y1
            out[j, 2] += v * y2
    return out


def _compiled_block(x: np.ndarray, n: int) -> np.ndarray | None:
    """x as a C-contiguous float (n, 3) block when the compiled kernels apply, else None."""
    if not HAVE_NUMBA or np.ndim(x) != 2 or np.shape(x) != (n, 3):
        return None
    return np.ascontiguousarray(x, dtype=float)


def csr_matmul(M: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """M x for a CSR matrix M (r, c) and x (c,) or (c, k): compiled for k = 3 (node positions),
    SciPy's ``M @ x`` (the reference) otherwise (for k = 1 SciPy's single-vector loop is as fast)."""
    X = _compiled_block(x, M.shape[1])
    if X is None:
        return M @ x
    return _csr_matmul3_kernel(M.indptr, M.indices, M.data, X, np.empty((M.shape[0], 3)))


def csr_rmatmul(M: sp.csr_matrix, y: np.ndarray) -> np.ndarray:
    """Mᵀ y for a CSR matrix M (r, c) and y (r,) or (r, k), without forming Mᵀ: compiled for
    k = 3, SciPy's ``M.T @ y`` (the reference) otherwise."""
    Y = _compiled_block(y, M.shape[0])
    if Y is None:
        return M.T @ y
    return _csr_rmatmul3_kernel(M.indptr, M.indices, M.data, Y, np.empty((M.shape[1], 3)))


def linv_scipy(L: sp.csc_matrix, block: int = 256) -> sp.csc_matrix:
    """L⁻¹ (csc) by SciPy's sparse triangular solves on blocks of identity columns: the path
    without numba (e.g. a GPU machine with only numpy/scipy/cupy). Forward substitution leaves the
    entries outside Theorem 1's pattern exactly zero, so the result has the same pattern."""
    n = L.shape[0]
    Lr = sp.csr_matrix(L)
    cols = []
    for j0 in range(0, n, block):
        j1 = min(n, j0 + block)
        E = np.zeros((n, j1 - j0))
        E[np.arange(j0, j1), np.arange(j1 - j0)] = 1.0
        cols.append(sp.csc_matrix(sla.spsolve_triangular(Lr, E, lower=True)))
    return sp.hstack(cols, format="csc") if cols else sp.csc_matrix((0, 0))


def sparse_inverse_factor_numpy(A: sp.spmatrix) -> np.ndarray:
    """Dense reference of S = L⁻¹P (n, n) (small A only), from the same L and ordering."""
    L, p = cholesky_min_degree(A)
    Linv = np.linalg.inv(L.toarray())
    return Linv[:, np.argsort(p)]


@dataclass(frozen=True)
class SparseInverse:
    """S = L⁻¹ P of an SPD matrix A, so that A⁻¹ = SᵀS.

    Attributes:
        S: (n, n) csr, lower triangular up to the column permutation.
        L: (n, n) csc Cholesky factor of P A Pᵀ.
        perm: (n,) ordering p: P A Pᵀ = A[p][:, p].
        parent: (n,) elimination-tree parents (−1 at roots).
    """

    S: sp.csr_matrix
    L: sp.csc_matrix
    perm: np.ndarray
    parent: np.ndarray

    @classmethod
    def from_matrix(cls, A: sp.spmatrix) -> "SparseInverse":
        """Factor A (SPD, sparse) once and build S (Theorem 1 pattern)."""
        L, p = cholesky_min_degree(A)
        parent = elimination_tree(sp.csc_matrix(A)[p][:, p])
        n = L.shape[0]
        if HAVE_NUMBA:
            Lc = sp.csc_matrix(L)
            Lc.sort_indices()  # lower triangular: the diagonal leads each column
            indptr, rows, vals = _linv_columns(parent, Lc.indptr.astype(np.int64), Lc.indices.astype(np.int64),
                                               Lc.data)
            Linv = sp.csc_matrix((vals, rows, indptr), shape=(n, n))
        else:  # pragma: no cover - installs without numba (tested by forcing this branch)
            Linv = linv_scipy(L)
        S = Linv[:, np.argsort(p)].tocsr()  # S[:, j] = L⁻¹[:, k] where p[k] = j
        return cls(S=S, L=L, perm=p, parent=parent)

    @property
    def n(self) -> int:
        return self.S.shape[0]

    def solve(self, b: np.ndarray) -> np.ndarray:
        """A⁻¹ b = Sᵀ(S b) for b (n,) or (n, k): two sparse mat-vecs."""
        return self.apply_ST(self.apply_S(b))

    def apply_S(self, b: np.ndarray) -> np.ndarray:
        """S b for b (n,) or (n, k) (compiled; :func:`csr_matmul`)."""
        return csr_matmul(self.S, b)

    def apply_ST(self, y: np.ndarray) -> np.ndarray:
        """Sᵀ y for y (n,) or (n, k) (compiled; :func:`csr_rmatmul`)."""
        return csr_rmatmul(self.S, y)

    def memory_bytes(self, block: int = 1) -> int:
        """Bytes of S's values in double precision, for the (block·n)-square matrix S ⊗ I_block
        (block = 3: the paper's 3n × 3n system on x, y, z)."""
        return int(self.S.nnz) * block * 8

    def dense_inverse_bytes(self, block: int = 1) -> int:
        """Bytes of a dense (block·n)² double-precision A⁻¹."""
        return (block * self.n) ** 2 * 8
