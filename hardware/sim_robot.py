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

integrated by semi-implicit Euler at ``physics_dt``. A solid ball rolls without slipping on the
table (viscous rolling resistance) and is pushed or rolled by the spherical end effector
through a compliant contact (spring-damper normal force on the penetration, regularised
Coulomb friction on the slip of the contact points; ``f_c`` acts on both bodies, the vertical
part on the ball is absorbed by the table). Pressing on the top of the ball and moving rolls it
at half the end-effector speed, as in the paper's experiment. A camera publishes the ball
centre at ``camera_rate_hz`` with optional Gaussian noise.

No joint-space model: ``FrankaState`` messages carry ``O_T_EE``, ``O_T_EE_d`` (the measured
pose, as libfranka reports it under a torque controller: no motion generator runs; never the
commanded equilibrium),
``O_F_ext_hat_K`` (the contact force the end effector applies to the ball, libfranka's sign),
``robot_mode`` and ``current_errors``, not ``q``/``dq`` (the twin, :mod:`hardware.twin`,
publishes the full message). Commands pass the robot-side guard of :class:`~hardware.bridged_robot.BridgedFranka`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from . import messages
from .camera import CameraOptions
from .config import LoadableOptions
from .errors import HardwareValueError
from .franka import FrankaOptions
from .bridged_robot import BridgedFranka, CommandRecord, RobotGuardOptions, start_bridged
from .impedance import ImpedanceParams
from .rosbridge.server import RosBridgeServer, ServerOptions, ServerThread

__all__ = ["SimRobotOptions", "SimulatedFranka", "CommandRecord", "start_sim_robot", "main"]



@dataclass(frozen=True)
class SimRobotOptions(LoadableOptions):
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
    ball_radius: float = 0.0315
    """Ball radius [m] (the franka-ball plant's)."""
    ball_mass: float = 0.132
    """Ball mass [kg] (the franka-ball plant's)."""
    ball_initial: tuple[float, ...] = (0.55, 0.0)
    """Ball start position on the table (x, y) [m]."""
    table_height: float = 0.0
    """Table surface height z [m]."""
    contact_stiffness: float = 2000.0
    """Normal stiffness of the end-effector/ball contact [N/m]."""
    contact_damping: float = 10.0
    """Normal damping of that contact [N s/m]."""
    contact_friction: float = 1.0
    """Coulomb friction coefficient μ of the end-effector/ball contact (paper: 1)."""
    friction_slip_velocity: float = 0.005
    """Slip speed [m/s] below which that friction is regularised (viscous), above it it is
    μ f_n."""
    rolling_damping: float = 0.5
    """Viscous rolling resistance of the ball [1/s]."""
    guard: RobotGuardOptions = field(default_factory=RobotGuardOptions)
    """Robot-side guard: workspace box and feed-forward wrench limits of accepted commands."""
    server: ServerOptions = field(default_factory=ServerOptions)
    """The bridge server's allowed origins and resource limits."""
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
                     "rolling_damping", "contact_friction", "friction_slip_velocity"):
            if not getattr(self, name) >= 0:
                raise HardwareValueError(f"SimRobotOptions.{name} must be >= 0")
        if len(self.initial_position) != 3 or len(self.initial_quaternion) != 4 or len(
                self.ball_initial) != 2:
            raise HardwareValueError("SimRobotOptions: initial_position needs 3 numbers, "
                                     "initial_quaternion 4 (x, y, z, w), ball_initial 2")


class SimulatedFranka(BridgedFranka):
    """End effector under impedance control, a ball, and a camera, behind a rosbridge server.

    Call :meth:`attach` once on the server's loop, then run :meth:`run` as a task on it
    (:func:`start_sim_robot` does both in a background thread).
    """

    def __init__(self, server: RosBridgeServer, options: SimRobotOptions | None = None):
        super().__init__(server, options or SimRobotOptions())
        o = self.options
        imp = o.impedance
        self._kt, self._bt = imp.translational_stiffness, imp.translational_damping
        self._kr, self._br = imp.rotational_stiffness, imp.rotational_damping
        self.p = np.array(o.initial_position, dtype=float)
        self.v = np.zeros(3)
        self.R = Rotation.from_quat(o.initial_quaternion).as_matrix()  # (3, 3) EE -> base
        self.w = np.zeros(3)
        self.p_d = self.p.copy()
        self.R_d = self.R.copy()
        self.f_d = np.zeros(3)
        self.tau_d = np.zeros(3)
        zb = o.table_height + o.ball_radius
        self.ball = np.array([o.ball_initial[0], o.ball_initial[1], zb])
        self.ball_v = np.zeros(3)
        self.f_contact = np.zeros(3)  # force of the ball on the end effector [N]
        # Skip work that cannot change anything (numpy calls on 3-vectors dominate the step).
        self._had_contact = False
        self._rho = np.zeros(3)
        self._rotating = False
        self._ball_moving = False
        self.t = 0.0  # simulated time [s]
        self._rng = np.random.default_rng(o.seed)

    # -- bridge endpoints (validation in BridgedFranka) -------------------------------------
    def apply_equilibrium(self, p: np.ndarray, q: np.ndarray) -> None:
        self.p_d = p
        R_d = Rotation.from_quat(q).as_matrix()
        if not np.array_equal(R_d, self.R_d):
            self.R_d = R_d
            self._rotating = True

    def apply_wrench(self, force: np.ndarray, torque: np.ndarray) -> None:
        self.f_d, self.tau_d = force, torque
        if torque.any():
            self._rotating = True

    def state_extras(self) -> dict[str, Any]:
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = self.R, self.p
        # O_F_ext_hat_K with libfranka's sign: the force the end effector applies to the ball
        return {"T_base_ee_desired": T,
                "external_wrench": np.concatenate([-self.f_contact, np.zeros(3)])}

    # -- physics ------------------------------------------------------------------------
    def step(self, dt: float) -> None:
        """Advance the end effector and the ball by ``dt`` [s] (semi-implicit Euler).

        The contact force acts on the end effector as an external force (felt through Λ⁻¹) and
        on the ball, whose table contact is assumed to roll without slipping; the vertical part
        of the force on the ball is taken by the table."""
        o = self.options
        # Contact between the spherical end effector and the ball: spring-damper normal force
        # and regularised Coulomb friction on the slip of the contact points.
        d = self.ball - self.p
        reach = o.ee_radius + o.ball_radius
        dist2 = float(d @ d)
        in_contact = 1e-18 < dist2 < reach * reach
        if in_contact:
            dist = math.sqrt(dist2)
            n = d / dist  # from the end effector to the ball
            closing = float((self.v - self.ball_v) @ n)
            fn = max(0.0, o.contact_stiffness * (reach - dist) + o.contact_damping * closing)
            rho = -o.ball_radius * n  # contact point relative to the ball centre
            # ball angular velocity from rolling without slipping on the table: ω = e_z × v / r
            omega = np.array([-self.ball_v[1], self.ball_v[0], 0.0]) / o.ball_radius
            slip = self.v - (self.ball_v + np.cross(omega, rho))
            slip -= (slip @ n) * n
            s_norm = math.sqrt(float(slip @ slip))
            friction = (o.contact_friction * fn / max(s_norm, o.friction_slip_velocity)) * slip
            f_ball = fn * n + friction
            self.f_contact = -f_ball
            self._rho = rho
        elif self._had_contact:
            self.f_contact = np.zeros(3)
        self._had_contact = in_contact
        a = (self._kt * (self.p_d - self.p) - self._bt * self.v
             + (self.f_d + self.f_contact) * (1.0 / o.ee_mass))
        self.v += dt * a
        self.p += dt * self.v
        if self._rotating:
            e_r = _log_so3(self.R_d @ self.R.T)
            alpha = self._kr * e_r - self._br * self.w + self.tau_d / o.ee_inertia
            self.w = self.w + dt * alpha
            self.R = _exp_so3(self.w * dt) @ self.R
            if (max(abs(e_r).max(), abs(self.w).max()) < 1e-10
                    and not self.tau_d.any()):  # settled: snap to rest, skip until commanded
                self.R, self.w, self._rotating = self.R_d.copy(), np.zeros(3), False
        # Ball: horizontal rolling (the table takes the vertical force).
        if in_contact or self._ball_moving:
            # Rolling without slipping under a force F at offset ρ from the centre (solid ball,
            # I = 2/5 m r²; table friction eliminated): a = 5/(7m) (F_h + e_z × (ρ × F) / r)
            # in the plane; a push at the top accelerates twice as much as one at the centre.
            a_b = np.zeros(3)
            if in_contact:
                F = -self.f_contact
                tq = np.cross(self._rho, F)
                a_b[0] = F[0] + tq[1] / o.ball_radius
                a_b[1] = F[1] - tq[0] / o.ball_radius
                a_b[:2] *= 5.0 / (7.0 * o.ball_mass)
            a_b[:2] -= o.rolling_damping * self.ball_v[:2]
            self.ball_v += dt * a_b
            self.ball += dt * self.ball_v
            self._ball_moving = in_contact or abs(self.ball_v).max() > 1e-9
            if not self._ball_moving:
                self.ball_v = np.zeros(3)
        self.t += dt

    def advance_to(self, t_target: float) -> None:
        """Integrate until simulated time ``t_target`` [s] in steps of ``physics_dt``."""
        dt = self.options.physics_dt
        while self.t + 0.5 * dt < t_target:
            self.step(dt)

    # -- publishing ---------------------------------------------------------------------
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


def _exp_so3(phi: np.ndarray) -> np.ndarray:
    """Rotation matrix of the rotation vector ``phi`` (Rodrigues)."""
    th = math.sqrt(float(phi @ phi))
    if th < 1e-12:
        return np.eye(3)
    k = phi / th
    Kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(th) * Kx + (1.0 - math.cos(th)) * (Kx @ Kx)


def _log_so3(R: np.ndarray) -> np.ndarray:
    """Rotation vector of the rotation matrix ``R`` (angle in [0, π])."""
    c = max(-1.0, min(1.0, 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)))
    th = math.acos(c)
    v = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if th < 1e-9:
        return 0.5 * v
    s = math.sin(th)
    if s > 1e-6:
        return v * (th / (2.0 * s))
    # th ≈ π: axis from the diagonal of R = 2 k kᵀ - I
    k = np.sqrt(np.maximum((np.diag(R) + 1.0) / 2.0, 0.0))
    i = int(np.argmax(k))
    k[(i + 1) % 3] = math.copysign(k[(i + 1) % 3], R[i, (i + 1) % 3] + R[(i + 1) % 3, i])
    k[(i + 2) % 3] = math.copysign(k[(i + 2) % 3], R[i, (i + 2) % 3] + R[(i + 2) % 3, i])
    return th * k / np.linalg.norm(k)


def start_sim_robot(port: int = 0, options: SimRobotOptions | None = None,
                    host: str = "127.0.0.1", *, auth_secret: str | None = None,
                    server_options: ServerOptions | None = None
                    ) -> tuple[ServerThread, SimulatedFranka]:
    """Start a rosbridge server with a :class:`SimulatedFranka` in a background thread.

    Args:
        port: TCP port (0: a free one).
        options: The simulated robot's parameters.
        host: Interface to bind (loopback by default).
        auth_secret: Shared secret: clients must authenticate (rosauth MAC) when given.
        server_options: Origins and resource limits of the bridge server.

    Returns:
        ``(thread, robot)``; ``thread.server.url`` is the bridge URL, ``thread.stop()`` ends
        it. Access the robot's fields from other threads through ``thread.call``.
    """
    return start_bridged(SimulatedFranka, port, options, host, auth_secret=auth_secret,
                         server_options=server_options)


def main(argv: list[str] | None = None) -> int:
    """``python -m hardware.sim_robot --port P [--config FILE]``: serve until Ctrl-C."""
    ap = argparse.ArgumentParser(prog="python -m hardware.sim_robot", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=9090, help="TCP port (0: any free port)")
    ap.add_argument("--host", default="127.0.0.1", help="interface to bind")
    ap.add_argument("--config", help="YAML/TOML with SimRobotOptions (section 'sim_robot' or "
                    "top level)")
    ap.add_argument("--auth-secret-file", help="require rosauth authentication with the "
                    "secret in this file (default: $C3MPC_BRIDGE_SECRET if set, else none)")
    args = ap.parse_args(argv)
    from .rosbridge.auth import load_secret

    secret = load_secret(args.auth_secret_file)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    options = None
    if args.config:
        from .config import read_mapping

        data = read_mapping(args.config)
        options = SimRobotOptions.from_dict(data.get("sim_robot", data))

    async def serve() -> None:
        server = RosBridgeServer(args.host, args.port, auth_secret=secret,
                                 options=(options or SimRobotOptions()).server)
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
