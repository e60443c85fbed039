"""The big-M MIQP MPC baseline (seed 003 eq. 15): c3mpc.miqp_mpc.solve_miqp_mpc."""

from __future__ import annotations

import functools
import itertools
import sys

import numpy as np
import pytest

from c3mpc import miqp_mpc
from c3mpc.errors import (C3TypeError, C3ValueError, GurobiLicenseError,
                          SolverUnavailableError)
from c3mpc.miqp_mpc import solve_miqp_mpc
from c3mpc.result import C3Result, C3Status
from lcs import LCS
from plants import load_plant


def _gurobi_ok() -> bool:
    try:
        import gurobipy as gp

        with gp.Env(params={"OutputFlag": 0}):
            return True
    except Exception:  # noqa: BLE001 - not installed or no licence
        return False


def _scip_ok() -> bool:
    try:
        import pyscipopt  # noqa: F401

        return True
    except ImportError:
        return False


needs_gurobi = pytest.mark.skipif(not _gurobi_ok(), reason="gurobipy with a licence needed")
needs_scip = pytest.mark.skipif(not _scip_ok(), reason="pyscipopt needed")

CARTPOLE_X0 = np.array([0.1, -0.5, 0.5, -0.4])  # the authors' test start: the pole hits a wall


@pytest.fixture(scope="module")
def cartpole():
    plant = load_plant("cartpole-softwalls")
    return plant.lcs(), plant.defaults


@pytest.fixture(scope="module")
def finger():
    plant = load_plant("finger-gaiting")
    return plant.lcs(), plant.defaults


def fg_kwargs(dd) -> dict:
    return dict(x_lower=dd.x_lower, x_upper=dd.x_upper, u_lower=dd.u_lower,
                u_upper=dd.u_upper)


def eq15_cost(x, u, Q, R, QN, x_des=None) -> float:
    """Eq. (15)'s objective computed independently of the module."""
    e = x - (0.0 if x_des is None else x_des)
    c = sum(e[k] @ Q @ e[k] + u[k] @ R @ u[k] for k in range(u.shape[0]))
    return float(c + e[-1] @ QN @ e[-1])


def assert_valid_plan(lcs: LCS, r: C3Result, x0, tol: float = 1e-6) -> None:
    """x0, dynamics and complementarity of a returned plan (λ in physical units)."""
    lam = r.lam / lcs.lambda_scale
    assert r.x.shape == (r.u.shape[0] + 1, lcs.n_x)
    assert np.allclose(r.x[0], x0, atol=0, rtol=0)
    dyn = lcs.dynamics_residual(r.x, r.u, lam)
    assert np.abs(dyn).max() <= tol * max(1.0, np.abs(r.x).max())
    comp = lcs.complementarity_residual(r.x[:-1], r.u, lam)
    assert comp.max() <= tol
    assert r.complementarity_violation <= tol
    assert np.isclose(r.complementarity_violation, comp.max(), rtol=1e-6, atol=1e-12)


# ====================================================================== cart-pole
@needs_gurobi
@needs_scip
def test_cartpole_gurobi_and_scip_agree(cartpole):
    lcs, dd = cartpole
    rg = solve_miqp_mpc(lcs, dd.Q, dd.R, 10, CARTPOLE_X0, dd.QN, solver="gurobi")
    rs = solve_miqp_mpc(lcs, dd.Q, dd.R, 10, CARTPOLE_X0, dd.QN, solver="scip",
                        eliminate_states=False)
    for r, name in ((rg, "gurobi"), (rs, "scip")):
        assert r.status == C3Status.SOLVED and r.ok
        assert r.solver == name
        assert r.delta is None and r.w is None
        assert r.x.shape == (11, 4) and r.u.shape == (10, 1) and r.lam.shape == (10, 2)
        assert_valid_plan(lcs, r, CARTPOLE_X0)
        assert np.isclose(r.cost, eq15_cost(r.x, r.u, dd.Q, dd.R, dd.QN), rtol=1e-12)
        assert {"build", "solve"} <= set(r.timings)
        assert r.solve_time >= r.timings["solve"] > 0
        assert r.extras["mip_gap"] <= 1e-6 + 1e-12
        assert isinstance(r.extras["solver_status"], str)
        assert r.iterations >= 0
    assert rg.lam.max() > 1e-3  # the plan uses the wall
    assert rs.cost == pytest.approx(rg.cost, rel=1e-5)
    assert np.allclose(rs.u, rg.u, atol=1e-4 * max(1.0, np.abs(rg.u).max()))


@needs_gurobi
def test_eliminated_and_explicit_formulations_agree(cartpole, finger):
    lcs, dd = cartpole
    re = solve_miqp_mpc(lcs, dd.Q, dd.R, 10, CARTPOLE_X0, dd.QN, eliminate_states=True)
    rx = solve_miqp_mpc(lcs, dd.Q, dd.R, 10, CARTPOLE_X0, dd.QN, eliminate_states=False)
    assert re.extras["model_size"]["formulation"] == "eliminated"
    assert rx.extras["model_size"]["formulation"] == "explicit"
    assert re.extras["model_size"]["variables"] == 10 * (1 + 2 * 2)
    assert rx.extras["model_size"]["variables"] == 10 * (4 + 1 + 2 * 2)
    assert re.status == rx.status == C3Status.SOLVED
    assert re.cost == pytest.approx(rx.cost, rel=1e-6)
    # finger gaiting with its bounds, at N=9 (the explicit form's largest size in the licence)
    lcs, dd = finger
    kw = fg_kwargs(dd)
    fe = solve_miqp_mpc(lcs, dd.Q, dd.R, 9, dd.x0, dd.QN, solver="gurobi", **kw)
    fx = solve_miqp_mpc(lcs, dd.Q, dd.R, 9, dd.x0, dd.QN, solver="gurobi",
                        eliminate_states=False, **kw)
    assert fe.status == fx.status == C3Status.SOLVED
    assert fe.cost == pytest.approx(fx.cost, rel=1e-6)
    assert_valid_plan(lcs, fx, dd.x0)


# ====================================================================== brute force
def _tiny_lcs(seed: int) -> tuple[LCS, np.ndarray]:
    """A 1-D mass between two soft walls (seed 0) or a random small LCS with a P-matrix F."""
    if seed == 0:
        h = 0.1
        lcs = LCS(A=[[1, h], [0, 1]], B=[[0], [h]], D=[[0, 0], [h, -h]], d=[0, 0],
                  E=[[1, 0], [-1, 0]], F=np.diag([0.1, 0.1]), H=[[0], [0]], c=[0.5, 0.5],
                  dt=h)
        return lcs, np.array([0.3, 3.0])  # moving fast towards the right wall
    rng = np.random.default_rng(seed)
    n_x, n_u, n_l = 3, 2, 2
    A = np.eye(n_x) + 0.1 * rng.standard_normal((n_x, n_x))
    F = np.eye(n_l) + 0.2 * rng.standard_normal((n_l, n_l))
    F = F @ F.T + 0.1 * np.eye(n_l)  # positive definite: a unique LCP solution
    lcs = LCS(A=A, B=0.3 * rng.standard_normal((n_x, n_u)),
              D=0.3 * rng.standard_normal((n_x, n_l)), d=0.05 * rng.standard_normal(n_x),
              E=rng.standard_normal((n_l, n_x)), F=F, H=0.5 * rng.standard_normal((n_l, n_u)),
              c=0.3 * rng.standard_normal(n_l), dt=0.1)
    return lcs, rng.standard_normal(n_x)


@functools.lru_cache(maxsize=None)
def _brute_force_case(seed: int, N: int) -> float:
    lcs, x0 = _tiny_lcs(seed)
    Q, R, QN, x_des, M, u_lo, u_hi = _tiny_costs(lcs)
    return _brute_force(lcs, Q, R, QN, N, x0, M, u_lo, u_hi, x_des)


def _tiny_costs(lcs: LCS):
    Q = np.diag(np.linspace(1.0, 2.0, lcs.n_x))
    return Q, 0.1 * np.eye(lcs.n_u), 3 * Q, 0.2 * np.ones(lcs.n_x), 50.0, -2.0, 2.0


def _brute_force(lcs: LCS, Q, R, QN, N, x0, M, u_lo, u_hi, x_des) -> float:
    """min over all 2^(N n_lambda) mode sequences of the convex QP of that mode."""
    cp = pytest.importorskip("cvxpy")
    n_x, n_u, n_l = lcs.n_x, lcs.n_u, lcs.n_lambda
    k0 = lcs.knot(0)
    x = cp.Variable((N + 1, n_x))
    u = cp.Variable((N, n_u))
    lam = cp.Variable((N, n_l))
    base = [x[0] == x0, u >= u_lo, u <= u_hi]
    for k in range(N):
        base.append(x[k + 1] == k0.A @ x[k] + k0.B @ u[k] + k0.D @ lam[k] + k0.d)
    w = [k0.E @ x[k] + k0.F @ lam[k] + k0.H @ u[k] + k0.c for k in range(N)]
    cost = sum(cp.quad_form(x[k] - x_des, Q) + cp.quad_form(u[k], R) for k in range(N))
    cost = cost + cp.quad_form(x[N] - x_des, QN)
    best = np.inf
    for modes in itertools.product((0, 1), repeat=N * n_l):
        s = np.array(modes).reshape(N, n_l)
        cons = list(base)
        for k in range(N):
            for i in range(n_l):
                if s[k, i]:  # λ = 0, 0 <= w <= M
                    cons += [lam[k, i] == 0, w[k][i] >= 0, w[k][i] <= M]
                else:  # w = 0, 0 <= λ <= M
                    cons += [w[k][i] == 0, lam[k, i] >= 0, lam[k, i] <= M]
        prob = cp.Problem(cp.Minimize(cost), cons)
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10,
                   tol_feas=1e-10)
        if prob.status == cp.OPTIMAL:
            best = min(best, prob.value)
    return best


@pytest.mark.parametrize("seed,N", [(0, 3), (1, 3), (4, 3), (7, 3), (8, 2)])
@pytest.mark.parametrize("solver", [
    pytest.param("gurobi", marks=needs_gurobi), pytest.param("scip", marks=needs_scip)])
def test_matches_brute_force_enumeration(seed, N, solver):
    """The MIQP optimum equals the best of the 2^(N n_lambda) convex QPs, one per mode."""
    lcs, x0 = _tiny_lcs(seed)
    Q, R, QN, x_des, M, u_lo, u_hi = _tiny_costs(lcs)
    r = solve_miqp_mpc(lcs, Q, R, N, x0, QN, x_des=x_des, M=M, solver=solver,
                       u_lower=u_lo, u_upper=u_hi)
    best = _brute_force_case(seed, N)
    assert np.isfinite(best)
    assert r.status == C3Status.SOLVED and r.solver == solver
    assert r.cost == pytest.approx(best, rel=1e-6, abs=1e-9)
    assert_valid_plan(lcs, r, x0)
    assert r.cost == pytest.approx(eq15_cost(r.x, r.u, Q, R, QN, x_des), rel=1e-12)
    assert r.lam.max() > 1e-2  # contact is part of the optimum: the modes matter


# ====================================================================== finger gaiting, licence
@needs_gurobi
def test_finger_gaiting_n10_gurobi(finger):
    lcs, dd = finger
    r = solve_miqp_mpc(lcs, dd.Q, dd.R, 10, dd.x0, dd.QN, x_des=dd.x_goal, solver="gurobi",
                       **fg_kwargs(dd))
    assert r.status == C3Status.SOLVED and r.solver == "gurobi"
    assert r.extras["model_size"] == {"variables": 160, "binaries": 60, "constraints": 220,
                                      "quadratic_objective": True,
                                      "formulation": "eliminated"}
    assert r.extras["polished"] is True
    assert_valid_plan(lcs, r, dd.x0)
    assert np.all(r.x[1:, 2] >= 1 - 1e-7) and np.all(r.x[1:, 2] <= 3 + 1e-7)
    assert np.all(r.x[1:, 4] >= 3 - 1e-7) and np.all(r.x[1:, 4] <= 5 + 1e-7)
    assert np.all(r.u[:, 2:] >= -1e-7)
    assert r.cost == pytest.approx(eq15_cost(r.x, r.u, dd.Q, dd.R, dd.QN), rel=1e-12)
    assert r.u[0, 2:].max() > 0  # squeezes the object to lift it


@needs_gurobi
def test_beyond_licence_gurobi_raises(finger):
    lcs, dd = finger
    with pytest.raises(GurobiLicenseError) as e:
        solve_miqp_mpc(lcs, dd.Q, dd.R, 13, dd.x0, dd.QN, solver="gurobi", **fg_kwargs(dd))
    msg = str(e.value)
    assert "200" in msg and "208 variables" in msg and "scip" in msg and "N=12" in msg
    assert e.value.model_size["variables"] == 208
    with pytest.raises(GurobiLicenseError, match="eliminate_states=True"):
        solve_miqp_mpc(lcs, dd.Q, dd.R, 10, dd.x0, dd.QN, solver="gurobi",
                       eliminate_states=False, **fg_kwargs(dd))


@needs_gurobi
@needs_scip
def test_beyond_licence_auto_falls_back_to_scip(finger):
    """N=13 (208 variables): Gurobi refuses, SCIP solves. A time limit keeps the test short;
    the receding-horizon warm start (the N=12 plan from the previous state, shifted) gives
    SCIP a mode sequence to complete into an incumbent at once."""
    lcs, dd = finger
    kw = fg_kwargs(dd)
    r12 = solve_miqp_mpc(lcs, dd.Q, dd.R, 12, dd.x0, dd.QN, solver="auto", **kw)
    assert r12.solver == "gurobi" and r12.status == C3Status.SOLVED
    assert "fallback_reason" not in r12.extras
    x1 = r12.x[1]
    r = solve_miqp_mpc(lcs, dd.Q, dd.R, 13, x1, dd.QN, solver="auto", time_limit=5.0,
                       warm_start=r12, **kw)
    assert r.solver == "scip"
    assert "size-limited" in r.extras["fallback_reason"]
    assert "gurobi_attempt" in r.timings
    assert r.extras["warm_start_used"] is True
    assert r.status in (C3Status.SOLVED, C3Status.TIME_LIMIT) and r.ok
    assert r.extras["polished"] is True
    assert_valid_plan(lcs, r, x1)


@pytest.mark.slow
@needs_scip
def test_finger_gaiting_beyond_licence_scip_to_optimality(finger):
    lcs, dd = finger
    r = solve_miqp_mpc(lcs, dd.Q, dd.R, 13, dd.x0, dd.QN, solver="auto", **fg_kwargs(dd))
    assert r.solver == "scip" and r.status == C3Status.SOLVED
    assert_valid_plan(lcs, r, dd.x0)


# ====================================================================== bad input
@pytest.mark.parametrize("kwargs,arg", [
    (dict(Q=np.eye(3)), "Q"),
    (dict(Q=np.diag([1.0, -1, 1, 1])), "Q"),
    (dict(Q=np.array([[1.0, 2, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])), "Q"),
    (dict(Q=[np.eye(4)] * 3), "Q"),
    (dict(R=np.zeros((1, 1))), "R"),
    (dict(R=np.eye(2)), "R"),
    (dict(QN=-np.eye(4)), "QN"),
    (dict(x0=np.array([0.1, np.nan, 0, 0])), "x0"),
    (dict(x0=np.zeros(3)), "x0"),
    (dict(x0=None), "x0"),
    (dict(M=0.0), "M"),
    (dict(M=-5.0), "M"),
    (dict(M=np.inf), "M"),
    (dict(N=0), "N"),
    (dict(N=2.5), "N"),
    (dict(x_des=np.zeros(5)), "x_des"),
    (dict(x_lower=np.zeros(4), x_upper=-np.ones(4)), "x_lower"),
    (dict(u_lower=[np.nan]), "u_lower"),
    (dict(lam_upper=-1.0), "lam_upper"),
    (dict(solver="cplex"), "solver"),
    (dict(time_limit=-1.0), "time_limit"),
    (dict(mip_gap=-0.1), "mip_gap"),
    (dict(threads=0), "threads"),
])
def test_bad_input_raises_c3valueerror_naming_the_argument(cartpole, kwargs, arg):
    lcs, dd = cartpole
    args = dict(Q=dd.Q, R=dd.R, N=5, x0=CARTPOLE_X0, QN=dd.QN)
    args.update(kwargs)
    with pytest.raises(C3ValueError) as e:
        solve_miqp_mpc(lcs, **args)
    assert arg in str(e.value)


def test_bad_types_raise_c3typeerror(cartpole):
    lcs, dd = cartpole
    with pytest.raises(C3TypeError, match="lcs"):
        solve_miqp_mpc("cartpole", dd.Q, dd.R, 5, CARTPOLE_X0)
    with pytest.raises(C3TypeError, match="warm_start"):
        solve_miqp_mpc(lcs, dd.Q, dd.R, 5, CARTPOLE_X0, warm_start=np.zeros(3))


def test_time_varying_horizon_too_long(cartpole):
    lcs, dd = cartpole
    with pytest.raises(C3ValueError, match="N=6"):
        solve_miqp_mpc(lcs.as_time_varying(5), dd.Q, dd.R, 6, CARTPOLE_X0)


# ====================================================================== infeasible
@pytest.mark.parametrize("solver,eliminate", [
    pytest.param("gurobi", True, marks=needs_gurobi),
    pytest.param("gurobi", False, marks=needs_gurobi),
    pytest.param("scip", True, marks=needs_scip),
    pytest.param("scip", False, marks=needs_scip),
])
def test_infeasible_returns_nan_not_zeros(cartpole, solver, eliminate):
    """x_1's cart position is x0[0] + dt x0[2] = 0.105 whatever the input: x_lower = 1 there
    contradicts the dynamics (the eliminated form proves it while building, the explicit form
    leaves it to the solver)."""
    lcs, dd = cartpole
    x_lower = np.array([[1.0, -np.inf, -np.inf, -np.inf]] + [[-np.inf] * 4] * 4)
    r = solve_miqp_mpc(lcs, dd.Q, dd.R, 5, CARTPOLE_X0, dd.QN, solver=solver,
                       eliminate_states=eliminate, x_lower=x_lower)
    assert r.status == C3Status.INFEASIBLE and not r.ok
    assert r.solver == solver
    for a in (r.x, r.u, r.lam):
        assert np.all(np.isnan(a))
    assert r.x.shape == (6, 4) and r.u.shape == (5, 1) and r.lam.shape == (5, 2)
    assert np.isnan(r.cost) and not r.fallback
    assert "infeasible" in r.message


@needs_gurobi
def test_infeasible_through_inputs_and_contacts(cartpole):
    """The cart cannot reach x >= 0.3 at knot 3 with |u| <= 0.01: the solver proves it."""
    lcs, dd = cartpole
    x_lower = np.full((3, 4), -np.inf)
    x_lower[2, 0] = 0.3
    r = solve_miqp_mpc(lcs, dd.Q, dd.R, 3, CARTPOLE_X0, dd.QN, solver="gurobi",
                       x_lower=x_lower, u_lower=-0.01, u_upper=0.01)
    assert r.status == C3Status.INFEASIBLE and np.all(np.isnan(r.u))
    assert r.extras["solver_status"] in ("INFEASIBLE", "INF_OR_UNBD")


def test_time_limit_without_incumbent_is_failed_with_nan(cartpole, monkeypatch):
    lcs, dd = cartpole

    def no_incumbent(mdl, time_limit, *args):
        return miqp_mpc._Raw("time_limit", "TIME_LIMIT", None, float("nan"), 0.0,
                             float("inf"), 7, time_limit)

    monkeypatch.setattr(miqp_mpc, "_solve_scip", lambda mdl, tl, gap, s: no_incumbent(mdl, tl))
    r = solve_miqp_mpc(lcs, dd.Q, dd.R, 5, CARTPOLE_X0, solver="scip", time_limit=0.5)
    assert r.status == C3Status.FAILED and not r.ok and not r.fallback
    assert np.all(np.isnan(r.u)) and np.all(np.isnan(r.x)) and np.all(np.isnan(r.lam))
    assert "time limit" in r.message and r.iterations == 7
    assert r.extras["solver_status"] == "TIME_LIMIT"


# ====================================================================== options
@needs_gurobi
def test_warm_start_time_varying_scaled_and_per_knot_costs(cartpole):
    lcs, dd = cartpole
    N = 8
    r0 = solve_miqp_mpc(lcs, dd.Q, dd.R, N, CARTPOLE_X0, dd.QN)
    x1 = r0.x[1]
    cold = solve_miqp_mpc(lcs, dd.Q, dd.R, N, x1, dd.QN)
    warm = solve_miqp_mpc(lcs, dd.Q, dd.R, N, x1, dd.QN, warm_start=r0)
    assert warm.extras["warm_start_used"] and not cold.extras["warm_start_used"]
    assert warm.cost == pytest.approx(cold.cost, rel=1e-8)
    # a time-varying copy with per-knot Q/R lists and per-knot x_des gives the same plan
    tv = solve_miqp_mpc(lcs.as_time_varying(N), [dd.Q] * N, np.stack([dd.R] * N), N, x1,
                        dd.QN, x_des=np.zeros((N + 1, 4)))
    assert tv.cost == pytest.approx(cold.cost, rel=1e-8)
    # the lambda-scaled LCS: same physical plan, λ returned in physical units
    sc = lcs.scaled()
    assert sc.lambda_scale != 1.0
    rs = solve_miqp_mpc(sc, dd.Q, dd.R, N, x1, dd.QN)
    assert rs.cost == pytest.approx(cold.cost, rel=1e-8)
    assert np.allclose(rs.lam, cold.lam, atol=1e-6 * max(1.0, np.abs(cold.lam).max()))
    assert_valid_plan(sc, rs, x1)
    # a NaN plan (failed solve) as warm start is ignored
    nan_plan = C3Result(C3Status.FAILED, np.full((N + 1, 4), np.nan), np.full((N, 1), np.nan),
                        np.full((N, 2), np.nan), None, None, 0, 0.0)
    r = solve_miqp_mpc(lcs, dd.Q, dd.R, N, x1, dd.QN, warm_start=nan_plan)
    assert not r.extras["warm_start_used"] and r.cost == pytest.approx(cold.cost, rel=1e-8)


@needs_gurobi
def test_bounds_and_x_des_are_respected(cartpole):
    lcs, dd = cartpole
    x_des = np.array([0.05, 0.0, 0.0, 0.0])
    r = solve_miqp_mpc(lcs, dd.Q, dd.R, 6, CARTPOLE_X0, dd.QN, x_des=x_des, u_lower=-3.0,
                       u_upper=3.0, lam_upper=30.0, threads=1, mip_gap=0.0)
    assert r.status == C3Status.SOLVED
    assert np.all(np.abs(r.u) <= 3.0 + 1e-9) and np.all(r.lam <= 30.0 + 1e-9)
    assert r.cost == pytest.approx(eq15_cost(r.x, r.u, dd.Q, dd.R, dd.QN, x_des), rel=1e-12)
    free = solve_miqp_mpc(lcs, dd.Q, dd.R, 6, CARTPOLE_X0, dd.QN, x_des=x_des)
    assert free.cost <= r.cost * (1 + 1e-9)


@needs_scip
def test_auto_without_gurobipy_uses_scip(monkeypatch):
    lcs, x0 = _tiny_lcs(0)
    Q, R, QN, x_des, M, u_lo, u_hi = _tiny_costs(lcs)
    monkeypatch.setitem(sys.modules, "gurobipy", None)  # import gurobipy -> ImportError
    r = solve_miqp_mpc(lcs, Q, R, 3, x0, QN, x_des=x_des, M=M, u_lower=u_lo, u_upper=u_hi)
    assert r.solver == "scip" and r.status == C3Status.SOLVED
    assert "gurobipy is not installed" in r.extras["fallback_reason"]
    with pytest.raises(SolverUnavailableError, match="gurobipy"):
        solve_miqp_mpc(lcs, Q, R, 3, x0, QN, solver="gurobi")
