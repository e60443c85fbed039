r"""The big-M mixed-integer MPC baseline of seed 003, eq. (15).

.. math::

    \min_{x, u, \lambda, s}\ & \sum_{k=0}^{N-1} (x_k - x^d_k)^T Q_k (x_k - x^d_k)
        + u_k^T R_k u_k + (x_N - x^d_N)^T Q_N (x_N - x^d_N) \\
    \text{s.t. } & x_{k+1} = A_k x_k + B_k u_k + D_k \lambda_k + d_k, \quad x_0 \text{ given}, \\
    & 0 \le E_k x_k + F_k \lambda_k + H_k u_k + c_k \le M s_k, \quad
      0 \le \lambda_k \le M (\mathbf 1 - s_k), \quad s_k \in \{0, 1\}^{n_\lambda}, \\
    & \text{optional box bounds on } x_1..x_N,\ u_k,\ \lambda_k .

Two formulations are built from the same data:

* ``eliminate_states=True`` (default): the states are affine functions of the decision
  variables, ``x_k = G_k v + g_k`` with ``v = [u_0..u_{N-1}, λ_0..λ_{N-1}]`` (the condensed map),
  so the model only has ``u``, ``λ`` and ``s``: ``N (n_u + 2 n_λ)`` variables. This is what lets
  the size-limited pip licence of Gurobi (at most 200 variables once the objective is quadratic)
  solve the paper's finger-gaiting problem at N = 12 and pivoting at N = 8.
* ``eliminate_states=False``: the textbook form with ``x_1..x_N`` as variables and the dynamics
  as equality constraints (``N n_x`` more variables, sparser).

Backends: Gurobi (``gurobipy``, matrix API) and SCIP (``pyscipopt``; its objective must be
linear, so the cost is an epigraph ``t >= ||y||^2`` with ``y = L z + l`` the stacked
``Q^{1/2}(x - x^d)`` and ``R^{1/2} u`` terms, scaled so the zero plan costs ~100: SCIP's
partly absolute tolerances made it several times slower on the paper's ~1e6 costs).
``solver="auto"`` tries Gurobi and falls back to SCIP when gurobipy is missing or its licence
refuses the model (the result's ``solver`` and ``extras["fallback_reason"]`` say so).

Polishing: with ``M = 1000`` a binary that is integral only to the solver's tolerance
(1e-9 for Gurobi, 1e-6 for SCIP) lets ``λ`` or the slack be ~1e-6..1e-3 instead of 0, and the
solvers' continuous values are only feasible to ~1e-6. After the branch and bound the binaries
are rounded and the convex QP of that mode sequence (λ_i = 0 or slack_i = 0, the other side
and the bounds as inequalities) is solved exactly by an active-set refinement in numpy
(null-space KKT solves, started from the constraints active at the solver's plan). The returned
plan is therefore exactly complementary, and Gurobi and SCIP return the same optimum to
rounding. If the refinement does not converge the solver's own plan is returned
(``extras["polished"] = False``) and ``complementarity_violation`` shows its accuracy.

Units: the model works in the LCS's own (possibly scaled) λ; ``M`` bounds that λ and the
complementarity slack ``E x + F λ + H u + c``. ``lam_upper`` and the returned ``lam`` are in
physical units (``lcs.lambda_scale * λ``). ``complementarity_violation`` is the natural residual
``max |min(λ, E x + F λ + H u + c)|`` in the LCS's units.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from lcs import LCS, LCPSolveError, solve_lcp
from lcs import _validation as _v
from lcs.errors import LCSValueError

from ._blas import blas_threads
from .errors import C3TypeError, C3ValueError, GurobiLicenseError, SolverUnavailableError
from .result import C3Result, C3Status

__all__ = ["solve_miqp_mpc"]

_SOLVERS = ("auto", "gurobi", "scip")
_GUROBI_SIZE_ERRNO = 10010  # model too large for a size-limited licence
_GUROBI_LICENCE_ERRNOS = (10009, 10010)  # no or invalid licence; size limit
_PIP_LICENCE_QUAD_VARS = 200  # the pip licence's limit once quadratic terms are present
_DEFAULT_MIP_GAP = 1e-6
_SCIP_PARAMS: dict[str, Any] = {}  # extra SCIP parameters (tuning hook)


# ====================================================================== validated inputs
@dataclass
class _Data:
    N: int
    n_x: int
    n_u: int
    n_lam: int
    A: np.ndarray  # (N, n_x, n_x)
    B: np.ndarray  # (N, n_x, n_u)
    D: np.ndarray
    d: np.ndarray  # (N, n_x)
    E: np.ndarray
    F: np.ndarray
    H: np.ndarray
    c: np.ndarray  # (N, n_lam)
    Qs: np.ndarray  # (N+1, n_x, n_x), Qs[N] = QN
    Rs: np.ndarray  # (N, n_u, n_u)
    x0: np.ndarray
    xdes: np.ndarray  # (N+1, n_x)
    M: float
    xl: np.ndarray  # (N, n_x) bounds on x_1..x_N
    xu: np.ndarray
    ul: np.ndarray  # (N, n_u)
    uu: np.ndarray
    lu: np.ndarray  # (N, n_lam) upper bound on λ in LCS units
    lambda_scale: float


_ERRORS = (C3ValueError, C3ValueError)
"""solve_miqp_mpc documents C3ValueError for every bad argument (type errors included)."""


def _finite_array(name: str, value: Any, allow_inf: bool = False) -> np.ndarray:
    # strict: no strings, booleans or complex values (the shared rules of lcs._validation)
    arr = np.array(_v.as_float_array(name, value, _ERRORS))
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if np.any(bad):
        what = "NaN" if allow_inf else "non-finite (NaN/Inf)"
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise C3ValueError(f"{name} has a {what} entry at index {idx}")
    return arr


def _check_sym(name: str, mat: np.ndarray, definite: bool) -> np.ndarray:
    """Symmetrise ``mat`` (after checking it is symmetric) and check PSD / PD."""
    scale = max(1.0, float(np.abs(mat).max(initial=0.0)))
    asym = float(np.abs(mat - mat.T).max(initial=0.0))
    if asym > 1e-8 * scale:
        raise C3ValueError(f"{name} must be symmetric, but max |{name} - {name}^T| = "
                           f"{asym:.3g}")
    mat = 0.5 * (mat + mat.T)
    if mat.size:
        ev = np.linalg.eigvalsh(mat)
        if definite and not ev[0] > 1e-12 * scale:
            raise C3ValueError(f"{name} must be positive definite, but its smallest eigenvalue "
                               f"is {ev[0]:.3g}")
        if not definite and ev[0] < -1e-10 * scale:
            raise C3ValueError(f"{name} must be positive semidefinite, but its smallest "
                               f"eigenvalue is {ev[0]:.3g}")
    return mat


def _cost_matrices(name: str, value: Any, n: int, N: int, definite: bool,
                   allow_per_knot: bool = True) -> np.ndarray:
    """A (N, n, n) stack from one matrix or N per-knot matrices."""
    if isinstance(value, (list, tuple)) and len(value) and np.ndim(value[0]) == 2:
        shapes = {np.shape(v) for v in value}
        if len(shapes) > 1:
            raise C3ValueError(f"{name}: per-knot matrices must all be ({n}, {n}), got shapes "
                               f"{sorted(shapes)}")
    arr = _finite_array(name, value)
    if arr.ndim == 0 and n == 1:
        arr = arr.reshape(1, 1)
    expected = f"({n}, {n})" + (f" or per knot ({N}, {n}, {n})" if allow_per_knot else "")
    if arr.ndim == 2:
        if arr.shape != (n, n):
            raise C3ValueError(f"{name} must have shape {expected}, got {arr.shape}")
        arr = _check_sym(name, arr, definite)
        return np.broadcast_to(arr, (N, n, n)).copy()
    if arr.ndim == 3 and allow_per_knot:
        if arr.shape != (N, n, n):
            raise C3ValueError(f"{name} must have shape {expected}, got {arr.shape} (per-knot "
                               f"{name} needs exactly N={N} matrices)")
        return np.stack([_check_sym(f"{name}[{k}]", arr[k], definite) for k in range(N)])
    raise C3ValueError(f"{name} must have shape {expected}, got {arr.shape}")


def _bounds(name: str, value: Any, n: int, N: int, default: float) -> np.ndarray:
    """A (N, n) array of bounds from None, a scalar, (n,) or (N, n); ±inf allowed, NaN not."""
    if value is None:
        return np.full((N, n), default)
    arr = _finite_array(name, value, allow_inf=True)
    if arr.ndim == 0:
        return np.full((N, n), float(arr))
    if arr.shape == (n,):
        return np.broadcast_to(arr, (N, n)).copy()
    if arr.shape == (N, n):
        return arr.copy()
    raise C3ValueError(f"{name} must be a scalar, shape ({n},) or per knot ({N}, {n}), got "
                       f"{arr.shape}")


def _validate(lcs: Any, Q: Any, R: Any, N: Any, x0: Any, QN: Any, x_des: Any, M: Any,
              x_lower: Any, x_upper: Any, u_lower: Any, u_upper: Any,
              lam_upper: Any) -> _Data:
    if not isinstance(lcs, LCS):
        raise C3TypeError(f"lcs must be an lcs.LCS, got {type(lcs).__name__}")
    N = _v.check_number("N", N, integer=True, minimum=1, maximum=10**9, errors=_ERRORS)
    try:
        st = lcs.stacked(N)
    except LCSValueError as e:
        raise C3ValueError(f"N={N}: {e}") from None
    n_x, n_u, n_lam = lcs.n_x, lcs.n_u, lcs.n_lambda
    Qk = _cost_matrices("Q", Q, n_x, N, definite=False)
    Rk = _cost_matrices("R", R, n_u, N, definite=True)
    if QN is None:
        QNm = Qk[-1]
    else:
        QNm = _cost_matrices("QN", QN, n_x, 1, definite=False, allow_per_knot=False)[0]
    if x0 is None:
        raise C3ValueError(f"x0 is required: the initial state, shape ({n_x},)")
    x0a = _finite_array("x0", x0).reshape(-1) if np.ndim(x0) <= 1 else None
    if x0a is None or x0a.shape != (n_x,):
        raise C3ValueError(f"x0 must have shape ({n_x},), got {np.shape(x0)}")
    if x_des is None:
        xd = np.zeros((N + 1, n_x))
    else:
        xd = _finite_array("x_des", x_des)
        if xd.shape == (n_x,):
            xd = np.broadcast_to(xd, (N + 1, n_x)).copy()
        elif xd.shape != (N + 1, n_x):
            raise C3ValueError(f"x_des must have shape ({n_x},) or ({N + 1}, {n_x}) (knots "
                               f"0..N), got {xd.shape}")
    Mf = _v.check_number("M (the big-M constant)", M, minimum=0.0, exclusive_minimum=True,
                         errors=_ERRORS)
    xl = _bounds("x_lower", x_lower, n_x, N, -np.inf)
    xu = _bounds("x_upper", x_upper, n_x, N, np.inf)
    ul = _bounds("u_lower", u_lower, n_u, N, -np.inf)
    uu = _bounds("u_upper", u_upper, n_u, N, np.inf)
    lu = _bounds("lam_upper", lam_upper, n_lam, N, np.inf)
    for lo, hi, nl, nh in ((xl, xu, "x_lower", "x_upper"), (ul, uu, "u_lower", "u_upper")):
        bad = np.argwhere(lo > hi)
        if bad.size:
            k, i = bad[0]
            raise C3ValueError(f"{nl} > {nh} at knot {k}, entry {i}: {lo[k, i]} > {hi[k, i]}")
    if np.any(lu < 0):
        raise C3ValueError("lam_upper must be >= 0 (λ >= 0 always), got a negative entry")
    for name, arr in (("x_lower", xl), ("u_lower", ul)):
        if np.any(arr == np.inf):
            raise C3ValueError(f"{name} has a +inf entry")
    for name, arr in (("x_upper", xu), ("u_upper", uu)):
        if np.any(arr == -np.inf):
            raise C3ValueError(f"{name} has a -inf entry")
    ls = lcs.lambda_scale
    return _Data(N=N, n_x=n_x, n_u=n_u, n_lam=n_lam,
                 A=np.asarray(st.A), B=np.asarray(st.B), D=np.asarray(st.D),
                 d=np.asarray(st.d), E=np.asarray(st.E), F=np.asarray(st.F),
                 H=np.asarray(st.H), c=np.asarray(st.c),
                 Qs=np.concatenate([Qk, QNm[None]]), Rs=Rk, x0=x0a, xdes=xd, M=Mf,
                 xl=xl, xu=xu, ul=ul, uu=uu, lu=lu / ls, lambda_scale=ls)


# ====================================================================== condensed map
@dataclass
class _Condensed:
    G: np.ndarray  # (N+1, n_x, n_v): x_k = G[k] v + g[k]
    g: np.ndarray  # (N+1, n_x)
    W: np.ndarray  # (N, n_lam, n_v): w_k = W[k] v + w0[k] (complementarity slack)
    w0: np.ndarray  # (N, n_lam)
    P: np.ndarray  # cost = v^T P v + q^T v + r
    q: np.ndarray
    r: float
    iu: np.ndarray  # (N, n_u) column indices of u_k in v
    il: np.ndarray  # (N, n_lam) column indices of λ_k in v


def _psd_sqrt(mat: np.ndarray) -> np.ndarray:
    """A (rank, n) factor L with L^T L = mat (mat symmetric PSD)."""
    w, V = np.linalg.eigh(mat)
    keep = w > 1e-14 * max(1.0, float(np.abs(w).max(initial=0.0)))
    return (np.sqrt(w[keep])[:, None] * V[:, keep].T)


def _condense(d: _Data) -> _Condensed:
    N, n_x, n_u, n_lam = d.N, d.n_x, d.n_u, d.n_lam
    n_v = N * (n_u + n_lam)
    iu = np.arange(N * n_u).reshape(N, n_u)
    il = N * n_u + np.arange(N * n_lam).reshape(N, n_lam)
    G = np.zeros((N + 1, n_x, n_v))
    g = np.zeros((N + 1, n_x))
    g[0] = d.x0
    for k in range(N):  # one matrix product per knot
        G[k + 1] = d.A[k] @ G[k]
        G[k + 1][:, iu[k]] += d.B[k]
        G[k + 1][:, il[k]] += d.D[k]
        g[k + 1] = d.A[k] @ g[k] + d.d[k]
    W = np.einsum("kij,kjv->kiv", d.E, G[:N])
    kk = np.arange(N)[:, None, None]
    rows = np.arange(n_lam)[None, :, None]
    W[kk, rows, iu[:, None, :]] += d.H
    W[kk, rows, il[:, None, :]] += d.F
    w0 = np.einsum("kij,kj->ki", d.E, g[:N]) + d.c
    e = g - d.xdes
    QG = np.einsum("kij,kjv->kiv", d.Qs, G)
    P = np.einsum("kiv,kiw->vw", G, QG)
    P[iu[:, :, None], iu[:, None, :]] += d.Rs
    P = 0.5 * (P + P.T)
    q = 2.0 * np.einsum("ki,kiv->v", e, QG)
    r = float(np.einsum("ki,kij,kj->", e, d.Qs, e))
    return _Condensed(G=G, g=g, W=W, w0=w0, P=P, q=q, r=r, iu=iu, il=il)


# ====================================================================== generic MIQP model
@dataclass
class _Model:
    """min z^T P z + q^T z + r  s.t. A_le z <= b_le, A_eq z = b_eq, lb <= z <= ub, z[is_bin] binary.

    The cost is also ``||L z + l||^2 + r_L`` (for SCIP's epigraph).
    """

    n: int
    lb: np.ndarray
    ub: np.ndarray
    is_bin: np.ndarray
    P: Any
    q: np.ndarray
    r: float
    L: Any
    l: np.ndarray  # noqa: E741
    r_L: float
    A_le: sp.csr_matrix
    b_le: np.ndarray
    A_eq: sp.csr_matrix
    b_eq: np.ndarray
    iu: np.ndarray  # (N, n_u) indices of u in z
    il: np.ndarray  # (N, n_lam) indices of λ in z
    is_: np.ndarray  # (N, n_lam) indices of s in z
    formulation: str
    infeasible_rows: list[str] = field(default_factory=list)

    @property
    def n_bin(self) -> int:
        return int(self.is_bin.sum())

    @property
    def n_cons(self) -> int:
        return int(self.A_le.shape[0] + self.A_eq.shape[0])

    def size(self) -> dict[str, Any]:
        return {"variables": self.n, "binaries": self.n_bin, "constraints": self.n_cons,
                "quadratic_objective": True, "formulation": self.formulation}


def _drop_constant_rows(A: sp.csr_matrix, b: np.ndarray, labels: np.ndarray,
                        infeasible: list[str], scale: np.ndarray) -> tuple[sp.csr_matrix,
                                                                           np.ndarray]:
    """Remove rows ``0 <= b`` (and rows with b = +inf); record rows ``0 <= b < 0``.

    ``scale`` (per row) sets the rounding tolerance of the constant rows.
    """
    A = sp.csr_matrix(A)
    A.eliminate_zeros()
    empty = np.diff(A.indptr) == 0
    with np.errstate(invalid="ignore"):
        bad = empty & (b < -1e-9 * scale)
    infeasible.extend(str(s) for s in labels[bad])
    keep = ~empty & np.isfinite(b)
    return A[keep], b[keep]


def _complementarity_rows(W: Any, w0: np.ndarray, n: int, il: np.ndarray, is_: np.ndarray,
                          M: float) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows of  -w <= 0,  w - M s <= 0,  λ + M s <= M  with w = W z + w0 (all knots, flat)."""
    m = il.size
    W = sp.csr_matrix(W)
    Is = sp.csr_matrix((np.ones(m), (np.arange(m), is_.ravel())), shape=(m, n))
    Il = sp.csr_matrix((np.ones(m), (np.arange(m), il.ravel())), shape=(m, n))
    A = sp.vstack([-W, W - M * Is, Il + M * Is], format="csr")
    b = np.concatenate([w0, -w0, np.full(m, M)])
    return A, b


def _build_eliminated(d: _Data, cd: _Condensed) -> _Model:
    N, n_x, n_lam = d.N, d.n_x, d.n_lam
    n_v = cd.P.shape[0]
    n = n_v + N * n_lam
    iu, il = cd.iu, cd.il
    is_ = n_v + np.arange(N * n_lam).reshape(N, n_lam)
    lb = np.zeros(n)
    ub = np.ones(n)
    lb[iu], ub[iu] = d.ul, d.uu
    lb[il], ub[il] = 0.0, np.minimum(d.lu, d.M)
    is_bin = np.zeros(n, bool)
    is_bin[is_.ravel()] = True
    P = np.zeros((n, n))
    P[:n_v, :n_v] = cd.P
    q = np.concatenate([cd.q, np.zeros(N * n_lam)])
    W = np.hstack([cd.W.reshape(N * n_lam, n_v), np.zeros((N * n_lam, N * n_lam))])
    A_c, b_c = _complementarity_rows(W, cd.w0.ravel(), n, il, is_, d.M)
    # state bounds x_1..x_N: G z + g within [xl, xu]
    Gx = np.hstack([cd.G[1:].reshape(N * n_x, n_v), np.zeros((N * n_x, N * n_lam))])
    gx = cd.g[1:].ravel()
    labels = np.array([f"x[{k + 1}][{i}]" for k in range(N) for i in range(n_x)])
    infeasible: list[str] = []
    A_xu, b_xu = _drop_constant_rows(sp.csr_matrix(Gx), d.xu.ravel() - gx,
                                     np.char.add(labels, " <= x_upper"), infeasible,
                                     1.0 + np.abs(gx))
    A_xl, b_xl = _drop_constant_rows(sp.csr_matrix(-Gx), gx - d.xl.ravel(),
                                     np.char.add(labels, " >= x_lower"), infeasible,
                                     1.0 + np.abs(gx))
    A_le = sp.vstack([A_c, A_xu, A_xl], format="csr")
    b_le = np.concatenate([b_c, b_xu, b_xl])
    # epigraph form for SCIP: y = [Q_k^{1/2} (x_k - xd_k), R_k^{1/2} u_k]
    Lq = [(_psd_sqrt(d.Qs[k]), k) for k in range(N + 1)]
    Lx = np.vstack([Lk @ cd.G[k] for Lk, k in Lq] or [np.zeros((0, n_v))])
    lx = np.concatenate([Lk @ (cd.g[k] - d.xdes[k]) for Lk, k in Lq] or [np.zeros(0)])
    Lu_blocks = []
    for k in range(N):
        Rh = _psd_sqrt(d.Rs[k])
        blk = np.zeros((Rh.shape[0], n_v))
        blk[:, iu[k]] = Rh
        Lu_blocks.append(blk)
    L = np.vstack([Lx] + Lu_blocks)
    L = np.hstack([L, np.zeros((L.shape[0], N * n_lam))])
    l_vec = np.concatenate([lx, np.zeros(L.shape[0] - lx.size)])
    keep = np.abs(L).max(axis=1, initial=0.0) > 0  # rows of the fixed x_0: a constant
    r_L = float(l_vec[~keep] @ l_vec[~keep])
    return _Model(n=n, lb=lb, ub=ub, is_bin=is_bin, P=P, q=q, r=cd.r, L=L[keep],
                  l=l_vec[keep], r_L=r_L, A_le=A_le, b_le=b_le,
                  A_eq=sp.csr_matrix((0, n)), b_eq=np.zeros(0), iu=iu, il=il, is_=is_,
                  formulation="eliminated", infeasible_rows=infeasible)


def _build_explicit(d: _Data) -> _Model:
    N, n_x, n_u, n_lam = d.N, d.n_x, d.n_u, d.n_lam
    nX, nU, nL = N * n_x, N * n_u, N * n_lam
    n = nX + nU + 2 * nL
    iu = nX + np.arange(nU).reshape(N, n_u)
    il = nX + nU + np.arange(nL).reshape(N, n_lam)
    is_ = nX + nU + nL + np.arange(nL).reshape(N, n_lam)
    lb = np.concatenate([d.xl.ravel(), d.ul.ravel(), np.zeros(nL), np.zeros(nL)])
    ub = np.concatenate([d.xu.ravel(), d.uu.ravel(), np.minimum(d.lu, d.M).ravel(),
                         np.ones(nL)])
    is_bin = np.zeros(n, bool)
    is_bin[is_.ravel()] = True

    def sub_diag(mats: np.ndarray, n_rows: int, n_cols: int) -> sp.csr_matrix:
        """Block (k, k-1) = mats[k] for k = 1..N-1 (N x N blocks)."""
        if N == 1:
            return sp.csr_matrix((N * n_rows, N * n_cols))
        blk = sp.block_diag(list(mats[1:]), format="csr")
        return sp.bmat([[sp.csr_matrix((n_rows, (N - 1) * n_cols)), None],
                        [blk, sp.csr_matrix(((N - 1) * n_rows, n_cols))]], format="csr")

    def bdiag(mats: np.ndarray) -> sp.csr_matrix:
        return sp.block_diag(list(mats), format="csr")

    zeros_s = sp.csr_matrix((nX, nL))
    # dynamics: x_{k+1} - A_k x_k - B_k u_k - D_k λ_k = d_k  (+ A_0 x0 at k = 0)
    A_eq = sp.hstack([sp.identity(nX, format="csr") - sub_diag(d.A, n_x, n_x),
                      -bdiag(d.B), -bdiag(d.D), zeros_s], format="csr")
    b_eq = d.d.copy()
    b_eq[0] += d.A[0] @ d.x0
    # complementarity slack w_k = E_k x_k + F_k λ_k + H_k u_k + c_k  (x_0 constant)
    W = sp.hstack([sub_diag(d.E, n_lam, n_x), bdiag(d.H), bdiag(d.F),
                   sp.csr_matrix((nL, nL))], format="csr")
    w0 = d.c.copy()
    w0[0] += d.E[0] @ d.x0
    A_le, b_le = _complementarity_rows(W, w0.ravel(), n, il, is_, d.M)
    # cost: x-part Q_1..Q_{N-1}, QN; u-part R_k; constant from x_0
    Qx = bdiag(d.Qs[1:])
    Ru = bdiag(d.Rs)
    P = sp.block_diag([Qx, Ru, sp.csr_matrix((2 * nL, 2 * nL))], format="csr")
    xd = d.xdes[1:]
    q = np.concatenate([-2.0 * np.einsum("kij,kj->ki", d.Qs[1:], xd).ravel(),
                        np.zeros(nU + 2 * nL)])
    e0 = d.x0 - d.xdes[0]
    r0 = float(e0 @ d.Qs[0] @ e0)
    r = r0 + float(np.einsum("ki,kij,kj->", xd, d.Qs[1:], xd))
    Lx = [_psd_sqrt(d.Qs[k + 1]) for k in range(N)]
    Lu = [_psd_sqrt(d.Rs[k]) for k in range(N)]
    L = sp.block_diag(Lx + Lu, format="csr")
    L = sp.hstack([L, sp.csr_matrix((L.shape[0], 2 * nL))], format="csr")
    l_vec = np.concatenate([-(Lx[k] @ xd[k]) for k in range(N)]
                           + [np.zeros(Lk.shape[0]) for Lk in Lu])
    return _Model(n=n, lb=lb, ub=ub, is_bin=is_bin, P=P, q=q, r=r, L=L, l=l_vec, r_L=r0,
                  A_le=A_le, b_le=b_le, A_eq=A_eq, b_eq=b_eq.ravel(), iu=iu, il=il,
                  is_=is_, formulation="explicit")


# ====================================================================== solver backends
@dataclass
class _Raw:
    kind: str  # "optimal" | "time_limit" | "limit" | "infeasible" | "failed"
    status: str  # the solver's own status string
    z: np.ndarray | None
    objective: float
    bound: float
    gap: float
    nodes: int
    solve_time: float


class _LicenceRefused(Exception):
    """Gurobi refused to start or to solve the model for licence reasons."""

    def __init__(self, message: str, size_limit: bool):
        super().__init__(message)
        self.size_limit = size_limit


_GRB_ENV: Any = None


def _gurobi_env() -> Any:
    global _GRB_ENV
    if _GRB_ENV is None:
        import gurobipy as gp

        env = gp.Env(empty=True)
        env.setParam("OutputFlag", 0)
        env.start()
        _GRB_ENV = env
    return _GRB_ENV


def _solve_gurobi(mdl: _Model, time_limit: float | None, threads: int | None,
                  mip_gap: float, start_s: np.ndarray | None) -> _Raw:
    import gurobipy as gp
    from gurobipy import GRB

    names = {getattr(GRB.Status, k): k for k in dir(GRB.Status) if k.isupper()}
    m = None
    try:
        env = _gurobi_env()
        m = gp.Model("miqp_mpc", env=env)
        vtype = np.where(mdl.is_bin, GRB.BINARY, GRB.CONTINUOUS)
        z = m.addMVar(mdl.n, lb=mdl.lb, ub=mdl.ub, vtype=vtype, name="z")
        m.setObjective(z @ mdl.P @ z + mdl.q @ z + mdl.r, GRB.MINIMIZE)
        if mdl.A_le.shape[0]:
            m.addConstr(mdl.A_le @ z <= mdl.b_le, name="le")
        if mdl.A_eq.shape[0]:
            m.addConstr(mdl.A_eq @ z == mdl.b_eq, name="eq")
        m.Params.IntFeasTol = 1e-9
        m.Params.MIPGap = mip_gap
        if time_limit is not None:
            m.Params.TimeLimit = time_limit
        if threads is not None:
            m.Params.Threads = threads
        if start_s is not None:
            start = np.full(mdl.n, GRB.UNDEFINED)
            start[mdl.is_.ravel()] = start_s.ravel()
            z.Start = start
        t0 = time.perf_counter()
        m.optimize()
        wall = time.perf_counter() - t0
        st = m.Status
        has_sol = m.SolCount > 0
        zval = np.asarray(z.X, dtype=float) if has_sol else None
        obj = float(m.ObjVal) if has_sol else float("nan")
        try:
            bound = float(m.ObjBound)
            gap = float(m.MIPGap)
        except (gp.GurobiError, AttributeError):
            bound, gap = float("nan"), float("nan")
        if not abs(bound) < GRB.INFINITY:  # no bound yet: unknown, not ±1e100
            bound = float("nan")
        nodes = int(m.NodeCount) if mdl.n_bin else 0
    except gp.GurobiError as e:
        msg = str(e)
        errno = getattr(e, "errno", None)
        size_limit = errno == _GUROBI_SIZE_ERRNO or "size-limited" in msg
        if size_limit or errno in _GUROBI_LICENCE_ERRNOS or "licen" in msg.lower():
            raise _LicenceRefused(msg, size_limit) from e
        return _Raw("failed", f"GurobiError {getattr(e, 'errno', '?')}: {msg}", None,
                    float("nan"), float("nan"), float("nan"), 0, 0.0)
    finally:
        if m is not None:
            m.dispose()
    if st == GRB.OPTIMAL:
        kind = "optimal"
    elif st == GRB.TIME_LIMIT:
        kind = "time_limit"
    elif st in (GRB.INFEASIBLE, GRB.INF_OR_UNBD):
        kind = "infeasible"  # the cost is a sum of PSD forms, bounded below: never unbounded
    elif st in (GRB.NODE_LIMIT, GRB.ITERATION_LIMIT, GRB.SOLUTION_LIMIT,
                GRB.SUBOPTIMAL) and has_sol:
        kind = "limit"
    else:
        kind = "failed"
    return _Raw(kind, names.get(st, str(st)), zval, obj, bound, gap, nodes, wall)


def _scip_add_rows(m: Any, z: Any, A: sp.csr_matrix, rhs: np.ndarray, sense: str,
                   chunk: int = 64) -> None:
    """Add A z (sense) rhs in row chunks, each a dense block over its nonzero columns."""
    A = sp.csr_matrix(A)
    for s0 in range(0, A.shape[0], chunk):
        blk = A[s0:s0 + chunk]
        cols = np.unique(blk.indices)
        if cols.size == 0:
            continue
        expr = blk[:, cols].toarray() @ z[cols]
        b = rhs[s0:s0 + chunk]
        m.addMatrixCons(expr <= b if sense == "<" else expr == b)


def _solve_scip(mdl: _Model, time_limit: float | None, mip_gap: float,
                start_s: np.ndarray | None) -> _Raw:
    import pyscipopt as scip

    m = scip.Model("miqp_mpc")
    m.hideOutput()
    inf = m.infinity()
    lb = np.clip(mdl.lb, -inf, inf)
    ub = np.clip(mdl.ub, -inf, inf)
    vtype = np.where(mdl.is_bin, "B", "C")
    z = m.addMatrixVar((mdl.n,), name="z", vtype=vtype, lb=lb, ub=ub)
    _scip_add_rows(m, z, mdl.A_le, mdl.b_le, "<")
    _scip_add_rows(m, z, mdl.A_eq, mdl.b_eq, "=")
    # epigraph of the cost: y = L z + l, t >= ||y||^2, minimise t (+ constant r_L)
    # Scale the cost to O(100) at the zero plan: SCIP's tolerances are partly absolute and
    # the paper's costs are ~1e6 (finger gaiting), which slows it down several-fold.
    sigma = max(1.0, mdl.r_L + float(mdl.l @ mdl.l)) / 100.0
    L = sp.csr_matrix(mdl.L) / np.sqrt(sigma)
    l_vec = mdl.l / np.sqrt(sigma)
    n_y = L.shape[0]
    y = m.addMatrixVar((n_y,), name="y", vtype="C", lb=-inf, ub=inf)
    chunk = 64
    for s0 in range(0, n_y, chunk):
        blk = L[s0:s0 + chunk]
        cols = np.unique(blk.indices)
        expr = blk[:, cols].toarray() @ z[cols] - y[s0:s0 + chunk]
        m.addMatrixCons(expr == -l_vec[s0:s0 + chunk])
    t = m.addVar(name="t", lb=0.0, ub=None)
    m.addCons(y @ y <= t)
    m.setObjective(t, "minimize")
    m.setParam("limits/gap", mip_gap)
    for key, val in _SCIP_PARAMS.items():
        m.setParam(key, val)
    if time_limit is not None:
        m.setParam("limits/time", time_limit)
    if start_s is not None:
        sol = m.createPartialSol()
        for var, val in zip(z[mdl.is_.ravel()], start_s.ravel()):
            m.setSolVal(sol, var, float(val))
        m.addSol(sol)
    t0 = time.perf_counter()
    try:
        m.optimize()
    except Exception as e:  # noqa: BLE001 - any SCIP failure is a FAILED result
        return _Raw("failed", f"SCIP error: {e}", None, float("nan"), float("nan"),
                    float("nan"), 0, time.perf_counter() - t0)
    wall = time.perf_counter() - t0
    st = m.getStatus()
    has_sol = m.getNSols() > 0
    zval = np.asarray(m.getVal(z), dtype=float).ravel() if has_sol else None
    obj = sigma * float(m.getObjVal()) + mdl.r_L if has_sol else float("nan")
    try:
        dual = float(m.getDualbound())
        # no dual bound yet is SCIP's infinity (1e20): report it as unknown, not as a number
        bound = float("nan") if m.isInfinity(abs(dual)) else sigma * dual + mdl.r_L
        gap = float(m.getGap())
    except Exception:  # noqa: BLE001
        bound, gap = float("nan"), float("nan")
    nodes = int(m.getNTotalNodes())
    if st in ("optimal", "gaplimit"):
        kind = "optimal"
    elif st == "timelimit":
        kind = "time_limit"
    elif st in ("infeasible", "inforunbd"):
        kind = "infeasible"
    elif st in ("nodelimit", "totalnodelimit", "stallnodelimit", "sollimit",
                "bestsollimit", "memlimit") and has_sol:
        kind = "limit"
    else:
        kind = "failed"
    m.freeProb()
    return _Raw(kind, st, zval, obj, bound, gap, nodes, wall)


# ====================================================================== polishing
def _eq_qp(P2: np.ndarray, q: np.ndarray, C: np.ndarray, b: np.ndarray,
           v_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """min ½ vᵀ P2 v + qᵀ v  s.t.  C v = b  (P2 PSD), by the null-space method.

    Rank-deficient C (dependent active rows) is handled by an SVD. Where the cost is flat
    (P2 singular on the null space of C: e.g. λ that no state sees) the minimiser closest to
    ``v_ref`` is returned. Returns ``(v, mu)`` with the minimum-norm multipliers
    (P2 v + q + Cᵀ mu = 0), or None when C v = b is inconsistent.
    """
    n = P2.shape[0]
    if C.shape[0] == 0:
        C = np.zeros((0, n))
    rn = np.linalg.norm(C, axis=1)
    rn[rn == 0] = 1.0
    Cn, bn = C / rn[:, None], b / rn
    if C.shape[0]:
        U, S, Vt = np.linalg.svd(Cn, full_matrices=True)
        r = int(np.sum(S > 1e-10 * max(1.0, S[0])))
    else:
        U, S, Vt, r = np.zeros((0, 0)), np.zeros(0), np.eye(n), 0
    Ur, Sr, Vr = U[:, :r], S[:r], Vt[:r].T
    vp = Vr @ ((Ur.T @ bn) / Sr)
    if np.abs(Cn @ vp - bn).max(initial=0.0) > 1e-9 * (1.0 + np.abs(bn).max(initial=0.0)):
        return None
    Z = Vt[r:].T
    v = vp
    if Z.shape[1]:
        Hz = Z.T @ P2 @ Z
        gz = Z.T @ (P2 @ vp + q)
        ew, EV = np.linalg.eigh(0.5 * (Hz + Hz.T))
        pos = ew > 1e-10 * max(1.0, float(ew.max(initial=0.0)))
        Vp, Vn = EV[:, pos], EV[:, ~pos]
        y = Vp @ ((Vp.T @ -gz) / ew[pos]) + Vn @ (Vn.T @ (Z.T @ (v_ref - vp)))
        v = vp + Z @ y
    grad = P2 @ v + q  # = -Cnᵀ mu_n
    mu_n = -Ur @ ((Vr.T @ grad) / Sr)
    return v, mu_n / rn


def _polish(d: _Data, cd: _Condensed, v_raw: np.ndarray,
            s: np.ndarray) -> tuple[np.ndarray | None, str]:
    """Exact optimum of the convex QP of mode sequence ``s`` near ``v_raw``.

    The equalities are λ_i = 0 (s_i = 1) or w_i = 0 (s_i = 0); the inequalities the other
    sides of eq. (15)'s big-M rows and the box bounds. Starting from the constraints active at
    the solver's plan, the active set is refined (add violated rows, drop rows with
    wrong-signed multipliers) until a KKT point is reached. When that fails (e.g. an incumbent
    far from its mode's optimum after a time limit) the mode QP is solved by Clarabel (interior
    point) and refined from there. Returns ``(v, method)``; ``v`` is None when all fail.
    """
    N, n_u, n_lam = d.N, d.n_u, d.n_lam
    n_v = v_raw.size
    M = d.M
    on = s.ravel() > 0.5  # s = 1: λ = 0, 0 <= w <= M;  s = 0: w = 0, 0 <= λ <= min(M, lu)
    Wf = cd.W.reshape(N * n_lam, n_v)
    w0 = cd.w0.ravel()
    Il = np.zeros((N * n_lam, n_v))
    Il[np.arange(N * n_lam), cd.il.ravel()] = 1.0
    C_eq = np.vstack([Il[on], Wf[~on]])
    d_eq = np.concatenate([np.zeros(on.sum()), -w0[~on]])
    Iu = np.zeros((N * n_u, n_v))
    Iu[np.arange(N * n_u), cd.iu.ravel()] = 1.0
    n_x = d.n_x
    Gx = cd.G[1:].reshape(N * n_x, n_v)
    gx = cd.g[1:].ravel()
    lam_hi = np.minimum(d.lu.ravel(), M)
    blocks = [(-Wf[on], w0[on]), (Wf[on], M - w0[on]),
              (-Il[~on], np.zeros((~on).sum())), (Il[~on], lam_hi[~on]),
              (Iu, d.uu.ravel()), (-Iu, -d.ul.ravel()),
              (Gx, d.xu.ravel() - gx), (-Gx, gx - d.xl.ravel())]
    C_in = np.vstack([a for a, _ in blocks])
    d_in = np.concatenate([b for _, b in blocks])
    fin = np.isfinite(d_in) & (np.abs(C_in).max(axis=1, initial=0.0) > 0)
    C_in, d_in = C_in[fin], d_in[fin]
    pscale = max(1.0, float(np.abs(cd.P).max(initial=0.0)))
    P2 = 2.0 * cd.P / pscale
    qs = cd.q / pscale
    n_eq = C_eq.shape[0]
    lam_idx = cd.il.ravel()

    def scale(v: np.ndarray, C: np.ndarray, b: np.ndarray) -> np.ndarray:
        return 1.0 + np.abs(b) + np.abs(C * v).max(axis=1, initial=0.0)

    def feasible(v: np.ndarray, rel: float) -> bool:
        eq_tol = rel * (1.0 + np.abs(d_eq) + np.abs(C_eq * v).max(axis=1, initial=0.0))
        return bool(np.all(np.abs(C_eq @ v - d_eq) <= eq_tol)
                    and np.all(C_in @ v - d_in <= rel * scale(v, C_in, d_in)))

    def clean(v: np.ndarray) -> np.ndarray:
        v = v.copy()
        v[lam_idx[on]] = 0.0  # exact zeros of the equality λ = 0
        v[lam_idx] = np.maximum(v[lam_idx], 0.0)
        return v

    def refine(v_start: np.ndarray, max_iter: int) -> np.ndarray | None:
        active = d_in - C_in @ v_start <= 1e-6 * scale(v_start, C_in, d_in)
        seen: set[bytes] = set()
        batch = True  # add/drop every offending row at once; one at a time after a cycle
        restarted = False
        for _ in range(max_iter):
            key = np.packbits(active).tobytes()
            if key in seen:
                if not batch:
                    return None
                batch, seen = False, set()
            seen.add(key)
            out = _eq_qp(P2, qs, np.vstack([C_eq, C_in[active]]),
                         np.concatenate([d_eq, d_in[active]]), v_start)
            if out is None:  # inconsistent active rows: restart from the equalities, once
                if restarted or not active.any():
                    return None
                restarted = True
                active[:] = False
                continue
            v, mu = out
            viol = C_in @ v - d_in
            tol = 1e-9 * scale(v, C_in, d_in)
            violated = (viol > tol) & ~active
            if violated.any():
                if batch:
                    active |= violated
                else:
                    active[np.argmax(np.where(violated, viol / tol, -np.inf))] = True
                continue
            mu_in = mu[n_eq:]
            neg = mu_in < -1e-9 * max(1.0, np.abs(mu).max(initial=0.0))
            if neg.any():
                act_idx = np.flatnonzero(active)
                active[act_idx[neg] if batch else act_idx[np.argmin(mu_in)]] = False
                continue
            # a KKT point of the convex mode QP: its global optimum
            return clean(v) if feasible(v, 1e-9) else None
        return None

    v = refine(v_raw, 12)
    if v is not None:
        return v, "active-set"
    v_ip = _clarabel_qp(P2, qs, C_eq, d_eq, C_in, d_in)
    if v_ip is None:
        return None, "failed"
    v = refine(v_ip, 40)
    if v is not None:
        return v, "clarabel+active-set"
    if feasible(v_ip, 1e-8):
        return clean(v_ip), "clarabel"
    return None, "failed"


def _clarabel_qp(P2: np.ndarray, q: np.ndarray, C_eq: np.ndarray, d_eq: np.ndarray,
                 C_in: np.ndarray, d_in: np.ndarray) -> np.ndarray | None:
    """min ½ vᵀ P2 v + qᵀ v  s.t.  C_eq v = d_eq, C_in v <= d_in by Clarabel; None on failure."""
    try:
        import clarabel
    except ImportError:
        return None
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = 1e-10
    settings.tol_feas = 1e-10
    A = sp.csc_matrix(np.vstack([C_eq, C_in]))
    b = np.concatenate([d_eq, d_in])
    cones = [clarabel.ZeroConeT(C_eq.shape[0]), clarabel.NonnegativeConeT(C_in.shape[0])]
    try:
        sol = clarabel.DefaultSolver(sp.csc_matrix(np.triu(P2)), q, A, b, cones,
                                     settings).solve()
    except Exception:  # noqa: BLE001 - any Clarabel failure: no polish
        return None
    if sol.status not in (clarabel.SolverStatus.Solved, clarabel.SolverStatus.AlmostSolved):
        return None
    v = np.asarray(sol.x, dtype=float)
    return v if np.all(np.isfinite(v)) else None


# ====================================================================== results
def _nan_result(d: _Data, status: C3Status, solver: str, t_start: float,
                timings: dict[str, float], message: str, extras: dict[str, Any],
                nodes: int = 0) -> C3Result:
    return C3Result(status=status, x=np.full((d.N + 1, d.n_x), np.nan),
                    u=np.full((d.N, d.n_u), np.nan), lam=np.full((d.N, d.n_lam), np.nan),
                    delta=None, w=None, iterations=nodes,
                    solve_time=time.perf_counter() - t_start, timings=timings,
                    complementarity_violation=float("nan"), cost=float("nan"),
                    solver=solver, fallback=False, message=message, extras=extras)


def _rollout(d: _Data, u: np.ndarray, lam: np.ndarray) -> np.ndarray:
    x = np.empty((d.N + 1, d.n_x))
    x[0] = d.x0
    for k in range(d.N):
        x[k + 1] = d.A[k] @ x[k] + d.B[k] @ u[k] + d.D[k] @ lam[k] + d.d[k]
    return x


def _plan_cost(d: _Data, x: np.ndarray, u: np.ndarray) -> float:
    e = x - d.xdes
    return float(np.einsum("ki,kij,kj->", e, d.Qs, e) + np.einsum("ki,kij,kj->", u, d.Rs, u))


def _resimulate(lcs: LCS, d: _Data, u: np.ndarray) -> tuple[np.ndarray | None, float]:
    """The plan's inputs through the LCS (each λ_k from the contact LCP): states, cost.

    For an exactly complementary plan whose LCPs have unique solutions (F a P-matrix) this
    reproduces the plan; (None, nan) when an LCP is not solved.
    """
    try:
        x = lcs.rollout(d.x0, u).x
    except LCPSolveError:
        return None, float("nan")
    return x, _plan_cost(d, x, u)


def _slack(d: _Data, x: np.ndarray, u: np.ndarray, lam: np.ndarray) -> np.ndarray:
    return (np.einsum("kij,kj->ki", d.E, x[:-1]) + np.einsum("kij,kj->ki", d.F, lam)
            + np.einsum("kij,kj->ki", d.H, u) + d.c)


def _simulated_modes(d: _Data, us: np.ndarray) -> np.ndarray | None:
    """Modes (N, n_lam) of the inputs ``us`` simulated through the LCS from x0 (each λ_k the
    LCP solution; s = 1 where λ is the zero side); None when an LCP is not solved."""
    x = d.x0.copy()
    s = np.empty((d.N, d.n_lam))
    for k in range(d.N):
        q = d.E[k] @ x + d.H[k] @ us[k] + d.c[k]
        sol = solve_lcp(d.F[k], q)
        if not sol.found:
            return None
        lam = np.asarray(sol.z, dtype=float)
        s[k] = lam <= q + d.F[k] @ lam
        x = d.A[k] @ x + d.B[k] @ us[k] + d.D[k] @ lam + d.d[k]
    return s


def _warm_start_modes(d: _Data, ws: Any, shift: int = 1) -> np.ndarray | None:
    """Binary start (N, n_lam) from a plan shifted by ``shift`` knots; None if unusable.

    The modes are those of the plan's inputs simulated through this LCS from x0, so the start
    completes to a feasible plan at least as good as those inputs on the model (a C3 plan's own
    λ need not be complementary, and its modes then describe no trajectory); the plan's own λ
    and states give them when that simulation fails.
    """
    if ws is None:
        return None
    if not isinstance(ws, C3Result):
        raise C3TypeError(f"warm_start must be a C3Result (a previous plan) or None, got "
                          f"{type(ws).__name__}")
    u, lam, x = (np.asarray(a, dtype=float) for a in (ws.u, ws.lam, ws.x))
    if (u.ndim != 2 or u.shape[1] != d.n_u or lam.ndim != 2 or lam.shape[1] != d.n_lam
            or x.ndim != 2 or x.shape[1] != d.n_x):
        raise C3ValueError(f"warm_start has plan shapes u{u.shape}, lam{lam.shape}, x{x.shape}; "
                           f"expected (T, {d.n_u}), (T, {d.n_lam}), (T+1, {d.n_x})")
    if u.shape[0] < 1 or not (np.all(np.isfinite(u)) and np.all(np.isfinite(lam))
                              and np.all(np.isfinite(x))):
        return None

    def shifted(a: np.ndarray, n: int) -> np.ndarray:
        a = a[shift:] if a.shape[0] > shift else a[-1:]
        if a.shape[0] >= n:
            return a[:n]
        return np.concatenate([a, np.repeat(a[-1:], n - a.shape[0], axis=0)])

    us = shifted(u, d.N)
    simulated = _simulated_modes(d, us)
    if simulated is not None:
        return simulated
    lams = shifted(lam, d.N) / d.lambda_scale
    xs = shifted(x[:-1], d.N)
    w = _slack(d, np.vstack([xs, xs[-1:]]), us, lams)
    return (lams <= w).astype(float)  # s = 1 where λ is the zero side


# ====================================================================== public API
def solve_miqp_mpc(lcs: LCS, Q: Any, R: Any, N: int = 10, x0: Any = None, QN: Any = None, *,
                   x_des: Any = None, M: float = 1000.0, time_limit: float | None = None,
                   solver: str = "auto", eliminate_states: bool = True,
                   x_lower: Any = None, x_upper: Any = None, u_lower: Any = None,
                   u_upper: Any = None, lam_upper: Any = None, threads: int | None = None,
                   mip_gap: float | None = None, warm_start: C3Result | None = None,
                   warm_start_shift: int = 1) -> C3Result:
    r"""Solve the big-M MIQP MPC of seed 003 eq. (15) to global optimality.

    Args:
        lcs: the :class:`lcs.LCS` (time-invariant, or time-varying with at least N knots).
        Q: (n_x, n_x) symmetric PSD state cost, or N per-knot matrices for knots 0..N-1.
        R: (n_u, n_u) symmetric positive-definite input cost, or N per-knot matrices.
        N: horizon (knots), >= 1.
        x0: (n_x,) initial state (required).
        QN: (n_x, n_x) PSD terminal cost; default Q (the last per-knot Q).
        x_des: (n_x,) or (N+1, n_x) desired states for knots 0..N; default zeros.
        M: big-M constant (> 0) bounding λ and the slack ``E x + F λ + H u + c`` (LCS units).
        time_limit: solver time limit in [s] (None: no limit).
        solver: "auto" (Gurobi, falling back to SCIP when gurobipy is missing or its licence
            refuses the model), "gurobi" or "scip".
        eliminate_states: condense the dynamics so only u, λ, s are variables (fits the pip
            Gurobi licence at larger N); False keeps x_1..x_N as variables.
        x_lower, x_upper: bounds on x_1..x_N, shape (n_x,) or (N, n_x) (±inf: free).
        u_lower, u_upper: input bounds, (n_u,) or (N, n_u).
        lam_upper: upper bound on λ in physical units: scalar, (n_lam,) or (N, n_lam).
        threads: Gurobi thread count (SCIP is single-threaded).
        mip_gap: relative optimality gap (default 1e-6, both solvers).
        warm_start: a :class:`C3Result` (a previous MIQP plan, or C3's plan); its plan shifted
            by ``warm_start_shift`` knots gives the mode sequence used as a (partial) MIP
            start.
        warm_start_shift: 1 (default) for the previous step's plan, 0 for a plan that starts
            at this ``x0`` (e.g. C3 solved from the same state).

    Returns:
        :class:`C3Result` with ``solver`` "gurobi" or "scip". ``status`` is SOLVED (optimal),
        TIME_LIMIT (time limit hit: best incumbent), MAX_ITERATIONS (node/solution limit with an
        incumbent), INFEASIBLE (proved infeasible) or FAILED (no plan: NaN arrays; a time limit
        before any incumbent is FAILED with ``extras["solver_status"]`` saying so, because a
        TIME_LIMIT result is ``ok``). ``x`` (N+1, n_x) is the LCS rollout of the returned
        ``u`` and λ, ``lam`` is in physical units, ``cost`` is eq. (15)'s objective of the
        returned plan (including the constant knot-0 term), ``iterations`` the B&B node count,
        ``timings`` has "build", "solve" and "polish". ``extras``: "optimality_gap"
        ((cost − objective_bound) / cost of the returned plan, ≥ 0: 0 means certified
        optimal; NaN without a bound), "mip_gap",
        "solver_status", "objective_bound", "solver_objective", "model_size", "polished",
        "big_m_active", "warm_start_used" and, after a fallback, "fallback_reason".

    Raises:
        C3ValueError: an argument has the wrong shape or value (the message names it).
        C3TypeError: ``lcs`` is not an LCS or ``warm_start`` not a C3Result.
        GurobiLicenseError: ``solver="gurobi"`` and the licence refuses the model.
        SolverUnavailableError: the requested solver (or, for "auto", both) is not installed.
    """
    t_start = time.perf_counter()
    d = _validate(lcs, Q, R, N, x0, QN, x_des, M, x_lower, x_upper, u_lower, u_upper,
                  lam_upper)
    if not isinstance(solver, str) or solver not in _SOLVERS:
        raise C3ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}")
    if time_limit is not None:
        try:
            tl_ok = float(time_limit) > 0 and np.isfinite(float(time_limit))
        except (TypeError, ValueError):
            tl_ok = False
        if not tl_ok:
            raise C3ValueError(f"time_limit must be a positive number of seconds or None, got "
                               f"{time_limit!r}")
        time_limit = float(time_limit)
    if not isinstance(eliminate_states, (bool, np.bool_)):
        raise C3ValueError(f"eliminate_states must be True or False, got {eliminate_states!r}")
    if threads is not None and (isinstance(threads, bool)
                                or not isinstance(threads, (int, np.integer)) or threads < 1):
        raise C3ValueError(f"threads must be an integer >= 1 or None, got {threads!r}")
    if mip_gap is None:
        mip_gap = _DEFAULT_MIP_GAP
    else:
        try:
            mip_gap = float(mip_gap)
        except (TypeError, ValueError):
            raise C3ValueError(f"mip_gap must be a number >= 0, got {mip_gap!r}") from None
        if not (np.isfinite(mip_gap) and mip_gap >= 0):
            raise C3ValueError(f"mip_gap must be a finite number >= 0, got {mip_gap!r}")
    if isinstance(warm_start_shift, bool) or warm_start_shift not in (0, 1):
        raise C3ValueError(f"warm_start_shift must be 0 or 1, got {warm_start_shift!r}")
    start_s = _warm_start_modes(d, warm_start, int(warm_start_shift))

    # -------------------------------------------------------------- which backends exist
    have_grb = have_scip = True
    try:
        import gurobipy  # noqa: F401
    except ImportError:
        have_grb = False
    try:
        import pyscipopt  # noqa: F401
    except ImportError:
        have_scip = False
    if solver == "gurobi" and not have_grb:
        raise SolverUnavailableError("solver='gurobi' needs gurobipy: pip install gurobipy "
                                     "(or use solver='scip')")
    if solver == "scip" and not have_scip:
        raise SolverUnavailableError("solver='scip' needs pyscipopt: pip install pyscipopt "
                                     "(or pip install 'c3mpc[miqp]')")
    if solver == "auto" and not (have_grb or have_scip):
        raise SolverUnavailableError("solve_miqp_mpc needs gurobipy or pyscipopt: pip install "
                                     "gurobipy, or pip install pyscipopt")

    # -------------------------------------------------------------- build
    with blas_threads(1):  # small dense algebra: threads only add overhead (c3mpc._blas)
        cd = _condense(d)
        mdl = _build_eliminated(d, cd) if eliminate_states else _build_explicit(d)
    timings = {"build": time.perf_counter() - t_start}
    extras: dict[str, Any] = {"model_size": mdl.size(), "warm_start_used": start_s is not None}
    order = {"auto": (["gurobi"] if have_grb else []) + (["scip"] if have_scip else []),
             "gurobi": ["gurobi"], "scip": ["scip"]}[solver]
    if not have_grb and solver == "auto":
        extras["fallback_reason"] = "gurobipy is not installed"
    if mdl.infeasible_rows:
        timings["solve"] = 0.0
        extras.update(solver_status="INFEASIBLE (found while building the model)",
                      mip_gap=float("nan"))
        return _nan_result(d, C3Status.INFEASIBLE, order[0], t_start, timings,
                           "infeasible: bound(s) on states that no input or contact force can "
                           "change are violated: " + ", ".join(mdl.infeasible_rows[:5]),
                           extras)

    # -------------------------------------------------------------- solve
    raw = None
    used = order[0]
    for name in order:
        used = name
        t0 = time.perf_counter()
        if name == "gurobi":
            try:
                raw = _solve_gurobi(mdl, time_limit, threads, mip_gap, start_s)
            except _LicenceRefused as e:
                timings["gurobi_attempt"] = time.perf_counter() - t0
                size = mdl.size()
                per_knot = mdl.n // d.N
                n_max = _PIP_LICENCE_QUAD_VARS // per_knot
                if e.size_limit:
                    msg = (f"Gurobi refused the model ({e}). The pip licence is size-limited: "
                           f"at most {_PIP_LICENCE_QUAD_VARS} variables once the objective is "
                           f"quadratic (2000 variables/constraints otherwise); this "
                           f"{mdl.formulation} model has {size['variables']} variables "
                           f"({size['binaries']} binary, {per_knot} per knot) and "
                           f"{size['constraints']} constraints at N={d.N}, so at most "
                           f"N={n_max} fits. Use solver='scip', a shorter horizon"
                           + ("" if eliminate_states else ", or eliminate_states=True") + ".")
                else:
                    msg = (f"Gurobi has no usable licence ({e}); use solver='scip' or install "
                           f"a Gurobi licence (model: {size['variables']} variables, "
                           f"{size['constraints']} constraints).")
                if solver == "gurobi":
                    raise GurobiLicenseError(msg, model_size=size) from None
                extras["fallback_reason"] = msg
                continue
        else:
            tl = time_limit
            if tl is not None and "gurobi_attempt" in timings:
                tl = max(1e-3, tl - timings["gurobi_attempt"])
            raw = _solve_scip(mdl, tl, mip_gap, start_s)
        timings["solve"] = time.perf_counter() - t0
        break
    if raw is None:  # only reachable when "auto" had Gurobi refuse and no SCIP
        raise SolverUnavailableError(extras.get("fallback_reason", "no MIQP solver available")
                                     + " (pyscipopt is not installed for the fallback)")

    extras.update(solver_status=raw.status, mip_gap=raw.gap, objective_bound=raw.bound,
                  solver_objective=raw.objective, solver_time=raw.solve_time)
    if raw.kind == "infeasible":
        return _nan_result(d, C3Status.INFEASIBLE, used, t_start, timings,
                           f"{used}: the MIQP is infeasible ({raw.status})", extras, raw.nodes)
    if raw.z is None or raw.kind == "failed":
        msg = (f"{used}: time limit {time_limit} s reached before any feasible plan was found"
               if raw.kind == "time_limit" else f"{used}: solver failed ({raw.status})")
        return _nan_result(d, C3Status.FAILED, used, t_start, timings, msg, extras, raw.nodes)

    # -------------------------------------------------------------- plan (polished)
    t0 = time.perf_counter()
    z = raw.z
    s = (z[mdl.is_] > 0.5).astype(float)
    v_raw = np.concatenate([z[mdl.iu].ravel(), z[mdl.il].ravel()])
    with blas_threads(1):
        v, method = _polish(d, cd, v_raw, s)
    extras["polished"] = v is not None
    extras["polish_method"] = method
    if v is None:
        v = v_raw
    u = v[cd.iu]
    lam = v[cd.il]
    x = _rollout(d, u, lam)
    timings["polish"] = time.perf_counter() - t0
    w = _slack(d, x, u, lam)
    comp = float(np.abs(np.minimum(lam, w)).max(initial=0.0))
    extras["big_m_active"] = bool(np.any(lam >= d.M * (1 - 1e-6))
                                  or np.any(w >= d.M * (1 - 1e-6)))
    status = {"optimal": C3Status.SOLVED, "time_limit": C3Status.TIME_LIMIT,
              "limit": C3Status.MAX_ITERATIONS}[raw.kind]
    message = {"optimal": "optimal",
               "time_limit": f"time limit {time_limit} s: best incumbent (gap {raw.gap:.3g})",
               "limit": f"{raw.status}: best incumbent (gap {raw.gap:.3g})"}[raw.kind]
    x_sim, cost_sim = _resimulate(lcs, d, u)
    cost = _plan_cost(d, x, u)
    # the returned plan's certified gap to the solver's lower bound (the solvers' own gaps are
    # of their incumbents, SCIP's of its scaled epigraph objective without the constant)
    extras["optimality_gap"] = (max(0.0, (cost - raw.bound) / max(abs(cost), 1e-12))
                                if np.isfinite(raw.bound) else float("nan"))
    return C3Result(status=status, x=x, u=u, lam=lam * d.lambda_scale, delta=None, w=None,
                    iterations=raw.nodes, solve_time=time.perf_counter() - t_start,
                    timings=timings, complementarity_violation=comp,
                    cost=cost, resimulated_cost=cost_sim,
                    resimulated_x=x_sim, solver=used, fallback=False, message=message,
                    extras=extras)
