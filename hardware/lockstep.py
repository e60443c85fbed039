"""Lock-step rehearsal: the twin and the deploy loop on one simulated clock, in one process.

``c3mpc twin`` + ``c3mpc deploy`` rehearse the deployment as two processes over a websocket, on
the wall clock: what they measure mixes the loop's logic with the machine's timing (planning
time, scheduling, message delays, a world that cannot keep real time). :func:`run_lockstep`
runs the *same components* with the wall clock taken out, so the two can be told apart:

* the twin: a real :class:`~hardware.twin.FrankaBallTwin` (its world, emulated camera, force
  estimate, full ``FrankaState`` and robot-side command guard) attached to a real
  :class:`~hardware.rosbridge.server.RosBridgeServer` that is never started: state and
  detections reach the deploy side through the server's in-process routing, commands reach
  the twin's guard the same way (``server.publish``), as the messages a client sends;
* the deploy side: detached :class:`~hardware.franka.FrankaAdapter` and
  :class:`~hardware.camera.BallDetectionAdapter` (their parsing, stamp checks and velocity
  estimates), the planner, the :class:`~hardware.safety.SafetyLayer` and the deploy loop's
  own tick (``hardware.deploy._Run.step``: watchdog, holds, planning, filtering);
* one clock: the simulated time. Every ``1 / state_rate_hz`` the twin publishes a state and
  every camera period a detection (stamps = simulated time), every ``1 / rate_hz`` the deploy
  loop ticks on the newest of each (with ``DeployOptions.tick_on_detection`` also at the step
  a new detection is accepted, as the real loop wakes on it), and its commands take effect
  ``command_delay`` later
  (rounded up to simulator steps, at least one: the simulated loop's ``min_command_delay``).
  Algorithm 3's Δt_c is ``planning_latency`` instead of the measured solve time (the
  simulated loop's ``planning_latency``), so a run is deterministic and does not depend on the
  machine's load.

What this leaves out is exactly the wall-clock part: the websocket, JSON encoding, scheduling
jitter and a world slower than real time. Used to find why the bridged C3 loop lost the ball
that the simulated loop keeps (docs/deployment.md, "Bridged loop against the simulated
loop").
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import messages
from .camera import BallDetectionAdapter
from .config import LoadableOptions
from .errors import HardwareValueError
from .franka import FrankaAdapter

__all__ = ["LockstepOptions", "LockstepLog", "run_lockstep", "rehearsal_options"]


@dataclass(frozen=True)
class LockstepOptions(LoadableOptions):
    """Timing of a lock-step rehearsal (simulated seconds)."""

    duration: float = 80.0
    """Simulated time limit [s]."""
    stop_after_lap: bool = True
    """Stop once the (true) ball has gone once round the circle."""
    command_delay: float = 0.004
    """Delay from a deploy tick to its commands taking effect on the twin [s] (at least one
    simulator step): the planning time plus the transport on a real setup."""
    planning_latency: float = 0.004
    """Algorithm 3's Δt_c [s] (the C3 planner's clock advances by this per solve)."""

    def __post_init__(self) -> None:
        for name in ("duration", "command_delay", "planning_latency"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise HardwareValueError(f"LockstepOptions.{name} must be a positive number "
                                         f"[s], got {v!r}")
        if not isinstance(self.stop_after_lap, bool):
            raise HardwareValueError(f"LockstepOptions.stop_after_lap must be true or false, "
                                     f"got {self.stop_after_lap!r}")


@dataclass(frozen=True)
class LockstepLog:
    """One row per deploy tick (T ticks), simulated time."""

    t: np.ndarray
    """(T,) simulated time of the tick [s]."""
    ee: np.ndarray
    """(T, 3) measured end-effector position (the deploy side's state) [m]."""
    command: np.ndarray
    """(T, 3) equilibrium sent this tick (NaN: none) [m]."""
    target: np.ndarray
    """(T, 3) the planner's equilibrium before the safety layer (NaN: none) [m]."""
    ball: np.ndarray
    """(T, 3) true ball centre (the twin's world) [m]."""
    ball_estimate: np.ndarray
    """(T, 3) the deploy side's ball estimate [m]."""
    contact_force: np.ndarray
    """(T,) normal force the end effector applies to the ball, true (the twin's world) [N]."""
    radial_error: np.ndarray
    """(T,) |distance of the true ball from the circle's centre − radius| [m]."""
    lap_angle_deg: float
    """How far the true ball went round the circle [deg]."""
    lap_time: float | None
    """Simulated time of the completed lap [s] (None: no lap)."""
    band_fraction: float
    """Share of the lap's ticks (of all ticks without a lap) with the true ball within
    ``band`` of the circle."""
    interventions: int
    """Safety-layer interventions."""
    twin_rejections: list[str] = field(default_factory=list)
    """Commands the twin's guard rejected."""
    plans: int = 0
    planner_failures: int = 0
    exit_reason: str = ""
    """Why the deploy loop stopped early (``hardware.deploy.ExitReason`` value: a fault, data
    lost, an error in the planner), "" when it ran to the lap or the time limit."""


def run_lockstep(twin_options: Any = None, deploy_options: Any = None,
                 options: LockstepOptions | None = None, *, band: float = 0.02,
                 progress: Any = None) -> LockstepLog:
    """Run the lock-step rehearsal (module docstring) of ``c3mpc deploy franka-ball`` with
    ``deploy_options`` (:class:`~hardware.deploy.DeployOptions`; its ``time_scale`` must be
    1) against ``c3mpc twin franka-ball`` with ``twin_options``
    (:class:`~hardware.twin.TwinOptions`, ``time_scale`` 1).

    Args:
        band: half-width of the band the ball should stay in [m] (the task's 2 cm).
        progress: optional ``f(t, log_row_count)`` called about once per simulated second.
    """
    from .deploy import DeployOptions, _Run
    from .rosbridge.server import RosBridgeServer
    from .twin import FrankaBallTwin, TwinOptions

    o = options or LockstepOptions()
    tw = twin_options or TwinOptions()
    dp = deploy_options or DeployOptions(planner_type="c3")
    if tw.time_scale != 1.0 or dp.time_scale != 1.0:
        raise HardwareValueError("run_lockstep: time_scale must be 1 on both sides (the "
                                 "simulated clock replaces the wall clock)")
    # The stamps are simulated seconds from 0: no wall-clock stamp check applies.
    dp = dataclasses.replace(
        dp, franka=dataclasses.replace(dp.franka, max_stamp_lag=math.inf),
        camera=dataclasses.replace(dp.camera, max_stamp_lag=math.inf))
    server = RosBridgeServer("127.0.0.1", 0)  # never started: in-process routing only
    twin = FrankaBallTwin(server, tw)
    twin.attach()
    franka = FrankaAdapter(None, dp.franka)
    camera = BallDetectionAdapter(None, dp.camera)
    server.on_publish(dp.franka.state_topic, dp.franka.state_type, franka._on_state)
    server.on_publish(dp.camera.topic, "geometry_msgs/PointStamped", camera._on_msg)
    run = _Run("franka-ball", dp, o.duration, None, None)
    planner = run.planner
    a3 = getattr(planner, "algorithm3", None)
    if a3 is not None:
        from c3mpc.algorithm3 import FixedLatencyClock

        a3.clock = FixedLatencyClock(o.planning_latency)
    warm_up = getattr(planner, "warm_up", None)
    if callable(warm_up):
        warm_up()
    world, sim_dt = twin.world, tw.sim_dt
    state_period, tick = 1.0 / tw.state_rate_hz, 1.0 / dp.rate_hz
    delay_steps = max(1, int(math.ceil(o.command_delay / sim_dt - 1e-9)))
    f = dp.franka
    pending: list[tuple[float, list[tuple[str, dict[str, Any]]]]] = []
    centre = np.asarray(getattr(getattr(planner, "options", None), "center", (0.55, 0.0)),
                        float)
    radius = float(getattr(getattr(planner, "options", None), "radius", 0.1))
    rows: list[list[float]] = []
    next_state = next_tick = 0.0
    started = False
    lap = 0.0
    prev_angle: float | None = None
    lap_time: float | None = None
    seq = 0
    ticked_count = 0  # the camera's accepted detections at the last tick
    exit_reason = ""
    last_progress = -math.inf
    n_steps = int(math.ceil(o.duration / sim_dt))
    for _ in range(n_steps + 1):
        t = world.t
        twin.p, twin.R, _v = world.ee_pose()
        while pending and pending[0][0] <= t + 1e-12:  # commands due now reach the guard
            for topic, msg in pending.pop(0)[1]:
                server.publish(topic, msg)
        twin.sample_camera(t)
        if t >= next_state - 1e-12:
            twin.publish_state(t)
            next_state += state_period
        ball_true = world.ball()
        ang = math.atan2(ball_true[0] - centre[0], ball_true[1] - centre[1])
        if prev_angle is not None:
            lap += (ang - prev_angle + math.pi) % (2 * math.pi) - math.pi
        prev_angle = ang
        if lap_time is None and lap >= 2 * math.pi:
            lap_time = t
        cam = camera.state()
        detected = dp.tick_on_detection and cam is not None and cam.count > ticked_count
        if (t >= next_tick - 1e-12 or detected) and franka.state() is not None and (
                cam is not None):
            if t >= next_tick - 1e-12:
                next_tick += tick
            ticked_count = cam.count
            st, ball = franka.state(), camera.state()
            assert st is not None and ball is not None
            if not started:
                run.begin(st, t)
                run._t0 = t
                started = True
            end, row_target, row_cmd, _pt = run.step(franka, st, ball, t, t - st.t_receive,
                                                     t - ball.t_receive)
            if end is not None:
                exit_reason = end.value
                break
            msgs = []
            assert franka.dry_run is not None
            while franka.dry_run:
                cmd = franka.dry_run.popleft()
                seq += 1
                msgs.append((f.equilibrium_topic, messages.pose_stamped(
                    cmd.position, cmd.quaternion, f.base_frame, t, seq)))
                if f.wrench_topic:
                    msgs.append((f.wrench_topic, messages.wrench_stamped(
                        cmd.force, cmd.torque, f.base_frame, t, seq)))
            if msgs:
                pending.append((t + delay_steps * sim_dt - 0.5 * sim_dt, msgs))
            fn = world.contact_force()
            rows.append([t, *st.position, *row_cmd, *row_target, *ball_true, *ball.position,
                         float(np.linalg.norm(fn))])
        if progress is not None and t - last_progress >= 1.0:
            last_progress = t
            progress(t, len(rows))
        if o.stop_after_lap and lap_time is not None:
            break
        world.step()
    d = np.array(rows, float).reshape(-1, 17)
    ball = d[:, 10:13]
    radial = np.abs(np.hypot(ball[:, 0] - centre[0], ball[:, 1] - centre[1]) - radius)
    end = len(radial) if lap_time is None else int(np.searchsorted(d[:, 0], lap_time)) + 1
    return LockstepLog(
        t=d[:, 0], ee=d[:, 1:4], command=d[:, 4:7], target=d[:, 7:10], ball=ball,
        ball_estimate=d[:, 13:16], contact_force=d[:, 16], radial_error=radial,
        lap_angle_deg=math.degrees(lap), lap_time=lap_time,
        band_fraction=float(np.mean(radial[:end] <= band)) if end else math.nan,
        interventions=run.safety.interventions, twin_rejections=list(twin.rejected),
        plans=int(getattr(planner, "plans", 0)),
        planner_failures=int(getattr(planner, "failures", 0)), exit_reason=exit_reason)


def rehearsal_options(seed: int = 0, *, tuning: str = "vision",
                      camera_noise_std: float = 0.001, force_noise_std: float = 1.0,
                      tick_on_detection: bool = True,
                      kalman_accel_std: float | None = None) -> tuple[Any, Any]:
    """Twin and deploy options of issue 21's force-sensed rehearsal with camera noise, from the
    simulated loop's ``tuning`` (``TUNINGS[tuning]`` in :mod:`c3mpc.tasks.franka_ball`:
    "vision", the configuration for 1 mm noise, or "noisy", the one before it).

    Twin: the full Panda with ``camera_noise_std`` [m] of camera noise (noise seed ``seed``)
    and ``O_F_ext_hat_K`` with ``force_noise_std`` [N]. Deploy: the C3 planner with the tuning
    and the force-sensed step 5, the tuning's gains on both sides, the camera's
    constant-velocity Kalman filter (measurement σ = ``camera_noise_std``, process noise the
    tuning's ``vision_accel_std`` as the simulated loop, or ``kalman_accel_std``) and raw
    finite-difference robot velocities (``velocity_filter`` 1: the Panda's pose is
    encoder-exact); with ``tick_on_detection`` the loop ticks at each new detection as well as
    at its rate, so C3 plans at the detection as the simulated loop does.

    Returns:
        ``(TwinOptions, DeployOptions)`` for :func:`run_lockstep` (``time_scale`` 1).
    """
    from c3mpc.tasks.franka_ball import TUNINGS

    from .camera import CameraOptions
    from .deploy import DeployOptions
    from .franka import FrankaOptions
    from .impedance import ImpedanceParams
    from .planner_c3 import C3PlannerOptions
    from .twin import TwinOptions

    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise HardwareValueError(f"rehearsal_options: seed must be an int >= 0, got {seed!r}")
    if tuning not in ("vision", "noisy", "nominal"):
        raise HardwareValueError(f"rehearsal_options: tuning must be 'vision', 'noisy' or "
                                 f"'nominal', got {tuning!r}")
    tuned = TUNINGS[tuning]
    gains = ImpedanceParams(translational_stiffness=tuned["translational_stiffness"],
                            damping_ratio=tuned["damping_ratio"])
    twin = TwinOptions(impedance=gains, camera_noise_std=camera_noise_std,
                       force_noise_std=force_noise_std, seed=seed)
    deploy = DeployOptions(
        planner_type="c3", max_stale_time=0.5, impedance=gains,
        tick_on_detection=tick_on_detection, c3=C3PlannerOptions(tuning=tuning),
        camera=CameraOptions(filter="kalman", kalman_measurement_std=camera_noise_std,
                             kalman_accel_std=kalman_accel_std),
        franka=FrankaOptions(velocity_filter=1.0))
    return twin, deploy
