"""A robot's links as contact geometry of a deformable world: a Franka Panda's two finger pads.

Two couplings:

* one-way (:func:`panda_finger_pads`): the pads are kinematic obstacles placed by Pinocchio
  forward kinematics along a joint trajectory; the deformable body's contact forces on them are
  reported, not fed back;
* two-way (:func:`panda_coupled_robot`): the Panda is a :class:`~.coupling.CoupledRobot` whose
  joint PD actuators track the same trajectory; the pads' contact rows enter its dynamics, so
  the ball pushes the fingers open and hangs on the arm's actuators.

:func:`panda_pinch_trajectory` plans the joint trajectory of a top-down pinch-and-lift (damped
least-squares IK for the hand, fingers closed by a smoothstep); :func:`panda_finger_pads` turns it
into two :class:`BoxObstacle` whose ``motion`` gives each pad's displacement and velocity (the
central difference of the forward kinematics) at any time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .obstacles import BoxObstacle

__all__ = ["PandaTrajectory", "panda_pinch_trajectory", "panda_finger_pads", "panda_coupled_robot", "PAD_HALF_EXTENTS",
           "PAD_OFFSET", "READY", "PANDA_KP", "PANDA_KD"]

PAD_HALF_EXTENTS = (0.01, 0.004, 0.012)
"""Half extents [m] of a fingertip pad box in the hand frame (x, y: the closing direction, z)."""
PAD_OFFSET = 0.045
"""Distance [m] of the pad centre from the finger frame's origin along the hand's z axis."""
READY = (0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4)
"""The Panda's usual ready configuration (hand pointing down), the IK's start."""
PANDA_KP = (600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0, 1000.0, 1000.0)
"""Joint stiffness of :func:`panda_coupled_robot`'s PD actuators: the arm's are the stiffness of
franka_ros's joint impedance example [N·m/rad]; the fingers' [N/m] opens a finger by 1 mm per
newton of squeeze, so the ball's push back shows in the finger joints (at 200 N/m the squeeze was
too weak to hold the 0.11 kg ball through the lift's acceleration: it slid 13 mm)."""
PANDA_KD = (50.0, 50.0, 50.0, 50.0, 30.0, 25.0, 15.0, 10.0, 10.0)
"""Joint damping of :func:`panda_coupled_robot`'s PD actuators [N·m·s/rad, N·s/m]."""


def _panda_model():
    import pinocchio as pin

    from ...multibody.resources import example_robot_data_path

    return pin, pin.buildModelFromUrdf(str(example_robot_data_path("robots/panda_description/urdf/panda.urdf")))


@dataclass(frozen=True)
class PandaTrajectory:
    """A joint trajectory q(t) of the Panda, piecewise linear between knots ``t`` (k,) [s] and
    ``q`` (k, 9) (7 arm joints, 2 finger joints [m])."""

    t: np.ndarray
    q: np.ndarray

    def __call__(self, time: float) -> np.ndarray:
        return np.array([np.interp(time, self.t, self.q[:, j]) for j in range(self.q.shape[1])])


def _ik(pin, model, data, q0, frame, target, iterations: int = 200, damping: float = 1e-6) -> np.ndarray:
    """Damped least-squares IK of ``frame`` to the SE3 ``target`` with the fingers held."""
    q = q0.copy()
    fid = model.getFrameId(frame)
    for _ in range(iterations):
        pin.framesForwardKinematics(model, data, q)
        err = pin.log6(data.oMf[fid].actInv(target)).vector
        if np.linalg.norm(err) < 1e-10:
            break
        J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL)[:, :7]
        dq = J.T @ np.linalg.solve(J @ J.T + damping * np.eye(6), err)
        q[:7] = np.clip(q[:7] + dq, model.lowerPositionLimit[:7], model.upperPositionLimit[:7])
    pin.framesForwardKinematics(model, data, q)
    residual = np.linalg.norm(pin.log6(data.oMf[fid].actInv(target)).vector)
    if residual > 1e-6:
        raise ValueError(f"the Panda cannot reach the grasp pose (IK residual {residual:.2e})")
    return q


def panda_pinch_trajectory(center, radius: float, squeeze: float, lift: float, close_time: float,
                           lift_start: float, lift_time: float, knots: int = 21) -> PandaTrajectory:
    """Top-down pinch of a ball of ``radius`` at ``center`` [m]: the hand above it with the pads at
    the ball's centre height, fingers closing from open (0.04 m) to ``radius − squeeze``, then the
    hand rising by ``lift`` with its orientation held (IK at ``knots`` heights)."""
    pin, model = _panda_model()
    data = model.createData()
    q = np.array([*READY, 0.04, 0.04])
    pin.framesForwardKinematics(model, data, q)
    hand = model.getFrameId("panda_hand")
    finger = model.getFrameId("panda_leftfinger")
    R = data.oMf[hand].rotation.copy()  # hand z points down at the ready configuration
    drop = float((data.oMf[finger].translation - data.oMf[hand].translation) @ R[:, 2]) + PAD_OFFSET  # hand → pad
    closed = radius - squeeze
    if not 0.0 <= closed <= 0.04:
        raise ValueError(f"radius − squeeze must lie in [0, 0.04] m (the finger stroke), got {closed}")
    c = np.asarray(center, float)
    ts, qs = [0.0], []
    q_grasp = _ik(pin, model, data, q, "panda_hand", pin.SE3(R, c - drop * R[:, 2]))
    qs.append(q_grasp.copy())
    for s in np.linspace(0.0, 1.0, 11)[1:]:  # closing: smoothstep on the finger joints
        qk = q_grasp.copy()
        qk[7:] = 0.04 + (closed - 0.04) * s * s * (3 - 2 * s)
        ts.append(close_time * s)
        qs.append(qk)
    ts.append(lift_start)
    qs.append(qs[-1].copy())
    qk = qs[-1].copy()
    for s in np.linspace(0.0, 1.0, knots)[1:]:
        a = s * s * (3 - 2 * s)
        qk = _ik(pin, model, data, qk, "panda_hand", pin.SE3(R, c - drop * R[:, 2] + np.array([0, 0, lift * a])))
        ts.append(lift_start + lift_time * s)
        qs.append(qk.copy())
    return PandaTrajectory(np.array(ts), np.array(qs))


def panda_finger_pads(trajectory: PandaTrajectory, mu: float = 0.8, eps: float = 1e-4) -> tuple:
    """The two pads (left, right) as :class:`BoxObstacle` following ``trajectory`` by forward
    kinematics; their rotation is the hand's at t = 0 (held by the IK)."""
    pin, model = _panda_model()
    data = model.createData()
    frames = [model.getFrameId("panda_leftfinger"), model.getFrameId("panda_rightfinger")]
    hand = model.getFrameId("panda_hand")

    def centres(time: float) -> np.ndarray:
        pin.framesForwardKinematics(model, data, trajectory(time))
        R = data.oMf[hand].rotation
        out = []
        for side, f in zip((1.0, -1.0), frames):  # inner face on the finger frame's plane
            local = np.array([0.0, side * PAD_HALF_EXTENTS[1], PAD_OFFSET])
            out.append(data.oMf[f].translation + R @ local)
        return np.array(out)

    start = centres(0.0)
    pin.framesForwardKinematics(model, data, trajectory(0.0))
    R0 = data.oMf[hand].rotation.copy()

    def motion(k: int):
        def f(time: float):
            d = (centres(time + eps)[k] - centres(time - eps)[k]) / (2 * eps)
            return centres(time)[k] - start[k], d
        return f

    return tuple(BoxObstacle(name=name, mu=mu, center=start[k], half_extents=PAD_HALF_EXTENTS, rotation=R0,
                             motion=motion(k)) for k, name in enumerate(("panda_left_pad", "panda_right_pad")))


def panda_coupled_robot(trajectory: PandaTrajectory, mu: float = 0.8, kp=PANDA_KP, kd=PANDA_KD,
                        name: str = "panda"):
    """The Panda as a :class:`~.coupling.CoupledRobot` (two-way coupling): the example-robot-data
    URDF (9 DoFs: 7 arm joints and the two finger joints, each with its own actuator), joint PD
    actuators with gravity compensation tracking ``trajectory`` (``kp``, ``kd`` per joint), and the
    two fingertip pads of :func:`panda_finger_pads` as :class:`~.coupling.LinkBox` es on the
    ``panda_leftfinger``/``panda_rightfinger`` frames (contact-force keys ``"<name>/left_pad"`` and
    ``"<name>/right_pad"``)."""
    from .coupling import CoupledRobot, LinkBox

    pin, model = _panda_model()
    data = model.createData()
    q0 = trajectory(0.0)
    pin.framesForwardKinematics(model, data, q0)
    R = data.oMf[model.getFrameId("panda_hand")].rotation
    shapes = []
    for side, frame, label in ((1.0, "panda_leftfinger", "left_pad"), (-1.0, "panda_rightfinger", "right_pad")):
        oMf = data.oMf[model.getFrameId(frame)]
        centre = oMf.translation + R @ np.array([0.0, side * PAD_HALF_EXTENTS[1], PAD_OFFSET])
        shapes.append(LinkBox(frame, PAD_HALF_EXTENTS, translation=oMf.rotation.T @ (centre - oMf.translation),
                              rotation=oMf.rotation.T @ R, mu=mu, name=f"{name}/{label}"))
    return CoupledRobot(name, model, tuple(shapes), q0, kp=kp, kd=kd, q_ref=trajectory, gravity_compensation=True)
