"""Compiled local step of Stable Neo-Hookean (numba, ``cache=True``).

Profiling the ``deformable-slope`` scene showed the singular-value Newton solve of
:class:`~plants.sim.deformable.materials.StableNeoHookean` (batched numpy: ``eigh``, ``einsum``
and the backtracking loop over element stacks) as most of the step. This kernel runs the same
algorithm element by element: projected Newton on argmin_σ ψ(σ) + w/2‖σ − ŝ‖² with an
eigenvalue-clamped Hessian and Armijo backtracking. The numpy reference is
:func:`plants.sim.deformable.materials._newton_sigma`; ``tests/test_deformable_materials.py``
compares them.
"""

from __future__ import annotations

import numpy as np

from lcs._numba import HAVE_NUMBA, njit

__all__ = ["HAVE_NUMBA", "snh_local_sigma"]


@njit(cache=True)
def _snh_f(s, sh, m, l, a, w):  # pragma: no cover - compiled
    d = s.size
    ic = 0.0
    J = 1.0
    r = 0.0
    for i in range(d):
        ic += s[i] * s[i]
        J *= s[i]
        r += (s[i] - sh[i]) ** 2
    return 0.5 * m * (ic - d) + 0.5 * l * (J - a) ** 2 - 0.5 * m * np.log(ic + 1.0) + 0.5 * w * r


@njit(cache=True)
def _solve_pd(H, g, step, floor):  # pragma: no cover - compiled
    """step = −H⁻¹g by Cholesky when every pivot of H exceeds ``floor`` (then H's smallest
    eigenvalue is positive; the eigenvalue clamp at ``floor`` would only matter below it — the
    fallback handles that case); False otherwise."""
    d = g.size
    L = np.zeros((3, 3))
    for j in range(d):
        acc = H[j, j]
        for k in range(j):
            acc -= L[j, k] * L[j, k]
        if acc <= floor:
            return False
        L[j, j] = np.sqrt(acc)
        for i in range(j + 1, d):
            acc = H[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / L[j, j]
    y = np.empty(3)
    for i in range(d):
        acc = -g[i]
        for k in range(i):
            acc -= L[i, k] * y[k]
        y[i] = acc / L[i, i]
    for i in range(d - 1, -1, -1):
        acc = y[i]
        for k in range(i + 1, d):
            acc -= L[k, i] * step[k]
        step[i] = acc / L[i, i]
    return True


@njit(cache=True)
def snh_local_sigma(s_hat, m, l, a, w, iterations=20, tol=1e-12):  # pragma: no cover - compiled
    """argmin_σ ψ_SNH(σ) + w/2‖σ − ŝ‖² per row of s_hat (k, d), d = 2 or 3; (μ', λ', α) = (m, l, a)."""
    k, d = s_hat.shape
    out = s_hat.copy()
    g = np.empty(d)
    H = np.empty((d, d))
    dJ = np.empty(d)
    trial = np.empty(d)
    step = np.empty(d)
    scale = max(w, 1e-300)
    for e in range(k):
        s = out[e]
        sh = s_hat[e]
        for _ in range(iterations):
            ic = 0.0
            J = 1.0
            for i in range(d):
                ic += s[i] * s[i]
                J *= s[i]
            if d == 3:
                dJ[0] = s[1] * s[2]
                dJ[1] = s[0] * s[2]
                dJ[2] = s[0] * s[1]
            else:
                dJ[0] = s[1]
                dJ[1] = s[0]
            c1 = m * (1.0 - 1.0 / (ic + 1.0))
            c2 = 2.0 * m / (ic + 1.0) ** 2
            gn = 0.0
            smax = 0.0
            for i in range(d):
                g[i] = c1 * s[i] + l * (J - a) * dJ[i] + w * (s[i] - sh[i])
                gn += g[i] * g[i]
                smax = max(smax, abs(s[i]))
            if np.sqrt(gn) <= tol * scale * (1.0 + smax):
                break
            for i in range(d):
                for j in range(d):
                    H[i, j] = c2 * s[i] * s[j] + l * dJ[i] * dJ[j]
                    if i == j:
                        H[i, j] += c1 + w
                    elif d == 3:
                        H[i, j] += l * (J - a) * s[3 - i - j]
                    else:
                        H[i, j] += l * (J - a)
            if not _solve_pd(H, g, step, 1e-6 * scale):  # indefinite: clamp the eigenvalues
                lam, Q = np.linalg.eigh(H)
                step[:] = 0.0
                for q in range(d):
                    lq = max(lam[q], 1e-6 * scale)
                    proj = 0.0
                    for i in range(d):
                        proj += Q[i, q] * g[i]
                    for i in range(d):
                        step[i] -= Q[i, q] * proj / lq
            f0 = _snh_f(s, sh, m, l, a, w)
            slope = 0.0
            for i in range(d):
                slope += g[i] * step[i]
            slack = 1e-13 * (abs(f0) + 1.0)
            t = 1.0
            for _ in range(30):
                for i in range(d):
                    trial[i] = s[i] + t * step[i]
                if _snh_f(trial, sh, m, l, a, w) <= f0 + 1e-4 * t * slope + slack:
                    break
                t *= 0.5
            for i in range(d):
                s[i] += t * step[i]
    return out


@njit(cache=True)
def polar_rotations(F, det_floor=1e-8):  # pragma: no cover - compiled
    """Rotation factors R of F = R S (polar decomposition) for a stack F (m, 3, 3), by Higham's
    scaled Newton iteration X ← ½(γX + X⁻ᵀ/γ), γ = (‖X⁻¹‖_F/‖X‖_F)^½. Returns (R, ok): ``ok[e]``
    is False where det F_e ≤ det_floor·‖F_e‖³ (inverted or nearly flat elements: Newton would
    converge to a reflection); the caller falls back to the signed SVD there."""
    m = F.shape[0]
    R = np.empty_like(F)
    ok = np.ones(m, np.bool_)
    X = np.empty((3, 3))
    Y = np.empty((3, 3))
    for e in range(m):
        nrm = 0.0
        for i in range(3):
            for j in range(3):
                X[i, j] = F[e, i, j]
                nrm += X[i, j] * X[i, j]
        det = (X[0, 0] * (X[1, 1] * X[2, 2] - X[1, 2] * X[2, 1]) - X[0, 1] * (X[1, 0] * X[2, 2] - X[1, 2] * X[2, 0])
               + X[0, 2] * (X[1, 0] * X[2, 1] - X[1, 1] * X[2, 0]))
        if not det > det_floor * nrm ** 1.5:
            ok[e] = False
            continue
        for _ in range(30):
            det = (X[0, 0] * (X[1, 1] * X[2, 2] - X[1, 2] * X[2, 1]) - X[0, 1] * (X[1, 0] * X[2, 2] - X[1, 2] * X[2, 0])
                   + X[0, 2] * (X[1, 0] * X[2, 1] - X[1, 1] * X[2, 0]))
            # X⁻ᵀ = cof(X) / det
            Y[0, 0] = (X[1, 1] * X[2, 2] - X[1, 2] * X[2, 1]) / det
            Y[0, 1] = -(X[1, 0] * X[2, 2] - X[1, 2] * X[2, 0]) / det
            Y[0, 2] = (X[1, 0] * X[2, 1] - X[1, 1] * X[2, 0]) / det
            Y[1, 0] = -(X[0, 1] * X[2, 2] - X[0, 2] * X[2, 1]) / det
            Y[1, 1] = (X[0, 0] * X[2, 2] - X[0, 2] * X[2, 0]) / det
            Y[1, 2] = -(X[0, 0] * X[2, 1] - X[0, 1] * X[2, 0]) / det
            Y[2, 0] = (X[0, 1] * X[1, 2] - X[0, 2] * X[1, 1]) / det
            Y[2, 1] = -(X[0, 0] * X[1, 2] - X[0, 2] * X[1, 0]) / det
            Y[2, 2] = (X[0, 0] * X[1, 1] - X[0, 1] * X[1, 0]) / det
            nx = 0.0
            ny = 0.0
            for i in range(3):
                for j in range(3):
                    nx += X[i, j] * X[i, j]
                    ny += Y[i, j] * Y[i, j]
            g = (ny / nx) ** 0.25
            diff = 0.0
            for i in range(3):
                for j in range(3):
                    v = 0.5 * (g * X[i, j] + Y[i, j] / g)
                    diff += (v - X[i, j]) ** 2
                    X[i, j] = v
            if diff < 1e-28:
                break
        for i in range(3):
            for j in range(3):
                R[e, i, j] = X[i, j]
    return R, ok
