"""Solver-neutral accuracy of a contact solve (seed 000 §VII, digest §5) and the single-step test
sets of seed 000 (a frozen contact problem perturbed by random external wrenches).

The metric scores the impulses alone, so that dual (PGS), primal (SAP) and primal-dual (CANAL,
SubADMM, NSN) solvers are compared on equal terms:

1. ``v̂ = v̂* + Â⁻¹ Jᵀ λ``: the dynamics hold exactly;
2. per contact, the natural-map residual ``r_i = ‖λ_i − T(λ_i − (J_i v̂ + e_i))‖`` with the strict
   operator T (eq. 17; β = 1), zero iff the Signorini–Coulomb conditions hold exactly;
3. ``residual = ‖r‖₂ / n_c`` (the seed divides by the number of contacts).

The value mixes impulse and velocity units, as the seed's does (β = 1).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .contact_laws import RigidContactForm, rigid_contact_form, strict_operator
from .contact_problem import ContactProblem, ContactSolverResult

__all__ = ["ContactAccuracy", "contact_residual", "natural_map_residual", "score_result", "perturbed_problems", "save_problem_set",
           "load_problem_set", "random_problem"]


@dataclass(frozen=True)
class ContactAccuracy:
    """Natural-map accuracy of impulses λ.

    Attributes:
        residual: ``‖r‖₂ / n_c`` (0 without contacts).
        per_contact: (n_c,) ``r_i``.
        v_hat: (n_v,) mid-step velocity recomputed from λ.
    """

    residual: float
    per_contact: np.ndarray
    v_hat: np.ndarray


def contact_residual(problem: ContactProblem | RigidContactForm, gamma: np.ndarray, theta: float = 0.0) -> ContactAccuracy:
    """Seed 000's accuracy metric of impulses ``gamma`` (3 n_c,) or (n_c, 3) on ``problem``."""
    form = problem if isinstance(problem, RigidContactForm) else rigid_contact_form(problem, theta)
    n_c = form.n_c
    lam = np.asarray(gamma, dtype=float).reshape(-1)
    if lam.shape != (3 * n_c,):
        raise ValueError(f"gamma must have 3 n_c = {3 * n_c} entries, got {lam.size}")
    if not np.isfinite(lam).all():
        return ContactAccuracy(float("inf"), np.full(n_c, np.inf), np.full(form.n_v, np.nan))
    v_hat = form.v_free + form.tree_solver().solve(form.J.T @ lam)
    if n_c == 0:
        return ContactAccuracy(0.0, np.zeros(0), v_hat)
    lam = lam.reshape(n_c, 3)
    y = (form.J @ v_hat).reshape(n_c, 3) + form.e
    per = natural_map_residual(lam, y, form.mu, form.compliance)
    return ContactAccuracy(float(np.linalg.norm(per) / n_c), per, v_hat)


def natural_map_residual(lam: np.ndarray, y: np.ndarray, mu: np.ndarray, compliance: np.ndarray) -> np.ndarray:
    """Per-contact ``‖λ_i − T(λ_i − y_i)‖`` (n_c,) for impulses λ and constraint velocities
    ``y = J v̂ + e`` (both (n_c, 3)), T the strict operator with ρ = 1 + c."""
    t = strict_operator(lam - y, mu, 1.0 + compliance)
    return np.linalg.norm(lam - t, axis=1)


def score_result(problem: ContactProblem, result: ContactSolverResult, theta: float = 0.0) -> float:
    """:func:`contact_residual` of a solver result's impulses (inf for non-finite impulses)."""
    return contact_residual(problem, result.gamma, theta).residual


def perturbed_problems(problem: ContactProblem, n_cases: int = 100, seed: int = 0,
                       wrench_scale: float = 1.0) -> list[ContactProblem]:
    """Single-step test set: ``problem`` with random external generalized forces added.

    Case ``k`` gets ``v* ← v* + Â⁻¹ δt f_k`` with ``f_k ~ N(0, (s g A_jj)²)`` per dof ``j``
    (``s = wrench_scale``, ``g`` = 9.81 m/s²): on a free body, a random wrench of the order of
    ``s`` times its weight (and the matching torque scale through the rotational inertia).

    Args:
        problem: the frozen step.
        n_cases: number of cases (the seed uses 100).
        seed: RNG seed (the set is deterministic given it).
        wrench_scale: s > 0.
    """
    if int(n_cases) < 1:
        raise ValueError(f"n_cases must be >= 1, got {n_cases}")
    if not (np.isfinite(wrench_scale) and wrench_scale > 0):
        raise ValueError(f"wrench_scale must be finite and > 0, got {wrench_scale}")
    rng = np.random.default_rng(seed)
    solver = rigid_contact_form(problem).tree_solver()
    scale = wrench_scale * 9.81 * np.diag(problem.A)
    out = []
    for _ in range(int(n_cases)):
        f = rng.normal(size=problem.n_v) * scale
        dv = solver.solve(problem.dt * f)
        out.append(replace(problem, v_star=problem.v_star + dv, v0=problem.v0))
    return out


def save_problem_set(problems: list[ContactProblem], directory: str | Path, prefix: str = "case") -> list[Path]:
    """Save each problem as ``directory/prefix_KKK.npz`` (``ContactProblem.save``)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return [p.save(directory / f"{prefix}_{k:03d}.npz") for k, p in enumerate(problems)]


def load_problem_set(directory: str | Path, prefix: str = "case") -> list[ContactProblem]:
    """The problems written by :func:`save_problem_set`, in order."""
    return [ContactProblem.load(f) for f in sorted(Path(directory).glob(f"{prefix}_*.npz"))]


def random_problem(seed: int, n_trees: int = 3, n_c: int = 6, dt: float = 1e-2, rigid: bool = True) -> ContactProblem:
    """A random contact problem (tests and benchmarks): ``n_trees`` trees of 6 dofs with random SPD
    blocks, ``n_c`` contacts between two random trees or a tree and the world, random dense 3×6
    Jacobian blocks, φ₀ ∈ ±1 mm, μ ∈ [0.1, 1], rigid (k = inf) or k ∈ [1e3, 1e5] N/m."""
    rng = np.random.default_rng(seed)
    starts = np.arange(n_trees + 1) * 6
    n_v = 6 * n_trees
    A = np.zeros((n_v, n_v))
    for t in range(n_trees):
        X = rng.normal(size=(6, 6))
        A[starts[t] : starts[t + 1], starts[t] : starts[t + 1]] = X @ X.T + 0.5 * np.eye(6)
    J = np.zeros((3 * n_c, n_v))
    trees = np.zeros((n_c, 2), dtype=int)
    for i in range(n_c):
        t1, t2 = rng.choice(n_trees + 1, size=2, replace=False) - 1
        trees[i] = (t1, t2)
        for t in (t1, t2):
            if t >= 0:
                J[3 * i : 3 * i + 3, starts[t] : starts[t + 1]] = rng.normal(size=(3, 6))
    return ContactProblem(A=A, v_star=rng.normal(size=n_v), J=J, phi0=rng.uniform(-1e-3, 1e-3, n_c),
                          mu=rng.uniform(0.1, 1.0, n_c),
                          stiffness=np.full(n_c, np.inf) if rigid else rng.uniform(1e3, 1e5, n_c),
                          dissipation=np.zeros(n_c), dt=dt, tree_starts=starts, contact_trees=trees)


def metric_tolerance(lam: np.ndarray, tol: float, rel_tol: float) -> float:
    """The stopping threshold on the accuracy metric: ``tol + rel_tol · ‖λ‖₂ / n_c``.

    The metric (``‖r‖₂ / n_c``, :func:`contact_residual`) is absolute: in impulse units [N·s] on
    the active contacts. An absolute ``tol`` alone is not scale-aware: the same 1e-10 is a
    relative accuracy of 1e-8 on a 1 kg cube at δt = 1 ms (λ ~ 1e-2 N·s) and of 1e-12 on a 50 kg
    robot at δt = 10 ms, below what float64 round-off of the Delassus products allows on
    ill-conditioned stacks (measured: CANAL's metric floors at 1.3e-9 with ‖λ‖/n_c = 7e-3 on
    cube-drop-3). ``rel_tol`` scales the threshold with the impulses (``lam`` (n_c, 3) or (3 n_c,)).
    """
    lam = np.asarray(lam).reshape(-1)
    n_c = lam.size // 3
    if n_c == 0 or rel_tol == 0.0:
        return float(tol)
    return float(tol + rel_tol * np.sqrt(float(lam @ lam)) / n_c)


class StagnationDetector:
    """Flags a stopped iteration: the best metric has not fallen by ``factor`` over the last
    ``window`` evaluations (a cycle, or the float64 floor of the method on the problem).

    ``update(metric) -> bool`` is True once stagnated. ``window = 0`` disables it.
    """

    def __init__(self, window: int, factor: float = 0.99):
        self.window = int(window)
        self.factor = float(factor)
        self.best = np.inf
        self.since = 0

    def update(self, metric: float) -> bool:
        if self.window <= 0:
            return False
        if metric < self.factor * self.best:
            self.best = metric
            self.since = 0
            return False
        self.best = min(self.best, metric)
        self.since += 1
        return self.since >= self.window
