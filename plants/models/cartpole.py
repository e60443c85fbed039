"""Cart-pole with soft walls as a multibody model (URDF ``assets/cartpole_softwalls.urdf``).

The same system as the paper's analytic ``cartpole-softwalls`` (seed 003 §VI-C), here built by
the LCS factory from Pinocchio + coal: the pole tip (a 1 cm sphere) against two walls, with the
frictionless-spring contact model (wall stiffness ``k``). State
``x = [cart_x, pole_theta, cart_xdot, pole_thetadot]`` with the paper's sign convention
(tip x = cart_x − len_p sin θ), input the cart force [N],
``lambda = [right-wall force, left-wall force]``.

Where the models coincide (at the upright, x* = 0, u* = 0): the velocity rows of A, B, D are
the paper's exactly; the position rows differ by the time stepping (paper: explicit Euler,
factory: semi-implicit, positions advance with v⁺); the factory's spring rows are the paper's
(E, F = I/k, c) times k, the same complementarity. Away from the upright the factory uses the
exact sin θ and the state-dependent linearisation. ``tests/test_multibody_plants.py`` checks
all of this.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.linalg

from ..paper.base import ControlDefaults
from ..registry import register_plant
from ._assets import asset_path
from .base import MultibodyModelPlant, check_contact_model, check_positive, make_params

__all__ = ["CartpoleURDFParams", "CartpoleURDF"]


@dataclass(frozen=True)
class CartpoleURDFParams:
    """Parameters; the masses and lengths are fixed by the URDF (the paper's numbers).

    Attributes:
        stiffness: wall stiffness k [N/m] of the frictionless-spring model (paper: 50; the
            authors' factory example and hardware: 100).
        dt: time step [s] (paper: 0.01).
        contact_model: default contact model (the walls are soft: "frictionless_spring").
    """

    stiffness: float = 50.0
    dt: float = 0.01
    contact_model: str = "frictionless_spring"

    def __post_init__(self) -> None:
        check_positive(self, "stiffness", "dt")
        check_contact_model(self.contact_model)


@register_plant("cartpole-urdf")
class CartpoleURDF(MultibodyModelPlant):
    """Cart-pole with soft walls from URDF, LCS by the multibody factory."""

    name = "cartpole-urdf"

    def __init__(self, **params: Any):
        super().__init__(make_params(CartpoleURDFParams, self.name, params))

    def _build_multibody(self) -> Any:
        from ..multibody import ContactPair, MultibodyPlant

        plane = (0.0, 1.0, 0.0)
        pairs = [ContactPair("right_wall", "pole", 0.0, 1, planar_normal=plane),
                 ContactPair("left_wall", "pole", 0.0, 1, planar_normal=plane)]
        return MultibodyPlant.from_urdf(str(asset_path("cartpole_softwalls.urdf")), pairs,
                                        actuated_joints=["cart_x"], name=self.name)

    @cached_property
    def defaults(self) -> ControlDefaults:
        """The paper's cart-pole settings (as ``cartpole-softwalls``), QN from the DARE of this
        model's LCS at the upright."""
        from ..paper.cartpole import CartpoleSoftWalls

        paper = CartpoleSoftWalls(dt=self.params.dt).defaults
        lcs = self.lcs(np.zeros(4), np.zeros(1))
        QN = scipy.linalg.solve_discrete_are(lcs.A, lcs.B, paper.Q, paper.R)
        return paper.replace(QN=QN, notes="Paper §VI-C settings on the URDF cart-pole.")
