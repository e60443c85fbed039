"""Time-based ball trajectories (c3mpc/tasks/ball_trajectories.py, seed 003 §VII-D): the shapes
against their analytic lengths and support functions, the constant-speed timing with its start
ramp, and the target generator's goal and biases. The closed-loop tracking of each shape is a
slow test in tests/test_franka_ball_trajectories_loop.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad

from c3mpc.algorithm3 import GaitOptions
from c3mpc.errors import C3ValueError
from c3mpc.tasks.ball_trajectories import (
    TRAJECTORY_SHAPES,
    TimedPath,
    TimedPathTarget,
    TrajectoryOptions,
    shape_points,
)
from c3mpc.tasks.franka_ball import franka_layout
from plants import load_plant

START = (0.55, 0.1)


def _length(pts: np.ndarray) -> float:
    return float(np.sum(np.linalg.norm(np.diff(np.vstack([pts, pts[:1]]), axis=0), axis=1)))


@pytest.mark.parametrize("shape", TRAJECTORY_SHAPES)
def test_every_shape_starts_at_its_top_point_and_runs_clockwise(shape):
    pts = shape_points(shape, 0.1, 0.03)
    np.testing.assert_allclose(pts[0], [0.0, 0.1], atol=1e-12)
    assert pts[:, 1].max() == pytest.approx(0.1, abs=1e-9)  # the start is the top
    assert pts[5, 0] > 0 and abs(pts[5, 1] - 0.1) < 1e-4  # leaving towards +x
    # clockwise seen from above: negative signed area (shoelace), the figure-eight's two lobes
    # cancel (one each way)
    x, y = pts[:, 0], pts[:, 1]
    area = 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)
    if shape == "figure8":
        assert abs(area) < 1e-6
        upper = pts[pts[:, 1] > 0]
        ux, uy = upper[:, 0], upper[:, 1]
        assert 0.5 * np.sum(ux * np.roll(uy, -1) - np.roll(ux, -1) * uy) < 0
    else:
        assert area < 0


def test_circle_and_rounded_polygons_have_their_analytic_lengths_and_inradius():
    r, c = 0.1, 0.03
    assert _length(shape_points("circle", r)) == pytest.approx(2 * math.pi * r, rel=1e-6)
    for shape, n in (("square", 4), ("triangle", 3)):
        pts = shape_points(shape, r, c)
        r_in = r - c  # inner polygon's in-radius; sides 2 r_in tan(π/n), plus one full circle
        exact = n * 2 * r_in * math.tan(math.pi / n) + 2 * math.pi * c
        assert _length(pts) == pytest.approx(exact, rel=1e-4)
        # support function: the distance to each side's line is the in-radius, for every side
        for k in range(n):
            a = math.pi / 2 - 2 * math.pi * k / n
            assert np.max(pts @ [math.cos(a), math.sin(a)]) == pytest.approx(r, abs=1e-9)
        # the corners are arcs: nothing farther from the centre than the inner vertex + c
        assert np.max(np.linalg.norm(pts, axis=1)) == pytest.approx(
            r_in / math.cos(math.pi / n) + c, abs=1e-6)


def test_figure_eight_length_matches_quadrature():
    a = 0.1
    exact, _ = quad(lambda th: a * math.hypot(math.cos(2 * th), math.sin(th)), 0, 2 * math.pi,
                    limit=200)
    assert _length(shape_points("figure8", a)) == pytest.approx(exact, rel=1e-5)


def test_timed_path_runs_at_constant_speed_after_a_smooth_ramp():
    o = TrajectoryOptions(shape="square", period=40.0, ramp_time=4.0)
    p = TimedPath(o, START)
    np.testing.assert_allclose(p.center, [0.55, 0.1 - o.resolved_size])
    np.testing.assert_allclose(p.position(0.0), START, atol=1e-12)
    v = p.length / 40.0
    assert p.speed == pytest.approx(v)
    # ramp: s = v t² / (2 t_r), continuous with matching slope at t_r
    assert float(p.arc_length(2.0)) == pytest.approx(v * 4.0 / 8.0)
    h = 1e-6
    assert float(p.arc_length(4.0 + h) - p.arc_length(4.0 - h)) / (2 * h) == pytest.approx(v)
    # one traversal after the ramp's half: back at the start; a quarter: a quarter of L along
    t1 = o.period + 0.5 * o.ramp_time
    np.testing.assert_allclose(p.position(t1), START, atol=1e-9)
    assert o.duration == pytest.approx(t1)
    np.testing.assert_allclose(p.lap_start_times(2), [0.0, t1, t1 + o.period])
    # constant speed on a straight stretch: |Δx_d| = v Δt
    ts = np.array([4.5, 5.5])
    d = np.linalg.norm(np.diff(p.position(ts), axis=0))
    assert d == pytest.approx(v * 1.0, rel=1e-6)
    ball = p.position(ts) + [[0.003, 0.004], [0.0, 0.0]]
    np.testing.assert_allclose(p.tracking_error(ts, ball), [0.005, 0.0], atol=1e-12)


def _target(**kw):
    plant = load_plant("franka-ball")
    lay = franka_layout(plant)
    o = TrajectoryOptions(**kw)
    return plant, lay, TimedPathTarget(plant.defaults.x_goal, lay, TimedPath(o, START),
                                       GaitOptions(phase2_back=0.05, phase2_height=0.045))


def test_target_leads_x_d_and_is_limited_to_the_max_distance():
    plant, lay, tgt = _target(shape="circle", ramp_time=0.0, lead_time=3.0,
                              max_target_distance=None)
    x = plant.defaults.x0.copy()
    path = tgt.path
    pt = tgt(x, 10.0)
    ix, iy = lay.ball_xy[0]
    np.testing.assert_allclose(pt.x_goal[[ix, iy]], path.position(13.0), atol=1e-12)
    np.testing.assert_allclose(pt.ball_targets[0], path.position(10.0), atol=1e-12)
    # Phase I (t = 10 s in the 1.5 s cycle: 10 mod 1.5 = 1.0 -> Phase II): bias 5 cm behind the
    # ball, opposite to the goal, at 4.5 cm
    assert pt.phase == 1
    ball = lay.balls(x)[0]
    e = path.position(13.0) - ball[:2]
    e /= np.linalg.norm(e)
    np.testing.assert_allclose(pt.x_goal[list(lay.ee_position)],
                               [*(ball[:2] - 0.05 * e), 0.045], atol=1e-12)
    _, _, lim = _target(shape="circle", ramp_time=0.0, lead_time=3.0, max_target_distance=0.01)
    g = lim(x, 10.0).x_goal[[ix, iy]]
    assert np.linalg.norm(g - ball[:2]) == pytest.approx(0.01)
    np.testing.assert_allclose((g - ball[:2]) / 0.01, e, atol=1e-12)


@pytest.mark.parametrize("kw", [{"shape": "star"}, {"period": 0.0}, {"period": float("nan")},
                                {"size": -0.1}, {"laps": 0}, {"laps": True},
                                {"shape": "square", "size": 0.02, "corner_radius": 0.03},
                                {"lead_time": -1.0}, {"max_target_distance": 0.0}])
def test_bad_trajectory_options_are_named(kw):
    with pytest.raises(C3ValueError, match="TrajectoryOptions"):
        TrajectoryOptions(**kw)


def test_path_and_target_reject_bad_arguments():
    with pytest.raises(C3ValueError, match="start"):
        TimedPath(TrajectoryOptions(), (0.5,))
    with pytest.raises(C3ValueError, match="TrajectoryOptions"):
        TimedPath("circle", START)  # type: ignore[arg-type]
    plant = load_plant("franka-balls-2")
    with pytest.raises(C3ValueError, match="one ball"):
        TimedPathTarget(plant.defaults.x_goal, franka_layout(plant),
                        TimedPath(TrajectoryOptions(), START))
