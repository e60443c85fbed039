"""Parts of the Franka ball task (issue 7): the impedance law (seed 003 eq. 36), Algorithm 3's
re-simulation, the §VII-A/B target generators and the full-Panda scene.

Independent checks: the closed-loop task acceleration from Pinocchio's forward dynamics (ABA)
under the law's torques against K x̃ + B ẋ̃ + ẍ_d (+ Λ⁻¹F); the null-space torque's zero task
acceleration; Algorithm 3's x_d against the analytic free-flight step of an acceleration-driven
point; eq. (25) against hand-computed angles; the IK against forward kinematics.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from c3mpc.algorithm3 import CircleTarget, GaitOptions, LineTarget, PhaseTarget
from c3mpc.tasks.franka_ball import FrankaBallOptions, build_planner, franka_layout
from plants import load_plant
from plants.franka_sim import (
    EE_FRAME,
    PANDA_HOME,
    arm_model,
    build_franka_ball_scene,
    solve_ik,
)
from plants.impedance import ImpedanceGains, TaskSpaceImpedance, nullspace_projector


@pytest.fixture(scope="module")
def arm():
    return arm_model()


# ---------------------------------------------------------------------------- impedance law
def test_gains_default_to_the_authors_hardware_values():
    g = ImpedanceGains()
    assert (g.translational_stiffness, g.rotational_stiffness, g.damping_ratio,
            g.rotational_damping, g.nullspace_stiffness, g.nullspace_damping) == (
        500.0, 900.0, 1.0, 20.0, 4.0, 4.0)
    assert g.translational_damping == pytest.approx(2 * math.sqrt(500.0))
    with pytest.raises(ValueError, match="translational_stiffness"):
        ImpedanceGains(translational_stiffness=-1.0)


def _task_acceleration(arm, q, v, tau):
    """Frame acceleration (linear, angular; world-aligned, classical) under torques tau."""
    import pinocchio as pin

    data = arm.createData()
    a = pin.aba(arm, data, q, v, tau)
    pin.forwardKinematics(arm, data, q, v, a)
    fid = arm.getFrameId(EE_FRAME)
    acc = pin.getFrameClassicalAcceleration(arm, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    return np.concatenate([acc.linear, acc.angular])


def test_closed_loop_task_acceleration_is_the_impedance(arm):
    """With C_f compensated, eq. (36) gives ẍ = K x̃ + B ẋ̃ + ẍ_d + Λ⁻¹ F in task space (up to
    the J̇ v term, which eq. (36) does not cancel: compared with it added back)."""
    import pinocchio as pin

    rng = np.random.default_rng(3)
    g = ImpedanceGains()
    ctl = TaskSpaceImpedance(arm, EE_FRAME, g, q_nullspace=PANDA_HOME)
    for _ in range(3):
        q = PANDA_HOME + rng.uniform(-0.2, 0.2, 7)
        v = rng.uniform(-0.3, 0.3, 7)
        p, R, lin, ang = ctl.frame_state(q, v)
        p_d = p + rng.uniform(-0.02, 0.02, 3)
        v_d = rng.uniform(-0.1, 0.1, 3)
        a_d = rng.uniform(-1, 1, 3)
        f = rng.uniform(-5, 5, 3)
        tau = ctl.torque(q, v, p_d, v_d, R, force_d=f, a_d=a_d)
        acc = _task_acceleration(arm, q, v, tau)
        # independent expectation
        data = arm.createData()
        fid = arm.getFrameId(EE_FRAME)
        pin.computeJointJacobians(arm, data, q)
        pin.updateFramePlacements(arm, data)
        J = pin.getFrameJacobian(arm, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        M = pin.crba(arm, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        pin.forwardKinematics(arm, data, q, v, np.zeros(7))
        drift = pin.getFrameClassicalAcceleration(arm, data, fid,
                                                  pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        drift = np.concatenate([drift.linear, drift.angular])
        Lam_inv = J @ np.linalg.solve(M, J.T)
        e = np.concatenate([p_d - p, np.zeros(3)])
        de = np.concatenate([v_d - lin, -ang])
        F = np.concatenate([f, np.zeros(3)])
        expected = g.K @ e + g.B @ de + np.concatenate([a_d, np.zeros(3)]) + Lam_inv @ F + drift
        # the null-space posture torque adds no task acceleration (checked separately)
        np.testing.assert_allclose(acc, expected, rtol=1e-7, atol=1e-7)


def test_nullspace_torque_produces_no_task_acceleration(arm):
    import pinocchio as pin

    data = arm.createData()
    q = PANDA_HOME + 0.1
    pin.computeJointJacobians(arm, data, q)
    pin.updateFramePlacements(arm, data)
    J = pin.getFrameJacobian(arm, data, arm.getFrameId(EE_FRAME),
                             pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    M = pin.crba(arm, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    N, Lam = nullspace_projector(J, M)
    tau0 = np.random.default_rng(0).normal(size=7)
    np.testing.assert_allclose(J @ np.linalg.solve(M, N @ tau0), 0.0, atol=1e-10)
    np.testing.assert_allclose(Lam, np.linalg.inv(J @ np.linalg.solve(M, J.T)), rtol=1e-10)


def test_ik_reaches_the_simplified_models_start(arm):
    import pinocchio as pin

    target = np.array([0.55, 0.1, 0.0875])
    q = solve_ik(arm, target)
    data = arm.createData()
    pin.framesForwardKinematics(arm, data, q)
    np.testing.assert_allclose(data.oMf[arm.getFrameId(EE_FRAME)].translation, target,
                               atol=1e-6)
    scene = build_franka_ball_scene(q, [[0.55, 0.1, 0.0315]])
    assert scene.model.nq == 7 + 7 and scene.model.nv == 7 + 6


# ---------------------------------------------------------------------------- Algorithm 3
class _Clock:
    """Deterministic wall clock: every call advances by ``step`` seconds."""

    def __init__(self, step: float):
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def test_algorithm3_resimulates_over_the_measured_solve_time():
    """Ball far away (no contact): the simplified model's end effector is a point driven at
    acceleration u (gravity compensated), so step 5 must give v_d = v + u Δt_c and
    p_d = p + Δt_c v_d (the LCS's semi-implicit Euler), Δt_c = the clock's measured time."""
    plant = load_plant("franka-ball")
    planner, _ = build_planner(plant, FrankaBallOptions(min_resim_dt=0.0, resim_lead=0.0,
                                                      min_command_delay=None))  # strict Alg. 3
    planner.clock = _Clock(0.004)  # t0, after solve: Δt_c = 0.004 s
    x = np.array(plant.defaults.x0, float)
    x[0:3] = [0.40, -0.10, 0.30]  # end effector 0.3 m above the table, far from the ball
    x[10:13] = [0.05, -0.02, 0.01]
    plan = planner.plan(x, 0.0)
    assert plan.dt_c == pytest.approx(0.004)
    assert plan.dt_resim == pytest.approx(0.004)
    v_d = x[10:13] + plan.u * 0.004
    np.testing.assert_allclose(plan.x_d[10:13], v_d, atol=1e-9)
    np.testing.assert_allclose(plan.x_d[0:3], x[0:3] + 0.004 * v_d, atol=1e-9)
    np.testing.assert_allclose(plan.ee_force, 0.0, atol=1e-9)  # no contact, no force
    assert plan.status.ok and plan.phase == 0
    assert plan.plan_x.shape == (6, 19)


def test_algorithm3_min_resim_dt_floor():
    plant = load_plant("franka-ball")
    planner, _ = build_planner(plant, FrankaBallOptions(min_resim_dt=0.02, resim_lead=0.0))
    planner.clock = _Clock(0.001)
    x = np.array(plant.defaults.x0, float)
    x[0:3] = [0.40, -0.10, 0.30]
    plan = planner.plan(x, 0.0)
    assert plan.dt_c == pytest.approx(0.001) and plan.dt_resim == pytest.approx(0.02)


# ---------------------------------------------------------------------------- targets
def _circle():
    plant = load_plant("franka-ball")
    lay = franka_layout(plant)
    return CircleTarget(plant.defaults.x_goal, lay, (0.55, 0.0), 0.1, 20.0, GaitOptions()), lay


def test_circle_target_is_eq25_and_the_gait_schedule():
    tgt, lay = _circle()
    x = np.zeros(19)
    x[3:6] = [0.55 + 0.1 * math.sin(0.3), 0.1 * math.cos(0.3), lay.ball_radius]
    a = 0.3 + math.radians(20)
    pt = tgt(x, 0.2)
    assert isinstance(pt, PhaseTarget) and pt.phase == 0
    np.testing.assert_allclose(pt.x_goal[3:5], [0.55 + 0.1 * math.sin(a), 0.1 * math.cos(a)],
                               atol=1e-12)
    # Phase I: end effector above the ball, touching its top (phase1_height = 0)
    np.testing.assert_allclose(pt.x_goal[0:3], [x[3], x[4], x[5] + lay.ball_radius +
                                                lay.ee_radius], atol=1e-12)
    assert [tgt(x, t).phase for t in (0.0, 0.99, 1.01, 1.49, 1.51, 2.6)] == [0, 0, 1, 1, 0, 1]
    # optional: Phase I biases the end-effector velocity to the ball's (off by default)
    x[13:15] = [0.03, -0.02]
    np.testing.assert_allclose(tgt(x, 0.2).x_goal[10:13], 0.0)
    tgt_v = CircleTarget(tgt.template, lay, gait=GaitOptions(phase1_match_velocity=True))
    np.testing.assert_allclose(tgt_v(x, 0.2).x_goal[10:13], [0.03, -0.02, 0.0])
    np.testing.assert_allclose(tgt_v(x, 1.2).x_goal[10:13], 0.0)
    # Phase II: behind the ball, opposite to the direction to the target
    p2 = tgt(x, 1.2)
    d = pt.x_goal[3:5] - x[3:5]
    back = p2.x_goal[0:2] - x[3:5]
    assert np.dot(back, d) < 0
    assert np.linalg.norm(back) == pytest.approx(GaitOptions().phase2_back)
    assert abs(back[0] * d[1] - back[1] * d[0]) < 1e-12  # collinear


def test_line_target_follows_the_least_advanced_ball():
    plant = load_plant("franka-balls-2")
    lay = franka_layout(plant)
    x0 = plant.defaults.x0
    y0 = lay.balls(x0)[:, 1]
    tgt = LineTarget(plant.defaults.x_goal, lay, x_c=0.55, dy=0.05, y_start=y0, y_end=0.3)
    x = x0.copy()
    x[1] += 0.08  # ball 1 advanced 8 cm; ball 2 not at all
    pt = tgt(x, 0.0)
    np.testing.assert_allclose(pt.ball_targets[:, 0], 0.55)
    np.testing.assert_allclose(pt.ball_targets[:, 1], lay.balls(x)[:, 1] + 0.05)
    ee = pt.x_goal[list(lay.ee_position)]
    np.testing.assert_allclose(ee[:2], lay.balls(x)[1, :2], atol=1e-12)  # above ball 2


def test_panda_world_clips_joint_torques_to_the_urdf_effort_limits():
    """``torque_limits``: an equilibrium 0.4 m from the end effector asks eq. (36) for more than
    the drives give; the world applies exactly ±effortLimit on the saturated joints (87 N m
    joints 1-4, 12 N m joints 5-7) and counts the step, and without the option the same state
    gives the unclipped torque (the same numbers where it is inside the limits)."""
    from c3mpc.tasks.franka_ball import TASK_STIFFNESS, make_world

    plant = load_plant("franka-ball")
    layout = franka_layout(plant)
    x0 = plant.defaults.x0
    gains = ImpedanceGains(translational_stiffness=TASK_STIFFNESS)
    taus = {}
    for on in (True, False):
        w = make_world(FrankaBallOptions(torque_limits=on), gains, plant, layout)
        w.cmd["p"] = layout.ee(x0) + np.array([0.0, 0.4, 0.1])
        sim = w.sim
        taus[on] = sim.controller(0.0, sim.q.copy(), sim.v.copy())[:7]
        assert w.saturated_steps == (1 if on else 0)
    limit = np.array([87.0] * 4 + [12.0] * 3)
    raw, clipped = taus[False], taus[True]
    over = np.abs(raw) > limit
    assert over.any()  # the test asks for more than the drives give
    np.testing.assert_allclose(clipped[over], np.sign(raw[over]) * limit[over], rtol=0, atol=0)
    np.testing.assert_allclose(clipped[~over], raw[~over], rtol=0, atol=0)
