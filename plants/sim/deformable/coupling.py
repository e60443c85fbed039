"""Two-way coupling of Pinocchio robots with deformable bodies through the contact rows.

A :class:`CoupledRobot` is an articulated rigid body (any Pinocchio model: a free-flying box, a
Franka Panda) whose links carry box-shaped contact geometry (:class:`LinkBox`). Its generalized
velocities join the deformable nodes in **one contact problem per step** (a monolithic coupling,
not a staggered one): a contact row j between deformable node i and a point p of a robot link
measures the relative displacement along its unit direction c_j,

    δ_j = c_j·q_i − h G_j v⁺ − d_j,        G_j = c_jᵀ J_p(q_t)       (1 × n_v)

with J_p the link's point Jacobian at the node (frozen for the step, like the normal). The robot
takes one semi-implicit Euler step with implicit joint PD actuators (stiffness K, damping D about a
reference q_ref(t)) and an optional gravity feed-forward τ_g = g(q_t):

    M̂ (v⁺ − v*) = −h Gᵀ λ,   M̂ = M(q_t) + h D + h² K,
    v* = v + h M̂⁻¹ (K(q_ref ⊖ q_t − h v) + D(v̇_ref − v) + τ_g − C(q_t, v) v − g(q_t))

(λ [N] the row forces on the deformable body, −λ on the robot). Substituting v⁺ into δ makes the
robot's Delassus part G M̂⁻¹ Gᵀ add to the deformable W = H A⁻¹ Hᵀ (seed 004 Eq. 27): the rows'
NCP functions, preconditioner and conjugate-residual solve are unchanged, the force that acts on
the ball acts, equal and opposite, on the robot's links, and the step conserves the total momentum
up to the external forces. See ``docs/deformables.md`` §4b.

Robot links collide with deformable nodes only (node vs box SDF); rigid-rigid contact is the rigid
simulator's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .obstacles import _box_sdf, _vec

__all__ = ["LinkBox", "CoupledRobot", "RobotStep", "RobotDynamics"]


@dataclass(frozen=True)
class LinkBox:
    """A box fixed to a frame of a robot: contact geometry for deformable nodes.

    Attributes:
        frame: name of the Pinocchio frame (or link) the box is attached to.
        half_extents: (3,) half side lengths [m] along the box's own axes.
        translation: (3,) box centre in the frame [m].
        rotation: (3, 3) box axes in the frame.
        mu: friction coefficient with deformable bodies (the smaller of it and a body's ``mu``).
        name: contact-force key (default ``"<robot>/<frame>"``).
    """

    frame: str
    half_extents: tuple = (0.01, 0.01, 0.01)
    translation: tuple = (0.0, 0.0, 0.0)
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    mu: float = 0.5
    name: str = ""

    def __post_init__(self):
        if not isinstance(self.frame, str) or not self.frame:
            raise TypeError(f"frame must be a non-empty frame name, got {self.frame!r}")
        h = _vec(self.half_extents, "half_extents")
        if (h <= 0).any():
            raise ValueError(f"half_extents must be > 0 [m], got {h}")
        R = np.asarray(self.rotation, float)
        if R.shape != (3, 3) or not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
            raise ValueError("rotation must be a 3x3 rotation matrix")
        if not (np.isfinite(self.mu) and self.mu >= 0):
            raise ValueError(f"mu of link box {self.frame!r} must be >= 0, got {self.mu}")
        object.__setattr__(self, "half_extents", h)
        object.__setattr__(self, "translation", _vec(self.translation, "translation"))
        object.__setattr__(self, "rotation", R)


def _gains(value, n: int, name: str) -> np.ndarray:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number or an array of {n}, got a bool")
    a = np.asarray(value, float)
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,) or not np.isfinite(a).all() or (a < 0).any():
        raise ValueError(f"{name} must be >= 0, a scalar or shape ({n},), got {value!r}")
    return a


@dataclass(frozen=True)
class CoupledRobot:
    """A Pinocchio robot coupled two-way with the deformable bodies of a world.

    Attributes:
        name: the robot's name (its contact-force keys are ``"<name>/<frame>"`` by default).
        model: a ``pinocchio.Model`` (copied; its gravity is set to the world's).
        shapes: :class:`LinkBox` contact geometry on its frames.
        q0: (n_q,) initial configuration; v0: (n_v,) initial velocity [m/s, rad/s] (zeros).
        kp: joint PD stiffness (scalar or (n_v,)) [N/m, N·m/rad]; 0: an unactuated joint.
        kd: joint PD damping (scalar or (n_v,)) [N·s/m, N·m·s/rad].
        q_ref: ``q_ref(t) -> (n_q,)`` the actuators' reference at time t [s] (default: q0).
        gravity_compensation: add τ_g = g(q) to the actuator torques (as Franka's controller does).
    """

    name: str
    model: Any
    shapes: tuple
    q0: np.ndarray
    v0: np.ndarray | None = None
    kp: Any = 0.0
    kd: Any = 0.0
    q_ref: Callable[[float], np.ndarray] | None = None
    gravity_compensation: bool = False

    def __post_init__(self):
        import pinocchio as pin

        if not isinstance(self.model, pin.Model):
            raise TypeError(f"model of robot {self.name!r} must be a pinocchio.Model, got {type(self.model).__name__}")
        model = self.model
        shapes = tuple(self.shapes)
        if not shapes or not all(isinstance(s, LinkBox) for s in shapes):
            raise TypeError(f"shapes of robot {self.name!r} must be a non-empty sequence of LinkBox")
        for s in shapes:
            if not model.existFrame(s.frame):
                raise ValueError(f"robot {self.name!r} has no frame {s.frame!r}")
        shapes = tuple(s if s.name else LinkBox(s.frame, s.half_extents, s.translation, s.rotation, s.mu,
                                                f"{self.name}/{s.frame}") for s in shapes)
        names = [s.name for s in shapes]
        if len(set(names)) != len(names):
            raise ValueError(f"link box names of robot {self.name!r} must be unique, got {names}")
        q0 = np.array(self.q0, float)
        if q0.shape != (model.nq,) or not np.isfinite(q0).all():
            raise ValueError(f"q0 of robot {self.name!r} must be a finite ({model.nq},) array, got shape {q0.shape}")
        v0 = np.zeros(model.nv) if self.v0 is None else np.array(self.v0, float)
        if v0.shape != (model.nv,) or not np.isfinite(v0).all():
            raise ValueError(f"v0 of robot {self.name!r} must be a finite ({model.nv},) array, got shape {v0.shape}")
        if self.q_ref is not None and not callable(self.q_ref):
            raise TypeError(f"q_ref of robot {self.name!r} must be callable(t) -> (n_q,)")
        if not isinstance(self.gravity_compensation, (bool, np.bool_)):
            raise TypeError("gravity_compensation must be a bool")
        object.__setattr__(self, "shapes", shapes)
        object.__setattr__(self, "q0", q0)
        object.__setattr__(self, "v0", v0)
        object.__setattr__(self, "kp", _gains(self.kp, model.nv, "kp"))
        object.__setattr__(self, "kd", _gains(self.kd, model.nv, "kd"))

    @property
    def nq(self) -> int:
        return int(self.model.nq)

    @property
    def nv(self) -> int:
        return int(self.model.nv)

    def reference(self, t: float) -> np.ndarray:
        """(n_q,) the actuators' reference configuration at time t [s]."""
        if self.q_ref is None:
            return self.q0
        q = np.asarray(self.q_ref(float(t)), float)
        if q.shape != (self.nq,) or not np.isfinite(q).all():
            raise ValueError(f"q_ref of robot {self.name!r} must return a finite ({self.nq},) array")
        return q


@dataclass(frozen=True)
class RobotStep:
    """One robot's data for a step from (q, v) at t: the implicit-actuator mass M̂ (n_v, n_v), the
    contact-free velocity v* (n_v,), and the pieces of the actuator torque
    τ(v⁺) = τ₀ − (D + hK) v⁺ (τ₀ = K(q_ref ⊖ q) + D v̇_ref + τ_g) [N, N·m]."""

    Mhat: np.ndarray
    v_star: np.ndarray
    tau0: np.ndarray
    tau_slope: np.ndarray


class RobotDynamics:
    """Pinocchio model, data and geometry of one :class:`CoupledRobot` (mutable, per simulator)."""

    def __init__(self, robot: CoupledRobot, gravity: np.ndarray):
        import pinocchio as pin

        self.pin = pin
        self.robot = robot
        self.model = robot.model.copy()
        self.model.gravity.linear = np.asarray(gravity, float)
        self.data = self.model.createData()
        self.frames = [self.model.getFrameId(s.frame) for s in robot.shapes]

    def prepare(self, q: np.ndarray, v: np.ndarray, t: float, h: float) -> RobotStep:
        """Kinematics at q (placements and Jacobians for :meth:`query`) and the step's M̂, v*."""
        pin, model, data, rb = self.pin, self.model, self.data, self.robot
        pin.computeAllTerms(model, data, q, v)  # M, nle = C v + g, joint Jacobians, placements
        pin.updateFramePlacements(model, data)
        nv = model.nv  # (eigenpy returns (n,) for an (n, 1) matrix: reshape)
        M = np.asarray(data.M).reshape(nv, nv)
        M = np.triu(M) + np.triu(M, 1).T
        q_ref, q_ref_next = rb.reference(t), rb.reference(t + h)
        dq_ref = pin.difference(model, q_ref, q_ref_next) / h
        err = pin.difference(model, q, q_ref_next)
        tau0 = rb.kp * err + rb.kd * dq_ref
        if rb.gravity_compensation:
            tau0 = tau0 + pin.computeGeneralizedGravity(model, data, q)
        slope = rb.kd + h * rb.kp
        Mhat = M + h * np.diag(slope)
        v_star = v + h * np.linalg.solve(Mhat, tau0 - slope * v - data.nle)
        return RobotStep(Mhat, v_star, tau0, slope)

    def query(self, k: int, x: np.ndarray, v: np.ndarray):
        """Shape k against points x (N, 3) at the prepared configuration: (φ (N,), outward normal
        (N, 3), velocity (N, 3) of the link's material point at x for generalized velocity v, and
        the point-Jacobian function ``G(sel, C) -> (len(sel), n_v)`` giving c·J_p(x) per row)."""
        pin, model, data = self.pin, self.model, self.data
        s, fid = self.robot.shapes[k], self.frames[k]
        oMf = data.oMf[fid]
        R = oMf.rotation @ s.rotation
        p = oMf.translation + oMf.rotation @ s.translation
        phi, g = _box_sdf((x - p) @ R, s.half_extents)
        normal = g @ R.T
        J = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)  # [v_o; ω] at the frame origin
        J = np.asarray(J).reshape(6, model.nv)
        Jv, Jw = J[:3], J[3:]
        r = x - oMf.translation
        vel = (Jv @ v)[None, :] + np.cross(Jw @ v, r)

        def G(sel: np.ndarray, C: np.ndarray) -> np.ndarray:
            """c·(v_o + ω × r) = c·J_v v + (r × c)·J_ω v for row directions C (len(sel), 3)."""
            return C @ Jv + np.cross(r[sel], C) @ Jw

        return phi, normal, vel, G

    def integrate(self, q: np.ndarray, v: np.ndarray, h: float) -> np.ndarray:
        return self.pin.integrate(self.model, q, h * v)
