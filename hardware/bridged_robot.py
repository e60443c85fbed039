"""The robot side of a rehearsal: what a simulated Franka shows on the rosbridge.

:class:`BridgedFranka` holds what :class:`~hardware.sim_robot.SimulatedFranka` (simple
end-effector physics) and :class:`~hardware.twin.FrankaBallTwin` (the full Panda in our
simulator) share: the franka_ros command endpoints with a robot-side guard (frame, NaN,
missing fields and jumps over ``options.max_command_jump`` are rejected and logged), the
records the tests read, and the state publisher. Subclasses set the end-effector pose
``p`` (3,) [m] and ``R`` (3, 3) (end effector -> base) and implement
:meth:`apply_equilibrium` / :meth:`apply_wrench`.
"""

from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from . import messages
from .errors import MessageError
from .rosbridge.server import RosBridgeServer, ServerThread

__all__ = ["CommandRecord", "BridgedFranka", "start_bridged"]


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
        self.wrenches = 0
        self.state_paused = False
        self.camera_paused = False
        self.last_state_publish = float("nan")
        self.last_camera_publish = float("nan")
        self._seq_state = 0
        self._seq_cam = 0

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

    def _reject(self, reason: str) -> None:
        self.rejected.append(reason)
        logging.getLogger(type(self).__module__).warning("%s rejected a command: %s",
                                                         self.log_name, reason)

    def _on_equilibrium(self, msg: dict[str, Any], t: float) -> None:
        f = self.options.franka
        try:
            p, q, _ = messages.parse_pose_stamped(msg, f.equilibrium_topic, f.base_frame)
        except MessageError as e:
            self._reject(str(e))
            return
        jump = float(np.linalg.norm(p - self.p))
        if jump > self.options.max_command_jump:
            self._reject(f"{f.equilibrium_topic}: equilibrium {jump:.3f} m from the end "
                         f"effector")
            return
        self.apply_equilibrium(p, q)
        self.commands.append(CommandRecord(t, p, self.p.copy()))

    def _on_wrench(self, msg: dict[str, Any], t: float) -> None:
        f = self.options.franka
        try:
            force, torque, _ = messages.parse_wrench_stamped(msg, f.wrench_topic, f.base_frame)
        except MessageError as e:
            self._reject(str(e))
            return
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
            msg = messages.franka_state(T, stamp, self._seq_state, **self.state_extras())
        else:
            msg = messages.pose_stamped(self.p, Rotation.from_matrix(self.R).as_quat(),
                                        f.base_frame, stamp, self._seq_state)
        self.server.publish(f.state_topic, msg)
        self.last_state_publish = time.monotonic()
        self.ee_trace.append((self.last_state_publish, self.p.copy()))


def start_bridged(make: Any, port: int, options: Any, host: str) -> tuple[ServerThread, Any]:
    """A rosbridge server on ``host:port`` with ``make(server, options)`` attached, running
    in a background thread: returns ``(thread, robot)``."""
    server = RosBridgeServer(host, port)
    robot = make(server, options)
    robot.attach()
    st = ServerThread(server, [robot.run])
    st.start()
    return st, robot
