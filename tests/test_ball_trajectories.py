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
            r_in / math.cos(math.pi / n) + c, abs=1e-5)  # arcs sampled every 0.15 mm


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
    ts = np.array([4.2, 4.8])  # s = 3.2 ... 4.1 cm: the top edge is straight to 5 cm
    d = np.linalg.norm(np.diff(p.position(ts), axis=0))
    assert d == pytest.approx(v * 0.6, rel=1e-6)
    ball = p.position(ts) + [[0.003, 0.004], [0.0, 0.0]]
    np.testing.assert_allclose(p.tracking_error(ts, ball), [0.005, 0.0], atol=1e-12)


def _target(**kw):
    plant = load_plant("franka-ball")
    lay = franka_layout(plant)
    o = TrajectoryOptions(**kw)
    return plant, lay, TimedPathTarget(plant.defaults.x_goal, lay, TimedPath(o, START),
                                       GaitOptions(phase2_back=0.05, phase2_height=0.045))


def _with_ball(x: np.ndarray, lay, xy) -> np.ndarray:
    x = x.copy()
    ix, iy = lay.ball_xy[0]
    x[ix], x[iy] = xy
    return x


@pytest.mark.parametrize("when_ahead", ["brake", "hold", "push"])
def test_goal_is_eq25_along_the_curve_with_the_lead_set_by_the_schedule(when_ahead):
    plant, lay, tgt = _target(shape="circle", ramp_time=0.0, period=60.0, when_ahead=when_ahead,
                              schedule_gain=3.0, goal_law="schedule")
    path = tgt.path
    ix, iy = lay.ball_xy[0]
    t = 10.0
    s_d = float(path.arc_length(t))
    x0 = plant.defaults.x0
    ang = lambda s: s / 0.1  # noqa: E731 - arc length -> angle on the 0.1 m circle
    # k = 3, ℓ = 3.5 cm, ℓ_min = 2 cm, ℓ_max = 7 cm, h = 5 mm; "ahead" has a memory, so the
    # order matters: (how far the ball is behind x_d along the curve, r, its goal's lead when
    # pushed, whether it counts as ahead)
    ahead_lead = {"brake": lambda r: -max(abs(r), 0.02), "hold": lambda r: 0.0,
                  "push": lambda r: 0.02}[when_ahead]
    for behind, lead, ahead in ((0.0, 0.035, False), (0.01, 0.065, False), (0.1, 0.07, False),
                                (-0.005, 0.02, False), (-0.01, 0.02, False),
                                (-0.013, -0.004, True),  # r = −4 mm: ahead
                                (-0.011, 0.002, True),  # r = +2 mm <= h: still ahead
                                (-0.02, -0.025, True),
                                (-0.005, 0.02, False)):  # r = +20 mm: on schedule again
        s_b = s_d - behind
        ball = [0.55 + 0.1 * math.sin(ang(s_b)), 0.1 * math.cos(ang(s_b))]  # at most L/4 behind
        pt = tgt(_with_ball(x0, lay, ball), t)
        if ahead:
            lead = ahead_lead(lead)
        exact = [0.55 + 0.1 * math.sin(ang(s_b + lead)), 0.1 * math.cos(ang(s_b + lead))]
        np.testing.assert_allclose(pt.x_goal[[ix, iy]], exact, atol=2e-4)  # sampled curve
        np.testing.assert_allclose(pt.ball_targets[0], path.position(t), atol=1e-12)
        assert tgt.ahead == ahead
        held = ahead and when_ahead == "hold"
        assert pt.phase == (0 if held else 1)  # t = 10 s is in Phase II; a held ball: Phase I
        if held:  # the end effector on top of the ball
            top = lay.balls(_with_ball(x0, lay, ball))[0] + [0, 0, lay.ball_radius
                                                             + lay.ee_radius]
            np.testing.assert_allclose(pt.x_goal[list(lay.ee_position)], top, atol=1e-12)
    # a ball 1.5 cm outside the circle: the goal is on the circle, 3.5 cm of arc past the
    # ball's radial projection (the state-based eq. 25, on schedule)
    a = ang(s_d)
    pt = tgt(_with_ball(x0, lay, [0.55 + 0.115 * math.sin(a), 0.115 * math.cos(a)]), t)
    np.testing.assert_allclose(pt.x_goal[[ix, iy]], [0.55 + 0.1 * math.sin(a + 0.35),
                                                     0.1 * math.cos(a + 0.35)], atol=2e-4)
    # Phase II (t = 10 s in the 1.5 s cycle: 10 mod 1.5 = 1.0): the end-effector bias 5 cm
    # behind the ball, opposite to the goal, at 4.5 cm
    assert pt.phase == 1
    ball = lay.balls(_with_ball(x0, lay, [0.55 + 0.115 * math.sin(a), 0.115 * math.cos(a)]))[0]
    e = pt.x_goal[[ix, iy]] - ball[:2]
    e /= np.linalg.norm(e)
    np.testing.assert_allclose(pt.x_goal[list(lay.ee_position)],
                               [*(ball[:2] - 0.05 * e), 0.045], atol=1e-12)


def test_time_goal_is_x_d_ahead_by_the_lookahead_with_its_velocity_and_a_braking_bias():
    """The default "time" law: C3's ball goal is x_d(t + τ) on the 0.1 m circle whatever the
    ball's state, its goal velocity dx_d/dt (t + τ) (against a central difference of x_d), the
    Phase II bias behind the ball opposite to that goal: in front of a ball ahead of x_d."""
    plant, lay, tgt = _target(shape="circle", ramp_time=0.0, period=60.0, lookahead=1.5)
    path = tgt.path
    ix, iy = lay.ball_xy[0]
    jx, jy = lay.ball_velocity_xy[0]
    x0 = plant.defaults.x0
    w = 2 * math.pi / 60.0  # rad/s on the circle, clockwise from +y
    on = lambda a, r=0.1: np.array([0.55 + r * math.sin(a), r * math.cos(a)])  # noqa: E731
    t = 10.0  # Phase II (10 mod 1.5 = 1.0)
    goal = on(w * (t + 1.5))
    h = 1e-4
    v_fd = (path.position(t + 1.5 + h) - path.position(t + 1.5 - h)) / (2 * h)
    # the curve is 4096 chords: directions within half a chord's turn (7.7e-4 rad) of exact
    np.testing.assert_allclose(v_fd, 0.1 * w * np.array([math.cos(w * (t + 1.5)),
                                                         -math.sin(w * (t + 1.5))]), atol=1e-5)
    for ball in (on(w * t), on(w * t - 0.3, 0.11), on(w * t + 0.4)):  # on x_d, behind, ahead
        pt = tgt(_with_ball(x0, lay, ball), t)
        np.testing.assert_allclose(pt.x_goal[[ix, iy]], goal, atol=2e-4)  # sampled curve
        np.testing.assert_allclose(pt.x_goal[[jx, jy]], v_fd, atol=1e-5)
        np.testing.assert_allclose(pt.ball_targets[0], path.position(t), atol=1e-12)
        assert pt.phase == 1
        e = (goal - ball) / np.linalg.norm(goal - ball)
        np.testing.assert_allclose(pt.x_goal[list(lay.ee_position)],
                                   [*(ball - 0.05 * e), 0.045], atol=3e-4)
    # the ball 4 cm of arc ahead of x_d(t + τ): the bias is ahead of it along the curve
    ahead = on(w * (t + 1.5) + 0.4)
    bias = tgt(_with_ball(x0, lay, ahead), t).x_goal[list(lay.ee_position)]
    assert np.dot(bias[:2] - ahead, path.tangent(float(path.arc_length(t)))) > 0.04
    # within direction_distance (5 mm) of the goal: the bias behind the ball along the tangent
    near = goal + [0.002, 0.001]
    bias = tgt(_with_ball(x0, lay, near), t).x_goal[list(lay.ee_position)]
    np.testing.assert_allclose(bias[:2], near - 0.05 * path.tangent(float(path.arc_length(t))),
                               atol=1e-12)
    # Phase I: on top of the ball; the goal still x_d(t + τ)
    pt = tgt(_with_ball(x0, lay, on(w * 9.0)), 9.0)
    assert pt.phase == 0
    np.testing.assert_allclose(pt.x_goal[list(lay.ee_position)],
                               [*on(w * 9.0), 2 * lay.ball_radius + lay.ee_radius], atol=1e-12)


def test_time_goal_limits_and_options():
    plant, lay, tgt = _target(shape="circle", ramp_time=0.0, period=60.0, lookahead=1.0,
                              max_goal_distance=0.01, goal_velocity=False)
    ix, iy = lay.ball_xy[0]
    jx, jy = lay.ball_velocity_xy[0]
    x0 = plant.defaults.x0
    ball = np.array([0.55, 0.05])
    pt = tgt(_with_ball(x0, lay, ball), 10.0)
    g = pt.x_goal[[ix, iy]]
    assert np.linalg.norm(g - ball) == pytest.approx(0.01)  # moved onto 1 cm from the ball
    d = tgt.path.position(11.0) - ball
    np.testing.assert_allclose((g - ball) / 0.01, d / np.linalg.norm(d), atol=1e-12)
    np.testing.assert_array_equal(pt.x_goal[[jx, jy]], plant.defaults.x_goal[[jx, jy]])


def test_time_goal_uses_the_staged_phase2_lift():
    """With a gait whose Phase II starts with a lift (CIRCLE_GAIT), the bias in the lift stage
    is above the end effector's own x, y (the target passes t and the end effector to the
    bias, as CircleTarget does); after it, behind the ball."""
    plant = load_plant("franka-ball")
    lay = franka_layout(plant)
    gait = GaitOptions(phase1_height=-0.002, phase2_lift=0.003, phase2_back=0.027,
                       phase2_height=0.0775)
    tgt = TimedPathTarget(plant.defaults.x_goal, lay, TimedPath(TrajectoryOptions(), START),
                          gait)
    x = _with_ball(plant.defaults.x0, lay, START)
    x[list(lay.ee_position)] = [0.54, 0.11, 0.09]
    top = lay.ball_radius * 2 + lay.ee_radius
    pt = tgt(x, 10.05)  # 10.05 mod 1.5 = 1.05: in the first third of Phase II
    np.testing.assert_allclose(pt.x_goal[list(lay.ee_position)], [0.54, 0.11, top + 0.003],
                               atol=1e-12)
    pt = tgt(x, 10.4)
    assert pt.x_goal[lay.ee_position[2]] == pytest.approx(0.0775)


def test_figure_eight_crossing_is_resolved_by_the_schedule():
    plant, lay, tgt = _target(shape="figure8", ramp_time=0.0, period=40.0,
                              schedule_gain=0.0, goal_law="schedule")
    path = tgt.path
    ix, iy = lay.ball_xy[0]
    x = _with_ball(plant.defaults.x0, lay, path.center)  # the ball on the crossing
    # first pass (s_d = L/4, heading down-left) and second pass (3L/4, heading up-left)
    t1, t2 = 0.25 * 40.0, 0.75 * 40.0
    g1 = tgt(x, t1).x_goal[[ix, iy]] - path.center
    g2 = tgt(x, t2).x_goal[[ix, iy]] - path.center
    assert g1[0] < 0 and g1[1] < 0 and g2[0] < 0 and g2[1] > 0
    assert np.linalg.norm(g1) == pytest.approx(0.035, rel=0.02)  # nearly straight there


@pytest.mark.parametrize("kw", [{"shape": "star"}, {"period": 0.0}, {"period": float("nan")},
                                {"size": -0.1}, {"laps": 0}, {"laps": True},
                                {"shape": "square", "size": 0.02, "corner_radius": 0.03},
                                {"lead_distance": -1.0}, {"schedule_gain": float("inf")},
                                {"max_lead": 0.01}, {"when_ahead": "stop"},
                                {"goal_law": "lead"}, {"lookahead": -1.0},
                                {"goal_velocity": 1}, {"max_goal_distance": 0.0},
                                {"direction_distance": float("nan")}])
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
