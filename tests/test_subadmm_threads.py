"""SubADMM's split variants on groups of islands in parallel (``SubADMMOptions.threads``).

Islands share no contact, piece or dof, so a group's iteration performs the serial iteration's
operations on its part of the arrays in the same order: every comparison with the serial solver
here is exact (``==``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import plants.sim.subadmm as subadmm
from plants.sim import SubADMMSolver
from plants.sim import _tree_codegen as codegen
from plants.sim._subadmm_kernels import GROUP_GAP, HAVE_NUMBA, island_group_layout
from plants.sim.accuracy import random_problem

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="parallel groups need numba")


@pytest.fixture(scope="module")
def a1(a1_impact_step):
    """An impact step of 8 A1s: 67 robot–ground contacts, 8 islands (conftest)."""
    return a1_impact_step


def _spy(monkeypatch) -> list:
    made = []
    init = subadmm._Iteration.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(subadmm._Iteration, "__init__", spy)
    return made


def _same(a, b):
    assert a.status == b.status and a.iterations == b.iterations
    assert np.array_equal(a.gamma, b.gamma) and np.array_equal(a.v, b.v)
    assert a.residual == b.residual and a.primal_residual == b.primal_residual
    assert a.timings["theta_d"] == b.timings["theta_d"] and a.beta == b.beta


@pytest.mark.parametrize("variant", ["body", "no_body"])
@pytest.mark.parametrize("threads", [2, 3])
def test_groups_of_islands_give_the_serial_bits_on_8_a1s(a1, variant, threads, monkeypatch):
    made = _spy(monkeypatch)
    opts = dict(variant=variant, max_iterations=60, tol=1e-300, warm_start=False, metric_every=20)
    serial = SubADMMSolver(**opts).solve(a1)
    parallel = SubADMMSolver(**opts, threads=threads).solve(a1)
    _same(serial, parallel)
    assert made[0].groups is None and made[-1].groups is not None
    assert made[-1].groups.dmax.size == threads


@pytest.mark.parametrize("variant", ["body", "no_body"])
def test_adaptive_penalty_with_groups_refactors_and_keeps_the_serial_bits(a1, variant):
    opts = dict(variant=variant, max_iterations=200, tol=1e-8, warm_start=False, adaptive_penalty=True)
    serial = SubADMMSolver(**opts).solve(a1)
    parallel = SubADMMSolver(**opts, threads=2).solve(a1)
    _same(serial, parallel)
    assert serial.timings["factorizations"] > 1  # the penalty changed: the groups were rebuilt


@pytest.mark.parametrize("seed", range(6))
def test_no_body_groups_with_contacts_between_trees_give_the_serial_bits(seed):
    """Random problems: contacts between trees join them into islands of several trees."""
    p = random_problem(seed, n_trees=9, n_c=5)
    opts = dict(variant="no_body", max_iterations=40, tol=1e-300, warm_start=False)
    _same(SubADMMSolver(**opts).solve(p), SubADMMSolver(**opts, threads=4).solve(p))


def test_a_single_island_runs_serially(monkeypatch):
    made = _spy(monkeypatch)
    p = random_problem(3, n_trees=1, n_c=4)
    opts = dict(variant="no_body", max_iterations=30, tol=1e-300, warm_start=False)
    _same(SubADMMSolver(**opts).solve(p), SubADMMSolver(**opts, threads=2).solve(p))
    assert made[-1].groups is None


def _islands(n_t, ct):
    """Tree labels of the connected components (reference: repeated relaxation)."""
    label = np.arange(n_t)
    changed = True
    while changed:
        changed = False
        for a, b in ct:
            if a >= 0 and b >= 0 and label[a] != label[b]:
                label[a] = label[b] = min(label[a], label[b])
                changed = True
    return label


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_t=st.integers(1, 12), n_c=st.integers(0, 15), n_groups=st.integers(1, 5))
def test_layout_keeps_islands_whole_and_balances_them(seed, n_t, n_c, n_groups):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 8, n_t)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    ct = np.stack([rng.integers(-1, n_t, n_c), rng.integers(0, n_t, n_c)], axis=1).astype(np.int64)
    piece_contact = np.sort(np.concatenate([np.arange(n_c), rng.integers(0, max(n_c, 1), n_c // 2)]))[
        : n_c + n_c // 2].astype(np.int64) if n_c else np.zeros(0, np.int64)
    (n_used, tree_perm, tp, contact_perm, cp, piece_perm, pp, dof_perm, dp, contact_rank,
     dof_rank) = island_group_layout(n_groups, starts, ct, piece_contact)
    label = _islands(n_t, ct)
    assert 1 <= n_used <= min(n_groups, len(set(label)))
    for perm, n in ((tree_perm, n_t), (contact_perm, n_c), (piece_perm, piece_contact.size), (dof_perm, starts[-1])):
        assert np.array_equal(np.sort(perm), np.arange(n))
    group_of_tree = np.repeat(np.arange(n_used), np.diff(tp))[np.argsort(tree_perm)]
    for t in range(n_t):  # an island never spans two groups
        assert len(set(group_of_tree[label == label[t]])) == 1
    for g in range(n_used):
        for perm, ptr in ((tree_perm, tp), (contact_perm, cp), (piece_perm, pp), (dof_perm, dp)):
            assert np.all(np.diff(perm[ptr[g]:ptr[g + 1]]) > 0)  # ascending within a group
        own = tree_perm[tp[g]:tp[g + 1]]
        mine = dof_perm[dp[g]:dp[g + 1]]
        assert np.array_equal(mine, np.concatenate([np.arange(starts[t], starts[t + 1]) for t in own]))
        assert np.array_equal(dof_rank[mine], np.arange(mine.size))
        cs = contact_perm[cp[g]:cp[g + 1]]
        assert np.array_equal(contact_rank[cs], np.arange(cs.size))
        side = np.where(ct[cs, 0] >= 0, ct[cs, 0], ct[cs, 1])
        assert np.all(np.isin(side, own))
        assert np.all(np.isin(piece_contact[piece_perm[pp[g]:pp[g + 1]]], cs))
    # balance (largest island first onto the lightest group): loads differ by at most one island
    weight = np.array([sizes[label == k].sum() + 3 * np.sum(label[np.where(ct[:, 0] >= 0, ct[:, 0], ct[:, 1])] == k)
                       for k in range(n_t)], float)
    loads = [sum(weight[k] for k in set(label[tree_perm[tp[g]:tp[g + 1]]])) for g in range(n_used)]
    if n_used == n_groups:
        assert max(loads) - min(loads) <= weight.max() + 1e-9


def test_threads_option_is_checked():
    with pytest.raises(ValueError, match="threads"):
        SubADMMSolver(threads=0)
    for bad in (True, 1.5, "2"):
        with pytest.raises(TypeError, match="threads"):
            SubADMMSolver(threads=bad)
    assert SubADMMSolver(threads=np.int64(2)).options.threads == 2


def test_generated_drivers_use_the_gap_the_builders_allocate():
    """The driver slices group g's written arrays at ``g × GROUP_GAP``: the builder leaves that many
    rows after each group."""
    assert codegen.GROUP_GAP == GROUP_GAP and f"G = {GROUP_GAP} * g" in codegen._BODY_GROUPS
    names = [n for n, kind in codegen.BODY_GROUP_FIELDS if kind is not None]
    assert names[:3] == ["F", "tree_group", "tree_starts"] and names[-2:] == ["V", "W"]
