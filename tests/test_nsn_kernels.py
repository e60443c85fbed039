"""NSN's compiled Schur solve against explicit products: the per-tree Delassus blocks, the Schur
matrix-vector product, the conjugate residual against the numpy iteration, and the whole solver
with and without the kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import plants.sim.nsn as nsn
from plants.sim import NSNSolver
from plants.sim._nsn_kernels import HAVE_NUMBA, DelassusBlocks, schur_conjugate_residual, schur_matvec
from plants.sim.accuracy import random_problem
from plants.sim.contact_laws import rigid_contact_form

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="compiled kernels need numba")


def _delassus(p):
    form = rigid_contact_form(p)
    X = form.tree_solver().solve(form.J.T)
    return form.J, X, DelassusBlocks(form.J, X, p.tree_starts, p.contact_trees)


def _schur_inputs(rng, n_c, with_K):
    D = rng.uniform(0.0, 1.0, (n_c, 3))
    D[rng.random(n_c) < 0.3, :2] = 0.0  # inactive friction rows
    Cs = rng.uniform(0.0, 2.0, 3 * n_c)
    K = rng.normal(size=(n_c, 2)) if with_K else np.zeros((n_c, 2))
    return D.reshape(-1), Cs, K


def _explicit(W, D, Cs, K):
    S = D[:, None] * W * D[None, :] + np.diag(Cs)
    for i, k in enumerate(K):
        S[3 * i : 3 * i + 2, 3 * i : 3 * i + 2] += np.outer(k, k)
    return S


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_trees=st.integers(1, 5), n_c=st.integers(1, 12), with_K=st.booleans())
def test_delassus_blocks_and_schur_product_equal_the_explicit_matrices(seed, n_trees, n_c, with_K):
    p = random_problem(seed, n_trees=n_trees, n_c=n_c)
    J, X, W = _delassus(p)
    full = J @ X
    np.testing.assert_allclose(W.dense(3 * n_c), full, rtol=1e-12, atol=1e-12 * np.abs(full).max())
    rng = np.random.default_rng(seed)
    D, Cs, K = _schur_inputs(rng, n_c, with_K)
    x = rng.normal(size=3 * n_c)
    out = np.empty(3 * n_c)
    schur_matvec(W.data, W.ptr, W.rows, W.row_ptr, D, Cs, K, x, W.work, out)
    expected = _explicit(full, D, Cs, K) @ x
    np.testing.assert_allclose(out, expected, rtol=1e-11, atol=1e-12 * np.abs(expected).max())


def test_contacts_within_one_tree_and_trees_without_contacts():
    p = random_problem(4, n_trees=6, n_c=3)
    ct = p.contact_trees.copy()
    ct[0] = (2, 2)  # a contact between two bodies of tree 2 (its rows on tree 2 only)
    J = p.J.copy()
    J[0:3] = 0.0
    J[0:3, 12:18] = np.random.default_rng(0).normal(size=(3, 6))
    q = type(p)(A=p.A, v_star=p.v_star, J=J, phi0=p.phi0, mu=p.mu, stiffness=p.stiffness,
                dissipation=p.dissipation, dt=p.dt, tree_starts=p.tree_starts, contact_trees=ct)
    J, X, W = _delassus(q)
    np.testing.assert_allclose(W.dense(9), J @ X, rtol=1e-12, atol=1e-13)
    assert W.row_ptr.size - 1 <= 6


def test_compiled_conjugate_residual_follows_the_numpy_iteration():
    p = random_problem(9, n_trees=4, n_c=10)
    J, X, W = _delassus(p)
    rng = np.random.default_rng(1)
    D, Cs, K = _schur_inputs(rng, p.n_c, True)
    S = _explicit(J @ X, D, Cs, K)
    b = rng.normal(size=3 * p.n_c)
    diag = np.diag(S).copy()
    for max_it in (1, 3, 10, 200):
        x_ref, k_ref = nsn.conjugate_residual(lambda z: S @ z, b, diag, max_it, 1e-14)
        x = np.empty_like(b)
        k = schur_conjugate_residual(W.data, W.ptr, W.rows, W.row_ptr, D, Cs, K, b, diag, max_it, 1e-14, W.work, x)
        assert k == k_ref
        np.testing.assert_allclose(x, x_ref, rtol=1e-8, atol=1e-10 * np.abs(x_ref).max())
    np.testing.assert_allclose(S @ x, b, rtol=0, atol=1e-8 * np.abs(b).max())  # converged at 200


def test_nsn_with_the_compiled_schur_solve_matches_the_numpy_path(monkeypatch, a1_impact_step):
    problem = a1_impact_step
    fast = NSNSolver(linear_solver="cr").solve(problem)
    monkeypatch.setattr(nsn, "HAVE_NUMBA", False)
    ref = NSNSolver(linear_solver="cr").solve(problem)
    assert fast.status.ok and ref.status.ok
    assert fast.iterations == ref.iterations
    assert abs(fast.inner_iterations - ref.inner_iterations) <= 0.05 * ref.inner_iterations
    np.testing.assert_allclose(fast.gamma, ref.gamma, rtol=0, atol=1e-9 * np.abs(ref.gamma).max())


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_c=st.integers(1, 10), with_K=st.booleans())
def test_direct_schur_solve_solves_the_explicit_system(seed, n_c, with_K):
    """``nsn._schur_direct`` (the Cholesky path of ``linear_solver="cholesky"|"auto"``) against the
    explicit Schur matrix."""
    p = random_problem(seed, n_trees=2, n_c=n_c)
    J, X, _ = _delassus(p)
    full = J @ X
    rng = np.random.default_rng(seed)
    D, Cs, K = _schur_inputs(rng, n_c, with_K)
    Cs = Cs + 0.1  # well conditioned: the check is of the assembly, not of round-off
    b = rng.normal(size=3 * n_c)
    x = nsn._schur_direct(full, D, Cs, K if with_K else None, b)
    np.testing.assert_allclose(_explicit(full, D, Cs, K if with_K else np.zeros((n_c, 2))) @ x, b,
                               rtol=0, atol=1e-8 * np.abs(b).max())
