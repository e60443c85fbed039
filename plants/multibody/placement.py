"""Placing a fixed-base model in the world: one transform for its root joints, world frames and
world-attached collision geometry (so that a robot file's base can sit anywhere)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .errors import MultibodyValueError

__all__ = ["base_placement", "place_fixed_base", "place_free_poses"]


def base_placement(position: Sequence[float] = (0.0, 0.0, 0.0),
                   quaternion: Sequence[float] = (0.0, 0.0, 0.0, 1.0)) -> Any:
    """``pin.SE3`` of a base at ``position`` [m] with orientation ``quaternion`` (x, y, z, w).

    Raises:
        ValueError: not 3 finite coordinates, or a zero / non-finite quaternion (it is normalized).
    """
    import pinocchio as pin

    pos = np.asarray(position, float).ravel()
    quat = np.asarray(quaternion, float).ravel()
    if pos.shape != (3,) or not np.isfinite(pos).all():
        raise MultibodyValueError(f"base_position must be 3 finite coordinates [m], got {position}")
    norm = np.linalg.norm(quat) if quat.shape == (4,) else 0.0
    if not (np.isfinite(norm) and norm > 0):
        raise MultibodyValueError(f"base_quaternion must be a non-zero (x, y, z, w), got {quaternion}")
    x, y, z, w = quat / norm
    return pin.SE3(pin.Quaternion(w, x, y, z).toRotationMatrix(), pos)


def _free_root_joints(model: Any) -> list[int]:
    return [j for j in range(1, model.njoints) if model.parents[j] == 0
            and model.joints[j].shortname() == "JointModelFreeFlyer"]


def place_free_poses(model: Any, q: Any, placement: Any) -> np.ndarray:
    """A copy of the configuration ``q`` with the pose (x, y, z, qx, qy, qz, qw) of every
    free-flyer joint hanging from the world premultiplied by ``placement``: a free body's q is
    its world pose, so placing its file moves its start pose, not its joint."""
    import pinocchio as pin

    q = np.array(q, dtype=float)
    for j in _free_root_joints(model):
        i = model.joints[j].idx_q
        x, y, z, w = q[i + 3:i + 7]
        pose = placement * pin.SE3(pin.Quaternion(w, x, y, z).normalized().toRotationMatrix(),
                                   q[i:i + 3])
        quat = pin.Quaternion(pose.rotation)
        q[i:i + 7] = np.r_[pose.translation, quat.x, quat.y, quat.z, quat.w]
    return q


def place_fixed_base(model: Any, geometry_model: Any, placement: Any) -> None:
    """Move a model to ``placement`` (in place): the joints hanging from the world, the frames
    attached to the world (the fixed base link and its welded links) and the world-attached
    collision geometry are premultiplied by it. A free-flyer joint hanging from the world keeps
    its joint placement (its q is the body's world pose); the model's reference configurations
    (MJCF ``qpos0`` and keyframes) get its start pose moved instead (:func:`place_free_poses`)."""
    free = set(_free_root_joints(model))
    for j in range(1, model.njoints):
        if model.parents[j] == 0 and j not in free:
            model.jointPlacements[j] = placement * model.jointPlacements[j]
    if free:
        for key in list(model.referenceConfigurations):
            if np.shape(key.data()) == (model.nq,):
                model.referenceConfigurations[key.key()] = place_free_poses(model, key.data(),
                                                                            placement)
    for i in range(1, len(model.frames)):
        f = model.frames[i]
        if f.parentJoint == 0:
            f.placement = placement * f.placement
            model.frames[i] = f
    for i, go in enumerate(geometry_model.geometryObjects):
        if go.parentJoint == 0:
            go.placement = placement * go.placement
            geometry_model.geometryObjects[i] = go
