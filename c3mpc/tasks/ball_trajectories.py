"""Time-based ball trajectories x_d(t) for the Franka ball task (seed 003 §VII-D, Figs. 16, 18).

In §VII-D the desired ball position is "parameterized as a function of time rather than the
ball's current state"; everything else (simplified model, C3, the Fig. 10 phases, the impedance
law, the vision) is the state-based task's. Here a closed planar curve of a named shape is
traversed at constant speed, once per ``period``:

* ``circle``: radius ``size``;
* ``figure8``: Gerono's lemniscate (x, y) = c + (size·sin 2θ / 2, size·cos θ), half-height
  ``size``, half-width ``size / 2``, curvature radius ``size`` at the two tips, straight where it
  crosses itself at the centre;
* ``square`` and ``triangle``: regular polygons (the triangle with a flat top edge) whose
  in-radius (centre to side) is ``size``, corners rounded with ``corner_radius`` (the polygon
  of in-radius size − corner_radius offset outwards by corner_radius, so the curvature is
  bounded by 1 / corner_radius).

Every shape starts at its top point (c_x, c_y + size), which is placed where the ball starts
(the curve's centre is start − (0, size); for the default 0.1 m circle that is the state-based
task's circle, centre (0.55, 0)), and is traversed clockwise seen from above (initially towards
+x), like the eq. (25) circle.
The arc-length parameter runs at constant speed L / period after a start ramp (the ball is at
rest at t = 0): s(t) = v t² / (2 t_r) for t < t_r, v (t − t_r / 2) after, so x_d is continuous
in position and velocity.

:class:`TimedPathTarget` is the target generator of :mod:`c3mpc.algorithm3` for such a path.
Its default goal law (``goal_law="time"``) is the paper's: the C3 ball goal is the time-indexed
x_d(t + τ) (τ = ``lookahead``, 1 s: about 1 cm ahead at the default speeds) with the goal ball
velocity dx_d/dt (t + τ) (``goal_velocity``), whatever the ball's state; the end-effector
biases are the Fig. 10 phases of the state-based task (the staged Phase II of
``c3mpc.tasks.franka_ball.CIRCLE_GAIT`` at the defaults), Phase II behind the ball opposite to
the direction to its goal, so a ball ahead of x_d is pushed back from the front (braked). Within
``direction_distance`` of its goal (where that direction is noise) Phase II is behind the ball
along the curve's tangent at x_d(t). The stroke C3 plans is then the ball's distance to a
point about 1 cm ahead of x_d(t), so a ball on schedule is moved in strokes smaller than the
2 cm band, and the Phase I end effector, 2 mm into the ball's top, keeps the ball rolling at the
end effector's pace instead of coasting (the simulated ball has no rolling resistance).

``goal_law="schedule"`` is the earlier law (kept for comparison, docs/franka-ball.md): eq.
(25) generalised to any curve and to a schedule: with s_b the arc length of the ball's closest
point on the curve (searched within L/4 of x_d's, so the figure-eight's crossing is not
ambiguous), s_d(t) x_d's, and the schedule lead r = ℓ + k (s_d(t) − s_b):

* r > 0 (the ball is less than ℓ / k ahead of x_d(t)): *push*. The C3 ball goal is the curve's
  point at s_b + clip(r, ℓ_min, ℓ_max), with the Fig. 10 phases as in the state-based task.
* r ≤ 0 (the ball is ahead of schedule; it stays "ahead" until r > h, ``lead_hysteresis``):
  ``when_ahead`` = "brake": the goal is clip(|r|, ℓ_min, ℓ_max) *behind* the ball on the
  curve; "hold": the goal on the ball's closest point and the end effector on top of it
  (Phase I) whatever the clock's phase; "push": on at ℓ_min.

With the single-bias gait it gave 36-42% of one traversal in the band: its strokes were 3-5
cm, larger than the band. The tracking error of Fig. 18 is |x_d(t) − x_b(t)|, the distance to
where the ball *should be now*, not to the curve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..algorithm3 import BallTaskLayout, GaitOptions, PhaseTarget, _ee_bias
from ..errors import C3ValueError

__all__ = ["TRAJECTORY_SHAPES", "DEFAULT_SIZE", "TrajectoryOptions", "TimedPath",
           "TimedPathTarget", "shape_points"]

TRAJECTORY_SHAPES = ("circle", "figure8", "square", "triangle")
"""The named shapes of :class:`TrajectoryOptions`."""

DEFAULT_SIZE = {"circle": 0.1, "figure8": 0.1, "square": 0.08, "triangle": 0.06}
"""``size`` per shape when :attr:`TrajectoryOptions.size` is None [m]: every default path is
0.50-0.63 m long (circle 0.628, figure-eight 0.610, square 0.588, rounded triangle 0.500 m), so
at the default 60 s period x_d moves at 8.3-10.5 mm/s, about the state-based lap's mean speed
(a 0.63 m lap in 51-61 s)."""

_SAMPLES = 4096  # points of the closed curve before arc-length re-parameterization


@dataclass(frozen=True)
class TrajectoryOptions:
    """A time-based desired ball trajectory (§VII-D): which curve, how fast, how it is led.

    Attributes:
        shape: one of :data:`TRAJECTORY_SHAPES`.
        period: time for one traversal of the curve at full speed [s].
        size: circle radius, figure-eight half-height, polygon in-radius [m] (None: the
            shape's :data:`DEFAULT_SIZE`).
        corner_radius: corner rounding of the square and triangle [m] (< size).
        laps: traversals to run; with ``FrankaBallOptions.duration`` None the run lasts
            ``ramp_time / 2 + laps · period`` (the time x_d needs to go round ``laps`` times).
        ramp_time: x_d accelerates from rest to full speed over this time [s] (0: starts at
            full speed).
        goal_law: "time" (the C3 ball goal is x_d(t + ``lookahead``), the paper's time-based
            target) or "schedule" (the goal along the curve ahead of the ball's closest point
            by a schedule-adjusted lead; the fields below up to ``max_lead``); module docstring.
        lookahead: τ of the "time" law [s]: the goal is x_d(t + τ). 1 s: x_d moves 0.8-1.1 cm
            in it at the default speeds, a stroke smaller than the 2 cm band.
        goal_velocity: "time" law: the goal ball velocity is dx_d/dt (t + τ) (False: zero, the
            template's, as in the state-based task).
        max_goal_distance: "time" law: a goal farther than this from the ball is moved towards
            the ball onto that distance [m] (None: not limited).
        direction_distance: "time" law: a ball within this distance of its goal gets its Phase
            II bias behind it along the curve's tangent at x_d(t) rather than opposite to the
            (noisy) direction to the goal [m].
        lead_distance: "schedule" law: ℓ, the goal's lead along the curve ahead of the ball's
            closest point when the ball is on schedule [m].
        schedule_gain: k, extra lead per metre the ball is behind x_d(t) along the curve.
        min_lead: ℓ_min, the smallest lead when pushing [m].
        lead_hysteresis: h: a held ball is pushed again once r > h [m].
        when_ahead: what to do with a ball ahead of schedule (r <= 0): "push" (on, with the goal
            ℓ_min ahead), "hold" (the goal on the ball's closest point, the end effector on top
            of it) or "brake" (the goal clip(|r|, ℓ_min, ℓ_max) *behind* it, the Fig. 10 phases
            as usual: the Phase II bias is then in front of the ball).
        max_lead: ℓ_max, the largest lead [m] (a ball far behind otherwise gets a goal far
            ahead, and C3, ball weight 10000, strikes it).
    """

    shape: str = "circle"
    period: float = 60.0
    size: float | None = None
    corner_radius: float = 0.03
    laps: int = 1
    ramp_time: float = 4.0
    lead_distance: float = 0.035
    schedule_gain: float = 1.0
    min_lead: float = 0.02
    lead_hysteresis: float = 0.005
    when_ahead: str = "brake"
    max_lead: float = 0.07
    goal_law: str = "time"
    lookahead: float = 1.0
    goal_velocity: bool = True
    max_goal_distance: float | None = None
    direction_distance: float = 0.005

    def __post_init__(self) -> None:
        if self.shape not in TRAJECTORY_SHAPES:
            raise C3ValueError(f"TrajectoryOptions.shape must be one of "
                               f"{', '.join(TRAJECTORY_SHAPES)}, got {self.shape!r}")
        for name in ("period", "corner_radius", "ramp_time", "lead_distance", "schedule_gain",
                     "min_lead", "max_lead", "lead_hysteresis", "lookahead",
                     "direction_distance"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise C3ValueError(f"TrajectoryOptions.{name} must be a finite number, got {v!r}")
        if not self.period > 0:
            raise C3ValueError(f"TrajectoryOptions.period must be > 0 [s], got {self.period!r}")
        if min(self.ramp_time, self.lead_distance, self.schedule_gain, self.corner_radius,
               self.min_lead, self.lead_hysteresis, self.lookahead,
               self.direction_distance) < 0:
            raise C3ValueError("TrajectoryOptions: ramp_time, lead_distance, schedule_gain, "
                               "min_lead, lead_hysteresis, corner_radius, lookahead and "
                               "direction_distance must be >= 0")
        if not self.min_lead <= self.lead_distance <= self.max_lead:
            raise C3ValueError(f"TrajectoryOptions: need min_lead <= lead_distance <= max_lead, "
                               f"got {self.min_lead}, {self.lead_distance}, {self.max_lead} [m]")
        if self.size is not None and not (isinstance(self.size, (int, float))
                                          and not isinstance(self.size, bool)
                                          and math.isfinite(self.size) and self.size > 0):
            raise C3ValueError(f"TrajectoryOptions.size must be > 0 [m] or None, got "
                               f"{self.size!r}")
        if self.shape in ("square", "triangle") and not self.corner_radius < self.resolved_size:
            raise C3ValueError(f"TrajectoryOptions.corner_radius ({self.corner_radius}) must be "
                               f"< size ({self.resolved_size}) [m]")
        if self.when_ahead not in ("push", "hold", "brake"):
            raise C3ValueError(f"TrajectoryOptions.when_ahead must be 'push', 'hold' or "
                               f"'brake', got {self.when_ahead!r}")
        if isinstance(self.laps, bool) or not isinstance(self.laps, int) or self.laps < 1:
            raise C3ValueError(f"TrajectoryOptions.laps must be an int >= 1, got {self.laps!r}")
        if self.goal_law not in ("time", "schedule"):
            raise C3ValueError(f"TrajectoryOptions.goal_law must be 'time' or 'schedule', got "
                               f"{self.goal_law!r}")
        if not isinstance(self.goal_velocity, (bool, np.bool_)):
            raise C3ValueError(f"TrajectoryOptions.goal_velocity must be True or False, got "
                               f"{self.goal_velocity!r}")
        d = self.max_goal_distance
        if d is not None and (isinstance(d, bool) or not isinstance(d, (int, float))
                              or not (math.isfinite(d) and d > 0)):
            raise C3ValueError(f"TrajectoryOptions.max_goal_distance must be > 0 [m] or None, "
                               f"got {d!r}")

    @property
    def resolved_size(self) -> float:
        """``size``, or the shape's :data:`DEFAULT_SIZE`."""
        return float(DEFAULT_SIZE[self.shape] if self.size is None else self.size)

    @property
    def duration(self) -> float:
        """Simulated time for ``laps`` traversals including the start ramp [s]."""
        return 0.5 * self.ramp_time + self.laps * self.period


def _rounded_polygon(n_sides: int, inradius: float, corner: float, n: int) -> np.ndarray:
    """(n, 2) points, clockwise from the middle of the top edge, of the regular polygon with a
    horizontal top edge and in-radius ``inradius``, corners rounded with radius ``corner``
    (centre at the origin)."""
    r_in = inradius - corner  # in-radius of the inner polygon
    # outward normal of the top edge points at +90°; clockwise, each next edge's normal turns by
    # −360°/n
    normals = [math.pi / 2 - 2 * math.pi * k / n_sides for k in range(n_sides)]
    half = r_in * math.tan(math.pi / n_sides)  # half the inner polygon's side
    pieces: list[np.ndarray] = []
    for k, a in enumerate(normals):
        nrm = np.array([math.cos(a), math.sin(a)])
        tan = np.array([math.sin(a), -math.cos(a)])  # clockwise direction along this edge
        mid = (r_in + corner) * nrm
        # straight part: from the middle of the edge (k = 0 starts there) to its end, then the
        # arc around the inner vertex to the next edge, then (k = last) back to the top middle
        v_end = r_in * nrm + half * tan  # inner polygon vertex at the end of this edge
        pieces.append(np.array([mid, v_end + corner * nrm]))
        b = normals[(k + 1) % n_sides]
        if b > a:
            b -= 2 * math.pi
        th = np.linspace(a, b, 64)
        pieces.append(v_end + corner * np.stack([np.cos(th), np.sin(th)], axis=1))
        v_start_next = r_in * np.array([math.cos(b), math.sin(b)]) - half * np.array(
            [math.sin(b), -math.cos(b)])
        nb = np.array([math.cos(b), math.sin(b)])
        pieces.append(np.array([v_start_next + corner * nb,
                                (r_in + corner) * nb]))
    pts = np.concatenate(pieces)
    return _resample(pts, n)


def _resample(pts: np.ndarray, n: int) -> np.ndarray:
    """``n`` points at equal arc length along the closed polyline ``pts`` (duplicates dropped)."""
    closed = np.vstack([pts, pts[:1]])
    seg = np.linalg.norm(np.diff(closed, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    keep = np.concatenate([[True], seg > 1e-12])
    s, closed = s[keep], closed[keep]
    q = np.linspace(0.0, s[-1], n, endpoint=False)
    return np.stack([np.interp(q, s, closed[:, 0]), np.interp(q, s, closed[:, 1])], axis=1)


def shape_points(shape: str, size: float, corner_radius: float = 0.03,
                 n: int = _SAMPLES) -> np.ndarray:
    """(n, 2) points of the named closed curve around the origin, clockwise from its top point
    (0, size) (module docstring; the polygons at equal arc length)."""
    if shape not in TRAJECTORY_SHAPES:
        raise C3ValueError(f"shape must be one of {', '.join(TRAJECTORY_SHAPES)}, got {shape!r}")
    th = np.linspace(0.0, 2 * math.pi, n, endpoint=False)
    if shape == "circle":
        return size * np.stack([np.sin(th), np.cos(th)], axis=1)
    if shape == "figure8":
        return size * np.stack([0.5 * np.sin(2 * th), np.cos(th)], axis=1)
    return _rounded_polygon(4 if shape == "square" else 3, size, corner_radius, n)


class TimedPath:
    """x_d(t): a closed curve traversed at constant speed after a start ramp (module docstring).

    Args:
        options: :class:`TrajectoryOptions`.
        start: (x, y) of the curve's top point, x_d(0) [m] (the ball's start position).

    Attributes:
        center: (2,) the curve's centre [m].
        points: (n, 2) the curve, clockwise from its top point [m].
        length: its length L [m].
        speed: L / period [m/s].
    """

    def __init__(self, options: TrajectoryOptions, start: Sequence[float] = (0.55, 0.1)):
        if not isinstance(options, TrajectoryOptions):
            raise C3ValueError(f"options must be a TrajectoryOptions, got {options!r}")
        self.options = options
        p0 = np.asarray(start, float)
        if p0.shape != (2,) or not np.all(np.isfinite(p0)):
            raise C3ValueError(f"start must be a finite (x, y) [m], got {start!r}")
        c = p0 - np.array([0.0, options.resolved_size])
        self.center = c
        self.points = c + shape_points(options.shape, options.resolved_size,
                                       options.corner_radius)
        closed = np.vstack([self.points, self.points[:1]])
        seg = np.linalg.norm(np.diff(closed, axis=0), axis=1)
        self._s = np.concatenate([[0.0], np.cumsum(seg)])
        self._closed = closed
        self.length = float(self._s[-1])
        self.speed = self.length / options.period

    def arc_length(self, t: float | np.ndarray) -> np.ndarray:
        """s(t): distance travelled along the curve by time t [m] (unwrapped)."""
        t = np.maximum(np.asarray(t, float), 0.0)
        tr = self.options.ramp_time
        if tr == 0:
            return self.speed * t
        return np.where(t < tr, self.speed * t * t / (2 * tr), self.speed * (t - 0.5 * tr))

    def position(self, t: float | np.ndarray) -> np.ndarray:
        """x_d(t): (2,) for a scalar t, (T, 2) for (T,) times [m]."""
        return self.point_at(self.arc_length(t))

    def point_at(self, s: float | np.ndarray) -> np.ndarray:
        """The curve's point(s) at arc length s [m] (taken modulo L)."""
        s = np.mod(np.asarray(s, float), self.length)
        return np.stack([np.interp(s, self._s, self._closed[:, 0]),
                         np.interp(s, self._s, self._closed[:, 1])], axis=-1)

    def closest_arc_length(self, xy: np.ndarray, near: float) -> float:
        """Unwrapped arc length of the curve's (sampled) point closest to ``xy`` among those
        within L/4 of arc length ``near`` [m]."""
        n = self.points.shape[0]
        step = self.length / n
        k0 = int(round(near / step))
        ks = np.arange(k0 - n // 4, k0 + n // 4 + 1)
        d2 = np.sum((self.points[ks % n] - np.asarray(xy, float)[:2]) ** 2, axis=1)
        return float(ks[int(np.argmin(d2))] * step)

    def tangent(self, s: float) -> np.ndarray:
        """(2,) unit tangent (direction of travel) of the curve at arc length s (central
        difference over two samples either side)."""
        h = 2.0 * self.length / self.points.shape[0]
        d = self.point_at(s + h) - self.point_at(s - h)
        return d / max(float(np.linalg.norm(d)), 1e-12)

    def velocity(self, t: float) -> np.ndarray:
        """(2,) dx_d/dt at time t [m/s]."""
        tr = self.options.ramp_time
        sdot = self.speed * (min(max(t, 0.0) / tr, 1.0) if tr > 0 else 1.0)
        return sdot * self.tangent(float(self.arc_length(t)))

    def laps(self, t: float | np.ndarray) -> np.ndarray:
        """Traversals of x_d completed by time t (fractional)."""
        return self.arc_length(t) / self.length

    def lap_start_times(self, n: int) -> np.ndarray:
        """(n + 1,) times at which x_d starts traversal 0, 1, ..., n [s]."""
        k = np.arange(n + 1, dtype=float)
        tr = self.options.ramp_time
        return np.where(k == 0, 0.0, k * self.options.period + 0.5 * tr)

    def tracking_error(self, t: np.ndarray, ball_xy: np.ndarray) -> np.ndarray:
        """(T,) |x_d(t) − x_b(t)| [m] (Fig. 18) for (T,) times and (T, 2) ball positions."""
        return np.linalg.norm(self.position(np.asarray(t, float)) - np.asarray(ball_xy)[:, :2],
                              axis=1)


@dataclass
class TimedPathTarget:
    """Target generator (:class:`c3mpc.algorithm3.TargetGenerator`) for one ball on a
    :class:`TimedPath`: the C3 ball goal is x_d(t + τ) (``goal_law="time"``) or the curve's
    point ahead of the ball's closest point by the schedule-adjusted lead ("schedule"; module
    docstring), the end-effector biases are the Fig. 10 phases relative to it, as
    :class:`c3mpc.algorithm3.CircleTarget`'s (the staged Phase II lift included).
    ``PhaseTarget.ball_targets`` is x_d(t), the position the ball should have now (logged, and
    the tracking error's reference).

    Attributes:
        template: (n_x,) goal state (ball x, y and end-effector position overwritten).
        layout: :class:`BallTaskLayout` of the single-ball model.
        path: the :class:`TimedPath`.
        gait: :class:`GaitOptions`.
    """

    template: np.ndarray
    layout: BallTaskLayout
    path: TimedPath
    gait: GaitOptions = field(default_factory=GaitOptions)

    def __post_init__(self) -> None:
        self.ahead = False  # the ball is ahead of schedule (hysteresis state)
        if self.layout.n_balls != 1:
            raise C3ValueError(f"TimedPathTarget is for one ball, the layout has "
                               f"{self.layout.n_balls}")
        self.template = np.asarray(self.template, float).copy()

    def goal(self, ball_xy: np.ndarray, t: float) -> np.ndarray:
        """(2,) C3's ball goal at time t for a ball at ``ball_xy`` [m] (updates the state
        :attr:`ahead`: the ball is ahead of schedule)."""
        o = self.path.options
        s_d = float(self.path.arc_length(t))
        s_b = self.path.closest_arc_length(ball_xy, s_d)
        r = o.lead_distance + o.schedule_gain * (s_d - s_b)
        self.ahead = r <= o.lead_hysteresis if self.ahead else r <= 0.0
        lead = min(max(abs(r), o.min_lead), o.max_lead)
        if not self.ahead or o.when_ahead == "push":
            return self.path.point_at(s_b + (lead if r > 0 else o.min_lead))
        if o.when_ahead == "hold":
            return self.path.point_at(s_b)
        return self.path.point_at(s_b - lead)

    def time_goal(self, ball_xy: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The "time" law at time t for a ball at ``ball_xy``: ((2,) C3's ball goal x_d(t + τ),
        limited to ``max_goal_distance`` from the ball [m]; (2,) the point the Phase II bias
        is placed opposite to: the goal, or within ``direction_distance`` of it the ball
        advanced along the curve's tangent at x_d(t))."""
        o = self.path.options
        b = np.asarray(ball_xy, float)[:2]
        tgt = self.path.position(t + o.lookahead)
        d = tgt - b
        n = float(np.linalg.norm(d))
        if o.max_goal_distance is not None and n > o.max_goal_distance:
            tgt = b + d * (o.max_goal_distance / n)
        if n > o.direction_distance:
            return tgt, tgt
        return tgt, b + self.path.tangent(float(self.path.arc_length(t)))

    def __call__(self, x_hat: np.ndarray, t: float) -> PhaseTarget:
        lay = self.layout
        ball = lay.balls(x_hat)[0]
        o = self.path.options
        g = self.template.copy()
        if o.goal_law == "time":
            tgt, aim = self.time_goal(ball[:2], t)
            phase = self.gait.phase(t)
            if o.goal_velocity and lay.ball_velocity_xy:
                g[list(lay.ball_velocity_xy[0])] = self.path.velocity(t + o.lookahead)
        else:
            tgt = aim = self.goal(ball[:2], t)
            holding = self.ahead and o.when_ahead == "hold"
            phase = 0 if holding else self.gait.phase(t)
        g[list(lay.ball_xy[0])] = tgt
        g[list(lay.ee_position)] = _ee_bias(self.gait, phase, ball, aim, lay, t, lay.ee(x_hat))
        return PhaseTarget(g, phase, self.path.position(t)[None, :])


def describe(path: TimedPath) -> dict[str, Any]:
    """JSON-able description of a path (for summaries)."""
    o = path.options
    return {"shape": o.shape, "period_s": o.period, "size_m": o.resolved_size,
            "length_m": path.length, "speed_m_per_s": path.speed, "laps": o.laps,
            "lead_distance_m": o.lead_distance, "schedule_gain": o.schedule_gain,
            "lead_hysteresis_m": o.lead_hysteresis, "when_ahead": o.when_ahead,
            "min_lead_m": o.min_lead, "max_lead_m": o.max_lead, "ramp_time_s": o.ramp_time,
            "goal_law": o.goal_law, "lookahead_s": o.lookahead, "goal_velocity": o.goal_velocity,
            "max_goal_distance_m": o.max_goal_distance,
            "direction_distance_m": o.direction_distance}
