"""Faithful import of a user's robot (issue 19, item 3): names from the file, every MJCF body and
joint, start poses, fixed-base placement, mesh warnings, and LCS derivatives that match finite
differences for the URDF and MJCF versions of one robot (tests/data/pusher_box.{urdf,xml})."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from plants.errors import MultibodyValueError
from plants.multibody import ContactPair, MultibodyPlant
from plants.multibody.errors import ModelImportWarning
from plants.multibody.mjcf import load_mjcf
from plants.multibody.resources import example_robot_data_path
from plants.sim import Simulator
from plants.sim.geometry import ContactParams
from plants.sim.scene import SceneBuilder

DATA = Path(__file__).parent / "data"
UR5 = "robots/ur_description/urdf/ur5_joint_limited_robot.urdf"
SOFT = ContactParams(1e5, 1e-3, 0.5)
G = 9.81

NAMED_URDF = """<robot name="named">
 <link name="base">
  <collision name="base_plate"><geometry><box size="0.1 0.1 0.02"/></geometry></collision>
  <collision><origin xyz="0 0 0.05"/><geometry><sphere radius="0.02"/></geometry></collision>
 </link>
 <joint name="slider" type="prismatic"><parent link="base"/><child link="arm"/><axis xyz="1 0 0"/>
  <origin xyz="0 0 0.3"/><limit lower="-0.1" upper="0.2" effort="5" velocity="1"/></joint>
 <link name="arm">
  <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision name="gripper_pad"><geometry><box size="0.05 0.05 0.05"/></geometry></collision>
  <collision name="collision"><origin xyz="0 0 0.1"/><geometry><cylinder radius="0.01" length="0.1"/></geometry></collision>
 </link>
 <joint name="wrist" type="revolute"><parent link="arm"/><child link="hand"/><axis xyz="0 0 1"/>
  <origin xyz="0 0 0.2"/><limit lower="-1" upper="1" effort="2" velocity="1"/></joint>
 <link name="hand">
  <inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision name="collision"><geometry><sphere radius="0.03"/></geometry></collision>
 </link>
</robot>"""


def test_urdf_collision_names_come_from_the_file(tmp_path):
    """<collision name> kept; unnamed elements get <link>_<k>; a name used twice becomes <link>/<name>."""
    path = tmp_path / "named.urdf"
    path.write_text(NAMED_URDF)
    expected = ["base_plate", "base_1", "gripper_pad", "arm/collision", "hand/collision"]
    plant = MultibodyPlant.from_urdf(path, [ContactPair("gripper_pad", "base_plate", mu=0.3)])
    assert [g.name for g in plant.collision_model.geometryObjects] == expected
    assert list(plant.model.names) == ["universe", "slider", "wrist"]
    (c,) = plant.contact_descriptions(np.zeros(plant.n_x))
    assert c.phi == pytest.approx(0.3 - 0.025 - 0.01, abs=1e-9)  # pad bottom to plate top
    b = SceneBuilder()
    b.add_urdf(path, SOFT, prefix="r/")
    assert [g.name for g in b.build().geometries] == ["r/" + n for n in expected]


def test_urdf_mesh_collision_warns_with_the_geometry_names():
    with pytest.warns(ModelImportWarning, match=r"convex hulls: base_link_0 \(base\.stl\), shoulder_link_0"):
        MultibodyPlant.from_urdf(example_robot_data_path(UR5))


def test_urdf_unrepresented_joint_elements_are_named(tmp_path):
    path = tmp_path / "dyn.urdf"
    path.write_text(NAMED_URDF.replace('<origin xyz="0 0 0.2"/>', '<origin xyz="0 0 0.2"/><dynamics damping="0.5"/>')
                    .replace('<origin xyz="0 0 0.3"/>', '<origin xyz="0 0 0.3"/><mimic joint="wrist"/>'))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        MultibodyPlant.from_urdf(path)
    messages = [str(w.message) for w in rec if issubclass(w.category, ModelImportWarning)]
    assert any("damping/friction are not represented" in m and "wrist (damping=0.5" in m for m in messages)
    assert any("<mimic> joints are simulated as independent joints: slider" in m for m in messages)


# ---------------------------------------------------------------------------- MJCF
FREE_BODIES_XML = """<mujoco model="free_bodies">
  <compiler angle="degree"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="ball" pos="0 0 0.5"><freejoint name="ball_free"/>
      <geom name="ball_geom" type="sphere" size="0.05" mass="0.2"/></body>
    <body name="brick" pos="1 0 0.3" euler="0 0 90"><joint name="brick_free" type="free"/>
      <geom name="brick_geom" type="box" size="0.1 0.05 0.02" mass="0.5"/></body>
    <body name="pill" pos="-1 0.5 0.4" quat="0.7071068 0.7071068 0 0"><freejoint/>
      <geom name="pill_geom" type="capsule" size="0.03" fromto="0 0 -0.1 0 0 0.1" mass="0.1"/></body>
    <body name="post" pos="0 1 0.5">
      <geom name="post_geom" type="cylinder" size="0.02 0.5" pos="0 0 -0.5" mass="1"/>
      <body name="flap" pos="0 0 0.1"><joint name="flap_hinge" type="hinge" axis="0 1 0" range="-45 45"/>
        <geom name="flap_geom" type="box" size="0.1 0.01 0.01" pos="0.1 0 0" mass="0.1"/></body>
    </body>
  </worldbody>
  <keyframe>
    <key name="tossed" qpos="0 0 1  0 1 0 0   1 0 0.3  1 0 0 0   -1 0.5 0.4  1 0 0 0   0.2"/>
  </keyframe>
</mujoco>"""


def _world_pose(model, q, frame):
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    return data.oMf[model.getFrameId(frame)]


def test_mjcf_keeps_every_body_joint_and_start_pose(tmp_path):
    path = tmp_path / "free_bodies.xml"
    path.write_text(FREE_BODIES_XML)
    loaded = load_mjcf(path)
    model = loaded.model
    assert list(model.names) == ["universe", "ball_free", "brick_free", "pill_joint0", "flap_hinge"]
    assert [g.name for g in loaded.collision_model.geometryObjects] == [
        "floor", "ball_geom", "brick_geom", "pill_geom", "post_geom", "flap_geom"]
    # start poses: the world pose of each body at q0 is the file's pos/orientation
    Rz90 = pin.exp3(np.array([0, 0, np.pi / 2]))
    Rx90 = pin.exp3(np.array([np.pi / 2, 0, 0]))
    for body, p, R in (("ball", (0, 0, 0.5), np.eye(3)), ("brick", (1, 0, 0.3), Rz90),
                       ("pill", (-1, 0.5, 0.4), Rx90), ("post", (0, 1, 0.5), np.eye(3)),
                       ("flap", (0, 1, 0.6), np.eye(3))):
        M = _world_pose(model, loaded.q0, body)
        np.testing.assert_allclose(M.translation, p, atol=1e-12, err_msg=body)
        np.testing.assert_allclose(M.rotation, R, atol=1e-6, err_msg=body)
    # the hinge range is in degrees (compiler angle="degree", autolimits)
    i = model.joints[model.getJointId("flap_hinge")].idx_q
    np.testing.assert_allclose([model.lowerPositionLimit[i], model.upperPositionLimit[i]], np.radians([-45, 45]))
    # keyframes: MuJoCo's qpos with quaternions (w x y z) converted to Pinocchio's (x y z w)
    key = {k.key(): np.array(k.data()) for k in model.referenceConfigurations}["tossed"]
    np.testing.assert_array_equal(key[:7], [0, 0, 1, 1, 0, 0, 0])  # ball: 180° about x
    np.testing.assert_array_equal(key[7:14], [1, 0, 0.3, 0, 0, 0, 1])
    assert key[21] == 0.2
    # the free-body configuration is the world pose (MuJoCo's qpos); the plant starts there too
    plant = MultibodyPlant.from_mjcf(path)
    np.testing.assert_array_equal(plant.q0, loaded.q0)
    assert plant.n_u == 1  # the hinge (no <actuator>: every non-floating joint)


def test_mjcf_free_bodies_fall_freely_from_their_start_poses(tmp_path):
    """In the simulator, the ball starts at rest at z = 0.5 and falls as g t²/2 (symplectic Euler:
    z_n = z_0 − g δt² n(n+1)/2 exactly) until it nears the floor; the others start where the
    file puts them."""
    path = tmp_path / "free_bodies.xml"
    path.write_text(FREE_BODIES_XML)
    b = SceneBuilder()
    b.add_urdf(path, SOFT)
    scene = b.build()
    dt = 1e-3
    sim = Simulator(scene, dt=dt)
    assert sim.contact_problem()[0].n_c == 0  # nothing touches at the start (ball 45 cm above the floor)
    traj = sim.run(0.2)
    n = np.arange(traj.t.size)
    z = traj.q[:, 2]  # ball_free's z (the ball is the first joint)
    np.testing.assert_allclose(z, 0.5 - G * dt**2 * n * (n + 1) / 2, rtol=0, atol=1e-12)
    assert np.abs(z - (0.5 - G * traj.t**2 / 2)).max() <= G * dt * traj.t[-1] / 2 + 1e-12
    np.testing.assert_allclose(traj.q[0, 7:10], [1, 0, 0.3])  # the brick at its pos


def test_mjcf_joint_anchors_order_and_inertia_from_geoms(tmp_path):
    """A body with a slide along x then a hinge about y anchored at pos = (0.1, 0, 0): MuJoCo
    applies the joints in order, each about its own anchor in the body frame. Inertia from the
    geoms (mass given, or density × volume) when there is no <inertial>."""
    path = tmp_path / "anchor.xml"
    path.write_text("""<mujoco><compiler angle="radian"/><worldbody>
      <body name="b" pos="0 0 1"><joint name="s" type="slide" axis="1 0 0"/>
        <joint name="h" type="hinge" axis="0 1 0" pos="0.1 0 0"/>
        <geom name="g1" type="sphere" size="0.05" pos="0.1 0 0" mass="1"/>
        <geom name="g2" type="sphere" size="0.05" pos="-0.1 0 0" mass="1"/>
        <geom name="g3" type="box" size="0.1 0.1 0.1" density="500"/></body>
    </worldbody></mujoco>""")
    loaded = load_mjcf(path)
    model = loaded.model
    M = _world_pose(model, np.array([0.3, np.pi / 2]), "b")
    # the body origin sits 0.1 m behind the pivot (0.1 + 0.3, 0, 1); R_y(π/2) takes (−0.1, 0, 0) to (0, 0, 0.1)
    np.testing.assert_allclose(M.translation, [0.4, 0, 1.1], atol=1e-12)
    np.testing.assert_allclose(M.rotation, pin.exp3(np.array([0, np.pi / 2, 0])), atol=1e-12)
    data = model.createData()
    pin.crba(model, data, np.zeros(2))
    m_box = 500 * 0.2**3
    assert data.M[0, 0] == pytest.approx(2 + m_box, rel=1e-12)  # the slide moves all the mass
    # about the hinge axis through (0.1, 0, 0): spheres at 0 and 0.2 m, the box centre at 0.1 m
    I_spheres = 2 * 0.4 * 0.05**2 + 0.2**2
    I_box = m_box * (0.2**2 + 0.2**2) / 12 + m_box * 0.1**2
    assert data.M[1, 1] == pytest.approx(I_spheres + I_box, rel=1e-12)


def test_mjcf_defaults_childclass_and_include(tmp_path):
    """<default> classes (nested, class=, childclass=) and <include> as MuJoCo resolves them."""
    (tmp_path / "leg.xml").write_text("""<mujocoinclude><body name="leg" pos="0 0 -0.2">
        <joint name="knee"/><geom name="shin" type="capsule" fromto="0 0 0 0 0 -0.2"/></body></mujocoinclude>""")
    path = tmp_path / "robot.xml"
    path.write_text("""<mujoco><compiler angle="radian"/>
      <default>
        <joint type="hinge" axis="1 0 0" range="-1 1"/>
        <geom size="0.02" mass="0.1"/>
        <default class="wide"><joint range="-2 2"/>
          <default class="wider"><joint axis="0 1 0" range="-3 3"/></default></default>
      </default>
      <worldbody><body name="hip" pos="0 0 1" childclass="wide">
        <joint name="hip_roll"/><joint name="hip_pitch" class="wider"/>
        <geom name="pelvis" type="sphere"/>
        <include file="leg.xml"/>
      </body></worldbody></mujoco>""")
    model = load_mjcf(path).model
    assert list(model.names) == ["universe", "hip_roll", "hip_pitch", "knee"]
    kinds = [model.joints[j].shortname() for j in range(1, 4)]
    assert kinds == ["JointModelRX", "JointModelRY", "JointModelRX"]  # class axes, childclass inherited
    np.testing.assert_allclose(model.upperPositionLimit, [2, 3, 2])  # wide, wider, wide (childclass)
    data = model.createData()
    pin.crba(model, data, np.zeros(3))
    assert pin.computeTotalMass(model) == pytest.approx(0.2)  # mass from the main default


def test_mjcf_multi_joint_body_gives_named_single_dof_joints():
    """The pusher's two slide joints and the box's x/z/θ are separate named joints, so
    actuated_joints=["pusher_x"] works (it failed on Pinocchio's composite joints)."""
    plant = MultibodyPlant.from_mjcf(DATA / "pusher_box.xml", actuated_joints=["pusher_x"])
    assert list(plant.model.names) == ["universe", "pusher_x", "pusher_z", "box_x", "box_z", "box_theta"]
    assert [plant.model.joints[j].shortname() for j in range(1, 6)] == [
        "JointModelPX", "JointModelPZ", "JointModelPX", "JointModelPZ", "JointModelRY"]
    np.testing.assert_array_equal(plant.B[:, 0], [1, 0, 0, 0, 0])
    default = MultibodyPlant.from_mjcf(DATA / "pusher_box.xml")  # the file's <actuator> joints
    np.testing.assert_array_equal(default.B, np.eye(5)[:, :2])
    np.testing.assert_array_equal(default.model.effortLimit, [20, 20, np.inf, np.inf, np.inf])


def test_mjcf_unsupported_elements_are_named(tmp_path):
    path = tmp_path / "bad.xml"
    path.write_text("""<mujoco><worldbody><body name="b"><joint name="j" ref="0.3"/>
        <geom type="sphere" size="0.1"/></body></worldbody></mujoco>""")
    with pytest.raises(MultibodyValueError, match="joint 'j' has ref=0.3"):
        load_mjcf(path)
    path.write_text("""<mujoco><worldbody><body name="b"><joint name="j" damping="0.5" frictionloss="0.1"/>
        <geom type="sphere" size="0.1" friction="0.9"/></body></worldbody><tendon><fixed name="t"/></tendon></mujoco>""")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        loaded = load_mjcf(path)
    messages = [str(w.message) for w in rec if issubclass(w.category, ModelImportWarning)]
    assert any("stiffness/damping are not part of this model and are ignored: j (stiffness=0, damping=0.5)" in m
               for m in messages)  # the plant's LCS has no joint damping
    assert any("joint attributes are not represented and are ignored: j frictionloss=0.1" in m for m in messages)
    assert any("<tendon>" in m for m in messages)
    assert any("contact parameters are not used" in m and "b_geom0 (friction)" in m for m in messages)
    assert loaded.joint_springs == {"j": (0.0, 0.0, 0.5)}
    # the simulator scene applies the joint damping (a JointSpring), without the warning
    b = SceneBuilder()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        b.add_urdf(path, SOFT)
    assert not any("damping" in str(w.message) for w in rec)
    np.testing.assert_array_equal(b.build().D, [0.5])
    path.write_text("""<mujoco><worldbody><geom name="terrain" type="hfield" size="1 1 1 1"/></worldbody></mujoco>""")
    with pytest.raises(MultibodyValueError, match="geom 'terrain' of type 'hfield' is not supported"):
        load_mjcf(path)


# ---------------------------------------------------------------------------- LCS derivatives
PAIRS = [ContactPair("pusher_tip", "box_body", mu=0.4)] + [
    ContactPair(f"foot_{s}", "ground", mu=0.6) for s in ("front_left", "front_right", "back_left", "back_right")]


def _pusher_box(kind: str) -> MultibodyPlant:
    if kind == "urdf":
        return MultibodyPlant.from_urdf(DATA / "pusher_box.urdf", PAIRS, actuated_joints=["pusher_x", "pusher_z"])
    return MultibodyPlant.from_mjcf(DATA / "pusher_box.xml", PAIRS)


def _discrete_step(plant: MultibodyPlant, x: np.ndarray, u: np.ndarray, dt: float) -> np.ndarray:
    """The LCS's smooth step from forward dynamics: v+ = v + δt a(x, u), q+ = q + δt v+."""
    a = plant.forward_dynamics(x, u)[plant.n_q:]
    v_next = x[plant.n_q:] + dt * a
    return np.concatenate([x[:plant.n_q] + dt * v_next, v_next])


@pytest.mark.parametrize("kind", ["urdf", "mjcf"])
def test_pusher_box_lcs_matches_central_differences(kind):
    plant = _pusher_box(kind)
    rng = np.random.default_rng(19)
    dt, h = 0.01, 1e-6
    for _ in range(3):
        x = np.concatenate([0.3 * rng.normal(size=plant.n_q), rng.normal(size=plant.n_v)])
        x[plant.model.joints[plant.model.getJointId("box_z")].idx_q] = 0.2 * rng.random()
        u = 5.0 * rng.normal(size=plant.n_u)
        L = plant.lcs(x, u, dt=dt)
        A_fd = np.column_stack([(_discrete_step(plant, x + h * e, u, dt) - _discrete_step(plant, x - h * e, u, dt))
                                / (2 * h) for e in np.eye(plant.n_x)])
        B_fd = np.column_stack([(_discrete_step(plant, x, u + h * e, dt) - _discrete_step(plant, x, u - h * e, dt))
                                / (2 * h) for e in np.eye(plant.n_u)])
        assert np.abs(L.A - A_fd).max() <= 1e-5 * np.abs(A_fd).max()
        assert np.abs(L.B - B_fd).max() <= 1e-5 * np.abs(B_fd).max()
        # the symptom, entry by entry: ∂(box x-velocity)/∂θ was δt·9.81 on composite joints
        ix = plant.n_q + plant.model.joints[plant.model.getJointId("box_x")].idx_v
        ith = plant.model.joints[plant.model.getJointId("box_theta")].idx_q
        assert abs(L.A[ix, ith] - A_fd[ix, ith]) <= 1e-8


def test_pusher_box_urdf_and_mjcf_are_the_same_robot():
    """Same forward dynamics and the same LCS A, B after matching the joints by name."""
    u_plant, m_plant = _pusher_box("urdf"), _pusher_box("mjcf")
    names = list(m_plant.model.names[1:])
    perm = np.array([u_plant.model.getJointId(n) - 1 for n in names])  # scalar joints: index = id − 1
    P = np.zeros((10, 10))
    P[np.arange(5), perm] = 1
    P[5 + np.arange(5), 5 + perm] = 1  # x_mjcf = P x_urdf
    rng = np.random.default_rng(7)
    x_m = np.concatenate([0.2 * rng.normal(size=5), rng.normal(size=5)])
    x_m[3] = 0.15  # the box above the ground
    u = rng.normal(size=2)
    x_u = P.T @ x_m
    np.testing.assert_allclose(P @ u_plant.forward_dynamics(x_u, u), m_plant.forward_dynamics(x_m, u), atol=1e-12)
    Lu, Lm = u_plant.lcs(x_u, u, dt=0.01), m_plant.lcs(x_m, u, dt=0.01)
    np.testing.assert_allclose(P @ Lu.A @ P.T, Lm.A, atol=1e-12)
    np.testing.assert_allclose(P @ Lu.B, Lm.B, atol=1e-12)


# ---------------------------------------------------------------------------- fixed base placement
@pytest.mark.filterwarnings("ignore:.*convex hulls")
def test_ur5_base_position_and_orientation_are_honoured():
    """A fixed-base UR5 placed at p = (1, 2, 0.5), rotated 90° about z: every link frame and every
    collision geometry (the base link's, attached to the world, included) moves by that
    placement; before, the robot always sat at the origin."""
    path = example_robot_data_path(UR5)
    q = np.array([0.3, -1.0, 1.2, -0.4, 0.5, 0.1])
    placement = pin.SE3(pin.exp3(np.array([0, 0, np.pi / 2])), np.array([1.0, 2.0, 0.5]))
    scenes = []
    for kw in ({}, {"base_position": (1.0, 2.0, 0.5), "base_quaternion": (0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4))}):
        b = SceneBuilder()
        b.add_urdf(path, SOFT, q0=q, **kw)
        scenes.append(b.build())
    at_origin, placed = scenes
    for frame in ("ee_link", "wrist_3_link", "shoulder_link"):
        expected = placement * _world_pose(at_origin.model, q, frame)
        M = _world_pose(placed.model, q, frame)
        np.testing.assert_allclose(M.homogeneous, expected.homogeneous, atol=1e-12, err_msg=frame)
    poses = []
    for scene in scenes:
        data = scene.model.createData()
        pin.forwardKinematics(scene.model, data, q)
        poses.append(scene.geometry_poses(data))
    np.testing.assert_allclose(poses[1][1], poses[0][1] @ placement.rotation.T + placement.translation, atol=1e-12)
    np.testing.assert_allclose(poses[1][0], placement.rotation @ poses[0][0], atol=1e-12)
    # the planning plant takes the same placement
    plants = [MultibodyPlant.from_urdf(path, **kw) for kw in (
        {}, {"base_position": (1.0, 2.0, 0.5), "base_quaternion": (0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4))})]
    expected = placement * _world_pose(plants[0].model, q, "ee_link")
    np.testing.assert_allclose(_world_pose(plants[1].model, q, "ee_link").homogeneous, expected.homogeneous,
                               atol=1e-12)
    with pytest.raises(MultibodyValueError, match="floating root_joint"):
        MultibodyPlant.from_urdf(path, root_joint="freeflyer", base_position=(1, 0, 0))


def test_urdf_parse_is_cached_by_file_and_returns_copies(tmp_path):
    """load_urdf parses a file once per (file, mtime, package dirs, root joint); every call gets
    its own copies (renaming/moving one changes neither the cache nor a later load); a rewritten
    file is parsed again."""
    from plants.multibody import urdf as urdf_mod

    path = tmp_path / "named.urdf"
    path.write_text(NAMED_URDF)
    urdf_mod.clear_urdf_cache()
    m1, g1 = urdf_mod.load_urdf(path, warn_mimic=False, warn_dynamics=False)
    assert len(urdf_mod._CACHE) == 1
    go = g1.geometryObjects[0]
    go.name, go.placement = "renamed", pin.SE3(np.eye(3), np.array([1.0, 2.0, 3.0]))
    g1.geometryObjects[0] = go
    m1.names[1] = "changed"
    m2, g2 = urdf_mod.load_urdf(path)
    assert len(urdf_mod._CACHE) == 1  # a hit
    assert g2.geometryObjects[0].name == "base_plate" and list(m2.names)[1] == "slider"
    assert np.allclose(g2.geometryObjects[0].placement.translation, 0.0)
    assert g2.geometryObjects[0].geometry is not urdf_mod._CACHE[next(iter(urdf_mod._CACHE))][1] \
        .geometryObjects[0].geometry  # a clone, not the cached shape
    urdf_mod.load_urdf(path, pin.JointModelFreeFlyer())  # another root joint: another entry
    assert len(urdf_mod._CACHE) == 2
    stat = path.stat()
    path.write_text(NAMED_URDF.replace('name="base_plate"', 'name="floor_plate"'))
    import os
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    _, g3 = urdf_mod.load_urdf(path)
    assert g3.geometryObjects[0].name == "floor_plate"
