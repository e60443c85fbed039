"""The compiled Gauss–Seidel sweep of the PGS baseline against its Python reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import plants.sim.pgs as pgs
from plants.sim import PGSSolver
from plants.sim._sap_kernels import HAVE_NUMBA
from plants.sim.accuracy import random_problem

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="the compiled sweep needs numba")


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_c=st.integers(1, 12), sweeps=st.integers(1, 5))
def test_compiled_sweep_equals_the_python_loop(seed, n_c, sweeps):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3 * n_c, 3 * n_c))
    W = X @ X.T + 0.1 * np.eye(3 * n_c)  # a Delassus operator: SPD
    w = rng.normal(size=3 * n_c)
    c = rng.uniform(0, 0.1, n_c) * (rng.random(n_c) < 0.5)
    mu = rng.uniform(0, 1.2, n_c)
    Wnn = np.diag(W)[2::3] + c
    wt_inv = 1.0 / rng.uniform(0.5, 2.0, n_c) / np.diag(W)[0::3]
    lam_c, lam_r = np.zeros(3 * n_c), np.zeros(3 * n_c)
    for _ in range(sweeps):
        pgs.pgs_sweep(W, w, lam_c, Wnn, c, mu, wt_inv)
        pgs.pgs_sweep_reference(W, w, lam_r, Wnn, c, mu, wt_inv)
    np.testing.assert_allclose(lam_c, lam_r, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(lam_r).max()))
    assert np.all(lam_c[2::3] >= 0)
    assert np.all(np.hypot(lam_c[0::3], lam_c[1::3]) <= mu * lam_c[2::3] * (1 + 1e-12) + 1e-300)


@pytest.mark.parametrize("seed", range(4))
def test_pgs_solver_with_the_compiled_sweep_matches_the_reference(seed, monkeypatch):
    p = random_problem(seed, n_trees=3, n_c=6)
    fast = PGSSolver(warm_start=False, tol=1e-14, max_iterations=60).solve(p)
    monkeypatch.setattr(pgs, "HAVE_NUMBA", False)
    ref = PGSSolver(warm_start=False, tol=1e-14, max_iterations=60).solve(p)
    assert fast.iterations == ref.iterations
    np.testing.assert_allclose(fast.gamma, ref.gamma, rtol=0, atol=1e-9 * max(1.0, np.abs(ref.gamma).max()))
    np.testing.assert_allclose(fast.residual_history, ref.residual_history, rtol=1e-6, atol=1e-14)
