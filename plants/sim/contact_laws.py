"""The rigid contact model of seed 000 (Lee et al., "Variations of Augmented Lagrangian for
Robotic Multi-Contact Simulation") on top of the solver-neutral :class:`ContactProblem`.

Math and equation numbers in ``docs/contact-solvers.md``. In short, per contact ``i`` (frame
``(t1, t2, n)``, normal last), with the mid-step velocity ``v̂ = θ v₀ + (1 − θ) v`` (seed 000
eq. 2) and the compressed dynamics ``Â v̂ = b̂ + Jᵀλ`` (eq. 8):

* Signorini–Coulomb (eq. 5) with an optional normal compliance ``c_i`` (soft contact):
  ``0 ≤ λ_n ⟂ J_n v̂ + e_n + c λ_n ≥ 0``, ``‖λ_t‖ ≤ μ λ_n``, maximal dissipation in the slip case.
  ``e_n = φ₀/(δt + τ_d)`` (the Baumgarte-like bias the seed leaves open; the same bias as SAP's
  ``v̂_c``) and ``c = 1/(δt k (δt + τ_d))`` (0 for ``k = inf``: rigid). With ``c = 0`` this is
  exactly the rigid model of the seed; with ``c > 0`` it is SAP's compliant normal law without
  SAP's regularization of friction and without its near-rigid floor.
* The strict operator ``T`` (eq. 16-17) and the proximal cone projection ``Π`` (eq. 21, 23) in the
  metric that the compliance induces (``diag(1, 1, 1 + βc)``), both closed form and vectorized.

Joint-space constraints reach these solvers as frictionless contacts: joint limits (eq. 3, the
hard constraint with the compliance c) and bilateral rows (welds, ball and distance constraints,
couplers: eq. 4 with a finite stiffness, or near-rigid) as two opposed frictionless rows each
(:func:`plants.sim.contact_problem.unilateral_form`, exact for this linear law). The scalar
hard/soft operators (eq. 14/15) are provided and tested as the per-row references.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .contact_problem import ContactProblem

__all__ = [
    "RigidContactForm",
    "rigid_contact_form",
    "strict_operator",
    "project_cone",
    "project_cone_with_jacobian",
    "hard_operator",
    "soft_operator",
    "TreeBlockSolver",
    "contact_islands",
    "island_contacts",
    "jt_g_j",
]


# ----------------------------------------------------------------------------- per-tree linear algebra
class TreeBlockSolver:
    """Cholesky factors of a matrix that is block diagonal over trees, batched by block size.

    Args:
        A: (n_v, n_v) SPD, block diagonal over ``tree_starts``.
        tree_starts: (n_trees + 1,) dof offsets.
    """

    def __init__(self, A: np.ndarray, tree_starts: np.ndarray):
        self.n = A.shape[0]
        ts = np.asarray(tree_starts)
        sizes = np.diff(ts)
        self.groups = []  # (idx (n_t, s), inverse blocks (n_t, s, s))
        for size in np.unique(sizes):
            trees = np.flatnonzero(sizes == size)
            idx = ts[trees][:, None] + np.arange(size)[None, :]
            blocks = A[idx[:, :, None], idx[:, None, :]]
            L = np.linalg.cholesky(blocks)  # raises LinAlgError if not SPD
            Linv = np.linalg.inv(L)
            self.groups.append((idx, np.swapaxes(Linv, 1, 2) @ Linv))

    def solve(self, b: np.ndarray) -> np.ndarray:
        """``A⁻¹ b`` for b of shape (n_v,) or (n_v, k)."""
        out = np.empty_like(b, dtype=float)
        for idx, inv in self.groups:
            if b.ndim == 1:
                out[idx] = np.einsum("tij,tj->ti", inv, b[idx])
            else:
                out[idx] = np.einsum("tij,tjk->tik", inv, b[idx])
        return out


# ----------------------------------------------------------------------------- the formulation
@dataclass(frozen=True)
class RigidContactForm:
    """Seed 000's velocity-impulse form ``Â v̂ = b̂ + Jᵀλ`` of a :class:`ContactProblem`.

    Attributes:
        problem: the source problem.
        theta: θ of the mid-step velocity ``v̂ = θ v₀ + (1 − θ) v`` (eq. 2), in [0, 1).
        A: (n_v, n_v) ``Â = A/(1 − θ)``.
        v_free: (n_v,) ``v̂* = θ v₀ + (1 − θ) v*``: the mid-step velocity without contact;
            ``b̂ = Â v̂*``.
        J: (3 n_c, n_v) contact Jacobian (rows t1, t2, n).
        e: (n_c, 3) constraint bias ``(0, 0, e_n)``, ``e_n = φ₀/(δt + τ_d)`` [m/s].
        compliance: (n_c,) ``c = 1/(δt k (δt + τ_d))`` [m/(N s²)]; 0 = rigid.
        mu: (n_c,) friction coefficients.
    """

    problem: ContactProblem
    theta: float
    A: np.ndarray
    v_free: np.ndarray
    J: np.ndarray
    e: np.ndarray
    compliance: np.ndarray
    mu: np.ndarray

    @property
    def n_c(self) -> int:
        return self.problem.n_c

    @property
    def n_v(self) -> int:
        return self.problem.n_v

    def next_velocity(self, v_hat: np.ndarray) -> np.ndarray:
        """``v = (v̂ − θ v₀)/(1 − θ)``: the next-step velocity from the mid-step one."""
        return (v_hat - self.theta * self.problem.v0) / (1.0 - self.theta)

    def mid_velocity(self, v: np.ndarray) -> np.ndarray:
        """``v̂ = θ v₀ + (1 − θ) v``."""
        return self.theta * self.problem.v0 + (1.0 - self.theta) * v

    @cached_property
    def _tree_solver(self) -> TreeBlockSolver:
        return TreeBlockSolver(self.A, self.problem.tree_starts)

    def tree_solver(self) -> TreeBlockSolver:
        """Block Cholesky of ``Â`` per tree (computed once per form)."""
        return self._tree_solver


def rigid_contact_form(problem: ContactProblem, theta: float = 0.0) -> RigidContactForm:
    """Seed 000's form of ``problem`` (see :class:`RigidContactForm`).

    Args:
        problem: the contact step.
        theta: mid-step parameter θ ∈ [0, 1). θ = 0 (default) puts the constraints on the next
            velocity ``v``, the same velocity the SAP problem constrains; this is the natural choice
            with the stepper's symplectic Euler (positions advance with ``v``).
    """
    if not isinstance(problem, ContactProblem):
        raise TypeError(f"problem must be a ContactProblem, got {type(problem).__name__}")
    theta = float(theta)
    if not (0.0 <= theta < 1.0):
        raise ValueError(f"theta must lie in [0, 1), got {theta}")
    p = problem
    if theta == 0.0:  # Â = A: a read-only view, no copy (n_v² floats: 1.9 MB for 27 A1s)
        A = p.A.view()
        A.flags.writeable = False
    else:
        A = p.A / (1.0 - theta)
    v_free = theta * p.v0 + (1.0 - theta) * p.v_star
    e = np.zeros((p.n_c, 3))
    e[:, 2] = p.phi0 / (p.dt + p.dissipation)
    with np.errstate(divide="ignore"):
        c = 1.0 / (p.dt * p.stiffness * (p.dt + p.dissipation))  # 0 for k = inf
    return RigidContactForm(problem=p, theta=theta, A=A, v_free=v_free, J=p.J, e=e,
                            compliance=np.asarray(c, float), mu=p.mu)


# ----------------------------------------------------------------------------- operators
def _check_points(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[1] != 3:
        raise ValueError(f"points must have shape (n_c, 3) ordered (t1, t2, n), got {x.shape}")
    return x


def strict_operator(x: np.ndarray, mu: np.ndarray, rho: np.ndarray | float = 1.0) -> np.ndarray:
    """The strict operator T of seed 000 eq. (17), with normal compliance.

    ``λ_n = max(x_n, 0)/ρ`` then ``λ_t = Π_{disk(μ λ_n)}(x_t)`` (a nested, not a Euclidean,
    projection). ``ρ = 1 + β c`` (1 for rigid contact).

    Args:
        x: (n_c, 3) points ``λ*`` (t1, t2, n).
        mu: (n_c,) friction coefficients.
        rho: (n_c,) or scalar ≥ 1.

    Returns:
        (n_c, 3) impulses λ.
    """
    x = _check_points(x)
    lam_n = np.maximum(x[:, 2], 0.0) / rho
    s = np.hypot(x[:, 0], x[:, 1])
    radius = mu * lam_n
    scale = np.where(s > radius, radius / np.where(s > 0, s, 1.0), 1.0)
    out = np.empty_like(x)
    out[:, :2] = x[:, :2] * scale[:, None]
    out[:, 2] = lam_n
    return out


def project_cone(x: np.ndarray, mu: np.ndarray, rho: np.ndarray | float = 1.0) -> np.ndarray:
    """Proximal projection onto the Coulomb cone ``C = {‖λ_t‖ ≤ μ λ_n}`` (seed 000 eq. 21).

    ``Π(x) = argmin_{λ ∈ C} ½‖λ − x‖² + ½(ρ − 1) λ_n²``; for ρ = 1 (rigid) the Euclidean
    projection. Closed form with ``s = ‖x_t‖``: stick (``s ≤ μ x_n/ρ``): ``(x_t, x_n/ρ)``;
    open (``x_n + μ s ≤ 0``): 0; slip: ``λ_n = (x_n + μ s)/(μ² + ρ)``, ``λ_t = μ λ_n x_t/s``.

    Args:
        x: (n_c, 3) points (t1, t2, n).
        mu: (n_c,) friction coefficients ≥ 0.
        rho: (n_c,) or scalar ≥ 1.

    Returns:
        (n_c, 3) projections.
    """
    return project_cone_with_jacobian(x, mu, rho, want_jacobian=False)[0]


def project_cone_with_jacobian(x: np.ndarray, mu: np.ndarray, rho: np.ndarray | float = 1.0,
                               want_jacobian: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """As :func:`project_cone`, also the (symmetric PSD) generalized Jacobian ∂Π/∂x (seed 000
    eq. 23, with the digest's transposition erratum applied), shape (n_c, 3, 3)."""
    x = _check_points(x)
    n_c = x.shape[0]
    mu = np.broadcast_to(np.asarray(mu, float), (n_c,))
    rho = np.broadcast_to(np.asarray(rho, float), (n_c,))
    xn = x[:, 2]
    s = np.hypot(x[:, 0], x[:, 1])
    stick = (xn >= 0.0) & (s * rho <= mu * xn)
    open_ = ~stick & (xn + mu * s <= 0.0)
    slip = ~(stick | open_)
    lam = np.zeros_like(x)
    lam[stick, :2] = x[stick, :2]
    lam[stick, 2] = xn[stick] / rho[stick]
    denom = mu * mu + rho
    jac = None
    if slip.any():
        ms, ss = mu[slip], s[slip]
        that = x[slip, :2] / ss[:, None]
        ln = (xn[slip] + ms * ss) / denom[slip]
        lam[slip, 2] = ln
        lam[slip, :2] = (ms * ln)[:, None] * that
    if want_jacobian:
        jac = np.zeros((n_c, 3, 3))
        i = np.flatnonzero(stick)
        jac[i, 0, 0] = 1.0
        jac[i, 1, 1] = 1.0
        jac[i, 2, 2] = 1.0 / rho[i]
        if slip.any():
            d = denom[slip]
            P = that[:, :, None] * that[:, None, :]
            Pperp = np.eye(2)[None] - P
            Js = np.empty((ms.size, 3, 3))
            Js[:, :2, :2] = (ms * ms / d)[:, None, None] * P + (ms * ln / ss)[:, None, None] * Pperp
            off = (ms / d)[:, None] * that
            Js[:, :2, 2] = off
            Js[:, 2, :2] = off
            Js[:, 2, 2] = 1.0 / d
            jac[slip] = Js
    return lam, jac


def hard_operator(x: np.ndarray) -> np.ndarray:
    """Hard (unilateral) row, seed 000 eq. (14): ``λ = max(0, λ*)``."""
    return np.maximum(np.asarray(x, float), 0.0)


def soft_operator(jv: np.ndarray, u: np.ndarray, e: np.ndarray, k: np.ndarray, b: np.ndarray,
                  beta: float) -> np.ndarray:
    """Soft (spring-damper) row, seed 000 eq. (15): ``λ = −(b(βJv + u) + βk e)/(b + β)``."""
    return -(b * (beta * jv + u) + beta * k * e) / (b + beta)


def contact_islands(problem: ContactProblem) -> list[np.ndarray]:
    """Dof index arrays of the islands: groups of trees coupled through contacts.

    ``A + Jᵀ G J`` is block diagonal over islands (``A`` is block diagonal over trees), so each
    island is factored on its own.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n_t = problem.n_trees
    ct = problem.contact_trees
    both = (ct >= 0).all(axis=1)
    g = coo_matrix((np.ones(int(both.sum())), (ct[both, 0], ct[both, 1])), shape=(n_t, n_t))
    _, label = connected_components(g, directed=False)
    ts = problem.tree_starts
    tree_of = np.repeat(np.arange(n_t), np.diff(ts))
    order = np.argsort(label[tree_of], kind="stable")
    bounds = np.flatnonzero(np.diff(label[tree_of][order])) + 1
    return np.split(order, bounds)


def island_contacts(problem: ContactProblem) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per island (:func:`contact_islands`): ``(dofs, contacts)``, its dof indices and the indices
    of the contacts within it (a contact lies in the island of its trees)."""
    n_t = problem.n_trees
    tree_of = np.repeat(np.arange(n_t), np.diff(problem.tree_starts))
    islands = contact_islands(problem)
    label = np.empty(n_t, dtype=np.int64)
    for k, dofs in enumerate(islands):
        label[tree_of[dofs]] = k
    ct = problem.contact_trees
    island_of = label[np.where(ct[:, 0] >= 0, ct[:, 0], ct[:, 1])] if problem.n_c else np.zeros(0, np.int64)
    return [(dofs, np.flatnonzero(island_of == k)) for k, dofs in enumerate(islands)]


def jt_g_j(Jc: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``Σ_i J_iᵀ G_i J_i`` (n_v, n_v) from per-contact rows ``Jc`` (n_c, 3, n_v) and blocks G."""
    n_v = Jc.shape[2]
    GJ = (G @ Jc).reshape(-1, n_v)
    return Jc.reshape(-1, n_v).T @ GJ
