"""The condensed QP step (eq. 21) against independent, uncondensed formulations."""

from __future__ import annotations

import numpy as np
import pytest

from c3mpc.qp_step import CondensedQP, LinearConstraint


def random_problem(rng, n_x=4, n_l=3, n_u=2, N=5):
    A = np.eye(n_x) + 0.1 * rng.normal(size=(N, n_x, n_x))
    B = rng.normal(size=(N, n_x, n_u))
    D = rng.normal(size=(N, n_x, n_l))
    d = rng.normal(size=(N, n_x))
    Q = np.array([np.diag(rng.uniform(0.5, 2, n_x)) for _ in range(N + 1)])
    R = np.array([np.diag(rng.uniform(0.5, 2, n_u)) for _ in range(N)])
    n_z = n_x + n_l + n_u
    L = rng.normal(size=(N, n_z, n_z))
    G = np.einsum("kab,kcb->kac", L, L) / n_z + 0.1 * np.eye(n_z)  # full PSD, coupled blocks
    x_des = rng.normal(size=(N + 1, n_x))
    return A, B, D, d, Q, R, G, x_des


def uncondensed_kkt(A, B, D, d, Q, R, G, x_des, x0, r, sigma):
    """Solve the QP over all of x_0..x_N, λ, u with the dynamics as equality constraints."""
    N, n_x, n_u = B.shape
    n_l = D.shape[2]
    n_z = n_x + n_l + n_u
    nv = N * n_z + n_x  # z_0..z_{N-1}, x_N
    P = np.zeros((nv, nv))
    q = np.zeros(nv)
    for k in range(N):
        s = slice(k * n_z, (k + 1) * n_z)
        P[s, s] += sigma * G[k]
        q[s] += -sigma * G[k] @ r[k]
        sx = slice(k * n_z, k * n_z + n_x)
        P[sx, sx] += Q[k]
        q[sx] += -Q[k] @ x_des[k]
        su = slice(k * n_z + n_x + n_l, (k + 1) * n_z)
        P[su, su] += R[k]
    sN = slice(N * n_z, nv)
    P[sN, sN] += Q[N]
    q[sN] += -Q[N] @ x_des[N]
    rows = []
    rhs = []
    row = np.zeros((n_x, nv))
    row[:, :n_x] = np.eye(n_x)
    rows.append(row)
    rhs.append(x0)
    for k in range(N):
        row = np.zeros((n_x, nv))
        row[:, k * n_z: k * n_z + n_x] = A[k]
        row[:, k * n_z + n_x: k * n_z + n_x + n_l] = D[k]
        row[:, k * n_z + n_x + n_l: (k + 1) * n_z] = B[k]
        nxt = (k + 1) * n_z if k + 1 < N else N * n_z
        row[:, nxt: nxt + n_x] -= np.eye(n_x)
        rows.append(row)
        rhs.append(-d[k])
    Aeq = np.vstack(rows)
    beq = np.concatenate(rhs)
    K = np.block([[P, Aeq.T], [Aeq, np.zeros((Aeq.shape[0], Aeq.shape[0]))]])
    sol = np.linalg.solve(K, np.concatenate([-q, beq]))[:nv]
    return sol[: N * n_z].reshape(N, n_z), sol[N * n_z:]


@pytest.mark.parametrize("seed", range(6))
def test_equality_qp_matches_uncondensed_kkt(seed):
    rng = np.random.default_rng(seed)
    A, B, D, d, Q, R, G, x_des = random_problem(rng)
    N, n_x, n_u = B.shape
    n_l = D.shape[2]
    qp = CondensedQP(n_x, n_l, n_u, N, [], {})
    qp.set_data(A, B, D, d, Q, R, G, x_des)
    x0 = rng.normal(size=n_x)
    for sigma in (0.1, 1.0, 7.5):
        r = rng.normal(size=(N, n_x + n_l + n_u))
        X0, g_c = qp.initial_state_terms(x0)
        res = qp.solve(X0, g_c, np.einsum("kab,kb->ka", G, r), sigma)
        z_ref, xN_ref = uncondensed_kkt(A, B, D, d, Q, R, G, x_des, x0, r, sigma)
        assert res.ok
        np.testing.assert_allclose(res.z, z_ref, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(res.x_N, xN_ref, rtol=1e-8, atol=1e-8)


def test_factorization_cached_per_sigma_and_invalidated_on_new_data():
    rng = np.random.default_rng(0)
    A, B, D, d, Q, R, G, x_des = random_problem(rng)
    N, n_x, n_u = B.shape
    qp = CondensedQP(n_x, D.shape[2], n_u, N, [], {})
    qp.set_data(A, B, D, d, Q, R, G, x_des)
    X0, g_c = qp.initial_state_terms(np.zeros(n_x))
    Gr = np.zeros((N, G.shape[1]))
    for sigma in (1.0, 2.0, 1.0):
        qp.solve(X0, g_c, Gr, sigma)
    assert sorted(qp._factors) == [1.0, 2.0]
    qp.set_data(A, B, D, d, Q, R, G, x_des)
    assert qp._factors == {}


@pytest.mark.parametrize("solver", ["active-set", "osqp"])
def test_inequality_qp_matches_cvxpy(solver):
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    A, B, D, d, Q, R, G, x_des = random_problem(rng, N=4)
    N, n_x, n_u = B.shape
    n_l = D.shape[2]
    cons = [LinearConstraint("state", np.eye(n_x)[:2], np.array([-0.3, -0.2]),
                             np.array([0.3, 0.2])),
            LinearConstraint("input", np.eye(n_u), -0.5 * np.ones(n_u), 0.5 * np.ones(n_u)),
            LinearConstraint("force", np.eye(n_l), np.zeros(n_l), np.full(n_l, np.inf))]
    qp = CondensedQP(n_x, n_l, n_u, N, cons, dict(eps_abs=1e-9, eps_rel=1e-9, max_iter=20000,
                                                    polishing=True), solver=solver)
    qp.set_data(A, B, D, d, Q, R, G, x_des)
    x0 = np.array([0.1, -0.1, 0.0, 0.2])
    r = rng.normal(size=(N, n_x + n_l + n_u))
    sigma = 2.0
    X0, g_c = qp.initial_state_terms(x0)
    res = qp.solve(X0, g_c, np.einsum("kab,kb->ka", G, r), sigma)
    assert res.ok
    # cvxpy, uncondensed
    x = cp.Variable((N + 1, n_x))
    lam = cp.Variable((N, n_l))
    u = cp.Variable((N, n_u))
    cost = 0
    constraints = [x[0] == x0]
    for k in range(N):
        z = cp.hstack([x[k], lam[k], u[k]])
        cost += cp.quad_form(x[k] - x_des[k], Q[k]) + cp.quad_form(u[k], R[k])
        cost += sigma * cp.quad_form(z - r[k], cp.psd_wrap(G[k]))
        constraints += [x[k + 1] == A[k] @ x[k] + B[k] @ u[k] + D[k] @ lam[k] + d[k],
                        cp.abs(u[k]) <= 0.5, lam[k] >= 0, cp.abs(x[k + 1][:2]) <= [0.3, 0.2]]
    cost += cp.quad_form(x[N] - x_des[N], Q[N])
    cp.Problem(cp.Minimize(cost), constraints).solve(solver=cp.CLARABEL)
    np.testing.assert_allclose(res.z[:, :n_x], x.value[:N], atol=1e-5)
    np.testing.assert_allclose(res.z[:, n_x:n_x + n_l], lam.value, atol=1e-5)
    np.testing.assert_allclose(res.z[:, n_x + n_l:], u.value, atol=1e-5)
    assert qp.fallbacks == 0
    if solver == "osqp":
        # the OSQP workspace is reused (updated in place) for a second solve with new data
        ws = qp._osqp[sigma]
        qp.set_data(A, B, D, d, Q, R, G, x_des)
        res2 = qp.solve(X0, g_c, np.einsum("kab,kb->ka", G, r), sigma)
        assert qp._osqp[sigma] is ws and res2.ok
        np.testing.assert_allclose(res2.z, res.z, atol=1e-6)
