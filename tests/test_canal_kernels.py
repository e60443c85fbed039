"""CANAL's compiled kernels against their numpy references: the line-search derivatives and the
cone projection (all three regions, property-based), the island Newton directions (compiled
Cholesky, LAPACK for large islands, and the numpy/scipy reference), and the solver with and
without them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import LinAlgError

from plants.sim import CANALSolver
from plants.sim._canal_kernels import HAVE_NUMBA, line_derivatives, project_cone_into
from plants.sim.accuracy import random_problem
from plants.sim.canal import _IslandNewton, _line_derivatives_numpy
from plants.sim.contact_laws import project_cone_with_jacobian, rigid_contact_form

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="compiled kernels need numba")


def _points(rng, n):
    """Arguments of the cone projection in all three regions (stick, slip, open) and on the axis."""
    x = rng.normal(size=(n, 3)) * rng.choice([1e-3, 1.0, 1e3], size=(n, 1))
    x[::7, :2] = 0.0  # on the cone's axis (s = 0: stick or open)
    return x


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 40))
def test_compiled_projection_equals_numpy(seed, n):
    rng = np.random.default_rng(seed)
    x, mu, rho = _points(rng, n), rng.uniform(0.0, 1.5, n), 1.0 + rng.exponential(1.0, n) * (rng.random(n) < 0.5)
    lam_ref, G_ref = project_cone_with_jacobian(x, mu, rho)
    lam, G = np.full((n, 3), np.nan), np.full((n, 3, 3), np.nan)
    project_cone_into(x, mu, rho, lam, G)
    scale = np.abs(x).max()
    np.testing.assert_allclose(lam, lam_ref, rtol=1e-13, atol=1e-14 * scale)
    np.testing.assert_allclose(G, G_ref, rtol=1e-12, atol=1e-13)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 40), alpha=st.floats(0.0, 4.0))
def test_compiled_line_derivatives_equal_numpy(seed, n, alpha):
    rng = np.random.default_rng(seed)
    jv, jd, e, u = (rng.normal(size=(n, 3)) for _ in range(4))
    bv = 10.0 ** rng.uniform(2, 6, n)
    mu, rho = rng.uniform(0.0, 1.5, n), 1.0 + rng.exponential(1.0, n)
    rd0, dAd = rng.normal(), rng.uniform(0.1, 10.0)
    ref = _line_derivatives_numpy(alpha, jv, jd, e, u, bv, mu, rho, rd0, dAd)
    s1, s2 = line_derivatives(alpha, jv, jd, e, u, bv, mu, rho)
    # the sums are of terms of size β |x| |J d|: compare at that scale
    scale = float(np.sum(np.abs(jd) * (bv[:, None] * (np.abs(jv) + alpha * np.abs(jd) + np.abs(e)) + np.abs(u))))
    assert abs((rd0 + alpha * dAd - s1) - ref[0]) <= 1e-13 * (scale + abs(rd0) + alpha * dAd)
    assert abs((dAd + s2) - ref[1]) <= 1e-13 * (float(np.sum(bv[:, None] * jd * jd)) * 2 + dAd)


def test_line_derivatives_match_finite_differences_of_the_first():
    """φ'' is the derivative of φ' wherever no contact changes region (central differences)."""
    rng = np.random.default_rng(3)
    n = 12
    jv, jd, e, u = (rng.normal(size=(n, 3)) for _ in range(4))
    bv, mu, rho = np.full(n, 50.0), rng.uniform(0.2, 1.0, n), np.ones(n)
    for alpha in (0.1, 0.7, 1.9):
        h = 1e-6
        fd = (line_derivatives(alpha + h, jv, jd, e, u, bv, mu, rho)[0]
              - line_derivatives(alpha - h, jv, jd, e, u, bv, mu, rho)[0]) / (2 * h)
        # d/dα Σ jdᵀλ(α) = −Σ β jdᵀ ∂Π jd
        assert -fd == pytest.approx(line_derivatives(alpha, jv, jd, e, u, bv, mu, rho)[1], rel=1e-6)


def _newton_inputs(problem, seed=0):
    rng = np.random.default_rng(seed)
    form = rigid_contact_form(problem)
    Jc = form.J.reshape(problem.n_c, 3, problem.n_v)
    x = rng.normal(size=(problem.n_c, 3)) * 10
    _, G = project_cone_with_jacobian(x, problem.mu, np.ones(problem.n_c))
    return form.A, Jc, G * rng.uniform(1e2, 1e4, problem.n_c)[:, None, None], rng.normal(size=problem.n_v)


@pytest.mark.parametrize("n_trees,n_c", [(1, 3), (4, 10), (6, 2), (8, 20)])
def test_island_newton_direction_equals_the_dense_solve(n_trees, n_c):
    p = random_problem(7 * n_trees + n_c, n_trees=n_trees, n_c=n_c)
    A, Jc, Gb, r = _newton_inputs(p)
    H = A + np.einsum("cai,cab,cbj->ij", Jc, Gb, Jc)
    expected = -np.linalg.solve(H, r)
    for newton in (_IslandNewton(p, A, Jc), _IslandNewton(p, A, Jc, compiled=False)):
        np.testing.assert_allclose(newton.direction(Gb, r), expected, rtol=1e-9, atol=1e-11 * np.abs(expected).max())


def test_large_islands_are_factored_by_lapack_with_the_same_result(monkeypatch):
    p = random_problem(11, n_trees=6, n_c=14)
    A, Jc, Gb, r = _newton_inputs(p, 1)
    small = _IslandNewton(p, A, Jc).direction(Gb, r)
    monkeypatch.setattr(_IslandNewton, "SMALL_ISLAND", 0)
    newton = _IslandNewton(p, A, Jc)
    assert newton._small.size == 0 and len(newton._large) == len(newton.dofs)
    np.testing.assert_allclose(newton.direction(Gb, r), small, rtol=1e-10, atol=1e-13 * np.abs(small).max())


@pytest.mark.parametrize("small", [48, 0])
def test_an_indefinite_island_raises(monkeypatch, small):
    monkeypatch.setattr(_IslandNewton, "SMALL_ISLAND", small)
    p = random_problem(5, n_trees=3, n_c=6)
    A, Jc, Gb, r = _newton_inputs(p)
    A = A.copy()
    A[6:12, 6:12] = -np.eye(6)  # tree 1 indefinite
    with pytest.raises(LinAlgError):
        _IslandNewton(p, A, Jc).direction(np.zeros_like(Gb), r)


def test_canal_with_compiled_kernels_matches_the_numpy_path(monkeypatch, a1_impact_step):
    """The whole solve on an A1 impact step: the same AL/Newton path and impulses."""
    problem = a1_impact_step
    fast = CANALSolver(warm_start=False).solve(problem)
    import plants.sim.canal as canal

    monkeypatch.setattr(canal, "HAVE_NUMBA", False)
    monkeypatch.setattr(_IslandNewton.__init__, "__defaults__", (False,))
    ref = CANALSolver(warm_start=False).solve(problem)
    assert fast.status.ok and ref.status.ok
    assert fast.iterations == ref.iterations
    assert abs(fast.inner_iterations - ref.inner_iterations) <= 2
    assert fast.residual <= 1e-9 and ref.residual <= 1e-9
    np.testing.assert_allclose(fast.gamma, ref.gamma, rtol=0, atol=1e-9 * np.abs(ref.gamma).max())
