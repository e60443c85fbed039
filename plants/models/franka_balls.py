"""Franka multi-ball rolling, the reduced-order models of seed 003 §VII-B (2 and 3 balls).

"To slightly reduce the dimension of this problem, we assume that the balls are always on the
table and do not slide." Hence each ball keeps only its table-plane position (two prismatic
joints at the ball-centre height, no orientation, no ball-table contact) and its rolling inertia
is folded into an effective mass 7/5 m (see ``assets/franka_balls_{2,3}.urdf``). The end
effector is the acceleration-controlled sphere of :mod:`.franka_ball`. Contacts: end effector-
ball i and ball i-ball j, all μ = 1, d = 2.

Dimensions, as in the paper:

* 2 balls: n_x = 2·(4 + 3) = 14, 3 contacts; Stewart-Trinkle n_λ = 2·3 + 3·4 = 18, n_u = 3.
* 3 balls: n_x = 2·(6 + 3) = 18, 6 contacts; Anitescu n_λ = 6·4 = 24, n_u = 3. The paper ran
  the 3-ball task with the Anitescu model (MIQP ~30 Hz, the convex projection ~100 Hz); its
  stated n_λ = 24 is Anitescu's count (Stewart-Trinkle would give 36), so Anitescu is this
  plant's default contact model and "qp" its default projection.

State order: ``q = [ball1_x, ball1_y, ..., ballk_x, ballk_y, ee_x, ee_y, ee_z]``, ``v`` alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import combinations
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
from .franka_ball import BALL_RADIUS, EE_MASS, EE_RADIUS, _AccelerationInput

__all__ = ["FrankaBallsParams", "FrankaBalls", "FrankaBalls2", "FrankaBalls3"]


@dataclass(frozen=True)
class FrankaBallsParams:
    """Parameters of the multi-ball models.

    Attributes:
        mu: friction coefficient of every contact (paper: 1).
        dt: LCS time step [s] (paper: Δt = 0.1).
        contact_model: default contact model (2 balls: "stewart_trinkle", 3 balls: "anitescu",
            the models whose n_λ the paper reports).
        dy: desired translation of every ball along +y [m] per target update (§VII-B's d_y).
        ee_mass: end-effector mass [kg] (see :mod:`.franka_ball`).
        spacing: distance between neighbouring ball centres in the start row [m] (None: the
            model's default, 0.1; the paper gives no layout; the closed-loop task uses 0.15 for
            3 balls, see docs/franka-ball.md, "Multi-ball line task").
    """

    mu: float = 1.0
    dt: float = 0.1
    contact_model: str = "stewart_trinkle"
    dy: float = 0.1
    ee_mass: float = EE_MASS
    spacing: float | None = None

    def __post_init__(self) -> None:
        check_positive(self, "dt", "ee_mass")
        if self.spacing is not None and not (np.isfinite(self.spacing)
                                             and self.spacing >= 2 * BALL_RADIUS):
            raise ValueError(f"spacing must be >= the ball diameter {2 * BALL_RADIUS} m, got "
                             f"{self.spacing!r}")
        if not (np.isfinite(self.mu) and self.mu >= 0):
            raise ValueError(f"mu must be finite and >= 0, got {self.mu!r}")
        if not np.isfinite(self.dy):
            raise ValueError(f"dy must be finite, got {self.dy!r}")
        check_contact_model(self.contact_model)


class FrankaBalls(_AccelerationInput, MultibodyModelPlant):
    """k balls on a table pushed by the acceleration-controlled end-effector sphere."""

    num_balls: int = 2
    default_contact_model: str = "stewart_trinkle"
    default_projection: str = "miqp"
    default_spacing: float = 0.1

    def __init__(self, **params: Any):
        params.setdefault("contact_model", self.default_contact_model)
        super().__init__(make_params(FrankaBallsParams, self.name, params))

    def _build_multibody(self) -> Any:
        from ..multibody import ContactPair

        k, mu = self.num_balls, self.params.mu
        balls = [f"ball{i}" for i in range(1, k + 1)]
        pairs = [ContactPair("ee", b, mu, 2) for b in balls]
        pairs += [ContactPair(a, b, mu, 2) for a, b in combinations(balls, 2)]
        return urdf_plant(asset_path(f"franka_balls_{k}.urdf"), pairs,
                          actuated_joints=["ee_x", "ee_y", "ee_z"], name=self.name,
                          sphere_masses={"ee_z": (self.params.ee_mass, EE_RADIUS)})

    @cached_property
    def defaults(self) -> ControlDefaults:
        """Paper §VII-B: s = 2, ρ = 0.1 with G = I (G = 0.1·I, ρ = 1), ρ_s = 3, Δt = 0.1,
        N = 5; projection "miqp" (2 balls) or "qp" (3 balls, the convex projection with Anitescu).
        Weights as the single-ball model: 10000 on ball positions, 500 on the end-effector
        position, 10 on its velocity, 0.1 on ball velocities; R = 0.01·I; U = 10 on x, 1 on λ
        and u.

        Start: the balls in a row along y at x_c = 0.55, ``spacing`` apart (default 0.1 m;
        the closed-loop task (``c3mpc.tasks.franka_ball``) uses 0.15 m for 3 balls: with 0.1 m there
        is no room for the end effector 4.25 cm behind a ball with another ball behind it);
        the first ball at y = 0, the end effector 5 mm above the last ball. Goal: every ball moved by ``dy`` along +y at x = x_c (the
        paper's line task), the end effector above the last ball's goal.
        """
        k = self.num_balls
        nq = 2 * k + 3
        n_x = 2 * nq
        xc = 0.55
        x0 = np.zeros(n_x)
        spacing = self.default_spacing if self.params.spacing is None else self.params.spacing
        ys = -spacing * np.arange(k)
        x0[0:2 * k:2] = xc
        x0[1:2 * k:2] = ys
        x0[2 * k:nq] = [xc, ys[-1], 2 * BALL_RADIUS + EE_RADIUS + 0.005]
        goal = x0.copy()
        goal[1:2 * k:2] += self.params.dy
        goal[2 * k + 1] += self.params.dy
        q = np.zeros(n_x)
        q[0:2 * k] = 10000.0
        q[2 * k:nq] = 500.0
        q[nq:nq + 2 * k] = 0.1
        q[nq + 2 * k:] = 10.0
        n_l = self.n_lambda
        U = np.diag([10.0] * n_x + [1.0] * (n_l + 3))
        inf = np.full(n_x, np.inf)
        return ControlDefaults(
            N=5, dt=self.params.dt, Q=np.diag(q), R=0.01 * np.eye(3), QN=np.diag(q),
            G=0.1 * np.eye(n_x + n_l + 3), U=U, admm_iter=2, rho=1.0, rho_scale=3.0,
            projection=self.default_projection, x0=x0, x_goal=goal, x_lower=-inf,
            x_upper=inf, u_lower=np.full(3, -np.inf), u_upper=np.full(3, np.inf),
            notes=("Paper §VII-B: 2 balls about 40 Hz (MIQP); 3 balls MIQP (Anitescu) about "
                   "30 Hz, convex projection about 100 Hz."),
        )


@register_plant("franka-balls-2")
class FrankaBalls2(FrankaBalls):
    """Two balls (n_x = 14, Stewart-Trinkle n_λ = 18, n_u = 3)."""

    name = "franka-balls-2"
    num_balls = 2


@register_plant("franka-balls-3")
class FrankaBalls3(FrankaBalls):
    """Three balls (n_x = 18, Anitescu n_λ = 24, n_u = 3)."""

    name = "franka-balls-3"
    num_balls = 3
    default_contact_model = "anitescu"
    default_projection = "qp"
