"""Collision geometry of a scene and contact detection (broad phase + narrow phase).

Contacts are reported between geometry ``a`` and geometry ``b`` with the normal ``n`` pointing
**from a towards b**, so that ``v_n = nᵀ(v_b − v_a) > 0`` means separating; ``φ < 0`` means
overlap. The sides are canonical, whatever order a pair was given in: a half-space is always
side ``a`` (``n`` is its outward normal), a sphere is side ``b``; between shapes of equal rank
(sphere–sphere, box–box, box–mesh, ...) the geometry with the lower index is side ``a``. So adding
the ground (or any half-space) before or after the bodies gives the same contacts. The simulator places the contact point between the two witness points, weighted by
stiffness (on the surface of the stiffer body; the midpoint for equal stiffness), as Drake does.

* Broad phase: bounding spheres around each geometry (half-spaces: the plane itself), tested for
  all allowed pairs at once with numpy; a pair is a candidate when the bounding volumes come
  closer than ``margin``.
* Narrow phase: closed-form, vectorized sphere–half-space, sphere–sphere and sphere–box
  (the common cases: corner spheres, balls, walls); box–half-space and box–box pairs get
  multi-point manifolds (:mod:`plants.sim.manifold`: up to 4 points per pair, capped by
  ``max_contacts_per_pair``; box–box takes its normal from GJK/EPA); every other pair goes to
  coal's GJK/EPA ``coal.distance`` (signed distance, witness points and normal), one point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._geometry_kernels import HAVE_NUMBA, bounding_candidates, closed_form_contacts, tangent_frames
from ._manifold_kernels import box_box_contacts, box_halfspace_contacts
from .manifold import box_box_manifold, box_halfspace_manifold, reduce_manifold

__all__ = [
    "GeometryQueryError",
    "Sphere",
    "Box",
    "HalfSpace",
    "CoalShape",
    "ContactParams",
    "Geometry",
    "Contacts",
    "ContactDetector",
    "detect_contacts",
    "tangent_basis",
]


class GeometryQueryError(RuntimeError):
    """coal's distance query gave no finite answer for a pair, with both GJK variants.

    Attributes: ``a``, ``b`` the geometries' names, ``distance`` what coal returned [m]."""

    def __init__(self, a: str, b: str, distance: float):
        self.a, self.b, self.distance = a, b, distance
        super().__init__(f"coal's distance between geometries {a!r} and {b!r} is not finite ({distance}) with the "
                         "default and the Nesterov-accelerated GJK")


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return value


@dataclass(frozen=True)
class Sphere:
    """Sphere of ``radius`` [m] centred at the geometry frame's origin."""

    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("Sphere.radius", self.radius))

    @property
    def bounding_radius(self) -> float:
        return self.radius

    def coal(self) -> Any:
        import coal

        return coal.Sphere(self.radius)


@dataclass(frozen=True)
class Box:
    """Box with half extents ``half`` (3,) [m], centred at the geometry frame's origin."""

    half: tuple[float, float, float]

    def __post_init__(self) -> None:
        h = tuple(_positive("Box.half", x) for x in np.broadcast_to(np.asarray(self.half, float), 3))
        object.__setattr__(self, "half", h)

    @property
    def bounding_radius(self) -> float:
        return float(np.linalg.norm(self.half))

    def coal(self) -> Any:
        import coal

        return coal.Box(*(2.0 * np.asarray(self.half)))


@dataclass(frozen=True)
class HalfSpace:
    """The half-space ``z ≤ 0`` of the geometry frame (outward normal = frame's +z)."""

    @property
    def bounding_radius(self) -> float:
        return float("inf")

    def coal(self) -> Any:
        import coal

        return coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)


@dataclass(frozen=True)
class CoalShape:
    """Any coal collision object (convex hull of a mesh, cylinder, ...), queried with GJK/EPA."""

    shape: Any
    bounding_radius: float

    def coal(self) -> Any:
        return self.shape


@dataclass(frozen=True)
class ContactParams:
    """Per-geometry contact parameters (seed 001 §II).

    Attributes:
        stiffness: k in [N/m], > 0; ``inf`` = rigid (SAP then regularizes with β, eq. 29).
        dissipation: τ_d in [s], >= 0.
        mu: friction coefficient, >= 0.

    Pairs combine as springs in series, k = k_a k_b/(k_a + k_b), with τ_d the stiffness-weighted
    (k_b τ_a + k_a τ_b)/(k_a + k_b) (the softer side dominates; a rigid side leaves the other's
    τ_d), and μ = 2 μ_a μ_b/(μ_a + μ_b) (as Drake).
    """

    stiffness: float = float("inf")
    dissipation: float = 0.0
    mu: float = 0.5

    def __post_init__(self) -> None:
        k, tau, mu = float(self.stiffness), float(self.dissipation), float(self.mu)
        if np.isnan(k) or k <= 0:
            raise ValueError(f"stiffness must be > 0 [N/m] (inf = rigid), got {self.stiffness}")
        if not (np.isfinite(tau) and tau >= 0):
            raise ValueError(f"dissipation must be a finite time scale >= 0 [s], got {self.dissipation}")
        if not (np.isfinite(mu) and mu >= 0):
            raise ValueError(f"mu must be finite and >= 0, got {self.mu}")
        object.__setattr__(self, "stiffness", k)
        object.__setattr__(self, "dissipation", tau)
        object.__setattr__(self, "mu", mu)


@dataclass(frozen=True)
class Geometry:
    """A collision geometry rigidly attached to a Pinocchio joint.

    Attributes:
        name: unique name.
        shape: :class:`Sphere`, :class:`Box`, :class:`HalfSpace` or :class:`CoalShape`.
        joint: Pinocchio joint index (0 = world).
        rotation: (3, 3) orientation in the joint frame.
        translation: (3,) position in the joint frame [m].
        params: contact parameters.
        group: collision group; pairs of groups listed in the scene's ``excluded_groups`` and
            geometries on the same tree never collide.
    """

    name: str
    shape: Any
    joint: int
    rotation: np.ndarray
    translation: np.ndarray
    params: ContactParams
    group: str = "default"


@dataclass(frozen=True)
class Contacts:
    """Contacts found at one configuration (n_c of them).

    Attributes:
        phi: (n_c,) signed distances [m].
        normal: (n_c, 3) unit normals from a to b (world).
        point_a, point_b: (n_c, 3) witness points on a and on b (world) [m];
            ``point_b − point_a = φ n``.
        a, b: (n_c,) geometry indices.
    """

    phi: np.ndarray
    normal: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def point(self, weight_a: np.ndarray | float = 0.5) -> np.ndarray:
        """(n_c, 3) contact points ``w p_a + (1 − w) p_b`` (default: the midpoint)."""
        w = np.asarray(weight_a, float).reshape(-1, 1) if np.ndim(weight_a) else weight_a
        return w * self.point_a + (1.0 - w) * self.point_b

    @property
    def n_c(self) -> int:
        return int(self.phi.size)


def _empty_contacts() -> Contacts:
    z = np.zeros(0)
    return Contacts(z, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, int), np.zeros(0, int))


_KIND = {Sphere: 0, Box: 1, HalfSpace: 2}  # anything else: 3 (coal GJK/EPA)
_SIDE_RANK = np.array([2, 1, 0, 1])  # by kind: half-space first (side a), sphere last (side b)


class ContactDetector:
    """Broad + narrow phase over a fixed list of geometries and allowed pairs.

    Args:
        geometries: the scene's geometries.
        pairs: (n_p, 2) geometry indices of the pairs to test, in any order within a pair (the
            detector puts them on canonical sides, see the module docstring). A pair of two
            half-spaces never makes contact.
        margin: detection margin [m].
        max_contacts_per_pair: the most contact points a pair may have, an int >= 1 for every pair
            or one per pair (n_p,). Only box / half-space and box / box pairs have more than one
            (their manifolds, :mod:`plants.sim.manifold`: up to 4 points, the default, which
            holds a resting box on its 4 corners and pivots a tipping one about its edge); 1 keeps
            one point per pair (the deepest corner, or the GJK/EPA point of a box / box pair).
    """

    def __init__(self, geometries: list[Geometry], pairs: np.ndarray, margin: float,
                 max_contacts_per_pair: int | np.ndarray = 4):
        import coal

        self.geoms = geometries
        self.margin = float(margin)
        kind = np.array([_KIND.get(type(g.shape), 3) for g in geometries], dtype=np.int64)
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        if pairs.size and (pairs.min() < 0 or pairs.max() >= len(geometries)):
            raise ValueError(f"pairs must index the {len(geometries)} geometries, got indices up to {pairs.max()}")
        # canonical sides, whatever order the pair was given in: a half-space is always side a and
        # a sphere side b; between equal ranks (sphere–sphere, box–box, box–mesh) the lower index
        rank_a, rank_b = _SIDE_RANK[kind[pairs[:, 0]]], _SIDE_RANK[kind[pairs[:, 1]]]
        swap = (rank_a > rank_b) | ((rank_a == rank_b) & (pairs[:, 0] > pairs[:, 1]))
        a = np.where(swap, pairs[:, 1], pairs[:, 0])
        b = np.where(swap, pairs[:, 0], pairs[:, 1])
        self.a, self.b = a, b
        self.kind = kind
        self.radius = np.array([g.shape.bounding_radius for g in geometries])
        self.rad = np.array([g.shape.radius if kind[i] == 0 else 0.0 for i, g in enumerate(geometries)])
        self.half = np.array([g.shape.half if kind[i] == 1 else (0.0, 0.0, 0.0) for i, g in enumerate(geometries)])
        ka, kb = kind[a], kind[b]
        self.sel_hs = np.flatnonzero((ka == 2) & (kb == 0))
        self.sel_ss = np.flatnonzero((ka == 0) & (kb == 0))
        self.sel_bs = np.flatnonzero((ka == 1) & (kb == 0))
        cap = np.broadcast_to(np.asarray(max_contacts_per_pair), (len(a),))
        if cap.dtype.kind not in "iu" or (cap.size and cap.min() < 1):
            raise ValueError("max_contacts_per_pair must be an int >= 1 (or one per pair), "
                             f"got {max_contacts_per_pair!r}")
        self.cap = cap.astype(np.int64)
        self.sel_bh = np.flatnonzero((ka == 2) & (kb == 1))  # box / half-space manifolds
        # box / box manifolds; a box / box pair capped at 1 is a plain GJK/EPA pair (the generic path)
        self.sel_bb = np.flatnonzero((ka == 1) & (kb == 1) & (self.cap > 1))
        self._bh_a = a[self.sel_bh].astype(np.int64)
        self._bh_b = b[self.sel_bh].astype(np.int64)
        self.cap.flags.writeable = False  # the compiled path keeps its own copy of the box / half-space caps
        self._bh_cap = self.cap[self.sel_bh].copy()
        n_bh = 4 * self.sel_bh.size  # output buffers of the compiled box / half-space kernel
        self._bh_out = (np.empty(n_bh), np.empty((n_bh, 3)), np.empty((n_bh, 3)), np.empty((n_bh, 3)),
                        np.empty(n_bh, np.int64), np.empty(n_bh, np.int64))
        special = np.zeros(len(a), bool)
        special[np.concatenate([self.sel_hs, self.sel_ss, self.sel_bs, self.sel_bh, self.sel_bb])] = True
        self.sel_generic = np.flatnonzero(~special)
        order = np.concatenate([self.sel_hs, self.sel_ss, self.sel_bs])  # the reference's order
        self._cf_a = a[order].astype(np.int64)
        self._cf_b = b[order].astype(np.int64)
        self._cf_kind = np.repeat(np.arange(3, dtype=np.int64), [self.sel_hs.size, self.sel_ss.size, self.sel_bs.size])
        self.hs_pairs = np.flatnonzero(ka == 2)  # pairs with a half-space (bounding test vs plane)
        ga, gb = a[self.sel_generic], b[self.sel_generic]
        self._gen_a, self._gen_b = ga.astype(np.int64), gb.astype(np.int64)
        self._gen_mode = np.where(kind[ga] == 2, np.where(kind[gb] == 2, 2, 1), 0).astype(np.int64)
        self._gen_out = np.empty(ga.size, dtype=np.int64)
        self._coal = [g.shape.coal() for g in geometries] if len(self.sel_generic) or len(self.sel_bb) else None
        self._names = [g.name for g in geometries]
        self._req = coal.DistanceRequest()
        self._req.enable_signed_distance = True
        # coal's default GJK fails on some exactly-touching box faces (−DBL_MAX and a NaN normal,
        # about 2 in 10⁴ random near-touching poses); the Nesterov-accelerated GJK answers them
        self._req_retry = coal.DistanceRequest()
        self._req_retry.enable_signed_distance = True
        self._req_retry.gjk_variant = coal.GJKVariant.NesterovAcceleration

    def detect(self, R: np.ndarray, p: np.ndarray) -> Contacts:
        """Contacts at geometry poses ``R`` (n_g, 3, 3), ``p`` (n_g, 3) (world).

        Uses the compiled closed-form and broad-phase kernels when numba is present (same
        contacts, same order as :meth:`detect_numpy`, the reference).
        """
        if not HAVE_NUMBA:
            return self.detect_numpy(R, p)
        if self.a.size == 0:
            return _empty_contacts()
        R = np.ascontiguousarray(R, dtype=float)
        p = np.ascontiguousarray(p, dtype=float)
        n_p = self._cf_a.size
        phi = np.empty(n_p)
        nrm = np.empty((n_p, 3))
        pa = np.empty((n_p, 3))
        pb = np.empty((n_p, 3))
        ia = np.empty(n_p, dtype=np.int64)
        ib = np.empty(n_p, dtype=np.int64)
        n = closed_form_contacts(self._cf_a, self._cf_b, self._cf_kind, R, p, self.radius, self.rad,
                                 self.half, self.margin, phi, nrm, pa, pb, ia, ib)
        out = [(phi[:n], nrm[:n], pa[:n], pb[:n], ia[:n], ib[:n])]
        if self.sel_generic.size:
            n_cand = bounding_candidates(self._gen_a, self._gen_b, self._gen_mode, R, p, self.radius, self.margin,
                                         self._gen_out)
            g = self._generic(R, p, self.sel_generic[self._gen_out[:n_cand]])
            if g is not None:
                out.append(g)
        if self.sel_bh.size or self.sel_bb.size:
            out.extend(self._manifolds(R, p, compiled=True))
        out = [x for x in out if x[0].size] or out[:1]  # each part holds only contacts within the margin
        if len(out) == 1:
            return Contacts(*out[0])
        return Contacts(*(np.concatenate(x) for x in zip(*out)))

    def _manifolds(self, R: np.ndarray, p: np.ndarray, compiled: bool = False) -> list[tuple]:
        """Box / half-space and box / box manifolds (:mod:`plants.sim.manifold`), capped per pair;
        ``compiled``: the numba kernels of :mod:`plants.sim._manifold_kernels` (same contacts).

        Broad phase: the plane against the box's bounding sphere, bounding spheres for box / box.
        """
        a, b, m, out = self.a, self.b, self.margin, []
        s = self.sel_bh
        if compiled and s.size:
            phi, nrm, pa, pb, ia, ib = self._bh_out
            n = box_halfspace_contacts(self._bh_a, self._bh_b, self._bh_cap, R, p, self.radius, self.half, m,
                                       phi, nrm, pa, pb, ia, ib)
            if n:
                out.append((phi[:n].copy(), nrm[:n].copy(), pa[:n].copy(), pb[:n].copy(), ia[:n].copy(),
                            ib[:n].copy()))
            s = s[:0]
        if s.size:
            nrm = R[a[s], :, 2]
            s = s[np.einsum("ij,ij->i", nrm, p[b[s]] - p[a[s]]) - self.radius[b[s]] < m]
        if s.size:
            nrm = R[a[s], :, 2]
            k, phi, x = box_halfspace_manifold(nrm, p[a[s]], R[b[s]], p[b[s]], self.half[b[s]], m)
            cap = self.cap[s]
            if k.size and (np.bincount(k, minlength=s.size) > cap).any():
                sel = []
                for i in np.unique(k):
                    rows = np.flatnonzero(k == i)
                    sel.append(rows[reduce_manifold(phi[rows], x[rows], nrm[i], int(cap[i]))])
                sel = np.concatenate(sel)
                k, phi, x = k[sel], phi[sel], x[sel]
            if k.size:
                n = nrm[k]
                out.append((phi, n, x - phi[:, None] * n, x, a[s][k], b[s][k]))
        s = self.sel_bb
        if s.size:
            s = s[np.linalg.norm(p[b[s]] - p[a[s]], axis=1) - self.radius[a[s]] - self.radius[b[s]] < m]
        if s.size:
            g = self._generic(R, p, s, with_pairs=True)
            if g is not None:
                phi_l, n_l, pa_l, pb_l, ia_l, ib_l = [], [], [], [], [], []
                for phi0, n0, pa0, pb0, k in zip(*g):
                    ia, ib = int(a[k]), int(b[k])
                    man = None
                    if compiled:
                        buf = np.empty(8), np.empty((8, 3)), np.empty((8, 3)), np.empty((8, 3))
                        cnt = box_box_contacts(R[ia], p[ia], self.half[ia], R[ib], p[ib], self.half[ib],
                                               np.ascontiguousarray(n0, dtype=float), m, int(self.cap[k]), *buf)
                        if cnt:
                            phi1, n1, pa1, pb1 = (x[:cnt] for x in buf)
                            phi_l.append(phi1)
                            n_l.append(n1)
                            pa_l.append(pa1)
                            pb_l.append(pb1)
                            ia_l.append(np.full(cnt, ia))
                            ib_l.append(np.full(cnt, ib))
                            continue
                    else:
                        man = box_box_manifold(R[ia], p[ia], self.half[ia], R[ib], p[ib], self.half[ib], n0, m)
                    if man is None:
                        phi_l.append([phi0])
                        n_l.append(n0[None])
                        pa_l.append(pa0[None])
                        pb_l.append(pb0[None])
                        count = 1
                    else:
                        phi1, n1, pa1, pb1 = man
                        keep = reduce_manifold(phi1, pb1, n1, int(self.cap[k]))
                        count = keep.size
                        phi_l.append(phi1[keep])
                        n_l.append(np.broadcast_to(n1, (count, 3)))
                        pa_l.append(pa1[keep])
                        pb_l.append(pb1[keep])
                    ia_l.append(np.full(count, ia))
                    ib_l.append(np.full(count, ib))
                out.append((np.concatenate(phi_l), np.concatenate(n_l), np.concatenate(pa_l),
                            np.concatenate(pb_l), np.concatenate(ia_l), np.concatenate(ib_l)))
        return out

    def _generic(self, R: np.ndarray, p: np.ndarray, s: np.ndarray, with_pairs: bool = False):
        """coal GJK/EPA on the candidate pairs ``s`` (one call per pair); None if none is close.

        Returns (φ, n, p_a, p_b, a, b) of the close pairs, or with ``with_pairs`` (φ, n, p_a, p_b,
        pair index)."""
        if not s.size:
            return None
        import coal

        a, b, m = self.a, self.b, self.margin
        phi_l, n_l, pa_l, pb_l, keep = [], [], [], [], []
        for k in s:
            ia, ib = int(a[k]), int(b[k])
            res = coal.DistanceResult()
            Ta, Tb = coal.Transform3s(R[ia], p[ia]), coal.Transform3s(R[ib], p[ib])
            d = coal.distance(self._coal[ia], Ta, self._coal[ib], Tb, self._req, res)
            if not (-1e300 < d < np.inf and np.isfinite(np.asarray(res.normal)).all()):  # −DBL_MAX: failed
                res = coal.DistanceResult()
                d = coal.distance(self._coal[ia], Ta, self._coal[ib], Tb, self._req_retry, res)
                if not (-1e300 < d < np.inf and np.isfinite(np.asarray(res.getNearestPoint1())).all()):
                    raise GeometryQueryError(self._names[ia], self._names[ib], float(d))
            if d >= m:
                continue
            p1, p2 = res.getNearestPoint1(), res.getNearestPoint2()
            nv = np.asarray(res.normal, float)
            if not np.isfinite(nv).all() or np.linalg.norm(nv) < 0.5:
                dd = p2 - p1
                nv = dd / max(np.linalg.norm(dd), 1e-300)
            phi_l.append(d)
            n_l.append(nv)
            pa_l.append(p1)
            pb_l.append(p2)
            keep.append(k)
        if not keep:
            return None
        keep = np.array(keep)
        if with_pairs:
            return np.array(phi_l), np.array(n_l), np.array(pa_l), np.array(pb_l), keep
        return np.array(phi_l), np.array(n_l), np.array(pa_l), np.array(pb_l), a[keep], b[keep]

    def detect_numpy(self, R: np.ndarray, p: np.ndarray) -> Contacts:
        """Pure-numpy reference of :meth:`detect` (vectorized per pair kind)."""
        if self.a.size == 0:
            return _empty_contacts()
        a, b = self.a, self.b
        m = self.margin
        # ---- broad phase (bounding spheres; planes exactly)
        is_hs = self.kind[a] == 2
        nrm = R[a, :, 2]
        d_plane = np.einsum("ij,ij->i", nrm, p[b] - p[a]) - self.radius[b]
        d_sph = np.linalg.norm(p[b] - p[a], axis=1) - self.radius[a] - self.radius[b]
        cand = np.where(is_hs, d_plane, np.where(self.kind[b] == 2, np.inf, d_sph)) < m
        out = []
        # ---- half-space / sphere
        s = self.sel_hs[cand[self.sel_hs]]
        if s.size:
            n = R[a[s], :, 2]
            c = p[b[s]]
            r = self.rad[b[s]]
            phi = np.einsum("ij,ij->i", n, c - p[a[s]]) - r
            pb = c - r[:, None] * n
            pa = pb - phi[:, None] * n
            out.append((phi, n, pa, pb, a[s], b[s]))
        # ---- sphere / sphere
        s = self.sel_ss[cand[self.sel_ss]]
        if s.size:
            d = p[b[s]] - p[a[s]]
            dist = np.linalg.norm(d, axis=1)
            n = d / np.where(dist > 0, dist, 1.0)[:, None]
            n[dist == 0] = (0.0, 0.0, 1.0)
            ra, rb = self.rad[a[s]], self.rad[b[s]]
            pa = p[a[s]] + ra[:, None] * n
            pb = p[b[s]] - rb[:, None] * n
            out.append((dist - ra - rb, n, pa, pb, a[s], b[s]))
        # ---- box / sphere (closest point in the box frame)
        s = self.sel_bs[cand[self.sel_bs]]
        if s.size:
            Rb = R[a[s]]
            h = self.half[a[s]]
            c_l = np.einsum("kji,kj->ki", Rb, p[b[s]] - p[a[s]])  # Rᵀ (c - p_box)
            q = np.clip(c_l, -h, h)
            diff = c_l - q
            dist = np.linalg.norm(diff, axis=1)
            outside = dist > 0
            n_l = np.zeros_like(c_l)
            n_l[outside] = diff[outside] / dist[outside, None]
            depth = h - np.abs(c_l)
            ax = np.argmin(depth, axis=1)
            inside = ~outside
            rows = np.flatnonzero(inside)
            sgn = np.where(c_l[rows, ax[rows]] >= 0, 1.0, -1.0)
            n_l[rows, ax[rows]] = sgn
            q[rows, ax[rows]] = sgn * h[rows, ax[rows]]
            signed = np.where(outside, dist, -depth[np.arange(len(s)), ax])
            r = self.rad[b[s]]
            n = np.einsum("kij,kj->ki", Rb, n_l)
            pa = p[a[s]] + np.einsum("kij,kj->ki", Rb, q)
            pb = p[b[s]] - r[:, None] * n
            out.append((signed - r, n, pa, pb, a[s], b[s]))
        # ---- everything else: coal GJK/EPA (one call per candidate pair)
        g = self._generic(R, p, self.sel_generic[cand[self.sel_generic]])
        if g is not None:
            out.append(g)
        if self.sel_bh.size or self.sel_bb.size:
            out.extend(self._manifolds(R, p))
        if not out:
            return _empty_contacts()
        phi, n, pa, pb, ia, ib = (np.concatenate(x) for x in zip(*out))
        active = phi < m
        return Contacts(phi[active], n[active], pa[active], pb[active], ia[active], ib[active])


def detect_contacts(detector: ContactDetector, R: np.ndarray, p: np.ndarray) -> Contacts:
    """Functional alias of :meth:`ContactDetector.detect`."""
    return detector.detect(R, p)


def tangent_basis(n: np.ndarray) -> np.ndarray:
    """(n_c, 3, 3) contact frames with rows (t1, t2, n): right-handed, normal last."""
    if not HAVE_NUMBA:
        return tangent_basis_numpy(n)
    n = np.ascontiguousarray(n, dtype=float)
    out = np.empty((n.shape[0], 3, 3))
    tangent_frames(n, out)
    return out


def tangent_basis_numpy(n: np.ndarray) -> np.ndarray:
    """Pure-numpy reference of :func:`tangent_basis`."""
    n = np.asarray(n, float)
    # pick the world axis least aligned with n to build t1
    helper = np.zeros_like(n)
    idx = np.argmin(np.abs(n), axis=1)
    helper[np.arange(len(n)), idx] = 1.0
    def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # (n, 3) x (n, 3), cheaper than np.cross
        return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
                         a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                         a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)

    t1 = cross(helper, n)
    t1 /= np.sqrt(np.einsum("ij,ij->i", t1, t1))[:, None]
    t2 = cross(n, t1)
    return np.stack([t1, t2, n], axis=1)
