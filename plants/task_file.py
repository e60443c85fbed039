"""One robot description, two uses: a task file gives the planning plant and the simulation scene.

A task file is a small YAML file next to (or pointing at) a URDF/MJCF model file. From it,
:func:`load_task_file` builds

* the **planning model**: a :class:`plants.multibody.MultibodyPlant` (the LCS factory's plant)
  with the file's contact pairs, friction directions, μ per pair and actuated joints, and the
  controller settings (:class:`plants.ControlDefaults`: cost, ADMM weights, horizon, bounds,
  start and goal, given by joint name) as its ``defaults``;
* the **simulation scene**: the same model file in :mod:`plants.sim` (``SceneBuilder.add_urdf``)
  with contact parameters per geometry or link, μ taken from the pairs.

A task file may name several model files instead (``models:``, e.g. an arm from
example-robot-data, an object and a table; :mod:`plants.multibody.compose`): one planning model
and one scene. Free and spherical joints (objects in 3-D) take poses by joint name, and
:meth:`TaskFile.goal_errors` / :meth:`TaskFile.goal_reached` measure their orientation as a
rotation angle.

Every field is documented in ``docs/own-robot.md`` ("The task file"); unknown keys, wrong types
and unknown joint or geometry names are a :class:`TaskFileError` naming the file, the line and
the key. Example (``examples/own_robot/pusher_box.yaml``)::

    model: pusher_box.xml
    planar_normal: [0, 1, 0]
    contacts:
      - {a: pusher_tip, b: box_body, mu: 0.4}
      - {a: [foot_front_left, foot_front_right, foot_back_left, foot_back_right], b: ground,
         mu: 0.5}
    goal: {box_x: 0.2, pusher_x: 0.35}
    cost:
      Q: {default: 10, pusher_x: 500, box_x: 500, box_z: 100, box_theta: 100}
      Q_velocity: 10
    simulation: {solver: sap, dt: 0.001, control_rate: 10, duration: 3.0}
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .errors import PlantError
from .planning_step import PlanningStepWarning, check_planning_step

__all__ = ["TaskFile", "TaskFileError", "load_task_file", "TASK_FILE_SUFFIXES", "TASK_KEYS"]

#: File suffixes :func:`plants.load_plant` and :func:`load_task_file` treat as task files.
TASK_FILE_SUFFIXES = (".yaml", ".yml")

#: The accepted keys, per section (``None``: the top level).
TASK_KEYS: dict[str | None, tuple[str, ...]] = {
    None: ("model", "models", "name", "actuated_joints", "gravity_compensation", "base_position",
           "base_quaternion", "floating_base", "planar_normal", "contacts", "contact_params", "planning", "cost", "start", "goal", "input_limits",
           "simulation", "success"),
    "models": ("file", "prefix", "base_position", "base_quaternion", "floating_base"),
    "contacts": ("a", "b", "mu", "friction_directions", "num_closest"),
    "contact_params": ("default", "geometries"),
    "params": ("stiffness", "dissipation", "mu"),
    "planning": ("dt", "contact_model", "N", "projection", "admm_iter", "rho", "rho_scale", "G",
                 "U"),
    "U": ("state", "lambda", "input"),
    "cost": ("Q", "Q_velocity", "R", "QN_scale"),
    "simulation": ("solver", "dt", "control_rate", "duration", "self_collision"),
    "success": ("tolerance", "orientation_tolerance", "joints"),
    "ik": ("frame", "position", "quaternion", "rpy", "joints"),
}

_DEFAULT_PARAMS = {"stiffness": 1e5, "dissipation": 1e-3, "mu": 0.5}

#: ``planning.G`` when the file gives none: G = 0.1·I. ``planning.U`` defaults to the same
#: matrix (U = G), so that the QP step and the projection measure distance in one metric.
#: ``planning: {G: scaled}`` takes G per entry from the plant's LCS and the cost instead
#: (:func:`lcs.scales.scaled_admm_weights`; docs/c3.md, "Scale-aware ADMM weights").
DEFAULT_G = 0.1

#: ``planning: {dt: auto}`` takes the largest step of 0.1, 0.05, 0.025, ... s that passes
#: :func:`plants.planning_step.check_planning_step` at the start state.
AUTO_DT_START = 0.1


class TaskFileError(PlantError, ValueError):
    """An invalid task file. ``file``, ``line`` (1-based, 0 if unknown) and ``key`` say where."""

    def __init__(self, message: str, file: str, line: int, key: str):
        where = f"{file}, line {line}" if line else file
        super().__init__(f"{where}: {key + ': ' if key else ''}{message}")
        self.file, self.line, self.key, self.reason = file, line, key, message


@dataclass(frozen=True)
class TaskFile:
    """A loaded task file.

    Attributes:
        path: the task file.
        model_path: the model file (URDF or MJCF) it names (with ``models:``, the first one).
        plant: the planning :class:`plants.multibody.MultibodyPlant` (``plant.defaults`` holds
            the controller settings; ``plant.dt`` the planning time step).
        x0, x_goal: (n_x,) start and goal states (also in ``plant.defaults``).
        solver: contact solver of the simulation ("sap", ...).
        sim_dt: simulator time step [s].
        control_rate: C3 re-planning rate [Hz] in the simulator (zero-order hold in between).
        duration: default simulated time [s].
        geometry_params: contact parameters (:class:`plants.sim.ContactParams`) of every
            collision geometry of the model, by name.
        self_collision: the scene's self-collision filter on/off (``add_urdf(self_collision=)``).
        contact_geometry_pairs: the planning contact pairs as geometry-name pairs; the scene
            lets each of them collide even where the self-collision filter would drop it (a URDF
            whose ground is welded to the world link makes the ground part of the robot, and
            feet touching it at the start count as overlapping).
        data: the parsed YAML (plain values).
        models: the model files (:class:`plants.multibody.compose.ModelPart`: path, prefix,
            placement), one for ``model:``, in the order of ``models:``.
        model_slices: per model file, ``(q_start, n_q, v_start, n_v)`` of its joints in the
            planning state.
        model_geometries: per model file, its collision geometries' names (with the prefix).
        goal_joints: the joints ``c3mpc run`` judges success on: ``success.joints``, by default
            every joint the ``goal`` names.
        success_tolerance: largest final ``|q − q_goal|`` of a goal joint for success (``success:
            {tolerance: ...}``, default 0.02, in the joint's unit: m or rad; a free joint's
            distance to its goal position).
        orientation_tolerance: largest final rotation angle [rad] between a free or spherical
            goal joint's orientation and its goal (``success: {orientation_tolerance: ...}``,
            default 0.05 rad, 2.9°).
        planning_step: the planning-step check at the start state
            (:class:`plants.planning_step.PlanningStepCheck`, at the file's ``planning.dt``; with
            ``dt: auto`` at the start of the halving sequence, 0.1 s). Loading warns
            (:class:`plants.planning_step.PlanningStepWarning`) when a given dt fails it.
    """

    path: Path
    model_path: Path
    plant: Any
    x0: np.ndarray
    x_goal: np.ndarray
    solver: str
    sim_dt: float
    control_rate: float
    duration: float
    geometry_params: Mapping[str, Any]
    self_collision: bool
    contact_geometry_pairs: tuple[tuple[str, str], ...]
    data: Mapping[str, Any]
    goal_joints: tuple[str, ...] = ()
    models: tuple[Any, ...] = ()
    model_slices: tuple[tuple[int, int, int, int], ...] = ()
    model_geometries: tuple[tuple[str, ...], ...] = ()
    success_tolerance: float = 0.02
    orientation_tolerance: float = 0.05
    planning_step: Any = None

    def goal_errors(self, x: Any) -> dict[str, float]:
        """Final errors of the goal joints at state ``x``, by name.

        A one-dof joint gives ``q − q_goal`` (signed, m or rad) under its name; a free joint
        gives ``<joint>.position`` (distance to the goal position [m]) and
        ``<joint>.orientation`` (angle of the rotation to the goal orientation [rad],
        2 acos|⟨q, q_goal⟩|, so q and −q are the same); a spherical joint
        ``<joint>.orientation``; another multi-dof joint the norm of q − q_goal.
        """
        from .multibody.orientation import QUATERNION_JOINTS, quaternion_angle

        x = np.asarray(x, dtype=float)
        model = self.plant.model
        out = {}
        for joint in self.goal_joints:
            jm = model.joints[list(model.names).index(joint)]
            q, g = x[jm.idx_q:jm.idx_q + jm.nq], self.x_goal[jm.idx_q:jm.idx_q + jm.nq]
            off = QUATERNION_JOINTS.get(jm.shortname())
            if off is not None:
                if off:
                    out[f"{joint}.position"] = float(np.linalg.norm(q[:off] - g[:off]))
                out[f"{joint}.orientation"] = quaternion_angle(q[off:off + 4], g[off:off + 4])
            else:
                out[joint] = float(q[0] - g[0]) if jm.nq == 1 else float(np.linalg.norm(q - g))
        return out

    def goal_tolerances(self) -> dict[str, float]:
        """The tolerance of each entry of :meth:`goal_errors`: ``success.tolerance`` [m or rad],
        ``success.orientation_tolerance`` [rad] for the ``.orientation`` entries."""
        return {k: self.orientation_tolerance if k.endswith(".orientation")
                else self.success_tolerance for k in self.goal_errors(self.x_goal)}

    def goal_reached(self, x: Any) -> bool:
        """Every entry of :meth:`goal_errors` within its tolerance (:meth:`goal_tolerances`)."""
        tol = self.goal_tolerances()
        return all(abs(e) <= tol[k] for k, e in self.goal_errors(x).items())

    @property
    def defaults(self) -> Any:
        """The controller settings, :class:`plants.ControlDefaults` (= ``plant.defaults``)."""
        return self.plant.defaults

    def scene_builder(self, x0: Any = None) -> Any:
        """A :class:`plants.sim.SceneBuilder` holding the model file, ready for more content.

        Args:
            x0: (n_x,) start state of the planning plant (default: :attr:`x0`); its q and v
                become the robot's start configuration and velocity.
        """
        from .sim import ContactParams, SceneBuilder

        x0 = self.x0 if x0 is None else np.asarray(x0, dtype=float)
        n_q = self.plant.n_q
        b = SceneBuilder()
        for part, (iq, nq, iv, nv), names in zip(self.models, self.model_slices,
                                                 self.model_geometries):
            # the planning pairs inside this file always collide (names without the prefix)
            mine = set(names)
            strip = len(part.prefix)
            include = [(a[strip:], c[strip:]) for a, c in self.contact_geometry_pairs
                       if a in mine and c in mine]
            q, v = x0[iq:iq + nq], x0[n_q + iv:n_q + iv + nv]
            placement: dict[str, Any] = dict(base_position=part.base_position,
                                             base_quaternion=part.base_quaternion)
            if part.floating_base:  # the scene's root: same q, v with a world-frame linear part
                from .multibody.free_root import free_flyer_to_scene_velocity

                placement = dict(floating_base=True, base_position=q[:3], base_quaternion=q[3:7])
                q, v = q[7:], free_flyer_to_scene_velocity(q[3:7], v)
            b.add_urdf(part.path, ContactParams(**_DEFAULT_PARAMS), q0=q, v0=v,
                       prefix=part.prefix, self_collision=self.self_collision,
                       self_collision_include=include, **placement)
        b.geoms = [dataclasses.replace(g, params=self.geometry_params.get(g.name, g.params))
                   for g in b.geoms]
        return b

    def scene(self, x0: Any = None) -> Any:
        """The simulation :class:`plants.sim.Scene` of the model file (:meth:`scene_builder`)."""
        return self.scene_builder(x0).build()

    def simulator(self, x0: Any = None, **options: Any) -> Any:
        """A :class:`plants.sim.Simulator` of :meth:`scene` with the file's solver and time step
        (``options`` go to the Simulator)."""
        from .sim import Simulator

        return Simulator(self.scene(x0), solver=self.solver, dt=self.sim_dt, **options)

    def state(self, positions: Mapping[str, Any] | None = None,
              velocities: Mapping[str, Any] | None = None) -> np.ndarray:
        """A state by joint name (joints not named: the task's start :attr:`x0`)."""
        from .multibody.names import state_from_joints

        x = state_from_joints(self.plant.model, self.x0[:self.plant.n_q], positions, velocities)
        if not velocities:
            x[self.plant.n_q:] = self.x0[self.plant.n_q:]
        return x


# ---------------------------------------------------------------------------- YAML with lines
def _load_located(text: str) -> tuple[Any, dict[tuple[Any, ...], int], dict[tuple[Any, ...], int]]:
    """Parse YAML; return the data and the 1-based line of each value and of each mapping key."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}, {}
        value_lines: dict[tuple[Any, ...], int] = {}
        key_lines: dict[tuple[Any, ...], int] = {}

        def walk(n: Any, path: tuple[Any, ...]) -> None:
            value_lines[path] = n.start_mark.line + 1
            if isinstance(n, yaml.MappingNode):
                for k, v in n.value:
                    key = k.value if isinstance(k, yaml.ScalarNode) else str(k)
                    key_lines[path + (key,)] = k.start_mark.line + 1
                    walk(v, path + (key,))
            elif isinstance(n, yaml.SequenceNode):
                for i, item in enumerate(n.value):
                    walk(item, path + (i,))

        walk(node, ())
        data = loader.construct_document(node)
    finally:
        loader.dispose()
    return data, value_lines, key_lines


class _Reader:
    """Typed access to the parsed file; every error names the line and the key."""

    def __init__(self, path: Path):
        import yaml

        self.path = path
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise FileNotFoundError(f"task file not found: {path}") from None
        try:
            self.data, self.value_lines, self.key_lines = _load_located(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            raise TaskFileError(f"malformed YAML: {getattr(e, 'problem', None) or e}", str(path),
                                mark.line + 1 if mark else 0, "") from None
        if not isinstance(self.data, dict):
            raise TaskFileError("a task file is a YAML mapping (model:, contacts:, ...)",
                                str(path), 1, "")

    def error(self, path: tuple[Any, ...], message: str, at_key: bool = False) -> TaskFileError:
        lines = self.key_lines if at_key else self.value_lines
        line = lines.get(path) or self.key_lines.get(path) or self.value_lines.get(path[:-1], 0)
        key = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path)
        return TaskFileError(message, str(self.path), line, key.replace(".[", "["))

    def get(self, path: tuple[Any, ...], default: Any = None) -> Any:
        node: Any = self.data
        for p in path:
            if isinstance(node, dict) and p in node:
                node = node[p]
            elif isinstance(node, list) and isinstance(p, int) and p < len(node):
                node = node[p]
            else:
                return default
        return node

    def mapping(self, path: tuple[Any, ...], section: str | None) -> dict[str, Any]:
        value = self.data if not path else self.get(path, {})
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise self.error(path, f"must be a mapping, got {type(value).__name__}")
        allowed = TASK_KEYS[section] if section is not None or path == () else ()
        for k in value:
            if allowed and k not in allowed:
                raise self.error(path + (k,), f"unknown key {k!r}; valid keys: "
                                 f"{', '.join(allowed)}", at_key=True)
        return value

    def number(self, path: tuple[Any, ...], default: Any, *, positive: bool = False,
               nonneg: bool = False, integer: bool = False) -> Any:
        v = self.get(path, default)
        if isinstance(v, str):  # YAML 1.1 reads "1e5" as a string
            try:
                v = float(v)
            except ValueError:
                raise self.error(path, f"must be a number, got {v!r}") from None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.error(path, f"must be a number, got {v!r}")
        if integer and (not float(v).is_integer()):
            raise self.error(path, f"must be an integer, got {v!r}")
        if not math.isfinite(v) and not (positive and v == math.inf):
            raise self.error(path, f"must be finite, got {v!r}")
        if positive and not v > 0:
            raise self.error(path, f"must be > 0, got {v!r}")
        if nonneg and not v >= 0:
            raise self.error(path, f"must be >= 0, got {v!r}")
        return int(v) if integer else float(v)

    def vector(self, path: tuple[Any, ...], n: int, default: Any) -> np.ndarray:
        v = self.get(path, default)
        if not isinstance(v, (list, tuple)) or len(v) != n:
            raise self.error(path, f"must be a list of {n} numbers, got {v!r}")
        return np.array([self.number(path + (i,), None) if not isinstance(x, (int, float))
                         or isinstance(x, bool) else float(x) for i, x in enumerate(v)])

    def names(self, path: tuple[Any, ...]) -> list[str]:
        v = self.get(path)
        items = [v] if isinstance(v, str) else v
        if not isinstance(items, list) or not items or \
                not all(isinstance(s, str) and s for s in items):
            raise self.error(path, f"must be a name or a list of names, got {v!r}")
        return list(items)

    def string(self, path: tuple[Any, ...], default: str) -> str:
        v = self.get(path, default)
        if not isinstance(v, str):
            raise self.error(path, f"must be a string, got {v!r}")
        return v


# ---------------------------------------------------------------------------- loading
def load_task_file(path: str | os.PathLike) -> TaskFile:
    """Read a task file (YAML): the planning plant and the simulation scene of one model file.

    Args:
        path: the task file (``.yaml``/``.yml``); relative paths in it (``model``) are relative
            to its folder.

    Returns:
        :class:`TaskFile`: ``.plant`` (a :class:`plants.Plant` with ``defaults``), ``.scene()``,
        ``.simulator()``, ``.x0``, ``.x_goal``, the simulation settings.

    Raises:
        FileNotFoundError: no task or model file. TaskFileError (a ValueError): an unknown key, a
        value of the wrong type, an unknown joint or geometry name; the message names the file,
        the line and the key.
    """
    from .multibody import ContactPair, MultibodyError, MultibodyPlant
    from .paper.base import ControlDefaults
    from .sim import ContactParams

    path = Path(path)
    r = _Reader(path)
    top = r.mapping((), None)
    from .multibody.compose import ModelPart, compose_models, resolve_model_path

    parts = _model_parts(r, top, path.parent, ModelPart, resolve_model_path)
    model_path = parts[0].path
    if "contacts" not in top:
        raise r.error((), "missing required key 'contacts' (the planning model's contact pairs)")

    # ---------------------------------------------------------------- planning model
    plan = r.mapping(("planning",), "planning")
    auto_dt = plan.get("dt") == "auto"  # the largest of 0.1, 0.05, ... passing the check
    if auto_dt:
        dt = AUTO_DT_START
    else:
        try:
            dt = r.number(("planning", "dt"), 0.1, positive=True)
        except TaskFileError as e:
            raise r.error(("planning", "dt"), e.reason.replace(
                "must be a number", "must be a number [s] or 'auto'")) from None
    contact_model = r.string(("planning", "contact_model"), "stewart_trinkle")
    planar = None
    if "planar_normal" in top:
        planar = tuple(float(x) for x in r.vector(("planar_normal",), 3, None))
        if not np.linalg.norm(planar) > 0:
            raise r.error(("planar_normal",), "must be a non-zero vector")
    contacts = r.get(("contacts",))
    if not isinstance(contacts, list) or not contacts:
        raise r.error(("contacts",), "must be a non-empty list of pairs {a:, b:, mu:}")
    pairs: list[Any] = []
    pair_mu: list[tuple[list[str], list[str], float, tuple[Any, ...]]] = []
    for i, c in enumerate(contacts):
        p = ("contacts", i)
        r.mapping(p, "contacts")
        for req in ("a", "b", "mu"):
            if req not in c:
                raise r.error(p, f"a contact pair needs '{req}'")
        a_names, b_names = r.names(p + ("a",)), r.names(p + ("b",))
        mu = r.number(p + ("mu",), None, nonneg=True)
        d = r.number(p + ("friction_directions",), 1 if planar is not None else 2, positive=True,
                     integer=True)
        nc = c.get("num_closest")
        nc = None if nc is None else r.number(p + ("num_closest",), None, positive=True,
                                              integer=True)
        for a in a_names:
            for b in b_names:
                pairs.append(ContactPair(a, b, mu, d, planar_normal=planar if d == 1 else None,
                                         num_closest=nc))
        pair_mu.append((a_names, b_names, mu, p))
    actuated = r.names(("actuated_joints",)) if "actuated_joints" in top else None
    name = r.string(("name",), path.stem)
    gravity_comp = r.get(("gravity_compensation",), False)
    if not isinstance(gravity_comp, bool):
        raise r.error(("gravity_compensation",), f"must be true or false, got {gravity_comp!r}")
    try:
        if "models" in top or parts[0].floating_base:  # (a free root: compose_models adds it)
            composed = compose_models(parts)
            B = MultibodyPlant.actuation_for_joints(
                composed.model, actuated if actuated is not None else composed.actuated_joints)
            plant = MultibodyPlant(composed.model, composed.collision_model, pairs, actuation=B,
                                   name=name, dt=dt, contact_model=contact_model,
                                   gravity_compensation=gravity_comp)
            slices, part_geometries = composed.slices, composed.geometry_names
        else:
            part = parts[0]
            build = MultibodyPlant.from_mjcf if part.path.suffix.lower() == ".xml" \
                else MultibodyPlant.from_urdf
            plant = build(part.path, pairs, actuated_joints=actuated, name=name,
                          base_position=part.base_position,
                          base_quaternion=part.base_quaternion, dt=dt,
                          contact_model=contact_model, gravity_compensation=gravity_comp)
            slices = ((0, plant.n_q, 0, plant.n_v),)
            part_geometries = (tuple(o.name for o in plant.collision_model.geometryObjects),)
    except MultibodyError as e:
        key = ("actuated_joints",) if "joint" in str(e).lower() and actuated else ("contacts",)
        if "contact_model" in str(e):
            key = ("planning", "contact_model")
        if getattr(e, "part_index", None) is not None:
            key = ("models", e.part_index, "file")
        raise r.error(key, str(e)) from None

    # ---------------------------------------------------------------- states by joint name
    ik_joints: dict[str, list[str]] = {}

    def state(key: str, base: np.ndarray | None) -> np.ndarray:
        spec = r.get((key,), None) or {}
        if not isinstance(spec, dict):
            raise r.error((key,), "must map joint names to positions (and 'velocities:', 'ik:')")
        pos = {k: v for k, v in spec.items() if k not in ("velocities", "ik")}
        vel = spec.get("velocities") or {}
        from .multibody.names import state_from_joints

        try:
            q_base = plant.q0 if base is None else base[:plant.n_q]
            x = state_from_joints(plant.model, q_base, pos, vel)
        except (MultibodyError, ValueError, TypeError) as e:
            bad = next((k for k in list(pos) + list(vel) if k in str(e)), None)
            where = (key,) if bad is None else ((key, bad) if bad in pos
                                                 else (key, "velocities", bad))
            raise r.error(where, str(e), at_key=True) from None
        if "ik" in spec:
            x[:plant.n_q], ik_joints[key] = _solve_ik_targets(r, (key, "ik"), plant.model,
                                                              x[:plant.n_q])
        return x

    x0 = state("start", None)
    x_goal = state("goal", x0)
    x_goal[plant.n_q:] = 0.0 if not (r.get(("goal",)) or {}).get("velocities") else \
        x_goal[plant.n_q:]

    # ---------------------------------------------------------------- the planning step check
    step = check_planning_step(plant, x0, dt)
    if auto_dt:
        dt = plant.dt = step.suggested_dt()
    elif not step.passed:
        warnings.warn(PlanningStepWarning(step.message(str(path))), stacklevel=2)

    # ---------------------------------------------------------------- cost and C3 settings
    names = plant.state_names
    n_x, n_u, n_l = plant.n_x, plant.n_u, plant.n_lambda
    joint_of_state = _joint_of_state(plant)

    def weights(key: str, n: int, labels: list[list[str]], default: float) -> np.ndarray:
        spec = r.get(("cost", key), default)
        if not isinstance(spec, dict):
            return np.full(n, r.number(("cost", key), default, nonneg=True))
        w = np.full(n, r.number(("cost", key, "default"), default, nonneg=True)
                    if "default" in spec else default)
        for k in spec:
            if k == "default":
                continue
            hits = [i for i, lab in enumerate(labels) if k in lab]
            if not hits:
                raise r.error(("cost", key, k), f"{k!r} is not a joint or entry name; names: "
                              f"{', '.join(sorted({s for lab in labels for s in lab}))}",
                              at_key=True)
            w[hits] = r.number(("cost", key, k), None, nonneg=True)
        return w

    r.mapping(("cost",), "cost")
    n_q = plant.n_q
    q_labels = [[names[i], joint_of_state[i]] for i in range(n_q)]
    v_labels = [[names[i], joint_of_state[i]] for i in range(n_q, n_x)]
    Qd = np.concatenate([weights("Q", n_q, q_labels, 1.0),
                         weights("Q_velocity", n_x - n_q, v_labels, 1.0)])
    Rd = weights("R", n_u, [[s] for s in plant.input_names], 0.01)
    qn = r.number(("cost", "QN_scale"), 1.0, nonneg=True)
    Q = np.diag(Qd)
    if plan.get("G") == "scaled":  # G per entry from the cost's curvature (docs/c3.md)
        from lcs.scales import scaled_admm_weights

        Gd = scaled_admm_weights(plant.lcs(x0, np.zeros(n_u)), Q, np.diag(Rd))
        G_of = np.split(Gd, [n_x, n_x + n_l])  # per block, U's default
    else:
        try:
            G = r.number(("planning", "G"), DEFAULT_G, positive=True)
        except TaskFileError as e:
            raise r.error(("planning", "G"), e.reason.replace(
                "must be a number", "must be a number or 'scaled'")) from None
        Gd = np.full(n_x + n_l + n_u, G)
        G_of = np.split(Gd, [n_x, n_x + n_l])
    # U defaults to G (one ADMM metric; docs/c3.md, "The ADMM metric"): a block the file
    # does not name takes G's weight.
    U_spec = r.mapping(("planning", "U"), "U") if isinstance(plan.get("U"), dict) else None
    if U_spec is not None:
        Ud = np.concatenate([
            np.full(n, r.number(("planning", "U", key), None, nonneg=True)) if key in U_spec
            else g for key, n, g in zip(("state", "lambda", "input"), (n_x, n_l, n_u), G_of)])
    elif "U" in plan:
        Ud = np.full(n_x + n_l + n_u, r.number(("planning", "U"), None, nonneg=True))
    else:
        Ud = Gd.copy()
    projection = r.string(("planning", "projection"), "miqp")  # checked by c3mpc.C3Options
    if not projection:
        raise r.error(("planning", "projection"), "must be a projection name such as 'miqp'")

    lim = r.mapping(("input_limits",), None)
    u_hi = _effort_limits(plant)
    for k in lim:
        if k not in plant.input_names:
            raise r.error(("input_limits", k), f"{k!r} is not an input; inputs: "
                          f"{', '.join(plant.input_names)}", at_key=True)
        u_hi[plant.input_names.index(k)] = r.number(("input_limits", k), None, positive=True)
    defaults = ControlDefaults(
        N=r.number(("planning", "N"), 10, positive=True, integer=True), dt=dt, Q=Q,
        R=np.diag(Rd), QN=qn * Q, G=np.diag(Gd), U=np.diag(Ud),
        admm_iter=r.number(("planning", "admm_iter"), 20, positive=True, integer=True),
        rho=r.number(("planning", "rho"), 1.0, positive=True),
        rho_scale=r.number(("planning", "rho_scale"), 1.5, positive=True),
        projection=projection, x0=x0, x_goal=x_goal,
        x_lower=np.full(n_x, -np.inf), x_upper=np.full(n_x, np.inf),
        u_lower=-u_hi, u_upper=u_hi, notes=f"task file {path.name}")
    plant.defaults = defaults

    # ---------------------------------------------------------------- simulation
    r.mapping(("simulation",), "simulation")
    solver = r.string(("simulation", "solver"), "sap")
    from .sim.contact_problem import available_contact_solvers

    if solver not in available_contact_solvers():
        raise r.error(("simulation", "solver"), f"must be one of "
                      f"{', '.join(available_contact_solvers())}, got {solver!r}")
    sim_dt = r.number(("simulation", "dt"), 1e-3, positive=True)
    rate = r.number(("simulation", "control_rate"), 1.0 / dt, positive=True)
    duration = r.number(("simulation", "duration"), 3.0, positive=True)
    self_coll = r.get(("simulation", "self_collision"), True)
    if not isinstance(self_coll, bool):
        raise r.error(("simulation", "self_collision"), f"must be true or false, got {self_coll!r}")

    cp = r.mapping(("contact_params",), "contact_params")
    default_params = dict(_DEFAULT_PARAMS)
    if "default" in cp:
        r.mapping(("contact_params", "default"), "params")
        for k in cp["default"]:
            default_params[k] = r.number(("contact_params", "default", k), None,
                                         positive=k == "stiffness", nonneg=k != "stiffness")
    geom_names = list(plant.collision_model.names) if hasattr(plant.collision_model, "names") \
        else [g.name for g in plant.collision_model.geometryObjects]
    resolve = plant._contacts._resolve  # geometry, link (frame), joint or prefix -> indices
    params_of: dict[str, dict[str, float]] = {g: dict(default_params) for g in geom_names}
    # μ from the pairs: a geometry in pairs of one μ gets that μ (a pair combines 2μaμb/(μa+μb))
    mus: dict[str, set[float]] = {}
    for a_names, b_names, mu, _ in pair_mu:
        for side in a_names + b_names:
            for gi in resolve(side):
                mus.setdefault(geom_names[gi], set()).add(mu)
    for g, ms in mus.items():
        if len(ms) == 1:
            params_of[g]["mu"] = next(iter(ms))
    geoms = r.mapping(("contact_params", "geometries"), None)
    for gname, spec in geoms.items():
        gp = ("contact_params", "geometries", gname)
        r.mapping(gp, "params")
        try:
            hits = resolve(gname)
        except MultibodyError as e:
            raise r.error(gp, str(e), at_key=True) from None
        for gi in hits:
            for k in spec:
                params_of[geom_names[gi]][k] = r.number(gp + (k,), None, positive=k == "stiffness",
                                                        nonneg=k != "stiffness")
    geometry_params = {g: ContactParams(**p) for g, p in params_of.items()}
    cand = plant._contacts
    geometry_pairs = tuple(sorted({(geom_names[a], geom_names[b])
                                   for a, b in zip(cand._cand_a, cand._cand_b)}))

    r.mapping(("success",), "success")
    tolerance = r.number(("success", "tolerance"), 0.02, positive=True)
    orientation_tolerance = r.number(("success", "orientation_tolerance"), 0.05, positive=True)
    goal_joints = tuple(k for k in (r.get(("goal",)) or {}) if k not in ("velocities", "ik"))
    goal_joints += tuple(j for j in ik_joints.get("goal", ()) if j not in goal_joints)
    if "joints" in (r.get(("success",)) or {}):  # judge only these goal joints
        judged = r.names(("success", "joints"))
        for i, j in enumerate(judged):
            if j not in goal_joints:
                raise r.error(("success", "joints", i), f"{j!r} is not a joint the goal names; "
                              f"goal joints: {', '.join(goal_joints) or '(none)'}")
        goal_joints = tuple(judged)

    return TaskFile(path=path, model_path=model_path, plant=plant, x0=x0, x_goal=x_goal,
                    planning_step=step,
                    solver=solver, sim_dt=sim_dt, control_rate=rate, duration=duration,
                    geometry_params=geometry_params, self_collision=self_coll,
                    contact_geometry_pairs=geometry_pairs, data=r.data, goal_joints=goal_joints,
                    models=tuple(parts), model_slices=tuple(slices),
                    model_geometries=tuple(part_geometries),
                    success_tolerance=float(tolerance),
                    orientation_tolerance=float(orientation_tolerance))


def _model_parts(r: _Reader, top: dict[str, Any], base: Path, ModelPart: Any,
                 resolve: Any) -> list[Any]:
    """The model files: ``model:`` (with the top-level placement) or the ``models:`` list."""
    def placement(p: tuple[Any, ...]) -> dict[str, Any]:
        floating = r.get(p + ("floating_base",), False)
        if not isinstance(floating, bool):
            raise r.error(p + ("floating_base",), f"must be true or false, got {floating!r}")
        quat = r.vector(p + ("base_quaternion",), 4, [0.0, 0.0, 0.0, 1.0])
        if not np.linalg.norm(quat) > 0:
            raise r.error(p + ("base_quaternion",), "must be a non-zero quaternion (x, y, z, w)")
        return dict(base_position=tuple(r.vector(p + ("base_position",), 3, [0.0, 0.0, 0.0])),
                    base_quaternion=tuple(quat), floating_base=floating)

    def file(p: tuple[Any, ...]) -> Path:
        try:
            return resolve(r.string(p, ""), base)
        except FileNotFoundError as e:
            raise r.error(p, str(e)) from None

    if "models" in top:
        for k in ("model", "base_position", "base_quaternion", "floating_base"):
            if k in top:
                raise r.error((k,), "with 'models:' each model file has its own 'file' and "
                              "placement; remove the top-level key", at_key=True)
        items = r.get(("models",))
        if not isinstance(items, list) or not items:
            raise r.error(("models",), "must be a non-empty list of {file:, prefix:, "
                          "base_position:, base_quaternion:, floating_base:}")
        parts = []
        for i, _ in enumerate(items):
            p = ("models", i)
            spec = r.mapping(p, "models")
            if "file" not in spec:
                raise r.error(p, "a model needs 'file' (a URDF or MJCF path, or package://...)")
            parts.append(ModelPart(file(p + ("file",)), r.string(p + ("prefix",), ""),
                                   **placement(p)))
        return parts
    if "model" not in top:
        raise r.error((), "missing required key 'model' (the URDF or MJCF file) or 'models' "
                      "(a list of them)")
    return [ModelPart(file(("model",)), "", **placement(()))]


def _solve_ik_targets(r: _Reader, path: tuple[Any, ...], model: Any,
                      q: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """``start.ik`` / ``goal.ik``: one target ``{frame, position, quaternion | rpy, joints}`` or a
    list of them, solved in order by :func:`plants.multibody.ik.solve_ik` from ``q`` (the named
    joints' values, else the file's start). Returns the configuration and the joints moved."""
    from .multibody.errors import UnknownFrameError, UnknownJointError, UnreachablePoseError
    from .multibody.ik import _frame_id, _moved_dofs, solve_ik
    from .multibody.orientation import rpy_quaternion

    spec = r.get(path)
    targets = [(path + (i,), t) for i, t in enumerate(spec)] if isinstance(spec, list) \
        else [(path, spec)]
    if not targets:
        raise r.error(path, "must be a target {frame:, position:} or a non-empty list of them")
    moved: list[str] = []
    for p, _ in targets:
        t = r.mapping(p, "ik")
        for req in ("frame", "position"):
            if req not in t:
                raise r.error(p, f"an inverse-kinematics target needs '{req}'")
        if "quaternion" in t and "rpy" in t:
            raise r.error(p + ("rpy",), "give 'quaternion' or 'rpy', not both", at_key=True)
        frame = r.string(p + ("frame",), "")
        position = r.vector(p + ("position",), 3, None)
        rotation = None
        if "quaternion" in t:
            rotation = r.vector(p + ("quaternion",), 4, None)
            n = float(np.linalg.norm(rotation))
            if not abs(n - 1.0) <= 1e-3:
                raise r.error(p + ("quaternion",), f"must be a unit quaternion [qx, qy, qz, qw], "
                              f"got norm {n:.6g}")
        elif "rpy" in t:
            rotation = rpy_quaternion(r.vector(p + ("rpy",), 3, None))
        joints = r.names(p + ("joints",)) if "joints" in t else None
        try:
            ids, _ = _moved_dofs(model, _frame_id(model, frame), joints)
            result = solve_ik(model, frame, position, rotation, q0=q, joints=joints)
        except UnknownFrameError as e:
            raise r.error(p + ("frame",), str(e)) from None
        except UnknownJointError as e:
            bad = next((i for i, j in enumerate(joints or ()) if j == e.name), None)
            raise r.error(p + ("joints",) + (() if bad is None else (bad,)), str(e)) from None
        except ValueError as e:
            raise r.error(p, str(e)) from None
        if not result.converged:
            raise r.error(p + ("position",), str(UnreachablePoseError(frame, result)))
        q = result.q
        moved += [model.names[j] for j in ids if model.names[j] not in moved]
    return q, moved


def _joint_of_state(plant: Any) -> list[str]:
    """Per state entry, the name of its joint."""
    model = plant.model
    out = [""] * plant.n_x
    for j in range(1, model.njoints):
        jm = model.joints[j]
        for k in range(jm.nq):
            out[jm.idx_q + k] = model.names[j]
        for k in range(jm.nv):
            out[plant.n_q + jm.idx_v + k] = model.names[j]
    return out


def _effort_limits(plant: Any) -> np.ndarray:
    """(n_u,) the model file's effort limit of each input's dof (inf where the file has none)."""
    eff = np.asarray(plant.model.effortLimit, dtype=float)
    out = np.full(plant.n_u, np.inf)
    for i, col in enumerate(np.asarray(plant.B).T):
        iv = int(np.argmax(np.abs(col)))
        if iv < eff.size and 0 < eff[iv] < 1e30:  # Pinocchio's 'none' is DBL_MAX
            out[i] = eff[iv]
    return out
