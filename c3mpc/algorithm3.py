"""Seed 003 Algorithm 3: C3 as the high-level planner of a low-level (impedance) controller.

Per planning cycle, from the state estimate x̂ (step 1, done by the caller):

2. build the LCS L_Δt around (x̂, û) from the (simplified) model M, û the previous input;
3. run C3 (Algorithm 1) on it towards the target of the current heuristic phase → u_C3;
4. Δt_c = wall time of steps 2-3 (measured here);
5. (x_d, λ_d) = L_Δt_c(x̂, u_C3): the LCS rebuilt with time step Δt_c and stepped once.

x_d (the state the plan reaches when this solve's command takes effect) and λ_d (the contact
forces over that interval) go to the impedance controller (eq. 36).

The §VII heuristics are *target generators*, replaceable callables ``target(x̂, t) ->
PhaseTarget``: :class:`CircleTarget` (single ball, eq. 25 with the time-based Phase I/II
end-effector biases of Fig. 10) and :class:`LineTarget` (§VII-B: every ball to x = x_c and
d_y further along y, the end-effector bias taken from the ball that has made the least
progress). Each phase selects its own C3 controller (same LCS, its own cost), since Phase II
"increase[s] the cost on end-effector deviation".

Nothing here imports ``plants``: the planner is given a plant object with ``lcs(x, u, dt=)``
and a :class:`BallTaskLayout` saying where the end effector and the balls are in x.
The simulated task (:mod:`c3mpc.tasks.franka_ball`) and the deployment (``hardware/planner_c3.py``,
a thin adapter) both plan with this :class:`Algorithm3Planner` + :class:`CircleTarget`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from lcs.errors import LCPSolveError

from .c3 import C3
from .errors import C3ValueError
from .result import C3Status

__all__ = ["BallTaskLayout", "PhaseTarget", "TargetGenerator", "GaitOptions", "CircleTarget",
           "LineTarget", "Plan", "Algorithm3Planner", "FixedLatencyClock", "circle_phase_angle"]


@dataclass(frozen=True)
class BallTaskLayout:
    """Where the end effector and the balls live in the simplified model's state x.

    Attributes:
        ee_position: indices of the end-effector x, y, z in x.
        ee_velocity: indices of its velocity in x.
        ball_xy: per ball, the indices of its x, y in x.
        ball_z: per ball, the index of its z (None: the model keeps balls on the table).
        ball_z_value: ball-centre height used when ``ball_z`` is None [m].
        ee_mass: end-effector mass of the model [kg] (λ_d → Cartesian force).
        ee_radius, ball_radius: [m].
    """

    ee_position: tuple[int, int, int]
    ee_velocity: tuple[int, int, int]
    ball_xy: tuple[tuple[int, int], ...]
    ball_z: tuple[int | None, ...]
    ball_z_value: float
    ee_mass: float
    ee_radius: float
    ball_radius: float
    ball_velocity_xy: tuple[tuple[int, int], ...] = ()
    """Per ball, the indices of its x, y velocity in x (empty: unknown)."""

    @property
    def n_balls(self) -> int:
        return len(self.ball_xy)

    def balls(self, x: np.ndarray) -> np.ndarray:
        """(k, 3) ball centres in x."""
        out = np.empty((self.n_balls, 3))
        for i, (ix, iy) in enumerate(self.ball_xy):
            iz = self.ball_z[i]
            out[i] = (x[ix], x[iy], self.ball_z_value if iz is None else x[iz])
        return out

    def ee(self, x: np.ndarray) -> np.ndarray:
        """(3,) end-effector centre in x."""
        return x[list(self.ee_position)]


@dataclass(frozen=True)
class PhaseTarget:
    """What a target generator returns: the goal state for C3 and the phase (which selects the
    controller, i.e. the cost)."""

    x_goal: np.ndarray
    phase: int
    ball_targets: np.ndarray
    """(k, 2) desired ball (x, y) [m] (for logging and error statistics)."""


class TargetGenerator(Protocol):
    """``target(x_hat, t) -> PhaseTarget``."""

    def __call__(self, x_hat: np.ndarray, t: float) -> PhaseTarget: ...


@dataclass(frozen=True)
class GaitOptions:
    """The time-based end-effector heuristic of §VII-A (Fig. 10), in a cycle of
    ``phase1_duration + phase2_duration`` seconds.

    Attributes:
        phase1_duration: Phase I length [s] (paper: 1).
        phase2_duration: Phase II length [s] (paper: 0.5).
        phase1_height: Phase I bias: the end-effector centre this far above contact with the
            ball's top [m] ("slightly above the ball's current state").
        phase2_back: Phase II bias: horizontal distance of the end-effector centre behind the
            ball, opposite to the direction to its target [m].
        phase2_height: Phase II bias height of the end-effector centre above the table [m].
    """

    phase1_duration: float = 1.0
    phase2_duration: float = 0.5
    phase1_height: float = 0.0
    phase2_back: float = 0.06
    phase2_height: float = 0.045
    phase1_match_velocity: bool = False
    """Phase I bias on the end-effector *velocity* too: the ball's current (x, y) velocity
    (one reading of "above the ball's current state"; False: zero, the template's. In our
    30 s runs it did not help: band fraction 0.78 with, 0.90 without)."""
    phase2_lift: float | None = None
    """None: Phase II is the single bias (``phase2_back``, ``phase2_height``). A number [m]:
    Phase II is "a set of end-effector biases" (§VII-A), all above the ball: for the first
    ``phase2_lift_fraction`` of Phase II the end effector is lifted straight up (its own
    current x, y) to this far above contact with the ball's top, then it goes to
    ``phase2_back`` behind the ball at ``phase2_height`` (the authors' public controller
    stages its return the same way: up, sideways, down). Without the lift the end effector
    leaves the ball's top along its back in contact, and the friction rolls the ball
    backwards (docs/franka-ball.md, "Why the literal configuration fails")."""
    phase2_lift_fraction: float = 1.0 / 3.0
    """Share of Phase II spent on the lift (``phase2_lift``)."""

    def __post_init__(self) -> None:
        if not (self.phase1_duration > 0 and self.phase2_duration >= 0):
            raise C3ValueError("GaitOptions: phase1_duration must be > 0 and phase2_duration "
                               ">= 0 [s]")
        for name in ("phase1_height", "phase2_back", "phase2_height"):
            if not math.isfinite(getattr(self, name)):
                raise C3ValueError(f"GaitOptions.{name} must be finite")
        lift = self.phase2_lift
        if lift is not None and (isinstance(lift, bool) or not isinstance(lift, (int, float))
                                 or not (math.isfinite(lift) and lift >= 0)):
            raise C3ValueError(f"GaitOptions.phase2_lift must be a number >= 0 [m] or None, "
                               f"got {lift!r}")
        if not (0.0 <= self.phase2_lift_fraction <= 1.0):
            raise C3ValueError(f"GaitOptions.phase2_lift_fraction must be in [0, 1], got "
                               f"{self.phase2_lift_fraction!r}")

    def lifting(self, t: float) -> bool:
        """Whether time t [s] falls in Phase II's lift stage (``phase2_lift`` set)."""
        if self.phase2_lift is None:
            return False
        period = self.phase1_duration + self.phase2_duration
        s = (t % period) - self.phase1_duration
        return 0.0 <= s < self.phase2_lift_fraction * self.phase2_duration

    def phase(self, t: float) -> int:
        """0 (Phase I) or 1 (Phase II) at time t [s]."""
        period = self.phase1_duration + self.phase2_duration
        return 0 if (t % period) < self.phase1_duration else 1


def circle_phase_angle(xy: np.ndarray, center: Sequence[float]) -> np.ndarray:
    """α = atan2(x − x_c, y − y_c): clockwise from +y (eq. 25), for (2,) or (n, 2) points."""
    p = np.asarray(xy, float)
    return np.arctan2(p[..., 0] - center[0], p[..., 1] - center[1])


def _set_ee_velocity_bias(g: np.ndarray, gait: GaitOptions, phase: int, x_hat: np.ndarray,
                          layout: BallTaskLayout, ball: int) -> None:
    if phase == 0 and gait.phase1_match_velocity and layout.ball_velocity_xy:
        ix, iy = layout.ball_velocity_xy[ball]
        g[layout.ee_velocity[0]] = x_hat[ix]
        g[layout.ee_velocity[1]] = x_hat[iy]


def _ee_bias(gait: GaitOptions, phase: int, ball: np.ndarray, target_xy: np.ndarray,
             layout: BallTaskLayout, t: float | None = None,
             ee: np.ndarray | None = None) -> np.ndarray:
    top = ball[2] + layout.ball_radius + layout.ee_radius
    if phase == 0:
        return np.array([ball[0], ball[1], top + gait.phase1_height])
    if t is not None and ee is not None and gait.lifting(t):
        return np.array([ee[0], ee[1], top + gait.phase2_lift])
    e = target_xy - ball[:2]
    n = float(np.linalg.norm(e))
    e = e / n if n > 1e-9 else np.zeros(2)
    back = ball[:2] - gait.phase2_back * e
    return np.array([back[0], back[1], gait.phase2_height])


@dataclass
class CircleTarget:
    """Eq. (25) target for one ball on a circle, with the Phase I/II end-effector biases.

    Attributes:
        template: (n_x,) goal state; the ball x, y and the end-effector position are overwritten
            (other entries, e.g. zero velocities, stay).
        layout: :class:`BallTaskLayout` of the model.
        center: circle centre (x_c, y_c) [m] (paper: (0.55, 0)).
        radius: [m] (paper: 0.1).
        lead_angle_deg: α_l [deg] (paper: 20).
        gait: :class:`GaitOptions`.
        max_target_distance: None (eq. 25 exactly) or a distance [m]: a target farther than
            this from the ball is moved towards the ball onto that distance (same direction).
            On the circle the eq.-(25) target is 2 r sin(α_l / 2) ≈ 3.5 cm away, so 0.04 only
            acts on a ball more than ~1.4 cm outside the circle, where the eq.-(25) point gets
            far and C3 (ball weight 10000) pushes hard (docs/franka-ball.md, "1 mm noise").
    """

    template: np.ndarray
    layout: BallTaskLayout
    center: tuple[float, float] = (0.55, 0.0)
    radius: float = 0.1
    lead_angle_deg: float = 20.0
    gait: GaitOptions = field(default_factory=GaitOptions)
    max_target_distance: float | None = None

    def __post_init__(self) -> None:
        if not (self.radius > 0 and 0 < self.lead_angle_deg < 180):
            raise C3ValueError("CircleTarget: radius must be > 0 and lead_angle_deg in (0, 180)")
        d = self.max_target_distance
        if d is not None and not (math.isfinite(d) and d > 0):
            raise C3ValueError(f"CircleTarget.max_target_distance must be > 0 [m] or None, "
                               f"got {d!r}")
        self.template = np.asarray(self.template, float).copy()

    def ball_target(self, ball_xy: np.ndarray) -> np.ndarray:
        """(2,) eq. (25): the point α_l ahead of the ball's phase angle on the circle (moved
        to ``max_target_distance`` from the ball if farther)."""
        a = circle_phase_angle(ball_xy, self.center) + math.radians(self.lead_angle_deg)
        tgt = np.array([self.center[0] + self.radius * math.sin(a),
                        self.center[1] + self.radius * math.cos(a)])
        d_max = self.max_target_distance
        if d_max is not None:
            b = np.asarray(ball_xy, float)[:2]
            n = float(np.linalg.norm(tgt - b))
            if n > d_max:
                tgt = b + (tgt - b) * (d_max / n)
        return tgt

    def __call__(self, x_hat: np.ndarray, t: float) -> PhaseTarget:
        lay = self.layout
        ball = lay.balls(x_hat)[0]
        tgt = self.ball_target(ball[:2])
        phase = self.gait.phase(t)
        g = self.template.copy()
        ix, iy = lay.ball_xy[0]
        g[ix], g[iy] = tgt
        g[list(lay.ee_position)] = _ee_bias(self.gait, phase, ball, tgt, lay, t, lay.ee(x_hat))
        _set_ee_velocity_bias(g, self.gait, phase, x_hat, lay, 0)
        return PhaseTarget(g, phase, tgt[None, :])


@dataclass
class LineTarget:
    """§VII-B: every ball to (x_c, y_i + d_y) (state-based, re-evaluated each cycle); the
    end-effector bias (the Fig. 10 phases) follows the ball that has made the least progress
    along the line.

    The task (docs/franka-ball.md, "Multi-ball"): the balls start in a row on the line
    x = x_c; it is complete once every ball has advanced ``line_distance`` along the direction
    of travel from its start while all balls are within the band of the line.

    The paper writes the target as y_i − d_y; here the sign of ``dy`` is the direction of
    travel (positive: towards +y), the mirror image of the same task.

    Which ball the end effector works on (``lead_ball``): the ball with the smallest
    displacement along the direction of travel since ``y_start`` (the paper: "the ball that
    has made the least progress in the y direction"), ties within 1 mm going to the rearmost
    ball (the end effector starts above it); balls past ``y_end`` are no longer candidates.
    ``lead_rule="rearmost"`` is the other reading (smallest coordinate along the line, i.e.
    always the rear ball of the row, which then has to push the others). Before either rule,
    a ball more than ``off_line_first`` off the line (|x − x_c|) is served first (the one
    furthest off): a pushed ball rolls on almost without loss, and a small heading error
    would otherwise carry it out of the band while the end effector works on another ball.
    With ``off_line_done`` (default) this holds for a ball that is done, too (its target stays
    (x_c, its own y)): a done ball left rolling slightly sideways would otherwise leave the
    band before the other balls are done (docs/franka-ball.md, "2 balls: the front ball
    rolled out of the band").

    End-effector bias of the lead ball: Phase I as :class:`CircleTarget` (on top of the
    ball); Phase II is "a set of end-effector biases so that it ends up slightly behind the
    ball": for the first ``phase2_over_fraction`` of Phase II the bias is ``phase2_back``
    behind the ball at ``phase2_clearance`` above the height of contact with the ball's top
    (over the ball), then behind it at ``gait.phase2_height``. With only the low bias (None)
    the end effector leaves the top of the ball along its back, drags the ball backwards by
    friction and, when it was ahead of the ball, pushes it backwards.

    Attributes:
        template, layout, gait: as :class:`CircleTarget`.
        x_c: the line's x [m].
        dy: desired translation along y per evaluation [m] (the paper's d_y; positive moves
            balls towards +y; non-zero).
        y_start: (k,) start y of each ball (progress is measured from it; None: zeros).
        y_end: a ball whose y has passed this [m] (a number, or (k,) one per ball) is done:
            its target becomes (x_c, its own y) (no further advance) and it is no longer the
            end effector's ball unless it is off the line (``off_line_done``) (None: never).
        lead_rule: "displacement" (default) or "rearmost" (above).
        phase2_clearance: [m] above contact with the ball's top for the first part of Phase II
            (None: the single low bias of :class:`CircleTarget`).
        phase2_over_fraction: share of Phase II spent at the high bias (0..1).
        off_line_first: [m] (None: off).
        off_line_done: ``off_line_first`` applies to balls that are done as well (True,
            default); False: a done ball is never the end effector's ball again.
    """

    template: np.ndarray
    layout: BallTaskLayout
    x_c: float = 0.55
    dy: float = 0.05
    y_start: np.ndarray | None = None
    y_end: float | np.ndarray | None = None
    gait: GaitOptions = field(default_factory=GaitOptions)
    lead_rule: str = "displacement"
    phase2_clearance: float | None = 0.01
    phase2_over_fraction: float = 0.5
    off_line_first: float | None = 0.01
    off_line_done: bool = True
    phase1_steer: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.lead_rule not in ("rearmost", "displacement"):
            raise C3ValueError(f"LineTarget.lead_rule must be 'displacement' or 'rearmost', "
                               f"got {self.lead_rule!r}")
        if not (math.isfinite(self.dy) and self.dy != 0):
            raise C3ValueError(f"LineTarget.dy must be finite and non-zero [m], got {self.dy!r}")
        if self.phase2_clearance is not None and not (math.isfinite(self.phase2_clearance)
                                                      and self.phase2_clearance >= 0):
            raise C3ValueError(f"LineTarget.phase2_clearance must be >= 0 [m] or None, got "
                               f"{self.phase2_clearance!r}")
        if self.off_line_first is not None and not (self.off_line_first >= 0):
            raise C3ValueError(f"LineTarget.off_line_first must be >= 0 [m] or None, got "
                               f"{self.off_line_first!r}")
        if not isinstance(self.off_line_done, (bool, np.bool_)):
            raise C3ValueError(f"LineTarget.off_line_done must be True or False, got "
                               f"{self.off_line_done!r}")
        if self.phase1_steer is not None:
            st = tuple(float(v) for v in self.phase1_steer)
            if len(st) != 2 or not all(math.isfinite(v) and v >= 0 for v in st):
                raise C3ValueError(f"LineTarget.phase1_steer must be (gain >= 0, horizon >= 0 "
                                   f"[s]) or None, got {self.phase1_steer!r}")
            self.phase1_steer = st
        if not (0.0 <= self.phase2_over_fraction <= 1.0):
            raise C3ValueError(f"LineTarget.phase2_over_fraction must be in [0, 1], got "
                               f"{self.phase2_over_fraction!r}")
        self.template = np.asarray(self.template, float).copy()
        k = self.layout.n_balls
        y0 = np.zeros(k) if self.y_start is None else np.asarray(self.y_start, float).copy()
        if y0.shape != (k,):
            raise C3ValueError(f"LineTarget.y_start must have shape ({k},), got {y0.shape}")
        self.y_start = y0
        if self.y_end is not None:
            y_end = np.broadcast_to(np.asarray(self.y_end, float), (k,)).copy()
            if not np.all(np.isfinite(y_end)):
                raise C3ValueError("LineTarget.y_end must be finite")
            self.y_end = y_end

    @property
    def direction(self) -> float:
        """+1 (balls travel towards +y) or −1."""
        return 1.0 if self.dy > 0 else -1.0

    def done(self, ys: np.ndarray) -> np.ndarray:
        """(k,) bool: which balls have passed ``y_end``."""
        ys = np.asarray(ys, float)
        if self.y_end is None:
            return np.zeros(ys.shape, bool)
        return (ys - self.y_end) * self.direction >= 0

    def lead_ball(self, ys: np.ndarray, xs: np.ndarray | None = None) -> int:
        """Index of the ball the end-effector bias follows, from the balls' y (k,) [m]
        (and x (k,) [m], used with ``off_line_first``)."""
        ys = np.asarray(ys, float)
        along = ys * self.direction
        key = along if self.lead_rule == "rearmost" else (ys - self.y_start) * self.direction
        done = self.done(ys)
        key = np.where(done, np.inf, key)
        if self.off_line_first is not None and xs is not None:
            off = np.abs(np.asarray(xs, float) - self.x_c) - self.off_line_first
            if not self.off_line_done:
                off = np.where(done, -1.0, off)
            key = np.where(off > 0, -1.0 - off, key)  # furthest off the line first
        if not np.any(np.isfinite(key)):  # all done and on the line: stay with the rearmost
            return int(np.argmin(along))
        tied = np.flatnonzero(key <= np.min(key) + 1e-3)  # within 1 mm: the rearmost
        return int(tied[np.argmin(along[tied])])

    def ball_targets(self, ys: np.ndarray) -> np.ndarray:
        """(k, 2) desired (x, y): (x_c, y_i + d_y), or (x_c, y_i) for a ball that is done."""
        ys = np.asarray(ys, float)
        tgt_y = np.where(self.done(ys), ys, ys + self.dy)
        return np.column_stack([np.full(ys.shape, self.x_c), tgt_y])

    def ee_bias(self, phase: int, t: float, ball: np.ndarray) -> np.ndarray:
        """(3,) end-effector bias for the lead ball's centre ``ball`` (3,) at time t [s]."""
        lay, gait = self.layout, self.gait
        top = ball[2] + lay.ball_radius + lay.ee_radius
        if phase == 0:
            return np.array([ball[0], ball[1], top + gait.phase1_height])
        # behind = opposite to the ball's direction to its target (x_c, y + d_y)
        e = np.array([self.x_c - ball[0], self.dy])
        e /= float(np.linalg.norm(e))
        back = ball[:2] - gait.phase2_back * e
        if self.phase2_clearance is not None:
            period = gait.phase1_duration + gait.phase2_duration
            s = ((t % period) - gait.phase1_duration) / gait.phase2_duration
            if s < self.phase2_over_fraction:
                return np.array([back[0], back[1], top + self.phase2_clearance])
        return np.array([back[0], back[1], gait.phase2_height])

    def steer_offset(self, ball_x: float, ball_vx: float) -> float:
        """Phase I shift of the end-effector bias along x [m] for a lead ball at x ``ball_x``
        [m] moving sideways at ``ball_vx`` [m/s]: −gain · (x − x_c + horizon · v_x), i.e.
        towards the line by the ball's predicted offset ``horizon`` seconds ahead (0 without
        ``phase1_steer``). The end effector rolls the ball from its top, so dragging the top
        towards the line moves the ball's centre towards it."""
        if self.phase1_steer is None:
            return 0.0
        gain, horizon = self.phase1_steer
        return -gain * (ball_x - self.x_c + horizon * ball_vx)

    def __call__(self, x_hat: np.ndarray, t: float) -> PhaseTarget:
        lay = self.layout
        balls = lay.balls(x_hat)
        ys = balls[:, 1]
        tgts = self.ball_targets(ys)
        g = self.template.copy()
        for i, (ix, iy) in enumerate(lay.ball_xy):
            g[ix], g[iy] = tgts[i]
        j = self.lead_ball(ys, balls[:, 0])
        phase = self.gait.phase(t)
        bias = self.ee_bias(phase, t, balls[j])
        if phase == 0 and self.phase1_steer is not None:
            vx = float(x_hat[lay.ball_velocity_xy[j][0]]) if lay.ball_velocity_xy else 0.0
            bias[0] += self.steer_offset(float(balls[j, 0]), vx)
        g[list(lay.ee_position)] = bias
        _set_ee_velocity_bias(g, self.gait, phase, x_hat, lay, j)
        return PhaseTarget(g, phase, tgts)


@dataclass(frozen=True)
class Plan:
    """One Algorithm 3 cycle.

    Attributes:
        x_d: (n_x,) desired state after Δt_c (step 5).
        lam_d: (n_λ,) desired contact forces over Δt_c (step 5, LCS units).
        ee_force: (3,) force the end effector should apply on the environment [N] (from λ_d:
            minus the contact force on the model's end effector).
        u: (n_u,) C3's first input u_C3.
        plan_x: (N+1, n_x) C3's planned states (for visualization).
        plan_lam: (N, n_λ) C3's planned contact forces (the final QP iterate).
        decided_lam: (N, n_λ) the contact forces of C3's last projection δ (complementarity-
            feasible: the contact decisions), or ``plan_lam`` for solvers without δ.
        dt_c: measured wall time of steps 2-3 [s].
        dt_resim: the time step used in step 5 [s] (Δt_c, at least ``min_resim_dt``, plus
            ``resim_lead``).
        total_time: wall time of the whole cycle (steps 2-5) [s].
        status: C3's status (FAILED if step 5's LCP could not be solved; then x_d, λ_d are
            NaN and the caller keeps its previous command).
        phase: heuristic phase used.
        ball_targets: (k, 2) desired ball positions of the target generator.
    """

    x_d: np.ndarray
    lam_d: np.ndarray
    ee_force: np.ndarray
    u: np.ndarray
    plan_x: np.ndarray
    plan_lam: np.ndarray
    decided_lam: np.ndarray
    dt_c: float
    dt_resim: float
    total_time: float
    status: C3Status
    phase: int
    ball_targets: np.ndarray


class Algorithm3Planner:
    """Algorithm 3 with one C3 controller per heuristic phase.

    Args:
        plant: the planning model: ``plant.lcs(x, u, dt=None) -> LCS`` (e.g. ``franka-ball``).
        controllers: one :class:`C3` per phase (index = ``PhaseTarget.phase``).
        target: the target generator.
        layout: :class:`BallTaskLayout` of the plant's state.
        min_resim_dt: smallest Δt_c used in step 5 [s] (0: exactly the measured time).
        resim_lead: added to step 5's interval [s]: max(Δt_c, min_resim_dt) + resim_lead (0:
            Algorithm 3 as written). With ``min_resim_dt`` = the command's delay and the lead
            = how long the command is then held, x_d is the plan's state when the next command
            replaces this one (docs/franka-ball.md, "Why the literal configuration fails").
        clock: wall clock (seconds), injectable for tests.
    """

    def __init__(self, plant: Any, controllers: Sequence[C3], target: Callable[..., PhaseTarget],
                 layout: BallTaskLayout, min_resim_dt: float = 0.0,
                 clock: Callable[[], float] = time.perf_counter, resim_lead: float = 0.0):
        if not controllers:
            raise C3ValueError("controllers must hold at least one C3 controller")
        if not (math.isfinite(min_resim_dt) and min_resim_dt >= 0):
            raise C3ValueError(f"min_resim_dt must be >= 0 [s], got {min_resim_dt!r}")
        if not (math.isfinite(resim_lead) and resim_lead >= 0):
            raise C3ValueError(f"resim_lead must be >= 0 [s], got {resim_lead!r}")
        self.resim_lead = float(resim_lead)
        self.plant = plant
        self.controllers = list(controllers)
        self.target = target
        self.layout = layout
        self.min_resim_dt = float(min_resim_dt)
        self.clock = clock
        self.u_prev = np.zeros(self.controllers[0].n_u)

    def plan(self, x_hat: np.ndarray, t: float, x_resim: np.ndarray | None = None,
             resim_dt: float | None = None) -> Plan:
        """Steps 2-5 from the estimate ``x_hat`` (n_x,) at time ``t`` [s].

        ``resim_dt`` [s], optional: step 5's interval, instead of max(Δt_c, ``min_resim_dt``)
        + ``resim_lead`` (a caller that has already predicted ``x_hat`` over the latency,
        :mod:`c3mpc.tasks.latency`, re-simulates over the rest of the command's interval).

        ``x_resim`` (n_x,), optional: the state step 5 re-simulates from instead of ``x_hat``
        (e.g. :meth:`c3mpc.tasks.contact_sensing.ForceSensedGap.step5_state`: the end effector-ball
        gap from the arm's force estimate). It may differ from ``x_hat`` only in the
        end-effector position; x_d's end-effector position is shifted back by that
        difference, so the command stays relative to the measured end effector.
        """
        clock = self.clock
        t0 = clock()
        if resim_dt is not None and not (math.isfinite(resim_dt) and resim_dt > 0):
            raise C3ValueError(f"resim_dt must be > 0 [s] or None, got {resim_dt!r}")
        x_hat = np.asarray(x_hat, float)
        if x_resim is None:
            x5 = x_hat
        else:
            x5 = np.asarray(x_resim, float)
            if x5.shape != x_hat.shape or not np.all(np.isfinite(x5)):
                raise C3ValueError(f"x_resim must be a finite array of shape {x_hat.shape}, "
                                   f"got shape {x5.shape}")
            other = np.ones(x_hat.shape[0], bool)
            other[list(self.layout.ee_position)] = False
            if not np.array_equal(x5[other], x_hat[other]):
                raise C3ValueError("x_resim may differ from x_hat only in the end-effector "
                                   "position")
        lcs = self.plant.lcs(x_hat, self.u_prev)
        pt = self.target(x_hat, t)
        ctrl = self.controllers[min(pt.phase, len(self.controllers) - 1)]
        ctrl.update_lcs(lcs)
        ctrl.update_target(pt.x_goal)
        res = ctrl.solve(x_hat)
        dt_c = clock() - t0
        u = np.asarray(res.u[0], float)
        if not np.all(np.isfinite(u)):
            u = np.zeros_like(self.u_prev)
        self.u_prev = u
        h = (max(dt_c, self.min_resim_dt) + self.resim_lead if resim_dt is None
             else float(resim_dt))
        lcs_c = self.plant.lcs(x5, u, dt=h)
        status = res.status
        try:
            x_d, lam_d = lcs_c.step(x5, u)
            if x5 is not x_hat:
                ee = list(self.layout.ee_position)
                x_d[ee] += x_hat[ee] - x5[ee]
        except LCPSolveError:  # step 5's LCP unsolved: no command from this cycle
            x_d = np.full(ctrl.n_x, np.nan)
            lam_d = np.full(ctrl.n_lambda, np.nan)
            status = C3Status.FAILED
        D = np.asarray(lcs_c.D)
        nx, nl = ctrl.n_x, ctrl.n_lambda
        decided = (np.asarray(res.delta)[:, nx:nx + nl] if res.delta is not None
                   else np.asarray(res.lam))
        f_on_ee = self.layout.ee_mass * (D[list(self.layout.ee_velocity)] @ lam_d) / h
        return Plan(x_d=x_d, lam_d=lam_d, ee_force=-f_on_ee, u=u, plan_x=np.asarray(res.x),
                    plan_lam=np.asarray(res.lam), decided_lam=decided, dt_c=dt_c, dt_resim=h,
                    total_time=clock() - t0, status=status, phase=pt.phase,
                    ball_targets=pt.ball_targets)


class FixedLatencyClock:
    """A fake wall clock for :class:`Algorithm3Planner` (its ``clock`` argument) that makes every
    Δt_c and every cycle time exactly ``latency`` [s]: ``plan`` reads the clock three times
    (start, after C3, end), so the reads advance it by (0, latency, 0) in turn. Deterministic
    runs (the simulated loop's ``planning_latency``, the lock-step rehearsal) use it."""

    def __init__(self, latency: float):
        self.latency = float(latency)
        self.now = 0.0
        self.calls = 0

    def __call__(self) -> float:
        if self.calls % 3 == 1:
            self.now += self.latency
        self.calls += 1
        return self.now
