"""The robot side of a rehearsal: what a simulated Franka shows on the rosbridge.

:class:`BridgedFranka` holds what :class:`~hardware.sim_robot.SimulatedFranka` (simple
end-effector physics) and :class:`~hardware.twin.FrankaBallTwin` (the full Panda in our
simulator) share: the franka_ros command endpoints with a robot-side guard, the records the
tests read, and the state publisher (``robot_mode`` and ``current_errors`` included).

The guard (:class:`RobotGuardOptions`, ``options.guard``) validates commands as rosbridge and
the stock franka_ros controller do (a missing header or an empty ``frame_id`` is accepted;
unknown fields and numbers sent as strings are refused) and rejects a command with a missing
field, another frame or a non-finite number, an equilibrium outside the workspace box or
farther than ``options.max_command_jump`` from the end effector, a feed-forward force or torque
above its limit, and any command while the robot is in a fault mode (as a Franka in REFLEX
ignores commands until error recovery). Each rejection is recorded, logged, and answered to the
sending client with a rosbridge ``status`` error (the handler raises
:class:`~hardware.errors.MessageError`). :meth:`BridgedFranka.inject_fault` puts the robot in a
fault mode (e.g. REFLEX with ``cartesian_reflex``) to rehearse fault handling. Subclasses set
the end-effector pose ``p`` (3,) [m] and ``R`` (3, 3) (end effector -> base) and implement
:meth:`apply_equilibrium` / :meth:`apply_wrench`.
"""

from __future__ import annotations

import collections
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from . import messages
from .config import LoadableOptions
from .errors import HardwareValueError, MessageError
from .rosbridge.server import RosBridgeServer, ServerOptions, ServerThread

__all__ = ["RobotGuardOptions", "CommandRecord", "BridgedFranka", "start_bridged"]

_TOL = 1e-9  # commands exactly at a limit (the safety layer's clamps) pass


@dataclass(frozen=True)
class RobotGuardOptions(LoadableOptions):
    """Limits of the robot-side guard (defaults: the deploy side's :class:`SafetyOptions`, so
    whatever the safety layer lets through is accepted)."""

    workspace_min: tuple[float, ...] = (0.30, -0.35, 0.02)
    """Lower corner of the box the equilibrium must stay in (x, y, z), base frame [m]."""
    workspace_max: tuple[float, ...] = (0.80, 0.35, 0.45)
    """Upper corner [m]."""
    max_force: float = 30.0
    """Largest feed-forward force norm [N]."""
    max_torque: float = 3.0
    """Largest feed-forward torque norm [N m]."""

    def __post_init__(self) -> None:
        lo, hi = np.asarray(self.workspace_min, float), np.asarray(self.workspace_max, float)
        if lo.shape != (3,) or hi.shape != (3,) or not (np.all(np.isfinite(lo)) and np.all(
                np.isfinite(hi))) or np.any(lo >= hi):
            raise HardwareValueError(f"RobotGuardOptions.workspace_min/max must be 3 finite "
                                     f"numbers each with min < max, got {self.workspace_min} "
                                     f"and {self.workspace_max}")
        for name in ("max_force", "max_torque"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise HardwareValueError(f"RobotGuardOptions.{name} must be a positive "
                                         f"number, got {v!r}")


@dataclass(frozen=True)
class CommandRecord:
    """A command the simulated robot accepted."""

    t_receive: float
    """time.monotonic() at arrival [s]."""
    position: np.ndarray
    """(3,) commanded equilibrium position [m]."""
    ee_position: np.ndarray
    """(3,) simulated end-effector position when it arrived [m]."""


class BridgedFranka:
    """Command endpoints, records and state publishing of a simulated Franka (see module)."""

    log_name = "simulated robot"

    def __init__(self, server: RosBridgeServer, options: Any):
        self.server = server
        self.options = options
        self.commands: collections.deque[CommandRecord] = collections.deque(maxlen=100000)
        self.ee_trace: collections.deque[tuple[float, np.ndarray]] = collections.deque(
            maxlen=100000)
        self.rejected: list[str] = []
        self.rejected_times: list[float] = []
        """time.monotonic() of each rejection (parallel to ``rejected``)."""
        self.fault_published_at = float("nan")
        """time.monotonic() of the first state published in a fault mode (NaN: none yet)."""
        self.wrenches = 0
        self.state_paused = False
        self.camera_paused = False
        self.last_state_publish = float("nan")
        self.last_camera_publish = float("nan")
        self._seq_state = 0
        self._seq_cam = 0
        self.robot_mode = 2
        """``robot_mode`` published in the state (2 MOVE; see :meth:`inject_fault`)."""
        self.current_errors: tuple[str, ...] = ()
        """Names of the true ``current_errors`` flags published in the state."""
        guard = getattr(options, "guard", None)
        self.guard: RobotGuardOptions = guard if guard is not None else RobotGuardOptions()

    # -- to implement ---------------------------------------------------------------------
    def apply_equilibrium(self, p: np.ndarray, q: np.ndarray) -> None:
        """Take an accepted equilibrium position ``p`` (3,) [m] and quaternion ``q`` (4,)."""
        raise NotImplementedError

    def apply_wrench(self, force: np.ndarray, torque: np.ndarray) -> None:
        """Take an accepted desired wrench: force (3,) [N], torque (3,) [N m]."""
        raise NotImplementedError

    def state_extras(self) -> dict[str, Any]:
        """Extra keyword arguments of :func:`messages.franka_state` (desired pose, wrench)."""
        return {}

    # -- bridge endpoints -------------------------------------------------------------------
    def attach(self) -> None:
        """Register the command handlers and advertise the state and camera topics."""
        f, c = self.options.franka, self.options.camera
        self.server.on_publish(f.equilibrium_topic, "geometry_msgs/PoseStamped",
                               self._on_equilibrium)
        if f.wrench_topic:
            self.server.on_publish(f.wrench_topic, "geometry_msgs/WrenchStamped",
                                   self._on_wrench)
        self.server.advertise(f.state_topic, f.state_type)
        self.server.advertise(c.topic, "geometry_msgs/PointStamped")

    # -- faults ---------------------------------------------------------------------------
    def inject_fault(self, robot_mode: int = 4,
                     errors: tuple[str, ...] = ("cartesian_reflex",)) -> None:
        """Enter a fault: the next states report ``robot_mode`` (4 REFLEX by default) and the
        ``errors`` flags, and commands are rejected until :meth:`recover`."""
        if robot_mode not in messages.ROBOT_MODES:
            raise HardwareValueError(f"robot_mode must be one of {sorted(messages.ROBOT_MODES)}"
                                     f", got {robot_mode!r}")
        unknown = set(errors) - set(messages.ERROR_FIELDS)
        if unknown:
            raise HardwareValueError(f"unknown franka_msgs/Errors fields {sorted(unknown)}")
        self.robot_mode, self.current_errors = int(robot_mode), tuple(errors)

    def recover(self) -> None:
        """Error recovery (the operator's action): back to MOVE, no error flags."""
        self.robot_mode, self.current_errors = 2, ()
        self.fault_published_at = float("nan")

    # -- guard ------------------------------------------------------------------------------
    def _reject(self, reason: str, topic: str = "") -> None:
        """Record and log a rejected command, then raise so the client gets a status."""
        self.rejected.append(reason)
        self.rejected_times.append(time.monotonic())
        logging.getLogger(type(self).__module__).warning("%s rejected a command: %s",
                                                         self.log_name, reason)
        raise MessageError(topic, reason)

    def _check_mode(self, topic: str) -> None:
        if self.robot_mode not in messages.COMMANDABLE_MODES:
            self._reject(f"{topic}: robot in {messages.ROBOT_MODES[self.robot_mode]} mode: "
                         "commands are ignored until error recovery", topic)

    def _on_equilibrium(self, msg: dict[str, Any], t: float) -> None:
        f, g = self.options.franka, self.guard
        topic = f.equilibrium_topic
        try:
            p, q, _ = messages.parse_pose_stamped(msg, topic, f.base_frame, command=True)
        except MessageError as e:
            self._reject(str(e), topic)
        self._check_mode(topic)
        lo, hi = np.asarray(g.workspace_min), np.asarray(g.workspace_max)
        if np.any(p < lo - _TOL) or np.any(p > hi + _TOL):
            self._reject(f"{topic}: equilibrium {np.round(p, 4).tolist()} outside the "
                         f"workspace box {list(g.workspace_min)}..{list(g.workspace_max)}",
                         topic)
        jump = float(np.linalg.norm(p - self.p))
        if jump > self.options.max_command_jump:
            self._reject(f"{topic}: equilibrium {jump:.3f} m from the end effector (> "
                         f"{self.options.max_command_jump} m)", topic)
        self.apply_equilibrium(p, q)
        self.commands.append(CommandRecord(t, p, self.p.copy()))

    def _on_wrench(self, msg: dict[str, Any], t: float) -> None:
        f, g = self.options.franka, self.guard
        topic = f.wrench_topic
        try:
            force, torque, _ = messages.parse_wrench_stamped(msg, topic, f.base_frame,
                                                             command=True)
        except MessageError as e:
            self._reject(str(e), topic)
        self._check_mode(topic)
        fn, mn = float(np.linalg.norm(force)), float(np.linalg.norm(torque))
        if fn > g.max_force + _TOL or mn > g.max_torque + _TOL:
            self._reject(f"{topic}: wrench |f| = {fn:.1f} N, |m| = {mn:.2f} N m above the "
                         f"limits {g.max_force} N, {g.max_torque} N m", topic)
        self.apply_wrench(force, torque)
        self.wrenches += 1

    # -- publishing -----------------------------------------------------------------------
    def publish_state(self, stamp: float) -> None:
        """Publish the end-effector state (FrankaState or PoseStamped per the options)."""
        f = self.options.franka
        self._seq_state += 1
        if f.state_type == "franka_msgs/FrankaState":
            T = np.eye(4)
            T[:3, :3], T[:3, 3] = self.R, self.p
            msg = messages.franka_state(T, stamp, self._seq_state, robot_mode=self.robot_mode,
                                        current_errors=self.current_errors,
                                        last_motion_errors=self.current_errors,
                                        **self.state_extras())
        else:
            msg = messages.pose_stamped(self.p, Rotation.from_matrix(self.R).as_quat(),
                                        f.base_frame, stamp, self._seq_state)
        self.server.publish(f.state_topic, msg)
        self.last_state_publish = time.monotonic()
        if (self.robot_mode not in messages.COMMANDABLE_MODES or self.current_errors) and (
                self.fault_published_at != self.fault_published_at):  # NaN: first fault state
            self.fault_published_at = self.last_state_publish
        self.ee_trace.append((self.last_state_publish, self.p.copy()))


def start_bridged(make: Any, port: int, options: Any, host: str, *,
                  auth_secret: str | None = None,
                  server_options: ServerOptions | None = None) -> tuple[ServerThread, Any]:
    """A rosbridge server on ``host:port`` (with ``auth_secret``: clients must authenticate;
    ``server_options``, default ``options.server``: origins and limits) with
    ``make(server, options)`` attached, running in a background thread: returns
    ``(thread, robot)``."""
    if server_options is None:
        server_options = getattr(options, "server", None)
    server = RosBridgeServer(host, port, options=server_options, auth_secret=auth_secret)
    robot = make(server, options)
    robot.attach()
    st = ServerThread(server, [robot.run])
    st.start()
    return st, robot
