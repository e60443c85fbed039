"""The compiled fast path of a simulator step against its readable reference.

The fast path (``Simulator(compiled=True)`` and ``SAPOptions.compiled``, both the default) runs the
per-step assembly (plants/sim/_stepper_kernels.py) and SAP's whole Newton solve
(``plants.sim._sap_kernels.newton_solve``) as numba kernels; the references are the numpy code
paths kept beside them. Same arithmetic in another order: the trajectories agree to round-off
(1e-10 here), and every kernel agrees with its reference on the data of real scenes.
"""

from __future__ import annotations

import numpy as np
import pytest

from plants.sim import ContactProblem, SAPSolver, Simulator, load_scene
from plants.sim._sap_kernels import HAVE_NUMBA, cholesky_inplace, cholesky_solve_inplace, island_layout
from plants.sim.contact_problem import ContactSolverStatus
from plants.sim.sap import _island_partition

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="the fast path needs numba")


def reference_twin(sim: Simulator) -> Simulator:
    """The same simulator on the readable reference path (numpy assembly, numpy SAP)."""
    return Simulator(sim.scene, dt=sim.dt, scheme=sim.scheme, controller=sim.controller, compiled=False,
                     solver_options={"compiled": False})


# (scene, duration [s], tolerance on v [m/s or rad/s]): contact onset and sliding (cube-slide), a
# resting stack, impacts (cube-drop-3), a robot with joint limits,
# self-collision and a controller (franka-push-ball), the implicit midpoint free motion
# (spring-cylinder: the compiled rows, the reference free motion). Positions agree to 1e-10 on all.
# clutter-40 (chaotic: a contact within round-off of the detection margin parts whole runs) is
# compared step by step, from the same state, in tests/test_sim_scale.py.
# The velocities of cube-drop-3's impact steps agree to 5e-8 only (measured, every Newton count
# equal): a near-rigid impact's Newton matrix has cond(H) ~ 1e8 and amplifies the round-off of the
# two summation orders into the impulsive velocity.
SCENES = [("cube-slide", 0.3, 1e-10), ("cube-rest-5", 0.1, 1e-10), ("cube-drop-3", 0.35, 1e-7),
          ("franka-push-ball", 0.15, 1e-10), ("spring-cylinder", 0.3, 1e-10)]


@pytest.mark.parametrize("name,duration,v_tol", SCENES)
def test_fast_trajectory_equals_the_reference(name, duration, v_tol):
    fast = load_scene(name)
    ref = reference_twin(fast)
    assert fast.compiled and fast.solver.options.compiled and not ref.compiled
    a = fast.run(duration)
    b = ref.run(duration)
    assert a.stats["n_contacts"].sum() > 0  # the contact path ran
    scale = 1.0 + np.abs(b.q).max()
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(a.v, b.v, rtol=0, atol=v_tol * (1.0 + np.abs(b.v).max()))
    for key in ("status", "n_contacts", "free_motion_iterations", "flags"):
        np.testing.assert_array_equal(a.stats[key], b.stats[key], err_msg=key)
    # Newton counts: equal (a step whose residual sat within round-off of the threshold could differ)
    assert np.mean(a.stats["iterations"] == b.stats["iterations"]) > 0.98
    np.testing.assert_allclose(a.stats["penetration_ratio"], b.stats["penetration_ratio"], rtol=max(1e-8, 100 * v_tol),
                               atol=1e-12)  # the predicted overlap carries the velocities
    np.testing.assert_allclose(a.stats["min_phi"], b.stats["min_phi"], rtol=0, atol=1e-10)


# ----------------------------------------------------------------------------- SAP: compiled vs reference
def tree_problem(seed: int, sizes=(6, 6, 7, 3), n_c: int = 12, inert: int = 2, self_contacts: int = 1,
                 dt: float = 1e-2) -> ContactProblem:
    """Random block-diagonal problem with world, tree-tree, same-tree and inert (zero-row) contacts."""
    rng = np.random.default_rng(seed)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_v, n_t = int(starts[-1]), len(sizes)
    A = np.zeros((n_v, n_v))
    for t in range(n_t):
        s = sizes[t]
        X = rng.normal(size=(s, s))
        A[starts[t]:starts[t + 1], starts[t]:starts[t + 1]] = X @ X.T + 0.5 * np.eye(s)
    J = np.zeros((3 * n_c, n_v))
    trees = np.full((n_c, 2), -1, dtype=np.int64)
    for i in range(n_c):
        if i < self_contacts:
            t1 = t2 = int(rng.integers(n_t))
        else:
            t1, t2 = (int(x) for x in rng.choice(n_t + 1, size=2, replace=False) - 1)  # -1 = world
        trees[i] = (t1, t2)
        if i >= n_c - inert:
            continue  # an inert contact: zero rows
        for t in {t1, t2} - {-1}:
            J[3 * i:3 * i + 3, starts[t]:starts[t + 1]] += rng.normal(size=(3, starts[t + 1] - starts[t]))
    return ContactProblem(A=A, v_star=rng.normal(size=n_v), J=J, phi0=rng.uniform(-1e-3, 1e-3, n_c),
                          mu=rng.uniform(0.0, 1.0, n_c), stiffness=rng.uniform(1e3, 1e6, n_c),
                          dissipation=rng.uniform(0.0, 0.05, n_c), dt=dt, tree_starts=starts, contact_trees=trees)


def assert_same_solution(a, b, exact_path: bool = True):
    assert a.status is b.status
    np.testing.assert_allclose(a.v, b.v, rtol=1e-10, atol=1e-10 * (1 + np.abs(b.v).max()))
    np.testing.assert_allclose(a.gamma, b.gamma, rtol=1e-8, atol=1e-10 * (1 + np.abs(b.gamma).max()))
    if exact_path:
        assert a.iterations == b.iterations and a.line_search_iterations == b.line_search_iterations
        np.testing.assert_allclose(a.residual_history, b.residual_history, rtol=1e-8, atol=1e-12)
        assert a.cost == pytest.approx(b.cost, rel=1e-10, abs=1e-14)
        assert a.momentum_error == pytest.approx(b.momentum_error, rel=1e-8, abs=1e-14)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("islands", [True, False])
def test_compiled_newton_equals_reference_on_tree_problems(seed, islands):
    p = tree_problem(seed)
    a = SAPSolver(islands=islands, rel_tol=1e-8).solve(p)
    b = SAPSolver(islands=islands, rel_tol=1e-8, compiled=False).solve(p)
    assert a.ok
    assert_same_solution(a, b)
    inert = ~p.J.reshape(p.n_c, -1).any(axis=1)
    assert inert.sum() == 2 and (a.gamma.reshape(-1, 3)[inert] == 0).all()


def test_compiled_newton_equals_reference_with_the_sparse_reference():
    """Above ``sparse_threshold`` the reference uses its per-contact tree blocks: same answer, also
    with same-tree (self-collision) contacts, whose tree the blocks once counted twice (J doubled:
    v off by 1.2e-2 on this problem before the fix)."""
    p = tree_problem(7, sizes=(12, 12, 12, 12, 9), n_c=20, self_contacts=3)
    a = SAPSolver(rel_tol=1e-8).solve(p)
    b = SAPSolver(rel_tol=1e-8, compiled=False, sparse_threshold=0).solve(p)
    dense = SAPSolver(rel_tol=1e-8, compiled=False, sparse_threshold=10**6).solve(p)
    assert_same_solution(a, b)
    assert_same_solution(dense, b)


def test_compiled_newton_armijo_warm_start_and_budget():
    p = tree_problem(11, self_contacts=0)
    a = SAPSolver(line_search="armijo", rel_tol=1e-6).solve(p)
    b = SAPSolver(line_search="armijo", rel_tol=1e-6, compiled=False).solve(p)
    assert a.ok and b.ok
    np.testing.assert_allclose(a.v, b.v, rtol=1e-5, atol=1e-6)  # Armijo's path bends with round-off
    guess = a.v + 1e-3
    assert_same_solution(SAPSolver(rel_tol=1e-9).solve(p, v_guess=guess),
                         SAPSolver(rel_tol=1e-9, compiled=False).solve(p, v_guess=guess))
    one = SAPSolver(max_iterations=1, rel_tol=1e-14).solve(p)
    assert one.status is ContactSolverStatus.MAX_ITERATIONS and one.iterations == 1
    assert "1 Newton iterations" in one.message
    assert_same_solution(one, SAPSolver(max_iterations=1, rel_tol=1e-14, compiled=False).solve(p))
    with pytest.raises(ValueError, match="v_guess"):
        SAPSolver().solve(p, v_guess=np.full(p.n_v, np.nan))


def test_compiled_newton_without_contacts_is_the_free_motion():
    p = tree_problem(3, n_c=0, inert=0, self_contacts=0)
    r = SAPSolver().solve(p)
    assert r.ok and r.iterations == 0 and r.gamma.shape == (0,)
    np.testing.assert_array_equal(r.v, p.v0)  # v0 defaults to v*


def test_island_layout_matches_the_reference_partition():
    rng = np.random.default_rng(5)
    starts = np.concatenate([[0], np.cumsum(rng.integers(1, 7, size=15))]).astype(np.int64)
    ct = rng.integers(-1, 15, size=(12, 2)).astype(np.int64)
    for islands in (True, False):
        n_isl, isl_start, isl_dofs, local = island_layout(starts, ct, islands)
        ref = {tuple(dofs.tolist()) for dofs, _, _ in _island_partition(starts, ct, islands)}
        got = {tuple(isl_dofs[isl_start[k]:isl_start[k + 1]].tolist()) for k in range(n_isl)}
        assert got == ref
        for k in range(n_isl):
            dofs = isl_dofs[isl_start[k]:isl_start[k + 1]]
            np.testing.assert_array_equal(local[dofs], np.arange(dofs.size))


def test_cholesky_kernel_matches_lapack_and_refuses_an_indefinite_matrix():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(9, 9))
    H = X @ X.T + np.eye(9)
    L = H.copy()
    assert cholesky_inplace(L, 9)
    np.testing.assert_allclose(np.tril(L), np.linalg.cholesky(H), rtol=1e-12, atol=1e-12)
    b = rng.normal(size=9)
    x = b.copy()
    cholesky_solve_inplace(L, 9, x)
    np.testing.assert_allclose(x, np.linalg.solve(H, b), rtol=1e-10)
    bad = H.copy()
    bad[4, 4] = -1.0
    assert not cholesky_inplace(bad, 9)


# ----------------------------------------------------------------------------- stepper kernels vs numpy
@pytest.mark.parametrize("name,duration", [("cube-rest-5", 0.02), ("franka-push-ball", 0.05), ("clutter-40", 0.2)])
def test_assembly_kernels_match_their_references(name, duration):
    sim = load_scene(name)
    sim.run(duration)
    pin, model, data = sim._pin, sim.model, sim.data
    pin.computeJointJacobians(model, data, sim.q)
    Rg, pg = sim._geometry_poses(data)
    Rr, pr = sim.scene.geometry_poses(data, sim._geom_joints, sim._geom_slot)
    np.testing.assert_allclose(Rg, Rr, rtol=0, atol=1e-14)
    np.testing.assert_allclose(pg, pr, rtol=0, atol=1e-14)
    c = sim.scene.detector.detect(Rr, pr)
    assert c.n_c > 0
    Jw = np.array(data.J.reshape(6, model.nv), order="C")
    fast = sim._contact_rows(c, Rr, pr, Jw)
    ref = sim._contact_rows_numpy(c, Rr, pr, Jw)
    for name_, x, y in zip(("F", "point", "J", "k", "tau_d", "mu", "trees", "joints", "local"), fast, ref):
        assert x.shape == y.shape and x.dtype == y.dtype, name_
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-14, err_msg=name_)
    # explicit free motion: compiled vs the reference (θ = 0)
    tau = sim._actuation(sim.t, sim.q, sim.v)
    v_fast, A_fast = sim.free_motion(sim.q, sim.v, tau)
    sim.compiled = False
    try:
        v_ref, A_ref = sim.free_motion(sim.q, sim.v, tau)
        problem, _ = sim.contact_problem()
        result = sim.solver.solve(problem)
        sim.last_problem = problem
        ref_ratios = sim._overlap_ratios(c, result)
    finally:
        sim.compiled = True
    np.testing.assert_array_equal(A_fast, A_ref)
    np.testing.assert_allclose(v_fast, v_ref, rtol=1e-12, atol=1e-12)
    fast_ratios = sim._overlap_ratios(c, result)
    for x, y in zip(fast_ratios, ref_ratios):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-15)


def test_compiled_switch_is_validated():
    sim = load_scene("cube-slide")
    with pytest.raises(TypeError, match="compiled"):
        Simulator(sim.scene, compiled="yes")


@pytest.mark.parametrize("stiffness", ["near_rigid", "rigid"])
def test_joint_limit_kernel_matches_reference(stiffness):
    """Franka: every joint put near its lower limit, then its upper one (the fingers' and the arm's)."""
    base = load_scene("franka-push-ball", hand_collision=False)
    sim = Simulator(base.scene, dt=base.dt, controller=base.controller, limit_stiffness=stiffness)
    assert sim._limit_dof.size >= 9
    rng = np.random.default_rng(0)
    for at in (sim._limit_lower + 1e-4, sim._limit_upper - 1e-4):
        q = sim.q.copy()
        q[sim._limit_q] = at
        v = rng.normal(size=sim.model.nv) * 0.1
        tau = np.zeros(sim.model.nv)
        v_star, A = sim.free_motion(q, v, tau)
        fast = sim._limits(q, v, v_star, A)
        sim.compiled = False
        try:
            ref = sim._limits(q, v, v_star, A)
        finally:
            sim.compiled = True
        assert fast[2].size == sim._limit_dof.size
        for x, y in zip(fast[:3], ref[:3]):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_allclose(fast[3], ref[3], rtol=1e-10)


def test_compiled_newton_large_island_takes_lapack_and_matches_reference():
    """An island above ``LAPACK_ABOVE`` dofs is factored by LAPACK inside the kernel: same answer."""
    from plants.sim._sap_kernels import LAPACK_ABOVE

    p = tree_problem(13, sizes=(6,) * 24, n_c=70, inert=0, self_contacts=2)
    n_isl, start, _, _ = island_layout(p.tree_starts, p.contact_trees, True)
    assert np.diff(start).max() > LAPACK_ABOVE
    a = SAPSolver(rel_tol=1e-8).solve(p)
    b = SAPSolver(rel_tol=1e-8, compiled=False).solve(p)
    assert a.ok
    assert_same_solution(a, b)
