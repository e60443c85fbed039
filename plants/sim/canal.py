"""CANAL: Cascaded Newton-based Augmented Lagrangian (seed 000 §V, Algorithm 1).

Per AL iteration ``l`` the friction term ``p_i = (0, 0, μ_i ‖z_{i,t}^l‖)`` is frozen (eq. 20-21),
which makes the surrogate a cone complementarity problem, the gradient of the strongly convex

    h(v̂) = ½ v̂ᵀÂv̂ − b̂ᵀv̂ + (1/β) Σ_i ψ_i(λ̃_i*(v̂)),   λ̃_i* = −β(J_i v̂ + ẽ_i) − u_i     (eq. 22)

(ψ_i the support-type function whose gradient is the proximal projection Π, so ∇h = r of eq. 21).
It is minimized by Newton's method with the generalized Hessian ``H = Â + β Jᵀ (∂Π) J`` (eq. 24,
SPD, factored per island of coupled trees) and an exact line search (rtsafe on h'(α), eq. 26);
then the multipliers are updated (eq. 12: ``u ← −λ``) and β grows by κ when the primal residual
``‖Jv̂ − z‖`` did not fall by ζ (eq. 27). Math: ``docs/contact-solvers.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from ._blas import blas_threads
from ._canal_kernels import (
    HAVE_NUMBA,
    island_cholesky_solve,
    island_newton_matrices,
    line_derivatives,
    project_cone_into,
)
from .accuracy import contact_residual, metric_tolerance
from .contact_laws import island_contacts, jt_g_j, project_cone_with_jacobian, rigid_contact_form
from .contact_problem import (
    ContactProblem,
    ContactSolver,
    ContactSolverResult,
    ContactSolverStatus,
    SolverPresets,
    expand_impulses,
    inert_contacts,
    unilateral_form,
    register_contact_solver,
    resolve_options,
    without_contacts,
)

__all__ = ["CANALOptions", "CANALSolver", "ALSolverResult", "rtsafe_line_search"]


@dataclass(frozen=True)
class ALSolverResult(ContactSolverResult):
    """:class:`ContactSolverResult` plus augmented-Lagrangian statistics.

    Attributes:
        inner_iterations: Newton (CANAL) or linear (NSN) iterations summed over outer iterations.
        beta: final penalty β [kg] (NaN when the solver has none).
        primal_residual: final ``‖J v̂ − z‖₂`` [m/s] (AL solvers).
    """

    inner_iterations: int = 0
    beta: float = float("nan")
    primal_residual: float = float("nan")


@dataclass(frozen=True)
class CANALOptions(SolverPresets):
    """Options of :class:`CANALSolver` (presets: ``"default"``, ``"realtime"`` (:meth:`realtime`)).

    The paper gives only β₀ = 1e4 (§V-C); κ, β_max, ζ and the tolerances are ours (digest §2.4 [?]).

    Attributes:
        beta0: initial penalty β₀ [kg] (paper: 1e4).
        kappa: penalty growth factor κ > 1 of eq. (27) (ours: 2; κ = 10 overshot to β where the
            surrogate is so stiff that Newton needs many more steps, on random problems).
        beta_max: cap on β (ours: 1e6; λ̃* ~ β‖Jv̂‖ cancels to λ, so large β costs accuracy
            ~ β ε in the impulses).
        zeta: required decrease ζ ∈ (0, 1) of ‖Jv̂ − z‖ per AL iteration, else β grows (ours: 0.5;
            the paper's unused η is taken to be the same quantity).
        tol: stop when the accuracy metric of seed 000 §VII (natural-map residual / n_c) ≤
            tol + rel_tol ‖λ‖/n_c (ours: 1e-9; at β ~ 1e6 the round-off of λ̃* ~ β‖Jv̂‖ puts a floor
            of 1e-10 .. 1e-9 on the metric on some A1 impact steps).
        rel_tol: the scale-aware part of the threshold (see
            :func:`~plants.sim.accuracy.metric_tolerance`). Default 0: the absolute ``tol`` alone,
            the precision the tests check; the realtime preset uses 1e-6 (impulses to 6 digits,
            as SAP's ε_r on momentum).
        al_tol: also stop when ‖Jv̂ − z‖₂ ≤ al_tol [m/s] (Algorithm 1's θ_th^AL).
        max_iterations: AL iteration budget (Algorithm 1 has none; the seed's experiments use
            fixed counts). Ours: 300; an A1 impact step converged linearly (rate ≈ 0.88 per AL
            iteration at β_max) and needed 115.
        newton_rel_tol: Newton stops when ‖D r‖ ≤ newton_rel_tol · max(‖D Âv̂‖, ‖D Jᵀλ‖, ‖D b̂‖),
            D = diag(M)^-1/2 (θ_th^N, scaled as SAP's eq. 26).
        max_newton: Newton iteration budget per AL iteration.
        ls_rel_tol: the exact line search stops when |h'(α)| ≤ ls_rel_tol |h'(0)|.
        ls_max_iterations: rtsafe budget per Newton step.
        theta: mid-step parameter θ ∈ [0, 1) of the constraint velocity (eq. 2); 0 constrains
            the next velocity, as SAP does.
        penalty_scaling: "none" (default): one scalar β for every contact (the paper);
            "delassus": per-contact β_i = β m_i / (geometric mean of m), m_i = 3/tr(W_ii) the
            effective mass of contact i (W = J Â⁻¹ Jᵀ); AL with a diagonal penalty is the same
            method (eq. 11-12, 22 hold per contact). Experimental: it did not change the outcome
            on the A1 impact steps we tried.
        p_relaxation: ω ∈ (0, 1] of ``z_p ← ω z^{l+1} + (1 − ω) z_p``, the slack whose tangential
            part freezes p (ours; the paper uses z^l, ω = 1). Fixed points are unchanged. None
            (default): ω = 1 until the metric has not fallen by 10 % in 10 AL iterations, then
            ω = 0.5. On an A1 impact step the paper's update cycled with period 2 (λ alternating
            by ~0.01, metric stuck at 3.8e-5 for 300 iterations); ω = 0.5 solved it in 78, but
            doubled the iterations on steps without the cycle, hence the switch. The switch needs
            the cycle itself (λ^l closer to λ^(l−2) than half of ‖λ^l − λ^(l−1)‖): switching on
            slow progress alone slowed a linearly converging cube-drop-3 step (rate 0.98 per AL
            iteration) from 170 iterations to more than 300.
        warm_start: reuse the previous solve's impulses (and hence u) when the new problem has the
            same contacts (same count and trees): warm start across time steps (§V-C).
        blas_threads: BLAS threads during the solve (None: leave as is).
    """

    beta0: float = 1e4
    kappa: float = 2.0
    beta_max: float = 1e6
    zeta: float = 0.5
    tol: float = 1e-9
    rel_tol: float = 0.0
    al_tol: float = 0.0
    max_iterations: int = 300
    newton_rel_tol: float = 1e-11
    max_newton: int = 50
    ls_rel_tol: float = 1e-6
    ls_max_iterations: int = 60
    theta: float = 0.0
    penalty_scaling: str = "none"
    p_relaxation: float | None = None
    warm_start: bool = True
    blas_threads: int | None = 1

    def __post_init__(self) -> None:
        if self.p_relaxation is not None and not 0 < self.p_relaxation <= 1:
            raise ValueError(f"p_relaxation must lie in (0, 1], got {self.p_relaxation}")
        if self.penalty_scaling not in ("none", "delassus"):
            raise ValueError(f"penalty_scaling must be 'none' or 'delassus', got {self.penalty_scaling!r}")
        for name in ("beta0", "beta_max", "tol", "newton_rel_tol", "ls_rel_tol"):
            val = getattr(self, name)
            if not (np.isfinite(val) and val > 0):
                raise ValueError(f"{name} must be finite and > 0, got {val}")
        if not self.kappa > 1:
            raise ValueError(f"kappa must be > 1, got {self.kappa}")
        if not self.beta_max >= self.beta0:
            raise ValueError(f"beta_max must be >= beta0, got {self.beta_max} < {self.beta0}")
        if not 0 < self.zeta < 1:
            raise ValueError(f"zeta must lie in (0, 1), got {self.zeta}")
        if not self.al_tol >= 0:
            raise ValueError(f"al_tol must be >= 0, got {self.al_tol}")
        if not (np.isfinite(self.rel_tol) and self.rel_tol >= 0):
            raise ValueError(f"rel_tol must be finite and >= 0, got {self.rel_tol}")
        for name in ("max_iterations", "max_newton", "ls_max_iterations"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.theta < 1:
            raise ValueError(f"theta must lie in [0, 1), got {self.theta}")

    @classmethod
    def realtime(cls, **overrides) -> "CANALOptions":
        """The seed's fixed budget (§VII: 100 AL iterations), at most 5 Newton steps per AL
        iteration (warm-started from the previous one, CANAL's inner solves take 1-3), and the
        scale-aware threshold ``rel_tol = 1e-6``."""
        return cls(**{"max_iterations": 100, "max_newton": 5, "rel_tol": 1e-6, **overrides})


def rtsafe_line_search(dphi, alpha_hi: float = 1.0, rel_tol: float = 1e-10, max_iterations: int = 60,
                       alpha_cap: float = 1e6) -> tuple[float, int]:
    """Minimizer of a convex 1-D function from its derivatives (seed 000 eq. 26, "rtsafe").

    Args:
        dphi: ``dphi(α) -> (φ'(α), φ''(α))``, with φ'(0) < 0 and φ' non-decreasing.
        alpha_hi: first upper bracket (doubled until φ' ≥ 0 or ``alpha_cap``).
        rel_tol: stop when |φ'(α)| ≤ rel_tol |φ'(0)|.

    Returns:
        (α, number of derivative evaluations).
    """
    d0, _ = dphi(0.0)
    n = 1
    lo, hi = 0.0, alpha_hi
    f_hi, df_hi = dphi(hi)
    n += 1
    while f_hi < 0 and hi < alpha_cap:
        lo, hi = hi, 2.0 * hi
        f_hi, df_hi = dphi(hi)
        n += 1
    if f_hi <= 0:
        return hi, n
    scale = abs(d0)
    alpha = hi if lo > 0 else min(1.0, hi)
    f, df = (f_hi, df_hi) if alpha == hi else dphi(alpha)
    n += alpha != hi
    dx_old = hi - lo
    while n < max_iterations:
        if abs(f) <= rel_tol * scale:
            break
        if f < 0:
            lo = alpha
        else:
            hi = alpha
        step_ok = df > 0 and lo < alpha - f / df < hi and abs(2.0 * f) <= abs(dx_old * df)
        if step_ok:
            dx_old = abs(f / df)
            alpha = alpha - f / df
        else:
            dx_old = 0.5 * (hi - lo)
            alpha = lo + dx_old
        if hi - lo <= 1e-12 * max(hi, 1.0):
            break
        f, df = dphi(alpha)
        n += 1
    return alpha, n


def _two_cycle(lam: np.ndarray, lam_2: np.ndarray | None, lam_1: np.ndarray | None) -> bool:
    """True when the AL iterates alternate: λ^l is closer to λ^(l−2) than half its distance to
    λ^(l−1). Slow monotone convergence gives ‖λ^l − λ^(l−2)‖ ≈ 2‖λ^l − λ^(l−1)‖ instead."""
    if lam_2 is None or lam_1 is None:
        return False
    step = float(np.linalg.norm(lam - lam_1))
    return step > 0 and float(np.linalg.norm(lam - lam_2)) <= 0.5 * step


def _penalty_scale(problem: ContactProblem, mode: str) -> np.ndarray:
    """(n_c,) relative per-contact penalties (see ``CANALOptions.penalty_scaling``)."""
    if mode == "none" or problem.n_c == 0:
        return np.ones(problem.n_c)
    W = problem.delassus_diagonal()
    m = 3.0 / np.maximum(np.einsum("cii->c", W), 1e-300)
    return m / np.exp(np.mean(np.log(m)))


def _line_derivatives_numpy(alpha, jv, jd, e, u, bv, mu, rho, rd0, dAd) -> tuple[float, float]:
    """(φ'(α), φ''(α)) of the exact line search with numpy (reference of
    :func:`~plants.sim._canal_kernels.line_derivatives`)."""
    la, Ga = project_cone_with_jacobian(-bv[:, None] * (jv + alpha * jd + e) - u, mu, rho)
    return (rd0 + alpha * dAd - float(np.einsum("ci,ci->", jd, la)),
            dAd + float(np.einsum("c,ci,cij,cj->", bv, jd, Ga, jd)))


class _IslandNewton:
    """The Newton matrix ``H = Â + Jᵀ(β ∂Π)J`` (eq. 24) is block diagonal over the islands of
    coupled trees (:func:`~plants.sim.contact_laws.island_contacts`): each block is built from the
    island's own dofs and contacts (not the whole n_v × n_v product) and factored by Cholesky.

    ``compiled`` (default with numba): all blocks built in one call
    (:func:`~plants.sim._canal_kernels.island_newton_matrices`), the islands of up to
    :data:`SMALL_ISLAND` dofs factored and solved in one more
    (:func:`~plants.sim._canal_kernels.island_cholesky_solve`), larger ones by LAPACK. Else per
    island with numpy and ``scipy.linalg.cho_factor`` (the reference).
    """

    SMALL_ISLAND = 48
    """Largest island factored by the compiled Cholesky (measured: at 18 dofs it takes ≈ 1 µs
    against ≈ 15 µs for a ``cho_factor`` / ``cho_solve`` call; at 162, 0.6 ms against 0.2 ms)."""

    def __init__(self, problem: ContactProblem, A: np.ndarray, Jc: np.ndarray, compiled: bool = HAVE_NUMBA):
        pairs = island_contacts(problem)
        self.dofs = islands = [dofs for dofs, _ in pairs]
        self.rows = [contacts for _, contacts in pairs]  # each island's contacts
        self.A, self.Jc, self.compiled = np.ascontiguousarray(A, float), np.ascontiguousarray(Jc, float), compiled
        if compiled:
            sizes = np.array([d.size for d in islands], dtype=np.int64)
            self._dofs = np.ascontiguousarray(np.concatenate(islands), np.int64)
            self._dof_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            self._rows = np.concatenate([np.zeros(0, np.int64), *self.rows]).astype(np.int64)
            self._row_ptr = np.concatenate([[0], np.cumsum([r.size for r in self.rows])]).astype(np.int64)
            self._h_ptr = np.concatenate([[0], np.cumsum(sizes * sizes)]).astype(np.int64)
            self._H = np.empty(int(self._h_ptr[-1]))
            self._cols = np.empty(int(sizes.max(initial=0)), np.int64)
            self._small = np.flatnonzero(sizes <= self.SMALL_ISLAND).astype(np.int64)
            self._large = np.flatnonzero(sizes > self.SMALL_ISLAND)

    def direction(self, Gb: np.ndarray, r: np.ndarray) -> np.ndarray:
        """(n_v,) ``d = −H⁻¹ r`` for ``Gb`` (n_c, 3, 3) = β_i ∂Π_i; LinAlgError if a block is not SPD."""
        d = np.empty(r.size)
        if self.compiled:
            r = np.ascontiguousarray(r, float)
            island_newton_matrices(self.A, self.Jc, np.ascontiguousarray(Gb), self._dofs, self._dof_ptr, self._rows,
                                   self._row_ptr, self._H, self._h_ptr, self._cols)
            bad = island_cholesky_solve(self._H, self._h_ptr, self._dofs, self._dof_ptr, self._small, r, d)
            if bad:
                raise LinAlgError(f"the Newton matrix of island {bad - 1} is not positive definite")
            for k in self._large:
                dofs, m = self.dofs[k], self.dofs[k].size
                H = self._H[self._h_ptr[k]:self._h_ptr[k + 1]].reshape(m, m)  # lower triangle only
                d[dofs] = cho_solve(cho_factor(H, lower=True, check_finite=False), -r[dofs], check_finite=False)
            return d
        for dofs, rows in zip(self.dofs, self.rows):
            H = self.A[np.ix_(dofs, dofs)]
            if rows.size:
                H = H + jt_g_j(self.Jc[rows][:, :, dofs], Gb[rows])
            d[dofs] = cho_solve(cho_factor(H, check_finite=False), -r[dofs], check_finite=False)
        return d


class _Warm:
    """Impulses of the previous solve, reused when the contact set is the same."""

    def __init__(self):
        self.trees = None
        self.lam = None

    def get(self, problem: ContactProblem):
        if self.lam is not None and self.trees is not None and np.array_equal(self.trees, problem.contact_trees):
            return self.lam.copy()
        return None

    def put(self, problem: ContactProblem, lam: np.ndarray) -> None:
        """Keep ``lam`` for the next solve (also the best iterate of a solve that ran out of budget:
        a fixed-budget solver that restarted from zero after every unconverged step would never
        accumulate accuracy across steps). Non-finite impulses are not kept."""
        if not np.isfinite(lam).all():
            self.trees = self.lam = None
            return
        self.trees = problem.contact_trees.copy()
        self.lam = np.array(lam, dtype=float).reshape(-1, 3)


class WarmStartedSolver(ContactSolver):
    """What the solvers of seeds 000/002 share: options (an ``options_type`` instance or keyword
    overrides), impulses kept across steps for warm start, input check and single-threaded
    BLAS around ``_solve(problem, v_guess, lambda_guess)``."""

    options_type: type

    def __init__(self, options=None, **overrides):
        self.options = resolve_options(self.options_type, options, overrides)
        self._warm = _Warm()

    def solve(self, problem: ContactProblem, v_guess: np.ndarray | None = None,
              lambda_guess: np.ndarray | None = None) -> ALSolverResult:
        """Solve the step. ``v_guess`` (n_v,) next-step velocity and ``lambda_guess`` (3 n_c,)
        impulses warm-start (defaults: ``problem.v0`` and the previous step's impulses).

        Contacts with a zero Jacobian (:func:`~plants.sim.contact_problem.inert_contacts`) are
        removed first (their Delassus block is zero) and get zero impulses. Bilateral joint-space
        constraints are solved as opposed unilateral pairs (:func:`~plants.sim.contact_problem.unilateral_form`);
        rows with finite impulse bounds raise :class:`~plants.sim.contact_problem.BoundedConstraintError`.
        """
        if not isinstance(problem, ContactProblem):
            raise TypeError(f"problem must be a ContactProblem, got {type(problem).__name__}")
        if problem.n_limits and problem.bounded.any():
            # bilateral joint-space rows as opposed unilateral pairs (finite bounds: an error)
            split, back = unilateral_form(problem, self.name)
            if lambda_guess is not None:
                lambda_guess = None  # a guess for the original rows does not fit the split problem
            return back(self.solve(split, v_guess))
        drop = inert_contacts(problem)
        with blas_threads(self.options.blas_threads):
            if not drop.any():
                return self._solve(problem, v_guess, lambda_guess)
            if lambda_guess is not None:
                lam = np.asarray(lambda_guess, dtype=float).reshape(-1)
                if lam.shape != (3 * problem.n_c,):
                    raise ValueError(f"lambda_guess must be a finite array of shape ({3 * problem.n_c},)")
                lambda_guess = lam.reshape(-1, 3)[~drop].reshape(-1)
            return expand_impulses(self._solve(without_contacts(problem, drop), v_guess, lambda_guess), drop)

    def _initial_impulses(self, problem: ContactProblem, lambda_guess: np.ndarray | None) -> np.ndarray:
        """(n_c, 3) starting impulses: ``lambda_guess`` (checked), else the previous step's
        (when ``options.warm_start`` and the contacts' trees match), else zeros."""
        n_c = problem.n_c
        if lambda_guess is not None:
            lam = np.array(lambda_guess, dtype=float).reshape(-1)
            if lam.shape != (3 * n_c,) or not np.isfinite(lam).all():
                raise ValueError(f"lambda_guess must be a finite array of shape ({3 * n_c},)")
            return lam.reshape(n_c, 3)
        warm = self._warm.get(problem) if self.options.warm_start else None
        return np.zeros((n_c, 3)) if warm is None else warm.reshape(n_c, 3)


@register_contact_solver("canal")
class CANALSolver(WarmStartedSolver):
    """CANAL (seed 000 Algorithm 1). ``CANALSolver(options=None, **overrides)``."""

    name = "canal"
    options_type = CANALOptions

    def _solve(self, problem, v_guess, lambda_guess) -> ALSolverResult:
        o = self.options
        t0 = time.perf_counter()
        form = rigid_contact_form(problem, o.theta)
        n_c, n_v = form.n_c, form.n_v
        v = np.array(problem.v0 if v_guess is None else v_guess, dtype=float)
        if v.shape != (n_v,) or not np.isfinite(v).all():
            raise ValueError(f"v_guess must be a finite array of shape ({n_v},)")
        v_hat = form.mid_velocity(v)
        lam = self._initial_impulses(problem, lambda_guess)
        A, J, e, mu, c = form.A, form.J, form.e, form.mu, form.compliance
        b = A @ form.v_free
        Jc = J.reshape(n_c, 3, n_v)
        D = 1.0 / np.sqrt(problem.M_diag)
        newton = _IslandNewton(problem, A, Jc)
        abs_JT = np.abs(J.T)
        stats = {"factor": 0.0, "line_search": 0.0, "metric": 0.0, "newton_no_descent": 0.0}
        history: list[float] = []
        beta = o.beta0
        pen_scale = _penalty_scale(problem, o.penalty_scaling)
        u = -lam
        z = (J @ v_hat).reshape(n_c, 3)  # z⁰ = J v̂⁰ + (u⁰ + λ⁰)/β
        z_p = z.copy()  # the slack that freezes p (relaxed, see CANALOptions.p_relaxation)
        omega = 1.0 if o.p_relaxation is None else o.p_relaxation
        last_gain = 0
        lam_back = (None, None)  # λ of the last two AL iterations (2-cycle test of the p relaxation)
        prev_primal = np.inf
        best = (np.inf, lam, v_hat)  # lowest-metric iterate: returned if the budget runs out
        newton_total = ls_total = 0
        status, message = ContactSolverStatus.MAX_ITERATIONS, f"no convergence in {o.max_iterations} AL iterations"
        it = 0
        primal = np.nan
        tm = time.perf_counter()
        acc = contact_residual(form, lam) if n_c else None
        stats["metric"] += time.perf_counter() - tm
        history.append(acc.residual if n_c else 0.0)
        if n_c == 0 or acc.residual <= metric_tolerance(lam, o.tol, o.rel_tol):
            if n_c == 0:
                v_hat = form.v_free.copy()
            else:
                v_hat = acc.v_hat
            status, message = ContactSolverStatus.SOLVED, ""
        while status is not ContactSolverStatus.SOLVED and it < o.max_iterations:
            it += 1
            # frozen friction term: ẽ = e + (0, 0, μ ‖z_t^l‖)  (eq. 21)
            e_tilde = e.copy()
            e_tilde[:, 2] += mu * np.hypot(z_p[:, 0], z_p[:, 1])
            bv = beta * pen_scale  # per-contact penalty β_i (n_c,)
            rho = 1.0 + bv * c
            # ---------------- Newton on h(v̂) with exact line search
            lam_new, G = np.empty((n_c, 3)), np.empty((n_c, 3, 3))
            for _ in range(o.max_newton):
                jv = (J @ v_hat).reshape(n_c, 3)
                x = -bv[:, None] * (jv + e_tilde) - u
                if HAVE_NUMBA:
                    project_cone_into(x, mu, rho, lam_new, G)
                else:
                    lam_new, G = project_cone_with_jacobian(x, mu, rho)
                jl = J.T @ lam_new.reshape(-1)
                Av = A @ v_hat
                r = Av - b - jl
                scale = max(np.linalg.norm(D * Av), np.linalg.norm(D * jl), np.linalg.norm(D * b))
                if not np.isfinite(r).all():
                    status, message = ContactSolverStatus.NUMERICAL_ERROR, "non-finite Newton residual"
                    break
                # round-off floor: λ = Π(λ̃*) cancels terms of size |λ̃*| ~ β‖Jv̂ + ẽ‖
                active = np.abs(x) * (lam_new != 0).any(axis=1)[:, None]
                floor = 64 * np.finfo(float).eps * np.linalg.norm(D * (abs_JT @ active.reshape(-1)))
                if np.linalg.norm(D * r) <= o.newton_rel_tol * scale + floor:
                    break
                tf = time.perf_counter()
                try:
                    d = newton.direction(G * bv[:, None, None], r)  # −H⁻¹ r, H = Â + Jᵀ(β ∂Π)J (eq. 24)
                except (LinAlgError, ValueError) as err:
                    status, message = ContactSolverStatus.NUMERICAL_ERROR, f"Cholesky failed: {err}"
                    break
                stats["factor"] += time.perf_counter() - tf
                newton_total += 1
                tl = time.perf_counter()
                jd = (J @ d).reshape(n_c, 3)
                Ad = A @ d
                dAd = float(d @ Ad)
                rd0 = float((Av - b) @ d)

                if HAVE_NUMBA:  # one compiled pass over the contacts per evaluation
                    def dphi(alpha, jv=jv, jd=jd, dAd=dAd, rd0=rd0, e_tilde=e_tilde, rho=rho, bv=bv, u=u):
                        s1, s2 = line_derivatives(alpha, jv, jd, e_tilde, u, bv, mu, rho)
                        return rd0 + alpha * dAd - s1, dAd + s2
                else:  # the numpy reference
                    def dphi(alpha, jv=jv, jd=jd, dAd=dAd, rd0=rd0, e_tilde=e_tilde, rho=rho, bv=bv, u=u):
                        return _line_derivatives_numpy(alpha, jv, jd, e_tilde, u, bv, mu, rho, rd0, dAd)

                if not rd0 - float(np.einsum("ci,ci->", jd, lam_new)) < 0:
                    stats["newton_no_descent"] += 1
                    break  # no descent left: round-off level
                alpha, n_ls = rtsafe_line_search(dphi, 1.0, o.ls_rel_tol, o.ls_max_iterations)
                ls_total += n_ls
                stats["line_search"] += time.perf_counter() - tl
                v_hat = v_hat + alpha * d
                if alpha * np.linalg.norm(d) <= 4 * np.finfo(float).eps * np.linalg.norm(v_hat):
                    break  # the step no longer changes v̂
            if status is ContactSolverStatus.NUMERICAL_ERROR:
                break
            jv = (J @ v_hat).reshape(n_c, 3)
            x = -bv[:, None] * (jv + e_tilde) - u
            lam_new = project_cone_with_jacobian(x, mu, rho, want_jacobian=False)[0]
            # ---------------- multiplier update (eq. 12-13): z = Jv̂ + (u + λ)/β, u ← u + β(Jv̂ − z)
            z = jv + (u + lam_new) / bv[:, None]
            u = u + bv[:, None] * (jv - z)  # = −λ
            z_p = omega * z + (1.0 - omega) * z_p
            primal = float(np.linalg.norm(jv - z))
            lam = lam_new
            tm = time.perf_counter()
            acc = contact_residual(form, lam)
            stats["metric"] += time.perf_counter() - tm
            history.append(acc.residual)
            if not np.isfinite(acc.residual):
                status, message = ContactSolverStatus.NUMERICAL_ERROR, "non-finite impulses"
                break
            if acc.residual < best[0]:
                if acc.residual < 0.9 * best[0]:
                    last_gain = it
                best = (acc.residual, lam.copy(), v_hat.copy())
            if o.p_relaxation is None and omega == 1.0 and it - last_gain >= 10 and _two_cycle(lam, *lam_back):
                omega = 0.5  # a 2-cycle of the cascade (A1 impacts): relax p from now on
            lam_back = (lam_back[1], lam.copy())
            if acc.residual <= metric_tolerance(lam, o.tol, o.rel_tol) or (o.al_tol > 0 and primal <= o.al_tol):
                status, message = ContactSolverStatus.SOLVED, ""
                break
            if primal > o.zeta * prev_primal:
                beta = min(o.kappa * beta, o.beta_max)
            prev_primal = primal
        if status is ContactSolverStatus.MAX_ITERATIONS and best[0] < history[-1]:
            _, lam, v_hat = best
            history.append(best[0])
        if o.warm_start and status is not ContactSolverStatus.NUMERICAL_ERROR:
            self._warm.put(problem, lam)
        v_next = form.next_velocity(v_hat)
        res = history[-1]
        return ALSolverResult(
            status=status, v=v_next, gamma=lam.reshape(-1), iterations=it, line_search_iterations=ls_total,
            residual=res, momentum_error=float("nan"), cost=float("nan"), solve_time=time.perf_counter() - t0,
            timings=stats, residual_history=tuple(history), solver="canal", message=message,
            inner_iterations=newton_total, beta=beta, primal_residual=primal,
        )
