"""Seed 002's non-smooth Newton solver (Macklin et al. 2019) for deformable bodies: ``solver="nsn"``.

One implicit-Euler step is a root-finding problem in the node velocities u and the multipliers λ
of *all* rows: elasticity (generalized compliance, Macklin §9), cloth bending, contact normals,
friction and attachments. Each Newton iteration (Alg. 1) solves the Schur complement

    [J H⁻¹ Jᵀ + C + εI] (hΔλ) = J H⁻¹ g − h                      (Macklin eq. 59)
    Δu = H⁻¹ (Jᵀ hΔλ − g),  λ += tΔλ,  u += tΔu,  q = q⁻ + h u     (eqs. 60-62; q from q⁻, erratum)

with g = M(u − ũ) − h Jᵀλ (ũ = u⁻ + h g_ext), H = M − h²K̃ the lumped mass plus the diagonal
secant geometric stiffness (§8.3, sign erratum of the digest), C = blkdiag(E/h², S/h², W/h) and
h the stacked row residuals; by Jacobi-preconditioned conjugate residual (§8.2) for a fixed
count, with constant damping t = 0.75 and the regularization ε = 1e-6 (§8.4).

**Elasticity rows.** Per element, the Mandel vector s (6 for tetrahedra, 3 for triangles) of
the right stretch tensor RᵀF (R the polar rotation of F, held fixed in the row Jacobian
J = ∂s/∂q, the change of R is the geometric stiffness), with the compliance
E = (V_e ∂²ψ/∂s²)⁻¹ and the row residual E(c + λ), c = V_e ∂ψ/∂s (Macklin §9.1-9.2). For an
isotropic ψ(σ) the Hessian in the eigenframe of RᵀF is ∂²ψ/∂σ² on the stretches and
(∂ψ/∂σ_a − ∂ψ/∂σ_b)/(σ_a − σ_b) on each shear pair, both clamped positive (Teran 2005). This is
Macklin's co-rotational strain row (E constant) for :class:`CoRotational` and ARAP, and the
hyperelastic row for Stable Neo-Hookean. Unlike rows of principal stretches alone, the six
Mandel rows keep the shear stiffness at equal stretches (at rest), where ∂σ/∂F is undefined.

**Bending rows.** The constant Laplace-Beltrami form ½ k_b Σ ‖(L x)_i‖²/M_i as compliant rows
s = M_I^{-½} L_I x per axis, E = 1/k_b.

**Contact.** The rows of :meth:`DeformableSimulator.detect` (the same as seed 004's solver):
normal rows φ_n(δ, λ_n) with Fischer-Burmeister or min-map and the preconditioner r, friction
rows φ_f = ω_f D ᵀ(u − û) + W λ_f with Macklin's fixed-point W (eq. 35; the functions of
:mod:`.ncp`), bilateral attachment rows c + eλ. The complementarity preconditioner r is Macklin
eq. 66's effective mass (h²/m normal, h/m friction), or r = h², or r = 1 (Fig. 17).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

import numpy as np
import scipy.sparse as sp

from ...errors import SimulationDivergedError
from .body import boundary_nodes, cotangent_laplacian, mixed_voronoi_areas, rest_shape
from .cr import conjugate_residual
from .materials import _signed_svd_fast
from .ncp import NCP_FUNCTIONS, friction_rows, normal_rows

__all__ = ["NSNOptions", "NSN_PRECONDITIONERS", "ElasticRows", "NSNStepper"]

NSN_PRECONDITIONERS = ("effective_mass", "h2", "unit")

_SQ2 = np.sqrt(2.0)
_PAIRS = {3: ((0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)), 2: ((0, 0), (1, 1), (0, 1))}


@dataclass(frozen=True)
class NSNOptions:
    """Options of seed 002's non-smooth Newton solver for deformables ("nsn").

    Attributes:
        newton_iterations: Newton iterations per step (Macklin Table 2: 4-8).
        cr_iterations: conjugate-residual iterations per Newton iteration (Table 2: 10-80).
        damping: constant Newton step length t (§8.1: 0.75).
        ncp: "fb" (Fischer-Burmeister, the paper's) or "min" (min-map).
        preconditioner: complementarity preconditioner r: "effective_mass" (eq. 66, the paper's:
            h²/m normal, h/m friction), "h2" (r = h²) or "unit" (r = 1), the three of Fig. 17.
        geometric_stiffness: the diagonal secant approximation of §8.3 on the node DoFs.
        regularization: ε of the εI shift of the Schur matrix (§8.4: 1e-6).
        warm_start: start each step from the previous step's velocities and multipliers (elastic
            rows by element, contact rows by (node, obstacle)); False: u⁰ = 0, λ⁰ = 0 as in the
            paper's results (§8.1).
        contact_margin: proximity [m] within which a node-obstacle pair becomes a contact.
    """

    newton_iterations: int = 8
    cr_iterations: int = 50
    damping: float = 0.75
    ncp: str = "fb"
    preconditioner: str = "effective_mass"
    geometric_stiffness: bool = True
    regularization: float = 1e-6
    warm_start: bool = True
    contact_margin: float = 1e-3

    def __post_init__(self):
        for name, lo in (("newton_iterations", 1), ("cr_iterations", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
        if isinstance(self.damping, bool) or not (0.0 < float(self.damping) <= 1.0):
            raise ValueError(f"damping must lie in (0, 1], got {self.damping!r}")
        if self.ncp not in NCP_FUNCTIONS:
            raise ValueError(f"ncp must be one of {NCP_FUNCTIONS}, got {self.ncp!r}")
        if self.preconditioner not in NSN_PRECONDITIONERS:
            raise ValueError(f"preconditioner must be one of {NSN_PRECONDITIONERS}, got {self.preconditioner!r}")
        for name in ("geometric_stiffness", "warm_start"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {type(getattr(self, name)).__name__}")
        for name in ("regularization", "contact_margin"):
            v = getattr(self, name)
            if isinstance(v, bool) or not (np.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")

    @classmethod
    def from_dict(cls, d: dict | None) -> "NSNOptions":
        """Options from a dict; unknown keys raise ValueError naming the valid ones."""
        d = dict(d or {})
        valid = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - valid)
        if unknown:
            raise ValueError(f"unknown NSN solver options {unknown}; valid: {sorted(valid)}")
        return cls(**d)


class ElasticRows:
    """The elasticity rows of one body part (Mandel strain of RᵀF per element).

    Args:
        mesh: the body's :class:`SimplexMesh`; offset: index of its first node in the world.
        material, volume: the part's material and element volumes (m,) [m³].
    """

    def __init__(self, mesh, offset: int, material, volume: np.ndarray):
        rs = rest_shape(mesh)
        d = mesh.dim
        Bt = np.transpose(rs.Dm_inv, (0, 2, 1))
        self.B = np.concatenate([-Bt.sum(-1)[:, :, None], Bt], axis=2)  # (m, d, d+1): Fᵀ = B X_e
        self.T = mesh.elements + offset
        self.d, self.m = d, mesh.n_elements
        self.ns = len(_PAIRS[d])
        self.material, self.volume = material, volume
        a = np.array([p[0] for p in _PAIRS[d]])
        b = np.array([p[1] for p in _PAIRS[d]])
        self._a, self._b = a, b
        self._f = np.where(a == b, 1.0, _SQ2)  # Mandel: s = S_aa on the diagonal, √2 S_ab off it
        cols = 3 * self.T[:, None, :, None] + np.arange(3)  # (m, 1, d+1, 3)
        self._indices = np.broadcast_to(cols, (self.m, self.ns, d + 1, 3)).reshape(-1)
        self._indptr = np.arange(self.m * self.ns + 1) * 3 * (d + 1)
        mu, _ = material.lame(d)
        self._floor = 1e-6 * 2 * mu

    @property
    def n_rows(self) -> int:
        return self.m * self.ns

    def evaluate(self, x: np.ndarray, n_dof: int):
        """At positions x (n, 3): (s (m·ns,), J (m·ns, n_dof) csr, c (m·ns,) [N], E (m, ns, ns) [1/N])."""
        d, a, b, f = self.d, self._a, self._b, self._f
        Ft = self.B @ x[self.T]  # (m, d, 3)
        F = np.transpose(Ft, (0, 2, 1))
        U, sig, Vh = _signed_svd_fast(F)
        R = U @ Vh  # (m, 3, d) polar rotation (3×2 for cloth)
        Smat = np.transpose(R, (0, 2, 1)) @ F
        Smat = 0.5 * (Smat + np.transpose(Smat, (0, 2, 1)))
        s = f * Smat[:, a, b]
        # ∂s_i/∂X_nk = f_i · ½ (R_ka B_bn + R_kb B_an): outer products per row i, (m, ns, d+1, 3)
        Ra, Rb = np.transpose(R[:, :, a], (0, 2, 1)), np.transpose(R[:, :, b], (0, 2, 1))  # (m, ns, 3)
        Jv = (0.5 * f)[None, :, None, None] * (Ra[:, :, None, :] * self.B[:, b, :, None]
                                              + Rb[:, :, None, :] * self.B[:, a, :, None])
        J = sp.csr_matrix((Jv.reshape(-1), self._indices, self._indptr), shape=(self.n_rows, n_dof))
        # eigenframe of RᵀF: V = Vhᵀ; Q maps eigen-Mandel to element Mandel coordinates (orthogonal)
        V = np.transpose(Vh, (0, 2, 1))
        Q = np.empty((self.m, self.ns, self.ns))
        for j, (p, q) in enumerate(_PAIRS[d]):
            Ej = V[:, :, p, None] * V[:, None, :, q]
            if p != q:
                Ej = (Ej + np.transpose(Ej, (0, 2, 1))) / _SQ2
            Q[:, :, j] = f * Ej[:, a, b]
        g = self.material.grad(sig, d)
        Hs = self.material.hess(sig, d)
        lam, P = np.linalg.eigh(Hs)
        Hinv = (P / np.maximum(lam, self._floor)[:, None, :]) @ np.transpose(P, (0, 2, 1))
        Einv_eig = np.zeros((self.m, self.ns, self.ns))
        Einv_eig[:, :d, :d] = Hinv
        for j, (p, q) in enumerate(_PAIRS[d]):
            if p == q:
                continue
            ds = sig[:, p] - sig[:, q]
            close = np.abs(ds) < 1e-8
            k = np.where(close, Hs[:, p, p] - Hs[:, p, q], (g[:, p] - g[:, q]) / np.where(close, 1.0, ds))
            Einv_eig[:, j, j] = 1.0 / np.maximum(k, self._floor)
        E = Q @ Einv_eig @ np.transpose(Q, (0, 2, 1)) / self.volume[:, None, None]
        c = self.volume[:, None] * (Q[:, :, :d] @ g[:, :, None])[:, :, 0]
        return s.reshape(-1), J, c.reshape(-1), E


def _bending_rows(body, offset: int, n_dof: int) -> tuple[sp.csr_matrix, float] | None:
    """J (3|I|, n_dof) of the bending rows s = M_I^{-½} L_I x (per axis) and the compliance 1/k_b."""
    if body.bending <= 0:
        return None
    mesh = body.mesh
    L = cotangent_laplacian(mesh)
    M = mixed_voronoi_areas(mesh)
    interior = np.setdiff1d(np.arange(mesh.n_nodes), boundary_nodes(mesh))
    LI = (sp.diags(1.0 / np.sqrt(M[interior])) @ L[interior]).tocoo()
    rows = (3 * LI.row[:, None] + np.arange(3)).ravel()
    cols = (3 * (LI.col[:, None] + offset) + np.arange(3)).ravel()
    vals = np.repeat(LI.data, 3)
    return sp.csr_matrix((vals, (rows, cols)), shape=(3 * interior.size, n_dof)), 1.0 / body.bending


class NSNStepper:
    """Steps a :class:`~plants.sim.deformable.simulator.DeformableSimulator` with seed 002's solver.

    The simulator owns the state, contact detection and the assembled bodies (``system``: masses,
    free/pinned nodes, parts); this class owns the elastic and bending rows and the Newton loop.
    """

    def __init__(self, sim):
        self.sim = sim
        sysm = sim.system
        self.n_dof = 3 * sysm.n
        self.elastic = []
        for p, body in zip(sysm.parts, sim.world.bodies):
            self.elastic.append(ElasticRows(body.mesh, p.nodes.start, p.material, p.volume))
        self.bending = [r for r in (_bending_rows(b, p.nodes.start, self.n_dof)
                                    for b, p in zip(sim.world.bodies, sysm.parts)) if r is not None]
        self.n_elastic = sum(e.n_rows for e in self.elastic)
        self.n_bending = sum(J.shape[0] for J, _ in self.bending)
        self.mass = np.repeat(sysm.mass, 3)
        self.free_dof = np.zeros(self.n_dof, bool)
        self.free_dof[(3 * sysm.free[:, None] + np.arange(3)).ravel()] = True
        self.last_lambda_elastic = np.zeros(self.n_elastic)
        self.last_u = None

    def _contact_matrix(self, rows) -> sp.csr_matrix:
        """H (m, n_dof): row j = direction C[j] at (global) node ``free[node[j]]``."""
        sysm = self.sim.system
        nodes = sysm.free[rows.node]
        m = rows.n_rows
        cols = (3 * nodes[:, None] + np.arange(3)).ravel()
        return sp.csr_matrix((rows.C.reshape(-1), cols, np.arange(m + 1) * 3), shape=(m, self.n_dof))

    def step(self, iterations: int | None, record: list | None, stats):
        """One implicit-Euler step; returns (q (n, 3), λ of the contact/bilateral rows, rows, the
        applied row forces Ωλ, the coupled robots' velocities v⁺ (n_rv,)).

        Coupled robots (:mod:`.coupling`) add their generalized velocities v_r to the unknowns, with
        the dense implicit-actuator mass M̂ beside the lumped H, and the columns −ΩG to the contact
        rows: g_r = M̂(v_r − v*) + hGᵀΩλ, the Schur matrix gains ΩG M̂⁻¹GᵀΩ,
        Δv_r = M̂⁻¹(−GᵀΩ hΔλ − g_r)."""
        sim, sysm, h, opt = self.sim, self.sim.system, self.sim.dt, self.sim.options
        n_it = opt.newton_iterations if iterations is None else int(iterations)
        x_t, v_t = sim.x, sim.v
        xt = x_t.reshape(-1)
        x_pin = sim._pinned_at(sim.t + h)
        u_tilde = (v_t + h * sim.world.gravity).reshape(-1)
        u = np.zeros(self.n_dof)
        if opt.warm_start:
            u = v_t.reshape(-1).copy()
        u_pin = ((x_pin - x_t[sysm.pinned]) / h).reshape(-1)
        pin_dof = ~self.free_dof
        u[pin_dof] = u_pin
        u_tilde[pin_dof] = u_pin

        t0 = time.perf_counter()
        rows = sim.detect(x_t, v_t, sim.t) if (sim.world.obstacles or sim.world.attachments or sim._robots) else None
        m_c = 0 if rows is None else rows.n_rows
        nc = 0 if rows is None else rows.n_contacts
        Hc = self._contact_matrix(rows) if m_c else None
        iN = np.arange(0, 3 * nc, 3)
        iT = np.stack([iN + 1, iN + 2], 1)
        iB = np.arange(3 * nc, m_c)
        if m_c:
            m_node = sysm.mass[sysm.free[rows.node[iN]]]
            if opt.preconditioner == "effective_mass":
                r_n, r_f = h * h / m_node, h / m_node
            elif opt.preconditioner == "h2":
                r_n = r_f = np.full(nc, h * h)
            else:
                r_n = r_f = np.ones(nc)
        ne, nb = self.n_elastic, self.n_bending
        lam_el = self.last_lambda_elastic.copy() if opt.warm_start else np.zeros(ne)
        lam_b = np.zeros(nb)
        lam_c = sim._warm_start(rows) if (opt.warm_start and m_c) else np.zeros(m_c)
        H_diag = self.mass.copy()
        v_star = sim._robot_v_star()
        vr = v_star.copy()
        coupled = m_c and rows.G is not None
        if coupled:
            G = rows.G
            Ls, m_inv = sim._robot_mass_factor()
            Y = sim._robot_factor_rows(G, Ls)
            Mhat = [st.Mhat for st in sim._robot_steps]

            def m_mul(y):
                out = np.empty_like(y)
                for Mk, sl in zip(Mhat, sim._rv_slices):
                    out[sl] = Mk @ y[sl]
                return out
        omega = np.ones(m_c)
        stats.schur_time = time.perf_counter() - t0
        stats.n_contacts = nc

        J_el_prev, du_prev = None, None
        for _ in range(n_it):
            t0 = time.perf_counter()
            q = xt + h * u
            if not np.isfinite(q).all():
                raise SimulationDivergedError(
                    f"the non-smooth Newton iteration diverged at step {sim.step_index} (t = {sim.t:.6g} s): "
                    "non-finite positions (state left unchanged)", rows, None, sim.step_index, sim.t)
            X = q.reshape(-1, 3)
            # ---- elasticity rows
            Js, Es, res_el = [], [], []
            o = 0
            for er in self.elastic:
                s, J, c, E = er.evaluate(X, self.n_dof)
                lam_e = lam_el[o:o + er.n_rows].reshape(er.m, er.ns)
                res_el.append((E @ (c.reshape(er.m, er.ns) + lam_e)[:, :, None]).reshape(-1) / h)
                Js.append(J)
                Es.append(E)
                o += er.n_rows
            J_el = sp.vstack(Js, format="csr") if len(Js) > 1 else Js[0]
            # ---- geometric stiffness: diagonal secant of the change of J_elᵀλ (λ fixed)
            if opt.geometric_stiffness and J_el_prev is not None:
                gamma = -h * ((J_el - J_el_prev).T @ lam_el)
                ok = np.abs(du_prev) > 1e-12 * np.abs(du_prev).max()
                shift = np.zeros_like(gamma)
                # guard (the paper gives none): the shift is capped at the DoF's mass (H ≤ 2M); an
                # uncapped secant freezes DoFs whose Δu_k is small and stalls large-strain steps
                shift[ok] = np.minimum(np.maximum(0.0, gamma[ok] / du_prev[ok]), self.mass[ok])
                H_diag = self.mass + shift
            Hinv = np.where(self.free_dof, 1.0 / H_diag, 0.0)
            blocks = [J_el]
            res = [np.concatenate(res_el)]
            cdiag = [np.concatenate([np.einsum("mii->mi", E).reshape(-1) for E in Es]) / h**2]
            # ---- bending rows (constant)
            ob = 0
            for Jb, eb in self.bending:
                k = Jb.shape[0]
                res.append((Jb @ q + eb * lam_b[ob:ob + k]) / h)
                blocks.append(Jb)
                cdiag.append(np.full(k, eb / h**2))
                ob += k
            # ---- contact and bilateral rows
            if m_c:
                Hq = Hc @ q - h * (G @ vr) if coupled else Hc @ q
                omega = np.ones(m_c)
                Cc = np.zeros(m_c)
                rc = np.zeros(m_c)
                delta = Hq[iN] - rows.offset[iN]
                phi_n, om_n, E_n = normal_rows(delta, lam_c[iN], r_n, opt.ncp)
                omega[iN], Cc[iN], rc[iN] = om_n, E_n / h**2, phi_n / h
                vel = (Hq[iT] - rows.offset[iT]) / h  # relative tangential velocity (obstacle û removed)
                lam_f = lam_c[iT]
                om_f, W = friction_rows(np.linalg.norm(vel, axis=1), np.linalg.norm(lam_f, axis=1), lam_c[iN],
                                        rows.mu, r_f, opt.ncp)
                omega[iT] = om_f[:, None]
                Cc[iT] = (W / h)[:, None]
                rc[iT] = om_f[:, None] * vel + W[:, None] * lam_f
                if iB.size:
                    Cc[iB] = rows.compliance / h**2
                    rc[iB] = (Hq[iB] - rows.offset[iB] + rows.compliance * lam_c[iB]) / h
                blocks.append(sp.diags(omega) @ Hc)
                res.append(rc)
                cdiag.append(Cc)
            J = sp.vstack(blocks, format="csr") if len(blocks) > 1 else blocks[0]
            hres = np.concatenate(res)
            lam = np.concatenate([lam_el, lam_b, lam_c])
            Cd = np.concatenate(cdiag)
            stats.local_time += time.perf_counter() - t0
            # ---- Schur complement solve (eq. 59) by Jacobi-preconditioned CR
            t0 = time.perf_counter()
            g = self.mass * (u - u_tilde) - h * (J.T @ lam)
            g[pin_dof] = 0.0
            JT = J.T.tocsr()
            eps = opt.regularization

            # C: the elastic compliance blocks (ns × ns per element) and the diagonal of the rest
            blocks_C = [sp.bsr_matrix((E / h**2, np.arange(er.m), np.arange(er.m + 1)), shape=(er.n_rows, er.n_rows))
                        for er, E in zip(self.elastic, Es)]
            Cmat = sp.block_diag(blocks_C + [sp.diags(Cd[ne:] + eps)], format="csr")
            Cmat = Cmat + sp.diags(np.r_[np.full(ne, eps), np.zeros(Cd.size - ne)])

            def K(y, J=J, JT=JT, Hinv=Hinv, Cmat=Cmat):
                return J @ (Hinv * (JT @ y)) + Cmat @ y

            diag = J.multiply(J) @ Hinv + Cd + eps
            rhs = J @ (Hinv * g) - hres
            if coupled:  # the robots' columns −ΩG on the contact rows (the last m_c rows)
                oc = slice(lam.size - m_c, lam.size)
                g_r = m_mul(vr - v_star) + h * (G.T @ (omega * lam_c))
                K0 = K

                def K(y, K0=K0, omega=omega):
                    out = K0(y)
                    out[oc] += omega * (Y.T @ (Y @ (omega * y[oc])))
                    return out

                diag[oc] += omega**2 * (Y**2).sum(0)
                rhs[oc] -= omega * (G @ m_inv(g_r))
            y = conjugate_residual(K, rhs, opt.cr_iterations, diagonal=diag)  # = hΔλ
            du = Hinv * (JT @ y - g)
            stats.constraint_time += time.perf_counter() - t0
            t_step = float(opt.damping)
            lam = lam + t_step * y / h
            u = u + t_step * du
            if coupled:
                vr = vr + t_step * m_inv(-(G.T @ (omega * y[oc])) - g_r)
            lam_el, lam_b, lam_c = lam[:ne], lam[ne:ne + nb], lam[ne + nb:]
            J_el_prev, du_prev = J_el, t_step * du
            if record is not None:
                record.append((xt + h * u).reshape(-1, 3))
        q = (xt + h * u).reshape(-1, 3)
        self.last_lambda_elastic = lam_el
        if m_c and nc:
            gaps = (rows.C[iN] * q[sysm.free[rows.node[iN]]]).sum(1) - rows.offset[iN]
            if coupled:
                gaps -= h * (G[iN] @ vr)
            stats.min_gap = float(gaps.min())
        return q, lam_c, rows, omega * lam_c, vr
