"""The receding-horizon loop (seed 003 Algorithm 2): estimate, linearise, plan, apply u_0.

``run_closed_loop`` drives any plant with the ``plants`` step interface
(``plant.step(x, u) -> (x_next, lam)``, ``plant.lcs(x, u)``, ``plant.state_dependent``) with a
:class:`c3mpc.C3` controller and records everything in a :class:`ClosedLoopLog`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from lcs import _validation as _v

from .c3 import C3
from .errors import C3TypeError, C3ValueError
from .result import count_failed, count_not_converged

_ERRORS = (C3TypeError, C3ValueError)

__all__ = ["ClosedLoopLog", "run_closed_loop"]


@dataclass(frozen=True)
class ClosedLoopLog:
    """What happened in a closed-loop run.

    Attributes:
        t: (T+1,) times [s].
        x: (T+1, n_x) plant states.
        u: (T, n_u) applied inputs.
        lam: (T, n_lambda) plant contact forces.
        solve_time: (T,) controller wall time per step [s]; NaN on steps that held the
            previous input (``replan_every > 1``).
        status: (T,) :class:`C3Status` codes (of the plan whose input was applied).
        stage_cost: (T,) (x_k − x_des)ᵀQ(·) + u_kᵀR u_k per step (the accumulated cost is the sum).
        stopped_early: the stop criterion fired before the requested duration.
    """

    t: np.ndarray
    x: np.ndarray
    u: np.ndarray
    lam: np.ndarray
    solve_time: np.ndarray
    status: np.ndarray
    stage_cost: np.ndarray
    stopped_early: bool = False
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def accumulated_cost(self) -> float:
        """Σ stage costs over the run."""
        return float(self.stage_cost.sum())

    @property
    def solve_times(self) -> np.ndarray:
        """(P,) wall times of the steps that solved C3 [s] (held steps left out)."""
        return self.solve_time[np.isfinite(self.solve_time)]

    @property
    def control_rate(self) -> float:
        """1 / median solve time [Hz] over the steps that solved C3."""
        t = self.solve_times
        return float(1.0 / np.median(t)) if t.size else 0.0


def run_closed_loop(plant: Any, controller: C3, x0: Any, steps: int, *,
                    Q: np.ndarray | None = None, R: np.ndarray | None = None,
                    x_des: np.ndarray | None = None, noise_std: float = 0.0,
                    rng: np.random.Generator | None = None, replan_every: int = 1,
                    stop: Callable[[np.ndarray, int], bool] | None = None,
                    progress: bool = False, stream: Any = None) -> ClosedLoopLog:
    """Run Algorithm 2 for ``steps`` plant steps.

    Each step: re-linearise (``controller.update_lcs(plant.lcs(x, u_prev))``) when the plant's
    LCS depends on the state, solve C3 from the current state, apply ``u_0``, step the plant, and
    add Gaussian process noise of standard deviation ``noise_std`` to every state entry (the
    paper's pivoting robustness test).

    With ``replan_every = m > 1`` the controller re-plans only every m-th step and the plan's
    ``u_0`` is held (zero-order hold) in between, as the C3 authors' pivoting script does
    (re-planning every 70 ms); held steps log a NaN solve time.

    Args:
        plant: the plant (see module docstring).
        controller: a :class:`C3` built for the plant's LCS.
        x0: (n_x,) start state.
        steps: number of control steps.
        Q, R, x_des: stage-cost weights and target for the logged cost (default: the plant's
            paper defaults, if it has them).
        noise_std: process-noise standard deviation.
        rng: random generator for the noise (default: seeded 0).
        replan_every: re-plan every this many plant steps (>= 1), holding ``u_0`` in between.
        stop: optional ``stop(x, k) -> bool`` checked after each step.
        progress: print a progress bar to ``stream`` (default stderr).

    Returns:
        :class:`ClosedLoopLog`. A failed controller step is logged with its status; its
        ``u[0]`` (the fallback plan's, or zero input if there is no plan at all) is applied.
    """
    steps = _v.check_number("steps", steps, integer=True, minimum=1, errors=_ERRORS)
    noise_std = _v.check_number("noise_std", noise_std, minimum=0.0, errors=_ERRORS)
    replan_every = _v.check_number("replan_every", replan_every, integer=True, minimum=1,
                                   errors=_ERRORS)
    _v.check_memory(f"a closed-loop log of {steps} steps",
                    8.0 * steps * (2 * plant.n_x + plant.n_u + plant.n_lambda + 4), _ERRORS)
    dflt = getattr(plant, "defaults", None)
    Q = dflt.Q if Q is None and dflt is not None else Q
    R = dflt.R if R is None and dflt is not None else R
    x_des = dflt.x_goal if x_des is None and dflt is not None else x_des
    Q = np.zeros((plant.n_x, plant.n_x)) if Q is None else np.asarray(Q)
    R = np.zeros((plant.n_u, plant.n_u)) if R is None else np.asarray(R)
    x_des = np.zeros(plant.n_x) if x_des is None else np.asarray(x_des)
    rng = np.random.default_rng(0) if rng is None else rng
    stream = sys.stderr if stream is None else stream

    x = _v.as_vector("x0", x0, plant.n_x, _ERRORS).copy()
    xs = np.empty((steps + 1, plant.n_x))
    us = np.empty((steps, plant.n_u))
    lams = np.empty((steps, plant.n_lambda))
    times = np.empty(steps)
    statuses = np.empty(steps, dtype=int)
    costs = np.empty(steps)
    xs[0] = x
    u_prev = np.zeros(plant.n_u)
    state_dependent = bool(getattr(plant, "state_dependent", False))
    bar = None
    if progress:
        from plants.progress import ProgressLine  # lazily: `import c3mpc` does not load plants

        bar = ProgressLine(steps, unit="steps", stream=stream)
    T = steps
    stopped = False
    u = u_prev
    for k in range(steps):
        if k % replan_every == 0:
            t_start = time.perf_counter()
            if state_dependent:
                controller.update_lcs(plant.lcs(x, u_prev))
            res = controller.solve(x)
            times[k] = time.perf_counter() - t_start
            status = int(res.status)
            u = res.u[0] if np.all(np.isfinite(res.u[0])) else np.zeros(plant.n_u)
        else:
            times[k] = np.nan
        statuses[k] = status
        e = x - x_des
        costs[k] = float(e @ Q @ e + u @ R @ u)
        x, lam = plant.step(x, u)
        if noise_std > 0:
            x = x + rng.normal(0.0, noise_std, size=x.shape)
        xs[k + 1], us[k], lams[k] = x, u, lam
        u_prev = u
        if bar is not None:
            bar.update(k + 1)
        if stop is not None and stop(x, k):
            T = k + 1
            stopped = True
            if bar is not None:
                bar.close()
            break
    dt = float(plant.dt)
    return ClosedLoopLog(t=np.arange(T + 1) * dt, x=xs[: T + 1], u=us[:T], lam=lams[:T],
                         solve_time=times[:T], status=statuses[:T], stage_cost=costs[:T],
                         stopped_early=stopped,
                         extras={"failed_steps": count_failed(statuses[:T]),
                                 "not_converged_steps": count_not_converged(statuses[:T])})
