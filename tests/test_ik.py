"""Inverse kinematics of a frame (plants.multibody.ik) and arm start/goal poses in task files
(``start: {ik: {frame:, position:, rpy:}}``), on example-robot-data arms (UR5, Panda)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from plants import TaskFileError, load_task_file
from plants.multibody import ModelImportWarning, MultibodyPlant, example_robot_data_path
from plants.multibody.errors import UnknownFrameError, UnreachablePoseError
from plants.multibody.ik import IKOptions, IKStatus, frame_pose, solve_ik

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "own_robot" / "ur5_push"
UR5 = "robots/ur_description/urdf/ur5_joint_limited_robot.urdf"
PANDA = "robots/panda_description/urdf/panda.urdf"
ARMS = [(UR5, "ee_link"), (PANDA, "panda_hand_tcp")]


@pytest.fixture(autouse=True)
def _quiet_mesh_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelImportWarning)
        yield


def _model(path):
    return MultibodyPlant.from_urdf(example_robot_data_path(path), []).model


def _inside_limits(model, q, tol=1e-12):
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit
    return bool(np.all(q >= lo - tol) and np.all(q <= hi + tol))


@pytest.mark.parametrize("path, frame", ARMS)
def test_ik_reaches_poses_of_random_configurations(path, frame):
    """Targets are the forward kinematics of seeded random configurations inside the limits; the
    solution's own forward kinematics (pin.framesForwardKinematics, independent of the solver's
    Jacobians) puts the frame there to 1e-6 (position [m] and every rotation-matrix entry), inside
    the joint limits."""
    model = _model(path)
    rng = np.random.default_rng(19)
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit
    for _ in range(4):
        q_target = rng.uniform(lo, hi)
        p, R = frame_pose(model, q_target, frame)
        result = solve_ik(model, frame, p, R)
        assert result.status is IKStatus.CONVERGED
        p_ik, R_ik = frame_pose(model, result.q, frame)
        assert np.abs(p_ik - p).max() <= 1e-6
        assert np.abs(R_ik - R).max() <= 1e-6
        assert result.position_error <= 1e-6 and result.rotation_error <= 1e-6
        assert _inside_limits(model, result.q)


@pytest.mark.parametrize("path, frame", ARMS)
def test_ik_position_only_and_quaternion_target(path, frame):
    model = _model(path)
    q_target = 0.5 * (model.lowerPositionLimit + model.upperPositionLimit) + 0.3
    p, R = frame_pose(model, q_target, frame)
    q_only = solve_ik(model, frame, p)  # any orientation
    assert np.abs(frame_pose(model, q_only.q, frame)[0] - p).max() <= 1e-6
    quat = pin.Quaternion(R)
    q_quat = solve_ik(model, frame, p, [quat.x, quat.y, quat.z, quat.w])
    assert np.abs(frame_pose(model, q_quat.q, frame)[1] - R).max() <= 1e-6


def test_ik_keeps_the_joint_limits_when_the_unconstrained_solution_leaves_them():
    """UR5 elbow limited to [0.3, 0.6] rad (tightened here): a target of a configuration with the
    elbow at 1.2 rad, position only, has other solutions; the one returned respects the box, and
    one that needs the elbow at 1.2 rad with a fixed-orientation target is reported as not
    reached."""
    model = _model(UR5)
    model.lowerPositionLimit[2], model.upperPositionLimit[2] = 0.3, 0.6
    q_target = np.array([0.2, -1.0, 1.2, -1.0, 1.0, 0.0])
    p, R = frame_pose(model, q_target, "ee_link")
    opts = IKOptions(restarts=5)
    result = solve_ik(model, "ee_link", p, R, options=opts)
    assert _inside_limits(model, result.q)
    if result.converged:  # another branch reaches it inside the box
        assert np.abs(frame_pose(model, result.q, "ee_link")[0] - p).max() <= 1e-6
    # only the elbow may move, all others fixed at the target's values: unreachable inside the box
    only_elbow = solve_ik(model, "ee_link", p, R, q0=q_target, joints=["elbow_joint"], options=opts)
    assert only_elbow.status is IKStatus.NOT_REACHED
    assert only_elbow.q[2] == pytest.approx(0.6)  # pressed against its upper limit
    np.testing.assert_array_equal(np.delete(only_elbow.q, 2), np.delete(q_target, 2))


@pytest.mark.parametrize("path, frame", ARMS)
def test_ik_reports_an_unreachable_pose(path, frame):
    model = _model(path)
    result = solve_ik(model, frame, [3.0, 0.0, 0.2], options=IKOptions(restarts=3))
    assert result.status is IKStatus.NOT_REACHED and not result.converged
    assert result.position_error > 1.5  # both arms reach < 1 m
    assert result.attempts == 4
    assert _inside_limits(model, result.q)
    message = str(UnreachablePoseError(frame, result))
    assert frame in message and f"{result.position_error:.3g} m" in message
    assert "rotation error" not in message  # a position-only target
    oriented = solve_ik(model, frame, [3.0, 0.0, 0.2], np.eye(3), options=IKOptions(restarts=0))
    assert not oriented.converged and "rad of rotation error" in str(UnreachablePoseError(frame, oriented))


def test_ik_bad_input_names_the_argument():
    model = _model(UR5)
    with pytest.raises(UnknownFrameError, match="unknown frame 'tool0x'.*ee_link"):
        solve_ik(model, "tool0x", [0.4, 0, 0.1])
    with pytest.raises(ValueError, match="position must be 3 finite numbers"):
        solve_ik(model, "ee_link", [0.4, 0.1])
    with pytest.raises(ValueError, match="unit quaternion"):
        solve_ik(model, "ee_link", [0.4, 0, 0.1], [0, 0, 0, 2])
    with pytest.raises(ValueError, match="unknown joint 'nope'"):
        solve_ik(model, "ee_link", [0.4, 0, 0.1], joints=["nope"])
    with pytest.raises(ValueError, match="IKOptions.tol"):
        IKOptions(tol=0)


# ---------------------------------------------------------------------------- task files
TASK = """models:
  - file: package://example-robot-data/robots/ur_description/urdf/ur5_joint_limited_robot.urdf
  - file: box.xml
  - file: table.xml
contacts:
  - {{a: ee_link_0, b: box_body, mu: 0.5}}
start:
{start}
goal:
  box: {{position: [0.55, 0, 0.05]}}
  ik: {{frame: ee_link, position: [0.50, 0.05, 0.07], rpy: [3.14159265, 0, 0]}}
"""


def _task(tmp_path, start):
    for f in ("box.xml", "table.xml"):
        (tmp_path / f).write_text((EXAMPLE / f).read_text())
    p = tmp_path / "task.yaml"
    p.write_text(TASK.format(start=start))
    return p


def test_task_file_start_and_goal_by_frame_pose(tmp_path):
    """Start and goal of the arm from tool poses (with a prefix-free composed model: arm, box,
    table): forward kinematics of x0 and x_goal put ee_link at the targets to 1e-6; the goal's IK
    starts from the start configuration; its joints become goal joints."""
    path = _task(tmp_path, "  ik: {frame: ee_link, position: [0.40, 0, 0.07], "
                           "quaternion: [1, 0, 0, 0]}\n  velocities: {elbow_joint: 0.1}")
    task = load_task_file(path)
    n_q = task.plant.n_q
    model = task.plant.model
    R_down = np.diag([1.0, -1.0, -1.0])
    for x, target in ((task.x0, [0.40, 0, 0.07]), (task.x_goal, [0.50, 0.05, 0.07])):
        p, R = frame_pose(model, x[:n_q], "ee_link")
        assert np.abs(p - target).max() <= 1e-6 and np.abs(R - R_down).max() <= 1e-6
        assert _inside_limits(model, x[:n_q])
    assert task.x0[n_q + 2] == 0.1  # velocities by name beside ik
    np.testing.assert_allclose(task.x_goal[6:9], [0.55, 0, 0.05])  # the box by joint name
    assert task.goal_joints == ("box", "shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                                "wrist_1_joint", "wrist_2_joint", "wrist_3_joint")
    # the goal's configuration is the branch next to the start (no elbow flip)
    assert np.abs(task.x_goal[:6] - task.x0[:6]).max() < 0.5


def test_the_ur5_push_example_takes_its_arm_poses_from_ik():
    """The example's start and goal (tool block 5 mm behind the box / 10 cm further, pointing
    down) are the joint angles the file used to list (to their 4 decimals)."""
    task = load_task_file(EXAMPLE / "ur5_push.yaml")
    np.testing.assert_allclose(task.x0[:6], [-0.3507, -1.3357, 2.3733, -1.0377, 1.2201, 0.0], atol=1e-4)
    np.testing.assert_allclose(task.x_goal[:6], [-0.2644, -1.1623, 2.0927, -0.9304, 1.3064, 0.0],
                               atol=1e-4)


def test_task_file_ik_seeds_from_named_joints_and_lists_targets(tmp_path):
    """Joints named beside ``ik`` are its starting guess (here the elbow-down branch); a list
    of targets is solved in order, each moving its own joints."""
    up = load_task_file(_task(tmp_path, "  ik: {frame: ee_link, position: [0.40, 0, 0.07]}"))
    down = load_task_file(_task(tmp_path, "  elbow_joint: -2.0\n  shoulder_lift_joint: -0.3\n"
                                          "  ik: [{frame: ee_link, position: [0.40, 0, 0.07]}]"))
    n_q = up.plant.n_q
    for t in (up, down):
        assert np.abs(frame_pose(t.plant.model, t.x0[:n_q], "ee_link")[0] - [0.40, 0, 0.07]).max() <= 1e-6
    assert up.x0[2] > 0 > down.x0[2]  # two elbow branches of the same tool position


@pytest.mark.parametrize("start, line, message", [
    ("  ik: {frame: ee_link, position: [3.0, 0, 0.07]}", 8,
     r"start.ik.position: frame 'ee_link' cannot reach its target within the joint limits: .* \d.* m of "
     r"position error"),
    ("  ik: {frame: no_such_frame, position: [0.4, 0, 0.07]}", 8, r"start.ik.frame: unknown frame 'no_such_frame'"),
    ("  ik: {frame: ee_link, position: [0.4, 0, 0.07], orientation: [1, 0, 0, 0]}", 8,
     r"start.ik.orientation: unknown key 'orientation'; valid keys: frame, position, quaternion, rpy, joints"),
    ("  ik: {frame: ee_link}", 8, r"start.ik: an inverse-kinematics target needs 'position'"),
    ("  ik: {frame: ee_link, position: [0.4, 0, 0.07], joints: [elbow, wrist_1_joint]}", 8,
     r"start.ik.joints\[0\]: unknown joint 'elbow'"),
    ("  ik: {frame: ee_link, position: [0.4, 0, 0.07], rpy: [0, 0, 0], quaternion: [0, 0, 0, 1]}", 8,
     r"start.ik.rpy: give 'quaternion' or 'rpy', not both"),
])
def test_task_file_ik_errors_name_the_line_and_the_frame(tmp_path, start, line, message):
    with pytest.raises(TaskFileError, match=message) as e:
        load_task_file(_task(tmp_path, start))
    assert e.value.line == line
