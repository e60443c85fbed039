"""Franka ball rolling, the simplified model M_s of seed 003 §VII-A / §VIII-C.

A non-rotating spherical end effector whose translational accelerations are the inputs, and a
rigid ball (free-flyer) on a table. Two contacts, end effector-ball and ball-table, μ = 1, d = 2
friction directions: with Stewart-Trinkle n_x = 19 (n_q = 10 with the ball quaternion,
n_v = 9), n_λ = 2·2 + 2·4 = 12, n_u = 3, the paper's dimensions.

State order: ``q = [ee position (3), ball position (3), ball quaternion (x, y, z, w)]``,
``v = [ee velocity (3), ball velocity (3, world frame), ball angular velocity (3, ball
frame)]``. The ball is a translation joint plus a spherical joint (:func:`.base.add_ball`), not
a free-flyer, so that its world-frame translation does not couple to its spin.

Input: the end-effector acceleration command ``a`` [m/s²] (world frame). The multibody model
is force-actuated; the plant maps ``tau = m_ee (a + g e_z)`` (gravity compensated, so with no
contact the end effector accelerates at exactly ``a``) and the factory builds the LCS in ``a``
(``J_{f,u} ← J_{f,u} m_ee``, ``d_v ← d_v + J_{f,u} m_ee g e_z``).

End-effector mass ``m_ee`` (parameter ``ee_mass``, default 1 kg): the paper's model controls the
end-effector acceleration, i.e. contact forces barely deflect it; we give it 1 kg, about the
smallest apparent translational inertia of the Panda at :data:`.franka_panda.PANDA_HOME`
(eigenvalues of (J M⁻¹ Jᵀ)⁻¹ at the hand TCP: 0.96, 2.3, 10.3 kg). The authors' simplified
URDF has a 0.01 kg finger (with force inputs); with that mass the contact forces are 100 times
more effective than here and C3 at the paper's settings (s = 2) plans with them as virtual
inputs, so the end effector drifts away in closed loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..paper.base import ControlDefaults
from ..registry import register_plant
from ._assets import asset_path
from .base import (
    MultibodyModelPlant,
    check_contact_model,
    check_positive,
    make_params,
    urdf_plant,
)

__all__ = ["FrankaBallParams", "FrankaBall", "BALL_RADIUS", "EE_RADIUS", "EE_MASS",
           "BALL_MASS", "circle_target"]

BALL_RADIUS = 0.0315
EE_RADIUS = 0.0195
EE_MASS = 1.0
BALL_MASS = 0.132


def circle_target(ball_xy: Any, center: tuple[float, float] = (0.55, 0.0),
                  radius: float = 0.1, lead_deg: float = 20.0) -> np.ndarray:
    """The paper's state-based circle target, eq. (25): ball (x, y) [m] → desired (x, y).

    ``α = atan2(x − x_c, y − y_c)`` (clockwise from +y), target
    ``(x_c + r sin(α + α_l), y_c + r cos(α + α_l))``.
    """
    b = np.asarray(ball_xy, dtype=float).reshape(-1)[:2]
    alpha = np.arctan2(b[0] - center[0], b[1] - center[1]) + np.deg2rad(lead_deg)
    return np.array([center[0] + radius * np.sin(alpha), center[1] + radius * np.cos(alpha)])


@dataclass(frozen=True)
class FrankaBallParams:
    """Parameters of the single-ball model.

    Attributes:
        mu: friction coefficient of both contacts (paper: 1).
        num_friction_directions: d (authors: 2).
        dt: LCS time step [s] (paper: Δt = 0.1).
        contact_model: default contact model.
        ee_mass: end-effector mass [kg] (module docstring).
    """

    mu: float = 1.0
    num_friction_directions: int = 2
    dt: float = 0.1
    contact_model: str = "stewart_trinkle"
    ee_mass: float = EE_MASS

    def __post_init__(self) -> None:
        check_positive(self, "dt", "ee_mass")
        if not (np.isfinite(self.mu) and self.mu >= 0):
            raise ValueError(f"mu must be finite and >= 0, got {self.mu!r}")
        d = self.num_friction_directions
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
            raise ValueError(f"num_friction_directions must be an int >= 2 (3-D contacts), "
                             f"got {d!r}")
        check_contact_model(self.contact_model)


class _AccelerationInput:
    """Mixin: the LCS input is the end-effector acceleration (see module docstring)."""

    def _input_map(self) -> tuple[np.ndarray, np.ndarray]:
        m = float(self.params.ee_mass)
        g = -float(self.multibody.model.gravity.linear[2])
        S = m * np.eye(3)
        s0 = np.array([0.0, 0.0, m * g])
        return S, s0


@register_plant("franka-ball")
class FrankaBall(_AccelerationInput, MultibodyModelPlant):
    """Franka ball rolling, simplified model (URDF ``assets/franka_ball.urdf``)."""

    name = "franka-ball"

    def __init__(self, **params: Any):
        super().__init__(make_params(FrankaBallParams, self.name, params))

    def _build_multibody(self) -> Any:
        from ..multibody import ContactPair

        p = self.params
        d = p.num_friction_directions
        pairs = [ContactPair("ee", "ball", p.mu, d), ContactPair("ball", "table", p.mu, d)]
        return urdf_plant(asset_path("franka_ball.urdf"), pairs,
                          actuated_joints=["ee_x", "ee_y", "ee_z"], name=self.name,
                          halfspaces=("table_0",), balls=(("ball", BALL_RADIUS, BALL_MASS),),
                          sphere_masses={"ee_z": (p.ee_mass, EE_RADIUS)})

    @cached_property
    def defaults(self) -> ControlDefaults:
        """Paper §VII-A: s = 2, ρ = 0.1 with G = I (here G = 0.1·I, ρ = 1), ρ_s = 3, Δt = 0.1,
        N = 5, MIQP. Weights from the authors' ball-rolling parameters (notes/anchor-c3.md §4):
        Q = 500 on the end-effector position, 10000 on the ball's x, y, 10 on the end-effector
        velocity, 0.1 on the ball velocities, 0 elsewhere; R = 0.01·I; U = 10 on x, 1 on λ, u.

        Start: the ball at rest on the circle (centre (0.55, 0), r = 0.1 m) at phase 0, the end
        effector 5 mm above it. Goal: the ball at the eq.-(25) target 20° ahead, the end
        effector above that point (Phase I of the paper's heuristic).
        """
        r, re = BALL_RADIUS, EE_RADIUS
        ball0 = np.array([0.55, 0.1])
        x0 = np.zeros(19)
        x0[0:3] = [ball0[0], ball0[1], 2 * r + re + 0.005]
        x0[3:6] = [ball0[0], ball0[1], r]
        x0[9] = 1.0  # quaternion w (x, y, z, w order)
        tgt = circle_target(ball0)
        goal = x0.copy()
        goal[0:2] = tgt
        goal[3:5] = tgt
        q = np.zeros(19)
        q[0:3] = 500.0
        q[3:5] = 10000.0
        q[10:13] = 10.0
        q[13:19] = 0.1
        n_z = 19 + 12 + 3
        U = np.diag([10.0] * 19 + [1.0] * 15)
        inf = np.full(19, np.inf)
        return ControlDefaults(
            N=5, dt=self.params.dt, Q=np.diag(q), R=0.01 * np.eye(3), QN=np.diag(q),
            G=0.1 * np.eye(n_z), U=U, admm_iter=2, rho=1.0, rho_scale=3.0, projection="miqp",
            x0=x0, x_goal=goal, x_lower=-inf, x_upper=inf, u_lower=np.full(3, -np.inf),
            u_upper=np.full(3, np.inf),
            notes="Paper §VII-A: C3 about 73 Hz (i7-11800H); the MIQP (15) about 5 Hz.",
        )
