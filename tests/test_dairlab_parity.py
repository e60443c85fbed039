"""Parity with DAIRLab/c3: their option files, their Solve semantics, their core tests.

Their core tests (``core/test/core_test.cc``) run on a cart-pole fixture
(``core/test/c3_cartpole_problem.hpp``); the fixture is re-stated below as data (physical
parameters, x0, the option file ``tests/data/dairlab/c3_cartpole_options.yaml`` copied from
them) and the properties they assert are asserted here with our API. Their semantics are
checked against ``tests/_dairlab_reference.py``, an independent full-space re-statement of
their ``C3::Solve`` (dense KKT QP steps, enumerated MIQP projection), not against our code.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from c3mpc import C3, C3Options
from c3mpc.dairlab import DairlabOptionError, load_dairlab_config, load_dairlab_factory_options
from c3mpc.result import C3Status
from lcs import LCS, solve_lcp

sys.path.insert(0, str(Path(__file__).parent))
from _dairlab_reference import reference_solve  # noqa: E402

DATA = Path(__file__).parent / "data" / "dairlab"

# ---------------------------------------------------------------- their cart-pole fixture (data)
#: C3CartpoleProblem's constructor defaults (mp, mc, len_p, len_com, d1, d2, ks, g, N, dt).
FIXTURE = dict(mp=0.411, mc=0.978, len_p=0.6, len_com=0.4267, d1=0.35, d2=-0.35, ks=100.0,
               g=9.81, N=5, dt=0.01)
#: Their x0 ("initial state with contact to right wall").
X0 = np.array([0.1, -0.5, 0.5, -0.4])


def fixture_lcs() -> LCS:
    """The fixture's LCS: A = I + T_s A_c, B = T_s B_c, D = T_s D_c, E, F = I/ks, c = [d1, -d2]."""
    p = FIXTURE
    mp, mc, lp, lc, g, ts = p["mp"], p["mc"], p["len_p"], p["len_com"], p["g"], p["dt"]
    Ac = np.array([[0, 0, 1, 0], [0, 0, 0, 1], [0, g * mp / mc, 0, 0],
                   [0, g * (mc + mp) / (lc * mc), 0, 0]])
    Bc = np.array([[0], [0], [1 / mc], [1 / (lc * mc)]])
    a = -1 / mc + lp / (mc * lc)
    b = -1 / (mc * lc) + lp * (mc + mp) / (mc * mp * lc * lc)
    Dc = np.array([[0, 0], [0, 0], [a, -a], [b, -b]])
    E = np.array([[-1, lp, 0, 0], [1, -lp, 0, 0]])
    return LCS(np.eye(4) + ts * Ac, ts * Bc, ts * Dc, np.zeros(4), E, np.eye(2) / p["ks"],
               np.zeros((2, 1)), np.array([p["d1"], -p["d2"]]), dt=ts)


@pytest.fixture(scope="module")
def problem():
    """(lcs, cfg, Q list N+1 with the Riccati terminal cost, R, G, U, x_des) as in theirs."""
    lcs = fixture_lcs()
    cfg = load_dairlab_config(DATA / "c3_cartpole_options.yaml")
    N = FIXTURE["N"]
    QN = scipy.linalg.solve_discrete_are(lcs.A, lcs.B, cfg.Q, cfg.R)
    Qs = np.stack([cfg.Q] * N + [QN])
    return dict(lcs=lcs, cfg=cfg, Q=Qs, R=np.stack([cfg.R] * N), G=np.stack([cfg.G] * N),
                U=np.stack([cfg.U] * N), x_des=np.zeros((N + 1, 4)), N=N)


def their_controller(pb, **changes) -> C3:
    opts = pb["cfg"].options.replace(num_threads=1, **changes)
    return C3(pb["lcs"], pb["Q"], pb["R"][0], pb["G"][0], pb["U"][0], N=pb["N"],
              x_des=pb["x_des"], options=opts)


def reference(pb, x0, **kw):
    o = pb["cfg"].options
    args = dict(admm_iter=o.admm_iter, rho_scale=o.rho_scale,
                delta_option=1 if o.delta_init == "x0" else 0, scale_lcs=o.scale_lcs)
    args.update(kw)
    return reference_solve(pb["lcs"], pb["Q"], pb["R"], pb["G"], pb["U"], pb["x_des"], x0,
                           **args)


# ---------------------------------------------------------------- the fixture and the loader
def test_fixture_is_our_cartpole_plant_with_their_wall_stiffness(problem):
    from plants import load_plant

    ours = load_plant("cartpole-softwalls", k_right=100.0, k_left=100.0).lcs()
    for name in ("A", "B", "D", "d", "E", "F", "H", "c"):
        np.testing.assert_allclose(getattr(problem["lcs"], name), getattr(ours, name),
                                   rtol=1e-12, atol=1e-15, err_msg=name)


def test_c3_options_file_maps_every_field(problem):
    cfg = problem["cfg"]
    o = cfg.options
    # values written in the file
    assert (o.warm_start, o.end_on_qp_step, o.scale_lcs) == (False, True, False)
    assert (o.num_threads, o.delta_init, o.big_m, o.admm_iter) == (5, "zeros", 1000.0, 10)
    assert (o.discount, o.rho, o.rho_scale) == (1.0, 1.0, 2.0)
    # their defaults for what the file leaves out, and their semantics switched on
    assert o.penalize_input_change is True and o.lambda0_from_lcp is True
    assert (o.discount_admm_weights, o.projection_plan_states, o.on_qp_failure) == (
        False, "qp", "hold")
    np.testing.assert_array_equal(cfg.Q, np.diag([10.0, 2, 1, 1]))
    np.testing.assert_array_equal(cfg.R, [[1.0]])
    np.testing.assert_array_equal(cfg.G, np.diag([0.1] * 6 + [0.0]))
    np.testing.assert_array_equal(cfg.U, np.diag([1000.0] * 4 + [1, 1, 0]))
    assert cfg.N is None and cfg.projection_type is None and cfg.gamma == 1.0
    assert C3Options.from_dairlab_yaml(DATA / "c3_cartpole_options.yaml") == o


def test_controller_files_load_unchanged():
    cp = load_dairlab_config(DATA / "c3_controller_cartpole_options.yaml")
    assert (cp.projection_type, cp.options.projection, cp.N, cp.dt) == ("MIQP", "miqp", 5, 0.01)
    assert cp.lcs_factory.contact_model == "frictionless_spring"
    assert cp.lcs_factory.spring_stiffness == 100 and cp.lcs_factory.num_lambda() == 2
    plus = load_dairlab_config(DATA / "c3Plus_controller_cartpole_options.yaml")
    assert plus.options.projection == "c3plus"
    # C3+: z̃ = [x; λ; u; η], η weights last (g_eta, u_eta)
    np.testing.assert_array_equal(np.diag(plus.G), [0, 0, 0, 0, 1, 1, 0, 1, 1])
    np.testing.assert_array_equal(np.diag(plus.U), [0, 0, 0, 0, 1, 1, 0, 1e4, 1e4])
    piv = load_dairlab_config(DATA / "c3_controller_pivoting_options.yaml")
    f = piv.lcs_factory
    assert f.contact_model == "stewart_trinkle" and f.num_lambda() == 12
    assert [(p.body_A, p.body_B, p.mu, p.num_friction_directions)
            for p in f.contact_pair_configs] == [("cube", "left_finger", 0.1, 1),
                                                 ("cube", "right_finger", 0.1, 1),
                                                 ("cube", "platform", 0.1, 1)]
    assert piv.options.penalize_input_change is False  # the file says so
    fac = load_dairlab_factory_options(DATA / "lcs_factory_pivoting_options.yaml")
    assert fac == f.__class__(**{**f.__dict__, "num_friction_directions": 1, "mu": 0.1,
                                 "planar_normal_direction": (0.0, 1.0, 0.0)})


def _write(tmp_path, text):
    p = tmp_path / "opts.yaml"
    p.write_text(text)
    return p


def test_unknown_key_is_rejected_with_its_line(tmp_path):
    text = (DATA / "c3_controller_cartpole_options.yaml").read_text()
    text = text.replace("  admm_iter: 10", "  admm_iters: 10")
    line = text.splitlines().index("  admm_iters: 10") + 1
    with pytest.raises(DairlabOptionError, match=r"did you mean 'admm_iter'") as e:
        load_dairlab_config(_write(tmp_path, text))
    assert e.value.line == line and e.value.key == "c3_options.admm_iters"
    assert f"opts.yaml:{line}:" in str(e.value)


@pytest.mark.parametrize("old,new,match", [
    ("  warm_start: false", "  warm_start: 0", "true or false"),
    ("  admm_iter: 10", "  admm_iter: 2.5", "an integer"),
    ("  q_vector: [ 10, 2, 1, 1 ]", "  q_vector: [ 10, two, 1, 1 ]", "list of numbers"),
    ("  gamma: 1.0", "  gamma: null", "gamma is required"),
    ("quaternion_weight: 0.0", "quaternion_weight: -1", "quaternion_weight must be >= 0"),
    ("  g_x: [ 0.1, 0.1, 0.1, 0.1 ]", "  g_x: [ 0.1, 0.1, 0.1 ]", "g_x has 3 entries"),
    ('projection_type: "MIQP"', 'projection_type: "QP"', "anitescu"),
    ("  spring_stiffness: 100", "  spring_stiffness: 0", "spring_stiffness must be > 0"),
])
def test_bad_values_are_rejected_with_their_line(tmp_path, old, new, match):
    text = (DATA / "c3_controller_cartpole_options.yaml").read_text()
    assert old in text
    text = text.replace(old, new)
    with pytest.raises(DairlabOptionError, match=match) as e:
        load_dairlab_config(_write(tmp_path, text))
    assert e.value.line == [i for i, t in enumerate(text.splitlines(), 1) if new in t][0]


def test_quaternion_weights_map_and_need_the_quaternion_indices(tmp_path, problem):
    text = (DATA / "c3_controller_cartpole_options.yaml").read_text()
    text = text.replace("quaternion_weight: 0.0", "quaternion_weight: 1000").replace(
        "quaternion_regularizer_fraction: 0.0", "quaternion_regularizer_fraction: 0.5")
    cfg = load_dairlab_config(_write(tmp_path, text))
    assert (cfg.options.quaternion_weight, cfg.options.quaternion_regularizer_fraction) == (
        1000.0, 0.5)
    with pytest.raises(ValueError, match="needs quaternion_indices"):
        cfg.make_controller(problem["lcs"])
    ctrl = cfg.make_controller(problem["lcs"], quaternion_indices=(0,))
    assert ctrl.options.quaternion_indices == (0,)


# ---------------------------------------------------------------- their Solve, option by option
@pytest.mark.parametrize("scale_lcs", [False, True])
def test_their_semantics_match_the_reference_over_two_solves(problem, scale_lcs):
    """penalize_input_change (u_prev from the first solve), λ_0 from the LCP, scale_lcs."""
    ctrl = their_controller(problem, scale_lcs=scale_lcs)
    ref = reference(problem, X0, scale_lcs=scale_lcs)
    res = ctrl.solve(X0)
    np.testing.assert_allclose(res.u, ref["u_qp"], atol=1e-8)
    np.testing.assert_allclose(res.x, ref["x_qp"], atol=1e-8)
    np.testing.assert_allclose(res.lam, ref["lam_qp"], atol=1e-7)
    x1 = problem["lcs"].step(X0, res.u[0])[0]
    ref2 = reference(problem, x1, scale_lcs=scale_lcs, u_prev=ref["u_final"])
    res2 = ctrl.solve(x1)
    np.testing.assert_allclose(res2.u, ref2["u_qp"], atol=1e-8)
    # with their options the sign of u_0 depends on scale_lcs in theirs as in ours
    assert np.sign(res.u[0, 0]) == (-1 if scale_lcs else 1)


def test_scale_lcs_is_a_change_of_units_of_lambda(problem):
    """Why u_0 flips sign with scale_lcs: G and U weigh the scaled λ' = λ/s, i.e. the physical
    λ with G_λ/s², U_λ/s² (s = ‖A‖_F/‖D‖_F ≈ 15.8 here). Multiplying their λ blocks by s²
    gives back exactly the unscaled plan; the same holds in DAIRLab/c3, which plans with the
    same scaled LCS and the same weights."""
    lcs = problem["lcs"]
    s = np.linalg.norm(lcs.A) / np.linalg.norm(lcs.D)
    assert s == pytest.approx(lcs.scaled().lambda_scale)
    lam = slice(4, 6)
    G, U = problem["G"][0].copy(), problem["U"][0].copy()
    G[lam, lam] *= s**2
    U[lam, lam] *= s**2
    opts = problem["cfg"].options.replace(num_threads=1, penalize_input_change=False)
    plain = C3(lcs, problem["Q"], problem["R"][0], problem["G"][0], problem["U"][0],
               N=problem["N"], options=opts.replace(scale_lcs=False)).solve(X0)
    scaled = C3(lcs, problem["Q"], problem["R"][0], G, U, N=problem["N"],
                options=opts.replace(scale_lcs=True)).solve(X0)
    np.testing.assert_allclose(scaled.u, plain.u, atol=1e-8)
    np.testing.assert_allclose(scaled.lam, plain.lam, atol=1e-7)


def test_penalize_input_change_is_against_the_same_knot_of_the_previous_plan(problem):
    on = their_controller(problem)
    off = their_controller(problem, penalize_input_change=False)
    np.testing.assert_array_equal(on.previous_input_plan, 0.0)
    r_on, r_off = on.solve(X0), off.solve(X0)
    np.testing.assert_allclose(r_on.u, r_off.u, atol=1e-12)  # u_prev = 0 on the first solve
    np.testing.assert_allclose(on.previous_input_plan, r_on.u, atol=1e-12)  # end_on_qp_step
    x1 = problem["lcs"].step(X0, r_on.u[0])[0]
    assert np.abs(on.solve(x1).u - off.solve(x1).u).max() > 1e-3


@pytest.mark.parametrize("bounds", [None, "active-set", "osqp"])
@pytest.mark.parametrize("scale_lcs", [False, True])
def test_lambda0_is_the_lcp_solution_when_H_is_zero(problem, bounds, scale_lcs):
    ctrl = their_controller(problem, scale_lcs=scale_lcs,
                            qp_solver=bounds if bounds else "active-set")
    if bounds:
        ctrl.set_bounds(u_lower=[-20.0], u_upper=[20.0])
    lcs = problem["lcs"]
    lam0 = solve_lcp(lcs.F, lcs.E @ X0 + lcs.c).z
    np.testing.assert_allclose(lam0, [5.0, 0.0], atol=1e-12)  # tip 5 cm into the right wall
    res = ctrl.solve(X0)
    assert res.ok
    np.testing.assert_allclose(res.lam[0], lam0, atol=1e-6)
    free = their_controller(problem, scale_lcs=scale_lcs, lambda0_from_lcp=False).solve(X0)
    assert np.abs(free.lam[0] - lam0).max() > 0.5  # without it the plan disagrees


def test_lambda0_with_a_convex_set_equals_the_same_linear_bound(problem):
    import cvxpy as cp

    conv = their_controller(problem)
    conv.add_convex_constraint(lambda x, lam, u: [cp.abs(u) <= 20])
    lin = their_controller(problem)
    lin.set_bounds(u_lower=[-20.0], u_upper=[20.0])
    a, b = conv.solve(X0), lin.solve(X0)
    np.testing.assert_allclose(a.lam[0], [5.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(a.u, b.u, atol=1e-5)


def test_update_cost_matrices_equals_a_fresh_controller(problem):
    """Their UpdateCostMatrix test, plus: the updated controller plans as a new one would."""
    ctrl = their_controller(problem)
    ctrl.solve(X0)
    Q2, R2 = 2 * problem["Q"], 3 * problem["R"][0]
    G2, U2 = 0.5 * problem["G"][0], problem["U"][0]
    ctrl.update_cost_matrices(Q=Q2, R=R2, G=G2, U=U2)
    Q, R, G, U = ctrl.cost_matrices
    np.testing.assert_array_equal(Q, Q2)
    np.testing.assert_array_equal(R[1], R2)
    np.testing.assert_array_equal(G[2], G2)
    ctrl2 = their_controller(problem, penalize_input_change=False)
    ctrl2.update_cost_matrices(Q=Q2, R=R2, G=G2, U=U2)
    fresh = C3(problem["lcs"], Q2, R2, G2, U2, N=problem["N"], options=ctrl2.options)
    np.testing.assert_allclose(ctrl2.solve(X0).u, fresh.solve(X0).u, atol=1e-12)
    ctrl2.add_linear_constraint(np.ones((1, 4)), [0.0], [2.0], "state")
    assert len(ctrl2.linear_constraints) == 1


def test_lambda0_option_has_no_effect_when_H_is_not_zero(problem):
    lcs = problem["lcs"].replace(H=np.array([[0.01], [-0.01]]))
    kw = dict(N=problem["N"])
    opts = problem["cfg"].options.replace(num_threads=1)
    a = C3(lcs, problem["Q"], problem["R"][0], problem["G"][0], problem["U"][0], options=opts,
           **kw)
    b = C3(lcs, problem["Q"], problem["R"][0], problem["G"][0], problem["U"][0],
           options=opts.replace(lambda0_from_lcp=False), **kw)
    assert a.initial_force_from_lcp(X0) is None
    np.testing.assert_allclose(a.solve(X0).u, b.solve(X0).u, atol=1e-12)


def test_their_discount_scales_Q_and_R_only(problem):
    g, N = 0.9, problem["N"]
    base = problem["cfg"].options.replace(num_threads=1, penalize_input_change=False)
    Qk = problem["Q"] * (g ** np.arange(N + 1))[:, None, None]
    Rk = problem["R"] * (g ** np.arange(N))[:, None, None]
    theirs = C3(problem["lcs"], problem["Q"], problem["R"][0], problem["G"][0],
                problem["U"][0], N=N, options=base.replace(discount=g)).solve(X0)
    by_hand = C3(problem["lcs"], Qk, Rk, problem["G"][0], problem["U"][0], N=N,
                 options=base).solve(X0)
    np.testing.assert_allclose(theirs.u, by_hand.u, atol=1e-10)
    ours = C3(problem["lcs"], problem["Q"], problem["R"][0], problem["G"][0], problem["U"][0],
              N=N, options=base.replace(discount=g, discount_admm_weights=True)).solve(X0)
    assert np.abs(ours.u - theirs.u).max() > 1e-3
    # the loader's cost_matrices() are their CreateCostMatricesFromC3Options
    cfg = load_dairlab_config(DATA / "c3_cartpole_options.yaml")
    Q, R, G, U = cfg.__class__(**{**cfg.__dict__, "gamma": g}).cost_matrices(N)
    np.testing.assert_allclose(Q[N], g**N * cfg.Q)
    np.testing.assert_allclose(R[2], g**2 * cfg.R)
    np.testing.assert_array_equal(G[3], cfg.G)


def test_end_on_projection_returns_their_full_solution(problem):
    opts = dict(end_on_qp_step=False, penalize_input_change=False)
    ref = reference(problem, X0, end_on_qp_step=False)
    res = their_controller(problem, **opts).solve(X0)  # projection_plan_states="qp"
    z = ref["z_full"]
    np.testing.assert_allclose(res.x[:-1], z[:, :4], atol=1e-8)
    np.testing.assert_allclose(res.lam, z[:, 4:6], atol=1e-7)
    np.testing.assert_allclose(res.u, z[:, 6:], atol=1e-8)
    # ours ("rerolled"): the projection's λ and u with states that satisfy the dynamics
    ours = their_controller(problem, projection_plan_states="rerolled", **opts).solve(X0)
    lcs = problem["lcs"]
    for k in range(problem["N"]):
        np.testing.assert_allclose(ours.x[k + 1], lcs.A @ ours.x[k] + lcs.B @ ours.u[k]
                                   + lcs.D @ ours.lam[k], atol=1e-10)
    np.testing.assert_allclose(ours.u, res.u, atol=1e-12)


def _contradictory_state_bounds(ctrl):
    ctrl.add_linear_constraint(np.eye(4), np.full(4, 100.0), np.full(4, 200.0), "state")
    ctrl.add_linear_constraint(np.eye(4), np.full(4, -200.0), np.full(4, -100.0), "state")


def test_qp_failure_holds_x0_with_zero_input_then_recovers(problem):
    """Their FallbackSolutionSetsStateAndZerosInputs and ...RecoveryAfterConstraintRemoval."""
    ctrl = their_controller(problem, qp_solver="osqp")
    first = ctrl.solve(X0)
    assert np.abs(first.u).max() > 1e-6
    _contradictory_state_bounds(ctrl)
    res = ctrl.solve(X0)
    assert res.status is C3Status.QP_FAILED and res.fallback and not res.ok
    np.testing.assert_array_equal(res.x, np.tile(X0, (problem["N"] + 1, 1)))
    np.testing.assert_array_equal(res.u, 0.0)
    np.testing.assert_array_equal(res.lam, 0.0)
    np.testing.assert_array_equal(ctrl.previous_input_plan, 0.0)
    ctrl.remove_constraints()
    again = ctrl.solve(X0)
    assert again.ok and np.abs(again.u).max() > 1e-6
    # ours ("shift", the default): the previous plan shifted by one knot
    shift = their_controller(problem, qp_solver="osqp", on_qp_failure="shift")
    shift.solve(X0)
    _contradictory_state_bounds(shift)
    assert shift.solve(X0).status is C3Status.QP_FAILED


def test_planned_x0_is_the_current_state_over_a_short_run(problem):
    """Their ZSolStaleTest (regression of their issue #6)."""
    ctrl = their_controller(problem)
    x = X0.copy()
    for _ in range(4):
        res = ctrl.solve(x)
        assert res.ok
        np.testing.assert_allclose(res.x[0], x, atol=1e-12)
        x = problem["lcs"].step(x, res.u[0])[0]


def _c3plus_costs(pb):
    n, m, k = 4, 2, 1
    G = np.zeros((n + 2 * m + k,) * 2)
    G[n + m + k:, n + m + k:] = np.eye(m)
    G[n:n + m, n:n + m] = np.eye(m)
    U = np.zeros_like(G)
    U[n:n + m, n:n + m] = np.eye(m)
    U[n + m + k:, n + m + k:] = 1e4 * np.eye(m)
    return G, U


@pytest.mark.parametrize("scale_lcs", [False, True])
def test_c3plus_matches_their_c3plus(problem, scale_lcs):
    """Their C3Plus (η = E x + F λ + H u + c as a variable, the λ/η blocks of G, the closed-
    form projection, the final QP pulled to δ): ours with c3plus_final_reference="projection"
    (the loader's setting); ours by default (δ − w in the final step too) differs."""
    G, U = _c3plus_costs(problem)
    opts = problem["cfg"].options.replace(num_threads=1, projection="c3plus",
                                          scale_lcs=scale_lcs)
    assert opts.c3plus_final_reference == "projection"
    ref = reference_solve(problem["lcs"], problem["Q"], problem["R"], [G] * problem["N"],
                          [U] * problem["N"], problem["x_des"], X0, admm_iter=opts.admm_iter,
                          rho_scale=opts.rho_scale, delta_option=0, scale_lcs=scale_lcs,
                          c3plus=True)
    ctrl = C3(problem["lcs"], problem["Q"], problem["R"][0], G, U, N=problem["N"],
              options=opts)
    res = ctrl.solve(X0)
    np.testing.assert_allclose(res.u, ref["u_qp"], atol=1e-8)
    np.testing.assert_allclose(res.lam, ref["lam_qp"], atol=1e-7)
    ours = C3(problem["lcs"], problem["Q"], problem["R"][0], G, U, N=problem["N"],
              options=opts.replace(c3plus_final_reference="consensus")).solve(X0)
    assert np.abs(ours.u - ref["u_qp"]).max() > 1e-3


@pytest.mark.parametrize("bounds", [False, True])
def test_c3plus_final_augmented_cost_contact_scaling_matches_theirs(problem, bounds):
    G, U = _c3plus_costs(problem)
    opts = problem["cfg"].options.replace(
        num_threads=1, projection="c3plus", final_augmented_cost_contact_scaling=50.0,
        final_augmented_cost_contact_indices=(0, 1), qp_solver="osqp", osqp_eps_abs=1e-9,
        osqp_eps_rel=1e-9)
    ctrl = C3(problem["lcs"], problem["Q"], problem["R"][0], G, U, N=problem["N"],
              options=opts)
    if bounds:  # loose enough to be inactive: the one-off OSQP path gives the same plan
        ctrl.set_bounds(u_lower=[-1e3], u_upper=[1e3])
    res = ctrl.solve(X0)
    ref = reference_solve(problem["lcs"], problem["Q"], problem["R"], [G] * problem["N"],
                          [U] * problem["N"], problem["x_des"], X0, admm_iter=opts.admm_iter,
                          rho_scale=opts.rho_scale, delta_option=0, scale_lcs=False,
                          c3plus=True, final_scaling=50.0, final_indices=(0, 1))
    np.testing.assert_allclose(res.u, ref["u_qp"], atol=1e-5 if bounds else 1e-8)
    plain = C3(problem["lcs"], problem["Q"], problem["R"][0], G, U, N=problem["N"],
               options=opts.replace(final_augmented_cost_contact_scaling=None)).solve(X0)
    assert np.abs(plain.u - res.u).max() > 1e-3  # the scaling matters here
    with pytest.raises(ValueError, match="must be < n_lambda"):
        C3(problem["lcs"], problem["Q"], problem["R"][0], G, U, N=problem["N"],
           options=opts.replace(final_augmented_cost_contact_indices=(2,))).solve(X0)


@pytest.mark.parametrize("projection", ["qp", "miqp", "c3plus"])
def test_end_to_end_cartpole_balances(problem, projection):
    """Their End2EndCartpoleTest (typed over C3QP, C3MIQP, C3Plus): from x0, at most 1000
    steps of the LCS, stopping after 30 consecutive steps with |x|∞ <= 0.1; ends there."""
    G, U = problem["G"][0], problem["U"][0]
    if projection == "c3plus":
        G, U = _c3plus_costs(problem)
    opts = problem["cfg"].options.replace(num_threads=1, projection=projection)
    ctrl = C3(problem["lcs"], problem["Q"], problem["R"][0], G, U, N=problem["N"],
              options=opts)
    x, near = X0.copy(), 0
    for _ in range(999):
        res = ctrl.solve(x)
        assert res.ok
        x = problem["lcs"].step(x, res.u[0])[0]
        near = near + 1 if np.abs(x).max() <= 0.1 else 0
        if near == 30:
            break
    assert np.abs(x).max() <= 0.1


def test_plan_cost_is_their_quadratic_trajectory_cost(problem):
    """Their ComputeCost test: Σ (x_k − x_d)ᵀQ_k(·) + u_kᵀR_k u_k over the returned plan."""
    ctrl = their_controller(problem, penalize_input_change=False)
    res = ctrl.solve(X0)
    Q, R = problem["Q"], problem["R"]
    manual = sum(x @ Qk @ x for x, Qk in zip(res.x, Q)) + sum(u @ Rk @ u
                                                             for u, Rk in zip(res.u, R))
    assert res.cost == pytest.approx(manual, rel=1e-12)


# ---------------------------------------------------------------- their example files, run
def test_cube_pivoting_file_gives_the_numbers_of_our_hand_written_setup():
    from plants import load_plant

    cfg = load_dairlab_config(DATA / "c3_controller_pivoting_options.yaml", num_threads=1)
    plant = load_plant("cube-pivoting", mu=cfg.lcs_factory.mus()[0], dt=cfg.dt,
                       contact_model=cfg.lcs_factory.contact_model)
    d = plant.defaults
    assert (cfg.N, cfg.dt, cfg.options.admm_iter, cfg.options.rho_scale) == (
        d.N, d.dt, d.admm_iter, d.rho_scale)
    for name in ("Q", "R", "G", "U"):
        np.testing.assert_array_equal(getattr(cfg, name), getattr(d, name), err_msg=name)
    np.testing.assert_array_equal(cfg.Q, d.QN)
    lcs = plant.lcs(d.x0, contact_model=cfg.lcs_factory.contact_model, dt=cfg.dt)
    assert lcs.n_lambda == cfg.lcs_factory.num_lambda()
    from_file = cfg.make_controller(lcs, x_des=d.x_goal)
    by_hand = C3(lcs, d.Q, d.R, d.G, d.U, N=d.N, x_des=d.x_goal, QN=d.QN,
                 options=cfg.options)
    for c in (from_file, by_hand):
        c.set_bounds(x_lower=d.x_lower, x_upper=d.x_upper, u_lower=d.u_lower,
                     u_upper=d.u_upper)
    a, b = from_file.solve(d.x0), by_hand.solve(d.x0)
    assert a.ok
    np.testing.assert_array_equal(a.u, b.u)
    np.testing.assert_array_equal(a.x, b.x)


@pytest.mark.parametrize("name", ["c3_controller_cartpole_options.yaml",
                                  "c3Plus_controller_cartpole_options.yaml"])
def test_cartpole_files_run_on_our_plant(problem, name):
    """Their c3_controller_example: the file's options and weights, the fixture's Riccati
    terminal cost, on our cart-pole plant with the file's spring stiffness; balances."""
    from plants import load_plant

    cfg = load_dairlab_config(DATA / name, num_threads=1)
    k = cfg.lcs_factory.spring_stiffness
    lcs = load_plant("cartpole-softwalls", k_right=k, k_left=k, dt=cfg.dt).lcs()
    ctrl = cfg.make_controller(lcs, QN=problem["Q"][-1])  # their example: the fixture's QN
    x = X0.copy()
    for _ in range(300):
        res = ctrl.solve(x)
        assert res.ok
        x = lcs.step(x, res.u[0])[0]
    assert np.abs(x).max() <= 0.1
