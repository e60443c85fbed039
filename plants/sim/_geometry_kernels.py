"""Compiled contact-detection kernels (numba, ``cache=True``).

After the SAP solve was compiled, the closed-form narrow phase (half-space/sphere,
sphere/sphere, box/sphere) and the contact frames were the largest per-step cost of the small
scenes: ~60 small numpy operations per step for the 5-cube stack (200 candidate pairs). These
kernels do the broad and narrow phase of those pair kinds in one pass over the pairs.
``bounding_candidates`` is the broad phase of the remaining (GJK/EPA) pairs: for the 27 A1s of
``a1-drop-27`` (124 k such pairs) numpy took ~28 ms per detection.

References: :meth:`plants.sim.geometry.ContactDetector.detect_numpy` and
:func:`plants.sim.geometry.tangent_basis_numpy`; ``tests/test_sim.py`` compares them.
"""

from __future__ import annotations

import math

import numpy as np

from ._sap_kernels import HAVE_NUMBA, njit

__all__ = ["HAVE_NUMBA", "closed_form_contacts", "bounding_candidates", "tangent_frames", "contact_jacobian"]


@njit(cache=True)
def closed_form_contacts(pairs_a, pairs_b, kinds, R, p, radius, rad, half, margin,
                         phi, normal, pa, pb, ia, ib):  # pragma: no cover - compiled
    """Broad + narrow phase of the closed-form pairs, in the order given.

    Args:
        pairs_a: (n_p,) geometry a of each pair (half-space, box or sphere).
        pairs_b: (n_p,) geometry b of each pair (a sphere).
        kinds: (n_p,) 0 = half-space/sphere, 1 = sphere/sphere, 2 = box/sphere.
        R: (n_g, 3, 3) world orientations of the geometries.
        p: (n_g, 3) world positions [m].
        radius: (n_g,) bounding radii [m].
        rad: (n_g,) sphere radii [m] (0 for other shapes).
        half: (n_g, 3) box half extents [m].
        margin: detection margin [m].
        phi: output (≥ n_p,) signed distances.
        normal: output (≥ n_p, 3) unit normals from a to b.
        pa: output (≥ n_p, 3) witness points on a.
        pb: output (≥ n_p, 3) witness points on b.
        ia: output (≥ n_p,) geometry a of each contact.
        ib: output (≥ n_p,) geometry b of each contact.

    Returns:
        The number of contacts written (signed distance < margin).
    """
    n = 0
    for k in range(pairs_a.shape[0]):
        a = pairs_a[k]
        b = pairs_b[k]
        kind = kinds[k]
        d0 = p[b, 0] - p[a, 0]
        d1 = p[b, 1] - p[a, 1]
        d2 = p[b, 2] - p[a, 2]
        if kind == 0:  # half-space (outward normal = frame z) / sphere
            n0 = R[a, 0, 2]
            n1 = R[a, 1, 2]
            n2 = R[a, 2, 2]
            dn = n0 * d0 + n1 * d1 + n2 * d2
            if dn - radius[b] >= margin:  # broad phase (plane exactly)
                continue
            r = rad[b]
            ph = dn - r
            if ph >= margin:
                continue
            q0 = p[b, 0] - r * n0
            q1 = p[b, 1] - r * n1
            q2 = p[b, 2] - r * n2
            pb[n, 0] = q0
            pb[n, 1] = q1
            pb[n, 2] = q2
            pa[n, 0] = q0 - ph * n0
            pa[n, 1] = q1 - ph * n1
            pa[n, 2] = q2 - ph * n2
        else:
            dist = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if dist - radius[a] - radius[b] >= margin:  # broad phase (bounding spheres)
                continue
            rb = rad[b]
            if kind == 1:  # sphere / sphere
                if dist > 0.0:
                    n0 = d0 / dist
                    n1 = d1 / dist
                    n2 = d2 / dist
                else:
                    n0 = 0.0
                    n1 = 0.0
                    n2 = 1.0
                ra = rad[a]
                ph = dist - ra - rb
                if ph >= margin:
                    continue
                pa[n, 0] = p[a, 0] + ra * n0
                pa[n, 1] = p[a, 1] + ra * n1
                pa[n, 2] = p[a, 2] + ra * n2
            else:  # box / sphere: closest point of the box in its frame
                c = np.empty(3)
                q = np.empty(3)
                nl = np.zeros(3)
                for i in range(3):
                    c[i] = R[a, 0, i] * d0 + R[a, 1, i] * d1 + R[a, 2, i] * d2  # Rᵀ (c − p_box)
                    h = half[a, i]
                    q[i] = min(max(c[i], -h), h)
                e0 = c[0] - q[0]
                e1 = c[1] - q[1]
                e2 = c[2] - q[2]
                de = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
                if de > 0.0:
                    nl[0] = e0 / de
                    nl[1] = e1 / de
                    nl[2] = e2 / de
                    signed = de
                else:  # centre inside: leave through the nearest face (first minimum)
                    ax = 0
                    best = half[a, 0] - abs(c[0])
                    for i in range(1, 3):
                        depth = half[a, i] - abs(c[i])
                        if depth < best:
                            best = depth
                            ax = i
                    sgn = 1.0 if c[ax] >= 0.0 else -1.0
                    nl[ax] = sgn
                    q[ax] = sgn * half[a, ax]
                    signed = -best
                ph = signed - rb
                if ph >= margin:
                    continue
                n0 = R[a, 0, 0] * nl[0] + R[a, 0, 1] * nl[1] + R[a, 0, 2] * nl[2]
                n1 = R[a, 1, 0] * nl[0] + R[a, 1, 1] * nl[1] + R[a, 1, 2] * nl[2]
                n2 = R[a, 2, 0] * nl[0] + R[a, 2, 1] * nl[1] + R[a, 2, 2] * nl[2]
                for i in range(3):
                    pa[n, i] = p[a, i] + R[a, i, 0] * q[0] + R[a, i, 1] * q[1] + R[a, i, 2] * q[2]
            pb[n, 0] = p[b, 0] - rb * n0
            pb[n, 1] = p[b, 1] - rb * n1
            pb[n, 2] = p[b, 2] - rb * n2
        phi[n] = ph
        normal[n, 0] = n0
        normal[n, 1] = n1
        normal[n, 2] = n2
        ia[n] = a
        ib[n] = b
        n += 1
    return n


@njit(cache=True)
def bounding_candidates(pairs_a, pairs_b, mode, R, p, radius, margin, out):  # pragma: no cover - compiled
    """Broad phase of the GJK/EPA pairs: the positions ``k`` whose bounding volumes come closer
    than ``margin``, in increasing order, into ``out``.

    Args:
        pairs_a, pairs_b: (n_p,) geometries of each pair.
        mode: (n_p,) 0 = bounding spheres, 1 = side a is a half-space (exact plane distance
            nᵀ(p_b − p_a) − r_b, n the frame's z axis), 2 = never (two half-spaces).
        R, p: (n_g, 3, 3), (n_g, 3) world poses of the geometries.
        radius: (n_g,) bounding radii [m].
        margin: detection margin [m].
        out: output (≥ n_p,) int64.

    Returns:
        The number of candidates written. Reference: the ``cand`` expression of
        :meth:`plants.sim.geometry.ContactDetector.detect_numpy`.
    """
    n = 0
    for k in range(pairs_a.shape[0]):
        m = mode[k]
        if m == 2:
            continue
        a = pairs_a[k]
        b = pairs_b[k]
        d0 = p[b, 0] - p[a, 0]
        d1 = p[b, 1] - p[a, 1]
        d2 = p[b, 2] - p[a, 2]
        if m == 1:
            d = R[a, 0, 2] * d0 + R[a, 1, 2] * d1 + R[a, 2, 2] * d2 - radius[b]
        else:
            d = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - radius[a] - radius[b]
        if d < margin:
            out[n] = k
            n += 1
    return n


@njit(cache=True)
def tangent_frames(nrm, out):  # pragma: no cover - compiled
    """Contact frames with rows (t1, t2, n) into ``out`` (n_c, 3, 3).

    Same construction as :func:`plants.sim.geometry.tangent_basis_numpy`: t1 = e × n normalized,
    e the world axis least aligned with n (first minimum); t2 = n × t1.
    """
    for k in range(nrm.shape[0]):
        n0 = nrm[k, 0]
        n1 = nrm[k, 1]
        n2 = nrm[k, 2]
        a0 = abs(n0)
        a1 = abs(n1)
        a2 = abs(n2)
        if a0 <= a1 and a0 <= a2:  # e = x: e × n = (0, −n2, n1)
            t0, t1, t2 = 0.0, -n2, n1
        elif a1 <= a2:  # e = y: (n2, 0, −n0)
            t0, t1, t2 = n2, 0.0, -n0
        else:  # e = z: (−n1, n0, 0)
            t0, t1, t2 = -n1, n0, 0.0
        s = 1.0 / math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
        t0 *= s
        t1 *= s
        t2 *= s
        out[k, 0, 0] = t0
        out[k, 0, 1] = t1
        out[k, 0, 2] = t2
        out[k, 1, 0] = n1 * t2 - n2 * t1
        out[k, 1, 1] = n2 * t0 - n0 * t2
        out[k, 1, 2] = n0 * t1 - n1 * t0
        out[k, 2, 0] = n0
        out[k, 2, 1] = n1
        out[k, 2, 2] = n2


@njit(cache=True)
def contact_jacobian(F, point, Jw, support, slot_a, slot_b, out):  # pragma: no cover - compiled
    """Contact Jacobian rows into ``out`` (3 n_c, n_v), zero outside the supports.

    Row r of contact i: f·(v_o,b − v_o,a) + (p × f)·(ω_b − ω_a) with f = F[i, r] (frame row), p the
    contact point and the world-frame joint Jacobians data.J restricted column-wise to each joint's
    support (0/1 rows of ``support`` for the joints ``slot_a[i]``, ``slot_b[i]``):
    J_b − J_a = Jw · (support_b − support_a). Reference: the numpy expression in
    :meth:`plants.sim.stepper.Simulator._contact_jacobian_numpy`.
    """
    n_c = F.shape[0]
    n_v = Jw.shape[1]
    for i in range(n_c):
        px = point[i, 0]
        py = point[i, 1]
        pz = point[i, 2]
        for r in range(3):
            fx = F[i, r, 0]
            fy = F[i, r, 1]
            fz = F[i, r, 2]
            cx = py * fz - pz * fy
            cy = pz * fx - px * fz
            cz = px * fy - py * fx
            row = 3 * i + r
            for k in range(n_v):
                m = support[slot_b[i], k] - support[slot_a[i], k]
                if m == 0.0:
                    out[row, k] = 0.0
                else:
                    out[row, k] = m * (fx * Jw[0, k] + fy * Jw[1, k] + fz * Jw[2, k]
                                       + cx * Jw[3, k] + cy * Jw[4, k] + cz * Jw[5, k])
