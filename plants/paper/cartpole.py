"""Cart-pole with soft walls (seed 003 §VI-C; matrices from data/paper_system_matrices.txt)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.linalg

from lcs import LCS

from ..registry import register_plant
from .base import ControlDefaults, PaperLCSPlant

__all__ = ["CartpoleSoftWallsParams", "CartpoleSoftWalls"]


@dataclass(frozen=True)
class CartpoleSoftWallsParams:
    """Physical parameters (SI units). Defaults are the paper's numerical example (§VI-C).

    Attributes:
        mc: cart mass [kg].
        mp: pole (pole + rod) mass [kg].
        len_p: pole length [m] (where the tip touches the walls).
        len_com: distance to the pole's centre of mass [m].
        wall_right: position of the right wall [m] (the paper's d1).
        wall_left: position of the left wall [m] (the paper's -d2).
        k_right: right-wall stiffness [N/m] (the paper's k1; hardware used 100).
        k_left: left-wall stiffness [N/m] (k2).
        g: gravity [m/s^2].
        dt: explicit-Euler step Ts [s].
    """

    mc: float = 0.978
    mp: float = 0.411
    len_p: float = 0.6
    len_com: float = 0.4267
    wall_right: float = 0.35
    wall_left: float = -0.35
    k_right: float = 50.0
    k_left: float = 50.0
    g: float = 9.81
    dt: float = 0.01

    def __post_init__(self) -> None:
        for name in ("mc", "mp", "len_p", "len_com", "k_right", "k_left", "dt"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be positive and finite, got {v}")
        if not self.wall_left < self.wall_right:
            raise ValueError(f"wall_left ({self.wall_left}) must be left of wall_right "
                             f"({self.wall_right})")


@register_plant("cartpole-softwalls")
class CartpoleSoftWalls(PaperLCSPlant):
    r"""Cart-pole linearised about the upright, whose pole tip hits two soft walls.

    State ``x = [cart position, pole angle, cart velocity, pole angular velocity]``, input the
    cart force, ``lambda = [right-wall force, left-wall force]``. The LCS is time-invariant:
    :math:`A = I + T_s A_c`, :math:`B = T_s B_c`, :math:`D = T_s D_c`,
    :math:`E = [[-1, l_p, 0, 0], [1, -l_p, 0, 0]]`, :math:`F = \mathrm{diag}(1/k_1, 1/k_2)`,
    :math:`c = [d_1, d_2]` with walls at :math:`+d_1` and :math:`-d_2`.

    The paper's data file writes ``c = [d1, -d2]``; the authors' code sets ``d2 = -0.35`` to
    place the left wall at -0.35 m. Here the walls are given by position (``wall_left``,
    ``wall_right``), so the sign cannot be mixed up: the wall gap is
    :math:`c + E x = d - (\text{tip position})` for the right wall, and the mirror for the left.
    """

    name = "cartpole-softwalls"
    state_names = ("cart_x", "pole_theta", "cart_xdot", "pole_thetadot")
    input_names = ("cart_force",)
    lambda_names = ("wall_right_force", "wall_left_force")

    def __init__(self, **params: Any):
        super().__init__(CartpoleSoftWallsParams(**params))

    def continuous_matrices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A_c, B_c, D_c) of the continuous-time linearisation."""
        p = self.params
        g, mp, mc, lp, lc = p.g, p.mp, p.mc, p.len_p, p.len_com
        Ac = np.array([[0, 0, 1, 0], [0, 0, 0, 1], [0, g * mp / mc, 0, 0],
                       [0, g * (mc + mp) / (lc * mc), 0, 0]])
        Bc = np.array([[0.0], [0.0], [1 / mc], [1 / (lc * mc)]])
        a = -1 / mc + lp / (mc * lc)
        b = -1 / (mc * lc) + lp * (mc + mp) / (mc * mp * lc * lc)
        Dc = np.array([[0, 0], [0, 0], [a, -a], [b, -b]])
        return Ac, Bc, Dc

    def _build(self, ts: float) -> LCS:
        p = self.params
        Ac, Bc, Dc = self.continuous_matrices()
        return LCS(
            A=np.eye(4) + ts * Ac, B=ts * Bc, D=ts * Dc, d=np.zeros(4),
            E=np.array([[-1.0, p.len_p, 0, 0], [1.0, -p.len_p, 0, 0]]),
            F=np.diag([1 / p.k_right, 1 / p.k_left]),
            H=np.zeros((2, 1)), c=np.array([p.wall_right, -p.wall_left]), dt=ts,
        )

    @cached_property
    def defaults(self) -> ControlDefaults:
        """Paper §VI-C: s=10, ρ_s=2, N=10; Q, R, U, x0 from the authors' code.

        The paper's ρ=0.1 with G=I is expressed as ρ=1 with G=0.1·I, so that G alone carries
        the scale (the convention of the authors' code and of ``C3Options``).
        G is 0.1·I with a zero entry on u, as in the authors' code: with G_u > 0 the ADMM term
        on u acts as a proximal pull towards the previous iterate and C3 fails to stabilise
        the cart-pole (notes/anchor-c3.md). ``QN`` solves the discrete algebraic Riccati
        equation of (A, B, Q, R).
        """
        lcs = self.lcs()
        Q = np.diag([10.0, 3.0, 1.0, 1.0])
        R = np.array([[1.0]])
        QN = scipy.linalg.solve_discrete_are(lcs.A, lcs.B, Q, R)
        G = 0.1 * np.diag([1, 1, 1, 1, 1, 1, 0.0])
        U = np.diag([1000.0, 1000, 1000, 1000, 1, 1, 0])
        inf = np.full(4, np.inf)
        return ControlDefaults(
            N=10, dt=self.params.dt, Q=Q, R=R, QN=QN, G=G, U=U, admm_iter=10, rho=1.0,
            rho_scale=2.0, projection="lcp", x0=np.array([0.1, 0.0, 0.3, 0.0]),
            x_goal=np.zeros(4), x_lower=-inf, x_upper=inf, u_lower=np.array([-np.inf]),
            u_upper=np.array([np.inf]),
            notes="Table III: LCP projection 1.4e-5 s, controller > 240 Hz.",
        )
