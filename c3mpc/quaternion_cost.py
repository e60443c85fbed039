r"""Quaternion orientation costs (DAIRLab/c3's ``quaternion_weight`` and
``quaternion_regularizer_fraction``).

A quadratic cost on the raw components of a unit quaternion q (w, x, y, z) penalises the
orientation error badly: the components are not an angle, and q and −q are the same
orientation. DAIRLab/c3's controller instead replaces, at every solve, the 4×4 block of Q of
each floating-base quaternion by the Hessian of the squared rotation angle between the current
quaternion and the target, made positive semidefinite:

.. math::

    \theta(q, r) = 2\,\operatorname{atan2}\!\big(\sqrt{\|q\|^2\|r\|^2 - (r^\top q)^2},\;
    r^\top q\big), \qquad f(q) = \theta(q, r)^2,

    Q_k^{qq} = \gamma^k\, w \big(\nabla^2 f(q_\text{now}) + \max(0, -\lambda_\min) I
    + \phi\, r r^\top + 10^{-8} I\big),

with w = ``quaternion_weight``, φ = ``quaternion_regularizer_fraction``, r the target
quaternion. (‖q‖‖r‖ sin(θ/2) and ‖q‖‖r‖ cos(θ/2) are the vector and scalar parts of r̄ ⊗ q,
so θ is the angle of the relative rotation; f is invariant to the scale of q.)

The gradient is ∇φ = (a‖r‖² q − ρ r)/(s ρ) for φ = θ/2, a = rᵀq, ρ = ‖q‖²‖r‖², s = √(ρ − a²),
and ∇²f = 8(∇φ∇φᵀ + φ∇²φ) with
∇²φ = q ∇c₁ᵀ + c₁ I + r (‖r‖² q − a r)ᵀ / s³, c₁ = a‖r‖²/(sρ). As θ → 0 (s → 0) the Hessian
tends to 8 (I − q̂q̂ᵀ)/‖q‖² (q̂ = q/‖q‖), which is used when sin(θ/2) < 1e-4.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import C3ValueError

__all__ = ["squared_angle_difference", "squared_angle_hessian", "quaternion_cost_block"]

_SMALL = 1e-4


def _quat(name: str, q: Any) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.shape != (4,) or not np.isfinite(q).all() or not np.linalg.norm(q) > 0:
        raise C3ValueError(f"{name} must be a finite non-zero quaternion (w, x, y, z) of shape "
                           f"(4,), got {q!r}")
    return q


def squared_angle_difference(q: Any, r: Any) -> float:
    """θ(q, r)² in [rad²]: θ = 2 atan2(‖vec(r̄ ⊗ q)‖, scalar(r̄ ⊗ q)) ∈ [0, 2π]."""
    q, r = _quat("q", q), _quat("r", r)
    a = float(r @ q)
    s = np.sqrt(max(float(q @ q) * float(r @ r) - a * a, 0.0))
    return float((2.0 * np.arctan2(s, a)) ** 2)


def squared_angle_hessian(q: Any, r: Any) -> np.ndarray:
    """(4, 4) Hessian of :func:`squared_angle_difference` with respect to q (r fixed)."""
    q, r = _quat("q", q), _quat("r", r)
    n = float(r @ r)
    qq = float(q @ q)
    rho = n * qq
    a = float(r @ q)
    s = np.sqrt(max(rho - a * a, 0.0))
    if s < _SMALL * np.sqrt(rho):
        qh = q / np.sqrt(qq)
        return 8.0 * (np.eye(4) - np.outer(qh, qh)) / qq
    phi = np.arctan2(s, a)
    ds = (n * q - a * r) / s
    grad = (a * n * q - rho * r) / (s * rho)
    c1 = a * n / (s * rho)
    dc1 = n * (r / (s * rho) - a * (ds * rho + s * 2.0 * n * q) / (s * rho) ** 2)
    hess_phi = np.outer(q, dc1) + c1 * np.eye(4) + np.outer(r, n * q - a * r) / s**3
    H = 8.0 * (np.outer(grad, grad) + phi * hess_phi)
    return 0.5 * (H + H.T)


def quaternion_cost_block(q_now: Any, q_goal: Any, weight: float,
                          regularizer_fraction: float = 0.0) -> np.ndarray:
    """The (4, 4) PSD block of Q for one quaternion (DAIRLab/c3's ``UpdateQuaternionCosts``).

    w·(∇²θ² at q_now + max(0, −λ_min)·I + φ·q_goal q_goalᵀ + 1e-8·I); the discount γ^k is
    applied by the controller.
    """
    H = squared_angle_hessian(q_now, q_goal)
    r = _quat("q_goal", q_goal)
    shift = max(0.0, -float(np.linalg.eigvalsh(H).min()))
    return weight * (H + shift * np.eye(4) + regularizer_fraction * np.outer(r, r)
                     + 1e-8 * np.eye(4))
