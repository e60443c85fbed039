"""Seed 004's solver pieces: sparse inverse (Theorem 1), NCP functions, conjugate residual,
energies/gradients of the assembled system, and whole steps against analytic answers."""

import numpy as np
import pytest
import scipy.sparse as sp

from plants.sim.deformable import (
    ARAP,
    Attachment,
    CoRotational,
    DeformableBody,
    DeformableSimulator,
    DeformableWorld,
    FBAOptions,
    HalfSpace,
    LocalGlobalSystem,
    SparseInverse,
    StableNeoHookean,
    bar_tet_mesh,
    box_tet_mesh,
    cloth_sheet,
)
from plants.sim.deformable.cr import conjugate_residual
from plants.sim.deformable.ncp import friction_rows, normal_rows
from plants.sim.deformable.obstacles import BoxObstacle, CylinderObstacle, SphereObstacle
from plants.sim.deformable.sparse_inverse import elimination_tree, sparse_inverse_factor_numpy


def _pd_matrix(mesh, h=0.01, w=1e6):
    from plants.sim.deformable import lumped_mass, rest_shape

    rs = rest_shape(mesh)
    return (sp.diags(lumped_mass(mesh, 1000.0)) + h * h * w * (rs.G.T @ rs.G)).tocsc()


# ---------------------------------------------------------------------------- sparse inverse
def test_sparse_inverse_matches_dense_reference_and_inverse():
    A = _pd_matrix(bar_tet_mesh(1.0, 0.2, 6, 2))
    si = SparseInverse.from_matrix(A)
    S_ref = sparse_inverse_factor_numpy(A)  # dense numpy reference of the compiled kernel
    np.testing.assert_allclose(si.S.toarray(), S_ref, atol=1e-13 * np.abs(S_ref).max())
    np.testing.assert_allclose((si.S.T @ si.S).toarray(), np.linalg.inv(A.toarray()), rtol=1e-9,
                               atol=1e-12 * np.abs(np.linalg.inv(A.toarray())).max())
    b = np.random.default_rng(0).standard_normal((A.shape[0], 3))
    np.testing.assert_allclose(si.solve(b), np.linalg.solve(A.toarray(), b), rtol=1e-10, atol=1e-12)
    # P A Pᵀ = L Lᵀ
    p = si.perm
    np.testing.assert_allclose((si.L @ si.L.T).toarray(), A[p][:, p].toarray(), atol=1e-10 * abs(A).max())


def test_sparse_inverse_pattern_is_the_elimination_tree_ancestors():
    """Theorem 1: column k of L⁻¹ is non-zero exactly on k and its etree ancestors; S is sparse."""
    A = _pd_matrix(box_tet_mesh((1, 1, 1), (3, 3, 3)))
    si = SparseInverse.from_matrix(A)
    parent = elimination_tree(si.L)
    Linv = sp.csc_matrix(si.S.toarray()[:, si.perm])  # undo the column permutation: L⁻¹
    dense = np.linalg.inv(si.L.toarray())
    np.testing.assert_allclose(Linv.toarray(), dense, atol=1e-12 * np.abs(dense).max())
    n = A.shape[0]
    for k in range(0, n, 7):
        anc = []
        i = k
        while i != -1:
            anc.append(i)
            i = parent[i]
        rows = Linv.indices[Linv.indptr[k]:Linv.indptr[k + 1]]
        assert sorted(rows) == sorted(anc)
    assert si.S.nnz < 0.7 * n * n
    assert si.memory_bytes(3) == 3 * si.S.nnz * 8 and si.dense_inverse_bytes(3) == (3 * n) ** 2 * 8


def test_sparse_inverse_solves_a_stiff_fine_bar_to_round_off():
    """Regression: on the E = 1e9 twisting bar (30×6×6) a factor entry of L cancels to an exact
    zero; an etree read off L's values then missed ancestors and Sᵀ(S b) was 12 % off. With the
    tree from A's pattern (Liu's algorithm) it matches a direct sparse solve to round-off."""
    import scipy.sparse.linalg as sla

    from plants.sim import load_scene

    sysm = load_scene("twisting-bar", youngs=1e9, cells_along=30, cells_across=6).system
    b = np.random.default_rng(0).standard_normal((sysm.A.shape[0], 3))
    x = sysm.solve(b)
    ref = np.column_stack([sla.spsolve(sysm.A.tocsc(), b[:, k]) for k in range(3)])
    assert np.abs(x - ref).max() < 1e-10 * np.abs(ref).max()


def test_compiled_sparse_products_match_scipy():
    """The compiled S b and Sᵀ y on (n, 3) blocks (csr_matmul / csr_rmatmul) against SciPy's
    products (their reference), on S of a tetrahedral box and on a random rectangular CSR with
    empty rows; other block widths take SciPy's path."""
    from plants.sim.deformable.sparse_inverse import csr_matmul, csr_rmatmul

    rng = np.random.default_rng(11)
    si = SparseInverse.from_matrix(_pd_matrix(box_tet_mesh((1, 1, 1), (3, 3, 3))))
    keep = np.ones(40)
    keep[5] = 0.0  # an empty row
    R = (sp.diags(keep) @ sp.random(40, 25, density=0.2, format="csr", random_state=3)).tocsr()
    R.eliminate_zeros()
    for M in (si.S, R):
        x, y = rng.standard_normal((M.shape[1], 3)), rng.standard_normal((M.shape[0], 3))
        tol = 1e-13 * (abs(M).max() * max(M.shape))
        np.testing.assert_allclose(csr_matmul(M, x), M @ x, rtol=0, atol=tol)
        np.testing.assert_allclose(csr_rmatmul(M, y), M.T @ y, rtol=0, atol=tol)
        np.testing.assert_allclose(csr_matmul(M, x[:, :2]), M @ x[:, :2], rtol=0, atol=tol)  # SciPy's path
        np.testing.assert_allclose(csr_rmatmul(M, y[:, 0]), M.T @ y[:, 0], rtol=0, atol=tol)
    b = rng.standard_normal((si.n, 3))
    np.testing.assert_allclose(si.solve(b), si.S.T @ (si.S @ b), rtol=1e-12, atol=1e-14 * np.abs(b).max())
    np.testing.assert_allclose(csr_matmul(si.S, np.asfortranarray(b)), si.S @ b, rtol=1e-13)  # any layout


def test_fba_iterate_solves_a_q_equals_b_plus_contact_forces():
    """Each local-global iteration's q solves A q = b(q_prev) + h² JᵀΩλ with the step's applied
    row forces Ωλ (Eq. 23: u and the correction, computed as one solve Sᵀ(S b + S_U c)): checked
    with a direct sparse solve of A on a sliding, rotating ball in contact with the ground."""
    import scipy.sparse.linalg as sla

    from plants.sim.deformable import sphere_tet_mesh

    mesh = sphere_tet_mesh(0.1, 4, center=(0, 0, 0.1005))
    sim = DeformableSimulator(DeformableWorld((DeformableBody("ball", mesh, CoRotational(1e5, 0.4)),),
                                              (HalfSpace(mu=0.3),)))
    v = np.cross([0.0, 4.0, 0.0], sim.x - sim.x.mean(0)) + [0.3, 0.0, 0.0]
    sim.set_state(sim.x, v)
    for _ in range(3):
        sim.step()
    x_t, v_t = sim.x.copy(), sim.v.copy()
    record = []
    sim.step(record=record)
    rows, force, sysm, h = sim.last_rows, sim.last_force, sim.system, sim.dt
    assert rows.n_contacts >= 2 and np.abs(force[1:3 * rows.n_contacts:3]).max() > 0  # friction acts
    iterates = [x_t + h * v_t] + record[:-1]  # q⁰ (the extrapolated guess), …, qⁿ⁻¹
    duals = [np.zeros((p.elements.stop - p.elements.start, p.dim, 3)) for p in sysm.parts]
    for q in iterates[:-1]:  # replay the ADMM duals up to the last iteration
        sim._local(q, duals)
    x_tilde = x_t + h * v_t + h * h * sim.world.gravity
    b = sim._b(sim._local(iterates[-1], duals), x_tilde[sysm.free], np.zeros((0, 3)))
    JT = np.zeros_like(b)
    np.add.at(JT, rows.node, force[:, None] * rows.C)
    ref = np.column_stack([sla.spsolve(sysm.A, (b + h * h * JT)[:, k]) for k in range(3)])
    np.testing.assert_allclose(record[-1][sysm.free], ref, rtol=0, atol=1e-11 * np.abs(ref).max())


def test_sparse_inverse_rejects_non_spd():
    with pytest.raises(ValueError, match="positive definite"):
        SparseInverse.from_matrix(sp.csc_matrix(np.diag([1.0, -1.0, 2.0])))
    with pytest.raises(ValueError, match="symmetric"):
        SparseInverse.from_matrix(sp.csc_matrix(np.array([[2.0, 1.0], [0.0, 2.0]])))


# ---------------------------------------------------------------------------- NCP functions
def test_fischer_burmeister_normal_row_derivatives_and_zero_set():
    rng = np.random.default_rng(1)
    d, lam, r = rng.standard_normal(50), rng.standard_normal(50), rng.uniform(0.1, 2.0, 50)
    phi, om, E = normal_rows(d, lam, r, "fb")
    eps = 1e-7
    phi_d = (normal_rows(d + eps, lam, r, "fb")[0] - normal_rows(d - eps, lam, r, "fb")[0]) / (2 * eps)
    phi_l = (normal_rows(d, lam + eps, r, "fb")[0] - normal_rows(d, lam - eps, r, "fb")[0]) / (2 * eps)
    np.testing.assert_allclose(om, phi_d, atol=1e-6)
    np.testing.assert_allclose(E, phi_l, atol=1e-6)
    # φ = 0 exactly on the complementarity set
    comp = normal_rows(np.array([0.0, 0.3, 0.0]), np.array([2.0, 0.0, 0.0]), np.ones(3), "fb")[0]
    np.testing.assert_allclose(comp, 0.0, atol=1e-15)
    assert (normal_rows(np.array([-0.1, 0.1]), np.array([0.0, 0.5]), np.ones(2), "fb")[0] != 0).all()
    # the 0/0 point: a generalized-Jacobian element, finite, row kept coupled
    phi0, om0, E0 = normal_rows(np.zeros(1), np.zeros(1), np.array([0.5]), "fb")
    assert phi0[0] == 0 and om0[0] == pytest.approx(1 - 1 / np.sqrt(2)) and E0[0] == pytest.approx(0.5 * (1 - 1 / np.sqrt(2)))


def test_min_map_normal_row():
    phi, om, E = normal_rows(np.array([-0.1, 0.2]), np.array([1.0, 0.0]), np.array([1.0, 1.0]), "min")
    np.testing.assert_allclose(phi, [-0.1, 0.0])
    np.testing.assert_allclose(om, [1.0, 0.0])
    np.testing.assert_allclose(E, [0.0, 1.0])
    with pytest.raises(ValueError, match="ncp must be"):
        normal_rows(np.zeros(1), np.zeros(1), np.ones(1), "pgs")


@pytest.mark.parametrize("ncp", ["fb", "min"])
def test_friction_rows_stick_slide_and_inactive(ncp):
    """Macklin 2019 §4.3 / seed 004 Eqs. 49-57: sliding at the cone (|λ_f| = μλ_n, v > 0) gives
    E_f = v/(μλ_n), so v + E_f λ_f = 0 points λ_f against v; stick (v = 0 inside) gives 0;
    μλ_n ≤ 0 is inactive (ω_f = 0, E_f = 1)."""
    v, lam_n, mu, r = 0.5, 10.0, 0.5, 0.01
    om, E = friction_rows(np.array([v, 0.0, 0.3]), np.array([mu * lam_n, 1.0, 0.0]), np.array([lam_n, lam_n, 0.0]),
                          np.array([mu, mu, mu]), np.array([r, r, r]), ncp)
    assert E[0] == pytest.approx(v / (mu * lam_n), rel=1e-12)
    assert E[1] == 0.0
    np.testing.assert_allclose(om, [1.0, 1.0, 0.0])
    assert E[2] == 1.0
    # the FB 0/0 point (v = 0, λ_f = 0 with λ_n > 0) is stick
    assert friction_rows(np.zeros(1), np.zeros(1), np.ones(1), np.ones(1), np.ones(1), ncp)[1][0] == 0.0


# ---------------------------------------------------------------------------- conjugate residual
def test_conjugate_residual_solves_spd_and_reduces_residual_monotonically():
    rng = np.random.default_rng(2)
    B = rng.standard_normal((30, 30))
    K = B @ B.T + 0.1 * np.eye(30)
    b = rng.standard_normal(30)
    np.testing.assert_allclose(conjugate_residual(K, b, 200), np.linalg.solve(K, b), rtol=1e-6, atol=1e-8)
    res = [np.linalg.norm(b - K @ conjugate_residual(K, b, k)) for k in (1, 3, 10)]
    assert res[0] > res[1] > res[2]


# ---------------------------------------------------------------------------- assembled system
@pytest.mark.parametrize("mat", [ARAP(1e5, 0.3), CoRotational(1e5, 0.3), StableNeoHookean(1e5, 0.3)],
                         ids=lambda m: type(m).__name__)
def test_system_energy_gradient_matches_finite_differences(mat):
    rng = np.random.default_rng(3)
    for mesh in (box_tet_mesh((0.2, 0.1, 0.1), (2, 1, 1)), cloth_sheet((0.2, 0.2), (3, 3))):
        body = DeformableBody("b", mesh, mat, bending=0.5 if mesh.dim == 2 else 0.0)
        sysm = LocalGlobalSystem(DeformableWorld((body,)), 0.01, FBAOptions())
        x = mesh.X + 0.02 * rng.standard_normal(mesh.X.shape)
        x_tilde = mesh.X + 0.01 * rng.standard_normal(mesh.X.shape)
        g = sysm.incremental_potential_gradient(x, x_tilde)
        eps = 1e-7
        g_fd = np.zeros_like(x)
        for i in range(x.shape[0]):
            for a in range(3):
                dx = np.zeros_like(x)
                dx[i, a] = eps
                g_fd[i, a] = (sysm.incremental_potential(x + dx, x_tilde) - sysm.incremental_potential(x - dx, x_tilde)) / (2 * eps)
        np.testing.assert_allclose(g, g_fd, atol=1e-5 * np.abs(g).max())


# ---------------------------------------------------------------------------- whole steps
def test_free_fall_is_exact_implicit_euler():
    """Without contact an undeformed body translates rigidly: x_n = x_0 + n h v_0 + h² g n(n+1)/2."""
    mesh = box_tet_mesh((0.1, 0.1, 0.1), (2, 2, 2))
    v0 = np.array([0.3, 0.0, 1.0])
    body = DeformableBody("b", mesh, StableNeoHookean(1e5, 0.3), velocity=v0)
    sim = DeformableSimulator(DeformableWorld((body,)), dt=0.01)
    traj = sim.run(0.2)
    n = np.arange(21)[:, None, None]
    g = np.array([0, 0, -9.81])
    ref = mesh.X[None] + n * 0.01 * v0 + 0.01**2 * g * (n * (n + 1) / 2)
    np.testing.assert_allclose(traj.deformable_positions["b"], ref, atol=1e-10)
    assert traj.q.shape == (21, 0) and traj.t[-1] == pytest.approx(0.2)


def test_box_rests_on_ground_with_weight_balanced():
    mesh = box_tet_mesh((0.1, 0.1, 0.1), (2, 2, 2), center=(0, 0, 0.05))
    body = DeformableBody("b", mesh, StableNeoHookean(1e6, 0.3))
    sim = DeformableSimulator(DeformableWorld((body,), (HalfSpace(mu=0.5),)))
    traj = sim.run(0.3)
    lam = sim.last_lambda
    nc = sim.last_rows.n_contacts
    weight = sim.system.mass.sum() * 9.81
    assert nc == 9
    assert lam[0:3 * nc:3].sum() == pytest.approx(weight, rel=1e-3)
    assert np.abs(lam[1:3 * nc:3].sum()) < 1e-3 * weight
    assert traj.stats["min_gap"][-1] > -1e-6  # penetration below a micrometre
    X = traj.deformable_positions["b"][-1]
    assert np.abs(X.mean(0)[:2]).max() < 1e-4  # no drift


def _hanging_bar(pin: str, E=1e6, L=0.5, w=0.05):
    mesh = bar_tet_mesh(L, w, 10, 1).transformed(np.array([[0, 0, -1.0], [0, 1.0, 0], [1.0, 0, 0]]))  # along −z
    top = np.flatnonzero(np.isclose(mesh.X[:, 2], L / 2))
    if pin == "dirichlet":
        body = DeformableBody("bar", mesh, ARAP(E, 0.0), density=1000.0, pinned=top)
        world = DeformableWorld((body,))
    else:
        body = DeformableBody("bar", mesh, ARAP(E, 0.0), density=1000.0)
        world = DeformableWorld((body,), attachments=(Attachment("bar", top),))
    return mesh, top, world


@pytest.mark.parametrize("pin", ["dirichlet", "attachment"])
def test_hanging_bar_static_elongation_matches_analytic(pin):
    """A bar of ARAP (uniaxial modulus 2μ, no lateral coupling) hanging under its own weight:
    tip displacement ρ g L²/(2 · 2μ). Statics by implicit Euler with a long step (h = 1 s)."""
    E, L = 1e6, 0.5
    mesh, top, world = _hanging_bar(pin, E, L)
    opts = dict(iterations=60, cr_iterations=60)
    sim = DeformableSimulator(world, dt=1.0, solver_options=opts)
    traj = sim.run(8.0)
    X = traj.deformable_positions["bar"][-1]
    bottom = np.isclose(mesh.X[:, 2], -L / 2)
    tip = -(X[bottom, 2] - mesh.X[bottom, 2]).mean()
    mu = E / 2
    assert tip == pytest.approx(1000 * 9.81 * L**2 / (2 * 2 * mu), rel=0.02)
    if pin == "attachment":
        lam = sim.last_lambda
        weight = sim.system.mass.sum() * 9.81
        assert lam[2::3].sum() == pytest.approx(weight, rel=1e-3)  # the z rows hold the weight
        np.testing.assert_allclose(X[top], mesh.X[top], atol=1e-7)


def test_obstacle_sdfs():
    x = np.array([[0.0, 0.0, 0.3], [0.2, 0.0, 0.0], [0.0, 0.05, 0.0]])
    phi, n, _ = SphereObstacle(center=(0, 0, 0), radius=0.1).query(x, 0.0)
    np.testing.assert_allclose(phi, [0.2, 0.1, -0.05])
    phi, n, _ = BoxObstacle(half_extents=(0.1, 0.1, 0.1)).query(x, 0.0)
    np.testing.assert_allclose(phi, [0.2, 0.1, -0.05])
    np.testing.assert_allclose(n[0], [0, 0, 1])
    cyl = CylinderObstacle(axis=(0, 1, 0), radius=0.1, half_length=1.0, spin=2.0)
    phi, n, vel = cyl.query(np.array([[0.0, 0.0, 0.15]]), 0.0)
    assert phi[0] == pytest.approx(0.05)
    np.testing.assert_allclose(n[0], [0, 0, 1])
    np.testing.assert_allclose(vel[0], 2.0 * np.cross([0, 1, 0], [0, 0, 0.15]))


def test_options_and_simulator_reject_bad_input():
    with pytest.raises(ValueError, match="unknown FBA solver options"):
        FBAOptions.from_dict({"iters": 3})
    with pytest.raises(ValueError, match="preconditioner"):
        FBAOptions(preconditioner="jacobi")
    with pytest.raises(ValueError, match="iterations"):
        FBAOptions(iterations=0)
    body = DeformableBody("b", box_tet_mesh(), ARAP(1e5, 0.3))
    with pytest.raises(ValueError, match="solver must be one of"):
        DeformableSimulator(DeformableWorld((body,)), solver="sap")
    with pytest.raises(ValueError, match="jacobi"):
        DeformableSimulator(DeformableWorld((body,), (HalfSpace(),)), solver_options={"global_step": "jacobi"})
    with pytest.raises(ValueError, match="dt"):
        DeformableSimulator(DeformableWorld((body,)), dt=-1.0)
    with pytest.raises(ValueError, match="max_speed"):
        DeformableSimulator(DeformableWorld((body,)), max_speed=0.0)
    from plants.errors import SimulationDivergedError

    fast = DeformableBody("f", box_tet_mesh(), ARAP(1e5, 0.3), velocity=(10.0, 0, 0))
    sim = DeformableSimulator(DeformableWorld((fast,)), max_speed=5.0)
    x0 = sim.x.copy()
    with pytest.raises(SimulationDivergedError, match="max_speed"):
        sim.step()
    np.testing.assert_array_equal(sim.x, x0)  # state left unchanged
    with pytest.raises(ValueError, match="unique"):
        DeformableWorld((body, body))


def _cantilever_tip(cells_along, cells_across, E=1e8, L=1.0, w=0.1):
    mesh = box_tet_mesh((L, w, w), (cells_along, cells_across, cells_across), center=(L / 2, 0, 0))
    clamp = np.flatnonzero(np.isclose(mesh.X[:, 0], 0.0))
    body = DeformableBody("beam", mesh, CoRotational(E, 0.3), pinned=clamp)
    sim = DeformableSimulator(DeformableWorld((body,)), dt=1.0, solver_options={"iterations": 100})
    sim.run(6.0)  # implicit Euler with h = 1 s: statics
    tip = np.isclose(mesh.X[:, 0], L)
    return -(sim.x[tip, 2] - mesh.X[tip, 2]).mean()


@pytest.mark.slow
def test_cantilever_static_deflection_approaches_beam_theory():
    """A clamped co-rotational beam (L/h = 10) under its own weight: tip deflection → q L⁴/(8EI)
    (Euler-Bernoulli; Timoshenko adds ~1 % at this slenderness) as the mesh is refined; linear
    tetrahedra lock in bending, so the coarse mesh is stiffer."""
    E, L, w = 1e8, 1.0, 0.1
    beam = 1000 * 9.81 * w * w * L**4 / (8 * E * w**4 / 12)
    coarse, fine = _cantilever_tip(20, 2), _cantilever_tip(40, 4)
    assert coarse < fine <= 1.02 * beam
    assert fine == pytest.approx(beam, rel=0.07)


def test_two_bodies_of_different_materials_rest_side_by_side():
    """Block-diagonal assembly over bodies: an ARAP (PD) and a Stable Neo-Hookean (ADMM-PD) box
    dropped on the ground both come to rest on it, each carrying its own weight."""
    a = DeformableBody("arap", box_tet_mesh((0.1,) * 3, (2, 2, 2), center=(-0.1, 0, 0.06)), ARAP(1e6, 0.3))
    b = DeformableBody("snh", box_tet_mesh((0.1,) * 3, (2, 2, 2), center=(0.1, 0, 0.06)), StableNeoHookean(1e6, 0.3),
                       density=500.0)
    sim = DeformableSimulator(DeformableWorld((a, b), (HalfSpace(mu=0.5),)))
    traj = sim.run(0.4)
    assert set(traj.deformable_positions) == {"arap", "snh"}
    for body in (a, b):
        X = traj.deformable_positions[body.name][-1]
        assert X[:, 2].min() == pytest.approx(0.0, abs=1e-5)
        assert np.abs(traj.deformable_velocities[body.name][-1]).max() < 1e-3
    rows, lam = sim.last_rows, sim.last_lambda
    nc = rows.n_contacts
    on_a = rows.node[0:3 * nc:3] < a.n_nodes  # free indices: a's nodes come first
    g = 9.81
    assert lam[0:3 * nc:3][on_a].sum() == pytest.approx(a.node_masses().sum() * g, rel=2e-3)
    assert lam[0:3 * nc:3][~on_a].sum() == pytest.approx(b.node_masses().sum() * g, rel=2e-3)


def test_delassus_operator_equals_h_ainv_ht():
    """W = H A⁻¹ Hᵀ formed from the node block (S[:, U])ᵀ S[:, U] equals the dense product with
    the explicit 3n × 3n inverse (A ⊗ I₃)⁻¹, and its mat-vec equals W x."""
    from plants.sim.deformable.simulator import Delassus

    mesh = box_tet_mesh((0.1,) * 3, (2, 2, 2))
    sysm = LocalGlobalSystem(DeformableWorld((DeformableBody("b", mesh, ARAP(1e6, 0.3)),)), 0.01, FBAOptions())
    rng = np.random.default_rng(6)
    node = rng.integers(0, mesh.n_nodes, 12)
    C = rng.standard_normal((12, 3))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    H = np.zeros((12, 3 * mesh.n_nodes))
    for j in range(12):
        H[j, 3 * node[j]:3 * node[j] + 3] = C[j]
    A3 = np.kron(sysm.A.toarray(), np.eye(3))
    W_ref = H @ np.linalg.solve(A3, H.T)
    uniq, pos = np.unique(node, return_inverse=True)
    W = Delassus(sysm.inverse_block(uniq), pos, C)
    np.testing.assert_allclose(W.toarray(), W_ref, rtol=1e-9, atol=1e-12 * np.abs(W_ref).max())
    np.testing.assert_allclose(W.diagonal(), np.diag(W_ref), rtol=1e-9)
    x = rng.standard_normal(12)
    np.testing.assert_allclose(W.matvec(x), W_ref @ x, rtol=1e-9, atol=1e-12 * np.abs(W_ref @ x).max())
    assert not W.dense  # the block form on the CPU by default; the dense form (auto on a GPU) agrees
    W_dense = Delassus(sysm.inverse_block(uniq), pos, C, dense=True)
    np.testing.assert_allclose(W_dense.matvec(x), W_ref @ x, rtol=1e-9, atol=1e-12 * np.abs(W_ref @ x).max())
    with pytest.raises(TypeError, match="dense"):
        Delassus(sysm.inverse_block(uniq), pos, C, dense="yes")
    np.testing.assert_allclose(conjugate_residual(lambda v: W_ref @ v, x, 40, diagonal=np.diag(W_ref)),
                               conjugate_residual(W_ref, x, 40))


def test_cloth_bending_stiffens_a_clamped_strip():
    """A cloth strip clamped along one short edge (two node columns, so the clamp carries a
    moment: boundary vertices have no bending term) swings down under gravity; Laplace-Beltrami
    bending holds it up: the mean tip drop over 0.5-1.5 s falls as k_b grows."""
    def mean_drop(kb):
        mesh = cloth_sheet((0.3, 0.1), (12, 4))
        clamp = np.flatnonzero(mesh.X[:, 0] < -0.15 + 0.03)
        body = DeformableBody("c", mesh, StableNeoHookean(1e6, 0.3), density=200.0, thickness=1e-3, pinned=clamp,
                              bending=kb)
        X = DeformableSimulator(DeformableWorld((body,)), dt=0.01).run(1.5).deformable_positions["c"]
        assert np.isfinite(X).all()
        return -X[50:, np.isclose(mesh.X[:, 0], 0.15), 2].mean()

    drops = [mean_drop(kb) for kb in (0.0, 0.05, 0.5)]
    assert drops[0] > 0.1  # limp: hangs down
    assert drops[0] > drops[1] > drops[2]
