"""Emulation of franka_ros' stock Cartesian impedance controller
(``franka_example_controllers/CartesianImpedanceExampleController``), for the twin.

The controller runs at the robot's 1 kHz on the effort interface. Per tick, with the
end-effector Jacobian J (base frame), the measured pose (p, R, quaternion o) and the filtered
equilibrium (p_d, o_d):

.. math::

    e = \\begin{bmatrix} p - p_d \\\\ -R\\,\\mathrm{vec}(o^{-1} o_d) \\end{bmatrix}, \\quad
    \\tau_d = J^T(-K e - D J\\dot q)
            + (I - J^T J^{T+})\\big(k_n (q_n - q) - 2\\sqrt{k_n}\\,\\dot q\\big) + c(q, \\dot q),

then ``tau_d`` is rate-limited to ``delta_tau_max`` = 1 N m per tick against the previous
desired torque, and the robot adds gravity. K = diag(k_t I₃, k_r I₃) in **N/m and N m/rad**
(not per unit task-space inertia as the project's eq.-36 controller), D = 2√K (damping ratio 1
for a *unit* mass), q_n the joint posture at start. After each tick the gains and the
equilibrium move towards their targets by a first-order filter,

.. math:: x \\leftarrow \\alpha\\, x_\\text{target} + (1 - \\alpha)\\, x, \\qquad \\alpha = 0.005,

(slerp by α for the orientation), i.e. a step of the equilibrium pose reaches the controller
as :math:`1 - (1-\\alpha)^k` after k ticks: time constant
:math:`-1 / (1000 \\ln(1 - \\alpha)) \\approx 0.2` s. The gains start at zero and follow the
same filter to their dynamic-reconfigure values (defaults 200 N/m, 10 N m/rad, null space
0.5; ranges 0-400, 0-30, 0-100: ``compliance_param.cfg``); the equilibrium starts at the pose
measured when the controller starts.

The twin steps its simulator at ``sim_dt`` (2 ms = 2 ticks): :meth:`StockCartesianImpedance.torque`
computes the torque once per simulator step and :meth:`StockCartesianImpedance.advance` applies
``n`` ticks of the filter in closed form (``1 − (1 − α)ⁿ`` of the way, the composition of
``n`` filter steps towards a fixed target; ``n`` × 1 N m of torque rate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

from .config import LoadableOptions
from .errors import HardwareValueError

__all__ = ["StockImpedanceOptions", "StockCartesianImpedance", "equilibrium_step_response"]

#: dynamic_reconfigure ranges of the stock controller (compliance_param.cfg): name -> (min, max).
RANGES = {"translational_stiffness": (0.0, 400.0), "rotational_stiffness": (0.0, 30.0),
          "nullspace_stiffness": (0.0, 100.0)}


@dataclass(frozen=True)
class StockImpedanceOptions(LoadableOptions):
    """The stock controller's parameters (defaults: franka_ros' compliance_param.cfg and
    cartesian_impedance_example_controller.h)."""

    translational_stiffness: float = 200.0
    """k_t [N/m], 0-400 (dynamic reconfigure)."""
    rotational_stiffness: float = 10.0
    """k_r [N m/rad], 0-30."""
    nullspace_stiffness: float = 0.5
    """k_n of the posture task [N m/rad], 0-100."""
    filter_params: float = 0.005
    """α of the equilibrium and gain filter, per controller tick."""
    delta_tau_max: float = 1.0
    """Largest change of the desired torque per tick [N m]."""
    control_rate_hz: float = 1000.0
    """Controller rate [Hz] (the robot's 1 kHz)."""

    def __post_init__(self) -> None:
        for name, (lo, hi) in RANGES.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                raise HardwareValueError(
                    f"StockImpedanceOptions.{name} must be a number in [{lo:g}, {hi:g}] (the "
                    f"stock controller's dynamic_reconfigure range; the project's eq.-36 "
                    f"gains are per unit task inertia, not N/m), got {v!r}")
        if not (isinstance(self.filter_params, (int, float)) and 0 < self.filter_params <= 1):
            raise HardwareValueError(f"StockImpedanceOptions.filter_params must be in (0, 1], "
                                     f"got {self.filter_params!r}")
        for name in ("delta_tau_max", "control_rate_hz"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise HardwareValueError(f"StockImpedanceOptions.{name} must be a positive "
                                         f"number, got {v!r}")


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def equilibrium_step_response(k: np.ndarray | int, alpha: float = 0.005) -> np.ndarray:
    """Fraction of an equilibrium step the stock controller has taken after ``k`` ticks:
    1 − (1 − α)ᵏ."""
    return 1.0 - (1.0 - alpha) ** np.asarray(k, dtype=float)


class StockCartesianImpedance:
    """The stock controller's law and filters on a Pinocchio arm model (module docstring).

    Args:
        model: ``pinocchio.Model`` of the arm (n joints).
        frame: the end-effector frame.
        q0: (n,) joint positions when the controller starts: the equilibrium is that pose and
            the null-space posture q_n is q0.
        options: :class:`StockImpedanceOptions`.
    """

    def __init__(self, model: Any, frame: str, q0: np.ndarray,
                 options: StockImpedanceOptions | None = None):
        import pinocchio as pin

        self._pin = pin
        self.options = o = options or StockImpedanceOptions()
        self.model, self.data = model, model.createData()
        self.frame_id = model.getFrameId(frame)
        self.n = model.nv
        q0 = np.asarray(q0, float)
        self.q_nullspace = q0.copy()
        pin.framesForwardKinematics(model, self.data, q0)
        M = self.data.oMf[self.frame_id]
        self.position_d = M.translation.copy()
        self.orientation_d = Rotation.from_matrix(M.rotation)
        self.position_d_target = self.position_d.copy()
        self.orientation_d_target = self.orientation_d
        # gains start at zero and are filtered towards the dynamic-reconfigure targets
        self.stiffness = np.zeros(6)
        self.damping = np.zeros(6)
        self.k_null = 0.0
        self.set_gains(o.translational_stiffness, o.rotational_stiffness, o.nullspace_stiffness)
        self.tau_d_prev = np.zeros(self.n)
        """The previous desired torque (libfranka's ``tau_J_d``, without gravity) [N m]."""

    # -- inputs -------------------------------------------------------------------------
    def set_gains(self, translational: float, rotational: float, nullspace: float) -> None:
        """Dynamic reconfigure: new stiffness targets [N/m, N m/rad, N m/rad] (damping 2√k)."""
        for name, v in (("translational_stiffness", translational),
                        ("rotational_stiffness", rotational),
                        ("nullspace_stiffness", nullspace)):
            lo, hi = RANGES[name]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                raise HardwareValueError(f"{name} must be in [{lo:g}, {hi:g}], got {v!r}")
        k = np.array([translational] * 3 + [rotational] * 3, dtype=float)
        self.stiffness_target = k
        self.damping_target = 2.0 * np.sqrt(k)
        self.k_null_target = float(nullspace)

    def set_equilibrium(self, position: np.ndarray, quaternion: np.ndarray) -> None:
        """The ``equilibrium_pose`` callback: new target pose (quaternion x, y, z, w; flipped
        to the previous target's hemisphere as the controller does)."""
        q = np.asarray(quaternion, float)
        if float(q @ self.orientation_d_target.as_quat()) < 0.0:
            q = -q
        self.position_d_target = np.asarray(position, float).copy()
        self.orientation_d_target = Rotation.from_quat(q)

    # -- one control period -------------------------------------------------------------
    def torque(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """The desired torque τ_d (n,) [N m] *without gravity* (the robot adds it), rate-limited
        against the previous one by ``delta_tau_max`` per tick of the period since the last
        call (one tick: call :meth:`advance` after each)."""
        pin = self._pin
        model, data, fid = self.model, self.data, self.frame_id
        q = np.asarray(q, float)
        dq = np.asarray(dq, float)
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacement(model, data, fid)
        J = pin.getFrameJacobian(model, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        M = data.oMf[fid]
        R = M.rotation
        coriolis = (np.array(pin.nonLinearEffects(model, data, q, dq))
                    - np.array(pin.computeGeneralizedGravity(model, data, q)))
        error = np.empty(6)
        error[:3] = M.translation - self.position_d
        o = Rotation.from_matrix(R).as_quat()
        od = self.orientation_d.as_quat()
        if float(od @ o) < 0.0:
            o = -o
        # "difference" quaternion o⁻¹ o_d, its vector part (Eigen's product: no sign change)
        e_vec = _quat_mul(o * [-1.0, -1.0, -1.0, 1.0], od)[:3]
        error[3:] = -R @ e_vec
        tau_task = J.T @ (-self.stiffness * error - self.damping * (J @ dq))
        Jt_pinv = np.linalg.pinv(J.T)
        kn = self.k_null
        tau_null = (np.eye(self.n) - J.T @ Jt_pinv) @ (
            kn * (self.q_nullspace - q) - 2.0 * math.sqrt(kn) * dq)
        return tau_task + tau_null + coriolis

    def saturate(self, tau_d: np.ndarray, ticks: int = 1) -> np.ndarray:
        """``tau_d`` rate-limited against :attr:`tau_d_prev` (``ticks`` × ``delta_tau_max``);
        stores and returns the result."""
        lim = self.options.delta_tau_max * ticks
        out = self.tau_d_prev + np.clip(tau_d - self.tau_d_prev, -lim, lim)
        self.tau_d_prev = out
        return out

    def advance(self, ticks: int = 1) -> None:
        """``ticks`` controller ticks of the gain and equilibrium filters (closed form)."""
        if ticks < 1:
            return
        f = float(equilibrium_step_response(ticks, self.options.filter_params))
        self.stiffness += f * (self.stiffness_target - self.stiffness)
        self.damping += f * (self.damping_target - self.damping)
        self.k_null += f * (self.k_null_target - self.k_null)
        self.position_d = self.position_d + f * (self.position_d_target - self.position_d)
        key = Rotation.from_quat(np.stack([self.orientation_d.as_quat(),
                                           self.orientation_d_target.as_quat()]))
        self.orientation_d = Slerp([0.0, 1.0], key)([f])[0]
