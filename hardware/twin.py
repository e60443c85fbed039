"""``c3mpc twin franka-ball``: the issue-7 closed-loop simulation served over rosbridge.

The twin is the deployment's digital twin of the robot side: the same topics and message types
as a franka_ros setup with rosbridge_server (see :mod:`hardware.franka`), backed by

* the world of the closed-loop task (:mod:`c3mpc.tasks.franka_ball`): by default the **full Panda**
  (example-robot-data URDF, 7 joints) with a spherical end effector and a free ball in the
  contact simulator ``plants.sim`` (SAP, 2 ms), or ``world="model"``, the simplified
  ``franka-ball`` model's own LCS with a point-mass end effector;
* the arm's **impedance controller**, one of two (``TwinOptions.controller``):

  - ``"eq36"`` (default): the project's controller of eq. (36)
    (:class:`plants.impedance.TaskSpaceImpedance` inside that world, gains per unit
    task-space inertia), whose equilibrium position and feed-forward force are the commands
    received on the equilibrium-pose and wrench topics (the orientation target stays the
    start orientation, hand pointing down: the world's controller has a fixed R_d); on a real
    robot this is the C3 authors' custom controller (docs/deployment.md, "Which controller");
  - ``"stock"``: franka_ros' stock ``cartesian_impedance_example_controller``
    (:mod:`hardware.stock_impedance`: stiffness in N/m within its dynamic-reconfigure ranges,
    damping 2√k, the equilibrium low-pass filtered by 0.005 per 1 kHz tick, null-space
    posture, torque-rate limit); it has no wrench input, so wrench commands are accepted and
    ignored (counted in :attr:`FrankaBallTwin.wrenches_ignored`), as on the real stack where
    nothing subscribes to that topic;
* the full ``franka_msgs/FrankaState`` (panda world; :mod:`hardware.twin_state`): joint
  positions, velocities and torques of the simulated Panda, ``O_F_ext_hat_K`` /
  ``K_F_ext_hat_K`` from the end effector-ball contact (its elastic force, libfranka's sign,
  plus ``force_noise_std`` Gaussian noise per axis), ``time``, errors, and ``O_T_EE_d`` with
  libfranka's meaning under a torque controller (the measured pose: no motion generator runs;
  never the impedance equilibrium);
* **emulated cameras** (:class:`estimators.EmulatedBallVision`: true ball centre sampled at
  ``camera_rate_hz`` with optional Gaussian noise), published as ``PointStamped`` detections.

Simulated time follows the wall clock: each loop iteration steps the world up to the current
wall time (at most ``max_steps_per_iteration`` steps, so publishing never starves; if the
machine is too slow the simulation lags and :attr:`FrankaBallTwin.lag` says by how much).
Commands are validated by the robot-side guard of
:class:`~hardware.bridged_robot.BridgedFranka` (frame, NaN, workspace box, wrench limits, jumps
over ``max_command_jump``, fault mode; each rejection answered to the client with a status),
recorded (:class:`~hardware.bridged_robot.CommandRecord`) and applied at the next simulator
step.

:func:`make_franka_ball_world` is the small public accessor to the task's world objects
(``c3mpc.tasks.franka_ball.make_world``).
"""

from __future__ import annotations

import asyncio
import collections
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
from .impedance import ImpedanceParams
from .stock_impedance import StockCartesianImpedance, StockImpedanceOptions
from .rosbridge.server import RosBridgeServer, ServerOptions, ServerThread
from .bridged_robot import BridgedFranka, RobotGuardOptions, start_bridged

__all__ = ["TwinOptions", "FrankaBallWorld", "make_franka_ball_world", "FrankaBallTwin",
           "start_twin", "twin_command"]


#: End-effector orientation of the Panda's start pose in the simplified model's frame: tool
#: pointing down (x, y, z, w), used by the model world (no orientation there).
_Q_DOWN = (1.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class TwinOptions(LoadableOptions):
    """Settings of the twin (defaults: the issue-7 closed loop's world and cameras)."""

    world: str = "panda"
    """"panda" (full Panda in plants.sim) or "model" (the simplified model's LCS)."""
    controller: str = "eq36"
    """"eq36" (the project's eq.-36 impedance controller, gains ``impedance``, with the
    wrench input) or "stock" (franka_ros' cartesian_impedance_example_controller, gains
    ``stock``; panda world only)."""
    impedance: ImpedanceParams = field(default_factory=ImpedanceParams)
    """Gains of the simulated arm's eq. (36) controller."""
    stock: StockImpedanceOptions = field(default_factory=StockImpedanceOptions)
    """Gains of the stock controller (N/m, N m/rad; ``controller: stock``)."""
    force_noise_std: float = 1.0
    """Gaussian noise per axis on the published ``O_F_ext_hat_K`` [N] (the Franka's
    estimate is good to about 1 N once its offset is removed)."""
    franka: FrankaOptions = field(default_factory=FrankaOptions)
    """Topics and types (must match the deploy side)."""
    camera: CameraOptions = field(default_factory=CameraOptions)
    """Detection topic and frame."""
    sim_dt: float = 0.002
    """Simulator step [s]."""
    solver: str = "sap"
    """Contact solver of plants.sim (panda world)."""
    state_rate_hz: float = 200.0
    """Robot state publishing rate [Hz]."""
    camera_rate_hz: float = 80.0
    """Emulated camera rate [Hz] (paper: 80)."""
    camera_noise_std: float = 0.0
    """Gaussian noise per axis on each detection [m] (paper: 0 or 0.001)."""
    guard: RobotGuardOptions = field(default_factory=RobotGuardOptions)
    """Robot-side guard: workspace box and feed-forward wrench limits of accepted commands."""
    server: ServerOptions = field(default_factory=ServerOptions)
    """The bridge server's allowed origins and resource limits."""
    max_command_jump: float = 0.10
    """Equilibria farther than this from the end effector are rejected [m]."""
    time_scale: float = 1.0
    """Simulated seconds per wall second: 1 (real time) by default; below 1 for a machine
    too slow for the world in real time (the deploy side then sets the same
    ``DeployOptions.time_scale``). The robot's stamps and ``time`` are simulated time, the
    state rate is per simulated second."""
    max_steps_per_iteration: int = 5
    """Simulator steps per loop iteration at most (then publish and yield)."""
    max_lag: float = 0.05
    """When the simulation falls further behind the wall clock than this [s], the backlog is
    dropped (the world slows down instead of bursting steps to catch up)."""
    seed: int = 0
    """Camera noise seed."""

    def __post_init__(self) -> None:
        if self.world not in ("panda", "model"):
            raise HardwareValueError(f"TwinOptions.world must be 'panda' or 'model', got "
                                     f"{self.world!r}")
        for name in ("sim_dt", "state_rate_hz", "camera_rate_hz", "max_command_jump", "max_lag",
                     "time_scale"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise HardwareValueError(f"TwinOptions.{name} must be a positive number, got "
                                         f"{v!r}")
        if not (self.camera_noise_std >= 0):
            raise HardwareValueError("TwinOptions.camera_noise_std must be >= 0 [m]")
        if self.time_scale > 1:
            raise HardwareValueError(f"TwinOptions.time_scale must be in (0, 1], got "
                                     f"{self.time_scale!r}")
        if not (isinstance(self.force_noise_std, (int, float)) and self.force_noise_std >= 0):
            raise HardwareValueError(f"TwinOptions.force_noise_std must be >= 0 [N], got "
                                     f"{self.force_noise_std!r}")
        if self.controller not in ("eq36", "stock"):
            raise HardwareValueError(f"TwinOptions.controller must be 'eq36' or 'stock', got "
                                     f"{self.controller!r}")
        if self.controller == "stock" and self.world != "panda":
            raise HardwareValueError("TwinOptions.controller 'stock' needs world 'panda' (the "
                                     "stock controller acts on the joints)")
        if not (isinstance(self.max_steps_per_iteration, int)
                and self.max_steps_per_iteration >= 1):
            raise HardwareValueError("TwinOptions.max_steps_per_iteration must be an int >= 1")


class FrankaBallWorld:
    """Step-by-step access to the closed-loop task's world: commanded equilibrium position and
    desired force in, end-effector pose/velocity and true ball centres out.

    Built by :func:`make_franka_ball_world`. ``command`` replaces the impedance reference
    (held until the next command: the task's ``reference="hold"``), with zero reference
    velocity and no acceleration feed-forward (a franka_ros equilibrium pose carries neither).
    """

    def __init__(self, world: Any, kind: str, ee0: np.ndarray, balls0: np.ndarray):
        self._w = world
        self.kind = kind
        self.ee0 = ee0
        self.balls0 = balls0
        self.description: str = world.description

    @property
    def t(self) -> float:
        """Simulated time [s]."""
        return float(self._w.t)

    def command(self, position: np.ndarray, force: np.ndarray) -> None:
        """Set the equilibrium position (3,) [m] and the force (3,) [N] the end effector should
        apply (the feed-forward J_posᵀ f of eq. 36)."""
        c = self._w.cmd
        c["p"] = np.array(position, dtype=float)
        c["v"] = np.zeros(3)
        c["f"] = np.array(force, dtype=float)
        c["a"] = np.zeros(3)
        c["t0"] = self.t

    def ee_pose(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position (3,), rotation (3, 3), linear velocity (3,)) of the end-effector centre."""
        w = self._w
        if self.kind == "panda":
            n = w.n_arm
            p, R, v, _ = w.imp.frame_state(w.sim.q[:n], w.sim.v[:n])
            return p, R, v
        p, v = w.ee_state()
        return p, Rotation.from_quat(_Q_DOWN).as_matrix(), v

    def ball(self) -> np.ndarray:
        """(3,) true centre of the (first) ball [m]."""
        return self._w.balls()[0][0].copy()

    def joints(self) -> tuple[np.ndarray, np.ndarray]:
        """(q (7,) [rad], dq (7,) [rad/s]) of the arm (panda world only)."""
        if self.kind != "panda":
            raise HardwareValueError("the model world has no joints")
        n = self._w.n_arm
        return self._w.sim.q[:n].copy(), self._w.sim.v[:n].copy()

    def contact_force(self) -> np.ndarray:
        """(3,) force the end effector applies to the ball [N]: the contact's elastic force
        (the scene's sphere stiffnesses in series times the penetration) along the centre
        line, zero without contact."""
        from plants.franka_sim import FrankaSceneOptions
        from plants.models.franka_ball import BALL_RADIUS, EE_RADIUS

        p, _, _ = self.ee_pose()
        d = self.ball() - p
        dist = float(np.linalg.norm(d))
        pen = EE_RADIUS + BALL_RADIUS - dist
        if pen <= 0.0 or dist < 1e-12:
            return np.zeros(3)
        k_pair = FrankaSceneOptions().stiffness / 2.0
        return k_pair * pen * d / dist

    def step(self) -> None:
        """One simulator step."""
        self._w.step()


def make_franka_ball_world(world: str = "panda", gains: ImpedanceParams | None = None,
                           sim_dt: float = 0.002, solver: str = "sap") -> FrankaBallWorld:
    """The single-ball world of :mod:`c3mpc.tasks.franka_ball` at the task's start state (ball on
    the circle at (0.55, 0.1), end effector resting on top of it).

    Args:
        world: "panda" or "model" (see :class:`TwinOptions`).
        gains: impedance gains (default :class:`ImpedanceParams`).
        sim_dt: simulator step [s].
        solver: contact solver of ``plants.sim``.
    """
    from c3mpc.tasks import franka_ball as tf
    from plants import load_plant

    gains = gains or ImpedanceParams()
    o = tf.FrankaBallOptions(n_balls=1, world=world, sim_dt=sim_dt, solver=solver,
                             acceleration_feedforward=False, reference="hold")
    plant = load_plant(o.plant_name)
    layout = tf.franka_layout(plant)
    x0 = plant.defaults.x0
    ee0, balls0 = layout.ee(x0), layout.balls(x0)
    return FrankaBallWorld(tf.make_world(o, gains, plant, layout), world, ee0.copy(),
                           balls0.copy())


class FrankaBallTwin(BridgedFranka):
    """The :class:`FrankaBallWorld` behind a :class:`RosBridgeServer`, in real time.

    Call :meth:`attach` once, then run :meth:`run` as a task on the server's loop
    (:func:`start_twin` does both in a background thread). The attributes the tests of the
    simple simulated robot read exist here too: ``commands``, ``ee_trace``, ``rejected``,
    ``last_state_publish``, ``last_camera_publish``, ``state_paused``, ``camera_paused``.
    """

    def __init__(self, server: RosBridgeServer, options: TwinOptions | None = None):
        from estimators import BallTrackerOptions, EmulatedBallVision

        super().__init__(server, options or TwinOptions())
        o = self.options
        self.world = make_franka_ball_world(o.world, o.impedance, o.sim_dt, o.solver)
        self.vision = EmulatedBallVision(
            BallTrackerOptions(filter="none", velocity_cutoff_hz=None),
            rate_hz=o.camera_rate_hz, noise_std=o.camera_noise_std, rng=o.seed)
        p, R, _ = self.world.ee_pose()
        self.p, self.R = p, R
        self.p_d, self.f_d = p.copy(), np.zeros(3)
        self._rng_force = np.random.default_rng([o.seed, 104729])
        self.tau = np.zeros(7)
        """Joint torques the controller applied at the newest step [N m] (panda world)."""
        self.wrenches_ignored = 0
        """Wrench commands the stock controller ignored (it has no wrench input)."""
        self.stock: StockCartesianImpedance | None = None
        self._fields: Any = None
        if o.world == "panda":
            self._instrument_controller()
        self.ball_trace: collections.deque[tuple[float, float, np.ndarray]] = (
            collections.deque(maxlen=100000))
        """(wall time.monotonic(), simulated t, true ball centre) per published detection."""
        self.lag = 0.0
        """Wall time minus simulated time at the newest iteration [s] (> 0: running late)."""
        self.max_lag = 0.0
        self.time_dropped = 0.0
        """Wall time the simulation skipped because it could not keep up [s] (the world then
        runs slower than real time; the loop never bursts to catch up)."""
        self._last_sample_t = -math.inf
        self._last_state_t = -math.inf

    # -- bridge endpoints (validation in BridgedFranka) -------------------------------------
    log_name = "twin"

    def apply_equilibrium(self, p: np.ndarray, q: np.ndarray) -> None:
        self.p_d = p
        if self.stock is not None:
            self.stock.set_equilibrium(p, q)
            return
        self.world.command(self.p_d, self.f_d)  # the eq.-36 world holds its start orientation

    def apply_wrench(self, force: np.ndarray, torque: np.ndarray) -> None:
        if self.stock is not None:  # the stock controller has no wrench input
            self.wrenches_ignored += 1
            return
        self.f_d = force
        self.world.command(self.p_d, self.f_d)

    def _instrument_controller(self) -> None:
        """Record the arm torques of every simulator step (and, with ``controller: stock``,
        replace the world's eq.-36 law by the stock controller's)."""
        from plants.franka_sim import EE_FRAME

        from .twin_state import PandaStateFields

        w = self.world._w
        sim, n = w.sim, w.n_arm
        self._fields = PandaStateFields(w.imp.model, EE_FRAME)
        inner = sim.controller
        if self.options.controller == "stock":
            o = self.options.stock
            self.stock = stock = StockCartesianImpedance(w.imp.model, EE_FRAME, sim.q[:n],
                                                         o)
            ticks = max(1, int(round(self.options.sim_dt * o.control_rate_hz)))
            gravity = self._fields.gravity

            def controller(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
                tau = np.zeros(v.shape[0])
                tau_d = stock.saturate(stock.torque(q[:n], v[:n]), ticks)
                stock.advance(ticks)
                tau[:n] = tau_d + gravity(q[:n])  # the robot adds gravity to tau_J_d
                self.tau = tau[:n].copy()
                return tau
        else:
            def controller(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
                tau = inner(t, q, v)
                self.tau = np.asarray(tau[:n], dtype=float).copy()
                return tau
        sim.controller = controller

    def external_wrench(self) -> np.ndarray:
        """``O_F_ext_hat_K`` (6,) as the robot would estimate it: the contact force the end
        effector applies to the ball (libfranka's sign) plus ``force_noise_std`` noise per
        force axis; no torque (the contact acts through the sphere's centre)."""
        f = self.world.contact_force()
        s = self.options.force_noise_std
        if s > 0:
            f = f + self._rng_force.normal(0.0, s, 3)
        return np.concatenate([f, np.zeros(3)])

    def state_extras(self) -> dict[str, Any]:
        w = self.external_wrench()
        if self._fields is None:  # model world: pose, wrench, O_T_EE_d = measured pose
            T = np.eye(4)
            T[:3, :3], T[:3, 3] = self.R, self.p
            return {"T_base_ee_desired": T, "external_wrench": w}
        q, dq = self.world.joints()
        return {"fields": self._fields.fields(q, dq, self.tau, w, self.world.t)}

    # -- simulation and publishing ------------------------------------------------------
    def advance_to(self, t_target: float, deadline: float = math.inf) -> None:
        """Step the world towards simulated time ``t_target`` [s] (at most
        ``max_steps_per_iteration`` steps, and no further step once the wall time
        ``deadline`` (time.monotonic()) has passed: the next state publication is never
        delayed by more than one simulator step, however slow the steps in contact; the first
        step is always taken, so the world advances even when publishing alone overruns)."""
        w, dt = self.world, self.options.sim_dt
        for i in range(self.options.max_steps_per_iteration):
            if w.t + 0.5 * dt >= t_target or (i > 0 and time.monotonic() >= deadline):
                break
            w.step()
        self.lag = t_target - w.t
        self.max_lag = max(self.max_lag, self.lag)
        if self.lag > self.options.max_lag:  # too slow for real time: drop the backlog
            self.time_dropped += self.lag
            self.lag = 0.0

    def sample_camera(self, stamp: float) -> None:
        """Run the emulated camera at the world's time; publish when it took a new sample."""
        true = self.world.ball()
        s = self.vision.step(true, self.world.t)
        if s.t <= self._last_sample_t or not s.valid:
            return
        self._last_sample_t = s.t
        if self.camera_paused:
            return
        c = self.options.camera
        self._seq_cam += 1
        self.server.publish(c.topic, messages.point_stamped(s.position, c.frame_id, stamp,
                                                            self._seq_cam))
        self.last_camera_publish = time.monotonic()
        self.ball_trace.append((self.last_camera_publish, self.world.t, true))

    async def run(self) -> None:
        """Simulate in real time and publish state and detections."""
        o = self.options
        t0 = time.monotonic()
        wall0 = time.time()
        next_state = t0
        scale = o.time_scale
        state_period = 1.0 / (o.state_rate_hz * scale)  # wall seconds
        while True:
            now = time.monotonic()
            self.advance_to((now - t0) * scale - self.time_dropped, deadline=next_state)
            now = time.monotonic()
            self.p, self.R, _ = self.world.ee_pose()
            # The robot's clock is the simulation's: stamps advance with simulated time, so
            # finite differences over stamps see the simulated motion even when it runs slower
            # than real time (receive times, which the watchdog uses, stay wall-clock). The
            # wall time the simulation dropped is added, so stamps stay within max_lag of the
            # wall clock (the deploy side checks them against it) like a real robot's.
            stamp = wall0 + self.time_dropped + self.world.t
            self.sample_camera(stamp)
            if now >= next_state and self.world.t > self._last_state_t:  # stamps increase
                self._last_state_t = self.world.t
                if not self.state_paused:
                    self.publish_state(stamp)
                next_state += state_period
                if next_state < now:  # fell behind: skip, do not burst
                    next_state = now + state_period
            wait = min(next_state, t0 + (self.time_dropped + self.world.t + o.sim_dt) / scale
                       ) - time.monotonic()
            await asyncio.sleep(max(0.0, wait))


def start_twin(port: int = 0, options: TwinOptions | None = None,
               host: str = "127.0.0.1", *, auth_secret: str | None = None,
               server_options: ServerOptions | None = None
               ) -> tuple[ServerThread, FrankaBallTwin]:
    """Start a rosbridge server with a :class:`FrankaBallTwin` in a background thread
    (``auth_secret``: clients must authenticate; ``server_options``: origins and limits).

    Returns:
        ``(thread, twin)``; ``thread.server.url`` is the bridge URL, ``thread.stop()`` ends it.
    """
    return start_bridged(FrankaBallTwin, port, options, host, auth_secret=auth_secret,
                         server_options=server_options)


async def _print_status(twin: FrankaBallTwin, interval: float | None) -> None:
    """Every ``interval`` seconds of wall time (None or 0: never), one line: simulated time,
    the real-time factor over the last interval (simulated / wall; below 1 the machine cannot
    keep the world in real time and the twin slows it down, see ``TwinOptions.max_lag``) and
    the commands received so far."""
    if not interval:
        return
    wall, sim = time.monotonic(), twin.world.t
    while True:
        await asyncio.sleep(interval)
        now, t = time.monotonic(), twin.world.t
        print(f"c3mpc twin: t = {t:.1f} s simulated, real-time factor "
              f"{(t - sim) / max(1e-9, now - wall):.2f} over the last {now - wall:.1f} s, "
              f"{len(twin.commands)} commands, {len(twin.rejected)} rejected", flush=True)
        wall, sim = now, t


def twin_command(args: Any) -> int:
    """Implementation of ``c3mpc twin`` (argparse namespace in, exit status out): serve until
    Ctrl-C or ``--duration`` seconds."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    options = TwinOptions()
    if getattr(args, "config", None):
        from .config import read_mapping

        data = read_mapping(args.config)
        options = TwinOptions.from_dict(data.get("twin", data))
    if getattr(args, "world", None):
        import dataclasses

        options = dataclasses.replace(options, world=args.world)
    if getattr(args, "controller", None):
        import dataclasses

        options = dataclasses.replace(options, controller=args.controller)
    duration = getattr(args, "duration", None)
    status_interval = getattr(args, "status_interval", 5.0)
    from .rosbridge.auth import load_secret

    secret = load_secret(getattr(args, "auth_secret_file", None))

    async def serve() -> None:
        import signal

        server = RosBridgeServer(args.host, args.port, auth_secret=secret,
                                 options=options.server)
        twin = FrankaBallTwin(server, options)
        twin.attach()
        await server.start()
        print(f"c3mpc twin {args.task}: {twin.world.description}; serving on {server.url} "
              f"(authentication {'required' if secret else 'off'})", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        task = asyncio.create_task(twin.run())
        status = asyncio.create_task(_print_status(twin, status_interval))
        try:
            await asyncio.wait_for(stop.wait(), duration)
        except asyncio.TimeoutError:
            pass
        finally:
            task.cancel()
            status.cancel()
            await asyncio.gather(task, status, return_exceptions=True)
            await server.stop()
            rt = twin.world.t / max(1e-9, twin.world.t + twin.time_dropped)
            print(f"c3mpc twin: stopped at simulated t = {twin.world.t:.2f} s, "
                  f"{len(twin.commands)} commands received, {len(twin.rejected)} rejected, "
                  f"real-time factor {rt:.2f}", flush=True)

    asyncio.run(serve())
    return 0
