"""A simulated Franka served over the rosbridge protocol, for rehearsing deployments.

Run ``python -m hardware.sim_robot --port 9090`` and point ``c3mpc deploy`` at
``ws://127.0.0.1:9090``: the same topics and message types as a franka_ros setup with
rosbridge_server, on loopback.

The model is deliberately simple (the full Panda simulator lives in ``plants``): the end
effector is a rigid body driven by the closed loop of the Cartesian impedance law (seed 003
eq. 36) with compensated arm dynamics, i.e. with task-space inertia Λ = diag(m I₃, I I₃)

.. math::

    \\ddot p = K_t (p_d - p) - B_t \\dot p + (f_d + f_c) / m, \\qquad
    \\dot\\omega = K_r \\log(R_d R^T) - B_r \\omega + \\tau_d / I,

integrated by semi-implicit Euler at ``physics_dt``. A ball rolls on the table (translation
with the rolling inertia 7/5 m_b, viscous rolling resistance) and is pushed by the spherical
end effector through a compliant normal contact (spring-damper on penetration, force
``f_c`` on both bodies, vertical part absorbed by the table). A camera publishes the ball
centre at ``camera_rate_hz`` with optional Gaussian noise.

No joint-space model: ``FrankaState`` messages carry ``O_T_EE``, ``O_T_EE_d`` and
``O_F_ext_hat_K`` (the contact wrench), not ``q``/``dq``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from scipy.spatial.transform import Rotation

from . import messages
from .camera import CameraOptions
from .config import options_from_dict, options_from_file
from .errors import HardwareValueError, MessageError
from .franka import FrankaOptions
from .impedance import ImpedanceParams
from .rosbridge.server import RosBridgeServer, ServerThread

__all__ = ["SimRobotOptions", "SimulatedFranka", "CommandRecord", "start_sim_robot", "main"]

LOGGER = logging.getLogger("hardware.sim_robot")


@dataclass(frozen=True)
class SimRobotOptions:
    """Parameters of the simulated robot, ball and camera."""

    impedance: ImpedanceParams = field(default_factory=ImpedanceParams)
    """Gains of the impedance law the simulated arm runs."""
    franka: FrankaOptions = field(default_factory=FrankaOptions)
    """Topics and types (must match the deploy side)."""
    camera: CameraOptions = field(default_factory=CameraOptions)
    """Detection topic and frame."""
    state_rate_hz: float = 200.0
    """Robot state publishing rate [Hz] (franka_state_controller's publish_rate)."""
    camera_rate_hz: float = 80.0
    """Ball detection rate [Hz] (the paper's cameras ran at 80 Hz)."""
    camera_noise_std: float = 0.0
    """Standard deviation of Gaussian noise on detections [m]."""
    physics_dt: float = 1e-3
    """Integration step [s]."""
    ee_mass: float = 2.5
    """Translational task-space inertia m [kg] (Λ = m I₃)."""
    ee_inertia: float = 0.05
    """Rotational task-space inertia I [kg m²]."""
    ee_radius: float = 0.0195
    """Radius of the spherical end effector [m]."""
    initial_position: tuple[float, ...] = (0.65, 0.0, 0.15)
    """End-effector start position [m] (also the equilibrium until commanded)."""
    initial_quaternion: tuple[float, ...] = (1.0, 0.0, 0.0, 0.0)
    """End-effector start orientation (x, y, z, w); the default points the tool down."""
    ball_radius: float = 0.05
    """Ball radius [m]."""
    ball_mass: float = 0.1
    """Ball mass [kg]."""
    ball_initial: tuple[float, ...] = (0.55, 0.0)
    """Ball start position on the table (x, y) [m]."""
    table_height: float = 0.0
    """Table surface height z [m]."""
    contact_stiffness: float = 2000.0
    """Normal stiffness of the end-effector/ball contact [N/m]."""
    contact_damping: float = 10.0
    """Normal damping of that contact [N s/m]."""
    rolling_damping: float = 0.5
    """Viscous rolling resistance of the ball [1/s]."""
    max_command_jump: float = 0.10
    """Commands whose equilibrium is farther than this from the end effector [m] are rejected
    (the robot-side guard a real controller would have)."""
    seed: int = 0
    """Seed of the camera noise."""

    def __post_init__(self) -> None:
        for name in ("state_rate_hz", "camera_rate_hz", "physics_dt", "ee_mass", "ee_inertia",
                     "ee_radius", "ball_radius", "ball_mass", "max_command_jump"):
            if not getattr(self, name) > 0:
                raise HardwareValueError(f"SimRobotOptions.{name} must be > 0, got "
                                         f"{getattr(self, name)!r}")
        for name in ("camera_noise_std", "contact_stiffness", "contact_damping",
                     "rolling_damping"):
            if not getattr(self, name) >= 0:
                raise HardwareValueError(f"SimRobotOptions.{name} must be >= 0")
        if len(self.initial_position) != 3 or len(self.initial_quaternion) != 4 or len(
                self.ball_initial) != 2:
            raise HardwareValueError("SimRobotOptions: initial_position needs 3 numbers, "
                                     "initial_quaternion 4 (x, y, z, w), ball_initial 2")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> SimRobotOptions:
        """Build from a mapping (nested sections impedance/franka/camera); strict keys."""
        return options_from_dict(cls, data)

    @classmethod
    def from_file(cls, path: str | Path, section: str | None = None) -> SimRobotOptions:
        """Load from YAML/TOML."""
        return options_from_file(cls, path, section)


@dataclass(frozen=True)
class CommandRecord:
    """A command the simulated robot accepted."""

    t_receive: float
    """time.monotonic() at arrival [s]."""
    position: np.ndarray
    """(3,) commanded equilibrium position [m]."""
    ee_position: np.ndarray
    """(3,) simulated end-effector position when it arrived [m]."""


class SimulatedFranka:
    """End effector under impedance control, a ball, and a camera, behind a rosbridge server.

    Call :meth:`attach` once on the server's loop, then run :meth:`run` as a task on it
    (:func:`start_sim_robot` does both in a background thread).
    """

    def __init__(self, server: RosBridgeServer, options: SimRobotOptions | None = None):
        self.server = server
        self.options = o = options or SimRobotOptions()
        imp = o.impedance
        self._kt, self._bt = imp.translational_stiffness, imp.translational_damping
        self._kr, self._br = imp.rotational_stiffness, imp.rotational_damping
        self.p = np.array(o.initial_position, dtype=float)
        self.v = np.zeros(3)
        self.R = Rotation.from_quat(o.initial_quaternion)
        self.w = np.zeros(3)
        self.p_d = self.p.copy()
        self.R_d = self.R
        self.f_d = np.zeros(3)
        self.tau_d = np.zeros(3)
        zb = o.table_height + o.ball_radius
        self.ball = np.array([o.ball_initial[0], o.ball_initial[1], zb])
        self.ball_v = np.zeros(3)
        self.f_contact = np.zeros(3)  # force of the ball on the end effector [N]
        self.t = 0.0  # simulated time [s]
        self.state_paused = False
        self.camera_paused = False
        self.commands: collections.deque[CommandRecord] = collections.deque(maxlen=100000)
        self.wrenches = 0
        self.rejected: list[str] = []
        self.last_state_publish = float("nan")
        self.last_camera_publish = float("nan")
        self.ee_trace: collections.deque[tuple[float, np.ndarray]] = collections.deque(
            maxlen=100000)
        self._rng = np.random.default_rng(o.seed)
        self._seq_state = 0
        self._seq_cam = 0

    # -- bridge endpoints ---------------------------------------------------------------
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
        LOGGER.warning("simulated robot rejected a command: %s", reason)

    def _on_equilibrium(self, msg: dict[str, Any], t: float) -> None:
        f = self.options.franka
        try:
            p, q, _ = messages.parse_pose_stamped(msg, f.equilibrium_topic, f.base_frame)
        except MessageError as e:
            self._reject(str(e))
            return
        if np.linalg.norm(p - self.p) > self.options.max_command_jump:
            self._reject(f"{f.equilibrium_topic}: equilibrium {np.linalg.norm(p - self.p):.3f}"
                         f" m from the end effector")
            return
        self.p_d = p
        self.R_d = Rotation.from_quat(q)
        self.commands.append(CommandRecord(t, p, self.p.copy()))

    def _on_wrench(self, msg: dict[str, Any], t: float) -> None:
        f = self.options.franka
        try:
            force, torque, _ = messages.parse_wrench_stamped(msg, f.wrench_topic, f.base_frame)
        except MessageError as e:
            self._reject(str(e))
            return
        self.f_d, self.tau_d = force, torque
        self.wrenches += 1

    # -- physics ------------------------------------------------------------------------
    def step(self, dt: float) -> None:
        """Advance the end effector and the ball by ``dt`` [s] (semi-implicit Euler)."""
        o = self.options
        # Contact between the spherical end effector and the ball.
        d = self.ball - self.p
        dist = float(np.linalg.norm(d))
        pen = o.ee_radius + o.ball_radius - dist
        f_ball = np.zeros(3)
        if pen > 0 and dist > 1e-9:
            n = d / dist
            closing = float((self.v - self.ball_v) @ n)
            fn = max(0.0, o.contact_stiffness * pen + o.contact_damping * closing)
            f_ball = fn * n
        self.f_contact = -f_ball
        a = (self._kt * (self.p_d - self.p) - self._bt * self.v
             + (self.f_d + self.f_contact) / o.ee_mass)
        e_r = (self.R_d * self.R.inv()).as_rotvec()
        alpha = self._kr * e_r - self._br * self.w + self.tau_d / o.ee_inertia
        self.v = self.v + dt * a
        self.p = self.p + dt * self.v
        self.w = self.w + dt * alpha
        self.R = Rotation.from_rotvec(self.w * dt) * self.R
        # Ball: horizontal rolling (the table takes the vertical force).
        a_b = np.zeros(3)
        a_b[:2] = f_ball[:2] / (1.4 * o.ball_mass) - o.rolling_damping * self.ball_v[:2]
        self.ball_v = self.ball_v + dt * a_b
        self.ball = self.ball + dt * self.ball_v
        self.t += dt

    def advance_to(self, t_target: float) -> None:
        """Integrate until simulated time ``t_target`` [s] in steps of ``physics_dt``."""
        dt = self.options.physics_dt
        while self.t + 0.5 * dt < t_target:
            self.step(dt)

    # -- publishing ---------------------------------------------------------------------
    def _T(self) -> np.ndarray:
        return messages.transform_from_pose(self.p, self.R.as_quat())

    def publish_state(self, stamp: float) -> None:
        """Publish the robot state (FrankaState or PoseStamped per the options)."""
        f = self.options.franka
        self._seq_state += 1
        if f.state_type == "franka_msgs/FrankaState":
            Td = messages.transform_from_pose(self.p_d, self.R_d.as_quat())
            wrench = np.concatenate([self.f_contact, np.zeros(3)])
            msg = messages.franka_state(self._T(), stamp, self._seq_state, T_base_ee_desired=Td,
                                        external_wrench=wrench)
        else:
            msg = messages.pose_stamped(self.p, self.R.as_quat(), f.base_frame, stamp,
                                        self._seq_state)
        self.server.publish(f.state_topic, msg)
        self.last_state_publish = time.monotonic()
        self.ee_trace.append((self.last_state_publish, self.p.copy()))

    def publish_camera(self, stamp: float) -> None:
        """Publish a ball detection (with noise)."""
        c = self.options.camera
        self._seq_cam += 1
        noise = self._rng.normal(0.0, self.options.camera_noise_std, 3) if (
            self.options.camera_noise_std > 0) else 0.0
        self.server.publish(c.topic, messages.point_stamped(self.ball + noise, c.frame_id,
                                                            stamp, self._seq_cam))
        self.last_camera_publish = time.monotonic()

    async def run(self) -> None:
        """Simulate in real time and publish state and detections at their rates."""
        o = self.options
        t0 = time.monotonic()
        wall0 = time.time()
        next_state = next_cam = t0
        while True:
            now = time.monotonic()
            self.advance_to(now - t0)
            stamp = wall0 + (now - t0)
            if now >= next_state:
                if not self.state_paused:
                    self.publish_state(stamp)
                next_state += 1.0 / o.state_rate_hz
                if next_state < now:  # fell behind: skip, do not burst
                    next_state = now + 1.0 / o.state_rate_hz
            if now >= next_cam:
                if not self.camera_paused:
                    self.publish_camera(stamp)
                next_cam += 1.0 / o.camera_rate_hz
                if next_cam < now:
                    next_cam = now + 1.0 / o.camera_rate_hz
            await asyncio.sleep(max(0.0, min(next_state, next_cam) - time.monotonic()))


def start_sim_robot(port: int = 0, options: SimRobotOptions | None = None,
                    host: str = "127.0.0.1") -> tuple[ServerThread, SimulatedFranka]:
    """Start a rosbridge server with a :class:`SimulatedFranka` in a background thread.

    Returns:
        ``(thread, robot)``; ``thread.server.url`` is the bridge URL, ``thread.stop()`` ends
        it. Access the robot's fields from other threads through ``thread.call``.
    """
    server = RosBridgeServer(host, port)
    robot = SimulatedFranka(server, options)
    robot.attach()
    st = ServerThread(server, [robot.run])
    st.start()
    return st, robot


def main(argv: list[str] | None = None) -> int:
    """``python -m hardware.sim_robot --port P [--config FILE]``: serve until Ctrl-C."""
    ap = argparse.ArgumentParser(prog="python -m hardware.sim_robot", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=9090, help="TCP port (0: any free port)")
    ap.add_argument("--host", default="127.0.0.1", help="interface to bind")
    ap.add_argument("--config", help="YAML/TOML with SimRobotOptions (section 'sim_robot' or "
                    "top level)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    options = None
    if args.config:
        from .config import read_mapping

        data = read_mapping(args.config)
        options = SimRobotOptions.from_dict(data.get("sim_robot", data))

    async def serve() -> None:
        server = RosBridgeServer(args.host, args.port)
        robot = SimulatedFranka(server, options)
        robot.attach()
        await server.start()
        print(f"simulated franka on {server.url}", flush=True)
        try:
            await robot.run()
        finally:
            await server.stop()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
