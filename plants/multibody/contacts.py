r"""Contact pairs, coal distance queries and contact Jacobians.

A :class:`ContactPair` names two geometries (or bodies, or name prefixes) of a model's collision
geometry, a friction coefficient and the number of friction directions. :class:`ContactGeometry`
resolves the names once, then at every configuration ``q``:

1. coal gives, per candidate geometry pair ``(a, b)``, the signed distance :math:`\phi`, the
   witness points :math:`p_a \in a`, :math:`p_b \in b` and a unit normal. We use
   :math:`n = n_{BA}` pointing **from b towards a** (coal's ``normal`` points from o1=a to o2=b,
   so ``n = -normal``); then :math:`\dot\phi = n^T (\dot p_a - \dot p_b)`.
2. Pinocchio joint Jacobians (``WORLD`` frame) give the velocity of the material points at the
   witness points: :math:`J_{p} = J_{lin} - [p]_\times J_{ang}`. With
   :math:`J_{rel} = J_{p_a} - J_{p_b}` (3 x n_v):

   * normal row :math:`J_n = n^T J_{rel}`;
   * tangent rows :math:`J_t = T J_{rel}`, where the 2d rows of ``T`` are the friction-polytope
     edges :math:`\cos\theta_k t_1 + \sin\theta_k t_2`, :math:`\theta_k = \pi k / d`,
     :math:`k = 0..2d-1` (2d edges evenly spaced; edge ``k+d`` is minus edge ``k``), and
     :math:`(t_1, t_2, n)` is a right-handed orthonormal frame. In the planar mode (``d = 1``)
     the two edges are :math:`\pm\, \mathrm{normalize}(n \times p)` with ``p`` the plane normal.

Everything after the per-pair coal calls is vectorized over contacts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import (
    MissingCollisionGeometryError,
    MultibodyTypeError,
    MultibodyValueError,
    UnknownGeometryError,
)

__all__ = ["ContactPair", "ContactKinematics", "ContactDescription", "ContactGeometry"]


@dataclass(frozen=True)
class ContactPair:
    """A configured contact between two (sets of) collision geometries.

    Attributes:
        geometry_a: a collision-geometry name, a body (frame) name, or a prefix of geometry
            names (e.g. ``"panda_link7"`` matches ``"panda_link7_0"``, ``"panda_link7_1"``).
            Resolution order: exact geometry name, body (frame) name, joint name, prefix.
        geometry_b: same for the other side.
        mu: Coulomb friction coefficient (>= 0).
        num_friction_directions: d >= 1; the polytope has 2d edges evenly spaced around the
            normal. ``d = 1`` is the planar mode and needs ``planar_normal``.
        planar_normal: (3,) world-frame normal of the plane of motion (``d = 1`` only): the
            friction edges are ``±normalize(n × planar_normal)``.
        num_closest: when the names match several geometries, keep only this many candidate
            geometry pairs, the closest ones at each configuration (``None``: keep all).
    """

    geometry_a: str
    geometry_b: str
    mu: float
    num_friction_directions: int = 2
    planar_normal: tuple[float, float, float] | None = None
    num_closest: int | None = None

    def __post_init__(self) -> None:
        for field_name in ("geometry_a", "geometry_b"):
            value = getattr(self, field_name)
            if not isinstance(value, str) or not value:
                raise MultibodyTypeError(f"ContactPair.{field_name} must be a non-empty string, "
                                         f"got {value!r}")
        try:
            mu = float(self.mu)
        except (TypeError, ValueError) as e:
            raise MultibodyTypeError(f"ContactPair.mu must be a real number, got "
                                     f"{self.mu!r}") from e
        if not (math.isfinite(mu) and mu >= 0.0):
            raise MultibodyValueError(f"ContactPair.mu must be finite and >= 0, got {self.mu!r} "
                                      f"(pair {self.geometry_a!r}-{self.geometry_b!r})")
        object.__setattr__(self, "mu", mu)
        d = self.num_friction_directions
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise MultibodyTypeError(f"ContactPair.num_friction_directions must be an int, got "
                                     f"{d!r}")
        if d < 1:
            raise MultibodyValueError(f"ContactPair.num_friction_directions must be >= 1, got {d} "
                                      f"(pair {self.geometry_a!r}-{self.geometry_b!r})")
        object.__setattr__(self, "num_friction_directions", int(d))
        if self.planar_normal is not None:
            p = np.asarray(self.planar_normal, dtype=float).reshape(-1)
            if p.shape != (3,) or not np.all(np.isfinite(p)) or np.linalg.norm(p) < 1e-12:
                raise MultibodyValueError(f"ContactPair.planar_normal must be a finite nonzero "
                                          f"3-vector, got {self.planar_normal!r}")
            p = p / np.linalg.norm(p)
            object.__setattr__(self, "planar_normal", (float(p[0]), float(p[1]), float(p[2])))
        if d == 1 and self.planar_normal is None:
            raise MultibodyValueError(
                f"ContactPair {self.geometry_a!r}-{self.geometry_b!r}: num_friction_directions=1 "
                f"(planar mode) needs planar_normal, the normal of the plane of motion")
        if self.num_closest is not None:
            n = self.num_closest
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
                raise MultibodyValueError(f"ContactPair.num_closest must be a positive int or "
                                          f"None, got {n!r}")
            object.__setattr__(self, "num_closest", int(n))

    @property
    def num_edges(self) -> int:
        """Number of friction-polytope edges, 2d."""
        return 2 * self.num_friction_directions


@dataclass(frozen=True)
class ContactKinematics:
    """Contact quantities at one configuration, for the n_c active candidate pairs.

    Attributes:
        phi: (n_c,) signed distances in [m] (negative: penetration).
        point_a: (n_c, 3) world witness points on geometry a in [m].
        point_b: (n_c, 3) world witness points on geometry b in [m].
        normal: (n_c, 3) unit normals from b towards a (world).
        edges: (n_e, 3) friction-polytope edge directions (world), n_e = Σ 2 d_i, grouped per
            contact in contact order.
        J_n: (n_c, n_v) normal Jacobians, ``phi_dot = J_n v``.
        J_t: (n_e, n_v) tangent Jacobians (one row per edge).
        mu: (n_c,) friction coefficients.
        num_edges: (n_c,) 2 d_i per contact.
        pair_index: (n_c,) index of the configured :class:`ContactPair` of each contact.
        geometry_a, geometry_b: (n_c,) collision-geometry indices in the GeometryModel.
    """

    phi: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    edges: np.ndarray
    J_n: np.ndarray
    J_t: np.ndarray
    mu: np.ndarray
    num_edges: np.ndarray
    pair_index: np.ndarray
    geometry_a: np.ndarray
    geometry_b: np.ndarray

    @property
    def n_c(self) -> int:
        """Number of contacts."""
        return int(self.phi.shape[0])


@dataclass(frozen=True)
class ContactDescription:
    """One contact at a configuration (what :meth:`MultibodyPlant.contact_descriptions` lists).

    Attributes:
        pair_index: index of the configured :class:`ContactPair`.
        pair: that pair.
        geometry_a, geometry_b: names of the two collision geometries.
        phi: signed distance in [m].
        point_a, point_b: (3,) world witness points in [m].
        normal: (3,) unit normal from b towards a.
        edges: (2d, 3) friction-polytope edge directions.
    """

    pair_index: int
    pair: ContactPair
    geometry_a: str
    geometry_b: str
    phi: float
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    edges: np.ndarray


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a x b for (n, 3) arrays (explicit: np.cross is slow on small arrays)."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[:, 0] = a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1]
    out[:, 1] = a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2]
    out[:, 2] = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    return out


def _point_jacobians(J: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Linear-velocity Jacobians (n, 3, n_v) of world points ``p`` (n, 3) fixed in bodies.

    ``J`` (n, 6, n_v) are the bodies' WORLD-frame joint Jacobians (spatial velocity at the world
    origin): v_p = v_o + w x p = (J_lin - [p]x J_ang) v.
    """
    lin, ang = J[:, :3], J[:, 3:]
    px, py, pz = p[:, 0, None], p[:, 1, None], p[:, 2, None]
    out = lin.copy()
    out[:, 0] += ang[:, 1] * pz - ang[:, 2] * py
    out[:, 1] += ang[:, 2] * px - ang[:, 0] * pz
    out[:, 2] += ang[:, 0] * py - ang[:, 1] * px
    return out


def _tangent_frames(normal: np.ndarray) -> np.ndarray:
    """(n, 2, 3) orthonormal tangents (t1, t2) per unit normal, (t1, t2, n) right-handed.

    ``t2 = normalize(n x h)``, ``t1 = t2 x n`` with the helper axis ``h`` = world x, or world y
    when ``|n_x| > 0.9``. The frame is continuous except where that choice switches, which
    avoids the axis-aligned normals of floors and walls (a floor's edge 0 is world +x), so the
    edge order of such contacts is stable from one linearization to the next.
    """
    nx, ny, nz = normal[:, 0], normal[:, 1], normal[:, 2]
    use_y = np.abs(nx) > 0.9
    T = np.empty((normal.shape[0], 2, 3))
    t2 = T[:, 1]
    t2[:, 0] = np.where(use_y, -nz, 0.0)  # n x e_y = (-n_z, 0, n_x); n x e_x = (0, n_z, -n_y)
    t2[:, 1] = np.where(use_y, 0.0, nz)
    t2[:, 2] = np.where(use_y, nx, -ny)
    t2 /= np.sqrt(np.einsum("ij,ij->i", t2, t2))[:, None]
    T[:, 0] = _cross(t2, normal)
    return T


class ContactGeometry:
    """Resolves :class:`ContactPair` names in a model and evaluates contacts at a configuration.

    Args:
        model: the ``pin.Model``.
        collision_model: the ``pin.GeometryModel`` with the collision geometry.
        contact_pairs: the configured pairs.

    Raises:
        UnknownGeometryError: a name matches no geometry, body or geometry-name prefix.
        MissingCollisionGeometryError: a name is a body without collision geometry.
        ValueError: a pair resolves to no candidate geometry pair (both sides on the same
            joint) or a planar normal is given with d > 1.
    """

    def __init__(self, model, collision_model, contact_pairs: Sequence[ContactPair]):
        import pinocchio as pin

        self._pin = pin
        if isinstance(contact_pairs, ContactPair):
            contact_pairs = [contact_pairs]
        pairs = list(contact_pairs)
        for i, p in enumerate(pairs):
            if not isinstance(p, ContactPair):
                raise MultibodyTypeError(f"contact_pairs[{i}] must be a ContactPair, got "
                                         f"{type(p).__name__}")
        self.pairs: tuple[ContactPair, ...] = tuple(pairs)
        self.model = model
        self.collision_model = collision_model
        geoms = list(collision_model.geometryObjects)
        self._geom_names = [g.name for g in geoms]
        self._geom_joint = np.array([g.parentJoint for g in geoms], dtype=int)

        # candidate geometry pairs per configured pair
        cand_a, cand_b, cand_pair = [], [], []
        self._groups: list[np.ndarray] = []  # candidate indices of each configured pair
        for k, p in enumerate(pairs):
            ga = self._resolve(p.geometry_a)
            gb = self._resolve(p.geometry_b)
            idx = []
            for a in ga:
                for b in gb:
                    if a == b or self._geom_joint[a] == self._geom_joint[b]:
                        continue
                    idx.append(len(cand_a))
                    cand_a.append(a)
                    cand_b.append(b)
                    cand_pair.append(k)
            if not idx:
                raise MultibodyValueError(
                    f"contact pair {p.geometry_a!r}-{p.geometry_b!r} has no candidate geometry "
                    f"pair (the geometries are attached to the same joint)")
            if p.num_closest is not None and p.num_closest > len(idx):
                raise MultibodyValueError(
                    f"contact pair {p.geometry_a!r}-{p.geometry_b!r}: num_closest={p.num_closest}"
                    f" exceeds the {len(idx)} candidate geometry pairs")
            if p.planar_normal is not None and p.num_friction_directions != 1:
                raise MultibodyValueError(
                    f"contact pair {p.geometry_a!r}-{p.geometry_b!r}: planar_normal is only used "
                    f"with num_friction_directions=1, got {p.num_friction_directions}")
            self._groups.append(np.array(idx, dtype=int))
        self._cand_a = np.array(cand_a, dtype=int)
        self._cand_b = np.array(cand_b, dtype=int)
        self._cand_pair = np.array(cand_pair, dtype=int)
        self._all_kept = all(p.num_closest is None for p in pairs)

        # A private copy of the collision model whose collision pairs are exactly the
        # candidates, in order: one pin.computeDistances call (a C++ loop) evaluates them all.
        self._gmodel = collision_model.copy()
        self._gmodel.removeAllCollisionPairs()
        for a, b in zip(cand_a, cand_b):
            self._gmodel.addCollisionPair(pin.CollisionPair(int(a), int(b)))
        self._gdata = pin.GeometryData(self._gmodel)
        for req in self._gdata.distanceRequests:
            req.enable_signed_distance = True
        # support mask of each joint: which velocity columns move it (WORLD joint Jacobian
        # = data.J restricted to the joint's support); row 0 (universe) is all zeros
        nv = model.nv
        self._support = np.zeros((model.njoints, nv))
        for j in range(1, model.njoints):
            for i in model.supports[j]:
                if i == 0:
                    continue
                jm = model.joints[i]
                self._support[j, jm.idx_v:jm.idx_v + jm.nv] = 1.0
        self._mu_pair = np.array([p.mu for p in pairs], dtype=float)
        self._d_pair = np.array([p.num_friction_directions for p in pairs], dtype=int)
        self._planar_pair = np.array(
            [p.planar_normal if p.planar_normal is not None else (0.0, 0.0, 0.0) for p in pairs],
            dtype=float).reshape(len(pairs), 3)
        nv = model.nv
        z3 = np.zeros((0, 3))
        zi = np.zeros(0, dtype=int)
        self._empty = ContactKinematics(np.zeros(0), z3, z3, z3, z3, np.zeros((0, nv)),
                                        np.zeros((0, nv)), np.zeros(0), zi, zi, zi, zi)
        self.n_c = sum(len(g) if p.num_closest is None else p.num_closest
                       for p, g in zip(pairs, self._groups))
        # The selected contacts are always ordered pair by pair with a fixed count per pair,
        # so the per-contact pair index and the per-edge tables are configuration-independent.
        counts = [len(g) if p.num_closest is None else p.num_closest
                  for p, g in zip(pairs, self._groups)]
        pair = np.repeat(np.arange(len(pairs)), counts).astype(int)
        d = self._d_pair[pair]
        ne = 2 * d
        owner = np.repeat(np.arange(len(pair)), ne)
        start = np.concatenate(([0], np.cumsum(ne)[:-1])).astype(int) if len(ne) else \
            np.zeros(0, int)
        k = np.arange(owner.shape[0]) - np.repeat(start, ne)  # edge index within its contact
        theta = np.pi * k / np.repeat(d, ne) if len(ne) else np.zeros(0)
        self._pair = pair
        self._owner = owner
        self._cs = np.stack([np.cos(theta), np.sin(theta)], axis=1)  # (n_e, 2)
        self._planar = d == 1
        self._any_planar = bool(np.any(self._planar))
        self._all_planar = bool(np.all(self._planar))
        self._planar_normals = self._planar_pair[pair[self._planar]]
        self._mu = self._mu_pair[pair]
        self._num_edges = ne

    # ------------------------------------------------------------------ resolution
    def _body_names(self) -> list[str]:
        pin = self._pin
        return [f.name for f in self.model.frames if f.type == pin.FrameType.BODY]

    def _resolve(self, name: str) -> list[int]:
        """Geometry indices matched by ``name``.

        In order: an exact geometry name; a frame (body) name, giving the geometries attached
        to that frame; a joint name, giving the geometries on that joint; a prefix of geometry
        names.
        """
        if name in self._geom_names:
            return [self._geom_names.index(name)]
        model = self.model
        geoms = self.collision_model.geometryObjects
        frames = [i for i, f in enumerate(model.frames) if f.name == name]
        joint_ids = [i for i, n in enumerate(model.names) if n == name and i > 0]
        if frames or joint_ids:
            # a body (or other frame): the geometries attached to that frame; a joint: the
            # geometries its body carries
            hits = [i for i, g in enumerate(geoms) if g.parentFrame in frames]
            if not hits and joint_ids:
                hits = [i for i, j in enumerate(self._geom_joint) if j in joint_ids]
            if not hits:
                raise MissingCollisionGeometryError(name, self._geom_names)
            return hits
        hits = [i for i, g in enumerate(self._geom_names) if g.startswith(name)]
        if not hits:
            raise UnknownGeometryError(name, self._geom_names, self._body_names())
        return hits

    # ------------------------------------------------------------------ queries
    def _distances(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """phi, p_a, p_b, n_BA for all candidate pairs (geometry placements up to date)."""
        self._pin.computeDistances(self._gmodel, self._gdata)
        results = self._gdata.distanceResults
        m = len(self._cand_a)
        phi = np.empty(m)
        pts = np.empty((m, 3, 3))  # p_a, p_b, coal normal (a -> b)
        for r in range(m):  # read back the C++ results (no computation here)
            res = results[r]
            phi[r] = res.min_distance
            pts[r, 0] = res.getNearestPoint1()
            pts[r, 1] = res.getNearestPoint2()
            pts[r, 2] = res.normal
        pa, pb = pts[:, 0], pts[:, 1]
        # coal's normal points from a to b; we use n_BA = -normal. Where coal gives a
        # degenerate normal, fall back to the witness-point direction.
        n = -pts[:, 2]
        norms = np.sqrt(np.einsum("ij,ij->i", n, n))
        bad = ~(norms > 0.5)
        if bad.any():
            diff = pa[bad] - pb[bad]
            dn = np.linalg.norm(diff, axis=1, keepdims=True)
            if np.any(dn < 1e-12):
                raise MultibodyValueError("coal returned no contact normal for touching "
                                          "geometries; use shapes with a defined normal")
            n[bad] = diff / dn * np.where(phi[bad] < 0, -1.0, 1.0)[:, None]
            norms = np.sqrt(np.einsum("ij,ij->i", n, n))
        n /= norms[:, None]
        return phi, pa, pb, n

    def _select(self, phi_all: np.ndarray) -> np.ndarray:
        """Indices of the kept candidate pairs given all candidates' signed distances.

        Every candidate, or per configured pair its ``num_closest`` closest (candidate order).
        """
        keep = []
        for p, group in zip(self.pairs, self._groups):
            if p.num_closest is None or p.num_closest == len(group):
                keep.append(group)
                continue
            order = np.argsort(phi_all[group], kind="stable")[: p.num_closest]
            keep.append(group[np.sort(order)])
        return np.concatenate(keep)

    def evaluate(self, data, q: np.ndarray) -> ContactKinematics:
        """Contacts at configuration ``q``.

        Updates ``data`` (forward kinematics, joint Jacobians in ``data.J``).
        """
        pin = self._pin
        model = self.model
        if len(self._cand_a) == 0:
            return self._empty
        pin.computeJointJacobians(model, data, q)  # also runs forward kinematics
        pin.updateGeometryPlacements(model, data, self._gmodel, self._gdata)
        phi, pa, pb, n = self._distances()
        if self._all_kept:
            ga, gb = self._cand_a, self._cand_b
        else:
            idx = self._select(phi)
            phi, pa, pb, n = phi[idx], pa[idx], pb[idx], n[idx]
            ga, gb = self._cand_a[idx], self._cand_b[idx]
        # WORLD joint Jacobians (6 x n_v, spatial velocity at the world origin) of the joints
        # carrying a and b: data.J masked by each joint's support; a and b stacked (2 n_c)
        nc = phi.shape[0]
        Jab = data.J[None] * self._support[np.concatenate(
            [self._geom_joint[ga], self._geom_joint[gb]])][:, None, :]
        Jp = _point_jacobians(Jab, np.concatenate([pa, pb]))
        Jrel = Jp[:nc] - Jp[nc:]  # (n_c, 3, n_v)
        J_n = np.einsum("ci,civ->cv", n, Jrel)
        edges = self.edges(n)
        J_t = np.einsum("ei,eiv->ev", edges, Jrel[self._owner])
        return ContactKinematics(phi, pa, pb, n, edges, J_n, J_t, self._mu, self._num_edges,
                                 self._pair, ga, gb)

    def edges(self, normal: np.ndarray) -> np.ndarray:
        """Friction-polytope edges (n_e, 3) of the contacts with normals ``normal`` (n_c, 3)."""
        owner = self._owner
        if self._any_planar:
            t = _cross(normal[self._planar], self._planar_normals)
            tn = np.sqrt(np.einsum("ij,ij->i", t, t))
            if tn.min() < 1e-9:
                raise MultibodyValueError("a planar contact's normal is parallel to its "
                                          "planar_normal: the contact normal must lie in the "
                                          "plane of motion")
            t /= tn[:, None]
            if self._all_planar:  # edges ±normalize(n x p): cos(theta_k) = ±1, sin = 0
                return self._cs[:, :1] * t[owner]
        T = _tangent_frames(normal)
        if self._any_planar:
            T[self._planar, 0] = t
        return np.einsum("ek,ekj->ej", self._cs, T[owner])

    def geometry_name(self, index: int) -> str:
        """Name of collision geometry ``index``."""
        return self._geom_names[index]
