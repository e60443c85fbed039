"""Seed 004's solver: implicit Euler as local-global iterations with a prefactored constant
matrix, its explicit sparse inverse, and NCP contact solved by one non-smooth Newton step per
iteration (Alg. 4). The equations, with the paper's numbers, are in ``docs/deformables.md``.

Per time step h, from positions x_t and velocities v_t (all free nodes; pinned nodes follow
their prescribed motion and enter the right-hand side):

1. prediction x̃ = x_t + h v_t + h² g (Eq. 1); contacts detected once (node vs obstacle SDFs at
   x_t within a margin), giving the rows H (one node, one direction per row), the constant parts
   of the gaps (Eq. 40), and the Delassus W = H A⁻¹ Hᵀ = (S Hᵀ)ᵀ(S Hᵀ) (Eq. 27), formed once;
   the complementarity preconditioner r (Eq. 28: h² W_jj normal, h W_jj friction; or Macklin's
   h²[H M⁻¹ Hᵀ]_jj, h[H M⁻¹ Hᵀ]_jj);
2. for k = 0 … n−1 (n = 5): local step p = project(G q^k) (Eq. 5; ADMM-PD adds the dual u);
   b = M x̃ + h² Σ w Gᵀ p (Eq. 6); NCP indicators Ω, E and h (Eqs. 19, 24); Schur solve
   (ΩWΩ + E) h²Δλ = h − J A⁻¹ g (Eq. 22 with the sign of Algs. 3-4, the digest's erratum) by
   10 conjugate-residual iterations; λ += Δλ; q = A⁻¹(g + h² JᵀΔλ) (Eq. 23), A⁻¹ = SᵀS (Eq. 7);
3. v_{t+h} = (q^n − x_t)/h.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

import numpy as np
import scipy.sparse as sp

from .backend import BACKENDS, make_backend
from .body import bending_matrix, rest_shape
from .ncp import NCP_FUNCTIONS
from .sparse_inverse import SparseInverse
from .world import DeformableWorld

__all__ = ["FBAOptions", "LocalGlobalSystem", "StepStats", "PRECONDITIONERS", "GLOBAL_STEPS"]

PRECONDITIONERS = ("w_diagonal", "mass_inverse")
GLOBAL_STEPS = ("sparse_inverse", "jacobi")
INITIAL_GUESSES = ("extrapolated", "predicted", "previous")


@dataclass(frozen=True)
class FBAOptions:
    """Options of the seed-004 local-global solver ("fba", for "Fast But Accurate").

    Attributes:
        iterations: local-global iterations per step (paper: 5).
        cr_iterations: conjugate-residual iterations per constraint solve (paper: 10).
        ncp: NCP function, "fb" (Fischer-Burmeister, the paper's) or "min" (min-map).
        preconditioner: complementarity preconditioner r, "w_diagonal" (Eq. 28, the paper's) or
            "mass_inverse" (Macklin et al. 2019 eq. 66, for comparison).
        global_step: "sparse_inverse" (q = Sᵀ(S b), the complete solve) or "jacobi" (one Jacobi
            iteration of A q = b per local-global iteration: the incomplete baseline of Fig. 9;
            contact-free scenes only).
        contact_margin: proximity [m] within which a node-obstacle pair becomes a contact (added
            to the distance the node and the obstacle can travel in one step).
        warm_start: start each step's multipliers λ⁰ from the previous step's, matched by
            (node, obstacle) (tangential forces re-expressed in the new tangent basis); False: λ⁰ = 0.
            The paper does not state its λ⁰ (digest §2.2 [unsure]).
        initial_guess: q⁰ of the local-global loop: "extrapolated" (x_t + h v_t: with warm-started
            contact forces balancing gravity, a resting body starts at zero relative velocity) or
            "predicted" (x̃ = x_t + h v_t + h² M⁻¹ f_ext) or "previous" (x_t; pinned nodes at their
            new positions). The paper does not state its q⁰.
        backend: "numpy" (CPU, default) or "cupy" (the global step Sᵀ(S b) and the constraint
            solve on an NVIDIA GPU; needs CuPy, imported only then; :mod:`.backend`).
        anderson_window: Anderson acceleration of the local-global fixed-point map (Peng et al.
            2018) with the last m = ``anderson_window`` differences and their energy safeguard
            (an accelerated iterate whose incremental potential exceeds the last accepted one's
            is replaced by the plain global step, and the history is reset); 0 = off (the
            paper's plain iteration). It acts on contact-free steps of worlds whose bodies are
            all plain PD (ARAP) with the complete global step; elsewhere (contact or attachment
            rows, ADMM-PD materials, ``global_step="jacobi"``) the iteration is the plain one.
            Costs one extra local step per time step (the energy of the last iterate) plus one
            per rejected iterate. Default 5 (``docs/deformables.md`` §3 and §5.2).
        anderson_carry: keep the Anderson differences from one time step to the next (the
            local-global map changes between steps by a constant, except at elements touching
            moving pins, and the differences are blind to a constant), so the first iterations
            of a step are already accelerated; False: a fresh history every step (Peng et al.).
            The history is dropped after any step that is not accelerated, on a rejection and
            on ``set_state``. Default True.
    """

    iterations: int = 5
    cr_iterations: int = 10
    ncp: str = "fb"
    preconditioner: str = "w_diagonal"
    global_step: str = "sparse_inverse"
    contact_margin: float = 1e-3
    warm_start: bool = True
    initial_guess: str = "extrapolated"
    backend: str = "numpy"
    anderson_window: int = 5
    anderson_carry: bool = True

    def __post_init__(self):
        for name in ("iterations", "cr_iterations"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < (1 if name == "iterations" else 0):
                raise ValueError(f"{name} must be an integer >= {1 if name == 'iterations' else 0}, got {v!r}")
        if self.ncp not in NCP_FUNCTIONS:
            raise ValueError(f"ncp must be one of {NCP_FUNCTIONS}, got {self.ncp!r}")
        if self.preconditioner not in PRECONDITIONERS:
            raise ValueError(f"preconditioner must be one of {PRECONDITIONERS}, got {self.preconditioner!r}")
        if self.global_step not in GLOBAL_STEPS:
            raise ValueError(f"global_step must be one of {GLOBAL_STEPS}, got {self.global_step!r}")
        if self.initial_guess not in INITIAL_GUESSES:
            raise ValueError(f"initial_guess must be one of {INITIAL_GUESSES}, got {self.initial_guess!r}")
        w = self.anderson_window
        if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0:
            raise ValueError(f"anderson_window must be an integer >= 0, got {w!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if not isinstance(self.anderson_carry, bool):
            raise TypeError(f"anderson_carry must be a bool, got {type(self.anderson_carry).__name__}")
        if not isinstance(self.warm_start, bool):
            raise TypeError(f"warm_start must be a bool, got {type(self.warm_start).__name__}")
        if isinstance(self.contact_margin, bool) or not (np.isfinite(self.contact_margin) and self.contact_margin >= 0):
            raise ValueError(f"contact_margin must be >= 0 [m], got {self.contact_margin!r}")

    @classmethod
    def from_dict(cls, d: dict | None) -> "FBAOptions":
        """Options from a dict; unknown keys raise ValueError naming the valid ones."""
        d = dict(d or {})
        valid = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - valid)
        if unknown:
            raise ValueError(f"unknown FBA solver options {unknown}; valid: {sorted(valid)}")
        return cls(**d)


@dataclass
class StepStats:
    """Per-step diagnostics: contact rows, the deepest normal gap at the end [m] (negative:
    penetration), and wall times [s] of the phases of seed 004 Table 3, summed over the step's
    iterations: ``schur_time`` (contact detection, W and r), ``local_time``, ``global_time``
    (A⁻¹ b; with contacts the S b half of the fused solve and u at the contact nodes),
    ``assembly_time`` (gaps, Ω, E, h), ``constraint_time`` (the CR solve), ``correction_time``
    (with contacts the Sᵀ half, q = Sᵀ(S b + S_U c) = u + A⁻¹ h² JᵀΩΔλ), ``step_time`` (the
    frame). For the "nsn" solver: ``local_time`` is the row assembly (SVDs, Jacobians),
    ``constraint_time`` the PCR solve.
    ``anderson_rejections``: accelerated iterates the energy safeguard replaced by the plain step
    (``FBAOptions.anderson_window``).
    """

    n_contacts: int = 0
    min_gap: float = np.inf
    schur_time: float = 0.0
    local_time: float = 0.0
    global_time: float = 0.0
    constraint_time: float = 0.0
    assembly_time: float = 0.0
    correction_time: float = 0.0
    step_time: float = 0.0
    anderson_rejections: int = 0


@dataclass
class _Part:
    """One body's slice of the assembled system."""

    name: str
    nodes: slice
    elements: slice  # rows of G / d
    dim: int
    material: object
    w_hat: float  # ADMM / PD weight per unit volume [Pa]
    volume: np.ndarray  # (m,) [m³] (cloth: area × thickness)
    projective: bool


class LocalGlobalSystem:
    """The assembled bodies of a world and the prefactored global step, for time step ``dt``.

    Attributes:
        n: total node count; ``free`` / ``pinned``: global indices of free and kinematic nodes.
        mass: (n,) lumped masses [kg].
        A: (n_free, n_free) csc system matrix M + h² Gᵀ W G restricted to the free nodes.
        inverse: the :class:`SparseInverse` of A (``global_step="sparse_inverse"``).
        precompute_time: seconds spent assembling A and building S.

    ``prefactor=False`` assembles the bodies and A but neither factors A nor builds S (the
    "nsn" solver's use).
    """

    def __init__(self, world: DeformableWorld, dt: float, options: FBAOptions, prefactor: bool = True):
        t0 = time.perf_counter()
        self.world, self.h, self.options = world, float(dt), options
        offsets = np.cumsum([0] + [b.n_nodes for b in world.bodies])
        self.n = int(offsets[-1])
        self.offsets = offsets
        self.parts: list[_Part] = []
        G_blocks, w_rows, masses, pinned, Q_blocks = [], [], [], [], []
        e0 = 0
        for b, o in zip(world.bodies, offsets[:-1]):
            rs = rest_shape(b.mesh)
            d = b.mesh.dim
            vol = rs.measure * b.scale()
            projective = bool(b.material.projective)
            w_hat = b.material.admm_weight(d)
            m = b.mesh.n_elements
            self.parts.append(_Part(b.name, slice(o, o + b.n_nodes), slice(e0, e0 + m), d, b.material, w_hat, vol, projective))
            e0 += m
            G_blocks.append(rs.G)
            w_rows.append(np.repeat(w_hat * vol, d))
            masses.append(b.node_masses())
            pinned.append(b.pinned + o)
            Q_blocks.append(b.bending * bending_matrix(b.mesh) if b.bending > 0 else sp.csr_matrix((b.n_nodes, b.n_nodes)))
        # one G per body (rows d·m_b); block-diagonal over bodies
        self.G = sp.block_diag(G_blocks, format="csr")
        self.w_rows = np.concatenate(w_rows)
        self.mass = np.concatenate(masses)
        self.pinned = np.concatenate(pinned).astype(np.int64)
        is_free = np.ones(self.n, bool)
        is_free[self.pinned] = False
        self.free = np.flatnonzero(is_free)
        self.free_index = np.full(self.n, -1, np.int64)
        self.free_index[self.free] = np.arange(self.free.size)
        self.Q = sp.block_diag(Q_blocks, format="csr")  # k_b-weighted bending forms (constant)
        h2 = self.h**2
        A_full = (sp.diags(self.mass) + h2 * (self.G.T @ sp.diags(self.w_rows) @ self.G + self.Q)).tocsc()
        self.A = A_full[self.free][:, self.free].tocsc()
        self.A_fk = A_full[self.free][:, self.pinned].tocsc()
        self.inverse: SparseInverse | None = None
        if not prefactor:  # seed 002's solver needs the assembled bodies, not A's factor
            pass
        elif options.global_step == "sparse_inverse":
            self.inverse = SparseInverse.from_matrix(self.A)
            self._S_csc = self.inverse.S.tocsc()
        self.backend = make_backend(options.backend if prefactor else "numpy")
        if self.inverse is not None and self.backend.name != "numpy":  # S and Sᵀ as device CSR
            self._S_dev = self.backend.sparse(self.inverse.S)
            self._ST_dev = self.backend.sparse(self.inverse.S.T.tocsr())
        else:
            self.A_diag = self.A.diagonal()
            self.A_off = (self.A - sp.diags(self.A_diag)).tocsr()
        self.precompute_time = time.perf_counter() - t0

    # ------------------------------------------------------------------ pieces
    def deformation_gradients(self, x: np.ndarray) -> list[np.ndarray]:
        """Per body, Fᵀ stacks (m_b, d, 3) at positions x (n, 3)."""
        GX = self.G @ x
        out = []
        r0 = 0
        for p in self.parts:
            m = p.elements.stop - p.elements.start
            out.append(GX[r0:r0 + p.dim * m].reshape(m, p.dim, 3))
            r0 += p.dim * m
        return out

    def elastic_energy(self, x: np.ndarray) -> float:
        """Σ_e V_e ψ(F_e) + ½ Σ_axes xᵀQx (cloth bending) [J] at positions x (n, 3)."""
        from .materials import signed_svd

        total = 0.0
        for p, Ft in zip(self.parts, self.deformation_gradients(x)):
            _, s, _ = signed_svd(Ft)
            total += float(p.volume @ p.material.psi(s, p.dim))
        return total + 0.5 * float((x * (self.Q @ x)).sum())

    def elastic_gradient(self, x: np.ndarray) -> np.ndarray:
        """∂/∂x Σ_e V_e ψ(F_e) (n, 3) [N]: Gᵀ(V ∂ψ/∂Fᵀ), ∂ψ/∂Fᵀ = U diag(∂ψ/∂σ) Vᵀ."""
        from .materials import signed_svd

        blocks = []
        for p, Ft in zip(self.parts, self.deformation_gradients(x)):
            U, s, Vh = signed_svd(Ft)
            dPsi = np.einsum("mij,mj,mjk->mik", U, p.material.grad(s, p.dim), Vh) * p.volume[:, None, None]
            blocks.append(dPsi.reshape(-1, 3))
        return self.G.T @ np.concatenate(blocks) + self.Q @ x

    def incremental_potential_gradient(self, x: np.ndarray, x_tilde: np.ndarray) -> np.ndarray:
        """Gradient (n, 3) [N] of :meth:`incremental_potential`; zero on free nodes at the step's solution."""
        return self.mass[:, None] * (x - x_tilde) / self.h**2 + self.elastic_gradient(x)

    def incremental_potential(self, x: np.ndarray, x_tilde: np.ndarray) -> float:
        """Seed 004 Eq. 1: 1/(2h²)‖M^½(x − x̃)‖² + Σ ψ_e(x) [J]."""
        dx = x - x_tilde
        return float(0.5 / self.h**2 * (self.mass * (dx * dx).sum(1)).sum()) + self.elastic_energy(x)

    def projective_energy(self, x: np.ndarray, x_tilde: np.ndarray, targets: list[np.ndarray],
                          gradients: list[np.ndarray] | None = None) -> float:
        """The PD energy ε(x, p) = 1/(2h²)‖M^½(x − x̃)‖² + Σ_e w_e/2 ‖G_e x − p_e‖² + ½ Σ_axes xᵀQx
        [J] at positions x (n, 3) for local-step targets p (per body, (m_b, d, 3), the stacks of
        :meth:`deformation_gradients`), w_e = ŵ V_e. With p = project(G x) on plain-PD (ARAP)
        bodies it is the incremental potential ε(x) of Eq. 1 (ψ = μ‖F − R‖², ŵ = 2μ), from the
        local step's own output: no extra decomposition. ``gradients``: the stacks
        :meth:`deformation_gradients` (x) if the caller has them already."""
        dx = x - x_tilde
        total = 0.5 / self.h**2 * float((self.mass * (dx * dx).sum(1)).sum())
        Fts = self.deformation_gradients(x) if gradients is None else gradients
        for p, Ft, P in zip(self.parts, Fts, targets):
            r = (Ft - P).reshape(len(Ft), -1)
            # einsum and an elementwise sum, not a BLAS dot: a threaded BLAS costs 10-20 ms here
            # on a loaded machine (26k elements)
            total += 0.5 * p.w_hat * float((p.volume * np.einsum("ij,ij->i", r, r)).sum())
        return total + 0.5 * float((x * (self.Q @ x)).sum())

    def solve(self, b: np.ndarray, q_prev: np.ndarray | None = None) -> np.ndarray:
        """The global step on free nodes: A⁻¹ b = Sᵀ(S b) (on the backend's device; host arrays in
        and out), or one Jacobi sweep from q_prev."""
        if self.inverse is not None:
            if self.backend.name == "numpy":
                return self.inverse.solve(b)
            be = self.backend
            return be.to_host(self._ST_dev @ (self._S_dev @ be.to_device(np.ascontiguousarray(b))))
        return (b - self.A_off @ q_prev) / self.A_diag[:, None]

    def apply_S(self, b: np.ndarray) -> np.ndarray:
        """S b (host arrays in and out; the first half of :meth:`solve`)."""
        if self.backend.name == "numpy":
            return self.inverse.apply_S(b)
        be = self.backend
        return be.to_host(self._S_dev @ be.to_device(np.ascontiguousarray(b)))

    def apply_ST(self, y: np.ndarray) -> np.ndarray:
        """Sᵀ y (host arrays in and out; the second half of :meth:`solve`)."""
        if self.backend.name == "numpy":
            return self.inverse.apply_ST(y)
        be = self.backend
        return be.to_host(self._ST_dev @ be.to_device(np.ascontiguousarray(y)))

    def inverse_columns(self, nodes: np.ndarray) -> sp.csc_matrix:
        """S[:, nodes] (n_free, k) csc: by Theorem 1, column j is non-zero only on the
        elimination-tree path from j to its root."""
        return self._S_csc[:, nodes]

    def inverse_block(self, nodes: np.ndarray, columns: sp.csc_matrix | None = None) -> np.ndarray:
        """(A⁻¹)[nodes][:, nodes] (k, k) dense = (S[:, nodes])ᵀ S[:, nodes]: one SpGEMM
        (``columns``: S[:, nodes] when the caller has it)."""
        Y = self.inverse_columns(nodes) if columns is None else columns
        return (Y.T @ Y).toarray()
