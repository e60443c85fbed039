"""Impedance law of seed 003 (eq. 36) and its parameters.

.. math::

    u = J_f^T \\Lambda \\begin{bmatrix} K & 0 \\\\ 0 & B \\end{bmatrix} \\tilde x^e + C_f
        + \\tau_{ff} + N_f \\big(K_n (q^f_d - q^f) + B_n (\\dot q^f_d - \\dot q^f)\\big),
    \\qquad \\tau_{ff} = J_c^T \\lambda_d,

with :math:`\\tilde x^e = x^e_d - x^e` stacking the pose error (position, rotation vector) and
the twist error, :math:`\\Lambda = (J_f M_f^{-1} J_f^T)^{-1}` the task-space inertia and
:math:`N_f = I - J_f^T \\bar J_f^T`, :math:`\\bar J_f = M_f^{-1} J_f^T \\Lambda` the dynamically
consistent null-space projector. Because the gains multiply :math:`\\Lambda`, ``K`` and ``B`` are
per unit task-space inertia, in [1/s²] and [1/s]: with the robot's Coriolis/gravity compensated,
the closed loop in task space is :math:`\\ddot x = K \\tilde x + B \\dot{\\tilde x} +
\\Lambda^{-1} F`, for an external or feed-forward wrench F.

Defaults are the gains of the authors' hardware deployment (anchor-c3 §7): translational
stiffness 500, rotational 900, damping ratio 1 (translational damping 2ζ√K ≈ 44.7),
rotational damping 20, null-space 4 / 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .config import options_from_dict, options_from_file
from .errors import HardwareValueError

__all__ = ["ImpedanceParams", "impedance_torque", "nullspace_projector", "feedforward_torque"]


@dataclass(frozen=True)
class ImpedanceParams:
    """Gains of the impedance law (eq. 36), shared by the simulated robot and the simulator's
    impedance controller."""

    translational_stiffness: float = 500.0
    """K for the end-effector position [1/s²] (multiplies Λ)."""

    rotational_stiffness: float = 900.0
    """K for the end-effector orientation (rotation-vector error) [1/s²]."""

    damping_ratio: float = 1.0
    """ζ of the translational damping B = 2 ζ √K (1: critically damped)."""

    rotational_damping: float = 20.0
    """B for the angular velocity [1/s] (set explicitly on the hardware, not from ζ)."""

    nullspace_stiffness: float = 4.0
    """K_n of the null-space joint posture task [1/s² per rad]."""

    nullspace_damping: float = 4.0
    """B_n of the null-space joint velocity term [1/s]."""

    feedforward: bool = True
    """Apply τ_ff = J_cᵀ λ_d (False reproduces the 2-ball example's τ_ff = 0)."""

    def __post_init__(self) -> None:
        for name in ("translational_stiffness", "rotational_stiffness", "damping_ratio",
                     "rotational_damping", "nullspace_stiffness", "nullspace_damping"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v >= 0):
                raise HardwareValueError(f"ImpedanceParams.{name} must be a finite number "
                                         f">= 0, got {v!r}")
        if not isinstance(self.feedforward, bool):
            raise HardwareValueError(f"ImpedanceParams.feedforward must be a bool, got "
                                     f"{self.feedforward!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ImpedanceParams:
        """Build from a mapping; unknown keys raise HardwareValueError."""
        return options_from_dict(cls, data)

    @classmethod
    def from_file(cls, path: str | Path, section: str | None = None) -> ImpedanceParams:
        """Load from YAML/TOML (optionally one top-level ``section``)."""
        return options_from_file(cls, path, section)

    @property
    def translational_damping(self) -> float:
        """B for the end-effector velocity, 2 ζ √K [1/s]."""
        return 2.0 * self.damping_ratio * math.sqrt(self.translational_stiffness)

    @property
    def K(self) -> np.ndarray:
        """Task-space stiffness (6, 6): diag(k_t I₃, k_r I₃), [position; rotation] order."""
        return np.diag([self.translational_stiffness] * 3 + [self.rotational_stiffness] * 3)

    @property
    def B(self) -> np.ndarray:
        """Task-space damping (6, 6): diag(b_t I₃, b_r I₃)."""
        return np.diag([self.translational_damping] * 3 + [self.rotational_damping] * 3)

    def task_acceleration(self, pose_error: np.ndarray, twist_error: np.ndarray,
                          wrench: np.ndarray | None = None,
                          Lambda_inv: np.ndarray | None = None) -> np.ndarray:
        """Closed-loop task-space acceleration K x̃ + B ẋ̃ + Λ⁻¹ F (6,) [m/s², rad/s²].

        Args:
            pose_error: (6,) position error [m] and rotation-vector error [rad], desired minus
                actual, in the base frame.
            twist_error: (6,) desired minus actual linear [m/s] and angular [rad/s] velocity.
            wrench: (6,) force [N] and torque [N m] acting on the end effector (feed-forward
                plus external), or None.
            Lambda_inv: (6, 6) inverse task-space inertia; required when ``wrench`` is given.
        """
        e = _check(pose_error, (6,), "pose_error")
        de = _check(twist_error, (6,), "twist_error")
        a = self.K @ e + self.B @ de
        if wrench is not None:
            if Lambda_inv is None:
                raise HardwareValueError("Lambda_inv (6, 6) is required with a wrench")
            a = a + _check(Lambda_inv, (6, 6), "Lambda_inv") @ _check(wrench, (6,), "wrench")
        return a


def _check(a: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    arr = np.asarray(a, dtype=float)
    if arr.shape != shape:
        raise HardwareValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise HardwareValueError(f"{name} must be finite")
    return arr


def nullspace_projector(J: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(N_f (n, n), Λ (6, 6))``: dynamically consistent null-space projector and task inertia.

    Args:
        J: (6, n) end-effector Jacobian.
        M: (n, n) joint-space mass matrix.
    """
    J = np.asarray(J, dtype=float)
    M = np.asarray(M, dtype=float)
    if J.ndim != 2 or J.shape[0] != 6 or M.shape != (J.shape[1], J.shape[1]):
        raise HardwareValueError(f"J must be (6, n) and M (n, n), got {J.shape} and {M.shape}")
    Minv_JT = np.linalg.solve(M, J.T)
    Lambda = np.linalg.inv(J @ Minv_JT)
    J_bar = Minv_JT @ Lambda  # (n, 6)
    return np.eye(J.shape[1]) - J.T @ J_bar.T, Lambda


def feedforward_torque(J_c: np.ndarray, lambda_d: np.ndarray) -> np.ndarray:
    """τ_ff = J_cᵀ λ_d (n,): joint torques that produce the desired contact forces."""
    J_c = np.asarray(J_c, dtype=float)
    lambda_d = np.asarray(lambda_d, dtype=float)
    if J_c.ndim != 2 or lambda_d.shape != (J_c.shape[0],):
        raise HardwareValueError(f"J_c must be (m, n) and lambda_d (m,), got {J_c.shape} and "
                                 f"{lambda_d.shape}")
    return J_c.T @ lambda_d


def impedance_torque(params: ImpedanceParams, J: np.ndarray, M: np.ndarray,
                     pose_error: np.ndarray, twist_error: np.ndarray, C: np.ndarray,
                     q_error: np.ndarray, qdot_error: np.ndarray,
                     tau_ff: np.ndarray | None = None) -> np.ndarray:
    """Joint torques u (n,) of eq. (36).

    Args:
        params: Gains.
        J: (6, n) end-effector Jacobian J_f.
        M: (n, n) mass matrix M_f.
        pose_error: (6,) x̃ position/rotation part (desired minus actual) [m, rad].
        twist_error: (6,) x̃ velocity part [m/s, rad/s].
        C: (n,) Coriolis and gravity compensation C_f [N m].
        q_error: (n,) q_d - q of the null-space posture [rad].
        qdot_error: (n,) q̇_d - q̇ [rad/s].
        tau_ff: (n,) feed-forward torque (e.g. :func:`feedforward_torque`); ignored when
            ``params.feedforward`` is False.
    """
    N, Lambda = nullspace_projector(J, M)
    n = J.shape[1]
    e = _check(pose_error, (6,), "pose_error")
    de = _check(twist_error, (6,), "twist_error")
    u = J.T @ (Lambda @ (params.K @ e + params.B @ de)) + _check(C, (n,), "C")
    u = u + N @ (params.nullspace_stiffness * _check(q_error, (n,), "q_error")
                 + params.nullspace_damping * _check(qdot_error, (n,), "qdot_error"))
    if tau_ff is not None and params.feedforward:
        u = u + _check(tau_ff, (n,), "tau_ff")
    return u
