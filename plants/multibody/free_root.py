"""A floating base in the planning plant and in the simulation scene: one configuration, two
velocity conventions.

The planning plant (:class:`~plants.multibody.MultibodyPlant`, a task file's
``floating_base: true``) attaches the root link by Pinocchio's free-flyer joint; the simulation
scene (:meth:`plants.sim.SceneBuilder.add_urdf` with ``floating_base=True``) by a composite joint,
a translation followed by a spherical joint. Both are named ``root_joint`` (after the model's
prefix) and have the same configuration

    q = (p, quat):  p (3,) root position in the world [m], quat (4,) its orientation (x, y, z, w),

but different velocities (R = R(quat), the root's rotation to the world):

    free-flyer:  v = (R^T ṗ, ω_b)   linear velocity in the root frame [m/s], angular in the root
                                    frame [rad/s];
    scene root:  v = (ṗ,     ω_b)   linear velocity in the world frame, angular in the root
                                    frame.

So v_scene[:3] = R v_ff[:3] and, for generalized forces (power τ·v is the same in both),
τ_scene[:3] = R τ_ff[:3]; the angular parts are equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["quaternion_rotation", "free_flyer_to_scene_velocity", "scene_to_free_flyer_velocity",
           "is_free_flyer", "is_scene_free_root"]


def quaternion_rotation(quat: Any) -> np.ndarray:
    """(3, 3) rotation matrix of a quaternion (x, y, z, w) (normalized here)."""
    x, y, z, w = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def free_flyer_to_scene_velocity(quat: Any, v: Any) -> np.ndarray:
    """A copy of ``v`` (n ≥ 6,) whose first 3 entries (a free-flyer's root-frame linear velocity)
    become the scene root's world-frame linear velocity, R(quat) v[:3]."""
    out = np.array(v, dtype=float)
    out[:3] = quaternion_rotation(quat) @ out[:3]
    return out


def scene_to_free_flyer_velocity(quat: Any, v: Any) -> np.ndarray:
    """The inverse of :func:`free_flyer_to_scene_velocity`: out[:3] = R(quat)^T v[:3]."""
    out = np.array(v, dtype=float)
    out[:3] = quaternion_rotation(quat).T @ out[:3]
    return out


def is_free_flyer(joint: Any) -> bool:
    """Whether a ``pinocchio.JointModel`` is a free-flyer."""
    return joint.shortname() == "JointModelFreeFlyer"


def is_scene_free_root(joint: Any) -> bool:
    """Whether a ``pinocchio.JointModel`` is the scene's free root (a composite of a translation
    and a spherical joint, in that order)."""
    if joint.shortname() != "JointModelComposite":
        return False
    parts = [j.shortname() for j in joint.extract().joints] if hasattr(joint, "extract") else \
        [j.shortname() for j in joint.joints]
    return parts == ["JointModelTranslation", "JointModelSpherical"]
