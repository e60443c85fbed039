"""C3Options.first_step_forces = "lcp-mode": the first knot's planned forces are the LCS's
response to the planned u_0 in its contact mode (docs/c3.md, "Pivoting: the μ₃ sweep")."""

from __future__ import annotations

import numpy as np
import pytest

from c3mpc import C3
from c3mpc.errors import C3ValueError
from c3mpc.options import C3Options
from c3mpc.tasks import get_task
from lcs import solve_lcp
from plants import load_plant


def _pivot_controller(first_step_forces, bounds=True, mu3=0.5):
    plant = load_plant("pivoting", mu3=mu3)
    d = plant.defaults
    opts = C3Options(projection="miqp", admm_iter=10, rho_scale=2.0,
                     first_step_forces=first_step_forces)
    ctrl = C3(plant.lcs(d.x0), d.Q, d.R, d.G, d.U, N=d.N, x_des=d.x_goal, options=opts)
    if bounds:  # the fingers push: u_2, u_3 >= 0 (the plant defaults' bound)
        ctrl.set_bounds(u_lower=d.u_lower)
    return plant, ctrl


@pytest.mark.parametrize("bounds", [True, False])
def test_planned_first_forces_follow_the_mode_of_the_planned_input(bounds):
    """With constraints (reserved QP rows) and without (Schur complement): the re-solve's λ_0
    is the affine response K u_0 + k, at its own u_0, of the contact mode the first plan's u_0
    puts the LCS in, and (K, k) reproduce an independent Lemke solve at that first u_0. The
    default plan's λ_0 is not the LCS's response to its u_0."""
    plant, ctrl = _pivot_controller("lcp-mode", bounds)
    _, free = _pivot_controller("plan", bounds)
    x0 = plant.defaults.x0
    L = plant.lcs(x0)
    ref = free.solve(x0)  # the same as lcp-mode's first solve
    res = ctrl.solve(x0)
    assert res.ok and ref.ok
    K, k = ctrl.first_step_mode(x0, ref.u[0])
    lam_ref = solve_lcp(L.F, L.E @ x0 + L.H @ ref.u[0] + L.c)
    # the slacks (tangential speeds γ, D columns 0) may differ where the mode is degenerate;
    # the forces, and so the next state, agree
    np.testing.assert_allclose(L.D @ (K @ ref.u[0] + k), L.D @ lam_ref.z, atol=1e-9)
    np.testing.assert_allclose(res.lam[0], K @ res.u[0] + k, atol=1e-6)
    assert np.abs(ref.lam[0] - lam_ref.z).max() > 1e-2
    assert not np.allclose(res.u[0], ref.u[0])


def test_first_step_mode_is_the_local_lcp_solution_map():
    """λ_0(u) = K u + k moves the state as the LCP's solution does for inputs near u0 that
    keep the mode (Lemke solves at perturbed inputs)."""
    plant, ctrl = _pivot_controller("lcp-mode")
    x0 = plant.defaults.x0
    L = plant.lcs(x0)
    u0 = np.array([0.5, -0.3, 4.0, 6.0])
    K, k = ctrl.first_step_mode(x0, u0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        u = u0 + 1e-4 * rng.standard_normal(4)
        np.testing.assert_allclose(L.D @ (K @ u + k),
                                   L.D @ solve_lcp(L.F, L.E @ x0 + L.H @ u + L.c).z, atol=1e-9)


def test_first_step_forces_option_is_checked():
    with pytest.raises(C3ValueError, match="first_step_forces"):
        C3Options(first_step_forces="lcp")
    with pytest.raises(C3ValueError, match="both fix"):
        C3Options(first_step_forces="lcp-mode", lambda0_from_lcp=True)
    assert C3Options().first_step_forces == "plan"


def test_pivoting_per_step_plans_with_the_lcp_mode_first_step():
    task = get_task("pivoting-per-step")
    assert task.controller(task.plant()).options.first_step_forces == "lcp-mode"
    assert get_task("pivoting").controller(task.plant()).options.first_step_forces == "plan"
