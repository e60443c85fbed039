"""Model error and pushes for the Franka ball task (c3mpc/tasks/franka_robustness.py) and the
per-lap statistics (c3mpc/tasks/franka_ball_laps.py).

The forces are checked in the real contact simulator (plants.sim, SAP) on a lone ball: a push
changes its velocity by exactly J / m in the air, and on a slanted table it rolls downhill at the
analytic 5/7 g sin θ. The statistics are checked on motions whose answers are known by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from c3mpc.errors import C3ValueError
from c3mpc.tasks.franka_ball_laps import circle_lap_boundaries, lap_statistics
from c3mpc.tasks.franka_robustness import (
    GRAVITY,
    BallForces,
    RobustnessOptions,
    push_recovery,
    scene_options,
    simulated_start,
)
from plants.models.franka_ball import BALL_MASS, BALL_RADIUS

DT = 0.002


def _ball_sim(r: RobustnessOptions, z: float, ground: bool):
    from plants.sim import ContactParams, SceneBuilder, Simulator, Sphere
    from plants.sim.scene import sphere_inertia

    so = scene_options(r)
    b = SceneBuilder()
    if ground:
        b.add_ground(ContactParams(float("inf"), 0.0, so.mu))
    b.add_free_body("ball", so.ball_mass, sphere_inertia(so.ball_mass, so.ball_radius),
                    [("ball", Sphere(so.ball_radius), ContactParams(1e6, 1e-3, so.mu))],
                    (0.0, 0.0, z))
    forces = BallForces(r, [0], so.ball_mass, DT)

    def controller(t, q, v):
        tau = np.zeros(v.shape[0])
        forces.add(t, tau)
        return tau

    return Simulator(b.build(), solver="sap", dt=DT, controller=controller), so


def test_a_push_changes_the_ball_velocity_by_impulse_over_mass():
    J = (0.0066, -0.0033)
    r = RobustnessOptions(push_times=(0.01,), push_impulse=J, ball_mass_scale=1.5)
    sim, so = _ball_sim(r, z=1.0, ground=False)  # in the air: nothing else acts horizontally
    for _ in range(20):
        sim.step()
    np.testing.assert_allclose(sim.v[:2], np.array(J) / (1.5 * BALL_MASS), rtol=1e-9)
    assert so.ball_mass == pytest.approx(1.5 * BALL_MASS)


def test_on_a_slanted_table_the_ball_rolls_downhill_at_five_sevenths_g_sin_theta():
    r = RobustnessOptions(table_slant_deg=2.0, slant_direction_deg=30.0)
    sim, _ = _ball_sim(r, z=BALL_RADIUS, ground=True)
    T = 0.5
    for _ in range(int(round(T / DT))):
        sim.step()
    a = 5.0 / 7.0 * GRAVITY * math.sin(math.radians(2.0))
    d = np.array([math.cos(math.radians(30)), math.sin(math.radians(30))])
    np.testing.assert_allclose(sim.v[:2], a * T * d, rtol=0.02)
    # rolling: the contact point is at rest (ω × (−r e_z) + v = 0), so it does not slide
    w_world = sim.v[3:6]  # body frame; the ball's rotation is small over 0.5 s
    slip = sim.v[:3] + np.cross(w_world, [0.0, 0.0, -BALL_RADIUS])
    assert np.linalg.norm(slip[:2]) < 0.02 * np.linalg.norm(sim.v[:2])


def test_ball_forces_push_only_during_the_step_that_contains_the_push_time():
    r = RobustnessOptions(push_times=(0.1, 0.25), push_impulse=(0.002, 0.0))
    f = BallForces(r, [7, 13], BALL_MASS, DT)
    ts = np.arange(0, 0.4, DT)
    fx = np.array([f.force(t)[0] for t in ts])
    assert np.count_nonzero(fx) == 2
    assert np.sum(fx) * DT == pytest.approx(2 * 0.002)
    tau = np.zeros(19)
    f.add(ts[np.flatnonzero(fx)[0]], tau)
    assert tau[7] == tau[13] == pytest.approx(0.002 / DT) and np.count_nonzero(tau) == 2


def test_scene_and_start_follow_the_mismatch():
    r = RobustnessOptions(friction=0.4, ball_radius_scale=1.2, ball_mass_scale=0.5)
    so = scene_options(r)
    assert (so.mu, so.ball_radius, so.ball_mass) == pytest.approx(
        (0.4, 1.2 * BALL_RADIUS, 0.5 * BALL_MASS))
    ee0 = np.array([0.55, 0.1, 0.1])
    balls0 = np.array([[0.55, 0.1, BALL_RADIUS]])
    ee, balls = simulated_start(r, ee0, balls0)
    assert balls[0, 2] == pytest.approx(1.2 * BALL_RADIUS)  # resting on the table
    assert ee[2] - 2 * balls[0, 2] == pytest.approx(ee0[2] - 2 * BALL_RADIUS)  # same clearance
    assert RobustnessOptions().is_nominal and not r.is_nominal
    assert scene_options(None).mu == 1.0


@pytest.mark.parametrize("kw", [{"table_slant_deg": 45.0}, {"table_slant_deg": float("nan")},
                                {"friction": -0.1}, {"ball_mass_scale": 0.0},
                                {"ball_radius_scale": True}, {"push_times": (2.0, 1.0)},
                                {"push_times": (-1.0,)}, {"push_times": [1.0]},
                                {"push_impulse": (0.1,)}])
def test_bad_robustness_options_are_named(kw):
    with pytest.raises(C3ValueError, match="RobustnessOptions"):
        RobustnessOptions(**kw)


def test_push_recovery_by_hand():
    t = np.arange(0.0, 10.0, 0.5)  # 20 samples
    e = np.full(t.size, 0.01)
    e[4:7] = 0.03  # out at t = 2.0, 2.5, 3.0; back at 3.5 (after the push at 1.0)
    e[16:] = 0.05  # out from 8.0 to the end (after the push at 7.5)
    out = push_recovery(t, e, 0.02, (1.0, 5.0, 7.5, 20.0))
    assert len(out) == 3  # 20 s is after the run
    assert out[0]["left_band"] and out[0]["recovery_time_s"] == pytest.approx(2.5)
    assert out[0]["max_error_m"] == pytest.approx(0.03)
    # samples 1.0 ... 4.5 (3.5 s): in over [1, 2) and [3.5, 4.5): 2 s of 3.5 s
    assert out[0]["band_fraction"] == pytest.approx(2.0 / 3.5)
    assert not out[1]["left_band"] and out[1]["recovery_time_s"] == 0.0
    assert out[2]["recovery_time_s"] is None and out[2]["max_error_m"] == pytest.approx(0.05)


def test_lap_boundaries_and_statistics_of_a_uniform_circular_motion():
    # the ball goes round (0.55, 0) at 2π / 20 rad/s clockwise from +y, 2.6 laps in 52 s
    t = np.linspace(0.0, 52.0, 52001)
    a = 2 * math.pi * t / 20.0
    xy = np.stack([0.55 + 0.1 * np.sin(a), 0.1 * np.cos(a)], axis=1)
    b = circle_lap_boundaries(t, xy, (0.55, 0.0))
    np.testing.assert_allclose(b, [0.0, 20.0, 40.0], atol=2e-3)
    err = np.where((t > 5.0) & (t < 7.0), 0.03, 0.0)  # 2 s outside the band in lap 0
    laps = lap_statistics(t, err, 0.02, b)
    assert [lap["lap"] for lap in laps] == [0, 1]
    assert laps[0]["time_s"] == pytest.approx(20.0, abs=2e-3)
    assert laps[0]["band_fraction"] == pytest.approx(0.9, abs=1e-3)
    assert laps[1]["band_fraction"] == 1.0 and laps[1]["max_error_m"] == 0.0
    assert laps[0]["mean_error_m"] == pytest.approx(0.03 * 2 / 20, abs=1e-5)
    # a ball going backwards completes no lap
    assert circle_lap_boundaries(t, xy[::-1], (0.55, 0.0)).tolist() == [0.0]
