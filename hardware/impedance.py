"""The deployment's view of the impedance law of seed 003 eq. (36).

The law itself lives in :mod:`plants.impedance` (``ImpedanceGains``, ``nullspace_projector``,
``impedance_torque``, used by the simulator's closed loop, issue 7). This module adds what the
deployment needs on top, without a second copy of the math:

* :class:`ImpedanceParams`: :class:`plants.impedance.ImpedanceGains` with strict YAML/TOML
  loading (``from_dict``/``from_file``), :class:`~hardware.errors.HardwareValueError` on bad
  values, and :meth:`ImpedanceParams.task_acceleration`, the closed loop in task space
  ẍ = K x̃ + B ẋ̃ + Λ⁻¹ F (what the simulated robot and the C3 planner's equilibrium lead use);
* :func:`impedance_torque`: the hardware-side argument order (C after the errors) with shape
  and finiteness checks, delegating to :func:`plants.impedance.impedance_torque`;
* :func:`feedforward_torque`: τ_ff = J_cᵀ λ_d.

Defaults are the gains of the authors' hardware deployment (anchor-c3 §7): translational
stiffness 500, rotational 900, damping ratio 1 (translational damping 2ζ√K ≈ 44.7),
rotational damping 20, null-space 4 / 4. Dependencies: ``hardware -> plants`` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from plants.impedance import ImpedanceGains, nullspace_projector
from plants.impedance import impedance_torque as _impedance_torque

from .config import LoadableOptions
from .errors import HardwareValueError

__all__ = ["ImpedanceParams", "impedance_torque", "nullspace_projector", "feedforward_torque"]


@dataclass(frozen=True)
class ImpedanceParams(ImpedanceGains, LoadableOptions):
    """Gains of eq. (36) (the fields and defaults of :class:`plants.impedance.ImpedanceGains`),
    loadable from configuration files, shared by the simulated robots and the C3 planner."""

    def __post_init__(self) -> None:
        try:
            super().__post_init__()
        except (ValueError, TypeError) as e:
            raise HardwareValueError(str(e).replace("ImpedanceGains", "ImpedanceParams")) from e

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


def feedforward_torque(J_c: np.ndarray, lambda_d: np.ndarray) -> np.ndarray:
    """τ_ff = J_cᵀ λ_d (n,): joint torques that produce the desired contact forces."""
    J_c = np.asarray(J_c, dtype=float)
    lambda_d = np.asarray(lambda_d, dtype=float)
    if J_c.ndim != 2 or lambda_d.shape != (J_c.shape[0],):
        raise HardwareValueError(f"J_c must be (m, n) and lambda_d (m,), got {J_c.shape} and "
                                 f"{lambda_d.shape}")
    return J_c.T @ lambda_d


def impedance_torque(params: ImpedanceGains, J: np.ndarray, M: np.ndarray,
                     pose_error: np.ndarray, twist_error: np.ndarray, C: np.ndarray,
                     q_error: np.ndarray, qdot_error: np.ndarray,
                     tau_ff: np.ndarray | None = None) -> np.ndarray:
    """Joint torques u (n,) of eq. (36): checked arguments in the hardware order, computed by
    :func:`plants.impedance.impedance_torque`.

    Args:
        params: Gains (:class:`ImpedanceParams` or any ``ImpedanceGains``).
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
    J = np.asarray(J, dtype=float)
    M = np.asarray(M, dtype=float)
    if J.ndim != 2 or J.shape[0] != 6 or M.shape != (J.shape[1], J.shape[1]):
        raise HardwareValueError(f"J must be (6, n) and M (n, n), got {J.shape} and {M.shape}")
    n = J.shape[1]
    return _impedance_torque(
        params, J, M, _check(C, (n,), "C"), _check(pose_error, (6,), "pose_error"),
        _check(twist_error, (6,), "twist_error"), _check(q_error, (n,), "q_error"),
        _check(qdot_error, (n,), "qdot_error"),
        None if tau_ff is None else _check(tau_ff, (n,), "tau_ff"))
