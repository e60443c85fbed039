"""Compiled per-contact kernels of SAP (numba, ``cache=True``).

Profiling the simulator on small scenes (5-cube stack: 36 contacts; Franka push: 1-3 contacts)
showed the SAP solve dominated by the *number* of small numpy operations, not by their size: the
region masks, fancy-indexed assignments and Hessian blocks of the R-norm projection cost
~25 array operations per evaluation, repeated in every Newton and line-search iteration. These
kernels do the same arithmetic in one pass over the contacts without temporaries.

The pure-numpy reference is :func:`plants.sim.sap._project_numpy` (and the line-search terms are
plain numpy expressions in ``tests/test_sap.py``); the tests compare both to round-off.
"""

from __future__ import annotations

import math

import numpy as np

from lcs._numba import HAVE_NUMBA, njit


__all__ = ["HAVE_NUMBA", "project_into", "line_search_terms", "delassus_blocks", "regularization"]


@njit(cache=True)
def project_into(y, R, mu, mu_hat, mu_tilde2, want_hessian, gamma, G):  # pragma: no cover
    """R-norm projection γ = P_F(y) per contact (seed 001 App. C), and G_i = ∂P/∂y R_i⁻¹ (App. D).

    Written into ``gamma`` (n_c, 3) and, if ``want_hessian``, ``G`` (n_c, 3, 3).

    Same regions and boundaries as the numpy reference: stiction ``y_r ≤ μ y_n`` and ``y_n ≥ 0``;
    no contact ``y_n ≤ −μ̂ y_r``; sliding otherwise.
    """
    n = y.shape[0]
    for i in range(n):
        y0 = y[i, 0]
        y1 = y[i, 1]
        yn = y[i, 2]
        yr = math.sqrt(y0 * y0 + y1 * y1)
        m = mu[i]
        if yr <= m * yn and yn >= 0.0:  # stiction
            gamma[i, 0] = y0
            gamma[i, 1] = y1
            gamma[i, 2] = yn
            if want_hessian:
                for a in range(3):
                    for b in range(3):
                        G[i, a, b] = 0.0
                G[i, 0, 0] = 1.0 / R[i, 0]
                G[i, 1, 1] = 1.0 / R[i, 1]
                G[i, 2, 2] = 1.0 / R[i, 2]
        elif yn <= -mu_hat[i] * yr:  # no contact
            gamma[i, 0] = 0.0
            gamma[i, 1] = 0.0
            gamma[i, 2] = 0.0
            if want_hessian:
                for a in range(3):
                    for b in range(3):
                        G[i, a, b] = 0.0
        else:  # sliding (y_r > 0 here)
            mh = mu_hat[i]
            f = 1.0 / (1.0 + mu_tilde2[i])
            t0 = y0 / yr
            t1 = y1 / yr
            gn = f * (yn + mh * yr)
            gamma[i, 0] = m * gn * t0
            gamma[i, 1] = m * gn * t1
            gamma[i, 2] = gn
            if want_hessian:
                Rt = R[i, 0]
                Rn = R[i, 2]
                c_perp = gn / yr
                c_par = mh * f
                s = m / Rt
                G[i, 0, 0] = s * (c_perp * (1.0 - t0 * t0) + c_par * t0 * t0)
                G[i, 1, 1] = s * (c_perp * (1.0 - t1 * t1) + c_par * t1 * t1)
                g01 = s * (c_par - c_perp) * t0 * t1
                G[i, 0, 1] = g01
                G[i, 1, 0] = g01
                o = m * f / Rn
                G[i, 0, 2] = o * t0
                G[i, 1, 2] = o * t1
                G[i, 2, 0] = o * t0
                G[i, 2, 1] = o * t1
                G[i, 2, 2] = f / Rn


@njit(cache=True)
def line_search_terms(alpha, vc0, dvc, v_hat, R, mu, mu_hat, mu_tilde2, want_hessian):  # noqa: D417
    """Contact terms of ℓ(α) = ℓ_p(v + αΔv) along a Newton direction (seed 001 §IV-B).

    With y(α) = −R⁻¹(v_c0 + αΔv_c − v̂) and γ(α) = P_F(y(α)), returns
    ``(Δv_c·γ, Δv_cᵀ G Δv_c if want_hessian else 0, Σ γᵀRγ)``: ℓ'(α) = Δpᵀe(α) − Δv_c·γ,
    ℓ''(α) = ΔvᵀΔp + Δv_cᵀGΔv_c and ℓ(α) = ½‖e(α)‖²_A + ½ΣγᵀRγ.
    """
    n = vc0.shape[0]
    y = np.empty((n, 3))
    for i in range(n):
        for a in range(3):
            y[i, a] = -(vc0[i, a] + alpha * dvc[i, a] - v_hat[i, a]) / R[i, a]
    gamma = np.empty((n, 3))
    G = np.empty((n, 3, 3))
    project_into(y, R, mu, mu_hat, mu_tilde2, want_hessian, gamma, G)
    d_gamma = 0.0
    d2 = 0.0
    cost = 0.0
    for i in range(n):
        for a in range(3):
            d_gamma += dvc[i, a] * gamma[i, a]
            cost += gamma[i, a] * R[i, a] * gamma[i, a]
            if want_hessian:
                for b in range(3):
                    d2 += dvc[i, a] * G[i, a, b] * dvc[i, b]
    return d_gamma, d2, cost


@njit(cache=True)
def delassus_blocks(A, J, tree_starts, contact_trees):  # pragma: no cover - compiled
    """(n_c, 3, 3) diagonal blocks W_ii = Σ_t J_{i,t} A_t⁻¹ J_{i,t}ᵀ of the Delassus operator.

    ``A`` is block diagonal over the trees (``tree_starts``); each contact touches the ≤ 2 trees in
    ``contact_trees`` (−1 = world). One inverse per touched tree, then O(s²) per contact and side.
    Reference: :meth:`plants.sim.contact_problem.ContactProblem.delassus_diagonal`.
    """
    n_c = contact_trees.shape[0]
    n_t = tree_starts.shape[0] - 1
    W = np.zeros((n_c, 3, 3))
    s_max = 0
    for t in range(n_t):
        s_max = max(s_max, tree_starts[t + 1] - tree_starts[t])
    inv = np.zeros((n_t, s_max, s_max))
    done = np.zeros(n_t, dtype=np.bool_)
    X = np.empty((3, s_max))
    for i in range(n_c):
        for side in range(2):
            t = contact_trees[i, side]
            if t < 0:
                continue
            a = tree_starts[t]
            s = tree_starts[t + 1] - a
            if not done[t]:
                inv[t, :s, :s] = np.linalg.inv(np.ascontiguousarray(A[a : a + s, a : a + s]))
                done[t] = True
            for r in range(3):  # X = J_{i,t} A_t⁻¹
                for k in range(s):
                    acc = 0.0
                    for l in range(s):
                        acc += J[3 * i + r, a + l] * inv[t, l, k]
                    X[r, k] = acc
            for r in range(3):
                for c in range(3):
                    acc = 0.0
                    for k in range(s):
                        acc += X[r, k] * J[3 * i + c, a + k]
                    W[i, r, c] += acc
    return W


@njit(cache=True)
def regularization(W, dt, k, tau, phi0, mu, beta, sigma):  # pragma: no cover - compiled
    """Per-contact R = (R_t, R_t, R_n), v̂, μ̃², μ̂ and w of seed 001 eqs. (29)-(30).

    From the Delassus blocks ``W`` (n_c, 3, 3).
    Reference: :func:`plants.sim.sap._sap_parameters_numpy`.
    """
    n_c = W.shape[0]
    R = np.empty((n_c, 3))
    v_hat = np.zeros((n_c, 3))
    mu_tilde2 = np.empty(n_c)
    mu_hat = np.empty(n_c)
    w = np.empty(n_c)
    near_rigid = beta * beta / (4.0 * math.pi * math.pi)
    for i in range(n_c):
        acc = 0.0
        for a in range(3):
            for b in range(3):
                acc += W[i, a, b] * W[i, a, b]
        wi = math.sqrt(acc) / 3.0
        w[i] = wi
        r_phys = 1.0 / (dt * k[i] * (dt + tau[i]))  # 0 for k = inf
        Rn = max(near_rigid * wi, r_phys)
        Rt = sigma * wi
        R[i, 0] = Rt
        R[i, 1] = Rt
        R[i, 2] = Rn
        v_hat[i, 2] = -phi0[i] / (dt + tau[i])
        ratio = Rt / Rn
        mu_tilde2[i] = mu[i] * mu[i] * ratio
        mu_hat[i] = mu[i] * ratio
    return R, v_hat, mu_tilde2, mu_hat, w
