"""C3Result.resimulated_cost: the plan's inputs through the LCS, against independent checks.

The ADMM plan's own cost (``C3Result.cost``) uses states driven by the plan's λ, which need not
satisfy complementarity, so it can sit below the MIQP optimum. The resimulated cost applies
the plan's u to the LCS (each λ_k an LCP solution), so no plan can beat a certified MIQP
optimum on it.
"""

from __future__ import annotations

import numpy as np
import pytest

from c3mpc import C3Options, C3Status, solve_miqp_mpc
from c3mpc.tasks import build_controller
from lcs import solve_lcp
from plants import load_plant


def _manual_rollout(lcs, x0, u):
    """x_{k+1} = A x + B u + D λ, λ = LCP(F, E x + H u + c), written out step by step."""
    x = [np.asarray(x0, float)]
    for k in range(u.shape[0]):
        q = lcs.E @ x[-1] + lcs.H @ u[k] + lcs.c
        lam = solve_lcp(lcs.F, q).z
        x.append(lcs.A @ x[-1] + lcs.B @ u[k] + lcs.D @ lam + lcs.d)
    return np.array(x)


def _cost(x, u, d):
    e = x - d.x_goal
    Qs = [d.Q] * (len(x) - 1) + [d.QN]
    return sum(float(e[k] @ Qs[k] @ e[k]) for k in range(len(x))) + float(
        np.einsum("ka,ab,kb->", u, d.R, u))


def _miqp(plant, x0, N=None):
    """Eq. (15) without a time limit (certified), at a horizon Gurobi's pip licence takes."""
    d = plant.defaults
    return solve_miqp_mpc(plant.lcs(x0, np.zeros(plant.n_u)), d.Q, d.R, N=N or d.N, x0=x0,
                          QN=d.QN, x_des=d.x_goal, x_lower=d.x_lower, x_upper=d.x_upper,
                          u_lower=d.u_lower, u_upper=d.u_upper)


@pytest.mark.parametrize("name, x0", [
    ("cartpole-softwalls", None),                         # paper start: no wall contact
    ("cartpole-softwalls", np.array([0.2, 0.1, 1.0, 0.5])),  # heads into the right wall
])
def test_resimulated_cost_matches_a_manual_lcs_rollout(name, x0):
    plant = load_plant(name)
    d = plant.defaults
    x0 = d.x0 if x0 is None else x0
    ctrl = build_controller(plant, C3Options(projection="lcp", admm_iter=d.admm_iter,
                                             rho=d.rho, rho_scale=d.rho_scale))
    res = ctrl.solve(x0)
    assert res.status is C3Status.SOLVED
    x_ref = _manual_rollout(plant.lcs(), x0, res.u)
    np.testing.assert_allclose(res.resimulated_x, x_ref, rtol=1e-9, atol=1e-12)
    assert res.resimulated_cost == pytest.approx(_cost(x_ref, res.u, d), rel=1e-9)


@pytest.mark.parametrize("name, N", [("cartpole-softwalls", 10), ("pivoting", 5)])
def test_no_c3_plan_beats_the_certified_miqp_optimum_once_resimulated(name, N):
    """MIQP optimum (certified, gap ≤ 1e-6) ≤ C3's resimulated cost; the MIQP's own plan is
    exactly complementary, so resimulating it changes nothing."""
    plant = load_plant(name)
    d = plant.defaults
    x0 = d.x0 if name != "cartpole-softwalls" else np.array([0.2, 0.1, 1.0, 0.5])
    ref = _miqp(plant, x0, N)
    assert ref.status is C3Status.SOLVED and ref.extras["mip_gap"] <= 1e-5
    np.testing.assert_allclose(ref.resimulated_x, ref.x, atol=1e-8)
    assert ref.resimulated_cost == pytest.approx(ref.cost, rel=1e-9)
    # the convex QP projection needs F ⪰ 0 (cart-pole's F is diagonal; pivoting's is not)
    for proj in ("lcp", "miqp", "c3plus") + (("qp",) if name == "cartpole-softwalls" else ()):
        ctrl = build_controller(plant, C3Options(projection=proj, admm_iter=d.admm_iter,
                                                 rho=d.rho, rho_scale=d.rho_scale), N=N, x0=x0)
        res = ctrl.solve(x0)
        assert res.ok, (proj, res.message)
        assert np.isfinite(res.resimulated_cost)
        assert res.resimulated_cost >= ref.cost * (1 - 1e-5), (proj, res.resimulated_cost,
                                                                ref.cost)


def test_admm_plan_cost_can_undercut_the_optimum_the_resimulated_cost_cannot():
    """Finger gaiting at the paper's start: the ADMM objective of C3's plan is below the MIQP
    optimum (its λ are not complementary with its states), its resimulated cost is not."""
    plant = load_plant("finger-gaiting")
    d = plant.defaults
    ref = _miqp(plant, d.x0)
    assert ref.status is C3Status.SOLVED
    res = build_controller(plant, C3Options(projection="miqp", admm_iter=d.admm_iter,
                                            rho=d.rho, rho_scale=d.rho_scale)).solve(d.x0)
    assert res.cost < ref.cost  # the naive comparison: "C3 beats the global optimum"
    assert res.resimulated_cost >= ref.cost * (1 - 1e-6)


def test_failed_solve_reports_no_resimulated_cost():
    plant = load_plant("cartpole-softwalls")
    d = plant.defaults
    ctrl = build_controller(plant, C3Options(projection="lcp"))
    res = ctrl.solve(np.array([1e300, 0, 0, 0]))
    assert not res.ok
    assert res.resimulated_cost == float("inf") and res.resimulated_x is None


def test_miqp_warm_started_from_c3_at_the_same_state_reaches_the_same_certified_optimum():
    plant = load_plant("cartpole-softwalls")
    d = plant.defaults
    x0 = np.array([0.2, 0.1, 1.0, 0.5])
    cold = _miqp(plant, x0)
    c3 = build_controller(plant).solve(x0)
    warm = solve_miqp_mpc(plant.lcs(), d.Q, d.R, N=d.N, x0=x0, QN=d.QN, x_des=d.x_goal,
                          warm_start=c3, warm_start_shift=0)
    assert warm.extras["warm_start_used"] and not cold.extras["warm_start_used"]
    assert warm.status is C3Status.SOLVED
    assert warm.cost == pytest.approx(cold.cost, rel=1e-6)
    # the certified gap of the returned plan against the solver's bound
    assert 0.0 <= warm.extras["optimality_gap"] <= 1e-5
    bound = warm.extras["objective_bound"]
    assert warm.extras["optimality_gap"] == pytest.approx(
        max(0.0, (warm.cost - bound) / warm.cost), abs=1e-12)


@pytest.mark.parametrize("shift", [2, -1, True, 0.5])
def test_warm_start_shift_must_be_0_or_1(shift):
    plant = load_plant("cartpole-softwalls")
    d = plant.defaults
    with pytest.raises(ValueError, match="warm_start_shift"):
        solve_miqp_mpc(plant.lcs(), d.Q, d.R, N=3, x0=d.x0, warm_start_shift=shift)


def test_resimulate_plan_off_skips_the_rollout_and_changes_nothing_else():
    plant = load_plant("cartpole-softwalls")
    d = plant.defaults
    x0 = np.array([0.2, 0.1, 1.0, 0.5])
    on = build_controller(plant).solve(x0)
    opts = C3Options(projection=d.projection, admm_iter=d.admm_iter, rho=d.rho,
                     rho_scale=d.rho_scale, resimulate_plan=False)
    off = build_controller(plant, opts).solve(x0)
    assert off.resimulated_cost == float("inf") and off.resimulated_x is None
    assert "resimulate" not in off.timings and "resimulate" in on.timings
    np.testing.assert_array_equal(off.u, on.u)
    assert off.cost == on.cost
    with pytest.raises(TypeError, match="resimulate_plan"):
        C3Options(resimulate_plan="yes")


def test_warm_start_modes_are_those_of_the_plans_inputs_simulated_through_the_lcs():
    """The MIP start of a C3 plan: the modes its inputs produce on the LCS (checked against a
    manual rollout), not the modes of its own, possibly non-complementary, λ."""
    from c3mpc.miqp_mpc import _validate, _warm_start_modes

    plant = load_plant("pivoting")
    d = plant.defaults
    N = 5
    lcs = plant.lcs(d.x0)
    res = build_controller(plant, N=N).solve(d.x0)
    data = _validate(lcs, d.Q, d.R, N, d.x0, d.QN, d.x_goal, 1000.0, None, None, d.u_lower,
                     None, None)
    s = _warm_start_modes(data, res, shift=0)
    x = d.x0.copy()
    for k in range(N):
        q = lcs.E @ x + lcs.H @ res.u[k] + lcs.c
        lam = solve_lcp(lcs.F, q).z
        np.testing.assert_array_equal(s[k], (lam <= q + lcs.F @ lam).astype(float))
        x = lcs.A @ x + lcs.B @ res.u[k] + lcs.D @ lam + lcs.d
