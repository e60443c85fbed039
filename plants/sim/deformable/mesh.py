"""Simplicial meshes of deformable bodies: tetrahedral volumes and triangle cloth.

A mesh is rest positions ``X`` (n, 3) [m] and elements ``elements`` (m, d + 1) (node indices;
d = 3 for tetrahedra, 2 for triangles). Procedural generators:

* :func:`box_tet_mesh` / :func:`bar_tet_mesh`: a grid of cells, each split into 6 tetrahedra
  around its main diagonal (the Kuhn/Freudenthal split, conforming across cells);
* :func:`sphere_tet_mesh`: the box mesh mapped onto a ball by x ↦ x ‖x‖∞ / ‖x‖₂ (a bijection of
  the cube onto the ball; every tetrahedron keeps a positive volume, checked);
* :func:`cloth_sheet`: a rectangular grid of triangles with alternating diagonals.

Files (.msh, .vtk, .vtu, .obj, .off, .stl, ...) are read by :func:`load_mesh` through meshio
(the ``deformable`` extra). A surface (a triangle mesh or a .obj/.stl file) is filled with
tetrahedra by :func:`tetrahedralize` through fTetWild (``pytetwild``, MPL-2.0; the
``deformable-mesh`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

import numpy as np

__all__ = ["SimplexMesh", "box_tet_mesh", "bar_tet_mesh", "sphere_tet_mesh", "cloth_sheet", "load_mesh",
           "tetrahedralize"]


@dataclass(frozen=True)
class SimplexMesh:
    """Rest positions and simplices.

    Attributes:
        X: (n, 3) rest positions [m].
        elements: (m, d + 1) node indices; d = 3 (tetrahedra, positively oriented) or 2 (triangles).
    """

    X: np.ndarray
    elements: np.ndarray

    def __post_init__(self):
        X = np.ascontiguousarray(self.X, dtype=float)
        E = np.ascontiguousarray(self.elements)
        if X.ndim != 2 or X.shape[1] != 3 or X.shape[0] < 3:
            raise ValueError(f"X must have shape (n >= 3, 3), got {X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("X contains NaN or Inf")
        if not np.issubdtype(E.dtype, np.integer) or E.ndim != 2 or E.shape[1] not in (3, 4) or E.shape[0] < 1:
            raise ValueError(f"elements must be an integer array (m >= 1, 3 or 4), got {E.dtype} {E.shape}")
        if E.min() < 0 or E.max() >= X.shape[0]:
            raise ValueError(f"elements index nodes outside [0, {X.shape[0]})")
        used = np.zeros(X.shape[0], bool)
        used[E.ravel()] = True
        if not used.all():
            raise ValueError(f"{int((~used).sum())} nodes belong to no element")
        X.setflags(write=False)
        E = E.astype(np.int64)
        E.setflags(write=False)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "elements", E)

    @property
    def dim(self) -> int:
        """Element dimension d: 3 for tetrahedra, 2 for triangles."""
        return self.elements.shape[1] - 1

    @property
    def n_nodes(self) -> int:
        return self.X.shape[0]

    @property
    def n_elements(self) -> int:
        return self.elements.shape[0]

    def surface_nodes(self) -> np.ndarray:
        """Indices of the nodes on the boundary (faces of one tetrahedron); all nodes for cloth."""
        if self.dim == 2:
            return np.arange(self.n_nodes)
        faces = np.sort(self.elements[:, [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]].reshape(-1, 3), axis=1)
        uniq, counts = np.unique(faces, axis=0, return_counts=True)
        return np.unique(uniq[counts == 1])

    def transformed(self, rotation=None, translation=(0.0, 0.0, 0.0)) -> "SimplexMesh":
        """The mesh moved rigidly: X ↦ R X + t (R a rotation matrix)."""
        R = np.eye(3) if rotation is None else np.asarray(rotation, float)
        if R.shape != (3, 3) or not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
            raise ValueError("rotation must be a 3x3 rotation matrix")
        return SimplexMesh(self.X @ R.T + np.asarray(translation, float), self.elements)


def _positive(X: np.ndarray, T: np.ndarray) -> np.ndarray:
    d = X[T[:, 1:]] - X[T[:, :1]]
    vol = np.einsum("ij,ij->i", d[:, 0], np.cross(d[:, 1], d[:, 2]))
    T = T.copy()
    T[vol < 0, 2], T[vol < 0, 3] = T[vol < 0, 3], T[vol < 0, 2].copy()
    return T


def box_tet_mesh(size=(0.1, 0.1, 0.1), cells=(4, 4, 4), center=(0.0, 0.0, 0.0)) -> SimplexMesh:
    """An axis-aligned box of ``size`` [m] centred at ``center``, ``cells`` grid cells per axis,
    6 tetrahedra per cell."""
    size = np.asarray(size, float)
    cells = tuple(int(c) for c in cells)
    if size.shape != (3,) or (size <= 0).any():
        raise ValueError(f"size must be three lengths > 0 [m], got {size}")
    if len(cells) != 3 or min(cells) < 1:
        raise ValueError(f"cells must be three integers >= 1, got {cells}")
    nx, ny, nz = cells
    axes = [np.linspace(-s / 2, s / 2, c + 1) for s, c in zip(size, cells)]
    X = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3) + np.asarray(center, float)

    def nid(i, j, k):
        return (i * (ny + 1) + j) * (nz + 1) + k

    I, J, K = (a.ravel() for a in np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij"))
    unit = np.eye(3, dtype=int)
    tets = []
    for a, b, _ in permutations(range(3)):
        p0 = (I, J, K)
        p1 = tuple(p + unit[a][s] for s, p in enumerate(p0))
        p2 = tuple(p + unit[a][s] + unit[b][s] for s, p in enumerate(p0))
        p3 = (I + 1, J + 1, K + 1)
        tets.append(np.stack([nid(*p0), nid(*p1), nid(*p2), nid(*p3)], 1))
    T = np.concatenate(tets)
    return SimplexMesh(X, _positive(X, T))


def bar_tet_mesh(length: float = 1.0, width: float = 0.2, cells_along: int = 10, cells_across: int = 2) -> SimplexMesh:
    """A bar along x of ``length`` [m] with a square ``width`` [m] cross-section, centred at the origin."""
    return box_tet_mesh((length, width, width), (cells_along, cells_across, cells_across))


def sphere_tet_mesh(radius: float = 0.1, cells: int = 6, center=(0.0, 0.0, 0.0)) -> SimplexMesh:
    """A ball of ``radius`` [m]: a cube of ``cells``³ cells mapped by x ↦ x ‖x‖∞ / ‖x‖₂."""
    if not radius > 0:
        raise ValueError(f"radius must be > 0 [m], got {radius}")
    cube = box_tet_mesh((2 * radius,) * 3, (cells,) * 3)
    X = cube.X.copy()
    r2 = np.linalg.norm(X, axis=1)
    rinf = np.abs(X).max(axis=1)
    nz = r2 > 0
    X[nz] *= (rinf[nz] / r2[nz])[:, None]
    T = cube.elements
    d = X[T[:, 1:]] - X[T[:, :1]]
    vol = np.einsum("ij,ij->i", d[:, 0], np.cross(d[:, 1], d[:, 2]))
    if vol.min() <= 0:  # pragma: no cover - the map keeps orientation for every cells >= 1
        raise ValueError("sphere mapping produced an inverted tetrahedron")
    return SimplexMesh(X + np.asarray(center, float), T)


def cloth_sheet(size=(1.0, 1.0), cells=(10, 10), center=(0.0, 0.0, 0.0)) -> SimplexMesh:
    """A flat rectangular cloth in the z = center[2] plane, ``cells`` quads per axis, 2 triangles each."""
    size = np.asarray(size, float)
    nx, ny = (int(c) for c in cells)
    if size.shape != (2,) or (size <= 0).any() or min(nx, ny) < 1:
        raise ValueError(f"size must be two lengths > 0 and cells two integers >= 1, got {size}, {cells}")
    xs = np.linspace(-size[0] / 2, size[0] / 2, nx + 1)
    ys = np.linspace(-size[1] / 2, size[1] / 2, ny + 1)
    XX, YY = np.meshgrid(xs, ys, indexing="ij")
    X = np.stack([XX.ravel(), YY.ravel(), np.zeros(XX.size)], 1) + np.asarray(center, float)
    I, J = (a.ravel() for a in np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij"))
    n00, n10, n01, n11 = I * (ny + 1) + J, (I + 1) * (ny + 1) + J, I * (ny + 1) + J + 1, (I + 1) * (ny + 1) + J + 1
    flip = (I + J) % 2 == 1
    t1 = np.where(flip[:, None], np.stack([n00, n10, n01], 1), np.stack([n00, n10, n11], 1))
    t2 = np.where(flip[:, None], np.stack([n10, n11, n01], 1), np.stack([n00, n11, n01], 1))
    return SimplexMesh(X, np.concatenate([t1, t2]))


def load_mesh(path, kind: str | None = None, scale: float = 1.0) -> SimplexMesh:
    """A :class:`SimplexMesh` from a mesh file, read with meshio (``pip install c3mpc[deformable]``).

    Args:
        path: file path; the format follows the extension (any format meshio reads).
        kind: "tetra" (volume) or "triangle" (cloth); default: tetrahedra if the file has any,
            else triangles.
        scale: factor applied to the coordinates (e.g. 1e-3 for a file in millimetres) [m / unit].

    Raises:
        ImportError: meshio is not installed (the message names the extra).
        ValueError: the file has no cells of the requested kind, or ``kind`` is unknown.
    """
    try:
        import meshio
    except ImportError as err:  # pragma: no cover - the extra is installed in the test environment
        raise ImportError("load_mesh needs meshio: pip install 'c3mpc[deformable]'") from err
    if kind not in (None, "tetra", "triangle"):
        raise ValueError(f"kind must be 'tetra', 'triangle' or None, got {kind!r}")
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be > 0, got {scale}")
    m = meshio.read(path)
    blocks = {}
    for block in m.cells:
        blocks.setdefault(block.type, []).append(np.asarray(block.data))
    if kind is None:
        kind = "tetra" if "tetra" in blocks else "triangle"
    if kind not in blocks:
        hint = " (fill a surface with tetrahedra: tetrahedralize(path))" if kind == "tetra" else ""
        raise ValueError(f"{path} has no {kind!r} cells; cell types: {sorted(blocks)}{hint}")
    cells = np.concatenate(blocks[kind]).astype(np.int64)
    X = np.asarray(m.points, float)
    if X.shape[1] == 2:
        X = np.column_stack([X, np.zeros(len(X))])
    used = np.unique(cells)  # drop nodes of other cell types (e.g. surface-only points)
    remap = np.full(len(X), -1, np.int64)
    remap[used] = np.arange(used.size)
    X, cells = X[used] * scale, remap[cells]
    if kind == "tetra":
        cells = _positive(X, cells)
    return SimplexMesh(X, cells)


def tetrahedralize(surface, edge_length: float | None = None, edge_length_fac: float = 0.05, epsilon: float = 1e-3,
                   optimize: bool = True, num_threads: int = 1, scale: float = 1.0) -> SimplexMesh:
    """A tetrahedral :class:`SimplexMesh` filling a closed surface, by fTetWild (Hu et al. 2020,
    *Fast Tetrahedral Meshing in the Wild*) through ``pytetwild`` (``pip install
    'c3mpc[deformable-mesh]'``).

    fTetWild is robust to imperfect input (small gaps, self-intersections): it meshes the space,
    keeps the tetrahedra inside the surface's generalized winding number and fits the boundary to
    within an envelope of ``epsilon`` × the bounding-box diagonal.

    Args:
        surface: a triangle :class:`SimplexMesh`, or a path to a surface file meshio reads
            (.obj, .stl, .off, .ply, ...; read by :func:`load_mesh` with ``kind="triangle"``).
        edge_length: target tetrahedron edge length [m] (after ``scale``); default: ``edge_length_fac``
            × the bounding-box diagonal.
        edge_length_fac: target edge length relative to the bounding-box diagonal (fTetWild's
            default 0.05); used when ``edge_length`` is None.
        epsilon: envelope size relative to the bounding-box diagonal (fTetWild's default 1e-3).
        optimize: run fTetWild's mesh-quality optimization (its default).
        num_threads: threads for fTetWild (1 by default: deterministic output, and the test
            machine is shared; 0 = all cores).
        scale: factor applied to a file's coordinates [m / unit] (ignored for a SimplexMesh).

    Raises:
        ImportError: pytetwild is not installed (the message names the extra).
        ValueError: the surface is not a triangle mesh, a parameter is out of range, or fTetWild
            returned no tetrahedra.
    """
    if isinstance(surface, SimplexMesh):
        if surface.dim != 2:
            raise ValueError("surface must be a triangle mesh (a SimplexMesh with (m, 3) elements)")
        mesh = surface
    elif isinstance(surface, (str, bytes)) or hasattr(surface, "__fspath__"):
        mesh = load_mesh(surface, kind="triangle", scale=scale)
    else:
        raise TypeError(f"surface must be a triangle SimplexMesh or a file path, got {type(surface).__name__}")
    if edge_length is not None and not (isinstance(edge_length, (int, float)) and np.isfinite(edge_length)
                                        and edge_length > 0):
        raise ValueError(f"edge_length must be > 0 [m] or None, got {edge_length!r}")
    if not (0 < edge_length_fac <= 1):
        raise ValueError(f"edge_length_fac must lie in (0, 1], got {edge_length_fac!r}")
    if not (0 < epsilon < 1):
        raise ValueError(f"epsilon must lie in (0, 1), got {epsilon!r}")
    if isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)) or num_threads < 0:
        raise ValueError(f"num_threads must be an int >= 0, got {num_threads!r}")
    try:
        from pytetwild import tetrahedralize as ftetwild
    except ImportError as err:
        raise ImportError("tetrahedralize needs pytetwild (fTetWild): pip install 'c3mpc[deformable-mesh]'") from err
    import os
    import tempfile

    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="c3mpc-ftetwild-") as tmp:
        os.chdir(tmp)  # fTetWild writes __tracked_surface.stl into the working directory
        try:  # writable C-contiguous copies (the mesh's arrays are read-only, which the binding rejects)
            X, T = ftetwild(np.array(mesh.X, np.float64, order="C"), np.array(mesh.elements, np.int32, order="C"),
                            edge_length_fac=edge_length_fac, edge_length_abs=edge_length, optimize=bool(optimize),
                            epsilon=float(epsilon), num_threads=int(num_threads), quiet=True)
        finally:
            os.chdir(cwd)
    X, T = np.asarray(X, float), np.asarray(T, np.int64)
    if T.ndim != 2 or T.shape[0] == 0:
        raise ValueError("fTetWild returned no tetrahedra (is the surface closed?)")
    used = np.unique(T)
    remap = np.full(len(X), -1, np.int64)
    remap[used] = np.arange(used.size)
    X, T = X[used], remap[T]
    return SimplexMesh(X, _positive(X, T))
