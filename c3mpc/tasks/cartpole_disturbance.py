r"""The cart-pole disturbance trials of seed 003 §VII-C1, in simulation with the hardware settings.

The paper's hardware experiment: walls of stiffness k₁ = k₂ = 100 N/m at d = ±0.39 m, C3 with
N = 10, ρ_s = 2.3, s = 10, G_k = I, ρ = 0.5 and the LCP projection at 100 Hz; the cart starts at
the origin with the controller active, an input disturbance u_dist ~ U[10, 15] N is added for
250 ms to force contact, and "our controller managed to stabilize the system in all trials"
(10 of 10). The controller plans on the paper's LCS (explicit Euler, Δt = 10 ms) with those
parameters; Q, R and QN are the numerical example's (the paper gives none for the hardware).

The simulated hardware is the same continuous-time model (linearised cart-pole, walls as
springs on the pole tip) integrated with semi-implicit Euler at Δt/``substeps`` (1 ms), the
input held over each 10 ms control period (:func:`step_continuous`). Using the controller's own
explicit-Euler LCS as the plant instead (``plant_model="lcs"``) is not a model of the hardware:
in wall contact the pole tip oscillates at ω = 21.7 rad/s and explicit Euler at 10 ms amplifies
that oscillation by √(1 + (ωΔt)²) = 1.023 per step, ≈ 1.4× in amplitude (≈ 2× in energy) over
one 0.145 s contact, so every bounce returns the cart faster than it came and pushes ≥ 14 N
diverged in a growing wall-to-wall bounce (docs/c3.md, "Cart-pole disturbance trials").

``g_input`` is G's entry on the input. The paper writes G_k = I; the authors' code, and the
numerical example's defaults here, put 0 on u: with a positive weight the ADMM term acts as a
proximal pull of u towards the previous iterate's projection; on the continuous plant the pole
then ends in a bounded oscillation against a wall, 0 of 10 settled (measured: docs/c3.md,
"Cart-pole disturbance trials"). Default 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..c3 import C3
from ..errors import C3ValueError
from ..options import C3Options

__all__ = ["HARDWARE", "PLANT_SUBSTEPS", "DisturbanceTrial", "hardware_plant",
           "hardware_controller", "step_continuous", "run_disturbance_trials"]

HARDWARE = {"k_right": 100.0, "k_left": 100.0, "wall_right": 0.39, "wall_left": -0.39}
"""Seed 003 §VII-C1: wall stiffness [N/m] and positions [m] of the hardware set-up."""

PLANT_SUBSTEPS = 10
"""Integration steps of the simulated hardware per 10 ms control period (1 ms each). Measured
(pushes 14 and 15 N, 8 s): 1, 10 and 20 semi-implicit substeps all settle within 3 mm; the
final states of 10 and 20 substeps differ by < 1 mm."""

_PLANT_MODELS = ("continuous", "lcs")


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
        max_abs_input: the largest |u| the controller commanded [N] (disturbance excluded).
    """

    seed: int
    force: float
    success: bool
    max_abs_last_second: np.ndarray
    contact_steps: int
    solve_failures: int
    max_abs_input: float = 0.0


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


def step_continuous(plant, x: np.ndarray, u: np.ndarray,
                    substeps: int = PLANT_SUBSTEPS) -> tuple[np.ndarray, np.ndarray]:
    r"""Advance the soft-wall cart-pole ``plant`` by one control period ``plant.dt`` [s] in
    continuous time, the input ``u`` (1,) [N] held.

    The model is the paper's continuous one, :math:`\dot x = A_c x + B_c u + D_c \lambda` with
    the spring walls :math:`\lambda = \max(0, -K (E x + c))`, K = diag(k₁, k₂) [N/m]: the LCS
    :math:`0 \le \lambda \perp E x + F \lambda + c \ge 0`, F = K⁻¹, solved in closed form.
    Semi-implicit (symplectic) Euler with step h = dt/``substeps``: velocities first, then
    positions with the new velocities, so a wall oscillation neither gains nor loses energy
    over a bounce (explicit Euler gains √(1 + (ωh)²) per step).

    Returns ``(x_next (4,), lam (2,))``, ``lam`` the mean wall force [N] over the period.
    """
    Ac, Bc, Dc = plant.continuous_matrices()
    lcs = plant.lcs()
    k = 1.0 / np.diag(lcs.F)
    h = plant.dt / substeps
    x = np.array(x, dtype=float)
    drive = Bc @ np.asarray(u, dtype=float)
    lam_sum = np.zeros(lcs.n_lambda)
    for _ in range(substeps):
        lam = k * np.maximum(0.0, -(lcs.E @ x + lcs.c))
        x[2:] += h * (Ac @ x + drive + Dc @ lam)[2:]
        x[:2] += h * x[2:]
        lam_sum += lam
    return x, lam_sum / substeps


def run_disturbance_trials(n_trials: int = 10, seed: int = 0, duration: float = 8.0,
                           push: tuple[float, float] = (10.0, 15.0), push_time: float = 0.25,
                           g_input: float = 0.0, tol: float = 0.1,
                           projection: str = "lcp", forces: Sequence[float] | None = None,
                           plant_model: str = "continuous",
                           substeps: int = PLANT_SUBSTEPS) -> list[DisturbanceTrial]:
    """``n_trials`` trials of §VII-C1: start at rest at the origin, add a force drawn from
    U[``push``] [N] to the controller's input for ``push_time`` [s], run ``duration`` [s].

    Trial i uses ``numpy.random.default_rng(seed + i)``. ``forces`` [N], when given, replaces
    the random draws (one trial per force; ``n_trials`` is then ignored). ``plant_model``:
    "continuous" (default, :func:`step_continuous` with ``substeps``) or "lcs" (the
    controller's own explicit-Euler LCS as the plant; not a model of the hardware, kept to
    reproduce the measured divergence).
    """
    if not isinstance(n_trials, int) or isinstance(n_trials, bool) or n_trials < 1:
        raise C3ValueError(f"n_trials must be an integer >= 1, got {n_trials!r}")
    if not duration > push_time + 1.0:
        raise C3ValueError(f"duration must exceed push_time + 1 s (the last second is "
                           f"judged), got duration={duration}, push_time={push_time}")
    if plant_model not in _PLANT_MODELS:
        raise C3ValueError(f"plant_model must be one of {_PLANT_MODELS}, got {plant_model!r}")
    if not isinstance(substeps, int) or isinstance(substeps, bool) or substeps < 1:
        raise C3ValueError(f"substeps must be an integer >= 1, got {substeps!r}")
    if forces is not None:
        forces = [float(f) for f in forces]
        if not forces or not all(np.isfinite(f) for f in forces):
            raise C3ValueError(f"forces must be a non-empty sequence of finite numbers, got "
                               f"{forces!r}")
    plant = hardware_plant()
    steps = int(round(duration / plant.dt))
    n_push = int(round(push_time / plant.dt))
    last = int(round(1.0 / plant.dt))
    out = []
    for i in range(len(forces) if forces is not None else n_trials):
        if forces is None:
            force = float(np.random.default_rng(seed + i).uniform(*push))
        else:
            force = forces[i]
        ctrl = hardware_controller(plant, g_input, projection)
        x = np.zeros(plant.n_x)
        xs = np.empty((steps + 1, plant.n_x))
        xs[0] = x
        contact = failures = 0
        u_max = 0.0
        for k in range(steps):
            res = ctrl.solve(x)
            ok = res.ok and np.all(np.isfinite(res.u[0]))
            failures += int(not ok)
            u = res.u[0] if ok else np.zeros(plant.n_u)
            u_max = max(u_max, float(np.abs(u).max()))
            if k < n_push:
                u = u + force
            if plant_model == "continuous":
                x, lam = step_continuous(plant, x, u, substeps)
            else:
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
                                    solve_failures=failures, max_abs_input=u_max))
    return out
