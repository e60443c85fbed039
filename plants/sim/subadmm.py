"""SubADMM: subsystem-based ADMM (seed 000 §VI, Algorithm 2), and the full-system ADMM ablation.

Subsystems are the ground-rooted trees of the :class:`ContactProblem` (a free body or a whole
robot). Every contact is split into one *piece* per tree it touches, with its own slack copy
``z_ij = J_ij v̂_j`` (eq. 29-32); ``|Z_i|`` is the number of pieces. With ``u_ij = −λ_i``
(eq. 39) one iteration is

    (A_j + β Σ_i J_ijᵀ J_ij) v̂_j = b_j + Σ_i J_ijᵀ (β z_ij + λ_i)                (eq. 34)
    λ_i ← T(λ_i − β (Σ_j J_ij v̂_j + e_i)/|Z_i|)  (strict operator, ρ = 1 + βc/|Z_i|)  (eq. 38)
    z_ij ← J_ij v̂_j + (λ_i⁺ − λ_i)/β

with the subsystem matrices factored once per step (again only when β changes), residuals
``θ_p = max ‖J_ij v̂_j − z_ij‖`` and ``θ_d = max_j ‖A_j v̂_j − b_j − Σ_i J_ijᵀ λ_i‖`` (eq. 42), the
optional adaptive penalty (eq. 43) and β₀ from the pseudo-density (§VI-D).

Variant ``"no_sub"`` is plain ADMM on the whole system (eq. 28): one slack per contact and the
coupled matrix ``A + β JᵀJ`` factored per island. The body-level splitting of eq. (30)-(31) and
the "No Body" ablation need per-body Jacobians ``J_{i,b}``, ``J_{b,j}`` and body inertias, which
``ContactProblem`` does not carry (see ``docs/contact-solvers.md``); contacts between two trees
are still split per tree, and a contact between two bodies of one tree is one piece.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from .accuracy import contact_residual
from .canal import ALSolverResult, WarmStartedSolver
from .contact_laws import TreeBlockSolver, contact_islands, rigid_contact_form, strict_operator
from .contact_problem import (
    ContactProblem,
    ContactSolverStatus,
    register_contact_solver,
)

__all__ = ["SubADMMOptions", "SubADMMSolver", "pseudo_density_beta"]


@dataclass(frozen=True)
class SubADMMOptions:
    """Options of :class:`SubADMMSolver`.

    Attributes:
        variant: "sub" (SubADMM) or "no_sub" (full-system ADMM, eq. 28; Table III ablation).
        max_iterations: iteration budget l_max (Table III: 100).
        tol: stop when the accuracy metric of seed 000 §VII ≤ tol.
        residual_tol: also stop when θ_p + θ_d ≤ residual_tol (θ_th; 0 disables).
        metric_every: evaluate the accuracy metric (the ``tol`` test, one Â⁻¹ solve) every k
            iterations and at the last one; θ_p, θ_d are computed only when needed (adaptive
            penalty, ``residual_tol``, last iteration). ``residual_history`` has one entry per
            evaluation.
        beta: fixed initial β [kg]; None = the pseudo-density rule (geometric mean of
            mass / number of contact pieces over the subsystems in contact).
        adaptive_penalty: the optional rule of eq. (43).
        gamma: γ > 1 of eq. (43) (ours: 10).
        theta: mid-step θ of the constraint velocity (as CANAL).
        warm_start: start from the previous solve's impulses when the contact set is the same.
        blas_threads: BLAS threads during the solve.
    """

    variant: str = "sub"
    max_iterations: int = 100
    tol: float = 1e-10
    residual_tol: float = 0.0
    beta: float | None = None
    metric_every: int = 1
    adaptive_penalty: bool = False
    gamma: float = 10.0
    theta: float = 0.0
    warm_start: bool = True
    blas_threads: int | None = 1

    def __post_init__(self) -> None:
        if self.variant not in ("sub", "no_sub"):
            raise ValueError(f"variant must be 'sub' or 'no_sub', got {self.variant!r}")
        if int(self.max_iterations) < 1:
            raise ValueError(f"max_iterations must be >= 1, got {self.max_iterations}")
        if int(self.metric_every) < 1:
            raise ValueError(f"metric_every must be >= 1, got {self.metric_every}")
        if not (np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be finite and > 0, got {self.tol}")
        if not self.residual_tol >= 0:
            raise ValueError(f"residual_tol must be >= 0, got {self.residual_tol}")
        if self.beta is not None and not (np.isfinite(self.beta) and self.beta > 0):
            raise ValueError(f"beta must be None or finite and > 0, got {self.beta}")
        if not self.gamma > 1:
            raise ValueError(f"gamma must be > 1, got {self.gamma}")
        if not 0 <= self.theta < 1:
            raise ValueError(f"theta must lie in [0, 1), got {self.theta}")


def _pieces(problem: ContactProblem, split: bool):
    """(contact index (n_p,), tree index (n_p,), |Z_i| (n_c,)) of the slack pieces."""
    ct = problem.contact_trees
    n_c = problem.n_c
    if not split:
        return np.arange(n_c), np.maximum(ct[:, 0], 0), np.ones(n_c)
    ci = np.concatenate([np.flatnonzero(ct[:, 0] >= 0), np.flatnonzero(ct[:, 1] >= 0)])
    tj = np.concatenate([ct[ct[:, 0] >= 0, 0], ct[ct[:, 1] >= 0, 1]])
    return ci, tj, np.maximum(np.bincount(ci, minlength=n_c), 1).astype(float)


def _piece_blocks(problem: ContactProblem, J: np.ndarray, ci: np.ndarray, tj: np.ndarray, split: bool):
    """Compact rows of each piece: (n_p, 3, s) blocks and their dof indices (n_p, s), padded with
    the index n_v. Split pieces cover one tree (s = largest tree); unsplit contacts both trees."""
    ts = problem.tree_starts
    sizes = np.diff(ts)
    s_max = int(sizes.max())
    n_v = problem.n_v
    k = np.arange(s_max)

    def tree_cols(t):
        has = t >= 0
        start = np.where(has, ts[np.maximum(t, 0)], 0)
        size = np.where(has, sizes[np.maximum(t, 0)], 0)
        return np.where(k[None, :] < size[:, None], start[:, None] + k[None, :], n_v)

    if split:
        cols = tree_cols(tj)
    else:
        ct = problem.contact_trees
        cols = np.concatenate([tree_cols(ct[:, 0]), tree_cols(ct[:, 1])], axis=1)
    J_ext = np.concatenate([J, np.zeros((J.shape[0], 1))], axis=1).reshape(-1, 3, n_v + 1)
    blocks = np.take_along_axis(J_ext[ci], cols[:, None, :], axis=2)
    return blocks, cols


def pseudo_density_beta(problem: ContactProblem) -> float:
    """β₀ of §VI-D: the geometric mean over subsystems in contact of mass / contact pieces.

    The tree's mass is taken as the largest diagonal entry of its block of ``A`` (the total mass
    for a free body or a floating base with world-frame linear velocity first).
    """
    ci, tj, _ = _pieces(problem, True)
    if ci.size == 0:
        return 1.0
    counts = np.bincount(tj, minlength=problem.n_trees)
    ts = problem.tree_starts
    d = np.diag(problem.A)
    mass = np.maximum.reduceat(d, ts[:-1])
    has = counts > 0
    return float(np.exp(np.mean(np.log(mass[has] / counts[has]))))


@register_contact_solver("subadmm")
class SubADMMSolver(WarmStartedSolver):
    """SubADMM (seed 000 Algorithm 2). ``SubADMMSolver(options=None, **overrides)``."""

    name = "subadmm"
    options_type = SubADMMOptions

    def _factor(self, problem, A, Jp, cols, beta, split):
        n_v = A.shape[0]
        B = np.einsum("pks,pkt->pst", Jp, Jp)  # per-piece J_pᵀ J_p blocks
        flat = (cols[:, :, None] * (n_v + 1) + cols[:, None, :]).reshape(-1)
        JtJ = np.bincount(flat, weights=B.reshape(-1), minlength=(n_v + 1) ** 2).reshape(n_v + 1, n_v + 1)
        K = A + beta * JtJ[:n_v, :n_v]
        if split:
            return TreeBlockSolver(K, problem.tree_starts).solve
        facs = [(dofs, cho_factor(K[np.ix_(dofs, dofs)], check_finite=False)) for dofs in contact_islands(problem)]

        def solve(rhs):
            out = np.empty_like(rhs)
            for dofs, f in facs:
                out[dofs] = cho_solve(f, rhs[dofs], check_finite=False)
            return out

        return solve

    def _solve(self, problem, v_guess, lambda_guess) -> ALSolverResult:
        o = self.options
        t0 = time.perf_counter()
        split = o.variant == "sub"
        form = rigid_contact_form(problem, o.theta)
        n_c, n_v = form.n_c, form.n_v
        A, mu, c = form.A, form.mu, form.compliance
        b = A @ form.v_free
        ci, tj, nz = _pieces(problem, split)
        Jp, cols = _piece_blocks(problem, form.J, ci, tj, split)  # (n_p, 3, s), (n_p, s)
        beta = float(o.beta) if o.beta is not None else pseudo_density_beta(problem)
        v = form.mid_velocity(np.asarray(problem.v0 if v_guess is None else v_guess, float))
        if lambda_guess is not None:
            lam = np.array(lambda_guess, dtype=float).reshape(n_c, 3)
        else:
            warm = self._warm.get(problem) if o.warm_start else None
            lam = np.zeros((n_c, 3)) if warm is None else warm
        v_ext = np.zeros(n_v + 1)  # index n_v = the padding column

        def piece_velocity(v):
            v_ext[:n_v] = v
            return np.einsum("pks,ps->pk", Jp, v_ext[cols])

        def scatter(w):
            contrib = np.einsum("pks,pk->ps", Jp, w)
            return np.bincount(cols.reshape(-1), weights=contrib.reshape(-1), minlength=n_v + 1)[:n_v]

        z = piece_velocity(v)
        t_factor = time.perf_counter()
        try:
            solve = self._factor(problem, A, Jp, cols, beta, split)
        except (LinAlgError, ValueError) as err:
            return self._fail(problem, form, v, lam, t0, f"factorization failed: {err}")
        t_factor = time.perf_counter() - t_factor
        n_factor = 1
        ts = problem.tree_starts
        history = [contact_residual(form, lam.reshape(-1)).residual if n_c else 0.0]
        status, message = ContactSolverStatus.MAX_ITERATIONS, f"no convergence in {o.max_iterations} iterations"
        theta_p = theta_d = np.nan
        it = 0
        if n_c == 0:
            v = form.v_free.copy()
            status, message = ContactSolverStatus.SOLVED, ""
        while not status.ok and it < o.max_iterations:
            it += 1
            # (a) v-step per subsystem (eq. 34)
            w = beta * z + lam[ci]
            rhs = b + scatter(w)
            v = solve(rhs)
            # (b) z/λ-step per constraint (eq. 35-38), (c) u = −λ (eq. 39)
            jv_p = piece_velocity(v)
            jv = jv_p if not split else np.zeros((n_c, 3))
            if split:
                np.add.at(jv, ci, jv_p)
            x = lam - beta * (jv + form.e) / nz[:, None]
            lam_new = strict_operator(x, mu, 1.0 + beta * c / nz)
            z = jv_p + (lam_new[ci] - lam[ci]) / beta
            theta_p = float(np.max(np.linalg.norm(lam_new - lam, axis=1)) / beta)
            lam = lam_new
            last = it == o.max_iterations
            if o.adaptive_penalty or o.residual_tol > 0 or last:
                r = A @ v - b - scatter(lam[ci])
                theta_d = float(np.sqrt(np.max(np.add.reduceat(r * r, ts[:-1]))))
            if it % o.metric_every and not last:
                continue  # the accuracy metric (stopping test) only every metric_every iterations
            accuracy = contact_residual(form, lam.reshape(-1))
            acc = accuracy.residual
            history.append(acc)
            if not np.isfinite(acc):
                status, message = ContactSolverStatus.NUMERICAL_ERROR, "non-finite impulses"
                break
            if acc <= o.tol or (o.residual_tol > 0 and theta_p + theta_d <= o.residual_tol):
                status, message = ContactSolverStatus.SOLVED, ""
                v = accuracy.v_hat  # the velocities of the converged impulses (dynamics exact)
                break
            if o.adaptive_penalty and theta_p > 0 and theta_d > 0 and (
                    theta_p > o.gamma * theta_d or theta_d > o.gamma * theta_p):
                beta *= np.sqrt(theta_p / theta_d)  # eq. (43)
                tf = time.perf_counter()
                solve = self._factor(problem, A, Jp, cols, beta, split)
                t_factor += time.perf_counter() - tf
                n_factor += 1
        if status.ok and o.warm_start:
            self._warm.put(problem, lam)
        return ALSolverResult(
            status=status, v=form.next_velocity(v), gamma=lam.reshape(-1).copy(), iterations=it,
            residual=history[-1], solve_time=time.perf_counter() - t0,
            timings={"factor": t_factor, "factorizations": float(n_factor), "theta_p": theta_p, "theta_d": theta_d},
            residual_history=tuple(history), solver="subadmm" if split else "subadmm[no_sub]", message=message,
            beta=beta, primal_residual=theta_p,
        )

    def _fail(self, problem, form, v, lam, t0, message):
        return ALSolverResult(
            status=ContactSolverStatus.NUMERICAL_ERROR, v=form.next_velocity(v), gamma=lam.reshape(-1),
            iterations=0, solve_time=time.perf_counter() - t0, solver="subadmm", message=message,
        )
