"""Constraints beyond contact (issue 20, item 3): bilateral weld / ball / distance constraints,
couplers (URDF ``<mimic>``), implicit PD actuators with effort limits, joint damping and dry
friction, each against an analytic answer (docs/sap.md, "Constraints beyond contact")."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pinocchio as pin
import pytest

from plants.multibody.errors import ModelImportWarning
from plants.multibody.resources import example_robot_data_path
from plants.sim import ConstraintFallbackWarning, Simulator
from plants.sim.contact_problem import BoundedConstraintError, ContactProblem, unilateral_form
from plants.sim.geometry import Box, ContactParams, Sphere
from plants.sim.sap import SAPSolver
from plants.sim.scene import SceneBuilder, box_inertia, sphere_inertia

P = ContactParams(1e5, 1e-3, 0.5)
G = 9.81
DT = 1e-3
H = (0.05, 0.05, 0.05)
PANDA = "robots/panda_description/urdf/panda.urdf"
ALLEGRO = "robots/allegro_hand_description/urdf/allegro_right_hand.urdf"
SLOW = pytest.mark.slow  # NSN: 14 s per run on the shared machine
SOLVERS = ["sap", "canal", pytest.param("nsn", marks=SLOW), "pgs", "subadmm"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelImportWarning)
        warnings.simplefilter("ignore", RuntimeWarning)  # subadmm's once-per-process 'no_body' note
        yield


def constraint_errors(scene, q: np.ndarray) -> np.ndarray:
    """(N, n_constraints) distance [m] between the two constrained points along the rows of q."""
    data = scene.model.createData()
    out = np.empty((len(q), len(scene.constraints)))
    for i, qi in enumerate(q):  # loop over samples (Pinocchio calls)
        pin.forwardKinematics(scene.model, data, qi)
        for k, con in enumerate(scene.constraints):
            pa = data.oMi[con.joint_a].act(con.point_a) if con.joint_a else con.point_a
            pb = data.oMi[con.joint_b].act(con.point_b)
            d = np.linalg.norm(pb - pa)
            out[i, k] = abs(d - con.distance) if con.kind == "distance" else d
    return out


def planar(gravity=(0.0, 0.0, 0.0), mass=2.0, **kw) -> SceneBuilder:
    """A planar body (joints p_x, p_z, p_angle; no other geometry: no contact)."""
    b = SceneBuilder(gravity=gravity)
    b.add_planar_body("p", mass, 0.01, [("s", Sphere(0.05), P)], **kw)
    return b


# ---------------------------------------------------------------------------- weld
@pytest.mark.parametrize("solver", SOLVERS)
def test_weld_holds_a_hanging_chain_of_two_bodies_to_1e6_m(solver):
    """Body c welded to the world, body d welded to c, under gravity: every solver holds both
    welds to < 1e-6 m. The offset SAP's near-rigid regularization predicts (seed 001 eq. 29: the
    row is a spring of period δt on its effective mass, so it sags by F w δt²/(4π²)) is
    g δt²/(4π²) = 2.49e-7 m for the weld carrying one body at its centre; measured 2.49e-7 m."""
    b = SceneBuilder()
    b.add_free_body("c", 1.0, box_inertia(1.0, H), [("b", Box(H), P)], position=(0, 0, 1))
    b.add_free_body("d", 1.0, box_inertia(1.0, H), [("b", Box(H), P)], position=(0, 0, 0.9))
    b.add_weld(None, "c", position=(0, 0, 1.0))
    b.add_weld("c", "d")
    b.add_free_body("e", 1.0, box_inertia(1.0, H), [("b", Box(H), P)], position=(1, 0, 1))
    b.add_weld(None, "e")  # at its centre: carries its weight alone
    scene = b.build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # subadmm's default budget (counted in stats)
        traj = Simulator(scene, solver=solver, dt=DT).run(0.5)
    err = constraint_errors(scene, traj.q)
    # SubADMM's default budget (100 iterations) leaves the first steps short of convergence
    assert err.max() < (2e-6 if solver == "subadmm" else 1e-6)
    np.testing.assert_allclose(err[-1, 2], G * DT**2 / (4 * math.pi**2), rtol=0.02)
    assert np.abs(traj.v[-1]).max() < 1e-6  # at rest: the welds carry the weight
    R = pin.Quaternion(traj.q[-1, 3:7]).toRotationMatrix()  # body c keeps its orientation
    assert np.linalg.norm(pin.log3(R)) < 1e-6


def test_weld_holds_two_tumbling_bodies_together():
    """Two boxes welded together, thrown spinning (|ω| = 3.7 rad/s) in free fall: the weld supplies
    the centripetal forces; the pair's relative pose stays within 1.2e-6 m / 1e-6 rad while the
    centre of mass follows the ballistic parabola to 1e-9 m (momentum is conserved exactly)."""
    b = SceneBuilder()
    v_a, w = np.array([0.3, 0.0, 1.0]), np.array([2.0, -1.0, 3.0])
    v_b = v_a + np.cross(w, [0.1, 0.0, 0.05])  # the rigid motion of the pair (body frames = world at t = 0)
    b.add_free_body("a", 1.0, box_inertia(1.0, H), [("b", Box(H), P)], position=(0, 0, 2), velocity=(*v_a, *w))
    b.add_free_body("b", 2.0, box_inertia(2.0, H), [("b", Box(H), P)], position=(0.1, 0.0, 2.05),
                    velocity=(*v_b, *w))
    b.add_weld("a", "b")
    scene = b.build()
    sim = Simulator(scene, dt=DT)
    traj = sim.run(0.5)
    assert constraint_errors(scene, traj.q).max() < 1.5e-6
    Ra = [pin.Quaternion(q[3:7]).toRotationMatrix() for q in traj.q[::50]]
    Rb = [pin.Quaternion(q[10:14]).toRotationMatrix() for q in traj.q[::50]]
    assert max(np.linalg.norm(pin.log3(ra.T @ rb)) for ra, rb in zip(Ra, Rb)) < 1e-6
    com = (traj.q[:, :3] + 2.0 * traj.q[:, 7:10]) / 3.0
    v_com = (v_a + 2.0 * v_b) / 3.0
    n = np.arange(traj.n_steps + 1)
    expected = com[0] + v_com * traj.t[:, None] - np.outer(G * DT**2 * n * (n + 1) / 2, [0, 0, 1])  # symplectic Euler
    np.testing.assert_allclose(com, expected, atol=1e-9)


# ---------------------------------------------------------------------------- ball, distance
@pytest.mark.parametrize("solver", ["sap", pytest.param("canal", marks=SLOW)])
def test_pendulum_hung_by_a_ball_constraint_has_the_analytic_period(solver):
    """A sphere hung from a world point by a ball constraint (a compound pendulum, L = 0.5 m,
    θ₀ = 0.1 rad): period 2π√(I_p/(m g L))·(1 + θ₀²/16 + 11θ₀⁴/3072) = 1.42223 s; measured
    1.42231 s (5.6e-5 relative: the symplectic Euler phase error); the rod keeps its length to
    1.6e-6 m."""
    m, L, r, th0 = 1.0, 0.5, 0.05, 0.1
    b = SceneBuilder()
    b.add_free_body("bob", m, sphere_inertia(m, r), [("s", Sphere(r), P)],
                    position=(L * math.sin(th0), 0, 1.0 - L * math.cos(th0)))
    b.add_ball_constraint(None, "bob", position=(0, 0, 1.0))
    scene = b.build()
    traj = Simulator(scene, solver=solver, dt=DT).run(3.0)
    assert (traj.stats["status"] == 0).all()
    x = traj.q[:, 0]
    k = np.flatnonzero(np.sign(x[1:]) != np.sign(x[:-1]))
    crossings = traj.t[k] - x[k] * DT / (x[k + 1] - x[k])
    period = 2.0 * np.diff(crossings).mean()
    I_p = 0.4 * m * r**2 + m * L**2
    analytic = 2 * math.pi * math.sqrt(I_p / (m * G * L)) * (1 + th0**2 / 16 + 11 * th0**4 / 3072)
    assert abs(period / analytic - 1) < 2e-4
    length = np.linalg.norm(traj.q[:, :3] - [0, 0, 1.0], axis=1)
    assert np.abs(length - L).max() < 3e-6


def test_ball_constraints_close_a_four_bar_loop():
    """A four-bar linkage: two cranks hinged to the world by ball constraints and a coupler bar
    joined to both by ball constraints (the loop closure), swinging in 3-D under gravity. Every
    joint stays closed to 1e-5 m (measured 1.1e-6 m), and the loop conserves energy to 1 % of its
    kinetic energy over 1 s (measured 0.4 %: the symplectic scheme's bounded oscillation)."""
    b = SceneBuilder(excluded_groups=[("bar", "bar")])  # the bars overlap at their joints
    bar = (0.01, 0.01, 0.1)  # bars along z, 0.2 m long
    m = 0.5
    for name, x in (("crank1", 0.0), ("crank2", 0.3)):  # turning about x at 2.5 rad/s (consistent)
        b.add_free_body(name, m, box_inertia(m, bar), [("b", Box(bar), P, (0, 0, 0), None, "bar")], position=(x, 0, 0.9),
                        velocity=(0, 0.25, 0, 2.5, 0, 0))
        b.add_ball_constraint(None, name, position=(x, 0, 1.0))
    b.add_free_body("coupler", m, box_inertia(m, (0.15, 0.01, 0.01)), [("b", Box((0.15, 0.01, 0.01)), P, (0, 0, 0), None, "bar")],
                    position=(0.15, 0, 0.8), velocity=(0, 0.5, 0, 0, 0, 0))
    b.add_ball_constraint("crank1", "coupler", position=(0.0, 0, 0.8))
    b.add_ball_constraint("crank2", "coupler", position=(0.3, 0, 0.8))
    scene = b.build()
    sim = Simulator(scene, dt=DT)
    traj = sim.run(1.0)
    assert (traj.stats["status"] == 0).all()
    assert constraint_errors(scene, traj.q).max() < 1e-5
    E = sim.energy(traj)
    kinetic0 = pin.computeKineticEnergy(scene.model, scene.model.createData(), scene.q0, scene.v0)  # 0.104 J
    assert np.abs(E - E[0]).max() < 1e-2 * kinetic0  # measured 0.4 %
    assert np.ptp(traj.q[:, 1]) > 0.05  # it swung


def test_distance_constraint_keeps_its_length():
    """A double pendulum of distance constraints released from the horizontal: a sphere on a 0.4 m
    constraint to a world point (started sideways) and a second on a 0.3 m constraint to the
    first. Each length holds within the analytic per-step bound below over 1 s (2e-5 and 1.1e-4
    relative at the fastest whip); the default length is the initial distance."""
    b = SceneBuilder()
    b.add_free_body("s1", 0.5, sphere_inertia(0.5, 0.03), [("s", Sphere(0.03), P)], position=(0.4, 0, 1.0),
                    velocity=(0, 1.0, 0, 0, 0, 0))
    b.add_free_body("s2", 0.2, sphere_inertia(0.2, 0.03), [("s", Sphere(0.03), P)], position=(0.7, 0, 1.0))
    b.add_distance_constraint(None, "s1", point_a=(0, 0, 1.0))
    b.add_distance_constraint("s1", "s2", distance=0.3)
    scene = b.build()
    assert [c.distance for c in scene.constraints] == pytest.approx([0.4, 0.3])
    traj = Simulator(scene, dt=DT).run(1.0)
    err = constraint_errors(scene, traj.q)
    # the bound: a step moves along the linearized row, so a rod turning at relative tangential
    # speed u lengthens by u² δt²/(2 d) before the next step corrects it (the curvature the
    # velocity-level constraint does not see); plus the near-rigid sag w T δt²/(4π²) under the
    # rod's tension T (w = 1/m_a + 1/m_b = 7 /kg, T ≲ 40 N at the whip: ≲ 7e-6 m)
    for k, (p_a, v_a, p_b, v_b, d) in enumerate((
            (np.array([0, 0, 1.0]), np.zeros(3), traj.q[:, 0:3], traj.v[:, 0:3], 0.4),
            (traj.q[:, 0:3], traj.v[:, 0:3], traj.q[:, 7:10], traj.v[:, 6:9], 0.3))):
        n = (p_b - p_a) / np.linalg.norm(p_b - p_a, axis=-1, keepdims=True)
        u = v_b - v_a
        u_t2 = np.sum(u * u, axis=1) - np.sum(u * n, axis=1) ** 2
        bound = u_t2.max() * DT**2 / (2 * d) + 7e-6  # 1.6e-5 m and 3.9e-5 m
        assert err[:, k].max() < bound  # measured 8.2e-6 m and 3.4e-5 m
    assert err[-1].max() < 1e-4 * 0.3
    assert traj.q[:, 2].min() < 0.8  # it swung down (not held by anything else)


# ---------------------------------------------------------------------------- couplers
@pytest.mark.parametrize("solver", ["sap", "canal", pytest.param("nsn", marks=SLOW), "pgs", "pin-admm"])
def test_coupler_with_multiplier_2_holds_q1_equals_2_q0_plus_offset(solver):
    """z = 2 x + 0.1 on a planar body of mass m under gravity, with a force F on x. Lagrange:
    5 m ẍ = F − 2 m g, so x(t) follows the symplectic-Euler parabola of a = (F − 2mg)/(5m):
    x_N = a δt² N (N+1)/2 (to 1e-6 m, the near-rigid coupler's sag); the coupling holds to 2e-6."""
    m, F = 2.0, 50.0
    b = planar((0, 0, -G), mass=m, z=0.1)
    b.add_coupler("p_x", "p_z", multiplier=2.0, offset=0.1)
    scene = b.build()
    traj = Simulator(scene, solver=solver, dt=DT, controller=lambda t, q, v: np.array([F, 0, 0])).run(1.0)
    assert np.abs(traj.q[:, 1] - (2 * traj.q[:, 0] + 0.1)).max() < 2e-6
    a = (F - 2 * m * G) / (5 * m)
    n = np.arange(traj.n_steps + 1)
    np.testing.assert_allclose(traj.q[:, 0], a * DT**2 * n * (n + 1) / 2, atol=1e-6)


def panda_gripper(mimic: bool = True):
    """The Panda held at its ready pose (gravity compensation + joint PD), fingers at 1 cm, an
    implicit PD actuator on finger 1 only (target 3.5 cm)."""
    q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.01, 0.01])
    b = SceneBuilder()
    b.add_urdf(example_robot_data_path(PANDA), ContactParams(1e6, 1e-3, 0.5), q0=q0,
               collision_links=["panda_leftfinger", "panda_rightfinger"], mimic=mimic)
    b.add_pd_actuator("panda_finger_joint1", kp=500.0, kd=5.0, target=0.035)
    scene = b.build()
    model, data = scene.model, scene.model.createData()

    def hold_arm(t, q, v):
        tau = pin.rnea(model, data, q, v, np.zeros(model.nv)) - 50 * (q - q0) - 5 * v
        tau[7:] = 0.0
        return tau

    return scene, hold_arm


def test_panda_gripper_fingers_stay_coupled_by_the_urdf_mimic():
    """panda.urdf: finger_joint2 mimics finger_joint1. Driving finger 1 alone, finger 2 follows
    to 2e-5 m while opening (|q̇| up to 0.1 m/s) and both reach the target; with mimic=False
    finger 2 stays where it was."""
    scene, hold = panda_gripper()
    (c,) = scene.couplers
    assert (c.dof0, c.dof1, c.multiplier, c.offset) == (7, 8, 1.0, 0.0)
    traj = Simulator(scene, dt=DT, controller=hold).run(0.5)
    assert np.abs(traj.q[:, 8] - traj.q[:, 7]).max() < 2e-5
    np.testing.assert_allclose(traj.q[-1, 7:], 0.035, atol=1e-4)
    scene, hold = panda_gripper(mimic=False)
    assert scene.couplers == ()
    traj = Simulator(scene, dt=DT, controller=hold).run(0.2)
    assert abs(traj.q[-1, 8] - 0.01) < 1e-3 and traj.q[-1, 7] > 0.03


# ---------------------------------------------------------------------------- PD actuators
def test_pd_actuator_tracks_the_analytic_closed_loop_response():
    """Implicit PD (kp = 200, kd = 10) on a 2 kg slider, target 0.3 m: the simulator reproduces
    the recursion m (v' − v) = δt (−kp (q + δt v' − q_d) − kd v'), q' = q + δt v' (the implicit
    law, seed 001 §VII) to round-off, and the continuous closed loop m q̈ = −kp (q − q_d) − kd q̇
    (ζ = 0.25, ω_n = 10 rad/s) to 2.2e-3 m (the O(δt) damping of the implicit step)."""
    m, kp, kd, qd = 2.0, 200.0, 10.0, 0.3
    b = planar(mass=m)
    b.add_pd_actuator("p_x", kp=kp, kd=kd, target=qd)
    scene = b.build()
    assert scene.actuators[0].effort_limit == np.inf
    sim = Simulator(scene, dt=DT)
    traj = sim.run(1.0)
    q, v, ref = 0.0, 0.0, [0.0]
    for _ in range(traj.n_steps):
        v = (m * v - DT * kp * (q - qd)) / (m + DT * (DT * kp + kd))
        q += DT * v
        ref.append(q)
    np.testing.assert_allclose(traj.q[:, 0], ref, atol=1e-12)
    wn, zeta = math.sqrt(kp / m), kd / (2 * math.sqrt(kp * m))
    wd, t = wn * math.sqrt(1 - zeta**2), traj.t
    exact = qd - qd * np.exp(-zeta * wn * t) * (np.cos(wd * t) + zeta * wn / wd * np.sin(wd * t))
    assert np.abs(traj.q[:, 0] - exact).max() < 3e-3
    # a new target takes effect from the next step
    sim.set_actuator_targets([0.0])
    traj = sim.run(2.0)  # 0.3 e^{−ζ ω_n t} = 2.0e-3 m at t = 2 s
    assert abs(traj.q[-1, 0]) < 3e-3


@pytest.mark.parametrize("dt", [1e-3, 1e-2])
def test_pd_actuator_saturates_at_exactly_its_effort_limit(dt):
    """Stiff gains (kp = 1e4, kd = 100) toward a target 10 m away, effort limit 5 N: the actuator
    impulse is δt·5 N to round-off (the interval projection, not a clamp after the fact), so the
    2 kg slider accelerates at exactly 2.5 m/s²: v(t) = 2.5 t."""
    b = planar()
    b.add_pd_actuator("p_x", kp=1e4, kd=100.0, target=10.0, effort_limit=5.0)
    sim = Simulator(b.build(), dt=dt)
    traj = sim.run(0.5)
    assert sim.last_result.gamma[-1] == pytest.approx(5.0 * dt, rel=1e-12)
    np.testing.assert_allclose(traj.v[:, 0], 2.5 * traj.t, atol=1e-12)


def test_pd_actuator_effort_limit_defaults_to_the_file_and_falls_back_explicitly():
    """The effort limit defaults to the URDF's (panda finger: 100 N); solvers without bounded rows
    evaluate an effort-limited PD explicitly (clamped) and say so: it saturates at the limit too."""
    scene, _ = panda_gripper()
    assert scene.actuators[0].effort_limit == 100.0
    b = planar()
    b.add_pd_actuator("p_x", kp=1e4, kd=100.0, target=10.0, effort_limit=5.0)
    with pytest.warns(ConstraintFallbackWarning, match="evaluated explicitly"):
        sim = Simulator(b.build(), solver="canal", dt=DT)
    traj = sim.run(0.2)
    np.testing.assert_allclose(traj.v[:, 0], 2.5 * traj.t, atol=1e-12)


# ---------------------------------------------------------------------------- damping and friction
@pytest.mark.parametrize("joint, dof, inertia, f", [("p_x", 0, 2.0, 5.0), ("p_angle", 2, 0.01, 0.05)])
def test_joint_dry_friction_holds_below_and_slides_above(joint, dof, inertia, f):
    """Dry friction f on a slider (2 kg, f = 5 N) or a hinge (I = 0.01 kg·m², f = 0.05 N·m) under a
    constant τ. τ = 0.6 f: it holds, up to the creep of SAP's near-rigid regularization,
    v = δt a R/W = δt a/(12π²) with a = τ/I (R = β² w/(4π²), w = W/3 for a one-row constraint;
    seed 001 eq. 29): 1.27e-5 m/s on the slider. τ = 1.6 f: it accelerates at exactly
    (τ − f)/I, and the friction impulse is −δt f."""
    for tau in (0.6 * f, 1.6 * f):
        b = planar(mass=2.0)
        b.add_joint_friction(joint, f)
        u = np.zeros(3)
        u[dof] = tau
        sim = Simulator(b.build(), dt=DT, controller=lambda t, q, v, u=u: u)
        traj = sim.run(0.5)
        if tau < f:
            creep = DT * (tau / inertia) / (12 * math.pi**2)
            assert traj.v[-1, dof] == pytest.approx(creep, rel=1e-3)
            assert abs(traj.q[-1, dof] - traj.q[0, dof]) < 0.5 * creep * 1.01
        else:
            np.testing.assert_allclose(traj.v[:, dof], (tau - f) / inertia * traj.t, rtol=1e-12, atol=1e-12)
            assert sim.last_result.gamma[-1] == pytest.approx(-f * DT, rel=1e-12)


def test_joint_damping_is_implicit():
    """Damping d = 4 N·s/m on a 2 kg slider at 1 m/s: v_N = v₀ / (1 + δt d/m)^N (implicit, stable
    at any δt: at δt = 1 s it decays monotonically, where the explicit step would flip sign)."""
    for dt in (1e-3, 1.0):
        b = planar(velocity=(1.0, 0, 0))
        b.add_joint_damping("p_x", 4.0)
        traj = Simulator(b.build(), dt=dt, plausibility=None).run(2.0)
        n = np.arange(traj.n_steps + 1)
        np.testing.assert_allclose(traj.v[:, 0], (1 + dt * 2.0) ** -n, rtol=1e-12)


def test_urdf_dynamics_are_read_and_can_be_ignored():
    """URDF <dynamics damping friction>: panda damping 0.003 (arm) / 0.3 (fingers), no friction;
    allegro damping 3-10, friction 5-12 N·m. joint_dynamics=False ignores them; solvers without
    bounded rows leave the friction out with a warning naming the joints."""
    b = SceneBuilder()
    b.add_urdf(example_robot_data_path(PANDA), P, collision_links=["panda_leftfinger"])
    scene = b.build()
    np.testing.assert_allclose(scene.joint_damping, [0.003] * 7 + [0.3, 0.3])
    assert not scene.joint_friction.any()
    b = SceneBuilder()
    b.add_urdf(example_robot_data_path(ALLEGRO), P)
    allegro = b.build()
    assert set(allegro.joint_friction[allegro.joint_friction > 0]) == {5.0, 10.0, 12.0}
    assert set(allegro.joint_damping[allegro.joint_damping > 0]) == {3.0, 8.0, 10.0}
    with pytest.warns(ConstraintFallbackWarning, match="joint_0.0"):
        Simulator(allegro, solver="pgs")
    b = SceneBuilder()
    b.add_urdf(example_robot_data_path(ALLEGRO), P, joint_dynamics=False)
    free = b.build()
    assert not free.joint_friction.any() and not free.joint_damping.any()


def test_allegro_fingers_are_held_by_their_dry_friction():
    """The hand upside down under gravity: friction (5-12 N·m) exceeds gravity's torque on the
    fingers (< 0.05 N·m), so with SAP they stay where they start (< 1e-4 rad in 0.3 s); without
    the file's dynamics they fall by > 0.05 rad."""
    moved = []
    for dynamics in (True, False):
        b = SceneBuilder()
        b.add_urdf(example_robot_data_path(ALLEGRO), P, base_position=(0, 0, 0.25), base_quaternion=(1, 0, 0, 0),
                   joint_dynamics=dynamics)
        scene = b.build()
        traj = Simulator(scene, dt=DT).run(0.3)
        moved.append(np.abs(traj.q[-1] - traj.q[0]).max())
    assert moved[0] < 1e-4 and moved[1] > 0.05


# ---------------------------------------------------------------------------- the problem and the solvers
def bilateral_problem(lower, upper) -> ContactProblem:
    """Two dofs, one geometric contact and two joint-space rows with the given impulse bounds."""
    A = np.array([[2.0, 0.3], [0.3, 1.0]])
    J = np.zeros((9, 2))
    J[2] = [1.0, 0.0]  # contact normal on dof 0
    J[5] = [1.0, -1.0]  # a coupler-like row
    J[8] = [0.0, 1.0]
    return ContactProblem(A=A, v_star=np.array([-0.5, 0.8]), J=J, phi0=[0.001, 0.002, -0.001], mu=[0.5, 0, 0],
                          stiffness=[1e5, 1e4, 1e3], dissipation=[0.0, 0.01, 0.0], dt=0.01, n_limits=2,
                          gamma_lower=lower, gamma_upper=upper)


def test_sap_gradient_of_the_interval_constraints_matches_finite_differences():
    """SAP's cost with interval rows, ℓ_i = R (y γ − ½γ²) (docs/sap.md): its gradient
    A (v − v*) − Jᵀγ matches central differences of the cost, in and out of saturation."""
    p = bilateral_problem([-np.inf, -0.01], [np.inf, 0.002])
    solver = SAPSolver()
    ws = solver.workspace(p)
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.normal(size=2)
        cost, grad, *_ = solver.evaluate(ws, v)
        fd = np.array([(solver.evaluate(ws, v + e)[0] - solver.evaluate(ws, v - e)[0]) / 2e-7
                       for e in 1e-7 * np.eye(2)])
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


def test_bilateral_rows_split_into_opposed_unilateral_pairs_exactly():
    """unilateral_form: SAP on the split problem (opposed unilateral pairs; what SAP.solve does)
    gives the velocities and net impulses of SAP's interval projection on the bilateral rows (to
    solver tolerance); finite bounds raise unless kept."""
    p = bilateral_problem([-np.inf, -np.inf], [np.inf, np.inf])
    split, back = unilateral_form(p, "test")
    assert split.n_c == 5 and split.n_limits == 4 and not split.bounded.any()
    r1 = SAPSolver(rel_tol=1e-12)._solve(p, None)  # the interval path (_box_project) on both rows
    r2 = back(SAPSolver(rel_tol=1e-12).solve(split))
    assert r1.ok and r2.ok
    np.testing.assert_allclose(r2.v, r1.v, atol=1e-9)
    np.testing.assert_allclose(r2.gamma, r1.gamma, atol=1e-9)
    bounded = bilateral_problem([-np.inf, -0.01], [np.inf, 0.01])
    with pytest.raises(BoundedConstraintError, match="canal"):
        unilateral_form(bounded, "canal")
    kept, back = unilateral_form(bounded, "sap", keep_bounded=True)  # row 1 split, row 2 kept
    np.testing.assert_array_equal(kept.gamma_lower, [0.0, -0.01, 0.0])
    r1 = SAPSolver(rel_tol=1e-12)._solve(bounded, None)
    r2 = back(SAPSolver(rel_tol=1e-12)._solve(kept, None))
    assert abs(r1.gamma[-1]) == pytest.approx(0.01)  # saturated
    np.testing.assert_allclose(r2.v, r1.v, atol=1e-9)
    np.testing.assert_allclose(r2.gamma, r1.gamma, atol=1e-9)


def test_impulse_bounds_are_validated_and_saved(tmp_path):
    p = bilateral_problem([-np.inf, -0.1], [np.inf, 0.1])
    q = ContactProblem.load(p.save(tmp_path / "p.npz"))
    np.testing.assert_array_equal(q.gamma_lower, p.gamma_lower)
    np.testing.assert_array_equal(q.gamma_upper, p.gamma_upper)
    with pytest.raises(ValueError, match="gamma_lower <= 0"):
        bilateral_problem([0.1, 0.0], None)
    with pytest.raises(ValueError, match="gamma_upper must have shape"):
        bilateral_problem(None, [1.0])


def test_bad_constraint_input_is_rejected():
    b = planar()
    with pytest.raises(ValueError, match="no body, link or joint named 'nope'"):
        b.add_weld(None, "nope")
        b.build()
    b = planar()
    with pytest.raises(ValueError, match="kp of 'p_x' must be finite and > 0"):
        b.add_pd_actuator("p_x", kp=0.0, kd=1.0)
    with pytest.raises(ValueError, match="not a scalar"):
        b2 = SceneBuilder()
        b2.add_free_body("f", 1.0, np.eye(3), [("s", Sphere(0.1), P)])
        b2.add_joint_friction("f", 1.0)
    with pytest.raises(ValueError, match="no joint named"):
        b.add_coupler("p_x", "nope")
    with pytest.raises(ValueError, match="distance must be a finite length"):
        b.add_distance_constraint(None, "p", distance=-1.0)
    with pytest.raises(ValueError, match="damping needs a finite stiffness"):
        b.add_ball_constraint(None, "p", damping=1.0)
    with pytest.raises(TypeError, match="body_a must be"):
        b.add_weld(3, "p")


def test_mimic_elements_that_name_no_joint_are_skipped_with_a_warning():
    """Robots we did not write: Talos' gripper has <mimic> on fixed joints (nothing to couple:
    skipped silently); alex_psyonic_hands' <mimic> name joints without the file's Left_/Right_
    prefix (a broken file: a ModelImportWarning names them, the scene still builds)."""
    b = SceneBuilder()
    b.add_urdf(example_robot_data_path("robots/talos_data/robots/talos_left_arm.urdf"), P, self_collision=False)
    assert b.build().couplers == ()
    b = SceneBuilder()
    with pytest.warns(ModelImportWarning, match="index_q2 -> index_q1"):
        b.add_urdf(example_robot_data_path("robots/alex_description/urdf/alex_psyonic_hands.urdf"), P,
                   self_collision=False)
    assert b.build().couplers == ()


@pytest.mark.parametrize("line_search", ["exact", "armijo"])
def test_sap_interval_rows_numpy_path_and_line_searches_agree(monkeypatch, line_search):
    """A problem with a saturating and a bilateral row: the compiled and numpy paths of SAP (and
    both line searches) give the same solution; the saturated row's impulse is its bound."""
    p = bilateral_problem([-np.inf, -0.002], [np.inf, 0.002])
    fast = SAPSolver(line_search=line_search, rel_tol=1e-10).solve(p)
    import plants.sim.sap as sap_mod

    monkeypatch.setattr(sap_mod, "HAVE_NUMBA", False)
    ref = SAPSolver(line_search=line_search, rel_tol=1e-10).solve(p)
    exact = SAPSolver(rel_tol=1e-12).solve(p)
    assert fast.ok and ref.ok
    for r in (fast, ref):
        np.testing.assert_allclose(r.v, exact.v, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(r.gamma, exact.gamma, atol=1e-9)
    assert abs(exact.gamma[-1]) == pytest.approx(0.002, rel=1e-12)


@pytest.mark.parametrize("solver", ["sap", "canal"])
def test_compliant_ball_constraint_is_the_implicit_spring_damper(solver):
    """A 1 kg sphere hung at its centre by a compliant ball constraint (k = 1000 N/m, d = 10 N·s/m;
    seed 000 eq. 4): vertically m (v' − v) = −δt m g − δt (k (z − z₀ + δt v') + d v'), the
    implicit spring-damper, to 1e-10 m; it settles at the static sag m g/k = 9.81 mm."""
    m, k, d = 1.0, 1000.0, 10.0
    b = SceneBuilder()
    b.add_free_body("s", m, sphere_inertia(m, 0.05), [("s", Sphere(0.05), P)], position=(0, 0, 1.0))
    b.add_ball_constraint(None, "s", stiffness=k, damping=d)
    traj = Simulator(b.build(), solver=solver, dt=DT).run(2.0)
    z, v, ref = 1.0, 0.0, [1.0]
    for _ in range(traj.n_steps):
        v = (m * v - DT * m * G - DT * k * (z - 1.0)) / (m + DT * (DT * k + d))
        z += DT * v
        ref.append(z)
    np.testing.assert_allclose(traj.q[:, 2], ref, atol=1e-10)
    assert traj.q[-1, 2] == pytest.approx(1.0 - m * G / k, abs=1e-6)  # the transient: e^(−ζωt) = 5e-5
    np.testing.assert_allclose(traj.q[:, :2], 0.0, atol=1e-12)
