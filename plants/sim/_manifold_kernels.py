"""Compiled box contact manifolds (numba, ``cache=True``).

Profiled (benchmarks/bench_contact_manifold.py): with the numpy manifolds, detection was 60 % of
a box-mode step (cube-rest-5: 1.8 of 2.9 ms; one box on the ground: 270 µs against 20 µs for the
compiled corner spheres): a few dozen tiny numpy operations per pair. These kernels do the same
arithmetic in one pass. References: :func:`plants.sim.manifold.box_halfspace_manifold`,
:func:`~plants.sim.manifold.box_box_manifold` and :func:`~plants.sim.manifold.reduce_manifold`
(``ContactDetector.detect_numpy``); ``tests/test_contact_manifold.py`` compares them.
"""

from __future__ import annotations

import math

import numpy as np

from ._sap_kernels import HAVE_NUMBA, njit
from .manifold import FACE_ALIGNMENT, TIE

__all__ = ["HAVE_NUMBA", "box_halfspace_contacts", "box_box_contacts"]

_QU = np.array([-1.0, 1.0, 1.0, -1.0])
_QW = np.array([-1.0, -1.0, 1.0, 1.0])


@njit(cache=True)
def _first_max(v, skip):  # pragma: no cover - compiled
    """The first index whose value is within TIE (relative) of the largest (``skip``: excluded, −inf)."""
    top = -np.inf
    for i in range(v.shape[0]):
        if not skip[i] and v[i] > top:
            top = v[i]
    for i in range(v.shape[0]):
        if not skip[i] and v[i] >= top - TIE * abs(top):
            return i
    return -1


@njit(cache=True)
def _reduce(phi, x, count, nrm, cap, keep):  # pragma: no cover - compiled
    """reduce_manifold on the first ``count`` points; writes the kept indices (sorted) to
    ``keep`` and returns how many."""
    if count <= cap:
        for i in range(count):
            keep[i] = i
        return count
    flag = np.zeros(count, np.bool_)
    i0 = 0
    for i in range(1, count):
        if phi[i] < phi[i0]:
            i0 = i
    flag[i0] = True
    n_keep = 1
    if cap >= 2:
        t = np.empty((count, 3))
        for i in range(count):
            a0 = x[i, 0] - x[i0, 0]
            a1 = x[i, 1] - x[i0, 1]
            a2 = x[i, 2] - x[i0, 2]
            dn = a0 * nrm[0] + a1 * nrm[1] + a2 * nrm[2]
            t[i, 0] = a0 - dn * nrm[0]
            t[i, 1] = a1 - dn * nrm[1]
            t[i, 2] = a2 - dn * nrm[2]
        dd = np.empty(count)
        for i in range(count):
            dd[i] = t[i, 0] * t[i, 0] + t[i, 1] * t[i, 1] + t[i, 2] * t[i, 2]
        none = np.zeros(count, np.bool_)
        i1 = _first_max(dd, none)
        if not flag[i1]:
            n_keep += 1
        flag[i1] = True
        if cap >= 3:
            area = np.empty(count)
            for i in range(count):  # (t1 × t_i)·n
                c0 = t[i1, 1] * t[i, 2] - t[i1, 2] * t[i, 1]
                c1 = t[i1, 2] * t[i, 0] - t[i1, 0] * t[i, 2]
                c2 = t[i1, 0] * t[i, 1] - t[i1, 1] * t[i, 0]
                area[i] = c0 * nrm[0] + c1 * nrm[1] + c2 * nrm[2]
            i2 = _first_max(np.abs(area), none)
            if not flag[i2]:
                n_keep += 1
            flag[i2] = True
            if cap >= 4:
                s = 1.0 if area[i2] >= 0 else -1.0
                ea = (i0, i1, i2)
                eb = (i1, i2, i0)
                outs = np.full(count, -np.inf)
                for i in range(count):
                    if flag[i]:
                        continue
                    out = -np.inf
                    for e in range(3):
                        a, b = ea[e], eb[e]
                        e0 = x[b, 0] - x[a, 0]
                        e1 = x[b, 1] - x[a, 1]
                        e2 = x[b, 2] - x[a, 2]
                        d0 = x[i, 0] - x[a, 0]
                        d1 = x[i, 1] - x[a, 1]
                        d2 = x[i, 2] - x[a, 2]
                        c0 = e1 * d2 - e2 * d1
                        c1 = e2 * d0 - e0 * d2
                        c2 = e0 * d1 - e1 * d0
                        val = -s * (c0 * nrm[0] + c1 * nrm[1] + c2 * nrm[2])
                        if val > out:
                            out = val
                    outs[i] = out
                i3 = _first_max(outs, none)
                if i3 >= 0 and outs[i3] > 0.0:
                    flag[i3] = True
                    n_keep += 1
    if cap > n_keep:  # caps above 4: the deepest of the rest
        order = np.argsort(phi[:count], kind="mergesort")
        for i in order:
            if n_keep >= cap:
                break
            if not flag[i]:
                flag[i] = True
                n_keep += 1
    m = 0
    for i in range(count):
        if flag[i]:
            keep[m] = i
            m += 1
    return m


@njit(cache=True)
def box_halfspace_contacts(pairs_a, pairs_b, cap, R, p, radius, half, margin,
                           phi, normal, pa, pb, ia, ib):  # pragma: no cover - compiled
    """Broad phase + manifold (eq. M1) + reduction (eq. M5) of box / half-space pairs.

    Args:
        pairs_a: (n_p,) half-space geometries; pairs_b: (n_p,) box geometries; cap: (n_p,) caps.
        R, p, radius, half: poses (n_g, 3, 3), (n_g, 3), bounding radii and box half extents.
        margin: detection margin [m].
        phi, normal, pa, pb, ia, ib: outputs with room for 4 n_p contacts.

    Returns:
        The number of contacts written.
    """
    n = 0
    xs = np.empty((4, 3))
    ph = np.empty(4)
    keep = np.empty(4, np.int64)
    nrm = np.empty(3)
    dl = np.empty(3)
    loc = np.empty(3)
    for k in range(pairs_a.shape[0]):
        a = pairs_a[k]
        b = pairs_b[k]
        for i in range(3):
            nrm[i] = R[a, i, 2]
        dn = nrm[0] * (p[b, 0] - p[a, 0]) + nrm[1] * (p[b, 1] - p[a, 1]) + nrm[2] * (p[b, 2] - p[a, 2])
        if dn - radius[b] >= margin:
            continue
        for i in range(3):
            dl[i] = -(R[b, 0, i] * nrm[0] + R[b, 1, i] * nrm[1] + R[b, 2, i] * nrm[2])
        j = 0
        for i in range(1, 3):
            if abs(dl[i]) > abs(dl[j]):
                j = i
        u = (j + 1) % 3
        w = (j + 2) % 3
        cnt = 0
        for c in range(4):
            loc[j] = math.copysign(half[b, j], dl[j])
            loc[u] = _QU[c] * half[b, u]
            loc[w] = _QW[c] * half[b, w]
            f = 0.0
            for i in range(3):
                xi = R[b, i, 0] * loc[0] + R[b, i, 1] * loc[1] + R[b, i, 2] * loc[2] + p[b, i]
                xs[cnt, i] = xi
                f += (xi - p[a, i]) * nrm[i]
            if f < margin:
                ph[cnt] = f
                cnt += 1
        m = _reduce(ph, xs, cnt, nrm, cap[k], keep)
        for q in range(m):
            c = keep[q]
            phi[n] = ph[c]
            for i in range(3):
                normal[n, i] = nrm[i]
                pb[n, i] = xs[c, i]
                pa[n, i] = xs[c, i] - ph[c] * nrm[i]
            ia[n] = a
            ib[n] = b
            n += 1
    return n


@njit(cache=True)
def _clip(poly, m, axis, offset, out):  # pragma: no cover - compiled
    """Sutherland–Hodgman against axis·x ≤ offset; returns the new vertex count in ``out``."""
    s = np.empty(m)
    for i in range(m):
        s[i] = poly[i, 0] * axis[0] + poly[i, 1] * axis[1] + poly[i, 2] * axis[2] - offset
    n = 0
    for i in range(m):
        j = (i + 1) % m
        if s[i] <= 0.0:
            for c in range(3):
                out[n, c] = poly[i, c]
            n += 1
        if (s[i] < 0.0 < s[j]) or (s[j] < 0.0 < s[i]):
            t = s[i] / (s[i] - s[j])
            for c in range(3):
                out[n, c] = poly[i, c] + t * (poly[j, c] - poly[i, c])
            n += 1
    return n


@njit(cache=True)
def box_box_contacts(Ra, pa_, ha, Rb, pb_, hb, nab, margin, cap, phi, normal, pa, pb):  # pragma: no cover
    """Manifold of one box / box pair (eqs. M2-M5) given its GJK/EPA normal ``nab`` (a → b).

    Outputs ``phi`` (≥ 8,), ``normal``, ``pa``, ``pb`` (≥ 8, 3). Returns the number of contacts
    written, 0 when the pair is not a face contact (keep the GJK/EPA point then)."""
    ca = np.empty(3)
    cb = np.empty(3)
    for i in range(3):
        ca[i] = Ra[0, i] * nab[0] + Ra[1, i] * nab[1] + Ra[2, i] * nab[2]
        cb[i] = Rb[0, i] * nab[0] + Rb[1, i] * nab[1] + Rb[2, i] * nab[2]
    ia = 0
    ib = 0
    for i in range(1, 3):
        if abs(ca[i]) > abs(ca[ia]):
            ia = i
        if abs(cb[i]) > abs(cb[ib]):
            ib = i
    if max(abs(ca[ia]), abs(cb[ib])) < FACE_ALIGNMENT:
        return 0
    m = np.empty(3)
    if abs(ca[ia]) >= abs(cb[ib]) - 1e-9:
        R, p, h, j, ref_a = Ra, pa_, ha, ia, True
        sign = math.copysign(1.0, ca[ia])
        Ri, pi, hi = Rb, pb_, hb
    else:
        R, p, h, j, ref_a = Rb, pb_, hb, ib, False
        sign = -math.copysign(1.0, cb[ib])
        Ri, pi, hi = Ra, pa_, ha
    for i in range(3):
        m[i] = sign * R[i, j]
    # incident face: the other box's face most aligned with −m
    d = np.empty(3)
    for i in range(3):
        d[i] = -(Ri[0, i] * m[0] + Ri[1, i] * m[1] + Ri[2, i] * m[2])
    jj = 0
    for i in range(1, 3):
        if abs(d[i]) > abs(d[jj]):
            jj = i
    u, w = (jj + 1) % 3, (jj + 2) % 3
    poly = np.empty((8, 3))
    buf = np.empty((8, 3))
    loc = np.empty(3)
    for c in range(4):
        loc[jj] = math.copysign(hi[jj], d[jj])
        loc[u] = _QU[c] * hi[u]
        loc[w] = _QW[c] * hi[w]
        for i in range(3):
            poly[c, i] = loc[0] * Ri[i, 0] + loc[1] * Ri[i, 1] + loc[2] * Ri[i, 2] + pi[i]
    cnt = 4
    e = np.empty(3)
    for k in ((j + 1) % 3, (j + 2) % 3):
        for i in range(3):
            e[i] = R[i, k]
        off = e[0] * p[0] + e[1] * p[1] + e[2] * p[2]
        cnt = _clip(poly, cnt, e, off + h[k], buf)
        for i in range(3):
            e[i] = -R[i, k]
        cnt = _clip(buf[:cnt], cnt, e, -off + h[k], poly)
        if cnt == 0:
            return 0
    c0 = np.empty(3)
    for i in range(3):
        c0[i] = p[i] + h[j] * m[i]
    ph = np.empty(cnt)
    xs = np.empty((cnt, 3))
    n_in = 0
    for q in range(cnt):
        f = (poly[q, 0] - c0[0]) * m[0] + (poly[q, 1] - c0[1]) * m[1] + (poly[q, 2] - c0[2]) * m[2]
        if f < margin:
            ph[n_in] = f
            for i in range(3):
                xs[n_in, i] = poly[q, i]
            n_in += 1
    if n_in == 0:
        return 0
    # reduce on the incident points (= point_b when the reference is a, as the reference does)
    on_ref = np.empty((n_in, 3))
    for q in range(n_in):
        for i in range(3):
            on_ref[q, i] = xs[q, i] - ph[q] * m[i]
    nn = np.empty(3)
    for i in range(3):
        nn[i] = m[i] if ref_a else -m[i]
    keep = np.empty(8, np.int64)
    pts_b = xs if ref_a else on_ref
    kept = _reduce(ph, pts_b, n_in, nn, cap, keep)
    for q in range(kept):
        c = keep[q]
        phi[q] = ph[c]
        for i in range(3):
            normal[q, i] = nn[i]
            if ref_a:
                pa[q, i] = on_ref[c, i]
                pb[q, i] = xs[c, i]
            else:
                pa[q, i] = xs[c, i]
                pb[q, i] = on_ref[c, i]
    return kept
