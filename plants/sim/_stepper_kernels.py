"""Compiled assembly of a step's contact problem (numba, ``cache=True``).

Profiling one step of the small scenes (docs/sap.md §9) showed the assembly of the contact problem
costing ~25 numpy calls after the geometry queries (points, frames, Jacobian, pair parameters, trees,
joints, local points: ~45 µs on cube-slide for ~1 µs of arithmetic). :func:`contact_rows` does the
same arithmetic in one pass over the contacts, :func:`geometry_poses` composes the geometries'
world poses from their joints' poses and :func:`explicit_free_motion` is stage 1 of the default
(symplectic Euler, θ = 0) scheme in one call.

References (tested against, ``tests/test_sim_fast_path.py``): the numpy expressions of
:meth:`plants.sim.stepper.Simulator._contact_rows_numpy`, :meth:`plants.sim.scene.Scene.geometry_poses`
and :meth:`plants.sim.stepper.Simulator.free_motion` with ``compiled=False``.
"""

from __future__ import annotations

import math

import numpy as np

from lcs._numba import HAVE_NUMBA, njit

from ._geometry_kernels import contact_jacobian, tangent_frames
from ._sap_kernels import cholesky_inplace, cholesky_solve_inplace

__all__ = ["HAVE_NUMBA", "contact_rows", "explicit_free_motion", "geometry_poses", "joint_limit_rows",
           "overlap_ratios"]


@njit(cache=True)
def geometry_poses(H, slot, geom_R, geom_p, Rg, pg):  # pragma: no cover - compiled
    """World poses of the geometries: ``Rg[g] = R_s geom_R[g]``, ``pg[g] = R_s geom_p[g] + p_s`` with
    (R_s, p_s) the homogeneous pose ``H[s]`` (4, 4) of the geometry's joint, ``s = slot[g]`` (its index
    among the joints carrying geometry)."""
    for g in range(slot.shape[0]):
        s = slot[g]
        for a in range(3):
            for b in range(3):
                Rg[g, a, b] = H[s, a, 0] * geom_R[g, 0, b] + H[s, a, 1] * geom_R[g, 1, b] + H[s, a, 2] * geom_R[g, 2, b]
            pg[g, a] = (H[s, a, 0] * geom_p[g, 0] + H[s, a, 1] * geom_p[g, 1] + H[s, a, 2] * geom_p[g, 2]) + H[s, a, 3]


@njit(cache=True)
def contact_rows(normal, point_a, point_b, ga, gb, n_geoms, pair_w, pair_k, pair_tau, pair_mu, geom_slot,
                 slot_support, slot_tree, geom_joint, Rg, pg, geom_R, geom_p, Jw,
                 F, point, J, k, tau_d, mu, trees, joints, local):  # pragma: no cover - compiled
    """Per contact i (geometries ``ga[i]``, ``gb[i]``): the point on the stiffer surface
    ``w p_a + (1 − w) p_b``, the frame (t1, t2, n), the Jacobian rows (3 n_c, n_v), the pair's
    stiffness, dissipation and friction, the trees (a robot touching itself: its tree once, the
    second −1) and joints of both sides and the point in each side's joint frame
    ``geom_R (R_gᵀ (p − p_g)) + geom_p``. Written into the output arrays."""
    n_c = ga.shape[0]
    tangent_frames(normal, F)
    sa = np.empty(n_c, dtype=np.int64)
    sb = np.empty(n_c, dtype=np.int64)
    for i in range(n_c):
        a = ga[i]
        b = gb[i]
        pair = a * n_geoms + b
        w = pair_w[pair]
        for r in range(3):
            point[i, r] = w * point_a[i, r] + (1.0 - w) * point_b[i, r]
        k[i] = pair_k[pair]
        tau_d[i] = pair_tau[pair]
        mu[i] = pair_mu[pair]
        sa[i] = geom_slot[a]
        sb[i] = geom_slot[b]
        trees[i, 0] = slot_tree[sa[i]]
        trees[i, 1] = slot_tree[sb[i]] if slot_tree[sb[i]] != trees[i, 0] else -1  # a self-contact: its tree once
        joints[i, 0] = geom_joint[a]
        joints[i, 1] = geom_joint[b]
        for side in range(2):
            g = a if side == 0 else b
            d0 = point[i, 0] - pg[g, 0]
            d1 = point[i, 1] - pg[g, 1]
            d2 = point[i, 2] - pg[g, 2]
            e0 = Rg[g, 0, 0] * d0 + Rg[g, 1, 0] * d1 + Rg[g, 2, 0] * d2  # R_gᵀ (p − p_g)
            e1 = Rg[g, 0, 1] * d0 + Rg[g, 1, 1] * d1 + Rg[g, 2, 1] * d2
            e2 = Rg[g, 0, 2] * d0 + Rg[g, 1, 2] * d1 + Rg[g, 2, 2] * d2
            for r in range(3):
                local[i, side, r] = geom_R[g, r, 0] * e0 + geom_R[g, r, 1] * e1 + geom_R[g, r, 2] * e2 + geom_p[g, r]
    contact_jacobian(F, point, Jw, slot_support, sa, sb, J)


@njit(cache=True)
def explicit_free_motion(M, k, v0, dt, tree_starts, A, v):  # pragma: no cover - compiled
    """Stage 1 for θ = 0 (seed 001 eq. 13): ``A = M`` (symmetrized from the upper triangle that
    ``pinocchio.crba`` fills) and ``v = v₀ + δt M⁻¹ k``, M factored per tree (it is block diagonal).
    Returns False when a tree's block is not positive definite (the caller then takes the
    reference path, which raises). Reference: :meth:`plants.sim.stepper.Simulator.free_motion`."""
    n = M.shape[0]
    for i in range(n):
        A[i, i] = M[i, i]
        for j in range(i + 1, n):
            A[i, j] = M[i, j]
            A[j, i] = M[i, j]
    return _free_motion_per_tree(A, k, v0, dt, tree_starts, v)


@njit(cache=True)
def _free_motion_per_tree(A, k, v0, dt, tree_starts, v):  # pragma: no cover - compiled
    """``v = v₀ + δt A⁻¹ k`` with A's diagonal tree blocks factored one by one (A is block
    diagonal over the trees); False when a block is not positive definite."""
    s_max = 0
    for t in range(tree_starts.shape[0] - 1):
        s_max = max(s_max, tree_starts[t + 1] - tree_starts[t])
    L = np.empty((s_max, s_max))
    x = np.empty(s_max)
    for t in range(tree_starts.shape[0] - 1):
        a = tree_starts[t]
        s = tree_starts[t + 1] - a
        for i in range(s):
            x[i] = k[a + i]
            for j in range(i + 1):
                L[i, j] = A[a + i, a + j]
        if not cholesky_inplace(L, s):
            return False
        cholesky_solve_inplace(L, s, x)
        for i in range(s):
            v[a + i] = v0[a + i] + dt * x[i]
    return True


@njit(cache=True)
def explicit_free_motion_blocks(Mc, chunk_v, chunk_of_tree, k, v0, dt, tree_starts, A, v):  # pragma: no cover - compiled
    """:func:`explicit_free_motion` from M's chunk blocks (``Mc[c]``: the upper triangle of the
    block of dofs ``chunk_v[c]:chunk_v[c+1]``, ``TreeDynamics.mass_chunks``), writing only the trees'
    diagonal blocks of ``A`` (whose other entries must be zero), so a scene of many small trees
    costs O(Σ s_t²), not O(n_v²)."""
    for t in range(tree_starts.shape[0] - 1):
        a = tree_starts[t]
        s = tree_starts[t + 1] - a
        c = chunk_of_tree[t]
        o = a - chunk_v[c]
        for i in range(s):
            A[a + i, a + i] = Mc[c, o + i, o + i]
            for j in range(i + 1, s):
                A[a + i, a + j] = Mc[c, o + i, o + j]
                A[a + j, a + i] = Mc[c, o + i, o + j]
    return _free_motion_per_tree(A, k, v0, dt, tree_starts, v)


@njit(cache=True)
def overlap_ratios(phi, a, b, size, fraction, J, vq, dt, out):  # pragma: no cover - compiled
    """The per-step penetration check of the stepper in one pass (reference: the numpy expressions in
    ``Simulator._overlap_ratios_numpy``). For contact i between geometries a[i], b[i]:
    ``out[0] = allow = fraction min(size_a, size_b)``, ``out[1] = measured = −φ₀``,
    ``out[2] = predicted = −(φ₀ + δt J_n vq)`` (J_n: row 3i + 2 of ``J``) and
    ``out[3] = max(measured, predicted) / allow``. Returns the largest ratio and the smallest φ₀."""
    n_v = vq.shape[0]
    peak = -np.inf
    phi_min = np.inf
    for i in range(phi.shape[0]):
        allow = fraction * min(size[a[i]], size[b[i]])
        vn = 0.0
        for d in range(n_v):
            vn += J[3 * i + 2, d] * vq[d]
        m = -phi[i]
        p = -(phi[i] + dt * vn)
        r = max(m, p) / allow
        out[0, i] = allow
        out[1, i] = m
        out[2, i] = p
        out[3, i] = r
        peak = max(peak, r)
        phi_min = min(phi_min, phi[i])
    return peak, phi_min


@njit(cache=True)
def joint_limit_rows(q0, v0, v_star, limit_q, limit_dof, lower, upper, margin, dt, A, tree_starts, dof_tree,
                     rigid, sign, gap, dof, k):  # pragma: no cover - compiled
    """The step's joint-limit constraints (reference: ``Simulator._limit_rows`` and
    ``Simulator._limit_stiffness``): lower limits first, then upper ones, each in the scene's
    order, those whose gap is below ``margin + 2 δt max(|v₀|, |v*|)`` of their dof. Writes the row
    sign (+1 lower, −1 upper), the gap φ₀, the dof and the near-rigid stiffness
    k = 4π²/(δt² w), w = (A_t⁻¹)_kk from a Cholesky factor of the dof's tree block (``rigid``: inf)
    into the outputs (each at least 2 n_limits long); returns how many."""
    n = 0
    for side in range(2):
        for j in range(limit_q.shape[0]):
            d = limit_dof[j]
            reach = margin + 2.0 * dt * max(abs(v0[d]), abs(v_star[d]))
            g = q0[limit_q[j]] - lower[j] if side == 0 else upper[j] - q0[limit_q[j]]
            if g < reach:
                sign[n] = 1.0 if side == 0 else -1.0
                gap[n] = g
                dof[n] = d
                n += 1
    if rigid:
        for i in range(n):
            k[i] = np.inf
        return n
    s_max = 0
    for t in range(tree_starts.shape[0] - 1):
        s_max = max(s_max, tree_starts[t + 1] - tree_starts[t])
    L = np.empty((s_max, s_max))
    x = np.empty(s_max)
    done_tree = -1
    for i in range(n):
        t = dof_tree[dof[i]]
        a = tree_starts[t]
        s = tree_starts[t + 1] - a
        if t != done_tree:  # limits come in the scene's order: refactor only when the tree changes
            for r in range(s):
                for c in range(r + 1):
                    L[r, c] = A[a + r, a + c]
            cholesky_inplace(L, s)
            done_tree = t
        e = dof[i] - a  # w = ‖L⁻¹ e_k‖²: forward substitution from row e (the entries above are 0)
        w = 0.0
        for r in range(s):
            x[r] = 0.0
        for r in range(e, s):
            acc = 1.0 if r == e else 0.0
            for m in range(e, r):
                acc -= L[r, m] * x[m]
            x[r] = acc / L[r, r]
            w += x[r] * x[r]
        k[i] = 4.0 * math.pi * math.pi / (dt * dt * w)
    return n
