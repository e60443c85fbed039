"""A free-floating cube turned in 3-D by two point fingers (issue 24: quaternion costs).

A 1 m, 1 kg cube on a floating joint (Pinocchio free-flyer: 7 q with a unit quaternion, 6 v)
and two sphere fingers (r = 0.1 m, 0.1 kg), each on three actuated prismatic joints (world x,
y, z). Gravity is off: the cube floats (an object on an air bearing or in orbit), so the only
forces on it are the two finger contacts (μ = 1, d = 2: a four-edge friction pyramid each).
With Stewart-Trinkle, n_x = 25 (13 q + 12 v), n_λ = 2·2 + 2·4 = 12, n_u = 6 (finger forces
[N] along world x, y, z). The task: from rest, fingers on the -x and +x faces, turn the cube
to an orientation goal (default 45° about +z) and hold it at the origin. Turning needs the
fingers to squeeze (normal force) and push tangentially in opposite directions (friction):
the contact forces are the only way to move the cube.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..paper.base import ControlDefaults
from ..registry import register_plant
from ._assets import asset_path
from .base import MultibodyModelPlant, check_contact_model, check_positive, make_params, \
    urdf_plant

__all__ = ["CubeRotate3DParams", "CubeRotate3D", "axis_angle_quaternion", "angle_error"]

CUBE_HALF = 0.5
FINGER_RADIUS = 0.1
#: Finger force limit [N] (ours).
FORCE_LIMIT = 10.0
#: State index of the cube's unit quaternion (Pinocchio order x, y, z, w).
QUATERNION_INDEX = 3


def axis_angle_quaternion(axis: Any, angle: float) -> np.ndarray:
    """Unit quaternion (x, y, z, w), Pinocchio's order, of the rotation by ``angle`` [rad]
    about ``axis`` (3,) (normalised here)."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    return np.r_[np.sin(angle / 2) * a, np.cos(angle / 2)]


def angle_error(q: Any, q_goal: Any) -> float:
    """Rotation angle [rad] between two unit quaternions: 2 acos|⟨q, q_goal⟩| ∈ [0, π]
    (q and -q are the same orientation here)."""
    q = np.asarray(q, dtype=float)
    r = np.asarray(q_goal, dtype=float)
    c = abs(float(q @ r)) / (np.linalg.norm(q) * np.linalg.norm(r))
    return float(2.0 * np.arccos(min(c, 1.0)))


@dataclass(frozen=True)
class CubeRotate3DParams:
    """Parameters of the 3-D cube-rotation plant.

    Attributes:
        mu: friction coefficient of the two finger contacts.
        dt: LCS / simulation time step [s].
        contact_model: default contact model of :meth:`CubeRotate3D.lcs`.
        goal_angle: target rotation of the cube [rad], in (0, π).
        goal_axis: (3,) axis of the target rotation (world frame, normalised), e.g.
            ``(0, 0, 1)``: a turn about the vertical; ``(0, 1, 1)``: a turn tilting the cube.
            The fingers push on the ±x faces, so the axis must have no x component.
    """

    mu: float = 1.0
    dt: float = 0.05
    contact_model: str = "stewart_trinkle"
    goal_angle: float = np.pi / 4
    goal_axis: tuple[float, float, float] = (0.0, 0.0, 1.0)

    def __post_init__(self) -> None:
        check_positive(self, "dt")
        if not (np.isfinite(self.mu) and self.mu >= 0):
            raise ValueError(f"mu must be finite and >= 0, got {self.mu!r}")
        check_contact_model(self.contact_model)
        if not (np.isfinite(self.goal_angle) and 0 < self.goal_angle < np.pi):
            raise ValueError(f"goal_angle must be in (0, pi) rad, got {self.goal_angle!r}")
        axis = np.asarray(self.goal_axis, dtype=float)
        if axis.shape != (3,) or not np.isfinite(axis).all() or not np.linalg.norm(axis) > 0:
            raise ValueError(f"goal_axis must be a finite non-zero 3-vector, got "
                             f"{self.goal_axis!r}")
        if abs(axis[0]) > 1e-12:
            raise ValueError(f"goal_axis must have no x component (the fingers push on the "
                             f"±x faces), got {self.goal_axis!r}")
        object.__setattr__(self, "goal_axis", tuple(float(a) for a in axis))


@register_plant("cube-rotate-3d")
class CubeRotate3D(MultibodyModelPlant):
    """The 3-D cube-rotation plant (URDF ``assets/cube_rotate_3d.urdf``, gravity off).

    State ``x = [cube_x, cube_y, cube_z, cube_qx, cube_qy, cube_qz, cube_qw, left_x, left_y,
    left_z, right_x, right_y, right_z, (12 velocities)]``: cube world position [m] and unit
    quaternion (Pinocchio order x, y, z, w; at :attr:`quaternion_indices`), finger world
    positions [m]; velocities: the cube's linear and angular velocity in the cube frame
    [m/s, rad/s], then the fingers' [m/s]. Input ``u`` = finger forces [N], ``[left_fx,
    left_fy, left_fz, right_fx, right_fy, right_fz]``. ``lambda`` (Stewart-Trinkle) =
    ``[γ (2); λ_n (2); λ_t (8)]`` for the contacts (left finger, right finger).
    """

    name = "cube-rotate-3d"
    #: State indices where unit quaternions start (for ``C3Options.quaternion_indices``).
    quaternion_indices: tuple[int, ...] = (QUATERNION_INDEX,)
    #: ``C3Options.quaternion_weight`` w matching the default raw weight Q_q = c·I = 1000·I
    #: near the goal: (q − r)ᵀ w∇²θ² (q − r) ≈ 2wθ² and c‖q − r‖² ≈ (c/4)θ², so w = c/8
    #: (docs/c3.md).
    quaternion_weight: float = 125.0

    def __init__(self, **params: Any):
        super().__init__(make_params(CubeRotate3DParams, self.name, params))

    def _build_multibody(self) -> Any:
        from ..multibody import ContactPair

        mu = self.params.mu
        pairs = [ContactPair("cube", "left_finger", mu, 2),
                 ContactPair("cube", "right_finger", mu, 2)]
        mb = urdf_plant(asset_path("cube_rotate_3d.urdf"), pairs,
                        actuated_joints=[f"{s}_finger_{a}" for s in ("left", "right")
                                         for a in "xyz"], name=self.name)
        mb.model.gravity.linear = np.zeros(3)  # the cube floats: only the fingers act on it
        return mb

    @property
    def goal_quaternion(self) -> np.ndarray:
        """(4,) the cube's target quaternion (x, y, z, w)."""
        return axis_angle_quaternion(self.params.goal_axis, self.params.goal_angle)

    def cube_angle_error(self, x: Any) -> float:
        """Angle [rad] between the cube's orientation in state ``x`` and the goal."""
        x = self._state(x)
        i = QUATERNION_INDEX
        return angle_error(x[i:i + 4], self.goal_quaternion)

    @cached_property
    def defaults(self) -> ControlDefaults:
        """Our settings (no published example): MIQP projection, N = 10, Δt = 50 ms, s = 10,
        ρ_s = 1.2, G = 0.1·I, U = diag(1000·I_25, I_12, I_6), R = 0.01·I, QN = Q.

        Start: cube at rest at the origin, identity orientation; left finger on the -x face
        and right finger on the +x face, 5 mm off, at the face centres. Goal: the cube at the
        origin turned by ``goal_angle`` about ``goal_axis``, fingers at the centres of the
        turned ±x faces. Q: 1000 on the cube position, 1000·I on the raw quaternion
        components (the block the quaternion cost replaces:
        ``C3Options(quaternion_weight=plant.quaternion_weight,
        quaternion_indices=plant.quaternion_indices)``), 10 on the finger positions, 1 on
        the velocities. Finger forces bounded to ±10 N (the cube weighs nothing here; 10 N
        turns it by 45° in about 0.4 s).
        """
        i = QUATERNION_INDEX
        gap = 0.005
        r = CUBE_HALF + FINGER_RADIUS
        x0 = np.zeros(25)
        x0[i + 3] = 1.0
        x0[7:13] = [-(r + gap), 0.0, 0.0, r + gap, 0.0, 0.0]
        goal = np.zeros(25)
        qg = self.goal_quaternion
        goal[i:i + 4] = qg
        import pinocchio as pin

        R = pin.Quaternion(qg[3], qg[0], qg[1], qg[2]).toRotationMatrix()
        nx = R[:, 0]  # the turned +x face normal
        goal[7:10] = -r * nx
        goal[10:13] = r * nx
        Q = np.diag([1000.0] * 3 + [1000.0] * 4 + [10.0] * 6 + [1.0] * 12)
        n_z = 25 + 12 + 6
        U = np.diag([1000.0] * 25 + [1.0] * 12 + [1.0] * 6)
        return ControlDefaults(
            N=10, dt=self.params.dt, Q=Q, R=0.01 * np.eye(6), QN=Q.copy(),
            G=0.1 * np.eye(n_z), U=U, admm_iter=10, rho=1.0, rho_scale=1.2,
            projection="miqp", x0=x0, x_goal=goal,
            x_lower=np.full(25, -np.inf), x_upper=np.full(25, np.inf),
            u_lower=np.full(6, -FORCE_LIMIT), u_upper=np.full(6, FORCE_LIMIT),
            notes="Ours: a floating cube turned by two 3-D point fingers (issue 24).",
        )
