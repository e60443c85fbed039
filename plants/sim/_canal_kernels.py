"""Compiled line-search derivatives of CANAL (numba, ``cache=True``).

CANAL's exact line search (seed 000 eq. 26) evaluates, for a Newton direction ``d``,

    φ'(α)  = (Âv̂ − b̂)ᵀd + α dᵀÂd − Σ_i (J_i d)ᵀ λ_i(α),
    φ''(α) = dᵀÂd + Σ_i β_i (J_i d)ᵀ ∂Π_i (J_i d),
    λ_i(α) = Π_i(−β_i (J_i v̂ + α J_i d + ẽ_i) − u_i),

about ten times per Newton step. With numpy each evaluation built the projections and the (n_c, 3,
3) Jacobians in ~25 array operations (≈ 0.1 ms on 8 A1s, 67 contacts); profiling CANAL on the A1
drop put 55 % of its time there. :func:`line_derivatives` computes the two contact sums in one
pass over the contacts, the quadratic form of ∂Π in closed form (no 3×3 block is formed). The
reference is the numpy path of :func:`plants.sim.contact_laws.project_cone_with_jacobian`
(``tests/test_canal_kernels.py`` compares both).
"""

from __future__ import annotations

import math

from ._sap_kernels import HAVE_NUMBA, njit

__all__ = ["HAVE_NUMBA", "line_derivatives", "island_newton_matrices", "island_cholesky_solve",
           "project_cone_into"]


@njit(cache=True)
def line_derivatives(alpha, jv, jd, e, u, bv, mu, rho):  # pragma: no cover - compiled
    """The contact sums of φ'(α) and φ''(α) (see the module docstring).

    Args:
        alpha: step length.
        jv, jd: (n_c, 3) ``J v̂`` and ``J d`` per contact (t1, t2, n).
        e: (n_c, 3) the frozen bias ẽ; u: (n_c, 3) scaled multipliers.
        bv: (n_c,) per-contact penalties β_i; mu: (n_c,) friction; rho: (n_c,) ``1 + β_i c_i``.

    Returns:
        ``(Σ_i (J_i d)ᵀ λ_i(α), Σ_i β_i (J_i d)ᵀ ∂Π_i (J_i d))``, with the regions of
        :func:`~plants.sim.contact_laws.project_cone_with_jacobian` (stick, open, slip).
    """
    s1 = 0.0
    s2 = 0.0
    for i in range(jv.shape[0]):
        b = bv[i]
        a0 = jd[i, 0]
        a1 = jd[i, 1]
        a2 = jd[i, 2]
        x0 = -b * (jv[i, 0] + alpha * a0 + e[i, 0]) - u[i, 0]
        x1 = -b * (jv[i, 1] + alpha * a1 + e[i, 1]) - u[i, 1]
        xn = -b * (jv[i, 2] + alpha * a2 + e[i, 2]) - u[i, 2]
        s = math.hypot(x0, x1)
        m = mu[i]
        r = rho[i]
        if xn >= 0.0 and s * r <= m * xn:  # stick: λ = (x_t, x_n/ρ), ∂Π = diag(1, 1, 1/ρ)
            s1 += a0 * x0 + a1 * x1 + a2 * (xn / r)
            s2 += b * (a0 * a0 + a1 * a1 + a2 * a2 / r)
        elif xn + m * s > 0.0:  # slip (s > 0 here): λ on the cone's surface
            d = m * m + r
            t0 = x0 / s
            t1 = x1 / s
            ln = (xn + m * s) / d
            at = a0 * t0 + a1 * t1
            s1 += m * ln * at + a2 * ln
            # ∂Π = [(μ²/d) P + (μ λ_n / s)(I − P), (μ/d) t; (μ/d) tᵀ, 1/d], P = t tᵀ
            s2 += b * ((m * m / d) * at * at + (m * ln / s) * (a0 * a0 + a1 * a1 - at * at)
                       + 2.0 * (m / d) * at * a2 + a2 * a2 / d)
        # open: λ = 0, ∂Π = 0
    return s1, s2


@njit(cache=True)
def island_newton_matrices(A, Jc, Gb, dofs, dof_ptr, rows, row_ptr, H, h_ptr, cols):  # pragma: no cover
    """The lower triangles of the Newton matrices ``H_k = Â + Σ_i J_iᵀ Gb_i J_i`` (eq. 24) of all
    islands, each on its own dofs and from its own contacts. A contact's rows are nonzero on the
    dofs of its one or two trees only, so it adds its outer product on those columns.

    Args:
        A: (n_v, n_v) ``Â``; Jc: (n_c, 3, n_v) contact rows; Gb: (n_c, 3, 3) ``β_i ∂Π_i`` (symmetric).
        dofs, dof_ptr: island k's dofs are ``dofs[dof_ptr[k]:dof_ptr[k + 1]]`` (m_k of them);
        rows, row_ptr: its contacts likewise.
        H: (Σ m_k²,) output: island k's matrix, row-major, at ``h_ptr[k]`` (upper triangle not written).
        cols: (max m_k,) int scratch.
    """
    for k in range(dof_ptr.size - 1):
        d0 = dof_ptr[k]
        m = dof_ptr[k + 1] - d0
        h0 = h_ptr[k]
        for a in range(m):
            ga = dofs[d0 + a]
            for b in range(a + 1):
                H[h0 + a * m + b] = A[ga, dofs[d0 + b]]
        for q in range(row_ptr[k], row_ptr[k + 1]):
            i = rows[q]
            n = 0
            for a in range(m):  # the island columns the contact's rows touch (ascending)
                ga = dofs[d0 + a]
                if Jc[i, 0, ga] != 0.0 or Jc[i, 1, ga] != 0.0 or Jc[i, 2, ga] != 0.0:
                    cols[n] = a
                    n += 1
            for qa in range(n):
                a = cols[qa]
                ga = dofs[d0 + a]
                j0 = Jc[i, 0, ga]
                j1 = Jc[i, 1, ga]
                j2 = Jc[i, 2, ga]
                g0 = Gb[i, 0, 0] * j0 + Gb[i, 0, 1] * j1 + Gb[i, 0, 2] * j2  # (Gb_i J_i)[:, a]
                g1 = Gb[i, 1, 0] * j0 + Gb[i, 1, 1] * j1 + Gb[i, 1, 2] * j2
                g2 = Gb[i, 2, 0] * j0 + Gb[i, 2, 1] * j1 + Gb[i, 2, 2] * j2
                for qb in range(qa + 1):
                    b = cols[qb]
                    gb = dofs[d0 + b]
                    H[h0 + a * m + b] += g0 * Jc[i, 0, gb] + g1 * Jc[i, 1, gb] + g2 * Jc[i, 2, gb]


@njit(cache=True)
def island_cholesky_solve(H, h_ptr, dofs, dof_ptr, islands, r, d):  # pragma: no cover - compiled
    """``d = −H_k⁻¹ r`` on the dofs of each island k in ``islands``, by dense Cholesky of the lower
    triangle written by :func:`island_newton_matrices` (in place). For small islands: a LAPACK call
    per island costs more than the factorization itself.

    Returns:
        0, or k + 1 for the first island k whose matrix is not positive definite.
    """
    for k in islands:
        d0 = dof_ptr[k]
        m = dof_ptr[k + 1] - d0
        h0 = h_ptr[k]
        for a in range(m):  # H = L Lᵀ (lower triangle)
            for b in range(a + 1):
                s = H[h0 + a * m + b]
                for c in range(b):
                    s -= H[h0 + a * m + c] * H[h0 + b * m + c]
                if a == b:
                    if not s > 0.0:
                        return k + 1
                    H[h0 + a * m + a] = math.sqrt(s)
                else:
                    H[h0 + a * m + b] = s / H[h0 + b * m + b]
        for a in range(m):  # L y = −r
            s = -r[dofs[d0 + a]]
            for c in range(a):
                s -= H[h0 + a * m + c] * d[dofs[d0 + c]]
            d[dofs[d0 + a]] = s / H[h0 + a * m + a]
        for a in range(m - 1, -1, -1):  # Lᵀ d = y
            s = d[dofs[d0 + a]]
            for c in range(a + 1, m):
                s -= H[h0 + c * m + a] * d[dofs[d0 + c]]
            d[dofs[d0 + a]] = s / H[h0 + a * m + a]
    return 0


@njit(cache=True)
def project_cone_into(x, mu, rho, lam, G):  # pragma: no cover - compiled
    """The proximal cone projection ``λ = Π(x)`` per contact and its Jacobian ∂Π (seed 000 eq. 17,
    23) into ``lam`` (n_c, 3) and ``G`` (n_c, 3, 3): the compiled twin of
    :func:`~plants.sim.contact_laws.project_cone_with_jacobian` (same regions and formulas)."""
    for i in range(x.shape[0]):
        x0 = x[i, 0]
        x1 = x[i, 1]
        xn = x[i, 2]
        s = math.hypot(x0, x1)
        m = mu[i]
        r = rho[i]
        for a in range(3):
            for b in range(3):
                G[i, a, b] = 0.0
        if xn >= 0.0 and s * r <= m * xn:  # stick
            lam[i, 0] = x0
            lam[i, 1] = x1
            lam[i, 2] = xn / r
            G[i, 0, 0] = 1.0
            G[i, 1, 1] = 1.0
            G[i, 2, 2] = 1.0 / r
        elif xn + m * s > 0.0:  # slip (s > 0)
            d = m * m + r
            t0 = x0 / s
            t1 = x1 / s
            ln = (xn + m * s) / d
            lam[i, 0] = m * ln * t0
            lam[i, 1] = m * ln * t1
            lam[i, 2] = ln
            c_p = m * m / d
            c_q = m * ln / s
            G[i, 0, 0] = c_p * t0 * t0 + c_q * (1.0 - t0 * t0)
            G[i, 0, 1] = G[i, 1, 0] = c_p * t0 * t1 - c_q * t0 * t1
            G[i, 1, 1] = c_p * t1 * t1 + c_q * (1.0 - t1 * t1)
            G[i, 0, 2] = G[i, 2, 0] = m / d * t0
            G[i, 1, 2] = G[i, 2, 1] = m / d * t1
            G[i, 2, 2] = 1.0 / d
        else:  # open
            lam[i, 0] = 0.0
            lam[i, 1] = 0.0
            lam[i, 2] = 0.0
