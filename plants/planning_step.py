"""Is the planning time step short enough for the robot's contacts? A check from the plant alone.

C3 plans on one LCS, the plant linearized at the current state and stepped with the planning
time step ``dt`` (semi-implicit Euler: ``v⁺ = v + dt M⁻¹ f``, ``q⁺ = q + dt v⁺``). A force
``F`` held for one step moves a contact along its normal by

    δ = F dt² W,        W = J_n M⁻¹ J_nᵀ   (the contact's Delassus entry, 1/effective mass)

A robot whose contact bodies are light for their forces (a 20 g jaw pressing a 0.2 kg cube)
moves them far in one planning step: at dt = 0.1 s the hand-scale jaw gripper's jaws travel a
metre, twenty cube sizes, in one knot. C3's relaxed plan then turns the cube in one knot on
forces that no complementary rollout of its own LCS reproduces, and the closed loop stalls
while every plan reports SOLVED (docs/own-robot.md, "Hand scale").

The check (docs/own-robot.md, "The planning step check"): for every contact between a body the
inputs move (the robot) and a free body they do not (the object), at the start state,

    ratio = m_obj g dt² W / ℓ

with ``m_obj`` the object's mass (its joint's subtree), ``g`` the model's gravity, ``W`` the
contact's Delassus entry (robot and object together) and ``ℓ`` the larger of the two contact
geometries' sizes (half the smallest extent of its bounding box: a sphere's radius, a box's
smallest half-side; planes and other unbounded geometry do not count). ``F = m_obj g`` is the
force scale of a task that moves the object against gravity and friction: the force that lifts
it, and μ⁻¹ times the force that slides it. The step passes when every ratio is at most
:data:`MAX_STEP_RATIO`.

The ratio scales with dt², so the largest step that passes is ``dt √(MAX_STEP_RATIO / ratio)``;
:meth:`PlanningStepCheck.suggested_dt` returns the largest step of the halving sequence
``dt₀, dt₀/2, dt₀/4, ...`` that passes.

Not checked: contacts between two robot bodies, between the robot and fixed geometry (a table
it touches) and between an object and fixed geometry (a cube's corner spheres stand for its
faces; their size says nothing about the step); tasks without gravity (``F = 0``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["MAX_STEP_RATIO", "PlanningStepWarning", "ContactStep", "PlanningStepCheck",
           "check_planning_step", "MIN_ROLLOUT_PROGRESS", "PlanRolloutCheck",
           "check_plan_rollout"]

#: Largest accepted ``m_obj g dt² W / ℓ``. Calibrated on the repo's task files (2026-11-27):
#: the ones that work at dt 0.1 s measure 0.15-4.4 (the Panda push 4.4), the hand-scale jaw
#: gripper 21.6 at 0.1 s (stalls) and 5.4 at 0.05 s (turns its cube); 10 sits a factor of
#: 1.9-2.3 from the nearest working (5.4, 4.4) and failing (21.6) ones. Beyond them it is
#: approximate (the hand-scale gripper with 100 g jaws half-stalls at 5.9; docs/own-robot.md).
MAX_STEP_RATIO = 10.0


class PlanningStepWarning(UserWarning):
    """The planning time step is long for the robot's contacts (:func:`check_planning_step`):
    C3's plans may turn or push the object in one knot on forces the LCS cannot realize, and
    the closed loop stall while the plans report SOLVED. The message names the task file, the
    body, the measured ratio and a suggested ``planning: {dt: ...}``."""


@dataclass(frozen=True)
class ContactStep:
    """One robot-object contact of :func:`check_planning_step`.

    Attributes:
        robot_geometry, object_geometry: the two collision geometries' names.
        robot_body: the body (frame) carrying ``robot_geometry``.
        object_mass: m_obj [kg], the object's joint subtree mass.
        delassus: W = J_n M⁻¹ J_nᵀ [1/kg], robot and object together, at the start state.
        displacement: δ = m_obj g dt² W [m], the contact's travel in one step under the
            object's weight.
        size: ℓ [m], the larger of the two geometries' sizes.
        ratio: δ / ℓ (dimensionless).
    """

    robot_geometry: str
    object_geometry: str
    robot_body: str
    object_mass: float
    delassus: float
    displacement: float
    size: float
    ratio: float


@dataclass(frozen=True)
class PlanningStepCheck:
    """The result of :func:`check_planning_step`.

    Attributes:
        dt: the checked planning step [s].
        contacts: the robot-object contacts, largest ratio first (empty: nothing to check).
        max_ratio: the threshold the check applied (:data:`MAX_STEP_RATIO` by default).
    """

    dt: float
    contacts: tuple[ContactStep, ...]
    max_ratio: float = MAX_STEP_RATIO

    @property
    def worst(self) -> ContactStep | None:
        """The contact with the largest ratio (None when there is none)."""
        return self.contacts[0] if self.contacts else None

    @property
    def ratio(self) -> float:
        """The largest ratio (0 when no contact is checked)."""
        return self.contacts[0].ratio if self.contacts else 0.0

    @property
    def passed(self) -> bool:
        """Every ratio at most :attr:`max_ratio`."""
        return self.ratio <= self.max_ratio

    def ratio_at(self, dt: float) -> float:
        """The largest ratio at another planning step ``dt`` [s] (it scales with dt²)."""
        return self.ratio * (float(dt) / self.dt) ** 2

    def suggested_dt(self, start: float | None = None) -> float:
        """The largest step of ``start, start/2, start/4, ...`` that passes [s] (``start``:
        the checked :attr:`dt`). With no checked contact, ``start``."""
        dt = self.dt if start is None else float(start)
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError(f"start must be a positive time step in s, got {start!r}")
        while self.ratio_at(dt) > self.max_ratio:
            dt /= 2.0
        return dt

    def message(self, where: str = "") -> str:
        """A one-paragraph explanation naming the body, the ratio and the suggested step."""
        w = self.worst
        if w is None or self.passed:
            return f"{where + ': ' if where else ''}planning step {self.dt:g} s passes"
        return (f"{where + ': ' if where else ''}the planning step dt = {self.dt:g} s is long "
                f"for body {w.robot_body!r} ({w.robot_geometry} on {w.object_geometry}): under "
                f"the object's weight ({w.object_mass:.3g} kg) it moves {w.displacement:.3g} m "
                f"in one step, {w.ratio:.3g}x the contact size {w.size:.3g} m (limit "
                f"{self.max_ratio:g}); C3's plans may then report SOLVED while the object does "
                f"not move. Set 'planning: {{dt: {self.suggested_dt():g}}}' (or 'dt: auto'); "
                f"docs/own-robot.md, 'The planning step check'")


def _geometry_size(geometry_object: Any) -> float:
    """Half the smallest extent of the geometry's local bounding box [m] (inf when unbounded)."""
    g = geometry_object.geometry
    g.computeLocalAABB()
    box = g.aabb_local
    ext = np.asarray(box.max_, dtype=float) - np.asarray(box.min_, dtype=float)
    size = 0.5 * float(np.min(ext))
    return size if math.isfinite(size) and size < 1e10 else math.inf


def check_planning_step(plant: Any, x0: Any, dt: float | None = None,
                        max_ratio: float = MAX_STEP_RATIO) -> PlanningStepCheck:
    """Check the planning step of a :class:`plants.multibody.MultibodyPlant` at state ``x0``.

    Args:
        plant: the planning plant (its model, collision model, contact pairs and input matrix).
        x0: (n_x,) the state the contacts are measured at (a task's start).
        dt: the planning step [s] (default: ``plant.dt``).
        max_ratio: the largest accepted ratio (default :data:`MAX_STEP_RATIO`).

    Returns:
        :class:`PlanningStepCheck`: per robot-object contact the one-step displacement under the
        object's weight relative to the contact's size (module docstring), ``passed`` and
        ``suggested_dt()``. Costs one mass matrix and one contact evaluation: no plan, no
        simulation.
    """
    import pinocchio as pin

    dt = float(plant.dt if dt is None else dt)
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be a positive time step in s, got {dt!r}")
    if isinstance(max_ratio, bool) or not isinstance(max_ratio, (int, float)) or \
            not max_ratio > 0:
        raise ValueError(f"max_ratio must be a positive number, got {max_ratio!r}")
    x0 = np.asarray(x0, dtype=float)
    if x0.shape != (plant.n_x,):
        raise ValueError(f"x0 must have shape ({plant.n_x},), got {x0.shape}")
    model, cmodel, contacts = plant.model, plant.collision_model, plant._contacts
    q = x0[:plant.n_q]
    data = model.createData()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    pin.computeSubtreeMasses(model, data)
    kin = contacts.evaluate(data, q)
    if kin.n_c == 0:
        return PlanningStepCheck(dt, (), float(max_ratio))
    g = float(np.linalg.norm(model.gravity.linear))
    # a joint is driven when its support (its dofs and its ancestors') holds an actuated dof
    driven_dof = np.abs(np.asarray(plant.B, dtype=float)).sum(axis=1) > 0
    support = contacts._support  # (njoints, n_v)
    driven = support @ driven_dof > 0
    W = np.einsum("cv,cv->c", kin.J_n, np.linalg.solve(M, kin.J_n.T).T)
    geoms = cmodel.geometryObjects
    out = []
    for c in range(kin.n_c):
        ga, gb = int(kin.geometry_a[c]), int(kin.geometry_b[c])
        ja, jb = int(geoms[ga].parentJoint), int(geoms[gb].parentJoint)
        for rg, og, jr, jo in ((ga, gb, ja, jb), (gb, ga, jb, ja)):
            if driven[jr] and jo != 0 and not driven[jo]:
                break
        else:
            continue  # robot-robot, robot-fixed, object-fixed or object-object
        size = max((s for s in (_geometry_size(geoms[rg]), _geometry_size(geoms[og]))
                    if math.isfinite(s)), default=math.inf)
        mass = float(data.mass[jo])
        disp = mass * g * dt ** 2 * float(W[c])
        ratio = disp / size if size > 0 else math.inf
        body = model.frames[int(geoms[rg].parentFrame)].name
        out.append(ContactStep(geoms[rg].name, geoms[og].name, body, mass, float(W[c]), disp,
                               size, ratio))
    out.sort(key=lambda s: -s.ratio)
    return PlanningStepCheck(dt, tuple(out), float(max_ratio))


# ---------------------------------------------------------------------------- at the first plan
#: Smallest accepted :attr:`PlanRolloutCheck.progress`. Measured on the first plan of the repo's
#: task files (2026-11-27): 0.47-0.98 where the closed loop works, 0.09 for the hand-scale jaw
#: gripper (stalls) and 0.16 for it with 100 g jaws (half-stalls; the load-time check passes it).
MIN_ROLLOUT_PROGRESS = 0.3


@dataclass(frozen=True)
class PlanRolloutCheck:
    """The result of :func:`check_plan_rollout`.

    Attributes:
        progress: per goal entry (:meth:`plants.TaskFile.goal_errors` names) the plan moves
            toward its goal by more than its tolerance: the rollout's largest error reduction
            over the plan's (1: the rollout gets as far; 0: it does not move toward the goal).
        min_progress: the threshold the check applied.
    """

    progress: dict
    min_progress: float = MIN_ROLLOUT_PROGRESS

    @property
    def worst(self) -> tuple[str, float] | None:
        """(entry, progress) of the least-followed entry (None when no entry is checked)."""
        return min(self.progress.items(), key=lambda kv: kv[1]) if self.progress else None

    @property
    def passed(self) -> bool:
        """Every checked entry's progress at least :attr:`min_progress`."""
        return all(p >= self.min_progress for p in self.progress.values())

    def message(self, where: str = "", dt: float | None = None) -> str:
        """An explanation naming the entry, its progress and a shorter planning step."""
        w = self.worst
        head = f"{where + ': ' if where else ''}"
        if w is None or self.passed:
            return f"{head}the first plan's own rollout follows it"
        step = f"planning: {{dt: {dt / 2:g}}}" if dt else "a shorter planning step"
        return (f"{head}the first plan's inputs, rolled out through its own LCS with every "
                f"contact LCP solved, move {w[0]!r} only {w[1]:.2f} of the way the plan does "
                f"(limit {self.min_progress:g}): the plan rests on forces its LCS cannot "
                f"realize and the closed loop may stall while C3 reports SOLVED. Try "
                f"'{step}'; docs/own-robot.md, 'The planning step check'")


def check_plan_rollout(task: Any, x_plan: Any, x_rollout: Any,
                       min_progress: float = MIN_ROLLOUT_PROGRESS) -> PlanRolloutCheck:
    """Compare a plan with its own inputs rolled out through its LCS (every LCP solved).

    Args:
        task: a :class:`plants.TaskFile` (its goal entries and tolerances).
        x_plan: (N+1, n_x) the plan's states (``C3Result.x``), x_plan[0] the start.
        x_rollout: (N+1, n_x) the rollout's states (``C3Result.resimulated_x``).
        min_progress: the smallest accepted progress (default :data:`MIN_ROLLOUT_PROGRESS`).

    Returns:
        :class:`PlanRolloutCheck`. For each goal entry e_j the plan reduces by more than its
        tolerance, ``max_k (|e_j(x_0)| − |e_j(x_k)|)`` of the rollout over that of the plan.
    """
    x_plan = np.asarray(x_plan, dtype=float)
    x_roll = np.asarray(x_rollout, dtype=float)
    if x_plan.ndim != 2 or x_plan.shape != x_roll.shape or x_plan.shape[0] < 2:
        raise ValueError(f"x_plan and x_rollout must be (N+1, n_x) arrays of one shape with "
                         f"N >= 1, got {x_plan.shape} and {x_roll.shape}")
    if isinstance(min_progress, bool) or not isinstance(min_progress, (int, float)):
        raise ValueError(f"min_progress must be a number, got {min_progress!r}")
    e0 = task.goal_errors(x_plan[0])
    tol = task.goal_tolerances()

    def reduction(X: np.ndarray) -> dict:
        errs = [task.goal_errors(x) for x in X[1:]]
        return {j: max(abs(e0[j]) - abs(e[j]) for e in errs) for j in e0}

    planned, rolled = reduction(x_plan), reduction(x_roll)
    progress = {j: float(max(rolled[j], 0.0) / planned[j]) for j in e0 if planned[j] > tol[j]}
    return PlanRolloutCheck(progress, float(min_progress))
