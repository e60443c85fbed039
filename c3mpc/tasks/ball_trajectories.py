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

:class:`TimedPathTarget` is the target generator of :mod:`c3mpc.algorithm3` for such a path:
the C3 ball goal is x_d(t + ``lead_time``) (the state-based task leads by α_l = 20° along the
circle, ≈ 3.5 cm; a lead in time does the same along any path, and a ball behind schedule gets
a farther goal), optionally moved to at most ``max_target_distance`` from the ball; the
end-effector biases are the Fig. 10 phases relative to that goal. The tracking error of
Fig. 18 is |x_d(t) − x_b(t)|, distance to where the ball *should be now*, not to the path.
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
0.5-0.63 m long (circle 0.628, figure-eight 0.618, square 0.585, rounded triangle 0.501 m), so at
the default 60 s period the ball moves at 8-10.5 mm/s, about the state-based lap's speed
(a 0.63 m lap in 53-61 s)."""

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
        lead_time: C3's ball goal is x_d(t + lead_time) [s] (0: x_d(t) itself).
        max_target_distance: the goal moved to at most this far from the ball [m] (None: not
            limited). A ball that fell behind otherwise gets a goal far ahead, and C3 (ball
            weight 10000) strikes it.
    """

    shape: str = "circle"
    period: float = 60.0
    size: float | None = None
    corner_radius: float = 0.03
    laps: int = 1
    ramp_time: float = 4.0
    lead_time: float = 3.0
    max_target_distance: float | None = 0.04

    def __post_init__(self) -> None:
        if self.shape not in TRAJECTORY_SHAPES:
            raise C3ValueError(f"TrajectoryOptions.shape must be one of "
                               f"{', '.join(TRAJECTORY_SHAPES)}, got {self.shape!r}")
        for name in ("period", "corner_radius", "ramp_time", "lead_time"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise C3ValueError(f"TrajectoryOptions.{name} must be a finite number, got {v!r}")
        if not self.period > 0:
            raise C3ValueError(f"TrajectoryOptions.period must be > 0 [s], got {self.period!r}")
        if self.ramp_time < 0 or self.lead_time < 0 or self.corner_radius < 0:
            raise C3ValueError("TrajectoryOptions: ramp_time, lead_time and corner_radius must "
                               "be >= 0")
        if self.size is not None and not (isinstance(self.size, (int, float))
                                          and not isinstance(self.size, bool)
                                          and math.isfinite(self.size) and self.size > 0):
            raise C3ValueError(f"TrajectoryOptions.size must be > 0 [m] or None, got "
                               f"{self.size!r}")
        if self.shape in ("square", "triangle") and not self.corner_radius < self.resolved_size:
            raise C3ValueError(f"TrajectoryOptions.corner_radius ({self.corner_radius}) must be "
                               f"< size ({self.resolved_size}) [m]")
        if isinstance(self.laps, bool) or not isinstance(self.laps, int) or self.laps < 1:
            raise C3ValueError(f"TrajectoryOptions.laps must be an int >= 1, got {self.laps!r}")
        d = self.max_target_distance
        if d is not None and not (math.isfinite(d) and d > 0):
            raise C3ValueError(f"TrajectoryOptions.max_target_distance must be > 0 [m] or None, "
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
        s = np.mod(self.arc_length(t), self.length)
        out = np.stack([np.interp(s, self._s, self._closed[:, 0]),
                        np.interp(s, self._s, self._closed[:, 1])], axis=-1)
        return out

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
    :class:`TimedPath`: the C3 ball goal is x_d(t + lead_time) (limited to
    ``max_target_distance`` from the ball), the end-effector biases are the Fig. 10 phases
    relative to it, as :class:`c3mpc.algorithm3.CircleTarget`'s. ``PhaseTarget.ball_targets``
    is x_d(t), the position the ball should have now (logged, and the tracking error's
    reference).

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
        if self.layout.n_balls != 1:
            raise C3ValueError(f"TimedPathTarget is for one ball, the layout has "
                               f"{self.layout.n_balls}")
        self.template = np.asarray(self.template, float).copy()

    def goal(self, ball_xy: np.ndarray, t: float) -> np.ndarray:
        """(2,) C3's ball goal at time t for a ball at ``ball_xy`` [m]."""
        o = self.path.options
        tgt = self.path.position(t + o.lead_time)
        d_max = o.max_target_distance
        if d_max is not None:
            b = np.asarray(ball_xy, float)[:2]
            n = float(np.linalg.norm(tgt - b))
            if n > d_max:
                tgt = b + (tgt - b) * (d_max / n)
        return tgt

    def __call__(self, x_hat: np.ndarray, t: float) -> PhaseTarget:
        lay = self.layout
        ball = lay.balls(x_hat)[0]
        tgt = self.goal(ball[:2], t)
        phase = self.gait.phase(t)
        g = self.template.copy()
        ix, iy = lay.ball_xy[0]
        g[ix], g[iy] = tgt
        g[list(lay.ee_position)] = _ee_bias(self.gait, phase, ball, tgt, lay)
        return PhaseTarget(g, phase, self.path.position(t)[None, :])


def describe(path: TimedPath) -> dict[str, Any]:
    """JSON-able description of a path (for summaries)."""
    o = path.options
    return {"shape": o.shape, "period_s": o.period, "size_m": o.resolved_size,
            "length_m": path.length, "speed_m_per_s": path.speed, "laps": o.laps,
            "lead_time_s": o.lead_time, "ramp_time_s": o.ramp_time,
            "max_target_distance_m": o.max_target_distance}
