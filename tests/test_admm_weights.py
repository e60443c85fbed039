"""Scale-aware ADMM weights and the relative complementarity check (issue 19's hand-scale limit).

The independent check is a change of units: the same plant written in other units (x, u, λ
and each slack row scaled by positive factors, the cost transformed so it is the same cost) is
the same problem, so a scale-aware G must give the same plan in the new units; the fixed
G = 0.1·I does not. docs/c3.md, "Scale-aware ADMM weights"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from c3mpc import C3, C3Options
from c3mpc.admm_weights import scaled_admm_weights
from c3mpc.c3 import relative_complementarity_violation
from lcs import LCS
from plants import load_task_file

ROOT = Path(__file__).resolve().parents[1]
PUSHER = ROOT / "examples" / "own_robot" / "pusher_box.yaml"


@pytest.fixture(scope="module")
def pusher():
    task = load_task_file(PUSHER)
    plant = task.plant
    return task, plant.lcs(task.x0, np.zeros(plant.n_u))


def _units(lcs: LCS, seed: int, one_force_unit: bool = False):
    """Random positive unit factors and the LCS written in them. ``one_force_unit``: every
    force (a λ that moves a state) in the same unit, as newtons are; γ (a sliding speed) in
    its own."""
    rng = np.random.default_rng(seed)
    sx = 10.0 ** rng.uniform(-1, 1, lcs.n_x)
    su = 10.0 ** rng.uniform(-1, 1, lcs.n_u)
    sl = 10.0 ** rng.uniform(-1, 1, lcs.n_lambda)
    if one_force_unit:
        sl[np.any(lcs.D != 0, axis=0)] = 10.0 ** rng.uniform(-1, 1)
    sc = 10.0 ** rng.uniform(-1, 1, lcs.n_lambda)
    A, B, D, d, E, F, H, c = (lcs.A, lcs.B, lcs.D, lcs.d, lcs.E, lcs.F, lcs.H, lcs.c)
    new = LCS(sx[:, None] * A / sx, sx[:, None] * B / su, sx[:, None] * D / sl, sx * d,
              sc[:, None] * E / sx, sc[:, None] * F / sl, sc[:, None] * H / su, sc * c,
              dt=lcs.dt)
    return (sx, su, sl, sc), new


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weights_transform_with_the_units(pusher, seed):
    """G' = S⁻¹ G S⁻¹ entry by entry, γ's (a multiplier that moves no state) included."""
    task, lcs = pusher
    d = task.defaults
    (sx, su, sl, _), lcs2 = _units(lcs, seed)
    g = scaled_admm_weights(lcs, d.Q, d.R)
    g2 = scaled_admm_weights(lcs2, d.Q / np.outer(sx, sx), d.R / np.outer(su, su))
    s = np.concatenate([sx, sl, su])
    np.testing.assert_allclose(g2, g / s ** 2, rtol=1e-10)
    assert np.all(g > 0)  # every entry tied: the pusher's states, γ, forces and inputs


def test_weights_are_the_cost_curvature_one_step_ahead(pusher):
    """Against the formulas written out entry by entry (loops, not einsum)."""
    task, lcs = pusher
    Q, R = task.defaults.Q, task.defaults.R
    g = scaled_admm_weights(lcs, Q, R, alpha=2.0)
    n_x, n_l = lcs.n_x, lcs.n_lambda
    np.testing.assert_allclose(g[:n_x], 2.0 * np.diag(Q))
    for j in range(lcs.n_u):
        b = lcs.B[:, j]
        assert g[n_x + n_l + j] == pytest.approx(2.0 * (R[j, j] + b @ Q @ b), rel=1e-12)
    F = lcs.F
    for j in range(n_l):
        col = lcs.D[:, j]
        if np.any(col):
            assert g[n_x + j] == pytest.approx(2.0 * col @ Q @ col, rel=1e-12)
        else:  # γ: the forces it shifts, F_ij / F_ii per row with F_ii > 0
            ref = sum((F[i, j] / F[i, i]) ** 2 * (lcs.D[:, i] @ Q @ lcs.D[:, i])
                      for i in range(n_l) if F[i, i] > 0 and i != j)
            assert g[n_x + j] == pytest.approx(2.0 * ref, rel=1e-12)


def _plan(lcs, Q, R, G, x0, x_des, u_hi):
    ctrl = C3(lcs, Q, R, G, N=5, x_des=x_des, QN=Q,
              options=C3Options(projection="miqp", admm_iter=8, rho=1.0, rho_scale=1.5,
                                consensus_tolerance=None))
    ctrl.set_bounds(u_lower=-u_hi, u_upper=u_hi)
    return ctrl.solve(x0)


def test_scaled_weights_give_the_same_plan_in_any_units(pusher):
    """The pusher-box's first plan, and the same plan from its LCS in random units (factors
    0.1..10 per entry and slack row, one unit for all forces) with the scale-aware G: equal in the new units (measured
    to 1e-13; with factors 1e-2..1e2 the QP's conditioning, 1e8, shows at 1e-1); with the
    fixed G = 0.1·I the two plans differ."""
    task, lcs = pusher
    d = task.defaults
    (sx, su, sl, _), lcs2 = _units(lcs, 3, one_force_unit=True)
    Q2, R2 = d.Q / np.outer(sx, sx), d.R / np.outer(su, su)
    x0, x_des, u_hi = task.x0, d.x_goal, d.u_upper
    a = _plan(lcs, d.Q, d.R, np.diag(scaled_admm_weights(lcs, d.Q, d.R)), x0, x_des, u_hi)
    b = _plan(lcs2, Q2, R2, np.diag(scaled_admm_weights(lcs2, Q2, R2)), sx * x0, sx * x_des,
              su * u_hi)
    assert a.ok and b.ok
    np.testing.assert_allclose(b.u, a.u * su, rtol=1e-8, atol=1e-9 * np.abs(a.u * su).max())
    np.testing.assert_allclose(b.x, a.x * sx, rtol=1e-8, atol=1e-9 * np.abs(a.x * sx).max())
    np.testing.assert_allclose(b.lam, a.lam * sl, rtol=1e-8,
                               atol=1e-9 * np.abs(a.lam * sl).max())
    assert b.relative_complementarity_violation == pytest.approx(
        a.relative_complementarity_violation, rel=1e-8, abs=1e-12)
    G = 0.1 * np.eye(lcs.n_x + lcs.n_lambda + lcs.n_u)
    fa = _plan(lcs, d.Q, d.R, G, x0, x_des, u_hi)
    fb = _plan(lcs2, Q2, R2, G, sx * x0, sx * x_des, su * u_hi)
    assert np.abs(fb.u / su - fa.u).max() > 1e-3 * np.abs(fa.u).max()


def test_relative_complementarity_violation_by_hand():
    """One knot, two pairs: slack in force units s_i / F_ii against λ_i; the largest |min|
    over the largest force; rows with F_ii = 0 left out; units of each row do not matter."""
    A, B, D, d = np.eye(1), np.ones((1, 1)), np.zeros((1, 3)), np.zeros(1)
    E = np.array([[1.0], [0.0], [0.0]])
    F = np.array([[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [1.0, 1.0, 0.0]])
    H, c = np.zeros((3, 1)), np.array([0.0, -2.0, 5.0])
    lcs = LCS(A, B, D, d, E, F, H, c, dt=0.1)
    x, u, lam = np.array([[1.0]]), np.zeros((1, 1)), np.array([[3.0, 0.25, -7.0]])
    # pair 0: s = 1 + 6 = 7 -> 3.5 N, min(3, 3.5) = 3; pair 1: s = -2 + 1 = -1 -> -0.25 N,
    # min(0.25, -0.25) = -0.25; pair 2 (F_22 = 0) out; largest force 3
    assert relative_complementarity_violation(lcs, x, u, lam) == pytest.approx(3.0 / 3.0)
    lam_ok = np.array([[0.0, 0.5, 0.0]])  # pair 0: s = 1 > 0, λ = 0; pair 1: s = 0, λ > 0
    assert relative_complementarity_violation(lcs, x, u, lam_ok) == pytest.approx(0.0)
    rows = np.array([10.0, 0.01, 3.0])  # each slack row in other units: the same ratio
    lcs2 = LCS(A, B, D, d, rows[:, None] * E, rows[:, None] * F, rows[:, None] * H, rows * c,
               dt=0.1)
    assert relative_complementarity_violation(lcs2, x, u, lam) == pytest.approx(1.0)
    # forces and slacks at round-off level: judged against the micronewton floor, not 0
    closed = LCS(A, B, D, d, E, F, H, np.zeros(3), dt=0.1)
    noise = np.array([[0.0, -1e-12, 0.0]])
    assert relative_complementarity_violation(closed, np.array([[0.0]]), u, noise) == \
        pytest.approx(1e-6)
    # ... but a penetration with no force is a violation
    assert relative_complementarity_violation(lcs, np.array([[0.0]]), u, 0 * noise) == \
        pytest.approx(0.5 / 1e-6)


def test_bad_arguments_are_named(pusher):
    task, lcs = pusher
    d = task.defaults
    with pytest.raises(ValueError, match="alpha"):
        scaled_admm_weights(lcs, d.Q, d.R, alpha=0.0)
    with pytest.raises(ValueError, match="alpha"):
        scaled_admm_weights(lcs, d.Q, d.R, alpha=True)
    with pytest.raises(ValueError, match="Q must have shape"):
        scaled_admm_weights(lcs, d.Q[:2, :2], d.R)
    with pytest.raises(TypeError, match="lcs"):
        scaled_admm_weights("lcs", d.Q, d.R)


# ---------------------------------------------------------------------------- task files
def _task(tmp_path, planning: str):
    (tmp_path / "pusher_box.xml").write_text((ROOT / "examples" / "own_robot" /
                                              "pusher_box.xml").read_text())
    text = PUSHER.read_text().replace("cost:", f"planning: {planning}\ncost:")
    (tmp_path / "t.yaml").write_text(text)
    return load_task_file(tmp_path / "t.yaml")


def test_task_file_G_scaled_is_the_scaled_weights_and_U_follows(tmp_path, pusher):
    task = _task(tmp_path, "{G: scaled}")
    d, plant = task.defaults, task.plant
    ref = scaled_admm_weights(plant.lcs(task.x0, np.zeros(plant.n_u)), d.Q, d.R)
    np.testing.assert_allclose(np.diag(d.G), ref, rtol=1e-12)
    np.testing.assert_array_equal(d.U, d.G)
    assert np.count_nonzero(d.G - np.diag(np.diag(d.G))) == 0
    # a U block the file names replaces G's weights there only
    task = _task(tmp_path, "{G: scaled, U: {lambda: 2.0}}")
    n_x, n_l = plant.n_x, plant.n_lambda
    u = np.diag(task.defaults.U)
    np.testing.assert_allclose(u[n_x:n_x + n_l], 2.0)
    np.testing.assert_allclose(u[:n_x], ref[:n_x], rtol=1e-12)
    np.testing.assert_allclose(u[n_x + n_l:], ref[n_x + n_l:], rtol=1e-12)
    # the default stays G = U = 0.1·I
    assert np.all(np.diag(pusher[0].defaults.G) == 0.1)


def test_task_file_G_must_be_a_number_or_scaled(tmp_path):
    from plants import TaskFileError

    with pytest.raises(TaskFileError, match="planning.G: must be a number or 'scaled'") as e:
        _task(tmp_path, "{G: auto}")
    assert e.value.line == 8  # the planning: line
    with pytest.raises(TaskFileError, match="planning.G: must be > 0"):
        _task(tmp_path, "{G: -1}")


# ---------------------------------------------------------------------------- a larger robot
def _large(tmp_path, planning: str):
    data = ROOT / "tests" / "data"
    (tmp_path / "pusher_box_large.xml").write_text((data / "pusher_box_large.xml").read_text())
    text = (data / "pusher_box_large.yaml").read_text().replace(
        "cost:\n", f"planning: {planning}\ncost:\n  R: 1.0e-8\n")
    (tmp_path / "t.yaml").write_text(text)
    return load_task_file(tmp_path / "t.yaml")


def test_ten_times_larger_pusher_box_first_plan_converges_only_with_scaled_weights(tmp_path):
    """The pusher-box 10x larger (2 m, 500 kg box; a 1 t pusher with 20 kN), its input cost
    written for its forces (R = 1e-8 per N²): with G = 0.1·I the ADMM diverges from the first
    plan (NOT_CONVERGED; measured consensus residual 0.54, forces of 29 N against a 4.9 kN box,
    relative complementarity violation 3.8e3); with the scale-aware G it converges (measured
    0.06; forces of 7.9 kN, relative complementarity violation 0.45, the pusher-box's range).
    The closed loops of both fail (docs/c3.md, "Scale-aware ADMM weights")."""
    from c3mpc.result import C3Status
    from c3mpc.tasks import build_controller

    fixed, scaled = _large(tmp_path, "{G: 0.1}"), _large(tmp_path, "{G: scaled}")
    a = build_controller(fixed.plant, x0=fixed.x0).solve(fixed.x0)
    b = build_controller(scaled.plant, x0=scaled.x0).solve(scaled.x0)
    assert a.status is C3Status.NOT_CONVERGED and a.consensus_residual > 0.3
    assert a.relative_complementarity_violation > 10.0
    assert b.status is C3Status.SOLVED and b.consensus_residual < 0.3
    assert b.relative_complementarity_violation < 1.0
    assert np.abs(b.lam).max() > 1e3  # forces of the box's weight (4.9 kN), not tens of N
