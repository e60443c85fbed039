"""Pinocchio's ADMMConstraintSolver / PGSConstraintSolver as contact solvers of our stepper
(plants/sim/peer_pinocchio.py): analytic single-contact answers, agreement with SAP on a frozen
cube-stack step in the rigid limit, failure statuses, and stepping a scene.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plants.errors import ContactSolveError
from plants.sim import (
    ContactProblem,
    ContactSolverStatus,
    PinocchioADMMSolver,
    PinocchioSolverOptions,
    available_contact_solvers,
    load_scene,
    make_contact_solver,
)
from plants.sim.peer_pinocchio import delassus_operator

G, DT, MU = 9.81, 1e-3, 0.5
PEERS = ("pin-admm", "pin-pgs")


def _skew(p: np.ndarray) -> np.ndarray:
    return np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])


def sphere_on_ground(
    v0: np.ndarray, m: float = 2.0, r: float = 0.05, stiffness: float = np.inf
) -> ContactProblem:
    """A free sphere (6 dofs: world linear velocity, world angular velocity) touching the ground
    (φ₀ = 0) at its lowest point, frame (x, y, z) with the normal z last.
    """
    inertia = 0.4 * m * r**2
    A = np.diag([m, m, m, inertia, inertia, inertia])
    J = np.hstack([np.eye(3), -_skew(np.array([0.0, 0.0, -r]))])  # v_p = v + ω × p
    v_star = np.concatenate([v0 + [0.0, 0.0, -G * DT], np.zeros(3)])
    return ContactProblem(
        A=A,
        v_star=v_star,
        J=J,
        phi0=[0.0],
        mu=[MU],
        stiffness=[stiffness],
        dissipation=[0.0],
        dt=DT,
    )


def point_on_ground(v0_t: np.ndarray, m: float = 2.0) -> ContactProblem:
    """A point mass sliding on the ground with tangential velocity ``v0_t`` (no rotation)."""
    v_star = np.array([v0_t[0], v0_t[1], -G * DT])
    return ContactProblem(
        A=m * np.eye(3),
        v_star=v_star,
        J=np.eye(3),
        phi0=[0.0],
        mu=[MU],
        stiffness=[np.inf],
        dissipation=[0.0],
        dt=DT,
    )


def test_registered():
    assert {"pin-admm", "pin-pgs"} <= set(available_contact_solvers())


@pytest.mark.parametrize("name", PEERS)
def test_sphere_resting_carries_its_weight(name):
    m = 2.0
    r = make_contact_solver(name).solve(sphere_on_ground(np.zeros(3), m=m))
    assert r.status is ContactSolverStatus.SOLVED, r.message
    assert r.gamma[2] == pytest.approx(m * G * DT, rel=1e-6)  # γ_n = m g δt
    assert np.abs(r.gamma[:2]).max() < 1e-9
    assert np.abs(r.v).max() < 1e-7  # [m/s], [rad/s]: at rest after the step


@pytest.mark.parametrize("name", PEERS)
@pytest.mark.parametrize("angle", [0.0, 0.7, 2.5])
@pytest.mark.parametrize("speed", [1.0, 1e-3])
def test_point_sliding_and_sticking_coulomb(name, angle, speed):
    """Sliding (speed > μ g δt): γ_t = −μ m g δt along the motion, v_t = v₀ − μ g δt.
    Sticking (speed < μ g δt = 4.9 mm/s): γ_t = −m v₀, v = 0. Tolerance 1e-5 relative on the
    impulses: ADMM stops on its residuals (1e-8) with a proximal term μ_prox = 1e-6, and lands
    ~2e-6 relative from the exact impulse.
    """
    m = 2.0
    d = np.array([np.cos(angle), np.sin(angle)])
    r = make_contact_solver(name).solve(point_on_ground(speed * d, m=m))
    assert r.status is ContactSolverStatus.SOLVED, r.message
    gn = m * G * DT
    assert r.gamma[2] == pytest.approx(gn, rel=1e-5)
    if speed > MU * G * DT:
        np.testing.assert_allclose(r.gamma[:2], -MU * gn * d, atol=1e-5 * gn)
        np.testing.assert_allclose(r.v[:2], (speed - MU * G * DT) * d, atol=1e-5 * G * DT)
    else:
        np.testing.assert_allclose(r.gamma[:2], -m * speed * d, atol=1e-5 * gn)
        np.testing.assert_allclose(r.v[:2], 0.0, atol=1e-5 * G * DT)
    assert abs(r.v[2]) < 1e-5 * G * DT


def test_normal_compliance_of_finite_stiffness():
    """K finite, τ_d = 0: (w + c) γ_n = g δt with c = 1/(δt² k) (the compliant normal law)."""
    m, k = 2.0, 1e4
    p = ContactProblem(
        A=m * np.eye(3),
        v_star=[0.0, 0.0, -G * DT],
        J=np.eye(3),
        phi0=[0.0],
        mu=[MU],
        stiffness=[k],
        dissipation=[0.0],
        dt=DT,
    )
    r = make_contact_solver("pin-admm").solve(p)
    assert r.ok
    assert r.gamma[2] == pytest.approx(G * DT / (1 / m + 1 / (DT**2 * k)), rel=1e-4)
    rigid = make_contact_solver("pin-admm", compliance=False).solve(p)
    assert rigid.gamma[2] == pytest.approx(m * G * DT, rel=1e-5)


@pytest.fixture(scope="module")
def frozen_stack() -> ContactProblem:
    """A step of cube-rest-3 after 50 ms of SAP, made rigid (k = inf, τ_d = 0) with φ₀ = 0: the
    exact answer keeps the stack at rest (v = 0) and Jᵀγ carries the weights.
    """
    sim = load_scene("cube-rest-3", dt=DT)
    sim.run(0.05)
    p = sim.last_problem
    n = p.n_c
    return ContactProblem(
        A=p.A,
        v_star=p.v_star,
        J=p.J,
        phi0=np.zeros(n),
        mu=p.mu,
        stiffness=np.full(n, np.inf),
        dissipation=np.zeros(n),
        dt=p.dt,
        tree_starts=p.tree_starts,
        contact_trees=p.contact_trees,
    )


@pytest.mark.parametrize("name", PEERS)
@pytest.mark.parametrize("beta", [1.0, 0.1, 0.01])
@pytest.mark.parametrize("case", ["sphere", "stack"])
def test_agrees_with_sap_in_the_rigid_limit(frozen_stack, name, beta, case):
    """SAP's near-rigid regularization (R ∝ β²) is the only difference from the rigid problem the
    peers solve: the gap in v and in the generalized impulse Jᵀγ = A(v − v*) (unique, unlike the
    per-corner γ of a stack) shrinks as β². Measured: Jᵀγ gap 8.7 %, 0.093 %, 0.0009 % of the
    largest component at β = 1, 0.1, 0.01 (stack); bound 0.12 β² plus the peer's own accuracy at
    tolerance 1e-8 (ADMM: 1e-5; PGS stops with ~3e-5 of tangential/torque impulse and ~1.6e-6 rad/s
    of spin left: 3e-4).
    """
    acc = {"pin-admm": 1e-5, "pin-pgs": 3e-4}[name]
    p = frozen_stack if case == "stack" else sphere_on_ground(np.zeros(3))
    sap = make_contact_solver("sap", beta=beta, rel_tol=1e-10).solve(p)
    peer = make_contact_solver(name).solve(p)
    assert sap.ok and peer.ok, peer.message
    f_sap, f_peer = p.J.T @ sap.gamma, p.J.T @ peer.gamma
    scale = np.abs(f_peer).max()
    assert np.abs(f_sap - f_peer).max() <= (0.12 * beta**2 + acc) * scale
    assert np.abs(sap.v - peer.v).max() <= (0.12 * beta**2 + acc) * G * DT  # [m/s]
    # the peer keeps the stack at rest (rigid, φ₀ = 0) and v = v* + A⁻¹Jᵀγ holds exactly
    assert np.abs(peer.v).max() < acc * G * DT
    np.testing.assert_allclose(p.A @ (peer.v - p.v_star), f_peer, atol=1e-12)


def test_delassus_operator_matches_dense_inverse(frozen_stack):
    p = frozen_stack
    Gd, X = delassus_operator(p)
    np.testing.assert_allclose(X, np.linalg.solve(p.A, p.J.T), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(Gd, p.J @ np.linalg.solve(p.A, p.J.T), rtol=1e-10, atol=1e-12)


def test_iteration_budget_exhausted_is_a_status_and_the_stepper_refuses(frozen_stack):
    r = make_contact_solver("pin-admm", max_iterations=1, warm_start=False).solve(frozen_stack)
    assert r.status is ContactSolverStatus.MAX_ITERATIONS and not r.ok
    assert "no convergence" in r.message
    sim = load_scene("cube-rest-3", dt=DT, solver="pin-pgs", solver_options={"max_iterations": 1}, strict=True)
    q0 = sim.q.copy()
    with pytest.raises(ContactSolveError):
        sim.run(0.01)
    np.testing.assert_array_equal(sim.q, q0)


def test_no_contact_returns_free_motion():
    p = ContactProblem(
        A=np.eye(2),
        v_star=[1.0, 2.0],
        J=np.zeros((0, 2)),
        phi0=np.zeros(0),
        mu=np.zeros(0),
        stiffness=np.zeros(0) + 1.0,
        dissipation=np.zeros(0),
        dt=DT,
    )
    r = make_contact_solver("pin-admm").solve(p)
    assert r.ok and r.iterations == 0
    np.testing.assert_array_equal(r.v, [1.0, 2.0])


def test_bad_options_and_input():
    with pytest.raises(TypeError, match="unknown option"):
        make_contact_solver("pin-admm", tolerance=1e-3)
    with pytest.raises(ValueError, match="max_iterations"):
        PinocchioSolverOptions(max_iterations=0)
    with pytest.raises(ValueError, match="abs_tol"):
        PinocchioADMMSolver(abs_tol=float("nan"))
    with pytest.raises(ValueError, match="rho_rule"):
        PinocchioSolverOptions(rho_rule="fast")
    assert str(PinocchioADMMSolver(rho_rule="spectral")._settings.admm_update_rule).endswith("SPECTRAL")
    with pytest.raises(TypeError, match="ContactProblem"):
        PinocchioADMMSolver().solve("not a problem")


def test_cube_slide_scene_with_pin_admm_stops_at_the_discrete_distance():
    """load_scene(..., solver="pin-admm") steps our scene: the cube slides from 1 m/s and stops at
    symplectic Euler's discrete distance v²/(2μg) − v₀δt/2 = 0.10144 m (within 0.1 %), resting
    with |φ| < 1e-8 m (rigid normal).
    """
    sim = load_scene("cube-slide", dt=DT, solver="pin-admm")
    traj = sim.run(0.4)
    assert (traj.stats["status"] == 0).all()
    exact = 1.0 / (2 * MU * G) - 1.0 * DT / 2
    assert traj.q[-1, 0] == pytest.approx(exact, rel=1e-3)
    assert abs(traj.stats["min_phi"][-1]) < 1e-8


def test_cube_stack_with_pin_admm_stays_at_rest_without_penetration():
    """Rigid normal with the φ₀/(δt + τ_d) position term: the 3-stack keeps |φ| below 1e-9 m on
    every step (SAP's regularization predicts ~5e-7 m there) and does not move.
    """
    sim = load_scene("cube-rest-3", dt=DT, solver="pin-admm")
    q0 = sim.q.copy()
    traj = sim.run(0.1)
    assert (traj.stats["status"] == 0).all()
    assert np.abs(traj.stats["min_phi"]).max() < 1e-9
    assert np.abs(traj.q[-1] - q0).max() < 1e-8


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    m=st.floats(0.1, 10.0),
    mu=st.floats(0.0, 1.5),
    vx=st.floats(-2.0, 2.0),
    vy=st.floats(-2.0, 2.0),
    vz=st.floats(-2.0, 2.0),
    phi=st.floats(0.0, 5e-3),
)
@pytest.mark.parametrize("name", PEERS)
def test_point_mass_matches_the_closed_form_coulomb_solution(name, m, mu, vx, vy, vz, phi):
    """A point mass (A = m I, J = I) with free velocity v* and gap φ₀ ≥ 0: the rigid Coulomb step
    has a closed form — no contact if v*_n + φ₀/δt ≥ 0, else γ_n = −m(v*_n + φ₀/δt), stick if
    ‖v*_t‖ ≤ μ γ_n/m, otherwise γ_t = −μ γ_n v*_t/‖v*_t‖. Both peers must reproduce it (1e-5
    relative to the momentum scale m(‖v*‖ + φ₀/δt)).
    """
    v_star = np.array([vx, vy, vz])
    p = ContactProblem(
        A=m * np.eye(3),
        v_star=v_star,
        J=np.eye(3),
        phi0=[phi],
        mu=[mu],
        stiffness=[np.inf],
        dissipation=[0.0],
        dt=DT,
    )
    r = make_contact_solver(name, warm_start=False).solve(p)
    assert r.ok, r.message
    gamma = np.zeros(3)
    vn = vz + phi / DT
    if vn < 0:
        gamma[2] = -m * vn
        vt = v_star[:2]
        s = np.linalg.norm(vt)
        gamma[:2] = -m * vt if s <= mu * gamma[2] / m else -mu * gamma[2] * vt / s
    scale = m * (np.linalg.norm(v_star) + phi / DT) + 1e-12
    np.testing.assert_allclose(r.gamma, gamma, atol=1e-5 * scale)
    np.testing.assert_allclose(r.v, v_star + gamma / m, atol=1e-5 * scale / m)
