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


@njit(cache=True)
def _sym_eig3(A, V):  # pragma: no cover - compiled
    """Cyclic Jacobi on a symmetric 3×3 A (overwritten: its diagonal ends as the eigenvalues);
    V receives the eigenvectors as columns."""
    for i in range(3):
        for j in range(3):
            V[i, j] = 1.0 if i == j else 0.0
    scale = abs(A[0, 0]) + abs(A[1, 1]) + abs(A[2, 2]) + 1e-300
    for _ in range(50):
        off = A[0, 1] * A[0, 1] + A[0, 2] * A[0, 2] + A[1, 2] * A[1, 2]
        if off <= 1e-32 * scale * scale:
            break
        for p, q in ((0, 1), (0, 2), (1, 2)):
            apq = A[p, q]
            if abs(apq) <= 1e-300:
                continue
            theta = (A[q, q] - A[p, p]) / (2.0 * apq)
            t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + np.sqrt(theta * theta + 1.0))
            c = 1.0 / np.sqrt(t * t + 1.0)
            s = t * c
            for k in range(3):  # A ← A J
                akp, akq = A[k, p], A[k, q]
                A[k, p] = c * akp - s * akq
                A[k, q] = s * akp + c * akq
            for k in range(3):  # A ← Jᵀ A
                apk, aqk = A[p, k], A[q, k]
                A[p, k] = c * apk - s * aqk
                A[q, k] = s * apk + c * aqk
            for k in range(3):
                vkp, vkq = V[k, p], V[k, q]
                V[k, p] = c * vkp - s * vkq
                V[k, q] = s * vkp + c * vkq


@njit(cache=True)
def svd3_positive(F, det_floor=1e-8):  # pragma: no cover - compiled
    """F = U diag(σ) Vᵀ for a stack (m, 3, 3) with det F > det_floor ‖F‖³: F = R S (polar, scaled
    Newton), S = V diag(σ) Vᵀ (Jacobi), U = R V; U, V rotations, σ > 0 descending. Returns
    (U, σ, Vh, ok); rows with ``ok`` False (inverted or flat) are left for the signed SVD."""
    m = F.shape[0]
    R, ok = polar_rotations(F, det_floor)
    U = np.zeros_like(F)
    Vh = np.zeros_like(F)
    sig = np.zeros((m, 3))
    S = np.empty((3, 3))
    V = np.empty((3, 3))
    for e in range(m):
        if not ok[e]:
            continue
        for i in range(3):
            for j in range(3):
                acc = 0.0
                for k in range(3):
                    acc += R[e, k, i] * F[e, k, j]
                S[i, j] = acc
        for i in range(3):  # symmetrize round-off
            for j in range(i + 1, 3):
                a = 0.5 * (S[i, j] + S[j, i])
                S[i, j] = a
                S[j, i] = a
        _sym_eig3(S, V)
        o0, o1, o2 = 0, 1, 2  # descending order of the eigenvalues (3-element sort)
        if S[o0, o0] < S[o1, o1]:
            o0, o1 = o1, o0
        if S[o1, o1] < S[o2, o2]:
            o1, o2 = o2, o1
        if S[o0, o0] < S[o1, o1]:
            o0, o1 = o1, o0
        for a in range(3):
            c = o0 if a == 0 else (o1 if a == 1 else o2)
            sig[e, a] = S[c, c]
            for i in range(3):
                Vh[e, a, i] = V[i, c]
        # make V a rotation (the column permutation and Jacobi keep |det| = 1)
        dv = (Vh[e, 0, 0] * (Vh[e, 1, 1] * Vh[e, 2, 2] - Vh[e, 1, 2] * Vh[e, 2, 1])
              - Vh[e, 0, 1] * (Vh[e, 1, 0] * Vh[e, 2, 2] - Vh[e, 1, 2] * Vh[e, 2, 0])
              + Vh[e, 0, 2] * (Vh[e, 1, 0] * Vh[e, 2, 1] - Vh[e, 1, 1] * Vh[e, 2, 0]))
        if dv < 0:
            for i in range(3):
                Vh[e, 2, i] = -Vh[e, 2, i]
        for i in range(3):
            for a in range(3):
                acc = 0.0
                for k in range(3):
                    acc += R[e, i, k] * Vh[e, a, k]
                U[e, i, a] = acc
    return U, sig, Vh, ok
