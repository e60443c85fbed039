"""Tests of :mod:`lcs.lcp`: ``solve_lcp`` / ``solve_lcp_batch`` and the compiled Lemke kernels.

Every solution is checked independently of the solver's own bookkeeping (z >= 0, w = F z + q >= 0,
z ⟂ w recomputed here). For P-matrices (unique solution) z is also compared against the
pure-numpy reference ``lcs._lemke_reference.lemke_reference`` and, for n <= 6, against a
brute-force enumeration of all 2^n complementary bases written in this file.

All randomness is seeded; hypothesis runs derandomized.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lcs import LCPBatchResult, LCPResult, LCPStatus, solve_lcp, solve_lcp_batch
from lcs import _lemke_kernel as K
from lcs._lemke_reference import lemke_reference

TOL = 1e-9


# ----------------------------------------------------------------------------- helpers
def brute_force_solutions(F: np.ndarray, q: np.ndarray, tol: float = 1e-10) -> list[np.ndarray]:
    """Every solution given by a nonsingular complementary basis (all 2^n index sets)."""
    n = q.size
    scale = max(1.0, float(np.abs(q).max(initial=0.0)))
    sols = []
    for k in range(n + 1):
        for active in itertools.combinations(range(n), k):
            a = list(active)
            z = np.zeros(n)
            if a:
                Faa = F[np.ix_(a, a)]
                if np.linalg.cond(Faa) > 1e12:
                    continue
                z[a] = np.linalg.solve(Faa, -q[a])
            w = F @ z + q
            if z.min() >= -tol * scale and w.min() >= -tol * scale:
                sols.append(z)
    return sols


def assert_solves(F: np.ndarray, q: np.ndarray, sol: LCPResult, tol: float = TOL) -> None:
    """Status SOLVED with small residual, and an independent complementarity check."""
    assert sol.status is LCPStatus.SOLVED, (sol.status, F, q)
    assert sol.found
    assert sol.residual <= tol, sol.residual
    z = sol.z
    assert z.shape == q.shape and np.all(np.isfinite(z))
    scale = max(1.0, float(np.abs(q).max(initial=0.0)))
    w = F @ z + q
    np.testing.assert_allclose(sol.w, w, rtol=0, atol=1e-12 * scale * max(1.0, np.abs(z).max(
        initial=0.0)) * max(1.0, np.abs(F).max(initial=0.0)))
    assert z.min(initial=0.0) >= -tol * scale
    assert w.min(initial=0.0) >= -tol * scale
    size = max(1.0, np.abs(z).max(initial=0.0), np.abs(w).max(initial=0.0))
    assert abs(z @ w) <= 10 * tol * scale * size * q.size
    # the reported residual is the documented relative natural residual
    nat = np.abs(np.minimum(z, w)).max(initial=0.0) / scale
    roundoff = 1e-14 * size * max(1.0, np.abs(F).max(initial=0.0)) * q.size / scale
    assert sol.residual == pytest.approx(nat, abs=roundoff)


def spd(rng: np.random.Generator, n: int, eps: float = 0.05) -> np.ndarray:
    """Symmetric positive definite: A A^T + eps I."""
    A = rng.standard_normal((n, n))
    return A @ A.T + eps * np.eye(n)


def diag_dominant(rng: np.random.Generator, n: int) -> np.ndarray:
    """Nonsymmetric, strictly row-diagonally dominant with positive diagonal (a P-matrix)."""
    F = rng.standard_normal((n, n))
    F[np.diag_indices(n)] = np.abs(F).sum(axis=1) + rng.uniform(0.05, 1.0, n)
    return F


def psd_low_rank(rng: np.random.Generator, n: int) -> np.ndarray:
    """Symmetric PSD and singular: B B^T with rank(B) < n (rank 0 allowed)."""
    r = int(rng.integers(0, n))
    B = rng.standard_normal((n, r))
    return B @ B.T


def psd_skew(rng: np.random.Generator, n: int) -> np.ndarray:
    """Nonsymmetric PSD (monotone): singular B B^T plus a skew-symmetric part."""
    S = rng.standard_normal((n, n))
    return psd_low_rank(rng, n) + (S - S.T)


def complementary_pair(rng: np.random.Generator, n: int, p_z: float = 0.5,
                       p_w: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """z*, w* >= 0 with z*_i w*_i = 0; some indices have z*_i = w*_i = 0 (degenerate)."""
    z = np.abs(rng.standard_normal(n)) + 0.1
    z *= rng.random(n) < p_z
    w = (np.abs(rng.standard_normal(n)) + 0.1) * (z == 0)
    w *= rng.random(n) < p_w
    return z, w


def assert_unique_solution(F: np.ndarray, q: np.ndarray, z: np.ndarray) -> None:
    """For a P-matrix: z equals the reference Lemke and (n <= 6) the brute-force solution."""
    status, z_ref, _ = lemke_reference(F, q)
    assert status == K.STATUS_SOLVED
    np.testing.assert_allclose(z, z_ref, rtol=0, atol=1e-8)
    if q.size <= 6:
        sols = brute_force_solutions(F, q)
        assert sols, "brute force found no solution for a P-matrix LCP"
        # a P-matrix LCP has exactly one solution
        for s in sols:
            np.testing.assert_allclose(s, sols[0], rtol=0, atol=1e-8)
        np.testing.assert_allclose(z, sols[0], rtol=0, atol=1e-8)


# ----------------------------------------------------------------------------- random LCPs
@pytest.mark.parametrize("kind", ["spd", "diag_dominant"])
def test_random_p_matrix_lcps(kind):
    """P-matrix LCPs with random q: solved, and z equals reference Lemke and brute force."""
    rng = np.random.default_rng(1 if kind == "spd" else 2)
    make = spd if kind == "spd" else diag_dominant
    solved = 0
    for _ in range(250):
        n = int(rng.integers(1, 11))
        F = make(rng, n)
        q = rng.standard_normal(n) * rng.choice([0.1, 1.0, 10.0])
        sol = solve_lcp(F, q)
        assert_solves(F, q, sol)
        assert_unique_solution(F, q, sol.z)
        solved += 1
    assert solved == 250


@pytest.mark.parametrize("kind", ["low_rank", "skew"])
def test_random_psd_singular_lcps(kind):
    """Singular PSD F with q = w* - F z* (a solution exists): always solved."""
    rng = np.random.default_rng(3 if kind == "low_rank" else 4)
    make = psd_low_rank if kind == "low_rank" else psd_skew
    for _ in range(200):
        n = int(rng.integers(1, 11))
        F = make(rng, n)
        assert np.linalg.matrix_rank(F + F.T, tol=1e-9) < n  # singular symmetric part
        z_star, w_star = complementary_pair(rng, n)
        q = w_star - F @ z_star
        sol = solve_lcp(F, q)
        assert_solves(F, q, sol)


def test_degenerate_q_p_matrix():
    """Degenerate q (zeros, repeated entries, z_i = w_i = 0): unique solution recovered."""
    rng = np.random.default_rng(5)
    count = 0
    for trial in range(300):
        n = int(rng.integers(1, 9))
        F = spd(rng, n, eps=0.5) if trial % 2 == 0 else diag_dominant(rng, n)
        mode = trial % 3
        if mode == 0:  # q built so that some i have z_i = w_i = 0
            z_star, w_star = complementary_pair(rng, n, p_z=0.4, p_w=0.4)
            q = w_star - F @ z_star
        elif mode == 1:  # repeated entries (all equal, or a few distinct values)
            q = rng.choice([-1.0, -0.5, 0.0, 1.0], size=n) if n > 2 else np.full(n, -1.0)
        else:  # zeros mixed with negatives
            q = np.where(rng.random(n) < 0.5, 0.0, -np.abs(rng.standard_normal(n)))
        sol = solve_lcp(F, q)
        assert_solves(F, q, sol)
        assert_unique_solution(F, q, sol.z)
        if mode == 0:  # uniqueness: the constructed complementary pair is the solution
            np.testing.assert_allclose(sol.z, z_star, rtol=0, atol=1e-8)
            np.testing.assert_allclose(sol.w, w_star, rtol=0, atol=1e-8)
        count += 1
    assert count == 300


def test_degenerate_q_psd_singular():
    """Singular PSD F with degenerate q (zeros, repeated values, z_i = w_i = 0)."""
    rng = np.random.default_rng(6)
    for trial in range(150):
        n = int(rng.integers(1, 9))
        # integer data gives exact ties in the ratio tests
        B = rng.integers(-1, 2, (n, int(rng.integers(0, n)))).astype(float)
        F = B @ B.T
        if trial % 2:
            S = rng.integers(-1, 2, (n, n)).astype(float)
            F = F + S - S.T
        z_star = rng.integers(0, 3, n) * (rng.random(n) < 0.5)
        w_star = rng.integers(0, 3, n) * (z_star == 0) * (rng.random(n) < 0.5)
        q = w_star - F @ z_star
        sol = solve_lcp(F, q)
        assert_solves(F, q, sol)


# ----------------------------------------------------------------------------- failures
@pytest.mark.parametrize("n", [2, 5])
def test_negative_identity_ray_termination(n):
    """F = -I, q < 0 has no solution; F is not PSD so the status is RAY_TERMINATION."""
    sol = solve_lcp(-np.eye(n), -np.arange(1.0, n + 1))
    assert sol.status is LCPStatus.RAY_TERMINATION
    assert sol.found is False and sol.status.found is False
    assert np.all(np.isnan(sol.z)) and np.all(np.isnan(sol.w))
    assert sol.residual == np.inf


@pytest.mark.parametrize("F, q", [
    # w1 = -1 whatever z is
    (np.zeros((2, 2)), [-1.0, 1.0]),
    (np.zeros((4, 4)), [0.0, 1.0, -1.0, 2.0]),
    # w1 + w2 = -2 < 0 for every z
    ([[1.0, -1.0], [-1.0, 1.0]], [-1.0, -1.0]),
    # skew-symmetric (PSD): w2 = -z1 - 1 < 0 for every z1 >= 0
    ([[0.0, 1.0], [-1.0, 0.0]], [-1.0, -1.0]),
    # the same in dimension 4 (Lemke path, not the tiny enumeration)
    (np.kron(np.eye(2), [[0.0, 1.0], [-1.0, 0.0]]), [-1.0, -1.0, 1.0, 1.0]),
])
def test_psd_infeasible(F, q):
    """A PSD F whose LCP has no feasible point is reported INFEASIBLE."""
    sol = solve_lcp(F, q)
    assert sol.status is LCPStatus.INFEASIBLE
    assert sol.status == LCPStatus.INFEASIBLE
    assert sol.found is False and sol.status.found is False
    assert np.all(np.isnan(sol.z))
    assert sol.residual == np.inf


def test_max_iterations():
    """A pivot budget of 1 cannot solve a problem that needs several pivots."""
    n = 6
    F = np.eye(n) + 0.1 * np.ones((n, n))
    q = -np.ones(n)
    full = solve_lcp(F, q)
    assert_solves(F, q, full)
    assert full.iterations > 2
    sol = solve_lcp(F, q, max_iterations=1)
    assert sol.status is LCPStatus.MAX_ITERATIONS
    assert not sol.found
    assert sol.iterations == 1
    assert np.all(np.isnan(sol.z))
    short = solve_lcp(F, q, max_iterations=full.iterations - 1)
    assert short.status is LCPStatus.MAX_ITERATIONS
    exact = solve_lcp(F, q, max_iterations=full.iterations)
    assert_solves(F, q, exact)
    with pytest.raises(ValueError, match="max_iterations"):
        solve_lcp(F, q, max_iterations=0)


# ----------------------------------------------------------------------------- batch
def _random_batch(rng, nb, n, shared):
    if shared:
        F = spd(rng, n)
    else:
        F = np.stack([psd_skew(rng, n) if k % 3 == 2 else spd(rng, n) for k in range(nb)])
    q = rng.standard_normal((nb, n))
    return F, q


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("n", [1, 3, 4, 8])
def test_batch_matches_single(shared, n):
    """solve_lcp_batch agrees elementwise with solve_lcp (shared and per-problem F)."""
    rng = np.random.default_rng(10 + n + 100 * shared)
    nb = 12
    F, q = _random_batch(rng, nb, n, shared)
    if not shared:  # one infeasible PSD problem and one F = -I ray in the batch
        F[1] = 0.0
        q[1] = -1.0
        F[2] = -np.eye(n)
        q[2] = -np.abs(q[2]) - 0.1
    res = solve_lcp_batch(F, q)
    assert isinstance(res, LCPBatchResult)
    assert len(res) == nb
    assert res.z.shape == (nb, n) and res.w.shape == (nb, n)
    assert res.status.shape == res.iterations.shape == res.residual.shape == (nb,)
    for k in range(nb):
        Fk = F if shared else F[k]
        single = solve_lcp(Fk, q[k])
        item = res[k]
        assert isinstance(item, LCPResult)
        assert item.status is single.status
        assert item.iterations == single.iterations
        np.testing.assert_allclose(item.z, single.z, rtol=0, atol=1e-12, equal_nan=True)
        np.testing.assert_allclose(item.w, single.w, rtol=0, atol=1e-12, equal_nan=True)
        assert item.residual == pytest.approx(single.residual, abs=1e-15) or (
            item.residual == single.residual == np.inf)
        np.testing.assert_array_equal(item.z, res.z[k])
        if single.found:
            assert_solves(Fk, q[k], item)
    if shared:
        assert res.all_found
    else:
        assert not res.all_found
        assert res[1].status is LCPStatus.INFEASIBLE
        assert res[2].status is LCPStatus.RAY_TERMINATION


def test_batch_shared_f_3d_singleton():
    """A (1, n, n) F is shared across the batch like an (n, n) one."""
    rng = np.random.default_rng(20)
    F = spd(rng, 4)
    q = rng.standard_normal((5, 4))
    a = solve_lcp_batch(F, q)
    b = solve_lcp_batch(F[None], q)
    np.testing.assert_array_equal(a.z, b.z)


# ----------------------------------------------------------------------------- degenerate
def _cyclic(n: int) -> np.ndarray:
    """I + 2 C with C the cyclic shift: a P-matrix for odd n; every row ties when q = -1."""
    return np.eye(n) + 2.0 * np.roll(np.eye(n), 1, axis=1)


@pytest.mark.parametrize("F, q", [
    (_cyclic(3), -np.ones(3)),
    (_cyclic(5), -np.ones(5)),
    (_cyclic(7), -np.ones(7)),
    # all-ones (rank 1) matrix with all-equal q: a whole face of solutions, every ratio ties
    (np.ones((6, 6)), -np.ones(6)),
    # zero row and column with q_0 = 0 (z_0 is free, w_0 = 0 always)
    (np.block([[np.zeros((1, 1)), np.zeros((1, 4))], [np.zeros((4, 1)), np.eye(4) + 1.0]]),
     np.array([0.0, -1.0, -1.0, -1.0, -1.0])),
    # zero column only: z_0 has no effect; q_0 >= 0 is required and given
    (np.column_stack([np.zeros(5), np.vstack([np.ones(4), np.eye(4) * 2.0])]),
     np.array([1.0, -1.0, -1.0, -1.0, -1.0])),
    # identity with repeated / zero q entries
    (np.eye(6), np.array([-1.0, -1.0, 0.0, 0.0, -1.0, -1.0])),
    # a 2x2 block repeated: two identical subproblems
    (np.kron(np.eye(3), [[2.0, 1.0], [1.0, 2.0]]), -np.ones(6)),
])
def test_cycling_prone_degenerate(F, q):
    """Heavily degenerate problems (ties in every ratio test): solved, and Lemke alone too."""
    F = np.asarray(F, float)
    sol = solve_lcp(F, q)
    assert_solves(F, q, sol)
    n = q.size
    z = np.empty(n)
    status, pivots = K.lemke(F, q, np.ones(n), 50 * (n + 1), z)
    assert status == K.STATUS_SOLVED
    assert pivots < 50 * (n + 1)
    assert np.abs(np.minimum(z, F @ z + q)).max() <= 1e-12
    ref_status, z_ref, ref_pivots = lemke_reference(F, q)
    assert ref_status == status and ref_pivots == pivots
    np.testing.assert_allclose(z, z_ref, rtol=0, atol=1e-10)


def test_trivial_and_zero_q():
    """q >= 0 (including q = 0 and -0.0) gives z = 0 without pivoting."""
    for q in ([0.0, 0.0, 0.0], [-0.0, 1.0, 0.0], [3.0, 0.0, 2.0, 0.0, 1.0]):
        n = len(q)
        sol = solve_lcp(-np.eye(n), q)
        assert sol.found and sol.iterations == 0
        np.testing.assert_array_equal(sol.z, np.zeros(n))


# ----------------------------------------------------------------------------- kernels
def test_tiny_fast_path_matches_lemke():
    """For n <= 3 the basis enumeration (used by solve_lcp) and Lemke give the same z."""
    rng = np.random.default_rng(30)
    for trial in range(300):
        n = int(rng.integers(1, K.TINY_N + 1))
        F = spd(rng, n) if trial % 2 else diag_dominant(rng, n)
        q = rng.standard_normal(n)
        if np.all(q >= 0):
            q[0] = -1.0
        sol = solve_lcp(F, q)
        assert_solves(F, q, sol)
        assert sol.iterations == 0  # the tiny path, not Lemke, solved it
        z_lemke = np.full(n, -7.0)
        status, pivots = K.lemke(F, q, np.ones(n), 50 * (n + 1), z_lemke)
        assert status == K.STATUS_SOLVED and pivots >= 2
        z_tiny = np.full(n, -7.0)
        assert K.enumerate_tiny(F, q, 1e-12, z_tiny)
        np.testing.assert_allclose(z_lemke, sol.z, rtol=0, atol=1e-10)
        np.testing.assert_allclose(z_tiny, sol.z, rtol=0, atol=1e-10)


def test_kernel_matches_reference_pivot_for_pivot():
    """Compiled Lemke and the numpy reference take the same pivots and return the same z."""
    rng = np.random.default_rng(31)
    for trial in range(200):
        n = int(rng.integers(1, 11))
        F = [spd, diag_dominant, psd_low_rank, psd_skew][trial % 4](rng, n)
        if trial % 4 >= 2:
            z_star, w_star = complementary_pair(rng, n)
            q = w_star - F @ z_star
        else:
            q = rng.standard_normal(n)
        z = np.empty(n)
        status, pivots = K.lemke(F, q, np.ones(n), 50 * (n + 1), z)
        ref_status, z_ref, ref_pivots = lemke_reference(F, q)
        assert status == ref_status == K.STATUS_SOLVED
        assert pivots == ref_pivots
        np.testing.assert_allclose(z, z_ref, rtol=0, atol=1e-9)


def test_covering_vector():
    """Another strictly positive covering vector gives the same unique solution."""
    rng = np.random.default_rng(32)
    for _ in range(50):
        n = int(rng.integers(4, 9))
        F = spd(rng, n)
        q = rng.standard_normal(n)
        d = rng.uniform(0.1, 3.0, n)
        a = solve_lcp(F, q)
        b = solve_lcp(F, q, covering_vector=d)
        assert_solves(F, q, b)
        np.testing.assert_allclose(a.z, b.z, rtol=0, atol=1e-9)
        assert lemke_reference(F, q, d)[0] == K.STATUS_SOLVED


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("F, q, name, expected", [
    (np.eye(3), np.ones(2), "F", "(2, 2)"),
    (np.ones((2, 3)), np.ones(2), "F", "(2, 2)"),
    (np.ones(4), np.ones(2), "F", "(2, 2)"),
    (np.eye(2), np.ones((2, 2)), "q", "(n,)"),
    (np.eye(2), np.ones((2, 1, 1)), "q", "(n,)"),
])
def test_wrong_shapes_single(F, q, name, expected):
    with pytest.raises(ValueError) as info:
        solve_lcp(F, q)
    msg = str(info.value)
    assert msg.startswith(name + " ") and expected in msg


@pytest.mark.parametrize("F, q, name, expected", [
    (np.eye(2), np.ones(2), "q", "(B, n)"),
    (np.eye(3), np.ones((4, 2)), "F", "(2, 2) or (4, 2, 2)"),
    (np.ones((3, 2, 2)), np.ones((4, 2)), "F", "(2, 2) or (4, 2, 2)"),
])
def test_wrong_shapes_batch(F, q, name, expected):
    with pytest.raises(ValueError) as info:
        solve_lcp_batch(F, q)
    msg = str(info.value)
    assert msg.startswith(name + " ") and expected in msg


def test_column_q_accepted():
    sol = solve_lcp(np.eye(2), [[-1.0], [2.0]])
    np.testing.assert_allclose(sol.z, [1.0, 0.0])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_inputs(bad):
    q = np.array([1.0, -1.0, 0.5])
    q[2] = bad
    with pytest.raises(ValueError, match=r"^q .*non-finite.*\(2,\)"):
        solve_lcp(np.eye(3), q)
    F = np.eye(3)
    F[1, 0] = bad
    with pytest.raises(ValueError, match=r"^F .*non-finite.*\(1, 0\)"):
        solve_lcp(F, [1.0, -1.0, 0.5])
    qb = np.zeros((2, 3))
    qb[1, 2] = bad
    with pytest.raises(ValueError, match=r"^q .*non-finite"):
        solve_lcp_batch(np.eye(3), qb)


@pytest.mark.parametrize("F, q", [("abc", [1.0, 2.0]), (np.eye(2), "ab"), (np.eye(2), [1.0, "x"]),
                                  ({"a": 1}, [1.0])])
def test_type_errors(F, q):
    with pytest.raises(TypeError):
        solve_lcp(F, q)


@pytest.mark.parametrize("d", [[1.0, 0.0], [1.0, -1.0], [np.nan, 1.0], [1.0, 1.0, 1.0]])
def test_bad_covering_vector(d):
    with pytest.raises(ValueError, match="covering_vector"):
        solve_lcp(np.eye(2), [-1.0, 1.0], covering_vector=d)


@pytest.mark.parametrize("tol", [0.0, -1e-9, np.nan])
def test_bad_tolerance(tol):
    with pytest.raises(ValueError, match="tol"):
        solve_lcp(np.eye(2), [-1.0, 1.0], tol=tol)


# ----------------------------------------------------------------------------- property test
def _lp_feasible(F: np.ndarray, q: np.ndarray) -> bool:
    """Is {z >= 0, F z + q >= 0} nonempty? (for a monotone LCP: iff a solution exists)."""
    from scipy.optimize import linprog

    res = linprog(np.zeros(q.size), A_ub=-F, b_ub=q, bounds=[(0, None)] * q.size,
                  method="highs")
    return res.status == 0


_entry = st.floats(-3.0, 3.0, allow_nan=False, allow_subnormal=False).map(lambda v: round(v, 2))


@st.composite
def psd_lcps(draw):
    n = draw(st.integers(1, 8))
    rank = draw(st.integers(0, n))
    M = draw(hnp.arrays(np.float64, (n, rank), elements=_entry))
    diag = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 0.0, 0.01, 0.5, 2.0])))
    F = M @ M.T + np.diag(diag)
    q = draw(hnp.arrays(np.float64, n, elements=_entry))
    return F, q


@settings(deadline=None, derandomize=True, max_examples=500,
          suppress_health_check=[HealthCheck.too_slow])
@given(psd_lcps())
def test_property_psd(problem):
    """PSD F: SOLVED (residual <= 1e-9) or INFEASIBLE (then F is singular and no z is feasible);
    a positive definite F is always SOLVED."""
    F, q = problem
    sol = solve_lcp(F, q)
    event(sol.status.name)
    eig_min = float(np.linalg.eigvalsh(F).min())
    fscale = max(1.0, float(np.abs(F).max()))
    if eig_min > 1e-6 * fscale:
        assert sol.status is LCPStatus.SOLVED
    assert sol.status in (LCPStatus.SOLVED, LCPStatus.INFEASIBLE), sol.status
    if sol.status is LCPStatus.SOLVED:
        assert_solves(F, q, sol)
    else:
        assert eig_min <= 1e-8 * fscale
        assert not _lp_feasible(F, q)
        assert np.all(np.isnan(sol.z))


@pytest.mark.parametrize("scale", [1e-12, 1e-6, 1e6, 1e12])
def test_badly_scaled_positive_definite_problems_are_solved(scale):
    """Lemke normalises F and q, so the units of the problem do not matter."""
    rng = np.random.default_rng(7)
    for n in (4, 8):
        A = rng.normal(size=(n, n))
        F = scale * (A @ A.T + np.eye(n))
        q = -rng.uniform(0.1, 1.0, n)
        sol = solve_lcp(F, q)
        assert sol.status is LCPStatus.SOLVED, (scale, n, sol.status)
        assert sol.residual <= 1e-9
        st, z_ref, _ = lemke_reference(F, q)
        np.testing.assert_allclose(sol.z, z_ref, rtol=1e-8)
    sol = solve_lcp(1e-12 * np.eye(4), -np.ones(4))
    np.testing.assert_allclose(sol.z, 1e12 * np.ones(4), rtol=1e-12)
