"""C3 as the deploy loop's planner for ``franka-ball`` (seed 003 Algorithm 3, simplified model).

Each tick: the measured end effector and ball give the state x of the ``franka-ball`` plant
(the simplified model M_s: spherical end effector with acceleration inputs, a ball on the
table); the LCS is linearised at (x, u_prev); C3 plans towards the paper's state-based circle
target (eq. 25: the ball 20° ahead on the circle, the end effector above it); the LCS with time
step Δt_c (the measured solve time, at least ``min_resim_dt``) is stepped once from x with u₀,
giving (x_d, λ_d). The end-effector part of x_d is the impedance controller's equilibrium and
the end effector's share of λ_d the desired wrench (the force the end effector applies on the
ball, the feed-forward J_cᵀλ_d of eq. 36).

State conventions of the plant (plants/models/franka_ball.py): positions relative to the table
surface (``table_height`` in the base frame is subtracted), ball quaternion kept at identity so
that the ball frame is the world frame, ball angular velocity from rolling without slipping
(ω = e_z × v / r).

This module imports ``plants`` and ``c3mpc`` lazily (heavy imports, numba compilation on the
first solve: call :meth:`C3Planner.warm_up` before the loop starts).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .camera import BallState
from .config import options_from_dict, options_from_file
from .errors import HardwareValueError
from .franka import RobotState
from .impedance import ImpedanceParams
from .safety import Target

__all__ = ["C3PlannerOptions", "C3Planner"]


@dataclass(frozen=True)
class C3PlannerOptions:
    """Settings of :class:`C3Planner` (None: the plant's paper defaults)."""

    projection: str | None = None
    """C3 projection ("miqp", "lcp", "qp", "admm", "c3plus"); None: the plant's (MIQP)."""
    admm_iter: int | None = None
    """ADMM iterations s; None: the paper's 2."""
    horizon: int | None = None
    """MPC horizon N; None: the paper's 5."""
    center: tuple[float, ...] = (0.55, 0.0)
    """Circle centre (x, y) in the base frame [m]."""
    radius: float = 0.1
    """Circle radius [m]."""
    lead_angle_deg: float = 20.0
    """Lead angle α_l of eq. (25) [deg]."""
    table_height: float = 0.0
    """Table surface z in the base frame [m] (the plant's table is at z = 0)."""
    min_resim_dt: float = 0.01
    """Smallest Δt_c [s] for the re-simulation of Algorithm 3 (about one control period)."""
    velocity_lead: bool = True
    """Send the equilibrium p_d + (B/K) v_d: an equilibrium pose carries no velocity, and with
    the impedance law K(p_eq − p) − B v equals K(p_d − p) + B(v_d − v) for this p_eq."""

    def __post_init__(self) -> None:
        if not (self.radius > 0 and self.min_resim_dt > 0 and 0 < self.lead_angle_deg < 180):
            raise HardwareValueError("C3PlannerOptions: radius and min_resim_dt must be > 0, "
                                     "lead_angle_deg in (0, 180)")
        if len(self.center) != 2:
            raise HardwareValueError(f"C3PlannerOptions.center must be (x, y), got "
                                     f"{self.center!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> C3PlannerOptions:
        """Build from a mapping; unknown keys raise HardwareValueError."""
        return options_from_dict(cls, data)

    @classmethod
    def from_file(cls, path: str | Path, section: str | None = None) -> C3PlannerOptions:
        """Load from YAML/TOML."""
        return options_from_file(cls, path, section)


class C3Planner:
    """C3 on the ``franka-ball`` simplified model, as a :class:`~hardware.planner.Planner`."""

    def __init__(self, options: C3PlannerOptions | None = None,
                 impedance: ImpedanceParams | None = None):
        from c3mpc import C3Options
        from c3mpc.tasks import build_controller
        from plants import load_plant
        from plants.models.franka_ball import BALL_RADIUS, EE_RADIUS

        self.options = o = options or C3PlannerOptions()
        imp = impedance or ImpedanceParams()
        self._lead = imp.translational_damping / imp.translational_stiffness  # B/K [s]
        self.plant = load_plant("franka-ball")
        d = self.plant.defaults
        opts = C3Options(projection=o.projection or d.projection,
                         admm_iter=o.admm_iter or d.admm_iter, rho=d.rho,
                         rho_scale=d.rho_scale)
        self.ctrl = build_controller(self.plant, opts, N=o.horizon)
        self.ball_radius = BALL_RADIUS
        self.ee_radius = EE_RADIUS
        self.ee_mass = float(self.plant.params.ee_mass)
        self._goal_template = np.array(d.x_goal, dtype=float)
        self._u = np.zeros(self.plant.n_u)
        self.failures = 0
        self.solve_times: list[float] = []
        self._q: np.ndarray | None = None
        self.last_plan: tuple[np.ndarray, np.ndarray, float] | None = None
        """(x_d, λ_d, Δt_c) of the newest plan (Algorithm 3's re-simulated state and forces)."""

    # -- state and target -----------------------------------------------------------------
    def state_vector(self, robot: RobotState, ball: BallState) -> np.ndarray:
        """The plant state x (19,) from the measured end effector and ball."""
        z0 = self.options.table_height
        x = np.zeros(19)
        x[0:3] = robot.position - [0.0, 0.0, z0]
        x[3:6] = ball.position - [0.0, 0.0, z0]
        x[9] = 1.0  # identity quaternion (x, y, z, w): ball frame = world frame
        x[10:13] = robot.velocity
        v = np.array([ball.velocity[0], ball.velocity[1], 0.0])
        x[13:16] = v
        x[16:19] = np.array([-v[1], v[0], 0.0]) / self.ball_radius  # rolling: e_z × v / r
        return x

    def goal(self, x: np.ndarray) -> np.ndarray:
        """Eq. (25): ball and end effector (above it) at the point α_l ahead on the circle."""
        from plants.models.franka_ball import circle_target

        o = self.options
        tgt = circle_target(x[3:5], tuple(o.center), o.radius, o.lead_angle_deg)
        g = self._goal_template.copy()
        g[0:2] = tgt
        g[3:5] = tgt
        return g

    def warm_up(self) -> float:
        """One solve at the plant's start state (compiles the kernels); returns its time [s]."""
        d = self.plant.defaults
        t = time.perf_counter()
        self.ctrl.update_lcs(self.plant.lcs(d.x0, self._u))
        self.ctrl.solve(d.x0)
        return time.perf_counter() - t

    def plan(self, robot: RobotState, ball: BallState | None, t: float) -> Target:
        """Algorithm 3 for this tick; see the module docstring."""
        if self._q is None:
            self._q = np.array(robot.quaternion, dtype=float)
        if ball is None:  # nothing to plan on: stay
            return Target(robot.position.copy(), self._q.copy(), np.zeros(3), np.zeros(3))
        x = self.state_vector(robot, ball)
        self.ctrl.update_lcs(self.plant.lcs(x, self._u))
        self.ctrl.update_target(self.goal(x))
        t0 = time.perf_counter()
        res = self.ctrl.solve(x)
        dt_c = time.perf_counter() - t0
        self.solve_times.append(dt_c)
        if not res.status.ok or not np.all(np.isfinite(res.u[0])):
            self.failures += 1
            return Target(robot.position.copy(), self._q.copy(), np.zeros(3), np.zeros(3))
        u0 = np.asarray(res.u[0], dtype=float)
        self._u = u0
        lcs_c = self.plant.lcs(x, u0, dt=max(dt_c, self.options.min_resim_dt))
        x_d, lam_d = lcs_c.step(x, u0)
        self.last_plan = (x_d, lam_d, lcs_c.dt)
        # Contact impulse on the end effector over Δt_c -> average force; the end effector
        # applies the opposite force on the ball.
        D = np.asarray(lcs_c.D)
        f_on_ee = self.ee_mass * (D[10:13] @ lam_d) / lcs_c.dt
        p = x_d[0:3] + [0.0, 0.0, self.options.table_height]
        if self.options.velocity_lead:
            p = p + self._lead * x_d[10:13]
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(f_on_ee))):
            self.failures += 1
            return Target(robot.position.copy(), self._q.copy(), np.zeros(3), np.zeros(3))
        return Target(p, self._q.copy(), -f_on_ee, np.zeros(3))

    @property
    def solve_time_median(self) -> float:
        """Median C3 solve time so far [s] (nan before the first)."""
        return float(np.median(self.solve_times)) if self.solve_times else math.nan
