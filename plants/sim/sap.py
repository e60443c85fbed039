"""SAP: the Semi-Analytic Primal solver of seed 001 ("An Unconstrained Convex Formulation of
Compliant Contact", Castro, Permenter, Han). Math and equation numbers in ``docs/sap.md``.

The contact step is the unconstrained, strongly convex problem (seed 001 eq. 24)

    min_v ℓ_p(v) = ½‖v − v*‖²_A + ½‖P_F(y(v))‖²_R,   y(v) = −R⁻¹(J v − v̂_c),

solved by Newton's method with an exact (rtsafe) or backtracking (Armijo) line search. The
impulses are the R-norm projection γ = P_F(y) (eq. 23), computed in closed form per contact
(App. C), vectorized over all contacts. The Newton matrix H = A + Jᵀ G J (App. D) is factored
by a dense Cholesky per *island* (connected group of trees coupled by contacts): ``A`` is block
diagonal over trees, so trees that share no contact give independent blocks of H.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError

from ._blas import blas_threads
from ._linalg import cholesky, cholesky_solve
from ._sap_kernels import (
    HAVE_NUMBA,
    delassus_blocks,
    line_search_terms,
    newton_solve,
    project_into,
    regularization,
)
from .contact_problem import (
    ContactProblem,
    ContactSolver,
    ContactSolverResult,
    ContactSolverStatus,
    SolverPresets,
    expand_impulses,
    inert_contacts,
    register_contact_solver,
    resolve_options,
    unilateral_form,
    without_contacts,
)

__all__ = [
    "SAPOptions",
    "SAPSolver",
    "SAPParameters",
    "sap_parameters",
    "project_cone_r",
    "project_cone_r_with_hessian",
]


@dataclass(frozen=True)
class SAPOptions(SolverPresets):
    """Options of :class:`SAPSolver` (defaults: seed 001 §V and §IV; Drake where the paper is silent).

    Presets (``SAPOptions.preset(name)``, or ``solver_options="realtime"`` in the simulator):
    ``"default"`` and ``"realtime"`` (:meth:`realtime`).

    Attributes:
        beta: near-rigid parameter β of eq. (29); the paper uses 1.0 everywhere.
        sigma: friction regularization σ of eq. (30); the paper uses 1e-3 everywhere.
        rel_tol: ε_r of the stopping criterion eq. (26) (paper: 1e-3 .. 1e-5; Drake 1e-6).
        abs_tol: ε_a of eq. (26) in [√J]; the paper uses 1e-16 (only catches "no contact, no motion").
        max_iterations: Newton iteration budget (Drake: 100).
        line_search: "exact" (rtsafe on dℓ/dα, preferred by the paper) or "armijo".
        alpha_max: largest step of the line search (Drake exact: 1.5; paper Armijo: 1.25).
        armijo_rho: backtracking factor ρ (paper 0.8).
        armijo_c: sufficient-decrease constant c (paper 1e-4).
        ls_max_iterations: line-search iteration budget per Newton step (Drake 40 for Armijo).
        ls_rel_tol: exact search stops when |ℓ'(α)| ≤ ls_rel_tol·|ℓ'(0)| (Drake 1e-8).
        sparse_threshold: above this n_v, J is used as a sparse matrix and Jᵀ G J is assembled
            from per-contact tree blocks; below it, dense products are faster.
        blas_threads: BLAS threads during the solve (1: small matrices; None: leave as is).
        islands: factor H per island (connected trees); False: one dense Cholesky of all of H.
        sparse_factor_above: the compiled path factors an island of more dofs than this (and of
            three trees or more) block-sparsely, trees as supernodes in a minimum-degree order
            (seed 001 §IV-D; :mod:`plants.sim._sap_sparse`), so a pile's cost follows its contact
            graph instead of m³/3; smaller islands take a dense Cholesky. A huge value: dense only.
        compiled: run the whole Newton solve as one compiled call (numba,
            :func:`~plants.sim._sap_kernels.newton_solve`: the same algorithm, J used through its
            tree blocks, H factored per island) when numba is present; False: the readable numpy
            reference (``sparse_threshold`` applies to it alone). Both give the same solution to
            round-off (tests/test_sap_compiled.py).
    """

    beta: float = 1.0
    sigma: float = 1e-3
    rel_tol: float = 1e-6
    abs_tol: float = 1e-16
    max_iterations: int = 100
    line_search: str = "exact"
    alpha_max: float = 1.5
    armijo_rho: float = 0.8
    armijo_c: float = 1e-4
    ls_max_iterations: int = 40
    ls_rel_tol: float = 1e-8
    sparse_threshold: int = 48
    blas_threads: int | None = 1
    islands: bool = True
    sparse_factor_above: int = 24
    compiled: bool = True

    def __post_init__(self) -> None:
        for name in ("beta", "sigma", "rel_tol", "alpha_max", "ls_rel_tol"):
            val = getattr(self, name)
            if not (np.isfinite(val) and val > 0):
                raise ValueError(f"{name} must be finite and > 0, got {val}")
        if not (self.abs_tol >= 0):
            raise ValueError(f"abs_tol must be >= 0, got {self.abs_tol}")
        if self.line_search not in ("exact", "armijo"):
            raise ValueError(f"line_search must be 'exact' or 'armijo', got {self.line_search!r}")
        if not (0 < self.armijo_rho < 1) or not (0 < self.armijo_c < 1):
            raise ValueError("armijo_rho and armijo_c must lie in (0, 1)")
        if isinstance(self.sparse_factor_above, (bool, np.bool_)) or not isinstance(self.sparse_factor_above, (int, np.integer)) \
                or self.sparse_factor_above < 0:
            raise ValueError(f"sparse_factor_above must be an int >= 0 [dofs], got {self.sparse_factor_above!r}")
        if int(self.max_iterations) < 1 or int(self.ls_max_iterations) < 1:
            raise ValueError("max_iterations and ls_max_iterations must be >= 1")

    @classmethod
    def realtime(cls, **overrides) -> "SAPOptions":
        """A bounded Newton budget: at most 10 iterations to ε_r = 1e-4 (the paper's stopping
        tolerances span 1e-3 .. 1e-5, §V; its scenes take 3-10 iterations per step). A step that
        uses all 10 returns its last iterate (the cost ℓ_p decreases monotonically) with status
        MAX_ITERATIONS."""
        return cls(**{"max_iterations": 10, "rel_tol": 1e-4, **overrides})


@dataclass(frozen=True)
class SAPParameters:
    """Per-contact regularization of seed 001 §V (arrays of shape (n_c,) unless noted).

    Attributes:
        R: (n_c, 3) diagonal of R_i = diag(R_t, R_t, R_n).
        v_hat: (n_c, 3) stabilization velocity v̂_c = (0, 0, −φ_0/(δt + τ_d)).
        mu_tilde2: μ̃² = μ² R_t/R_n.
        mu_hat: μ̂ = μ R_t/R_n.
        w: Delassus scale w_i = ‖W_ii‖_F / 3.
    """

    R: np.ndarray
    v_hat: np.ndarray
    mu_tilde2: np.ndarray
    mu_hat: np.ndarray
    w: np.ndarray


def sap_parameters(problem: ContactProblem, beta: float = 1.0, sigma: float = 1e-3) -> SAPParameters:
    """Regularization R and stabilization v̂ of seed 001 eqs. (29)-(30).

    R_t = σ w_i,  R_n = max(β²/(4π²) w_i, 1/(δt k (δt + τ_d))),  v̂_n = −φ_0/(δt + τ_d),
    with w_i = ‖W_ii‖_F/3 and W_ii the diagonal 3×3 block of J A⁻¹ Jᵀ (exact per-tree sum).
    """
    W = _delassus_diagonal(problem)
    if HAVE_NUMBA:
        R, v_hat, mu_tilde2, mu_hat, w = regularization(W, float(problem.dt), problem.stiffness, problem.dissipation,
                                                        problem.phi0, problem.mu, float(beta), float(sigma))
        return SAPParameters(R=R, v_hat=v_hat, mu_tilde2=mu_tilde2, mu_hat=mu_hat, w=w)
    return _sap_parameters_numpy(problem, W, beta, sigma)


def _sap_parameters_numpy(problem: ContactProblem, W: np.ndarray, beta: float, sigma: float) -> SAPParameters:
    """Pure-numpy reference of :func:`sap_parameters` from the Delassus blocks ``W``."""
    n_c = problem.n_c
    w = np.sqrt(np.einsum("cij,cij->c", W, W)) / 3.0
    dt = problem.dt
    k = problem.stiffness
    tau = problem.dissipation
    with np.errstate(divide="ignore"):
        r_phys = 1.0 / (dt * k * (dt + tau))  # 0 for k = inf
    R_n = np.maximum(beta**2 / (4.0 * np.pi**2) * w, r_phys)
    R_t = sigma * w
    R = np.stack([R_t, R_t, R_n], axis=1)
    v_hat = np.zeros((n_c, 3))
    v_hat[:, 2] = -problem.phi0 / (dt + tau)
    ratio = R_t / R_n
    mu = problem.mu
    return SAPParameters(R=R, v_hat=v_hat, mu_tilde2=mu**2 * ratio, mu_hat=mu * ratio, w=w)


def _delassus_diagonal(problem: ContactProblem) -> np.ndarray:
    """(n_c, 3, 3) blocks W_ii = J_i A⁻¹ J_iᵀ: the compiled per-tree kernel, else
    :meth:`ContactProblem.delassus_diagonal` (the reference) with small problems (n_v ≤ 64) done
    by one Cholesky solve A⁻¹Jᵀ (LAPACK) instead of ``inv``.
    """
    n_c, n_v = problem.n_c, problem.n_v
    if n_c == 0:
        return np.zeros((0, 3, 3))
    if HAVE_NUMBA:
        return delassus_blocks(problem.A, problem.J, problem.tree_starts, problem.contact_trees)
    if n_v > 64:
        return problem.delassus_diagonal()
    X = cholesky_solve(cholesky(problem.A), problem.J.T)  # (n_v, 3 n_c) = A⁻¹Jᵀ
    Jc = problem.J.reshape(n_c, 3, n_v)
    return Jc @ X.T.reshape(n_c, 3, n_v).transpose(0, 2, 1)


def project_cone_r(y: np.ndarray, R: np.ndarray, mu: np.ndarray, mu_hat: np.ndarray, mu_tilde2: np.ndarray) -> np.ndarray:
    """R-norm projection γ = P_F(y) onto the friction cones (seed 001 eq. 23, App. C).

    Args:
        y: (n_c, 3) points (t1, t2, n).
        R: (n_c, 3) positive diagonal of R per contact.
        mu, mu_hat, mu_tilde2: (n_c,) μ, μ̂ = μ R_t/R_n, μ̃² = μ² R_t/R_n.

    Returns:
        (n_c, 3) projections.
    """
    return _project(y, R, mu, mu_hat, mu_tilde2, want_hessian=False)[0]


def project_cone_r_with_hessian(y, R, mu, mu_hat, mu_tilde2):
    """As :func:`project_cone_r`, also returning G_i = ∂P/∂y · R_i⁻¹ (n_c, 3, 3), seed 001 App. D."""
    return _project(y, R, mu, mu_hat, mu_tilde2, want_hessian=True)


def _project(y, R, mu, mu_hat, mu_tilde2, want_hessian):
    """(γ, G or None): the compiled kernel when numba is present, else the numpy reference."""
    if not HAVE_NUMBA:
        return _project_numpy(y, R, mu, mu_hat, mu_tilde2, want_hessian)
    n = y.shape[0]
    gamma = np.empty((n, 3))
    G = np.empty((n, 3, 3)) if want_hessian else _NO_G
    project_into(np.ascontiguousarray(y, dtype=float), R, mu, mu_hat, mu_tilde2, want_hessian, gamma, G)
    return gamma, (G if want_hessian else None)


_NO_G = np.empty((0, 3, 3))
_NO_ROWS = np.zeros(0, dtype=np.int64)


def _project_numpy(y, R, mu, mu_hat, mu_tilde2, want_hessian):
    """Pure-numpy reference of the projection and its Hessian blocks (vectorized over contacts)."""
    yt = y[:, :2]
    yn = y[:, 2]
    yr = np.sqrt(yt[:, 0] ** 2 + yt[:, 1] ** 2)
    # Regions (App. C): the boundary of F belongs to stiction, the boundary of F° to "no contact";
    # yn >= 0 keeps μ = 0 with y_t = 0, y_n < 0 out of stiction.
    stick = (yr <= mu * yn) & (yn >= 0.0)
    free = ~stick & (yn <= -mu_hat * yr)
    slide = ~(stick | free)
    gamma = np.zeros_like(y)
    gamma[stick] = y[stick]
    f = 1.0 / (1.0 + mu_tilde2)
    G = None
    if slide.any():
        ys, yrs, ms, mhs, fs = yt[slide], yr[slide], mu[slide], mu_hat[slide], f[slide]
        that = ys / yrs[:, None]
        gn = fs * (yn[slide] + mhs * yrs)
        gamma[slide, 2] = gn
        gamma[slide, :2] = (ms * gn)[:, None] * that
    if want_hessian:
        G = np.zeros((y.shape[0], 3, 3))
        Rinv = 1.0 / R
        idx = np.flatnonzero(stick)
        G[idx, 0, 0] = Rinv[idx, 0]
        G[idx, 1, 1] = Rinv[idx, 1]
        G[idx, 2, 2] = Rinv[idx, 2]
        if slide.any():
            P = that[:, :, None] * that[:, None, :]
            Pperp = np.eye(2)[None] - P
            Rt = R[slide, 0]
            Rn = R[slide, 2]
            Gs = np.empty((ys.shape[0], 3, 3))
            Gs[:, :2, :2] = (ms / Rt)[:, None, None] * (
                (gn / yrs)[:, None, None] * Pperp + (mhs * fs)[:, None, None] * P
            )
            off = (ms * fs / Rn)[:, None] * that
            Gs[:, :2, 2] = off
            Gs[:, 2, :2] = off
            Gs[:, 2, 2] = fs / Rn
            G[slide] = Gs
    return gamma, G


def _box_project(ws: "_Workspace", y_n: np.ndarray, gamma: np.ndarray, G: np.ndarray | None) -> float:
    """Interval projection of the joint-space constraints ``ws.box`` (in place in ``gamma``, ``G``).

    γ_n = clip(y_n, lo, hi), tangent impulses zero; G_nn = 1/R_n strictly inside the interval, 0
    where it saturates. Returns the correction of the cost: the regularized term of a constraint is
    ℓ_i = ½R y² − ½R (y − γ)² = R (y γ − ½ γ²) (the conjugate form of seed 001 eq. 24, which
    reduces to ½ γ R γ inside the interval and for cones by Moreau's decomposition); the caller adds
    ½ γ R γ for every constraint, so the correction is R (y γ − γ²).
    """
    g = np.clip(y_n, ws.box_lo, ws.box_hi)
    gamma[ws.box] = 0.0
    gamma[ws.box, 2] = g
    if G is not None:
        G[ws.box] = 0.0
        inside = (y_n > ws.box_lo) & (y_n < ws.box_hi)
        G[ws.box, 2, 2] = np.where(inside, 1.0 / ws.box_Rn, 0.0)
    return float(np.sum(ws.box_Rn * (y_n * g - g * g)))


def _box_line_terms(ws: "_Workspace", alpha: float, vc0: np.ndarray, dvc: np.ndarray, hess: bool):
    """Line-search terms (Σ ġ γ, Σ ġ G ġ, 2 Σ ℓ_i) of the interval constraints at v + α Δv."""
    Rn = ws.box_Rn
    y = -(vc0 + alpha * dvc - ws.par.v_hat[ws.box, 2]) / Rn
    g = np.clip(y, ws.box_lo, ws.box_hi)
    dg = float(dvc @ g)
    dGd = float(np.sum(np.where((y > ws.box_lo) & (y < ws.box_hi), dvc * dvc / Rn, 0.0))) if hess else 0.0
    two_ell = float(np.sum(Rn * (2.0 * y * g - g * g)))  # the caller halves it
    return dg, dGd, two_ell


def _island_partition(tree_starts: np.ndarray, ct: np.ndarray, islands: bool) -> list[tuple]:
    """Connected groups of trees (nodes) linked by contacts (edges), as (dofs, has_contact,
    np.ix_(dofs, dofs)) triples.

    Vectorized min-label propagation with pointer jumping over the edges (converges in at most
    the graph's diameter sweeps). ``islands=False``: one group with every dof.
    """
    n_t = tree_starts.size - 1
    label = np.arange(n_t)
    both = (ct >= 0).all(axis=1)
    e1, e2 = ct[both, 0], ct[both, 1]
    if not islands:
        label = np.zeros(n_t, dtype=np.int64)
        e1 = e1[:0]
    while e1.size:
        m = np.minimum(label[e1], label[e2])
        new = label.copy()
        np.minimum.at(new, e1, m)
        np.minimum.at(new, e2, m)
        new = new[new]  # pointer jumping
        if np.array_equal(new, label):
            break
        label = new
    touched = np.zeros(n_t, bool)
    touched[ct[ct >= 0]] = True
    ts = tree_starts
    parts = []
    for root in np.unique(label):  # loop over islands (groups of trees), not contacts
        trees = np.flatnonzero(label == root)
        dofs = np.concatenate([np.arange(ts[t], ts[t + 1]) for t in trees])
        parts.append((dofs, bool(touched[trees].any()), np.ix_(dofs, dofs)))
    return parts


class _Workspace:
    """Per-problem data reused by every Newton iteration."""

    def __init__(self, problem: ContactProblem, opts: SAPOptions, island_cache: dict | None = None):
        self.p = problem
        self.par = sap_parameters(problem, opts.beta, opts.sigma)
        self.n_c = problem.n_c
        self.sparse = problem.n_v > opts.sparse_threshold and problem.n_c > 0
        self.J = problem.J
        self.JT = problem.J.T
        self.D = 1.0 / np.sqrt(problem.M_diag)
        self.Av_star = problem.A @ problem.v_star
        self.Rinv = 1.0 / self.par.R
        self.y_shift = self.par.v_hat * self.Rinv
        # joint-space constraints whose impulse interval is not [0, inf) (bilateral, PD with an
        # effort limit, dry friction): γ_n = clip(y_n, lo, hi) instead of the cone projection
        self.box = _NO_ROWS if not problem.n_limits else problem.n_geometric + np.flatnonzero(problem.bounded)
        if self.box.size:
            bounded = problem.bounded
            self.box_lo = problem.gamma_lower[bounded]
            self.box_hi = problem.gamma_upper[bounded]
            self.box_Rn = self.par.R[self.box, 2]
            self.cone = np.setdiff1d(np.arange(problem.n_c), self.box)  # the rest: cone projection
            self.cone_args = tuple(np.ascontiguousarray(a[self.cone]) for a in
                                   (self.par.v_hat, self.par.R, problem.mu, self.par.mu_hat, self.par.mu_tilde2))
        # islands: trees coupled through contacts (graph: trees = nodes, contacts = edges); the
        # partition depends only on (tree_starts, contact_trees), which repeat from step to step
        ct = problem.contact_trees
        key = (opts.islands, problem.tree_starts.tobytes(), ct.tobytes())
        parts = None if island_cache is None else island_cache.get(key)
        if parts is None:
            parts = _island_partition(problem.tree_starts, ct, opts.islands)
            if island_cache is not None:
                if len(island_cache) >= 64:
                    island_cache.clear()
                island_cache[key] = parts
        self.islands = []  # (dof index array, np.ix_ block index or None for all, constant factor or None)
        A = problem.A
        single = len(parts) == 1
        for dofs, touched, ix in parts:  # loop over islands (groups of trees), not contacts
            ix = None if single else ix
            if touched:
                self.islands.append((dofs, ix, None))
            else:
                self.islands.append((dofs, ix, cholesky(A if single else A[ix])))
        if self.sparse:
            # Per-contact dense blocks: the (padded) dofs of the <= 2 trees each contact touches.
            # Jᵀ G J is then a batched (2s x 3)(3 x 3)(3 x 2s) product scattered with bincount.
            ts = problem.tree_starts
            sizes = np.diff(ts)
            s_max = int(sizes.max())
            n_v = problem.n_v
            cols = np.full((self.n_c, 2 * s_max), n_v, dtype=np.int64)  # n_v = a zero column
            for side in range(2):
                t = ct[:, side]
                has = t >= 0
                if side == 1:  # a same-tree contact (self-collision) has its tree's columns once
                    has &= t != ct[:, 0]
                start = np.where(has, ts[np.maximum(t, 0)], 0)
                size = np.where(has, sizes[np.maximum(t, 0)], 0)
                k = np.arange(s_max)
                valid = k[None, :] < size[:, None]
                cols[:, side * s_max : (side + 1) * s_max] = np.where(valid, start[:, None] + k[None, :], n_v)
            J_ext = np.concatenate([problem.J, np.zeros((3 * self.n_c, 1))], axis=1).reshape(self.n_c, 3, n_v + 1)
            self.Jc = np.take_along_axis(J_ext, cols[:, None, :], axis=2)  # (n_c, 3, 2 s_max)
            self.JcT = np.ascontiguousarray(self.Jc.transpose(0, 2, 1))
            self.flat = (cols[:, :, None] * (n_v + 1) + cols[:, None, :]).reshape(-1)
            self.n_ext = n_v + 1
            self.cols = cols
            self.J = _BlockJacobian(self)
            self.JT = _BlockJacobianT(self)

    def jtgj(self, G: np.ndarray) -> np.ndarray:
        """Jᵀ G J (n_v, n_v) dense, G block diagonal (n_c, 3, 3)."""
        if self.sparse:
            B = self.JcT @ (G @ self.Jc)  # (n_c, 2s, 2s)
            n = self.n_ext
            H = np.bincount(self.flat, weights=B.reshape(-1), minlength=n * n).reshape(n, n)
            return H[:-1, :-1]
        Jc = self.p.J.reshape(self.n_c, 3, -1)
        GJ = np.einsum("cij,cjk->cik", G, Jc).reshape(3 * self.n_c, -1)
        return self.p.J.T @ GJ


class _BlockJacobian:
    """``J @ v`` from the per-contact tree blocks (n_c, 3, 2s) of a workspace."""

    def __init__(self, ws: "_Workspace"):
        self.ws = ws

    def __matmul__(self, v: np.ndarray) -> np.ndarray:
        ws = self.ws
        v_ext = np.append(v, 0.0)
        return np.einsum("cki,ci->ck", ws.Jc, v_ext[ws.cols]).reshape(-1)


class _BlockJacobianT:
    """``Jᵀ @ γ`` from the per-contact tree blocks, scattered with bincount."""

    def __init__(self, ws: "_Workspace"):
        self.ws = ws

    def __matmul__(self, gamma: np.ndarray) -> np.ndarray:
        ws = self.ws
        contrib = np.einsum("cki,ck->ci", ws.Jc, gamma.reshape(-1, 3))
        return np.bincount(ws.cols.reshape(-1), weights=contrib.reshape(-1), minlength=ws.n_ext)[:-1]


_STATUSES = tuple(ContactSolverStatus)  # by value (0, 1, 2, ...)
_MESSAGES = {
    ContactSolverStatus.SOLVED: "",
    ContactSolverStatus.MAX_ITERATIONS: "no convergence in {n} Newton iterations",
    ContactSolverStatus.LINE_SEARCH_FAILED: "no descent along the Newton direction (dℓ/dα(0) >= 0)",
}


@register_contact_solver("sap")
class SAPSolver(ContactSolver):
    """SAP Newton solver (seed 001 Algorithm 2). ``SAPSolver(options=None, **overrides)``."""

    name = "sap"
    options_type = SAPOptions
    bounded_constraints = True  # interval projection of the joint-space rows (_box_project)

    def __init__(self, options: SAPOptions | str | None = None, **overrides):
        self.options = resolve_options(SAPOptions, options, overrides)
        self._island_cache: dict = {}
        o = self.options  # the compiled solve's scalar arguments, converted once
        self._kernel_options = (float(o.beta), float(o.sigma), float(o.rel_tol), float(o.abs_tol),
                                int(o.max_iterations), o.line_search == "exact", float(o.alpha_max),
                                float(o.armijo_rho), float(o.armijo_c), int(o.ls_max_iterations),
                                float(o.ls_rel_tol), bool(o.islands), int(o.sparse_factor_above))

    # ---------------------------------------------------------------- pieces (also used by tests)
    def workspace(self, problem: ContactProblem) -> _Workspace:
        """Precomputed per-problem data (regularization, islands, sparse J)."""
        return _Workspace(problem, self.options, self._island_cache)

    @staticmethod
    def evaluate(ws: _Workspace, v: np.ndarray, want_hessian: bool = False):
        """Cost ℓ_p(v), gradient ∇ℓ_p = A(v − v*) − Jᵀγ, impulses γ and (optionally) G blocks."""
        cost, grad, gamma, G, jc, _ = SAPSolver._evaluate(ws, v, want_hessian)
        return cost, grad, gamma, G, jc

    @staticmethod
    def _evaluate(ws: _Workspace, v: np.ndarray, want_hessian: bool):
        """As :meth:`evaluate`, also returning the momentum A v (for the stopping criterion)."""
        p, par = ws.p, ws.par
        Av = p.A @ v
        Ae = Av - ws.Av_star
        e = v - p.v_star
        y = ws.y_shift - (ws.J @ v).reshape(-1, 3) * ws.Rinv  # −R⁻¹(J v − v̂)
        gamma, G = _project(y, par.R, p.mu, par.mu_hat, par.mu_tilde2, want_hessian)
        g = gamma.reshape(-1)
        extra = 0.0
        if ws.box.size:
            extra = _box_project(ws, y[ws.box, 2], gamma, G)
            g = gamma.reshape(-1)
        jc = ws.JT @ g
        cost = 0.5 * float(e @ Ae) + 0.5 * float(g @ (par.R.reshape(-1) * g)) + extra
        return cost, Ae - jc, gamma, G, jc, Av

    # ---------------------------------------------------------------- solve
    def solve(self, problem: ContactProblem, v_guess: np.ndarray | None = None) -> ContactSolverResult:
        """Solve the contact step; ``v_guess`` (n_v,) warm-starts (default ``problem.v0``).

        Contacts with a zero Jacobian (:func:`~plants.sim.contact_problem.inert_contacts`) are
        removed first (their W_ii = 0 would zero R_i) and get zero impulses.
        """
        if not isinstance(problem, ContactProblem):
            raise TypeError(f"problem must be a ContactProblem, got {type(problem).__name__}")
        bounded = problem.n_limits and problem.bounded.any()
        if bounded:
            # bilateral rows as opposed unilateral pairs, exact for SAP's linear law (docs/sap.md
            # §11): the compiled cone kernels take them; finite intervals keep _box_project
            split, back = unilateral_form(problem, self.name, keep_bounded=True)
            if split is not problem:
                return back(self.solve(split, v_guess))
        if HAVE_NUMBA and self.options.compiled and not bounded:
            # finite impulse intervals (effort-limited PD, dry friction) take the numpy path
            return self._solve_compiled(problem, v_guess)
        drop = inert_contacts(problem)
        with blas_threads(self.options.blas_threads):
            if not drop.any():
                return self._solve(problem, v_guess)
            return expand_impulses(self._solve(without_contacts(problem, drop), v_guess), drop)

    def _solve_compiled(self, problem: ContactProblem, v_guess: np.ndarray | None) -> ContactSolverResult:
        """The compiled path (:func:`~plants.sim._sap_kernels.newton_solve`): the steps of :meth:`_solve`
        in one call, inert contacts included (left out inside, zero impulses)."""
        opts = self.options
        t0 = time.perf_counter()
        n_v = problem.A.shape[0]
        if v_guess is None:
            guess = problem.v0
        else:
            guess = np.asarray(v_guess, dtype=float)
            if guess.shape != (n_v,) or not np.isfinite(guess).all():
                raise ValueError(f"v_guess must be a finite array of shape ({n_v},)")
        v = np.empty(n_v)
        gamma = np.empty((problem.phi0.shape[0], 3))
        history = np.empty(int(opts.max_iterations) + 1)
        try:
            status, it, ls_total, n_hist, cost, scale = newton_solve(
                problem.A, problem.v_star, guess, problem.J, problem.phi0, problem.mu, problem.stiffness,
                problem.dissipation, problem.dt, problem.tree_starts, problem.contact_trees, problem.M_diag,
                *self._kernel_options, v, gamma, history)
        except np.linalg.LinAlgError:  # LAPACK refused a large island's H: the reference says how
            drop = inert_contacts(problem)
            if not drop.any():
                return self._solve(problem, v_guess)
            return expand_impulses(self._solve(without_contacts(problem, drop), v_guess), drop)
        status = _STATUSES[status]
        res = float(history[n_hist - 1])
        if status is ContactSolverStatus.SOLVED:
            message = ""
        elif status is ContactSolverStatus.NUMERICAL_ERROR:
            message = "non-finite gradient" if not math.isfinite(res) else "Cholesky failed: H not positive definite"
        else:
            message = _MESSAGES[status].format(n=opts.max_iterations)
        elapsed = time.perf_counter() - t0
        return ContactSolverResult.trusted(
            status=status, v=v, gamma=gamma.reshape(-1), iterations=int(it), line_search_iterations=int(ls_total),
            residual=res, momentum_error=res / scale if scale > 0 else (0.0 if res == 0 else float("inf")),
            cost=float(cost), solve_time=elapsed, timings={"compiled": elapsed},
            residual_history=tuple(history[:n_hist].tolist()), solver="sap", message=message,
        )

    def _solve(self, problem: ContactProblem, v_guess: np.ndarray | None) -> ContactSolverResult:
        """The readable reference of the Newton solve (numpy; per-contact kernels when numba is present)."""
        opts = self.options
        t0 = time.perf_counter()
        ws = self.workspace(problem)
        v = np.array(problem.v0 if v_guess is None else v_guess, dtype=float)
        if v.shape != (problem.n_v,) or not np.isfinite(v).all():
            raise ValueError(f"v_guess must be a finite array of shape ({problem.n_v},)")
        t_setup = time.perf_counter() - t0
        t_factor = 0.0
        t_ls = 0.0
        A = problem.A
        D = ws.D
        history = []
        ls_total = 0
        status = ContactSolverStatus.MAX_ITERATIONS
        message = ""
        it = 0
        cost, grad, gamma, G, jc, Av = self._evaluate(ws, v, True)
        while True:
            x = D * grad
            res = math.sqrt(float(x @ x))
            x, y = D * Av, D * jc
            scale = math.sqrt(max(float(x @ x), float(y @ y)))
            history.append(res)
            if not np.isfinite(res):
                status, message = ContactSolverStatus.NUMERICAL_ERROR, "non-finite gradient"
                break
            if res < opts.abs_tol + opts.rel_tol * scale:  # eq. (26)
                status = ContactSolverStatus.SOLVED
                break
            if it >= opts.max_iterations:
                message = f"no convergence in {opts.max_iterations} Newton iterations"
                break
            # Newton direction: H Δv = −∇ℓ, H = A + Jᵀ G J (block Cholesky per island)
            tf = time.perf_counter()
            H = A + ws.jtgj(G) if problem.n_c else A
            dv = np.empty_like(v)
            try:
                for dofs, ix, const in ws.islands:
                    fac = const if const is not None else cholesky(H if ix is None else H[ix])
                    if ix is None:
                        dv = cholesky_solve(fac, -grad)
                    else:
                        dv[dofs] = cholesky_solve(fac, -grad[dofs])
            except (LinAlgError, ValueError) as err:
                status, message = ContactSolverStatus.NUMERICAL_ERROR, f"Cholesky failed: {err}"
                break
            t_factor += time.perf_counter() - tf
            it += 1
            tl = time.perf_counter()
            alpha, n_ls, ok = self._line_search(ws, v, dv, cost, grad)
            t_ls += time.perf_counter() - tl
            ls_total += n_ls
            if not ok:
                status = ContactSolverStatus.LINE_SEARCH_FAILED
                message = "no descent along the Newton direction (dℓ/dα(0) >= 0)"
                break
            v = v + alpha * dv
            cost, grad, gamma, G, jc, Av = self._evaluate(ws, v, True)
        x, y = D * Av, D * jc
        scale = math.sqrt(max(float(x @ x), float(y @ y)))
        res = history[-1]
        return ContactSolverResult(
            status=status,
            v=v,
            gamma=gamma.reshape(-1),
            iterations=it,
            line_search_iterations=ls_total,
            residual=res,
            momentum_error=res / scale if scale > 0 else (0.0 if res == 0 else float("inf")),
            cost=float(cost),
            solve_time=time.perf_counter() - t0,
            timings={"setup": t_setup, "factor": t_factor, "line_search": t_ls},
            residual_history=tuple(history),
            solver="sap",
            message=message,
        )

    # ---------------------------------------------------------------- line search
    def _line_search(self, ws: _Workspace, v, dv, cost0, grad0):
        """Step length along Δv; returns (α, iterations, descent_ok)."""
        opts = self.options
        p, par = ws.p, ws.par
        dvc = (ws.J @ dv).reshape(-1, 3)
        dp = p.A @ dv
        dvdp = float(dv @ dp)
        e0 = v - p.v_star
        dpe = float(dp @ e0)
        eAe = float(e0 @ (p.A @ e0))
        vc0 = (ws.J @ v).reshape(-1, 3)
        d0 = float(grad0 @ dv)  # dℓ/dα at 0
        if not d0 < 0:
            return 0.0, 0, False

        box = ws.box.size > 0
        if box:  # the cone terms over the other constraints, the interval terms below
            vc0_box, dvc_box = vc0[ws.box, 2], dvc[ws.box, 2]
            vc0, dvc = np.ascontiguousarray(vc0[ws.cone]), np.ascontiguousarray(dvc[ws.cone])
            v_hat_c, R_c, mu_c, mu_hat_c, mu_tilde2_c = ws.cone_args
        else:
            v_hat_c, R_c, mu_c, mu_hat_c, mu_tilde2_c = par.v_hat, par.R, p.mu, par.mu_hat, par.mu_tilde2

        def at(alpha: float, hess: bool):
            if HAVE_NUMBA:
                dg, dGd, gRg = line_search_terms(alpha, vc0, dvc, v_hat_c, R_c, mu_c, mu_hat_c, mu_tilde2_c, hess)
            else:
                dg, dGd, gRg = cone_terms(alpha, hess)
            if box:
                dg1, dGd1, gRg1 = _box_line_terms(ws, alpha, vc0_box, dvc_box, hess)
                dg, dGd, gRg = dg + dg1, dGd + dGd1, gRg + gRg1
            d1 = dpe + alpha * dvdp - dg
            if not hess:
                return 0.5 * eAe + alpha * dpe + 0.5 * alpha**2 * dvdp + 0.5 * gRg, d1
            return d1, dvdp + dGd

        def cone_terms(alpha: float, hess: bool):  # the numpy reference of line_search_terms
            y = -(vc0 + alpha * dvc - v_hat_c) / R_c
            gam, G = _project_numpy(y, R_c, mu_c, mu_hat_c, mu_tilde2_c, hess)
            dg = float(np.einsum("ci,ci->", dvc, gam))
            gRg = float(np.einsum("ci,ci,ci->", gam, R_c, gam))
            dGd = float(np.einsum("ci,cij,cj->", dvc, G, dvc)) if hess else 0.0
            return dg, dGd, gRg

        if opts.line_search == "armijo":
            alpha = opts.alpha_max
            for n in range(1, opts.ls_max_iterations + 1):
                ell, _ = at(alpha, False)
                if ell < cost0 + opts.armijo_c * alpha * d0:
                    return alpha, n, True
                alpha *= opts.armijo_rho
            return alpha, opts.ls_max_iterations, True

        # exact: rtsafe (Newton-Raphson safeguarded by bisection) on f(α) = ℓ'(α)/(−ℓ'(0))
        a_max = opts.alpha_max
        f_hi, df_hi = at(a_max, True)
        n = 1
        if f_hi <= 0:
            return a_max, n, True
        lo, hi = 0.0, a_max
        alpha = min(1.0, a_max)
        dx_old = hi - lo
        dx = dx_old
        scale = -d0
        f, df = at(alpha, True)
        n += 1
        while n < opts.ls_max_iterations + 2:
            if abs(f) <= opts.ls_rel_tol * scale:
                break
            if f < 0:
                lo = alpha
            else:
                hi = alpha
            newton_ok = df > 0 and lo < alpha - f / df < hi and abs(2.0 * f) <= abs(dx_old * df)
            dx_old = dx
            if newton_ok:
                dx = f / df
                alpha = alpha - dx
            else:
                dx = 0.5 * (hi - lo)
                alpha = lo + dx
            if hi - lo <= 4 * np.finfo(float).eps * hi:
                break
            f, df = at(alpha, True)
            n += 1
        return alpha, n, True
