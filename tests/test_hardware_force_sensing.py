"""Force-sensed deployment (issue 21 item 5): O_F_ext_hat_K from the robot state into the C3
planner's step 5, as ``c3mpc run franka-ball --noise 0.001`` uses the emulated force sensor; the
camera adapter's Kalman filter for noisy trackers."""

from __future__ import annotations

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


def test_planner_options_are_strict():
    from hardware.errors import HardwareValueError
    from hardware.planner_c3 import C3PlannerOptions

    with pytest.raises(HardwareValueError, match="tuning"):
        C3PlannerOptions(tuning="auto")
    with pytest.raises(HardwareValueError, match="pair_stiffness"):
        C3PlannerOptions(pair_stiffness=0.0)


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
