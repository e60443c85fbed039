"""Tests of the Pinocchio multibody plant (plants.multibody) and its LCS.

Independent references: analytic distances/normals/witness points, finite differences of the
witness-point motion and of the discretized forward dynamics (``pin.aba`` + ``pin.integrate``),
and a finely sub-stepped nonlinear time stepping for the O(dt^2) one-step error.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plants.errors import PlantError
from plants.multibody import (
    Box,
    ContactPair,
    HalfSpace,
    MissingCollisionGeometryError,
    ModelBuilder,
    MultibodyPlant,
    Sphere,
    UnknownGeometryError,
    UnknownJointError,
    example_robot_data_path,
)

PANDA_URDF = "robots/panda_description/urdf/panda.urdf"


# ---------------------------------------------------------------------------- fixtures
def ball_on_ground(radius=0.1, mass=1.0, mu=0.3, d=4, ground_normal=(0.0, 0.0, 1.0),
                   actuation=None):
    b = ModelBuilder()
    b.add_body("ground", joint="fixed", mass=0, shape=HalfSpace(normal=ground_normal))
    b.add_body("ball", joint="free", mass=mass, shape=Sphere(radius))
    return b.build([ContactPair("ball", "ground", mu=mu, num_friction_directions=d)],
                   actuation=actuation)


def two_spheres(r_a=0.1, r_b=0.2):
    b = ModelBuilder()
    b.add_body("a", joint="free", mass=1.0, shape=Sphere(r_a))
    b.add_body("b", joint="free", mass=2.0, shape=Sphere(r_b))
    return b.build([ContactPair("a", "b", mu=0.4, num_friction_directions=3)])


def arm_with_ball(mu=0.5):
    """A 3-link articulated chain (revolute z, y, y) ending in a sphere, above a ground plane."""
    b = ModelBuilder()
    b.add_body("ground", joint="fixed", mass=0, shape=HalfSpace())
    b.add_body("l1", joint="revolute_z", placement=[0, 0, 0.5], mass=1.0, shape=Box(0.1, 0.1, 0.1))
    b.add_body("l2", parent="l1", joint="revolute_y", placement=[0, 0, 0.1], mass=1.0,
               inertia=pin.Inertia.FromBox(1.0, 0.05, 0.05, 0.3))
    b.add_body("l3", parent="l2", joint="revolute_y", placement=[0.3, 0, 0], mass=0.5,
               inertia=pin.Inertia.FromBox(0.5, 0.05, 0.05, 0.3))
    b.add_body("tip", parent="l3", joint="fixed", placement=[0.3, 0, 0], mass=0.2,
               shape=Sphere(0.05))
    return b.build([ContactPair("tip", "ground", mu=mu, num_friction_directions=2)])


@pytest.fixture(scope="module")
def panda():
    return MultibodyPlant.from_urdf(example_robot_data_path(PANDA_URDF), [])


def free_state(plant, pos, v=None, quat=None):
    q = pin.neutral(plant.model)
    q[:3] = pos
    if quat is not None:
        q[3:7] = np.asarray(quat) / np.linalg.norm(quat)
    return np.concatenate([q, np.zeros(plant.n_v) if v is None else v])


# ---------------------------------------------------------------------------- structure
def test_dimensions_and_default_actuation(panda):
    ball = ball_on_ground()
    assert (ball.n_q, ball.n_v, ball.n_x, ball.n_u) == (7, 6, 13, 0)
    assert (panda.n_q, panda.n_v, panda.n_x) == (9, 9, 18)
    np.testing.assert_array_equal(panda.B, np.eye(9))  # fixed base: every joint actuated
    arm = MultibodyPlant.from_urdf(example_robot_data_path(PANDA_URDF), [],
                                   actuated_joints=["panda_joint1", "panda_joint4"])
    assert arm.B.shape == (9, 2) and arm.B[0, 0] == 1 and arm.B[3, 1] == 1
    assert arm.B.sum() == 2


def test_forward_dynamics_matches_aba_and_tangent_map():
    rng = np.random.default_rng(1)
    plant = ball_on_ground(actuation=np.eye(6))
    q = pin.randomConfiguration(plant.model, -np.ones(7), np.ones(7))
    v, u = rng.normal(size=6), rng.normal(size=6)
    xdot = plant.forward_dynamics(np.concatenate([q, v]), u)
    a = pin.aba(plant.model, plant.model.createData(), q, v, u)
    np.testing.assert_allclose(xdot[7:], a, rtol=1e-12, atol=1e-12)
    # q_dot is the derivative of integrate along v
    h = 1e-6
    qdot_fd = (pin.integrate(plant.model, q, h * v) - pin.integrate(plant.model, q, -h * v)) / (2 * h)
    np.testing.assert_allclose(xdot[:7], qdot_fd, atol=1e-8)


def test_from_mjcf(tmp_path):
    xml = tmp_path / "ball.xml"
    xml.write_text("""<mujoco model="ball"><worldbody>
      <geom name="floor" type="plane" size="1 1 0.1"/>
      <body name="ball" pos="0 0 0.2"><freejoint name="ball_free"/>
        <geom name="ball_geom" type="sphere" size="0.05" mass="0.3"/></body>
    </worldbody></mujoco>""")
    plant = MultibodyPlant.from_mjcf(xml, [ContactPair("ball_geom", "floor", mu=0.5)])
    assert (plant.n_q, plant.n_v, plant.n_u) == (7, 6, 0)
    x = free_state(plant, [0.1, 0.2, 0.3])
    (c,) = plant.contact_descriptions(x)
    assert c.phi == pytest.approx(0.3 - 0.05, abs=1e-12)
    np.testing.assert_allclose(c.normal, [0, 0, 1], atol=1e-12)


def test_from_mjcf_several_top_level_bodies(tmp_path):
    """Pinocchio's parser keeps only the first worldbody body; from_mjcf must keep them all."""
    xml = tmp_path / "two.xml"
    xml.write_text("""<mujoco model="two"><worldbody>
      <geom name="floor" type="plane" size="1 1 0.1"/>
      <body name="ball" pos="0 0 0.2"><freejoint name="ball_free"/>
        <geom name="ball_geom" type="sphere" size="0.05" mass="0.3"/></body>
      <body name="arm" pos="0 0 0.5"><joint name="hinge" type="hinge" axis="0 1 0"/>
        <geom name="arm_geom" type="box" size="0.1 0.02 0.02" pos="0.1 0 0" mass="0.5"/></body>
    </worldbody></mujoco>""")
    plant = MultibodyPlant.from_mjcf(xml, [ContactPair("ball", "floor", mu=0.5),
                                           ContactPair("arm", "floor", mu=0.5)])
    assert (plant.n_q, plant.n_v, plant.n_u) == (8, 7, 1)  # the hinge is actuated
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two.xml"]  # temporary copy removed
    x = np.concatenate([pin.neutral(plant.model), np.zeros(7)])
    arm = plant.contact_descriptions(x)[1]
    assert arm.phi == pytest.approx(0.5 - 0.02, abs=1e-9)


# ---------------------------------------------------------------------------- contacts
@pytest.mark.parametrize("height", [0.3, 0.1, 0.07])  # separated, touching, penetrating
def test_sphere_on_tilted_plane_analytic(height):
    n = np.array([0.3, -0.2, 1.0])
    n /= np.linalg.norm(n)
    r = 0.1
    plant = ball_on_ground(radius=r, ground_normal=tuple(n))
    foot = np.array([0.4, -0.3, 0.0])
    foot -= (foot @ n) * n  # a point of the plane (through the origin)
    center = foot + height * n
    (c,) = plant.contact_descriptions(free_state(plant, center, quat=[0.1, 0.2, 0.3, 0.9]))
    assert c.phi == pytest.approx(height - r, abs=1e-9)
    np.testing.assert_allclose(c.normal, n, atol=1e-9)
    np.testing.assert_allclose(c.point_a, center - r * n, atol=1e-9)
    np.testing.assert_allclose(c.point_b, foot, atol=1e-9)
    # 2d = 8 edges, unit, tangent, evenly spaced (consecutive angle pi/4), opposite pairs
    E = c.edges
    assert E.shape == (8, 3)
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(E @ n, 0.0, atol=1e-12)
    np.testing.assert_allclose(np.sum(E[:-1] * E[1:], axis=1), np.cos(np.pi / 4), atol=1e-12)
    np.testing.assert_allclose(E[:4], -E[4:], atol=1e-12)


def test_sphere_sphere_analytic():
    plant = two_spheres(0.1, 0.2)
    ca, cb = np.array([0.1, 0.2, 0.3]), np.array([0.35, -0.1, 0.5])
    for shift in (0.0, 0.25):  # penetrating, then separated
        ca_s = ca + shift * (ca - cb) / np.linalg.norm(ca - cb)
        q = pin.neutral(plant.model)
        q[:3], q[7:10] = ca_s, cb
        (c,) = plant.contact_descriptions(np.concatenate([q, np.zeros(12)]))
        dist = np.linalg.norm(ca_s - cb)
        n = (ca_s - cb) / dist
        assert c.phi == pytest.approx(dist - 0.3, abs=1e-9)
        np.testing.assert_allclose(c.normal, n, atol=1e-9)
        np.testing.assert_allclose(c.point_a, ca_s - 0.1 * n, atol=1e-9)
        np.testing.assert_allclose(c.point_b, cb + 0.2 * n, atol=1e-9)
        assert c.edges.shape == (6, 3)


def _witness_motion_fd(plant, x, h=1e-6):
    """Central FD of (p_a - p_b) for the material witness points, along v, per contact."""
    model = plant.model
    q, v = x[: plant.n_q], x[plant.n_q:]
    data = model.createData()
    ck = plant.contact_kinematics(x)
    jn = [plant.collision_model.geometryObjects[int(g)].parentJoint for g in ck.geometry_a]
    jb = [plant.collision_model.geometryObjects[int(g)].parentJoint for g in ck.geometry_b]
    pin.forwardKinematics(model, data, q)
    local_a = [data.oMi[j].actInv(p) for j, p in zip(jn, ck.point_a)]
    local_b = [data.oMi[j].actInv(p) for j, p in zip(jb, ck.point_b)]

    def rel(qq):
        pin.forwardKinematics(model, data, qq)
        return np.array([data.oMi[ja].act(la) - data.oMi[jbb].act(lb)
                         for ja, jbb, la, lb in zip(jn, jb, local_a, local_b)])

    return ck, (rel(pin.integrate(model, q, h * v)) - rel(pin.integrate(model, q, -h * v))) / (2 * h)


@pytest.mark.parametrize("scene", ["two_spheres", "arm", "ball_plane"])
def test_contact_jacobians_match_witness_point_motion(scene):
    rng = np.random.default_rng(7)
    if scene == "two_spheres":
        plant = two_spheres()
        q = pin.neutral(plant.model)
        q[:3], q[7:10] = [0.0, 0.0, 0.0], [0.2, 0.1, 0.25]
        q[3:7] = rng.normal(size=4)
        q[10:14] = rng.normal(size=4)
        q = pin.normalize(plant.model, q)
    elif scene == "arm":
        plant = arm_with_ball()
        q = np.array([0.3, 0.8, 0.9])
    else:
        plant = ball_on_ground(ground_normal=(0.1, 0.2, 1.0))
        q = free_state(plant, [0.1, 0.0, 0.12], quat=[0.3, 0.1, 0.2, 0.9])[:7]
    for _ in range(3):
        x = np.concatenate([q, rng.normal(size=plant.n_v)])
        ck, dp = _witness_motion_fd(plant, x)
        v = x[plant.n_q:]
        scale = max(1.0, np.abs(dp).max())
        np.testing.assert_allclose(ck.J_n @ v, np.einsum("ci,ci->c", ck.normal, dp),
                                   atol=1e-7 * scale)
        owner = np.repeat(np.arange(ck.n_c), ck.num_edges)
        np.testing.assert_allclose(ck.J_t @ v, np.einsum("ei,ei->e", ck.edges, dp[owner]),
                                   atol=1e-7 * scale)
        # and the normal row is the derivative of the signed distance
        h = 1e-6
        xp, xm = x.copy(), x.copy()
        xp[: plant.n_q] = pin.integrate(plant.model, x[: plant.n_q], h * v)
        xm[: plant.n_q] = pin.integrate(plant.model, x[: plant.n_q], -h * v)
        dphi = (plant.contact_kinematics(xp).phi - plant.contact_kinematics(xm).phi) / (2 * h)
        np.testing.assert_allclose(ck.J_n @ v, dphi, atol=1e-6 * scale)


def test_planar_mode_edges_in_plane():
    """Cube-pivoting style: a box on a planar joint moving in the world x-z plane."""
    b = ModelBuilder()
    b.add_body("ground", joint="fixed", mass=0, shape=HalfSpace())
    R = pin.utils.rotate("x", np.pi / 2)  # planar joint's x-y plane -> world x-z plane
    b.add_body("cube", joint="planar", placement=(R, np.zeros(3)), mass=1.0,
               shape=Sphere(0.1))
    plant = b.build([ContactPair("cube", "ground", mu=0.5, num_friction_directions=1,
                                 planar_normal=(0, 1, 0))])
    assert (plant.n_q, plant.n_v) == (4, 3)
    x = np.array([0.2, 0.3, 1.0, 0.0, 0.0, 0.0, 0.0])
    (c,) = plant.contact_descriptions(x)
    assert c.phi == pytest.approx(0.2, abs=1e-9)
    assert c.edges.shape == (2, 3)
    np.testing.assert_allclose(np.abs(c.edges), [[1, 0, 0], [1, 0, 0]], atol=1e-12)
    np.testing.assert_allclose(c.edges[0], -c.edges[1], atol=1e-12)
    assert plant.lcs(x, contact_model="stewart_trinkle").n_lambda == 2 * 1 + 2


def test_num_closest_keeps_the_nearest_pairs():
    """A box with four corner spheres: keep the 2 closest to the ground, at any pose."""
    b = ModelBuilder()
    b.add_body("ground", joint="fixed", mass=0, shape=HalfSpace())
    b.add_body("box", joint="free", mass=1.0, shape=Box(0.2, 0.2, 0.2))
    for i, (sx, sy) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
        b.add_geometry(f"corner{i}", "box", Sphere(0.01), placement=[0.1 * sx, 0.1 * sy, -0.1])
    plant = b.build([ContactPair("corner", "ground", mu=0.5, num_closest=2)])
    assert plant.n_contacts == 2
    quat = pin.Quaternion(pin.utils.rotate("y", 0.2)).coeffs()  # tilt: +x corners go down
    x = free_state(plant, [0, 0, 0.2], quat=quat)
    ds = plant.contact_descriptions(x)
    assert sorted(d.geometry_a for d in ds) == ["corner0", "corner1"]
    assert plant.lcs(x, contact_model="anitescu").n_lambda == 2 * 4


# ---------------------------------------------------------------------------- linearization
def _discrete(plant, x, u, dt):
    """Independent smooth discretization: v+ = v + dt aba(q, v, Bu), q+ = q (+) dt v+."""
    q, v = x[: plant.n_q], x[plant.n_q:]
    a = pin.aba(plant.model, plant.model.createData(), q, v, plant.B @ u)
    vp = v + dt * a
    return np.concatenate([pin.integrate(plant.model, q, dt * vp), vp])


def _check_linearization(plant, x, u, dt=0.01, h=1e-6, rtol=1e-6):
    L = plant.lcs(x, u, dt=dt)
    nq, nv = plant.n_q, plant.n_v
    q = x[:nq]
    Nq = pin.tangentMap(plant.model, q)
    fd, lin = [], []
    for i in range(nv):  # configuration: tangent directions q (+) eps e_i, dq/deps = N e_i
        e = np.zeros(nv)
        e[i] = h
        xp, xm = x.copy(), x.copy()
        xp[:nq] = pin.integrate(plant.model, q, e)
        xm[:nq] = pin.integrate(plant.model, q, -e)
        fd.append((_discrete(plant, xp, u, dt) - _discrete(plant, xm, u, dt)) / (2 * h))
        lin.append(L.A[:, :nq] @ Nq[:, i])
    for i in range(nv):
        xp, xm = x.copy(), x.copy()
        xp[nq + i] += h
        xm[nq + i] -= h
        fd.append((_discrete(plant, xp, u, dt) - _discrete(plant, xm, u, dt)) / (2 * h))
        lin.append(L.A[:, nq + i])
    for i in range(plant.n_u):
        up, um = u.copy(), u.copy()
        up[i] += h
        um[i] -= h
        fd.append((_discrete(plant, x, up, dt) - _discrete(plant, x, um, dt)) / (2 * h))
        lin.append(L.B[:, i])
    fd, lin = np.array(fd).T, np.array(lin).T
    assert np.abs(fd - lin).max() <= rtol * np.abs(lin).max()
    ref = _discrete(plant, x, u, dt)  # affine term: the LCS reproduces the step at x*
    assert np.abs(L.A @ x + L.B @ u + L.d - ref).max() <= rtol * np.abs(ref).max()
    return L


def test_linearization_matches_finite_differences_fixed_base_panda(panda):
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = np.concatenate([pin.randomConfiguration(panda.model), rng.normal(size=panda.n_v)])
        _check_linearization(panda, x, 5 * rng.normal(size=panda.n_u))


def test_linearization_matches_finite_differences_free_flyer_quaternion():
    rng = np.random.default_rng(4)
    b = ModelBuilder()
    b.add_body("ground", joint="fixed", mass=0, shape=HalfSpace())
    b.add_body("box", joint="free", mass=0.7, shape=Box(0.1, 0.2, 0.3))
    plant = b.build([ContactPair("box", "ground", mu=0.5)], actuation=np.eye(6))
    for _ in range(3):
        q = pin.randomConfiguration(plant.model, -np.ones(7), np.ones(7))
        q[2] = 2.0  # far above the ground: no contact active
        x = np.concatenate([q, 2 * rng.normal(size=6)])
        u = rng.normal(size=6)
        L = _check_linearization(plant, x, u)
        gap = (L.E @ x + L.H @ u + L.c)[plant.n_contacts:2 * plant.n_contacts]
        assert gap.min() > 1.0  # the predicted gap: far apart, no contact active


def test_paper_form_for_vector_space_joints(panda):
    """For N = I the kinematic step is q+ = q + dt v+ and A has the paper's block form."""
    rng = np.random.default_rng(5)
    dt = 0.02
    x = np.concatenate([pin.randomConfiguration(panda.model), rng.normal(size=9)])
    u = rng.normal(size=9)
    L = panda.lcs(x, u, dt=dt)
    lin = panda.linearize(x, u, dt)
    I = np.eye(9)
    np.testing.assert_allclose(L.A[:9, :9], I + dt**2 * lin.Jf_q, atol=1e-12)
    np.testing.assert_allclose(L.A[:9, 9:], dt * I + dt**2 * lin.Jf_v, atol=1e-12)
    np.testing.assert_allclose(L.B[:9], dt**2 * lin.Jf_u, atol=1e-12)
    M = pin.crba(panda.model, panda.model.createData(), x[:9])
    M = np.triu(M) + np.triu(M, 1).T
    np.testing.assert_allclose(lin.Jf_u, np.linalg.solve(M, panda.B), rtol=1e-8, atol=1e-8)


# ---------------------------------------------------------------------------- contact steps
def _slope(plant, x0, contact_model, dts, nsub=64):
    errs = []
    for dt in dts:
        x_lcs, _ = plant.step(x0, None, dt=dt, contact_model=contact_model)
        x_ref = x0.copy()
        for _ in range(nsub):
            x_ref = plant.simulate_nonlinear_step(x_ref, None, dt / nsub,
                                                  contact_model=contact_model)
        errs.append(np.linalg.norm(x_lcs - x_ref))
    return np.polyfit(np.log(dts), np.log(errs), 1)[0], np.array(errs)


DTS = np.array([0.016, 0.008, 0.004, 0.002])


@pytest.mark.parametrize("contact_model", ["stewart_trinkle", "anitescu"])
def test_one_step_error_is_second_order_from_rest(contact_model):
    """Ball at rest on a 17° incline (in contact, starts rolling): one LCS step vs the nonlinear
    time stepping sub-stepped 64x; the state error must shrink as dt^2."""
    tilt = 0.3
    n = np.array([np.sin(tilt), 0.0, np.cos(tilt)])
    plant = ball_on_ground(radius=0.1, mu=0.3, ground_normal=tuple(n))
    x0 = free_state(plant, 0.1 * n)
    assert plant.contact_descriptions(x0)[0].phi == pytest.approx(0.0, abs=1e-12)
    slope, errs = _slope(plant, x0, contact_model, DTS)
    assert 1.85 < slope < 2.2, (slope, errs)
    assert errs[-1] < 1e-4


def test_one_step_error_is_second_order_sliding():
    """Ball sliding at 1 m/s on the ground (Stewart-Trinkle, kinetic friction)."""
    plant = ball_on_ground(radius=0.1, mu=0.3)
    x0 = free_state(plant, [0, 0, 0.1], v=np.array([1.0, 0.3, 0, 0, 0, 0]))
    slope, errs = _slope(plant, x0, "stewart_trinkle", DTS)
    assert 1.85 < slope < 2.2, (slope, errs)
    # From x* itself the LCS step is the nonlinear step, up to the linearization of the
    # kinematic step q+ = q (+) dt v+ about v+* = v* + dt a*: velocities agree exactly and
    # configurations to second order in the contact velocity change dt M^-1 J^T lambda.
    dt = 0.01
    v_free = x0[7:] + dt * plant.forward_dynamics(x0)[7:]
    for cm in ("stewart_trinkle", "anitescu", "frictionless_spring"):
        x_lcs, _ = plant.step(x0, None, dt=dt, contact_model=cm)
        x_nl = plant.simulate_nonlinear_step(x0, None, dt, contact_model=cm)
        np.testing.assert_allclose(x_lcs[7:], x_nl[7:], atol=1e-9)
        dv = np.linalg.norm(x_nl[7:] - v_free)
        assert np.abs(x_lcs[:7] - x_nl[:7]).max() <= (dt * dv) ** 2 + 1e-12


def test_resting_ball_stays_at_rest():
    plant = ball_on_ground(radius=0.1, mu=0.5)
    x0 = free_state(plant, [0.2, -0.1, 0.1])
    x1, lam = plant.step(x0, None, dt=0.01)
    np.testing.assert_allclose(x1, x0, atol=1e-12)
    assert lam[1] == pytest.approx(9.81, rel=1e-9)  # lambda is a force [N] = m g, not m g dt


# ---------------------------------------------------------------------------- bad input
def test_bad_contact_pairs():
    with pytest.raises(ValueError, match="mu"):
        ContactPair("a", "b", mu=-0.1)
    with pytest.raises(ValueError, match="num_friction_directions"):
        ContactPair("a", "b", mu=0.1, num_friction_directions=0)
    with pytest.raises(ValueError, match="planar_normal"):
        ContactPair("a", "b", mu=0.1, num_friction_directions=1)
    with pytest.raises(TypeError):
        ContactPair("a", "b", mu=0.1, num_friction_directions=2.5)


def test_unknown_names_list_valid_ones():
    b = ModelBuilder()
    b.add_body("ground", joint="fixed", mass=0, shape=HalfSpace())
    b.add_body("ball", joint="free", mass=1.0, shape=Sphere(0.1))
    with pytest.raises(UnknownGeometryError, match="'ball'.*'ground'") as ei:
        b.build([ContactPair("pebble", "ground", mu=0.5)])
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, PlantError)
    assert "pebble" in str(ei.value) and ei.value.geometries == ["ground", "ball"]
    with pytest.raises(UnknownJointError, match="ball_joint"):
        b.build([], actuated_joints=["elbow"])


def test_name_resolution_body_joint_prefix(panda):
    """URDF bodies carry several geometries ("panda_leftfinger_0" ... "_3")."""
    model, coll = panda.model, panda.collision_model
    fingers = [g.name for g in coll.geometryObjects if g.name.startswith("panda_leftfinger")]
    assert len(fingers) > 1
    by_body = MultibodyPlant(model, coll, [ContactPair("panda_leftfinger", "panda_link0", 0.3)])
    assert by_body.n_contacts == len(fingers)
    closest = MultibodyPlant(model, coll, [ContactPair("panda_leftfinger", "panda_link0", 0.3,
                                                       num_closest=2)])
    assert closest.n_contacts == 2
    x = np.concatenate([pin.neutral(model), np.zeros(9)])
    all_phi = sorted(c.phi for c in by_body.contact_descriptions(x))
    np.testing.assert_allclose(sorted(c.phi for c in closest.contact_descriptions(x)),
                               all_phi[:2])
    by_joint = MultibodyPlant(model, coll, [ContactPair("panda_finger_joint1", "panda_link0",
                                                        0.3)])
    assert by_joint.n_contacts == len(fingers)
    by_prefix = MultibodyPlant(model, coll, [ContactPair("panda_leftfinger_", "panda_link0_0",
                                                         0.3)])
    assert by_prefix.n_contacts == len(fingers)


def test_body_without_collision_geometry():
    b = ModelBuilder()
    b.add_body("ground", joint="fixed", mass=0, shape=HalfSpace())
    b.add_body("ghost", joint="free", mass=1.0, inertia=pin.Inertia.FromSphere(1.0, 0.1))
    with pytest.raises(MissingCollisionGeometryError, match="ghost"):
        b.build([ContactPair("ghost", "ground", mu=0.5)])


def test_bad_state_and_input(panda):
    plant = ball_on_ground(actuation=np.eye(6)[:, :2])
    x = free_state(plant, [0, 0, 0.1])
    with pytest.raises(ValueError, match=r"x must have shape \(13,\)"):
        plant.lcs(x[:-1])
    with pytest.raises(ValueError, match=r"u must have shape \(2,\)"):
        plant.lcs(x, np.zeros(3))
    bad = x.copy()
    bad[8] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        plant.forward_dynamics(bad)
    with pytest.raises(ValueError, match="non-finite"):
        plant.lcs(x, [np.inf, 0])
    with pytest.raises(ValueError, match="contact_model"):
        plant.lcs(x, contact_model="coulomb")
    with pytest.raises(ValueError, match="dt"):
        plant.lcs(x, dt=0.0)
    with pytest.raises(ValueError, match="actuation"):
        MultibodyPlant(panda.model, panda.collision_model, [], actuation=np.eye(3))
    with pytest.raises(TypeError, match="ContactPair"):
        MultibodyPlant(panda.model, panda.collision_model, [("a", "b", 0.5)])


def test_tangent_frames_orthonormal_right_handed_and_stable_on_floors():
    from plants.multibody.contacts import _tangent_frames

    rng = np.random.default_rng(0)
    n = rng.normal(size=(200, 3))
    n[:4] = [[0, 0, 1], [1, 0, 0], [-1, 0, 0], [0, 0.9, 0.1]]
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    T = _tangent_frames(n)
    R = np.stack([T[:, 0], T[:, 1], n], axis=1)  # rows t1, t2, n
    np.testing.assert_allclose(R @ R.transpose(0, 2, 1), np.broadcast_to(np.eye(3), R.shape),
                               atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-14)
    np.testing.assert_allclose(T[0], [[1, 0, 0], [0, 1, 0]], atol=1e-15)  # floor: edge 0 = +x


@pytest.mark.parametrize("contact_model", ["stewart_trinkle", "anitescu"])
def test_spinning_box_drop_settles_flat(contact_model):
    """A box (8 corner spheres, 4 closest kept) dropped sliding and spinning comes to rest flat.

    Resting on four coplanar corners makes the contact LCP degenerate (Lemke ray-terminates);
    ``step`` must still solve it (regularized retry) and the box must neither sink nor jitter.
    """
    b = ModelBuilder()
    b.add_body("ground", joint="fixed", mass=0, shape=HalfSpace())
    b.add_body("box", joint="free", mass=1.0, shape=Box(0.2, 0.2, 0.2))
    corners = [(sx, sy, sz) for sx in (1, -1) for sy in (1, -1) for sz in (1, -1)]
    for i, c in enumerate(corners):
        b.add_geometry(f"corner{i}", "box", Sphere(0.005), placement=0.1 * np.array(c))
    plant = b.build([ContactPair("corner", "ground", mu=0.5, num_closest=4)])
    q = pin.neutral(plant.model)
    q[2] = 0.3
    q[3:7] = pin.Quaternion(pin.utils.rpyToMatrix(0.3, 0.2, 0.1)).coeffs()
    x = np.concatenate([q, [0.5, 0, 0, 0, 0, 2.0]])
    for _ in range(250):
        x, lam = plant.step(x, None, dt=0.01, contact_model=contact_model)
    assert x[2] == pytest.approx(0.105, abs=1e-6)  # centre height: half side + corner radius
    assert np.linalg.norm(x[7:]) < 1e-6
    assert min(c.phi for c in plant.contact_descriptions(x)) > -1e-9
    weight = (lam[4:8].sum() if contact_model == "stewart_trinkle" else lam.sum())
    assert weight == pytest.approx(9.81, rel=1e-3)  # normal forces carry m g [N]


def test_articulated_arm_tip_on_ground_resting_and_sliding():
    """3-link arm whose tip sphere touches the ground: at rest it stays (statically supported,
    one step agrees to round-off); turning about z the tip slides, and the one-step error vs
    the sub-stepped nonlinear time stepping is O(dt^2)."""
    plant = arm_with_ball(mu=0.3)
    q3 = 0.6
    lo, hi = 0.0, 1.5  # bisection for the shoulder angle that puts the tip on the ground
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        phi = plant.contact_descriptions(np.array([0.0, mid, q3, 0, 0, 0]))[0].phi
        lo, hi = (mid, hi) if phi > 0 else (lo, mid)
    x_rest = np.array([0.0, lo, q3, 0.0, 0.0, 0.0])
    _, errs = _slope(plant, x_rest, "stewart_trinkle", DTS)
    assert errs.max() < 1e-9
    slope, errs = _slope(plant, x_rest + np.array([0, 0, 0, 0.5, 0, 0]), "stewart_trinkle", DTS)
    assert 1.85 < slope < 2.2, (slope, errs)


@settings(max_examples=60, deadline=None)
@given(mu=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3)),
       d=st.integers(-2, 6), planar=st.one_of(st.none(), st.tuples(*[st.floats(-2, 2)] * 3)),
       closest=st.one_of(st.none(), st.integers(-1, 4)))
def test_contact_pair_validation_property(mu, d, planar, closest):
    """ContactPair accepts exactly: finite mu >= 0, d >= 1, a nonzero planar normal iff d == 1
    needs one (d > 1 may carry one, rejected later by the plant), num_closest None or >= 1."""
    valid = (np.isfinite(mu) and mu >= 0 and d >= 1
             and (planar is None or np.linalg.norm(planar) >= 1e-12)
             and not (d == 1 and planar is None) and (closest is None or closest >= 1))
    if valid:
        p = ContactPair("a", "b", mu, d, planar, closest)
        assert p.mu == float(mu) and p.num_edges == 2 * d
        if planar is not None:
            assert np.linalg.norm(p.planar_normal) == pytest.approx(1.0)
    else:
        with pytest.raises(ValueError):
            ContactPair("a", "b", mu, d, planar, closest)
