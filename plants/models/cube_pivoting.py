"""Cube pivoting, the authors' multibody LCS-factory example (notes/anchor-c3.md §4).

A 1 m, 1 kg cube on a planar joint and two sphere fingers (r = 0.1 m, 0.1 kg) on two prismatic
joints each, moving in the x-z plane; three planar (d = 1) contacts with μ = 0.1: cube-left
finger, cube-right finger, cube-platform. With Stewart-Trinkle, n_x = 14 (7 q + 7 v),
n_λ = 2·3 + 3·2 = 12, n_u = 4 (finger forces [N] along x and z).
The LCS is re-linearised at every state (``state_dependent``), as Algorithm 2 does.
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

__all__ = ["CubePivotingParams", "CubePivoting"]

CUBE_HALF = 0.5
FINGER_RADIUS = 0.1
#: Finger force limit [N] (ours; see :attr:`CubePivoting.defaults`).
FORCE_LIMIT = 15.0


@dataclass(frozen=True)
class CubePivotingParams:
    """Parameters of the cube-pivoting plant; defaults are the authors' example.

    Attributes:
        mu: friction coefficient of all three contacts (authors: 0.1).
        dt: LCS / simulation time step [s] (authors: 0.01).
        contact_model: default contact model of :meth:`CubePivoting.lcs`.
        goal_angle: target cube rotation [rad] (authors: 0.785).
    """

    mu: float = 0.1
    dt: float = 0.01
    contact_model: str = "stewart_trinkle"
    goal_angle: float = 0.785

    def __post_init__(self) -> None:
        check_positive(self, "dt")
        if not (np.isfinite(self.mu) and self.mu >= 0):
            raise ValueError(f"mu must be finite and >= 0, got {self.mu!r}")
        check_contact_model(self.contact_model)
        if not (np.isfinite(self.goal_angle) and 0 < self.goal_angle < np.pi / 2):
            raise ValueError(f"goal_angle must be in (0, pi/2) rad, got {self.goal_angle!r}")


def pivot_pose(theta: float) -> tuple[float, float]:
    """Cube centre (x, z) [m] when the cube rests on its +x bottom edge (at x = 0.5, z = 0)
    rotated by ``theta`` [rad]."""
    c, s = np.cos(theta), np.sin(theta)
    # centre = edge + R(theta) @ (-h, +h) with R the rotation about +y in x-z coordinates
    return float(CUBE_HALF + (-CUBE_HALF * c + CUBE_HALF * s)),  \
        float(CUBE_HALF * s + CUBE_HALF * c)


@register_plant("cube-pivoting")
class CubePivoting(MultibodyModelPlant):
    """The cube-pivoting multibody plant (URDF ``assets/cube_pivoting.urdf``).

    State ``x = [cube_x, cube_z, cube_theta, left_x, left_z, right_x, right_z, (velocities)]``
    (world positions [m], angle [rad] about +y; positive tips the cube onto its +x bottom
    edge); input ``u = [left_fx, left_fz, right_fx, right_fz]`` [N]. ``lambda`` (Stewart-
    Trinkle) = ``[γ (3); λ_n (3); λ_t (6)]`` for the contacts (left finger, right finger,
    platform). Task: rotate the cube to ``goal_angle`` (0.785 rad).
    """

    name = "cube-pivoting"

    def __init__(self, **params: Any):
        super().__init__(make_params(CubePivotingParams, self.name, params))

    def _build_multibody(self) -> Any:
        from ..multibody import ContactPair

        mu = self.params.mu
        plane = (0.0, 1.0, 0.0)
        pairs = [ContactPair("cube", "left_finger", mu, 1, planar_normal=plane),
                 ContactPair("cube", "right_finger", mu, 1, planar_normal=plane),
                 ContactPair("cube", "platform", mu, 1, planar_normal=plane)]
        return urdf_plant(asset_path("cube_pivoting.urdf"), pairs,
                          actuated_joints=["left_finger_x", "left_finger_z", "right_finger_x",
                                           "right_finger_z"],
                          name=self.name, halfspaces=("platform_0",))

    @cached_property
    def defaults(self) -> ControlDefaults:
        """The authors' settings (c3_controller_pivoting_options.yaml): MIQP, N = 10, s = 5,
        ρ_s = 1.1, G = 0.02·I, U = diag(1000·I_14, I_12, I_4), Q = diag(500×3, 1×11),
        R = 0.01·I, QN = Q.

        Bounds: the finger positions are kept on their sides of the cube (the authors bound
        them likewise; ours: left x in [-1, 0.2], right x in [0.5, 1.5], both z in
        [0.1, 1.3]/[0.1, 1.0] m) and the finger forces to ±15 N (ours: unbounded, the first
        plan asks for > 100 N and flings the cube; the cube weighs 9.81 N).

        The start and goal are ours (the authors' SDF is not public): the cube rests flat at
        the origin, the left finger 1 cm off its left face at z = 0.8 m, the right finger 1 cm
        off its right face at z = 0.2 m (it keeps the cube from sliding, μ = 0.1). Goal: the
        cube balanced on its +x bottom edge at ``goal_angle`` (centre from :func:`pivot_pose`),
        fingers on the two side faces (weight 1 vs 500 on the cube: the fingers' goal hardly
        matters).
        """
        th = self.params.goal_angle
        gap = 0.01
        x0 = np.zeros(14)
        x0[:7] = [0.0, CUBE_HALF, 0.0, -(CUBE_HALF + FINGER_RADIUS + gap), 0.8,
                  CUBE_HALF + FINGER_RADIUS + gap, 0.2]
        cx, cz = pivot_pose(th)
        c, s = np.cos(th), np.sin(th)
        r = CUBE_HALF + FINGER_RADIUS
        goal = np.zeros(14)
        # side-face centres pushed out by the finger radius along the rotated face normals
        goal[:7] = [cx, cz, th, cx - r * c, cz + r * s, cx + r * c, cz - r * s]
        Q = np.diag([500.0] * 3 + [1.0] * 11)
        x_lower = np.full(14, -np.inf)
        x_upper = np.full(14, np.inf)
        # finger workspaces (the authors bound the finger positions the same way)
        x_lower[3:7] = [-1.0, 0.1, 0.5, 0.1]
        x_upper[3:7] = [0.2, 1.3, 1.5, 1.0]
        n_z = 14 + 12 + 4
        U = np.diag([1000.0] * 14 + [1.0] * 12 + [1.0] * 4)
        return ControlDefaults(
            N=10, dt=self.params.dt, Q=Q, R=0.01 * np.eye(4), QN=Q.copy(),
            G=0.02 * np.eye(n_z), U=U, admm_iter=5, rho=1.0, rho_scale=1.1,
            projection="miqp", x0=x0, x_goal=goal, x_lower=x_lower, x_upper=x_upper,
            u_lower=np.full(4, -FORCE_LIMIT), u_upper=np.full(4, FORCE_LIMIT),
            notes="Authors' cube_pivoting example (LCSFactory, MIQP); start/goal are ours.",
        )
