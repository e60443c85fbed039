"""Pivoting a box with two fingers (seed 003 §VI-B; matrices from data/paper_system_matrices.txt)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from lcs import LCS

from ..registry import register_plant
from .base import ControlDefaults, PaperLCSPlant

__all__ = ["PivotingParams", "Pivoting"]


@dataclass(frozen=True)
class PivotingParams:
    """Parameters (SI units); defaults are the paper's (mass is fixed at 1 kg by the model).

    Attributes:
        dt: time step [s].
        mu1, mu2: finger friction coefficients.
        mu3: ground friction coefficient (the paper sweeps 0.1..1.0).
        g: gravity [m/s^2].
        h, w: box height and width [m].
        fix_velocity_row_typo: the published D (and the authors' code) has ``dt²·sin θ`` in
            the ẏ row where every other velocity row has ``dt·(...)``; False keeps the
            published matrices exactly (what Table II was measured with), True uses ``dt·sin θ``.
    """

    dt: float = 0.01
    mu1: float = 0.1
    mu2: float = 0.1
    mu3: float = 0.1
    g: float = 9.81
    h: float = 1.0
    w: float = 1.0
    fix_velocity_row_typo: bool = False

    def __post_init__(self) -> None:
        for name in ("dt", "mu1", "mu2", "mu3", "g", "h", "w"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be positive and finite, got {v}")


@register_plant("pivoting")
class Pivoting(PaperLCSPlant):
    """A box pivoted about a ground corner by two fingers; the LCS depends on the state.

    State ``x = [x, x_dot, y, y_dot, θ, θ_dot, f1, f1_dot, f2, f2_dot]`` (box centre, angle with
    the ground, finger positions along the box sides), inputs
    ``u = [f1 acceleration, f2 acceleration, finger-1 normal force, finger-2 normal force]``,
    ``lambda`` = 3 per finger (slack, two friction) and 4 for the ground contact. The matrices
    are functions of θ, f1 and f2, so :meth:`lcs` must be re-evaluated at every state
    (Algorithm 2 re-linearises each step).
    """

    name = "pivoting"
    state_names = ("x", "x_dot", "y", "y_dot", "theta", "theta_dot",
                   "f1", "f1_dot", "f2", "f2_dot")
    input_names = ("f1_acc", "f2_acc", "finger1_normal", "finger2_normal")
    lambda_names = ("slack1", "friction1_a", "friction1_b", "slack2", "friction2_a",
                    "friction2_b", "ground_slack", "ground_friction_a", "ground_friction_b",
                    "ground_normal")
    state_dependent = True

    def __init__(self, **params: Any):
        super().__init__(PivotingParams(**params))

    def lcs(self, x: Any = None, u: Any = None, dt: float | None = None) -> LCS:
        """The LCS linearised at state ``x`` (default: the paper's start state)."""
        x = self._state(x)
        p = self.params
        dt = p.dt if dt is None else float(dt)
        h, w, g = p.h, p.w, p.g
        s, co = np.sin(x[4]), np.cos(x[4])
        rt = -np.sqrt(h * h + w * w)
        z = w * s - h * co
        f1, f2 = x[6], x[8]
        d2 = dt * dt
        A = np.eye(10)
        A[[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]] = dt
        B = np.array([[0, 0, -d2 * co, d2 * s],
                      [0, 0, -dt * co, dt * s],
                      [0, 0, d2 * s, d2 * co],
                      [0, 0, dt * s, dt * co],
                      [0, 0, -d2 * f1, d2 * f2],
                      [0, 0, -dt * f1, dt * f2],
                      [d2, 0, 0, 0],
                      [dt, 0, 0, 0],
                      [0, d2, 0, 0],
                      [0, dt, 0, 0]])
        typo = dt * s if p.fix_velocity_row_typo else d2 * s
        cw_sh = co * w + s * h
        sw_hc = s * w - h * co
        D = np.array([
            [0, d2 * s, -d2 * s, 0, -co * d2, d2 * co, 0, d2, -d2, 0],
            [0, dt * s, -dt * s, 0, -co * dt, dt * co, 0, dt, -dt, 0],
            [0, d2 * co, -d2 * co, 0, d2 * s, -d2 * s, 0, 0, 0, d2],
            [0, dt * co, -dt * co, 0, typo, -dt * s, 0, 0, 0, dt],
            [0, -d2 * h, d2 * h, 0, d2 * w, -d2 * w, 0, -d2 * cw_sh, d2 * cw_sh, d2 * sw_hc],
            [0, -dt * h, dt * h, 0, dt * w, -dt * w, 0, -dt * cw_sh, dt * cw_sh, dt * sw_hc],
            [0, -d2, d2, 0, 0, 0, 0, 0, 0, 0],
            [0, -dt, dt, 0, 0, 0, 0, 0, 0, 0],
            [0, 0, 0, 0, -d2, d2, 0, 0, 0, 0],
            [0, 0, 0, 0, -dt, dt, 0, 0, 0, 0]])
        d = np.zeros(10)
        d[2], d[3] = -d2 * g, -dt * g
        E = np.zeros((10, 10))
        E[1, 7], E[2, 7], E[4, 9], E[5, 9] = -1, 1, -1, 1
        E[7, 1], E[7, 5] = -1, -rt
        E[8, 1], E[8, 5] = 1, rt
        E[9, 2], E[9, 3], E[9, 4], E[9, 5] = 1, dt, -h * s + w * co + z, z * dt
        c = np.zeros(10)
        c[9] = -h * co - w * s - d2 * g
        a = dt * s - rt * dt * h
        b = -dt * co + rt * dt * w
        e = dt - rt * dt * cw_sh
        f = rt * dt * sw_hc
        F = np.array([
            [0, -1, -1, 0, 0, 0, 0, 0, 0, 0],
            [1, dt, -dt, 0, 0, 0, 0, 0, 0, 0],
            [1, -dt, dt, 0, 0, 0, 0, 0, 0, 0],
            [0, 0, 0, 0, -1, -1, 0, 0, 0, 0],
            [0, 0, 0, 1, dt, -dt, 0, 0, 0, 0],
            [0, 0, 0, 1, -dt, dt, 0, 0, 0, 0],
            [0, 0, 0, 0, 0, 0, 0, -1, -1, p.mu3],
            [0, -a, a, 0, -b, b, 1, -e, e, -f],
            [0, a, -a, 0, b, -b, 1, e, -e, f],
            [0, d2 * co - z * d2 * h, -d2 * co + z * d2 * h, 0, d2 * s + z * d2 * w,
             -d2 * s - z * d2 * w, 0, -z * d2 * cw_sh, z * d2 * cw_sh,
             d2 + z * d2 * sw_hc]])
        H = np.array([[0, 0, p.mu1, 0],
                      [-dt, 0, 0, 0],
                      [dt, 0, 0, 0],
                      [0, 0, 0, p.mu2],
                      [0, -dt, 0, 0],
                      [0, dt, 0, 0],
                      [0, 0, 0, 0],
                      [0, 0, dt * co + rt * dt * f1, -dt * s - dt * rt * f2],
                      [0, 0, -dt * co - rt * dt * f1, dt * s + dt * rt * f2],
                      [0, 0, d2 * s - d2 * f1 * z, d2 * co + d2 * f2 * z]])
        return LCS(A, B, D, d, E, F, H, c, dt=dt)

    @cached_property
    def defaults(self) -> ControlDefaults:
        """Paper §VI-B: MIQP projection, N=10, s=5, ρ_s=1.1; Q, R, G, U from the paper's data.

        G = 0.02·I with ρ = 1 (G carries the scale, as in the authors' code). The finger normal
        forces are bounded below by 0 (fingers push, they cannot pull): the paper does not list
        this bound, but without it a plan can ask for a negative normal force, for which the
        friction rows of the LCS have no solution.

        Q follows the authors' Python script, whose protocol reproduces Table II's cost: 100 on
        x, y, θ, 50 on the finger positions, velocity weights 11, 9, 11 on ẋ, ẏ, θ̇ and 1 on the
        finger velocities (their C++ example has velocity weights 1). That script also re-plans
        only every 70 ms and scales the process noise by Δt; the ``pivoting`` task of
        :mod:`c3mpc.tasks` runs that protocol. With per-step re-planning these settings end in a
        limit cycle around the goal (docs/c3.md, "Pivoting: what we found").
        """
        Q = np.eye(10)
        Q[[1, 3, 5], [1, 3, 5]] = (11.0, 9.0, 11.0)  # velocity weights of the authors' script
        Q[[0, 2, 4], [0, 2, 4]] = 100.0
        Q[[6, 8], [6, 8]] = 50.0
        U = np.diag([1000.0] * 10 + [1.0] * 14)
        inf = np.full(10, np.inf)
        return ControlDefaults(
            N=10, dt=self.params.dt, Q=Q, R=0.01 * np.eye(4), QN=Q.copy(), G=0.02 * np.eye(24),
            U=U, admm_iter=5, rho=1.0, rho_scale=1.1, projection="miqp",
            x0=np.array([0, 0, 1.36, 0, 0.2, 0, -0.3, 0, -0.7, 0]),
            x_goal=np.array([0, 0, np.sqrt(2), 0, np.pi / 4, 0, 0.9, 0, 0.9, 0]),
            x_lower=-inf, x_upper=inf, u_lower=np.array([-np.inf, -np.inf, 0.0, 0.0]),
            u_upper=np.full(4, np.inf),
            notes="Paper: 43.4 Hz with MIQP, N=10, s=5; process noise σ ≤ 0.1 succeeds.",
        )
