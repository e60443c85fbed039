"""SubADMM body-level Jacobian splitting (seed 000 eq. 30-31, 40-41, App. A) and the Table III
ablations, on real Pinocchio scenes (Unitree A1s from example-robot-data, a cube stack).

Independent references: the dense ``Â + β Σ_p J_pᵀJ_p`` of the pieces built from
``ContactBodies.piece_rows`` (full rows, no compaction), the stepper's own contact Jacobian, CANAL
(a different algorithm) for the solutions, and the numpy reference of the compiled iteration."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from plants.sim import CANALSolver, ContactProblem, ContactSolverStatus, SubADMMSolver, load_scene
from plants.sim._subadmm_kernels import HAVE_NUMBA, piece_step, piece_step_numpy
from plants.sim.contact_laws import rigid_contact_form
from plants.sim.subadmm import (
    VARIANTS,
    BodySplitFactor,
    SubADMMOptions,
    TreeSplitFactor,
    pseudo_density_beta,
    slack_pieces,
    whole_system_factor,
)


def frozen(scene: str, steps: int, **kw) -> ContactProblem:
    sim = load_scene(scene, solver="sap", **kw)
    for _ in range(steps):
        sim.step()
    return sim.contact_problem()[0]


@pytest.fixture(scope="module")
def a1(a1_impact_step) -> ContactProblem:
    """8 A1s after 110 steps at 1/240 s: ~70 foot/leg contacts with the ground (conftest)."""
    return a1_impact_step


@pytest.fixture(scope="module")
def cubes() -> ContactProblem:
    """5 stacked cubes: contacts between free bodies (two pieces each) and with the ground."""
    return frozen("cube-rest-5", 20)


def dense_reference(problem: ContactProblem, beta: float, theta: float = 0.0):
    """(Â + β Σ_p J_pᵀJ_p, pieces' contacts, full piece rows) from ContactBodies.piece_rows."""
    contact, _, rows = problem.bodies.piece_rows()
    R = rows.reshape(-1, problem.n_v)
    return problem.A / (1.0 - theta) + beta * R.T @ R, contact, rows


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def intra_tree_problem(a1: ContactProblem) -> ContactProblem:
    """``a1`` plus one contact between two bodies of robot 0 (its left front calf and its base):
    what body splitting treats differently (two stacked pieces, eq. 30-31 footnote)."""
    b = a1.bodies
    model = b.model
    calf = next(j for j in range(1, model.njoints) if model.names[j].endswith("FL_calf_joint"))
    base = next(j for j in range(1, model.njoints) if model.names[j].endswith("root_joint"))
    import pinocchio as pin

    data = model.createData()
    pin.forwardKinematics(model, data, b.q)
    point = data.oMi[calf].translation + np.array([0.01, 0.0, 0.02])
    frame = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    local = np.stack([data.oMi[j].actInv(point) for j in (base, calf)])
    bodies = replace(b, joints=np.vstack([b.joints, [base, calf]]), points=np.vstack([b.points, point]),
                     frames=np.concatenate([b.frames, frame[None]]),
                     local_points=np.concatenate([b.local_points, local[None]]))
    _, _, rows = replace(bodies).piece_rows()
    contact = np.concatenate([np.flatnonzero(bodies.joints[:, 0] > 0), np.flatnonzero(bodies.joints[:, 1] > 0)])
    J = np.zeros((a1.n_c + 1, 3, a1.n_v))
    np.add.at(J, contact, rows)
    tree = 0
    return ContactProblem(A=a1.A, v_star=a1.v_star, J=J.reshape(-1, a1.n_v), phi0=np.append(a1.phi0, 0.0),
                          mu=np.append(a1.mu, 0.5), stiffness=np.append(a1.stiffness, np.inf),
                          dissipation=np.append(a1.dissipation, 0.0), dt=a1.dt, tree_starts=a1.tree_starts,
                          contact_trees=np.vstack([a1.contact_trees, [tree, tree]]), v0=a1.v0, bodies=bodies)


# ----------------------------------------------------------------------------- the data the stepper attaches
@pytest.mark.parametrize("scene", ["a1", "cubes"])
def test_body_pieces_sum_to_the_stepper_jacobian(scene, request):
    """Σ of the pieces of each contact (from body Jacobians, eq. 44) = the stepper's J_i, and the
    compact pieces of every variant expand to the same rows."""
    p = request.getfixturevalue(scene)
    contact, joint, rows = p.bodies.piece_rows()
    S = np.zeros((p.n_c, 3, p.n_v))
    np.add.at(S, contact, rows)
    assert rel(S.reshape(-1, p.n_v), p.J) <= 1e-12
    for variant in VARIANTS:
        pc = slack_pieces(p, variant)
        S = np.zeros((p.n_c, 3, p.n_v))
        np.add.at(S, pc.contact, pc.dense(p.n_v))
        assert rel(S.reshape(-1, p.n_v), p.J) <= 1e-12, variant
        assert np.array_equal(np.bincount(pc.contact, minlength=p.n_c), pc.count)
    body = slack_pieces(p, "body")
    assert body.contact.size == int((p.bodies.joints > 0).sum())  # one piece per (contact, body side)


def test_local_points_are_the_contact_points_in_the_joint_frames(a1):
    import pinocchio as pin

    b = a1.bodies
    data = b.model.createData()
    pin.forwardKinematics(b.model, data, b.q)
    for i, k in zip(*np.nonzero(b.joints > 0), strict=True):
        assert np.allclose(data.oMi[int(b.joints[i, k])].act(b.local_points[i, k]), b.points[i], atol=1e-12)


# ----------------------------------------------------------------------------- the subsystem matrix (eq. 40-41)
@pytest.mark.parametrize("scene", ["a1", "cubes"])
@pytest.mark.parametrize("theta", [0.0, 0.4])
def test_crba_subsystem_matrix_equals_the_dense_sum(scene, theta, request):
    """CRBA with H_b = M_b + β Σ [I −[p]; [p] −[p]²] gives Â + β Σ_p J_pᵀJ_p (1e-10 relative), and
    the branch-sparse LDLᵀ solves with it; the model given to the solver is left untouched."""
    p = request.getfixturevalue(scene)
    model = p.bodies.model
    before = np.array([model.inertias[j].toDynamicParameters() for j in range(model.njoints)])
    beta = 3.7
    K_ref, _, _ = dense_reference(p, beta, theta)
    pieces = slack_pieces(p, "body")
    f = BodySplitFactor(model, p.tree_starts).factor(p.bodies, pieces.joint, pieces.local_point, beta, theta, p.A)
    assert rel(f.matrix(), K_ref) <= 1e-10
    x = np.random.default_rng(0).normal(size=p.n_v)
    assert rel(f.solve(K_ref @ x), x) <= 1e-10
    after = np.array([model.inertias[j].toDynamicParameters() for j in range(model.njoints)])
    assert np.array_equal(before, after)
    # the private copy is restored too: a second factorization with other pieces is exact
    g = f.factor(p.bodies, pieces.joint[:3], pieces.local_point[:3], beta, theta, p.A)
    R = p.bodies.piece_rows()[2][np.argsort(p.bodies.piece_rows()[0], kind="stable")][:3].reshape(-1, p.n_v)
    assert rel(g.matrix(), p.A / (1 - theta) + beta * R.T @ R) <= 1e-10


def test_crba_matrix_when_the_mass_matrix_is_at_another_configuration(cubes):
    """A = M(q_θ) + diag(d) at a configuration other than the contacts' (implicit free motion):
    the point masses alone go through CRBA and A is added; same matrix as the dense sum."""
    p = cubes
    d = np.linspace(0.1, 0.2, p.n_v)
    q = p.bodies.q.copy()
    q[:3] += 0.05  # move the first body: M(q) stays valid, J is at the original q
    import pinocchio as pin

    M = pin.crba(p.bodies.model, p.bodies.model.createData(), q)
    M = np.triu(M) + np.triu(M, 1).T
    problem = replace(p, A=M + np.diag(d), bodies=replace(p.bodies, mass_q=q, mass_diagonal=d))
    K_ref, _, _ = dense_reference(problem, 2.0)
    pieces = slack_pieces(problem, "body")
    f = BodySplitFactor(p.bodies.model, p.tree_starts).factor(problem.bodies, pieces.joint, pieces.local_point, 2.0,
                                                              0.0, problem.A)
    assert rel(f.matrix(), K_ref) <= 1e-10


def test_intra_tree_contact_gets_two_stacked_pieces(a1):
    """A contact between two bodies of one robot: two pieces (|Z_i| = 2) on the same tree, each
    ±F[I −[p]]J_b, whose sum is J_i; No Body keeps it as one piece. The CRBA matrix equals the
    dense sum, and SubADMM solves the problem like CANAL."""
    p = intra_tree_problem(a1)
    i = p.n_c - 1
    body = slack_pieces(p, "body")
    mine = np.flatnonzero(body.contact == i)
    assert mine.size == 2 and body.count[i] == 2
    rows = body.dense(p.n_v)[mine]
    assert rel(rows.sum(axis=0), p.J[3 * i : 3 * i + 3]) <= 1e-12
    assert np.abs(rows[0]).max() > 0.1 and np.abs(rows[1]).max() > 0.1  # neither piece is trivial
    assert np.count_nonzero(slack_pieces(p, "no_body").contact == i) == 1
    K_ref, _, _ = dense_reference(p, 1.5)
    f = BodySplitFactor(p.bodies.model, p.tree_starts).factor(p.bodies, body.joint, body.local_point, 1.5, 0.0, p.A)
    assert rel(f.matrix(), K_ref) <= 1e-10


@pytest.mark.parametrize("scene", ["a1", "cubes"])
def test_no_body_and_no_sub_factorizations_solve_their_matrices(scene, request):
    p = request.getfixturevalue(scene)
    x = np.random.default_rng(2).normal(size=p.n_v)
    for variant, make in (("no_body", lambda pc: TreeSplitFactor(p.A, pc, p.tree_starts, 2.0).solve),
                          ("no_body", lambda pc: TreeSplitFactor(p.A, pc, p.tree_starts, 2.0, compiled=False).solve),
                          ("no_sub", lambda pc: whole_system_factor(p.A, pc, p.tree_starts, 2.0))):
        pc = slack_pieces(p, variant)
        R = pc.dense(p.n_v).reshape(-1, p.n_v)
        K = p.A + 2.0 * R.T @ R
        assert rel(make(pc)(K @ x), x) <= 1e-10, variant
    # No Sub's matrix couples trees through contacts between two bodies: A + β JᵀJ exactly
    pc = slack_pieces(p, "no_sub")
    R = pc.dense(p.n_v).reshape(-1, p.n_v)
    assert rel(R.T @ R, p.J.T @ p.J) <= 1e-12


# ----------------------------------------------------------------------------- the iteration
def test_compiled_iteration_matches_the_numpy_reference(cubes):
    p = cubes
    form = rigid_contact_form(p)
    pc = slack_pieces(p, "body")
    rng = np.random.default_rng(3)
    v, lam = rng.normal(size=p.n_v), np.abs(rng.normal(size=(p.n_c, 3)))
    rho = 1.0 + 0.3 * rng.random(p.n_c)
    b = rng.normal(size=p.n_v)
    z0 = rng.normal(size=(pc.contact.size, 3))
    assert HAVE_NUMBA
    for alpha in (1.0, 1.6):
        outs = []
        for step in (piece_step, piece_step_numpy):
            lam_out, rhs, z = np.empty_like(lam), np.empty(p.n_v), z0.copy()
            d = step(np.ascontiguousarray(pc.blocks), pc.cols, pc.contact, pc.count, v, lam, form.e, form.mu, rho, 0.7,
                     b, lam_out, rhs, alpha, z)
            outs.append((d, lam_out, rhs, z))
        assert np.isclose(outs[0][0], outs[1][0], rtol=1e-12)
        for k in (1, 2, 3):
            assert rel(outs[0][k], outs[1][k]) <= 1e-12


@pytest.mark.parametrize("scene", ["a1", "cubes"])
def test_all_variants_reach_the_canal_solution(scene, request):
    """SubADMM (body), No Body and No Sub converge to CANAL's impulses on a single-step case."""
    p = request.getfixturevalue(scene)
    ref = CANALSolver(warm_start=False).solve(p)
    assert ref.status.ok and ref.residual <= 1e-8
    for variant in VARIANTS:
        r = SubADMMSolver(variant=variant, max_iterations=2000, tol=1e-9, warm_start=False).solve(p)
        assert r.status is ContactSolverStatus.SOLVED, variant
        assert r.solver == f"subadmm[{variant}]"
        assert np.abs(r.gamma - ref.gamma).max() <= 2e-5 * np.abs(ref.gamma).max(), variant
        assert np.abs(r.v - ref.v).max() <= 1e-5, variant


def test_intra_tree_problem_solved_like_canal(a1):
    p = intra_tree_problem(a1)
    ref = CANALSolver(warm_start=False).solve(p)
    assert ref.status.ok
    for variant in ("body", "no_body"):
        r = SubADMMSolver(variant=variant, max_iterations=3000, tol=1e-9, warm_start=False).solve(p)
        assert r.status.ok, variant
        assert np.abs(r.v - ref.v).max() <= 1e-5, variant


def test_pseudo_density_over_bodies(a1, cubes):
    """β₀ = geometric mean over bodies in contact of body mass / its contact pieces (§VI-D); for
    free bodies the body and the tree rule coincide."""
    b = a1.bodies
    js, counts = np.unique(b.joints[b.joints > 0], return_counts=True)
    mass = np.array([b.model.inertias[int(j)].mass for j in js])
    assert pseudo_density_beta(a1) == pytest.approx(np.exp(np.mean(np.log(mass / counts))), rel=1e-12)
    assert pseudo_density_beta(cubes, "body") == pytest.approx(pseudo_density_beta(cubes, "tree"), rel=1e-12)


# ----------------------------------------------------------------------------- bad input
def test_problems_without_bodies_fall_back_to_tree_pieces(cubes):
    loaded = replace(cubes, bodies=None)
    assert SubADMMOptions().variant == "body"
    r = SubADMMSolver(max_iterations=5, warm_start=False).solve(loaded)
    assert r.solver == "subadmm[no_body]"
    with pytest.raises(ValueError, match="bodies"):
        slack_pieces(loaded, "body")


@pytest.mark.parametrize("bad, match", [({"variant": "sub"}, "variant"), ({"beta_rule": "joint"}, "beta_rule"),
                                        ({"gamma": 1.0}, "gamma"), ({"max_iterations": 0}, "max_iterations"),
                                        ({"relaxation": 2.0}, "relaxation"),
                                        ({"penalty_rule": "osqp"}, "penalty_rule")])
def test_bad_options(bad, match):
    with pytest.raises(ValueError, match=match):
        SubADMMOptions(**bad)


def test_bad_contact_bodies(cubes):
    b = cubes.bodies
    with pytest.raises(ValueError, match="points"):
        replace(b, points=b.points[:-1])
    with pytest.raises(ValueError, match="local_points"):
        replace(b, local_points=b.local_points[:, :1])
    with pytest.raises(ValueError, match="joints"):
        replace(b, joints=np.full_like(b.joints, b.model.njoints))
    with pytest.raises(TypeError, match="bodies"):
        replace(cubes, bodies="not bodies")
    short = replace(b, joints=b.joints[:-1], points=b.points[:-1], frames=b.frames[:-1],
                    local_points=b.local_points[:-1])
    with pytest.raises(ValueError, match="bodies must describe"):
        replace(cubes, bodies=short)
    with pytest.raises(ValueError, match="variant"):
        slack_pieces(cubes, "bodies")


def test_compiled_solves_match_their_references(a1):
    """Featherstone LDLᵀ solve per chunk (compiled) vs dense solves of U D Uᵀ; the compiled No Body
    build + Cholesky vs its numpy reference (einsum, LAPACK)."""
    from plants.sim._subadmm_kernels import ldlt_solve_trees, ldlt_solve_trees_numpy

    p = a1
    pieces = slack_pieces(p, "body")
    f = BodySplitFactor(p.bodies.model, p.tree_starts).factor(p.bodies, pieces.joint, pieces.local_point, 1.0, 0.0, p.A)
    y = np.random.default_rng(4).normal(size=p.n_v)
    out, ref = np.empty(p.n_v), np.empty(p.n_v)
    ldlt_solve_trees(f.U, f.D_inv, f.nv_subtree, f.chunk_starts, y, out)
    ldlt_solve_trees_numpy(f.U, f.D_inv, f.nv_subtree, f.chunk_starts, y, ref)
    assert rel(out, ref) <= 1e-10
    assert np.count_nonzero(f.nv_subtree < np.diff(p.tree_starts).max()) > p.n_trees  # branches: real sparsity
    pt = slack_pieces(p, "no_body")
    fast = TreeSplitFactor(p.A, pt, p.tree_starts, 1.0, compiled=True)
    slow = TreeSplitFactor(p.A, pt, p.tree_starts, 1.0, compiled=False)
    assert rel(fast.solve(y), slow.solve(y)) <= 1e-10


@pytest.mark.parametrize("variant", VARIANTS)
def test_adaptive_penalty_and_relaxation_reach_the_canal_solution(cubes, variant):
    """The refactorization path (β changes, eq. 43; the right-hand side is rebuilt from the stored
    slacks) and the over-relaxed z/λ-step converge to the same solution."""
    ref = CANALSolver(warm_start=False).solve(cubes)
    r = SubADMMSolver(variant=variant, adaptive_penalty=True, relaxation=1.6, max_iterations=3000, tol=1e-9,
                      warm_start=False).solve(cubes)
    assert r.status.ok and r.timings["factorizations"] > 1
    assert np.abs(r.v - ref.v).max() <= 1e-5


@pytest.mark.parametrize("scene", ["a1", "cubes"])
@pytest.mark.parametrize("theta", [0.0, 0.4])
def test_compiled_body_split_equals_pinocchio_crba_and_the_dense_sum(scene, theta, request):
    """The compiled composite-rigid-body build + LTDL factorization gives the same matrix as
    Pinocchio's CRBA with modified inertias and as the dense sum (1e-10), and solves with it."""
    from plants.sim.subadmm import CompiledBodySplitFactor

    p = request.getfixturevalue(scene)
    pieces = slack_pieces(p, "body")
    K_ref, _, _ = dense_reference(p, 2.5, theta)
    c = CompiledBodySplitFactor(p.bodies.model, p.tree_starts).factor(
        p.bodies, pieces.joint, p.bodies.points[pieces.contact], 2.5, theta, p.A)
    assert rel(c.matrix(), K_ref) <= 1e-10
    x = np.random.default_rng(5).normal(size=p.n_v)
    assert rel(c.solve(K_ref @ x), x) <= 1e-10
    ref = BodySplitFactor(p.bodies.model, p.tree_starts).factor(p.bodies, pieces.joint, pieces.local_point, 2.5,
                                                                theta, p.A)
    assert rel(c.matrix(), ref.matrix()) <= 1e-12


def test_compiled_body_split_on_an_intra_tree_contact_and_bad_matrices(a1):
    from plants.sim.subadmm import CompiledBodySplitFactor

    p = intra_tree_problem(a1)
    pieces = slack_pieces(p, "body")
    f = CompiledBodySplitFactor(p.bodies.model, p.tree_starts)
    f.factor(p.bodies, pieces.joint, p.bodies.points[pieces.contact], 1.5, 0.0, p.A)
    assert rel(f.matrix(), dense_reference(p, 1.5)[0]) <= 1e-10
    A = p.A.copy()
    A[6, 9] = A[9, 6] = 1e-3  # couples two legs of robot 0: not a mass matrix
    with pytest.raises(ValueError, match="branch"):
        f.factor(p.bodies, pieces.joint, p.bodies.points[pieces.contact], 1.5, 0.0, A)
    r = SubADMMSolver(variant="body", max_iterations=5).solve(replace(p, A=A))
    assert r.status is ContactSolverStatus.NUMERICAL_ERROR and "branch" in r.message
    with pytest.raises(ValueError, match="body_factorization"):
        SubADMMOptions(body_factorization="numpy")


def test_pinocchio_and_compiled_body_variants_give_the_same_iterates(a1):
    a = SubADMMSolver(variant="body", max_iterations=50, warm_start=False).solve(a1)
    b = SubADMMSolver(variant="body", body_factorization="pinocchio", max_iterations=50, warm_start=False).solve(a1)
    assert np.abs(a.gamma - b.gamma).max() <= 1e-9 * np.abs(a.gamma).max()


def test_implicit_free_motion_attaches_the_mass_configuration():
    """With the midpoint scheme the stepper's A is M(q_θ) (+ diag): ContactBodies.mass_q records
    q_θ ≠ q, and both body-split factorizations still give Â + β Σ J_pᵀJ_p and CANAL's solution."""
    p = frozen("cube-rest-3", 10, scheme="midpoint")
    assert not np.array_equal(p.bodies.mass_q, p.bodies.q)
    import pinocchio as pin

    M = pin.crba(p.bodies.model, p.bodies.model.createData(), p.bodies.mass_q)
    M = np.triu(M) + np.triu(M, 1).T
    assert rel(p.A, M + np.diag(p.bodies.mass_diagonal)) <= 1e-12
    K_ref, _, _ = dense_reference(p, 1.3)
    from plants.sim.subadmm import CompiledBodySplitFactor

    pieces = slack_pieces(p, "body")
    compiled = CompiledBodySplitFactor(p.bodies.model, p.tree_starts).factor(
        p.bodies, pieces.joint, p.bodies.points[pieces.contact], 1.3, 0.0, p.A)
    reference = BodySplitFactor(p.bodies.model, p.tree_starts).factor(
        p.bodies, pieces.joint, pieces.local_point, 1.3, 0.0, p.A)  # the additive form (mass_q ≠ q)
    assert rel(compiled.matrix(), K_ref) <= 1e-10 and rel(reference.matrix(), K_ref) <= 1e-10
    ref = CANALSolver(warm_start=False).solve(p)
    sol = SubADMMSolver(max_iterations=3000, tol=1e-9, warm_start=False).solve(p)
    assert sol.status.ok and np.abs(sol.v - ref.v).max() <= 1e-5


# ----------------------------------------------------------------------------- body-structured iteration
@pytest.mark.parametrize("scene", ["a1", "cubes"])
def test_body_iteration_matches_its_numpy_reference_and_the_row_iteration(scene, request):
    """The compiled body iteration (forward pass of body velocities, 3×6 per piece, backward pass of
    body wrenches; eq. 30-31) vs (i) its numpy reference (body Jacobians as masked world Jacobians,
    no recursion) and (ii) the dense-row reference step on the same pieces, iterate by iterate for
    30 ADMM iterations from the same start: λ, z, the next right-hand side and v̂ agree to 1e-12."""
    from plants.sim._subadmm_kernels import body_piece_step_numpy
    from plants.sim.subadmm import CompiledBodySplitFactor, _Iteration

    p = request.getfixturevalue(scene)
    form = rigid_contact_form(p)
    pc = slack_pieces(p, "body")
    beta = pseudo_density_beta(p, "body")
    f = CompiledBodySplitFactor(p.bodies.model, p.tree_starts).factor(
        p.bodies, pc.joint, p.bodies.points[pc.contact], beta, 0.0, p.A)
    b = p.A @ form.v_free
    n_p, n_c = pc.contact.size, p.n_c
    rho = 1.0 + beta * form.compliance / pc.count
    e, mu = np.ascontiguousarray(form.e), np.ascontiguousarray(form.mu)
    ci = np.ascontiguousarray(pc.contact, np.int64)
    rng = np.random.default_rng(7)
    start_lam, start_z = np.abs(rng.normal(size=(n_c, 3))), rng.normal(size=(n_p, 3))
    start_rhs = b + rng.normal(size=p.n_v)
    # compiled: the solver's own runner (one iteration per call)
    v, lam, lam_prev, z, rhs = np.zeros(p.n_v), start_lam.copy(), np.empty((n_c, 3)), start_z.copy(), start_rhs.copy()
    arrays = (np.ascontiguousarray(pc.blocks), np.ascontiguousarray(pc.cols, np.int64), ci, pc.count, v, lam, lam_prev,
              e, mu, b, rhs, 1.0, z)
    iteration = _Iteration(f, "body", "bodies", p, pc, arrays)
    run = iteration.run
    assert iteration.body is not None and f.generated is not None
    assert iteration.loop is f.generated.module.iterate_body_passes  # generated solves and body passes
    K = f.matrix()
    ref = {name: (start_lam.copy(), start_z.copy(), start_rhs.copy()) for name in ("bodies", "rows")}
    Jib = np.concatenate([p.bodies.frames[ci], np.cross(p.bodies.points[ci][:, None, :], p.bodies.frames[ci])], axis=2)
    Jib = Jib * np.where(pc.side == 0, -1.0, 1.0)[:, None, None]
    for _ in range(30):
        run(1, beta, rho)
        for name, (lam_r, z_r, rhs_r) in ref.items():
            v_r = np.linalg.solve(K, rhs_r)  # dense solve of the factored matrix
            new = np.empty_like(lam_r)
            if name == "bodies":
                body_piece_step_numpy(Jib, pc.joint, pc.contact, pc.count, v_r, lam_r, e, mu, rho, beta, b, new, rhs_r,
                                      1.0, z_r, p.bodies.world_jacobian, p.bodies.joint_support)
            else:
                piece_step_numpy(pc.blocks, pc.cols, pc.contact, pc.count, v_r, lam_r, e, mu, rho, beta, b, new, rhs_r,
                                 1.0, z_r)
            lam_r[:] = new
            assert rel(v, v_r) <= 1e-12, name
            assert rel(lam, lam_r) <= 1e-12 and rel(z, z_r) <= 1e-12 and rel(rhs, rhs_r) <= 1e-12, name
    assert np.abs(lam).max() > 0 and np.abs(lam - start_lam).max() > 1e-3  # the iterates moved


@pytest.mark.parametrize("scene", ["a1", "cubes"])
def test_body_and_row_iterations_give_the_same_solve(scene, request):
    """``body_iteration="bodies"`` and ``"rows"`` (same pieces, same LTDL) give the same impulses after
    100 iterations (round-off only), the accuracy of the 100th iterate included."""
    p = request.getfixturevalue(scene)
    kw = dict(variant="body", max_iterations=100, tol=1e-300, warm_start=False, metric_every=100)
    a = SubADMMSolver(body_iteration="bodies", **kw).solve(p)
    b = SubADMMSolver(body_iteration="rows", **kw).solve(p)
    assert a.iterations == b.iterations == 100
    assert np.abs(a.gamma - b.gamma).max() <= 1e-10 * np.abs(b.gamma).max()
    assert a.residual == pytest.approx(b.residual, rel=1e-6)
    with pytest.raises(ValueError, match="body_iteration"):
        SubADMMOptions(body_iteration="tree")


@pytest.mark.parametrize("variant", VARIANTS)
def test_compiled_chunks_give_the_iterates_of_single_iterations(cubes, variant):
    """k iterations in one compiled call (metric_every = k) = k calls of one iteration: the
    history at the common checkpoints and the final impulses are the same to round-off."""
    kw = dict(variant=variant, max_iterations=60, tol=1e-300, warm_start=False)
    one = SubADMMSolver(metric_every=1, **kw).solve(cubes)
    chunk = SubADMMSolver(metric_every=20, **kw).solve(cubes)
    assert chunk.iterations == one.iterations == 60 and len(chunk.residual_history) == 4
    assert np.allclose(chunk.residual_history, np.array(one.residual_history)[[0, 20, 40, 60]], rtol=1e-9, atol=0)
    assert np.abs(chunk.gamma - one.gamma).max() <= 1e-12 * np.abs(one.gamma).max()


@pytest.mark.parametrize("scene", ["a1", "cubes"])
def test_compiled_sparse_lu_solve_matches_superlu(scene, request):
    """No Sub's compiled triangular solves with SuperLU's L, U, perm_r, perm_c = ``SuperLU.solve``."""
    from plants.sim._subadmm_kernels import sparse_lu_solve, strict_triangles

    p = request.getfixturevalue(scene)
    lu = whole_system_factor(p.A, slack_pieces(p, "no_sub"), p.tree_starts, 1.7, factors=True)
    y = np.random.default_rng(8).normal(size=p.n_v)
    out = np.empty(p.n_v)
    L, U = lu.L, lu.U
    sparse_lu_solve(*strict_triangles(L.indptr, L.indices, L.data, U.indptr, U.indices, U.data),
                    lu.perm_r.astype(np.int64), lu.perm_c.astype(np.int64), y, np.empty(p.n_v), out)
    assert rel(out, lu.solve(y)) <= 1e-12
    K = p.A + 1.7 * p.J.T @ p.J
    assert rel(K @ out, y) <= 1e-10


@pytest.mark.parametrize("scene", ["a1", "cubes"])
def test_compiled_piece_gather_matches_the_numpy_gather(scene, request, monkeypatch):
    """The compiled gather of the pieces (piece index, row blocks) = the numpy one (same pieces, blocks, columns)."""
    import plants.sim.subadmm as subadmm

    p = request.getfixturevalue(scene)
    compiled = {v: slack_pieces(p, v) for v in VARIANTS}
    monkeypatch.setattr(subadmm, "HAVE_NUMBA", False)
    for v in VARIANTS:
        ref = slack_pieces(p, v)
        assert np.array_equal(compiled[v].cols, ref.cols), v
        assert np.array_equal(compiled[v].blocks, ref.blocks), v
        assert np.array_equal(compiled[v].contact, ref.contact) and np.array_equal(compiled[v].count, ref.count), v
        if v == "body":
            assert np.array_equal(compiled[v].side, ref.side) and np.array_equal(compiled[v].joint, ref.joint)


# ----------------------------------------------------------------------------- compiled setup
def test_pieces_without_rows_are_the_body_pieces(a1, cubes):
    """``rows=False`` (what the body iteration uses): the same pieces, bodies and sides, no row blocks;
    only the body variant may skip the rows."""
    for p in (a1, cubes):
        full, lean = slack_pieces(p, "body"), slack_pieces(p, "body", rows=False)
        assert lean.blocks is None and lean.cols is None
        for name in ("contact", "count", "joint", "side", "local_point"):
            assert np.array_equal(getattr(full, name), getattr(lean, name)), name
    with pytest.raises(ValueError, match="rows=False"):
        slack_pieces(cubes, "no_body", rows=False)


def test_compiled_pseudo_density_matches_the_numpy_rule(a1, cubes):
    """β₀ over bodies from the compiled pass (masses given) = the numpy rule (masses read from the model)."""
    for p in (a1, cubes):
        mass = np.array([I.mass for I in p.bodies.model.inertias])
        assert pseudo_density_beta(p, "body", mass) == pytest.approx(pseudo_density_beta(p, "body"), rel=1e-12)


@pytest.mark.parametrize("scene", ["a1", "cubes"])
@pytest.mark.parametrize("variant,body_iteration", [("body", "bodies"), ("body", "rows"), ("no_body", "bodies"),
                                                    ("no_sub", "bodies")])
def test_iteration_velocity_and_scatter_match_dense_rows(scene, variant, body_iteration, request):
    """The compiled z⁰ = J_p v and Σ_p J_pᵀ (w_p + λ_i) of every iteration path (the body forward /
    backward passes, the row blocks) = the dense piece rows (``SlackPieces.dense``), to 1e-12."""
    from plants.sim.subadmm import _Iteration

    p = request.getfixturevalue(scene)
    solver = SubADMMSolver(variant=variant, body_iteration=body_iteration)
    lean = variant == "body" and body_iteration == "bodies"
    pc = slack_pieces(p, variant, rows=not lean)
    rows = slack_pieces(p, variant).dense(p.n_v)  # (n_p, 3, n_v)
    f = solver._factor(p, p.A, pc, 1.3, variant)
    rng = np.random.default_rng(3)
    n_p, n_c = pc.contact.size, p.n_c
    lam = rng.normal(size=(n_c, 3))
    arrays = (None if lean else np.ascontiguousarray(pc.blocks), None if lean else np.ascontiguousarray(pc.cols, np.int64),
              np.ascontiguousarray(pc.contact, np.int64), pc.count, np.zeros(p.n_v), lam, np.empty_like(lam),
              np.zeros((n_c, 3)), np.ones(n_c), np.zeros(p.n_v), np.zeros(p.n_v), 1.0, np.zeros((n_p, 3)))
    it = _Iteration(f, variant, body_iteration, p, pc, arrays)
    assert (it.body is not None) == lean
    v, w = rng.normal(size=p.n_v), rng.normal(size=(n_p, 3))
    assert rel(it.velocity(v), np.einsum("pkn,n->pk", rows, v)) <= 1e-12
    out = rng.normal(size=p.n_v)
    expect = out + np.einsum("pkn,pk->n", rows, w + lam[pc.contact])
    assert rel(it.scatter(w, out), expect) <= 1e-12
    assert rel(it.scatter(None, np.zeros(p.n_v)), np.einsum("pkn,pk->n", rows, lam[pc.contact])) <= 1e-12
    if not lean:  # the numpy fallback (no numba) of the same products
        import plants.sim.subadmm as subadmm

        saved = subadmm.HAVE_NUMBA
        try:
            subadmm.HAVE_NUMBA = False
            ref = _Iteration(f, variant, body_iteration, p, pc, arrays)
        finally:
            subadmm.HAVE_NUMBA = saved
        assert rel(ref.velocity(v), it.velocity(v)) <= 1e-12
        assert rel(ref.scatter(w, np.zeros(p.n_v)), it.scatter(w, np.zeros(p.n_v))) <= 1e-12


@pytest.mark.parametrize("variant", VARIANTS)
def test_dual_residual_of_the_result_matches_numpy(a1, variant):
    """θ_d (eq. 42) of the last iterate, from the compiled per-tree kernel = numpy on the full A, the
    returned impulses and the stepper's J (θ = 0: the returned v is the last v-step)."""
    from plants.sim._subadmm_kernels import tree_dual_residual

    r = SubADMMSolver(variant=variant, max_iterations=20, tol=1e-300, warm_start=False, metric_every=20).solve(a1)
    form = rigid_contact_form(a1)
    res = a1.A @ r.v - a1.A @ form.v_free - a1.J.T @ r.gamma
    per_tree = np.sqrt(np.add.reduceat(res * res, a1.tree_starts[:-1]))
    assert r.timings["theta_d"] == pytest.approx(per_tree.max(), rel=1e-9)
    rng = np.random.default_rng(5)
    v, b, jtl, Av = rng.normal(size=a1.n_v), rng.normal(size=a1.n_v), rng.normal(size=a1.n_v), np.empty(a1.n_v)
    td = tree_dual_residual(a1.A, a1.tree_starts, v, b, jtl, Av)
    assert rel(Av, a1.A @ v) <= 1e-13
    ref = a1.A @ v - b - jtl
    assert td == pytest.approx(np.sqrt(np.add.reduceat(ref * ref, a1.tree_starts[:-1])).max(), rel=1e-13)


@pytest.mark.parametrize("scene", ["a1", "cubes"])
def test_compiled_whole_system_matrix_matches_scipy_assembly(scene, request):
    """No Sub's compiled CSC build of A + β Σ J_pᵀJ_p = the numpy / scipy.sparse assembly (same
    pattern, values to 1e-14) and the dense sum; the factors solve the same system."""
    import scipy.sparse as sp

    from plants.sim._subadmm_kernels import whole_system_csc
    from plants.sim.subadmm import _assembled_matrix

    p = request.getfixturevalue(scene)
    pc = slack_pieces(p, "no_sub")
    indptr, indices, data = whole_system_csc(p.A, p.tree_starts, np.ascontiguousarray(pc.blocks),
                                             np.ascontiguousarray(pc.cols, np.int64), 1.7)
    K = sp.csc_matrix((data, indices, indptr), shape=(p.n_v, p.n_v))
    assert np.array_equal(np.diff(indptr), np.diff(K.indptr)) and K.has_sorted_indices
    dense = _assembled_matrix(p.A, pc, 1.7)
    assert rel(K.toarray(), dense) <= 1e-14
    stored = np.zeros((p.n_v, p.n_v), dtype=bool)
    stored[indices, np.repeat(np.arange(p.n_v), np.diff(indptr))] = True
    assert stored[np.abs(dense) > 1e-12 * np.abs(dense).max()].all()  # every nonzero of the sum is stored
    if scene == "cubes":  # contacts between trees couple their blocks
        assert K.nnz > sum(int(n) ** 2 for n in np.diff(p.tree_starts))
    a = whole_system_factor(p.A, pc, p.tree_starts, 1.7, compiled=True)
    b = whole_system_factor(p.A, pc, p.tree_starts, 1.7, compiled=False)
    y = np.random.default_rng(9).normal(size=p.n_v)
    assert rel(a(y), b(y)) <= 1e-12 and rel(dense @ a(y), y) <= 1e-10
