"""Large scenes: per-chunk rigid-body terms (plants.sim.tree_dynamics) and SAP's block-sparse factor
of the Newton Hessian (plants.sim._sap_sparse), each against its reference: the whole model's
``pinocchio.Data``, a dense solve, the readable simulator path, and the analytic mass matrix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from plants import load_scene  # noqa: E402
from plants.sim._blas import blas_threads  # noqa: E402
from plants.sim import Simulator  # noqa: E402
from plants.sim._sap_sparse import block_cholesky, block_cholesky_solve, symbolic_blocks  # noqa: E402
from plants.sim.tree_dynamics import TreeDynamics  # noqa: E402


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


@pytest.mark.parametrize("scene, kw", [("clutter-40", {"n_objects": 12, "dt": 1e-2}), ("a1-drop-8", {})])
def test_tree_dynamics_matches_the_whole_model(scene, kw):
    """M(q), C(q,v)v + g, world joint Jacobians, placements and energy per chunk of trees equal
    Pinocchio's on the whole model (free bodies; 18-dof legged robots with armature-free joints)."""
    sim = _quiet(load_scene, scene, **kw)
    model = sim.model
    dyn = TreeDynamics(model, sim.scene.tree_starts, sim.scene.tree_of_joint, chunk_dofs=30)
    assert len(dyn.chunks) > 1
    rng = np.random.default_rng(3)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    v = rng.standard_normal(model.nv)
    data = model.createData()
    M = np.zeros((model.nv, model.nv))
    dyn.mass(q, M)
    ref = pin.crba(model, data, q)
    iu = np.triu_indices(model.nv)
    np.testing.assert_allclose(M[iu], ref[iu], rtol=0, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_allclose(dyn.nonlinear_effects(q, v), pin.nonLinearEffects(model, data, q, v), rtol=1e-12, atol=1e-12)
    Jw = np.empty((6, model.nv))
    dyn.jacobians(q, Jw)
    np.testing.assert_allclose(Jw, pin.computeJointJacobians(model, data, q), rtol=0, atol=1e-12)
    for j in range(1, model.njoints):
        np.testing.assert_allclose(dyn.placement(j).homogeneous, data.oMi[j].homogeneous, atol=1e-12)
    e = pin.computeKineticEnergy(model, data, q, v) + pin.computePotentialEnergy(model, data, q)
    assert dyn.energy(q, v) == pytest.approx(e, rel=1e-12)


@pytest.mark.parametrize("kw, steps", [({}, 30), ({"n_objects": 20, "walls": True, "dt": 1e-2}, 45)])
def test_compiled_chunked_step_matches_the_reference_per_step(kw, steps):
    """The compiled simulator of a pile (chunked dynamics, recycled A, block-sparse SAP) against the
    readable reference (whole-model Data, numpy, dense islands), from the same state at every step:
    the clutter is chaotic, so whole trajectories part once a contact sits within round-off of the
    detection margin (tests/test_sim_fast_path.py compares whole runs on the other scenes)."""
    fast = _quiet(load_scene, "clutter-40", **kw)
    ref = _quiet(Simulator, fast.scene, "sap", dt=fast.dt, compiled=False, solver_options={"compiled": False})
    assert fast._dyn is not None and ref._dyn is None
    largest, worst, same_iterations = 0, 0.0, 0
    with blas_threads(1):
        for _ in range(steps):
            ref.set_state(fast.q, fast.v, fast.t)
            pf, _ = fast.contact_problem()
            pr, _ = ref.contact_problem()
            assert pf.n_c == pr.n_c
            for f in ("A", "v_star", "J", "phi0"):
                np.testing.assert_allclose(getattr(pf, f), getattr(pr, f), rtol=0, atol=1e-10)
            rf, rr = fast.solver.solve(pf), ref.solver.solve(pr)
            assert rf.status == rr.status
            same_iterations += rf.iterations == rr.iterations
            worst = max(worst, float(np.abs(rf.v - rr.v).max() / (1.0 + np.abs(rr.v).max())))
            largest = max(largest, pf.n_c)
            _quiet(fast.step)
    assert largest > 20  # the pile touches (the comparison covers contact)
    assert worst < 1e-10
    assert same_iterations >= 0.95 * steps


def test_block_sparse_factor_solves_like_dense():
    """symbolic_blocks + block_cholesky + block_cholesky_solve on a random SPD block matrix with a
    random graph of 40 supernodes of 1-7 dofs: the solution equals numpy's dense solve."""
    rng = np.random.default_rng(0)
    n = 40
    size = rng.integers(1, 8, n)
    start = np.r_[0, np.cumsum(size)]
    m = int(start[-1])
    ea, eb = rng.integers(0, n, 70), rng.integers(0, n, 70)
    H = np.zeros((m, m))
    for t in range(n):
        B = rng.standard_normal((size[t], size[t]))
        H[start[t]:start[t + 1], start[t]:start[t + 1]] += B @ B.T + np.eye(size[t])
    for a, b in zip(ea, eb):  # a contact between supernodes a and b: Jᵀ J on their dofs
        J = np.zeros((3, m))
        J[:, start[a]:start[a + 1]] = rng.standard_normal((3, size[a]))
        J[:, start[b]:start[b + 1]] = rng.standard_normal((3, size[b]))
        H += J.T @ J
    order, pos, slot, ptr, struct, n_blocks = symbolic_blocks(n, ea, eb)
    assert np.array_equal(pos[order], np.arange(n))
    s = size[order]
    blocks = np.zeros((n_blocks, s.max(), s.max()))
    for i in range(n):
        for k in range(i + 1):
            ti, tk = order[i], order[k]
            Hik = H[start[ti]:start[ti + 1], start[tk]:start[tk + 1]]
            if slot[i, k] >= 0:
                blocks[slot[i, k], :s[i], :s[k]] = Hik
            else:  # the symbolic pattern covers every nonzero block
                assert not Hik.any()
    assert n_blocks < n * (n + 1) // 2  # sparse: not every block
    assert block_cholesky(blocks, s, slot, ptr, struct)
    g = rng.standard_normal(m)
    off = np.r_[0, np.cumsum(s)][:-1]
    x = np.concatenate([g[start[t]:start[t + 1]] for t in order])
    block_cholesky_solve(blocks, s, slot, ptr, struct, off, x)
    out = np.empty(m)
    for k, t in enumerate(order):
        out[start[t]:start[t + 1]] = x[off[k]:off[k] + s[k]]
    np.testing.assert_allclose(out, np.linalg.solve(H, g), rtol=0, atol=1e-12 * np.abs(out).max())
    blocks[0] = -np.eye(s.max())  # not positive definite: reported, not factored
    assert not block_cholesky(blocks, s, slot, ptr, struct)


def test_sap_block_sparse_islands_match_dense_islands():
    """SAP's compiled solve with the block-sparse factor (default) and with dense islands only give
    the same velocities and iterations on the steps of a 40-object pile in a container."""
    kw = {"n_objects": 40, "walls": True, "dt": 1e-2}
    sparse = _quiet(load_scene, "clutter-40", **kw)
    dense = _quiet(load_scene, "clutter-40", solver_options={"sparse_factor_above": 10**9}, **kw)
    worst, n_c = 0.0, 0
    with blas_threads(1):
        for _ in range(40):
            p, _ = sparse.contact_problem()
            rs, rd = sparse.solver.solve(p), dense.solver.solve(p)
            assert rs.status == rd.status and rs.iterations == rd.iterations
            worst = max(worst, float(np.abs(rs.v - rd.v).max()))
            n_c = max(n_c, p.n_c)
            _quiet(sparse.step)
    assert n_c > 40
    assert worst < 1e-10
    with pytest.raises(ValueError, match="sparse_factor_above"):
        load_scene("cube-slide", solver_options={"sparse_factor_above": -1})


def test_beyond_the_whole_model_data_limit():
    """160 objects (n_v = 960: a whole-model pinocchio.Data would hold ~28 GB of n_v³ tensors) step
    without creating one, and A is the analytic block diagonal of the bodies' spatial inertias
    (sphere: m = 1000·4/3·π·r³, I = 2/5 m r²; 10 cm box: m = 1 kg, I = m (0.1 m)²/6)."""
    sim = _quiet(load_scene, "clutter-40", n_objects=160, walls=True, dt=1e-2)
    _quiet(sim.step)
    assert sim._data is None
    A = sim.last_problem.A
    assert A.shape == (960, 960)
    expect = np.zeros_like(A)
    names = [sim.model.names[j] for j in range(1, sim.model.njoints) if not sim.model.names[j].endswith("_translation")]
    assert len(names) == 160
    for b, name in enumerate(names):
        if name.startswith("sphere"):
            m = 1000 * 4 / 3 * np.pi * 0.05**3
            diag = [m] * 3 + [0.4 * m * 0.05**2] * 3
        else:
            diag = [1.0] * 3 + [0.1**2 / 6] * 3
        expect[6 * b:6 * b + 6, 6 * b:6 * b + 6] = np.diag(diag)
    np.testing.assert_allclose(A, expect, rtol=0, atol=1e-12)
