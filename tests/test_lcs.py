"""Tests of :class:`lcs.LCS`: construction/validation, stepping, rollouts, residuals, transforms."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lcs import LCS, LCPResult, LCPSolveError, LCPStatus, LCSError, LCSKnot, Rollout

NX, NU, NL = 4, 2, 3
NAMES = ("A", "B", "D", "d", "E", "F", "H", "c")


def random_matrices(seed: int = 0) -> dict[str, np.ndarray]:
    """A well-posed random LCS (F positive definite, so every LCP has a unique solution)."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((NL, NL))
    return {
        "A": np.eye(NX) + 0.1 * rng.standard_normal((NX, NX)),
        "B": rng.standard_normal((NX, NU)),
        "D": 0.05 * rng.standard_normal((NX, NL)),
        "d": 0.1 * rng.standard_normal(NX),
        "E": rng.standard_normal((NL, NX)),
        "F": G @ G.T + 0.5 * np.eye(NL) + 0.3 * (G - G.T),  # positive definite, nonsymmetric
        "H": rng.standard_normal((NL, NU)),
        "c": rng.standard_normal(NL),
    }


@pytest.fixture
def mats():
    return random_matrices()


@pytest.fixture
def lcs(mats):
    return LCS(**mats, dt=0.01)


def inputs(T: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(NX), rng.standard_normal((T, NU))


def scalar_lcs(F: float = 2.0, c: float = -1.0, E: float = 0.5) -> LCS:
    """1-D LCS: x' = 0.9 x + 0.5 u + 0.3 lam + 0.1;  0 <= lam ⟂ E x + F lam - 0.4 u + c >= 0."""
    return LCS([[0.9]], [[0.5]], [[0.3]], [0.1], [[E]], [[F]], [[-0.4]], [c], dt=0.05)


# ----------------------------------------------------------------------------- construction
def test_construction(lcs, mats):
    assert (lcs.n_x, lcs.n_u, lcs.n_lambda) == (NX, NU, NL)
    assert lcs.dt == 0.01 and lcs.N is None and not lcs.is_time_varying
    assert lcs.lambda_scale == 1.0
    for name in NAMES:
        np.testing.assert_array_equal(getattr(lcs, name), mats[name])
    assert "n_x=4" in repr(lcs) and "time-invariant" in repr(lcs)
    assert lcs.has_same_dimensions_as(LCS(**random_matrices(5)))


@pytest.mark.parametrize("name, shape, expected", [
    ("B", (NX + 1, NU), f"({NX}, {NU})"),
    ("D", (NX + 1, NL), f"({NX}, {NL})"),
    ("d", (NX + 1,), f"({NX},)"),
    ("d", (NX, 2), f"({NX},)"),
    ("E", (NL, NX + 1), f"({NL}, {NX})"),
    ("E", (NL + 1, NX), f"({NL}, {NX})"),
    ("F", (NL, NL + 1), f"({NL}, {NL})"),
    ("F", (NL,), f"({NL}, {NL})"),
    ("H", (NL, NU + 1), f"({NL}, {NU})"),
    ("H", (NL + 1, NU), f"({NL}, {NU})"),
    ("c", (NL + 1,), f"({NL},)"),
    ("A", (NX, NX + 1), "(n_x, n_x)"),
])
def test_wrong_shape_names_matrix(mats, name, shape, expected):
    mats[name] = np.ones(shape)
    with pytest.raises(ValueError) as info:
        LCS(**mats)
    msg = str(info.value)
    # a 2-D d of the wrong shape reads as per-knot vectors: then the knot is named, "d[0] ..."
    assert re.match(rf"^{name}(\[0\])? ", msg), msg
    assert expected in msg, msg


def test_wrong_shape_per_knot_names_knot(mats):
    mats["E"] = [np.ones((NL, NX + 1))] * 3
    with pytest.raises(ValueError, match=rf"^E\[0\] must have shape \({NL}, {NX}\)"):
        LCS(**mats)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_raises(mats, name, bad):
    arr = np.array(mats[name], dtype=float)
    arr.flat[-1] = bad
    mats[name] = arr
    with pytest.raises(ValueError, match=rf"^{name} has a non-finite entry"):
        LCS(**mats)


@pytest.mark.parametrize("dt", [0.0, -0.01, np.nan, np.inf])
def test_bad_dt(mats, dt):
    with pytest.raises(ValueError, match="dt"):
        LCS(**mats, dt=dt)


@pytest.mark.parametrize("scale", [0.0, -1.0, np.nan])
def test_bad_lambda_scale(mats, scale):
    with pytest.raises(ValueError, match="lambda_scale"):
        LCS(**mats, lambda_scale=scale)


def test_per_knot_lengths_must_agree(mats):
    mats["A"] = [mats["A"]] * 3
    mats["c"] = [mats["c"]] * 4
    with pytest.raises(ValueError, match="same number of knots") as info:
        LCS(**mats)
    assert "A: 3" in str(info.value) and "c: 4" in str(info.value)


def test_ragged_per_knot_list(mats):
    mats["F"] = [mats["F"], np.eye(NL + 1)]
    with pytest.raises(ValueError, match="^F"):
        LCS(**mats)


def test_not_an_array_is_type_error(mats):
    mats["H"] = "not a matrix"
    with pytest.raises(TypeError, match="^H"):
        LCS(**mats)


def test_errors_share_root(mats):
    mats["c"] = np.ones(NL + 1)
    with pytest.raises(LCSError):
        LCS(**mats)


def test_inputs_are_copied_and_read_only(mats):
    a_before = mats["A"].copy()
    lcs = LCS(**mats)
    mats["A"][0, 0] += 100.0  # the caller's array is not aliased
    np.testing.assert_array_equal(lcs.A, a_before)
    for name in NAMES:
        arr = getattr(lcs, name)
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr[...] = 0.0
    for arr in lcs.knot():
        with pytest.raises(ValueError):
            arr[...] = 0.0
    for arr in lcs.stacked(3):
        with pytest.raises(ValueError):
            arr[...] = 0.0
    tv = lcs.as_time_varying(3)
    with pytest.raises(ValueError):
        tv.F[1, 0, 0] = 1.0


# ----------------------------------------------------------------------------- stepping
@pytest.mark.parametrize("x, u", [(1.0, 0.0), (3.0, 1.0), (-2.0, 0.5), (0.0, -3.0), (2.0, 0.0)])
def test_step_scalar_hand_computation(x, u):
    lcs = scalar_lcs()
    A, B, D, d, E, F, H, c = 0.9, 0.5, 0.3, 0.1, 0.5, 2.0, -0.4, -1.0
    lam_expected = max(0.0, -(E * x + H * u + c) / F)
    x_next_expected = A * x + B * u + D * lam_expected + d
    x_next, lam = lcs.step([x], [u])
    assert x_next.shape == (1,) and lam.shape == (1,)
    assert lam[0] == pytest.approx(lam_expected, abs=1e-12)
    assert x_next[0] == pytest.approx(x_next_expected, abs=1e-12)
    sol = lcs.solve_lambda([x], [u])
    assert sol.found and sol.z[0] == pytest.approx(lam_expected, abs=1e-12)


def test_step_in_contact_and_free():
    lcs = scalar_lcs()
    _, lam_contact = lcs.step([0.0], [0.0])  # q = -1 < 0: lam = 0.5
    _, lam_free = lcs.step([4.0], [0.0])  # q = 1 > 0: lam = 0
    assert lam_contact[0] == pytest.approx(0.5)
    assert lam_free[0] == 0.0


def test_step_matches_formula(lcs, mats):
    x, us = inputs(1)
    x_next, lam = lcs.step(x, us[0])
    q = mats["E"] @ x + mats["H"] @ us[0] + mats["c"]
    w = mats["F"] @ lam + q
    assert lam.min() >= -1e-12 and w.min() >= -1e-12 and abs(lam @ w) < 1e-10
    np.testing.assert_allclose(
        x_next, mats["A"] @ x + mats["B"] @ us[0] + mats["D"] @ lam + mats["d"], atol=1e-12)


@pytest.mark.parametrize("F, expected", [(-1.0, LCPStatus.RAY_TERMINATION),
                                         (0.0, LCPStatus.INFEASIBLE)])
def test_step_raises_lcp_solve_error(F, expected):
    lcs = scalar_lcs(F=F, c=-1.0, E=0.0)  # q = -1 - 0.4 u < 0 for u >= 0: no solution
    with pytest.raises(LCPSolveError) as info:
        lcs.step([1.0], [0.0])
    err = info.value
    assert isinstance(err, RuntimeError) and isinstance(err, LCSError)
    assert isinstance(err.result, LCPResult)
    assert err.result.status is expected
    assert err.result.found is False
    assert np.all(np.isnan(err.result.z))
    assert expected.name in str(err)
    with pytest.raises(LCPSolveError):
        lcs.rollout([1.0], np.zeros((3, 1)))


def test_step_bad_state_shape(lcs):
    with pytest.raises(ValueError, match=rf"^x must have shape \({NX},\)"):
        lcs.step(np.ones(NX + 1), np.zeros(NU))
    with pytest.raises(ValueError, match=rf"^u must have shape \({NU},\)"):
        lcs.step(np.ones(NX), np.zeros(NU + 1))


# ----------------------------------------------------------------------------- rollouts
def test_rollout_shapes(lcs):
    T = 7
    x0, us = inputs(T)
    ro = lcs.rollout(x0, us)
    assert isinstance(ro, Rollout)
    assert ro.x.shape == (T + 1, NX)
    assert ro.lam.shape == (T, NL)
    assert ro.u.shape == (T, NU)
    np.testing.assert_array_equal(ro.x[0], x0)
    np.testing.assert_array_equal(ro.u, us)
    # every step is lcs.step
    for k in range(T):
        x_next, lam = lcs.step(ro.x[k], us[k])
        np.testing.assert_array_equal(ro.x[k + 1], x_next)
        np.testing.assert_array_equal(ro.lam[k], lam)
    assert np.any(ro.lam > 0), "test data should exercise contact"


def test_rollout_scalar_input_vector():
    lcs = scalar_lcs()
    ro = lcs.rollout([1.0], np.array([0.0, 1.0, -1.0]))
    assert ro.x.shape == (4, 1) and ro.lam.shape == (3, 1) and ro.u.shape == (3, 1)


def test_rollout_bad_inputs(lcs):
    with pytest.raises(ValueError, match="us"):
        lcs.rollout(np.zeros(NX), np.zeros((5, NU + 1)))
    with pytest.raises(ValueError, match="us"):
        lcs.rollout(np.zeros(NX), np.full((5, NU), np.nan))
    tv = lcs.as_time_varying(3)
    with pytest.raises(ValueError, match="T=4"):
        tv.rollout(np.zeros(NX), np.zeros((4, NU)))


def test_time_varying_equivalence(lcs):
    T = 6
    x0, us = inputs(T)
    tv = lcs.as_time_varying(T)
    assert tv.is_time_varying and tv.N == T
    assert tv.A.shape == (T, NX, NX) and tv.d.shape == (T, NX) and tv.c.shape == (T, NL)
    a, b = lcs.rollout(x0, us), tv.rollout(x0, us)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.lam, b.lam)
    # shorter rollouts of the time-varying LCS are allowed
    c = tv.rollout(x0, us[:3])
    np.testing.assert_array_equal(c.x, a.x[:4])
    # every knot of the time-varying LCS is the original system
    for k in range(T):
        for name, m in zip(NAMES, tv.knot(k)):
            np.testing.assert_array_equal(m, getattr(lcs, name))


def test_time_varying_mixed_shared_and_per_knot(mats):
    """Only some matrices per knot: the shared ones apply at every knot."""
    T = 4
    rng = np.random.default_rng(7)
    As = [mats["A"] + 0.01 * k * rng.standard_normal((NX, NX)) for k in range(T)]
    cs = np.stack([mats["c"] + 0.1 * k for k in range(T)])
    tv = LCS(**{**mats, "A": As, "c": cs})
    assert tv.is_time_varying and tv.N == T
    assert tv.F.shape == (T, NL, NL) and tv.d.shape == (T, NX)
    x0, us = inputs(T)
    ro = tv.rollout(x0, us)
    x = x0
    for k in range(T):
        ti = LCS(**{**mats, "A": As[k], "c": cs[k]})
        x_next, lam = ti.step(x, us[k])
        np.testing.assert_allclose(ro.x[k + 1], x_next, atol=1e-14)
        np.testing.assert_allclose(ro.lam[k], lam, atol=1e-14)
        x = ro.x[k + 1]
        np.testing.assert_array_equal(tv.knot(k).F, mats["F"])
        np.testing.assert_array_equal(tv.knot(k).A, As[k])
    assert tv.stacked(T).F.shape == (T, NL, NL)


def test_time_varying_per_knot_rollout_uses_knot_k(mats):
    T = 5
    knots = [LCSKnot(**random_matrices(10 + k)) for k in range(T)]
    tv = LCS.from_knots(knots, dt=0.02)
    assert tv.N == T and tv.dt == 0.02
    x0, us = inputs(T)
    ro = tv.rollout(x0, us)
    for k in range(T):
        x_next, lam = tv.at_knot(k).step(ro.x[k], us[k])
        np.testing.assert_array_equal(ro.x[k + 1], x_next)
        np.testing.assert_array_equal(ro.lam[k], lam)
        x_next2, lam2 = tv.step(ro.x[k], us[k], k)
        np.testing.assert_array_equal(x_next2, x_next)
    with pytest.raises(ValueError, match="out of range"):
        tv.step(x0, us[0], T)
    with pytest.raises(ValueError, match="out of range"):
        tv.knot(-1)


# ----------------------------------------------------------------------------- residuals
def test_residuals_zero_on_rollout(lcs):
    T = 8
    x0, us = inputs(T)
    ro = lcs.rollout(x0, us)
    r = lcs.complementarity_residual(ro.x[:-1], ro.u, ro.lam)
    assert r.shape == (T,)
    assert np.all(r <= 1e-10)
    v = lcs.complementarity_violation(ro.x[:-1], ro.u, ro.lam)
    assert np.all(v <= 1e-9)
    dyn = lcs.dynamics_residual(ro.x, ro.u, ro.lam)
    assert dyn.shape == (T, NX)
    np.testing.assert_allclose(dyn, 0.0, atol=1e-12)
    # one knot: floats
    r0 = lcs.complementarity_residual(ro.x[0], ro.u[0], ro.lam[0])
    assert isinstance(r0, float) and r0 <= 1e-10
    slack = lcs.complementarity_slack(ro.x[0], ro.u[0], ro.lam[0])
    assert slack.shape == (NL,) and slack.min() >= -1e-10


def test_residuals_positive_when_perturbed(lcs):
    T = 8
    x0, us = inputs(T)
    ro = lcs.rollout(x0, us)
    k, i = np.argwhere(ro.lam > 0)[0]
    lam = ro.lam.copy()
    lam[k, i] += 0.3  # an active contact force too large: slack becomes positive too
    r = lcs.complementarity_residual(ro.x[:-1], ro.u, lam)
    assert r[k] > 1e-3
    lam = ro.lam.copy()
    lam[k, i] = -0.2  # negative force
    assert lcs.complementarity_residual(ro.x[:-1], ro.u, lam)[k] >= 0.2 - 1e-12
    assert lcs.complementarity_violation(ro.x[:-1], ro.u, lam)[k] >= 0.2 - 1e-12
    x = ro.x.copy()
    x[3] += 0.1
    dyn = lcs.dynamics_residual(x, ro.u, ro.lam)
    assert np.abs(dyn[2]).max() > 0.05


def test_residual_shape_errors(lcs):
    with pytest.raises(ValueError, match="lam"):
        lcs.complementarity_residual(np.zeros((3, NX)), np.zeros((3, NU)), np.zeros((2, NL)))


# ----------------------------------------------------------------------------- transforms
def test_scaled(lcs):
    s = np.linalg.norm(lcs.A, "fro") / np.linalg.norm(lcs.D, "fro")
    sc = lcs.scaled()
    assert sc.lambda_scale == pytest.approx(s, rel=1e-14)
    np.testing.assert_allclose(sc.D, s * lcs.D, rtol=1e-14)
    np.testing.assert_allclose(sc.E, lcs.E / s, rtol=1e-14)
    np.testing.assert_allclose(sc.H, lcs.H / s, rtol=1e-14)
    np.testing.assert_allclose(sc.c, lcs.c / s, rtol=1e-14)
    np.testing.assert_array_equal(sc.F, lcs.F)
    np.testing.assert_array_equal(sc.A, lcs.A)
    assert np.linalg.norm(sc.D) == pytest.approx(np.linalg.norm(sc.A), rel=1e-12)
    T = 10
    x0, us = inputs(T)
    a, b = lcs.rollout(x0, us), sc.rollout(x0, us)
    np.testing.assert_allclose(b.x, a.x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sc.unscale_lambda(b.lam), a.lam, rtol=0, atol=1e-10)
    np.testing.assert_allclose(b.lam, a.lam / s, rtol=0, atol=1e-10)
    # scaling again changes nothing (D and A are already balanced)
    sc2 = sc.scaled()
    assert sc2.lambda_scale == pytest.approx(s, rel=1e-12)
    np.testing.assert_allclose(sc2.unscale_lambda(sc2.rollout(x0, us).lam), a.lam, atol=1e-10)
    assert "lambda_scale" in repr(sc)


def test_scaled_time_varying_and_zero_d(lcs, mats):
    T = 5
    x0, us = inputs(T)
    tv = lcs.as_time_varying(T).scaled()
    a = lcs.rollout(x0, us)
    b = tv.rollout(x0, us)
    np.testing.assert_allclose(b.x, a.x, atol=1e-10)
    np.testing.assert_allclose(tv.unscale_lambda(b.lam), a.lam, atol=1e-10)
    no_contact = LCS(**{**mats, "D": np.zeros((NX, NL))})
    assert no_contact.scaled() is no_contact


def test_replace(lcs, mats):
    new_c = mats["c"] + 1.0
    r = lcs.replace(c=new_c, dt=0.02)
    np.testing.assert_array_equal(r.c, new_c)
    assert r.dt == 0.02 and lcs.dt == 0.01
    np.testing.assert_array_equal(lcs.c, mats["c"])  # the original is unchanged
    for name in ("A", "B", "D", "d", "E", "F", "H"):
        np.testing.assert_array_equal(getattr(r, name), getattr(lcs, name))
    same = lcs.replace(c=lcs.c)
    assert not same.is_time_varying
    np.testing.assert_array_equal(same.c, lcs.c)
    tv = lcs.as_time_varying(3)
    tv2 = tv.replace(c=tv.c)
    assert tv2.N == 3
    np.testing.assert_array_equal(tv2.c, tv.c)
    assert lcs.replace(lambda_scale=2.0).lambda_scale == 2.0
    with pytest.raises(ValueError, match="unknown LCS field"):
        lcs.replace(G=np.eye(2))
    with pytest.raises(ValueError, match=rf"^E must have shape \({NL}, {NX}\)"):
        lcs.replace(E=np.ones((NL, NX + 2)))


def test_at_knot(lcs):
    T = 4
    rng = np.random.default_rng(3)
    cs = lcs.c + rng.standard_normal((T, NL))
    tv = LCS(*lcs.knot()[:7], cs, dt=lcs.dt, lambda_scale=1.5)
    for k in range(T):
        ti = tv.at_knot(k)
        assert not ti.is_time_varying and ti.lambda_scale == 1.5 and ti.dt == lcs.dt
        np.testing.assert_array_equal(ti.c, cs[k])
        np.testing.assert_array_equal(ti.F, lcs.F)
    with pytest.raises(ValueError):
        tv.at_knot(T)
    # a time-invariant LCS's knot k is itself
    np.testing.assert_array_equal(lcs.at_knot(5).A, lcs.A)


def test_batch_lambda(lcs):
    T = 9
    x0, us = inputs(T)
    ro = lcs.rollout(x0, us)
    res = lcs.batch_lambda(ro.x[:-1], ro.u)
    assert res.all_found and len(res) == T
    np.testing.assert_allclose(res.z, ro.lam, atol=1e-12)
    tv = lcs.as_time_varying(T)
    res_tv = tv.batch_lambda(ro.x[:-1], ro.u)
    np.testing.assert_allclose(res_tv.z, ro.lam, atol=1e-12)
    for k in range(T):
        np.testing.assert_allclose(res[k].z, lcs.solve_lambda(ro.x[k], ro.u[k]).z, atol=1e-12)
    with pytest.raises(ValueError):
        lcs.batch_lambda(ro.x[:-1], ro.u[:-1])


def test_stacked(lcs):
    st = lcs.stacked(5)
    assert isinstance(st, LCSKnot)
    assert st.A.shape == (5, NX, NX) and st.c.shape == (5, NL)
    tv = lcs.as_time_varying(3)
    with pytest.raises(ValueError):
        tv.stacked(4)
    with pytest.raises(ValueError):
        lcs.stacked(0)
