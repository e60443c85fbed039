"""SceneBuilder: floating-base URDF robots (``add_urdf(floating_base=True)``), name prefixes,
initial configurations, and contact detection that does not depend on the order in which
geometries were added (half-space always side a, normal from a to b)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plants.errors import SceneError
from plants.multibody.resources import example_robot_data_path
from plants.sim import Simulator
from plants.sim.al_scenes import A1_STAND, A1_URDF
from plants.sim.geometry import Box, CoalShape, ContactDetector, ContactParams, HalfSpace, Sphere
from plants.sim.scene import SceneBuilder, box_inertia, sphere_inertia
from plants.sim.scenes import load_scene

RIGID = ContactParams(float("inf"), 0.0, 0.8)
ROBOT = ContactParams(1e12, 0.0, 0.8)
A1_NQ, A1_NV = 19, 18


def a1_urdf():
    return example_robot_data_path(A1_URDF)


def quat_x(angle: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a rotation by ``angle`` about x."""
    return (np.sin(angle / 2), 0.0, 0.0, np.cos(angle / 2))


def detect(scene, q=None):
    data = scene.model.createData()
    pin.forwardKinematics(scene.model, data, scene.q0 if q is None else q)
    R, p = scene.geometry_poses(data)
    return scene.detector.detect(R, p), scene.detector.detect_numpy(R, p)


def by_name(scene, c):
    """{(name_a, name_b, i): (φ, n, p_a, p_b)} of a Contacts: the i-th contact of each pair (box
    pairs make up to 4, the points of their manifold; every other pair one)."""
    names = [g.name for g in scene.geometries]
    out = {}
    for k in range(c.n_c):
        i = 0
        while (names[c.a[k]], names[c.b[k]], i) in out:
            i += 1
        out[(names[c.a[k]], names[c.b[k]], i)] = (c.phi[k], c.normal[k], c.point_a[k], c.point_b[k])
    return out


def assert_same_contacts(c1: dict, c2: dict, tol: float = 1e-12) -> None:
    assert c1.keys() == c2.keys()
    for key in c1:
        for x, y in zip(c1[key], c2[key]):
            np.testing.assert_allclose(x, y, rtol=0, atol=tol, err_msg=str(key))


# ---------------------------------------------------------------------------- floating base
def test_floating_base_is_pinocchios_free_flyer_with_a_world_frame_linear_velocity():
    """Independent reference: the same URDF on Pinocchio's JointModelFreeFlyer (same q layout,
    body-frame linear velocity). At random q, every joint placement is equal, and the mass
    matrices satisfy M = Tᵀ M_ff T with v_ff = T v, T = diag(Rᵀ, I, I) (R = base rotation)."""
    b = SceneBuilder()
    root = b.add_urdf(a1_urdf(), ROBOT, floating_base=True)
    scene = b.build()
    model = scene.model
    ff = pin.buildModelFromUrdf(str(a1_urdf()), pin.JointModelFreeFlyer())
    assert root == 1 and (model.nq, model.nv) == (A1_NQ, A1_NV) == (ff.nq, ff.nv)
    assert scene.tree_starts.tolist() == [0, A1_NV]
    d, dff = model.createData(), ff.createData()
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = pin.randomConfiguration(ff, -np.ones(ff.nq), np.ones(ff.nq))
        pin.forwardKinematics(model, d, q)
        pin.forwardKinematics(ff, dff, q)
        for j in range(1, model.njoints):
            np.testing.assert_allclose(d.oMi[j].homogeneous, dff.oMi[j].homogeneous, rtol=0, atol=1e-12)
        R = d.oMi[1].rotation
        np.testing.assert_allclose(d.oMi[1].translation, q[:3], rtol=0, atol=1e-15)
        T = np.eye(A1_NV)
        T[:3, :3] = R.T
        M = pin.crba(model, d, q)
        Mff = pin.crba(ff, dff, q)
        M, Mff = np.triu(M) + np.triu(M, 1).T, np.triu(Mff) + np.triu(Mff, 1).T
        np.testing.assert_allclose(M, T.T @ Mff @ T, rtol=0, atol=1e-12 * np.abs(Mff).max())
        # q ⊕ v: the base moves by the world-frame linear velocity (and not by R v_lin)
        v = rng.normal(size=A1_NV)
        q1 = pin.integrate(model, q, 1e-3 * v)
        np.testing.assert_allclose(q1[:3], q[:3] + 1e-3 * v[:3], rtol=0, atol=1e-15)
        np.testing.assert_allclose(q1[7:], q[7:] + 1e-3 * v[6:], rtol=0, atol=1e-15)


def test_initial_configuration_arguments():
    b = SceneBuilder()
    quat = np.array([0.1, -0.2, 0.3, 0.9])
    v0 = np.arange(A1_NV, dtype=float) / 10
    b.add_urdf(a1_urdf(), ROBOT, q0=A1_STAND, floating_base=True, base_position=(1.0, 2.0, 0.5),
               base_quaternion=quat, v0=v0)
    b.add_ground(RIGID)
    scene = b.build()
    np.testing.assert_array_equal(scene.q0[:3], [1.0, 2.0, 0.5])
    np.testing.assert_allclose(scene.q0[3:7], quat / np.linalg.norm(quat), rtol=0, atol=1e-16)
    np.testing.assert_array_equal(scene.q0[7:], A1_STAND)
    np.testing.assert_array_equal(scene.v0, v0)
    # fixed base: q0 is the whole configuration, the base is the world
    b = SceneBuilder()
    b.add_urdf(a1_urdf(), ROBOT, q0=A1_STAND)
    scene = b.build()
    assert (scene.n_q, scene.n_v) == (12, 12)
    np.testing.assert_array_equal(scene.q0, A1_STAND)
    with pytest.raises(ValueError, match="q0"):
        SceneBuilder().add_urdf(a1_urdf(), ROBOT, q0=np.zeros(A1_NQ))


def test_prefix_lets_one_urdf_be_added_several_times():
    b = SceneBuilder()
    for k in range(3):
        b.add_urdf(a1_urdf(), ROBOT, floating_base=True, prefix=f"a1_{k}/", base_position=(k, 0, 0.5))
    b.add_ground(RIGID)
    scene = b.build()
    assert (scene.n_q, scene.n_v, scene.n_trees) == (3 * A1_NQ, 3 * A1_NV, 3)
    names = [g.name for g in scene.geometries]
    assert len(set(names)) == len(names) and "a1_2/FL_foot_0" in names
    model = scene.model
    assert model.existFrame("a1_1/FL_foot") and model.existJointName("a1_1/root_joint")
    assert not model.existFrame("FL_foot")
    # the second robot's foot geometry hangs on the second robot's calf joint
    foot = names.index("a1_1/FL_foot_0")
    assert model.names[int(scene.geom_joint[foot])] == "a1_1/FL_calf_joint"
    assert scene.tree_of_joint[scene.geom_joint[foot]] == 1
    with pytest.raises(SceneError, match="prefix"):
        b2 = SceneBuilder()
        b2.add_urdf(a1_urdf(), ROBOT, floating_base=True)
        b2.add_urdf(a1_urdf(), ROBOT, floating_base=True)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"q0": np.zeros(A1_NQ)}, "q0"),  # floating base: q0 holds only the 12 joints
        ({"base_position": (0, 0)}, "base_position"),
        ({"base_quaternion": (0, 0, 0, 0)}, "base_quaternion"),
        ({"base_quaternion": (0, 0, 1)}, "base_quaternion"),
        ({"v0": np.zeros(A1_NV - 6)}, "v0"),
        ({"q0": np.full(12, np.nan)}, "q0"),
        ({"min_bounding_radius": -1.0}, "min_bounding_radius"),
    ],
)
def test_bad_floating_base_arguments_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SceneBuilder().add_urdf(a1_urdf(), ROBOT, floating_base=True, **kwargs)


def test_prefix_must_be_a_string():
    with pytest.raises(TypeError, match="prefix"):
        SceneBuilder().add_urdf(a1_urdf(), ROBOT, floating_base=True, prefix=3)


def test_a1_drop_8_scene():
    """The registered scene: 8 trees of 18 dofs on the grid, the crouched pose, 21 geometries per
    robot (the 1 mm IMU placeholder box dropped) plus the ground."""
    sim = load_scene("a1-drop-8")
    scene = sim.scene
    assert (scene.n_q, scene.n_v) == (8 * A1_NQ, 8 * A1_NV)
    assert scene.tree_starts.tolist() == list(range(0, 8 * A1_NV + 1, A1_NV))
    q = scene.q0.reshape(8, A1_NQ)
    xs = (np.arange(9) % 3 - 1) * 0.6
    ys = (np.arange(9) // 3 - 1) * 0.6
    np.testing.assert_array_equal(q[:, :3], np.c_[xs[:8], ys[:8], np.full(8, 0.45)])
    np.testing.assert_array_equal(q[:, 3:7], np.tile([0, 0, 0, 1.0], (8, 1)))
    np.testing.assert_array_equal(q[:, 7:], np.tile(A1_STAND, (8, 1)))
    assert scene.n_geoms == 8 * 21 + 1 and scene.geometries[0].name == "ground"
    assert not any("imu" in g.name for g in scene.geometries)
    assert sim.dt == 1.0 / 240


# ---------------------------------------------------------------------------- pair order
def two_a1(ground_last: bool, up_height: float = 0.31, side_height: float = 0.12, margin: float = 0.01):
    """An upright A1 (base at ``up_height``: feet 2.3 mm in the ground by default) and one rolled
    by 1.3 rad (by default its feet, calf and thigh boxes and hip cylinders touch), ground added
    first or last."""
    b = SceneBuilder(margin=margin)
    if not ground_last:
        b.add_ground(RIGID)
    # robot-ground contacts only: the self-collision filter (on by default) would add speculative
    # trunk-thigh contacts within the margin as the legs fold (tests/test_import_fidelity.py)
    b.add_urdf(a1_urdf(), ROBOT, q0=A1_STAND, floating_base=True, prefix="up/", base_position=(0, 0, up_height),
               min_bounding_radius=2e-3, self_collision=False)
    b.add_urdf(a1_urdf(), ROBOT, q0=A1_STAND, floating_base=True, prefix="side/", base_position=(1, 0, side_height),
               base_quaternion=quat_x(1.3), min_bounding_radius=2e-3, self_collision=False)
    if ground_last:
        b.add_ground(RIGID)
    return b.build()


def test_adding_the_ground_last_gives_the_same_contacts_on_robots():
    """Spheres (closed form) and boxes and cylinders (coal GJK/EPA) against the ground: the same
    contacts, with the ground as side a, whether it was added first or last. Before, the
    box/cylinder pairs of a ground added last were never candidates."""
    first, last = two_a1(False), two_a1(True)
    (c1, c1_np), (c2, c2_np) = detect(first), detect(last)
    k1, k2 = by_name(first, c1), by_name(last, c2)
    pairs = {(a, b) for a, b, _ in k1}
    assert len(pairs) == 12 and all(a == "ground" for a, _ in pairs)
    assert len(k1) == 24  # the lying A1's 2 thigh and 2 calf boxes against the ground: 4 corners each
    kinds = {type(last.geometries[i].shape) for i in c2.b}
    assert kinds == {Sphere, Box, CoalShape}
    assert_same_contacts(k1, k2)
    assert_same_contacts(k1, by_name(first, c1_np))
    assert_same_contacts(k2, by_name(last, c2_np))
    for n in c2.normal:
        np.testing.assert_allclose(n, [0, 0, 1], rtol=0, atol=1e-12)


def test_adding_the_ground_last_gives_the_same_sap_steps():
    """20 SAP steps of two A1s landing (feet 1.7 and 2 mm above the ground; with a 2 cm margin
    the six calf boxes are speculative coal contacts): ground first vs last, same trajectory."""
    sims = [Simulator(two_a1(last, up_height=0.314, side_height=0.226, margin=0.02), solver="sap", dt=1 / 240)
            for last in (False, True)]
    trajs = [sim.run(20 / 240) for sim in sims]
    for traj in trajs:
        assert (traj.stats["status"] == 0).all()
        assert (traj.stats["n_contacts"] == 18).all()  # 6 feet (closed form) + 6 calf boxes (2-point edges)
    np.testing.assert_allclose(trajs[0].q, trajs[1].q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(trajs[0].v, trajs[1].v, rtol=0, atol=1e-12)
    assert np.abs(trajs[0].q[-1] - trajs[0].q[0]).max() > 0.05  # the robots do move (landing, legs folding)


@pytest.mark.parametrize("ground_last", [False, True])
def test_sphere_on_a_tilted_plane_is_the_analytic_contact(ground_last):
    """A sphere (r = 0.1 m) sinking 3 mm into a tilted half-space: φ = nᵀ(c − p₀) − r, the normal
    is the plane's outward normal (from the half-space, side a, towards the sphere, side b), the
    witness points are c − r n on the sphere and c − (r + φ) n on the plane."""
    tilt = 0.4
    Rp = pin.rpy.rpyToMatrix(tilt, -0.2, 0.7)
    n = Rp[:, 2]
    p0 = np.array([0.1, -0.2, 0.05])
    r, depth = 0.1, 3e-3
    c = p0 + (r - depth) * n + 0.05 * Rp[:, 0]
    b = SceneBuilder(margin=0.01)
    if not ground_last:
        b.add_world_geometry("plane", HalfSpace(), RIGID, rotation=Rp, translation=p0)
    b.add_free_body("ball", 1.0, sphere_inertia(1.0, r), [("s", Sphere(r), ROBOT)], c)
    if ground_last:
        b.add_world_geometry("plane", HalfSpace(), RIGID, rotation=Rp, translation=p0)
    scene = b.build()
    for con in detect(scene):
        assert con.n_c == 1
        assert scene.geometries[con.a[0]].name == "plane" and scene.geometries[con.b[0]].name == "ball/s"
        np.testing.assert_allclose(con.phi, [-depth], rtol=0, atol=1e-15)
        np.testing.assert_allclose(con.normal[0], n, rtol=0, atol=1e-15)
        np.testing.assert_allclose(con.point_b[0], c - r * n, rtol=0, atol=1e-15)
        np.testing.assert_allclose(con.point_a[0], c - (r - depth) * n, rtol=0, atol=1e-15)
        np.testing.assert_allclose(con.point_b[0] - con.point_a[0], con.phi[0] * con.normal[0], rtol=0, atol=1e-15)


@pytest.mark.parametrize("ground_last", [False, True])
def test_box_on_the_ground_by_gjk_epa_in_either_order(ground_last):
    """A tilted box (coal path) 2 mm into the ground: φ = the lowest corner's height, n = +z."""
    half = np.array([0.1, 0.05, 0.03])
    R = pin.rpy.rpyToMatrix(0.3, 0.2, 0.1)
    corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1], indexing="ij")).reshape(3, -1).T * half
    z = -(corners @ R.T)[:, 2].min() - 2e-3
    quat = pin.Quaternion(R).coeffs()
    b = SceneBuilder(margin=0.01)
    if not ground_last:
        b.add_ground(RIGID)
    b.add_free_body("box", 1.0, box_inertia(1.0, half), [("b", Box(tuple(half)), ROBOT)], (0, 0, z), quat)
    if ground_last:
        b.add_ground(RIGID)
    scene = b.build()
    for con in detect(scene):
        assert con.n_c == 1 and scene.geometries[con.a[0]].name == "ground"
        # coal's box/half-space answer is accurate to a few 1e-12 m
        np.testing.assert_allclose(con.phi, [-2e-3], rtol=0, atol=1e-10)
        np.testing.assert_allclose(con.normal[0], [0, 0, 1], rtol=0, atol=1e-12)
        lowest = (0, 0, z) + corners[np.argmin((corners @ R.T)[:, 2])] @ R.T
        np.testing.assert_allclose(con.point_b[0], lowest, rtol=0, atol=1e-10)
        np.testing.assert_allclose(con.point_a[0], lowest * [1, 1, 0], rtol=0, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_detector_puts_pairs_on_canonical_sides_whatever_the_given_order(seed):
    """Direct ContactDetector on random poses of a ground, spheres and boxes: every pair given in
    either orientation (random per pair), all pairs in a random order, give exactly the same
    contacts (half-space → side a, sphere → side b, else the lower index → side a), on the
    compiled and the numpy path."""
    from plants.sim.geometry import Geometry

    rng = np.random.default_rng(seed)
    geoms = [Geometry("ground", HalfSpace(), 0, np.eye(3), np.zeros(3), RIGID)]
    for i in range(8):
        shape = [Sphere(0.05), Box((0.05, 0.04, 0.03))][i % 2]
        geoms.append(Geometry(f"g{i}", shape, i + 1, np.eye(3), np.zeros(3), ROBOT))
    n_g = len(geoms)
    R = np.array([pin.rpy.rpyToMatrix(*rng.uniform(-1, 1, 3)) for _ in range(n_g)])
    p = np.c_[rng.uniform(-0.1, 0.1, (n_g, 2)), rng.uniform(0.0, 0.06, n_g)]
    R[0], p[0] = np.eye(3), 0.0
    pairs = np.stack(np.triu_indices(n_g, 1), axis=1)

    def keyed(c):
        return {(int(a), int(b)): (f, n, pa, pb) for a, b, f, n, pa, pb in zip(c.a, c.b, c.phi, c.normal, c.point_a, c.point_b)}

    ref = ContactDetector(geoms, pairs, 0.02)
    c_ref = keyed(ref.detect_numpy(R, p))
    for a, b in c_ref:
        assert not isinstance(geoms[b].shape, HalfSpace)
        assert isinstance(geoms[b].shape, Sphere) or not isinstance(geoms[a].shape, Sphere)
        assert a < b or type(geoms[a].shape) is not type(geoms[b].shape)
        if isinstance(geoms[a].shape, HalfSpace):
            assert geoms[a].name == "ground"
    flip = rng.random(len(pairs)) < 0.5
    given = np.where(flip[:, None], pairs[:, ::-1], pairs)[rng.permutation(len(pairs))]
    det = ContactDetector(geoms, given, 0.02)
    for path in ("detect", "detect_numpy"):  # the compiled path may differ from numpy by an ulp
        want, got = keyed(getattr(ref, path)(R, p)), keyed(getattr(det, path)(R, p))
        assert got.keys() == want.keys() == c_ref.keys()
        for key in want:
            for x, y in zip(want[key], got[key]):
                np.testing.assert_array_equal(x, y, err_msg=f"{path} {key}")


def test_bad_pairs_raise():
    from plants.sim.geometry import Geometry

    geoms = [Geometry("ground", HalfSpace(), 0, np.eye(3), np.zeros(3), RIGID)]
    with pytest.raises(ValueError, match="pairs"):
        ContactDetector(geoms, np.array([[0, 3]]), 0.01)


def test_floating_base_mjcf_body_drops_and_rests(tmp_path):
    """MJCF with a floating base: a 5 cm sphere (0.3 kg) carrying a hinged 2 cm tip sphere
    (0.1 kg) falls 25 cm and comes to rest on both spheres (k = 1e6 N/m: µm-scale overlap)."""
    xml = tmp_path / "ball.xml"
    xml.write_text(
        """<mujoco model="ball"><worldbody><body name="ball" pos="0 0 0">
        <geom name="shell" type="sphere" size="0.05" mass="0.3"/>
        <body name="arm" pos="0 0 0"><joint name="hinge" type="hinge" axis="0 1 0"/>
        <geom name="tip" type="sphere" size="0.02" pos="0.1 0 0" mass="0.1"/></body>
        </body></worldbody></mujoco>"""
    )
    b = SceneBuilder()
    b.add_urdf(xml, ContactParams(1e6, 1e-3, 0.5), floating_base=True, base_position=(0, 0, 0.3), prefix="m/")
    b.add_ground(RIGID)
    scene = b.build()
    assert (scene.n_q, scene.n_v) == (8, 7) and list(scene.model.names) == ["universe", "m/root_joint", "m/hinge"]
    assert [g.name for g in scene.geometries] == ["m/shell", "m/tip", "ground"]
    traj = Simulator(scene, dt=1e-3).run(1.0)
    assert (traj.stats["status"] == 0).all() and traj.stats["n_contacts"][-1] == 2
    assert abs(traj.q[-1, 2] - 0.05) < 1e-5 and np.abs(traj.v[-1]).max() < 1e-3
    # both spheres rest on the ground, overlapping by the static compression (µm scale)
    c, _ = detect(scene, traj.q[-1])
    assert c.n_c == 2 and np.abs(c.phi).max() < 1e-5


def test_robots_and_free_bodies_in_any_order():
    """A free box added before or after a floating A1 (ground last in both): the trees swap
    places, and 20 SAP steps of the landing agree after permuting the dofs back (contact order
    and tree order change the round-off only)."""

    def build(robot_first: bool):
        b = SceneBuilder(margin=0.02)

        def robot():
            b.add_urdf(a1_urdf(), ROBOT, q0=A1_STAND, floating_base=True, prefix="a/", base_position=(0, 0, 0.314),
                       min_bounding_radius=2e-3)

        def box():
            b.add_free_body("box", 2.0, box_inertia(2.0, (0.1, 0.1, 0.1)), [("b", Box((0.1, 0.1, 0.1)), ROBOT)],
                            (0.6, 0, 0.1015))

        for add in (robot, box) if robot_first else (box, robot):
            add()
        b.add_ground(RIGID)
        return b.build()

    first, last = build(True), build(False)
    assert first.tree_starts.tolist() == [0, 18, 24] and last.tree_starts.tolist() == [0, 6, 24]
    t1, t2 = (Simulator(s, dt=1 / 240).run(20 / 240) for s in (first, last))
    # 4 feet, 4 calves (their box edges, 2 points each), the box (its 4 bottom corners)
    assert (t1.stats["n_contacts"] == 16).all() and (t2.stats["n_contacts"] == 16).all()
    np.testing.assert_allclose(t1.q, np.c_[t2.q[:, 7:], t2.q[:, :7]], rtol=0, atol=1e-11)
    np.testing.assert_allclose(t1.v, np.c_[t2.v[:, 6:], t2.v[:, :6]], rtol=0, atol=1e-11)


def test_name_clash_with_a_free_body_frame_is_a_scene_error():
    b = SceneBuilder()
    b.add_free_body("trunk", 1.0, box_inertia(1.0, (0.1, 0.1, 0.1)), [("b", Box((0.1, 0.1, 0.1)), ROBOT)])
    with pytest.raises(SceneError, match="frame names"):
        b.add_urdf(a1_urdf(), ROBOT, floating_base=True)
    b.add_urdf(a1_urdf(), ROBOT, floating_base=True, prefix="a1/")
    assert b.build().n_v == 6 + A1_NV


def test_compiled_broad_phase_matches_the_numpy_expression():
    """bounding_candidates (numba) vs the numpy broad phase of detect_numpy on 2000 random pairs:
    bounding spheres, a half-space on side a (exact plane distance), two half-spaces (never)."""
    from plants.sim._geometry_kernels import bounding_candidates

    rng = np.random.default_rng(7)
    n_g, n_p, margin = 60, 2000, 0.02
    R = np.array([pin.rpy.rpyToMatrix(*rng.uniform(-np.pi, np.pi, 3)) for _ in range(n_g)])
    p = rng.uniform(-0.5, 0.5, (n_g, 3))
    radius = rng.uniform(0.01, 0.2, n_g)
    plane = rng.random(n_g) < 0.2
    radius[plane] = np.inf
    a, b = rng.integers(0, n_g, n_p), rng.integers(0, n_g, n_p)
    mode = np.where(plane[a], np.where(plane[b], 2, 1), 0)
    d_plane = np.einsum("ij,ij->i", R[a, :, 2], p[b] - p[a]) - radius[b]
    with np.errstate(invalid="ignore"):
        d_sph = np.linalg.norm(p[b] - p[a], axis=1) - radius[a] - radius[b]
    ref = np.flatnonzero(np.where(mode == 1, d_plane, np.where(mode == 2, np.inf, d_sph)) < margin)
    out = np.empty(n_p, dtype=np.int64)
    n = bounding_candidates(a, b, mode, R, p, radius, margin, out)
    np.testing.assert_array_equal(out[:n], ref)
    assert 100 < n < n_p - 100
