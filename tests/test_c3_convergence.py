"""C3's ADMM convergence check: a plan whose QP iterate and projection disagree is reported
NOT_CONVERGED (with its consensus residual), not SOLVED; and the task-file default U = G
(one ADMM metric) converges where the earlier default (U = 1000 on x, 1 on λ, u) diverged.

The diverging case is the pusher-box example at its start state with the earlier default U
(docs/own-robot.md, "Why these weights"; docs/c3.md, "The ADMM metric and the convergence
check")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from c3mpc import C3Options
from c3mpc.result import C3Status, count_failed, count_not_converged
from c3mpc.tasks import build_controller
from plants import load_task_file

TASK = Path(__file__).resolve().parents[1] / "examples" / "own_robot" / "pusher_box.yaml"


@pytest.fixture(scope="module")
def pusher():
    return load_task_file(TASK)


def _old_default_U(plant) -> np.ndarray:
    """The task files' default U before U = G: 1000 on the states, 1 on λ and u."""
    return np.diag(np.r_[np.full(plant.n_x, 1000.0), np.ones(plant.n_lambda + plant.n_u)])


def _residual(res, ctrl) -> float:
    """The consensus residual recomputed from the result: the returned plan (the final QP
    iterate, ``end_on_qp_step``) against the last projection δ, per block x, λ, u."""
    n_x, n_l = ctrl.n_x, ctrl.n_lambda
    z = np.hstack([res.x[:-1], res.lam, res.u])
    d = res.delta[:, :ctrl.n_z]
    worst = 0.0
    for sl in (slice(0, n_x), slice(n_x, n_x + n_l), slice(n_x + n_l, None)):
        a, b = z[:, sl], d[:, sl]
        worst = max(worst, np.abs(a - b).max() / (1 + max(np.abs(a).max(), np.abs(b).max())))
    return worst


def test_task_file_default_U_is_G_and_converges(pusher):
    plant = pusher.plant
    d = plant.defaults
    np.testing.assert_array_equal(d.U, d.G)
    ctrl = build_controller(plant, x0=pusher.x0)
    res = ctrl.solve(pusher.x0)
    assert res.status is C3Status.SOLVED and res.ok
    assert res.consensus_residual == pytest.approx(_residual(res, ctrl), rel=1e-9)
    assert res.consensus_residual < 0.1  # measured 0.09 (x block), 0.02 (λ)
    assert res.complementarity_violation < 1.0  # [N]; measured 0.54 at the start state
    hist = res.extras["consensus_residuals"]
    assert hist.shape == (res.iterations + 1, 3)


def test_diverging_admm_is_not_reported_solved(pusher):
    """The earlier default U (10⁴ heavier on x than G): every iterate moves away from the
    complementarity set; the plan's forces are not complementary."""
    plant = pusher.plant
    plant.defaults = plant.defaults.replace(U=_old_default_U(plant))
    try:
        ctrl = build_controller(plant, x0=pusher.x0)
    finally:
        plant.defaults = load_task_file(TASK).plant.defaults
    res = ctrl.solve(pusher.x0)
    assert res.status is C3Status.NOT_CONVERGED
    assert res.ok and not res.status.failed and not res.fallback  # the plan is still returned
    assert np.all(np.isfinite(res.u)) and res.u.shape == (ctrl.N, 1)
    assert res.consensus_residual == pytest.approx(_residual(res, ctrl), rel=1e-9)
    assert res.consensus_residual > 0.3  # measured 0.46 (x block), 0.28 (λ)
    assert res.complementarity_violation > 1.0  # [N]; measured 2.95
    assert "consensus residual" in res.message
    # the check off: the same plan, SOLVED as before this status existed
    opts = ctrl.options.replace(consensus_tolerance=None)
    plant.defaults = plant.defaults.replace(U=_old_default_U(plant))
    try:
        off = build_controller(plant, opts, x0=pusher.x0)
    finally:
        plant.defaults = load_task_file(TASK).plant.defaults
    res_off = off.solve(pusher.x0)
    assert res_off.status is C3Status.SOLVED
    np.testing.assert_allclose(res_off.u, res.u)
    assert res_off.consensus_residual == pytest.approx(res.consensus_residual)


def test_consensus_residual_ignores_entries_without_consensus_weight():
    """The cart-pole's u has G_u = U_u = 0 (the authors' weights): neither step ties it, so
    its z − δ does not count."""
    from c3mpc.tasks import get_task

    task = get_task("cartpole-softwalls")
    plant = task.plant()
    ctrl = task.controller(plant)
    x0 = np.array([0.1, 0.0, 0.45, 0.0])
    res = ctrl.solve(x0)
    assert np.diag(plant.defaults.G)[-1] == 0
    n_u = plant.n_u
    assert res.consensus_residual == pytest.approx(res.extras["consensus_residuals"][-1, :2].max())
    assert res.extras["consensus_residuals"][-1, 2] == 0.0
    assert np.abs(res.u - res.delta[:, -n_u:]).max() > 0  # the untied u does differ


def test_consensus_tolerance_option_is_checked():
    assert C3Options().consensus_tolerance == 0.3
    assert C3Options(consensus_tolerance=None).consensus_tolerance is None
    with pytest.raises(ValueError, match="consensus_tolerance"):
        C3Options(consensus_tolerance=-1.0)
    with pytest.raises((TypeError, ValueError), match="consensus_tolerance"):
        C3Options(consensus_tolerance="0.2")


def test_status_counters_keep_not_converged_apart_from_failures():
    codes = np.array([C3Status.SOLVED, C3Status.NOT_CONVERGED, C3Status.QP_FAILED,
                      C3Status.MAX_ITERATIONS, C3Status.NOT_CONVERGED, C3Status.FAILED])
    assert count_failed(codes) == 2 and count_not_converged(codes) == 2
    assert [s.name for s in C3Status if s.failed] == ["QP_FAILED", "PROJECTION_FAILED",
                                                      "INFEASIBLE", "FAILED"]


def test_C3_without_U_projects_in_G_metric(pusher):
    """``U=None`` is U = G: the same plan as passing G twice."""
    from c3mpc import C3

    plant, d = pusher.plant, pusher.plant.defaults
    lcs = plant.lcs(pusher.x0, np.zeros(plant.n_u))
    opts = C3Options(projection="miqp", admm_iter=5)
    a = C3(lcs, d.Q, d.R, 0.3 * d.G, N=5, x_des=d.x_goal, options=opts).solve(pusher.x0)
    b = C3(lcs, d.Q, d.R, 0.3 * d.G, 0.3 * d.G, N=5, x_des=d.x_goal,
           options=opts).solve(pusher.x0)
    np.testing.assert_array_equal(a.u, b.u)
    np.testing.assert_array_equal(a.delta, b.delta)


def test_closed_loop_counts_not_converged_plans_apart_from_failures(pusher):
    """run_closed_loop applies a NOT_CONVERGED plan's input (it is usable) and counts it in
    ``not_converged_steps``, not in ``failed_steps``."""
    from c3mpc import run_closed_loop

    plant = pusher.plant
    plant.defaults = plant.defaults.replace(U=_old_default_U(plant))
    try:
        ctrl = build_controller(plant, x0=pusher.x0)
        log = run_closed_loop(plant, ctrl, pusher.x0, 2, progress=False)
    finally:
        plant.defaults = load_task_file(TASK).plant.defaults
    assert np.all(log.status == C3Status.NOT_CONVERGED)
    assert log.extras["not_converged_steps"] == 2 and log.extras["failed_steps"] == 0
    assert np.all(np.isfinite(log.u)) and np.abs(log.u[0]).max() > 0
