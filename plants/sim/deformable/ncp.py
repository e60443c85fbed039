"""NCP functions of seed 004 §5 / App. B (after Macklin et al. 2019), vectorized over rows.

Each function returns, for the current gaps and multipliers, the non-smooth indicator ω (the row
of J = ΩH, Eq. 24), the derivative E with respect to λ, and (normal rows) the residual φ.

Normal rows (unilateral, position level), r > 0 the complementarity preconditioner:

* Fischer-Burmeister (Eqs. 52-54): φ = δ + rλ − √(δ² + r²λ²), ω = 1 − δ/√·, E = r(1 − rλ/√·).
  At δ = λ = 0 the formulas are 0/0 (erratum of the digest: the paper is silent); we take the
  element (1 − 1/√2, 1 − 1/√2) of FB's generalized Jacobian {(1 − a, 1 − b): a² + b² ≤ 1}
  (the limit along δ = rλ), so the row stays coupled: ω = 1 − 1/√2, E = r(1 − 1/√2), φ = 0.
* min-map (Eqs. 46-48): φ = δ, ω = 1, E = 0 if δ ≤ rλ; else φ = rλ, ω = 0, E = r.

Friction rows (velocity level, one scalar E per contact shared by its two tangent rows, the
isotropic 2-D cone of Macklin 2019 — seed 004 leaves per-direction vs 2-D norm open), with
v = ‖δ̇_f‖ (2-D), s = μλ_n − ‖λ_f‖, active iff μλ_n > 0 (ω_f = 1; else ω_f = 0, E_f = 1):

* FB (Eqs. 55-57): E_f = r (√(v² + r²s²) − rs) / (v + rμλ_n − √(v² + r²s²)). At v = 0, λ_f = 0
  this is 0/0 (the FB 0/0 point of the friction row): we take the stick value E_f = 0. A
  non-positive denominator (‖λ_f‖ far outside the cone) is clamped to a tiny positive value,
  i.e. a large E_f that pulls λ_f back.
* min-map (Eqs. 49-51): E_f = 0 (stick) if v ≤ rs, else (v − rs)/(μλ_n).
"""

from __future__ import annotations

import numpy as np

__all__ = ["normal_rows", "friction_rows", "NCP_FUNCTIONS"]

NCP_FUNCTIONS = ("fb", "min")
_C = 1.0 - 1.0 / np.sqrt(2.0)


def normal_rows(delta: np.ndarray, lam: np.ndarray, r: np.ndarray, ncp: str = "fb"):
    """(φ, ω, E) of the normal rows for gaps δ [m], multipliers λ [N] and preconditioner r [m/N]."""
    if ncp == "fb":
        root = np.sqrt(delta**2 + (r * lam) ** 2)
        zero = root <= 1e-300
        safe = np.where(zero, 1.0, root)
        phi = np.where(zero, 0.0, delta + r * lam - root)
        omega = np.where(zero, _C, 1.0 - delta / safe)
        E = np.where(zero, _C * r, r * (1.0 - r * lam / safe))
        return phi, omega, E
    if ncp == "min":
        act = delta <= r * lam
        return np.where(act, delta, r * lam), act.astype(float), np.where(act, 0.0, r)
    raise ValueError(f"ncp must be one of {NCP_FUNCTIONS}, got {ncp!r}")


def friction_rows(v: np.ndarray, lam_f_norm: np.ndarray, lam_n: np.ndarray, mu: np.ndarray, r: np.ndarray,
                  ncp: str = "fb"):
    """(ω_f, E_f) per contact from the tangential speed v = ‖δ̇_f‖ [m/s], ‖λ_f‖ [N], λ_n [N], μ and r [m/(N s)]."""
    cone = mu * lam_n
    active = cone > 0
    s = cone - lam_f_norm
    if ncp == "fb":
        root = np.sqrt(v**2 + (r * s) ** 2)
        num = root - r * s
        den = v + r * cone - root
        tiny = 1e-14 * (v + r * np.abs(cone)) + 1e-300
        E = np.where(num <= tiny, 0.0, r * num / np.maximum(den, tiny))
    elif ncp == "min":
        E = np.where(v <= r * s, 0.0, (v - r * s) / np.where(active, cone, 1.0))
    else:
        raise ValueError(f"ncp must be one of {NCP_FUNCTIONS}, got {ncp!r}")
    return active.astype(float), np.where(active, E, 1.0)
