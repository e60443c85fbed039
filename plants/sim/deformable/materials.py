"""Isotropic hyperelastic materials in singular-value form, and their local (projection) steps.

Every material is an energy density ψ(F) [J/m³] of the deformation gradient F that depends only
on F's *signed* singular values σ (for tetrahedra the smallest one takes det F's sign, so an
inverted element has σ₃ < 0; for cloth F is 3×2 and σ ≥ 0):

* :class:`ARAP`: ψ = μ Σ (σᵢ − 1)² = μ ‖F − R‖²_F (R the rotation of F's polar decomposition).
* :class:`CoRotational`: ψ = μ Σ (σᵢ − 1)² + λ/2 (Σ σᵢ − d)² (linear co-rotated elasticity).
* :class:`StableNeoHookean`: Smith, de Goes & Kim 2018, with their log term:
  ψ = μ'/2 (I_C − d) + λ'/2 (J − α)² − μ'/2 log(I_C + 1), I_C = Σ σᵢ², J = Π σᵢ,
  μ' = μ (d + 1)/d, λ' = λ + μ − 2μ/(d(d + 1)), α = 1 + μ/λ' (in 3-D: μ' = 4μ/3,
  λ' = λ + 5μ/6, α = 1 + μ/λ', Smith et al. §3.4/§4.1), so that the rest state is stress-free and
  the small-strain tangent is that of linear elasticity with Lamé (μ, λ). It is defined, with a
  finite gradient, for inverted elements (J ≤ 0).

(μ, λ) follow from Young's modulus E and Poisson's ratio ν: 3-D Lamé parameters for
tetrahedra, plane-stress ones (λ = E ν / (1 − ν²)) for cloth triangles.

The first Piola-Kirchhoff stress is P = U diag(∂ψ/∂σ) Vᵀ for F = U diag(σ) Vᵀ. The local
step of ADMM-PD (Overby et al. 2017), argmin_Z ψ(Z) + ŵ/2 ‖Z − Y‖², keeps Y's singular vectors
(ψ is isotropic) and solves a d-dimensional problem in σ: in closed form for ARAP and
co-rotational, by a projected Newton method (vectorized over elements) for Stable Neo-Hookean.
ARAP's Projective Dynamics projection (seed 004 Eq. 5 with an SO(d) indicator) is Z = U Vᵀ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Material", "ARAP", "CoRotational", "StableNeoHookean", "signed_svd", "energy_density",
           "first_piola", "local_step", "local_step_svd", "polar_rotation"]


def signed_svd(F: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """F = U diag(σ) Vh for a stack F (m, a, b); for square 3×3 blocks U, Vh are rotations and
    σ₃ carries det F's sign (σ₃ < 0 on inverted elements)."""
    U, s, Vh = np.linalg.svd(F, full_matrices=False)
    if F.shape[-1] == F.shape[-2]:
        fu = np.linalg.det(U) < 0
        U[fu, :, -1] *= -1
        s[fu, -1] *= -1
        fv = np.linalg.det(Vh) < 0
        Vh[fv, -1, :] *= -1
        s[fv, -1] *= -1
    return U, s, Vh


@dataclass(frozen=True)
class Material:
    """An isotropic material: Young's modulus ``youngs`` [Pa] and Poisson's ratio ``poisson``."""

    youngs: float
    poisson: float

    def __post_init__(self):
        for name in ("youngs", "poisson"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
                raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
        if not (np.isfinite(self.youngs) and self.youngs > 0):
            raise ValueError(f"youngs must be a finite modulus > 0 [Pa], got {self.youngs}")
        if not (-1.0 < self.poisson < 0.5):
            raise ValueError(f"poisson must lie in (-1, 0.5), got {self.poisson}")

    def lame(self, dim: int = 3) -> tuple[float, float]:
        """(μ, λ) [Pa]: 3-D Lamé parameters (dim = 3) or plane-stress ones (dim = 2)."""
        E, nu = float(self.youngs), float(self.poisson)
        mu = E / (2 * (1 + nu))
        lam = E * nu / ((1 + nu) * (1 - 2 * nu)) if dim == 3 else E * nu / (1 - nu**2)
        return mu, lam

    #: True when the local step is a Projective-Dynamics projection (plain PD); else ADMM-PD.
    projective = False

    def psi(self, s: np.ndarray, dim: int) -> np.ndarray:  # pragma: no cover - abstract
        """Energy density (m,) [J/m³] at signed singular values s (m, d)."""
        raise NotImplementedError

    def grad(self, s: np.ndarray, dim: int) -> np.ndarray:  # pragma: no cover - abstract
        """∂ψ/∂σ (m, d) [Pa]."""
        raise NotImplementedError

    def hess(self, s: np.ndarray, dim: int) -> np.ndarray:  # pragma: no cover - abstract
        """∂²ψ/∂σ² (m, d, d) [Pa]."""
        raise NotImplementedError

    def admm_weight(self, dim: int = 3) -> float:
        """ADMM-PD weight per unit volume ŵ [Pa] (w_i = ŵ V_i): 2μ + λ, the stiffness of ψ at rest
        in its stiffest (volumetric) direction; for ARAP (plain PD) 2μ, the exact weight."""
        mu, lam = self.lame(dim)
        return 2 * mu + lam

    def local_sigma(self, s_hat: np.ndarray, w: float, dim: int) -> np.ndarray:
        """argmin_σ ψ(σ) + w/2 ‖σ − ŝ‖² (m, d), by projected Newton with backtracking."""
        return _newton_sigma(self, s_hat, w, dim)


@dataclass(frozen=True)
class ARAP(Material):
    """As-rigid-as-possible: ψ = μ ‖F − R‖²; plain Projective Dynamics (projection onto SO(d))."""

    projective = True

    def psi(self, s, dim):
        mu, _ = self.lame(dim)
        return mu * ((s - 1.0) ** 2).sum(-1)

    def grad(self, s, dim):
        mu, _ = self.lame(dim)
        return 2 * mu * (s - 1.0)

    def hess(self, s, dim):
        mu, _ = self.lame(dim)
        return np.broadcast_to(2 * mu * np.eye(s.shape[-1]), s.shape + (s.shape[-1],)).copy()

    def admm_weight(self, dim=3):
        return 2 * self.lame(dim)[0]

    def local_sigma(self, s_hat, w, dim):
        mu, _ = self.lame(dim)
        return (2 * mu + w * s_hat) / (2 * mu + w)


@dataclass(frozen=True)
class CoRotational(Material):
    """Linear co-rotated elasticity: ψ = μ ‖F − R‖² + λ/2 tr²(RᵀF − I)."""

    def psi(self, s, dim):
        mu, lam = self.lame(dim)
        return mu * ((s - 1.0) ** 2).sum(-1) + 0.5 * lam * (s.sum(-1) - s.shape[-1]) ** 2

    def grad(self, s, dim):
        mu, lam = self.lame(dim)
        return 2 * mu * (s - 1.0) + lam * (s.sum(-1, keepdims=True) - s.shape[-1])

    def hess(self, s, dim):
        mu, lam = self.lame(dim)
        d = s.shape[-1]
        return np.broadcast_to(2 * mu * np.eye(d) + lam * np.ones((d, d)), s.shape + (d,)).copy()

    def local_sigma(self, s_hat, w, dim):
        # (2μ + w) σ + λ 1 1ᵀσ = 2μ + λ d + w ŝ, solved by Sherman-Morrison
        mu, lam = self.lame(dim)
        d = s_hat.shape[-1]
        a = 2 * mu + w
        r = 2 * mu + lam * d + w * s_hat
        return (r - lam * r.sum(-1, keepdims=True) / (a + d * lam)) / a


@dataclass(frozen=True)
class StableNeoHookean(Material):
    """Stable Neo-Hookean of Smith, de Goes & Kim (2018), with the log(I_C + 1) term (module doc)."""

    def local_sigma(self, s_hat, w, dim):
        from ._local_kernels import HAVE_NUMBA, snh_local_sigma

        if not HAVE_NUMBA:  # pragma: no cover - numba is a core dependency
            return _newton_sigma(self, s_hat, w, dim)
        m, l, a = self.params(dim)
        return snh_local_sigma(np.ascontiguousarray(s_hat, dtype=float), m, l, a, float(w))

    def params(self, dim: int) -> tuple[float, float, float]:
        """(μ', λ', α) of the energy for element dimension ``dim``."""
        mu, lam = self.lame(dim)
        mu_s = mu * (dim + 1) / dim
        lam_s = lam + mu - 2 * mu / (dim * (dim + 1))
        return mu_s, lam_s, 1.0 + mu / lam_s

    def psi(self, s, dim):
        m, l, a = self.params(dim)
        ic = (s * s).sum(-1)
        J = s.prod(-1)
        return 0.5 * m * (ic - s.shape[-1]) + 0.5 * l * (J - a) ** 2 - 0.5 * m * np.log(ic + 1.0)

    @staticmethod
    def _dJ(s):
        if s.shape[-1] == 3:
            return np.stack([s[..., 1] * s[..., 2], s[..., 0] * s[..., 2], s[..., 0] * s[..., 1]], -1)
        return np.stack([s[..., 1], s[..., 0]], -1)

    def grad(self, s, dim):
        m, l, a = self.params(dim)
        ic = (s * s).sum(-1, keepdims=True)
        J = s.prod(-1, keepdims=True)
        return m * s * (1.0 - 1.0 / (ic + 1.0)) + l * (J - a) * self._dJ(s)

    def hess(self, s, dim):
        m, l, a = self.params(dim)
        d = s.shape[-1]
        ic = (s * s).sum(-1)
        J = s.prod(-1)
        dJ = self._dJ(s)
        H = (m * (1.0 - 1.0 / (ic + 1.0)))[:, None, None] * np.eye(d)
        H += (2 * m / (ic + 1.0) ** 2)[:, None, None] * s[:, :, None] * s[:, None, :]
        H += l * dJ[:, :, None] * dJ[:, None, :]
        if d == 3:
            d2 = np.zeros(s.shape + (3,))
            d2[:, 0, 1] = d2[:, 1, 0] = s[:, 2]
            d2[:, 0, 2] = d2[:, 2, 0] = s[:, 1]
            d2[:, 1, 2] = d2[:, 2, 1] = s[:, 0]
        else:
            d2 = np.zeros(s.shape + (2,))
            d2[:, 0, 1] = d2[:, 1, 0] = 1.0
        H += (l * (J - a))[:, None, None] * d2
        return H


def _newton_sigma(mat: Material, s_hat: np.ndarray, w: float, dim: int, iterations: int = 20,
                  tol: float = 1e-12) -> np.ndarray:
    """argmin_σ ψ(σ) + w/2‖σ − ŝ‖² per row: Newton on the eigenvalue-clamped Hessian, Armijo backtracking."""
    s = s_hat.copy()
    d = s.shape[-1]

    def f(x, xh):
        return mat.psi(x, dim) + 0.5 * w * ((x - xh) ** 2).sum(-1)

    scale = max(w, 1e-300)
    active = np.ones(s.shape[0], bool)
    for _ in range(iterations):
        if not active.any():
            break
        sa = s[active]
        sh = s_hat[active]
        g = mat.grad(sa, dim) + w * (sa - sh)
        done = np.linalg.norm(g, axis=-1) <= tol * scale * (1.0 + np.abs(sa).max(-1))
        H = mat.hess(sa, dim) + w * np.eye(d)
        lam, Q = np.linalg.eigh(H)
        lam = np.maximum(lam, 1e-6 * scale)
        step = -np.einsum("mij,mj,mkj,mk->mi", Q, 1.0 / lam, Q, g)
        f0 = f(sa, sh)
        slope = (g * step).sum(-1)
        t = np.ones(sa.shape[0])
        slack = 1e-13 * (np.abs(f0) + 1.0)  # round-off: no decrease is measurable below it
        for _ in range(30):
            bad = f(sa + t[:, None] * step, sh) > f0 + 1e-4 * t * slope + slack
            if not bad.any():
                break
            t[bad] *= 0.5
        s_new = sa + t[:, None] * step
        s_new[done] = sa[done]
        s[active] = s_new
        idx = np.flatnonzero(active)
        active[idx[done]] = False
    return s


def energy_density(material: Material, F: np.ndarray) -> np.ndarray:
    """ψ(F) (m,) [J/m³] for a stack F (m, 3, d)."""
    F = np.asarray(F, float)
    _, s, _ = signed_svd(F)
    return material.psi(s, F.shape[-1])


def first_piola(material: Material, F: np.ndarray) -> np.ndarray:
    """P = ∂ψ/∂F (m, 3, d) [Pa] for a stack F (m, 3, d)."""
    F = np.asarray(F, float)
    U, s, Vh = signed_svd(F)
    g = material.grad(s, F.shape[-1])
    return np.einsum("mij,mj,mjk->mik", U, g, Vh)


def _signed_svd_fast(Y: np.ndarray):
    """:func:`signed_svd`, with 3×3 blocks of positive determinant by the compiled polar +
    Jacobi kernel (``svd3_positive``; tested against this function) and the rest by LAPACK."""
    Y = np.asarray(Y, float)
    if Y.shape[-2:] == (3, 3):
        from ._local_kernels import HAVE_NUMBA, svd3_positive

        if HAVE_NUMBA:
            U, s, Vh, ok = svd3_positive(np.ascontiguousarray(Y))
            if not ok.all():
                U[~ok], s[~ok], Vh[~ok] = signed_svd(Y[~ok])
            return U, s, Vh
    return signed_svd(Y)


def polar_rotation(Y: np.ndarray) -> np.ndarray:
    """The rotation (det +1) closest to each Y of a stack (m, a, b): U Vᵀ of the signed SVD.
    Square 3×3 blocks with det Y > 0 use the compiled scaled-Newton polar iteration (the SVD
    is the reference it is tested against and the fallback for inverted or flat elements)."""
    Y = np.asarray(Y, float)
    if Y.shape[-2:] == (3, 3):
        from ._local_kernels import HAVE_NUMBA, polar_rotations

        if HAVE_NUMBA:
            R, ok = polar_rotations(np.ascontiguousarray(Y))
            if not ok.all():
                U, _, Vh = signed_svd(Y[~ok])
                R[~ok] = U @ Vh
            return R
    U, _, Vh = signed_svd(Y)
    return U @ Vh


def local_step(material: Material, Y: np.ndarray, w: float, projective: bool | None = None) -> np.ndarray:
    """The local step on a stack of targets Y (m, a, b) (F or Fᵀ: ψ is isotropic).

    projective (default: ``material.projective``): Z = U Vᵀ, the projection onto SO(d) (plain PD,
    ARAP only); else Z = argmin ψ(Z) + w/2 ‖Z − Y‖² (ADMM-PD), w [Pa] the weight per unit volume.
    """
    projective = material.projective if projective is None else projective
    if projective:
        if not isinstance(material, ARAP):
            raise ValueError(f"a projective (plain PD) local step exists only for ARAP, not {type(material).__name__}")
        return polar_rotation(Y)
    if type(material).local_sigma is CoRotational.local_sigma and Y.shape[-2:] == (3, 3):
        return _corotational_local_polar(material, np.asarray(Y, float), float(w))
    U, s, Vh = _signed_svd_fast(Y)
    dim = min(Y.shape[-2:])
    s_star = material.local_sigma(s, float(w), dim)
    return (U * s_star[:, None, :]) @ Vh


def _corotational_local_polar(material: "CoRotational", Y: np.ndarray, w: float) -> np.ndarray:
    """Co-rotational ADMM-PD local step on 3×3 blocks without an SVD.

    :meth:`CoRotational.local_sigma` is affine in σ: σ* = (w/a) σ + c 1, a = 2μ + w,
    c = (2μ + 3λ − λ Σr/(a + 3λ))/a, Σr = 3(2μ + 3λ) + w Σσ. Hence
    Z = U diag(σ*) Vᵀ = (w/a) Y + c R with R = U Vᵀ the polar rotation of Y and Σσ = tr(RᵀY)
    (signed σ: exact for inverted blocks too). The polar rotation (compiled scaled Newton) costs
    about half of the polar + Jacobi SVD, and the reconstruction U diag(σ*) Vᵀ disappears
    (``tests/test_deformable_materials.py`` compares this with the SVD path)."""
    mu, lam = material.lame(3)
    a = 2 * mu + w
    R = polar_rotation(Y)
    tr = np.einsum("mij,mij->m", R, Y)
    c = (2 * mu + 3 * lam - lam * (3 * (2 * mu + 3 * lam) + w * tr) / (a + 3 * lam)) / a
    return (w / a) * Y + c[:, None, None] * R


def local_step_svd(material: Material, Y: np.ndarray, w: float) -> np.ndarray:
    """The ADMM-PD local step by the signed SVD (LAPACK) for any material: Z = U diag(σ*) Vᵀ,
    σ* = ``material.local_sigma(σ)``. The reference the fast paths of :func:`local_step` are
    tested against."""
    U, s, Vh = signed_svd(np.asarray(Y, float))
    s_star = material.local_sigma(s, float(w), min(Y.shape[-2:]))
    return np.einsum("mij,mj,mjk->mik", U, s_star, Vh)
