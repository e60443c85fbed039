"""The Goldfarb-Idnani kernel against OSQP (polished, tight) and KKT conditions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from c3mpc._dense_qp import GI_INFEASIBLE, GI_OPTIMAL, gi_solve


def solve(H, g, C, b):
    L = np.linalg.cholesky(H)
    J0 = np.ascontiguousarray(scipy.linalg.solve_triangular(L, np.eye(len(g)), lower=True).T)
    x0 = -np.linalg.solve(H, g)
    x = np.empty(len(g))
    act = np.zeros(len(b), np.int64)
    status, it = gi_solve(J0, x0, np.ascontiguousarray(C), b, 1e-10, 500, x, act)
    return status, x, act


def kkt_check(H, g, C, b, x, act, tol=1e-7):
    """Stationarity with nonnegative multipliers on the active set, primal feasibility."""
    assert np.all(C @ x - b >= -tol)
    A = C[act == 1]
    if A.shape[0]:
        mu, *_ = np.linalg.lstsq(A.T, H @ x + g, rcond=None)
        assert np.all(mu >= -tol * max(1, np.abs(mu).max()))
        np.testing.assert_allclose(A.T @ mu, H @ x + g, atol=tol * max(1, np.abs(g).max()))
        np.testing.assert_allclose(A @ x, b[act == 1], atol=tol)
    else:
        np.testing.assert_allclose(H @ x + g, 0, atol=tol * max(1, np.abs(g).max()))


@settings(deadline=None, max_examples=150, derandomize=True)
@given(n=st.integers(1, 12), m=st.integers(0, 20), seed=st.integers(0, 2**31 - 1))
def test_random_feasible_qps_satisfy_kkt(n, m, seed):
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, n))
    H = M @ M.T + 0.1 * np.eye(n)
    g = rng.normal(size=n) * 3
    C = rng.normal(size=(m, n))
    x_feas = rng.normal(size=n)
    b = C @ x_feas - rng.uniform(0, 1, m)  # x_feas is strictly feasible
    status, x, act = solve(H, g, C, b)
    assert status == GI_OPTIMAL
    kkt_check(H, g, C, b, x, act)


@pytest.mark.parametrize("seed", range(10))
def test_matches_osqp_on_box_and_general_constraints(seed):
    import osqp

    rng = np.random.default_rng(seed)
    n, m = 20, 15
    M = rng.normal(size=(n, n))
    H = M @ M.T + np.eye(n)
    g = rng.normal(size=n) * 5
    C = np.vstack([rng.normal(size=(m, n)), np.eye(n), -np.eye(n)])
    b = np.concatenate([-rng.uniform(0.5, 2, m), -np.ones(n), -np.ones(n)])
    status, x, act = solve(H, g, C, b)
    assert status == GI_OPTIMAL
    s = osqp.OSQP()
    s.setup(sp.csc_matrix(np.triu(H)), g, sp.csc_matrix(C), b, np.full(len(b), np.inf),
            verbose=False, eps_abs=1e-10, eps_rel=1e-10, polishing=True, max_iter=100000)
    ref = s.solve(raise_error=False).x
    obj = lambda v: 0.5 * v @ H @ v + g @ v  # noqa: E731
    assert obj(x) <= obj(ref) + 1e-7 * max(1, abs(obj(ref)))
    np.testing.assert_allclose(x, ref, atol=1e-5)


def test_infeasible_detected():
    H = np.eye(2)
    g = np.zeros(2)
    C = np.array([[1.0, 0.0], [-1.0, 0.0]])
    b = np.array([1.0, 0.0])  # x0 >= 1 and x0 <= 0
    status, _, _ = solve(H, g, C, b)
    assert status == GI_INFEASIBLE


def test_degenerate_duplicate_constraints():
    H = np.eye(3)
    g = np.array([1.0, 1.0, 1.0])
    C = np.array([[1.0, 0, 0], [1.0, 0, 0], [2.0, 0, 0], [0, 1.0, 0]])
    b = np.array([0.5, 0.5, 1.0, 0.0])
    status, x, act = solve(H, g, C, b)
    assert status == GI_OPTIMAL
    np.testing.assert_allclose(x, [0.5, 0.0, -1.0], atol=1e-10)
