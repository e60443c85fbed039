"""Time stepping of a :class:`~plants.sim.scene.Scene`: the two-stage θ-method of seed 001 §III.

Per step (Algorithm 1), from (q₀, v₀) at time t:

1. free motion: solve m(v*) = M(q^θ)(v* − v₀) − δt k(q^θ, v^θ) = 0 (eqs. 7, 13); explicit in v*
   for θ = 0 (one mass-matrix solve), else by Newton iterations with the SPD approximation
   A = M + δt² θ θ_vq K + δt θ D of ∂m/∂v (eq. 15);
2. contact: detect contacts at q₀ (coal + closed forms), build the solver-neutral
   :class:`ContactProblem` (A, v*, J(q₀), φ₀, k, τ_d, μ, trees) and solve it (SAP by default).
   The scene's joint position limits near their bound are appended as rigid frictionless
   unilateral constraints (``ContactProblem.n_limits``; seed 001 §VII), followed by its
   bilateral constraints (weld, ball, distance), couplers, implicit PD actuators and joint dry
   friction, one scalar row each with an impulse interval (``docs/sap.md`` §11);
3. positions: q = q₀ ⊕ δt v^{θ_vq}, v^{θ_vq} = θ_vq v + (1 − θ_vq) v₀ (eq. 12; ⊕ is
   ``pinocchio.integrate``, exact on the free-flyer Lie group).

The non-contact forces are k = τ(t, q, v) − C(q, v)v − g(q) + spring-dampers, with τ from an
optional controller (the actuation hook), held constant over the step.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ContactSolveError, SimulationDivergedError
from .._validation import duration_steps, number, vector
from ..progress import ProgressLine
from ._blas import blas_threads
from ._geometry_kernels import HAVE_NUMBA
from ._linalg import cholesky, cholesky_solve
from ._stepper_kernels import contact_rows, explicit_free_motion, explicit_free_motion_blocks, geometry_poses, joint_limit_rows, overlap_ratios
from .contact_problem import (
    ContactBodies,
    ContactProblem,
    ContactSolver,
    ContactSolverResult,
    ContactSolverStatus,
    make_contact_solver,
)
from .diagnostics import (
    NonConvergenceWarning,
    PlausibilityFlag,
    PlausibilityOptions,
    PlausibilityWarning,
    ConstraintFallbackWarning,
    body_sizes,
    shape_size,
    suggest_dt,
    suggest_margin_dt,
)
from .geometry import ContactDetector, HalfSpace, _empty_contacts, tangent_basis
from .scene import Scene
from .tree_dynamics import CHUNK_DOFS, TreeDynamics
from .trajectory import Trajectory  # noqa: F401  (re-exported: plants.sim.stepper.Trajectory)

__all__ = ["SCHEMES", "Simulator", "Trajectory"]

SCHEMES: dict[str, tuple[float, float]] = {
    "explicit_euler": (0.0, 0.0),
    "symplectic_euler": (0.0, 1.0),
    "implicit_euler": (1.0, 1.0),
    "midpoint": (0.5, 0.5),
}
"""θ-method parameters (θ, θ_vq) of seed 001 §III (table after eq. 12)."""

_NO_CONTACTS = _empty_contacts()

STAT_FIELDS = (
    "status",
    "iterations",
    "line_search_iterations",
    "n_contacts",
    "residual",
    "momentum_error",
    "cost",
    "min_phi",
    "free_motion_iterations",
    "solve_time",
    "step_time",
    "penetration_ratio",
    "flags",
)
_INT_STATS = ("status", "iterations", "line_search_iterations", "n_contacts", "free_motion_iterations", "flags")


class Simulator:
    """Steps a scene with a registered contact solver.

    Args:
        scene: the :class:`Scene`.
        solver: a registered solver name ("sap", ...) or a :class:`ContactSolver` instance.
        dt: time step δt [s] > 0.
        scheme: one of :data:`SCHEMES` ("symplectic_euler" by default, as Drake's discrete SAP).
        controller: optional ``controller(t, q, v) -> tau`` returning generalized forces (n_v,)
            applied during the step (zero on unactuated dofs). Each entry is clamped to the
            scene's effort limit of its dof (``Scene.effort_limit``: the robot file's effort
            limits; opt out with ``SceneBuilder.add_urdf(effort_limits=False)``). The scene's PD
            actuators (``Scene.actuators``) act besides it, implicitly in the contact solve; their
            targets: :meth:`set_actuator_targets`.
        solver_options: options of the solver when ``solver`` is a name: keyword options (a dict),
            a preset name (``"default"``, ``"realtime"``: the fixed iteration budgets of the seeds,
            see each solver's ``Options.realtime``) or an options object.
        strict: raise :class:`plants.errors.ContactSolveError` on a step whose solve did not meet
            its stopping criterion (tests, solver research). Default False: the step advances on
            the solver's best iterate, ``traj.stats`` records its status, residual and iterations,
            and :meth:`run` ends with one :class:`~plants.sim.diagnostics.NonConvergenceWarning`
            summarizing such steps. A non-finite solution always raises.
        plausibility: thresholds of the per-step plausibility checks (deep penetration, energy
            growth), warned once per run with a suggested δt; None disables them.
        free_motion_tol: relative tolerance of the implicit free-motion Newton solve.
        blas_threads: BLAS threads while stepping (1: the matrices are small; None: leave as is).
        max_speed: largest |v_i| [m/s or rad/s] a step may produce before the simulator reports
            divergence (:class:`plants.errors.SimulationDivergedError`) instead of advancing
            (None: no check). A solver can report convergence on a step whose velocities are
            finite but absurd (a badly conditioned impact); without this bound such a run went
            on with bodies 1e14 m away.
        limit_stiffness: how the scene's joint-limit constraints (and its bilateral constraints
            and couplers without a given compliance) enter the contact problem:
            ``"near_rigid"`` (default: a stiffness whose period is one step on the dof's effective
            inertia, SAP's own regularization of a rigid constraint, seed 001 eq. 29; the other
            solvers converge much better with it) or ``"rigid"`` (k = inf).
        compiled: run the per-step assembly (geometry poses, contact rows, the explicit free motion,
            joint-limit rows, the penetration check) as compiled kernels (numba,
            :mod:`plants.sim._stepper_kernels`) when numba is present; False: the readable numpy
            reference, which gives the same trajectory to round-off (``tests/test_sim_fast_path.py``).
            The SAP solver has its own switch (``solver_options={"compiled": False}``). The profile
            behind it: docs/sap.md §9.1.
    """

    def __init__(
        self,
        scene: Scene,
        solver: str | ContactSolver = "sap",
        dt: float = 1e-3,
        scheme: str = "symplectic_euler",
        controller: Callable[[float, np.ndarray, np.ndarray], np.ndarray] | None = None,
        solver_options: dict[str, Any] | None = None,
        free_motion_tol: float = 1e-12,
        free_motion_max_iterations: int = 30,
        blas_threads: int | None = 1,
        max_speed: float | None = 1e3,
        strict: bool = False,
        plausibility: PlausibilityOptions | None = PlausibilityOptions(),
        limit_stiffness: str = "near_rigid",
        compiled: bool = True,
    ):
        import pinocchio as pin

        self._pin = pin
        if not isinstance(scene, Scene):
            raise TypeError(f"scene must be a Scene, got {type(scene).__name__}")
        try:
            dt = float(dt)
        except (TypeError, ValueError) as err:
            raise TypeError(f"dt must be a float, got {type(dt).__name__}") from err
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be a finite time step > 0 [s], got {dt}")
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {sorted(SCHEMES)}, got {scheme!r}")
        if controller is not None and not callable(controller):
            raise TypeError("controller must be callable(t, q, v) -> tau")
        self.scene = scene
        self.dt = dt
        self.scheme = scheme
        self.theta, self.theta_vq = SCHEMES[scheme]
        if not isinstance(strict, (bool, np.bool_)):
            raise TypeError(f"strict must be a bool, got {strict!r}")
        if plausibility is not None and not isinstance(plausibility, PlausibilityOptions):
            raise TypeError(f"plausibility must be PlausibilityOptions or None, got {type(plausibility).__name__}")
        self.strict = bool(strict)
        self.plausibility = plausibility
        if isinstance(solver, str):
            if solver_options is None or isinstance(solver_options, dict):
                self.solver = make_contact_solver(solver, **(solver_options or {}))
            else:  # a preset name or an options object
                self.solver = make_contact_solver(solver, options=solver_options)
        else:
            if solver_options:
                raise ValueError("solver_options applies only when solver is a name, not a ContactSolver instance")
            self.solver = solver
        if not isinstance(self.solver, ContactSolver):
            raise TypeError(f"solver must be a name or a ContactSolver, got {type(solver).__name__}")
        self.controller = controller
        self.free_motion_tol = float(free_motion_tol)
        self.free_motion_max_iterations = int(free_motion_max_iterations)
        self.blas_threads = blas_threads
        if max_speed is not None and not (np.isfinite(max_speed) and max_speed > 0):
            raise ValueError(f"max_speed must be a finite speed > 0 [m/s] or None, got {max_speed!r}")
        self.max_speed = None if max_speed is None else float(max_speed)
        if limit_stiffness not in ("near_rigid", "rigid"):
            raise ValueError(f"limit_stiffness must be 'near_rigid' or 'rigid', got {limit_stiffness!r}")
        self.limit_stiffness = limit_stiffness
        if not isinstance(compiled, (bool, np.bool_)):
            raise TypeError(f"compiled must be a bool, got {compiled!r}")
        self.compiled = bool(compiled) and HAVE_NUMBA
        self.model = scene.model
        self._data = None  # the whole model's pinocchio.Data, created on first use (see `data`)
        # many trees (a clutter of objects): their rigid-body terms per chunk of trees (no Data of
        # n_v³ tensors, O(n_v) cost); one small tree or the reference path: the whole model's Data
        self._dyn = None
        if self.compiled and scene.model.nv > CHUNK_DOFS and scene.n_trees > 1:
            try:
                self._dyn = TreeDynamics(scene.model, scene.tree_starts, scene.tree_of_joint)
            except (ValueError, RuntimeError, TypeError):  # a model Pinocchio cannot copy tree by tree
                self._dyn = None  # (e.g. a joint type without a Python copy): the whole model's Data
        self._precompute()
        self.set_state(scene.q0, scene.v0, 0.0)
        self._in_run = False
        self.last_problem: ContactProblem | None = None
        self.last_result: ContactSolverResult | None = None
        self._fm_iterations = 0

    @property
    def data(self) -> Any:
        """The whole model's ``pinocchio.Data`` (created on first use: Pinocchio allocates n_v³-sized
        tensors in it, ~3 GB at n_v = 360). A compiled simulator of many trees steps on per-chunk
        data instead (:class:`~plants.sim.tree_dynamics.TreeDynamics`) and never creates it."""
        if self._data is None:
            self._data = self.model.createData()
        return self._data

    # ------------------------------------------------------------------ state
    def set_state(self, q: np.ndarray, v: np.ndarray, t: float = 0.0) -> None:
        """Set (q, v, t); ValueError on wrong sizes or non-finite values."""
        q = vector("q", q, self.model.nq).copy()
        v = vector("v", v, self.model.nv).copy()
        self.q, self.v, self.t = q, v, number("t", t)
        self.step_index = 0

    def _precompute(self) -> None:
        """Per-scene constant structures used by every step (nothing here depends on the state)."""
        scene, nv = self.scene, self.model.nv
        self._tril = np.tril_indices(nv, -1)
        # joints that carry geometry: only their poses and Jacobian supports are needed per step
        joints, slot = np.unique(scene.geom_joint, return_inverse=True)
        self._geom_joints = [int(j) for j in joints]
        self._geom_slot = slot.astype(np.int64)
        self._slot_support = np.ascontiguousarray(scene.joint_support[joints])  # (n_gj, n_v) 0/1
        self._slot_tree = scene.tree_of_joint[joints].astype(np.int64)
        self._n_geoms = scene.n_geoms
        self._pair_w = scene.pair_weight_a.reshape(-1)
        self._pair_k = scene.pair_stiffness.reshape(-1)
        self._pair_tau = scene.pair_dissipation.reshape(-1)
        self._pair_mu = scene.pair_mu.reshape(-1)
        self._tree_starts = np.array(scene.tree_starts, dtype=np.int64)
        self._tree_starts.flags.writeable = False
        # joint limits (the scene's scalar joints with a finite limit) and effort limits
        self._limit_dof = np.asarray(getattr(scene, "limit_dof", np.zeros(0, np.int64)), dtype=np.int64)
        self._limit_q = np.asarray(getattr(scene, "limit_q_index", np.zeros(0, np.int64)), dtype=np.int64)
        self._limit_lower = np.asarray(getattr(scene, "limit_lower", np.zeros(0)), dtype=float)
        self._limit_upper = np.asarray(getattr(scene, "limit_upper", np.zeros(0)), dtype=float)
        self._dof_tree = np.repeat(np.arange(self._tree_starts.size - 1), np.diff(self._tree_starts))
        # constraints beyond contact: bilateral (weld, ball, distance), couplers, PD actuators,
        # joint damping (implicit in A) and dry friction (docs/sap.md "Constraints beyond contact")
        self._constraints = tuple(getattr(scene, "constraints", ()))
        self._couplers = tuple(getattr(scene, "couplers", ()))
        self._actuators = tuple(getattr(scene, "actuators", ()))
        self._pd_dof = np.array([a.dof for a in self._actuators], dtype=np.int64)
        self._pd_q = np.array([a.q_index for a in self._actuators], dtype=np.int64)
        self._pd_kp = np.array([a.kp for a in self._actuators], dtype=float)
        self._pd_kd = np.array([a.kd for a in self._actuators], dtype=float)
        self._pd_effort = np.array([a.effort_limit for a in self._actuators], dtype=float)
        self.actuator_targets = np.array([a.target for a in self._actuators], dtype=float)
        self.actuator_target_velocities = np.zeros(len(self._actuators))
        damping = np.asarray(getattr(scene, "joint_damping", np.zeros(nv)), dtype=float)
        self._joint_damping = damping if (damping > 0).any() else None
        friction = np.asarray(getattr(scene, "joint_friction", np.zeros(nv)), dtype=float)
        self._friction_dof = np.flatnonzero(friction > 0)
        self._friction = friction[self._friction_dof]
        # solvers without bounded rows (all but SAP): no dry friction, explicit effort-limited PD
        self._bounded_ok = bool(getattr(self.solver, "bounded_constraints", False))
        self._pd_explicit = np.zeros(self._pd_dof.size, dtype=bool)
        if not self._bounded_ok:
            self._pd_explicit = np.isfinite(self._pd_effort)
            joints = list(self.model.joints)  # one copy (each model.joints access copies the vector)
            name_of_dof = {jm.idx_v: self.model.names[j] for j, jm in enumerate(joints) if j and jm.nv == 1}
            left = [name_of_dof.get(int(d), str(d)) for d in self._friction_dof]
            if self._friction_dof.size or self._pd_explicit.any():
                warnings.warn(
                    f"contact solver {getattr(self.solver, 'name', '') or type(self.solver).__name__} cannot take "
                    f"bounded joint-space constraints (solver 'sap' can): "
                    + (f"the dry friction of joints {left} is left out; " if left else "")
                    + (f"{int(self._pd_explicit.sum())} effort-limited PD actuators are evaluated explicitly "
                       f"(clamped at the step's start; stable while δt·√(kp/m) < 2)" if self._pd_explicit.any() else "")
                    + ". Pass add_urdf(joint_dynamics=False) to drop the file's friction silently.",
                    ConstraintFallbackWarning, stacklevel=3)
            self._friction_dof, self._friction = self._friction_dof[:0], self._friction[:0]
        self._fixed = self._fixed_rows()
        self._any_explicit_pd = bool(self._pd_explicit.any())
        self._inverses: list = [None, {}]  # (A of the step, {tree: inverse of its block})
        effort = np.asarray(getattr(scene, "effort_limit", np.full(nv, np.inf)), dtype=float)
        self._effort = effort if np.isfinite(effort).any() else None
        self._geom_size = body_sizes(scene.geometries)  # (n_geoms,) [m], for the penetration check
        self._geom_names = [g.name for g in scene.geometries]
        self._zero_diagonal = np.zeros(nv)  # A = M + diag(0) for the explicit free motion
        self._zero_diagonal.flags.writeable = False
        if self._dyn is not None:  # M(q)'s chunk blocks (TreeDynamics.mass_chunks)
            c_max = int(np.diff(self._dyn.chunk_v).max())
            self._M_chunks = np.zeros((len(self._dyn.chunks), c_max, c_max))
        self._A_pool: list[np.ndarray] = []  # A buffers of the chunked path (_recycled_A)
        self._joint_H = np.empty((len(self._geom_joints), 4, 4))  # poses of the joints carrying geometry
        self._hulls = self._hull_detector()

    def _hull_detector(self) -> ContactDetector | None:
        """Detector of the pairs of *body hulls* that the scene's contacts stand in for.

        A body's hull is its largest geometry (the box of a cube carrying corner spheres). Two
        bodies that interact only through other geometries (a cube's corners against another cube's
        box, box-box excluded) get their hull pair checked for overlap, for the plausibility check
        alone: a corner that slid past a box's top edge is measured against a side face (1-2 mm),
        while the boxes' hulls overlap by the real depth. Bodies with no allowed pair (a robot and
        the ground when the scene excludes them) are not checked, nor anchored geometry (a corner
        against a half-space is measured against its only face)."""
        scene, geoms = self.scene, self.scene.geometries
        if self.plausibility is None or not geoms:
            return None
        own = np.array([shape_size(g.shape) for g in geoms])  # each geometry's own size (half-space: inf)
        joint = scene.geom_joint
        hull = {}  # body (joint; each anchored geometry is its own) -> its largest geometry
        for i, g in enumerate(geoms):  # loop over geometries once, at construction
            key = ("g", i) if joint[i] == 0 else ("j", int(joint[i]))
            if key not in hull or own[i] > own[hull[key]]:
                hull[key] = i
        body = [("g", i) if joint[i] == 0 else ("j", int(joint[i])) for i in range(len(geoms))]
        det = scene.detector
        allowed = {frozenset((body[a], body[b])) for a, b in zip(det.a.tolist(), det.b.tolist())}
        existing = {frozenset((a, b)) for a, b in zip(det.a.tolist(), det.b.tolist())}
        pairs = []
        for bodies in allowed:  # body pairs that interact: their hulls, unless already a scene pair
            if len(bodies) != 2 or any(k[0] == "g" for k in bodies):
                continue  # anchored geometry: a corner is measured against a half-space face correctly
            ka, kb = tuple(bodies)
            ha, hb = hull[ka], hull[kb]
            if frozenset((ha, hb)) not in existing and not (isinstance(geoms[ha].shape, HalfSpace)
                                                          and isinstance(geoms[hb].shape, HalfSpace)):
                pairs.append((ha, hb))
        if not pairs:
            return None
        return ContactDetector(geoms, np.array(sorted(pairs), dtype=np.int64), 0.0, max_contacts_per_pair=1)

    # ------------------------------------------------------------------ dynamics pieces
    def _mass(self, q: np.ndarray) -> np.ndarray:
        if self._dyn is not None:
            M = np.zeros((self.model.nv, self.model.nv))
            self._dyn.mass(q, M)
        else:
            M = self._pin.crba(self.model, self.data, q).copy()  # upper triangle filled
        M[self._tril] = M.T[self._tril]
        return M

    def _forces(self, q, v, tau) -> np.ndarray:
        if self._dyn is not None:
            k = tau - self._dyn.nonlinear_effects(q, v)
        else:
            k = tau - self._pin.nonLinearEffects(self.model, self.data, q, v)
        return k + self.scene.spring_forces(q, v) if self.scene.has_springs else k

    def _actuation(self, t, q, v) -> np.ndarray:
        if self.controller is None:
            return self._zero_diagonal  # read-only zeros (n_v,)
        tau = np.asarray(self.controller(t, q.copy(), v.copy()), dtype=float).reshape(-1)
        if tau.shape != (self.model.nv,) or not np.isfinite(tau).all():
            raise ValueError(f"controller must return finite generalized forces of shape ({self.model.nv},), got {tau.shape}")
        if self._effort is not None:  # the file's effort limits (SceneBuilder.add_urdf(effort_limits=...))
            tau = np.clip(tau, -self._effort, self._effort)
        return tau

    def _explicit_pd(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(n_v,) clamped PD torques at the step's start of the actuators the solver cannot take
        implicitly (effort-limited, solvers without bounded rows)."""
        sel = self._pd_explicit
        tau = np.zeros(self.model.nv)
        kp, kd = self._pd_kp[sel], self._pd_kd[sel]
        u = (-kp * (q[self._pd_q[sel]] - self.actuator_targets[sel])
             - kd * (v[self._pd_dof[sel]] - self.actuator_target_velocities[sel]))
        np.add.at(tau, self._pd_dof[sel], np.clip(u, -self._pd_effort[sel], self._pd_effort[sel]))
        return tau

    def free_motion(self, q0: np.ndarray, v0: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(v*, A) of stage 1 (eqs. 13 and 15). For θ = 0 (explicit in v*) without joint damping,
        with ``compiled``, one compiled call (:func:`~plants.sim._stepper_kernels.explicit_free_motion`);
        else the readable reference below.

        Joint damping d (``Scene.joint_damping``) is implicit whatever the scheme (as Drake):
        M (v − v₀) = δt (k − d v), so A = M + δt diag(d) and v* = v₀ + δt A⁻¹ (k₀ − d v₀).
        """
        dt, th, tvq = self.dt, self.theta, self.theta_vq
        if th == 0.0 and self.compiled and self._joint_damping is None:
            n = self.model.nv
            v = np.empty(n)
            if self._dyn is not None:  # the tree blocks alone (A between trees stays zero)
                dyn, M, A = self._dyn, self._M_chunks, self._recycled_A()
                dyn.mass_chunks(q0, M)
                solved = explicit_free_motion_blocks(M, dyn.chunk_v, dyn.chunk_of_tree, self._forces(q0, v0, tau), v0,
                                                     dt, self._tree_starts, A, v)
            else:
                A = np.empty((n, n))
                M = self._pin.crba(self.model, self.data, q0)  # upper triangle filled
                solved = explicit_free_motion(M, self._forces(q0, v0, tau), v0, dt, self._tree_starts, A, v)
            if solved:
                self._fm_iterations = 0
                self._mass_q, self._mass_diagonal = q0, self._zero_diagonal
                return v, A
        M0 = self._mass(q0)
        k0 = self._forces(q0, v0, tau)
        Dj = self._joint_damping
        self._fm_iterations = 0
        if Dj is None:
            v = v0 + dt * cholesky_solve(cholesky(M0), k0)
            self._mass_q, self._mass_diagonal = q0, np.zeros(self.model.nv)  # A = M(mass_q) + diag(·)
        else:
            M0 = M0 + np.diag(dt * Dj)
            v = v0 + dt * cholesky_solve(cholesky(M0), k0 - Dj * v0)
            self._mass_q, self._mass_diagonal = q0, dt * Dj
        if th == 0.0:
            return v, M0
        Kd = dt * dt * th * tvq * self.scene.K + dt * th * self.scene.D
        if Dj is not None:
            Kd = Kd + dt * Dj
        pin = self._pin
        for it in range(1, self.free_motion_max_iterations + 1):
            vq = tvq * v + (1.0 - tvq) * v0
            q_th = pin.integrate(self.model, q0, th * dt * vq)
            v_th = th * v + (1.0 - th) * v0
            M = self._mass(q_th)
            k = self._forces(q_th, v_th, tau)
            if Dj is not None:
                k = k - Dj * v
            m = M @ (v - v0) - dt * k
            A = M + np.diag(Kd)
            self._mass_q, self._mass_diagonal = q_th, Kd
            self._fm_iterations = it
            if np.linalg.norm(m) <= self.free_motion_tol * (np.linalg.norm(M @ v) + dt * np.linalg.norm(k) + 1e-300):
                return v, A
            v = v - cholesky_solve(cholesky(A), m)
        return v, A

    def _recycled_A(self) -> np.ndarray:
        """A zeroed-off-the-blocks (n_v, n_v) buffer for this step's A (chunked path): one of two
        kept buffers when nothing outside the simulator still holds it (its off-block entries are
        zero and the blocks are rewritten), else a fresh ``np.zeros``. A fresh one costs a page fault
        per row touched (~20 ms a step at n_v = 2400), for a matrix whose blocks alone are read."""
        import sys

        pool = self._A_pool
        for i in range(len(pool)):
            if sys.getrefcount(pool[i]) <= 2:  # the pool's and getrefcount's argument: no one else's
                buf = pool.pop(i)
                pool.append(buf)  # most recently used last
                buf.flags.writeable = True  # (the problem that held it made it read-only)
                return buf
        buf = np.zeros((self.model.nv, self.model.nv))
        pool.append(buf)
        if len(pool) > 2:
            pool.pop(0)
        return buf

    def contact_problem(self) -> tuple[ContactProblem, dict[str, Any]]:
        """The contact problem of the current step (also runs the free motion)."""
        pin = self._pin
        q0, v0 = self.q, self.v
        tau = self._actuation(self.t, q0, v0)
        if self._any_explicit_pd:
            tau = tau + self._explicit_pd(q0, v0)
        v_star, A = self.free_motion(q0, v0, tau)
        model, scene = self.model, self.scene
        if self._dyn is not None:
            Jw = np.empty((6, model.nv))  # world-frame joint Jacobians, per chunk of trees
            self._dyn.jacobians(q0, Jw)
            self._kinematics = data = self._dyn.view(Jw)
        else:
            data = self._kinematics = self.data
            pin.computeJointJacobians(model, data, q0)  # also forward kinematics at q0
            Jw = np.array(data.J.reshape(6, model.nv), order="C")  # world-frame joint Jacobians (a copy: data changes)
        Rg, pg = self._geometry_poses(data)
        c = scene.detector.detect(Rg, pg)
        rows = self._contact_rows if self.compiled else self._contact_rows_numpy
        F, point, J, k, tau_d, mu, trees, joints, local = rows(c, Rg, pg, Jw)  # (a self-contact's tree once)
        # the bodies behind the contacts, for body-level splitting (SubADMM, seed 000 eq. 30-31)
        bodies = ContactBodies.trusted(
            model=model, q=q0, joints=joints, points=point, frames=F, local_points=local, world_jacobian=Jw,
            joint_support=scene.joint_support, mass_q=self._mass_q, mass_diagonal=self._mass_diagonal,
        )
        phi0 = c.phi.copy()
        n_limits = 0
        gamma_lower = gamma_upper = None
        if self._limit_dof.size:
            signs, gap, dof, lim_k = self._limits(q0, v0, v_star, A)
            n_limits = gap.size
            if n_limits:
                lim_J = np.zeros((3 * n_limits, model.nv))
                lim_J[3 * np.arange(n_limits) + 2, dof] = signs
                J = np.concatenate([J, lim_J])
                phi0 = np.concatenate([phi0, gap])
                mu = np.concatenate([mu, np.zeros(n_limits)])
                k = np.concatenate([k, lim_k])
                tau_d = np.concatenate([tau_d, np.zeros(n_limits)])
                lim_trees = np.full((n_limits, 2), -1, dtype=np.int64)
                lim_trees[:, 0] = self._dof_tree[dof]
                trees = np.concatenate([trees, lim_trees])
        if self._constraints or self._couplers or self._actuators or self._friction_dof.size:
            rows, gap, kc, tc, lo, hi, ctrees = self._joint_space_rows(q0, A)
            m = gap.size
            cJ = np.zeros((3 * m, model.nv))
            cJ[2::3] = rows
            J = np.concatenate([J, cJ])
            phi0 = np.concatenate([phi0, gap])
            mu = np.concatenate([mu, np.zeros(m)])
            k = np.concatenate([k, kc])
            tau_d = np.concatenate([tau_d, tc])
            trees = np.concatenate([trees, ctrees])
            gamma_lower = np.concatenate([np.zeros(n_limits), lo])
            gamma_upper = np.concatenate([np.full(n_limits, np.inf), hi])
            n_limits += m
        problem = ContactProblem.trusted(
            A=A, v_star=v_star, J=J, phi0=phi0, mu=mu, stiffness=k, dissipation=tau_d, dt=self.dt,
            tree_starts=self._tree_starts, contact_trees=trees, v0=v0.copy(), bodies=bodies, n_limits=n_limits,
            gamma_lower=gamma_lower, gamma_upper=gamma_upper,
        )
        return problem, {"contacts": c, "tau": tau, "poses": (Rg, pg)}

    def set_actuator_targets(self, q: Any, v: Any = None) -> None:
        """Targets of the scene's PD actuators (``Scene.actuators`` order): positions ``q`` (n_a,)
        [rad or m] and optionally velocities ``v`` (n_a,) (default zero), used from the next step."""
        n = len(self._actuators)
        self.actuator_targets = vector("q", q, n).copy()
        self.actuator_target_velocities = np.zeros(n) if v is None else vector("v", v, n).copy()

    def _joint_space_rows(self, q0: np.ndarray, A: np.ndarray):
        """The step's bilateral, coupler, PD-actuator and dry-friction rows (after the limits).

        Returns rows (m, n_v), gap φ₀ (m,), stiffness (m,), dissipation τ_d (m,), impulse bounds
        lo, hi (m,) [N·s] and trees (m, 2). ``data`` must hold the joint placements and the
        world-frame joint Jacobians at ``q0`` (``computeJointJacobians``). Per row: the gap g and
        ġ = row · v (docs/sap.md, "Constraints beyond contact"):

        * ball: g = p_b − p_a (3 world axes), row = J_{p_b} − J_{p_a} (point Jacobians);
        * weld: ball rows at the weld point, and g = R_a log(R_aᵀ R_b) (the orientation error in
          world coordinates), row = J_{ω_b} − J_{ω_a};
        * distance: g = ‖p_b − p_a‖ − d, row = n̂ᵀ (J_{p_b} − J_{p_a});
        * coupler: g = q₁ − (m q₀ + c), row = e₁ − m e₀;
        * PD actuator: g = q − q_d − (k_d/k_p) v_d, row = e_k, k = k_p, τ_d = k_d/k_p, so the law
          γ = −δt (k_p (g + δt v) + k_d v) is the PD force at the end of the step, bounded ±δt e;
        * dry friction: g = 0, row = e_k, rigid, bounded ±δt f.

        Near-rigid rows (no compliance given) get k = 4π²/(δt² w), w = row A⁻¹ rowᵀ, as the
        joint limits (:meth:`_limit_stiffness`; ``limit_stiffness="rigid"``: k = inf).
        """
        fx = self._fixed  # couplers, PD actuators, dry friction: constant rows, gaps from q₀
        rows, gap, k, tau, trees = fx["rows"], self._fixed_gaps(q0), fx["k"], fx["tau"], fx["trees"]
        lo, hi = fx["lo"], fx["hi"]
        if self._constraints:  # weld, ball, distance: rows from this step's kinematics, first
            b_rows, b_gap, b_k, b_tau, b_trees = self._bilateral_rows()
            m = b_gap.size
            rows, gap, k = np.concatenate([b_rows, rows]), np.concatenate([b_gap, gap]), np.concatenate([b_k, k])
            tau, trees = np.concatenate([b_tau, tau]), np.concatenate([b_trees, trees])
            lo, hi = np.concatenate([np.full(m, -np.inf), lo]), np.concatenate([np.full(m, np.inf), hi])
        rigid = np.isnan(k)  # near-rigid rows: k from this step's A
        if rigid.any():
            k = k.copy()
            k[rigid] = self._row_stiffness(A, rows[rigid], trees[rigid])
        return rows, gap, k, tau, lo, hi, trees

    def _bilateral_rows(self) -> tuple[np.ndarray, ...]:
        """(rows (m, n_v), gaps (m,), stiffness (m,) (NaN: near-rigid), τ_d (m,), trees (m, 2)) of
        the scene's weld, ball and distance constraints, from ``self.data`` at q₀ (joint placements
        and world-frame joint Jacobians, ``computeJointJacobians``)."""
        pin, data, nv = self._pin, self._kinematics, self.model.nv
        support, tree_of_joint = self.scene.joint_support, self.scene.tree_of_joint
        Jw = np.reshape(data.J, (6, nv))

        def point_jacobian(j: int, p: np.ndarray) -> np.ndarray:  # (3, n_v): v_o + ω × p
            if j == 0:
                return np.zeros((3, nv))
            px = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])
            return (Jw[:3] - px @ Jw[3:]) * support[j]

        rows, gaps, k, tau, trees = [], [], [], [], []
        for con in self._constraints:  # a handful per scene: a loop over constraints
            ja, jb = con.joint_a, con.joint_b
            Mb = data.oMi[jb]
            pa = data.oMi[ja].act(con.point_a) if ja else con.point_a
            pb = Mb.act(con.point_b)
            Jd = point_jacobian(jb, pb) - point_jacobian(ja, pa)
            if con.kind == "distance":
                diff = pb - pa
                length = float(np.linalg.norm(diff))
                r, g = (diff / length @ Jd)[None], np.array([length - con.distance])
            else:  # ball: the three world axes of p_b − p_a
                r, g = Jd, pb - pa
                if con.kind == "weld":  # and the orientation error R_a log(R_aᵀ R_b), world axes
                    Ra = (data.oMi[ja].rotation if ja else np.eye(3)) @ con.rotation_a
                    Rb = Mb.rotation @ con.rotation_b
                    Jang = Jw[3:] * support[jb] - (Jw[3:] * support[ja] if ja else 0.0)
                    r, g = np.concatenate([r, Jang]), np.concatenate([g, Ra @ pin.log3(Ra.T @ Rb)])
            n = g.size
            rows.append(r)
            gaps.append(g)
            stiff = con.stiffness
            k.append(np.full(n, np.nan if stiff is None else stiff))
            tau.append(np.full(n, 0.0 if stiff is None or not np.isfinite(stiff) else con.damping / stiff))
            ta, tb = (int(tree_of_joint[j]) if j else -1 for j in (ja, jb))
            trees.append(np.tile([tb, -1] if ta in (tb, -1) else [ta, tb], (n, 1)))  # a tree once
        return (np.concatenate(rows), np.concatenate(gaps), np.concatenate(k), np.concatenate(tau),
                np.concatenate(trees).astype(np.int64))

    def _fixed_gaps(self, q0: np.ndarray) -> np.ndarray:
        """(n_fixed,) gaps φ₀ of the constant rows at q₀ (coupler error, PD error, 0 for friction)."""
        fx = self._fixed
        if not fx["n"]:
            return np.zeros(0)
        gap = (q0[fx["q1"]] - fx["mult"] * q0[fx["q0"]] - fx["offset"]) * fx["is_coupler"]
        a = fx["pd_act"]
        if a.size:
            gap[fx["pd_rows"]] = (q0[self._pd_q[a]] - self.actuator_targets[a]
                                  - self._pd_kd[a] / self._pd_kp[a] * self.actuator_target_velocities[a])
        return gap

    def _fixed_rows(self) -> dict[str, Any]:
        """The constant joint-space rows (couplers, implicit PD actuators, dry friction), in that
        order, with their laws and bounds; their gaps are computed per step from q₀."""
        nv, dt = self.model.nv, self.dt
        cp, pd_act, fr = self._couplers, np.flatnonzero(~self._pd_explicit), self._friction_dof
        n_c, n_p, n_f = len(cp), pd_act.size, fr.size
        n = n_c + n_p + n_f
        rows = np.zeros((n, nv))
        k, tau = np.empty(n), np.zeros(n)
        lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
        dofs = np.empty(n, dtype=np.int64)
        q0_, q1_ = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        mult, offset = np.zeros(n), np.zeros(n)
        for i, c in enumerate(cp):  # a few per scene: a loop over couplers, once
            rows[i, c.dof1] += 1.0
            rows[i, c.dof0] -= c.multiplier
            k[i] = np.nan if c.stiffness is None else c.stiffness  # NaN: near-rigid, per step
            tau[i] = 0.0 if c.stiffness is None or not np.isfinite(c.stiffness) else c.damping / c.stiffness
            dofs[i], q0_[i], q1_[i], mult[i], offset[i] = c.dof1, c.q0, c.q1, c.multiplier, c.offset
        sl = slice(n_c, n_c + n_p)
        rows[np.arange(n_c, n_c + n_p), self._pd_dof[pd_act]] = 1.0
        k[sl], tau[sl] = self._pd_kp[pd_act], self._pd_kd[pd_act] / self._pd_kp[pd_act]
        lo[sl], hi[sl] = -dt * self._pd_effort[pd_act], dt * self._pd_effort[pd_act]
        dofs[sl] = self._pd_dof[pd_act]
        sl = slice(n_c + n_p, n)
        rows[np.arange(n_c + n_p, n), fr] = 1.0
        k[sl], lo[sl], hi[sl], dofs[sl] = np.inf, -dt * self._friction, dt * self._friction, fr
        trees = np.full((n, 2), -1, dtype=np.int64)
        trees[:, 0] = self._dof_tree[dofs]
        return {"n": n, "rows": rows, "k": k, "tau": tau, "lo": lo, "hi": hi, "trees": trees,
                "q0": q0_, "q1": q1_, "mult": mult, "offset": offset,
                "is_coupler": (np.arange(n) < n_c).astype(float),
                "pd_rows": np.arange(n_c, n_c + n_p), "pd_act": pd_act}

    def _tree_inverse(self, A: np.ndarray, t: int) -> np.ndarray:
        """Inverse of tree t's block of this step's A (computed once per step and tree)."""
        cache = self._inverses
        if cache[0] is not A:
            cache[:] = [A, {}]
        if t not in cache[1]:
            ts = self._tree_starts
            sl = slice(int(ts[t]), int(ts[t + 1]))
            cache[1][t] = np.linalg.inv(A[sl, sl])
        return cache[1][t]

    def _row_stiffness(self, A: np.ndarray, rows: np.ndarray, trees: np.ndarray) -> np.ndarray:
        """Near-rigid stiffness 4π²/(δt² w) of general rows, w = row A⁻¹ rowᵀ (per tree block)."""
        import math

        if self.limit_stiffness == "rigid":
            return np.full(rows.shape[0], np.inf)
        w = np.zeros(rows.shape[0])
        ts = self._tree_starts
        for t in np.unique(trees[trees >= 0]):  # one tree-block inverse per touched tree
            sl = slice(int(ts[t]), int(ts[t + 1]))
            R = rows[:, sl]
            w += np.einsum("ij,jk,ik->i", R, self._tree_inverse(A, int(t)), R)
        return 4.0 * math.pi**2 / (self.dt**2 * w)
    def _limits(self, q0: np.ndarray, v0: np.ndarray, v_star: np.ndarray, A: np.ndarray) -> tuple:
        """(sign, gap φ₀, dof, stiffness) of the step's joint-limit constraints (n_l,) each: compiled
        (:func:`~plants.sim._stepper_kernels.joint_limit_rows`) with ``compiled``, else
        :meth:`_limit_rows` and :meth:`_limit_stiffness`, the reference."""
        if not self.compiled:
            sign, gap, dof = self._limit_rows(q0, v0, v_star)
            return sign, gap, dof, self._limit_stiffness(A, dof)
        m = 2 * self._limit_dof.size
        sign, gap, k = np.empty(m), np.empty(m), np.empty(m)
        dof = np.empty(m, dtype=np.int64)
        n = joint_limit_rows(q0, v0, v_star, self._limit_q, self._limit_dof, self._limit_lower, self._limit_upper,
                             float(self.scene.margin), self.dt, A, self._tree_starts, self._dof_tree,
                             self.limit_stiffness == "rigid", sign, gap, dof, k)
        return sign[:n], gap[:n], dof[:n], k[:n]

    def _limit_stiffness(self, A: np.ndarray, dof: np.ndarray) -> np.ndarray:
        """Near-rigid stiffness of joint-limit constraints on ``dof``: k = 4π²/(β² δt² w), β = 1.

        w = (A⁻¹)_kk is the constraint's Delassus value, so the constraint behaves as a spring
        whose period is one time step on the dof's effective inertia 1/w: exactly the near-rigid
        regularization SAP applies to a rigid constraint (seed 001 eq. 29, R = β²w/(4π²)), given
        to every solver as a compliance (better conditioned for the AL/ADMM solvers than k = inf).
        """
        if self.limit_stiffness == "rigid":
            return np.full(dof.size, np.inf)
        w = np.empty(dof.size)
        ts = self._tree_starts
        for t in np.unique(self._dof_tree[dof]):  # one tree block inverse per tree with limits
            Ainv = self._tree_inverse(A, int(t))
            sel = self._dof_tree[dof] == t
            w[sel] = Ainv[dof[sel] - ts[t], dof[sel] - ts[t]]
        return 4.0 * math.pi**2 / (self.dt**2 * w)

    def _limit_rows(self, q0: np.ndarray, v0: np.ndarray, v_star: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The joint-limit constraints of the step: (sign (n_l,), gap φ₀ (n_l,), dof (n_l,)).

        A limit enters the step when its gap is below the scene's margin plus the distance the
        dof could travel in the step at max(|v₀|, |v*|) (twice, for safety): the same
        speculative-constraint idea as the contact margin. Lower limit: g = q − lower, row +e_k;
        upper limit: g = upper − q, row −e_k (ġ = row · v, > 0 separating).
        """
        q = q0[self._limit_q]
        reach = self.scene.margin + 2.0 * self.dt * np.maximum(np.abs(v0[self._limit_dof]), np.abs(v_star[self._limit_dof]))
        g_lo = q - self._limit_lower
        g_hi = self._limit_upper - q
        lo = g_lo < reach
        hi = g_hi < reach
        sign = np.concatenate([np.ones(int(lo.sum())), -np.ones(int(hi.sum()))])
        gap = np.concatenate([g_lo[lo], g_hi[hi]])
        dof = np.concatenate([self._limit_dof[lo], self._limit_dof[hi]])
        return sign, gap, dof

    def _geometry_poses(self, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """World poses (R (n_g, 3, 3), p (n_g, 3)) of the geometries after forward kinematics: the
        compiled twin of :meth:`Scene.geometry_poses` (the reference) when numba is present."""
        if not self.compiled:
            return self.scene.geometry_poses(data, self._geom_joints, self._geom_slot)
        H, oMi = self._joint_H, data.oMi  # (a pinocchio.Data or TreeDynamics' view of one)
        for i, j in enumerate(self._geom_joints):  # loop over joints carrying geometry (Pinocchio objects)
            H[i] = oMi[j].homogeneous  # one conversion (rotation + translation: two, ~2x the cost)
        Rg, pg = np.empty((self._n_geoms, 3, 3)), np.empty((self._n_geoms, 3))
        geometry_poses(H, self._geom_slot, self.scene.geom_R, self.scene.geom_p, Rg, pg)
        return Rg, pg

    def _contact_rows(self, c, Rg: np.ndarray, pg: np.ndarray, Jw: np.ndarray) -> tuple:
        """The contacts' rows of the problem, compiled (:func:`~plants.sim._stepper_kernels.contact_rows`);
        the same arithmetic as :meth:`_contact_rows_numpy`, the reference."""
        n_c, n_v, scene = c.n_c, self.model.nv, self.scene
        F, point, J = np.empty((n_c, 3, 3)), np.empty((n_c, 3)), np.empty((3 * n_c, n_v))
        k, tau_d, mu = np.empty(n_c), np.empty(n_c), np.empty(n_c)
        trees, joints = np.empty((n_c, 2), dtype=np.int64), np.empty((n_c, 2), dtype=np.int64)
        local = np.empty((n_c, 2, 3))
        contact_rows(c.normal, c.point_a, c.point_b, c.a, c.b, self._n_geoms, self._pair_w, self._pair_k,
                     self._pair_tau, self._pair_mu, self._geom_slot, self._slot_support, self._slot_tree,
                     scene.geom_joint, Rg, pg, scene.geom_R, scene.geom_p, Jw,
                     F, point, J, k, tau_d, mu, trees, joints, local)
        return F, point, J, k, tau_d, mu, trees, joints, local

    def _contact_rows_numpy(self, c, Rg: np.ndarray, pg: np.ndarray, Jw: np.ndarray) -> tuple:
        """(F, point, J, k, τ_d, μ, trees, joints, local): the rows of the problem for the contacts ``c``
        (the readable reference of :meth:`_contact_rows`)."""
        model, scene, n_c = self.model, self.scene, c.n_c
        if not n_c:
            return (np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros((0, model.nv)), np.zeros(0), np.zeros(0),
                    np.zeros(0), np.zeros((0, 2), dtype=np.int64), np.zeros((0, 2), dtype=np.int64),
                    np.zeros((0, 2, 3)))
        sa = self._geom_slot[c.a]
        sb = self._geom_slot[c.b]
        pair = c.a * self._n_geoms + c.b
        point = c.point(self._pair_w[pair])  # on the stiffer surface (k_a/(k_a+k_b) weighting)
        # World-frame joint Jacobians are data.J (6 x n_v) restricted to each joint's support
        # (a 0/1 column mask), so J_b − J_a = data.J · (support_b − support_a) column-wise.
        # Velocity of the material points at p: v_o + ω × p, projected on the frame rows f:
        # f·(v_o − p × ω) = f·v_o + (p × f)·ω.
        F = tangent_basis(c.normal)  # (n_c, 3, 3) rows (t1, t2, n)
        J = self._contact_jacobian_numpy(F, point, Jw, sa, sb)
        trees = np.stack([self._slot_tree[sa], self._slot_tree[sb]], axis=1).astype(np.int64)
        self_contact = trees[:, 0] == trees[:, 1]  # a robot touching itself touches its tree once
        trees[self_contact, 1] = -1  # (ContactProblem's convention): listed twice, W_ii and R_i would double
        joints = np.stack([scene.geom_joint[c.a], scene.geom_joint[c.b]], axis=1)
        # the point in each joint's frame: r = R_geom (R_worldᵀ (p − p_world)) + p_geom (the geometry
        # sits at (R_geom, p_geom) in its joint's frame and at (R_world, p_world) in the world)
        local = np.empty((n_c, 2, 3))
        for side, g in enumerate((c.a, c.b)):
            d = np.einsum("cji,cj->ci", Rg[g], point - pg[g])  # in the geometry frame
            local[:, side] = np.einsum("cij,cj->ci", scene.geom_R[g], d) + scene.geom_p[g]
        return (F, np.asarray(point, float), J, self._pair_k[pair], self._pair_tau[pair], self._pair_mu[pair],
                trees, joints, local)

    def _contact_jacobian_numpy(self, F: np.ndarray, point: np.ndarray, Jw: np.ndarray, sa: np.ndarray,
                                sb: np.ndarray) -> np.ndarray:
        """Reference of the compiled ``contact_jacobian``: (3 n_c, n_v) rows F·J_lin + (p × F)·J_ang,
        masked by the difference of the two joints' supports.
        """
        px, py, pz = point[:, 0:1], point[:, 1:2], point[:, 2:3]
        Fx, Fy, Fz = F[:, :, 0], F[:, :, 1], F[:, :, 2]
        C = np.stack([py * Fz - pz * Fy, pz * Fx - px * Fz, px * Fy - py * Fx], axis=2)
        mask = self._slot_support[sb] - self._slot_support[sa]  # (n_c, n_v)
        return ((F @ Jw[:3] + C @ Jw[3:]) * mask[:, None, :]).reshape(3 * F.shape[0], -1)

    # ------------------------------------------------------------------ stepping
    def step(self) -> ContactSolverResult:
        """Advance one step on the solver's result: converged, or (unless ``strict``) the best
        iterate of a solve that did not meet its criterion (``result.status`` says which).

        Raises :class:`plants.errors.ContactSolveError` when ``strict`` and the solve did not
        converge, and :class:`plants.errors.SimulationDivergedError` when the solution is not
        finite or exceeds ``max_speed``; the state is then left unchanged and the error carries
        the step's problem.
        """
        if self._in_run:  # run() set the BLAS threads once for all its steps
            problem, info = self.contact_problem()
            result = self.solver.solve(problem)
        else:
            with blas_threads(self.blas_threads):
                problem, info = self.contact_problem()
                result = self.solver.solve(problem)
        self.last_problem, self.last_result = problem, result
        self._last_contacts = info["contacts"]
        self._last_poses = info["poses"]
        if not result.ok and (self.strict or not result.usable):
            raise ContactSolveError(
                f"contact solver {result.solver or type(self.solver).__name__} failed at step "
                f"{self.step_index} (t = {self.t:.6g} s): {result.status.name} {result.message}",
                problem, result, self.step_index, self.t,
            )
        v = result.v
        peak = np.abs(v).max() if v.size else 0.0  # max |v_i|
        if not math.isfinite(peak) or (self.max_speed is not None and peak > self.max_speed):
            raise SimulationDivergedError(
                f"simulation diverged at step {self.step_index} (t = {self.t:.6g} s): the "
                f"{result.solver or type(self.solver).__name__} solution has |v| = {peak:.3g}"
                f" > max_speed = {self.max_speed} (state left unchanged); likely cause: δt = {self.dt:.3g} s"
                f" is too large for the contact stiffness or mass ratio (seed 001 §VIII), or the"
                f" solve did not converge (status {result.status.name}){self._deepest_overlap(info)}",
                problem, result, self.step_index, self.t,
            )
        vq = v if self.theta_vq == 1.0 else self.theta_vq * v + (1.0 - self.theta_vq) * self.v
        self.q = self._pin.integrate(self.model, self.q, self.dt * vq)
        self.v = v
        self.t += self.dt
        self.step_index += 1
        return result

    def _deepest_overlap(self, info: Mapping[str, Any]) -> str:
        """'; the deepest overlap ...' naming the pair of the step's deepest contact when it
        overlaps by more than 1 mm (a start pose inside another geometry diverges at step 0), or
        ''."""
        c = info.get("contacts")
        phi = np.asarray(getattr(c, "phi", ()), dtype=float)
        if phi.size == 0 or not phi.min() < -1e-3:
            return ""
        k = int(np.argmin(phi))
        names = [g.name for g in self.scene.geometries]
        return (f"; the geometries {names[int(c.a[k])]!r} and {names[int(c.b[k])]!r} overlap by "
                f"{-phi[k]:.3g} m (is the start configuration inside another geometry?)")

    def run(self, duration: float, progress: bool = False, stream: Any = None) -> Trajectory:
        """Simulate ``duration`` seconds (rounded to whole steps) from the current state.

        Args:
            duration: simulated time [s] >= 0.
            progress: show a progress line (:class:`plants.progress.ProgressLine`) on ``stream``
                (default stderr).
        """
        n = duration_steps(duration, self.dt,
                           8 * (1 + self.model.nq + self.model.nv + len(STAT_FIELDS)))
        t = np.empty(n + 1)
        q = np.empty((n + 1, self.model.nq))
        v = np.empty((n + 1, self.model.nv))
        stats = {f: np.zeros(n, dtype=np.int64 if f in _INT_STATS else float) for f in STAT_FIELDS}
        t[0], q[0], v[0] = self.t, self.q, self.v
        # deepest overlap (ratio, step, depth, size, geom a, geom b) in the run's initial state and after it
        self._initial = self._deepest = (0.0, -1, 0.0, 0.0, -1, -1, False)
        self._prev_contacts = _NO_CONTACTS  # the previous step's contacts (for the cause of a first deep overlap)
        self._onset = (-1, 0.0, 0.0)  # (step, depth, size) of the first deep overlap after the start
        first_step = self.step_index
        bar = (ProgressLine(n, label=str(getattr(self, "info", {}).get("name", "")), stream=stream)
               if progress else None)
        with blas_threads(self.blas_threads):  # once per run: the steps then skip their own block
            self._in_run = True
            try:
                self._run_steps(n, t, q, v, stats, bar)
            finally:
                self._in_run = False
        summary = self._summarize(t, q, v, stats, first_step)
        return Trajectory(t=t, q=q, v=v, stats=stats, summary=summary)

    def _run_steps(self, n: int, t: np.ndarray, q: np.ndarray, v: np.ndarray, stats: dict[str, np.ndarray],
                   bar: ProgressLine | None = None) -> None:
        # the per-step records, bound once (a dict lookup per field and step is measurable on small scenes)
        st_cost = stats["cost"]
        st_flags = stats["flags"]
        st_free_motion_iterations = stats["free_motion_iterations"]
        st_iterations = stats["iterations"]
        st_line_search_iterations = stats["line_search_iterations"]
        st_min_phi = stats["min_phi"]
        st_momentum_error = stats["momentum_error"]
        st_n_contacts = stats["n_contacts"]
        st_penetration_ratio = stats["penetration_ratio"]
        st_residual = stats["residual"]
        st_solve_time = stats["solve_time"]
        st_status = stats["status"]
        st_step_time = stats["step_time"]
        for i in range(n):
            if bar is not None:
                bar.update(i)
            t0 = time.perf_counter()
            r = self.step()
            st_step_time[i] = time.perf_counter() - t0
            st_status[i] = int(r.status)
            st_iterations[i] = r.iterations
            st_line_search_iterations[i] = r.line_search_iterations
            c = self._last_contacts
            n_c = c.phi.size
            st_n_contacts[i] = n_c
            flags = 0 if r.ok else PlausibilityFlag.NOT_CONVERGED
            if not n_c:
                st_min_phi[i] = np.inf
            elif self.plausibility is None:
                st_min_phi[i] = c.phi.min()
            else:
                peak, allow, measured, predicted, ratios, phi_min = self._overlap_ratios(c, r)
                st_min_phi[i] = phi_min
                st_penetration_ratio[i] = peak
                if peak >= 1.0:
                    flags |= PlausibilityFlag.DEEP_PENETRATION
                if i == 0:  # the run's initial state (measured) is kept apart from what the run produces
                    self._record("_initial", measured / allow, allow, c)
                    self._record("_deepest", predicted / allow, allow, c, measured)
                elif peak > self._deepest[0]:
                    self._record("_deepest", ratios, allow, c, measured)
            if self.plausibility is not None:
                self._prev_contacts = c
                every = self.plausibility.hull_check_every
                if self._hulls is not None and every and i % every == 0:  # body hulls (see _hull_detector)
                    h = self._hulls.detect(*self._last_poses)
                    if h.n_c:
                        allow = self.plausibility.penetration_fraction * np.minimum(self._geom_size[h.a],
                                                                                     self._geom_size[h.b])
                        ratios = -h.phi / allow
                        st_penetration_ratio[i] = max(st_penetration_ratio[i], ratios.max())
                        if ratios.max() >= 1.0:
                            flags |= PlausibilityFlag.DEEP_PENETRATION
                        self._record("_initial" if i == 0 else "_deepest", ratios, allow, h)
            st_flags[i] = flags
            st_residual[i] = r.residual
            st_momentum_error[i] = r.momentum_error
            st_cost[i] = r.cost
            st_solve_time[i] = r.solve_time
            st_free_motion_iterations[i] = self._fm_iterations
            t[i + 1], q[i + 1], v[i + 1] = self.t, self.q, self.v
        if bar is not None:
            bar.update(n)

    def _overlap_ratios(self, c, result: ContactSolverResult) -> tuple[float, np.ndarray, np.ndarray, np.ndarray,
                                                                       np.ndarray, float]:
        """(peak, allow, measured, predicted, ratios, min φ₀) of the last step's contacts ``c``: ``allow``
        (n_c,) the overlap allowance [m] (``penetration_fraction`` × the smaller geometry's size),
        ``measured`` and ``predicted`` overlaps of :meth:`_overlaps`, ``ratios = max(measured,
        predicted) / allow``, its largest entry and the smallest gap φ₀ [m]. Compiled (:func:`~plants.sim._stepper_kernels.overlap_ratios`) when
        numba is present, else :meth:`_overlap_ratios_numpy`, the reference."""
        if not self.compiled:
            return self._overlap_ratios_numpy(c, result)
        p = self.last_problem
        vq = result.v if self.theta_vq == 1.0 else self.theta_vq * result.v + (1.0 - self.theta_vq) * p.v0
        out = np.empty((4, c.n_c))
        peak, phi_min = overlap_ratios(c.phi, c.a, c.b, self._geom_size, self.plausibility.penetration_fraction, p.J,
                                       vq, self.dt, out)
        return peak, out[0], out[1], out[2], out[3], phi_min

    def _overlap_ratios_numpy(self, c, result: ContactSolverResult) -> tuple:
        """Reference of :meth:`_overlap_ratios`."""
        allow = self.plausibility.penetration_fraction * np.minimum(self._geom_size[c.a], self._geom_size[c.b])
        measured, predicted = self._overlaps(c.phi, result)
        ratios = np.maximum(measured, predicted) / allow
        return float(ratios.max()), allow, measured, predicted, ratios, float(-measured.max())

    def _overlaps(self, phi0: np.ndarray, result: ContactSolverResult) -> tuple[np.ndarray, np.ndarray]:
        """(measured, predicted): (n_c,) overlap of each contact of the last step at its start (−φ₀)
        and at its end as its solution predicts, −(φ₀ + δt v_n) with v_n the normal velocity of the
        positions' update [m]. The prediction sees what the geometry can miss: SAP's regularized
        contact settles at −φ = R_n γ_n δt (seed 001 eq. 29), and a corner sphere that sinks past a
        box's top edge is then measured against a side face (millimetres deep while the box passes
        through: heavy-stack)."""
        p = self.last_problem
        vq = self.theta_vq * result.v + (1.0 - self.theta_vq) * p.v0
        n_c = phi0.size  # the geometric contacts; joint-limit rows follow them in the problem
        return -phi0, -(phi0 + self.dt * (p.J[2:3 * n_c:3] @ vq))

    def _record(self, name: str, ratios: np.ndarray, allow: np.ndarray, c, measured: np.ndarray | None = None) -> None:
        """Keep the deepest overlap (ratio, step, depth, size, geom a, geom b, appeared) of the run in
        ``name``; ``appeared``: the overlap was measured at the step's start on a pair that did not
        overlap at the previous step's start (it appeared within one step: detected too late)."""
        best = getattr(self, name)
        k = int(np.argmax(ratios))
        if ratios[k] > best[0]:
            size = allow[k] / self.plausibility.penetration_fraction
            depth = float(ratios[k] * allow[k])
            appeared = best[6]  # the cause is read off the first deep step, the depth off the deepest
            if ratios[k] >= 1.0 and best[0] < 1.0:  # the first deep step: its cause and its depth
                if name == "_deepest":
                    self._onset = (self.step_index - 1, depth, float(size))
                if measured is not None:
                    prev = self._prev_contacts
                    pairs, phi = prev.a * self._n_geoms + prev.b, prev.phi
                    hit = np.flatnonzero(pairs == c.a[k] * self._n_geoms + c.b[k])
                    appeared = bool(measured[k] >= depth and (hit.size == 0 or phi[hit[0]] > 0))
            setattr(self, name, (float(ratios[k]), self.step_index - 1, depth, float(size), int(c.a[k]),
                                 int(c.b[k]), appeared))

    def _summarize(self, t, q, v, stats, first_step: int) -> dict[str, Any]:
        """Flags energy growth, then emits at most one warning of each kind for the run."""
        n = stats["status"].size
        summary: dict[str, Any] = {"non_converged": 0, "first_non_converged_step": None, "worst_residual": None,
                                   "worst_residual_step": None, "deep_penetration_steps": 0,
                                   "energy_growth_steps": 0, "suggested_dt": None}
        if n == 0:
            return summary
        po = self.plausibility
        if po is not None and po.check_energy and self.controller is None and not self._actuators:
            # every energy_every-th sample and the last (a blow-up grows over many steps)
            at = np.unique(np.r_[np.arange(0, n + 1, po.energy_every), n])
            E = self.energy(Trajectory(t=t[at], q=q[at], v=v[at]))
            masses = np.array([inertia.mass for inertia in self.model.inertias])
            weight = float(masses.sum() * np.linalg.norm(self.model.gravity.linear))
            finite = self._geom_size[np.isfinite(self._geom_size)]
            ell = float(finite.max()) if finite.size else 1.0
            allow = po.energy_fraction * max(abs(E[0]), weight * ell)
            grew = E[1:] - E[0] > allow
            steps = at[1:][grew] - 1  # sample j ends step j - 1
            stats["flags"][steps] |= PlausibilityFlag.ENERGY_GROWTH
            summary["energy_growth_steps"] = int(steps.size)
            if steps.size:
                k = int(np.argmax(grew))
                summary["energy_growth"] = (first_step + int(steps[0]), float(E[k + 1] - E[0]), allow)
        bad = np.flatnonzero(stats["status"] != 0)
        solver = getattr(self.last_result, "solver", "") or type(self.solver).__name__
        if bad.size:
            res = stats["residual"][bad]
            worst = bad[int(np.nanargmax(np.where(np.isfinite(res), res, -np.inf)))] if np.isfinite(res).any() else bad[0]
            summary.update(non_converged=int(bad.size), first_non_converged_step=int(first_step + bad[0]),
                           worst_residual=float(stats["residual"][worst]), worst_residual_step=int(first_step + worst))
            kinds = ", ".join(f"{np.sum(stats['status'][bad] == s)} {ContactSolverStatus(s).name}"
                              for s in np.unique(stats["status"][bad]))
            warnings.warn(
                f"contact solver {solver} did not meet its stopping criterion on {bad.size} of {n} steps "
                f"({kinds}); first at step {first_step + bad[0]} (t = {t[bad[0]]:.6g} s), worst residual "
                f"{summary['worst_residual']:.3g} at step {first_step + worst}. Those steps advanced on the "
                f"solver's best iterate (traj.stats['status'], ['residual'], ['iterations']). Raise the "
                f"budget with solver_options, or pass strict=True to stop at the first such step.",
                NonConvergenceWarning, stacklevel=3,
            )
        deep = (stats["flags"] & PlausibilityFlag.DEEP_PENETRATION) != 0
        summary["deep_penetration_steps"] = int(deep.sum())
        if po is not None and (deep.any() or summary["energy_growth_steps"]):
            parts = []
            initial = self._initial[0] >= 1.0
            if initial:  # the scene starts overlapping: pushed apart at up to φ₀/δt, which adds energy
                ratio, step, depth, size, ga, gb, _ = self._initial
                parts.append(
                    f"the initial state (step {step}) overlaps by {depth:.3g} m between {self._geom_names[ga]!r} and "
                    f"{self._geom_names[gb]!r}, {ratio:.3g}x the allowance ({po.penetration_fraction:g} x the "
                    f"smaller body's size {size:.3g} m): the contact pushes them apart at up to φ₀/δt = "
                    f"{depth / self.dt:.3g} m/s, which adds energy; separate them in the scene")
            ratio, step, depth, size, ga, gb, appeared = self._deepest
            later = ratio >= 1.0 and (not initial or ratio > self._initial[0])  # deeper than the start
            late_detection = later and appeared
            if later:
                margin = self.scene.margin
                onset_step, onset_depth, onset_size = self._onset  # the suggestion: from the onset,
                summary["suggested_dt"] = (suggest_margin_dt(self.dt, onset_depth, margin) if late_detection
                                           else suggest_dt(self.dt, onset_depth, onset_size, po.target_fraction))
                parts.append(  # not from the wreck it led to (a box that went through another)
                    f"deep penetration on {int(deep.sum())} of {n} steps, first at step {onset_step} "
                    f"({onset_depth:.3g} m); the deepest, {depth:.3g} m between {self._geom_names[ga]!r} and "
                    f"{self._geom_names[gb]!r} at step {step}, is {ratio:.3g}x the allowance "
                    f"({po.penetration_fraction:g} x the smaller body's size {size:.3g} m)")
            if summary["energy_growth_steps"]:
                k, rise, allow = summary["energy_growth"]
                parts.append(f"the energy grew by {rise:.3g} J (allowance {allow:.3g} J) on "
                             f"{summary['energy_growth_steps']} steps, first at step {k}")
            text = "; ".join(parts) + "."
            if late_detection:
                text += (f" Likely cause: δt = {self.dt:.3g} s is too large for the approach speed: the first "
                         f"deep contact appeared overlapping within one step, i.e. the bodies closed more than the "
                         f"detection margin ({self.scene.margin:.3g} m) in one step and the contact was found only "
                         f"once they overlapped. Suggested: δt ≤ {summary['suggested_dt']:.3g} s (δt × margin / "
                         f"(margin + depth)), or a detection margin ≥ {self.scene.margin + depth:.2g} m.")
            elif later or not initial:
                text += (f" Likely cause: δt = {self.dt:.3g} s is too large for the contact stiffness or the mass "
                         f"ratio: with near-rigid contact the regularization of SAP (seed 001 eq. 29) lets a "
                         f"resting contact overlap ∝ δt², and sizes a contact by the lighter body while it "
                         f"carries the heavier ones (seed 001 §VIII)")
                if summary["non_converged"]:
                    text += f"; or the {summary['non_converged']} non-converged solves"
                text += (f". Suggested: δt ≤ {summary['suggested_dt']:.3g} s (overlap ∝ δt², aiming at "
                         f"{po.target_fraction:g} x the body size)." if summary["suggested_dt"] else ".")
            warnings.warn(text, PlausibilityWarning, stacklevel=3)
        return summary

    def energy(self, traj: Trajectory) -> np.ndarray:
        """(N+1,) total mechanical energy along ``traj`` [J]: kinetic + gravitational + spring (as
        :meth:`Scene.energy`, on the simulator's own ``pinocchio.Data``: the scene's is created on
        first use and holds n_v³ tensors, 0.8 s and ~3.7 GB on the largest scenes)."""
        pin, model, scene, dyn = self._pin, self.model, self.scene, self._dyn
        data = self.data if dyn is None else None
        out = np.empty(len(traj.q))
        for i, (qi, vi) in enumerate(zip(traj.q, traj.v)):  # loop over samples (Pinocchio calls)
            if dyn is not None:
                e = dyn.energy(qi, vi)
            else:
                e = pin.computeKineticEnergy(model, data, qi, vi) + pin.computePotentialEnergy(model, data, qi)
            if scene.has_springs:
                e += 0.5 * float(np.sum(scene.K * (qi[scene.spring_q_index] - scene.q_rest) ** 2))
            out[i] = e
        return out
