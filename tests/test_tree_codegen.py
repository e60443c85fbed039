"""Tree solves generated per structure (plants.sim._tree_codegen): same bits as the generic kernels.

The generated code performs the generic kernels' multiply-adds in their order, so every comparison
here is exact (``==``), not a tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

from plants.sim import SubADMMSolver, load_scene
from plants.sim import _tree_codegen as codegen
from plants.sim._subadmm_kernels import HAVE_NUMBA, cholesky_solve_trees, ltdl_solve_trees

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="generated kernels need numba")


def random_forest(rng: np.random.Generator, sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(dof_parent, tree_starts) of trees of these sizes, each dof's parent a random earlier dof of
    its tree (−1 for the root)."""
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    parent = np.full(starts[-1], -1, dtype=np.int64)
    for st, n in zip(starts[:-1], sizes):
        for k in range(1, n):
            parent[st + k] = st + rng.integers(0, k)
    return parent, starts


def random_factors(rng: np.random.Generator, starts: np.ndarray) -> np.ndarray:
    """(n_trees, s, s) random factor storage with a diagonal bounded away from 0."""
    sizes = np.diff(starts)
    s = int(sizes.max())
    F = rng.normal(size=(sizes.size, s, s))
    idx = np.arange(s)
    F[:, idx, idx] = 1.0 + rng.random((sizes.size, s))
    return F


def test_ltdl_solves_equal_the_generic_kernel_bit_for_bit_on_mixed_random_trees():
    """Four random tree structures (one repeated, one a single dof) in one generated module: the
    solve equals ``ltdl_solve_trees`` exactly, also in place (y is out)."""
    rng = np.random.default_rng(3)
    trees = [9, 5, 1, 12]
    parent, starts = random_forest(rng, trees)
    parent = np.concatenate([parent, np.where(parent[:9] >= 0, parent[:9] + starts[-1], -1)])  # tree 0 again
    starts = np.append(starts, starts[-1] + 9)
    generated = codegen.ltdl_tree_solves(parent, starts)
    assert generated is not None and len(generated.structures) == 4
    assert generated.tree_group.tolist() == [0, 1, 2, 3, 0]
    F = random_factors(rng, starts)
    y = rng.normal(size=starts[-1])
    expected = np.empty_like(y)
    ltdl_solve_trees(F, parent, starts, y, expected)
    got = generated.solve(F, starts, y, np.empty_like(y))
    assert np.array_equal(got, expected)
    inplace = y.copy()
    generated.solve(F, starts, inplace, inplace)
    assert np.array_equal(inplace, expected)
    # the text says what it is, and a second request is the same object (no regeneration)
    assert "do not edit" in generated.path.read_text()
    assert codegen.ltdl_tree_solves(parent, starts) is generated


def test_cholesky_solves_equal_the_generic_kernel_bit_for_bit():
    rng = np.random.default_rng(4)
    starts = np.array([0, 6, 24, 31, 49], dtype=np.int64)  # sizes 6, 18, 7, 18
    generated = codegen.cholesky_tree_solves(starts)
    assert generated is not None and generated.structures == (6, 7, 18)
    L = np.tril(random_factors(rng, starts))
    y = rng.normal(size=starts[-1])
    expected = np.empty_like(y)
    cholesky_solve_trees(L, starts, y, expected)
    assert np.array_equal(generated.solve(L, starts, y, np.empty_like(y)), expected)


def test_structures_reject_an_ordering_that_is_not_a_tree():
    with pytest.raises(ValueError, match="tree 0"):
        codegen.ltdl_structures(np.array([-1, 2, 0]), np.array([0, 3]))
    with pytest.raises(ValueError, match="tree 1"):  # a parent in another tree
        codegen.ltdl_structures(np.array([-1, 0, 1, 2]), np.array([0, 2, 4]))


def test_too_large_structures_fall_back_to_the_generic_kernels(monkeypatch):
    parent, starts = random_forest(np.random.default_rng(5), [4, 4])
    monkeypatch.setattr(codegen, "MAX_PAIRS", 2)
    monkeypatch.setattr(codegen, "_BY_STRUCTURE", {})
    assert codegen.ltdl_tree_solves(parent, starts) is None
    assert codegen.cholesky_tree_solves(starts) is None


def test_kernel_cache_dir_honours_the_environment_and_writes_each_text_once(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("C3MPC_KERNEL_CACHE", str(tmp_path / "k"))
    assert codegen.kernel_cache_dir() == tmp_path / "k"
    with caplog.at_level("INFO", logger="plants.sim._tree_codegen"):
        module, path = codegen._load("probe", "ANSWER = 42\n")
    assert "compiles them on first use" in caplog.text  # a new structure says why the first solve is slow
    assert module.ANSWER == 42 and path.parent == tmp_path / "k" and path.read_text() == "ANSWER = 42\n"
    mtime = path.stat().st_mtime_ns
    assert codegen._load("probe", "ANSWER = 42\n") == (module, path) and path.stat().st_mtime_ns == mtime
    monkeypatch.setenv("C3MPC_KERNEL_CACHE", str(tmp_path / "elsewhere"))  # loaded: its own file is reported
    assert codegen._load("probe", "ANSWER = 42\n") == (module, path)


def test_boolean_options_reject_other_types():
    with pytest.raises(TypeError, match="generated_solves must be a bool"):
        SubADMMSolver(generated_solves="no")
    with pytest.raises(TypeError, match="warm_start must be a bool"):
        SubADMMSolver(warm_start=1)


@pytest.fixture(scope="module")
def a1(a1_impact_step):
    return a1_impact_step


@pytest.mark.parametrize("variant", ["body", "no_body"])
def test_solver_with_generated_solves_gives_the_generic_solvers_bits(a1, variant):
    """SubADMM (LTDL) and No Body (dense Cholesky) on 8 A1s, 60 iterations: identical impulses,
    velocities and residual with the generated and the generic tree solves."""
    kw = dict(variant=variant, max_iterations=60, tol=1e-300, warm_start=False, metric_every=20)
    generated = SubADMMSolver(**kw).solve(a1)
    generic = SubADMMSolver(generated_solves=False, **kw).solve(a1)
    assert generated.iterations == generic.iterations == 60
    assert np.array_equal(generated.gamma, generic.gamma) and np.array_equal(generated.v, generic.v)
    assert generated.residual_history == generic.residual_history
    # one generated structure: the A1 (a free-flyer base and four 3-joint legs, 99 ancestor pairs)
    solver = SubADMMSolver(**kw)
    solver.solve(a1)
    if variant == "body":
        g = solver._body_factor.generated
        assert len(g.structures) == 1 and sum(len(codegen._ancestors(g.structures[0], k)) for k in range(18)) == 99


def test_generated_text_carries_the_fingerprint_of_the_kernels_it_calls():
    """numba's cache checks a file's own timestamp only: the generated text names the sha1 of
    _subadmm_kernels.py, so editing those kernels yields a new file (never a stale compiled loop)."""
    import hashlib
    from pathlib import Path

    from plants.sim import _subadmm_kernels

    generated = codegen.cholesky_tree_solves(np.array([0, 3, 6]))
    digest = hashlib.sha1(Path(_subadmm_kernels.__file__).read_bytes()).hexdigest()
    assert digest in generated.path.read_text()


def test_fixed_base_arm_and_free_ball_simulate_identically_with_generated_kernels():
    """franka-push-ball: a 7-joint fixed-base chain and a free ball (two structures, one revolute
    root on the world): 30 SubADMM steps give the same trajectory, bit for bit, as the generic kernels.
    Without the fingers' mimic coupler (a joint-space row: SubADMM would run ``no_body``)."""
    q = {}
    for generated in (True, False):
        sim = load_scene("franka-push-ball", solver="subadmm", mimic=False,
                         solver_options={"generated_solves": generated, "tol": 1e-6, "max_iterations": 3000})
        q[generated] = sim.run(0.03).q
        if generated:  # the arm and the ball: two structures, body passes generated for both
            g = sim.solver._body_factor.generated
            assert len(g.structures) == 2 and g.tree_joint0 is not None
    assert q[True].shape[0] == 31 and np.array_equal(q[True], q[False])


def test_trees_whose_joints_cannot_be_walked_statically_keep_generated_solves_and_generic_passes(a1, monkeypatch):
    """If a tree's joints are not one ascending run (tree_joints → None), only the solves are
    generated and the generic body passes run (``module.iterate_body``): same bits as generic."""
    from plants.sim import subadmm

    monkeypatch.setattr(codegen, "tree_joints", lambda *a: None)
    monkeypatch.setattr(codegen, "_BY_STRUCTURE", {})
    kw = dict(max_iterations=40, tol=1e-300, warm_start=False, metric_every=20)
    solver = SubADMMSolver(**kw)
    seen = []
    original = subadmm._Iteration.__init__

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen.append(self.loop)

    monkeypatch.setattr(subadmm._Iteration, "__init__", spy)
    got = solver.solve(a1)
    g = solver._body_factor.generated
    assert g is not None and g.tree_joint0 is None and seen[-1] is g.module.iterate_body
    generic = SubADMMSolver(generated_solves=False, **kw).solve(a1)
    assert np.array_equal(got.gamma, generic.gamma) and np.array_equal(got.v, generic.v)
