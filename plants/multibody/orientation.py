"""Orientations of free and spherical joints: where the unit quaternions are, how far apart two
are, and how a user writes one.

A Pinocchio free-flyer's configuration is ``(x, y, z, qx, qy, qz, qw)`` (position [m], then a
unit quaternion in Pinocchio's order x, y, z, w), a spherical joint's ``(qx, qy, qz, qw)``.
``q`` and ``-q`` are the same orientation; :func:`quaternion_angle` is the angle of the rotation
between two orientations, 2 acos|⟨q₁, q₂⟩| ∈ [0, π], and :func:`align_quaternions` flips the
quaternions of a state into the hemisphere of a reference (a goal), so that a cost on the raw
components (‖q − q_goal‖²) measures the short way round.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .errors import MultibodyTypeError, MultibodyValueError

__all__ = ["QUATERNION_JOINTS", "quaternion_angle", "quaternion_offsets", "align_quaternions",
           "rpy_quaternion", "joint_pose", "UNIT_TOLERANCE"]

#: Joint types whose configuration holds a unit quaternion, and where it starts in the joint's q.
QUATERNION_JOINTS = {"JointModelFreeFlyer": 3, "JointModelSpherical": 0}
#: Largest |‖q‖ − 1| accepted for a quaternion a user writes (it is then normalized).
UNIT_TOLERANCE = 1e-3


def quaternion_angle(q: Any, q_ref: Any) -> float:
    """Angle [rad] of the rotation between two quaternions: 2 acos|⟨q̂, q̂_ref⟩| ∈ [0, π]
    (q̂ = q/‖q‖; q and −q are the same orientation). Either order of components (x, y, z, w or
    w, x, y, z) gives the same angle, as long as both use the same one."""
    q = np.asarray(q, dtype=float)
    r = np.asarray(q_ref, dtype=float)
    c = abs(float(q @ r)) / (np.linalg.norm(q) * np.linalg.norm(r))
    return float(2.0 * np.arccos(min(c, 1.0)))


def quaternion_offsets(model: Any) -> dict[str, int]:
    """Joint name -> index in q (= in the state x = [q; v]) where its unit quaternion starts,
    for every free-flyer and spherical joint of the Pinocchio ``model``, in joint order."""
    out = {}
    for j in range(1, model.njoints):
        jm = model.joints[j]
        off = QUATERNION_JOINTS.get(jm.shortname())
        if off is not None:
            out[model.names[j]] = jm.idx_q + off
    return out


def align_quaternions(x: Any, reference: Any, indices: Any) -> np.ndarray:
    """A copy of the state ``x`` with each quaternion at ``indices`` (start indices) negated
    where ⟨q, q_ref⟩ < 0, so it lies in the hemisphere of ``reference``'s (same orientation)."""
    x = np.array(x, dtype=float)
    ref = np.asarray(reference, dtype=float)
    for i in indices:
        if float(x[i:i + 4] @ ref[i:i + 4]) < 0.0:
            x[i:i + 4] = -x[i:i + 4]
    return x


def rpy_quaternion(rpy: Any) -> np.ndarray:
    """(4,) unit quaternion (x, y, z, w) of roll-pitch-yaw angles [rad] (R = Rz(y) Ry(p) Rx(r),
    Pinocchio's and URDF's convention)."""
    import pinocchio as pin

    r, p, y = (float(a) for a in rpy)
    quat = pin.Quaternion(pin.rpy.rpyToMatrix(r, p, y))
    return np.array([quat.x, quat.y, quat.z, quat.w])


def _unit(quat: np.ndarray, what: str) -> np.ndarray:
    n = float(np.linalg.norm(quat))
    if not abs(n - 1.0) <= UNIT_TOLERANCE:
        raise MultibodyValueError(f"{what}: a unit quaternion (x, y, z, w) is needed, got "
                                  f"{quat.tolist()} (norm {n:.6g})")
    return quat / n


def joint_pose(value: Any, joint: str, kind: str) -> np.ndarray:
    """The configuration of a free (``kind`` "JointModelFreeFlyer") or spherical joint as a
    user writes it, normalized.

    Free joint: 7 numbers ``[x, y, z, qx, qy, qz, qw]``, or a mapping ``{position: [x, y, z],
    quaternion: [qx, qy, qz, qw]}`` / ``{position: [...], rpy: [roll, pitch, yaw]}`` (position
    defaults to the origin, orientation to the identity). Spherical joint: 4 numbers, or
    ``{quaternion: [...]}`` / ``{rpy: [...]}``. A quaternion must be unit to
    :data:`UNIT_TOLERANCE` (it is normalized).

    Raises:
        ValueError / TypeError naming the joint: wrong size, not a unit quaternion, unknown keys.
    """
    free = kind == "JointModelFreeFlyer"
    if isinstance(value, Mapping):
        allowed = ("position", "quaternion", "rpy") if free else ("quaternion", "rpy")
        bad = [k for k in value if k not in allowed]
        if bad:
            raise MultibodyValueError(f"{joint}: unknown key {bad[0]!r}; a "
                                      f"{'free' if free else 'spherical'} joint's pose takes "
                                      f"{', '.join(allowed)}")
        if "quaternion" in value and "rpy" in value:
            raise MultibodyValueError(f"{joint}: give 'quaternion' or 'rpy', not both")
        pos = _numbers(value.get("position", (0.0, 0.0, 0.0)), 3, f"{joint}.position")
        if "rpy" in value:
            quat = rpy_quaternion(_numbers(value["rpy"], 3, f"{joint}.rpy"))
        else:
            quat = _unit(_numbers(value.get("quaternion", (0.0, 0.0, 0.0, 1.0)), 4,
                                  f"{joint}.quaternion"), f"{joint}.quaternion")
        return np.concatenate([pos, quat]) if free else quat
    arr = _numbers(value, 7 if free else 4, joint)
    if free:
        return np.concatenate([arr[:3], _unit(arr[3:], f"{joint} (entries 4-7)")])
    return _unit(arr, joint)


def _numbers(value: Any, n: int, what: str) -> np.ndarray:
    if isinstance(value, (str, bool)) or (isinstance(value, (list, tuple))
                                          and any(isinstance(v, (str, bool)) for v in value)):
        raise MultibodyTypeError(f"{what} must be {n} numbers, got {value!r}")
    arr = np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1)
    if arr.shape != (n,):
        raise MultibodyValueError(f"{what} needs {n} value(s), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise MultibodyValueError(f"{what} has a non-finite value: {value!r}")
    return arr
