r"""The cart-pole disturbance trials of seed 003 §VII-C1, in simulation with the hardware settings.

The paper's hardware experiment: walls of stiffness k₁ = k₂ = 100 N/m at d = ±0.39 m, C3 with
N = 10, ρ_s = 2.3, s = 10, G_k = I, ρ = 0.5 and the LCP projection at 100 Hz; the cart starts at
the origin with the controller active, an input disturbance u_dist ~ U[10, 15] N is added for
250 ms to force contact, and "our controller managed to stabilize the system in all trials"
(10 of 10). Here the plant is the same LCS (explicit Euler, Δt = 10 ms) with those parameters;
Q, R and QN are the numerical example's (the paper gives none for the hardware).

``g_input`` is G's entry on the input. The paper writes G_k = I; the authors' code, and the
numerical example's defaults here, put 0 on u: with a positive weight the ADMM term acts as a
proximal pull of u towards the previous iterate's projection, which on this plant lets the
cart run away (measured: docs/c3.md, "Cart-pole disturbance trials"). Default 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..c3 import C3
from ..errors import C3ValueError
from ..options import C3Options

__all__ = ["HARDWARE", "DisturbanceTrial", "hardware_plant", "hardware_controller",
           "run_disturbance_trials"]

HARDWARE = {"k_right": 100.0, "k_left": 100.0, "wall_right": 0.39, "wall_left": -0.39}
"""Seed 003 §VII-C1: wall stiffness [N/m] and positions [m] of the hardware set-up."""


@dataclass(frozen=True)
class DisturbanceTrial:
    """One trial.

    Attributes:
        seed: the trial's random seed (draws the disturbance force).
        force: the disturbance added to the input [N] for ``duration`` [s].
        success: every state within ``tol`` of the origin over the last second.
        max_abs_last_second: (4,) max |state| over the last second.
        contact_steps: plant steps with a positive wall force.
        solve_failures: controller solves that did not return an applicable plan.
    """

    seed: int
    force: float
    success: bool
    max_abs_last_second: np.ndarray
    contact_steps: int
    solve_failures: int


def hardware_plant():
    """The soft-wall cart-pole with the hardware walls (:data:`HARDWARE`)."""
    from plants import load_plant

    return load_plant("cartpole-softwalls", **HARDWARE)


def hardware_controller(plant, g_input: float = 0.0, projection: str = "lcp") -> C3:
    """C3 with the §VII-C1 settings: N = 10, s = 10, ρ = 0.5, ρ_s = 2.3, G = diag(1, ..., 1,
    ``g_input``) (ρ G is the ADMM weight), the numerical example's U, Q, R, QN."""
    if not (np.isfinite(g_input) and g_input >= 0):
        raise C3ValueError(f"g_input must be a finite number >= 0, got {g_input!r}")
    d = plant.defaults
    G = np.diag([1.0] * (plant.n_x + plant.n_lambda) + [float(g_input)] * plant.n_u)
    opts = C3Options(projection=projection, admm_iter=10, rho=0.5, rho_scale=2.3)
    return C3(plant.lcs(), d.Q, d.R, G, d.U, N=10, x_des=d.x_goal, QN=d.QN, options=opts)


def run_disturbance_trials(n_trials: int = 10, seed: int = 0, duration: float = 8.0,
                           push: tuple[float, float] = (10.0, 15.0), push_time: float = 0.25,
                           g_input: float = 0.0, tol: float = 0.1,
                           projection: str = "lcp") -> list[DisturbanceTrial]:
    """``n_trials`` trials of §VII-C1: start at rest at the origin, add a force drawn from
    U[``push``] [N] to the controller's input for ``push_time`` [s], run ``duration`` [s].

    Trial i uses ``numpy.random.default_rng(seed + i)``.
    """
    if not isinstance(n_trials, int) or isinstance(n_trials, bool) or n_trials < 1:
        raise C3ValueError(f"n_trials must be an integer >= 1, got {n_trials!r}")
    if not duration > push_time + 1.0:
        raise C3ValueError(f"duration must exceed push_time + 1 s (the last second is "
                           f"judged), got duration={duration}, push_time={push_time}")
    plant = hardware_plant()
    steps = int(round(duration / plant.dt))
    n_push = int(round(push_time / plant.dt))
    last = int(round(1.0 / plant.dt))
    out = []
    for i in range(n_trials):
        rng = np.random.default_rng(seed + i)
        force = float(rng.uniform(*push))
        ctrl = hardware_controller(plant, g_input, projection)
        x = np.zeros(plant.n_x)
        xs = np.empty((steps + 1, plant.n_x))
        xs[0] = x
        contact = failures = 0
        for k in range(steps):
            res = ctrl.solve(x)
            ok = res.ok and np.all(np.isfinite(res.u[0]))
            failures += int(not ok)
            u = res.u[0] if ok else np.zeros(plant.n_u)
            if k < n_push:
                u = u + force
            x, lam = plant.step(x, u)
            contact += int(np.any(lam > 0))
            xs[k + 1] = x
            if not np.all(np.abs(x) < 1e6):  # diverged: stop before overflow
                xs[k + 1:] = np.inf
                break
        tail = np.abs(xs[-last:]).max(axis=0)
        out.append(DisturbanceTrial(seed=seed + i, force=force,
                                    success=bool(np.all(tail <= tol)),
                                    max_abs_last_second=tail, contact_steps=contact,
                                    solve_failures=failures))
    return out
