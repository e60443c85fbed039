"""The Franka ball loop with vision noise (issue 7, 1 mm acceptance).

Fast: the ball estimator the task uses with noise (the constant-velocity Kalman filter of
``estimators.BallFilter``) against independent answers: its covariance and gain converge to the
discrete Riccati solution (``estimators.cv_steady_state``, scipy's DARE), and a noise-free
constant-velocity track is reproduced exactly. Slow: the 1 mm closed loop at fixed latency.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from c3mpc.algorithm3 import CircleTarget, GaitOptions
from c3mpc.errors import C3ValueError
from c3mpc.tasks.franka_ball import (
    FrankaBallOptions,
    _default_vision,
    build_planner,
    franka_layout,
    run_franka_ball,
    summarize,
)
from estimators import BallFilter, BallTrackerOptions, cv_steady_state
from plants import load_plant

RATE = 80.0


def _kalman(accel: float, sigma: float) -> BallFilter:
    return BallFilter(BallTrackerOptions(filter="kalman", kalman_accel_std=accel,
                                         kalman_measurement_std=sigma, gate_distance=1.0,
                                         radius=0.0315))


@pytest.mark.parametrize("accel", [0.01, 0.3, 1.0])
def test_kalman_covariance_and_gain_converge_to_the_riccati_solution(accel):
    sigma = 0.001
    f = _kalman(accel, sigma)
    rng = np.random.default_rng(0)
    for k in range(6000):  # the covariance does not depend on the data
        f.step(np.array([0.5, 0.0, 0.03]) + rng.normal(0, sigma, 3), k / RATE)
    K_ref, P_ref = cv_steady_state(1 / RATE, accel, sigma)
    P = f._track.P
    for ax in range(3):  # axes are independent and identical
        P_ax = P[np.ix_([ax, ax + 3], [ax, ax + 3])]
        np.testing.assert_allclose(P_ax, P_ref, rtol=1e-8)
        # posterior gain K = P⁺ Hᵀ R⁻¹
        np.testing.assert_allclose(P_ax[:, 0] / sigma ** 2, K_ref, rtol=1e-8)
    assert np.allclose(P[:3, :3] - np.diag(np.diag(P[:3, :3])), 0.0, atol=1e-20)


def test_riccati_solution_satisfies_the_filter_recursion():
    # independent check of cv_steady_state: one predict + update of its posterior returns it
    dt, a, s = 1 / RATE, 0.01, 0.001
    K, P = cv_steady_state(dt, a, s)
    F = np.array([[1.0, dt], [0.0, 1.0]])
    Q = a ** 2 * np.array([[dt ** 4 / 4, dt ** 3 / 2], [dt ** 3 / 2, dt ** 2]])
    prior = F @ P @ F.T + Q
    K1 = prior[:, 0] / (prior[0, 0] + s ** 2)
    post = prior - np.outer(K1, prior[0])
    np.testing.assert_allclose(post, P, rtol=1e-10)
    np.testing.assert_allclose(K1, K, rtol=1e-10)
    # what the task's setting buys (docs/franka-ball.md): 0.23 mm / 0.74 mm/s at σ = 1 mm
    assert np.sqrt(P[0, 0]) == pytest.approx(2.33e-4, rel=0.01)
    assert np.sqrt(P[1, 1]) == pytest.approx(7.42e-4, rel=0.01)


@pytest.mark.parametrize("accel", [0.01, 1.0])
def test_kalman_reproduces_a_noise_free_constant_velocity_track(accel):
    p0, v = np.array([0.55, 0.1, 0.0315]), np.array([0.03, -0.02, 0.0])
    f = _kalman(accel, 0.001)
    for k in range(4000):
        t = k / RATE
        s = f.step(p0 + v * t, t)
    np.testing.assert_allclose(s.position, p0 + v * t, atol=1e-12)
    np.testing.assert_allclose(s.velocity, v, atol=1e-12)
    # rolling without slipping on the table: ω = n × v / r
    np.testing.assert_allclose(s.angular_velocity, np.cross([0, 0, 1.0], v) / 0.0315,
                               atol=1e-9)


def test_task_uses_the_kalman_filter_with_the_noise_and_process_noise():
    o = FrankaBallOptions(noise_std=0.001)
    vis = _default_vision(o, 0)
    assert vis.options.filter == "kalman"
    assert vis.options.kalman_measurement_std == 0.001
    assert vis.options.kalman_accel_std == o.vision_accel_std == 0.3  # the vision tuning
    o = FrankaBallOptions(noise_std=0.001, tuning="nominal")
    assert _default_vision(o, 0).options.kalman_accel_std == o.vision_accel_std == 0.01
    assert _default_vision(FrankaBallOptions(), 0).options.filter == "none"
    with pytest.raises(ValueError, match="vision_accel_std"):
        FrankaBallOptions(vision_accel_std=0.0)
    with pytest.raises(ValueError, match="vision_filter"):
        FrankaBallOptions(vision_filter="median")


def test_circle_target_distance_cap_only_acts_on_a_far_target():
    plant = load_plant("franka-ball")
    lay = franka_layout(plant)
    free = CircleTarget(plant.defaults.x_goal, lay, (0.55, 0.0), 0.1, 20.0, GaitOptions())
    capped = CircleTarget(plant.defaults.x_goal, lay, (0.55, 0.0), 0.1, 20.0, GaitOptions(),
                          max_target_distance=0.04)
    # on the circle the eq.-(25) target is the chord 2 r sin(10 deg) = 3.47 cm away: unchanged
    on = np.array([0.55 + 0.1 * math.sin(0.4), 0.1 * math.cos(0.4)])
    np.testing.assert_allclose(capped.ball_target(on), free.ball_target(on), atol=1e-15)
    assert np.linalg.norm(free.ball_target(on) - on) == pytest.approx(0.2 * math.sin(
        math.radians(10)), rel=1e-12)
    # 5 cm outside: the target moves onto 4 cm from the ball along the same direction
    out = np.array([0.55 + 0.15 * math.sin(0.4), 0.15 * math.cos(0.4)])
    far, cap = free.ball_target(out), capped.ball_target(out)
    assert np.linalg.norm(far - out) > 0.04
    assert np.linalg.norm(cap - out) == pytest.approx(0.04, rel=1e-12)
    np.testing.assert_allclose((cap - out) / 0.04, (far - out) / np.linalg.norm(far - out),
                               atol=1e-12)
    # wired through the task options; off by default
    assert FrankaBallOptions().max_target_distance is None
    planner, _ = build_planner(plant, FrankaBallOptions(max_target_distance=0.04))
    assert planner.target.max_target_distance == 0.04
    with pytest.raises(ValueError, match="max_target_distance"):
        FrankaBallOptions(max_target_distance=0.0)
    with pytest.raises(C3ValueError, match="max_target_distance"):
        CircleTarget(plant.defaults.x_goal, lay, max_target_distance=-1.0)


# ---------------------------------------------------------------------------- acceptance (slow)
@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 3])
def test_one_mm_noise_full_lap_mostly_in_the_band_and_returns_at_fixed_latency(seed):
    """Issue 7: with 1 mm noise >= 75% of a lap in the 2 cm band, returning after every exit.
    The noisy tuning (the default until the vision tuning beat it) with the force-sensed
    step 5 at a fixed 4 ms latency, deterministic:
    measured 89.7% (seed 1, lap 98 s) and 88.9% (seed 3, lap 97 s); seeds 0-4 gave
    88.9-91.8% (docs/franka-ball.md, "1 mm noise: force-sensed step 5 and the noisy tuning")."""
    o = FrankaBallOptions(duration=130.0, noise_std=0.001, seed=seed, planning_latency=0.004,
                          min_command_delay=None, tuning="noisy")
    assert o.resolved_tuning == "noisy" and o.force_sensing
    s = summarize(run_franka_ball(o))
    assert s["lap_completed"], s["lap_angle_deg"]
    assert s["band_fraction"] >= 0.75, s["band_fraction"]
    assert s["returned_to_band_after_every_exit"], s["excursions"]
    assert s["force_sensed_plans"] > 0


# ---------------------------------------------------------------------------- tunings
def test_tuning_fills_the_fields_left_none_from_the_table():
    from c3mpc.tasks.franka_ball import TUNINGS, task_gains

    for kw, name in (({}, "nominal"), ({"noise_std": 0.001}, "vision"),
                     ({"noise_std": 0.001, "force_sensing": False}, "vision"),
                     ({"noise_std": 0.001, "n_balls": 2}, "nominal"),
                     ({"noise_std": 0.001, "n_balls": 2, "force_sensing": False}, "nominal"),
                     ({"noise_std": 0.001, "tuning": "nominal"}, "nominal"),
                     ({"force_sensing": False}, "nominal"),
                     ({"tuning": "noisy"}, "noisy"), ({"tuning": "vision"}, "vision")):
        o = FrankaBallOptions(**kw)
        t = TUNINGS[name]
        assert o.resolved_tuning == name
        line = o.n_balls > 1  # the line task keeps its own gait and step 5 (line_ keys)
        assert (o.lead_angle_deg, o.ball_velocity_weight, o.vision_accel_std, o.gait,
                o.resim_lead) == (
            t["lead_angle_deg"], t["ball_velocity_weight"], t["vision_accel_std"],
            t.get("line_gait", t["gait"]) if line else t["gait"],
            t.get("line_resim_lead", t["resim_lead"]) if line else t["resim_lead"])
        g = task_gains(o)
        assert (g.translational_stiffness, g.damping_ratio) == (t["translational_stiffness"],
                                                               t["damping_ratio"])
        assert g.feedforward == (o.n_balls == 1)
    # a field given explicitly wins over the tuning
    o = FrankaBallOptions(noise_std=0.001, lead_angle_deg=20.0, gait=GaitOptions())
    assert o.lead_angle_deg == 20.0 and o.gait == GaitOptions()
    assert o.ball_velocity_weight == TUNINGS["vision"]["ball_velocity_weight"]


def test_tuning_rejects_unknown_names_and_bad_tuned_fields():
    with pytest.raises(C3ValueError, match="tuning"):
        FrankaBallOptions(tuning="quiet")
    with pytest.raises(C3ValueError, match="lead_angle_deg"):
        FrankaBallOptions(lead_angle_deg=math.nan)
    with pytest.raises(C3ValueError, match="gait"):
        FrankaBallOptions(gait={"phase2_back": 0.05})


# ---------------------------------------------------------------- vision-only tuning (issue 23)
def test_vision_tuning_is_the_nominal_one_with_a_faster_filter():
    """The vision-only tuning changes one thing against the noise-free one: the Kalman
    filter's process noise (docs/franka-ball.md, "1 mm noise from vision alone")."""
    from c3mpc.tasks.franka_ball import TUNINGS

    nominal, vision = TUNINGS["nominal"], TUNINGS["vision"]
    assert set(vision) == set(nominal)
    assert {k for k in vision if vision[k] != nominal[k]} == {"vision_accel_std"}
    assert vision["vision_accel_std"] == 0.3
    o = FrankaBallOptions(noise_std=0.001, force_sensing=False)
    vis = _default_vision(o, 0)
    assert (vis.options.filter, vis.options.kalman_accel_std) == ("kalman", 0.3)
    assert o.min_command_delay == nominal["command_delay"]


@pytest.mark.parametrize("accel", [0.01, 0.3, 1.0])
def test_kalman_lag_behind_an_accelerating_ball_is_the_alpha_beta_bias(accel):
    """Why the vision-only loop needs the faster filter: behind a ball under constant
    acceleration a the steady-state constant-velocity filter lags by a T² (1 − α) / β
    (the α-β filter's bias, α = K_p, β = K_v T from the Riccati gain): 97 mm per m/s² at the
    nominal 0.01 m/s², 2.9 mm at the vision tuning's 0.3, 0.76 mm at 1.0 (T = 12.5 ms,
    σ = 1 mm)."""
    T, a, sigma = 1.0 / RATE, 0.2, 0.001
    K, _ = cv_steady_state(T, accel, sigma)
    alpha, beta = K[0], K[1] * T
    lag = a * T * T * (1.0 - alpha) / beta
    f = _kalman(accel, sigma)
    n = 4000 if accel < 0.1 else 400  # long enough for the slow filter to settle
    for k in range(n):
        t = k * T
        s = f.step(np.array([[0.5 * a * t * t, 0.0, 0.0315]]), t)
    true_x = 0.5 * a * ((n - 1) * T) ** 2
    assert s.position[0] - true_x == pytest.approx(-lag, rel=1e-3)
    assert lag == pytest.approx({0.01: 0.0194, 0.3: 5.72e-4, 1.0: 1.52e-4}[accel], rel=0.01)


@pytest.mark.slow
def test_one_mm_noise_vision_only_lap_at_fixed_latency():
    """Issue 23: 1 mm noise, step 5 from the camera alone (no force sensing): the vision
    tuning laps faster than the paper's 21 s with the ball in the 2 cm band. Fixed 4 ms
    latency, no command-delay floor, deterministic: seeds 0-4 measured 18.9-19.9 s, 100% in
    the band, max error <= 0.9 cm (docs/BENCHMARKS.md, "Franka ball lap by seed")."""
    o = FrankaBallOptions(duration=40.0, noise_std=0.001, force_sensing=False, seed=2,
                          planning_latency=0.004, min_command_delay=None)
    assert o.resolved_tuning == "vision"
    s = summarize(run_franka_ball(o))
    assert s["lap_completed"], s["lap_angle_deg"]
    assert s["lap_time_s"] <= 21.0, s["lap_time_s"]
    assert s["band_fraction"] >= 0.95, s["band_fraction"]
    assert s["max_error_m"] < 0.02, s["max_error_m"]
    assert s["returned_to_band_after_every_exit"], s["excursions"]
