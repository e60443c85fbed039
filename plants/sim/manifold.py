"""Multi-point contact manifolds of boxes: box–half-space and box–box (up to 4 points per pair).

One point per pair (the GJK/EPA witness pair) cannot hold a flat box still: a box resting on the
ground needs its 4 corners, a box tipping over needs the 2 points of its pivot edge. These
functions build the contact *manifold* of a pair — a few points, each with its own signed
distance, sharing one normal — in closed form (docs/contact-solvers.md §10,
eqs. M1-M5):

* box / half-space (plane normal n, eq. M1): the box face most anti-parallel to n is the
  *incident face*; its 4 corners x_i give φ_i = n·(x_i − o) (o on the plane). Every corner with
  φ_i < margin is a contact (speculative contacts above the plane included, as for any pair).
* box / box (eqs. M2-M4): the normal comes from coal's GJK/EPA (exact signed distance); the face of
  either box best aligned with it is the *reference face*, the other box's face most
  anti-parallel to it the *incident face*. The incident face is clipped against the reference
  face's 4 side planes (Sutherland–Hodgman); each clipped point x_i gets φ_i = m·(x_i − c) with m
  the reference face's outward normal and c its centre. Edge–edge and vertex contacts (no face
  aligned with the normal within ``FACE_ALIGNMENT``) keep the single GJK/EPA point.
* reduction (eq. M5): a pair with more points than its cap keeps the deepest point, then the one
  farthest from it, then the one spanning the largest triangle with them, then the one farthest
  outside that triangle: the largest support polygon of ``cap`` points that contains the
  deepest point.

Why not ``coal.computeContactPatch``: coal (3.0) returns the patch as a polygon on one plane with
*one* penetration depth for all its points, so a box tilted by a fraction of a degree gets the same
φ at the corner that touches and at the corner above the ground; the per-point φ_i is what makes
a box pivot about its lowest edge. The clipping itself is the same construction.

All points are reported with the convention of :mod:`plants.sim.geometry`: normal from a to b,
``point_b − point_a = φ n``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FACE_ALIGNMENT", "TIE", "box_halfspace_manifold", "box_box_manifold", "reduce_manifold", "incident_face"]

FACE_ALIGNMENT = 0.99
"""|cos| of the angle between the GJK/EPA normal and a box face normal above which a box–box pair
is a face contact (manifold by clipping); below it (an edge–edge or vertex contact, the normal more
than ~8° off every face) the pair keeps its single GJK/EPA point."""

TIE = 1e-9
"""Relative tolerance under which two candidates of the reduction are tied (the earlier wins)."""

# corners of a face in the box frame: the face's axis j at sign s, the other two axes (u, w) at
# (±1, ±1) in counter-clockwise order seen from outside for s = +1 (order matters for clipping only
# as a closed polygon; orientation is irrelevant)
_QUAD = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])


def incident_face(R: np.ndarray, p: np.ndarray, half: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """(4, 3) world corners of the box face whose outward normal is most aligned with ``direction``.

    Args:
        R: (3, 3) box orientation (world), p: (3,) centre [m], half: (3,) half extents [m].
        direction: (3,) world direction (need not be unit).
    """
    d = R.T @ direction
    j = int(np.argmax(np.abs(d)))
    u, w = (j + 1) % 3, (j + 2) % 3
    local = np.zeros((4, 3))
    local[:, j] = np.copysign(half[j], d[j])
    local[:, u] = _QUAD[:, 0] * half[u]
    local[:, w] = _QUAD[:, 1] * half[w]
    return local @ R.T + p


def box_halfspace_manifold(n: np.ndarray, o: np.ndarray, R: np.ndarray, p: np.ndarray, half: np.ndarray,
                           margin: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Manifolds of many box / half-space pairs at once (eq. M1), vectorized over pairs.

    Args:
        n: (n_p, 3) outward unit normals of the half-spaces (world).
        o: (n_p, 3) a point of each plane [m].
        R: (n_p, 3, 3) box orientations, p: (n_p, 3) box centres [m], half: (n_p, 3) half extents [m].
        margin: detection margin [m].

    Returns:
        ``(pair, phi, x)``: for each kept corner, the index of its pair (n_k,), its signed distance
        φ (n_k,) [m] and its position on the box (n_k, 3) [m]; corners of a pair in the order of
        the face (deepest-first reduction is :func:`reduce_manifold`'s job).
    """
    n_p = n.shape[0]
    d = np.einsum("kji,kj->ki", R, -n)  # the direction into the plane, in each box frame
    j = np.argmax(np.abs(d), axis=1)
    rows = np.arange(n_p)
    local = np.zeros((n_p, 4, 3))
    u, w = (j + 1) % 3, (j + 2) % 3
    local[rows, :, j] = (np.copysign(half[rows, j], d[rows, j]))[:, None]
    local[rows, :, u] = _QUAD[None, :, 0] * half[rows, u][:, None]
    local[rows, :, w] = _QUAD[None, :, 1] * half[rows, w][:, None]
    x = np.einsum("kij,kcj->kci", R, local) + p[:, None, :]  # (n_p, 4, 3)
    phi = np.einsum("kcj,kj->kc", x - o[:, None, :], n)
    keep = phi < margin
    pair = np.broadcast_to(rows[:, None], (n_p, 4))[keep]
    return pair, phi[keep], x[keep]


def _clip(poly: np.ndarray, axis: np.ndarray, offset: float) -> np.ndarray:
    """Sutherland–Hodgman: the part of the closed polygon ``poly`` (m, 3) with axis·x ≤ offset."""
    if poly.shape[0] == 0:
        return poly
    s = poly @ axis - offset
    out = []
    m = poly.shape[0]
    for i in range(m):
        j = (i + 1) % m
        if s[i] <= 0.0:
            out.append(poly[i])
        if (s[i] < 0.0 < s[j]) or (s[j] < 0.0 < s[i]):
            t = s[i] / (s[i] - s[j])
            out.append(poly[i] + t * (poly[j] - poly[i]))
    return np.array(out) if out else np.zeros((0, 3))


def box_box_manifold(Ra: np.ndarray, pa: np.ndarray, ha: np.ndarray, Rb: np.ndarray, pb: np.ndarray,
                     hb: np.ndarray, normal: np.ndarray, margin: float
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Manifold of one box / box pair (eqs. M2-M4) given its GJK/EPA normal.

    Args:
        Ra, pa, ha: box a's orientation (3, 3), centre (3,) [m] and half extents (3,) [m].
        Rb, pb, hb: the same for box b.
        normal: (3,) unit normal from a to b (coal's, for the signed distance).
        margin: detection margin [m].

    Returns:
        ``(phi (k,), n (3,), point_a (k, 3), point_b (k, 3))`` with ``point_b − point_a = φ n``,
        or None when the pair is not a face contact (no face normal within ``FACE_ALIGNMENT`` of
        ``normal``) or no clipped point is closer than ``margin``: keep the GJK/EPA point then.
    """
    ca = Ra.T @ normal  # a's axes against n (a's reference face points along +n)
    cb = Rb.T @ normal  # b's axes against n (b's reference face points along −n)
    ia, ib = int(np.argmax(np.abs(ca))), int(np.argmax(np.abs(cb)))
    if max(abs(ca[ia]), abs(cb[ib])) < FACE_ALIGNMENT:
        return None
    if abs(ca[ia]) >= abs(cb[ib]) - 1e-9:  # reference face on a (ties: a, for determinism)
        R, p, h, j, sign = Ra, pa, ha, ia, np.copysign(1.0, ca[ia])
        m = sign * Ra[:, ia]  # outward normal of a's reference face = n_ab
        poly = incident_face(Rb, pb, hb, -m)
        ref_is_a = True
    else:
        R, p, h, j, sign = Rb, pb, hb, ib, -np.copysign(1.0, cb[ib])
        m = sign * Rb[:, ib]  # outward normal of b's reference face = −n_ab
        poly = incident_face(Ra, pa, ha, -m)
        ref_is_a = False
    c = p + h[j] * m  # centre of the reference face
    for k in ((j + 1) % 3, (j + 2) % 3):  # the reference face's 4 side planes
        e = R[:, k]
        off = float(e @ p)
        poly = _clip(poly, e, off + h[k])
        poly = _clip(poly, -e, -off + h[k])
        if poly.shape[0] == 0:
            return None
    phi = (poly - c) @ m
    keep = phi < margin
    if not keep.any():
        return None
    phi, x = phi[keep], poly[keep]
    on_ref = x - phi[:, None] * m  # the clipped points projected on the reference face
    if ref_is_a:  # n_ab = m: the incident points are on b
        return phi, m, on_ref, x
    return phi, -m, x, on_ref  # n_ab = −m: the incident points are on a


def reduce_manifold(phi: np.ndarray, x: np.ndarray, normal: np.ndarray, cap: int) -> np.ndarray:
    """Indices of at most ``cap`` points of one planar manifold to keep (eq. M5).

    The deepest point first; then the point farthest from it; then the one spanning the largest
    triangle with those two; then the one farthest outside that triangle (signed areas about
    ``normal``). Ties (within a relative ``TIE``, so that round-off cannot pick between a box's
    symmetric corners) go to the earlier point.

    Args:
        phi: (k,) signed distances [m]; x: (k, 3) points [m]; normal: (3,) the manifold's normal.
        cap: the most points to keep, >= 1.
    """
    k = phi.size
    if k <= cap:
        return np.arange(k)

    def first_max(v: np.ndarray) -> int:  # ties within round-off (a box's symmetric corners) go to the earlier
        top = v.max()
        return int(np.flatnonzero(v >= top - TIE * abs(top))[0])

    i0 = int(np.argmin(phi))
    keep = [i0]
    if cap >= 2:
        t = x - x[i0]
        t = t - np.outer(t @ normal, normal)  # in the tangent plane
        i1 = first_max(np.einsum("ij,ij->i", t, t))
        keep.append(i1)
        if cap >= 3:
            area = np.cross(t[i1], t) @ normal  # signed (twice) area of (x0, x1, x)
            i2 = first_max(np.abs(area))
            keep.append(i2)
            if cap >= 4:
                s = np.copysign(1.0, area[i2])
                tri = [(i0, i1), (i1, i2), (i2, i0)]
                out = np.full(k, -np.inf)
                for a, b in tri:  # distance outside each edge (positive = outside the triangle)
                    e = x[b] - x[a]
                    out = np.maximum(out, -s * (np.cross(e, x - x[a]) @ normal))
                out[keep] = -np.inf
                i3 = first_max(out)
                if out[i3] > 0.0:
                    keep.append(i3)
    if cap > len(keep):  # caps above 4: the deepest of the rest
        rest = [i for i in np.argsort(phi, kind="stable").tolist() if i not in keep]
        keep += rest[: cap - len(keep)]
    return np.array(sorted(set(keep)), dtype=np.int64)
