"""Seed 000 Table II's baselines (plants.sim.al_newton): the dogleg step against its closed form,
both direct Newton solvers of eq. 19 against an analytic sliding contact and against CANAL."""

from __future__ import annotations

import numpy as np
import pytest

from plants.sim import CANALSolver, ContactProblem, load_scene
from plants.sim.accuracy import contact_residual, perturbed_problems
from plants.sim.al_newton import damped_semismooth_newton, dogleg_step, strict_jacobian, trust_region_dogleg
from plants.sim.contact_laws import strict_operator

G = 9.81
METHODS = [damped_semismooth_newton, trust_region_dogleg]


def test_dogleg_step_newton_cauchy_and_the_path_between():
    """Inside the region: the Newton step. Cauchy point outside: steepest descent to the boundary.
    Between: the point of the segment Cauchy → Newton at distance Δ (closed form for H = diag)."""
    H = np.diag([1.0, 10.0])
    r = np.array([1.0, 1.0])
    dn = -np.linalg.solve(H, r)  # (−1, −0.1), |dn| = 1.005
    np.testing.assert_allclose(dogleg_step(r, H, dn, 2.0), dn)
    g = H.T @ r
    dc = -(g @ g) / ((H @ g) @ (H @ g)) * g  # Cauchy point, |dc| = 0.1005
    step = dogleg_step(r, H, dn, 0.05)
    np.testing.assert_allclose(step, -0.05 * g / np.linalg.norm(g))
    step = dogleg_step(r, H, dn, 0.5)
    assert np.linalg.norm(step) == pytest.approx(0.5)
    tau = (step - dc) @ (dn - dc) / ((dn - dc) @ (dn - dc))
    np.testing.assert_allclose(step, dc + tau * (dn - dc), atol=1e-14)  # on the segment
    assert 0 < tau < 1
    # singular H (no Newton step): the boundary steepest-descent step
    np.testing.assert_allclose(dogleg_step(r, H, None, 0.5), -0.5 * g / np.linalg.norm(g))


def test_strict_jacobian_matches_finite_differences():
    """∂T/∂x (eq. 17) against central differences at sticking, sliding and separated points."""
    x = np.array([[0.1, -0.05, 1.0], [2.0, 1.0, 1.0], [0.3, 0.2, -0.5]])
    mu, rho = np.array([0.5, 0.5, 0.5]), np.array([1.0, 2.0, 1.0])
    J = strict_jacobian(x, mu, rho)
    h = 1e-7
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        fd = (strict_operator(x + e, mu, rho) - strict_operator(x - e, mu, rho)) / (2 * h)
        np.testing.assert_allclose(J[:, :, j], fd, atol=1e-6)


def _sliding_particle():
    """A 2 kg point mass on the ground moving at 0.1 m/s along x: μ m g δt = 0.098 N·s cannot stop
    it (0.2 N·s would), so γ_t = −μ γ_n, γ_n = m g δt and v_x = 0.1 − 0.098/2."""
    m, dt, mu = 2.0, 1e-2, 0.5
    J = np.eye(3)
    p = ContactProblem(A=m * np.eye(3), v_star=[0.1, 0.0, -G * dt], J=J, phi0=[0.0], mu=[mu],
                       stiffness=[np.inf], dissipation=[0.0], dt=dt, v0=[0.1, 0.0, 0.0])
    return p, m, dt, mu


@pytest.mark.parametrize("method", METHODS)
def test_direct_newton_baselines_solve_a_sliding_contact_exactly(method):
    p, m, dt, mu = _sliding_particle()
    r = method(p)
    assert not r.failed
    gn = m * G * dt
    np.testing.assert_allclose(r.gamma, [-mu * gn, 0.0, gn], atol=1e-9)
    np.testing.assert_allclose(r.v, [0.1 - mu * gn / m, 0.0, 0.0], atol=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_direct_newton_baselines_agree_with_canal_on_the_mass_ratio_stack(method):
    """Three perturbed mass-ratio-stack steps (Table II's set): the same 10 AL loops at β = 1e4 as
    CANAL reach the same impulses (to 1e-6 of the largest) and the metric below 1e-8."""
    sim = load_scene("mass-ratio-stack", solver="sap")
    for _ in range(20):
        sim.step()
    problems = perturbed_problems(sim.contact_problem()[0], 3, seed=0, wrench_scale=0.3)
    canal = CANALSolver(warm_start=False, beta0=1e4, beta_max=1e4, max_iterations=10, tol=1e-300, max_newton=100)
    for p in problems:
        ref = canal.solve(p).gamma
        r = method(p)
        assert not r.failed
        assert contact_residual(p, r.gamma).residual < 1e-8
        np.testing.assert_allclose(r.gamma, ref, atol=1e-6 * np.abs(ref).max())
