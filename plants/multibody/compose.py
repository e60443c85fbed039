"""Several model files as one planning model: a robot from one file, an object and a table from
others, each placed in the world (a task file's ``models:`` list).

Each file is read as :meth:`MultibodyPlant.from_urdf` / :meth:`~MultibodyPlant.from_mjcf` read
it (every body and joint, collision names from the file, free bodies at their start pose), its
names get the part's ``prefix``, its fixed base is placed at ``base_position`` /
``base_quaternion`` (or, with ``floating_base``, its root link gets a free joint starting at that
pose), and the parts are joined by ``pinocchio.appendModel`` in the order given:
the state is ``[q_1, …, q_n, v_1, …, v_n]`` with each part's joints in its file's order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .errors import MultibodyValueError

__all__ = ["ModelPart", "ComposedModel", "compose_models", "resolve_model_path", "append_model",
           "floating_base_pose", "ROOT_JOINT_NAME"]


@dataclass(frozen=True)
class ModelPart:
    """One model file of a composed model.

    Attributes:
        path: the URDF (``.urdf``) or MJCF (``.xml``) file.
        prefix: prepended to every joint, frame and collision-geometry name of the file
            (as :meth:`plants.sim.SceneBuilder.add_urdf`'s ``prefix``).
        base_position: (3,) [m] where the file's fixed base (its world) sits in the world; with
            ``floating_base`` the root link's start position instead.
        base_quaternion: (4,) x, y, z, w orientation of that placement (with ``floating_base``:
            the root link's start orientation).
        floating_base: attach the file's root link to the world by a free joint named
            ``prefix + "root_joint"`` (Pinocchio's free-flyer: q = position [m], quaternion
            (x, y, z, w); v = linear and angular velocity in the root link's frame), for a legged
            robot or a free-flying one. Default False: fixed to the world.
    """

    path: Path
    prefix: str = ""
    base_position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    base_quaternion: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    floating_base: bool = False


@dataclass(frozen=True)
class ComposedModel:
    """What :func:`compose_models` returns.

    Attributes:
        model, collision_model: the joined ``pinocchio.Model`` / ``GeometryModel`` (its
            ``referenceConfigurations["qpos0"]`` is :attr:`q0`).
        q0: (n_q,) the start configuration (each file's: MJCF ``qpos0``, else neutral).
        actuated_joints: the default inputs: per part, its MJCF ``<actuator>`` joints, or (a URDF,
            or an MJCF without actuators) its joints that are not floating, with prefixes.
        slices: per part, ``(q_start, n_q, v_start, n_v)`` of its joints in the joined model.
        geometry_names: per part, the names of its collision geometries (with the prefix).
    """

    model: Any
    collision_model: Any
    q0: np.ndarray
    actuated_joints: tuple[str, ...]
    slices: tuple[tuple[int, int, int, int], ...]
    geometry_names: tuple[tuple[str, ...], ...]


#: The name of a :attr:`ModelPart.floating_base` root joint (before the part's prefix); the
#: simulator's ``SceneBuilder.add_urdf(floating_base=True)`` gives its root the same name.
ROOT_JOINT_NAME = "root_joint"


def floating_base_pose(position: Sequence[float], quaternion: Sequence[float]) -> np.ndarray:
    """(7,) a free root's configuration (x, y, z [m], qx, qy, qz, qw), the quaternion normalized.

    Raises:
        ValueError: not 3 finite coordinates, or not a finite non-zero quaternion.
    """
    pos = np.asarray(position, dtype=float).ravel()
    quat = np.asarray(quaternion, dtype=float).ravel()
    if pos.shape != (3,) or not np.isfinite(pos).all():
        raise MultibodyValueError(f"base_position must be 3 finite coordinates [m], got {position}")
    norm = float(np.linalg.norm(quat)) if quat.shape == (4,) else 0.0
    if not (np.isfinite(norm) and norm > 0):
        raise MultibodyValueError(f"base_quaternion must be a non-zero (x, y, z, w), got "
                                  f"{quaternion}")
    return np.concatenate([pos, quat / norm])


def resolve_model_path(text: str, base: Path) -> Path:
    """A model file named in a task file: relative to ``base`` (the task file's folder), or
    ``package://<package>/<path>`` (ROS style), looked up in ``base``'s ancestors and in the
    ``share`` folder of example-robot-data (``package://example-robot-data/robots/...``).

    Raises:
        FileNotFoundError: no such file (the message says where it looked).
    """
    if text.startswith("package://"):
        from .resources import default_package_dirs

        rest = text[len("package://"):]
        dirs = list(default_package_dirs(base / "_"))
        for d in dirs:
            p = Path(d) / rest
            if p.is_file():
                return p.resolve()
        raise FileNotFoundError(f"{text}: not found in {', '.join(dirs)}")
    p = (base / os.path.expanduser(text)).resolve()
    if not p.is_file():
        raise FileNotFoundError(f"model file not found: {p}")
    return p


def _load(part: ModelPart) -> tuple[Any, Any, np.ndarray, list[str] | None]:
    import pinocchio as pin

    from .model import MultibodyPlant

    root = pin.JointModelFreeFlyer() if part.floating_base else None
    if part.path.suffix.lower() == ".xml":
        from .mjcf import load_mjcf

        loaded = load_mjcf(part.path, root, ROOT_JOINT_NAME)
        model, geom, q0 = loaded.model, loaded.collision_model, np.array(loaded.q0, float)
        actuated = list(loaded.actuated_joints) or None
    else:
        from .resources import default_package_dirs
        from .urdf import load_urdf

        model, geom = load_urdf(part.path, root, [str(p) for p in default_package_dirs(part.path)],
                                ROOT_JOINT_NAME)
        q0, actuated = pin.neutral(model), None
    if part.floating_base:  # the placement is the root's start pose, part of the state
        q0 = np.array(q0, dtype=float)
        q0[:7] = floating_base_pose(part.base_position, part.base_quaternion)
    else:
        MultibodyPlant._place(model, geom, True, part.base_position, part.base_quaternion)
        for key in model.referenceConfigurations:  # placed: free bodies' start poses moved with it
            if key.key() == "qpos0" and np.shape(key.data()) == (model.nq,):
                q0 = np.array(key.data(), dtype=float)
    if actuated is None:
        B = MultibodyPlant.actuation_for_joints(model, None)
        actuated = [model.names[j] for j in range(1, model.njoints)
                    if any(model.joints[j].idx_v <= i < model.joints[j].idx_v + model.joints[j].nv
                           for i in np.flatnonzero(np.abs(B).sum(axis=1)))]
    return model, geom, q0, actuated


def _rename(model: Any, geom: Any, prefix: str) -> None:
    if not prefix:
        return
    for j in range(1, model.njoints):
        model.names[j] = prefix + model.names[j]
    for i in range(1, len(model.frames)):
        f = model.frames[i]
        f.name = prefix + f.name
        model.frames[i] = f
    for i, go in enumerate(geom.geometryObjects):
        go.name = prefix + go.name
        geom.geometryObjects[i] = go


_MARK = "#c3mpc-frame-"


def _mark_duplicate_frames(model: Any) -> None:
    """Make frame names unique (``pin.appendModel`` looks frames up by name alone)."""
    names = [f.name for f in model.frames]
    dup = {n for n in names if names.count(n) > 1}
    for i in range(len(model.frames)):
        f = model.frames[i]
        if f.name in dup:
            f.name = f"{f.name}{_MARK}{i}"
            model.frames[i] = f


def _unmark_frames(model: Any) -> None:
    for i in range(len(model.frames)):
        f = model.frames[i]
        if _MARK in f.name:
            f.name = f.name.split(_MARK)[0]
            model.frames[i] = f


def append_model(model_a: Any, model_b: Any, geometries: Sequence[tuple[Any, Any]] = ()) -> Any:
    """``pin.appendModel(model_a, model_b, 0, Identity)``: model_b's joints hung from the world
    after model_a's.

    Unlike a bare ``appendModel`` it accepts models where a body and a joint share a name (an
    MJCF ``<body name="box"><freejoint name="box"/>``), which Pinocchio 4.1's lookup of frames by
    name alone rejects ("Several frames match the filter"). ``geometries``: ``(model,
    GeometryModel)`` pairs (model is ``model_a`` or ``model_b``) whose objects' parent joint and
    frame indices are re-pointed, in place, to the joined model (``appendModel`` may renumber the
    frames of a branched model_a).
    """
    import pinocchio as pin

    _mark_duplicate_frames(model_a)
    _mark_duplicate_frames(model_b)
    try:
        joined = pin.appendModel(model_a, model_b, 0, pin.SE3.Identity())
        for owner, gm in geometries:
            for i, go in enumerate(gm.geometryObjects):
                frame = owner.frames[go.parentFrame]
                go.parentJoint = joined.getJointId(owner.names[go.parentJoint]) \
                    if go.parentJoint else 0
                go.parentFrame = joined.getFrameId(frame.name, frame.type) \
                    if go.parentFrame else 0
                gm.geometryObjects[i] = go
    finally:
        _unmark_frames(model_a)
        _unmark_frames(model_b)
    _unmark_frames(joined)
    return joined


def compose_models(parts: Sequence[ModelPart]) -> ComposedModel:
    """Join several model files into one Pinocchio model and collision model.

    Raises:
        ValueError: no parts, or two parts with the same joint or geometry name (give one of
            them a ``prefix``); FileNotFoundError: a missing file.
    """
    if not parts:
        raise MultibodyValueError("compose_models needs at least one model part")
    model = geom = None
    q0s: list[np.ndarray] = []
    actuated: list[str] = []
    slices = []
    geometry_names = []
    for index, part in enumerate(parts):
        m, g, q0, act = _load(part)
        _rename(m, g, part.prefix)
        act = [part.prefix + a for a in act]
        if model is None:
            model, geom = m, g
            slices.append((0, m.nq, 0, m.nv))
        else:
            for names, kind, mine in ((list(m.names)[1:], "joint", set(list(model.names)[1:])),
                                      ([o.name for o in g.geometryObjects], "collision geometry",
                                       {o.name for o in geom.geometryObjects})):
                clash = sorted(set(names) & mine)
                if clash:
                    err = MultibodyValueError(
                        f"{part.path.name}: {kind} name(s) {', '.join(clash[:5])} already in an "
                        f"earlier model file; give this model a prefix")
                    err.part_index = index  # which part (a task file names its line)
                    raise err
            slices.append((model.nq, m.nq, model.nv, m.nv))
            gravity = model.gravity.copy()
            # appendModel looks frames up by name alone: an MJCF body and its joint often share
            # one (<body name="box"><freejoint name="box"/>); tag such names while appending
            joined = append_model(model, m, [(model, geom), (m, g)])
            for go in g.geometryObjects:
                geom.addGeometryObject(go)
            model = joined
            model.gravity = gravity
        q0s.append(q0)
        actuated += act
        geometry_names.append(tuple(o.name for o in g.geometryObjects))
    q0 = np.concatenate(q0s)
    model.referenceConfigurations["qpos0"] = q0
    return ComposedModel(model, geom, q0, tuple(actuated), tuple(slices), tuple(geometry_names))
