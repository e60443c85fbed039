"""Finger gaiting (seed 003 §VI-A; matrices from data/paper_system_matrices.txt)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from lcs import LCS

from ..registry import register_plant
from .base import ControlDefaults, PaperLCSPlant

__all__ = ["FingerGaitingParams", "FingerGaiting"]


@dataclass(frozen=True)
class FingerGaitingParams:
    """Parameters (SI units); defaults are the paper's.

    Attributes:
        dt: time step h [s].
        mu: finger-object friction coefficient.
        g: gravity [m/s^2].
    """

    dt: float = 0.1
    mu: float = 1.0
    g: float = 9.81

    def __post_init__(self) -> None:
        for name in ("dt", "mu", "g"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be positive and finite, got {v}")


@register_plant("finger-gaiting")
class FingerGaiting(PaperLCSPlant):
    """Two grippers lifting an object by friction (no rotation), a time-invariant LCS.

    State ``x = [o, o_dot, g1, g1_dot, g2, g2_dot]`` (object and finger heights), inputs
    ``u = [g1 acceleration, g2 acceleration, finger-1 normal force, finger-2 normal force]``,
    ``lambda`` = 3 per finger (slack, two friction directions), Stewart-Trinkle style.
    """

    name = "finger-gaiting"
    state_names = ("object", "object_dot", "finger1", "finger1_dot", "finger2", "finger2_dot")
    input_names = ("finger1_acc", "finger2_acc", "finger1_normal", "finger2_normal")
    lambda_names = ("slack1", "friction1_up", "friction1_down",
                    "slack2", "friction2_up", "friction2_down")

    def __init__(self, **params: Any):
        super().__init__(FingerGaitingParams(**params))

    def _build(self, h: float) -> LCS:
        mu, g = self.params.mu, self.params.g
        A = np.eye(6)
        A[0, 1] = A[2, 3] = A[4, 5] = h
        B = np.zeros((6, 4))
        B[2, 0], B[3, 0], B[4, 1], B[5, 1] = h * h, h, h * h, h
        hh = h * h
        D = np.array([[0, hh, -hh, 0, hh, -hh],
                      [0, h, -h, 0, h, -h],
                      [0, -hh, hh, 0, 0, 0],
                      [0, -h, h, 0, 0, 0],
                      [0, 0, 0, 0, -hh, hh],
                      [0, 0, 0, 0, -h, h]])
        E = np.array([[0, 0, 0, 0, 0, 0],
                      [0, 1, 0, -1, 0, 0],
                      [0, -1, 0, 1, 0, 0],
                      [0, 0, 0, 0, 0, 0],
                      [0, 1, 0, 0, 0, -1],
                      [0, -1, 0, 0, 0, 1]], dtype=float)
        F = np.array([[0, -1, -1, 0, 0, 0],
                      [1, 2 * h, -2 * h, 0, h, -h],
                      [1, -2 * h, 2 * h, 0, -h, h],
                      [0, 0, 0, 0, -1, -1],
                      [0, h, -h, 1, 2 * h, -2 * h],
                      [0, -h, h, 1, -2 * h, 2 * h]])
        c = np.array([0, -h * g, h * g, 0, -h * g, h * g])
        d = np.array([-g * hh, -g * h, 0, 0, 0, 0])
        H = np.array([[0, 0, mu, 0],
                      [-h, 0, 0, 0],
                      [h, 0, 0, 0],
                      [0, 0, 0, mu],
                      [0, -h, 0, 0],
                      [0, h, 0, 0]])
        return LCS(A, B, D, d, E, F, H, c, dt=h)

    @cached_property
    def defaults(self) -> ControlDefaults:
        """Paper §VI-A: MIQP projection, N=10, s=10, ρ_s=1.2, G=I, finger limits.

        Q, R, U, the input bounds and x0 are the authors' code's; ρ=1 as in Table I. The target
        is the origin (object lifted to height 0), as in the authors' example.
        """
        n_z = 6 + 6 + 4
        return ControlDefaults(
            N=10, dt=self.params.dt, Q=np.diag([6000.0, 10, 10, 10, 10, 10]), R=np.eye(4),
            QN=np.diag([6000.0, 10, 10, 10, 10, 10]), G=np.eye(n_z),
            U=np.diag([1000.0] * 6 + [1.0] * 10), admm_iter=10, rho=1.0, rho_scale=1.2,
            projection="miqp", x0=np.array([-8.0, 0, 3, 0, 4, 0]), x_goal=np.zeros(6),
            x_lower=np.array([-np.inf, -np.inf, 1, -np.inf, 3, -np.inf]),
            x_upper=np.array([np.inf, np.inf, 3, np.inf, 5, np.inf]),
            u_lower=np.array([-np.inf, -np.inf, 0, 0]),
            u_upper=np.array([np.inf, np.inf, 10000, 10000]),
            notes="Paper: 30.3 Hz with MIQP, N=10, s=10; 100/100 lifts from o(0)~U[-8,-6], "
                  "g1(0)~U[2,3], g2(0)~U[3,4].",
        )

    @staticmethod
    def sample_start(rng: np.random.Generator) -> np.ndarray:
        """A start state from the paper's trial distribution (zero velocities)."""
        return np.array([rng.uniform(-8, -6), 0.0, rng.uniform(2, 3), 0.0,
                         rng.uniform(3, 4), 0.0])
