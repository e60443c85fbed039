"""C3 as the deploy loop's planner for ``franka-ball``: a thin adapter around the canonical
Algorithm 3 (:class:`c3mpc.algorithm3.Algorithm3Planner` + :class:`~c3mpc.algorithm3.CircleTarget`,
built by :func:`c3mpc.tasks.franka_ball.build_planner` exactly as the simulated closed loop builds
it: two C3 controllers for the Phase I/II costs, eq. (25) target, Fig. 10 biases).

The adapter only converts:

* in: :class:`~hardware.franka.RobotState` + :class:`~hardware.camera.BallState` → x̂ of the
  ``franka-ball`` simplified model (positions relative to the table surface, ball quaternion
  kept at identity so the ball frame is the world frame, ball ω from rolling without slipping
  ω = e_z × v / r, the ball centre on the table plane z = r and its position optionally
  extrapolated at its velocity from the detection stamp to now, as the closed loop's
  ``ball_on_table`` and ``extrapolate_vision``);
* out: :class:`~c3mpc.algorithm3.Plan` → :class:`~hardware.safety.Target`: an equilibrium pose
  carries neither velocity nor acceleration, so it sends p_eq = p_d + (B/K) v_d + u_C3 / K;
  with the impedance law K(p_eq − p) − B v = K(p_d − p) + B(v_d − v) + u_C3, i.e. the same
  task-space command as the closed loop's reference (p_d, v_d) with its acceleration
  feed-forward (``acceleration_feedforward``). The desired force is ``Plan.ee_force`` (the
  force the end effector applies on the ball, from λ_d).

**Force-sensed step 5** (``force_sensing``, on by default; docs/franka-ball.md, "Step 5 reads
micrometres"): when the robot state carries ``O_F_ext_hat_K`` (the full FrankaState of
franka_state_controller, or the libfranka transport), Algorithm 3's step 5 re-simulates from
the estimate with the end effector-ball gap read from the contact force, exactly as
``c3mpc run franka-ball`` does in simulation: the normal force is the wrench's force along the
estimated centre line (end effector → ball; libfranka's sign: pushing the ball is positive),
turned into a gap by :class:`c3mpc.tasks.contact_sensing.ForceSensedGap` with
``pair_stiffness`` / ``table_stiffness`` (the simulated scene's by default: calibrate them on
hardware) and ``force_threshold``. A state without the wrench plans from the camera gap.

Like the closed loop (``plan_on_new_sample``) it plans once per new camera sample and holds the
previous target in between; a failed plan keeps the previous target too. The heuristic phase
clock (Phase I 1 s / Phase II 0.5 s) starts at the first plan.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .camera import BallState
from .config import LoadableOptions
from .errors import HardwareValueError
from .franka import RobotState
from .impedance import ImpedanceParams
from .safety import Target

__all__ = ["C3PlannerOptions", "C3Planner", "PLANNER_TUNINGS"]

PLANNER_TUNINGS = ("nominal", "noisy", "vision")
"""The closed loop's tunings the deploy planner accepts (``c3mpc.tasks.franka_ball.TUNINGS``)."""


@dataclass(frozen=True)
class C3PlannerOptions(LoadableOptions):
    """Settings of :class:`C3Planner` (None: the closed loop's ``FrankaBallOptions`` default)."""

    projection: str | None = None
    """C3 projection ("miqp", "lcp", "qp", "admm", "c3plus"); None: the plant's (MIQP)."""
    admm_iter: int | None = None
    """ADMM iterations s; None: the closed loop's (4)."""
    horizon: int | None = None
    """MPC horizon N; None: the paper's 5."""
    center: tuple[float, ...] = (0.55, 0.0)
    """Circle centre (x, y) in the base frame [m]."""
    radius: float = 0.1
    """Circle radius [m]."""
    lead_angle_deg: float | None = None
    """Lead angle α_l of eq. (25) [deg]; None: the tuning's (20° nominal and vision as the
    paper, 15° noisy)."""
    table_height: float = 0.0
    """Table surface z in the base frame [m] (the plant's table is at z = 0)."""
    min_resim_dt: float | None = None
    """Smallest Δt_c [s] of Algorithm 3's step 5; None: the closed loop's
    (``FrankaBallOptions``: the tuning's command delay, 8 ms nominal and vision, 4 ms noisy,
    which the step-5 re-simulation is tuned at; one camera period, 12.5 ms, made the ball run ahead,
    docs/deployment.md, "Bridged loop against the simulated loop")."""
    velocity_lead: bool = True
    """Add (B/K) v_d to the equilibrium (see the module docstring)."""
    acceleration_lead: bool = True
    """Add u_C3 / K to the equilibrium (the closed loop's acceleration feed-forward)."""
    plan_on_new_sample: bool = True
    """Plan only when a new ball detection arrived; hold the previous target otherwise."""
    extrapolate_vision: bool = True
    """Predict the ball from its detection stamp to the plan time at its velocity."""
    ball_on_table: bool = True
    """Use z = table + r for the ball centre in x̂ (the closed loop's ``ball_on_table``: camera
    depth noise cannot fake ball-table penetration)."""
    tuning: str = "nominal"
    """The closed loop's tuning (``FrankaBallOptions.tuning``): "nominal" (noise-free camera),
    "vision" (a noisy camera: the planner is the nominal one, and the tuning's camera filter is
    ``camera: {filter: kalman, kalman_accel_std: 0.3}``; with the force-sensed step 5 the
    deploy configuration for 1 mm noise, docs/deployment.md, "Force-sensed deployment") or
    "noisy" (the 1 mm-noise tuning found with force sensing in the simulated loop, K = 3000,
    ζ = 0.7; camera filter 0.02)."""
    force_sensing: bool = True
    """Step 5 reads the end effector-ball gap from ``O_F_ext_hat_K`` when the robot state
    carries it (module docstring)."""
    pair_stiffness: float = 5e5
    """End effector-ball contact stiffness [N/m] (the simulated scene's: two 1e6 N/m spheres
    in series; calibrate on hardware)."""
    table_stiffness: float = 4.9e5
    """The ball's sink into the table per newton of load [N/m] (regressed on the simulated
    scene; :class:`~c3mpc.tasks.contact_sensing.ForceSensedGap`)."""
    force_threshold: float = 3.0
    """Normal force below which no contact is declared [N] (3 σ of a 1 N estimate)."""

    def __post_init__(self) -> None:
        if not (self.radius > 0 and (self.lead_angle_deg is None
                                     or 0 < self.lead_angle_deg < 180)):
            raise HardwareValueError("C3PlannerOptions: radius must be > 0, lead_angle_deg in "
                                     "(0, 180)")
        if self.min_resim_dt is not None and not (self.min_resim_dt >= 0):
            raise HardwareValueError("C3PlannerOptions.min_resim_dt must be >= 0 [s] or None")
        if self.tuning not in PLANNER_TUNINGS:
            raise HardwareValueError(f"C3PlannerOptions.tuning must be one of "
                                     f"{list(PLANNER_TUNINGS)}, got {self.tuning!r}")
        for name in ("pair_stiffness", "table_stiffness"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise HardwareValueError(f"C3PlannerOptions.{name} must be a positive number "
                                         f"[N/m], got {v!r}")
        if not (isinstance(self.force_threshold, (int, float)) and self.force_threshold >= 0):
            raise HardwareValueError(f"C3PlannerOptions.force_threshold must be >= 0 [N], got "
                                     f"{self.force_threshold!r}")
        if len(self.center) != 2:
            raise HardwareValueError(f"C3PlannerOptions.center must be (x, y), got "
                                     f"{self.center!r}")


class C3Planner:
    """Algorithm 3 on the ``franka-ball`` simplified model, as a
    :class:`~hardware.planner.Planner` (module docstring).

    Args:
        options: :class:`C3PlannerOptions`.
        impedance: the robot controller's gains (the equilibrium lead uses K and B).
        time_scale: the robot clock's rate against the wall clock (``DeployOptions.time_scale``;
            1 on a robot): step 5's Δt_c, measured on the wall clock, is scaled to robot
            seconds.
    """

    def __init__(self, options: C3PlannerOptions | None = None,
                 impedance: ImpedanceParams | None = None, time_scale: float = 1.0):
        from c3mpc.tasks.franka_ball import FrankaBallOptions, build_planner, franka_layout
        from plants import load_plant
        from plants.models.franka_ball import BALL_RADIUS

        self.options = o = options or C3PlannerOptions()
        imp = impedance or ImpedanceParams()
        self._k = imp.translational_stiffness
        self._b_over_k = imp.translational_damping / imp.translational_stiffness  # [s]
        # the simulated loop's planner (gait, step-5 floor and lead, lead angle: the tuning's),
        # rehearsed on the simulated clock through the bridge (tests/test_hardware_lockstep.py)
        kw: dict[str, Any] = {"center": tuple(o.center), "radius": o.radius}
        for name in ("lead_angle_deg", "min_resim_dt"):  # None: the closed loop's tuned value
            if getattr(o, name) is not None:
                kw[name] = getattr(o, name)
        if o.projection is not None:
            kw["projection"] = o.projection
        if o.admm_iter is not None:
            kw["admm_iter"] = o.admm_iter
        if o.horizon is not None:
            kw["horizon"] = o.horizon
        self.task_options = FrankaBallOptions(n_balls=1, tuning=o.tuning, **kw)
        self.plant = load_plant("franka-ball")
        self.layout = franka_layout(self.plant)
        self.algorithm3, self.c3_options = build_planner(self.plant, self.task_options)
        if time_scale != 1.0:  # a slowed rehearsal: Δt_c (step 5) in robot seconds
            if not 0 < time_scale <= 1:
                raise HardwareValueError(f"time_scale must be in (0, 1], got {time_scale!r}")
            self.algorithm3.clock = lambda: time.perf_counter() * time_scale
        self.ball_radius = BALL_RADIUS
        from c3mpc.tasks.contact_sensing import ForceSensedGap
        from plants.models.franka_ball import BALL_MASS

        self.sensing = ForceSensedGap(pair_stiffness=o.pair_stiffness,
                                      table_stiffness=o.table_stiffness,
                                      threshold=o.force_threshold, ball_mass=BALL_MASS)
        self.sensed_plans = 0
        """Plans whose step 5 used a sensed contact (force above the threshold)."""
        self.last_normal_force = math.nan
        """The normal force [N] of the newest plan (NaN: no wrench in the state)."""
        self.failures = 0
        self.plans = 0
        self.solve_times: list[float] = []
        self.last_plan: Any = None
        """The newest :class:`c3mpc.algorithm3.Plan`."""
        self._q: np.ndarray | None = None
        self._t0: float | None = None
        self._last_count = -1
        self._last_target: Target | None = None

    # -- conversions ----------------------------------------------------------------------
    def state_vector(self, robot: RobotState, ball: BallState,
                     t: float | None = None) -> np.ndarray:
        """x̂ (19,) of the plant from the measured end effector and ball; with ``t`` (the
        stamp clock, seconds) the ball is extrapolated from its detection stamp to t."""
        lay = self.layout
        z0 = np.array([0.0, 0.0, self.options.table_height])
        bp = np.array(ball.position, dtype=float)
        bv = np.array([ball.velocity[0], ball.velocity[1], 0.0])
        if t is not None:
            bp = bp + bv * max(0.0, t - ball.stamp)
        x = np.zeros(self.plant.n_x)
        x[list(lay.ee_position)] = robot.position - z0
        x[list(lay.ee_velocity)] = robot.velocity
        x[3:6] = bp - z0
        if self.options.ball_on_table:
            x[5] = self.ball_radius
        x[6:10] = (0.0, 0.0, 0.0, 1.0)  # identity quaternion (x, y, z, w)
        x[13:16] = bv
        x[16:19] = np.array([-bv[1], bv[0], 0.0]) / self.ball_radius  # e_z × v / r
        return x

    def normal_force(self, x: np.ndarray, wrench: np.ndarray) -> float:
        """The contact's normal force [N] in ``wrench`` (``O_F_ext_hat_K``): its force along
        the estimated centre line from the end effector to the ball (x̂)."""
        lay = self.layout
        d = lay.balls(x)[0] - x[list(lay.ee_position)]
        n = float(np.linalg.norm(d))
        if n < 1e-12:
            return 0.0
        return float(np.asarray(wrench, float)[:3] @ d) / n

    def step5_state(self, x: np.ndarray, robot: RobotState) -> np.ndarray | None:
        """Step 5's state from the sensed force, or None (plan from x̂) without force sensing
        or without a wrench in the state."""
        if not self.options.force_sensing or robot.external_wrench is None:
            self.last_normal_force = math.nan
            return None
        f = self.normal_force(x, robot.external_wrench)
        self.last_normal_force = f
        self.sensed_plans += f > self.sensing.threshold
        return self.sensing.step5_state(x, f, self.layout)

    def goal(self, x: np.ndarray, t: float = 0.0) -> np.ndarray:
        """The target generator's goal state at x̂ and phase time t [s] (eq. 25 + Fig. 10)."""
        return self.algorithm3.target(x, t).x_goal

    def target_from_plan(self, plan: Any) -> Target | None:
        """The equilibrium pose and wrench of a plan (None if it is unusable)."""
        if not plan.status.ok:
            return None
        lay = self.layout
        p = plan.x_d[list(lay.ee_position)] + [0.0, 0.0, self.options.table_height]
        if self.options.velocity_lead:
            p = p + self._b_over_k * plan.x_d[list(lay.ee_velocity)]
        if self.options.acceleration_lead:
            p = p + np.asarray(plan.u[:3], dtype=float) / self._k
        f = np.asarray(plan.ee_force, dtype=float)
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(f))):
            return None
        assert self._q is not None
        return Target(np.asarray(p, float), self._q.copy(), f.copy(), np.zeros(3))

    # -- Planner protocol -----------------------------------------------------------------
    def warm_up(self) -> float:
        """One Algorithm 3 cycle at the plant's start state (compiles the kernels); returns
        its wall time [s]."""
        d = self.plant.defaults
        plan = self.algorithm3.plan(d.x0, 0.0)
        self.algorithm3.u_prev = np.zeros(self.plant.n_u)
        return float(plan.total_time)

    def reset(self) -> None:
        """After a hold: forget the previous target and input (the next tick plans afresh)."""
        self._last_target = None
        self._last_count = -1
        self.algorithm3.u_prev = np.zeros(self.plant.n_u)

    def plan(self, robot: RobotState, ball: BallState | None, t: float) -> Target:
        """Algorithm 3 for this tick (module docstring); ``t`` is the loop's monotonic time."""
        if self._q is None:
            self._q = np.array(robot.quaternion, dtype=float)
        hold = Target(robot.position.copy(), self._q.copy(), np.zeros(3), np.zeros(3))
        if ball is None:
            return self._last_target or hold
        if (self.options.plan_on_new_sample and ball.count == self._last_count
                and self._last_target is not None):
            return self._last_target
        if self._t0 is None:
            self._t0 = t
        self._last_count = ball.count
        # ball.stamp and robot.stamp share the robot's clock: extrapolate to the newest stamp
        t_stamp = max(robot.stamp, ball.stamp) if self.options.extrapolate_vision else None
        x = self.state_vector(robot, ball, t_stamp)
        plan = self.algorithm3.plan(x, t - self._t0, x_resim=self.step5_state(x, robot))
        self.plans += 1
        self.last_plan = plan
        self.solve_times.append(plan.dt_c)
        target = self.target_from_plan(plan)
        if target is None:
            self.failures += 1
            return self._last_target or hold
        self._last_target = target
        return target

    @property
    def solve_time_median(self) -> float:
        """Median C3 solve time so far [s] (nan before the first)."""
        return float(np.median(self.solve_times)) if self.solve_times else math.nan
