"""The full ``franka_msgs/FrankaState`` of a simulated Panda, with libfranka's semantics.

:class:`PandaStateFields` turns what the twin's simulator knows (joint positions and
velocities of the example-robot-data Panda, the torque its controller applied, the contact
force on the end effector) into every float field of :data:`hardware.messages.FRANKA_STATE_FIELDS`,
the way libfranka (``franka::RobotState``) and ``franka_state_controller`` fill them for a robot
under an **external torque controller** (franka_ros' Cartesian impedance controllers are
torque controllers on the effort interface):

* ``q``, ``dq``: the simulated joints; ``theta``/``dtheta`` (motor side) equal them (rigid
  joints); ``elbow`` = (q₃, sign q₄) as libfranka defines the elbow.
* ``tau_J``: the measured link-side torque = the torque the controller applied (gravity
  included: the simulator has no internal gravity compensation); ``tau_J_d``: the desired
  torque *without gravity* (libfranka's ``tau_J_d``: what the user's torque controller
  commanded, the robot adds gravity itself) = ``tau_J − g(q)``; ``dtau_J`` its finite
  difference over the simulated time.
* ``O_F_ext_hat_K``: the external wrench at the stiffness frame K (= the end effector,
  ``EE_T_K`` identity) in the base frame, libfranka's sign: **forces the robot applies to the
  environment are positive**; ``K_F_ext_hat_K`` the same wrench in K;
  ``tau_ext_hat_filtered`` = Jᵀ ``O_F_ext_hat_K`` (the joint torques that wrench costs, the
  sign of ``tau_J − g``).
* No motion generator runs under a torque controller, so libfranka's *desired* and
  *commanded* motion-generator signals follow the measured ones: ``q_d`` = ``q``,
  ``dq_d`` = ``dq``, ``ddq_d`` = 0, ``O_T_EE_d`` = ``O_T_EE_c`` = ``O_T_EE``,
  ``O_dP_EE_d`` = ``O_dP_EE_c`` = the measured twist, ``O_ddP_EE_c`` = 0, ``elbow_d`` =
  ``elbow_c`` = ``elbow``. ``O_T_EE_d`` is *not* the impedance controller's equilibrium (that
  pose is internal to the controller and not in the message).
* ``O_ddP_O`` = (0, 0, −9.81) (the base's acceleration, gravity); ``time`` the robot's clock
  [s] (the simulated time since start); ``control_command_success_rate`` 1 (every 1 kHz
  command arrives in simulation); no end-effector or load inertia is configured (``m_ee`` =
  ``m_load`` = ``m_total`` = 0, zero inertias); no collision/contact thresholds are emulated
  (the four collision/contact flag arrays are 0).
* ``F_T_EE`` = ``F_T_NE`` is the flange (``panda_link8``) to end-effector (sphere centre)
  transform of the model, ``NE_T_EE`` = ``EE_T_K`` = identity.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["PandaStateFields", "GRAVITY_BASE"]

#: ``O_ddP_O``: the robot base's acceleration with gravity [m/s²].
GRAVITY_BASE = (0.0, 0.0, -9.81)

_FLANGE = "panda_link8"


class PandaStateFields:
    """The float fields of a FrankaState from the simulated Panda (module docstring).

    Args:
        model: ``pinocchio.Model`` of the arm alone (7 joints).
        frame: name of the end-effector frame (the stiffness frame K).
    """

    def __init__(self, model: Any, frame: str):
        import pinocchio as pin

        self._pin = pin
        self.model = model
        self.data = model.createData()
        if not model.existFrame(frame):
            raise ValueError(f"frame {frame!r} is not in the model")
        self.frame_id = model.getFrameId(frame)
        self.n = model.nv
        if self.n != 7:
            raise ValueError(f"a Panda arm model has 7 joints, got nv = {self.n}")
        q0 = pin.neutral(model)
        pin.framesForwardKinematics(model, self.data, q0)
        ee = self.data.oMf[self.frame_id]
        if model.existFrame(_FLANGE):
            F_T_EE = (self.data.oMf[model.getFrameId(_FLANGE)].inverse() * ee).homogeneous
        else:
            F_T_EE = np.eye(4)
        self.F_T_EE = np.array(F_T_EE)
        self._prev_tau: np.ndarray | None = None
        self._prev_t = -math.inf

    def gravity(self, q: np.ndarray) -> np.ndarray:
        """g(q) (7,) [N m]."""
        return np.array(self._pin.computeGeneralizedGravity(self.model, self.data,
                                                            np.asarray(q, float)))

    def fields(self, q: np.ndarray, dq: np.ndarray, tau: np.ndarray, wrench: np.ndarray,
               t: float) -> dict[str, Any]:
        """Every float field of :data:`~hardware.messages.FRANKA_STATE_FIELDS`.

        Args:
            q, dq: (7,) joint positions [rad] and velocities [rad/s].
            tau: (7,) joint torques the controller applied [N m] (gravity included).
            wrench: (6,) ``O_F_ext_hat_K`` [N, N m] (robot on environment positive).
            t: the robot's time [s].
        """
        pin = self._pin
        q = np.asarray(q, float)
        dq = np.asarray(dq, float)
        tau = np.asarray(tau, float)
        w = np.asarray(wrench, float)
        model, data, fid = self.model, self.data, self.frame_id
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        J = pin.getFrameJacobian(model, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        oM = data.oMf[fid]
        T = np.array(oM.homogeneous)
        R = oM.rotation
        g = self.gravity(q)
        twist = J @ dq
        dtau = np.zeros(7)
        if self._prev_tau is not None and t > self._prev_t:
            dtau = (tau - self._prev_tau) / (t - self._prev_t)
        self._prev_tau, self._prev_t = tau.copy(), t
        elbow = [float(q[2]), 1.0 if q[3] >= 0 else -1.0]
        zeros7, zeros6 = np.zeros(7), np.zeros(6)
        return {
            "cartesian_collision": zeros6, "cartesian_contact": zeros6,
            "q": q, "q_d": q, "dq": dq, "dq_d": dq, "ddq_d": zeros7,
            "theta": q, "dtheta": dq,
            "tau_J": tau, "dtau_J": dtau, "tau_J_d": tau - g,
            "K_F_ext_hat_K": np.concatenate([R.T @ w[:3], R.T @ w[3:]]),
            "elbow": elbow, "elbow_d": elbow, "elbow_c": elbow,
            "delbow_c": [float(dq[2]), 0.0], "ddelbow_c": [0.0, 0.0],
            "joint_collision": zeros7, "joint_contact": zeros7,
            "O_F_ext_hat_K": w, "O_dP_EE_d": twist, "O_ddP_O": GRAVITY_BASE,
            "O_dP_EE_c": twist, "O_ddP_EE_c": zeros6,
            "tau_ext_hat_filtered": J.T @ w,
            "m_ee": 0.0, "F_x_Cee": np.zeros(3), "I_ee": np.zeros(9),
            "m_load": 0.0, "F_x_Cload": np.zeros(3), "I_load": np.zeros(9),
            "m_total": 0.0, "F_x_Ctotal": np.zeros(3), "I_total": np.zeros(9),
            "O_T_EE_d": T, "O_T_EE_c": T, "F_T_EE": self.F_T_EE, "F_T_NE": self.F_T_EE,
            "NE_T_EE": np.eye(4), "EE_T_K": np.eye(4),
            "time": float(t), "control_command_success_rate": 1.0,
        }
