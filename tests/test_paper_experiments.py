"""Seed 003's experiments as the paper runs them: per-step pivoting, the μ₃ sweep from the command
line, and the §VII-C1 cart-pole disturbance trials with the hardware parameters."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.linalg

from c3mpc import run_closed_loop
from c3mpc.cli import main as cli_main
from c3mpc.errors import C3ValueError
from c3mpc.tasks import build_controller, get_task
from c3mpc.tasks.cartpole_disturbance import (HARDWARE, hardware_controller, hardware_plant,
                                              run_disturbance_trials, step_continuous)
from c3mpc.terminal_cost import contact_mode_dare
from plants import load_plant


# ------------------------------------------------------------------ --plant-param (μ₃ sweep)
def test_cli_plant_param_runs_the_plant_with_that_friction(tmp_path):
    """`c3mpc run pivoting --plant-param mu3=0.5` equals a closed loop on load_plant(mu3=0.5)
    and differs from μ₃ = 0.1 (the ground friction matters within 0.3 s)."""
    code = cli_main(["run", "pivoting", "--plant-param", "mu3=0.5", "--duration", "0.3",
                     "--quiet", "--report", str(tmp_path)])
    assert code in (0, 1)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["plant_params"] == {"mu3": 0.5}
    x_cli = np.load(tmp_path / "trajectory.npz")["x"]
    task = get_task("pivoting")
    for mu3, same in ((0.5, True), (0.1, False)):
        plant = load_plant("pivoting", mu3=mu3)
        log = run_closed_loop(plant, build_controller(plant), plant.defaults.x0, 30,
                              replan_every=task.replan_every)
        assert np.allclose(log.x, x_cli, atol=1e-9) == same


@pytest.mark.parametrize("arg, match", [("mu9=0.5", "not a parameter"),
                                        ("mu3=-1", "mu3 must be positive"),
                                        ("fix_velocity_row_typo=1", "flag")])
def test_cli_plant_param_rejects_unknown_or_bad_values(arg, match, capsys):
    code = cli_main(["run", "pivoting", "--plant-param", arg, "--duration", "0.05", "--quiet"])
    assert code != 0
    assert match in capsys.readouterr().err


def test_cli_plant_param_needs_name_equals_number():
    with pytest.raises(SystemExit):
        cli_main(["run", "pivoting", "--plant-param", "mu3", "--quiet"])
    with pytest.raises(SystemExit):
        cli_main(["run", "pivoting", "--plant-param", "mu3=abc", "--quiet"])


# ------------------------------------------------------------------ pivoting, Algorithm 2
def test_pivoting_per_step_task_is_algorithm_2_with_the_sticking_mode_terminal_cost():
    task = get_task("pivoting-per-step")
    plant = task.plant()
    d = plant.defaults
    assert task.replan_every == 1 and task.noise_scale == pytest.approx(d.dt)
    ctrl = task.controller(plant)
    assert (ctrl.options.admm_iter, ctrl.options.rho_scale) == (10, 2.0)
    QN = ctrl.cost_matrices[0][-1]
    np.testing.assert_allclose(QN, contact_mode_dare(plant.lcs(d.x_goal), d.Q, d.R, (7, 9),
                                                     discount=0.997), rtol=1e-12)
    assert not np.allclose(QN, d.QN)


def _per_step_run(sigma, seed):
    task = get_task("pivoting-per-step")
    plant = task.plant()
    log = run_closed_loop(plant, task.controller(plant), plant.defaults.x0,
                          int(task.duration / plant.dt), noise_std=sigma * task.noise_scale,
                          rng=np.random.default_rng(seed))
    tail = log.x[-101:]
    return task, log, np.abs(tail[:, 4] - np.pi / 4).max(), np.abs(tail[:, 0]).max()


@pytest.mark.slow
@pytest.mark.parametrize("sigma, seed", [(0.0, 0), (0.1, 1)])
def test_pivoting_per_step_shrinks_the_limit_cycle(sigma, seed):
    """Re-planning every 10 ms step: with the seed's Q as QN and s = 5, ρ_s = 1.1 the box cycles
    through the goal at |θ − π/4| ≈ 0.27 rad (docs/c3.md); the task's settings keep it within
    0.1 rad and |x| within 0.15 m over the last second of 8 s."""
    _, _, th, x = _per_step_run(sigma, seed)
    assert th <= 0.1 and x <= 0.15, (th, x)


@pytest.mark.slow
@pytest.mark.parametrize("sigma, seed", [(0.0, 0), (0.05, 1), (0.1, 2), (0.1, 3)])
def test_pivoting_per_step_holds_the_papers_tolerance(sigma, seed):
    """Fig. 5: |θ − π/4| ≤ 0.05 (and |x| ≤ 0.1) over the whole last second of 8 s for
    σ = 0, 0.05, 0.1 (task units, σ·Δt per step)."""
    task, log, th, x = _per_step_run(sigma, seed)
    assert task.success(log), (th, x)


@pytest.mark.slow
def test_pivoting_per_step_degrades_at_sigma_one_half():
    """Fig. 5: σ = 0.5 "starts failing to get close to the desired configuration"."""
    task, log, th, _ = _per_step_run(0.5, 1)
    assert not task.success(log) and th > 0.05


def _log_at(x_row, ground_normal=5.0, steps=150):
    from c3mpc.runner import ClosedLoopLog

    x = np.tile(np.asarray(x_row, dtype=float), (steps + 1, 1))
    lam = np.zeros((steps, 10))
    lam[:, 9] = ground_normal
    z = np.zeros(steps)
    return ClosedLoopLog(t=np.arange(steps + 1) * 0.01, x=x, u=np.zeros((steps, 4)), lam=lam,
                         solve_time=z, status=z.astype(int), stage_cost=z)


def test_pivoting_per_step_goal_is_the_box_resting_on_its_corner():
    """The paper's goal is x = 0, y = √2, α = π/4. A box at the goal's x and θ but held 0.2 m
    up by the fingers (where the 70 ms hold protocol ends, docs/c3.md), or held just above
    the ground with no ground force, has not pivoted."""
    task = get_task("pivoting-per-step")
    goal = task.plant().defaults.x_goal
    assert task.success(_log_at(goal))
    in_air = goal.copy()
    in_air[2] += 0.2
    assert not task.success(_log_at(in_air, ground_normal=0.0))
    hovering = goal.copy()
    hovering[2] += 0.009
    assert not task.success(_log_at(hovering, ground_normal=0.0))
    off = goal.copy()
    off[4] += 0.06
    assert not task.success(_log_at(off))


@pytest.mark.slow
@pytest.mark.parametrize("mu3", [0.5])
def test_pivoting_per_step_reaches_the_goal_at_higher_ground_friction(mu3):
    """The paper's μ₃ sweep: with λ_0 free the plan counted on ~5x the ground force its u_0
    produces and cycled (μ₃ 0.2-0.3) or lost the box (>= 0.4); with the first step's forces
    from the contact mode (first_step_forces = "lcp-mode") it pivots the box onto its corner."""
    task = get_task("pivoting-per-step")
    plant = task.plant(mu3=mu3)
    log = run_closed_loop(plant, task.controller(plant), plant.defaults.x0,
                          int(task.duration / plant.dt))
    assert task.success(log)


# ------------------------------------------------------------------ cart-pole §VII-C1
def test_hardware_plant_and_controller_have_the_papers_settings():
    plant = hardware_plant()
    p = plant.params
    assert (p.k_right, p.k_left, p.wall_right, p.wall_left) == (100.0, 100.0, 0.39, -0.39)
    assert HARDWARE["wall_right"] == 0.39
    ctrl = hardware_controller(plant)
    o = ctrl.options
    assert (ctrl.N, o.admm_iter, o.rho, o.rho_scale, o.projection) == (10, 10, 0.5, 2.3, "lcp")
    G = ctrl.cost_matrices[2][0]
    np.testing.assert_array_equal(np.diag(G), [1, 1, 1, 1, 1, 1, 0])
    with pytest.raises(C3ValueError, match="g_input"):
        hardware_controller(plant, g_input=-1.0)


def test_continuous_plant_converges_to_the_exact_flow_between_the_walls():
    """Away from the walls the cart-pole is linear: one 10 ms period of step_continuous
    converges at first order to the exact zero-order-hold flow expm([[A_c, B_c], [0, 0]] Δt)."""
    plant = hardware_plant()
    Ac, Bc, _ = plant.continuous_matrices()
    x0, u = np.array([0.0, 0.05, 0.2, 0.1]), np.array([3.0])
    M = np.zeros((5, 5))
    M[:4, :4], M[:4, 4:] = Ac, Bc
    exact = (scipy.linalg.expm(M * plant.dt) @ np.r_[x0, u])[:4]
    errs = [np.abs(step_continuous(plant, x0, u, s)[0] - exact).max() for s in (10, 100, 1000)]
    assert errs[0] < 1e-4
    np.testing.assert_allclose(np.array(errs[:-1]) / np.array(errs[1:]), 10.0, rtol=0.01)


def _one_period_jacobian(step, x):
    eps = 1e-6
    return np.column_stack([(step(x + eps * e) - step(x - eps * e)) / (2 * eps)
                            for e in np.eye(4)])


def test_continuous_plant_does_not_pump_energy_into_a_wall_bounce():
    """In contact with a wall the pole tip oscillates at ω (the contact mode's continuous
    eigenvalues ±iω). The controller's explicit-Euler LCS used as the plant amplifies that
    oscillation by √(1 + (ωΔt)²) per 10 ms step (≈ 1.023: the growing bounce of pushes ≥ 14 N,
    docs/c3.md); the continuous plant's one-period map keeps it on the unit circle."""
    plant = hardware_plant()
    Ac, _, Dc = plant.continuous_matrices()
    lcs = plant.lcs()
    # the pole tip 5 cm into the right wall at rest: it stays in contact over one period
    x_in = np.array([0.39 + 0.05, 0.0, 0.0, 0.0])
    assert lcs.E[0] @ x_in + lcs.c[0] < 0
    K = np.diag([plant.params.k_right, 0.0])
    omega = np.abs(np.linalg.eigvals(Ac - Dc @ K @ lcs.E).imag).max()
    growth = np.sqrt(1 + (omega * plant.dt) ** 2)
    u = np.zeros(1)
    J_lcs = _one_period_jacobian(lambda x: plant.step(x, u)[0], x_in)
    J_sim = _one_period_jacobian(lambda x: step_continuous(plant, x, u)[0], x_in)
    osc = lambda J: np.abs(np.linalg.eigvals(J)[np.abs(np.linalg.eigvals(J).imag) > 1e-6])
    np.testing.assert_allclose(osc(J_lcs), growth, rtol=1e-6)
    assert growth > 1.02
    np.testing.assert_allclose(osc(J_sim), 1.0, atol=1e-8)


def test_disturbance_trials_recover_from_both_ends_of_the_papers_push_range():
    """§VII-C1: pushes of 10 and 15 N (the ends of U[10, 15]) for 250 ms drive the pole into a
    wall (contact steps > 0) and C3 brings every state back within 0.1 of the origin in 8 s."""
    trials = run_disturbance_trials(forces=[10.0, 15.0])
    assert [t.force for t in trials] == [10.0, 15.0]
    for t in trials:
        assert t.contact_steps > 0
        assert t.solve_failures == 0
        assert t.success, t.max_abs_last_second


@pytest.mark.slow
def test_disturbance_trials_ten_of_ten_as_on_the_hardware():
    """The paper's 10 trials, u_dist ~ U[10, 15] N: all settle (paper: 10 of 10)."""
    trials = run_disturbance_trials(n_trials=10, seed=0)
    assert all(10.0 <= t.force <= 15.0 for t in trials)
    assert all(t.success and t.contact_steps > 0 for t in trials), \
        [(t.force, t.max_abs_last_second.max()) for t in trials]


@pytest.mark.slow
def test_explicit_euler_lcs_as_the_plant_reproduces_the_growing_bounce():
    """The measured cause of the earlier 7/10: with the controller's own LCS as the plant a
    15 N push ends in a growing wall-to-wall bounce (hundreds of contact steps)."""
    t, = run_disturbance_trials(forces=[15.0], plant_model="lcs")
    assert not t.success and t.contact_steps > 200


@pytest.mark.parametrize("kw, match", [({"plant_model": "euler"}, "plant_model"),
                                       ({"substeps": 0}, "substeps"),
                                       ({"substeps": True}, "substeps"),
                                       ({"forces": []}, "forces"),
                                       ({"forces": [np.nan]}, "forces")])
def test_disturbance_trials_reject_bad_arguments(kw, match):
    with pytest.raises(C3ValueError, match=match):
        run_disturbance_trials(**kw)
