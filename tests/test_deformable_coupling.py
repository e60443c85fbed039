"""Two-way coupling of Pinocchio robots with deformable bodies through the contact rows
(plants/sim/deformable/coupling.py): momentum balance, a spring press carrying a soft ball's
reaction, the Delassus operator with the robots' part, and a Panda whose fingers the ball pushes
open."""

import numpy as np
import pinocchio as pin
import pytest

from plants.sim import load_scene
from plants.sim.deformable import DeformableBody, DeformableSimulator, DeformableWorld, HalfSpace, sphere_tet_mesh
from plants.sim.deformable.coupling import CoupledRobot, LinkBox
from plants.sim.deformable.scenes import make_material
from plants.sim.deformable.simulator import Delassus

PRESS_URDF = """<robot name="press">
  <link name="base"/>
  <link name="plate">
    <inertial><origin xyz="0 0 0"/><mass value="{mass}"/>
      <inertia ixx="1e-3" iyy="1e-3" izz="2e-3" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="lift" type="prismatic">
    <parent link="base"/><child link="plate"/><origin xyz="0 0 {z0}"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1000" velocity="10"/>
  </joint>
</robot>"""


def _ball(radius=0.04, cells=4, center=(0.0, 0.0, 0.04), youngs=1e5):
    mesh = sphere_tet_mesh(radius, cells, center=center)
    return DeformableBody("ball", mesh, make_material("neohookean", youngs, 0.4), density=1000.0)


def _slider(mass=0.5, half=0.03):
    """A free rigid cube on a 3-D translation joint (Pinocchio model built joint by joint)."""
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelTranslation(), pin.SE3.Identity(), "slide")
    model.appendBodyToJoint(j, pin.Inertia.FromBox(mass, 2 * half, 2 * half, 2 * half), pin.SE3.Identity())
    model.addBodyFrame("cube", j, pin.SE3.Identity(), 0)
    return model


@pytest.mark.parametrize("solver,tol", [("fba", 1e-11), ("nsn", 2e-4)])
def test_free_rigid_cube_hitting_a_soft_ball_conserves_momentum(solver, tol):
    """No gravity, no ground: a free 0.5 kg cube (unactuated translation joint) hits a soft ball at
    1 m/s, off-centre, with friction. The contact forces are internal, so Σ m_i v_i + m v_cube is
    constant: to round-off with seed 004's solver (the rows' forces act equal and opposite in every
    local-global iteration), to the Newton residual with seed 002's; the ball takes momentum."""
    m, a, R = 0.5, 0.03, 0.04
    robot = CoupledRobot("cube", _slider(m, a), (LinkBox("cube", (a, a, a), mu=0.5),),
                         q0=np.array([-(R + a + 0.002), 0.01, 0.0]), v0=np.array([1.0, 0.0, 0.0]))
    world = DeformableWorld((_ball(R, 3, (0.0, 0.0, 0.0)),), robots=(robot,), gravity=(0.0, 0.0, 0.0))
    sim = DeformableSimulator(world, solver=solver)

    def momentum():
        return (sim.system.mass[:, None] * sim.v).sum(0) + m * sim.robot_v[0]

    p0 = momentum()
    worst = 0.0
    for _ in range(12):
        sim.step()
        worst = max(worst, np.abs(momentum() - p0).max())
    assert sim.last_stats.n_contacts > 0
    assert worst < tol * np.linalg.norm(p0)
    ball_p = (sim.system.mass[:, None] * sim.v).sum(0)
    assert ball_p[0] > 0.3 * p0[0] and sim.robot_v[0][0] < 0.8  # momentum went into the ball
    tau_act, tau_c = sim.robot_torques("cube")
    np.testing.assert_allclose(tau_act, 0.0)  # unactuated
    # the generalized contact force on a translation joint is the force on the cube: −(force on the ball)
    np.testing.assert_allclose(tau_c, -sim.obstacle_forces()["cube/cube"], atol=1e-12)


def test_spring_press_on_a_soft_ball_carries_its_force_to_the_ground():
    """A plate on a vertical prismatic joint with a PD spring (K = 100 N/m) aimed 1 cm below its
    start presses a soft ball onto the ground. At rest: the ground carries both weights plus the
    spring's pull K (q − q_ref), read off the joint's deflection; the plate's contact force balances
    its weight and its actuator; the two sides of each contact row are equal and opposite."""
    R, m_p, K, q_ref = 0.04, 0.3, 100.0, -0.01
    z0 = 2 * R + 0.002 + 0.01
    model = pin.buildModelFromXML(PRESS_URDF.format(mass=m_p, z0=z0))
    robot = CoupledRobot("press", model, (LinkBox("plate", (0.06, 0.06, 0.01), mu=0.5),), q0=np.zeros(1),
                         kp=K, kd=5.0, q_ref=lambda t: np.array([q_ref]))
    ball = _ball(R)
    world = DeformableWorld((ball,), (HalfSpace(name="ground", mu=0.5),), robots=(robot,))
    sim = DeformableSimulator(world)
    traj = sim.run(1.0)
    assert traj.q.shape == (101, 1) and traj.v.shape == (101, 1)
    assert abs(traj.v[-1, 0]) < 1e-3 and np.abs(sim.v).max() < 1e-2  # at rest
    q = traj.q[-1, 0]
    assert q < -1e-3  # the ball gave way ...
    assert q > q_ref + 1e-3  # ... but holds the plate above the spring's target
    g = 9.81
    spring = K * (q - q_ref)  # the actuator's pull [N], from the joint's deflection
    f = sim.obstacle_forces()
    m_ball = ball.node_masses().sum()
    assert f["ground"][2] == pytest.approx((m_ball + m_p) * g + spring, rel=1e-2)
    assert f["press/plate"][2] == pytest.approx(-(m_p * g + spring), rel=1e-2)  # force on the ball: down
    tau_act, tau_c = sim.robot_torques("press")
    assert tau_act[0] == pytest.approx(-spring, rel=2e-2)
    assert tau_c[0] == pytest.approx(-f["press/plate"][2], rel=1e-12)  # equal and opposite
    assert tau_act[0] + tau_c[0] - m_p * g == pytest.approx(0.0, abs=1e-2 * m_p * g)  # the plate at rest


def test_delassus_with_a_robot_equals_the_dense_h_ainv_ht_plus_g_mhat_inv_gt():
    """W of a coupled step = H (A ⊗ I₃)⁻¹ Hᵀ + G M̂⁻¹ Gᵀ, with M̂ = M(q) + h D + h² K formed here from
    Pinocchio's CRBA and the rows' G checked against finite differences of the link's motion."""
    R, K, D = 0.04, 100.0, 5.0
    model = pin.buildModelFromXML(PRESS_URDF.format(mass=0.3, z0=2 * R + 0.0105))
    robot = CoupledRobot("press", model, (LinkBox("plate", (0.06, 0.06, 0.01), mu=0.5),), q0=np.zeros(1),
                         v0=np.array([-0.2]), kp=K, kd=D)
    world = DeformableWorld((_ball(R, 3),), (HalfSpace(name="ground"),), robots=(robot,))
    sim = DeformableSimulator(world)
    h = sim.dt
    sim._prepare_robots()
    rows = sim.detect(sim.x, sim.v, sim.t)
    on_robot = np.abs(rows.G).sum(1) > 0
    assert on_robot.any() and (~on_robot).any()
    # G: a plate point's velocity along c is c_z q̇ for this vertical slider
    np.testing.assert_allclose(rows.G[:, 0], np.where(on_robot, rows.C[:, 2], 0.0), atol=1e-14)
    Ls, _ = sim._robot_mass_factor()
    uniq, pos = np.unique(rows.node, return_inverse=True)
    W = Delassus(sim.system.inverse_block(uniq), pos, rows.C, rigid=sim._robot_factor_rows(rows.G, Ls))
    M = np.asarray(pin.crba(model, model.createData(), np.zeros(1))).reshape(1, 1)
    Mhat = M + h * D + h * h * K
    n = sim.system.free.size
    Ainv = np.linalg.inv(sim.system.A.toarray())
    H = np.zeros((rows.n_rows, 3 * n))
    for j, (i, c) in enumerate(zip(rows.node, rows.C)):
        H[j, 3 * i:3 * i + 3] = c
    dense = H @ np.kron(Ainv, np.eye(3)) @ H.T + rows.G @ np.linalg.solve(Mhat, rows.G.T)
    np.testing.assert_allclose(W.toarray(), dense, atol=1e-10 * np.abs(dense).max())
    x = np.random.default_rng(0).standard_normal(rows.n_rows)
    np.testing.assert_allclose(W.matvec(x), dense @ x, atol=1e-10 * np.abs(dense @ x).max())
    np.testing.assert_allclose(W.diagonal(), np.diag(dense), rtol=1e-10)


def test_panda_fingers_are_pushed_open_by_the_ball_and_the_arm_carries_its_weight():
    """Two-way coupling (panda-pinch's default): the Panda's finger actuators command a 6 mm squeeze,
    the ball resists and holds each finger open by δ; after the lift the ball hangs on the pads.
    Checks: the finger joint's torque −K_f δ is the pad's squeezing force along the finger axis
    (1 %); the pads' vertical forces carry the ball's weight (2 %); the arm's actuator torques
    minus its gravity balance the pads' contact torques (static hold); the ball rose by the lift."""
    sim = load_scene("panda-pinch", cells=4)
    assert sim.info["coupling"] == "two-way" and not sim.world.obstacles[:-1]
    z0 = sim.x[:, 2].mean()
    traj = sim.run(1.3)
    assert traj.q.shape == (131, 9)
    X = traj.deformable_positions["ball"]
    assert np.isfinite(X).all() and X[-1, :, 2].min() > 0.05  # off the ground
    assert X[-1, :, 2].mean() - z0 == pytest.approx(sim.info["lift"], abs=5e-3)
    q, q_ref = traj.q[-1], sim.info["trajectory"](sim.t)
    delta = q[7:] - q_ref[7:]  # fingers held open by the ball
    assert (delta > 1e-3).all()
    robot = sim.world.robots[0]
    tau_act, tau_c = sim.robot_torques("panda")
    np.testing.assert_allclose(tau_act[7:], -robot.kp[7:] * delta, rtol=1e-2)
    model = robot.model
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    f = sim.obstacle_forces()
    for k, (finger, pad, urdf_axis) in enumerate((("panda_finger_joint1", "panda/left_pad", (0, 1, 0)),
                                                  ("panda_finger_joint2", "panda/right_pad", (0, -1, 0)))):
        jid = model.getJointId(finger)
        axis = data.oMi[jid].rotation @ np.array(urdf_axis, float)  # the URDF's finger axis, in the world
        squeeze = -f[pad] @ axis  # the ball's push on the finger along its joint axis
        assert squeeze > 0.3  # it pushes the finger open (q grows: the URDF's fingers open along +axis)
        assert tau_c[7 + k] == pytest.approx(squeeze, rel=1e-6)
        assert tau_act[7 + k] == pytest.approx(-squeeze, rel=1e-2)
    weight = sim.info["mass"] * 9.81
    assert f["panda/left_pad"][2] + f["panda/right_pad"][2] == pytest.approx(weight, rel=2e-2)
    assert np.allclose(f["ground"], 0.0)
    # the hold: the arm's actuators (minus the robot's own gravity) balance the ball's pull; averaged
    # over 0.3 s, as the hanging ball still sways (single steps: 6 % off)
    res, pull = [], []
    for _ in range(30):
        q_prev = sim.robot_q[0].copy()
        sim.step()
        tau_act, tau_c = sim.robot_torques("panda")
        res.append(tau_act + tau_c - pin.computeGeneralizedGravity(model, data, q_prev))
        pull.append(tau_c)
    res, pull = np.mean(res, 0), np.mean(pull, 0)
    assert np.abs(pull[:7]).max() > 0.3  # N·m: the ball's weight reaches the arm's joints
    assert np.abs(res[:7]).max() < 0.02 * np.abs(pull[:7]).max()


def test_coupled_robot_rejects_bad_input():
    model = _slider()
    box = LinkBox("cube", (0.03, 0.03, 0.03))
    with pytest.raises(ValueError, match="no frame"):
        CoupledRobot("r", model, (LinkBox("nope"),), np.zeros(3))
    with pytest.raises(ValueError, match="q0"):
        CoupledRobot("r", model, (box,), np.zeros(4))
    with pytest.raises(ValueError, match="kp"):
        CoupledRobot("r", model, (box,), np.zeros(3), kp=[1.0, 2.0])
    with pytest.raises(TypeError, match="kd"):
        CoupledRobot("r", model, (box,), np.zeros(3), kd=True)
    with pytest.raises(TypeError, match="pinocchio.Model"):
        CoupledRobot("r", "panda.urdf", (box,), np.zeros(3))
    with pytest.raises(ValueError, match="half_extents"):
        LinkBox("cube", (0.03, 0.0, 0.03))
    with pytest.raises(TypeError, match="CoupledRobot"):
        DeformableWorld((_ball(),), robots=(box,))
    with pytest.raises(ValueError, match="coupling"):
        load_scene("panda-pinch", coupling="both")
