"""Franka adapter following franka_ros conventions: robot state in, impedance targets out.

Topics and message types are configurable (:class:`FrankaOptions`, loadable from YAML). The
defaults are franka_ros' ``franka_state_controller`` (``franka_msgs/FrankaState``, whose
``O_T_EE`` is the measured end-effector pose, column-major) and the
``cartesian_impedance_example_controller``'s ``equilibrium_pose``
(``geometry_msgs/PoseStamped`` in the base frame ``panda_link0``). The desired wrench (the
feed-forward contact force J_cᵀλ_d of eq. 36) goes to a ``geometry_msgs/WrenchStamped`` topic:
franka_ros' stock example controller has no such input, so point ``wrench_topic`` at a
controller that adds one (as the C3 authors' custom impedance controller did), or set it to
"" to send poses only.

Incoming states are validated (see :mod:`hardware.messages`); a malformed state (NaN, not a
rigid transform, missing fields, wrong frame) is rejected, counted and logged, never used.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import messages
from .config import LoadableOptions
from .errors import HardwareValueError, MessageError
from .latest_state import LatestValidState
from .rosbridge.transport import RosBridgeTransport

__all__ = ["FrankaOptions", "RobotState", "FrankaAdapter"]

LOGGER = logging.getLogger("hardware.franka")

STATE_TYPES = ("franka_msgs/FrankaState", "geometry_msgs/PoseStamped")


@dataclass(frozen=True)
class FrankaOptions(LoadableOptions):
    """Topic names, message types and frames of the robot side."""

    state_topic: str = "/franka_state_controller/franka_states"
    """Measured robot state."""

    state_type: str = "franka_msgs/FrankaState"
    """"franka_msgs/FrankaState" (pose from O_T_EE) or "geometry_msgs/PoseStamped"."""

    equilibrium_topic: str = "/cartesian_impedance_example_controller/equilibrium_pose"
    """Equilibrium pose of the Cartesian impedance controller (geometry_msgs/PoseStamped)."""

    wrench_topic: str = "/c3/desired_wrench"
    """Desired end-effector wrench (geometry_msgs/WrenchStamped); "" disables it."""

    base_frame: str = "panda_link0"
    """frame_id of commands (and of PoseStamped states)."""

    velocity_filter: float = 0.5
    """Weight of the newest finite-difference velocity in the exponential filter, in (0, 1]."""

    command_queue_size: int = 2
    """Outgoing queue of each command topic (drop-oldest: only the newest target matters)."""

    def __post_init__(self) -> None:
        if self.state_type not in STATE_TYPES:
            raise HardwareValueError(f"FrankaOptions.state_type must be one of "
                                     f"{list(STATE_TYPES)}, got {self.state_type!r}")
        for name in ("state_topic", "equilibrium_topic"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.startswith("/"):
                raise HardwareValueError(f"FrankaOptions.{name} must be a topic name "
                                         f"starting with '/', got {v!r}")
        if not isinstance(self.wrench_topic, str) or (self.wrench_topic
                                                      and not self.wrench_topic.startswith("/")):
            raise HardwareValueError(f"FrankaOptions.wrench_topic must be '' or a topic name, "
                                     f"got {self.wrench_topic!r}")
        if not 0 < self.velocity_filter <= 1:
            raise HardwareValueError(f"FrankaOptions.velocity_filter must be in (0, 1], got "
                                     f"{self.velocity_filter!r}")
        if not isinstance(self.command_queue_size, int) or self.command_queue_size < 1:
            raise HardwareValueError(f"FrankaOptions.command_queue_size must be an int >= 1, "
                                     f"got {self.command_queue_size!r}")


@dataclass(frozen=True)
class RobotState:
    """Measured end-effector state, in the base frame."""

    position: np.ndarray
    """(3,) end-effector position [m]."""
    quaternion: np.ndarray
    """(4,) orientation (x, y, z, w)."""
    velocity: np.ndarray
    """(3,) linear velocity [m/s], filtered finite differences of positions over stamps."""
    stamp: float
    """Header stamp [s] (robot clock)."""
    t_receive: float
    """Receive time, time.monotonic() [s]."""
    count: int
    """Accepted state messages so far."""


class FrankaAdapter(LatestValidState[RobotState]):
    """Reads the robot state and sends impedance targets over a :class:`RosBridgeTransport`.

    Args:
        transport: A connected transport.
        options: Topics, types and frames.
    """

    _what = "robot state"
    _logger = LOGGER

    def __init__(self, transport: RosBridgeTransport, options: FrankaOptions | None = None):
        super().__init__()
        self.options = o = options or FrankaOptions()
        self._accepted = 0
        self._seq = 0
        self._sub = transport.subscribe(o.state_topic, o.state_type, self._on_state)
        self._pose_pub = transport.publisher(o.equilibrium_topic, "geometry_msgs/PoseStamped",
                                             queue_size=o.command_queue_size,
                                             policy="drop_oldest")
        self._wrench_pub = (transport.publisher(o.wrench_topic, "geometry_msgs/WrenchStamped",
                                                queue_size=o.command_queue_size,
                                                policy="drop_oldest")
                            if o.wrench_topic else None)

    # -- state --------------------------------------------------------------------------
    def _parse(self, msg: Any) -> tuple[np.ndarray, np.ndarray, float]:
        o = self.options
        if o.state_type == "franka_msgs/FrankaState":
            T, stamp = messages.parse_franka_state(msg, o.state_topic)
            p, q = messages.pose_from_transform(T)
            return p, q, stamp
        return messages.parse_pose_stamped(msg, o.state_topic, o.base_frame)

    def _on_state(self, msg: dict[str, Any], t_receive: float) -> None:  # transport thread
        try:
            p, q, stamp = self._parse(msg)
        except MessageError as e:
            self._reject(str(e))
            return
        with self._lock:
            prev = self._state
            v = np.zeros(3)
            if prev is not None:
                dt = stamp - prev.stamp
                if dt <= 0:
                    self._reject_locked(f"{self.options.state_topic}: stamp {stamp:.6f} not "
                                        f"after {prev.stamp:.6f}")
                    return
                a = self.options.velocity_filter
                v = a * (p - prev.position) / dt + (1 - a) * prev.velocity
            self._accepted += 1
            self._state = RobotState(p, q, v, stamp, t_receive, self._accepted)

    # -- commands -----------------------------------------------------------------------
    def command(self, position: np.ndarray, quaternion: np.ndarray,
                force: np.ndarray | None = None, torque: np.ndarray | None = None,
                stamp: float = 0.0) -> None:
        """Publish an equilibrium pose (and the desired wrench, zero if not given).

        Raises:
            MessageError: for a non-finite pose or wrench (the safety layer should have
                caught it; this is the last line of defence).
        """
        p = np.asarray(position, dtype=float)
        q = np.asarray(quaternion, dtype=float)
        f = np.zeros(3) if force is None else np.asarray(force, dtype=float)
        m = np.zeros(3) if torque is None else np.asarray(torque, dtype=float)
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(q)) and np.all(np.isfinite(f))
                and np.all(np.isfinite(m))):
            raise MessageError(self.options.equilibrium_topic, "refusing a non-finite command")
        self._seq += 1
        frame = self.options.base_frame
        self._pose_pub.publish(messages.pose_stamped(p, q, frame, stamp, self._seq))
        if self._wrench_pub is not None:
            self._wrench_pub.publish(messages.wrench_stamped(f, m, frame, stamp, self._seq))

    def hold(self, state: RobotState, stamp: float = 0.0) -> None:
        """Command the measured pose with zero wrench: the arm stays where it is."""
        self.command(state.position, state.quaternion, None, None, stamp)
