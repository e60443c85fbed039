"""Pivoting (seed 003 §VI-B, Fig. 5) in closed loop: what reaches x=0, θ=π/4 and what does not.

Findings behind these tests (details and numbers in docs/c3.md, "Pivoting: what we found"):

* Re-planning every 10 ms step with the paper's settings (Algorithm 2, ``run_closed_loop``)
  does not settle: the box swings through the goal in a limit cycle (|θ−π/4| ≈ 0.22 rad,
  |x| ≈ 0.28 m, period ≈ 2.8 s). An independent re-implementation of the authors' own Python
  script (OSQP QP step + Gurobi big-M projection) behaves the same way under this protocol, so
  the cycle is not a defect of our C3.
* The authors' public script (github.com/AlpAydinoglu/coptimal, "Conference (ICRA2022)/pivoting")
  differs in its protocol: it re-plans only every 70 ms and holds u_0 in between, uses velocity
  weights 11, 9, 11 in Q, and adds process noise σ·Δt (not σ) per step. With those settings our
  C3 reaches the goal from the paper's start for σ = 0, 0.05, 0.1.

Tolerance: the paper says only that the object "approximately reaches the desired configuration"
for σ ≤ 0.1. The authors' script run on the same model ends (7 s, σ = 0) at x = 0.013 m,
|θ − π/4| = 0.015 rad; we require |x| ≤ 0.1 m and |θ − π/4| ≤ 0.1 rad (the task's criterion) at
the end of a 6 s run. Measured over 9 seeds for σ = 0.1: worst final |x| = 0.056, worst
|θ − π/4| = 0.037, so the bound has a 2x margin and still separates success from the per-step
limit cycle (0.22-0.28).
"""

from __future__ import annotations

import numpy as np
import pytest

from c3mpc import C3, C3Options, run_closed_loop
from c3mpc.tasks import build_controller, get_task
from plants import load_plant

TOL = 0.1  # final |x| [m] and |θ - π/4| [rad]
HOLD_STEPS = 7  # the authors' script re-plans every 70 ms (every 7 plant steps of 10 ms)
SCRIPT_VELOCITY_WEIGHTS = (11.0, 9.0, 11.0)  # Q[1,1], Q[3,3], Q[5,5] in the authors' script


class ZeroOrderHold:
    """Re-plan every ``period`` calls and hold the last plan's u_0 in between.

    Duck-types the two methods ``run_closed_loop`` uses (``update_lcs``, ``solve``); the LCS
    handed over between re-plans is kept and used at the next re-plan (the state's LCS).
    """

    def __init__(self, controller: C3, period: int):
        self.controller, self.period = controller, period
        self._calls, self._lcs, self._result = 0, None, None

    def update_lcs(self, lcs) -> None:
        self._lcs = lcs

    def solve(self, x):
        if self._calls % self.period == 0:
            if self._lcs is not None:
                self.controller.update_lcs(self._lcs)
            self._result = self.controller.solve(x)
        self._calls += 1
        return self._result


def script_protocol_run(sigma: float, seed: int, duration: float = 6.0):
    """The authors' script's protocol on our plant and C3 (see module docstring)."""
    plant = load_plant("pivoting")
    d = plant.defaults
    Q = d.Q.copy()
    Q[[1, 3, 5], [1, 3, 5]] = SCRIPT_VELOCITY_WEIGHTS
    opts = C3Options(projection=d.projection, admm_iter=d.admm_iter, rho=d.rho,
                     rho_scale=d.rho_scale)
    ctrl = C3(plant.lcs(d.x0), Q, d.R, d.G, d.U, N=d.N, x_des=d.x_goal, QN=Q, options=opts)
    ctrl.set_bounds(u_lower=d.u_lower, u_upper=d.u_upper)
    steps = int(round(duration / plant.dt))
    # the paper's σ is applied as σ·Δt per step in the authors' script
    return run_closed_loop(plant, ZeroOrderHold(ctrl, HOLD_STEPS), d.x0, steps,
                           noise_std=sigma * plant.dt, rng=np.random.default_rng(seed))


def final_errors(log) -> tuple[float, float]:
    x_end = log.x[-1]
    return abs(x_end[0]), abs(x_end[4] - np.pi / 4)


def test_zero_order_hold_replans_every_period():
    plant = load_plant("pivoting")
    ctrl = build_controller(plant)
    held = ZeroOrderHold(ctrl, 3)
    x = plant.defaults.x0
    results = []
    for _ in range(4):
        held.update_lcs(plant.lcs(x))
        results.append(held.solve(x))
    assert results[0] is results[1] is results[2]
    assert results[3] is not results[0]


@pytest.mark.parametrize("sigma,seed", [(0.0, 0), (0.1, 0)])
def test_script_protocol_reaches_goal(sigma, seed):
    log = script_protocol_run(sigma, seed)
    ex, eth = final_errors(log)
    assert ex <= TOL and eth <= TOL, (sigma, seed, ex, eth)
    assert log.extras["failed_steps"] == 0
    # the same criterion the CLI task uses
    assert get_task("pivoting").success(log)


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.05, 0.1])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_script_protocol_reaches_goal_many_seeds(sigma, seed):
    ex, eth = final_errors(script_protocol_run(sigma, seed))
    assert ex <= TOL and eth <= TOL, (sigma, seed, ex, eth)


def test_per_step_replanning_with_paper_settings_limit_cycles():
    """Pins the documented negative result (docs/c3.md): if this starts failing, per-step
    re-planning reaches the goal and the docs (and the task's default protocol) need updating."""
    plant = load_plant("pivoting")
    log = run_closed_loop(plant, build_controller(plant), plant.defaults.x0, 300)
    tail = log.x[150:]
    # it passes through the goal but keeps swinging with a large amplitude
    assert np.abs(tail[:, 4] - np.pi / 4).max() > 2 * TOL
    assert np.abs(tail[:, 0]).max() > 2 * TOL
    assert np.abs(tail[:, 4] - np.pi / 4).min() < 0.02


def test_controller_plans_on_the_lcs_of_the_current_state():
    """Algorithm 2's re-linearisation reaches the QP: the returned plan obeys the dynamics of
    the LCS handed to ``update_lcs`` (not those of the LCS the controller was built with)."""
    plant = load_plant("pivoting")
    ctrl = build_controller(plant)  # built on the LCS at the paper's start state
    x = plant.defaults.x0.copy()
    x[[4, 6, 8]] = 0.7, 0.5, 0.6  # θ, f1, f2: every state-dependent entry changes

    def dynamics_residual(lcs, res):
        pred = (res.x[:-1] @ lcs.A.T + res.u @ lcs.B.T + res.lam @ lcs.D.T + lcs.d)
        return np.abs(res.x[1:] - pred).max()

    new = plant.lcs(x)
    ctrl.update_lcs(new)
    res = ctrl.solve(x)
    np.testing.assert_allclose(res.x[0], x)
    assert dynamics_residual(new, res) < 1e-8
    assert dynamics_residual(plant.lcs(plant.defaults.x0), res) > 1e-3
