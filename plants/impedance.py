"""Task-space impedance control of a fixed-base arm: seed 003 eq. (36).

.. math::

    u = J_f^T \\Lambda \\begin{bmatrix} K & 0 \\\\ 0 & B \\end{bmatrix} \\tilde x^e + C_f
        + \\tau_{ff} + N_f \\big(K_n (q^f_d - q^f) + B_n (\\dot q^f_d - \\dot q^f)\\big),
    \\qquad \\tau_{ff} = J_c^T \\lambda_d,

with :math:`\\tilde x^e = x^e_d - x^e` stacking the end-effector pose error (position [m],
rotation vector [rad], world frame) and the twist error, :math:`\\Lambda = (J_f M_f^{-1}
J_f^T)^{-1}` the task-space inertia, :math:`C_f` the Coriolis and gravity torques and
:math:`N_f = I - J_f^T \\bar J_f^T`, :math:`\\bar J_f = M_f^{-1} J_f^T \\Lambda`, the
dynamically consistent null-space projector (Khatib). Because the gains multiply
:math:`\\Lambda`, K is per unit task inertia [1/s²] and B [1/s]: with C_f compensated, the
closed loop in task space is :math:`\\ddot x = K \\tilde x + B \\dot{\\tilde x} + \\Lambda^{-1}
F_{ext}`.

:class:`ImpedanceGains` defaults are the authors' hardware gains (notes/anchor-c3 §7):
translational stiffness 500, rotational 900, damping ratio 1, rotational damping 20,
null-space 4 / 4. ``hardware/impedance.py`` (the deployment's ``ImpedanceParams``) holds the
same numbers and should reuse this module's law (it may import ``plants``; ``plants`` may not
import ``hardware``).

:class:`TaskSpaceImpedance` evaluates the law on a Pinocchio model of the arm (the full Panda in
:mod:`c3mpc.tasks.franka_ball`): one call computes J_f, M_f, C_f at (q, v) and returns the joint
torques.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ImpedanceGains", "TaskSpaceImpedance", "impedance_torque", "nullspace_projector"]


@dataclass(frozen=True)
class ImpedanceGains:
    """Gains of eq. (36) (defaults: the authors' hardware values, anchor-c3 §7).

    Attributes:
        translational_stiffness: K on the end-effector position [1/s²] (multiplies Λ).
        rotational_stiffness: K on the rotation-vector error [1/s²].
        damping_ratio: ζ of the translational damping B = 2 ζ √K.
        rotational_damping: B on the angular velocity [1/s].
        nullspace_stiffness: K_n of the joint posture task [1/s²] (per unit joint inertia is not
            applied: K_n multiplies the joint error directly, in [N m/rad]).
        nullspace_damping: B_n of the joint velocity term [N m s/rad].
        feedforward: apply τ_ff = J_cᵀ λ_d (False: the paper's multi-ball τ_ff = 0).
    """

    translational_stiffness: float = 500.0
    rotational_stiffness: float = 900.0
    damping_ratio: float = 1.0
    rotational_damping: float = 20.0
    nullspace_stiffness: float = 4.0
    nullspace_damping: float = 4.0
    feedforward: bool = True

    def __post_init__(self) -> None:
        for name in ("translational_stiffness", "rotational_stiffness", "damping_ratio",
                     "rotational_damping", "nullspace_stiffness", "nullspace_damping"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v >= 0):
                raise ValueError(f"ImpedanceGains.{name} must be a finite number >= 0, "
                                 f"got {v!r}")
        if not isinstance(self.feedforward, bool):
            raise TypeError(f"ImpedanceGains.feedforward must be a bool, got "
                            f"{self.feedforward!r}")

    @property
    def translational_damping(self) -> float:
        """B on the end-effector velocity, 2 ζ √K [1/s]."""
        return 2.0 * self.damping_ratio * math.sqrt(self.translational_stiffness)

    @property
    def K(self) -> np.ndarray:
        """(6, 6) diag(k_t I₃, k_r I₃), [position; rotation] order."""
        return np.diag([self.translational_stiffness] * 3 + [self.rotational_stiffness] * 3)

    @property
    def B(self) -> np.ndarray:
        """(6, 6) diag(b_t I₃, b_r I₃)."""
        return np.diag([self.translational_damping] * 3 + [self.rotational_damping] * 3)


def nullspace_projector(J: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(N_f (n, n), Λ (m, m))``: dynamically consistent null-space projector and task inertia.

    Args:
        J: (m, n) task Jacobian, m <= n, full row rank.
        M: (n, n) joint-space mass matrix (SPD).
    """
    J = np.asarray(J, dtype=float)
    M = np.asarray(M, dtype=float)
    if J.ndim != 2 or M.shape != (J.shape[1], J.shape[1]):
        raise ValueError(f"J must be (m, n) and M (n, n), got {J.shape} and {M.shape}")
    Minv_JT = np.linalg.solve(M, J.T)
    Lambda = np.linalg.inv(J @ Minv_JT)
    J_bar = Minv_JT @ Lambda  # (n, m)
    return np.eye(J.shape[1]) - J.T @ J_bar.T, Lambda


def impedance_torque(gains: ImpedanceGains, J: np.ndarray, M: np.ndarray, C: np.ndarray,
                     pose_error: np.ndarray, twist_error: np.ndarray, q_error: np.ndarray,
                     qdot_error: np.ndarray, tau_ff: np.ndarray | None = None,
                     accel_d: np.ndarray | None = None) -> np.ndarray:
    """Joint torques u (n,) of eq. (36) from precomputed model terms.

    Args:
        gains: :class:`ImpedanceGains`.
        J: (6, n) end-effector Jacobian J_f (linear rows first, world-aligned).
        M: (n, n) mass matrix M_f.
        C: (n,) Coriolis + gravity torques C_f [N m].
        pose_error: (6,) position [m] and rotation-vector [rad] error, desired minus actual.
        twist_error: (6,) linear [m/s] and angular [rad/s] velocity error.
        q_error: (n,) q_d − q of the null-space posture [rad].
        qdot_error: (n,) q̇_d − q̇ [rad/s].
        tau_ff: (n,) feed-forward torque J_cᵀ λ_d, or None; ignored if ``gains.feedforward``
            is False.
        accel_d: (6,) desired task acceleration ẍ_d, or None. *Not in eq. (36)*: the
            operational-space term J_fᵀ Λ ẍ_d (Khatib) added inside the bracket, so that the
            closed loop is ẍ = ẍ_d + K x̃ + B ẋ̃ (see docs/franka-ball.md for why).
    """
    N, Lambda = nullspace_projector(J, M)
    a = gains.K @ pose_error + gains.B @ twist_error
    if accel_d is not None:
        a = a + accel_d
    u = J.T @ (Lambda @ a) + C
    u = u + N @ (gains.nullspace_stiffness * q_error + gains.nullspace_damping * qdot_error)
    if tau_ff is not None and gains.feedforward:
        u = u + tau_ff
    return u


class TaskSpaceImpedance:
    """Eq. (36) on a Pinocchio arm model, tracking a point frame (e.g. the Panda's TCP).

    Args:
        model: ``pinocchio.Model`` of the arm alone (n_q = n_v = n joints).
        frame: name of the tracked frame (the spherical end effector's centre).
        gains: :class:`ImpedanceGains`.
        q_nullspace: (n,) desired null-space posture q_d^f [rad] (q̇_d^f = 0).
    """

    def __init__(self, model: Any, frame: str, gains: ImpedanceGains | None = None,
                 q_nullspace: Any = None):
        import pinocchio as pin

        self._pin = pin
        self.model = model
        self.data = model.createData()
        if not model.existFrame(frame):
            raise ValueError(f"frame {frame!r} is not in the model")
        self.frame_id = model.getFrameId(frame)
        self.gains = gains or ImpedanceGains()
        self.n = model.nv
        qn = pin.neutral(model) if q_nullspace is None else np.asarray(q_nullspace, float)
        if qn.shape != (model.nq,):
            raise ValueError(f"q_nullspace must have shape ({model.nq},), got {qn.shape}")
        self.q_nullspace = qn.copy()

    def frame_state(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray, np.ndarray]:
        """(position (3,), rotation (3, 3), linear velocity (3,), angular velocity (3,)) of the
        tracked frame, world-aligned."""
        pin = self._pin
        pin.forwardKinematics(self.model, self.data, q, v)
        pin.updateFramePlacement(self.model, self.data, self.frame_id)
        M = self.data.oMf[self.frame_id]
        vel = pin.getFrameVelocity(self.model, self.data, self.frame_id,
                                   pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        return M.translation.copy(), M.rotation.copy(), vel.linear.copy(), vel.angular.copy()

    def torque(self, q: np.ndarray, v: np.ndarray, p_d: np.ndarray, v_d: np.ndarray,
               R_d: np.ndarray, force_d: np.ndarray | None = None,
               a_d: np.ndarray | None = None) -> np.ndarray:
        """Joint torques (n,) of eq. (36).

        Args:
            q, v: (n,) joint positions [rad] and velocities [rad/s].
            p_d, v_d: (3,) desired frame position [m] and velocity [m/s] (world).
            R_d: (3, 3) desired frame orientation (the desired angular velocity is zero).
            force_d: (3,) desired force [N] the end effector exerts on the environment at the
                frame (C3's λ_d mapped to Cartesian space); τ_ff = J_posᵀ force_d.
            a_d: (3,) desired linear acceleration [m/s²] (operational-space feed-forward, not
                in eq. 36; None: off).
        """
        pin = self._pin
        model, data, fid = self.model, self.data, self.frame_id
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacement(model, data, fid)
        J = pin.getFrameJacobian(model, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        C = pin.nonLinearEffects(model, data, q, v)
        oM = data.oMf[fid]
        twist = J @ v
        pose_err = np.concatenate([p_d - oM.translation, pin.log3(R_d @ oM.rotation.T)])
        twist_err = np.concatenate([v_d - twist[:3], -twist[3:]])
        tau_ff = None if force_d is None else J[:3].T @ np.asarray(force_d, float)
        acc = None if a_d is None else np.concatenate([np.asarray(a_d, float), np.zeros(3)])
        return impedance_torque(self.gains, J, M, C, pose_err, twist_err,
                                self.q_nullspace - q, -v, tau_ff, acc)
