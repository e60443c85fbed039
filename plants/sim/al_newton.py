"""Seed 000 Table II's baselines: direct Newton methods on the strict-operator equation (eq. 19).

Each augmented-Lagrangian loop l of seed 000 (penalty β, multipliers u = −λˡ) asks for the root of

    r(v̂) = A v̂ − b − Σ_i J_iᵀ T(−β J_i v̂ − u_i − β e_i) = 0                      (eq. 19)

with T the strict operator (eq. 17). Its generalized Jacobian ∂r/∂v̂ = A + β Jᵀ ∂T J is
non-symmetric and can be singular, which is why the seed builds CANAL (a convex surrogate solved
by Newton on an SPD matrix) instead. Table II compares CANAL with two direct solvers of eq. 19,
both implemented here for the same problem:

* :func:`damped_semismooth_newton` — Newton steps d = −H⁻¹ r with backtracking (Armijo) on the
  merit ½‖r‖² (the seed's [56]);
* :func:`trust_region_dogleg` — Powell's dogleg on the same merit (the seed's [48]; Nocedal &
  Wright, Numerical Optimization, Alg. 4.1 with the dogleg step of §4.1): the model
  m(d) = ½‖r + H d‖², the step along the path Cauchy point → Newton point cut at the trust radius
  Δ, the ratio ρ = actual / predicted decrease of ½‖r‖² accepting steps (ρ > η = 1e-4) and
  resizing Δ (×¼ for ρ < ¼, ×2 up to Δ_max for ρ > ¾ at the boundary). A singular H leaves the
  Cauchy (steepest-descent) step on the boundary.

Both count every Newton system solved as an inner iteration (the dogleg reuses it across the
rejected trial steps of one iterate, which count too: each costs a residual evaluation), stop an
AL loop by the same rule as CANAL's Newton loop (docs/contact-solvers.md §11), and call an AL loop
that needs more than ``max_inner`` iterations a failure (Table II's "failure").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .contact_laws import rigid_contact_form, strict_operator
from .contact_problem import ContactProblem

__all__ = ["ALNewtonResult", "strict_jacobian", "dogleg_step", "damped_semismooth_newton", "trust_region_dogleg"]


@dataclass(frozen=True)
class ALNewtonResult:
    """Result of a direct Newton baseline over the AL loops.

    Attributes:
        gamma: (3 n_c,) contact impulses (t1, t2, n) of the last loop [N·s].
        v: (n_v,) velocities of the last loop.
        inner_iterations: Newton systems solved (dogleg: trial steps), summed over the loops.
        failed: True when some loop did not reach its tolerance in ``max_inner`` iterations
            (or met a singular Newton matrix, damped Newton only).
        loops: AL loops run.
    """

    gamma: np.ndarray
    v: np.ndarray
    inner_iterations: int
    failed: bool
    loops: int


def strict_jacobian(x: np.ndarray, mu: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """(n_c, 3, 3) generalized Jacobian ∂T/∂x of the strict operator (non-symmetric).

    Args:
        x: (n_c, 3) points λ* (t1, t2, n); mu: (n_c,) friction; rho: (n_c,) ≥ 1 (1 + βc).
    """
    n = x.shape[0]
    J = np.zeros((n, 3, 3))
    pos = x[:, 2] > 0
    ln = np.maximum(x[:, 2], 0) / rho
    s = np.hypot(x[:, 0], x[:, 1])
    inside = s <= mu * ln
    J[pos, 2, 2] = 1.0 / rho[pos]
    J[inside, 0, 0] = J[inside, 1, 1] = 1.0
    slip = ~inside & (s > 0)
    that = x[slip, :2] / s[slip, None]
    P = np.eye(2)[None] - that[:, :, None] * that[:, None, :]
    J[slip, :2, :2] = (mu[slip] * ln[slip] / s[slip])[:, None, None] * P
    sp = slip & pos
    J[sp, :2, 2] = (mu[sp] / rho[sp])[:, None] * (x[sp, :2] / s[sp, None])
    return J


def dogleg_step(r: np.ndarray, H: np.ndarray, d_newton: np.ndarray | None, radius: float) -> np.ndarray:
    """Powell's dogleg step for the model m(d) = ½‖r + H d‖² within ‖d‖ ≤ ``radius``.

    Args:
        r: (n,) residual; H: (n, n) its Jacobian; d_newton: the Newton step −H⁻¹r (None when H is
            singular); radius: trust radius Δ > 0.

    Returns:
        The Newton step if it lies inside; else the steepest-descent step to the boundary if the
        Cauchy point lies outside; else the point where the segment Cauchy → Newton leaves the
        region.
    """
    if d_newton is not None and np.linalg.norm(d_newton) <= radius:
        return d_newton
    g = H.T @ r  # gradient of the model at d = 0
    Hg = H @ g
    gg = g @ g
    if gg == 0.0:
        return np.zeros_like(r)
    d_cauchy = -(gg / max(Hg @ Hg, 1e-300)) * g
    nc = np.linalg.norm(d_cauchy)
    if d_newton is None or nc >= radius:
        return -(radius / np.sqrt(gg)) * g
    # ‖d_C + τ (d_N − d_C)‖ = Δ, τ ∈ [0, 1]
    w = d_newton - d_cauchy
    a, b, c = w @ w, 2.0 * (d_cauchy @ w), nc * nc - radius * radius
    tau = (-b + np.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a)
    return d_cauchy + min(max(tau, 0.0), 1.0) * w


class _Equation19:
    """r(v̂) of eq. 19 at one AL loop, its Jacobian and the stopping rule."""

    def __init__(self, p: ContactProblem, beta: float):
        f = rigid_contact_form(p)
        self.A, self.J, self.e, self.mu = f.A, f.J, f.e, f.mu
        self.n_c, self.n_v = f.n_c, f.n_v
        self.beta = beta
        self.rho = 1 + beta * f.compliance
        self.b = self.A @ f.v_free
        self.Jc = self.J.reshape(self.n_c, 3, self.n_v)
        self.D = 1 / np.sqrt(p.M_diag)
        self.u = np.zeros((self.n_c, 3))

    def residual(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = -self.beta * ((self.J @ v).reshape(self.n_c, 3) + self.e) - self.u
        lam = strict_operator(x, self.mu, self.rho)
        return self.A @ v - self.b - self.J.T @ lam.reshape(-1), x, lam

    def converged(self, v: np.ndarray, r: np.ndarray, x: np.ndarray, lam: np.ndarray) -> bool:
        """CANAL's inner rule: ‖D r‖ ≤ 1e-11 max(‖D A v̂‖, ‖D b‖) + the round-off floor."""
        D = self.D
        scale = max(np.linalg.norm(D * (self.A @ v)), np.linalg.norm(D * self.b), 1e-300)
        active = (lam != 0).any(1)[:, None]
        floor = 64 * np.finfo(float).eps * np.linalg.norm(D * (np.abs(self.J.T) @ (np.abs(x) * active).reshape(-1)))
        return bool(np.linalg.norm(D * r) <= 1e-11 * scale + floor)

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        T = strict_jacobian(x, self.mu, self.rho)
        return self.A + self.beta * np.einsum("cin,cij,cjm->nm", self.Jc, T, self.Jc)


def damped_semismooth_newton(p: ContactProblem, beta: float = 1e4, loops: int = 10,
                             max_inner: int = 100) -> ALNewtonResult:
    """Damped semismooth Newton on eq. 19 (strict operator), Armijo backtracking on ½‖r‖²."""
    eq = _Equation19(p, beta)
    v = p.v0.copy()
    lam = np.zeros((eq.n_c, 3))
    inner, failed = 0, False
    for _ in range(loops):
        eq.u = -lam
        for k in range(max_inner + 1):
            r, x, la = eq.residual(v)
            if eq.converged(v, r, x, la):
                break
            if k == max_inner:
                failed = True
                break
            try:
                d = np.linalg.solve(eq.jacobian(x), -r)
            except np.linalg.LinAlgError:
                failed = True
                break
            inner += 1
            m0 = r @ r
            a = 1.0
            for _ in range(40):
                r2 = eq.residual(v + a * d)[0]
                if r2 @ r2 <= (1 - 1e-4 * a) * m0:
                    break
                a *= 0.5
            v = v + a * d
            if a * np.linalg.norm(d) <= 4 * np.finfo(float).eps * np.linalg.norm(v):
                break  # round-off stagnation: the same rule as CANAL's Newton loop
        lam = eq.residual(v)[2]
    return ALNewtonResult(lam.reshape(-1), v, inner, failed, loops)


def trust_region_dogleg(p: ContactProblem, beta: float = 1e4, loops: int = 10, max_inner: int = 100,
                        eta: float = 1e-4) -> ALNewtonResult:
    """Trust-region dogleg on eq. 19 (strict operator; merit ½‖r‖²), see the module docstring.

    The trust radius starts each AL loop at the first Newton step's length (a full Newton step is
    allowed first) and is capped at Δ_max = 1e3 × that.
    """
    eq = _Equation19(p, beta)
    v = p.v0.copy()
    lam = np.zeros((eq.n_c, 3))
    inner, failed = 0, False
    tiny = 4 * np.finfo(float).eps
    for _ in range(loops):
        eq.u = -lam
        r, x, la = eq.residual(v)
        radius = radius_max = None
        k = 0
        while not eq.converged(v, r, x, la):
            if k >= max_inner:
                failed = True
                break
            H = eq.jacobian(x)
            try:
                d_newton = np.linalg.solve(H, -r)
                if not np.isfinite(d_newton).all():
                    d_newton = None
            except np.linalg.LinAlgError:
                d_newton = None  # singular: the dogleg falls back to the Cauchy step
            if radius is None:
                radius = np.linalg.norm(d_newton) if d_newton is not None else max(np.linalg.norm(v), 1.0)
                radius = max(radius, 1e-12)
                radius_max = 1e3 * radius
            m0 = 0.5 * (r @ r)
            accepted = stalled = False
            while k < max_inner:  # trial steps on this iterate's model until one is accepted
                k += 1
                inner += 1
                d = dogleg_step(r, H, d_newton, radius)
                rm = r + H @ d
                predicted = m0 - 0.5 * (rm @ rm)
                r2, x2, la2 = eq.residual(v + d)
                rho = (m0 - 0.5 * (r2 @ r2)) / predicted if predicted > 0 else -1.0
                nd = np.linalg.norm(d)
                if rho < 0.25:
                    radius = 0.25 * nd if nd > 0 else 0.25 * radius
                elif rho > 0.75 and nd >= 0.99 * radius:
                    radius = min(2.0 * radius, radius_max)
                stalled = nd <= tiny * max(np.linalg.norm(v), 1e-300)
                if rho > eta:
                    v, r, x, la = v + d, r2, x2, la2
                    accepted = True
                    break
                if stalled:
                    break
            if stalled:
                break  # round-off stagnation: the same rule as CANAL's Newton loop
            if not accepted and k >= max_inner:
                failed = not eq.converged(v, r, x, la)
                break
        lam = eq.residual(v)[2]
    return ALNewtonResult(lam.reshape(-1), v, inner, failed, loops)
