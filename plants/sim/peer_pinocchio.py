"""Pinocchio's own ADMM and PGS constraint solvers as contact solvers of our stepper.

``pin.ADMMConstraintSolver`` and ``pin.PGSConstraintSolver`` are registered as ``"pin-admm"`` and
``"pin-pgs"``.

They solve **our** per-step :class:`ContactProblem` (same contacts, same A, v*, J, φ₀, μ), so that a
scene stepped with ``load_scene(name, solver="pin-admm")`` differs from SAP only in the contact
solve. The problem handed to Pinocchio is the rigid (optionally normally compliant) Coulomb
problem in contact space (the dual / Delassus form, normal last as in ``ContactProblem``):

    find λ ∈ K = Π_i {‖λ_t‖ ≤ μ_i λ_n},  σ = (G + R) λ + g,
    σ + Φ(σ) ∈ K*,  λ ⟂ σ + Φ(σ)                    (NCP with the De Saxce correction Φ)

with

* ``G = J A⁻¹ Jᵀ`` the Delassus operator, computed from per-tree inverses of the blocks of ``A``
  (``A`` is block diagonal over trees), handed over as ``pin.DelassusOperatorDense``;
* ``g = J v* + e`` the free contact velocity plus the position term
  ``e_i = (0, 0, φ₀,i/(δt + τ_d,i))``:
  the normal constraint then reads ``φ₀ + (δt + τ_d) v_n ≥ 0`` — with τ_d = 0 the rigid
  "no penetration at the end of the step" condition (the Baumgarte-like bias of
  ``docs/contact-solvers.md``, the same ``e_n`` as our CANAL/PGS);
* ``R = diag(0, 0, c_i)`` with ``c_i = 1/(δt k_i (δt + τ_d,i))`` the normal compliance of a finite
  stiffness k (0 for ``k = inf``), added to the Delassus diagonal (``compliance=True``, default);
  with it the normal law is SAP's compliant law without SAP's near-rigid regularization and
  without SAP's regularized friction.

Then ``v = v* + A⁻¹ Jᵀ λ``. The result's ``iterations`` are Pinocchio's ADMM/PGS iterations,
``residual`` is ``max(primal feasibility, dual feasibility, complementarity)`` as Pinocchio
reports them, and ``status`` is SOLVED only when Pinocchio reports convergence (MAX_ITERATIONS
otherwise, NUMERICAL_ERROR on an exception or a non-finite answer): the stepper then refuses to
advance.

Known limitation (measured, ``benchmarks/bench_sim.py``): on multi-corner impacts (cube-drop-5
after ~0.3 s, clutter-40 after ~0.37 s) both Pinocchio solvers stall above tolerance 1e-8 and the
step is refused; resting stacks, sliding and the spring-cylinder run through. The failing problems
are solvable (the spectral ρ rule, ``pin.ADMMUpdateRule.SPECTRAL``, solves both first failures in
419 / 1369 iterations but stalls on later steps), so it is Pinocchio's ρ rule and budget.

Importing this module needs only Pinocchio (a hard dependency of ``plants``); ``plants.sim``
imports it, so the names are registered whenever ``plants.sim`` is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields, replace

import numpy as np

from .contact_problem import (
    ContactProblem,
    ContactSolver,
    ContactSolverResult,
    ContactSolverStatus,
    register_contact_solver,
    unilateral_form,
)

__all__ = [
    "PinocchioSolverOptions",
    "PinocchioADMMSolver",
    "PinocchioPGSSolver",
    "delassus_operator",
]


_RHO_RULES = ("osqp", "spectral", "linear", "constant")


@dataclass(frozen=True)
class PinocchioSolverOptions:
    """Options of :class:`PinocchioADMMSolver` / :class:`PinocchioPGSSolver`.

    Attributes:
        max_iterations: Pinocchio's iteration budget (ADMM iterations / PGS sweeps).
        abs_tol: absolute tolerance on primal/dual feasibility and complementarity (Pinocchio's
            ``absolute_*_tol``; its default is 1e-6, ours is tighter so that the peer is compared at
            an accuracy comparable to SAP's).
        rel_tol: relative tolerance on the same quantities (``relative_*_tol``).
        compliance: add the normal compliance ``c = 1/(δt k (δt + τ_d))`` of finite-stiffness
            contacts to the Delassus diagonal; False solves the rigid problem for every contact.
        warm_start: start from the previous solve's impulses when the contact count and the
            contact trees are the same as in the previous step.
        solve_ncp: Pinocchio's ``solve_ncp`` (True: the Coulomb NCP with the De Saxce correction;
            False: the convex relaxation (CCP) of Anitescu).
        lanczos_size: ADMM only: Lanczos steps of the spectral estimate of G that sets the initial
            ρ. Pinocchio's default (INT_MAX: a full decomposition) costs ~1 ms per step on a
            108-row problem and changes neither the iteration count nor the answer; 10 is ample
            for the extreme eigenvalues it needs.
        warmstart_rho: ADMM only: start ρ from the previous solve's final ρ
            (``warmstart_rho_with_previous_result``; Pinocchio's default is False).
        rho_rule: ADMM only: Pinocchio's ρ update rule, one of "osqp" (its default), "spectral",
            "linear", "constant" (``pin.ADMMUpdateRule``).
    """

    max_iterations: int = 1000
    abs_tol: float = 1e-8
    rel_tol: float = 1e-8
    compliance: bool = True
    warm_start: bool = True
    solve_ncp: bool = True
    lanczos_size: int = 10
    warmstart_rho: bool = True
    rho_rule: str = "osqp"

    def __post_init__(self) -> None:
        if int(self.max_iterations) < 1:
            raise ValueError(f"max_iterations must be >= 1, got {self.max_iterations}")
        if int(self.lanczos_size) < 1:
            raise ValueError(f"lanczos_size must be >= 1, got {self.lanczos_size}")
        if self.rho_rule not in _RHO_RULES:
            raise ValueError(f"rho_rule must be one of {_RHO_RULES}, got {self.rho_rule!r}")
        for name in ("abs_tol", "rel_tol"):
            val = getattr(self, name)
            if not (np.isfinite(val) and val >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {val}")


def _options(options: PinocchioSolverOptions | None, overrides: dict) -> PinocchioSolverOptions:
    if options is None:
        options = PinocchioSolverOptions()
    if not isinstance(options, PinocchioSolverOptions):
        raise TypeError(f"options must be PinocchioSolverOptions, got {type(options).__name__}")
    known = {f.name for f in fields(PinocchioSolverOptions)}
    unknown = set(overrides) - known
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; expected some of {sorted(known)}")
    return replace(options, **overrides) if overrides else options


def delassus_operator(problem: ContactProblem) -> tuple[np.ndarray, np.ndarray]:
    """``G = J A⁻¹ Jᵀ`` and ``X = A⁻¹ Jᵀ`` from batched inverses of the tree blocks of ``A``.

    Returns:
        G: (3 n_c, 3 n_c) Delassus operator; X: (n_v, 3 n_c).
    """
    p = problem
    JT = p.J.T
    X = np.empty_like(JT)
    ts = p.tree_starts
    sizes = np.diff(ts)
    for size in np.unique(sizes):  # batched over the trees of one size
        trees = np.flatnonzero(sizes == size)
        idx = ts[trees][:, None] + np.arange(size)[None, :]  # (n_t, size)
        blocks = p.A[idx[:, :, None], idx[:, None, :]]
        X[idx] = np.linalg.solve(blocks, JT[idx])
    G = p.J @ X
    return 0.5 * (G + G.T), X


class _PinocchioSolver(ContactSolver):
    """Shared driver: builds Pinocchio's constraint set per contact count, then solves."""

    name = ""

    def __init__(self, options: PinocchioSolverOptions | None = None, **overrides):
        import pinocchio as pin

        self._pin = pin
        self.options = _options(options, overrides)
        self._model = pin.Model()  # the constraint models only carry the cones (μ) here
        self._sets: dict[int, tuple] = {}  # n_c -> (StdVec_ConstraintModel, StdVec_ConstraintData)
        self._warm: tuple[np.ndarray, np.ndarray] | None = None  # (contact_trees, λ)
        self._solver, self._settings, self._result = self._make()

    # ---------------------------------------------------------------- Pinocchio objects
    def _make(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def _configure(self, settings) -> None:
        o = self.options
        settings.max_iterations = int(o.max_iterations)
        settings.absolute_feasibility_tol = float(o.abs_tol)
        settings.absolute_complementarity_tol = float(o.abs_tol)
        settings.relative_feasibility_tol = float(o.rel_tol)
        settings.relative_complementarity_tol = float(o.rel_tol)
        settings.solve_ncp = bool(o.solve_ncp)

    def _constraints(self, mu: np.ndarray):
        n_c = mu.size
        pin = self._pin
        if n_c not in self._sets:
            models = pin.StdVec_ConstraintModel()
            for _ in range(n_c):
                models.append(pin.PointContactConstraintModel(self._model, 0))
            datas = pin.StdVec_ConstraintData()
            for cm in models:
                datas.append(cm.createData())
            self._sets[n_c] = (models, datas)
        models, datas = self._sets[n_c]
        for cm, m in zip(models, mu.tolist()):  # Pinocchio's cones are per-object: no array form
            cm.extract().setFriction(m)
        return models, datas

    # ---------------------------------------------------------------- solve
    def solve(
        self, problem: ContactProblem, v_guess: np.ndarray | None = None
    ) -> ContactSolverResult:
        """Solve the step (``v_guess`` is ignored: Pinocchio's solvers iterate on impulses).
        Bilateral joint-space rows are solved as opposed unilateral pairs (``unilateral_form``)."""
        if not isinstance(problem, ContactProblem):
            raise TypeError(f"problem must be a ContactProblem, got {type(problem).__name__}")
        if problem.n_limits and problem.bounded.any():
            split, back = unilateral_form(problem, self.name)
            return back(self.solve(split, v_guess))
        t0 = time.perf_counter()
        p, o = problem, self.options
        n_c = p.n_c
        if n_c == 0:
            return ContactSolverResult(
                status=ContactSolverStatus.SOLVED, v=p.v_star.copy(), gamma=np.zeros(0),
                iterations=0, residual=0.0, solve_time=time.perf_counter() - t0, solver=self.name,
            )
        G, X = delassus_operator(p)
        g = p.J @ p.v_star
        g[2::3] += p.phi0 / (p.dt + p.dissipation)
        delassus = self._pin.DelassusOperatorDense(G)
        if o.compliance:
            R = np.zeros(3 * n_c)
            with np.errstate(divide="ignore"):
                R[2::3] = 1.0 / (p.dt * p.stiffness * (p.dt + p.dissipation))  # 0 for k = inf
            if R.any():
                delassus.updateCompliance(R)
        models, datas = self._constraints(p.mu)
        res = self._result
        warm = self._warm
        if o.warm_start and warm is not None and warm[0].shape == p.contact_trees.shape \
                and np.array_equal(warm[0], p.contact_trees):
            res.setConstraintImpulseGuess(warm[1])
        else:
            res.clearConstraintImpulseGuess()
        t_setup = time.perf_counter() - t0
        message = ""
        try:
            self._solver.solve(delassus, g, models, datas, self._settings, res)
            lam = np.asarray(res.retrieveConstraintImpulses(), dtype=float).copy()
            converged = bool(res.converged)
            iterations = int(res.iterations)
            residual = float(max(res.primal_feasibility, res.dual_feasibility, res.complementarity))
        except (RuntimeError, ValueError) as err:  # Pinocchio raises RuntimeError on bad input
            lam, converged, iterations, residual = np.full(3 * n_c, np.nan), False, 0, float("nan")
            message = f"pinocchio: {err}"
        v = p.v_star + X @ lam
        if not (np.isfinite(lam).all() and np.isfinite(v).all()):
            status = ContactSolverStatus.NUMERICAL_ERROR
            message = message or "non-finite impulses"
            self._warm = None
        elif not converged:
            status = ContactSolverStatus.MAX_ITERATIONS
            message = f"no convergence in {o.max_iterations} iterations (residual {residual:.3g})"
            self._warm = None
        else:
            status = ContactSolverStatus.SOLVED
            self._warm = (p.contact_trees.copy(), lam.copy())
        return ContactSolverResult(
            status=status, v=v, gamma=lam, iterations=iterations, residual=residual,
            solve_time=time.perf_counter() - t0, timings={"setup": t_setup}, solver=self.name,
            message=message,
        )


@register_contact_solver("pin-admm")
class PinocchioADMMSolver(_PinocchioSolver):
    """Pinocchio's ``ADMMConstraintSolver`` on our contact problem (module docstring).

    ``PinocchioADMMSolver(options=None, **overrides)``; Pinocchio's ADMM defaults otherwise
    (OSQP-style ρ update, initial ρ from a spectral estimate of G, μ_prox = 1e-6), except the
    documented ``lanczos_size`` and ``warmstart_rho`` of :class:`PinocchioSolverOptions`.
    """

    name = "pin-admm"

    def _make(self):
        pin = self._pin
        settings = pin.ADMMSolverSettings()
        self._configure(settings)
        settings.lanczos_size = int(self.options.lanczos_size)
        settings.warmstart_rho_with_previous_result = bool(self.options.warmstart_rho)
        settings.admm_update_rule = getattr(pin.ADMMUpdateRule, self.options.rho_rule.upper())
        return pin.ADMMConstraintSolver(), settings, pin.ADMMSolverResult()


@register_contact_solver("pin-pgs")
class PinocchioPGSSolver(_PinocchioSolver):
    """Pinocchio's ``PGSConstraintSolver`` on our contact problem (module docstring).

    ``PinocchioPGSSolver(options=None, **overrides)``; over-relaxation 1 (Pinocchio's default).
    """

    name = "pin-pgs"

    def _make(self):
        pin = self._pin
        settings = pin.PGSSolverSettings()
        self._configure(settings)
        return pin.PGSConstraintSolver(), settings, pin.PGSSolverResult()
