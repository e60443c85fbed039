"""The C3 controller: plans, failure handling, bad input, and the cart-pole closed loop."""

from __future__ import annotations

import numpy as np
import pytest

from c3mpc import C3, C3Options, C3Status, run_closed_loop
from c3mpc.tasks import build_controller, get_task, longest_run_within
from plants import load_plant


@pytest.fixture
def cartpole():
    return load_plant("cartpole-softwalls")


def lcp_controller(plant, **opt):
    d = plant.defaults
    opts = C3Options(projection="lcp", admm_iter=d.admm_iter, rho=d.rho,
                     rho_scale=d.rho_scale).replace(**opt)
    return C3(plant.lcs(), d.Q, d.R, d.G, d.U, N=d.N, QN=d.QN, options=opts)


def test_plan_shapes_status_and_dynamics(cartpole):
    ctrl = lcp_controller(cartpole)
    x0 = np.array([0.1, -0.5, 0.5, -0.4])
    res = ctrl.solve(x0)
    assert res.status is C3Status.SOLVED and res.ok and not res.fallback
    assert res.x.shape == (11, 4) and res.u.shape == (10, 1) and res.lam.shape == (10, 2)
    assert res.delta.shape == res.w.shape == (10, 7)
    np.testing.assert_allclose(res.x[0], x0)
    # The returned plan is the final QP iterate: it satisfies the LCS dynamics exactly.
    lcs = cartpole.lcs()
    np.testing.assert_allclose(lcs.dynamics_residual(res.x, res.u, res.lam), 0, atol=1e-10)
    assert res.complementarity_violation == pytest.approx(
        float(np.max(lcs.complementarity_residual(res.x[:-1], res.u, res.lam))), rel=1e-9)
    assert res.cost == pytest.approx(ctrl.plan_cost(res.x, res.u))
    assert res.iterations == 10 and set(res.timings) >= {"qp", "projection"}


def test_lcs_scaling_returns_physical_forces(cartpole):
    x0 = np.array([0.1, -0.5, 0.5, -0.4])
    a = lcp_controller(cartpole).solve(x0)
    b = lcp_controller(cartpole, scale_lcs=True).solve(x0)
    assert b.ok
    # same model, different λ units inside the solver: forces come back in newtons
    assert np.abs(b.lam).max() > 0 and np.abs(a.lam).max() > 0
    lcs = cartpole.lcs()
    np.testing.assert_allclose(lcs.dynamics_residual(b.x, b.u, b.lam), 0, atol=1e-9)


def test_factorizations_are_reused_across_solves(cartpole):
    ctrl = lcp_controller(cartpole)
    ctrl.solve(np.zeros(4))
    factors = dict(ctrl._qp._factors)
    assert len(factors) == 11  # one per ADMM iteration's σ, plus the final QP
    ctrl.solve(np.array([0.05, 0.0, 0.1, 0.0]))
    assert all(ctrl._qp._factors[s] is f for s, f in factors.items())


def test_cartpole_stabilized_from_paper_start(cartpole):
    """Acceptance: all states within 0.1 for 30 consecutive simulated steps."""
    for x0 in ([0.1, 0.0, 0.3, 0.0], [0.1, -0.5, 0.5, -0.4]):  # paper's; authors' wall test
        ctrl = lcp_controller(cartpole)
        log = run_closed_loop(cartpole, ctrl, np.array(x0), 300)
        assert log.x.shape == (301, 4)
        assert longest_run_within(log.x[1:], 0.1) >= 30
        assert get_task("cartpole-softwalls").success(log)
        assert np.all(log.status == C3Status.SOLVED)
    assert log.lam.max() > 0  # the wall-test start really uses the wall


def test_qp_failure_gives_status_and_last_feasible_plan(cartpole):
    ctrl = lcp_controller(cartpole)
    good = ctrl.solve(np.array([0.0, 0.0, 0.1, 0.0]))
    assert good.ok
    # An impossible state constraint at knot 1: cart position in [5, 6] m after 10 ms.
    bad_ctrl = lcp_controller(cartpole)
    bad_ctrl.add_linear_constraint(np.eye(4)[:1], [5.0], [6.0], "state", knots=[1])
    bad_ctrl.add_linear_constraint(np.eye(1), [-1.0], [1.0], "input")
    res = bad_ctrl.solve(np.zeros(4))
    assert res.status is C3Status.QP_FAILED and not res.ok
    assert not res.fallback and np.all(np.isnan(res.u)) and "no earlier feasible plan" in res.message
    # With a previous plan, the failure returns that plan shifted by one knot.
    ctrl._last_plan = (good.x, good.u, good.lam)
    ctrl.add_linear_constraint(np.eye(4)[:1], [5.0], [6.0], "state", knots=[1])
    ctrl.add_linear_constraint(np.eye(1), [-1.0], [1.0], "input")
    res = ctrl.solve(np.zeros(4))
    assert res.status is C3Status.QP_FAILED and res.fallback
    np.testing.assert_allclose(res.u[:-1], good.u[1:])


def test_bounds_are_respected(cartpole):
    ctrl = lcp_controller(cartpole)
    ctrl.set_bounds(u_lower=[-2.0], u_upper=[2.0])
    res = ctrl.solve(np.array([0.1, -0.5, 0.5, -0.4]))
    assert res.ok
    assert res.u.min() >= -2.0 - 1e-5 and res.u.max() <= 2.0 + 1e-5


@pytest.mark.parametrize("bad, match", [
    (dict(Q=np.eye(3)), "Q must have shape"),
    (dict(Q=-np.eye(4)), "Q must be positive semidefinite"),
    (dict(R=np.array([[1.0, 2.0]])), "R must have shape"),
    (dict(G=np.eye(6)), "G must have shape"),
    (dict(U=np.full((7, 7), np.nan)), "U has a non-finite"),
    (dict(N=0), "N must be an integer"),
    (dict(x_des=np.zeros(3)), "x_des must have shape"),
])
def test_bad_construction_arguments(cartpole, bad, match):
    d = cartpole.defaults
    kwargs = dict(lcs=cartpole.lcs(), Q=d.Q, R=d.R, G=d.G, U=d.U, N=10,
                  options=C3Options(projection="lcp"))
    kwargs.update(bad)
    with pytest.raises(ValueError, match=match):
        C3(**kwargs)


def test_bad_solve_and_update_arguments(cartpole):
    ctrl = lcp_controller(cartpole)
    with pytest.raises(ValueError, match="x0 has a non-finite"):
        ctrl.solve(np.array([0.0, np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="x0 must have shape"):
        ctrl.solve(np.zeros(5))
    with pytest.raises(ValueError, match="dimensions changed"):
        ctrl.update_lcs(load_plant("finger-gaiting").lcs())
    with pytest.raises(TypeError, match="lcs must be an lcs.LCS"):
        ctrl.update_lcs("not an lcs")
    with pytest.raises(ValueError, match="rho"):
        C3Options(rho=-0.1)
    with pytest.raises(ValueError, match="time-varying LCS has 3 knots"):
        d = cartpole.defaults
        C3(cartpole.lcs().as_time_varying(3), d.Q, d.R, d.G, d.U, N=10,
           options=C3Options(projection="lcp"))


def test_qp_projection_rejects_non_psd_F():
    pv = load_plant("pivoting")  # its F has eigenvalues down to -0.065 (symmetric part)
    with pytest.raises(ValueError, match="F at knot 0 is not positive semidefinite"):
        build_controller(pv, C3Options(projection="qp"))
    # finger gaiting's F is skew-symmetric plus PSD: monotone, so the QP projection accepts it
    assert build_controller(load_plant("finger-gaiting"), C3Options(projection="qp"))


def test_time_varying_lcs_equals_time_invariant(cartpole):
    d = cartpole.defaults
    x0 = np.array([0.1, -0.5, 0.5, -0.4])
    opts = C3Options(projection="lcp", rho_scale=2.0)
    a = C3(cartpole.lcs(), d.Q, d.R, d.G, d.U, N=10, QN=d.QN, options=opts).solve(x0)
    b = C3(cartpole.lcs().as_time_varying(12), d.Q, d.R, d.G, d.U, N=10, QN=d.QN,
           options=opts).solve(x0)
    np.testing.assert_allclose(a.u, b.u, atol=1e-10)


def test_convex_set_via_cvxpy_matches_equivalent_linear_bounds(cartpole):
    """|u| <= 2 as a cvxpy set gives the same plan as the same box as linear bounds."""
    cp = pytest.importorskip("cvxpy")
    x0 = np.array([0.1, -0.5, 0.5, -0.4])
    lin = lcp_controller(cartpole)
    lin.set_bounds(u_lower=[-2.0], u_upper=[2.0])
    cvx = lcp_controller(cartpole)
    cvx.add_convex_constraint(lambda x, lam, u: [cp.abs(u) <= 2.0])
    a, b = lin.solve(x0), cvx.solve(x0)
    assert a.ok and b.ok
    np.testing.assert_allclose(b.u, a.u, atol=1e-5)
    # a genuinely nonlinear set: the inputs' Euclidean norm over the horizon
    cvx2 = lcp_controller(cartpole)
    cvx2.add_convex_constraint(lambda x, lam, u: [cp.norm(u) <= 3.0])
    c = cvx2.solve(x0)
    assert c.ok and np.linalg.norm(c.u) <= 3.0 + 1e-5
    with pytest.raises(TypeError, match="callable"):
        cvx2.add_convex_constraint("not a function")
