"""NSN: the non-smooth Newton method of seed 002 (Macklin et al. 2019) for rigid contact.

Adapted to the velocity-impulse form of :mod:`plants.sim.contact_laws` (unknowns ``v̂`` and the
impulses ``γ``; seed 002 uses positions and forces, the same equations up to the factor δt).
Per contact, with ``y = J v̂ + e`` (and normal compliance ``c``, 0 for rigid):

* normal NCP ``0 ≤ y_n + c γ_n ⟂ γ_n ≥ 0`` through an NCP function with the complementarity
  preconditioner ``r_n = W_nn`` (seed 002 eq. 66 in our units; ``W = J Â⁻¹ Jᵀ``): Fischer–
  Burmeister ``φ = a + r b − √(a² + r² b²)`` (eq. 93-95) or min-map (eq. 96-98);
* smooth isotropic friction as a fixed-point "compliance" (eq. 35-36, 100-105 with the digest's
  erratum: ``v`` not ``v²`` in eq. 102/104): ``φ_f = y_t + W_f γ_t`` with ``W_f`` held constant
  in the Newton matrix, ``r_f = ½ tr W_tt``; friction rows of contacts with ``μ γ_n ≤ 0`` are
  zeroed and ``W_f = 1`` (drives ``γ_t → 0``; the digest's reading of the erratum "λ_n ≥ 0").

Each Newton step solves the Schur complement ``(J̃ Â⁻¹ J̃ᵀ + C + εI) Δγ = J̃ Â⁻¹ g − h``
(eq. 59-62) by Jacobi-preconditioned conjugate residual (§8.2), ``Δv = Â⁻¹(J̃ᵀΔγ − g)``, and takes
the damped step ``t = 0.75`` (§8.1) or a backtracking line search on ``‖(g, h)‖``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .accuracy import contact_residual
from .canal import ALSolverResult, WarmStartedSolver
from .contact_laws import rigid_contact_form
from .contact_problem import (
    ContactSolverStatus,
    register_contact_solver,
)

__all__ = ["NSNOptions", "NSNSolver", "conjugate_residual", "fischer_burmeister"]


@dataclass(frozen=True)
class NSNOptions:
    """Options of :class:`NSNSolver` (defaults: seed 002 §8-9 unless stated).

    Attributes:
        ncp: "fb" (Fischer–Burmeister, the paper's default) or "min" (min-map).
        max_iterations: Newton iteration budget (the paper uses fixed counts, 4-8).
        tol: stop when the accuracy metric of seed 000 ≤ tol (ours; the paper has no tolerance).
        linear_iterations: conjugate-residual iterations per Newton step (paper 10-80).
        linear_rel_tol: CR stops early when the preconditioned residual fell by this factor.
        step: damping t of the constant step (paper 0.75).
        line_search: "none" (constant t) or "backtracking" (on ‖(g, h)‖, from t = 1, halving).
        epsilon: identity shift ε of the Schur matrix relative to its mean diagonal (paper 1e-6,
            absolute in its units).
        start: "zero" (v̂ = 0, γ = 0, the paper's choice) or "warm" (problem.v0 and the
            previous solve's impulses when the contact set is the same).
        theta: mid-step θ of the constraint velocity (as CANAL).
        blas_threads: BLAS threads during the solve.
    """

    ncp: str = "fb"
    max_iterations: int = 100
    tol: float = 1e-10
    linear_iterations: int = 50
    linear_rel_tol: float = 1e-14
    step: float = 0.75
    line_search: str = "none"
    epsilon: float = 1e-6
    start: str = "zero"
    theta: float = 0.0
    blas_threads: int | None = 1

    def __post_init__(self) -> None:
        if self.ncp not in ("fb", "min"):
            raise ValueError(f"ncp must be 'fb' or 'min', got {self.ncp!r}")
        if self.line_search not in ("none", "backtracking"):
            raise ValueError(f"line_search must be 'none' or 'backtracking', got {self.line_search!r}")
        if self.start not in ("zero", "warm"):
            raise ValueError(f"start must be 'zero' or 'warm', got {self.start!r}")
        for name in ("max_iterations", "linear_iterations"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be finite and > 0, got {self.tol}")
        if not 0 < self.step <= 1:
            raise ValueError(f"step must lie in (0, 1], got {self.step}")
        if not (self.epsilon >= 0 and self.linear_rel_tol >= 0):
            raise ValueError("epsilon and linear_rel_tol must be >= 0")
        if not 0 <= self.theta < 1:
            raise ValueError(f"theta must lie in [0, 1), got {self.theta}")


def fischer_burmeister(a: np.ndarray, b: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scaled FB function ``φ = a + r b − √(a² + r² b²)`` and its partials (seed 002 eq. 93-95).

    Returns:
        (φ, ∂φ/∂a, ∂φ/∂b); at (0, 0) the Clarke element (0, r) of the paper.
    """
    rb = r * b
    root = np.hypot(a, rb)
    safe = np.where(root > 0, root, 1.0)
    da = np.where(root > 0, 1.0 - a / safe, 0.0)
    db = np.where(root > 0, (1.0 - rb / safe) * r, r)
    return a + rb - root, da, db


def conjugate_residual(matvec, b: np.ndarray, diag: np.ndarray, max_iterations: int, rel_tol: float = 0.0
                       ) -> tuple[np.ndarray, int]:
    """Jacobi-preconditioned conjugate residual for a symmetric (PSD) system (Saad 2003, as in
    the digest §2.5); starts from 0. Returns (x, iterations)."""
    Pinv = 1.0 / diag
    x = np.zeros_like(b)
    r = b.copy()
    z = Pinv * r
    Az = matvec(z)
    p, Ap = z.copy(), Az.copy()
    rho = float(z @ Az)
    z0 = np.linalg.norm(z)
    k = 0
    for k in range(1, max_iterations + 1):
        PAp = Pinv * Ap
        den = float(Ap @ PAp)
        if den <= 0 or rho == 0:
            k -= 1
            break
        a = rho / den
        x += a * p
        r -= a * Ap
        z -= a * PAp
        if np.linalg.norm(z) <= rel_tol * z0:
            break
        Az = matvec(z)
        rho_new = float(z @ Az)
        beta = rho_new / rho
        rho = rho_new
        p = z + beta * p
        Ap = Az + beta * Ap
    return x, k


@register_contact_solver("nsn")
class NSNSolver(WarmStartedSolver):
    """Non-smooth Newton (seed 002 Algorithm 1) on rigid contact. ``NSNSolver(options=None, **overrides)``."""

    name = "nsn"
    options_type = NSNOptions

    # ------------------------------------------------------------------ residual and Jacobian
    def _system(self, form, Jc, v, gam, r_n, r_f):
        """g, h, J̃ rows (n_c, 3, n_v), C blocks (n_c, 3) diagonal entries."""
        o = self.options
        mu, c = form.mu, form.compliance
        y = (Jc @ v) + form.e
        gn = gam[:, 2]
        a = y[:, 2] + c * gn
        if o.ncp == "fb":
            phi_n, da, db = fischer_burmeister(a, gn, r_n)
        else:
            act = a <= r_n * gn
            phi_n = np.where(act, a, r_n * gn)
            da = act.astype(float)
            db = np.where(act, 0.0, r_n)
        # friction fixed-point compliance W_f (eq. 35, 100-105)
        vt = np.hypot(y[:, 0], y[:, 1])
        gt = np.hypot(gam[:, 0], gam[:, 1])
        mgn = mu * gn
        s = mgn - gt
        if o.ncp == "fb":
            root = np.hypot(vt, r_f * s)
            num = r_f * (root - r_f * s)
            den = vt + r_f * mgn - root
            Wf = np.where(den > 1e-300, num / np.where(den > 1e-300, den, 1.0), 0.0)
        else:
            Wf = np.where(vt <= r_f * s, 0.0, (vt - r_f * s) / np.where(mgn > 0, mgn, 1.0))
        active = mgn > 0
        Wf = np.where(active, np.maximum(Wf, 0.0), 1.0)
        Jt = Jc.copy()
        Jt[:, 2, :] *= da[:, None]
        Jt[~active, :2, :] = 0.0
        h = np.empty_like(y)
        h[:, :2] = np.where(active[:, None], y[:, :2], 0.0) + Wf[:, None] * gam[:, :2]
        h[:, 2] = phi_n
        C = np.stack([Wf, Wf, da * c + db], axis=1)
        return h, Jt, C

    def _solve(self, problem, v_guess, lambda_guess) -> ALSolverResult:
        o = self.options
        t0 = time.perf_counter()
        form = rigid_contact_form(problem, o.theta)
        n_c, n_v = form.n_c, form.n_v
        tree = form.tree_solver()
        A = form.A
        Jc = form.J.reshape(n_c, 3, n_v)
        X = tree.solve(form.J.T) if n_c else np.zeros((n_v, 0))
        Wd = np.einsum("cin,nci->ci", Jc, X.reshape(n_v, n_c, 3)) if n_c else np.zeros((0, 3))
        r_n = Wd[:, 2]  # complementarity preconditioner (eq. 66), velocity/impulse units
        r_f = 0.5 * (Wd[:, 0] + Wd[:, 1])
        if o.start == "zero":
            v_hat = np.zeros(n_v)
            gam = np.zeros((n_c, 3))
        else:
            v_hat = form.mid_velocity(problem.v0)
            warm = self._warm.get(problem)
            gam = np.zeros((n_c, 3)) if warm is None else warm
        if v_guess is not None:
            v_hat = form.mid_velocity(np.asarray(v_guess, float).reshape(-1))
        if lambda_guess is not None:
            gam = np.array(lambda_guess, dtype=float).reshape(n_c, 3)
        b = A @ form.v_free
        history = []
        inner = ls_total = 0
        status, message = ContactSolverStatus.MAX_ITERATIONS, f"no convergence in {o.max_iterations} Newton iterations"
        it = 0
        t_lin = 0.0

        def residuals(v, g_):
            h, Jt, C = self._system(form, Jc, v, g_, r_n, r_f)
            g = A @ v - b - Jt.reshape(3 * n_c, n_v).T @ g_.reshape(-1)
            return g, h, Jt, C

        g, h, Jt, C = residuals(v_hat, gam)
        while True:
            acc = contact_residual(form, gam.reshape(-1)).residual if n_c else 0.0
            history.append(acc)
            if not np.isfinite(acc):
                status, message = ContactSolverStatus.NUMERICAL_ERROR, "non-finite impulses"
                break
            if acc <= o.tol:
                status, message = ContactSolverStatus.SOLVED, ""
                if n_c:  # report the velocities consistent with the impulses
                    v_hat = form.v_free + X @ gam.reshape(-1)
                else:
                    v_hat = form.v_free.copy()
                break
            if it >= o.max_iterations:
                break
            it += 1
            Jf = Jt.reshape(3 * n_c, n_v)
            Cf = C.reshape(-1)
            diag = np.einsum("cin,nci->ci", Jt, tree.solve(Jf.T).reshape(n_v, n_c, 3)).reshape(-1) + Cf
            eps = o.epsilon * float(np.mean(diag))
            diag = diag + eps

            def matvec(x):
                return Jf @ tree.solve(Jf.T @ x) + (Cf + eps) * x

            tl = time.perf_counter()
            rhs = Jf @ tree.solve(g) - h.reshape(-1)
            dgam, k = conjugate_residual(matvec, rhs, diag, o.linear_iterations, o.linear_rel_tol)
            t_lin += time.perf_counter() - tl
            inner += k
            dv = tree.solve(Jf.T @ dgam - g)
            dgam = dgam.reshape(n_c, 3)
            t = o.step
            if o.line_search == "backtracking":
                merit0 = np.hypot(np.linalg.norm(g), np.linalg.norm(h))
                t = 1.0
                for _ in range(30):
                    ls_total += 1
                    g2, h2, _, _ = residuals(v_hat + t * dv, gam + t * dgam)
                    if np.hypot(np.linalg.norm(g2), np.linalg.norm(h2)) < (1 - 1e-4 * t) * merit0:
                        break
                    t *= 0.5
            v_hat = v_hat + t * dv
            gam = gam + t * dgam
            g, h, Jt, C = residuals(v_hat, gam)
        if status.ok and o.start == "warm":
            self._warm.put(problem, gam)
        return ALSolverResult(
            status=status, v=form.next_velocity(v_hat), gamma=gam.reshape(-1).copy(), iterations=it,
            line_search_iterations=ls_total, residual=history[-1], solve_time=time.perf_counter() - t0,
            timings={"linear": t_lin}, residual_history=tuple(history), solver="nsn", message=message,
            inner_iterations=inner,
        )
