"""A cube turned to an orientation goal by two 3-D point fingers (issue 24: quaternion costs).

A 1 m, 1 kg cube on a floating joint (Pinocchio free-flyer: 7 q with a unit quaternion, 6 v)
and two sphere fingers (r = 0.1 m, 0.1 kg), each on three actuated prismatic joints (world x,
y, z); finger-cube contacts with μ = 1, d = 2 (a four-edge friction pyramid each).

* ``table=True`` (default): the cube rests on a table (half-space z <= 0) on four support
  points, 1 cm spheres in its bottom corners (μ_table = 0.1, d = 2), under gravity. The
  task: turn it about the vertical (``goal_axis`` must be ±z) by ``goal_angle`` against the
  table's friction. Stewart-Trinkle: n_λ = 2·6 + 6·4 = 36 (6 contacts, 4 edges each).
* ``table=False``: no table and no gravity: the cube floats (an air bearing, orbit) and only
  the fingers act on it; any goal axis without an x component (e.g. (0, 1, 1): a tilt).
  n_λ = 2·2 + 2·4 = 12. Two point contacts cannot torque the cube about the line through
  them, so a roll about that line (the cube's x axis) is only corrected by moving the
  fingers: it drifts (docs/c3.md).

n_x = 25 (13 q + 12 v), n_u = 6 (finger forces [N] along world x, y, z). Start: the cube at
rest, identity orientation, fingers 5 mm off the centres of its -x and +x faces. Turning needs
the fingers to squeeze (normal force) and push tangentially in opposite directions (friction).
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
            ``(0, 0, 1)``: a turn about the vertical; ``(0, 1, 1)``: a turn tilting the cube
            (``table=False`` only). The fingers push on the ±x faces, so the axis must have no
            x component.
        table: the cube rests on a table under gravity (True) or floats without gravity.
        table_mu: friction coefficient of the four cube-table support points.
    """

    mu: float = 1.0
    dt: float = 0.05
    contact_model: str = "stewart_trinkle"
    goal_angle: float = np.pi / 4
    goal_axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    table: bool = True
    table_mu: float = 0.1

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
        if not isinstance(self.table, (bool, np.bool_)):
            raise TypeError(f"table must be a bool, got {self.table!r}")
        if not (np.isfinite(self.table_mu) and self.table_mu >= 0):
            raise ValueError(f"table_mu must be finite and >= 0, got {self.table_mu!r}")
        if self.table and (abs(axis[0]) > 1e-12 or abs(axis[1]) > 1e-12):
            raise ValueError(f"goal_axis must be vertical (0, 0, ±1) with table=True (the cube "
                             f"stays flat on the table), got {self.goal_axis!r}")
        if abs(axis[0]) > 1e-12:
            raise ValueError(f"goal_axis must have no x component (the fingers push on the "
                             f"±x faces), got {self.goal_axis!r}")
        object.__setattr__(self, "goal_axis", tuple(float(a) for a in axis))


@register_plant("cube-rotate-3d")
class CubeRotate3D(MultibodyModelPlant):
    """The 3-D cube-rotation plant (URDF ``assets/cube_rotate_3d.urdf``).

    State ``x = [cube_x, cube_y, cube_z, cube_qx, cube_qy, cube_qz, cube_qw, left_x, left_y,
    left_z, right_x, right_y, right_z, (12 velocities)]``: cube world position [m] and unit
    quaternion (Pinocchio order x, y, z, w; at :attr:`quaternion_indices`), finger world
    positions [m]; velocities: the cube's linear and angular velocity in the cube frame
    [m/s, rad/s], then the fingers' [m/s]. Input ``u`` = finger forces [N], ``[left_fx,
    left_fy, left_fz, right_fx, right_fy, right_fz]``. ``lambda`` (Stewart-Trinkle) =
    ``[γ (n_c); λ_n (n_c); λ_t (4 n_c)]`` for the contacts (left finger, right finger, and
    with the table its four support points), n_c = 6 (table) or 2.
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
        pairs = [ContactPair("cube_0", "left_finger", mu, 2),
                 ContactPair("cube_0", "right_finger", mu, 2)]
        if self.params.table:  # the corner spheres cube_1..cube_4 on the table
            pairs += [ContactPair(f"cube_{i}", "table_0", self.params.table_mu, 2)
                      for i in range(1, 5)]
        mb = urdf_plant(asset_path("cube_rotate_3d.urdf"), pairs,
                        actuated_joints=[f"{s}_finger_{a}" for s in ("left", "right")
                                         for a in "xyz"], name=self.name,
                        halfspaces=("table_0",))
        if not self.params.table:
            mb.model.gravity.linear = np.zeros(3)  # the cube floats: only the fingers act
        return mb

    @property
    def height(self) -> float:
        """Height [m] of the cube's centre and the fingers at the start and goal (0.5 on the
        table, 0 floating)."""
        return CUBE_HALF if self.params.table else 0.0

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
        ρ_s = 1.2, G = 0.1·I, U = diag(1000·I_25, I_λ, I_6), R = 0.01·I, QN = Q.

        Start: cube at rest, centred at (0, 0, :attr:`height`) (on the table, or at the
        origin), identity orientation; left finger on the -x face and right finger on the +x
        face, 5 mm off, at the face centres. Goal: the cube at the same place turned by
        ``goal_angle`` about ``goal_axis``, fingers at the centres of the turned ±x faces.
        Q: 1000 on the cube position, 1000·I on the raw quaternion components (the block the
        quaternion cost replaces: ``C3Options(quaternion_weight=plant.quaternion_weight,
        quaternion_indices=plant.quaternion_indices)``), 10 on the finger positions, 1 on the
        velocities. Finger forces bounded to ±10 N (the cube weighs 9.81 N; the table's
        friction resists a turn with at most 0.98 N).
        """
        i = QUATERNION_INDEX
        gap = 0.005
        r = CUBE_HALF + FINGER_RADIUS
        x0 = np.zeros(25)
        x0[i + 3] = 1.0
        h = self.height
        x0[2] = h
        x0[7:13] = [-(r + gap), 0.0, h, r + gap, 0.0, h]
        goal = np.zeros(25)
        qg = self.goal_quaternion
        goal[i:i + 4] = qg
        import pinocchio as pin

        R = pin.Quaternion(qg[3], qg[0], qg[1], qg[2]).toRotationMatrix()
        nx = R[:, 0]  # the turned +x face normal
        goal[2] = h
        goal[7:10] = [0.0, 0.0, h] - r * nx
        goal[10:13] = [0.0, 0.0, h] + r * nx
        Q = np.diag([1000.0] * 3 + [1000.0] * 4 + [10.0] * 6 + [1.0] * 12)
        n_lam = 36 if self.params.table else 12
        n_z = 25 + n_lam + 6
        U = np.diag([1000.0] * 25 + [1.0] * n_lam + [1.0] * 6)
        return ControlDefaults(
            N=10, dt=self.params.dt, Q=Q, R=0.01 * np.eye(6), QN=Q.copy(),
            G=0.1 * np.eye(n_z), U=U, admm_iter=10, rho=1.0, rho_scale=1.2,
            projection="miqp", x0=x0, x_goal=goal,
            x_lower=np.full(25, -np.inf), x_upper=np.full(25, np.inf),
            u_lower=np.full(6, -FORCE_LIMIT), u_upper=np.full(6, FORCE_LIMIT),
            notes="Ours: a cube turned by two 3-D point fingers (issue 24).",
        )
