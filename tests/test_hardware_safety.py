"""Safety layer clamps and records, impedance law (eq. 36), message validation, options
loading, and the simulated robot's impedance model against its analytic response."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardware import messages
from hardware.deploy import DeployOptions
from hardware.errors import HardwareValueError, MessageError
from hardware.impedance import (
    ImpedanceParams,
    feedforward_torque,
    impedance_torque,
    nullspace_projector,
)
from hardware.safety import InterventionKind, SafetyLayer, SafetyOptions, Target

Q_DOWN = np.array([1.0, 0.0, 0.0, 0.0])


def _target(p, f=(0, 0, 0), m=(0, 0, 0), q=Q_DOWN) -> Target:
    return Target(np.asarray(p, float), np.asarray(q, float), np.asarray(f, float),
                  np.asarray(m, float))


def _kinds(layer: SafetyLayer) -> list[InterventionKind]:
    return [r.kind for r in layer.records]


# -- safety layer ------------------------------------------------------------------------
def test_nominal_commands_pass_unchanged_and_unrecorded():
    layer = SafetyLayer(SafetyOptions(), nominal_period=0.01)
    meas = np.array([0.55, 0.0, 0.15])
    layer.reset(meas, 0.0)
    for k in range(1, 50):
        p = meas + [0.004 * k * 0.1, 0.0, 0.0]  # 0.4 m/s... well below every limit
        out = layer.filter(_target(p, f=(1, 2, 3)), p - [0.01, 0, 0], 0.01 * k)
        np.testing.assert_array_equal(out.position, p)
        np.testing.assert_array_equal(out.force, [1, 2, 3])
    assert layer.records == [] and layer.interventions == 0


def test_workspace_clamp_is_recorded_with_requested_and_applied():
    o = SafetyOptions()
    layer = SafetyLayer(o)
    meas = np.array([0.79, 0.0, 0.15])
    out = layer.filter(_target([0.83, 0.0, 0.15]), meas, 1.0)
    np.testing.assert_allclose(out.position, [0.80, 0.0, 0.15])
    (rec,) = layer.records
    assert rec.kind == InterventionKind.WORKSPACE
    assert rec.requested == (0.83, 0.0, 0.15) and rec.applied == (0.80, 0.0, 0.15)
    assert rec.to_dict()["kind"] == "workspace"


def test_offset_step_and_speed_limits():
    o = SafetyOptions(max_offset=0.05, max_step=0.02, max_speed=0.6)
    meas = np.array([0.55, 0.0, 0.15])
    # offset: 0.1 m ahead of the end effector -> 0.05 m along the same direction
    layer = SafetyLayer(o)
    out = layer.filter(_target(meas + [0.1, 0, 0]), meas, 0.0)
    np.testing.assert_allclose(out.position, meas + [0.05, 0, 0], atol=1e-15)
    assert _kinds(layer) == [InterventionKind.OFFSET]
    # step: previous command at meas, new target 0.03 m away (within max_offset)
    layer = SafetyLayer(o)
    layer.reset(meas, None)
    out = layer.filter(_target(meas + [0, 0.03, 0]), meas, 0.0)
    np.testing.assert_allclose(out.position, meas + [0, 0.02, 0], atol=1e-15)
    assert _kinds(layer) == [InterventionKind.STEP]
    # speed: 0.01 m in 0.01 s is 1 m/s > 0.6 m/s -> 0.006 m
    layer = SafetyLayer(o, nominal_period=0.01)
    layer.reset(meas, 0.0)
    out = layer.filter(_target(meas + [0.01, 0, 0]), meas, 0.01)
    np.testing.assert_allclose(out.position, meas + [0.006, 0, 0], atol=1e-12)
    assert _kinds(layer) == [InterventionKind.SPEED]
    # a late tick followed by a prompt one is judged over the nominal period
    layer = SafetyLayer(o, nominal_period=0.01)
    layer.reset(meas, 0.0)
    out = layer.filter(_target(meas + [0.005, 0, 0]), meas, 0.002)  # 0.5 m/s nominal
    np.testing.assert_array_equal(out.position, meas + [0.005, 0, 0])
    assert layer.records == []


def test_wrench_limits_and_invalid_targets():
    layer = SafetyLayer(SafetyOptions(max_force=30.0, max_torque=3.0))
    meas = np.array([0.55, 0.0, 0.15])
    out = layer.filter(_target(meas, f=(0, 0, -100), m=(4, 0, 3)), meas, 0.0)
    np.testing.assert_allclose(out.force, [0, 0, -30])
    np.testing.assert_allclose(out.torque, [2.4, 0, 1.8])
    assert _kinds(layer) == [InterventionKind.WRENCH, InterventionKind.WRENCH]
    for bad in ([np.nan, 0, 0.1], [0.5, np.inf, 0.1]):
        out = layer.filter(_target(bad), meas, 1.0)
        np.testing.assert_array_equal(out.position, meas)  # hold the measured pose
        np.testing.assert_array_equal(out.force, 0)
    out = layer.filter(_target(meas + 0.01, f=(np.nan, 0, 0)), meas, 2.0)
    np.testing.assert_array_equal(out.position, meas)
    assert _kinds(layer)[2:] == [InterventionKind.INVALID_TARGET] * 3
    assert layer.interventions == 5


def test_rotation_step_is_limited_along_the_shortest_arc():
    """A 90° orientation jump is cut to max_rotation_step about the same axis; q and -q are
    the same rotation (no limit hit); the hold keeps the last commanded orientation."""
    from scipy.spatial.transform import Rotation

    o = SafetyOptions()
    layer = SafetyLayer(o)
    meas = np.array([0.55, 0.0, 0.15])
    q0 = Rotation.from_quat(Q_DOWN)
    layer.reset(meas, None, Q_DOWN)
    q90 = (Rotation.from_rotvec([0, 0, np.pi / 2]) * q0).as_quat()
    out = layer.filter(_target(meas, q=q90), meas, 1.0)
    rel = (Rotation.from_quat(out.quaternion) * q0.inv()).as_rotvec()
    np.testing.assert_allclose(rel, [0, 0, o.max_rotation_step], atol=1e-9)
    assert _kinds(layer) == [InterventionKind.ROTATION]
    out2 = layer.filter(_target(meas, q=-out.quaternion), meas, 1.1)
    assert abs(abs(float(out2.quaternion @ out.quaternion)) - 1) < 1e-12
    assert _kinds(layer) == [InterventionKind.ROTATION]
    hold = layer.hold(meas, q90, 1.2)
    assert abs(abs(float(hold.quaternion @ out.quaternion)) - 1) < 1e-12


def test_watchdog_trips_once_per_stale_episode_and_recovers():
    layer = SafetyLayer(SafetyOptions(stale_after=0.05))
    assert not layer.watchdog(0.0, 0.01, 0.02)
    assert layer.watchdog(0.1, 0.01, 0.051)  # camera stale
    assert layer.watchdog(0.2, 0.2, 0.3)  # still stale: no second record
    assert layer.watchdog_trips == 1 and _kinds(layer) == [InterventionKind.WATCHDOG]
    assert "camera" in layer.records[0].detail
    assert not layer.watchdog(0.3, 0.0, 0.0)
    assert layer.watchdog(0.4, math.inf, 0.0)  # state never arrived
    assert layer.watchdog_trips == 2 and "robot state" in layer.records[1].detail
    assert layer.interventions == 0  # trips are counted separately


finite = st.floats(-5, 5, allow_nan=False)
anyfloat = st.one_of(finite, st.sampled_from([math.nan, math.inf, -math.inf]))


@settings(max_examples=150, deadline=None)
@given(targets=st.lists(st.tuples(st.tuples(anyfloat, anyfloat, anyfloat),
                                  st.tuples(finite, finite, finite)), min_size=1, max_size=20),
       dts=st.lists(st.floats(0.0, 0.1), min_size=20, max_size=20))
def test_commands_never_leave_the_workspace_and_steps_stay_bounded(targets, dts):
    """Whatever the planner asks (NaN, inf, far away) and wherever the robot is, every command
    is inside the box, and between two valid commands it moves at most max_step."""
    o = SafetyOptions()
    layer = SafetyLayer(o, nominal_period=0.01)
    lo, hi = np.array(o.workspace_min), np.array(o.workspace_max)
    t = 0.0
    prev = None
    for (p, meas), dt in zip(targets, dts):
        t += dt
        n_before = len(layer.records)
        out = layer.filter(_target(p), np.array(meas), t)
        assert np.all(out.position >= lo) and np.all(out.position <= hi)
        assert np.all(np.isfinite(out.position)) and np.all(np.isfinite(out.force))
        invalid = any(r.kind == InterventionKind.INVALID_TARGET
                      for r in layer.records[n_before:])
        if prev is not None and not invalid:
            assert np.linalg.norm(out.position - prev) <= o.max_step + 1e-12
        prev = out.position


# -- impedance law -------------------------------------------------------------------------
def test_impedance_defaults_are_the_hardware_gains():
    from plants.impedance import ImpedanceGains

    p = ImpedanceParams()
    assert isinstance(p, ImpedanceGains) and p == ImpedanceParams(**vars(ImpedanceGains()))
    assert (p.translational_stiffness, p.rotational_stiffness, p.damping_ratio,
            p.rotational_damping, p.nullspace_stiffness, p.nullspace_damping) == (
        500.0, 900.0, 1.0, 20.0, 4.0, 4.0)
    assert p.translational_damping == pytest.approx(2 * math.sqrt(500))
    np.testing.assert_array_equal(np.diag(p.K), [500] * 3 + [900] * 3)
    np.testing.assert_allclose(np.diag(p.B), [2 * math.sqrt(500)] * 3 + [20] * 3)


def test_eq36_gives_the_task_space_closed_loop_and_null_space_is_invisible():
    """With C compensating Coriolis/gravity, J M⁻¹ u = K x̃ + B ẋ̃ (task acceleration), and the
    null-space term produces no task-space acceleration (dynamically consistent N)."""
    rng = np.random.default_rng(7)
    n = 7
    A = rng.normal(size=(n, n))
    M = A @ A.T + n * np.eye(n)
    J = rng.normal(size=(6, n))
    p = ImpedanceParams()
    e, de = rng.normal(size=6), rng.normal(size=6)
    qe, dqe = rng.normal(size=n), rng.normal(size=n)
    u = impedance_torque(p, J, M, e, de, np.zeros(n), qe, dqe)
    np.testing.assert_allclose(J @ np.linalg.solve(M, u), p.K @ e + p.B @ de, rtol=1e-9,
                               atol=1e-9)
    N, Lambda = nullspace_projector(J, M)
    np.testing.assert_allclose(Lambda, np.linalg.inv(J @ np.linalg.inv(M) @ J.T), rtol=1e-9)
    np.testing.assert_allclose(J @ np.linalg.solve(M, N @ rng.normal(size=n)), 0, atol=1e-9)
    # feed-forward τ_ff = J_cᵀ λ_d, switched off by feedforward=False
    Jc, lam = rng.normal(size=(3, n)), rng.normal(size=3)
    tau = feedforward_torque(Jc, lam)
    np.testing.assert_allclose(tau, Jc.T @ lam)
    u_ff = impedance_torque(p, J, M, e, de, np.zeros(n), qe, dqe, tau)
    np.testing.assert_allclose(u_ff - u, tau, atol=1e-12)
    off = ImpedanceParams(feedforward=False)
    np.testing.assert_allclose(impedance_torque(off, J, M, e, de, np.zeros(n), qe, dqe, tau), u)
    with pytest.raises(HardwareValueError, match="pose_error"):
        impedance_torque(p, J, M, e[:3], de, np.zeros(n), qe, dqe)


def test_simulated_end_effector_matches_the_critically_damped_step_response():
    """The simulated arm's response to a 3 cm equilibrium step equals the analytic solution of
    ẍ = K(x_d − x) − 2√K ẋ: x(t) = x_d − Δ (1 + ωt) e^{−ωt}, ω = √K; a desired force F shifts
    the rest point by F / (m K)."""
    from hardware.rosbridge import RosBridgeServer
    from hardware.sim_robot import SimRobotOptions, SimulatedFranka

    robot = SimulatedFranka(RosBridgeServer(), SimRobotOptions(physics_dt=1e-4))
    x0 = robot.p.copy()
    robot.p_d = x0 + [0.03, 0.0, 0.0]
    w = math.sqrt(500.0)
    for t in (0.02, 0.05, 0.1, 0.2):
        robot.advance_to(t)
        expected = 0.03 * (1 - (1 + w * t) * math.exp(-w * t))
        assert robot.p[0] - x0[0] == pytest.approx(expected, abs=3e-5)
    robot.f_d = np.array([0.0, 0.0, 5.0])
    robot.advance_to(1.5)
    assert robot.p[2] - x0[2] == pytest.approx(5.0 / (2.5 * 500.0), rel=1e-3)


# -- messages ------------------------------------------------------------------------------
def test_pose_and_franka_state_round_trip():
    p, q = np.array([0.5, -0.1, 0.3]), np.array([0.0, 0.7071067811865476, 0.0,
                                                  0.7071067811865476])
    p2, q2, t = messages.parse_pose_stamped(messages.pose_stamped(p, q, "panda_link0", 12.25),
                                            "/x", "panda_link0")
    np.testing.assert_array_equal(p2, p)
    np.testing.assert_allclose(q2, q)
    assert t == pytest.approx(12.25)
    T = messages.transform_from_pose(p, q)
    msg = messages.franka_state(T, 3.5)
    assert msg["O_T_EE"][12:15] == p.tolist()  # column-major: translation last column
    T2, t2 = messages.parse_franka_state(msg)
    np.testing.assert_array_equal(T2, T)


@pytest.mark.parametrize("mutate, reason", [
    (lambda m: m["pose"]["position"].update(x=float("nan")), "non-finite"),
    (lambda m: m["pose"]["position"].pop("y"), "missing"),
    (lambda m: m["header"].update(frame_id="world"), "frame_id"),
    (lambda m: m["pose"]["orientation"].update(w=3.0), "norm"),
    (lambda m: m.pop("header"), "header"),
    (lambda m: m["pose"].update(position="here"), "position: missing or not an object"),
    (lambda m: m["pose"]["position"].update(x="0.5"), "non-numeric field 'x'"),
    (lambda m: m["pose"]["position"].update(x=True), "non-numeric field 'x'"),
    (lambda m: m["pose"]["position"].update(extra=1.0), r"unknown field\(s\) \['extra'\]"),
    (lambda m: m.update(note="hi"), "PoseStamped: unknown field"),
    (lambda m: m["header"]["stamp"].update(secs="12"), "not numbers"),
])
def test_malformed_poses_are_rejected(mutate, reason):
    msg = messages.pose_stamped(np.zeros(3), Q_DOWN, "panda_link0", 1.0)
    mutate(msg)
    with pytest.raises(MessageError, match=reason):
        messages.parse_pose_stamped(msg, "/eq", "panda_link0")


def test_commands_are_validated_as_rosbridge_and_the_stock_controller_do():
    """Robot commands (``command=True``): no header and an empty frame_id are accepted (rosbridge
    fills a default header, the stock controller ignores it); another frame, strings for
    numbers and unknown fields are refused."""
    msg = messages.pose_stamped([0.5, 0, 0.2], Q_DOWN, "panda_link0", 1.0)
    no_header = {"pose": msg["pose"]}
    p, q, t = messages.parse_pose_stamped(no_header, "/eq", "panda_link0", command=True)
    assert t is None and p.tolist() == [0.5, 0, 0.2]
    empty = messages.pose_stamped([0.5, 0, 0.2], Q_DOWN, "", 1.0)
    assert messages.parse_pose_stamped(empty, "/eq", "panda_link0", command=True)[2] == 1.0
    with pytest.raises(MessageError, match="frame_id"):
        messages.parse_pose_stamped(empty, "/eq", "panda_link0")  # states: strict
    with pytest.raises(MessageError, match="header"):
        messages.parse_pose_stamped(no_header, "/eq", "panda_link0")
    other = messages.pose_stamped([0.5, 0, 0.2], Q_DOWN, "world", 1.0)
    with pytest.raises(MessageError, match="frame_id 'world'"):
        messages.parse_pose_stamped(other, "/eq", "panda_link0", command=True)
    w = {"wrench": {"force": {"x": 1, "y": 0, "z": 0}, "torque": {"x": 0, "y": 0, "z": "0"}}}
    with pytest.raises(MessageError, match="non-numeric field 'z'"):
        messages.parse_wrench_stamped(w, "/w", "panda_link0", command=True)
    w["wrench"]["torque"]["z"] = 0
    f, m, t = messages.parse_wrench_stamped(w, "/w", "panda_link0", command=True)
    assert f.tolist() == [1, 0, 0] and t is None


def test_non_rigid_or_short_o_t_ee_is_rejected():
    msg = messages.franka_state(np.eye(4), 1.0)
    msg["O_T_EE"][0] = 2.0
    with pytest.raises(MessageError, match="rigid"):
        messages.parse_franka_state(msg)
    msg["O_T_EE"] = msg["O_T_EE"][:12]
    with pytest.raises(MessageError, match="16"):
        messages.parse_franka_state(msg)


# -- options -------------------------------------------------------------------------------
def test_deploy_options_load_nested_yaml_and_reject_unknown_keys(tmp_path):
    f = tmp_path / "deploy.yaml"
    f.write_text("rate_hz: 50\nsafety:\n  stale_after: 0.1\n  workspace_min: [0.2, -0.4, 0.0]\n"
                 "franka:\n  wrench_topic: ''\nbridge:\n  url: ws://robot:9090\n")
    o = DeployOptions.from_file(f)
    assert o.rate_hz == 50 and o.safety.stale_after == 0.1
    assert o.safety.workspace_min == (0.2, -0.4, 0.0) and o.franka.wrench_topic == ""
    assert o.bridge.url == "ws://robot:9090" and o.camera.topic.startswith("/")
    f.write_text("safety:\n  stale_afterr: 0.1\n")
    with pytest.raises(HardwareValueError, match="stale_afterr.*valid"):
        DeployOptions.from_file(f)
    with pytest.raises(HardwareValueError, match="stale_after"):
        SafetyOptions(stale_after=0)
    with pytest.raises(HardwareValueError, match="workspace"):
        SafetyOptions(workspace_min=(1, 0, 0), workspace_max=(0, 1, 1))
    with pytest.raises(HardwareValueError, match="translational_stiffness"):
        ImpedanceParams(translational_stiffness=-1)
    assert ImpedanceParams.from_dict({"rotational_damping": 30}).rotational_damping == 30


# -- adapters over the real bridge ---------------------------------------------------------
def test_adapters_reject_malformed_state_and_detections_over_the_bridge():
    """NaN poses, wrong frames, missing fields and tracker jumps published by the robot side
    are rejected and counted by the adapters; the last valid values stay in use."""
    pytest.importorskip("roslibpy")
    from hardware.camera import BallDetectionAdapter
    from hardware.franka import FrankaAdapter
    from hardware.rosbridge import (
        BridgeOptions,
        RosBridgeServer,
        RosBridgeTransport,
        ServerThread,
    )

    sth = ServerThread(RosBridgeServer()).start()
    tr = RosBridgeTransport(BridgeOptions(url=sth.server.url))
    try:
        tr.connect()
        franka = FrankaAdapter(tr)
        camera = BallDetectionAdapter(tr)
        srv = sth.server
        deadline = time.monotonic() + 5
        while srv.client_stats() == [] or len(sth.call(srv.client_stats)[0].subscriptions) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        t0 = time.time() - 1.0  # stamps must be near the local clock
        T = messages.transform_from_pose(np.array([0.5, 0.0, 0.2]), Q_DOWN)
        bad_T = T.copy()
        bad_T[0, 3] = np.nan
        states = [messages.franka_state(T, t0 + 1.0), messages.franka_state(bad_T, t0 + 1.01),
                  {"header": messages.header(t0 + 1.02, "")},
                  messages.franka_state(T, t0 + 0.5)]
        ball = np.array([0.55, 0.0, 0.05])
        dets = [messages.point_stamped(ball, "panda_link0", t0 + 1.0),
                messages.point_stamped(ball, "camera_link", t0 + 1.01),
                messages.point_stamped(ball + [0.2, 0, 0], "panda_link0", t0 + 1.02),
                {"header": messages.header(t0 + 1.03, "panda_link0"), "point": {"x": 1.0}},
                messages.point_stamped(ball + [0.001, 0, 0], "panda_link0", t0 + 1.04)]
        for m in states:
            sth.call(lambda m=m: srv.publish("/franka_state_controller/franka_states", m))
        for m in dets:
            sth.call(lambda m=m: srv.publish("/ball_tracker/ball_position", m))
        deadline = time.monotonic() + 5
        while franka.rejected + franka._accepted < 4 or camera.rejected < 3 or (
                camera.state() is None or camera.state().count < 2):
            assert time.monotonic() < deadline, (franka.rejected, camera.rejected)
            time.sleep(0.01)
        assert franka.rejected == 3 and franka.state().count == 1
        np.testing.assert_array_equal(franka.state().position, [0.5, 0.0, 0.2])
        # the NaN reaches the client as JSON null (as from rosbridge): not a number
        assert any("O_T_EE must be 16 numbers" in r for r in franka.rejections)
        assert any("not after" in r for r in franka.rejections)  # stamp went backwards
        assert camera.rejected == 3
        assert any("jump" in r for r in camera.rejections)
        assert any("frame_id" in r for r in camera.rejections)
        s = camera.state()
        np.testing.assert_allclose(s.position, ball + [0.001, 0, 0])
        np.testing.assert_allclose(s.velocity, [0.3 * 0.001 / 0.04, 0, 0], rtol=1e-6)
    finally:
        tr.close()
        sth.stop()


# -- C3 planner (franka-ball simplified model) ---------------------------------------------
def test_c3_planner_is_the_canonical_algorithm3_with_equilibrium_lead():
    """The deploy C3 planner is c3mpc's Algorithm3Planner + CircleTarget built by
    tasks.franka_ball.build_planner: eq. (25) goal 20° ahead; the target is the re-simulated x_d's
    end effector shifted by (B/K)·v_d + u_C3/K (so that K(p_eq − p) − B v = K(p_d − p) +
    B(v_d − v) + u_C3) and the force is the plan's λ_d force; without a new detection the
    previous target is held (plan once per camera sample)."""
    pytest.importorskip("plants.models.franka_ball")
    from c3mpc.algorithm3 import Algorithm3Planner, CircleTarget
    from hardware.camera import BallState
    from hardware.franka import RobotState
    from hardware.planner_c3 import C3Planner, C3PlannerOptions
    from plants.models.franka_ball import BALL_RADIUS, EE_RADIUS

    r = BALL_RADIUS
    robot = RobotState(np.array([0.55, 0.1, 2 * r + EE_RADIUS + 0.005]), Q_DOWN, np.zeros(3),
                       0.0, 0.0, 1)
    ball = BallState(np.array([0.55, 0.1, r]), np.zeros(3), 0.0, 0.0, 1)
    planner = C3Planner(C3PlannerOptions(min_resim_dt=0.05))
    assert isinstance(planner.algorithm3, Algorithm3Planner)
    assert isinstance(planner.algorithm3.target, CircleTarget)
    assert planner.warm_up() > 0
    x = planner.state_vector(robot, ball)
    np.testing.assert_array_equal(x[0:3], robot.position)
    np.testing.assert_array_equal(x[3:6], ball.position)
    g = planner.goal(x, 0.0)
    a = math.radians(20.0)
    np.testing.assert_allclose(g[3:5], [0.55 + 0.1 * math.sin(a), 0.1 * math.cos(a)],
                               atol=1e-12)
    target = planner.plan(robot, ball, 0.0)
    assert planner.failures == 0
    assert np.all(np.isfinite(target.position)) and np.all(np.isfinite(target.force))
    assert np.linalg.norm(target.position - robot.position) < 0.05
    plan = planner.last_plan
    assert plan.dt_resim >= 0.05
    p = ImpedanceParams()
    K, B = p.translational_stiffness, p.translational_damping
    np.testing.assert_allclose(target.position, x_d_lead := plan.x_d[0:3] + B / K
                               * plan.x_d[10:13] + plan.u[:3] / K, atol=1e-15)
    np.testing.assert_array_equal(target.force, plan.ee_force)
    assert np.all(np.isfinite(x_d_lead))
    # the same detection again: no new plan, the previous target
    assert planner.plan(robot, ball, 0.01) is target and planner.plans == 1


def test_circle_planner_starts_at_the_end_effector_and_leads_by_20_degrees():
    from hardware.franka import RobotState
    from hardware.planner import CirclePlanner, CirclePlannerOptions

    o = CirclePlannerOptions()
    planner = CirclePlanner(o)
    ee = np.array([0.65, 0.0, 0.15])
    robot = RobotState(ee, Q_DOWN, np.zeros(3), 0.0, 0.0, 1)
    np.testing.assert_array_equal(planner.plan(robot, None, 0.0).position, ee)  # no step
    # the lead point: 20° ahead on the circle, |chord| = 2 r sin(10°) < max_lead_distance
    lead = planner.target_on_circle(ee)
    np.testing.assert_allclose(lead, [0.55 + 0.1 * math.cos(math.radians(20)),
                                      0.1 * math.sin(math.radians(20))], atol=1e-15)
    prev = ee
    for t in (0.01, 0.02, 0.2, 0.21):  # includes a 180 ms late tick
        p = planner.plan(robot, None, t).position
        bound = min(o.max_target_speed * 0.18, o.max_target_step)
        assert np.linalg.norm(p - prev) <= bound + 1e-12
        prev = p
    for k in range(20):
        p = planner.plan(robot, None, 1.0 + k * 0.1).position
    np.testing.assert_allclose(p[:2], lead, atol=1e-12)  # converged on the lead point
    assert p[2] == 0.15
    planner.reset()
    np.testing.assert_array_equal(planner.plan(robot, None, 5.0).position, ee)
