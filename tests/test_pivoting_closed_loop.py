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

from c3mpc import run_closed_loop
from c3mpc.cli import main as cli_main
from c3mpc.tasks import build_controller, get_task
from plants import load_plant

TOL = 0.1  # final |x| [m] and |θ - π/4| [rad]


def script_protocol_run(sigma: float, seed: int, duration: float = 6.0):
    """The ``pivoting`` task's protocol (the authors' script's): re-plan every 70 ms, hold u_0,
    process noise σ·Δt per step, velocity weights 11, 9, 11 (the plant's defaults)."""
    task = get_task("pivoting")
    plant = task.plant()
    d = plant.defaults
    steps = int(round(duration / plant.dt))
    return run_closed_loop(plant, build_controller(plant), d.x0, steps,
                           noise_std=sigma * task.noise_scale, replan_every=task.replan_every,
                           rng=np.random.default_rng(seed))


def final_errors(log) -> tuple[float, float]:
    x_end = log.x[-1]
    return abs(x_end[0]), abs(x_end[4] - np.pi / 4)


def test_task_protocol_is_the_authors_script():
    task = get_task("pivoting")
    d = task.plant().defaults
    assert task.replan_every == 7  # 70 ms at Δt = 10 ms
    assert task.noise_scale == pytest.approx(d.dt)
    np.testing.assert_array_equal(np.diag(d.Q), [100, 11, 100, 9, 100, 11, 50, 1, 50, 1])


def test_zero_order_hold_replans_every_period():
    """Held steps apply the last plan's u_0 and log no solve."""
    plant = load_plant("pivoting")
    log = run_closed_loop(plant, build_controller(plant), plant.defaults.x0, 8, replan_every=3)
    solved = np.isfinite(log.solve_time)
    np.testing.assert_array_equal(solved, [True, False, False, True, False, False, True, False])
    np.testing.assert_array_equal(log.u[0], log.u[1])
    np.testing.assert_array_equal(log.u[0], log.u[2])
    assert log.solve_times.size == 3 and log.control_rate > 0
    with pytest.raises(ValueError, match="replan_every"):
        run_closed_loop(plant, build_controller(plant), plant.defaults.x0, 2, replan_every=0)


def test_cli_run_pivoting_with_paper_noise_succeeds(tmp_path):
    """``c3mpc run pivoting --noise 0.1`` is the paper's σ = 0.1 (applied as σ·Δt)."""
    import json

    code = cli_main(["run", "pivoting", "--noise", "0.1", "--seed", "1", "--quiet",
                     "--report", str(tmp_path)])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == 0 and summary["success"]
    assert summary["replan_every"] == 7
    assert summary["noise_std_per_step"] == pytest.approx(0.1 * 0.01)


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
