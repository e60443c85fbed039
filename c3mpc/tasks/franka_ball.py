"""The Franka ball-rolling task end to end (seed 003 §VII, Fig. 9): C3 plans on the simplified
model, the full Panda in the contact simulator tracks the plan with the impedance law, the ball
state comes from emulated vision.

Per simulator step (``sim_dt``, 2 ms by default):

* the emulated cameras sample the true ball centres (80 Hz, optional Gaussian noise; velocity by
  finite differences, ω from rolling without slipping, angle by integration);
* the impedance controller (eq. 36, :mod:`plants.impedance`) computes the arm torques from the
  *active* command (x_d's end-effector position/velocity, the feed-forward force from λ_d);
* when the planner is free, Algorithm 3 (:mod:`c3mpc.algorithm3`) runs on the estimate
  x̂ = (end effector from the arm's joint encoders through forward kinematics, balls from the
  vision). Its wall time is *measured*, and the new command takes effect that much simulated
  time later (rounded up to whole simulator steps); the next plan starts then. So the control
  rate in the loop is the machine's real planning rate, and a slow planner sees stale states
  exactly as on hardware.

Nothing scripts the end effector: its only references are C3's x_d (plus the weak null-space
posture task). The target generators decide where the *balls* should go and bias the end
effector above/behind the ball (Fig. 10), as in the paper.

Dependency note: ``c3mpc`` must not import ``estimators`` at module level (``estimators ->
c3mpc``). :func:`run_franka_ball` takes a ``vision_factory``; when it is None the default
``estimators.EmulatedBallVision`` is imported inside the function (the same lazy-import
exception ``c3mpc.cli`` makes for ``hardware``). ``plants`` is used here as in the other task
runners.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np

from ..algorithm3 import (
    Algorithm3Planner,
    BallTaskLayout,
    CircleTarget,
    FixedLatencyClock,
    GaitOptions,
    LineTarget,
    Plan,
)
from ..c3 import C3
from .ball_trajectories import TimedPath, TimedPathTarget, TrajectoryOptions
from .ball_trajectories import describe as describe_trajectory
from .contact_sensing import ForceSensedGap
from .franka_ball_laps import circle_lap_boundaries, lap_statistics
from .latency import DelayEstimator, command_hold, predict_under_command
from .franka_robustness import (BallForces, RobustnessOptions, push_recovery, scene_options,
                                simulated_start)
from ..errors import C3ValueError
from ..option_fields import check_field_types
from ..options import C3Options

__all__ = ["FrankaBallOptions", "FrankaBallLog", "run_franka_ball", "franka_layout",
           "build_planner", "PRESETS", "preset_options",
           "make_world", "summarize", "PLANT_FOR_BALLS"]

PLANT_FOR_BALLS = {1: "franka-ball", 2: "franka-balls-2", 3: "franka-balls-3"}

LINE_SPACING = {2: 0.1, 3: 0.15}
"""Start distance between neighbouring balls of the line task [m] (plant parameter
``spacing``; docs/franka-ball.md, "Multi-ball line task": at 0.1 m there is no room for the
Phase II bias behind a ball with another ball behind it, 3 balls completed 7 of 8 runs at
0.15 m and 2 of 24 at 0.1 m)."""

LINE_STEER = {2: False, 3: True}
"""Whether the line task steers the lead ball back to the line in Phase I by default, per ball
count (``FrankaBallOptions.line_steer`` None; docs/franka-ball.md, "3 balls: what went wrong,
and Phase I steering": 3 balls 10 of 12 fixed latencies completed and >= 95% in the band with
it, 7 of 12 without; 2 balls 3 of 6 with it, 6 of 6 without)."""

LINE_STEER_GAINS = (1.0, 0.3)
"""``LineTarget.phase1_steer`` when steering: bias shift = −1 · (x − x_c + 0.3 s · v_x)."""

TASK_STIFFNESS = 2000.0
"""Translational stiffness of the task's default impedance [1/s²] (the authors' hardware: 500;
see docs/franka-ball.md: with 500 the ball left the 2 cm band in our simulated laps)."""


CIRCLE_GAIT = GaitOptions(phase1_height=-0.002, phase2_lift=0.003, phase2_back=0.027,
                          phase2_height=0.0775)
"""The one-ball noise-free gait (Fig. 10, "nominal" tuning): Phase I 2 mm into the ball's top
(the end effector rolls the ball from its top; at +2 mm C3 never made contact), Phase II lifts
3 mm above contact with the top for its first third, then waits 2.7 cm behind the ball with its
centre at 7.75 cm, 2.3 mm outside contact: every Phase II bias above the ball, as §VII-A says
(docs/franka-ball.md, "Why the literal configuration fails")."""

SINGLE_BIAS_GAIT = GaitOptions(phase2_back=0.0425)
"""The single Phase II bias 4.25 cm behind the ball at 4.5 cm (the nominal gait until
2026-11-27): the multi-ball line task's (whose Phase II is :class:`LineTarget`'s,
docs/franka-ball.md, "Multi-ball") and the deployment's (``hardware/planner_c3.py``, as
rehearsed on the twin)."""

TUNINGS: dict[str, dict[str, Any]] = {
    "nominal": {
        "lead_angle_deg": 20.0, "ball_velocity_weight": 10.0, "vision_accel_std": 0.01,
        "gait": CIRCLE_GAIT, "line_gait": SINGLE_BIAS_GAIT, "resim_lead": None,
        "line_resim_lead": 0.0, "trajectory_gait": CIRCLE_GAIT, "trajectory_resim_lead": 0.0,
        "translational_stiffness": TASK_STIFFNESS, "damping_ratio": 1.0, "command_delay": 0.008,
        "latency_compensation": True, "line_latency_compensation": False,
    },
    "noisy": {
        "lead_angle_deg": 15.0, "ball_velocity_weight": 30.0, "vision_accel_std": 0.02,
        "gait": GaitOptions(phase2_back=0.0429, phase2_height=0.0519), "resim_lead": 0.0,
        "translational_stiffness": 3000.0, "damping_ratio": 0.7, "command_delay": 0.004,
    },
}
"""The loop's tunings (``FrankaBallOptions.tuning``): the values of :data:`TUNED_FIELDS` left
None, of ``min_command_delay="auto"`` (``command_delay``), ``resim_lead="auto"``
(``resim_lead``; None = one camera period), ``latency_compensation="auto"``
(``latency_compensation``; False where absent) and of the default impedance
(``translational_stiffness``, ``damping_ratio``; :func:`task_gains`). The ``line_`` keys, where
present, replace ``gait`` and ``resim_lead`` for the multi-ball line task; the
``trajectory_`` keys, where present, for a time-based ``trajectory`` (else the ``line_`` ones).

"nominal": one ball: the lap in 22-23 s at a fixed 4 ms latency, with and without the 8 ms
floor, 100% in the 2 cm band (:data:`CIRCLE_GAIT`; step 5 over the command's delay plus one
camera period); the multi-ball line task: as before (:data:`SINGLE_BIAS_GAIT`, step 5 over the
command's delay); the time-based trajectories: :data:`CIRCLE_GAIT` with step 5 over the
command's delay only (one camera period more pushes the ball harder at every stroke: 43% of
20 s within 2 cm of x_d(t) against 100%; docs/franka-ball.md, "Time-based trajectories");
slower planning than the 8 ms floor is compensated (:mod:`c3mpc.tasks.latency`; the one-ball
lap only).
"noisy": found by a random search over these values with 1 mm camera noise and the
force-sensed step 5 at fixed 4 ms (docs/franka-ball.md, "1 mm noise: force-sensed step 5 and
the noisy tuning"): 88.9-91.8% of a lap in the band there, seeds 0-4, every exit returned.
"vision": camera noise with step 5 from the camera alone (``force_sensing=False``, as the
paper): the nominal gait and step 5 with the Kalman filter's process noise raised from 0.01 to
0.3 m/s² (docs/franka-ball.md, "1 mm noise from vision alone: the filter's lag"): laps of
18.9-20.3 s, 100% in the band, seeds 0-4 at fixed 4 ms and with the 8 ms floor. The staged
gait pushes the ball every 1.5 s and the 0.01 filter lags it by 4.4 mm (p50, 12 mm p95); C3
and the targets cannot take that lag, step 5 can take the faster filter's noise."""
TUNINGS["vision"] = {**TUNINGS["nominal"], "vision_accel_std": 0.3}


def _tuned(tuned: dict[str, Any], key: str, task: str) -> Any:
    """The tuning's value of ``key`` for the task kind ``task`` ("lap", "line" or
    "trajectory"): ``trajectory_KEY``, then ``line_KEY`` (the path tasks), then ``KEY``."""
    prefixes = {"lap": (), "line": ("line_",), "trajectory": ("trajectory_", "line_")}[task]
    for p in prefixes:
        if p + key in tuned:
            return tuned[p + key]
    return tuned[key]


def _paper_preset() -> dict[str, Any]:
    from plants.impedance import ImpedanceGains

    return {
        "admm_iter": 2, "end_on_qp_step": True, "horizon": 5,
        "acceleration_feedforward": False, "input_limit": None, "min_command_delay": None,
        "min_resim_dt": 0.0, "resim_lead": 0.0, "ball_velocity_weight": 0.1,
        "ball_position_weight": None,
        "lead_angle_deg": 20.0, "impedance": ImpedanceGains(), "force_sensing": False,
        "vision_filter": "none", "extrapolate_vision": False, "max_target_distance": None,
        "tuning": "nominal", "latency_compensation": False,
    }


PRESETS: dict[str, Callable[[], dict[str, Any]]] = {
    "default": dict,
    "paper": _paper_preset,
}
"""Named sets of :class:`FrankaBallOptions` field values (:func:`preset_options`, the CLI's
``--preset``), applied over the defaults and under anything given explicitly.

"default": the defaults (no field changed).

"paper": seed 003 §VII-A / §VIII as written, where the paper gives a value: C3 with s = 2
(ρ_s = 3, N = 5, Δt = 0.1, the plant's), its final QP iterate as the plan, eq. (36) exactly
(no acceleration feed-forward) with the authors' hardware gains (translational stiffness 500,
damping ratio 1), no input bound, Algorithm 3's Δt_c = the measured planning time (no
command-delay floor), the authors' ball-velocity weight 0.1, α_l = 20°, raw camera positions
with finite-difference velocity (no filter, no extrapolation), no force sensing. The paper
gives no Phase II bias distances or Phase II end-effector weight: those stay the task's
(docs/franka-ball.md, "The paper preset": what it gives in our simulator, and why each
default differs)."""


def preset_options(name: str = "default", **overrides: Any) -> "FrankaBallOptions":
    """:class:`FrankaBallOptions` of the preset ``name`` (:data:`PRESETS`) with ``overrides``
    (field values) on top.

    Raises:
        C3ValueError: an unknown preset (the message lists the valid ones); FrankaBallOptions'
            own errors for bad fields.
    """
    if not isinstance(name, str) or name not in PRESETS:
        raise C3ValueError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
    return FrankaBallOptions(**{**PRESETS[name](), **overrides})


TUNED_FIELDS = ("lead_angle_deg", "ball_velocity_weight", "vision_accel_std", "gait")
"""The :class:`FrankaBallOptions` fields whose None means "the tuning's value"."""


@dataclass(frozen=True)
class FrankaBallOptions:
    """Settings of the closed loop (defaults: the paper's single-ball circle, §VII-A).

    Attributes:
        n_balls: 1 (circle, ``franka-ball``), 2 or 3 (line, ``franka-balls-2|3``).
        duration: simulated time limit [s] (None: 60 s for the circle, 30 s for the line).
        stop_after_lap: single ball: stop once the ball has gone once round the circle.
        noise_std: Gaussian noise on each vision position sample [m] (paper: 0 or 0.001).
        vision_rate_hz: camera rate [Hz] (paper: 80).
        vision_filter: ``estimators`` filter: "none" (raw positions, finite-difference
            velocity: the paper's emulation), "lowpass", "kalman" (constant-velocity Kalman,
            measurement σ = ``noise_std``, process noise ``vision_accel_std``), or "auto"
            ("none" without noise, "kalman" with noise). With noise the estimate matters
            through Algorithm 3's step 5, which re-simulates the end effector-ball contact over
            Δt_c and needs the ball relative to the end effector to a fraction of a millimetre;
            see docs/franka-ball.md, "1 mm noise: where it enters".
        vision_accel_std: Kalman process noise, white acceleration [m/s²] (None: the
            tuning's, 0.01 nominal, 0.02 noisy, 0.3 vision). 0.01: the ball
            rolls at nearly constant velocity between pushes; at 80 Hz with σ = 1 mm the filter
            settles to 0.23 mm position and 0.74 mm/s velocity error (``estimators.
            cv_steady_state``), against 0.65 mm and 22 mm/s with the estimators' default 1.0
            (which left the ball in the band 14% of 20 s with the old single-bias gait, 0.01:
            51-90%). But it lags an accelerating ball by 97 mm per m/s² (0.3: 2.9 mm), which
            the staged gait's vision-only loop cannot take (docs/franka-ball.md, "1 mm noise
            from vision alone: the filter's lag").
        sim_dt: simulator time step [s].
        solver: contact solver of the simulator ("sap").
        projection: C3 projection (None: the plant's, "miqp" for 1-2 balls, "qp" for 3).
        admm_iter: ADMM iterations s (paper: 2; 4 here, see docs/franka-ball.md).
        end_on_qp_step: C3 returns the final QP iterate (True, the authors' code) or the last
            projection δ re-rolled through the LCS (False, here: with s <= 6 the QP iterate's λ
            moves the ball without the end effector, see docs/franka-ball.md).
        horizon: N (paper: 5).
        min_resim_dt: smallest Δt_c of Algorithm 3's step 5 [s] (0: the measured time, as
            Algorithm 3; None: one camera period, 1 / vision_rate_hz). Step 5 also covers at
            least ``min_command_delay``.
        resim_lead: added to step 5's interval [s], so that x_d is the plan's state that long
            after the command takes effect (None: one camera period, 1 / vision_rate_hz, how
            long a camera-triggered command is held: x_d is then the state when the next
            command replaces it, as the authors' controller re-simulates over its loop period;
            0: Algorithm 3 as written; "auto": the tuning's, None for one ball without noise,
            0 otherwise). With 0 and a 4 ms plan x_d lies 4 ms ahead while the command holds
            ~12.5 ms, so the reference brakes the end effector: laps of 55-68 s before, 22-23 s
            with one camera period (docs/franka-ball.md, "Why the literal configuration
            fails", item 3).
        world: "panda" (the full Panda in the contact simulator) or "model" (the simplified
            model's own LCS as the world, see :class:`_ModelWorld`).
        torque_limits: panda world: clip the arm's joint torques to the URDF effort limits
            (87 N m joints 1-4, 12 N m joints 5-7), as the real arm's drives do. Inactive in a
            nominal lap (no step saturates); it only bounds the arm when a large error (a
            struck ball) asks for more (docs/franka-ball.md, "90 s screening").
        extrapolate_vision: predict each ball position from its last camera sample to the plan
            time at the estimated velocity (False: use the held sample).
        ball_on_table: use z = r (the table plane) for the ball centre in x̂ and zero vertical
            velocity, instead of the camera's z (the hardware cameras place the ball on that
            plane anyway); otherwise z noise fakes ball-table penetration.
        force_sensing: single ball, panda world: step 5 takes the end effector-ball gap from
            the arm's contact-force estimate while a contact is sensed (emulated:
            ``estimators.EmulatedForceSensor``, the contact's elastic force + noise), through
            :class:`c3mpc.tasks.contact_sensing.ForceSensedGap`, instead of from the camera. Step 5
            resolves the compression it is given within Δt_c, so it needs that gap to a few
            micrometres; a camera gives ~0.2 mm at best (docs/franka-ball.md, "Step 5 reads
            micrometres"). Noise-free the two readings agree and the lap is the same.
        force_noise_std: noise of the emulated force estimate [N] (the Franka's: ~1 N).
        force_threshold: force above which a contact is declared [N].
        plan_on_new_sample: start a plan only when a camera sample newer than the last plan's
            has arrived (and the planner is free); False: plan whenever the planner is free.
        reference: "hold" (the impedance tracks x_d until the next command, Algorithm 3) or
            "extrapolate" (x_d continued at the planned acceleration u_C3 until the next
            command).
        acceleration_feedforward: add the operational-space term J_fᵀ Λ u_C3 (u_C3 is the
            simplified model's end-effector acceleration) to eq. (36); False: eq. (36) exactly
            (docs/franka-ball.md: then the arm gets only about B·Δt_c of C3's acceleration).
        ball_velocity_weight: Q on the ball velocities (None: the tuning's, 10 nominal, 30
            noisy; the plants' default: 0.1).
        ball_position_weight: Q on the ball's x, y (None: the plant's, 10000, the authors'
            value). The paper's knob for its fast noisy lap ("increase the cost on desired ball
            location error", §VII-A).
        phase2_ee_weight: Q on the end-effector position in Phase II (Phase I: the plant's 500).
        phase2_ball_weight: Q on the ball's x, y in Phase II (None: as in Phase I). The
            authors' public controller nearly drops it there (1 against 10000), so that C3
            repositions the end effector instead of pushing the ball on the way back.
        planning_latency: None (default): Algorithm 3's Δt_c and the command delay are the
            measured wall times. A number [s]: a deterministic emulated latency instead (Δt_c =
            that value, the command takes effect after it, rounded up to simulator steps), so
            runs are reproducible and do not depend on the machine's load (for diagnosis and
            A/B comparisons; see docs/franka-ball.md).
        min_command_delay: None: a command takes effect after the measured planning time
            (Algorithm 3). A number [s]: after max(measured time, this), and step 5's
            re-simulation uses the same interval, so the loop's delay is constant whenever the
            planner is faster than this (removes the machine's latency jitter; see
            docs/franka-ball.md). "auto": the tuning's, 8 ms nominal, 4 ms noisy (the noisy
            tuning's step 5 is tuned at 4 ms; at 8 ms it keeps 45-56% of a lap in the band).
        latency_compensation: when the expected command delay L exceeds the delay the tuning
            was made for (its ``command_delay``, 8 ms nominal), plan from the state predicted
            L − 8 ms ahead under the command in force, re-simulate step 5 over 8 ms plus the
            hold that follows from L, and hold every command at least L (L: a quantile of the
            recent cycle times, :class:`c3mpc.tasks.latency.DelayEstimator`); at L <= 8 ms
            nothing changes. "auto": the tuning's (on for one ball nominal, off for the
            noisy tuning and the path tasks). See docs/franka-ball.md, "Slow planning".
        input_limit: bound on each end-effector acceleration input of C3 [m/s²] (None: the
            plant's, unbounded; 5 here: fewer end-effector swings that kick the ball, see
            docs/franka-ball.md).
        gait: the end-effector heuristic (:class:`GaitOptions`; None: the tuning's,
            :data:`CIRCLE_GAIT` for one ball noise-free, the circle or a time-based
            ``trajectory`` (staged Phase II return above the ball), :data:`SINGLE_BIAS_GAIT`
            for the line task, 4.29 cm back at 5.19 cm noisy).
        center, radius: the circle of eq. (25).
        lead_angle_deg: α_l of eq. (25) [deg] (None: the tuning's, 20° nominal as the paper,
            15° noisy).
        max_target_distance: single ball: the eq.-(25) target moved to at most this distance
            from the ball [m] (:class:`CircleTarget`; None: eq. 25 exactly, the default). Only
            acts on a ball more than ~1.4 cm outside the circle at 0.04; with 1 mm noise,
            fixed 4 ms, 90 s: 0.04 gave 44% of the 90 s in the band against 30% (seeds 0-9),
            still far below the 75% criterion, see docs/franka-ball.md, "90 s screening".
        line_dy: multi-ball d_y [m]; line_distance: how far every ball must advance along +y [m]
            (the line task is complete when every ball has advanced that far while all are
            within ``band`` of the line x = x_c).
        line_steer: line task: shift the Phase I end-effector bias (on top of the lead ball)
            towards the line by the ball's predicted offset, ``LineTarget.phase1_steer`` =
            :data:`LINE_STEER_GAINS` (True), or not (False); None: :data:`LINE_STEER` for the
            number of balls (on for 3, off for 2; docs/franka-ball.md, "Multi-ball").
        band: half-width of the error band [m] (paper: 2 cm).
        impedance: :class:`plants.impedance.ImpedanceGains` (None: the authors' gains with the
            translational stiffness raised to :data:`TASK_STIFFNESS`; the force feed-forward is
            off for more than one ball, as in the paper's 2-ball example).
        seed: vision-noise seed.
        settle_time: seconds the arm holds its start pose before the first plan.
        tuning: "nominal", "noisy", "vision" or "auto" (one ball with camera noise: "vision",
            with or without ``force_sensing``; "nominal" otherwise): fills
            ``lead_angle_deg``, ``ball_velocity_weight``, ``vision_accel_std`` and ``gait``
            where they are None, ``min_command_delay`` where it is "auto", and the default
            impedance's stiffness and damping ratio (:data:`TUNINGS`). After construction
            those fields hold the values used, so ``dataclasses.replace`` keeps them;
            ``resolved_tuning`` names the tuning.
        laps: single ball, state-based circle: with ``stop_after_lap`` the run stops once the
            ball has gone round this many times (``summary["laps"]``: per-lap time and band
            fraction, :mod:`c3mpc.tasks.franka_ball_laps`); with ``duration`` None the time
            limit is 60 s per lap.
        trajectory: single ball: a time-based desired trajectory x_d(t) (§VII-D, Figs. 16, 18;
            :class:`c3mpc.tasks.ball_trajectories.TrajectoryOptions`: shape, period, size, ...)
            instead of the state-based circle; the error is then |x_d(t) − x_b(t)|, the run
            lasts the trajectory's laps (with ``duration`` None) and ``center``, ``radius``,
            ``lead_angle_deg``, ``max_target_distance``, ``laps`` and ``stop_after_lap`` are
            not used. None: the circle.
        robustness: panda world: model error and pushes, the simulated world differing from
            C3's model (:class:`c3mpc.tasks.franka_robustness.RobustnessOptions`: table slant,
            friction, ball mass and radius, impulsive pushes). None: the model's world.
    """

    n_balls: int = 1
    duration: float | None = None
    stop_after_lap: bool = True
    noise_std: float = 0.0
    vision_rate_hz: float = 80.0
    vision_filter: str = "auto"
    vision_accel_std: float | None = None
    sim_dt: float = 0.002
    solver: str = "sap"
    projection: str | None = None
    admm_iter: int = 4
    end_on_qp_step: bool = False
    horizon: int = 5
    min_resim_dt: float | None = 0.0
    resim_lead: float | Literal["auto"] | None = "auto"
    acceleration_feedforward: bool = True
    world: str = "panda"
    torque_limits: bool = True
    extrapolate_vision: bool = True
    ball_on_table: bool = True
    force_sensing: bool = True
    force_noise_std: float = 1.0
    force_threshold: float = 3.0
    plan_on_new_sample: bool = True
    reference: str = "hold"
    ball_velocity_weight: float | None = None
    ball_position_weight: float | None = None
    phase2_ee_weight: float = 5000.0
    phase2_ball_weight: float | None = None
    planning_latency: float | None = None
    min_command_delay: float | Literal["auto"] | None = "auto"
    latency_compensation: bool | Literal["auto"] = "auto"
    input_limit: float | None = 5.0
    gait: GaitOptions | None = None
    center: tuple[float, float] = (0.55, 0.0)
    radius: float = 0.1
    lead_angle_deg: float | None = None
    max_target_distance: float | None = None
    line_dy: float = 0.05
    line_distance: float = 0.1
    line_steer: bool | None = None
    band: float = 0.02
    impedance: Any = None
    seed: int = 0
    settle_time: float = 0.0
    tuning: str = "auto"
    laps: int = 1
    trajectory: TrajectoryOptions | None = None
    robustness: RobustnessOptions | None = None

    def __post_init__(self) -> None:
        check_field_types(self)  # strict types first: no "0.1", True or 5.0 for an int
        if self.tuning != "auto" and self.tuning not in TUNINGS:
            raise C3ValueError(f"tuning must be 'auto' or one of {sorted(TUNINGS)}, got "
                               f"{self.tuning!r}")
        if not (isinstance(self.noise_std, (int, float)) and not isinstance(self.noise_std, bool)
                and self.noise_std >= 0):
            raise C3ValueError(f"noise_std must be a number >= 0 [m], got {self.noise_std!r}")
        tuned = TUNINGS[self.resolved_tuning]
        for name in TUNED_FIELDS:
            if getattr(self, name) is None:
                object.__setattr__(self, name, _tuned(tuned, name, self._task_kind))
        if self.min_command_delay == "auto":
            object.__setattr__(self, "min_command_delay", tuned["command_delay"])
        if self.resim_lead == "auto":
            object.__setattr__(self, "resim_lead", _tuned(tuned, "resim_lead", self._task_kind))
        if self.latency_compensation == "auto":
            object.__setattr__(self, "latency_compensation", bool(_tuned(
                {"latency_compensation": False, **tuned}, "latency_compensation", self._task_kind)))
        if not isinstance(self.gait, GaitOptions):
            raise C3ValueError(f"gait must be a GaitOptions or None, got {self.gait!r}")
        for name in ("ball_position_weight", "phase2_ball_weight"):
            w = getattr(self, name)
            if w is not None and not (isinstance(w, (int, float)) and not isinstance(w, bool)
                                      and math.isfinite(w) and w >= 0):
                raise C3ValueError(f"{name} must be a finite number >= 0 or None, got {w!r}")
        for name in ("lead_angle_deg", "ball_velocity_weight"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v)):
                raise C3ValueError(f"{name} must be a finite number or None, got {v!r}")
        for name in ("stop_after_lap", "end_on_qp_step", "acceleration_feedforward",
                     "torque_limits", "extrapolate_vision", "ball_on_table", "plan_on_new_sample",
                     "force_sensing", "latency_compensation"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise C3ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.line_steer is not None and not isinstance(self.line_steer, (bool, np.bool_)):
            raise C3ValueError(f"line_steer must be True, False or None, got "
                               f"{self.line_steer!r}")
        if self.reference not in ("hold", "extrapolate"):
            raise C3ValueError(f"reference must be 'hold' or 'extrapolate', got "
                               f"{self.reference!r}")
        if self.world not in ("panda", "model"):
            raise C3ValueError(f"world must be 'panda' or 'model', got {self.world!r}")
        if self.n_balls not in PLANT_FOR_BALLS:
            raise C3ValueError(f"n_balls must be 1, 2 or 3, got {self.n_balls!r}")
        if self.duration is not None and not (self.duration > 0):
            raise C3ValueError(f"duration must be > 0 [s], got {self.duration!r}")
        for name in ("sim_dt", "vision_rate_hz", "band", "radius"):
            if not (getattr(self, name) > 0):
                raise C3ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        d = self.min_command_delay
        if d is not None and not (isinstance(d, (int, float)) and not isinstance(d, bool)
                                  and math.isfinite(d) and d > 0):
            raise C3ValueError(f"min_command_delay must be > 0 [s], None or 'auto', got {d!r}")
        if self.planning_latency is not None and not (self.planning_latency > 0):
            raise C3ValueError(f"planning_latency must be > 0 [s] or None, got "
                               f"{self.planning_latency!r}")
        if self.vision_filter not in ("auto", "none", "lowpass", "kalman"):
            raise C3ValueError(f"vision_filter must be 'auto', 'none', 'lowpass' or 'kalman', "
                               f"got {self.vision_filter!r}")
        for name in ("force_noise_std", "force_threshold"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    and v >= 0):
                raise C3ValueError(f"{name} must be a finite number >= 0 [N], got {v!r}")
        if not (self.vision_accel_std > 0):
            raise C3ValueError(f"vision_accel_std must be > 0 [m/s²], got "
                               f"{self.vision_accel_std!r}")
        d = self.max_target_distance
        if d is not None and not (math.isfinite(d) and d > 0):
            raise C3ValueError(f"max_target_distance must be > 0 [m] or None, got {d!r}")
        r = self.min_resim_dt
        if r is not None and not (isinstance(r, (int, float)) and not isinstance(r, bool)
                                  and math.isfinite(r) and r >= 0):
            raise C3ValueError(f"min_resim_dt must be >= 0 [s] or None, got {r!r}")
        r = self.resim_lead
        if r is not None and not (isinstance(r, (int, float)) and not isinstance(r, bool)
                                  and math.isfinite(r) and r >= 0):
            raise C3ValueError(f"resim_lead must be >= 0 [s], None or 'auto', got {r!r}")
        if not self.settle_time >= 0:
            raise C3ValueError("settle_time must be >= 0")
        if isinstance(self.laps, bool) or not isinstance(self.laps, int) or self.laps < 1:
            raise C3ValueError(f"laps must be an int >= 1, got {self.laps!r}")
        if self.trajectory is not None and self.n_balls != 1:
            raise C3ValueError(f"trajectory is for one ball, n_balls is {self.n_balls}")
        if self.robustness is not None and self.world != "panda":
            raise C3ValueError(f"robustness changes the simulated Panda world; world is "
                               f"{self.world!r}")

    @property
    def _task_kind(self) -> str:
        """"lap" (the state-based circle), "line" (the multi-ball line task) or "trajectory"
        (a time-based ``trajectory``): which of the tunings' keys apply (:func:`_tuned`)."""
        if self.trajectory is not None:
            return "trajectory"
        return "line" if self.n_balls > 1 else "lap"

    @property
    def resolved_tuning(self) -> str:
        """The tuning in use: ``tuning``, or for "auto" with one ball and camera noise
        "vision" (with or without the force-sensed step 5: at 1 mm noise and fixed 4 ms it
        laps in 20.7-21.5 s at 100 % in the band force-sensed, seeds 0-4, where "noisy" does
        not complete the lap in 60 s; docs/BENCHMARKS.md, "Franka ball lap by seed"),
        "nominal" otherwise."""
        if self.tuning != "auto":
            return self.tuning
        if self.n_balls == 1 and self.noise_std > 0:
            return "vision"
        return "nominal"

    @property
    def plant_name(self) -> str:
        return PLANT_FOR_BALLS[self.n_balls]

    @property
    def plant_params(self) -> dict[str, Any]:
        """Parameters of the planning plant (the line task's start spacing)."""
        return {"spacing": LINE_SPACING[self.n_balls]} if self.n_balls > 1 else {}

    @property
    def time_limit(self) -> float:
        if self.duration is not None:
            return float(self.duration)
        if self.trajectory is not None:
            return self.trajectory.duration
        return 60.0 * self.laps if self.n_balls == 1 else 30.0


@dataclass(frozen=True)
class FrankaBallLog:
    """What happened (arrays per simulator step ``t`` or per plan ``plan_t``).

    Attributes:
        t: (T,) simulated times [s].
        q_arm: (T, 7) joint angles [rad].
        ee: (T, 3) end-effector centre [m] (true).
        balls: (T, k, 3) true ball centres [m]; ball_quat: (T, k, 4) (x, y, z, w).
        balls_est: (T, k, 3) estimated ball centres [m].
        ee_ball_gap: (T, k) signed distance end effector-ball surfaces [m] (true contact if <= 0).
        ball_targets: (T, k, 2) the target generator's desired ball (x, y), held between plans.
        error: (T,) tracking error [m]: distance of the ball to the circle (1 ball), largest
            |x − x_c| over the balls (line).
        plan_t: (P,) plan start times; plan_active_t: (P,) times their commands took effect.
        plan_time: (P,) measured wall time of each Algorithm 3 cycle [s] (steps 2-5).
        solve_time: (P,) Δt_c, wall time of steps 2-3 [s].
        plan_status: (P,) C3 status codes; plan_phase: (P,) heuristic phase.
        plan_ee_path: (P, N+1, 3) C3's planned end-effector positions.
        plan_ee_force: (P, 3) desired end-effector force from λ_d [N].
        plan_contact: (P, k) C3's planned end effector-ball contact at the first knot (force
            > ``contact_threshold``).
        plan_x_d: (P, 3) x_d's end-effector position.
        plan_resim_dt: (P,) step 5's interval h [s] (x_d is the plan's state h after the
            state it started from).
        plan_lookahead: (P,) how far ahead of ``plan_t`` the plan's start state was predicted
            [s] (``latency_compensation``; 0: the estimate at ``plan_t``). x_d is the state
            expected at ``plan_t + plan_lookahead + plan_resim_dt``.
        wall_time: total wall time of the run [s].
        info: options, plant, lap/completion data, ``sim_error`` (the simulator's error message
            if it failed; the log then ends at that step).
    """

    t: np.ndarray
    q_arm: np.ndarray
    ee: np.ndarray
    balls: np.ndarray
    ball_quat: np.ndarray
    balls_est: np.ndarray
    ee_ball_gap: np.ndarray
    ball_targets: np.ndarray
    error: np.ndarray
    plan_t: np.ndarray
    plan_active_t: np.ndarray
    plan_time: np.ndarray
    solve_time: np.ndarray
    plan_status: np.ndarray
    plan_phase: np.ndarray
    plan_ee_path: np.ndarray
    plan_ee_force: np.ndarray
    plan_contact: np.ndarray
    plan_x_d: np.ndarray
    wall_time: float
    info: dict[str, Any] = field(default_factory=dict)
    plan_resim_dt: np.ndarray | None = None
    plan_lookahead: np.ndarray | None = None


def franka_layout(plant: Any) -> BallTaskLayout:
    """The :class:`BallTaskLayout` of ``franka-ball`` or ``franka-balls-k``."""
    from plants.models.franka_ball import BALL_RADIUS, EE_RADIUS

    m = float(plant.params.ee_mass)
    if plant.name == "franka-ball":
        return BallTaskLayout((0, 1, 2), (10, 11, 12), ((3, 4),), (5,), BALL_RADIUS, m,
                              EE_RADIUS, BALL_RADIUS, ((13, 14),))
    k = int(plant.num_balls)
    nq = 2 * k + 3
    return BallTaskLayout((2 * k, 2 * k + 1, 2 * k + 2), (nq + 2 * k, nq + 2 * k + 1,
                                                          nq + 2 * k + 2),
                          tuple((2 * i, 2 * i + 1) for i in range(k)), (None,) * k,
                          BALL_RADIUS, m, EE_RADIUS, BALL_RADIUS,
                          tuple((nq + 2 * i, nq + 2 * i + 1) for i in range(k)))


def _controller(plant: Any, Q: np.ndarray, options: C3Options, N: int,
                input_limit: float | None = None) -> C3:
    d = plant.defaults
    ctrl = C3(plant.lcs(d.x0, np.zeros(plant.n_u)), Q, d.R, d.G, d.U, N=N, x_des=d.x_goal,
              QN=Q, options=options)
    u_lo, u_hi = d.u_lower, d.u_upper
    if input_limit is not None:
        u_lo = np.maximum(u_lo, -input_limit)
        u_hi = np.minimum(u_hi, input_limit)
    ctrl.set_bounds(x_lower=d.x_lower, x_upper=d.x_upper, u_lower=u_lo, u_upper=u_hi)
    return ctrl


def _ball_velocity_indices(plant: Any, layout: BallTaskLayout) -> list[int]:
    nq = plant.n_q
    if plant.name == "franka-ball":
        return [13, 14, 15]
    return [nq + i for i in range(2 * layout.n_balls)]


def build_planner(plant: Any, o: FrankaBallOptions) -> tuple[Algorithm3Planner, C3Options]:
    """Algorithm 3 on ``plant`` with the task's target generator and per-phase costs."""
    d = plant.defaults
    layout = franka_layout(plant)
    # resimulate_plan off: Algorithm 3 uses the plan, not its re-simulated cost (eq. 14 along
    # the rollout), which cost an LCP per knot every cycle (the plan is the same either way)
    opts = C3Options(projection=o.projection or d.projection, admm_iter=o.admm_iter,
                     rho=d.rho, rho_scale=d.rho_scale, end_on_qp_step=o.end_on_qp_step,
                     resimulate_plan=False)
    q = np.diag(d.Q).copy()
    q[_ball_velocity_indices(plant, layout)] = o.ball_velocity_weight
    if o.ball_position_weight is not None:
        q[[i for xy in layout.ball_xy for i in xy]] = o.ball_position_weight
    q2 = q.copy()
    q2[list(layout.ee_position)] = o.phase2_ee_weight
    if o.phase2_ball_weight is not None:
        q2[[i for xy in layout.ball_xy for i in xy]] = o.phase2_ball_weight
    ctrls = [_controller(plant, np.diag(q), opts, o.horizon, o.input_limit),
             _controller(plant, np.diag(q2), opts, o.horizon, o.input_limit)]
    template = np.array(d.x_goal, dtype=float)
    if o.trajectory is not None:
        target: Any = TimedPathTarget(template, layout,
                                      TimedPath(o.trajectory, layout.balls(d.x0)[0, :2]), o.gait)
    elif o.n_balls == 1:
        target = CircleTarget(template, layout, tuple(o.center), o.radius,
                                   o.lead_angle_deg, o.gait, o.max_target_distance)
    else:
        y0 = layout.balls(d.x0)[:, 1]
        # a ball is done (no longer pushed) 2 cm past its own goal
        steer = LINE_STEER[o.n_balls] if o.line_steer is None else o.line_steer
        target = LineTarget(template, layout, x_c=o.center[0], dy=o.line_dy, y_start=y0,
                            y_end=y0 + o.line_distance + 0.02, gait=o.gait,
                            phase1_steer=LINE_STEER_GAINS if steer else None)
    period = 1.0 / o.vision_rate_hz
    h = period if o.min_resim_dt is None else o.min_resim_dt
    if o.min_command_delay is not None:
        h = max(h, o.min_command_delay)
    lead = period if o.resim_lead is None else o.resim_lead
    kw: dict[str, Any] = {}
    if o.planning_latency is not None:
        kw["clock"] = FixedLatencyClock(o.planning_latency)
    return Algorithm3Planner(plant, ctrls, target, layout, min_resim_dt=h, resim_lead=lead,
                             **kw), opts


def _quat_to_R(qxyzw: np.ndarray) -> np.ndarray:
    x, y, z, w = qxyzw
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def _estimate_vector(plant: Any, layout: BallTaskLayout, ee_p: np.ndarray, ee_v: np.ndarray,
                     est: list[Any], t: float | None = None,
                     ball_on_table: bool = True) -> np.ndarray:
    """x̂ of the simplified model from the end-effector state and the vision estimates; with
    ``t``, ball positions are extrapolated at constant velocity from the sample time to t."""
    if t is not None:
        est = [dataclasses.replace(s, position=s.position + s.velocity * max(0.0, t - s.t))
               for s in est]
    x = np.zeros(plant.n_x)
    x[list(layout.ee_position)] = ee_p
    x[list(layout.ee_velocity)] = ee_v
    if plant.name == "franka-ball":
        s = est[0]
        x[3:6] = s.position
        if ball_on_table:  # the ball centre lies on the plane z = r (as the cameras' "plane"
            x[5] = layout.ball_radius  # depth method assumes); z noise would fake contacts
            x[15] = 0.0
        w, qx, qy, qz = s.orientation
        x[6:10] = (qx, qy, qz, w)
        x[13:16] = s.velocity
        R = _quat_to_R(np.array([qx, qy, qz, w]))
        x[16:19] = R.T @ s.angular_velocity  # the model's ω is in the ball frame
        return x
    nq = plant.n_q
    for i, s in enumerate(est):
        x[2 * i:2 * i + 2] = s.position[:2]
        x[nq + 2 * i:nq + 2 * i + 2] = s.velocity[:2]
    return x


def _default_vision(o: FrankaBallOptions, i: int) -> Any:
    # lazy: estimators -> c3mpc (module docstring)
    from estimators import BallTrackerOptions, EmulatedBallVision
    from plants.models.franka_ball import BALL_RADIUS

    f = _vision_filter(o)
    rng = np.random.default_rng([o.seed, i])
    kw: dict[str, Any] = dict(filter=f, radius=BALL_RADIUS)
    if f == "none":
        kw["velocity_cutoff_hz"] = None
    if f == "kalman" and o.noise_std > 0:
        kw["kalman_measurement_std"] = o.noise_std
        kw["kalman_accel_std"] = o.vision_accel_std
    opts = BallTrackerOptions(**kw)
    return EmulatedBallVision(opts, rate_hz=o.vision_rate_hz, noise_std=o.noise_std, rng=rng)


def _vision_filter(o: FrankaBallOptions) -> str:
    """The filter ``vision_filter="auto"`` stands for (see :class:`FrankaBallOptions`)."""
    if o.vision_filter != "auto":
        return o.vision_filter
    return "none" if o.noise_std == 0 else "kalman"


def task_gains(o: FrankaBallOptions) -> Any:
    """The impedance gains used when ``o.impedance`` is None: the authors' hardware gains with
    the tuning's translational stiffness and damping ratio (:data:`TUNINGS`); the force
    feed-forward only for one ball (the paper's multi-ball τ_ff = 0)."""
    from plants.impedance import ImpedanceGains

    t = TUNINGS[o.resolved_tuning]
    return ImpedanceGains(translational_stiffness=t["translational_stiffness"],
                          damping_ratio=t["damping_ratio"], feedforward=o.n_balls == 1)


def make_world(o: FrankaBallOptions, gains: Any, plant: Any, layout: BallTaskLayout) -> Any:
    """The simulated world of the task at the plant's start state: the full Panda in
    :mod:`plants.sim` (``o.world == "panda"``) or the simplified LCS (``"model"``).

    The world takes impedance commands (``world.cmd``) and is stepped by the closed loop here
    and by the deployment twin (``hardware/twin.py``).
    """
    x0 = plant.defaults.x0
    if o.world == "panda":
        return _PandaWorld(o, gains, layout.ee(x0), layout.balls(x0))
    return _ModelWorld(o, gains, plant, layout)


def run_franka_ball(options: FrankaBallOptions | None = None, *,
                    vision_factory: Callable[[FrankaBallOptions, int], Any] | None = None,
                    progress: bool = False, stream: Any = None,
                    on_plan: Callable[[float, Plan, dict[str, Any]], None] | None = None,
                    should_stop: Callable[[], bool] | None = None) -> FrankaBallLog:
    """Run the closed loop (module docstring) and return its :class:`FrankaBallLog`.

    Args:
        options: :class:`FrankaBallOptions`.
        vision_factory: ``f(options, ball_index) -> vision`` with ``vision.step(true_position
            (3,), t) -> state`` (``.position``, ``.velocity``, ``.angular_velocity``,
            ``.orientation`` (w, x, y, z), ``.valid``); default
            ``estimators.EmulatedBallVision``.
        progress: print a progress line to ``stream`` (default stderr).
        on_plan: optional callback ``on_plan(t, plan, frame)`` after every plan (live
            visualization); ``frame`` holds ``q_arm``, ``balls``, ``ball_quat``, ``ee`` and
            ``plan_ee`` (C3's planned end-effector positions (N+1, 3)).
        should_stop: optional ``should_stop() -> bool`` checked after every simulator step
            (e.g. Ctrl-C); when it returns True the run ends there and the log covers the
            steps so far (``info["interrupted"]`` is True).
    """
    from plants import load_plant

    o = options or FrankaBallOptions()
    stream = sys.stderr if stream is None else stream
    plant = load_plant(o.plant_name, **o.plant_params)
    layout = franka_layout(plant)
    planner, c3_options = build_planner(plant, o)
    k = layout.n_balls
    x0 = plant.defaults.x0
    ee0 = layout.ee(x0)
    balls0 = layout.balls(x0)
    gains = o.impedance if o.impedance is not None else task_gains(o)
    world = make_world(o, gains, plant, layout)
    cmd = world.cmd
    N_ARM = 7
    vis = [(vision_factory or _default_vision)(o, i) for i in range(k)]

    # warm-up: compile kernels before the clock matters (not part of the run)
    planner.plan(x0, 0.0)
    planner.u_prev = np.zeros(plant.n_u)

    n_steps = int(math.ceil(o.time_limit / o.sim_dt))
    T = n_steps + 1
    t_log = np.empty(T)
    q_log = np.empty((T, N_ARM))
    ee_log = np.empty((T, 3))
    b_log = np.empty((T, k, 3))
    bq_log = np.empty((T, k, 4))
    be_log = np.full((T, k, 3), np.nan)
    gap_log = np.empty((T, k))
    tgt_log = np.full((T, k, 2), np.nan)
    plans: list[tuple] = []
    pending: tuple[float, dict[str, np.ndarray]] | None = None
    next_plan_t = o.settle_time
    tgt = np.full((k, 2), np.nan)
    est: list[Any] = [None] * k
    lap_angle = 0.0
    prev_angle = None
    lap_time = None
    laps_done = False
    path = planner.target.path if o.trajectory is not None else None
    done_time = None
    wall0 = time.perf_counter()
    last_print = wall0
    i_end = n_steps
    last_sample_t = -math.inf
    sim_error = None
    interrupted = False
    r_sum = layout.ee_radius + layout.ball_radius
    sensing, force_sensor, pair_k, sensed_plans = None, None, 0.0, 0
    if o.force_sensing and k == 1 and o.world == "panda":
        from estimators import EmulatedForceSensor
        from plants.franka_sim import FrankaSceneOptions
        from plants.models.franka_ball import BALL_MASS

        k_sphere = FrankaSceneOptions().stiffness  # end effector and ball: equal, in series
        pair_k = k_sphere / 2.0
        sensing = ForceSensedGap(pair_stiffness=pair_k, threshold=o.force_threshold,
                                 ball_mass=BALL_MASS)
        force_sensor = EmulatedForceSensor(o.force_noise_std,
                                           np.random.default_rng([o.seed, 7919]))
    latency = _LatencyCompensation(o, plant, layout, gains) if o.latency_compensation else None
    for i in range(n_steps + 1):
        t = world.t
        p_ee, v_ee = world.ee_state()
        balls, quats = world.balls()
        t_log[i], q_log[i], ee_log[i], b_log[i] = t, world.q_arm(), p_ee, balls
        bq_log[i] = quats
        gap_log[i] = np.linalg.norm(balls - p_ee, axis=1) - r_sum
        for b in range(k):
            est[b] = vis[b].step(balls[b], t)
            be_log[i, b] = est[b].position
        if o.n_balls == 1:  # lap progress of the true ball
            ang = math.atan2(balls[0, 0] - o.center[0], balls[0, 1] - o.center[1])
            if prev_angle is not None:
                lap_angle += (ang - prev_angle + math.pi) % (2 * math.pi) - math.pi
            prev_angle = ang
            if lap_time is None and lap_angle >= 2 * math.pi:
                lap_time = t
            laps_done = lap_angle >= 2 * math.pi * o.laps
        else:
            adv = balls[:, 1] - balls0[:, 1]
            on_line = np.all(np.abs(balls[:, 0] - o.center[0]) <= o.band)
            if done_time is None and np.all(adv >= o.line_distance) and on_line:
                done_time = t
        if pending is not None and t >= pending[0] - 1e-12:
            cmd.update(pending[1])
            pending = None
        fresh = max(s.t for s in est) > last_sample_t
        if (t >= next_plan_t - 1e-12 and all(s.valid for s in est)
                and (fresh or not o.plan_on_new_sample)):
            last_sample_t = max(s.t for s in est)
            x_hat = _estimate_vector(plant, layout, p_ee, v_ee, est,
                                     t if o.extrapolate_vision else None, o.ball_on_table)
            x5 = None
            if sensing is not None:
                f_meas = force_sensor.step(pair_k * max(-gap_log[i, 0], 0.0))
                x5 = sensing.step5_state(x_hat, f_meas, layout)
                sensed_plans += f_meas > sensing.threshold
            ahead = 0.0
            if latency is not None:
                plan, delay, ahead = latency.plan(planner, x_hat, x5, t, cmd)
            else:
                plan = planner.plan(x_hat, t, x_resim=x5)
                delay = (plan.total_time if o.min_command_delay is None
                         else max(plan.total_time, o.min_command_delay))
            steps_late = max(1, int(math.ceil(delay / o.sim_dt - 1e-9)))
            t_act = t + steps_late * o.sim_dt
            if plan.status.ok:
                new = {"p": plan.x_d[list(layout.ee_position)].copy(),
                       "v": plan.x_d[list(layout.ee_velocity)].copy(),
                       "f": plan.ee_force.copy(), "a": plan.u[:3].copy(), "t0": t_act}
                if not (np.all(np.isfinite(new["p"])) and np.all(np.isfinite(new["f"]))):
                    new = None
            else:
                new = None
            if new is not None:
                pending = (t_act, new)
            next_plan_t = t_act
            tgt = plan.ball_targets
            ee_idx = list(layout.ee_position)
            lam_force = _planned_contact(plan, planner, layout)
            plans.append((t, t_act, plan.total_time, plan.dt_c, int(plan.status), plan.phase,
                          plan.plan_x[:, ee_idx].copy(), plan.ee_force.copy(), lam_force,
                          plan.x_d[ee_idx].copy(), plan.dt_resim, ahead))
            if on_plan is not None:
                on_plan(t, plan, {"q_arm": world.q_arm(), "balls": balls, "ball_quat": quats,
                                  "ee": p_ee, "plan_ee": plans[-1][6]})
        tgt_log[i] = tgt
        stop = (o.n_balls == 1 and o.stop_after_lap and laps_done and path is None) or (
            o.n_balls > 1 and done_time is not None)
        if should_stop is not None and should_stop():
            interrupted = stop = True
        if i == n_steps or stop:
            i_end = i
            break
        try:
            world.step()
        except Exception as e:  # noqa: BLE001 - e.g. plants.errors.ContactSolveError
            sim_error = f"{type(e).__name__}: {e}"
            i_end = i
            break
        if progress and time.perf_counter() - last_print > 1.0:
            last_print = time.perf_counter()
            extra = (f"lap {math.degrees(lap_angle):5.0f} deg" if o.n_balls == 1 else
                     f"advance {np.array2string(balls[:, 1] - balls0[:, 1], precision=3)} m")
            stream.write(f"\r  t = {t:6.2f} s  plans {len(plans):5d}  {extra}   ")
            stream.flush()
    if progress:
        stream.write("\n")
    n = i_end + 1
    sl = slice(0, n)
    if path is not None:
        err = path.tracking_error(t_log[sl], b_log[sl, 0, :2])
    elif o.n_balls == 1:
        err = np.abs(np.hypot(b_log[sl, 0, 0] - o.center[0], b_log[sl, 0, 1] - o.center[1])
                     - o.radius)
    else:
        err = np.max(np.abs(b_log[sl, :, 0] - o.center[0]), axis=1)
    P = len(plans)
    col = list(zip(*plans)) if P else [[]] * 12
    N1 = o.horizon + 1
    info = {
        "options": _options_dict(o), "plant": o.plant_name, "n_x": plant.n_x,
        "n_lambda": plant.n_lambda, "c3_options": {k_: v_ for k_, v_ in
                                                  c3_options.to_dict().items()
                                                  if k_ != "extra"},
        "impedance": dataclasses.asdict(gains), "lap_time_s": lap_time,
        "lap_angle_deg": math.degrees(lap_angle), "line_done_time_s": done_time,
        "ball_start": balls0.tolist(), "ee_start": ee0.tolist(), "sim_error": sim_error,
        "interrupted": interrupted,
        "simulated": world.description,
        "torque_saturated_steps": getattr(world, "saturated_steps", None),
        "force_sensing": sensing is not None, "force_sensed_plans": sensed_plans,
        "latency_predicted_plans": latency.predicted_plans if latency is not None else 0,
        "trajectory": describe_trajectory(path) if path is not None else None,
        "time_limit_s": o.time_limit,
    }
    return FrankaBallLog(
        t=t_log[sl], q_arm=q_log[sl], ee=ee_log[sl], balls=b_log[sl], ball_quat=bq_log[sl],
        balls_est=be_log[sl], ee_ball_gap=gap_log[sl], ball_targets=tgt_log[sl], error=err,
        plan_t=np.array(col[0], float), plan_active_t=np.array(col[1], float),
        plan_time=np.array(col[2], float), solve_time=np.array(col[3], float),
        plan_status=np.array(col[4], int), plan_phase=np.array(col[5], int),
        plan_ee_path=np.array(col[6], float).reshape(P, N1, 3),
        plan_ee_force=np.array(col[7], float).reshape(P, 3),
        plan_contact=np.array(col[8], float).reshape(P, k),
        plan_x_d=np.array(col[9], float).reshape(P, 3),
        plan_resim_dt=np.array(col[10], float), plan_lookahead=np.array(col[11], float),
        wall_time=time.perf_counter() - wall0, info=info)


class _LatencyCompensation:
    """``FrankaBallOptions.latency_compensation`` in the loop (:mod:`c3mpc.tasks.latency`)."""

    def __init__(self, o: FrankaBallOptions, plant: Any, layout: BallTaskLayout, gains: Any):
        self.o, self.plant, self.layout, self.gains = o, plant, layout, gains
        self.reference = float(TUNINGS[o.resolved_tuning]["command_delay"])
        """L_0: the command delay the tuning was made for [s]."""
        floor = o.min_command_delay if o.min_command_delay is not None else o.sim_dt
        self.delays = DelayEstimator(floor, o.sim_dt)
        self.period = 1.0 / o.vision_rate_hz
        self.emulated = o.planning_latency is not None
        self.predicted_plans = 0

    def plan(self, planner: Algorithm3Planner, x_hat: np.ndarray, x5: np.ndarray | None,
             t: float, cmd: dict[str, Any]) -> tuple[Plan, float, float]:
        """One Algorithm 3 cycle from the estimate at t: (plan, command delay [s], how far
        ahead of t the plan started [s])."""
        o = self.o
        L = self.delays.expected()
        ahead = L - self.reference
        if ahead <= 1e-9:  # the tuning's own latency: Algorithm 3 as tuned
            ahead = 0.0
            plan = planner.plan(x_hat, t, x_resim=x5)
            delay = (plan.total_time if o.min_command_delay is None
                     else max(plan.total_time, o.min_command_delay))
        else:
            w0 = time.perf_counter()
            g = self.gains
            p_r, v_r = _reference(cmd, t, o.reference == "extrapolate")
            a_ff = cmd["a"] if o.acceleration_feedforward else np.zeros(3)
            f_ff = cmd["f"] if g.feedforward else np.zeros(3)
            x_p = predict_under_command(self.plant, self.layout, x_hat, p_r, v_r, a_ff, f_ff,
                                        g.translational_stiffness, g.translational_damping,
                                        ahead)
            x5_p = None if x5 is None else x_p + (x5 - x_hat)
            # the prediction is part of the cycle on the wall clock (emulated latency: not)
            predict_time = 0.0 if self.emulated else time.perf_counter() - w0
            hold = command_hold(L, self.period, o.plan_on_new_sample)
            plan = planner.plan(x_p, t + ahead, x_resim=x5_p, resim_dt=self.reference + hold)
            plan = dataclasses.replace(plan, total_time=plan.total_time + predict_time)
            delay = max(plan.total_time, L)
            self.predicted_plans += 1
        self.delays.record(plan.total_time)
        return plan, delay, ahead


def _initial_command(ee0: np.ndarray) -> dict[str, Any]:
    return {"p": ee0.copy(), "v": np.zeros(3), "f": np.zeros(3), "a": np.zeros(3), "t0": 0.0}


def _reference(cmd: dict[str, Any], t: float, extrapolate: bool) -> tuple[np.ndarray, np.ndarray]:
    """The impedance reference at time t: x_d held, or x_d continued at the planned
    acceleration u_C3 from its activation time (``reference="extrapolate"``)."""
    if not extrapolate:
        return cmd["p"], cmd["v"]
    h = max(0.0, t - cmd["t0"])
    return cmd["p"] + h * cmd["v"] + 0.5 * h * h * cmd["a"], cmd["v"] + h * cmd["a"]


class _PandaWorld:
    """The full Panda + balls in ``plants.sim``, arm torques from eq. (36)."""

    def __init__(self, o: FrankaBallOptions, gains: Any, ee0: np.ndarray, balls0: np.ndarray):
        from plants.franka_sim import EE_FRAME, N_ARM, arm_model, build_franka_ball_scene, solve_ik
        from plants.impedance import TaskSpaceImpedance
        from plants.sim import Simulator

        self.n_arm = N_ARM
        arm = arm_model()
        ee0, balls0 = simulated_start(o.robustness, ee0, balls0)  # model error: the real ball
        q_arm0 = solve_ik(arm, ee0)
        scene_opts = scene_options(o.robustness)
        scene = build_franka_ball_scene(q_arm0, balls0, scene_opts)
        forces = (BallForces(o.robustness, [N_ARM + 6 * i for i in range(len(balls0))],
                             scene_opts.ball_mass, o.sim_dt)
                  if o.robustness is not None else None)
        self.imp = imp = TaskSpaceImpedance(arm, EE_FRAME, gains, q_nullspace=q_arm0)
        _, R0, _, _ = imp.frame_state(q_arm0, np.zeros(N_ARM))
        self.cmd = cmd = _initial_command(ee0)
        acc = o.acceleration_feedforward
        extrapolate = o.reference == "extrapolate"
        limit = np.asarray(arm.effortLimit[:N_ARM], float) if o.torque_limits else None
        self.saturated_steps = 0
        """Simulator steps in which at least one joint torque was clipped (``torque_limits``)."""

        def controller(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
            tau = np.zeros(v.shape[0])
            p_r, v_r = _reference(cmd, t, extrapolate)
            tau_arm = imp.torque(q[:N_ARM], v[:N_ARM], p_r, v_r, R0, cmd["f"],
                                 cmd["a"] if acc else None)
            if limit is not None and np.any(np.abs(tau_arm) > limit):
                self.saturated_steps += 1
                tau_arm = np.clip(tau_arm, -limit, limit)
            tau[:N_ARM] = tau_arm
            if forces is not None:  # table slant, pushes (franka_robustness)
                forces.add(t, tau)
            return tau

        self.sim = Simulator(scene, solver=o.solver, dt=o.sim_dt, controller=controller)
        self.ball_q = [N_ARM + 7 * i for i in range(len(balls0))]
        self.description = (
            "full Panda (example-robot-data URDF, 7 joints, fingers welded) with a spherical end "
            "effector and free-body balls in plants.sim (solver "
            f"{o.solver}, dt {o.sim_dt} s), arm torques from the impedance law")

    @property
    def t(self) -> float:
        return self.sim.t

    def ee_state(self) -> tuple[np.ndarray, np.ndarray]:
        q, v = self.sim.q, self.sim.v
        p, _, lin, _ = self.imp.frame_state(q[:self.n_arm], v[:self.n_arm])
        return p, lin

    def balls(self) -> tuple[np.ndarray, np.ndarray]:
        q = self.sim.q
        return (np.array([q[j:j + 3] for j in self.ball_q]),
                np.array([q[j + 3:j + 7] for j in self.ball_q]))

    def q_arm(self) -> np.ndarray:
        return self.sim.q[:self.n_arm]

    def step(self) -> None:
        self.sim.step()


class _ModelWorld:
    """The simplified model itself as the world (its LCS re-linearised and stepped every
    ``sim_dt``), the end effector a point mass m_ee under the same impedance law with Λ = m_ee I
    (for diagnosis and as the honest fallback when the full simulator is not wanted)."""

    def __init__(self, o: FrankaBallOptions, gains: Any, plant: Any, layout: BallTaskLayout):
        self.o, self.g, self.plant, self.layout = o, gains, plant, layout
        self.x = np.array(plant.defaults.x0, float)
        self.t = 0.0
        ee0 = layout.ee(self.x)
        self.cmd = _initial_command(ee0)
        self.description = (f"the simplified model {plant.name} (LCS re-linearised and stepped "
                            f"every {o.sim_dt} s; end effector = point mass {layout.ee_mass} kg "
                            "under the impedance law)")

    def ee_state(self) -> tuple[np.ndarray, np.ndarray]:
        return self.layout.ee(self.x), self.x[list(self.layout.ee_velocity)].copy()

    def balls(self) -> tuple[np.ndarray, np.ndarray]:
        b = self.layout.balls(self.x)
        if self.plant.name == "franka-ball":
            return b, self.x[6:10][None, :].copy()
        return b, np.tile([0.0, 0.0, 0.0, 1.0], (len(b), 1))

    def q_arm(self) -> np.ndarray:
        return np.full(7, np.nan)

    def step(self) -> None:
        g, c = self.g, self.cmd
        p, v = self.ee_state()
        p_r, v_r = _reference(c, self.t, self.o.reference == "extrapolate")
        a = g.translational_stiffness * (p_r - p) + g.translational_damping * (v_r - v)
        if self.o.acceleration_feedforward:
            a = a + c["a"]
        if g.feedforward:
            a = a + c["f"] / self.layout.ee_mass
        self.x, _ = self.plant.step(self.x, a, dt=self.o.sim_dt)
        self.t += self.o.sim_dt


def _planned_contact(plan: Plan, planner: Algorithm3Planner, layout: BallTaskLayout) -> np.ndarray:
    """(k,) contact force C3 decided between the end effector and each ball at the first knot
    (its projection δ), in LCS units (normal entry, or the sum of the friction-cone edges)."""
    lam0 = np.asarray(plan.decided_lam[0])
    blocks = _ee_ball_lambda_blocks(planner, layout)
    return np.array([float(np.sum(np.maximum(lam0[b], 0.0))) for b in blocks])


def _ee_ball_lambda_blocks(planner: Algorithm3Planner, layout: BallTaskLayout) -> list[Any]:
    cache = getattr(planner, "_ee_blocks", None)
    if cache is not None:
        return cache
    plant = planner.plant
    k = layout.n_balls
    n_c = plant.n_contacts
    n_l = plant.n_lambda
    # contact pairs are listed end effector-ball first (one per ball); λ is grouped per contact
    # in equal blocks for Anitescu, and [γ (n_c); normals (n_c); tangents (n_c·2d)] for
    # Stewart-Trinkle. Use the normal component of each end effector-ball pair.
    if plant.contact_model == "anitescu":
        per = n_l // n_c
        blocks = [slice(i * per, (i + 1) * per) for i in range(k)]
    else:
        blocks = [slice(n_c + i, n_c + i + 1) for i in range(k)]
    planner._ee_blocks = blocks  # type: ignore[attr-defined]
    return blocks


def _options_dict(o: FrankaBallOptions) -> dict[str, Any]:
    d = {}
    for f in dataclasses.fields(o):
        v = getattr(o, f.name)
        if dataclasses.is_dataclass(v):
            v = dataclasses.asdict(v)
        elif isinstance(v, tuple):
            v = list(v)
        d[f.name] = v
    return d


def summarize(log: FrankaBallLog) -> dict[str, Any]:
    """The numbers of ``summary.json`` (see docs/franka-ball.md)."""
    o = log.info["options"]
    band = float(o["band"])
    dt = np.diff(log.t)
    inside = log.error[:-1] <= band
    sim_time = float(log.t[-1] - log.t[0])
    frac = float(min(1.0, np.sum(dt[inside]) / sim_time)) if sim_time > 0 else float("nan")
    # excursions outside the band and whether each came back
    out = ~(log.error <= band)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], out.astype(int), [0]])))
    runs = list(zip(edges[::2], edges[1::2]))
    excursions = [{"start_s": float(log.t[a]), "duration_s": float(log.t[min(b, len(log.t) - 1)]
                                                                    - log.t[a]),
                   "max_error_m": float(log.error[a:b].max()),
                   "returned": bool(b < len(log.t))} for a, b in runs]
    pt = log.plan_time
    gap = log.ee_ball_gap
    contact = gap <= 1e-3
    n_plans = int(pt.size)
    s = {
        "task": "franka-ball",
        "plant": log.info["plant"],
        "n_balls": int(log.balls.shape[1]),
        "simulated": log.info["simulated"],
        "simulated_time_s": sim_time,
        "wall_time_s": float(log.wall_time),
        "band_m": band,
        "band_fraction": frac,
        "max_error_m": float(np.max(log.error)),
        "mean_error_m": float(np.mean(log.error)),
        "final_error_m": float(log.error[-1]),
        "excursions": excursions,
        "left_band": bool(len(runs) > 0),
        "returned_to_band_after_every_exit": bool(all(e["returned"] for e in excursions)),
        "n_plans": n_plans,
        "controller_rate_hz": float(1.0 / np.median(pt)) if n_plans else 0.0,
        "plans_per_simulated_second": float(n_plans / sim_time) if sim_time > 0 else 0.0,
        "plan_time_median_s": float(np.median(pt)) if n_plans else float("nan"),
        "plan_time_p95_s": float(np.percentile(pt, 95)) if n_plans else float("nan"),
        "solve_time_median_s": float(np.median(log.solve_time)) if n_plans else float("nan"),
        "failed_plans": int(np.sum(log.plan_status >= 3)),
        "sim_error": log.info.get("sim_error"),
        "torque_saturated_steps": log.info.get("torque_saturated_steps"),
        "force_sensing": log.info.get("force_sensing"),
        "force_sensed_plans": log.info.get("force_sensed_plans"),
        "lap_completed": log.info.get("lap_time_s") is not None,
        "lap_time_s": log.info.get("lap_time_s"),
        "lap_angle_deg": log.info.get("lap_angle_deg"),
        "line_done_time_s": log.info.get("line_done_time_s"),
        "ball_advance_m": (log.balls[-1, :, 1] - log.balls[0, :, 1]).tolist(),
        "line_distance_m": float(o["line_distance"]),
        "contact_fraction_true": float(np.mean(np.any(contact, axis=1))),
        "contact_fraction_planned": float(np.mean(np.any(log.plan_contact > 1e-6, axis=1)))
        if n_plans else 0.0,
        "n_contact_onsets_true": int(np.sum(np.diff(np.any(contact, axis=1).astype(int)) > 0)),
        "options": o,
        "c3_options": log.info["c3_options"],
        "impedance": log.info["impedance"],
    }
    s.update(_lap_and_push_summary(log, band))
    if s["sim_error"]:
        s["task_completed"] = False
    elif s["trajectory"] is not None:  # time-based: x_d run to its end
        s["task_completed"] = sim_time >= float(log.info["time_limit_s"]) - 1e-9
    elif s["n_balls"] == 1:
        s["task_completed"] = s["lap_completed"]
    else:
        s["task_completed"] = log.info.get("line_done_time_s") is not None
    return s


def _lap_and_push_summary(log: FrankaBallLog, band: float) -> dict[str, Any]:
    """Per-lap statistics (single ball), the time-based trajectory and the push recoveries of
    ``summarize`` (modules :mod:`.franka_ball_laps`, :mod:`.franka_robustness`)."""
    o = log.info["options"]
    traj = log.info.get("trajectory")
    out: dict[str, Any] = {"trajectory": traj, "laps": None, "pushes": None}
    if log.balls.shape[1] == 1:
        if traj is not None:
            path = TimedPath(TrajectoryOptions(**o["trajectory"]), log.balls[0, 0, :2])
            bounds = path.lap_start_times(int(traj["laps"]))
        else:
            bounds = circle_lap_boundaries(log.t, log.balls[:, 0, :2], o["center"])
        laps = lap_statistics(log.t, log.error, band, bounds)
        out["laps"] = laps
        out["laps_completed"] = len(laps)
        if laps:
            times = [lap["time_s"] for lap in laps]
            fracs = [lap["band_fraction"] for lap in laps]
            out["lap_time_mean_s"] = float(np.mean(times))
            out["lap_band_fraction_min"] = float(np.min(fracs))
    r = o.get("robustness")
    if r is not None and r["push_times"]:
        out["pushes"] = push_recovery(log.t, log.error, band, tuple(r["push_times"]))
    return out
