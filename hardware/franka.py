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
rigid transform, missing fields, wrong frame, a stamp that is non-finite, far from the local
clock, from the future or not after the previous one:
:func:`~hardware.latest_state.check_stamp`) is rejected, counted and
logged, never used.

Faults: a ``FrankaState`` whose ``robot_mode`` is not IDLE/MOVE or with any true
``current_errors`` flag *latches* :attr:`FrankaAdapter.fault` (on the transport thread, the
moment it arrives); from then on :meth:`FrankaAdapter.command` publishes nothing. Recovery is
an operator action on the robot followed by a new run.

Only :class:`~hardware.safety.SafeCommand` objects (made by the safety layer) are sent.
"""

from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import messages
from .config import LoadableOptions
from .errors import HardwareValueError, MessageError
from .latest_state import LatestValidState, check_stamp, check_stamp_tolerances
from .rosbridge.transport import RosBridgeTransport
from .safety import SafeCommand

__all__ = ["FrankaOptions", "RobotState", "RobotFault", "FrankaAdapter"]

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

    max_stamp_lag: float = 1.0
    """Largest age [s] of an accepted stamp against the local wall clock (delivery delay +
    clock offset; ``.inf`` disables the check)."""

    max_stamp_lead: float = 0.25
    """Largest lead [s] of an accepted stamp over the local wall clock: nothing comes from
    the future, so this only absorbs the residual offset of the synchronised clocks (the
    robot PC's and the workstation's)."""

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
        check_stamp_tolerances(self, "FrankaOptions")


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
    robot_mode: int = 2
    """``franka_msgs/FrankaState.robot_mode`` (:data:`hardware.messages.ROBOT_MODES`); 2
    (MOVE) for PoseStamped states, which carry none."""
    errors: tuple[str, ...] = ()
    """Names of the true ``current_errors`` flags."""
    external_wrench: np.ndarray | None = None
    """(6,) ``O_F_ext_hat_K``: the robot's estimate of the wrench it applies to the environment
    at the end effector [N, N m], base frame (libfranka's sign: pushing on something is
    positive along the push); None when the state does not carry it (PoseStamped states, a
    minimal publisher)."""


@dataclass(frozen=True)
class RobotFault:
    """The first fault state the robot reported (latched)."""

    robot_mode: int
    errors: tuple[str, ...]
    t_receive: float
    """time.monotonic() at arrival [s]."""

    def describe(self) -> str:
        """E.g. ``robot_mode REFLEX (4), current_errors: cartesian_reflex``."""
        name = messages.ROBOT_MODES.get(self.robot_mode, "?")
        errs = ", ".join(self.errors) if self.errors else "none"
        return f"robot_mode {name} ({self.robot_mode}), current_errors: {errs}"


class FrankaAdapter(LatestValidState[RobotState]):
    """Reads the robot state and sends impedance targets over a :class:`RosBridgeTransport`.

    Args:
        transport: A connected transport (None: a detached adapter that validates the
            states fed to ``_on_state`` and records the commands it is given in
            :attr:`dry_run` instead of publishing them; for tests and replays).
        options: Topics, types and frames.
    """

    _what = "robot state"
    _logger = LOGGER

    def __init__(self, transport: RosBridgeTransport | None, options: FrankaOptions | None = None):
        super().__init__()
        self.options = o = options or FrankaOptions()
        self._accepted = 0
        self._seq = 0
        self.fault: RobotFault | None = None
        """The first fault state received (latched; None while the robot is healthy)."""
        self.refused_commands = 0
        """Commands not published because a fault was latched."""
        self._sub: Any = None
        self._pose_pub: Any = None
        self._wrench_pub: Any = None
        self.dry_run: collections.deque[SafeCommand] | None = None
        """Detached adapter only: the commands it would have published (newest 10000)."""
        if transport is None:  # detached: validation only, commands recorded (tests, replays)
            self.dry_run = collections.deque(maxlen=10000)
            return
        self._sub = transport.subscribe(o.state_topic, o.state_type, self._on_state)
        self._pose_pub = transport.publisher(o.equilibrium_topic, "geometry_msgs/PoseStamped",
                                             queue_size=o.command_queue_size,
                                             policy="drop_oldest")
        self._wrench_pub = (transport.publisher(o.wrench_topic, "geometry_msgs/WrenchStamped",
                                                queue_size=o.command_queue_size,
                                                policy="drop_oldest")
                            if o.wrench_topic else None)

    # -- state --------------------------------------------------------------------------
    def _parse(self, msg: Any) -> tuple[np.ndarray, np.ndarray, float, int, tuple[str, ...],
                                         np.ndarray | None]:
        o = self.options
        if o.state_type == "franka_msgs/FrankaState":
            T, stamp = messages.parse_franka_state(msg, o.state_topic)
            mode, errors = messages.parse_robot_mode(msg, o.state_topic)
            wrench = messages.parse_external_wrench(msg, o.state_topic)
            p, q = messages.pose_from_transform(T)
            return p, q, stamp, mode, errors, wrench
        p, q, stamp = messages.parse_pose_stamped(msg, o.state_topic, o.base_frame)
        return p, q, stamp, 2, (), None

    def _on_state(self, msg: dict[str, Any], t_receive: float) -> None:  # transport thread
        o = self.options
        try:
            p, q, stamp, mode, errors, wrench = self._parse(msg)
        except MessageError as e:
            self._reject(str(e))
            return
        with self._lock:
            prev = self._state
            why = check_stamp(stamp, time.time(), None if prev is None else prev.stamp,
                              o.max_stamp_lag, o.max_stamp_lead)
            if why is not None:
                self._reject_locked(f"{o.state_topic}: {why}")
                return
            if (mode not in messages.COMMANDABLE_MODES or errors) and self.fault is None:
                self.fault = RobotFault(mode, errors, t_receive)
                LOGGER.error("robot fault: %s; commanding stopped", self.fault.describe())
            v = np.zeros(3)
            if prev is not None:
                a = o.velocity_filter
                v = a * (p - prev.position) / (stamp - prev.stamp) + (1 - a) * prev.velocity
                if not np.all(np.isfinite(v)):  # never keep a NaN/inf estimate
                    v = np.zeros(3)
            self._accepted += 1
            self._state = RobotState(p, q, v, stamp, t_receive, self._accepted, mode, errors,
                                     wrench)

    # -- commands -----------------------------------------------------------------------
    def _checked(self, cmd: SafeCommand) -> tuple[np.ndarray, ...]:
        p = np.asarray(cmd.position, dtype=float)
        q = np.asarray(cmd.quaternion, dtype=float)
        f = np.asarray(cmd.force, dtype=float)
        m = np.asarray(cmd.torque, dtype=float)
        if not (p.shape == (3,) and q.shape == (4,) and f.shape == (3,) and m.shape == (3,)
                and np.all(np.isfinite(p)) and np.all(np.isfinite(q))
                and np.all(np.isfinite(f)) and np.all(np.isfinite(m))):
            raise MessageError(self.options.equilibrium_topic, "refusing a non-finite command")
        return p, q, f, m

    def command(self, cmd: SafeCommand, stamp: float = 0.0) -> bool:
        """Publish the equilibrium pose and desired wrench of ``cmd``.

        Returns:
            False (nothing published) once a robot fault is latched, else True.

        Raises:
            TypeError: ``cmd`` is not a :class:`~hardware.safety.SafeCommand` (every command
                passes the safety layer).
            MessageError: for a non-finite pose or wrench (the safety layer should have
                caught it; this is the last line of defence).
        """
        if not isinstance(cmd, SafeCommand):
            raise TypeError(f"FrankaAdapter.command needs a SafeCommand from the safety layer, "
                            f"got {type(cmd).__name__}")
        if self.fault is not None:
            self.refused_commands += 1
            return False
        if self._pose_pub is None:  # detached: record instead of publishing
            assert self.dry_run is not None
            self._checked(cmd)
            self.dry_run.append(cmd)
            return True
        p, q, f, m = self._checked(cmd)
        self._seq += 1
        frame = self.options.base_frame
        self._pose_pub.publish(messages.pose_stamped(p, q, frame, stamp, self._seq))
        if self._wrench_pub is not None:
            self._wrench_pub.publish(messages.wrench_stamped(f, m, frame, stamp, self._seq))
        return True
