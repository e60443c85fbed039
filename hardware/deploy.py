"""The deploy loop: robot state and camera in, planner, safety layer, impedance targets out.

``c3mpc deploy franka-ball --bridge ws://HOST:9090 [--config FILE] [--duration S]
[--report DIR]`` runs :func:`run_deploy` (``--franky HOST`` or ``transport: franky``: the robot
through libfranka, :mod:`hardware.franky_transport`, instead of the bridge; the loop below is
the same). Each tick (at ``rate_hz``, absolute schedule; missed
ticks are skipped, not bunched):

1. read the newest valid robot state and ball detection (latest-value buffers);
2. if the robot reported a fault (``robot_mode`` other than IDLE/MOVE or an error flag in
   ``current_errors``, latched by :class:`FrankaAdapter` the moment it arrives, which also
   refuses to publish from then on), stop: ``exit_reason = "robot_fault"``, no further
   command, not even a final hold (recovery is an operator action and a new run);
3. :meth:`SafetyLayer.watchdog`: if either is older than ``stale_after`` (50 ms), send one
   hold (:meth:`SafetyLayer.hold`: the measured pose clamped into the box, at most
   ``max_step`` from the last safe command, zero wrench) and stop commanding until data is
   fresh again (the planner restarts; the first command is at most ``max_step`` from the
   hold); if data stays stale for ``max_stale_time`` the run ends with
   ``exit_reason = "data_lost"``;
4. otherwise ask the planner for a target, pass it through :meth:`SafetyLayer.filter`, and
   publish the equilibrium pose and desired wrench.

Every command, holds included, is a :class:`~hardware.safety.SafeCommand` made by the safety
layer. Ctrl-C (SIGINT) ends the loop at the next tick with ``exit_reason = "interrupted"``.
Every run ends with a final hold (through :meth:`SafetyLayer.hold`), except after a robot
fault. A status line is written to stderr (flushed) ``status_interval`` apart.
With ``--report DIR`` the run writes ``summary.json``, ``interventions.json``, ``run.mcap``
(:data:`MCAP_CHANNELS`), ``log.csv``
(one row per tick: time, measured, target, commanded, ball, data ages) and ``log.png``
(:mod:`hardware.plot_log`).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
import math
import platform
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from c3mpc._json import finite_or_none

from .camera import BallDetectionAdapter, BallState, CameraOptions
from .config import LoadableOptions, options_to_dict
from .errors import BridgeConnectionError, HardwareValueError
from .franka import FrankaAdapter, FrankaOptions, RobotState
from .franky_transport import FrankyOptions
from .impedance import ImpedanceParams
from .planner import CirclePlanner, CirclePlannerOptions, Planner
from .planner_c3 import C3PlannerOptions
from .rosbridge.transport import BridgeOptions, RosBridgeTransport
from .safety import InterventionKind, SafeCommand, SafetyLayer, SafetyOptions

__all__ = ["DeployOptions", "ExitReason", "DeploySummary", "run_deploy", "TASKS"]

LOGGER = logging.getLogger("hardware.deploy")

#: Tasks ``c3mpc deploy`` knows.
TASKS = ("franka-ball",)


class ExitReason(str, Enum):
    """Why a deploy run ended (the string goes into summary.json)."""

    COMPLETED = "completed"
    """The requested duration elapsed."""
    INTERRUPTED = "interrupted"
    """Ctrl-C / SIGINT (or SIGTERM)."""
    DATA_LOST = "data_lost"
    """Robot state or camera data stayed stale for max_stale_time."""
    CONNECT_FAILED = "connect_failed"
    """No bridge at the URL."""
    STARTUP_TIMEOUT = "startup_timeout"
    """Connected, but no robot state or ball detection arrived in time."""
    ERROR = "error"
    """The planner (or another part of the loop) raised; the final hold was still sent."""
    ROBOT_FAULT = "robot_fault"
    """The robot reported a fault (robot_mode other than IDLE/MOVE, or a current_errors
    flag): commanding stopped at once, no final hold."""

    @property
    def exit_code(self) -> int:
        """Process exit status for this reason."""
        return {"completed": 0, "interrupted": 130, "data_lost": 3, "connect_failed": 4,
                "startup_timeout": 5, "error": 1, "robot_fault": 6}[self.value]


@dataclass(frozen=True)
class DeployOptions(LoadableOptions):
    """Everything the deploy loop is configured by (YAML sections with the field names)."""

    rate_hz: float = 100.0
    """Control loop rate [Hz]."""
    tick_on_detection: bool = False
    """Also tick as soon as a new ball detection is accepted (besides the ``rate_hz``
    schedule), so a planner that plans once per detection (the C3 planner) starts at the
    detection, as the simulated loop does, instead of at the next scheduled tick (0 to
    1 / ``rate_hz`` later)."""
    transport: str = "rosbridge"
    """How the robot is reached: "rosbridge" (franka_ros behind rosbridge_server, topics
    ``franka``) or "franky" (libfranka directly through franky-control, ``franky``
    settings; the camera, when required, still comes over the bridge)."""
    bridge: BridgeOptions = field(default_factory=BridgeOptions)
    """Bridge URL and transport settings."""
    franky: FrankyOptions = field(default_factory=FrankyOptions)
    """The libfranka transport's robot address and controller (``transport: franky``)."""
    franka: FrankaOptions = field(default_factory=FrankaOptions)
    """Robot topics and types."""
    camera: CameraOptions = field(default_factory=CameraOptions)
    """Ball detection topic."""
    safety: SafetyOptions = field(default_factory=SafetyOptions)
    """Workspace, limits, watchdog threshold."""
    planner_type: str = "circle"
    """"circle" (reference target generator, :class:`CirclePlanner`) or "c3" (C3 on the
    franka-ball simplified model, Algorithm 3, :class:`~hardware.planner_c3.C3Planner`)."""
    planner: CirclePlannerOptions = field(default_factory=CirclePlannerOptions)
    """Settings of the reference circle planner."""
    c3: C3PlannerOptions = field(default_factory=C3PlannerOptions)
    """Settings of the C3 planner."""
    impedance: ImpedanceParams = field(default_factory=ImpedanceParams)
    """Gains of the robot's impedance controller (used by the C3 planner's velocity lead;
    the robot side has its own copy)."""
    require_camera: bool = True
    """Watch the camera too (False: only the robot state feeds the watchdog)."""
    startup_timeout: float = 5.0
    """Seconds to wait for the first robot state and ball detection."""
    max_stale_time: float = 2.0
    """Seconds of continuously stale data after which the run ends (data_lost)."""
    status_interval: float = 0.1
    """Seconds between status-line updates."""
    time_scale: float = 1.0
    """Rate of the robot's clock against the wall clock: 1 on a robot. A rehearsal against a
    twin slowed down to ``time_scale`` < 1 (``TwinOptions.time_scale``; a machine too slow
    for the world in real time) sets the same value here, and the loop runs on that clock:
    its rate, the watchdog's ``stale_after``, ``max_stale_time``, the safety layer's speed
    limit, the planner's phase clock and ``duration`` are all in robot seconds (set the
    adapters' ``max_stamp_lag`` to ``.inf``: the robot's stamps fall behind the wall
    clock)."""

    def __post_init__(self) -> None:
        if self.transport not in ("rosbridge", "franky"):
            raise HardwareValueError(f"DeployOptions.transport must be 'rosbridge' or 'franky', "
                                     f"got {self.transport!r}")
        if self.planner_type not in ("circle", "c3"):
            raise HardwareValueError(f"DeployOptions.planner_type must be 'circle' or 'c3', got "
                                     f"{self.planner_type!r}")
        for name in ("rate_hz", "startup_timeout", "max_stale_time", "status_interval",
                     "time_scale"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise HardwareValueError(f"DeployOptions.{name} must be a positive number, got "
                                         f"{v!r}")
        if not isinstance(self.tick_on_detection, bool):
            raise HardwareValueError(f"DeployOptions.tick_on_detection must be true or false, "
                                     f"got {self.tick_on_detection!r}")
        if self.time_scale > 1:
            raise HardwareValueError(f"DeployOptions.time_scale must be in (0, 1] (1 on a "
                                     f"robot), got {self.time_scale!r}")
        if self.camera.kalman_accel_std is None and self.planner_type == "c3":
            # The camera filter is part of the closed loop's tuning (docs/franka-ball.md, "1 mm
            # noise from vision alone: the filter's lag"): the vision tuning's 0.3 m/s², not a
            # fixed 0.02, which trails the pushed ball (39-58 % in the band, lock-step).
            from c3mpc.tasks.franka_ball import TUNINGS

            object.__setattr__(self, "camera", dataclasses.replace(
                self.camera, kalman_accel_std=TUNINGS[self.c3.tuning]["vision_accel_std"]))


@dataclass(frozen=True)
class DeploySummary:
    """Outcome and counters of a deploy run (``summary.json``)."""

    task: str
    url: str
    """The bridge URL (rosbridge transport) or ``franky://HOST`` (libfranka transport)."""
    exit_reason: ExitReason
    message: str
    duration_s: float
    rate_hz: float
    achieved_rate_hz: float
    commands_sent: int
    """Planner commands published (holds not included)."""
    holds_sent: int
    safety_interventions: int
    """Command interventions (clamps, rejected targets); watchdog trips counted separately."""
    watchdog_trips: int
    interventions_by_kind: dict[str, int]
    ticks: int
    overruns: int
    """Ticks that started more than one period late."""
    state_messages: int
    camera_messages: int
    rejected_state_messages: int
    rejected_camera_messages: int
    transport: dict[str, Any]
    ee_start: list[float]
    ee_end: list[float]
    ee_path_length_m: float
    tracking_offset_mean_m: float
    """Mean distance between the commanded equilibrium and the measured end effector."""
    plan_time_median_s: float
    plan_time_max_s: float
    planner: str
    planner_failures: int
    """Ticks where the planner had no usable plan (it then returned the measured pose)."""
    robot_fault: str = ""
    """The fault that ended the run (robot_mode and error flags), "" if none."""
    refused_commands: int = 0
    """Commands the adapter refused to publish because a robot fault was latched."""
    state_rejections: list[str] = field(default_factory=list)
    """Reasons of the last 20 rejected robot states."""
    bridge_statuses: list[str] = field(default_factory=list)
    """The last 20 status messages of the bridge (refused requests: authentication, the
    robot-side guard, ...)."""
    fault_reaction_s: float = math.nan
    """Seconds from the arrival of the fault state to the loop stopping (NaN: no fault);
    nothing is published after the arrival in any case (the adapter refuses)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        d = dataclasses.asdict(self)
        d["exit_reason"] = self.exit_reason.value
        return d


class _Stop:
    """Set by the SIGINT/SIGTERM handler; the loop checks it every tick."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reason: ExitReason | None = None
        self.wake = threading.Event()
        """Ends the loop's wait for its next tick early: a stop request or (with
        ``tick_on_detection``) a new ball detection."""

    def request(self, reason: ExitReason) -> None:
        self.reason = reason
        self.event.set()
        self.wake.set()


_LOG_COLUMNS = ["t", "held", "ee_x", "ee_y", "ee_z", "target_x", "target_y", "target_z",
                "cmd_x", "cmd_y", "cmd_z", "ball_x", "ball_y", "ball_z", "state_age_s",
                "camera_age_s", "plan_time_s"]


class _Run:
    def __init__(self, task: str, options: DeployOptions, duration: float | None,
                 planner: Planner | None, status: TextIO | None):
        if task not in TASKS:
            raise HardwareValueError(f"unknown deploy task {task!r}; available: {list(TASKS)}")
        self.task = task
        self.o = options
        self.duration = duration
        if planner is None:
            if options.planner_type == "c3":
                from .planner_c3 import C3Planner

                planner = C3Planner(options.c3, options.impedance, options.time_scale)
            else:
                planner = CirclePlanner(options.planner)
        self.planner: Planner = planner
        self.status = status
        self.stop = _Stop()
        self.safety = SafetyLayer(options.safety, nominal_period=1.0 / options.rate_hz)
        self.rows: list[list[float]] = []
        self.commands = 0
        self.holds = 0
        self.ticks = 0
        self.overruns = 0
        self.plan_times: list[float] = []
        self.offsets: list[float] = []
        self.path = 0.0
        self.ee_start: np.ndarray | None = None
        self.ee_last: np.ndarray | None = None
        self.message = ""
        self.warm_up_time = math.nan
        self.fault_reaction = math.nan
        self.held = False
        """True while holding after a watchdog trip."""
        self.stale_since = 0.0
        self._connected: Any = lambda: False
        self.robot_link: Any = None
        """The libfranka transport's robot (``transport: franky``), closed at the end."""
        self._last_status = -math.inf
        self._scale = float(options.time_scale)
        self._t0 = self.clock()

    # -- helpers ------------------------------------------------------------------------
    def clock(self) -> float:
        """The loop's clock [s]: time.monotonic() run at ``time_scale`` (the robot's rate)."""
        return time.monotonic() * self._scale

    def to_clock(self, t_monotonic: float) -> float:
        """A time.monotonic() reading (receive times) on the loop's clock."""
        return t_monotonic * self._scale

    def _status_line(self, now: float, st: RobotState, ball: BallState | None, held: bool,
                     state_age: float, cam_age: float, final: bool = False) -> None:
        if self.status is None or (not final and now - self._last_status < self.o.status_interval):
            return
        self._last_status = now
        el = now - self._t0
        rate = self.ticks / el if el > 0.05 else self.o.rate_hz
        p = st.position
        ball_s = "-" if ball is None else f"({ball.position[0]:.3f},{ball.position[1]:.3f})"
        line = (f"[deploy {self.task}] t={el:6.2f}s {'HOLD' if held else 'RUN '} "
                f"rate={rate:5.1f}Hz cmds={self.commands} ee=({p[0]:.3f},{p[1]:.3f},{p[2]:.3f}) "
                f"ball={ball_s} age state/cam={state_age * 1e3:4.0f}/{cam_age * 1e3:4.0f}ms "
                f"interventions={self.safety.interventions} trips={self.safety.watchdog_trips}")
        tty = getattr(self.status, "isatty", lambda: False)()
        self.status.write(("\r" + line + "\x1b[K") if tty else (line + "\n"))
        if final and tty:
            self.status.write("\n")
        self.status.flush()

    def _hold(self, franka: FrankaAdapter, st: RobotState, now: float,
              why: str) -> SafeCommand | None:
        """Send a hold made by the safety layer; returns it (None if nothing was sent)."""
        cmd = self.safety.hold(st.position, st.quaternion, now, why)
        if cmd is not None and franka.command(cmd, stamp=time.time()):
            self.holds += 1
            return cmd
        return None

    def _fault(self, franka: FrankaAdapter) -> bool:
        """True (and the run's message set) if the robot reported a fault."""
        if franka.fault is None:
            return False
        if not math.isnan(self.fault_reaction):
            return True
        now = self.clock()
        self.fault_reaction = (now - self.to_clock(franka.fault.t_receive)) / self._scale
        self.message = (f"robot fault: {franka.fault.describe()}; commanding stopped "
                        f"{self.fault_reaction * 1e3:.1f} ms after it arrived (recover the "
                        "robot, then start a new run)")
        self.safety.record(now, InterventionKind.ROBOT_FAULT, franka.fault.describe())
        return True

    def begin(self, st0: RobotState, now: float) -> None:
        """Start commanding from the first robot state: the step limits start at its pose."""
        self.safety.reset(st0.position, now, st0.quaternion)
        self.held = False

    def step(self, franka: FrankaAdapter, st: RobotState, ball: BallState | None, now: float,
             state_age: float, cam_age: float
             ) -> tuple[ExitReason | None, list[float], list[float], float]:
        """One tick's decision and command: the loop body without scheduling and logging.

        Robot fault → stop (nothing sent); stale data → one hold, then nothing (data lost
        after ``max_stale_time``); else plan, filter, send. Every command sent is a
        :class:`SafeCommand` made here by the safety layer.

        Returns:
            ``(exit reason or None to go on, planned position (3,), commanded position (3,),
            plan time [s])`` (NaN where not applicable).
        """
        o = self.o
        row_target = [math.nan] * 3
        row_cmd = [math.nan] * 3
        plan_time = math.nan
        if self._fault(franka):
            return ExitReason.ROBOT_FAULT, row_target, row_cmd, plan_time
        if self.safety.watchdog(now, state_age, cam_age):
            if not self.held:
                hold = self._hold(franka, st, now, "watchdog hold")
                self.held = True
                self.stale_since = now
                if hold is not None:
                    row_cmd = list(hold.position)
            elif now - self.stale_since > o.max_stale_time:
                self.message = (f"robot state / camera stale for more than "
                                f"{o.max_stale_time} s (state {state_age:.2f} s, camera "
                                f"{cam_age:.2f} s old; bridge connected: "
                                f"{self._connected()}); holding and exiting")
                return ExitReason.DATA_LOST, row_target, row_cmd, plan_time
            return None, row_target, row_cmd, plan_time
        if self.held:  # resume: the planner restarts, the step limit continues from the hold
            self.held = False
            if self.safety.last_command is None:
                self.safety.reset(st.position, now, st.quaternion)
            reset = getattr(self.planner, "reset", None)
            if callable(reset):
                reset()
        t_plan = time.perf_counter()
        try:
            target = self.planner.plan(st, ball, now)
            plan_time = time.perf_counter() - t_plan
            self.plan_times.append(plan_time)
            cmd = self.safety.filter(target, st.position, now, st.quaternion)
            sent = cmd is not None and franka.command(cmd, stamp=time.time())
        except Exception as e:  # a failing controller must end in a hold, not a crash
            LOGGER.exception("deploy loop failed")
            self.message = f"{type(e).__name__} in the loop: {e}; holding and exiting"
            return ExitReason.ERROR, row_target, row_cmd, plan_time
        if sent:
            assert cmd is not None
            self.commands += 1
            self.offsets.append(float(np.linalg.norm(cmd.position - st.position)))
            row_cmd = list(cmd.position)
        try:
            tp = np.asarray(target.position, dtype=float).ravel()
            if tp.size >= 3:
                row_target = list(tp[:3])
        except (TypeError, ValueError, AttributeError):
            pass
        return None, row_target, row_cmd, plan_time

    def finish(self, franka: FrankaAdapter, st: RobotState | None, now: float,
               reason: ExitReason) -> ExitReason:
        """End of a run: the final hold through the safety layer, unless the robot reported a
        fault (then nothing is sent). Returns the final exit reason."""
        if reason != ExitReason.ROBOT_FAULT and self._fault(franka):
            reason = ExitReason.ROBOT_FAULT  # arrived while the loop was ending
        if st is not None and reason != ExitReason.ROBOT_FAULT:
            hold = self._hold(franka, st, now, f"final hold ({reason.value})")
            self.safety.record(now, InterventionKind.SHUTDOWN, f"final hold ({reason.value})",
                               (), () if hold is None else hold.position)
        return reason

    def _track(self, st: RobotState) -> None:
        if self.ee_start is None:
            self.ee_start = st.position.copy()
        if self.ee_last is not None:
            self.path += float(np.linalg.norm(st.position - self.ee_last))
        self.ee_last = st.position.copy()

    # -- the loop -----------------------------------------------------------------------
    def run(self) -> tuple[ExitReason, RosBridgeTransport | None, Any,
                           BallDetectionAdapter | None]:
        o = self.o
        warm_up = getattr(self.planner, "warm_up", None)
        if callable(warm_up):  # compile/allocate before any data can go stale
            self.warm_up_time = warm_up()
        tr: RosBridgeTransport | None = None
        franka: Any = None
        camera: BallDetectionAdapter | None = None
        try:
            if o.transport == "rosbridge" or o.require_camera:
                tr = RosBridgeTransport(o.bridge)
                tr.connect()
            if o.transport == "franky":
                from .franky_transport import FrankyRobot

                franka = FrankyRobot(o.franky)
                self.robot_link = franka
                franka.connect()
            else:
                franka = FrankaAdapter(tr, o.franka)
        except BridgeConnectionError as e:
            self.message = str(e)
            return ExitReason.CONNECT_FAILED, tr, None, None
        camera = BallDetectionAdapter(tr, o.camera) if tr is not None else None
        if camera is not None and o.tick_on_detection:
            camera.add_listener(self.stop.wake.set)
        deadline = time.monotonic() + o.startup_timeout
        while (franka.state() is None or (o.require_camera and camera is not None
                                          and camera.state() is None)):
            if self._fault(franka):
                return ExitReason.ROBOT_FAULT, tr, franka, camera
            if self.stop.event.wait(0.01):
                self.message = "interrupted while waiting for data"
                return self.stop.reason or ExitReason.INTERRUPTED, tr, franka, camera
            if time.monotonic() > deadline:
                missing = [n for n, s in (("robot state", franka.state()),
                                          ("camera", camera.state() if (
                                              o.require_camera and camera is not None) else 1))
                           if s is None]
                why = [f"last rejected {n}: {a.rejections[-1]}" for n, a in
                       (("robot state", franka), ("detection", camera))
                       if a is not None and a.rejections]
                why += [f"bridge said: {m}" for m in (tr.statuses()[-3:] if tr else [])]
                self.message = (f"no {' or '.join(missing)} within {o.startup_timeout} s "
                                f"(topics {o.franka.state_topic}, {o.camera.topic})"
                                + ("; " + "; ".join(why) if why else ""))
                return ExitReason.STARTUP_TIMEOUT, tr, franka, camera
        period = 1.0 / o.rate_hz
        self._t0 = t_start = self.clock()
        st0 = franka.state()
        assert st0 is not None
        self.begin(st0, t_start)
        link = franka if o.transport == "franky" else tr
        self._connected = lambda: link.is_connected
        k = 0
        reason = ExitReason.COMPLETED
        while True:
            now = self.clock()
            if self.stop.reason is not None:
                reason = self.stop.reason
                self.message = "interrupted by the operator (SIGINT)"
                break
            if self.duration is not None and now - t_start >= self.duration:
                self.message = f"ran for the requested {self.duration} s"
                break
            st = franka.state()
            ball = camera.state() if camera is not None else None
            assert st is not None
            self._track(st)
            state_age = now - self.to_clock(st.t_receive)
            cam_age = (now - self.to_clock(ball.t_receive)) if (o.require_camera and ball is not None) else (
                math.inf if o.require_camera else 0.0)
            end, row_target, row_cmd, plan_time = self.step(franka, st, ball, now, state_age,
                                                            cam_age)
            if end is not None:
                reason = end
                break
            bpos = list(ball.position) if ball is not None else [math.nan] * 3
            self.rows.append([now - t_start, float(self.held), *st.position, *row_target,
                              *row_cmd, *bpos, state_age, cam_age, plan_time])
            self.ticks += 1
            self._status_line(now, st, ball, self.held, state_age, cam_age)
            k += 1
            nxt = t_start + k * period
            late = self.clock() - nxt
            if late > period:  # skip the missed ticks instead of bunching them
                self.overruns += 1
                k += int(late // period)
                nxt = t_start + k * period
            self.stop.wake.clear()  # a detection from here on ends the wait at once
            woken = bool(o.tick_on_detection and camera is not None and ball is not None and (
                (cs := camera.state()) is not None and cs.count > ball.count))
            if not woken:
                woken = self.stop.wake.wait(max(0.0, (nxt - self.clock()) / self._scale))
            if woken and self.stop.reason is None and self.clock() < nxt:
                k -= 1  # an early tick (a detection): the schedule stays where it was
        st = franka.state()
        reason = self.finish(franka, st, self.clock(), reason)
        if st is not None and reason != ExitReason.ROBOT_FAULT:
            cs = camera.state() if camera is not None else None
            now = self.clock()
            self._status_line(now, st, cs, True, now - self.to_clock(st.t_receive),
                              (now - self.to_clock(cs.t_receive)) if cs is not None else math.inf,
                              final=True)
        return reason, tr, franka, camera


def run_deploy(task: str, options: DeployOptions | None = None, *,
               duration: float | None = None, report_dir: str | Path | None = None,
               planner: Planner | None = None, status: TextIO | None = sys.stderr,
               handle_signals: bool = True) -> DeploySummary:
    """Run the deploy loop until ``duration`` [s] elapsed, SIGINT, or data loss.

    Args:
        task: Task name (one of :data:`TASKS`).
        options: Loop, bridge, topic, safety and planner settings.
        duration: Seconds to run (None: until interrupted).
        report_dir: Directory for summary.json, interventions.json and log.csv.
        planner: Controller to use (default: :class:`CirclePlanner` from ``options.planner``).
        status: Stream for the live status line (None: silent).
        handle_signals: Install SIGINT/SIGTERM handlers (main thread only) for a clean stop.

    Returns:
        The run's :class:`DeploySummary` (also written to ``report_dir/summary.json``).
    """
    o = options or DeployOptions()
    if duration is not None and not duration > 0:
        raise HardwareValueError(f"duration must be > 0 [s], got {duration!r}")
    run = _Run(task, o, duration, planner, status)
    old: dict[int, Any] = {}
    if handle_signals and threading.current_thread() is threading.main_thread():
        for sig, why in ((signal.SIGINT, ExitReason.INTERRUPTED),
                         (signal.SIGTERM, ExitReason.INTERRUPTED)):
            old[sig] = signal.signal(sig, lambda *_a, w=why: run.stop.request(w))
    t_begin = time.monotonic()
    tr = franka = camera = None
    try:
        reason, tr, franka, camera = run.run()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if tr is not None:
            tr.close(flush_timeout=1.0)
        if run.robot_link is not None:
            run.robot_link.close(flush_timeout=1.0)
    elapsed = time.monotonic() - t_begin
    stats = tr.stats() if tr is not None else None
    by_kind: dict[str, int] = {}
    for r in run.safety.records:
        by_kind[r.kind.name.lower()] = by_kind.get(r.kind.name.lower(), 0) + 1
    loop_time = run.rows[-1][0] if run.rows else 0.0
    summary = DeploySummary(
        task=task, url=(o.bridge.url if o.transport == "rosbridge"
                        else f"franky://{o.franky.host}"), exit_reason=reason, message=run.message,
        duration_s=elapsed, rate_hz=o.rate_hz,
        achieved_rate_hz=(run.ticks - 1) / loop_time if loop_time > 0 else 0.0,
        commands_sent=run.commands, holds_sent=run.holds,
        safety_interventions=run.safety.interventions,
        watchdog_trips=run.safety.watchdog_trips, interventions_by_kind=by_kind,
        ticks=run.ticks, overruns=run.overruns,
        state_messages=(franka._sub.count if isinstance(franka, FrankaAdapter) else
                        franka.state_count if franka is not None else 0),
        camera_messages=camera._sub.count if camera is not None else 0,
        rejected_state_messages=franka.rejected if franka is not None else 0,
        rejected_camera_messages=camera.rejected if camera is not None else 0,
        transport=({"connects": stats.connects, "disconnects": stats.disconnects,
                    "flow_pauses": stats.flow_pauses,
                    "publishers": [dataclasses.asdict(p) for p in stats.publishers]}
                   if stats is not None else {}),
        ee_start=[] if run.ee_start is None else run.ee_start.tolist(),
        ee_end=[] if run.ee_last is None else run.ee_last.tolist(),
        ee_path_length_m=run.path,
        tracking_offset_mean_m=float(np.mean(run.offsets)) if run.offsets else math.nan,
        plan_time_median_s=float(np.median(run.plan_times)) if run.plan_times else math.nan,
        plan_time_max_s=float(np.max(run.plan_times)) if run.plan_times else math.nan,
        planner=type(run.planner).__name__,
        planner_failures=int(getattr(run.planner, "failures", 0)),
        robot_fault=(franka.fault.describe() if franka is not None and franka.fault is not None
                     else ""),
        refused_commands=franka.refused_commands if franka is not None else 0,
        state_rejections=list(franka.rejections) if franka is not None else [],
        fault_reaction_s=run.fault_reaction,
        bridge_statuses=(tr.statuses()[-20:] if tr is not None else [])
        + (run.robot_link.statuses() if run.robot_link is not None else []),
    )
    LOGGER.info("deploy ended: %s (%s)", reason.value, run.message)
    if report_dir is not None:
        _write_report(Path(report_dir), summary, run, o)
    return summary


def _write_report(out: Path, summary: DeploySummary, run: _Run, options: DeployOptions) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data = summary.to_dict()
    data["options"] = options_to_dict(options)
    data["machine"] = {"platform": platform.platform(), "python": platform.python_version()}
    (out / "summary.json").write_text(json.dumps(finite_or_none(data), indent=2))
    (out / "interventions.json").write_text(json.dumps(
        [finite_or_none(r.to_dict()) for r in run.safety.records], indent=2))
    with open(out / "log.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(_LOG_COLUMNS)
        w.writerows([[f"{v:.6g}" for v in row] for row in run.rows])
    try:
        _write_mcap(out / "run.mcap", run)
    except Exception:  # the CSV above holds the same data: an MCAP problem must not lose it
        LOGGER.exception("could not write %s", out / "run.mcap")
    if run.rows:
        try:
            from .plot_log import plot_log

            plot_log(out)
        except Exception:  # a plotting problem must not lose the run's data
            LOGGER.exception("could not plot %s", out / "log.csv")


MCAP_CHANNELS: dict[str, str] = {
    "/deploy/ee": "foxglove.PoseInFrame: measured end-effector position [m]",
    "/deploy/target": "foxglove.PoseInFrame: the planner's target (before the safety layer) [m]",
    "/deploy/command": "foxglove.PoseInFrame: the equilibrium sent (after the safety layer) [m]",
    "/deploy/ball": "foxglove.PoseInFrame: the ball estimate [m] (absent while there is none)",
    "/deploy/tick": "c3mpc.DeployTick: held, state_age_s, camera_age_s, plan_time_s",
    "/deploy/safety": "c3mpc.SafetyIntervention: kind, detail (one per intervention)",
}
"""The channels of a deploy run's ``run.mcap`` (docs/deployment.md); log times are seconds
since the loop started."""


def _write_mcap(path: Path, run: _Run) -> None:
    """The run as MCAP (:data:`MCAP_CHANNELS`), for Foxglove / PlotJuggler."""
    from c3mpc.mcap_log import POSE_IN_FRAME_SCHEMA, McapLog, record_schema

    c = {name: i for i, name in enumerate(_LOG_COLUMNS)}
    events = sorted(((r.t - run._t0, r) for r in run.safety.records if r.t >= run._t0),
                    key=lambda event: event[0])
    with McapLog(path) as log:
        for topic in ("/deploy/ee", "/deploy/target", "/deploy/command", "/deploy/ball"):
            log.add_channel(topic, POSE_IN_FRAME_SCHEMA)
        log.add_channel("/deploy/tick", record_schema("c3mpc.DeployTick", {
            "held": "true while holding after a watchdog trip",
            "state_age_s": "age of the robot state [s]", "camera_age_s": "age of the ball [s]",
            "plan_time_s": "planner time of this tick [s]"}))
        log.add_channel("/deploy/safety", record_schema("c3mpc.SafetyIntervention", {
            "kind": "InterventionKind name", "detail": "what was changed or stopped, and why"}))
        e = 0
        for row in run.rows:
            t = row[c["t"]]
            while e < len(events) and events[e][0] <= t:
                te, r = events[e]
                log.write("/deploy/safety", max(te, 0.0), {"kind": r.kind.name.lower(),
                                                          "detail": r.detail})
                e += 1
            for topic, prefix in (("/deploy/ee", "ee_"), ("/deploy/target", "target_"),
                                  ("/deploy/command", "cmd_"), ("/deploy/ball", "ball_")):
                p = [row[c[prefix + a]] for a in "xyz"]
                if all(math.isfinite(v) for v in p):
                    log.pose(topic, t, p)
            log.write("/deploy/tick", t, {"held": bool(row[c["held"]]),
                                          "state_age_s": row[c["state_age_s"]],
                                          "camera_age_s": row[c["camera_age_s"]],
                                          "plan_time_s": row[c["plan_time_s"]]})
        for te, r in events[e:]:  # after the last tick (final hold, faults)
            log.write("/deploy/safety", max(te, 0.0), {"kind": r.kind.name.lower(),
                                                      "detail": r.detail})


def deploy_command(args: Any) -> int:
    """Implementation of ``c3mpc deploy`` (argparse namespace in, exit status out)."""
    if args.config:
        options = DeployOptions.from_file(args.config)
    else:
        options = DeployOptions()
    if getattr(args, "bridge", None):
        options = dataclasses.replace(options, bridge=dataclasses.replace(options.bridge,
                                                                          url=args.bridge))
    if getattr(args, "franky", None):
        options = dataclasses.replace(options, transport="franky", franky=dataclasses.replace(
            options.franky, host=args.franky))
    elif not getattr(args, "bridge", None) and options.transport == "rosbridge":
        print("c3mpc deploy: error: --bridge ws://HOST:PORT is required (or --franky HOST, or "
              "transport: franky in --config)", file=sys.stderr)
        return 2
    if getattr(args, "auth_secret_file", None):
        options = dataclasses.replace(options, bridge=dataclasses.replace(
            options.bridge, auth_secret_file=args.auth_secret_file))
    from .rosbridge.auth import load_secret

    authenticated = load_secret(options.bridge.auth_secret_file or None,
                                options.bridge.auth_secret_env or None) is not None
    from urllib.parse import urlparse

    host = urlparse(options.bridge.url).hostname or ""
    uses_bridge = options.transport == "rosbridge" or options.require_camera
    if uses_bridge and not authenticated and host not in ("127.0.0.1", "localhost", "::1"):
        print(f"c3mpc deploy: WARNING: no bridge secret (--auth-secret-file or "
              f"${options.bridge.auth_secret_env}): the connection to {host} is not "
              "authenticated; anyone who can reach the bridge can command the robot "
              "(docs/deployment.md, Authentication)", file=sys.stderr, flush=True)
    if getattr(args, "rate", None):
        options = dataclasses.replace(options, rate_hz=args.rate)
    if not getattr(args, "quiet", False):
        logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    link = (f"bridge {options.bridge.url}" if options.transport == "rosbridge" else
            f"libfranka (franky) robot {options.franky.host}"
            + (f", camera over {options.bridge.url}" if options.require_camera else ""))
    print(f"c3mpc deploy {args.task}: {link}, {options.rate_hz:g} Hz, "
          f"watchdog {options.safety.stale_after * 1e3:.0f} ms, "
          f"{'authenticated' if authenticated else 'NOT authenticated'}, "
          f"duration {'until Ctrl-C' if args.duration is None else f'{args.duration} s'}",
          flush=True)
    summary = run_deploy(args.task, options, duration=args.duration, report_dir=args.report,
                         status=None if getattr(args, "quiet", False) else sys.stderr)
    print(f"  exit: {summary.exit_reason.value} ({summary.message})")
    print(f"  commands sent {summary.commands_sent} at {summary.achieved_rate_hz:.1f} Hz, "
          f"holds {summary.holds_sent}, safety interventions {summary.safety_interventions}, "
          f"watchdog trips {summary.watchdog_trips}")
    if args.report:
        print(f"  report written to {args.report}/ (summary.json, interventions.json, "
              f"run.mcap, log.csv, log.png)")
    return summary.exit_reason.exit_code
