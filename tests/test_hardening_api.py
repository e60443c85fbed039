"""No silent wrong answers and no raw builtin errors at the public API (issue 26, parts 1-2).

Each test is one of the issue's measured defects: bad input gets a ValueError/TypeError that
names the argument, what was expected and what was given; no result claims success with
non-finite content; solver exceptions become statuses.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from c3mpc import C3, C3Options
from c3mpc.errors import C3Error
from c3mpc.result import C3Status
from estimators import BallFilter, BallTrackerOptions
from lcs import LCS, solve_lcp
from lcs.errors import LCSError
from lcs.lcp import LCPStatus, solve_lcp_batch


def small_lcs(**kw) -> LCS:
    """A 2-state cart on a soft wall: x = [p, v], one input, one contact."""
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([[0.0], [0.1]])
    D = np.array([[0.0], [0.1]])
    E = np.array([[1.0, 0.0]])
    args = dict(A=A, B=B, D=D, d=np.zeros(2), E=E, F=np.eye(1), H=np.zeros((1, 1)),
                c=np.array([0.5]), dt=0.1)
    args.update(kw)
    return LCS(**args)


def controller(**opts) -> C3:
    return C3(small_lcs(), np.eye(2), np.eye(1), np.eye(4), np.eye(4), N=5,
              options=C3Options(projection="lcp", **opts))


# ------------------------------------------------------------ strict types
@pytest.mark.parametrize("field, value", [
    ("scale_lcs", "false"), ("warm_start", 1), ("end_on_qp_step", "yes"), ("osqp_polish", None),
    ("rho", "1.0"), ("rho_scale", True), ("admm_iter", 10.0), ("admm_iter", "10"),
    ("discount", 1 + 0j), ("big_m", np.complex128(3)),
])
def test_options_reject_strings_booleans_and_complex(field, value):
    with pytest.raises(TypeError, match=f"C3Options.{field} must be") as info:
        C3Options(**{field: value})
    assert repr(value)[:5] in str(info.value) or type(value).__name__ in str(info.value)
    assert getattr(info.value, "field", None) == field


def test_scale_lcs_string_false_no_longer_plans_with_the_scaled_lcs():
    with pytest.raises(C3Error, match="scale_lcs must be a bool"):
        C3Options(scale_lcs="false")
    assert C3Options(scale_lcs=False).scale_lcs is False


@pytest.mark.parametrize("field, value, message", [
    ("rho", 10**400, "C3Options.rho must be a real number within float64 range"),
    ("admm_iter", 2**70, "C3Options.admm_iter must be an integer >= 1 and <= 2147483647, "
                         "got int with 22 digits"),
    ("osqp_max_iter", 2**40, "C3Options.osqp_max_iter must be an integer >= 1"),
    ("rho", float("nan"), "C3Options.rho must be a real number, got NaN"),
    ("discount", float("inf"), "C3Options.discount must be finite"),
])
def test_options_out_of_range_numbers_are_clear_errors(field, value, message):
    with pytest.raises(ValueError, match=message):
        C3Options(**{field: value})


def test_complex_arrays_are_rejected_not_truncated():
    with pytest.raises(TypeError, match="A must be an array of real numbers, got complex"):
        small_lcs(A=np.eye(2) + 1e-3j)
    with pytest.raises(TypeError, match="q must be an array of real numbers, got complex"):
        solve_lcp(np.eye(2), np.array([1.0, -1.0 + 2j]))
    ctrl = controller()
    with pytest.raises(TypeError, match="x0 must be an array of real numbers"):
        ctrl.solve(np.array([1.0, 0.0], dtype=complex))


def test_strings_and_booleans_in_arrays_are_rejected():
    with pytest.raises(TypeError, match="q must be an array of real numbers, got strings"):
        solve_lcp(np.eye(2), ["1.0", "2.0"])
    with pytest.raises(TypeError, match="F must be an array of real numbers, got booleans"):
        solve_lcp(np.eye(2, dtype=bool), [1.0, 2.0])
    with pytest.raises(TypeError, match="entry \\(1,\\) is NoneType"):
        small_lcs(d=[0.0, None])


def test_x0_of_shape_2x2_is_not_flattened():
    ctrl = C3(small_lcs(A=np.eye(4), B=np.zeros((4, 1)), D=np.zeros((4, 1)), d=np.zeros(4),
                        E=np.zeros((1, 4))), np.eye(4), np.eye(1), np.eye(6), np.eye(6), N=3,
              options=C3Options(projection="lcp"))
    with pytest.raises(ValueError, match=r"x0 must be a vector of shape \(4,\), got shape "
                                         r"\(2, 2\)"):
        ctrl.solve(np.ones((2, 2)))
    assert ctrl.solve(np.ones((4, 1))).status is C3Status.SOLVED  # a column is a vector


@pytest.mark.parametrize("kw, message", [
    (dict(dt="abc"), "dt must be a real number, got str 'abc'"),
    (dict(dt=True), "dt must be a real number, got bool"),
    (dict(dt=0.0), "dt must be a positive real number, got 0.0"),
    (dict(dt=10**400), "dt must be a real number within float64 range"),
    (dict(lambda_scale=float("inf")), "lambda_scale must be finite"),
])
def test_lcs_scalars_are_named(kw, message):
    with pytest.raises((ValueError, TypeError), match=message) as info:
        small_lcs(**kw)
    assert isinstance(info.value, LCSError)


def test_empty_per_knot_stack_is_a_clear_error_not_an_index_error():
    with pytest.raises(ValueError, match="A: a time-varying LCS needs at least one knot"):
        small_lcs(A=np.zeros((0, 2, 2)))
    with pytest.raises(ValueError, match="c: a time-varying LCS needs at least one knot"):
        small_lcs(c=np.zeros((0, 3)))
    ctrl_args = (small_lcs(), np.eye(2), np.eye(1), np.eye(4), np.eye(4))
    with pytest.raises(ValueError, match="Q per knot must have shape"):
        C3(ctrl_args[0], np.zeros((0, 2, 2)), *ctrl_args[2:], N=3)


def test_python_ints_beyond_float64_are_named():
    with pytest.raises(ValueError, match=r"q entry \(0,\) is outside float64 range"):
        solve_lcp(np.eye(1), [10**400])
    with pytest.raises(ValueError, match="max_iterations must be an integer >= 1 and <= "):
        solve_lcp(np.eye(1), [1.0], max_iterations=2**70)
    # an int that fits a float is a number like any other
    assert solve_lcp(np.eye(1), [-(2**70)]).z[0] == pytest.approx(2.0**70)


@pytest.mark.parametrize("tol", ["1e-9", None, True])
def test_lcp_tol_must_be_a_number(tol):
    with pytest.raises(TypeError, match="tol must be a real number, got"):
        solve_lcp(np.eye(1), [1.0], tol=tol)


def test_memory_is_checked_before_allocating():
    with pytest.raises(ValueError, match=r"N=200000.*would need about [\d.]+ TiB of memory"):
        C3(small_lcs(), np.eye(2), np.eye(1), np.eye(4), np.eye(4), N=200000)


# ------------------------------------------------------------ results
def test_lcp_with_infinite_tol_is_rejected_not_solved():
    with pytest.raises(ValueError, match="tol must be finite"):
        solve_lcp(-np.eye(2), -np.ones(2), tol=np.inf)
    with pytest.raises(ValueError, match="tol must be"):
        solve_lcp_batch(-np.eye(2), -np.ones((1, 2)), tol=2.0)
    with pytest.raises(ValueError, match="tol must be"):
        solve_lcp(-np.eye(2), -np.ones(2), tol=-1e-9)
    sol = solve_lcp(-np.eye(2), -np.ones(2))  # no solution: a failure status, NaN arrays
    assert not sol.found and np.isnan(sol.z).all() and np.isnan(sol.w).all()


def test_inaccurate_lcp_carries_its_basis_and_never_claims_success():
    """INACCURATE keeps the basis found (documented: the C3 lcp projection may accept it);
    every other failure is NaN. The residual tells the caller how good the basis is."""
    rng = np.random.default_rng(0)
    M = rng.normal(size=(8, 8))
    F = M @ M.T + 0.1 * np.eye(8)
    q = rng.normal(size=8)
    sol = solve_lcp(F, q, tol=1e-300)
    assert sol.status is LCPStatus.INACCURATE and not sol.found
    assert 1e-300 < sol.residual < 1e-12
    natural = np.abs(np.minimum(sol.z, F @ sol.z + q)).max() / max(1.0, np.abs(q).max())
    assert natural == pytest.approx(sol.residual, rel=1e-6, abs=1e-18)
    assert np.allclose(sol.w, F @ sol.z + q)


@pytest.mark.parametrize("scale", [1e154, 1e200])
def test_huge_x0_gives_a_failure_status_not_success_with_nan_cost(scale):
    ctrl = controller()
    res = ctrl.solve([scale, 0.0])
    assert res.status is C3Status.FAILED and not res.ok
    assert "non-finite" in res.message
    # a finite solve still works afterwards, and success always comes with finite content
    good = ctrl.solve([1.0, 0.0])
    assert good.ok and np.isfinite(good.cost) and np.isfinite(good.x).all()


@pytest.mark.parametrize("x0", [[1e31, 0.0], [1e40, 1e40]])
def test_osqp_exception_becomes_a_qp_failed_status(x0):
    ctrl = controller()
    ctrl.set_bounds(x_lower=[-10.0, -10.0], x_upper=[10.0, 10.0])
    first = ctrl.solve(x0)  # no earlier plan: NaN arrays
    assert first.status is C3Status.QP_FAILED and "raised" in first.message
    assert np.isnan(first.u).all() and not first.fallback
    assert ctrl.solve([1.0, 0.0]).status is C3Status.SOLVED


@pytest.mark.parametrize("kw, message", [
    (dict(x_lower=[np.nan, 0.0]), "x_lower has a NaN entry at index 0"),
    (dict(x_upper=[1.0, np.nan]), "x_upper has a NaN entry at index 1"),
    (dict(x_lower=[np.inf, -1.0]), "state bounds at index 0 are empty: lower=inf"),
    (dict(u_upper=[-np.inf]), "input bounds at index 0 are empty"),
    (dict(x_lower=[2.0, 0.0], x_upper=[1.0, 1.0]), "lower=2.0, upper=1.0"),
    (dict(x_lower=[1.0, 2.0, 3.0]), r"x_lower must be a scalar or have shape \(2,\), got "
                                    r"shape \(3,\)"),
    (dict(lam_upper="1"), "lam_upper must be a real-valued array-like, got str"),
])
def test_set_bounds_rejects_what_it_used_to_drop(kw, message):
    ctrl = controller()
    with pytest.raises((ValueError, TypeError), match=message):
        ctrl.set_bounds(**kw)
    assert ctrl._constraints == []  # nothing half-added


def test_set_bounds_scalar_and_infinite_entries_still_work():
    ctrl = controller()
    ctrl.set_bounds(x_lower=-5.0, x_upper=[np.inf, 5.0])
    con = ctrl._constraints[0]
    assert np.array_equal(con.lower, [-5.0, -5.0]) and np.array_equal(con.upper, [np.inf, 5.0])
    res = ctrl.solve([1.0, 0.0])
    assert res.ok and np.all(res.x[1:] >= -5.0 - 1e-6) and np.all(res.x[1:, 1] <= 5.0 + 1e-6)


def test_linear_constraint_bounds_of_the_wrong_length_are_named():
    ctrl = controller()
    with pytest.raises(ValueError, match=r"lower must be a scalar or have shape \(1,\)"):
        ctrl.add_linear_constraint(np.ones((1, 2)), [0.0, 1.0], 1.0)


# ------------------------------------------------------------ options files
def test_yaml_scientific_int_is_one_line_with_file_and_line(tmp_path):
    path = tmp_path / "c3.yaml"
    path.write_text("projection: lcp\nrho: 1e-3\nadmm_iter: 1e3\n")
    with pytest.raises(ValueError) as info:
        C3Options.from_file(path)
    msg = str(info.value)
    assert "\n" not in msg and f"{path}, line 3" in msg and "admm_iter must be an integer" in msg
    path.write_text("projection: lcp\nrho: 1e-3\n")  # 1e-3 (YAML 1.1: a string) is a float
    assert C3Options.from_file(path).rho == pytest.approx(1e-3)


def test_toml_bad_value_names_the_line(tmp_path):
    path = tmp_path / "c3.toml"
    path.write_text("projection = 'lcp'\n\nscale_lcs = 'false'\n")
    with pytest.raises(ValueError, match=r"c3\.toml, line 3: C3Options\.scale_lcs must be a "
                                         r"bool"):
        C3Options.from_file(path)


def test_yaml_alias_bomb_options_file_fails_fast(tmp_path):
    levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(levels) + "\n")
    with pytest.raises(ValueError, match="alias"):
        C3Options.from_file(path)


# ------------------------------------------------------------ estimators
@pytest.mark.parametrize("value", ["no", 0, None])
def test_estimator_rolling_must_be_a_bool(value):
    with pytest.raises(TypeError, match="BallTrackerOptions.rolling must be a bool"):
        BallTrackerOptions(rolling=value)


def test_ball_filter_names_must_match_positions():
    f = BallFilter()
    P = np.array([[0.0, 0.0, 0.03], [0.001, 0.0, 0.03], [0.0, 0.001, 0.03]])
    with pytest.raises(ValueError, match="3 position\\(s\\), got 2 name\\(s\\)"):
        f.step(P, 0.0, names=("left", "right"))
    state = f.step(P, 0.0, names=("a", "b", "c"))  # the failed call did not consume t = 0
    assert np.allclose(state.position, P.mean(axis=0), atol=1e-3)


# ------------------------------------------------------------ closed loop
@pytest.mark.parametrize("kw, message", [
    (dict(noise_std=float("nan")), "noise_std must be a real number, got NaN"),
    (dict(noise_std="0.1"), "noise_std must be a real number, got str"),
    (dict(steps=True), "steps must be an integer, got bool"),
    (dict(replan_every=0), "replan_every must be an integer >= 1, got 0"),
    (dict(x0=np.zeros((2, 2))), r"x0 must be a vector of shape \(4,\)"),
])
def test_run_closed_loop_rejects_what_it_used_to_ignore(kw, message):
    from c3mpc import run_closed_loop
    from c3mpc.tasks import TASKS, build_controller

    plant = TASKS["cartpole-softwalls"].plant()
    ctrl = build_controller(plant, C3Options(projection="lcp"), x0=plant.defaults.x0)
    args = dict(x0=plant.defaults.x0, steps=3)
    args.update(kw)
    with pytest.raises((ValueError, TypeError), match=message):
        run_closed_loop(plant, ctrl, args.pop("x0"), args.pop("steps"), **args)


def test_osqp_success_with_a_plan_that_violates_the_bounds_is_qp_failed():
    """OSQP reports SOLVED for |x0| = 1e31 against state bounds of 10 (data beyond what it
    represents); the plan broke the bounds by 1e31. The plan is now checked."""
    ctrl = controller(qp_solver="osqp")
    ctrl.set_bounds(x_lower=[-10.0, -10.0], x_upper=[10.0, 10.0])
    assert ctrl.solve([1.0, 0.0]).status is C3Status.SOLVED  # the OSQP workspaces exist now
    res = ctrl.solve([1e31, 0.0])  # updated in place: OSQP says solved
    assert res.status is C3Status.QP_FAILED and "violates a linear constraint" in res.message
    assert res.fallback and np.all(np.abs(res.x) <= 10.0 + 1e-5)
    ok = ctrl.solve([9.0, 5.0])  # near the bound, feasible: solved and within the bounds
    assert ok.status is C3Status.SOLVED
    assert np.all(np.abs(ok.x[1:]) <= 10.0 + 1e-5)


@pytest.mark.parametrize("kw, message", [
    (dict(x0=["1.0", "0.0"]), "x0 must be an array of real numbers, got strings"),
    (dict(x0=np.array([1.0, 0.0], dtype=complex)), "x0 must be an array of real numbers, got "
                                                   "complex"),
    (dict(M="1000"), "M \\(the big-M constant\\) must be a real number, got str"),
    (dict(N=True), "N must be an integer, got bool"),
    (dict(x_lower=[True, False]), "x_lower must be an array of real numbers, got booleans"),
])
def test_miqp_baseline_does_not_coerce(kw, message):
    from c3mpc import solve_miqp_mpc

    args = dict(N=3, x0=[1.0, 0.0])
    args.update(kw)
    with pytest.raises(ValueError, match=message):
        solve_miqp_mpc(small_lcs(), np.eye(2), np.eye(1), **args)


@pytest.mark.parametrize("kw, message", [
    (dict(noise_std="0.001"), "FrankaBallOptions.noise_std must be float, got str"),
    (dict(radius=True), "FrankaBallOptions.radius must be float, got bool"),
    (dict(horizon=5.0), "FrankaBallOptions.horizon must be an integer, got float 5.0"),
    (dict(seed="1"), "FrankaBallOptions.seed must be int, got str"),
    (dict(duration=float("nan")), "FrankaBallOptions.duration must be float \\| None"),
    (dict(stop_after_lap="no"), "FrankaBallOptions.stop_after_lap must be bool, got str"),
    (dict(radius=1 + 0j), "FrankaBallOptions.radius must be float, got complex"),
])
def test_franka_ball_options_do_not_coerce(kw, message):
    from c3mpc.tasks.franka_ball import FrankaBallOptions

    with pytest.raises(ValueError, match=message):
        FrankaBallOptions(**kw)


def test_franka_ball_options_normalise_exact_values():
    from c3mpc.tasks.franka_ball import FrankaBallOptions

    o = FrankaBallOptions(radius=1, center=np.array([0.5, 0.1]))
    assert type(o.radius) is float and o.radius == 1.0 and o.center == (0.5, 0.1)


def test_estimator_yaml_is_guarded_and_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "tracker.yaml"
    bad.write_text("radius: 0.03\nfilter: [kalman\n")
    with pytest.raises(ValueError, match=r"tracker\.yaml, line 3: not valid YAML"):
        BallTrackerOptions.from_yaml(bad)
    levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(levels) + "\n")
    with pytest.raises(ValueError, match="alias"):
        BallTrackerOptions.from_yaml(bomb)


def test_lcs_factory_rejects_complex_linearizations_and_string_dt():
    from lcs.factory import ContactData, SmoothLinearization, build_lcs_matrices

    n = 2
    lin = SmoothLinearization(Minv=np.eye(n), Jf_q=np.zeros((n, n)), Jf_v=np.zeros((n, n)),
                              Jf_u=np.eye(n), d_v=np.zeros(n), K_q=np.eye(n),
                              K_v=np.eye(n), q_c=np.zeros(n), N_plus=np.eye(n),
                              q_star=np.zeros(n))
    contacts = ContactData(phi=np.zeros(1), J_n=np.ones((1, n)), J_t=np.ones((2, n)),
                           mu=np.ones(1), num_edges=np.array([2]))
    assert len(build_lcs_matrices(lin, contacts, dt=0.01)) == 8
    with pytest.raises(TypeError, match="dt must be a real number, got str"):
        build_lcs_matrices(lin, contacts, dt="0.01")
    bad = dataclasses.replace(lin, Jf_u=np.eye(n) * (1 + 1e-3j))
    with pytest.raises(TypeError, match="SmoothLinearization.Jf_u must hold real numbers"):
        build_lcs_matrices(bad, contacts, dt=0.01)
