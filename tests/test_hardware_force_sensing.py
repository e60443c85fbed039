"""Force-sensed deployment (issue 21 item 5): O_F_ext_hat_K from the robot state into the C3
planner's step 5, as ``c3mpc run franka-ball --noise 0.001`` uses the emulated force sensor; the
camera adapter's Kalman filter for noisy trackers."""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest

from hardware import messages
from hardware.camera import BallDetectionAdapter, BallState, CameraOptions
from hardware.franka import FrankaAdapter, RobotState

Q_DOWN = np.array([1.0, 0.0, 0.0, 0.0])


def test_adapter_keeps_the_wrench_and_rejects_a_malformed_one():
    a = FrankaAdapter(None)
    now = time.time()
    T = messages.transform_from_pose(np.array([0.55, 0.1, 0.08]), Q_DOWN)
    a._on_state(messages.franka_state(T, now, external_wrench=[0, 0, -4.0, 0, 0, 0]), 0.0)
    np.testing.assert_array_equal(a.state().external_wrench, [0, 0, -4.0, 0, 0, 0])
    bad = messages.franka_state(T, now + 0.01)
    bad["O_F_ext_hat_K"] = [0, 0, math.nan, 0, 0, 0]
    a._on_state(bad, 0.01)
    assert a.rejected == 1 and "O_F_ext_hat_K" in a.rejections[-1]
    a._on_state(messages.franka_state(T, now + 0.02), 0.02)  # a minimal state: no wrench
    assert a.state().external_wrench is None


@pytest.fixture(scope="module")
def planner():
    pytest.importorskip("pinocchio")
    from hardware.planner_c3 import C3Planner, C3PlannerOptions

    return C3Planner(C3PlannerOptions(tuning="noisy"))


def _states(planner, wrench):
    """The end effector on top of the ball at the task's start, 0.2 mm into it (camera
    estimate), and the robot state carrying ``wrench``."""
    lay = planner.layout
    x0 = planner.plant.defaults.x0
    ball = lay.balls(x0)[0]
    ee = ball + [0.0, 0.0, lay.ee_radius + lay.ball_radius - 2e-4]
    robot = RobotState(ee, Q_DOWN, np.zeros(3), 10.0, 0.0, 1, 2, (),
                       None if wrench is None else np.asarray(wrench, float))
    b = BallState(ball, np.zeros(3), 10.0, 0.0, 1)
    return robot, b, planner.state_vector(robot, b)


def test_step5_gap_comes_from_the_sensed_force_as_in_the_simulated_loop(planner):
    """Pressing the ball down with 6 N (O_F_ext_hat_K = (0, 0, −6): the robot pushes the ball
    along −z): the planner's normal force is +6 N and its step-5 state is exactly what the
    simulated loop computes from a 6 N reading (ForceSensedGap on the same estimate): the gap
    along the estimated normal is −F/k_pair − sink, not the camera's −0.2 mm."""
    from c3mpc.tasks.contact_sensing import ForceSensedGap
    from plants.models.franka_ball import BALL_MASS

    robot, _, x = _states(planner, [0, 0, -6.0, 0, 0, 0])
    assert planner.normal_force(x, robot.external_wrench) == pytest.approx(6.0)
    x5 = planner.step5_state(x, robot)
    ref = ForceSensedGap(pair_stiffness=5e5, table_stiffness=4.9e5, threshold=3.0,
                         ball_mass=BALL_MASS).step5_state(x, 6.0, planner.layout)
    np.testing.assert_array_equal(x5, ref)
    lay = planner.layout
    gap = np.linalg.norm(x5[list(lay.ee_position)] - lay.balls(x5)[0]) - (
        lay.ee_radius + lay.ball_radius)
    assert gap == pytest.approx(-6.0 / 5e5 - (6.0 + BALL_MASS * 9.81) / 4.9e5, abs=1e-12)
    assert planner.sensed_plans == 1


def test_step5_without_contact_or_without_a_wrench(planner):
    """A force below the threshold (or pulling) means no contact: the camera's −0.2 mm gap is
    clamped to 0; a state without O_F_ext_hat_K (or force_sensing off) plans from x̂."""
    robot, _, x = _states(planner, [0, 0, 1.0, 0, 0, 0])  # pulling up: negative normal force
    x5 = planner.step5_state(x, robot)
    lay = planner.layout
    gap = np.linalg.norm(x5[list(lay.ee_position)] - lay.balls(x5)[0]) - (
        lay.ee_radius + lay.ball_radius)
    assert gap == pytest.approx(0.0, abs=1e-12)
    robot, _, x = _states(planner, None)
    assert planner.step5_state(x, robot) is None and math.isnan(planner.last_normal_force)


@pytest.mark.parametrize("tuning", ["nominal", "noisy", "vision"])
def test_deploy_planner_is_the_simulated_loops_planner(tuning):
    """The bridged loop lost the ball the simulated loop keeps because its planner was not the
    same: C3PlannerOptions fixed step 5's Δt_c floor at one camera period (12.5 ms against the
    tuning's 8 ms / 4 ms: the ball ran ahead, 62.8 % in the band in the lock-step rehearsal
    against 96.6 %) and the lead angle at 20° (the noisy tuning's is 15°). With the defaults
    (None) the deploy planner now takes both from the closed loop's FrankaBallOptions; an
    explicit value still wins."""
    pytest.importorskip("pinocchio")
    from c3mpc.tasks.franka_ball import FrankaBallOptions, build_planner
    from hardware.planner_c3 import C3Planner, C3PlannerOptions
    from plants import load_plant

    sim, _ = build_planner(load_plant("franka-ball"), FrankaBallOptions(tuning=tuning))
    dep = C3Planner(C3PlannerOptions(tuning=tuning)).algorithm3
    assert dep.min_resim_dt == sim.min_resim_dt == (0.004 if tuning == "noisy" else 0.008)
    assert dep.target.lead_angle_deg == sim.target.lead_angle_deg
    assert dep.target.gait == sim.target.gait
    if tuning == "vision":  # the planner is the nominal one: only the camera filter differs
        task = C3Planner(C3PlannerOptions(tuning=tuning)).task_options
        nominal = C3Planner(C3PlannerOptions(tuning="nominal")).task_options
        differ = [f.name for f in dataclasses.fields(task)
                  if getattr(task, f.name) != getattr(nominal, f.name)]
        assert set(differ) == {"vision_accel_std", "tuning"} and task.vision_accel_std == 0.3
    own = C3Planner(C3PlannerOptions(tuning=tuning, min_resim_dt=0.02, lead_angle_deg=25.0))
    assert own.algorithm3.min_resim_dt == 0.02
    assert own.algorithm3.target.lead_angle_deg == 25.0


def test_planner_options_are_strict():
    from hardware.errors import HardwareValueError
    from hardware.planner_c3 import C3PlannerOptions

    with pytest.raises(HardwareValueError, match="tuning"):
        C3PlannerOptions(tuning="auto")
    assert C3PlannerOptions().tuning == "nominal"  # noise-free deploy unchanged
    assert C3PlannerOptions(tuning="vision").tuning == "vision"
    with pytest.raises(HardwareValueError, match="pair_stiffness"):
        C3PlannerOptions(pair_stiffness=0.0)


def test_time_scale_options_are_strict():
    from hardware.deploy import DeployOptions
    from hardware.errors import HardwareValueError
    from hardware.twin import TwinOptions

    with pytest.raises(HardwareValueError, match="time_scale"):
        DeployOptions(time_scale=2.0)
    with pytest.raises(HardwareValueError, match="time_scale"):
        DeployOptions(time_scale=0.0)
    with pytest.raises(HardwareValueError, match="time_scale"):
        TwinOptions(time_scale=1.5)
    with pytest.raises(HardwareValueError, match="filter"):
        CameraOptions(filter="lowpass")


def test_tick_on_detection_is_strict():
    from hardware.deploy import DeployOptions
    from hardware.errors import HardwareValueError

    assert DeployOptions().tick_on_detection is False
    for bad in (1, "true", None):
        with pytest.raises(HardwareValueError, match="tick_on_detection"):
            DeployOptions(tick_on_detection=bad)


def test_camera_kalman_filter_beats_finite_differences_on_1mm_noise():
    """A ball rolling at 0.1 m/s, detected at 80 Hz with 1 mm noise: the Kalman option's
    velocity is within 2.5 cm/s RMS of the truth after 1 s, several times better than the
    filtered finite differences (whose noise is ~√2 σ · 80 Hz · a/(2 − a))."""
    rng = np.random.default_rng(3)
    errs = {}
    for f in ("difference", "kalman"):
        cam = BallDetectionAdapter(None, CameraOptions(filter=f, max_stamp_lag=math.inf))
        t0 = time.time() - 3.0
        e = []
        for k in range(240):
            t = t0 + k / 80.0
            p = np.array([0.5 + 0.1 * (k / 80.0), 0.0, 0.0315]) + rng.normal(0, 1e-3, 3)
            cam._on_msg(messages.point_stamped(p, "panda_link0", t, k), k / 80.0)
            if k >= 80:
                e.append(cam.state().velocity[:2] - [0.1, 0.0])
        assert cam.rejected == 0
        errs[f] = float(np.sqrt(np.mean(np.square(e))))
    assert errs["kalman"] < 0.025, errs
    assert errs["kalman"] < 0.5 * errs["difference"], errs


# The deploy configuration for 1 mm camera noise with force sensing: the closed loop's "vision"
# tuning (nominal planner and gains K = 2000, ζ = 1; the camera's Kalman filter with 0.3 m/s²
# process noise), docs/deployment.md, "The configuration for 1 mm camera noise".
TWIN_CFG = """camera_noise_std: 0.001
force_noise_std: 1.0
seed: {seed}
time_scale: {scale}
impedance:
  translational_stiffness: 2000.0
  damping_ratio: 1.0
"""
DEPLOY_CFG = """planner_type: c3
max_stale_time: 0.5
tick_on_detection: true
time_scale: {scale}
c3:
  tuning: vision
impedance:
  translational_stiffness: 2000.0
  damping_ratio: 1.0
camera:
  filter: kalman
  kalman_measurement_std: 0.001
  kalman_accel_std: 0.3
  max_stamp_lag: .inf
franka:
  velocity_filter: 1.0
  max_stamp_lag: .inf
"""


@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason=(
    "load-dependent (the wall clock): with the vision tuning one run passed at load 4-6 "
    "(727 deg in 40 robot seconds, 100 % of the first lap in the band, max 0.9 cm); not "
    "tried under heavy load, where the noisy tuning fell to 11.6 % (load ~20); the lock-step "
    "rehearsal below is the reproducible check (docs/deployment.md, 'The configuration for "
    "1 mm camera noise')"))
def test_force_sensed_rehearsal_with_1mm_camera_noise_keeps_the_ball_in_the_band(tmp_path):
    """Issue 21 acceptance: `c3mpc twin` (full Panda, 1 mm camera noise, O_F_ext_hat_K with
    1 N noise) and `c3mpc deploy` (C3 with the force-sensed step 5, the closed loop's vision
    tuning and gains, Kalman-filtered camera: TWIN_CFG / DEPLOY_CFG) as two processes over
    loopback websockets, one lap of the ball: ≥ 75 % of the lap in the 2 cm band. The world runs at a fifth of real
    time (``time_scale: 0.2`` on both sides: the full Panda in contact does not keep real
    time on the shared 2-core machine, measured real-time factor 0.15-0.27 with a deploy
    process beside it); the check is skipped when the twin could not even hold that."""
    import csv
    import re
    import subprocess
    import sys

    from _loopback import free_port, repo_env, wait_until

    pytest.importorskip("roslibpy")
    scale, robot_seconds = 0.2, 40.0
    port = free_port()
    (tmp_path / "twin.yaml").write_text(TWIN_CFG.format(seed=0, scale=scale))
    (tmp_path / "deploy.yaml").write_text(DEPLOY_CFG.format(scale=scale))
    log = tmp_path / "twin.log"
    with open(log, "w") as fh:
        twin = subprocess.Popen([sys.executable, "-m", "c3mpc.cli", "twin", "franka-ball",
                                 "--port", str(port), "--config", str(tmp_path / "twin.yaml"),
                                 "--status-interval", "10"], env=repo_env(), stdout=fh,
                                stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_until(lambda: "serving on" in log.read_text(), 60), log.read_text()
        rep = tmp_path / "rep"
        out = subprocess.run([sys.executable, "-m", "c3mpc.cli", "deploy", "franka-ball",
                              "--bridge", f"ws://127.0.0.1:{port}", "--config",
                              str(tmp_path / "deploy.yaml"), "--report", str(rep),
                              "--duration", str(robot_seconds), "--quiet"], env=repo_env(),
                             capture_output=True, text=True,
                             timeout=robot_seconds / scale + 120)
    finally:
        twin.kill()
        twin.wait(10)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = list(csv.reader(open(rep / "log.csv")))
    col = {n: i for i, n in enumerate(rows[0])}
    d = np.array([[float(v) for v in r] for r in rows[1:]])
    ball = d[:, [col["ball_x"], col["ball_y"]]]
    ball = ball[np.all(np.isfinite(ball), axis=1)]
    rel = ball - [0.55, 0.0]
    advance = np.degrees(np.unwrap(np.arctan2(rel[:, 0], rel[:, 1])))
    advance -= advance[0]
    radial = np.abs(np.linalg.norm(rel, axis=1) - 0.1)
    lap = np.flatnonzero(advance >= 360.0)
    end = lap[0] if lap.size else len(radial)
    band = float(np.mean(radial[:end] <= 0.02))
    rt = [float(m) for m in re.findall(r"real-time factor ([0-9.]+)", log.read_text())]
    done = "done" if lap.size else "not done"
    info = (f"advance {advance[-1]:.0f} deg in {robot_seconds} s, lap {done}, in the 2 cm "
            f"band {band:.3f} of it, max radial error "
            f"{radial[:end].max() * 100:.1f} cm; twin real-time factors {rt}")
    print(info)
    if rt and np.mean(rt[1:]) < 0.9 * scale:
        pytest.skip(f"machine too loaded even for time_scale {scale}: {info}")
    assert lap.size, info
    assert band >= 0.75, info


@pytest.mark.slow
def test_force_sensed_lockstep_rehearsal_with_1mm_camera_noise_keeps_the_ball_in_the_band(
        tmp_path):
    """Issue 21 acceptance on the simulated clock (hardware.lockstep): the same twin and
    deploy configuration as the wall-clock rehearsal above (full Panda, 1 mm camera noise,
    seed 0, O_F_ext_hat_K with 1 N noise; C3 with the force-sensed step 5 and the closed
    loop's "vision" tuning: nominal gait and gains K = 2000, ζ = 1, the camera's Kalman filter
    with 0.3 m/s² process noise), 4 ms command delay and Δt_c (``LockstepOptions``'
    defaults) instead of the machine's timing: a lap of the true ball with
    ≥ 75 % of it in the 2 cm band, no command rejected by the twin, no failed plan. (The
    "noisy" tuning: 87.7 % of a 107 s lap here; the vision tuning's filter does not trail the
    pushed ball: docs/deployment.md, "Force-sensed deployment"; all seeds and latencies:
    ``benchmarks/bench_lockstep_rehearsal.py``.) ~20 simulated seconds."""
    pytest.importorskip("pinocchio")
    from hardware.deploy import DeployOptions
    from hardware.lockstep import LockstepOptions, run_lockstep
    from hardware.twin import TwinOptions

    (tmp_path / "twin.yaml").write_text(TWIN_CFG.format(seed=0, scale=1.0))
    (tmp_path / "deploy.yaml").write_text(DEPLOY_CFG.format(scale=1.0))
    deploy = DeployOptions.from_file(tmp_path / "deploy.yaml")
    assert deploy.c3.tuning == "vision" and deploy.camera.kalman_accel_std == 0.3
    log = run_lockstep(TwinOptions.from_file(tmp_path / "twin.yaml"), deploy,
                       LockstepOptions(duration=60.0))
    info = (f"lap {log.lap_time} s, {log.lap_angle_deg:.0f} deg, in the band "
            f"{log.band_fraction:.3f}, max radial error {log.radial_error.max() * 100:.1f} cm, "
            f"{log.interventions} interventions, {len(log.twin_rejections)} rejected")
    print(info)
    assert log.lap_time is not None, info
    assert log.band_fraction >= 0.75, info
    assert log.twin_rejections == [], info
    assert log.planner_failures == 0, info
    assert log.exit_reason == "", info


@pytest.mark.parametrize("tuning", ["vision", "noisy"])
def test_rehearsal_options_follow_the_tuning(tuning):
    """The rehearsal's configuration is the simulated loop's tuning, not a copy: gains on both
    sides and the deploy camera's Kalman process noise from ``TUNINGS[tuning]``."""
    from c3mpc.tasks.franka_ball import TUNINGS
    from hardware.errors import HardwareValueError
    from hardware.lockstep import rehearsal_options

    twin, deploy = rehearsal_options(3, tuning=tuning)
    t = TUNINGS[tuning]
    for gains in (twin.impedance, deploy.impedance):
        assert gains.translational_stiffness == t["translational_stiffness"]
        assert gains.damping_ratio == t["damping_ratio"]
    assert deploy.camera.filter == "kalman"
    assert deploy.camera.kalman_accel_std == t["vision_accel_std"]
    assert deploy.c3.tuning == tuning and deploy.c3.force_sensing
    assert deploy.tick_on_detection and deploy.franka.velocity_filter == 1.0
    assert twin.seed == 3 and twin.camera_noise_std == 0.001 and twin.force_noise_std == 1.0
    _, deploy = rehearsal_options(0, tuning=tuning, tick_on_detection=False,
                                  kalman_accel_std=0.05)
    assert not deploy.tick_on_detection and deploy.camera.kalman_accel_std == 0.05
    with pytest.raises(HardwareValueError, match="seed"):
        rehearsal_options(-1)
    with pytest.raises(HardwareValueError, match="tuning"):
        rehearsal_options(0, tuning="loud")


def test_deploy_camera_filter_defaults_to_the_planners_tuning():
    """``camera.kalman_accel_std`` left out is the C3 tuning's ``vision_accel_std`` (the filter
    the tuning was measured with); an explicit value wins; a circle deploy and a bare adapter
    keep the fixed default."""
    from c3mpc.tasks.franka_ball import TUNINGS
    from hardware.camera import DEFAULT_KALMAN_ACCEL_STD, CameraOptions
    from hardware.deploy import DeployOptions
    from hardware.planner_c3 import C3PlannerOptions

    for tuning in ("nominal", "vision", "noisy"):
        deploy = DeployOptions(planner_type="c3", c3=C3PlannerOptions(tuning=tuning),
                               camera=CameraOptions(filter="kalman"))
        assert deploy.camera.kalman_accel_std == TUNINGS[tuning]["vision_accel_std"]
    explicit = DeployOptions(planner_type="c3", c3=C3PlannerOptions(tuning="vision"),
                             camera=CameraOptions(filter="kalman", kalman_accel_std=0.05))
    assert explicit.camera.kalman_accel_std == 0.05
    assert DeployOptions(planner_type="circle").camera.kalman_accel_std is None
    assert TUNINGS["vision"]["vision_accel_std"] == 0.3 and DEFAULT_KALMAN_ACCEL_STD == 0.02
    with pytest.raises(Exception, match="kalman_accel_std"):
        CameraOptions(kalman_accel_std=True)
