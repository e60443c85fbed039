"""NSN: the non-smooth Newton method of seed 002 (Macklin et al. 2019) for rigid contact.

Adapted to the velocity-impulse form of :mod:`plants.sim.contact_laws` (unknowns ``v̂`` and the
impulses ``γ``; seed 002 uses positions and forces, the same equations up to the factor δt).
Per contact, with ``y = J v̂ + e`` (and normal compliance ``c``, 0 for rigid):

* normal NCP ``0 ≤ y_n + c γ_n ⟂ γ_n ≥ 0`` through an NCP function with the complementarity
  preconditioner ``r_n = W_nn`` (seed 002 eq. 66 in our units; ``W = J Â⁻¹ Jᵀ``): Fischer–
  Burmeister ``φ = a + r b − √(a² + r² b²)`` (eq. 93-95) or min-map (eq. 96-98);
* smooth isotropic friction as a fixed-point "compliance" (eq. 35-36, 100-105 with the digest's
  erratum: ``v`` not ``v²`` in eq. 102/104): ``φ_f = y_t + W_f γ_t`` with ``W_f`` held constant
  in the Newton matrix, ``r_f = ½ tr W_tt``; friction rows of contacts with ``μ γ_n ≤ 0`` are
  zeroed and ``W_f = 1`` (drives ``γ_t → 0``; the digest's reading of the erratum "λ_n ≥ 0").

Each Newton step solves the Schur complement ``(J̃ Â⁻¹ J̃ᵀ + C + εI) Δγ = J̃ Â⁻¹ g − h``
(eq. 59-62) by Jacobi-preconditioned conjugate residual (§8.2), ``Δv = Â⁻¹(J̃ᵀΔγ − g)``, and takes
the damped step ``t = 0.75`` (§8.1) or a backtracking line search on ``‖(g, h)‖``.

Robustness changes of issue #6 (defaults; the first implementation is ``NSNOptions.seed_file()``;
diagnosis and measurements in docs/contact-solvers.md §5.1): ``W_FB`` outside the cone uses the
projected friction magnitude μγ_n (clipping it at 0 made "stick outside the cone" a root of Φ);
the friction block of C carries the exact derivative along the friction magnitude,
``W 1 + ‖γ_t‖ ∂W/∂‖γ_t‖ t̂t̂ᵀ`` (symmetric; the frozen-W fixed point diverges on redundant
contacts); ε is relative to the Delassus diagonal; friction rows activate above a relative
threshold 1e-10 of max μγ_n.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from scipy.linalg import LinAlgError

from ._linalg import cholesky, cholesky_solve
from ._nsn_kernels import HAVE_NUMBA, DelassusBlocks, schur_conjugate_residual
from .accuracy import StagnationDetector, contact_residual, metric_tolerance
from .canal import ALSolverResult, WarmStartedSolver
from .contact_laws import rigid_contact_form
from .contact_problem import (
    ContactSolverStatus,
    SolverPresets,
    register_contact_solver,
)

__all__ = ["NSNOptions", "NSNSolver", "NSNTrace", "conjugate_residual", "fischer_burmeister", "friction_compliance"]

_CYCLE_RISE = 1.2  # the damping watchdog's rise factor (see _stalls)


def _stalls(history: list[float], patience: int, best: float, floor: float = 0.0) -> bool:
    """Whether the damped iteration stalls (called once no new lowest metric was reached in
    ``patience`` iterations): the last ``patience`` metrics cycle (:func:`_cycles`), or the last
    ``2 patience`` did not fall (the last ≥ 0.9× their largest) and either all lie above 1.2× the
    lowest (a plateau above the best iterate) or, above ``floor``, within 5 % of each other (no
    progress at all). Near the tolerance a flat metric is left alone: on cube-drop-5 step 283 the
    constant step sits at 7e-10 (tol 1e-10) for 75 iterations while the iterate drifts, then
    leaves the plateau and converges; restarts from the best iterate undo that drift."""
    if _cycles(history[-patience:]):
        return True
    w = history[-2 * patience:]
    if len(w) < 2 * patience:
        return False
    flat = max(w) <= 1.05 * min(w) and min(w) > floor  # no progress at all
    return w[-1] >= 0.9 * max(w) and (flat or min(w) > _CYCLE_RISE * best)


def _cycles(window: list[float]) -> bool:
    """Whether the metrics of a window (no new lowest value in it) cycle: they fall by 5 % below
    the window's first value and then rise by more than 10 % above that low (a1-drop-27 step 76
    alternates between 1.18e-4 and 1.34e-4 for 100 iterations at t = 0.75; t = 0.5 solves it to
    2e-9). A slow monotone decline,
    a flat stretch that ends in a rise (cube-drop-5 step 283 leaves its 7e-10 plateau through 4e-6
    and converges),
    or the hump after an active-set change (a rise, then a steady fall), is not a cycle: a shorter
    step would only slow it down (measured: cube-drop-3 step 287 rises from 2e-10 to 7e-7 and
    falls back to 9e-11 in 85 iterations at t = 0.75)."""
    low = window[0]
    for m in window[1:]:
        if m > 1.1 * low and low < 0.95 * window[0]:
            return True
        low = min(low, m)
    return False




@dataclass(frozen=True)
class NSNOptions(SolverPresets):
    """Options of :class:`NSNSolver` (defaults: seed 002 §8-9 unless stated; see
    :meth:`seed_file` for the options of the first implementation, kept for comparison; presets
    ``"default"`` and ``"realtime"`` (:meth:`realtime`)).

    A solve that uses its budget or stagnates returns its lowest-metric iterate (the damped
    iteration is not monotone in the metric) with status MAX_ITERATIONS or STAGNATED.

    Attributes:
        ncp: "fb" (Fischer–Burmeister, the paper's default) or "min" (min-map).
        max_iterations: Newton iteration budget (the paper uses fixed counts, 4-8). Ours: 300;
            the damped iteration converges linearly on impact steps of ``a1-drop-8`` (up to 117
            iterations to 1e-10), see docs/contact-solvers.md §5.
        tol: stop when the accuracy metric of seed 000 ≤ tol + rel_tol ‖λ‖/n_c (ours; the paper has
            no tolerance).
        rel_tol: scale-aware part of the threshold (:func:`~plants.sim.accuracy.metric_tolerance`;
            default 0: ``tol`` alone, the precision the tests check; the realtime preset uses 1e-6).
        stagnation_window: stop with status STAGNATED when the best metric has not fallen by 1 %
            in this many Newton iterations (0 disables). Measured: on clutter-40 step 21 the
            metric reached 1.8e-8, then cycled at 3.7e-7 for the rest of the 300 iterations; on
            perturbed cube-rest-5 steps it plateaus for up to ~40 iterations and then converges.
        linear_solver: how each Newton step's Schur system is solved. "cr" (the paper): Jacobi-
            preconditioned conjugate residual, ``linear_iterations`` steps; "cholesky": the dense
            Schur matrix ``D W D + C + εI`` factored (SPD by the ε shift) and solved exactly;
            "auto" (default): Cholesky when ``3 n_c ≤ direct_max_rows``, else CR. Measured
            (docs/contact-solvers.md §5.3): redundant contacts (a box's four coplanar corners)
            make the Schur matrix near-singular (condition ~1/ε), and 50 CR steps leave the
            Newton direction so inexact that the iteration stalls at a metric ~1e-8 (perturbed
            cube-rest-5 case 99: 8.6e-9 after 255 iterations; exact solves: 9e-13 in 84).
        direct_max_rows: the largest Schur system (3 n_c rows) "auto" factors densely.
        linear_iterations: conjugate-residual iterations per Newton step (paper 10-80).
        linear_rel_tol: CR stops early when the preconditioned residual fell by this factor.
        step: damping t of the step (paper 0.75, constant): the initial step when
            ``step_patience`` > 0.
        step_patience: the damping watchdog (ours; 0 = the paper's constant step): when the metric
            has not reached a new lowest value (by 1 %) in this many Newton iterations and the
            iteration stalls (:func:`_stalls`: it cycles, or sits on a plateau above 1.2× its best;
            a slow decline does not count), the iteration restarts
            from its lowest-metric iterate with the step times ``step_factor``, down to
            ``min_step`` (then ``stagnation_window`` ends a solve that still stalls). Measured (docs/contact-solvers.md §5.3): on sliding box–box
            manifold contacts of ``a1-drop-8`` the constant t = 0.75 cycles between metrics
            2e-3 and 9e-3 for 170 iterations, t = 0.5 converges linearly.
        step_factor: the watchdog's step reduction, in (0, 1).
        min_step: the smallest step the watchdog reduces to, in (0, step].
        line_search: "none" (constant t) or "backtracking" (Armijo on the merit ‖(g, h)‖ from
            t = 1, halving; no acceptable step within ``max_backtracks`` halvings ends the solve
            with status LINE_SEARCH_FAILED).
        max_backtracks: halvings of the backtracking line search.
        epsilon: identity shift ε of the Schur matrix (paper 1e-6, absolute in its units), relative
            to the mean diagonal named by ``epsilon_scale``.
        epsilon_scale: "delassus" (default): ε times the mean diagonal of the Delassus operator
            ``J Â⁻¹ Jᵀ``, fixed for the solve; "schur" (first implementation): ε times the mean
            diagonal of the current Schur matrix, which one huge friction compliance inflates
            for every row (measured: Newton steps of zero on an A1 step).
        friction_guard: what ``W_FB`` does outside the friction cone (‖γ_t‖ > μγ_n), where the
            FB fixed point predicts a negative friction magnitude. "project" (default): the
            predicted magnitude is μγ_n, ``W = r(√(v² + r²s²) − rs)/(rμγ_n)`` (continuous at
            s = 0; no zero of φ_f outside the cone); "clip" (first implementation): max(W, 0),
            which makes ``W = 0`` (stick) outside the cone a spurious zero of φ_f.
        friction_jacobian: ∂φ_f/∂γ_t in the Newton matrix. "frozen" (paper): ``W 1``;
            "magnitude" (default): ``W 1 + ‖γ_t‖ ∂W/∂‖γ_t‖ t̂t̂ᵀ`` (t̂ = γ_t/‖γ_t‖), the exact
            derivative along the friction magnitude, still symmetric and PSD. Without it the
            frozen-W fixed point diverges on redundant contacts (|slope| = rμγ_n/v > 1).
        activation_tol: friction rows of a contact are active when μγ_n > activation_tol ·
            max_i μγ_{n,i} (paper: > 0). Default 1e-10: an FB iterate γ_n → 0⁺ of 1e-18 made W
            ~ 1e18 and threw A1 steps back by 1e4 in the metric.
        preconditioner: the complementarity preconditioner r of the NCP functions (seed 002 §7,
            Fig. 17), in the paper's position/force units → ours (velocity/impulse: r_ours =
            r_paper/δt² on the normal rows, r_paper/δt on the friction rows;
            docs/contact-solvers.md §5.2): "effective_mass" (default, eq. 66: r = δt² [J M̃⁻¹ Jᵀ]_ii
            → r_n = W_nn, r_f = ½ tr W_tt), "h2" (the paper's constant r = δt² → r_n = r_f = 1
            [kg⁻¹]; δt on the friction rows, our reading) or "unit" (the paper's identity scaling
            r = 1 → r_n = 1/δt², r_f = 1/δt).
        start: "zero" (v̂ = 0, γ = 0, the paper's choice) or "warm" (problem.v0 and the
            previous solve's impulses when the contact set is the same).
        theta: mid-step θ of the constraint velocity (as CANAL).
        blas_threads: BLAS threads during the solve.
    """

    ncp: str = "fb"
    max_iterations: int = 300
    tol: float = 1e-10
    rel_tol: float = 0.0
    stagnation_window: int = 100
    linear_solver: str = "auto"
    direct_max_rows: int = 300
    linear_iterations: int = 50
    linear_rel_tol: float = 1e-14
    step: float = 0.75
    step_patience: int = 5
    step_factor: float = 2.0 / 3.0
    min_step: float = 0.25
    line_search: str = "none"
    max_backtracks: int = 30
    epsilon: float = 1e-6
    epsilon_scale: str = "delassus"
    friction_guard: str = "project"
    friction_jacobian: str = "magnitude"
    activation_tol: float = 1e-10
    preconditioner: str = "effective_mass"
    start: str = "zero"
    theta: float = 0.0
    blas_threads: int | None = 1

    def __post_init__(self) -> None:
        choices = {"ncp": ("fb", "min"), "line_search": ("none", "backtracking"), "start": ("zero", "warm"),
                   "epsilon_scale": ("delassus", "schur"), "friction_guard": ("project", "clip"),
                   "friction_jacobian": ("magnitude", "frozen"),
                   "preconditioner": ("effective_mass", "h2", "unit"),
                   "linear_solver": ("auto", "cr", "cholesky")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if int(self.direct_max_rows) < 0:
            raise ValueError(f"direct_max_rows must be >= 0, got {self.direct_max_rows}")
        for name in ("max_iterations", "linear_iterations", "max_backtracks"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be finite and > 0, got {self.tol}")
        if not (np.isfinite(self.rel_tol) and self.rel_tol >= 0):
            raise ValueError(f"rel_tol must be finite and >= 0, got {self.rel_tol}")
        if int(self.stagnation_window) < 0:
            raise ValueError(f"stagnation_window must be >= 0, got {self.stagnation_window}")
        if not 0 < self.step <= 1:
            raise ValueError(f"step must lie in (0, 1], got {self.step}")
        if int(self.step_patience) < 0:
            raise ValueError(f"step_patience must be >= 0, got {self.step_patience}")
        if not 0 < self.step_factor < 1:
            raise ValueError(f"step_factor must lie in (0, 1), got {self.step_factor}")
        if not 0 < self.min_step <= self.step:
            raise ValueError(f"min_step must lie in (0, step={self.step}], got {self.min_step}")
        if not (self.epsilon >= 0 and self.linear_rel_tol >= 0):
            raise ValueError("epsilon and linear_rel_tol must be >= 0")
        if not 0 <= self.activation_tol < 1:
            raise ValueError(f"activation_tol must lie in [0, 1), got {self.activation_tol}")
        if not 0 <= self.theta < 1:
            raise ValueError(f"theta must lie in [0, 1), got {self.theta}")

    @classmethod
    def realtime(cls, **overrides) -> NSNOptions:
        """The paper's fixed counts (§8-9): 8 Newton iterations of 40 conjugate-residual steps each,
        warm-started from the previous step's impulses, ``rel_tol = 1e-6``."""
        return cls(**{"max_iterations": 8, "linear_iterations": 40, "linear_solver": "cr", "start": "warm",
                      "rel_tol": 1e-6, **overrides})

    @classmethod
    def fixed_count(cls, newton: int = 8, linear: int = 40, **overrides) -> NSNOptions:
        """Exactly ``newton`` Newton iterations of ``linear`` conjugate-residual steps, no
        tolerance, the paper's zero start (seed 002 §9, Table 2: 4-8 Newton iterations per scene).
        The result's status is MAX_ITERATIONS unless the metric is exactly 0 (no contact); its
        ``residual`` says how accurate the step is (docs/BENCHMARKS.md: accuracy vs Newton count)."""
        base = dict(max_iterations=int(newton), linear_iterations=int(linear), tol=1e-300, rel_tol=0.0,
                    stagnation_window=0, step_patience=0, linear_solver="cr", start="zero")
        return cls(**{**base, **overrides})

    @classmethod
    def seed_file(cls, **overrides) -> NSNOptions:
        """The defaults of the first implementation (commit eda7849): 100 iterations, ε relative to
        the Schur diagonal, clipped W outside the cone, frozen W, activation at μγ_n > 0."""
        base = dict(max_iterations=100, epsilon_scale="schur", friction_guard="clip", friction_jacobian="frozen",
                    activation_tol=0.0, stagnation_window=0, step_patience=0, linear_solver="cr")
        return cls(**{**base, **overrides})


def _schur_direct(W: np.ndarray, Df: np.ndarray, Cs: np.ndarray, K: np.ndarray | None, rhs: np.ndarray) -> np.ndarray:
    """Exact solve of the Newton step's Schur system ``(D W D + C + εI) x = rhs`` (``Cs`` = C's
    diagonal + ε, (3 n_c,); ``K`` (n_c, 2) the rank-one friction blocks or None) by Cholesky; the
    matrix is SPD by the shift. Falls back to least squares if the factorization fails (ε = 0 on
    redundant contacts)."""
    S = Df[:, None] * W * Df[None, :]
    S[np.diag_indices_from(S)] += Cs
    if K is not None:
        i = 3 * np.arange(K.shape[0])
        for a in range(2):
            for b in range(2):
                S[i + a, i + b] += K[:, a] * K[:, b]
    try:
        return cholesky_solve(cholesky(S), rhs)
    except LinAlgError:
        return np.linalg.lstsq(S, rhs, rcond=None)[0]


def fischer_burmeister(a: np.ndarray, b: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scaled FB function ``φ = a + r b − √(a² + r² b²)`` and its partials (seed 002 eq. 93-95).

    Returns:
        (φ, ∂φ/∂a, ∂φ/∂b); at (0, 0) the Clarke element (0, r) of the paper.
    """
    rb = r * b
    root = np.hypot(a, rb)
    safe = np.where(root > 0, root, 1.0)
    da = np.where(root > 0, 1.0 - a / safe, 0.0)
    db = np.where(root > 0, (1.0 - rb / safe) * r, r)
    return a + rb - root, da, db


def conjugate_residual(matvec, b: np.ndarray, diag: np.ndarray, max_iterations: int, rel_tol: float = 0.0
                       ) -> tuple[np.ndarray, int]:
    """Jacobi-preconditioned conjugate residual for a symmetric (PSD) system (Saad 2003, as in
    the digest §2.5); starts from 0. Returns (x, iterations)."""
    Pinv = 1.0 / diag
    x = np.zeros_like(b)
    r = b.copy()
    z = Pinv * r
    Az = matvec(z)
    p, Ap = z.copy(), Az.copy()
    rho = float(z @ Az)
    z0 = np.linalg.norm(z)
    k = 0
    for k in range(1, max_iterations + 1):
        PAp = Pinv * Ap
        den = float(Ap @ PAp)
        if den <= 0 or rho == 0:
            k -= 1
            break
        a = rho / den
        x += a * p
        r -= a * Ap
        z -= a * PAp
        if np.linalg.norm(z) <= rel_tol * z0:
            break
        Az = matvec(z)
        rho_new = float(z @ Az)
        beta = rho_new / rho
        rho = rho_new
        p = z + beta * p
        Ap = Az + beta * Ap
    return x, k


def friction_compliance(v: np.ndarray, s: np.ndarray, mu_gn: np.ndarray, r: np.ndarray, ncp: str = "fb",
                        guard: str = "project") -> tuple[np.ndarray, np.ndarray]:
    """Fixed-point friction compliance ``W`` of seed 002 (eq. 35, 100-105) and ``∂W/∂s``.

    Args:
        v: (n,) slip speed ``‖y_t‖`` [m/s].
        s: (n,) cone slack ``μγ_n − ‖γ_t‖`` [N s].
        mu_gn: (n,) ``μγ_n`` [N s].
        r: (n,) complementarity preconditioner ``r_f`` [m/(N s²)].
        ncp: "fb": ``W = r(√(v² + r²s²) − rs)/(v + rμγ_n − √(v² + r²s²))`` (eq. 102/104 with
            the digest's erratum v, not v²); "min": 0 if ``v ≤ rs`` (stick), else
            ``(v − rs)/(μγ_n)`` (eq. 105).
        guard: FB outside the cone (s < 0): "project" replaces the denominator (r times the
            predicted friction magnitude) by ``rμγ_n``; "clip" keeps the formula (callers clip
            W at 0). 0/0 (v = ‖γ_t‖ = 0) gives W = 0 (stick).

    Returns:
        (W, ∂W/∂s), both (n,); unclipped.
    """
    if ncp == "min":
        slip = v > r * s
        safe = np.where(mu_gn > 0, mu_gn, 1.0)
        return np.where(slip, (v - r * s) / safe, 0.0), np.where(slip, -r / safe, 0.0)
    root = np.hypot(v, r * s)
    safe_root = np.where(root > 0, root, 1.0)
    num = r * (root - r * s)
    dnum = r * r * (r * s / safe_root - 1.0)
    den = v + r * mu_gn - root
    dden = -r * r * s / safe_root
    if guard == "project":
        out = s < 0
        den = np.where(out, r * mu_gn, den)
        dden = np.where(out, 0.0, dden)
    ok = den > 1e-300
    den = np.where(ok, den, 1.0)
    return np.where(ok, num / den, 0.0), np.where(ok, (dnum * den - num * dden) / (den * den), 0.0)


@dataclass(frozen=True)
class NSNTrace:
    """Per-iteration record of the last :meth:`NSNSolver.solve` (diagnostics and tests).

    Attributes:
        merit: ``‖(g, h)‖`` at every iterate (iterations + 1 entries; mixed units as the paper's).
        step: accepted step length t per Newton iteration.
        linear_iterations: conjugate-residual iterations per Newton iteration.
    """

    merit: tuple[float, ...]
    step: tuple[float, ...]
    linear_iterations: tuple[int, ...]


@register_contact_solver("nsn")
class NSNSolver(WarmStartedSolver):
    """Non-smooth Newton (seed 002 Algorithm 1) on rigid contact. ``NSNSolver(options=None, **overrides)``.

    ``last_trace`` (:class:`NSNTrace`) holds the merit, step lengths and CR iterations of the
    last solve.
    """

    name = "nsn"
    options_type = NSNOptions
    last_trace: NSNTrace | None = None

    # ------------------------------------------------------------------ residual and Jacobian
    def _system(self, form, Jc, v, gam, r_n, r_f):
        """Constraint residual h (n_c, 3), row scales D (n_c, 3) of ``J̃ = D J`` (the FB derivative
        on the normal row, 0 or 1 on the friction rows), diagonal C (n_c, 3) and the rank-one friction
        factor K (n_c, 2) of ``C_tt = W 1 + K Kᵀ`` (None when frozen)."""
        o = self.options
        mu, c = form.mu, form.compliance
        y = (Jc @ v) + form.e
        gn = gam[:, 2]
        a = y[:, 2] + c * gn
        if o.ncp == "fb":
            phi_n, da, db = fischer_burmeister(a, gn, r_n)
        else:
            act = a <= r_n * gn
            phi_n = np.where(act, a, r_n * gn)
            da = act.astype(float)
            db = np.where(act, 0.0, r_n)
        # friction fixed-point compliance W_f (eq. 35, 100-105)
        vt = np.hypot(y[:, 0], y[:, 1])
        gt = np.hypot(gam[:, 0], gam[:, 1])
        mgn = mu * gn
        Wf, dW_ds = friction_compliance(vt, mgn - gt, mgn, r_f, o.ncp, o.friction_guard)
        active = mgn > o.activation_tol * (float(mgn.max()) if mgn.size else 0.0)
        Wf = np.where(active, np.maximum(Wf, 0.0), 1.0)
        K = None
        if o.friction_jacobian == "magnitude":  # ∂(W γ_t)/∂γ_t = W 1 + ‖γ_t‖ (−∂W/∂s) t̂t̂ᵀ
            kappa = np.where(active & (gt > 0), np.maximum(-gt * dW_ds, 0.0), 0.0)
            K = np.sqrt(kappa)[:, None] * gam[:, :2] / np.where(gt > 0, gt, 1.0)[:, None]
        D = np.empty_like(y)
        D[:, :2] = active[:, None]
        D[:, 2] = da
        h = np.empty_like(y)
        h[:, :2] = np.where(active[:, None], y[:, :2], 0.0) + Wf[:, None] * gam[:, :2]
        h[:, 2] = phi_n
        C = np.stack([Wf, Wf, da * c + db], axis=1)
        return h, D, C, K

    def _solve(self, problem, v_guess, lambda_guess) -> ALSolverResult:
        o = self.options
        t0 = time.perf_counter()
        form = rigid_contact_form(problem, o.theta)
        n_c, n_v = form.n_c, form.n_v
        tree = form.tree_solver()
        A = form.A
        Jc = form.J.reshape(n_c, 3, n_v)
        X = tree.solve(form.J.T) if n_c else np.zeros((n_v, 0))
        Wd = np.einsum("cin,nci->ci", Jc, X.reshape(n_v, n_c, 3)) if n_c else np.zeros((0, 3))
        r_n = Wd[:, 2]  # complementarity preconditioner (eq. 66), velocity/impulse units
        r_f = 0.5 * (Wd[:, 0] + Wd[:, 1])
        if o.preconditioner != "effective_mass":  # the paper's constant scalings (Fig. 17), in our units
            dt = problem.dt
            r_n = np.full(n_c, 1.0 if o.preconditioner == "h2" else 1.0 / dt**2)
            r_f = np.full(n_c, 1.0 if o.preconditioner == "h2" else 1.0 / dt)
        delassus_mean = float(np.mean(Wd)) if n_c else 0.0
        Wd = Wd.reshape(-1)
        J = form.J
        direct = o.linear_solver == "cholesky" or (o.linear_solver == "auto" and 3 * n_c <= o.direct_max_rows)
        # the Schur solves: dense W = J Â⁻¹ Jᵀ for the direct solve, else W's blocks per tree, formed
        # once (compiled CR)
        W_dense = J @ X if direct and n_c else None
        delassus = (DelassusBlocks(J, X, problem.tree_starts, problem.contact_trees)
                    if HAVE_NUMBA and n_c and not direct else None)
        no_K = np.zeros((n_c, 2))
        if o.start == "zero":
            v_hat = np.zeros(n_v)
            gam = np.zeros((n_c, 3))
        else:
            v_hat = form.mid_velocity(problem.v0)
            warm = self._warm.get(problem)
            gam = np.zeros((n_c, 3)) if warm is None else warm
        if v_guess is not None:
            v_hat = form.mid_velocity(np.asarray(v_guess, float).reshape(-1))
        if lambda_guess is not None:
            gam = np.array(lambda_guess, dtype=float).reshape(n_c, 3)
        b = A @ form.v_free
        history, merits, steps, linear = [], [], [], []
        inner = ls_total = 0
        status, message = ContactSolverStatus.MAX_ITERATIONS, f"no convergence in {o.max_iterations} Newton iterations"
        it = 0
        t_lin = 0.0

        def residuals(v, g_):
            """(g, h, D, C, K, merit ‖(g, h)‖) at (v̂, γ), J̃ = D J."""
            h, D, C, K = self._system(form, Jc, v, g_, r_n, r_f)
            g = A @ v - b - J.T @ (D * g_).reshape(-1)
            return g, h, D, C, K, float(np.sqrt(g @ g + np.sum(h * h)))

        g, h, D, C, K, merit = residuals(v_hat, gam)
        stagnation = StagnationDetector(o.stagnation_window)
        best = (np.inf, gam, v_hat)  # lowest-metric iterate: returned if the solve does not converge
        t_step = o.step  # the damping, reduced by the watchdog (step_patience)
        watch = StagnationDetector(o.step_patience)
        recent: list[float] = []
        while True:
            acc = contact_residual(form, gam.reshape(-1)).residual if n_c else 0.0
            history.append(acc)
            merits.append(merit)
            if not np.isfinite(acc):
                status, message = ContactSolverStatus.NUMERICAL_ERROR, "non-finite impulses"
                break
            if acc < best[0]:
                best = (acc, gam.copy(), v_hat.copy())
            recent.append(acc)
            if (o.line_search == "none" and t_step > o.min_step and watch.update(acc)
                    and _stalls(recent, o.step_patience, watch.best, 1e3 * metric_tolerance(gam, o.tol, o.rel_tol))):
                # the damped iteration cycles: restart from the lowest-metric iterate, shorter steps
                t_step = max(o.min_step, t_step * o.step_factor)
                watch = StagnationDetector(o.step_patience)
                if best[0] < acc:
                    gam, v_hat = best[1].copy(), best[2].copy()
                    g, h, D, C, K, merit = residuals(v_hat, gam)
                    acc = best[0]
            if acc <= metric_tolerance(gam, o.tol, o.rel_tol):
                status, message = ContactSolverStatus.SOLVED, ""
                if n_c:  # report the velocities consistent with the impulses
                    v_hat = form.v_free + X @ gam.reshape(-1)
                else:
                    v_hat = form.v_free.copy()
                break
            if it >= o.max_iterations:
                break
            if stagnation.update(acc):
                status = ContactSolverStatus.STAGNATED
                message = f"the metric did not fall by 1 % in {o.stagnation_window} Newton iterations"
                break
            it += 1
            Df = D.reshape(-1)
            diag = Df * Df * Wd + C.reshape(-1)  # diagonal of D W D + C
            if K is not None:
                diag.reshape(n_c, 3)[:, :2] += K * K
            shift = o.epsilon * (float(np.mean(diag)) if o.epsilon_scale == "schur" else delassus_mean)
            Cs = C.reshape(-1) + shift
            tl = time.perf_counter()
            rhs = Df * (J @ tree.solve(g)) - h.reshape(-1)
            if W_dense is not None:
                dgam, k = _schur_direct(W_dense, Df, Cs, K, rhs), 0
            elif delassus is not None:
                dgam = np.empty(3 * n_c)
                k = schur_conjugate_residual(delassus.data, delassus.ptr, delassus.rows, delassus.row_ptr, Df, Cs,
                                             no_K if K is None else np.ascontiguousarray(K), rhs, diag + shift,
                                             o.linear_iterations, o.linear_rel_tol, delassus.work, dgam)
            else:  # the numpy reference: J̃ Â⁻¹ J̃ᵀ x through J, the tree solve and Jᵀ
                def matvec(x, Cs=Cs, K=K, Df=Df):
                    out = Df * (J @ tree.solve(J.T @ (Df * x))) + Cs * x
                    if K is not None:  # friction blocks W 1 + K Kᵀ
                        xt = x.reshape(n_c, 3)[:, :2]
                        out.reshape(n_c, 3)[:, :2] += K * np.sum(K * xt, axis=1)[:, None]
                    return out

                dgam, k = conjugate_residual(matvec, rhs, diag + shift, o.linear_iterations, o.linear_rel_tol)
            t_lin += time.perf_counter() - tl
            inner += k
            linear.append(k)
            dv = tree.solve(J.T @ (Df * dgam) - g)
            dgam = dgam.reshape(n_c, 3)
            if o.line_search == "none":
                t = t_step
                new = residuals(v_hat + t * dv, gam + t * dgam)
            else:  # Armijo on ‖(g, h)‖ from t = 1
                t = 1.0
                for _ in range(o.max_backtracks):
                    ls_total += 1
                    new = residuals(v_hat + t * dv, gam + t * dgam)
                    if new[5] <= (1 - 1e-4 * t) * merit:
                        break
                    t *= 0.5
                else:
                    status = ContactSolverStatus.LINE_SEARCH_FAILED
                    message = f"no decrease of the merit ‖(g, h)‖ in {o.max_backtracks} halvings"
                    break
            steps.append(t)
            v_hat = v_hat + t * dv
            gam = gam + t * dgam
            g, h, D, C, K, merit = new
        self.last_trace = NSNTrace(tuple(merits), tuple(steps), tuple(linear))
        if not status.ok and status is not ContactSolverStatus.NUMERICAL_ERROR and best[0] < history[-1]:
            _, gam, v_hat = best
            history.append(best[0])
        if status is not ContactSolverStatus.NUMERICAL_ERROR and o.start == "warm":
            self._warm.put(problem, gam)
        return ALSolverResult(
            status=status, v=form.next_velocity(v_hat), gamma=gam.reshape(-1).copy(), iterations=it,
            line_search_iterations=ls_total, residual=history[-1], solve_time=time.perf_counter() - t0,
            timings={"linear": t_lin}, residual_history=tuple(history), solver="nsn", message=message,
            inner_iterations=inner,
        )
