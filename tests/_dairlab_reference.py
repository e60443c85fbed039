"""An independent, literal re-statement of DAIRLab/c3's ``C3::Solve`` semantics, for parity tests.

Written from reading their ``core/c3.cc`` (MIT licence), not translated from it: every QP step
is solved in the full variables (x_0..x_N, λ_k, u_k) by one dense KKT system, not condensed as
``c3mpc.qp_step`` does, and the MIQP projection enumerates the active sets of the
complementarity modes (3^n_λ equality-constrained KKT systems per knot) instead of using our
branch-and-bound. Small problems only (the cart-pole fixture: n_x = 4, n_λ = 2, N = 5).

Their Solve, as re-stated here:

* x_0 = x0; dynamics x_{k+1} = A x_k + B u_k + D λ_k + d (the LCS after ``scale_lcs``);
* if H_0 = 0: λ_0 = LCP(F_0, E_0 x0 + c_0) (Lemke on the scaled LCS);
* input cost (u_k − u_prev_k)ᵀR_k(·) with ``penalize_input_change`` (u_prev = the previous
  solve's final-QP inputs, zeros at first), else u_kᵀR_k u_k;
* δ = [x0; 0; 0] (delta_option 1) or 0, w = 0, G_k as given;
  admm_iter times: z = QP(G, δ − w); δ = Π_U(z + w) (U, or G when U_0 = 0);
  w = (w + z − δ)/ρ_s; G = ρ_s G;
  then z = QP(G, δ − w) (the final QP step);
* end_on_qp_step false: the "full solution" is δ with states x_0 = x0, x_i = A x_{i-1} +
  B u_{i-1} + D λ_{i-1} + d from the final QP's (x, u, λ) (which equals the QP's x_i);
* λ multiplied back by the scale s.

Their C3Plus (``c3plus=True``): η_k = E x_k + F λ_k + H u_k + c enters z, the augmented cost
uses only the λ and η blocks of G, the projection keeps per pair the larger of √U_λ λ and
√U_η η (clipped at 0), and the final QP step is pulled to δ (not δ − w), with G's λ_i or η_i
row scaled by ``final_augmented_cost_contact_scaling`` for the listed pairs.
"""

from __future__ import annotations

import itertools

import numpy as np

from lcs import LCS, solve_lcp


def qp_step(lcs: LCS, Q, R, G, x_des, x0, ref, u_prev, lam0, c3plus=False):
    """One QP step in the full variables by a dense KKT solve. Returns z (N, n_z), x (N+1, n_x).

    ``c3plus``: their C3Plus augmented cost, on the λ and η blocks of G only, with
    η_k = E x_k + F λ_k + H u_k + c substituted (their equality constraint); z then carries η.
    """
    N = len(R)
    n_x, n_l, n_u = lcs.n_x, lcs.n_lambda, lcs.n_u
    n_z = n_x + n_l + n_u
    nv = (N + 1) * n_x + N * (n_l + n_u)
    xi = lambda k: slice(k * n_x, (k + 1) * n_x)  # noqa: E731
    base = (N + 1) * n_x
    li = lambda k: slice(base + k * (n_l + n_u), base + k * (n_l + n_u) + n_l)  # noqa: E731
    ui = lambda k: slice(base + k * (n_l + n_u) + n_l, base + (k + 1) * (n_l + n_u))  # noqa
    P = np.zeros((nv, nv))
    q = np.zeros(nv)
    for k in range(N + 1):
        P[xi(k), xi(k)] += Q[k]
        q[xi(k)] -= Q[k] @ x_des[k]
    for k in range(N):
        P[ui(k), ui(k)] += R[k]
        if u_prev is not None:
            q[ui(k)] -= R[k] @ u_prev[k]
        idx = np.r_[np.arange(nv)[xi(k)], np.arange(nv)[li(k)], np.arange(nv)[ui(k)]]
        if not c3plus:
            P[np.ix_(idx, idx)] += G[k]
            q[idx] -= G[k] @ ref[k]
            continue
        lam_b = slice(n_x, n_x + n_l)
        eta_b = slice(n_z, n_z + n_l)
        il = np.arange(nv)[li(k)]
        P[np.ix_(il, il)] += G[k][lam_b, lam_b]
        q[il] -= G[k][lam_b, lam_b] @ ref[k][lam_b]
        M = np.hstack([lcs.E, lcs.F, lcs.H])  # η = M [x; λ; u] + c
        Ge = G[k][eta_b, eta_b]
        P[np.ix_(idx, idx)] += M.T @ Ge @ M
        q[idx] += M.T @ Ge @ (lcs.c - ref[k][eta_b])
    rows, rhs = [], []
    A, B, D, d = lcs.A, lcs.B, lcs.D, lcs.d
    r0 = np.zeros((n_x, nv))
    r0[:, xi(0)] = np.eye(n_x)
    rows.append(r0)
    rhs.append(x0)
    for k in range(N):
        r = np.zeros((n_x, nv))
        r[:, xi(k + 1)] = -np.eye(n_x)
        r[:, xi(k)] = A
        r[:, li(k)] = D
        r[:, ui(k)] = B
        rows.append(r)
        rhs.append(-d)
    if lam0 is not None:
        r = np.zeros((n_l, nv))
        r[:, li(0)] = np.eye(n_l)
        rows.append(r)
        rhs.append(lam0)
    Aeq = np.vstack(rows)
    beq = np.concatenate(rhs)
    K = np.block([[P, Aeq.T], [Aeq, np.zeros((Aeq.shape[0], Aeq.shape[0]))]])
    sol = np.linalg.solve(K, np.concatenate([-q, beq]))[:nv]
    x = sol[:base].reshape(N + 1, n_x)
    z = np.stack([np.concatenate([x[k], sol[li(k)], sol[ui(k)]]) for k in range(N)])
    assert z.shape == (N, n_z)
    if c3plus:
        eta = z @ np.hstack([lcs.E, lcs.F, lcs.H]).T + lcs.c
        z = np.hstack([z, eta])
    return z, x


def c3plus_projection(lcs: LCS, U, v):
    """Their C3Plus projection: per pair keep the larger of √U_λ λ and √U_η η, zero the other,
    clip both at 0; everything else passes through."""
    n_x, n_l, n_u = lcs.n_x, lcs.n_lambda, lcs.n_u
    lam_b, eta_b = slice(n_x, n_x + n_l), slice(n_x + n_l + n_u, n_x + 2 * n_l + n_u)
    out = v.copy()
    for k in range(v.shape[0]):
        wl, we = np.diag(U[k])[lam_b], np.diag(U[k])[eta_b]
        lam, eta = v[k, lam_b], v[k, eta_b]
        eta_larger = eta * np.sqrt(we) > lam * np.sqrt(wl)
        out[k, lam_b] = np.maximum(np.where(eta_larger, 0.0, lam), 0.0)
        out[k, eta_b] = np.maximum(np.where(eta_larger, eta, 0.0), 0.0)
    return out


def miqp_projection(lcs: LCS, U, v):
    """argmin (δ − v)ᵀU(δ − v) s.t. 0 ≤ δ_λ ⟂ E δ_x + F δ_λ + H δ_u + c ≥ 0, exactly.

    Enumerates, per complementarity pair, λ_i = 0, slack_i = 0 or both, solves each
    equality-constrained QP by its KKT system and keeps the best candidate that satisfies the
    remaining inequalities (the optimum of each convex mode QP has one of these active sets).
    Coordinates with zero weight keep v's value (their objective is flat).
    """
    n_x, n_l, n_u = lcs.n_x, lcs.n_lambda, lcs.n_u
    n_z = n_x + n_l + n_u
    EFH = np.hstack([lcs.E, lcs.F, lcs.H])
    c = lcs.c
    out = np.empty_like(v)
    for k in range(v.shape[0]):
        Uk, vk = U[k], v[k]
        free = np.flatnonzero(np.diag(Uk) == 0)
        best, best_val = None, np.inf
        for states in itertools.product((0, 1, 2), repeat=n_l):
            rows, rhs = [], []
            for i, st in enumerate(states):
                if st in (0, 2):  # λ_i = 0
                    rows.append(np.eye(n_z)[n_x + i])
                    rhs.append(0.0)
                if st in (1, 2):  # slack_i = 0
                    rows.append(EFH[i])
                    rhs.append(-c[i])
            for j in free:
                rows.append(np.eye(n_z)[j])
                rhs.append(vk[j])
            C, b = np.array(rows), np.array(rhs)
            K = np.block([[2 * Uk, C.T], [C, np.zeros((len(b), len(b)))]])
            sol = np.linalg.lstsq(K, np.concatenate([2 * Uk @ vk, b]), rcond=None)[0]
            dlt = sol[:n_z]
            if np.abs(C @ dlt - b).max() > 1e-9:
                continue  # inconsistent active set
            if dlt[n_x:n_x + n_l].min() < -1e-9 or (EFH @ dlt + c).min() < -1e-9:
                continue
            val = (dlt - vk) @ Uk @ (dlt - vk)
            if val < best_val - 1e-14:
                best, best_val = dlt, val
        out[k] = best
    return out


def reference_solve(lcs: LCS, Q, R, G, U, x_des, x0, *, admm_iter, rho_scale, delta_option,
                    scale_lcs, u_prev=None, end_on_qp_step=True, c3plus=False,
                    final_scaling=None, final_indices=None):
    """Their Solve from x0; returns dict(x_qp (N+1,n_x), u_qp, lam_qp, z_full (N, n_z), u_final).

    ``lam_qp`` and ``z_full``'s λ are in physical units (their unscaling); ``u_final`` is the
    final QP's inputs, the next solve's ``u_prev``.
    """
    N = len(R)
    s = 1.0
    plan = lcs
    if scale_lcs:
        s = np.linalg.norm(lcs.A) / np.linalg.norm(lcs.D)
        plan = lcs.replace(D=lcs.D * s, E=lcs.E / s, H=lcs.H / s, c=lcs.c / s)
    n_x, n_l = lcs.n_x, lcs.n_lambda
    lam0 = None
    if np.all(plan.H == 0):
        lam0 = solve_lcp(plan.F, plan.E @ x0 + plan.c).z
    n_z = n_x + n_l + lcs.n_u + (n_l if c3plus else 0)
    delta = np.zeros((N, n_z))
    if delta_option == 1:
        delta[:, :n_x] = x0
    w = np.zeros((N, n_z))
    Gk = [g.copy() for g in G]
    Uproj = U if np.any(U[0] != 0) else None
    project = c3plus_projection if c3plus else miqp_projection
    for _ in range(admm_iter):
        z, _x = qp_step(plan, Q, R, Gk, x_des, x0, delta - w, u_prev, lam0, c3plus)
        delta = project(plan, np.stack(Uproj if Uproj is not None else Gk), z + w)
        w = (w + z - delta) / rho_scale
        Gk = [g * rho_scale for g in Gk]
    # C3Plus's final step is pulled to the projection δ itself; C3's to δ − w
    if c3plus and final_scaling is not None and final_indices is not None:
        # their GScaling: per listed pair, scale λ's row of G if δ_λ is exactly 0, else η's
        for k in range(N):
            s_k = np.ones(n_z)
            for i in final_indices:
                if delta[k, n_x + i] == 0:
                    s_k[n_x + i] *= final_scaling
                else:
                    s_k[n_x + n_l + lcs.n_u + i] *= final_scaling
            Gk[k] = s_k[:, None] * Gk[k]
    z, x = qp_step(plan, Q, R, Gk, x_des, x0, delta if c3plus else delta - w, u_prev, lam0,
                   c3plus)
    u_qp = z[:, n_x + n_l:n_x + n_l + lcs.n_u]
    lam_qp = z[:, n_x:n_x + n_l] * s
    z_full = z.copy()
    if not end_on_qp_step:
        z_full = delta.copy()
        xs = x0
        z_full[0, :n_x] = x0
        for i in range(1, N):
            xs = plan.A @ x[i - 1] + plan.B @ u_qp[i - 1] + plan.D @ z[i - 1, n_x:n_x + n_l] \
                + plan.d
            z_full[i, :n_x] = xs
    z_full[:, n_x:n_x + n_l] *= s
    return dict(x_qp=x, u_qp=u_qp, lam_qp=lam_qp, z_full=z_full, u_final=u_qp.copy(),
                lam0=None if lam0 is None else lam0 * s, scale=s)
