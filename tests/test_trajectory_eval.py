"""c3mpc.trajectory_eval: DAIRLab/c3's TrajectoryEvaluator tests, with our API."""

from __future__ import annotations

import numpy as np
import pytest

from c3mpc import C3, C3Options
from c3mpc.trajectory_eval import (downsample, downsample_plan, fine_steps_per_coarse_step,
                                   quadratic_trajectory_cost, simulate_lcs,
                                   simulate_pd_tracking, zero_order_hold, zero_order_hold_plan)
from lcs import LCS
from plants import load_plant


@pytest.fixture(scope="module")
def cartpole():
    return load_plant("cartpole-softwalls")


def test_quadratic_cost_matches_a_hand_sum():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3))
    xd = rng.normal(size=(4, 3))
    W = np.stack([np.diag(rng.uniform(0.5, 2, 3)) for _ in range(4)])
    hand = sum((x[k] - xd[k]) @ W[k] @ (x[k] - xd[k]) for k in range(4))
    assert quadratic_trajectory_cost(x, W, xd) == pytest.approx(hand, rel=1e-14)
    assert quadratic_trajectory_cost(x, W[0]) == pytest.approx(
        sum(v @ W[0] @ v for v in x), rel=1e-14)
    # subset [1, 3): only those entries and that block
    hand_sub = sum((x[k] - xd[k])[1:] @ W[k][1:, 1:] @ (x[k] - xd[k])[1:] for k in range(4))
    assert quadratic_trajectory_cost(x, W, xd, start=1, end=3) == pytest.approx(hand_sub)
    assert quadratic_trajectory_cost(x, W, xd, start=2, end=2) == 0.0
    for kw in (dict(start=2, end=1), dict(end=4), dict(start=-1)):
        with pytest.raises(ValueError, match="start"):
            quadratic_trajectory_cost(x, W, **kw)
    with pytest.raises(ValueError, match="weights"):
        quadratic_trajectory_cost(x, W[:3])
    with pytest.raises(ValueError, match="desired"):
        quadratic_trajectory_cost(x, W, xd[:2])


def test_c3_plan_cost_is_the_sum_of_the_trajectory_costs(cartpole):
    ctrl = C3(cartpole.lcs(), cartpole.defaults.Q, cartpole.defaults.R, cartpole.defaults.G,
              cartpole.defaults.U, N=5, QN=cartpole.defaults.QN,
              options=C3Options(projection="qp"))
    res = ctrl.solve(cartpole.defaults.x0)
    Q = np.stack([cartpole.defaults.Q] * 5 + [cartpole.defaults.QN])
    total = quadratic_trajectory_cost(res.x, Q) + quadratic_trajectory_cost(
        res.u, cartpole.defaults.R)
    assert res.cost == pytest.approx(total, rel=1e-12)


def test_zero_order_hold_and_downsample_round_trip():
    coarse = np.array([[1.0, 2.0], [3.0, 4.0]])
    fine = zero_order_hold(coarse, 3)
    np.testing.assert_array_equal(fine, [[1, 2]] * 3 + [[3, 4]] * 3)
    np.testing.assert_array_equal(downsample(fine, 3), coarse)
    x = np.array([[1.0, 2], [3, 4], [5, 6]])
    u = np.array([[7.0], [8.0]])
    xf, uf = zero_order_hold_plan(x, u, 3)
    assert xf.shape == (7, 2) and uf.shape == (6, 1)
    np.testing.assert_array_equal(xf[-1], x[-1])
    np.testing.assert_array_equal(xf[3], x[1])
    xc, uc = downsample_plan(xf, uf, 3)
    np.testing.assert_array_equal(xc, x)
    np.testing.assert_array_equal(uc, u)
    with pytest.raises(ValueError, match="one more sample"):
        zero_order_hold_plan(x[:2], u, 3)
    with pytest.raises(ValueError, match="multiple of rate"):
        downsample(fine[:5], 3)
    with pytest.raises(ValueError, match="rate"):
        zero_order_hold(coarse, 0)


def _integrator(dt: float, N: int | None = None) -> LCS:
    """x⁺ = x + (dt/0.1) u with a decoupled, inactive contact (their test's LCS)."""
    n, k = 2, 2
    return LCS(np.eye(n), np.eye(n, k) * dt / 0.1, np.zeros((n, 1)), np.zeros(n),
               np.zeros((1, n)), np.eye(1), np.zeros((1, k)), np.zeros(1), dt=dt)


def test_lcs_roll_out_matches_the_linear_dynamics_also_on_a_finer_lcs():
    coarse, fine = _integrator(0.1), _integrator(0.01)
    x0 = np.array([1.0, 1.0])
    u = np.array([[1.0, 0.0], [0.0, 2.0]])
    expected = np.array([x0, x0 + u[0], x0 + u[0] + u[1]])
    np.testing.assert_allclose(simulate_lcs(x0, u, coarse), expected, atol=1e-14)
    assert fine_steps_per_coarse_step(coarse, fine) == 10
    np.testing.assert_allclose(simulate_lcs(x0, u, coarse, fine), expected, atol=1e-13)
    with pytest.raises(ValueError, match="u_plan"):
        simulate_lcs(x0, np.zeros((2, 3)), coarse)
    with pytest.raises(ValueError, match="integer"):
        fine_steps_per_coarse_step(coarse, _integrator(0.03))


def test_pd_tracking_of_a_rolled_out_plan_is_exact(cartpole):
    """A plan that is the LCS's own roll-out is tracked with zero error (feed-forward only);
    without feed-forward the PD law alone drives the inputs."""
    lcs = cartpole.lcs()
    rng = np.random.default_rng(1)
    u_plan = rng.normal(size=(6, 1))
    x_plan = simulate_lcs(cartpole.defaults.x0, u_plan, lcs)
    Kp = np.array([10.0, 0, 0, 0])
    Kd = np.array([0, 0, 1.0, 0])
    x, u = simulate_pd_tracking(x_plan, Kp, Kd, lcs, u_plan)
    np.testing.assert_allclose(x, x_plan, atol=1e-12)
    np.testing.assert_allclose(u, u_plan, atol=1e-12)
    x_nf, u_nf = simulate_pd_tracking(x_plan, Kp, Kd, lcs)
    np.testing.assert_allclose(x_nf[0], x_plan[0])
    np.testing.assert_allclose(u_nf[0], 0.0, atol=1e-12)  # x_0 = x_plan_0: no error yet
    e1 = x_plan[1] - x_nf[1]
    np.testing.assert_allclose(u_nf[1], [10.0 * e1[0] + 1.0 * e1[2]], rtol=1e-12)
    with pytest.raises(ValueError, match="exactly n_u=1 non-zero"):
        simulate_pd_tracking(x_plan, np.array([1.0, 1, 0, 0]), Kd, lcs)
    with pytest.raises(ValueError, match="Kd must have shape"):
        simulate_pd_tracking(x_plan, Kp, np.ones(3), lcs)
