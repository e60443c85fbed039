"""ROS message dicts (rosbridge JSON) for poses, wrenches, points and franka_ros robot state,
with strict parsing: every parser raises :class:`~hardware.errors.MessageError` on a missing
field, a non-finite number, a wrong frame or a non-unit quaternion instead of returning junk.

Conventions: positions in [m], quaternions ``(x, y, z, w)`` as in ROS, homogeneous transforms
``T`` (4, 4) mapping the end-effector frame to the base frame (``O_T_EE`` in franka_ros, stored
column-major as 16 numbers).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from .errors import HardwareValueError, MessageError

__all__ = [
    "header",
    "stamp_to_seconds",
    "pose_stamped",
    "parse_pose_stamped",
    "wrench_stamped",
    "parse_wrench_stamped",
    "point_stamped",
    "parse_point_stamped",
    "franka_state",
    "parse_franka_state",
    "parse_external_wrench",
    "FRANKA_STATE_FIELDS",
    "parse_robot_mode",
    "ROBOT_MODES",
    "COMMANDABLE_MODES",
    "ERROR_FIELDS",
    "transform_from_pose",
    "pose_from_transform",
]

_QUAT_TOL = 0.05  # accepted |‖q‖ - 1| before normalising; beyond it the message is rejected

#: ``franka_msgs/FrankaState.robot_mode`` constants (franka_ros, = libfranka's ``RobotMode``).
ROBOT_MODES = {0: "OTHER", 1: "IDLE", 2: "MOVE", 3: "GUIDING", 4: "REFLEX", 5: "USER_STOPPED",
               6: "AUTOMATIC_ERROR_RECOVERY"}

#: The modes in which the deploy loop may command the robot (IDLE, MOVE); any other mode is a
#: fault that stops commanding.
COMMANDABLE_MODES = (1, 2)

#: The boolean fields of ``franka_msgs/Errors`` (``current_errors``, ``last_motion_errors``),
#: in the message's order (franka_ros ``franka_msgs/msg/Errors.msg`` at c11f000: 41 flags; the
#: first 33 are franka_ros 0.10's, a parser keeps names it does not know).
ERROR_FIELDS = (
    "joint_position_limits_violation", "cartesian_position_limits_violation",
    "self_collision_avoidance_violation", "joint_velocity_violation",
    "cartesian_velocity_violation", "force_control_safety_violation", "joint_reflex",
    "cartesian_reflex", "max_goal_pose_deviation_violation",
    "max_path_pose_deviation_violation", "cartesian_velocity_profile_safety_violation",
    "joint_position_motion_generator_start_pose_invalid",
    "joint_motion_generator_position_limits_violation",
    "joint_motion_generator_velocity_limits_violation",
    "joint_motion_generator_velocity_discontinuity",
    "joint_motion_generator_acceleration_discontinuity",
    "cartesian_position_motion_generator_start_pose_invalid",
    "cartesian_motion_generator_elbow_limit_violation",
    "cartesian_motion_generator_velocity_limits_violation",
    "cartesian_motion_generator_velocity_discontinuity",
    "cartesian_motion_generator_acceleration_discontinuity",
    "cartesian_motion_generator_elbow_sign_inconsistent",
    "cartesian_motion_generator_start_elbow_invalid",
    "cartesian_motion_generator_joint_position_limits_violation",
    "cartesian_motion_generator_joint_velocity_limits_violation",
    "cartesian_motion_generator_joint_velocity_discontinuity",
    "cartesian_motion_generator_joint_acceleration_discontinuity",
    "cartesian_position_motion_generator_invalid_frame",
    "force_controller_desired_force_tolerance_violation", "controller_torque_discontinuity",
    "start_elbow_sign_inconsistent", "communication_constraints_violation",
    "power_limit_violation", "joint_p2p_insufficient_torque_for_planning",
    "tau_j_range_violation", "instability_detected", "joint_move_in_wrong_direction",
    "cartesian_spline_motion_generator_violation",
    "joint_via_motion_generator_planning_joint_limit_violation",
    "base_acceleration_initialization_timeout", "base_acceleration_invalid_reading",
)

#: ``franka_msgs/FrankaState`` after its header, in the message's order: field name ->
#: (ROS type, array length; 0 for a scalar). Array fields are ``float64[n]``; transforms are
#: 4x4 column-major (16 numbers); ``robot_mode`` is a ``uint8`` of :data:`ROBOT_MODES`;
#: ``current_errors`` and ``last_motion_errors`` are ``franka_msgs/Errors``
#: (:data:`ERROR_FIELDS`). Source: franka_ros ``franka_msgs/msg/FrankaState.msg`` at c11f000
#: (``tests/test_hardware_franka_state.py`` checks this table against that file).
FRANKA_STATE_FIELDS: dict[str, tuple[str, int]] = {
    "cartesian_collision": ("float64", 6), "cartesian_contact": ("float64", 6),
    "q": ("float64", 7), "q_d": ("float64", 7), "dq": ("float64", 7), "dq_d": ("float64", 7),
    "ddq_d": ("float64", 7), "theta": ("float64", 7), "dtheta": ("float64", 7),
    "tau_J": ("float64", 7), "dtau_J": ("float64", 7), "tau_J_d": ("float64", 7),
    "K_F_ext_hat_K": ("float64", 6), "elbow": ("float64", 2), "elbow_d": ("float64", 2),
    "elbow_c": ("float64", 2), "delbow_c": ("float64", 2), "ddelbow_c": ("float64", 2),
    "joint_collision": ("float64", 7), "joint_contact": ("float64", 7),
    "O_F_ext_hat_K": ("float64", 6), "O_dP_EE_d": ("float64", 6), "O_ddP_O": ("float64", 3),
    "O_dP_EE_c": ("float64", 6), "O_ddP_EE_c": ("float64", 6),
    "tau_ext_hat_filtered": ("float64", 7), "m_ee": ("float64", 0),
    "F_x_Cee": ("float64", 3), "I_ee": ("float64", 9), "m_load": ("float64", 0),
    "F_x_Cload": ("float64", 3), "I_load": ("float64", 9), "m_total": ("float64", 0),
    "F_x_Ctotal": ("float64", 3), "I_total": ("float64", 9), "O_T_EE": ("float64", 16),
    "O_T_EE_d": ("float64", 16), "O_T_EE_c": ("float64", 16), "F_T_EE": ("float64", 16),
    "F_T_NE": ("float64", 16), "NE_T_EE": ("float64", 16), "EE_T_K": ("float64", 16),
    "time": ("float64", 0), "control_command_success_rate": ("float64", 0),
    "robot_mode": ("uint8", 0), "current_errors": ("franka_msgs/Errors", 0),
    "last_motion_errors": ("franka_msgs/Errors", 0),
}


def header(t: float, frame_id: str, seq: int = 0) -> dict[str, Any]:
    """A ``std_msgs/Header`` with ``stamp`` from ``t`` [s]."""
    secs = math.floor(t)
    return {"seq": int(seq), "stamp": {"secs": int(secs), "nsecs": int((t - secs) * 1e9)},
            "frame_id": frame_id}


def stamp_to_seconds(stamp: Any, topic: str = "") -> float:
    """``{"secs", "nsecs"}`` (ROS 1) or ``{"sec", "nanosec"}`` (ROS 2) to seconds.

    Raises:
        MessageError: missing fields, non-numbers (strings and booleans included, as rosbridge
            rejects them) or a non-finite result (NaN/inf, or JSON ``null``).
    """
    try:
        secs = stamp["secs"] if "secs" in stamp else stamp["sec"]
        nsecs = stamp["nsecs"] if "nsecs" in stamp else stamp["nanosec"]
    except (KeyError, TypeError) as e:
        raise MessageError(topic, f"bad header stamp {stamp!r}") from e
    for v in (secs, nsecs):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise MessageError(topic, f"bad header stamp {stamp!r}: not numbers")
    t = float(secs) + 1e-9 * float(nsecs)
    if not math.isfinite(t):
        raise MessageError(topic, f"non-finite header stamp {stamp!r}")
    return t


def _fields(d: Any, allowed: tuple[str, ...], topic: str, what: str, msg: Any) -> dict:
    """``d`` as a mapping whose keys are among ``allowed`` (rosbridge rejects unknown
    fields: so do we)."""
    if not isinstance(d, dict):
        raise MessageError(topic, f"{what}: missing or not an object", msg)
    extra = set(d) - set(allowed)
    if extra:
        raise MessageError(topic, f"{what}: unknown field(s) {sorted(extra)[:5]}", msg)
    return d


def _vec(d: Any, keys: tuple[str, ...], topic: str, what: str, msg: Any = None) -> np.ndarray:
    """The numbers ``d[k]`` (JSON numbers only: strings and booleans are refused, as rosbridge
    does, not coerced), finite, no other field."""
    _fields(d, keys, topic, what, msg if msg is not None else d)
    vals = []
    for k in keys:
        v = d.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise MessageError(topic, f"{what}: missing or non-numeric field {k!r} ({v!r})",
                               msg if msg is not None else d)
        vals.append(float(v))
    out = np.array(vals)
    if not np.all(np.isfinite(out)):
        raise MessageError(topic, f"{what}: non-finite value {out.tolist()}",
                           msg if msg is not None else d)
    return out


_HEADER_FIELDS = ("seq", "stamp", "frame_id")


def _header(msg: Any, topic: str, frame_id: str | None, *, required: bool = True,
            allow_empty_frame: bool = False) -> float | None:
    """The header's stamp [s] (None when absent and not ``required``), checking the frame.

    Args:
        frame_id: Required frame (None: any).
        required: A missing header is an error (True), or allowed (False: rosbridge fills in a
            default header, and the stock franka_ros controllers ignore it).
        allow_empty_frame: Accept ``frame_id`` "" as ``frame_id`` (the stock controllers
            interpret every pose in the base frame).
    """
    if not isinstance(msg, dict):
        raise MessageError(topic, "message is not an object", msg)
    if "header" not in msg and not required:
        return None
    if not isinstance(msg.get("header"), dict):
        raise MessageError(topic, "missing header", msg)
    h = _fields(msg["header"], _HEADER_FIELDS, topic, "header", msg)
    fid = h.get("frame_id", "")
    if not isinstance(fid, str):
        raise MessageError(topic, f"frame_id must be a string, got {fid!r}", msg)
    if frame_id is not None and fid != frame_id and not (allow_empty_frame and fid == ""):
        raise MessageError(topic, f"frame_id {fid!r}, expected {frame_id!r}", msg)
    seq = h.get("seq", 0)
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise MessageError(topic, f"header.seq must be an integer, got {seq!r}", msg)
    if "stamp" not in h and not required:
        return None
    stamp = h.get("stamp")
    if isinstance(stamp, dict):
        _fields(stamp, ("secs", "nsecs", "sec", "nanosec"), topic, "header.stamp", msg)
    return stamp_to_seconds(stamp, topic)


def _unit_quaternion(q: np.ndarray, topic: str, msg: Any) -> np.ndarray:
    n = float(np.linalg.norm(q))
    if abs(n - 1.0) > _QUAT_TOL:
        raise MessageError(topic, f"quaternion norm {n:.3f} is not 1", msg)
    return q / n


def pose_stamped(position: np.ndarray, quaternion: np.ndarray, frame_id: str, t: float,
                 seq: int = 0) -> dict[str, Any]:
    """A ``geometry_msgs/PoseStamped``; ``quaternion`` is (x, y, z, w)."""
    p = [float(v) for v in position]
    q = [float(v) for v in quaternion]
    return {"header": header(t, frame_id, seq),
            "pose": {"position": {"x": p[0], "y": p[1], "z": p[2]},
                     "orientation": {"x": q[0], "y": q[1], "z": q[2], "w": q[3]}}}


def parse_pose_stamped(msg: Any, topic: str = "", frame_id: str | None = None, *,
                       command: bool = False) -> tuple[np.ndarray, np.ndarray, float | None]:
    """``(position (3,), quaternion (4,) xyzw normalised, stamp [s])`` of a PoseStamped.

    Args:
        msg: The message (rosbridge JSON).
        topic: For error messages.
        frame_id: Required frame (None: any).
        command: Validate as a robot command the way rosbridge + the stock franka_ros
            controller do: a missing header (stamp None) and an empty ``frame_id`` are
            accepted; a different non-empty frame is still refused (it would be misread as
            the base frame).

    Raises:
        MessageError: missing or unknown fields, numbers sent as strings, non-finite values,
            wrong frame, non-unit quaternion.
    """
    _fields(msg, ("header", "pose"), topic, "PoseStamped", msg)
    t = _header(msg, topic, frame_id, required=not command, allow_empty_frame=command)
    pose = _fields(msg.get("pose"), ("position", "orientation"), topic, "pose", msg)
    p = _vec(pose.get("position"), ("x", "y", "z"), topic, "position", msg)
    q = _vec(pose.get("orientation"), ("x", "y", "z", "w"), topic, "orientation", msg)
    return p, _unit_quaternion(q, topic, msg), t


def wrench_stamped(force: np.ndarray, torque: np.ndarray, frame_id: str, t: float,
                   seq: int = 0) -> dict[str, Any]:
    """A ``geometry_msgs/WrenchStamped`` (force [N], torque [N m])."""
    f = [float(v) for v in force]
    m = [float(v) for v in torque]
    return {"header": header(t, frame_id, seq),
            "wrench": {"force": {"x": f[0], "y": f[1], "z": f[2]},
                       "torque": {"x": m[0], "y": m[1], "z": m[2]}}}


def parse_wrench_stamped(msg: Any, topic: str = "", frame_id: str | None = None, *,
                         command: bool = False) -> tuple[np.ndarray, np.ndarray, float | None]:
    """``(force (3,), torque (3,), stamp [s])`` of a WrenchStamped (``command``: as in
    :func:`parse_pose_stamped`)."""
    _fields(msg, ("header", "wrench"), topic, "WrenchStamped", msg)
    t = _header(msg, topic, frame_id, required=not command, allow_empty_frame=command)
    w = _fields(msg.get("wrench"), ("force", "torque"), topic, "wrench", msg)
    return (_vec(w.get("force"), ("x", "y", "z"), topic, "force", msg),
            _vec(w.get("torque"), ("x", "y", "z"), topic, "torque", msg), t)


def point_stamped(point: np.ndarray, frame_id: str, t: float, seq: int = 0) -> dict[str, Any]:
    """A ``geometry_msgs/PointStamped`` [m]."""
    p = [float(v) for v in point]
    return {"header": header(t, frame_id, seq), "point": {"x": p[0], "y": p[1], "z": p[2]}}


def parse_point_stamped(msg: Any, topic: str = "",
                        frame_id: str | None = None) -> tuple[np.ndarray, float]:
    """``(point (3,), stamp [s])`` of a PointStamped."""
    _fields(msg, ("header", "point"), topic, "PointStamped", msg)
    t = _header(msg, topic, frame_id)
    assert t is not None
    return _vec(msg.get("point"), ("x", "y", "z"), topic, "point", msg), t


def transform_from_pose(position: np.ndarray, quaternion: np.ndarray) -> np.ndarray:
    """Homogeneous transform (4, 4) from a position and an (x, y, z, w) quaternion."""
    T = np.eye(4)
    T[:3, :3] = Rotation.from_quat(quaternion).as_matrix()
    T[:3, 3] = position
    return T


def pose_from_transform(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(position (3,), quaternion (4,) xyzw)`` of a homogeneous transform."""
    return T[:3, 3].copy(), Rotation.from_matrix(T[:3, :3]).as_quat()


def franka_state(T_base_ee: np.ndarray, t: float, seq: int = 0, *,
                 T_base_ee_desired: np.ndarray | None = None,
                 external_wrench: np.ndarray | None = None,
                 robot_mode: int = 2,
                 current_errors: Any = (),
                 last_motion_errors: Any = (),
                 fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``franka_msgs/FrankaState`` (rosbridge JSON).

    ``O_T_EE`` is the measured end-effector pose, column-major as in libfranka;
    ``O_T_EE_d`` libfranka's *last desired pose of the motion generator* (with an external
    torque controller such as franka_ros' Cartesian impedance controllers there is no motion
    generator and the robot reports its measured pose there; it is never the impedance
    equilibrium); ``O_F_ext_hat_K`` the estimated external wrench [N, N m] in the base frame,
    libfranka's sign: forces the robot applies to the environment are positive;
    ``robot_mode`` one of :data:`ROBOT_MODES` (2 is ``ROBOT_MODE_MOVE``); ``current_errors``
    and ``last_motion_errors`` the names of the :data:`ERROR_FIELDS` that are true (the message
    carries all of them, the others false).

    ``fields`` sets any other :data:`FRANKA_STATE_FIELDS` entry (joint states, torques,
    ``time``, ...; numbers or arrays of the field's length); with all of them the message is
    complete. Without ``fields`` only the pose, mode and errors (and the optional desired pose
    and wrench) are sent, as a minimal robot-side publisher would.

    The pose, desired pose and wrench arguments are sent as given (NaN included: tests build
    hostile robot states with them); ``fields`` must be finite.

    Raises:
        HardwareValueError: unknown error names or field names, wrong lengths, non-finite
            ``fields``.
    """
    msg: dict[str, Any] = {"header": header(t, "", seq),
                           "O_T_EE": _column_major(T_base_ee, "O_T_EE", finite=False),
                           "robot_mode": int(robot_mode),
                           "current_errors": _errors(current_errors, "current_errors")}
    if T_base_ee_desired is not None:
        msg["O_T_EE_d"] = _column_major(T_base_ee_desired, "O_T_EE_d", finite=False)
    if external_wrench is not None:
        msg["O_F_ext_hat_K"] = _numbers(external_wrench, 6, "O_F_ext_hat_K", finite=False)
    if last_motion_errors or fields:
        msg["last_motion_errors"] = _errors(last_motion_errors, "last_motion_errors")
    for name, value in (fields or {}).items():
        spec = FRANKA_STATE_FIELDS.get(name)
        if spec is None or spec[0] != "float64":
            raise HardwareValueError(f"fields: {name!r} is not a float64 field of "
                                     "franka_msgs/FrankaState (robot_mode and the errors have "
                                     "their own arguments)")
        if spec[1] == 16:
            msg[name] = _column_major(value, name)
        elif spec[1] == 0:
            v = value
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not (
                    math.isfinite(float(v))):
                raise HardwareValueError(f"fields[{name!r}] must be a finite number, got {v!r}")
            msg[name] = float(v)
        else:
            msg[name] = _numbers(value, spec[1], name)
    return msg


def _numbers(value: Any, n: int, name: str, finite: bool = True) -> list[float]:
    a = np.asarray(value, dtype=float).reshape(-1)
    if a.shape != (n,) or (finite and not np.all(np.isfinite(a))):
        raise HardwareValueError(f"{name} must be {n} finite numbers, got shape "
                                 f"{np.shape(value)}")
    return a.tolist()


def _column_major(T: Any, name: str, finite: bool = True) -> list[float]:
    a = np.asarray(T, dtype=float)
    if a.shape != (4, 4) or (finite and not np.all(np.isfinite(a))):
        raise HardwareValueError(f"{name} must be a finite (4, 4) transform, got shape "
                                 f"{a.shape}")
    return a.flatten(order="F").tolist()


def _errors(names: Any, what: str) -> dict[str, bool]:
    active = set(names)
    unknown = active - set(ERROR_FIELDS)
    if unknown:
        raise HardwareValueError(f"{what}: unknown franka_msgs/Errors fields {sorted(unknown)}")
    return {k: k in active for k in ERROR_FIELDS}


def parse_external_wrench(msg: Any, topic: str = "") -> np.ndarray | None:
    """``O_F_ext_hat_K`` (6,) of a FrankaState [N, N m] (base frame; positive: applied by the
    robot to the environment), or None when the message does not carry it.

    Raises:
        MessageError: present but not 6 finite numbers.
    """
    if not isinstance(msg, dict) or "O_F_ext_hat_K" not in msg:
        return None
    raw = msg["O_F_ext_hat_K"]
    if (not isinstance(raw, list) or len(raw) != 6 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw)):
        raise MessageError(topic, "O_F_ext_hat_K must be 6 numbers", msg)
    w = np.array(raw, dtype=float)
    if not np.all(np.isfinite(w)):
        raise MessageError(topic, "O_F_ext_hat_K has non-finite entries", msg)
    return w


def parse_franka_state(msg: Any, topic: str = "") -> tuple[np.ndarray, float]:
    """``(O_T_EE (4, 4), stamp [s])`` of a FrankaState, checking it is a rigid transform."""
    t = _header(msg, topic, None)
    assert t is not None
    raw = msg.get("O_T_EE")
    if not isinstance(raw, list) or len(raw) != 16:
        raise MessageError(topic, "O_T_EE must be 16 numbers (column-major 4x4)", msg)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw):
        raise MessageError(topic, "O_T_EE must be 16 numbers (column-major 4x4)", msg)
    T = np.array(raw, dtype=float).reshape(4, 4, order="F")
    if not np.all(np.isfinite(T)):
        raise MessageError(topic, "O_T_EE has non-finite entries", msg)
    R = T[:3, :3]
    if (np.abs(R.T @ R - np.eye(3)).max() > 1e-3 or abs(np.linalg.det(R) - 1) > 1e-3
            or np.abs(T[3] - [0, 0, 0, 1]).max() > 1e-9):
        raise MessageError(topic, "O_T_EE is not a rigid transform", msg)
    return T, t


def parse_robot_mode(msg: Any, topic: str = "") -> tuple[int, tuple[str, ...]]:
    """``(robot_mode, names of the true current_errors flags)`` of a FrankaState.

    ``robot_mode`` must be an integer of :data:`ROBOT_MODES`; ``current_errors`` (optional:
    absent means no error reported) a mapping of booleans. Unknown error names are kept (a
    newer franka_msgs may add flags): any true flag counts.

    Raises:
        MessageError: missing/non-integer/unknown robot_mode, or non-boolean error flags.
    """
    if not isinstance(msg, dict):
        raise MessageError(topic, "robot state is not a mapping", msg)
    mode = msg.get("robot_mode")
    if isinstance(mode, bool) or not isinstance(mode, int) or mode not in ROBOT_MODES:
        raise MessageError(topic, f"robot_mode must be one of {sorted(ROBOT_MODES)}, got "
                           f"{mode!r}", msg)
    errs = msg.get("current_errors")
    if errs is None:
        return mode, ()
    if not isinstance(errs, dict) or not all(isinstance(v, bool) for v in errs.values()):
        raise MessageError(topic, "current_errors must be a mapping of booleans", msg)
    return mode, tuple(sorted(k for k, v in errs.items() if v))
