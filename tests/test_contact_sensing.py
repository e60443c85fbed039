"""Step 5 from the arm's contact force (c3mpc.tasks.contact_sensing, estimators.EmulatedForceSensor,
Algorithm3Planner.plan(x_resim=...)).

Independent answers: the gap formula by hand, distances and directions by geometry, the noise
statistics of the emulated sensor, step 5 recomputed from the plant's own LCS, and the table
stiffness re-identified from a short closed-loop run of the simulator.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from c3mpc.tasks.contact_sensing import ForceSensedGap
from c3mpc.errors import C3ValueError
from c3mpc.tasks.franka_ball import (
    SINGLE_BIAS_GAIT,
    FrankaBallOptions,
    build_planner,
    franka_layout,
    run_franka_ball,
    summarize,
)
from estimators import EmulatedForceSensor, EstimatorValueError
from plants import load_plant


class _Clock:
    def __init__(self, dt):
        self.t, self.dt = 0.0, dt

    def __call__(self):
        self.t += self.dt
        return self.t


@pytest.fixture(scope="module")
def ball():
    plant = load_plant("franka-ball")
    return plant, franka_layout(plant)


def _touching_state(plant, lay, tilt_deg, gap):
    """x0 with the end effector at ``gap`` [m] from the ball, on a normal tilted ``tilt_deg``
    from vertical towards −x."""
    x = np.array(plant.defaults.x0, float)
    b = lay.balls(x)[0]
    a = math.radians(tilt_deg)
    n = np.array([-math.sin(a), 0.0, math.cos(a)])
    x[list(lay.ee_position)] = b + n * (lay.ee_radius + lay.ball_radius + gap)
    return x, n


def test_gap_is_the_pair_and_the_table_compression():
    g = ForceSensedGap(pair_stiffness=5e5, table_stiffness=4e5, ball_mass=0.2)
    f, nz = 12.0, 0.8
    sink = (f * nz + 0.2 * 9.81) / 4e5
    assert g.gap(f, nz) == pytest.approx(-f / 5e5 - sink * nz, rel=1e-12)
    assert g.gap(0.0, 1.0) == pytest.approx(-0.2 * 9.81 / 4e5, rel=1e-12)  # the ball's weight


@pytest.mark.parametrize("tilt", [0.0, 25.0, 60.0])
def test_sensed_contact_moves_the_end_effector_along_the_normal_onto_that_gap(ball, tilt):
    plant, lay = ball
    g = ForceSensedGap()
    x, n = _touching_state(plant, lay, tilt, gap=-4e-4)  # camera says 0.4 mm inside
    x5 = g.step5_state(x, 20.0, lay)
    ee = list(lay.ee_position)
    d = x5[ee] - lay.balls(x5)[0]
    dist = float(np.linalg.norm(d))
    assert dist - lay.ee_radius - lay.ball_radius == pytest.approx(g.gap(20.0, n[2]), abs=1e-12)
    np.testing.assert_allclose(d / dist, n, atol=1e-12)  # same direction as the estimate
    other = np.ones(len(x), bool)
    other[ee] = False
    np.testing.assert_array_equal(x5[other], x[other])


def test_without_a_sensed_contact_penetration_is_clamped_and_gaps_are_kept(ball):
    plant, lay = ball
    g = ForceSensedGap(threshold=3.0)
    x, _ = _touching_state(plant, lay, 30.0, gap=-5e-4)
    x5 = g.step5_state(x, 2.9, lay)  # below the threshold: no contact
    d = float(np.linalg.norm(x5[list(lay.ee_position)] - lay.balls(x5)[0]))
    assert d == pytest.approx(lay.ee_radius + lay.ball_radius, abs=1e-12)
    x, _ = _touching_state(plant, lay, 30.0, gap=2e-3)
    np.testing.assert_array_equal(g.step5_state(x, 0.0, lay), x)


def test_force_sensed_gap_rejects_bad_parameters(ball):
    plant, lay = ball
    for kw in ({"pair_stiffness": 0.0}, {"table_stiffness": -1.0}, {"ball_mass": math.nan},
               {"threshold": -0.1}, {"pair_stiffness": "5e5"}, {"threshold": True}):
        with pytest.raises(C3ValueError, match=next(iter(kw))):
            ForceSensedGap(**kw)
    with pytest.raises(C3ValueError, match="force"):
        ForceSensedGap().step5_state(plant.defaults.x0, math.inf, lay)


def test_emulated_force_sensor_adds_gaussian_noise():
    s = EmulatedForceSensor(noise_std=1.0, rng=0)
    r = np.array([s.step(10.0) for _ in range(20000)])
    assert abs(r.mean() - 10.0) < 4 * 1.0 / math.sqrt(r.size)
    assert r.std() == pytest.approx(1.0, rel=0.03)
    assert EmulatedForceSensor(0.0).step(7.5) == 7.5
    for bad in (-1.0, True, math.inf):
        with pytest.raises(EstimatorValueError, match="noise_std"):
            EmulatedForceSensor(bad)
    with pytest.raises(EstimatorValueError, match="true_force"):
        EmulatedForceSensor(1.0).step(-0.5)


def test_plan_resimulates_step5_from_x_resim_and_shifts_the_command_back(ball):
    plant, lay = ball
    planner, _ = build_planner(plant, FrankaBallOptions(min_command_delay=None))
    x, _ = _touching_state(plant, lay, 30.0, gap=-3e-4)
    x5 = ForceSensedGap().step5_state(x, 15.0, lay)
    planner.clock = _Clock(0.002)  # Δt_c = 0.004 s
    p = planner.plan(x, 0.0, x_resim=x5)
    # independent: the plant's LCS at Δt_c, stepped from x5 with the planner's input
    ref, lam = plant.lcs(x5, p.u, dt=p.dt_resim).step(x5, p.u)
    ee = list(lay.ee_position)
    ref[ee] += x[ee] - x5[ee]
    np.testing.assert_allclose(p.x_d, ref, atol=1e-12)
    np.testing.assert_allclose(p.lam_d, lam, atol=1e-12)
    # x_resim = x_hat is the plain Algorithm 3
    planner.u_prev = np.zeros(3)
    planner.clock = _Clock(0.002)
    a = planner.plan(x, 0.0, x_resim=x.copy())
    planner.u_prev = np.zeros(3)
    planner.clock = _Clock(0.002)
    b = planner.plan(x, 0.0)
    np.testing.assert_array_equal(a.x_d, b.x_d)


def test_plan_rejects_an_x_resim_that_moves_more_than_the_end_effector(ball):
    plant, lay = ball
    planner, _ = build_planner(plant, FrankaBallOptions())
    x = np.array(plant.defaults.x0, float)
    bad = x.copy()
    bad[3] += 1e-4  # the ball
    with pytest.raises(C3ValueError, match="x_resim"):
        planner.plan(x, 0.0, x_resim=bad)
    with pytest.raises(C3ValueError, match="x_resim"):
        planner.plan(x, 0.0, x_resim=x[:5])


def test_force_sensing_options_are_checked():
    for kw in ({"force_sensing": "yes"}, {"force_noise_std": -1.0}, {"force_threshold": math.inf},
               {"force_noise_std": True}, {"noise_std": True}, {"noise_std": -0.001}):
        with pytest.raises(C3ValueError, match=next(iter(kw))):
            FrankaBallOptions(**kw)


def test_table_stiffness_matches_the_simulators_ball_sink():
    """Re-identify k_table: in a short noise-free loop (fixed latency, deterministic) regress
    the ball's sink below z = r on the normal load F·n_z, F the pair's elastic force."""
    # the line task's gait and step 5 (single Phase II bias, no lead): the end effector stays
    # on the ball through Phase II (the default circle gait lifts off there), so the
    # regression has loaded samples over the whole load range
    o = FrankaBallOptions(duration=4.0, planning_latency=0.004, min_command_delay=None,
                          gait=SINGLE_BIAS_GAIT, resim_lead=0.0)
    log = run_franka_ball(o)
    s = summarize(log)
    assert s["force_sensing"] and s["force_sensed_plans"] > 0
    g = ForceSensedGap()
    gap = log.ee_ball_gap[:, 0]
    f = g.pair_stiffness * np.maximum(-gap, 0.0)
    d = log.ee - log.balls[:, 0]
    nz = d[:, 2] / np.linalg.norm(d, axis=1)
    sink = 0.0315 - log.balls[:, 0, 2]
    m = f > 3.0
    assert m.sum() > 100
    A = np.c_[f[m] * nz[m], np.ones(m.sum())]
    (slope, offset), *_ = np.linalg.lstsq(A, sink[m], rcond=None)
    assert slope == pytest.approx(1.0 / g.table_stiffness, rel=0.1)
    assert offset == pytest.approx(g.ball_mass * 9.81 / g.table_stiffness, abs=2e-6)
