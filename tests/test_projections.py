"""Tests of the projection methods ``lcp``, ``qp``, ``admm``, ``c3plus`` and the registry.

Every projected point is checked independently of the method's own bookkeeping (slack and
complementarity recomputed here). The convex QP projection is compared with cvxpy (Clarabel)
solving the same QP, knot by knot. All randomness is seeded; hypothesis runs derandomized.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from c3mpc.errors import C3TypeError, C3ValueError
from c3mpc.projections.admm import ADMMProjection, project_complementarity_pairs
from c3mpc.projections.base import ProjectionData, ProjectionStatus
from c3mpc.projections.c3plus import C3PlusProjection
from c3mpc.projections.lcp import LCPProjection, natural_residual, slack
from c3mpc.projections.qp import ConvexQPProjection
from c3mpc.projections.registry import available_projections, make_projection
from lcs import solve_lcp

OPT = ProjectionStatus.OPTIMAL


# ----------------------------------------------------------------------------- helpers
def random_data(rng, N=6, n_x=4, n_lam=3, n_u=2, F=None, u_weights=(10.0, 1.0, 2.0)):
    """Random LCS data; ``F`` is an (N, n_lam, n_lam) array or None (a random P-matrix)."""
    if F is None:  # positive definite (non-symmetric) => P-matrix => unique LCP solution
        A = rng.normal(size=(N, n_lam, n_lam))
        K = rng.normal(size=(N, n_lam, n_lam))
        F = A @ A.transpose(0, 2, 1) + np.eye(n_lam) + 0.5 * (K - K.transpose(0, 2, 1))
    E = rng.normal(size=(N, n_lam, n_x))
    H = rng.normal(size=(N, n_lam, n_u))
    c = rng.normal(size=(N, n_lam))
    wx, wl, wu = u_weights
    U = np.tile(np.diag(np.r_[np.full(n_x, wx), np.full(n_lam, wl), np.full(n_u, wu)]),
                (N, 1, 1))
    return ProjectionData(E, F, H, c, U)


def psd_F(rng, N, n_lam, rank=None):
    """F = J Jᵀ (+ a small identity so that the test QP is well conditioned)."""
    r = n_lam if rank is None else rank
    J = rng.normal(size=(N, n_lam, r)) * 0.7
    if rank is None:
        J = J + np.eye(n_lam)
    return J @ J.transpose(0, 2, 1)


def dims(data):
    return data.E.shape[2], data.E.shape[1], data.H.shape[2]


def plant_data(name, N=10, U=None):
    from plants import load_plant

    plant = load_plant(name)
    k = plant.lcs().stacked(N)
    U = plant.defaults.U if U is None else U
    return plant, ProjectionData(np.array(k.E), np.array(k.F), np.array(k.H), np.array(k.c),
                                 np.broadcast_to(U, (N,) + U.shape).copy())


def cvxpy_qp_reference(v, data, alpha, eps):
    """Eq. (24) per knot with cvxpy/Clarabel (independent of the OSQP formulation)."""
    import cvxpy as cp

    n_x, n_lam, n_u = dims(data)
    out = []
    for k in range(data.N):
        d = cp.Variable(n_x + n_lam + n_u)
        x, lam, u = d[:n_x], d[n_x:n_x + n_lam], d[n_x + n_lam:]
        Fe = 0.5 * (data.F[k] + data.F[k].T) + eps * np.eye(n_lam)
        Qx = data.U[k][:n_x, :n_x] + eps * np.eye(n_x)
        Qu = data.U[k][n_x + n_lam:, n_x + n_lam:] + eps * np.eye(n_u)
        vx, vl, vu = v[k, :n_x], v[k, n_x:n_x + n_lam], v[k, n_x + n_lam:]
        obj = (0.5 * cp.quad_form(x - vx, Qx) + 0.5 * cp.quad_form(u - vu, Qu)
               + alpha / 2 * cp.quad_form(lam - vl, Fe) + (1 - alpha) / 2 * cp.quad_form(lam, Fe))
        cons = [data.E[k] @ x + data.F[k] @ lam + data.H[k] @ u + data.c[k] >= 0, lam >= 0]
        # tight tolerances: with U_xx ~ 1e3 and the λ weight αF ~ 1e-2, Clarabel's defaults
        # leave ~1e-3 errors in λ
        cp.Problem(cp.Minimize(obj), cons).solve(solver="CLARABEL", tol_gap_abs=1e-11,
                                                 tol_gap_rel=1e-11, tol_feas=1e-11, max_iter=500)
        out.append(np.full(d.shape, np.nan) if d.value is None else d.value)
    return np.array(out)


# ----------------------------------------------------------------------------- LCP
def test_lcp_projection_complementarity_and_passthrough():
    rng = np.random.default_rng(0)
    data = random_data(rng, N=8)
    n_x, n_lam, _ = dims(data)
    v = 2.0 * rng.normal(size=(8, data.E.shape[2] + n_lam + data.H.shape[2]))
    res = LCPProjection().project(v, data)
    assert res.ok and np.all(res.status == OPT)
    d = res.delta
    np.testing.assert_array_equal(d[:, :n_x], v[:, :n_x])
    np.testing.assert_array_equal(d[:, n_x + n_lam:], v[:, n_x + n_lam:])
    lam, s = d[:, n_x:n_x + n_lam], slack(d, data)
    assert lam.min() >= -1e-9 and s.min() >= -1e-9
    assert np.abs(lam * s).max() <= 1e-9
    assert natural_residual(d, data).max() <= 1e-9
    assert res.iterations.shape == (8,) and res.solve_time >= 0


def test_lcp_projection_batched_matches_per_knot():
    rng = np.random.default_rng(1)
    data = random_data(rng, N=10, n_lam=5)
    n_x, n_lam, _ = dims(data)
    v = rng.normal(size=(10, n_x + n_lam + data.H.shape[2])) * 3
    res = LCPProjection().project(v, data)
    for k in range(10):
        q = data.E[k] @ v[k, :n_x] + data.H[k] @ v[k, n_x + n_lam:] + data.c[k]
        z = solve_lcp(data.F[k], q).z
        np.testing.assert_allclose(res.delta[k, n_x:n_x + n_lam], z, atol=1e-10)


def test_lcp_projection_failed_knot_is_nan_not_zero():
    rng = np.random.default_rng(2)
    data = random_data(rng, N=4, n_lam=2)
    F = np.array(data.F)
    c = np.array(data.c)
    E = np.zeros_like(data.E)
    H = np.zeros_like(data.H)
    F[1] = 0.0            # PSD: LCP(q, 0) with q < 0 has no solution -> INFEASIBLE
    c[1] = [-1.0, 2.0]
    F[2] = -np.eye(2)     # not PSD, q < 0: ray termination -> FAILED
    c[2] = [-1.0, -1.0]
    data = ProjectionData(E, F, H, c, data.U)
    v = rng.normal(size=(4, data.U.shape[1]))
    res = LCPProjection().project(v, data)
    assert res.status[1] == ProjectionStatus.INFEASIBLE
    assert res.status[2] == ProjectionStatus.FAILED
    assert np.all(np.isnan(res.delta[1])) and np.all(np.isnan(res.delta[2]))
    assert res.status[0] == OPT and res.status[3] == OPT and not res.ok
    assert np.all(np.isfinite(res.delta[[0, 3]]))


def test_lcp_projection_on_paper_cartpole():
    _, data = plant_data("cartpole-softwalls")
    rng = np.random.default_rng(3)
    v = rng.normal(size=(10, 7))
    res = LCPProjection().project(v, data)
    assert np.all(res.status == OPT)
    assert natural_residual(res.delta, data).max() <= 1e-9


def test_projection_input_validation():
    rng = np.random.default_rng(4)
    data = random_data(rng, N=3)
    for proj in (LCPProjection(), ConvexQPProjection(), ADMMProjection()):
        with pytest.raises(C3ValueError, match="v must have shape"):
            proj.project(np.zeros((3, 5)), data)
        bad = np.zeros((3, data.U.shape[1]))
        bad[1, 2] = np.nan
        with pytest.raises(C3ValueError, match="non-finite"):
            proj.project(bad, data)
    with pytest.raises(C3TypeError):
        LCPProjection().project(np.zeros((3, data.U.shape[1])), "not data")
    with pytest.raises(C3ValueError):
        ConvexQPProjection(alpha=1.5)
    with pytest.raises(C3ValueError):
        ADMMProjection(rho=0.0)


def _pd_plus_skew(draw_rng, n):
    A = draw_rng.normal(size=(n, n))
    K = draw_rng.normal(size=(n, n))
    return A @ A.T + 0.1 * np.eye(n) + (K - K.T)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_lam=st.integers(1, 7), N=st.integers(1, 6))
def test_lcp_projection_property_p_matrix(seed, n_lam, N):
    rng = np.random.default_rng(seed)
    F = np.stack([_pd_plus_skew(rng, n_lam) for _ in range(N)])  # PD => P-matrix
    data = random_data(rng, N=N, n_x=3, n_lam=n_lam, n_u=2, F=F)
    v = rng.normal(size=(N, 5 + n_lam)) * 5
    res = LCPProjection().project(v, data)
    assert np.all(res.status == OPT)
    d = res.delta
    lam, s = d[:, 3:3 + n_lam], slack(d, data)
    scale = max(1.0, np.abs(s).max(), np.abs(lam).max())
    assert lam.min() >= -1e-9 * scale and s.min() >= -1e-9 * scale
    assert natural_residual(d, data).max() <= 1e-9 * scale
    np.testing.assert_array_equal(d[:, :3], v[:, :3])
    np.testing.assert_array_equal(d[:, 3 + n_lam:], v[:, 3 + n_lam:])


# ----------------------------------------------------------------------------- convex QP
def test_qp_rejects_non_psd_F_with_clear_message():
    rng = np.random.default_rng(5)
    F = psd_F(rng, 3, 2)
    F[1] = np.diag([1.0, -0.5])
    data = random_data(rng, N=3, n_lam=2, F=F)
    proj = ConvexQPProjection()
    with pytest.raises(C3ValueError, match=r"F at knot 1 is not positive semidefinite.*-0\.5"):
        proj.check(data)
    v = rng.normal(size=(3, data.U.shape[1]))
    with pytest.raises(C3ValueError, match="knot 1"):
        proj.project(v, data)


def test_qp_check_on_paper_plants():
    # Stewart-Trinkle pivoting: the symmetric part of F is indefinite -> rejected
    _, piv = plant_data("pivoting")
    with pytest.raises(C3ValueError, match="F at knot 0 .*most negative eigenvalue"):
        ConvexQPProjection().check(piv)
    # cartpole soft walls: F = I/k is PSD -> accepted
    _, cart = plant_data("cartpole-softwalls")
    ConvexQPProjection().check(cart)


@pytest.mark.parametrize("solver", ["active-set", "osqp"])
@pytest.mark.parametrize("seed", [6, 7])
def test_qp_matches_cvxpy_and_is_feasible(seed, solver):
    rng = np.random.default_rng(seed)
    N, n_lam = 6, 4
    data = random_data(rng, N=N, n_lam=n_lam, F=psd_F(rng, N, n_lam),
                       u_weights=(1000.0, 1.0, 1.0))
    n_x = data.E.shape[2]
    v = 2.0 * rng.normal(size=(N, data.U.shape[1]))
    proj = ConvexQPProjection(alpha=0.01, solver=solver)
    res = proj.project(v, data)
    assert np.all(res.status == OPT) and proj.last_path == solver
    lam, s = res.delta[:, n_x:n_x + n_lam], slack(res.delta, data)
    assert lam.min() >= -1e-7 and s.min() >= -1e-7
    ref = cvxpy_qp_reference(v, data, 0.01, proj.epsilon)
    np.testing.assert_allclose(res.delta, ref, atol=1e-4)


def test_qp_warm_start_correct_and_fewer_iterations():
    rng = np.random.default_rng(8)
    N, n_lam = 8, 4
    data = random_data(rng, N=N, n_lam=n_lam, F=psd_F(rng, N, n_lam))
    v = 2.0 * rng.normal(size=(N, data.U.shape[1]))
    warm = ConvexQPProjection(solver="osqp")
    warm.project(v, data)
    v2 = v + 0.02 * rng.normal(size=v.shape)
    r_warm = warm.project(v2, data)
    r_cold = ConvexQPProjection(solver="osqp").project(v2, data)
    assert warm.setup_count == 1  # updated, not set up again
    assert np.all(r_warm.status == OPT)
    np.testing.assert_allclose(r_warm.delta, r_cold.delta, atol=1e-6)
    np.testing.assert_allclose(r_warm.delta, cvxpy_qp_reference(v2, data, 0.01, 1e-6),
                               atol=1e-4)
    assert r_warm.iterations[0] < r_cold.iterations[0]


def test_qp_data_update_without_resetup():
    rng = np.random.default_rng(9)
    N, n_lam = 5, 3
    data = random_data(rng, N=N, n_lam=n_lam, F=psd_F(rng, N, n_lam))
    v = rng.normal(size=(N, data.U.shape[1]))
    proj = ConvexQPProjection(solver="osqp")
    proj.project(v, data)
    data2 = random_data(rng, N=N, n_lam=n_lam, F=psd_F(rng, N, n_lam))  # new E, F, H, c, U
    res = proj.project(v, data2)
    assert proj.setup_count == 1
    np.testing.assert_allclose(res.delta, cvxpy_qp_reference(v, data2, 0.01, 1e-6), atol=1e-4)
    data3 = random_data(rng, N=N + 1, n_lam=n_lam, F=psd_F(rng, N + 1, n_lam))  # new shape
    res3 = proj.project(rng.normal(size=(N + 1, data3.U.shape[1])), data3)
    assert proj.setup_count == 2 and np.all(res3.status == OPT)


def test_qp_infeasible_knot_is_nan_and_others_solved():
    rng = np.random.default_rng(10)
    N, n_x, n_lam, n_u = 4, 2, 2, 1
    E = np.zeros((N, n_lam, n_x))
    H = np.zeros((N, n_lam, n_u))
    F = np.tile(np.diag([0.5, 0.0]), (N, 1, 1))  # PSD, second row zero
    c = np.ones((N, n_lam))
    c[2, 1] = -1.0                     # 0 * lam - 1 >= 0 is impossible at knot 2
    data = ProjectionData(E, F, H, c, np.tile(np.eye(5), (N, 1, 1)))
    v = rng.normal(size=(N, 5))
    proj = ConvexQPProjection(alpha=0.1)
    res = proj.project(v, data)
    assert proj.last_path == "osqp"  # the active-set path hands an infeasible knot to OSQP
    assert res.status[2] == ProjectionStatus.INFEASIBLE and np.all(np.isnan(res.delta[2]))
    ok = [0, 1, 3]
    assert np.all(res.status[ok] == OPT)
    # analytic: separable, c >= 0 on the feasible knots => x = v_x, u = v_u, λ = max(α v_λ, 0)
    expect = v.copy()
    expect[:, n_x:n_x + n_lam] = np.maximum(0.1 * v[:, n_x:n_x + n_lam], 0.0)
    np.testing.assert_allclose(res.delta[ok], expect[ok], atol=1e-8)
    # the next call (feasible again) is solved at every knot
    c2 = c.copy()
    c2[2, 1] = 1.0
    res2 = proj.project(v, ProjectionData(E, F, H, c2, data.U))
    assert np.all(res2.status == OPT) and proj.last_path == "active-set"
    np.testing.assert_allclose(res2.delta, expect, atol=1e-8)


def test_qp_complementarity_error_shrinks_with_alpha():
    """Seed Lemma 3: the complementarity error of eq. (24) is O(alpha)."""
    rng = np.random.default_rng(11)
    N, n_lam = 6, 3
    data = random_data(rng, N=N, n_lam=n_lam, F=psd_F(rng, N, n_lam))
    n_x = data.E.shape[2]
    v = 2.0 * rng.normal(size=(N, data.U.shape[1]))
    errs = []
    for alpha in (0.5, 0.05, 0.005):
        d = ConvexQPProjection(alpha=alpha).project(v, data).delta
        errs.append(np.abs(np.einsum("ki,ki->k", d[:, n_x:n_x + n_lam], slack(d, data))).max())
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 0.05 * errs[0]


# ----------------------------------------------------------------------------- ADMM
def test_admm_pair_projection_closed_form():
    a = np.array([2.0, 1.0, -1.0, 3.0, -2.0])
    b = np.array([1.0, 2.0, 0.5, -1.0, -3.0])
    p, r = project_complementarity_pairs(a, b)
    np.testing.assert_array_equal(p, [2.0, 0.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(r, [0.0, 2.0, 0.5, 0.0, 0.0])


def test_admm_exact_on_separable_problem():
    """E = I, F = 0, H = 0, c = 0, U = I: the projection is the pairwise closed form on (x, λ)."""
    rng = np.random.default_rng(12)
    N, n = 10, 3
    data = ProjectionData(np.tile(np.eye(n), (N, 1, 1)), np.zeros((N, n, n)),
                          np.zeros((N, n, 1)), np.zeros((N, n)),
                          np.tile(np.eye(2 * n + 1), (N, 1, 1)))
    v = rng.normal(size=(N, 2 * n + 1))
    res = ADMMProjection().project(v, data)
    px, pl = project_complementarity_pairs(v[:, :n], v[:, n:2 * n])
    assert np.all(res.status == OPT)
    np.testing.assert_allclose(res.delta[:, :n], px, atol=1e-5)
    np.testing.assert_allclose(res.delta[:, n:2 * n], pl, atol=1e-5)
    np.testing.assert_allclose(res.delta[:, 2 * n], v[:, 2 * n], atol=1e-6)


def test_admm_unique_point_F_identity():
    """F = I, E = H = 0: the feasible λ is unique, λ = max(-c, 0)."""
    rng = np.random.default_rng(13)
    N, n = 8, 3
    c = rng.normal(size=(N, n))
    data = ProjectionData(np.zeros((N, n, 2)), np.tile(np.eye(n), (N, 1, 1)),
                          np.zeros((N, n, 1)), c, np.tile(np.eye(n + 3), (N, 1, 1)))
    v = rng.normal(size=(N, n + 3))
    res = ADMMProjection(polish=True).project(v, data)
    assert np.all(res.status == OPT)
    np.testing.assert_allclose(res.delta[:, 2:2 + n], np.maximum(-c, 0.0), atol=1e-9)
    plain = ADMMProjection().project(v, data)
    conv = plain.status == OPT
    assert conv.sum() >= N // 2
    np.testing.assert_allclose(plain.delta[conv, 2:2 + n], np.maximum(-c, 0.0)[conv], atol=1e-4)


@pytest.mark.parametrize("plant", ["cartpole-softwalls", "finger-gaiting"])
def test_admm_reduces_complementarity_violation(plant):
    p, data = plant_data(plant)
    n_x, n_lam, n_u = dims(data)
    rng = np.random.default_rng(14)
    v = np.concatenate([p.defaults.x0 + 0.3 * rng.normal(size=(10, n_x)),
                        rng.normal(size=(10, n_lam)), np.abs(rng.normal(size=(10, n_u)))], 1)
    res = ADMMProjection().project(v, data)
    viol_v = natural_residual(v, data)
    viol_d = natural_residual(res.delta, data)
    assert np.all(viol_d < viol_v)                      # every knot improves
    assert np.median(viol_d / viol_v) < 1e-2            # most by orders of magnitude
    conv = res.status == OPT
    assert conv.mean() >= 0.5
    assert np.all(viol_d[conv] <= 1e-4)                 # converged knots are complementary
    lam = res.delta[:, n_x:n_x + n_lam]
    assert lam.min() >= -0.1 and slack(res.delta, data).min() >= -0.1  # feasible-ish


def test_admm_budget_gives_approximate():
    _, data = plant_data("cartpole-softwalls")
    rng = np.random.default_rng(15)
    v = rng.normal(size=(10, 7)) * 2
    res = ADMMProjection(max_iterations=1).project(v, data)
    viol = natural_residual(v, data) > 1e-3
    assert np.all(res.status[viol] == ProjectionStatus.APPROXIMATE)
    assert np.all(res.iterations == 1) and np.all(np.isfinite(res.delta))


# ----------------------------------------------------------------------------- C3+
def c3plus_data(N, n_x, n_lam, n_u, w_lam=1.0, w_eta=1.0):
    n = n_x + 2 * n_lam + n_u
    d = np.ones(n)
    d[n_x:n_x + n_lam] = w_lam
    d[n_x + n_lam + n_u:] = w_eta
    return ProjectionData(np.zeros((N, n_lam, n_x)), np.zeros((N, n_lam, n_lam)),
                          np.zeros((N, n_lam, n_u)), np.zeros((N, n_lam)),
                          np.tile(np.diag(d), (N, 1, 1)))


def test_c3plus_analytic_cases():
    n_x, n_lam, n_u = 2, 4, 1
    data = c3plus_data(1, n_x, n_lam, n_u)
    lam = np.array([0.1, 5.0, -1.0, -2.0])
    eta = np.array([10.0, 0.2, 3.0, -1.0])
    v = np.concatenate([[7.0, -8.0], lam, [9.0], eta])[None]
    d = C3PlusProjection().project(v, data).delta[0]
    np.testing.assert_array_equal(d[:2], [7.0, -8.0])           # x passes through
    np.testing.assert_array_equal(d[6], 9.0)                    # u passes through
    np.testing.assert_array_equal(d[2:6], [0.0, 5.0, 0.0, 0.0])  # λ
    np.testing.assert_array_equal(d[7:], [10.0, 0.0, 3.0, 0.0])  # η
    # weights decide: λ = 1, η = 2, but w_λ = 100 => √100·1 = 10 > √1·2 = 2 -> keep λ
    data_w = c3plus_data(1, 1, 1, 1, w_lam=100.0, w_eta=1.0)
    d = C3PlusProjection().project(np.array([[0.0, 1.0, 0.0, 2.0]]), data_w).delta[0]
    np.testing.assert_array_equal(d, [0.0, 1.0, 0.0, 0.0])


def test_c3plus_rejects_negative_weight_and_bad_shape():
    data = c3plus_data(2, 1, 2, 1, w_eta=-1.0)
    v = np.zeros((2, 6))
    with pytest.raises(C3ValueError, match="w_eta.*negative"):
        C3PlusProjection().project(v, data)
    with pytest.raises(C3ValueError, match="negative"):
        C3PlusProjection().check(data)
    good = c3plus_data(2, 1, 2, 1)
    with pytest.raises(C3ValueError, match="v must have shape"):
        C3PlusProjection().project(np.zeros((2, 4)), good)  # n_z columns instead of n_z + n_lam
    bad_u = ProjectionData(good.E, good.F, good.H, good.c, good.U[:, :4, :4])
    with pytest.raises(C3ValueError, match="U must have shape"):
        C3PlusProjection().project(v, bad_u)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_lam=st.integers(1, 6), N=st.integers(1, 5),
       zero_weights=st.booleans())
def test_c3plus_property_complementary_and_optimal(seed, n_lam, N, zero_weights):
    rng = np.random.default_rng(seed)
    n_x, n_u = 2, 1
    n = n_x + 2 * n_lam + n_u
    w = rng.uniform(0.0, 10.0, size=(N, n))
    if zero_weights:
        w[:, n_x] = 0.0
    U = np.stack([np.diag(wk) for wk in w])
    data = ProjectionData(np.zeros((N, n_lam, n_x)), np.zeros((N, n_lam, n_lam)),
                          np.zeros((N, n_lam, n_u)), np.zeros((N, n_lam)), U)
    v = rng.normal(size=(N, n)) * 3
    d = C3PlusProjection().project(v, data).delta
    sl, se = slice(n_x, n_x + n_lam), slice(n_x + n_lam + n_u, n)
    lam, eta = d[:, sl], d[:, se]
    assert np.all(lam >= 0) and np.all(eta >= 0)
    assert np.all(np.minimum(lam, eta) == 0)
    # the choice is the weighted-nearest of the two branches
    wl, we = w[:, sl], w[:, se]
    a, b = v[:, sl], v[:, se]
    cost = wl * (lam - a) ** 2 + we * (eta - b) ** 2
    best = np.minimum(wl * (np.maximum(a, 0) - a) ** 2 + we * b ** 2,
                      wl * a ** 2 + we * (np.maximum(b, 0) - b) ** 2)
    np.testing.assert_allclose(cost, best, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- registry
def test_registry_maps_names():
    assert isinstance(make_projection("lcp"), LCPProjection)
    qp = make_projection("QP", alpha=0.1, epsilon=1e-5)
    assert isinstance(qp, ConvexQPProjection) and qp.alpha == 0.1 and qp.epsilon == 1e-5
    assert isinstance(make_projection("admm", rho=3.0), ADMMProjection)
    assert isinstance(make_projection("c3plus"), C3PlusProjection)
    assert isinstance(make_projection("C3+"), C3PlusProjection)
    for name in ("lcp", "qp", "admm", "c3plus"):
        assert make_projection(name).name == name
    assert set(available_projections()) == {"lcp", "qp", "admm", "c3plus", "miqp",
                                            "miqp-gurobi"}


def test_registry_unknown_name_lists_valid_ones():
    with pytest.raises(C3ValueError, match="unknown projection 'foo'.*'lcp'.*'miqp-gurobi'"):
        make_projection("foo")
    with pytest.raises(C3ValueError, match="bad options for projection 'lcp'"):
        make_projection("lcp", not_an_option=1)


@pytest.mark.parametrize("name,module,cls", [
    ("miqp", "c3mpc.projections.miqp_exact", "ExactMIQPProjection"),
    ("miqp-gurobi", "c3mpc.projections.miqp_gurobi", "GurobiMIQPProjection"),
])
def test_registry_lazy_miqp(name, module, cls):
    mod = pytest.importorskip(module)
    try:
        proj = make_projection(name)
    except C3ValueError:  # constructor needs options we do not know here
        pytest.skip(f"{cls} needs constructor options")
    assert isinstance(proj, getattr(mod, cls))


def test_registry_takes_options_from_c3_options_object():
    from types import SimpleNamespace

    opts = SimpleNamespace(qp_alpha=0.2, qp_epsilon=1e-5, warm_start=False,
                           admm_projection_iter=77, extra={"kkt_tol": 1e-8})
    qp = make_projection("qp", opts)
    assert (qp.alpha, qp.epsilon, qp.warm_start, qp.kkt_tol) == (0.2, 1e-5, False, 1e-8)
    assert make_projection("qp", opts, alpha=0.3).alpha == 0.3  # explicit options win
    admm = make_projection("admm", SimpleNamespace(admm_projection_iter=77, extra={}))
    assert admm.max_iterations == 77
    assert isinstance(make_projection("lcp", SimpleNamespace(extra={})), LCPProjection)
