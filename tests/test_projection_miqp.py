"""Tests of the MIQP projections: the exact compiled branch and bound (``miqp``) and Gurobi
(``miqp-gurobi``).

Every result is checked independently of the solvers' bookkeeping: objective values are
recomputed here as ``(delta - v)^T U (delta - v)`` and complementarity as
``max_i |min(lambda_i, s_i)|`` with ``s = E x + F lambda + H u + c`` (plus the negative parts).
References: Gurobi with tight tolerances (the default ``IntFeasTol`` 1e-5 times M = 1000 would
allow complementarity violations of 1e-2), the brute-force enumeration
:func:`c3mpc.projections.miqp_exact.reference_projection` and the node-QP reference
:func:`c3mpc.projections.miqp_exact.reference_node_qp`. All randomness is seeded.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from c3mpc.errors import C3ValueError, GurobiLicenseError, SolverUnavailableError
from c3mpc.projections.base import ProjectionData, ProjectionStatus
from c3mpc.projections.miqp_exact import (
    ExactMIQPProjection,
    reference_node_qp,
    reference_projection,
    solve_node_qp,
)
from c3mpc.projections.miqp_gurobi import GurobiMIQPProjection  # imports gurobipy lazily
from plants import load_plant

needs_gurobi = pytest.mark.skipif(importlib.util.find_spec("gurobipy") is None,
                                  reason="gurobipy is not installed")

#: Gurobi parameters for reference solves: tight gap and tolerances.
TIGHT = {"MIPGap": 1e-10, "MIPGapAbs": 1e-12, "IntFeasTol": 1e-9, "FeasibilityTol": 1e-9,
         "OptimalityTol": 1e-9}
OBJ_RTOL = 1e-6
COMP_TOL = 1e-8


# ----------------------------------------------------------------------------- helpers
def objective(delta: np.ndarray, v: np.ndarray, U: np.ndarray) -> np.ndarray:
    """(N,) values (delta_k - v_k)^T U_k (delta_k - v_k)."""
    d = delta - v
    return np.einsum("ki,kij,kj->k", d, U, d)


def complementarity(delta: np.ndarray, data: ProjectionData) -> np.ndarray:
    """(N,) max_i |min(lambda_i, s_i)| plus negative parts of lambda and s."""
    nx, m = data.n_x, data.n_lambda
    x, lam, u = delta[:, :nx], delta[:, nx:nx + m], delta[:, nx + m:]
    s = (np.einsum("kij,kj->ki", data.E, x) + np.einsum("kij,kj->ki", data.F, lam)
         + np.einsum("kij,kj->ki", data.H, u) + data.c)
    viol = np.abs(np.minimum(lam, s)).max(axis=1)
    neg = np.maximum(0.0, -np.minimum(lam.min(axis=1), s.min(axis=1)))
    return np.maximum(viol, neg)


def random_data(rng: np.random.Generator, N: int, m: int, nx: int, nu: int, f_kind: str,
                u_kind: str, sparse: bool = False) -> ProjectionData:
    """Random projection data: F a P-matrix, PSD (rank deficient + skew), general or tiny."""
    mask = (lambda shape: rng.random(shape) < 0.6) if sparse else (lambda shape: 1.0)
    E = rng.standard_normal((N, m, nx)) * mask((N, m, nx))
    H = rng.standard_normal((N, m, nu)) * mask((N, m, nu))
    c = rng.standard_normal((N, m))
    if f_kind == "P":
        A = rng.standard_normal((N, m, m))
        F = A @ A.transpose(0, 2, 1) / m + 0.05 * np.eye(m)
    elif f_kind == "psd":
        A = rng.standard_normal((N, m, max(1, m // 3)))
        S = rng.standard_normal((N, m, m))
        F = A @ A.transpose(0, 2, 1) + 0.5 * (S - S.transpose(0, 2, 1))
    elif f_kind == "general":
        F = rng.standard_normal((N, m, m))
    else:  # small entries: many modes nearly tied
        F = 0.05 * rng.standard_normal((N, m, m))
    nz = nx + m + nu
    if u_kind == "diag":
        U = np.stack([np.diag(rng.uniform(0.1, 100.0, nz)) for _ in range(N)])
    elif u_kind == "paper":  # the paper's scaling: 1000 on x, 1 on lambda and u
        U = np.tile(np.diag(np.r_[np.full(nx, 1000.0), np.ones(m + nu)]), (N, 1, 1))
    else:  # full PSD
        B = rng.standard_normal((N, nz, nz))
        U = B @ B.transpose(0, 2, 1) / nz + 0.05 * np.eye(nz)
    return ProjectionData(E, F, H, c, U)


def random_v(rng: np.random.Generator, data: ProjectionData) -> np.ndarray:
    nx, m, nu = data.n_x, data.n_lambda, data.n_u
    scale = np.r_[np.full(nx, 0.5), np.full(m, 2.0), np.ones(nu)]
    return rng.standard_normal((data.N, nx + m + nu)) * scale


def assert_agree(ours, ref, v, data, *, rtol=OBJ_RTOL, comp_tol=COMP_TOL, who="gurobi"):
    """Same statuses (optimal / infeasible), objectives to rtol, our complementarity."""
    ok_ours = ours.status == ProjectionStatus.OPTIMAL
    ok_ref = ref.status == ProjectionStatus.OPTIMAL
    np.testing.assert_array_equal(ok_ours, ok_ref, err_msg=f"status vs {who}")
    inf = ours.status == ProjectionStatus.INFEASIBLE
    np.testing.assert_array_equal(inf, ref.status == ProjectionStatus.INFEASIBLE)
    assert np.all(np.isnan(ours.delta[inf]))
    f_ours = objective(ours.delta[ok_ours], v[ok_ours], data.U[ok_ours])
    f_ref = objective(ref.delta[ok_ref], v[ok_ref], data.U[ok_ref])
    np.testing.assert_allclose(f_ours, f_ref, rtol=rtol, atol=rtol * 1e-3,
                               err_msg=f"objective vs {who}")
    comp = complementarity(ours.delta[ok_ours], _sub(data, ok_ours))
    assert np.all(comp <= comp_tol), comp.max()
    return int(ok_ours.sum()), int(inf.sum())


def _sub(data: ProjectionData, idx) -> ProjectionData:
    return ProjectionData(data.E[idx], data.F[idx], data.H[idx], data.c[idx], data.U[idx])


def plant_data(name: str, rng: np.random.Generator, N: int = 10,
               U: np.ndarray | None = None) -> tuple[ProjectionData, np.ndarray]:
    """The plant's LCS along a rollout from its start state (re-linearised per knot for the
    state-dependent pivoting model) and a noisy v around the rollout."""
    p = load_plant(name)
    x = np.asarray(p.defaults.x0, dtype=float)
    xs, lams, us, Es, Fs, Hs, cs = [], [], [], [], [], [], []
    for _ in range(N):
        lcs = p.lcs(x) if p.state_dependent else p.lcs()
        u = 0.5 * rng.standard_normal(p.n_u)
        sol = lcs.solve_lambda(x, u)
        lam = sol.z if sol.found else np.zeros(p.n_lambda)
        for lst, val in ((xs, x), (lams, lam), (us, u), (Es, lcs.E), (Fs, lcs.F), (Hs, lcs.H),
                         (cs, lcs.c)):
            lst.append(val)
        x = lcs.A @ x + lcs.B @ u + lcs.D @ lam + lcs.d
    z = np.hstack([np.array(xs), np.array(lams), np.array(us)])
    Uk = np.asarray(p.defaults.U if U is None else U, dtype=float)
    data = ProjectionData(np.array(Es), np.array(Fs), np.array(Hs), np.array(cs),
                          np.tile(Uk, (N, 1, 1)))
    nx, m = p.n_x, p.n_lambda
    scale = np.full(z.shape[1], 0.2)
    scale[nx:nx + m] = 1.0
    v = z + rng.standard_normal(z.shape) * scale * (1.0 + np.abs(z))
    return data, v


# ----------------------------------------------------------------------------- exact vs Gurobi
@needs_gurobi
def test_exact_matches_gurobi_random_instances():
    """>= 200 knots: P-matrix, PSD/skew, general and tiny F; diagonal, paper-scaled and full
    PSD U; dense and sparse E, H (sparse ones exercise the elimination of unconstrained
    coordinates, also with a coupled full U)."""
    rng = np.random.default_rng(20260101)
    n_opt = n_inf = 0
    configs = [(f, u, sp) for f in ("P", "psd", "general", "tiny")
               for u in ("diag", "paper", "full") for sp in (False, True)]
    for i, (f_kind, u_kind, sparse) in enumerate(configs * 2):
        m = int(rng.integers(1, 11))
        nx = int(rng.integers(1, 11))
        nu = int(rng.integers(0, 5))
        data = random_data(rng, 5, m, nx, nu, f_kind, u_kind, sparse)
        v = random_v(rng, data)
        ours = ExactMIQPProjection().project(v, data)
        ref = GurobiMIQPProjection(params=TIGHT).project(v, data)
        a, b = assert_agree(ours, ref, v, data)
        n_opt += a
        n_inf += b
        assert np.all(ours.iterations >= 1)
    assert n_opt >= 200, n_opt


@needs_gurobi
@pytest.mark.parametrize("name", ["cartpole-softwalls", "finger-gaiting", "pivoting"])
def test_exact_matches_gurobi_paper_plants(name):
    """The paper's LCSs (finger gaiting: PSD F with zero rows; pivoting: indefinite F,
    re-linearised along the rollout) with the paper's U and with a random full PSD U."""
    rng = np.random.default_rng(7)
    exact = ExactMIQPProjection()
    gurobi = GurobiMIQPProjection(params=TIGHT)
    for trial in range(4):
        data, v = plant_data(name, rng)
        if trial == 3:  # full PSD weight on the same LCS
            nz = v.shape[1]
            B = rng.standard_normal((nz, nz))
            data = ProjectionData(data.E, data.F, data.H, data.c,
                                  np.tile(B @ B.T / nz + 0.1 * np.eye(nz), (data.N, 1, 1)))
        ours = exact.project(v, data, admm_iteration=trial)
        ref = gurobi.project(v, data, admm_iteration=trial)
        n_opt, _ = assert_agree(ours, ref, v, data)
        assert n_opt == data.N
        # the paper's U is exact here (cart-pole: zero weight on u, but H = 0)
        assert np.all(exact.regularization_used == 0.0)


# ----------------------------------------------------------------------------- references
def test_exact_matches_bruteforce_enumeration():
    """Small n_lambda (<= 6): the enumeration of all 3^n active-set choices (numpy KKT)."""
    rng = np.random.default_rng(11)
    count = 0
    for i in range(90):
        m = int(rng.integers(1, 7)) if i >= 10 else 6
        nx = int(rng.integers(1, 6))
        nu = int(rng.integers(0, 3))
        f_kind = ("P", "psd", "general", "tiny")[i % 4]
        data = random_data(rng, 1, m, nx, nu, f_kind, ("diag", "full")[i % 2], sparse=i % 3 == 0)
        v = random_v(rng, data)
        res = ExactMIQPProjection().project(v, data)
        f_ref, y_ref = reference_projection(v[0], data.E[0], data.F[0], data.H[0], data.c[0],
                                            data.U[0])
        if y_ref is None:
            assert res.status[0] == ProjectionStatus.INFEASIBLE
            continue
        assert res.status[0] == ProjectionStatus.OPTIMAL
        f = objective(res.delta, v, data.U)[0]
        assert abs(f - f_ref) <= OBJ_RTOL * max(abs(f_ref), 1e-3), (i, f, f_ref)
        assert complementarity(res.delta, data)[0] <= COMP_TOL
        count += 1
    assert count >= 60


def test_node_qp_kernel_matches_reference():
    """The compiled Goldfarb-Idnani node QP vs the active-set enumeration, with random
    equality masks (fixed pairs), dependent constraints (p > n) and infeasible nodes."""
    rng = np.random.default_rng(3)
    n_inf = 0
    for i in range(120):
        n = int(rng.integers(2, 8))
        p = int(rng.integers(1, 11))
        G = rng.standard_normal((n, p))
        if i % 5 == 0 and p > 1:  # an exactly dependent pair of constraints
            G[:, -1] = -2.0 * G[:, 0]
        h = rng.standard_normal(p)
        B = rng.standard_normal((n, n))
        U = B @ B.T + 0.1 * np.eye(n) if i % 2 else np.diag(rng.uniform(0.1, 10.0, n))
        v = rng.standard_normal(n)
        eq = rng.random(p) < 0.3
        out, val, y = solve_node_qp(U, v, G, h, eq)
        f_ref, y_ref = reference_node_qp(U, v, G, h, eq)
        if y_ref is None:
            assert out == 1, (i, val)
            n_inf += 1
            continue
        assert out == 0, (i, out)
        f = float((y - v) @ U @ (y - v))
        assert abs(val - f) <= 1e-8 * max(1.0, f)  # the kernel's value is |t|^2
        assert abs(f - f_ref) <= 1e-7 * max(1.0, f_ref), (i, f, f_ref)
        w = G.T @ y + h
        scale = max(1.0, np.abs(G.T @ v + h).max())
        assert np.all(np.abs(w[eq]) <= 1e-8 * scale)
        assert np.all(w[~eq] >= -1e-8 * scale)
    assert n_inf >= 3


# ----------------------------------------------------------------------------- infeasible
@needs_gurobi
def test_infeasible_instance_both():
    """F = -I, c < 0, E = H = 0: s = -lambda + c < 0 for every lambda >= 0."""
    N, m, nx, nu = 3, 4, 2, 1
    data = ProjectionData(np.zeros((N, m, nx)), -np.tile(np.eye(m), (N, 1, 1)),
                          np.zeros((N, m, nu)), -np.ones((N, m)),
                          np.tile(np.eye(nx + m + nu), (N, 1, 1)))
    v = np.random.default_rng(0).standard_normal((N, nx + m + nu))
    for proj in (ExactMIQPProjection(), GurobiMIQPProjection()):
        res = proj.project(v, data)
        assert np.all(res.status == ProjectionStatus.INFEASIBLE), proj.name
        assert np.all(np.isnan(res.delta)), proj.name
        assert not res.ok


@needs_gurobi
def test_mixed_feasible_and_infeasible_knots():
    rng = np.random.default_rng(5)
    data = random_data(rng, 4, 3, 2, 1, "P", "diag")
    F = data.F.copy()
    c = data.c.copy()
    E = data.E.copy()
    H = data.H.copy()
    F[1] = -np.eye(3)
    c[1] = -1.0
    E[1] = 0.0
    H[1] = 0.0
    data = ProjectionData(E, F, H, c, data.U)
    v = random_v(rng, data)
    ours = ExactMIQPProjection().project(v, data)
    ref = GurobiMIQPProjection(params=TIGHT).project(v, data)
    assert_agree(ours, ref, v, data)
    assert ours.status[1] == ProjectionStatus.INFEASIBLE
    assert np.all(ours.status[[0, 2, 3]] == ProjectionStatus.OPTIMAL)


# ----------------------------------------------------------------------------- Gurobi models
@needs_gurobi
def test_gurobi_models_are_persistent_and_track_data_changes():
    rng = np.random.default_rng(9)
    data = random_data(rng, 3, 4, 3, 2, "P", "diag")
    g = GurobiMIQPProjection(params=TIGHT)
    exact = ExactMIQPProjection()
    v1 = random_v(rng, data)
    r1 = g.project(v1, data)
    models = g.models
    assert g.rebuilds == 1 and len(models) == 3
    # new v: same model objects, no rebuild, correct new optimum
    v2 = random_v(rng, data)
    r2 = g.project(v2, data)
    assert g.rebuilds == 1
    assert all(a is b for a, b in zip(models, g.models))
    assert not np.allclose(r1.delta, r2.delta)
    assert_agree(exact.project(v2, data), r2, v2, data)
    # changed E, F, H, c (same shapes): coefficients / RHS updated in place
    new = random_data(rng, 3, 4, 3, 2, "general", "diag")
    data2 = ProjectionData(new.E, new.F, new.H, new.c, data.U)
    r3 = g.project(v2, data2)
    assert g.rebuilds == 1 and all(a is b for a, b in zip(models, g.models))
    fresh = GurobiMIQPProjection(params=TIGHT).project(v2, data2)
    np.testing.assert_allclose(objective(r3.delta, v2, data2.U),
                               objective(fresh.delta, v2, data2.U), rtol=1e-7, atol=1e-10)
    assert_agree(exact.project(v2, data2), r3, v2, data2)
    # a zero entry that becomes nonzero and back, and a changed U (quadratic objective)
    E = data2.E.copy()
    E[0, 0, 0] = 0.0
    nz = v2.shape[1]
    B = rng.standard_normal((nz, nz))
    U = np.tile(B @ B.T / nz + 0.1 * np.eye(nz), (3, 1, 1))
    data3 = ProjectionData(E, data2.F, data2.H, data2.c, U)
    r4 = g.project(v2, data3)
    assert g.rebuilds == 1
    assert_agree(exact.project(v2, data3), r4, v2, data3)
    # new dimensions: rebuild
    data4 = random_data(rng, 2, 3, 3, 2, "P", "diag")
    g.project(random_v(rng, data4), data4)
    assert g.rebuilds == 2 and len(g.models) == 2
    g.close()


@needs_gurobi
def test_gurobi_full_u_is_used():
    """Off-diagonal entries of U change the optimum (the authors' code used diag(U) only)."""
    rng = np.random.default_rng(12)
    data = random_data(rng, 2, 3, 2, 1, "P", "full")
    v = random_v(rng, data)
    full = GurobiMIQPProjection(params=TIGHT).project(v, data)
    diag_only = ProjectionData(data.E, data.F, data.H, data.c,
                               np.stack([np.diag(np.diag(Uk)) for Uk in data.U]))
    ours = ExactMIQPProjection().project(v, data)
    assert_agree(ours, full, v, data)
    r_diag = GurobiMIQPProjection(params=TIGHT).project(v, diag_only)
    assert not np.allclose(r_diag.delta, full.delta, atol=1e-6)


@needs_gurobi
def test_gurobi_license_error_is_wrapped():
    """The pip licence allows 200 variables with quadratic terms: n_z = 251 is refused."""
    nx, m = 250, 1
    data = ProjectionData(np.ones((1, m, nx)), np.ones((1, m, m)), np.zeros((1, m, 0)),
                          -np.ones((1, m)), np.tile(np.eye(nx + m), (1, 1, 1)))
    try:
        GurobiMIQPProjection().project(np.zeros((1, nx + m)), data)
    except GurobiLicenseError as exc:
        assert "licence" in str(exc) and exc.model_size is not None
    else:  # pragma: no cover - a full licence is installed
        pytest.skip("Gurobi has an unrestricted licence here")


def test_missing_gurobipy_raises_solver_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "gurobipy", None)  # makes `import gurobipy` fail
    with pytest.raises(SolverUnavailableError, match="pip install gurobipy"):
        GurobiMIQPProjection()


@needs_gurobi
def test_gurobi_time_limit_status_mapping():
    rng = np.random.default_rng(2)
    data = random_data(rng, 3, 10, 6, 2, "general", "diag")
    v = random_v(rng, data)
    res = GurobiMIQPProjection(time_limit=1e-6).project(v, data)
    assert set(res.status.tolist()) <= {ProjectionStatus.OPTIMAL, ProjectionStatus.TIME_LIMIT,
                                        ProjectionStatus.FAILED,
                                        ProjectionStatus.INFEASIBLE}
    failed = res.status >= ProjectionStatus.INFEASIBLE
    assert np.all(np.isnan(res.delta[failed]))
    assert np.all(np.isfinite(res.delta[~failed]))


# ----------------------------------------------------------------------------- warm starts
@needs_gurobi
def test_warm_start_does_not_change_the_optimum():
    """A sequence of ADMM-like calls (same data, admm_iteration 0..3, repeated): warm-started
    runs of both methods give the cold optimum."""
    rng = np.random.default_rng(21)
    data, v0 = plant_data("finger-gaiting", rng, N=5)
    calls = [(v0 + 0.3 * rng.standard_normal(v0.shape) * 0.7 ** i, i)
             for _ in range(3) for i in range(4)]
    cold_e = ExactMIQPProjection(warm_start=False)
    warm_e = ExactMIQPProjection(warm_start=True, lcp_heuristic=True)
    warm_last = ExactMIQPProjection(warm_start=True, warm_key="last")
    warm_g = GurobiMIQPProjection(params=TIGHT, warm_start=True)
    cold_g = GurobiMIQPProjection(params=TIGHT, warm_start=False)
    for v, it in calls:
        ref = cold_e.project(v, data, it)
        f_ref = objective(ref.delta, v, data.U)
        for proj in (warm_e, warm_last, warm_g, cold_g):
            res = proj.project(v, data, it)
            assert np.all(res.status == ProjectionStatus.OPTIMAL)
            np.testing.assert_allclose(objective(res.delta, v, data.U), f_ref,
                                       rtol=OBJ_RTOL, atol=1e-9, err_msg=proj.name)


# ----------------------------------------------------------------------------- singular U
@needs_gurobi
def test_zero_weight_on_unconstrained_input_is_exact():
    """Cart-pole, U = diag(1000 x4, 1, 1, 0): u enters no constraint (H = 0), so it is
    eliminated exactly and kept at v_u."""
    rng = np.random.default_rng(4)
    data, v = plant_data("cartpole-softwalls", rng)
    assert data.U[0, 6, 6] == 0.0 and np.all(data.H == 0.0)
    proj = ExactMIQPProjection()
    res = proj.project(v, data)
    assert np.all(proj.regularization_used == 0.0)
    np.testing.assert_array_equal(res.delta[:, 6], v[:, 6])
    assert_agree(res, GurobiMIQPProjection(params=TIGHT).project(v, data), v, data)


@needs_gurobi
def test_zero_weight_on_constrained_input_is_regularised_within_bound():
    """U_uu = 0 with H != 0: S is singular, eps = 1e-8 max(diag S) is added and the
    U-objective exceeds the optimum by at most eps |delta* - v|^2 (delta* from Gurobi)."""
    rng = np.random.default_rng(8)
    checked = 0
    for trial in range(12):
        m, nx, nu = int(rng.integers(2, 8)), int(rng.integers(2, 6)), 2
        data = random_data(rng, 4, m, nx, nu, ("P", "general")[trial % 2], "paper")
        U = data.U.copy()
        U[:, nx + m:, nx + m:] = 0.0
        data = ProjectionData(data.E, data.F, data.H, data.c, U)
        v = random_v(rng, data)
        proj = ExactMIQPProjection()
        ours = proj.project(v, data)
        ref = GurobiMIQPProjection(params=TIGHT).project(v, data)
        eps = proj.regularization_used
        assert np.all(eps > 0.0)
        ok = ref.status == ProjectionStatus.OPTIMAL
        np.testing.assert_array_equal(ours.status == ProjectionStatus.OPTIMAL, ok)
        f_o = objective(ours.delta[ok], v[ok], U[ok])
        f_g = objective(ref.delta[ok], v[ok], U[ok])
        bound = eps[ok] * np.sum((ref.delta[ok] - v[ok]) ** 2, axis=1)
        tol = 1e-7 * np.maximum(1.0, f_g)
        assert np.all(f_o >= f_g - tol)
        assert np.all(f_o <= f_g + bound + tol)
        scale = 1.0 + np.abs(ours.delta[ok]).max(axis=1)
        assert np.all(complementarity(ours.delta[ok], _sub(data, ok)) <= 1e-8 * scale * 10)
        checked += int(ok.sum())
    assert checked >= 30


# ----------------------------------------------------------------------------- exact: misc
def test_exact_caches_are_refreshed_when_data_change():
    rng = np.random.default_rng(13)
    proj = ExactMIQPProjection()
    data = random_data(rng, 3, 5, 4, 2, "P", "diag")
    v = random_v(rng, data)
    proj.project(v, data)
    for change in ("E", "F", "H", "U", "c"):
        new = random_data(rng, 3, 5, 4, 2, "general", "full")
        arrays = {k: getattr(data, k).copy() for k in "EFHcU"}
        arrays[change][1] = getattr(new, change)[1]  # only knot 1 changes
        data = ProjectionData(**arrays)
        res = proj.project(v, data)
        fresh = ExactMIQPProjection().project(v, data)
        np.testing.assert_allclose(res.delta, fresh.delta, rtol=0, atol=1e-12, err_msg=change)
    # in-place mutation of an array already seen is detected too
    data.E[2] *= 1.5
    res = proj.project(v, data)
    fresh = ExactMIQPProjection().project(v, data)
    np.testing.assert_allclose(res.delta, fresh.delta, rtol=0, atol=1e-12)


def test_exact_node_budget_and_statuses():
    rng = np.random.default_rng(17)
    data = random_data(rng, 6, 10, 6, 2, "P", "diag")
    v = 3.0 * random_v(rng, data)
    full = ExactMIQPProjection().project(v, data)
    assert np.all(full.status == ProjectionStatus.OPTIMAL)
    cut = ExactMIQPProjection(max_nodes=1).project(v, data)
    assert set(cut.status.tolist()) <= {ProjectionStatus.OPTIMAL, ProjectionStatus.APPROXIMATE,
                                        ProjectionStatus.FAILED}
    assert np.any(cut.status != ProjectionStatus.OPTIMAL)
    approx = cut.status == ProjectionStatus.APPROXIMATE
    assert np.all(complementarity(cut.delta[approx], _sub(data, approx)) <= COMP_TOL)
    # an APPROXIMATE point is feasible, hence no better than the optimum
    assert np.all(objective(cut.delta[approx], v[approx], data.U[approx])
                  >= objective(full.delta[approx], v[approx], data.U[approx]) - 1e-9)
    assert np.all(np.isnan(cut.delta[cut.status == ProjectionStatus.FAILED]))


def test_exact_without_complementarity_and_input_validation():
    N, nx, nu = 2, 3, 1
    data = ProjectionData(np.zeros((N, 0, nx)), np.zeros((N, 0, 0)), np.zeros((N, 0, nu)),
                          np.zeros((N, 0)), np.tile(np.eye(nx + nu), (N, 1, 1)))
    v = np.arange(N * (nx + nu), dtype=float).reshape(N, -1)
    res = ExactMIQPProjection().project(v, data)
    np.testing.assert_array_equal(res.delta, v)
    rng = np.random.default_rng(0)
    data = random_data(rng, 2, 3, 2, 1, "P", "diag")
    proj = ExactMIQPProjection()
    with pytest.raises(C3ValueError):
        proj.project(np.zeros((2, 5)), data)
    v = random_v(rng, data)
    v[0, 0] = np.nan
    with pytest.raises(C3ValueError):
        proj.project(v, data)
    bad_U = data.U.copy()
    bad_U[0, 0, 0] = -1.0
    with pytest.raises(C3ValueError, match="semidefinite"):
        proj.check(ProjectionData(data.E, data.F, data.H, data.c, bad_U))
    proj.check(data)
    with pytest.raises(C3ValueError):
        ExactMIQPProjection(rel_gap=-1.0)
    with pytest.raises(C3ValueError):
        ExactMIQPProjection(warm_key="nope")
    with pytest.raises(C3ValueError):
        GurobiMIQPProjection(M=-1.0)
    assert ExactMIQPProjection.name == "miqp" and GurobiMIQPProjection.name == "miqp-gurobi"
