"""Deformable bodies: a mesh, a material, a density, and their rest-shape precomputation.

For element e with nodes (x₀, …, x_d) the deformation gradient is F = D_s D_m⁻¹ with
D_s = [x₁ − x₀, …, x_d − x₀] (3×d) and D_m the same at rest (tetrahedra: 3×3; triangles: 2×2 in
an orthonormal frame of the rest triangle's plane). Written per coordinate, Fᵀ = B_e X with
B_e = D_m⁻ᵀ Cᵀ (d × n) and X (n, 3) the node positions: one *scalar* operator for the three
coordinates, so the Projective-Dynamics matrix A = M + h² Σ w_e B_eᵀB_e (seed 004 Eq. 6) is
n × n and acts on x, y and z alike (the 3n × 3n matrix is A ⊗ I₃).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from .materials import Material
from .mesh import SimplexMesh

__all__ = ["DeformableBody", "RestShape", "rest_shape", "lumped_mass", "cotangent_laplacian", "bending_matrix",
           "boundary_nodes", "mixed_voronoi_areas"]


@dataclass(frozen=True)
class RestShape:
    """Rest-shape data of a mesh.

    Attributes:
        Dm_inv: (m, d, d) inverse rest edge matrices.
        measure: (m,) rest volumes [m³] (tetrahedra) or areas [m²] (triangles).
        G: (d m, n) sparse operator with rows d e .. d e + d − 1 equal to B_e: Fᵀ_e = (G X)[d e : d e + d].
    """

    Dm_inv: np.ndarray
    measure: np.ndarray
    G: sp.csr_matrix


def rest_shape(mesh: SimplexMesh) -> RestShape:
    """D_m⁻¹, rest measures and the deformation-gradient operator G of ``mesh``."""
    X, T = mesh.X, mesh.elements
    d = mesh.dim
    E = X[T[:, 1:]] - X[T[:, :1]]  # (m, d, 3): rest edge vectors as rows
    if d == 3:
        Dm = np.transpose(E, (0, 2, 1))
        measure = np.linalg.det(Dm) / 6.0
    else:
        e1 = E[:, 0] / np.linalg.norm(E[:, 0], axis=1, keepdims=True)
        nrm = np.cross(E[:, 0], E[:, 1])
        area2 = np.linalg.norm(nrm, axis=1)
        e2 = np.cross(nrm / np.maximum(area2, 1e-300)[:, None], e1)
        Dm = np.stack([np.einsum("mk,mjk->mj", e1, E), np.einsum("mk,mjk->mj", e2, E)], 1)  # (m, 2, 2)
        measure = area2 / 2.0
    if measure.min() <= 0:
        bad = int(np.argmin(measure))
        raise ValueError(f"element {bad} of the mesh is degenerate or inverted (measure {measure[bad]:.3g})")
    Dm_inv = np.linalg.inv(Dm)
    Bt = np.transpose(Dm_inv, (0, 2, 1))  # D_m⁻ᵀ (m, d, d)
    m = T.shape[0]
    vals = np.concatenate([-Bt.sum(-1)[:, :, None], Bt], axis=2)  # (m, d, d+1): B_e restricted to its nodes
    rows = np.broadcast_to((d * np.arange(m))[:, None, None] + np.arange(d)[None, :, None], vals.shape)
    cols = np.broadcast_to(T[:, None, :], vals.shape)
    G = sp.csr_matrix((vals.ravel(), (rows.ravel(), cols.ravel())), shape=(d * m, mesh.n_nodes))
    return RestShape(Dm_inv, measure, G)


def cotangent_laplacian(mesh: SimplexMesh) -> sp.csr_matrix:
    """(n, n) cotangent Laplacian of a triangle mesh at rest: L_ij = ½(cot α_ij + cot β_ij),
    L_ii = −Σ_j L_ij (so (L x)_i ≈ M_i Δx_i, the Laplace-Beltrami operator times the vertex area)."""
    if mesh.dim != 2:
        raise ValueError("cotangent_laplacian needs a triangle mesh")
    X, T = mesh.X, mesh.elements
    rows, cols, vals = [], [], []
    for k in range(3):  # the angle at corner k weighs the opposite edge (i, j)
        i, j = T[:, (k + 1) % 3], T[:, (k + 2) % 3]
        a, b = X[i] - X[T[:, k]], X[j] - X[T[:, k]]
        cot = (a * b).sum(1) / np.linalg.norm(np.cross(a, b), axis=1)
        rows += [i, j]
        cols += [j, i]
        vals += [0.5 * cot, 0.5 * cot]
    n = mesh.n_nodes
    W = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    return (W - sp.diags(np.asarray(W.sum(1)).ravel())).tocsr()


def boundary_nodes(mesh: SimplexMesh) -> np.ndarray:
    """Nodes on the boundary of a triangle mesh (on an edge of one triangle only)."""
    E = np.sort(mesh.elements[:, [[0, 1], [1, 2], [2, 0]]].reshape(-1, 2), axis=1)
    uniq, counts = np.unique(E, axis=0, return_counts=True)
    return np.unique(uniq[counts == 1])


def mixed_voronoi_areas(mesh: SimplexMesh) -> np.ndarray:
    """(n,) mixed Voronoi vertex areas of a triangle mesh (Meyer et al. 2003): each triangle gives
    a vertex its Voronoi part when no angle is obtuse, else A/2 (obtuse corner) or A/4. They are
    the areas that the cotangent Laplacian's rows integrate over (barycentric thirds are not: on a
    grid with alternating diagonals they bias ‖Lx‖²/M by 12 %)."""
    X, T = mesh.X, mesh.elements
    P = X[T]  # (m, 3, 3)
    area = 0.5 * np.linalg.norm(np.cross(P[:, 1] - P[:, 0], P[:, 2] - P[:, 0]), axis=1)
    out = np.zeros(mesh.n_nodes)
    cots, sq = [], []
    for k in range(3):  # angle at corner k, opposite edge (k+1, k+2)
        a, b = P[:, (k + 1) % 3] - P[:, k], P[:, (k + 2) % 3] - P[:, k]
        cots.append((a * b).sum(1) / (2 * area))
        sq.append(((P[:, (k + 1) % 3] - P[:, (k + 2) % 3]) ** 2).sum(1))  # |opposite edge|²
    cots, sq = np.stack(cots, 1), np.stack(sq, 1)
    obtuse = cots < 0
    any_obtuse = obtuse.any(1)
    for k in range(3):
        # Voronoi part of corner k: (|edge k–(k+1)|² cot(k+2) + |edge k–(k+2)|² cot(k+1)) / 8
        vor = (sq[:, (k + 2) % 3] * cots[:, (k + 2) % 3] + sq[:, (k + 1) % 3] * cots[:, (k + 1) % 3]) / 8
        part = np.where(any_obtuse, np.where(obtuse[:, k], area / 2, area / 4), vor)
        out += np.bincount(T[:, k], part, minlength=mesh.n_nodes)
    return out


def bending_matrix(mesh: SimplexMesh) -> sp.csr_matrix:
    """Q (n, n) = L_Iᵀ M_I⁻¹ L_I over the interior vertices I (L: :func:`cotangent_laplacian`,
    M: :func:`mixed_voronoi_areas`), so ½ xᵀQx = ½ Σ_{i∈I} ‖(L x)_i‖²/M_i ≈ ½∫‖Δx‖² = 2∫H² dA for an
    isometric bend of a flat rest sheet (a cylinder of radius R: A/(2R²)). Q x = 0 for every affine
    map of a flat sheet. Boundary vertices are left out: there L does not reproduce linear maps."""
    L = cotangent_laplacian(mesh)
    M = mixed_voronoi_areas(mesh)
    interior = np.setdiff1d(np.arange(mesh.n_nodes), boundary_nodes(mesh))
    LI = L[interior]
    return (LI.T @ sp.diags(1.0 / M[interior]) @ LI).tocsr()


def lumped_mass(mesh: SimplexMesh, density: float, thickness: float = 1.0) -> np.ndarray:
    """(n,) lumped node masses [kg]: each element's ρ·measure(·thickness) split equally over its nodes."""
    rs = rest_shape(mesh)
    per_node = density * thickness * rs.measure / (mesh.dim + 1)
    return np.bincount(mesh.elements.ravel(), np.repeat(per_node, mesh.dim + 1), minlength=mesh.n_nodes)


@dataclass(frozen=True)
class DeformableBody:
    """A deformable body of a :class:`~plants.sim.deformable.world.DeformableWorld`.

    Attributes:
        name: unique name (the key of ``traj.deformable_positions``).
        mesh: tetrahedral volume or triangle cloth (:class:`SimplexMesh`), rest shape [m].
        material: :class:`~plants.sim.deformable.materials.Material`.
        density: mass density ρ [kg/m³].
        thickness: cloth thickness [m] (triangle meshes only; mass and stiffness scale with it).
        positions: (n, 3) initial node positions [m]; default: the rest shape.
        velocity: initial velocity, (3,) for all nodes or (n, 3) [m/s].
        pinned: indices of kinematic nodes (their positions are prescribed, e.g. clamped ends).
        pin_motion: ``pin_motion(t, X0) -> (k, 3)`` positions [m] of the pinned nodes at time t
            [s] given their initial positions X0 (k, 3); default: they stay at X0.
        mu: friction coefficient of this body against obstacles (the contact uses
            min(body μ, obstacle μ) if both are given, else whichever is given).
        bending: cloth bending stiffness k_b [J] (triangle meshes only; 0: none): the
            Laplace-Beltrami energy ½ k_b Σ_i ‖(L x)_i‖² / M_i over interior vertices
            (:func:`bending_matrix`), a constant quadratic form added to the system matrix.
    """

    name: str
    mesh: SimplexMesh
    material: Material
    density: float = 1000.0
    thickness: float = 1e-3
    positions: np.ndarray | None = None
    velocity: np.ndarray | tuple = (0.0, 0.0, 0.0)
    pinned: tuple | np.ndarray = ()
    pin_motion: Callable[[float, np.ndarray], np.ndarray] | None = None
    mu: float | None = None
    bending: float = 0.0

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.mesh, SimplexMesh):
            raise TypeError(f"mesh must be a SimplexMesh, got {type(self.mesh).__name__}")
        if not isinstance(self.material, Material):
            raise TypeError(f"material must be a Material, got {type(self.material).__name__}")
        if not (np.isfinite(self.density) and self.density > 0):
            raise ValueError(f"density must be > 0 [kg/m^3], got {self.density}")
        if not (np.isfinite(self.thickness) and self.thickness > 0):
            raise ValueError(f"thickness must be > 0 [m], got {self.thickness}")
        n = self.mesh.n_nodes
        x0 = self.mesh.X if self.positions is None else np.asarray(self.positions, float)
        if x0.shape != (n, 3) or not np.isfinite(x0).all():
            raise ValueError(f"positions must be finite with shape ({n}, 3), got {x0.shape}")
        v0 = np.asarray(self.velocity, float)
        if v0.shape == (3,):
            v0 = np.broadcast_to(v0, (n, 3))
        if v0.shape != (n, 3) or not np.isfinite(v0).all():
            raise ValueError(f"velocity must be finite with shape (3,) or ({n}, 3), got {np.shape(self.velocity)}")
        pinned = np.unique(np.asarray(self.pinned, dtype=np.int64).reshape(-1))
        if pinned.size and (pinned.min() < 0 or pinned.max() >= n):
            raise ValueError(f"pinned node indices must lie in [0, {n})")
        if self.pin_motion is not None and not callable(self.pin_motion):
            raise TypeError("pin_motion must be callable(t, X0) -> (k, 3) positions")
        if not (np.isfinite(self.bending) and self.bending >= 0):
            raise ValueError(f"bending must be a stiffness >= 0 [J], got {self.bending}")
        if self.bending > 0 and self.mesh.dim != 2:
            raise ValueError("bending applies to triangle (cloth) meshes only")
        if self.mu is not None and not (np.isfinite(self.mu) and self.mu >= 0):
            raise ValueError(f"mu must be >= 0 or None, got {self.mu}")
        object.__setattr__(self, "positions", np.array(x0))
        object.__setattr__(self, "velocity", np.array(v0))
        object.__setattr__(self, "pinned", pinned)

    @property
    def n_nodes(self) -> int:
        return self.mesh.n_nodes

    def scale(self) -> float:
        """Thickness for cloth (measure × thickness = volume), 1 for volumes."""
        return self.thickness if self.mesh.dim == 2 else 1.0

    def node_masses(self) -> np.ndarray:
        """(n,) lumped masses [kg]."""
        return lumped_mass(self.mesh, self.density, self.scale())

    def pinned_positions(self, t: float) -> np.ndarray:
        """(k, 3) prescribed positions of the pinned nodes at time t [s]."""
        X0 = self.positions[self.pinned]
        if self.pin_motion is None:
            return X0
        x = np.asarray(self.pin_motion(float(t), X0), float)
        if x.shape != X0.shape or not np.isfinite(x).all():
            raise ValueError(f"pin_motion of body {self.name!r} must return finite ({len(X0)}, 3) positions, got {x.shape}")
        return x
