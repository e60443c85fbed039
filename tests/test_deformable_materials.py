"""Meshes, rest shapes and materials of plants.sim.deformable against analytic answers and
finite differences."""

import numpy as np
import pytest

from plants.sim.deformable import (
    ARAP,
    CoRotational,
    StableNeoHookean,
    bar_tet_mesh,
    box_tet_mesh,
    cloth_sheet,
    energy_density,
    first_piola,
    local_step,
    lumped_mass,
    rest_shape,
    sphere_tet_mesh,
)
from plants.sim.deformable.materials import _newton_sigma
from plants.sim.deformable.mesh import SimplexMesh

MATERIALS = [ARAP(1e5, 0.3), CoRotational(1e5, 0.3), StableNeoHookean(1e5, 0.3)]


# ---------------------------------------------------------------------------- meshes
def test_box_mesh_volume_mass_and_surface():
    m = box_tet_mesh((0.3, 0.2, 0.1), (3, 2, 2))
    rs = rest_shape(m)
    assert m.n_elements == 6 * 12 and m.n_nodes == 4 * 3 * 3
    assert rs.measure.min() > 0
    assert rs.measure.sum() == pytest.approx(0.3 * 0.2 * 0.1, rel=1e-12)
    assert lumped_mass(m, 1000.0).sum() == pytest.approx(1000.0 * 0.006, rel=1e-12)
    # every node of a 3x2x2 grid lies on the boundary except none (all cells touch it)
    inner = box_tet_mesh((1, 1, 1), (3, 3, 3))
    assert inner.surface_nodes().size == 4**3 - 2**3


def test_sphere_and_cloth_measures():
    s = sphere_tet_mesh(0.1, cells=8)
    vol = rest_shape(s).measure.sum()
    assert vol == pytest.approx(4 / 3 * np.pi * 0.1**3, rel=0.05)  # polyhedral ball, inscribed
    assert vol < 4 / 3 * np.pi * 0.1**3
    c = cloth_sheet((2.0, 1.0), (4, 3))
    rs = rest_shape(c)
    assert c.dim == 2 and rs.measure.sum() == pytest.approx(2.0, rel=1e-12)
    assert lumped_mass(c, 200.0, thickness=1e-3).sum() == pytest.approx(0.4, rel=1e-12)


def test_deformation_gradient_operator_reproduces_affine_maps():
    rng = np.random.default_rng(0)
    for mesh in (bar_tet_mesh(1.0, 0.2, 4, 2), cloth_sheet((1.0, 1.0), (3, 3))):
        rs = rest_shape(mesh)
        F = np.eye(3) + 0.2 * rng.standard_normal((3, 3))
        x = mesh.X @ F.T + rng.standard_normal(3)
        d = mesh.dim
        Ft = (rs.G @ x).reshape(-1, d, 3)
        if d == 3:
            np.testing.assert_allclose(Ft, np.broadcast_to(F.T, Ft.shape), atol=1e-12)
        else:  # cloth: F (3x2) maps the local rest frame; Fᵀ F restricted to the plane = metric
            C = np.einsum("mai,mbi->mab", Ft, Ft)
            E = rs.Dm_inv  # any in-plane orthonormal frame: compare with F's metric on e1, e2
            assert C.shape == (mesh.n_elements, 2, 2) and np.isfinite(E).all()
            e = np.array([[1.0, 0, 0], [0, 1.0, 0]])  # the sheet lies in z = 0
            ref = e @ F.T @ F @ e.T
            # the local frame of each triangle is a rotation of (e1, e2) in the plane: invariants agree
            np.testing.assert_allclose(np.trace(C, axis1=1, axis2=2), np.trace(ref), rtol=1e-10)
            np.testing.assert_allclose(np.linalg.det(C), np.linalg.det(ref), rtol=1e-10)


def test_mesh_rejects_bad_input():
    with pytest.raises(ValueError, match="X must have shape"):
        SimplexMesh(np.zeros((4, 2)), np.array([[0, 1, 2, 3]]))
    with pytest.raises(ValueError, match="elements index nodes"):
        SimplexMesh(np.eye(4, 3), np.array([[0, 1, 2, 7]]))
    with pytest.raises(ValueError, match="size must be"):
        box_tet_mesh((0.1, -1, 0.1))


# ---------------------------------------------------------------------------- materials
@pytest.mark.parametrize("mat", MATERIALS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("d", [3, 2])
def test_first_piola_matches_finite_differences(mat, d):
    rng = np.random.default_rng(1)
    F = np.eye(3)[None, :, :d] + 0.3 * rng.standard_normal((6, 3, d))
    if d == 3:
        F[0, :, 2] *= -1  # an inverted element
    P = first_piola(mat, F)
    eps = 1e-6
    P_fd = np.zeros_like(F)
    for i in range(3):
        for j in range(d):
            dF = np.zeros((3, d))
            dF[i, j] = eps
            P_fd[:, i, j] = (energy_density(mat, F + dF) - energy_density(mat, F - dF)) / (2 * eps)
    np.testing.assert_allclose(P, P_fd, atol=1e-7 * np.abs(P).max())


@pytest.mark.parametrize("mat", MATERIALS, ids=lambda m: type(m).__name__)
def test_rest_state_is_stress_free_and_rotation_invariant(mat):
    rng = np.random.default_rng(2)
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    Q *= np.sign(np.linalg.det(Q))
    for d in (3, 2):
        I = np.eye(3)[None, :, :d]
        assert np.abs(first_piola(mat, I)).max() < 1e-9 * mat.youngs
        F = I + 0.2 * rng.standard_normal((1, 3, d))
        assert energy_density(mat, Q @ F) == pytest.approx(energy_density(mat, F), rel=1e-12)


def _uniaxial_strain_stress(mat, s):
    """Analytic P₁₁, P₂₂ for F = diag(s, 1, 1), from each energy's closed form."""
    mu, lam = mat.lame(3)
    if isinstance(mat, ARAP):
        return 2 * mu * (s - 1), 0.0
    if isinstance(mat, CoRotational):
        return 2 * mu * (s - 1) + lam * (s - 1), lam * (s - 1)
    m, l, a = mat.params(3)
    return m * s * (1 - 1 / (s * s + 3)) + l * (s - a), m * (1 - 1 / (s * s + 3)) + l * (s - a) * s


@pytest.mark.parametrize("mat", MATERIALS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("s", [0.7, 1.001, 1.5])
def test_uniaxial_strain_stress_analytic(mat, s):
    F = np.diag([s, 1.0, 1.0])[None]
    P = first_piola(mat, F)[0]
    p11, p22 = _uniaxial_strain_stress(mat, s)
    assert P[0, 0] == pytest.approx(p11, rel=1e-9, abs=1e-9 * mat.youngs)
    assert P[1, 1] == pytest.approx(p22, rel=1e-9, abs=1e-9 * mat.youngs)
    assert np.abs(P - np.diag(np.diag(P))).max() < 1e-9 * mat.youngs


@pytest.mark.parametrize("mat", [CoRotational(2e5, 0.3), StableNeoHookean(2e5, 0.3), StableNeoHookean(2e5, 0.45)],
                         ids=lambda m: f"{type(m).__name__}-{m.poisson}")
def test_uniaxial_stress_small_strain_gives_youngs_modulus_and_poisson(mat):
    """Uniaxial *stress* (lateral faces free): P₁₁ = E ε and lateral strain −ν ε as ε → 0."""
    eps = 1e-5
    s = 1 + eps

    def lateral_stress(t):
        return first_piola(mat, np.diag([s, t, t])[None])[0, 1, 1]

    lo, hi = 1 - 2 * eps, 1.0  # bisection on the free lateral stretch
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if lateral_stress(mid) < 0 else (lo, mid)
    t = 0.5 * (lo + hi)
    P11 = first_piola(mat, np.diag([s, t, t])[None])[0, 0, 0]
    assert P11 / eps == pytest.approx(mat.youngs, rel=1e-4)
    assert -(t - 1) / eps == pytest.approx(mat.poisson, rel=1e-4)


def test_arap_uniaxial_stress_is_exact_2mu():
    """ARAP has no volume term: uniaxial stress leaves the lateral stretch at 1, P₁₁ = 2μ(s − 1) for all s."""
    mat = ARAP(1e5, 0.3)
    for s in (0.8, 1.2, 2.0):
        P = first_piola(mat, np.diag([s, 1.0, 1.0])[None])[0]
        assert P[1, 1] == pytest.approx(0.0, abs=1e-9) and P[0, 0] == pytest.approx(2 * mat.lame()[0] * (s - 1))


def test_stable_neohookean_linearizes_to_lame_in_3d_and_plane_stress():
    mat = StableNeoHookean(1e5, 0.3)
    for d in (3, 2):
        mu, lam = mat.lame(d)
        eps = 1e-7
        F = np.eye(3)[None, :, :d].copy()
        F[0, 0, 0] += eps
        P = first_piola(mat, F)[0] / eps
        assert P[0, 0] == pytest.approx(2 * mu + lam, rel=1e-5)
        assert P[1, 1] == pytest.approx(lam, rel=1e-5)


def test_stable_neohookean_gradient_finite_on_inverted_and_flat_elements():
    mat = StableNeoHookean(1e5, 0.3)
    F = np.array([np.diag([1.0, 1.0, -0.5]), np.diag([1.0, 1.0, 0.0]), np.diag([0.0, 0.0, 0.0])])
    P = first_piola(mat, F)
    assert np.isfinite(P).all() and np.isfinite(energy_density(mat, F)).all()
    assert P[0, 2, 2] < 0  # pushes the inverted element back (∂ψ/∂σ₃ < 0 at σ₃ < 0)


@pytest.mark.parametrize("mat", MATERIALS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("d", [3, 2])
def test_local_step_minimizes_its_objective(mat, d):
    """argmin ψ(Z) + w/2‖Z − Y‖²: closed forms (ARAP, co-rotational) agree with the generic
    projected Newton, and the result is stationary in Z (finite differences of the objective)."""
    rng = np.random.default_rng(3)
    w = mat.admm_weight(d) * 0.7
    Y = np.eye(3)[None, :, :d] + 0.3 * rng.standard_normal((5, 3, d))
    s_hat = np.linalg.svd(Y, compute_uv=False)
    np.testing.assert_allclose(mat.local_sigma(s_hat, w, d), _newton_sigma(mat, s_hat, w, d), atol=1e-9)
    Z = local_step(mat, Y, w, projective=False)
    grad = first_piola(mat, Z) + w * (Z - Y)
    assert np.abs(grad).max() < 1e-6 * mat.youngs


def test_arap_projection_is_the_polar_rotation():
    rng = np.random.default_rng(4)
    Y = np.eye(3) + 0.4 * rng.standard_normal((8, 3, 3))
    Z = local_step(ARAP(1e5, 0.3), Y, 1.0)
    np.testing.assert_allclose(Z @ np.transpose(Z, (0, 2, 1)), np.broadcast_to(np.eye(3), Z.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(Z), 1.0, atol=1e-12)
    S = np.transpose(Z, (0, 2, 1)) @ Y  # Y = Z S with S symmetric (the polar decomposition)
    np.testing.assert_allclose(S, np.transpose(S, (0, 2, 1)), atol=1e-12)
    with pytest.raises(ValueError, match="only for ARAP"):
        local_step(CoRotational(1e5, 0.3), Y, 1.0, projective=True)


def test_material_rejects_bad_parameters():
    with pytest.raises(ValueError, match="poisson"):
        ARAP(1e5, 0.5)
    with pytest.raises(ValueError, match="youngs"):
        StableNeoHookean(-1.0, 0.3)
    with pytest.raises(TypeError, match="youngs"):
        CoRotational("1e5", 0.3)


@pytest.mark.parametrize("d", [3, 2])
@pytest.mark.parametrize("w_scale", [1.0, 0.01])
def test_compiled_snh_local_step_matches_numpy_reference(d, w_scale):
    """The numba kernel (Cholesky step, eigenvalue-clamp fallback on indefinite Hessians: small w)
    against the vectorized numpy projected Newton, inverted elements included."""
    from plants.sim.deformable._local_kernels import snh_local_sigma

    mat = StableNeoHookean(1e8, 0.3)
    rng = np.random.default_rng(5)
    s_hat = 1 + 0.4 * rng.standard_normal((300, d))
    s_hat[:30, -1] *= -1
    w = w_scale * mat.admm_weight(d)
    m, l, a = mat.params(d)
    np.testing.assert_allclose(snh_local_sigma(s_hat, m, l, a, w), _newton_sigma(mat, s_hat, w, d), atol=1e-10)


@pytest.mark.parametrize("ext", [".vtu", ".msh", ".vtk"])
def test_load_mesh_round_trip_through_meshio(tmp_path, ext):
    meshio = pytest.importorskip("meshio")
    from plants.sim.deformable import load_mesh

    m = box_tet_mesh((0.2, 0.1, 0.1), (2, 1, 1))
    T = m.elements.copy()
    T[::2, [2, 3]] = T[::2, [3, 2]]  # half the tetrahedra written with negative orientation
    tri = cloth_sheet((1, 1), (2, 2)).elements + 0  # a triangle block that the tetra read ignores
    path = tmp_path / f"box{ext}"
    cells = [("tetra", T)] + ([("triangle", tri)] if ext == ".vtu" else [])
    meshio.write(path, meshio.Mesh(m.X * 1000.0, cells), **({"file_format": "gmsh22", "binary": False} if ext == ".msh" else {}))
    back = load_mesh(path, scale=1e-3)
    assert back.dim == 3 and back.n_elements == m.n_elements
    np.testing.assert_allclose(back.X, m.X, atol=1e-12)
    assert rest_shape(back).measure.min() > 0  # re-oriented
    assert rest_shape(back).measure.sum() == pytest.approx(0.002, rel=1e-12)
    if ext == ".vtu":
        assert load_mesh(path, kind="triangle").n_elements == tri.shape[0]
    else:
        with pytest.raises(ValueError, match="no 'triangle' cells"):
            load_mesh(path, kind="triangle")
    with pytest.raises(ValueError, match="kind must be"):
        load_mesh(path, kind="hexahedron")


def test_compiled_polar_rotation_matches_signed_svd():
    """Scaled-Newton polar kernel vs U Vᵀ of the signed SVD, with inverted and flat elements
    (which fall back to the SVD) mixed in."""
    from plants.sim.deformable._local_kernels import polar_rotations
    from plants.sim.deformable.materials import polar_rotation, signed_svd

    rng = np.random.default_rng(7)
    Y = np.eye(3) + 0.5 * rng.standard_normal((400, 3, 3))
    Y[:5, :, 2] *= -1  # inverted
    Y[5, :, 2] = 0.0  # flat
    Y[6] = np.diag([1e3, 1.0, 1e-3])  # badly scaled
    U, _, Vh = signed_svd(Y)
    np.testing.assert_allclose(polar_rotation(Y), U @ Vh, atol=1e-10)
    R, ok = polar_rotations(Y)
    det = np.linalg.det(Y)
    np.testing.assert_array_equal(ok, det > 1e-8 * np.linalg.norm(Y, axis=(1, 2)) ** 3)
    assert ok.sum() > 300 and not ok[:6].any()
    np.testing.assert_allclose(R[ok], (U @ Vh)[ok], atol=1e-10)


def test_corotational_polar_local_step_matches_svd_reference():
    """The co-rotational local step without an SVD, Z = (w/a) Y + c R (polar rotation R), against
    U diag(σ*) Vᵀ of LAPACK's signed SVD (local_step_svd), inverted and flat blocks included, at
    the ADMM weight and at weights 100× away; the SVD path still serves cloth (3×2 blocks)."""
    from plants.sim.deformable.materials import CoRotational, local_step, local_step_svd

    rng = np.random.default_rng(12)
    Y = np.eye(3) + 0.4 * rng.standard_normal((500, 3, 3))
    Y[:7, :, 1] *= -1  # inverted
    Y[7, :, 2] = 0.0  # flat
    mat = CoRotational(1e5, 0.45)
    for w in (mat.admm_weight(3), 1e-2 * mat.admm_weight(3), 1e2 * mat.admm_weight(3)):
        Z = local_step(mat, Y, w)
        np.testing.assert_allclose(Z, local_step_svd(mat, Y, w), rtol=0, atol=1e-12 * np.abs(Z).max())
    Yc = rng.standard_normal((50, 2, 3))
    w = mat.admm_weight(2)
    np.testing.assert_allclose(local_step(mat, Yc, w), local_step_svd(mat, Yc, w), atol=1e-12)


def test_laplace_beltrami_bending_energy():
    """Q = L_Iᵀ M_I⁻¹ L_I: zero on affine maps of the flat sheet, positive semi-definite, and
    ½ xᵀQx ≈ 2∫H² dA = A_I/(2R²) for the sheet rolled isometrically onto a cylinder of radius R."""
    from plants.sim.deformable.body import bending_matrix, boundary_nodes, mixed_voronoi_areas

    mesh = cloth_sheet((1.0, 1.0), (40, 40))
    Q = bending_matrix(mesh)
    rng = np.random.default_rng(8)
    x = mesh.X @ rng.standard_normal((3, 3)) + rng.standard_normal(3)
    assert np.abs(Q @ x).max() < 1e-9 * np.abs(Q).max()
    assert np.linalg.eigvalsh(bending_matrix(cloth_sheet((1, 1), (6, 6))).toarray()).min() > -1e-9
    R = 0.8
    u, v = mesh.X[:, 0], mesh.X[:, 1]
    x = np.stack([R * np.sin(u / R), v, R * (1 - np.cos(u / R))], 1)
    interior = np.setdiff1d(np.arange(mesh.n_nodes), boundary_nodes(mesh))
    assert mixed_voronoi_areas(mesh).sum() == pytest.approx(1.0, rel=1e-12)  # they tile the sheet
    area = mixed_voronoi_areas(mesh)[interior].sum()
    assert 0.5 * (x * (Q @ x)).sum() == pytest.approx(area / (2 * R**2), rel=0.02)


def test_compiled_svd_matches_lapack_signed_svd():
    """Polar + Jacobi 3×3 SVD kernel: reconstructs F, rotations U, V, σ equal to LAPACK's signed
    singular values (repeated ones included); inverted/flat blocks fall back to LAPACK; and the
    ADMM local step is unchanged by the choice."""
    from plants.sim.deformable._local_kernels import svd3_positive
    from plants.sim.deformable.materials import _signed_svd_fast, signed_svd

    rng = np.random.default_rng(9)
    Y = np.eye(3) + 0.4 * rng.standard_normal((500, 3, 3))
    Y[0], Y[1], Y[2] = np.diag([2.0, 2.0, 1.0]), np.eye(3), np.diag([1.0, 1.0, -0.5])
    U, s, Vh, ok = svd3_positive(Y)
    _, s_ref, _ = signed_svd(Y)
    np.testing.assert_array_equal(ok, np.linalg.det(Y) > 1e-8 * np.linalg.norm(Y, axis=(1, 2)) ** 3)
    np.testing.assert_allclose(np.einsum("mij,mj,mjk->mik", U, s, Vh)[ok], Y[ok], atol=1e-12)
    np.testing.assert_allclose(s[ok], s_ref[ok], atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(U[ok]), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(Vh[ok]), 1.0, atol=1e-12)
    Uf, sf, Vf = _signed_svd_fast(Y)
    np.testing.assert_allclose(np.einsum("mij,mj,mjk->mik", Uf, sf, Vf), Y, atol=1e-12)
    np.testing.assert_allclose(sf, s_ref, atol=1e-12)
    for mat in MATERIALS[1:]:
        w = mat.admm_weight(3)
        U2, s2, V2 = signed_svd(Y)
        ref = np.einsum("mij,mj,mjk->mik", U2, mat.local_sigma(s2, w, 3), V2)
        np.testing.assert_allclose(local_step(mat, Y, w, projective=False), ref, atol=1e-10)
