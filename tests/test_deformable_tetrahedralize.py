"""Surface meshes filled with tetrahedra by fTetWild (``tetrahedralize``, the ``deformable-mesh``
extra): volumes against analytic ones, a Panda finger's collision STL, and a drop test."""

import numpy as np
import pytest

pytest.importorskip("pytetwild", reason="tetrahedralize needs pytetwild (pip install 'c3mpc[deformable-mesh]')")
meshio = pytest.importorskip("meshio", reason="surface files are read with meshio (the deformable extra)")

from plants.sim.deformable import DeformableBody, DeformableSimulator, DeformableWorld, HalfSpace  # noqa: E402
from plants.sim.deformable.mesh import SimplexMesh, box_tet_mesh, tetrahedralize  # noqa: E402
from plants.sim.deformable.scenes import make_material  # noqa: E402


def _volumes(mesh):
    d = mesh.X[mesh.elements[:, 1:]] - mesh.X[mesh.elements[:, :1]]
    return np.einsum("ij,ij->i", d[:, 0], np.cross(d[:, 1], d[:, 2])) / 6.0


def _enclosed(X, F):
    """Volume enclosed by an outward-oriented closed triangle surface (divergence theorem)."""
    return np.einsum("ij,ij->i", X[F[:, 0]], np.cross(X[F[:, 1]], X[F[:, 2]])).sum() / 6.0


def _icosphere(radius, subdivisions):
    t = (1 + 5**0.5) / 2
    V = [np.array(v, float) for v in ((-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t),
                                      (0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1))]
    V = [v / np.linalg.norm(v) for v in V]
    F = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2), (10, 7, 6),
         (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10),
         (8, 6, 7), (9, 8, 1)]
    for _ in range(subdivisions):
        cache, F2 = {}, []

        def mid(a, b):
            key = (min(a, b), max(a, b))
            if key not in cache:
                m = V[a] + V[b]
                V.append(m / np.linalg.norm(m))
                cache[key] = len(V) - 1
            return cache[key]

        for a, b, c in F:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            F2 += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        F = F2
    return radius * np.array(V), np.array(F)


def test_tetrahedralized_sphere_from_an_obj_file_has_the_ball_volume(tmp_path):
    """An icosphere (R = 5 cm, 642 vertices) written to .obj, read by meshio and filled by fTetWild:
    the tetrahedra are positive, their volume is the surface's enclosed volume (0.5 %) and the
    ball's 4/3 π R³ (2 %), and the boundary nodes lie on the sphere (within 1 mm)."""
    R = 0.05
    X, F = _icosphere(R, 3)
    path = tmp_path / "ball.obj"
    meshio.write_points_cells(str(path), X, [("triangle", F)])
    tet = tetrahedralize(path, edge_length_fac=0.1)
    vol = _volumes(tet)
    assert tet.dim == 3 and (vol > 0).all()
    assert vol.sum() == pytest.approx(_enclosed(X, F), rel=5e-3)
    assert vol.sum() == pytest.approx(4 / 3 * np.pi * R**3, rel=2e-2)
    r = np.linalg.norm(tet.X, axis=1)
    assert r.max() < R + 1e-3 and tet.X.shape[0] > 100


def test_tetrahedralized_box_from_an_stl_file_has_the_box_volume(tmp_path):
    """A 10 × 6 × 4 cm box surface (12 triangles, .stl): volume within 1 %, bounding box kept."""
    box = box_tet_mesh((0.1, 0.06, 0.04), (1, 1, 1))
    from plants.sim.deformable.viewer import surface_triangles

    F = surface_triangles(box)
    path = tmp_path / "box.stl"
    meshio.write_points_cells(str(path), box.X, [("triangle", F)])
    tet = tetrahedralize(path, edge_length_fac=0.1)
    assert _volumes(tet).sum() == pytest.approx(0.1 * 0.06 * 0.04, rel=1e-2)
    np.testing.assert_allclose(np.ptp(tet.X, axis=0), (0.1, 0.06, 0.04), atol=2e-4)


def test_tetrahedralized_panda_finger_stl_keeps_its_volume():
    """A mesh we did not make: the Panda finger's collision STL (example-robot-data, 32 triangles)
    filled with tetrahedra (without the quality optimization, for speed) has the surface's enclosed
    volume within 1 %."""
    from plants.multibody.resources import example_robot_data_path

    path = example_robot_data_path("robots/panda_description/meshes/collision/finger.stl")
    surf = meshio.read(str(path))
    X = np.asarray(surf.points, float)
    F = np.concatenate([c.data for c in surf.cells if c.type == "triangle"])
    tet = tetrahedralize(path, edge_length_fac=0.15, optimize=False)
    assert (_volumes(tet) > 0).all()
    assert _volumes(tet).sum() == pytest.approx(abs(_enclosed(X, F)), rel=1e-2)


def test_tetrahedralized_ball_drops_and_rests_on_the_ground():
    """The fTetWild ball as a Stable Neo-Hookean body (E = 1e5) dropped from 1 cm: it lands without
    going through the ground (< 1 mm) and at rest the ground carries its weight (2 %)."""
    R = 0.05
    X, F = _icosphere(R, 2)
    tet = tetrahedralize(SimplexMesh(X + (0.0, 0.0, R + 0.01), F), edge_length_fac=0.2)
    body = DeformableBody("ball", tet, make_material("neohookean", 1e5, 0.4), density=500.0)
    sim = DeformableSimulator(DeformableWorld((body,), (HalfSpace(name="ground", mu=0.5),)))
    traj = sim.run(0.6)
    Z = traj.deformable_positions["ball"][..., 2]
    assert np.isfinite(Z).all() and Z.min() > -1e-3
    assert Z[-1].mean() < Z[0].mean() - 5e-3  # it fell
    weight = body.node_masses().sum() * 9.81
    assert sim.obstacle_forces()["ground"][2] == pytest.approx(weight, rel=2e-2)


def test_tetrahedralize_rejects_bad_input():
    tet = box_tet_mesh((0.1, 0.1, 0.1), (1, 1, 1))
    with pytest.raises(ValueError, match="triangle mesh"):
        tetrahedralize(tet)
    with pytest.raises(TypeError, match="surface"):
        tetrahedralize(np.zeros((4, 3)))
    X, F = _icosphere(0.05, 1)
    with pytest.raises(ValueError, match="edge_length"):
        tetrahedralize(SimplexMesh(X, F), edge_length=-0.01)
    with pytest.raises(ValueError, match="num_threads"):
        tetrahedralize(SimplexMesh(X, F), num_threads=True)
