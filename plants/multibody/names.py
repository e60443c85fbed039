"""Names of a Pinocchio model's state and input entries, and states given by joint name.

State ``x = [q; v]``: a one-dof joint contributes ``<joint>`` to q and ``<joint>_dot`` to v;
translation, spherical and free-flyer joints ``<joint>_x`` … / ``<joint>_qx`` … (q) and
``<joint>_vx`` … / ``<joint>_wx`` … (v); other joints ``<joint>_q<i>`` / ``<joint>_v<i>``.
Inputs are named after the joint whose velocity their column of B drives.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .errors import MultibodyTypeError, MultibodyValueError, UnknownJointError
from .orientation import QUATERNION_JOINTS, joint_pose

__all__ = ["state_names", "input_names", "state_from_joints"]

_JOINT_COORDS = {
    "JointModelFreeFlyer": (("x", "y", "z", "qx", "qy", "qz", "qw"),
                            ("vx", "vy", "vz", "wx", "wy", "wz")),
    "JointModelTranslation": (("x", "y", "z"), ("vx", "vy", "vz")),
    "JointModelSpherical": (("qx", "qy", "qz", "qw"), ("wx", "wy", "wz")),
}


def state_names(model: Any) -> tuple[str, ...]:
    """The n_q + n_v names of the state entries of ``model`` (see the module docstring)."""
    qn: list[str] = []
    vn: list[str] = []
    for j in range(1, model.njoints):
        jn, jm = model.names[j], model.joints[j]
        if jm.nq == 1:
            qn.append(jn)
            vn.append(f"{jn}_dot")
        elif jm.shortname() in _JOINT_COORDS:
            qc, vc = _JOINT_COORDS[jm.shortname()]
            qn += [f"{jn}_{c}" for c in qc]
            vn += [f"{jn}_{c}" for c in vc]
        else:
            qn += [f"{jn}_q{i}" for i in range(jm.nq)]
            vn += [f"{jn}_v{i}" for i in range(jm.nv)]
    return tuple(qn + vn)


def input_names(model: Any, B: np.ndarray) -> tuple[str, ...]:
    """Per column of the (n_v, n_u) actuation B, the joint whose velocity it drives most."""
    names = []
    for col in np.asarray(B).T:
        iv = int(np.argmax(np.abs(col)))
        j = next(j for j in range(1, model.njoints)
                 if model.joints[j].idx_v <= iv < model.joints[j].idx_v + model.joints[j].nv)
        names.append(model.names[j])
    return tuple(names)


def _values(model: Any, joints: Mapping[str, Any], kind: str,
            argname: str) -> list[tuple[int, np.ndarray]]:
    if not isinstance(joints, Mapping):
        raise MultibodyTypeError(f"{argname} must map joint names to values, got "
                                 f"{type(joints).__name__}")
    names = list(model.names)
    out = []
    for jn, value in joints.items():
        if jn not in names or jn == "universe":
            raise UnknownJointError(jn, names[1:])
        jm = model.joints[names.index(jn)]
        if kind == "q" and jm.shortname() in QUATERNION_JOINTS:  # a pose: checked, normalized
            out.append((jm.idx_q, joint_pose(value, jn, jm.shortname())))
            continue
        n = jm.nq if kind == "q" else jm.nv
        if isinstance(value, bool) or isinstance(value, str):
            raise MultibodyTypeError(f"{argname}[{jn!r}] must be a number or {n} numbers, got "
                                     f"{value!r}")
        arr = np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1)
        if arr.shape != (n,):
            raise MultibodyValueError(f"{argname}[{jn!r}] needs {n} value(s) (joint "
                                      f"{jm.shortname()}), got {arr.size}")
        if not np.all(np.isfinite(arr)):
            raise MultibodyValueError(f"{argname}[{jn!r}] has a non-finite value: {value!r}")
        out.append(((jm.idx_q if kind == "q" else jm.idx_v), arr))
    return out


def state_from_joints(model: Any, q_base: np.ndarray, positions: Mapping[str, Any] | None = None,
                      velocities: Mapping[str, Any] | None = None) -> np.ndarray:
    """The state ``[q; v]`` (n_q + n_v,): ``q_base`` and zero velocity, with the named joints set.

    Args:
        model: the Pinocchio model.
        q_base: (n_q,) configuration of the joints not named (e.g. the plant's ``q0``).
        positions: joint name -> position (a number for one-dof joints [m or rad]; n_q numbers
            otherwise, a free joint's as x, y, z, qx, qy, qz, qw; a free or spherical joint's
            also as ``{position: [x, y, z], quaternion: [qx, qy, qz, qw]}`` or ``{position:,
            rpy: [roll, pitch, yaw]}``, see :func:`plants.multibody.orientation.joint_pose`;
            quaternions must be unit to 1e-3 and are normalized).
        velocities: joint name -> velocity (a number, or n_v numbers).

    Raises:
        UnknownJointError: a name is not a joint (the message lists them). ValueError/TypeError:
        a value of the wrong size or type.
    """
    x = np.concatenate([np.array(q_base, dtype=float), np.zeros(model.nv)])
    for i, arr in _values(model, positions or {}, "q", "positions"):
        x[i:i + arr.size] = arr
    for i, arr in _values(model, velocities or {}, "v", "velocities"):
        x[model.nq + i:model.nq + i + arr.size] = arr
    return x
