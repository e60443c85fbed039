"""The paper's analytic plants: registry, matrices against the published file, hand checks."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from lcs import LCS
from plants import UnknownPlantError, available_plants, load_plant

DATA = Path(__file__).parent / "data" / "paper_system_matrices.txt"


def published_matrices(section: str, namespace: dict) -> dict:
    """Evaluate one section of the published matrix file (it is written in numpy syntax)."""
    text = DATA.read_text()
    starts = {m.group(1): m.end() for m in re.finditer(r"^# (Cartpole|Finger gaiting|Pivoting):",
                                                      text, re.M)}
    order = sorted(starts, key=starts.get)
    i = order.index(section)
    body = text[starts[section]: (starts[order[i + 1]] if i + 1 < len(order) else len(text))]
    ns = {"np": np, **namespace}
    for line in body.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or re.fullmatch(r"\w+", line):
            continue  # comments and bare parameter names
        exec(line, ns)  # noqa: S102 - trusted data file shipped with the tests
        target = line.split("=")[0].strip()
        if isinstance(ns.get(target), list):  # homogeneous lists behave as numpy arrays
            try:
                ns[target] = np.array(ns[target], dtype=float)
            except (ValueError, TypeError):
                pass  # rows mixing scalars and 1-element arrays (pivoting): as_matrix()
    return ns


def as_matrix(rows) -> np.ndarray:
    """Rows of scalars or 1-element arrays (the file mixes both) as a float matrix."""
    def flat(row):
        if isinstance(row, (list, tuple, np.ndarray)):
            return [float(np.asarray(e).ravel()[0]) for e in np.asarray(row, dtype=object).ravel()]
        return [float(row)]

    return np.array([flat(row) for row in rows])


def test_registry_names_and_unknown():
    assert {"cartpole-softwalls", "finger-gaiting", "pivoting"} <= set(available_plants())
    with pytest.raises(UnknownPlantError) as e:
        load_plant("cartpole")
    assert "cartpole-softwalls" in str(e.value) and isinstance(e.value, ValueError)


def test_bad_parameter_rejected():
    with pytest.raises(ValueError, match="dt"):
        load_plant("cartpole-softwalls", dt=-0.01)
    with pytest.raises(TypeError):
        load_plant("finger-gaiting", not_a_param=1.0)


def test_cartpole_matches_published_matrices():
    p = load_plant("cartpole-softwalls")
    pr = p.params
    # The file writes c = [d1, -d2] with the authors' d2 = -0.35 (left wall at -0.35 m).
    ns = published_matrices("Cartpole", dict(Ts=pr.dt, g=pr.g, mp=pr.mp, mc=pr.mc,
                                             len_p=pr.len_p, len_com=pr.len_com, d1=0.35,
                                             d2=-0.35, ks=50.0, n=4))
    lcs = p.lcs()
    for name in "ABDdEFHc":
        np.testing.assert_allclose(getattr(lcs, name), as_matrix(ns[name]).reshape(
            getattr(lcs, name).shape), rtol=1e-14, atol=1e-14, err_msg=name)


def test_finger_gaiting_matches_published_matrices():
    p = load_plant("finger-gaiting")
    ns = published_matrices("Finger gaiting", dict(h=0.1, mu=1.0, g=9.81))
    lcs = p.lcs()
    for name in "ABDdEFHc":
        np.testing.assert_allclose(getattr(lcs, name), as_matrix(ns[name]).reshape(
            getattr(lcs, name).shape), rtol=1e-14, atol=1e-14, err_msg=name)


@pytest.mark.parametrize("seed", range(5))
def test_pivoting_matches_published_matrices_at_random_states(seed):
    rng = np.random.default_rng(seed)
    p = load_plant("pivoting", mu3=0.3)
    x = rng.normal(size=10)
    ns = published_matrices("Pivoting", dict(dt=0.01, mu1=0.1, mu2=0.1, mu3=0.3, g=9.81, h=1.0,
                                             w=1.0, x=x.reshape(10, 1)))
    lcs = p.lcs(x)
    for name in "ABDdEFHc":
        ref = as_matrix(ns[name])
        np.testing.assert_allclose(getattr(lcs, name), ref.reshape(getattr(lcs, name).shape),
                                   rtol=1e-12, atol=1e-14, err_msg=name)


@pytest.mark.parametrize("seed", range(3))
def test_pivoting_matches_published_matrices_with_distinct_parameters(seed):
    # With the paper's h = w = 1, mu1 = mu2 and dt = 0.01 a swapped h/w, mu1/mu2 or a dt vs
    # dt² slip would go unnoticed; distinct values make every parameter visible.
    prm = dict(dt=0.013, mu1=0.15, mu2=0.35, mu3=0.6, g=9.7, h=0.7, w=1.3)
    x = np.random.default_rng(100 + seed).normal(size=10)
    lcs = load_plant("pivoting", **prm).lcs(x)
    ns = published_matrices("Pivoting", dict(prm, x=x.reshape(10, 1)))
    for name in "ABDdEFHc":
        ref = as_matrix(ns[name])
        np.testing.assert_allclose(getattr(lcs, name), ref.reshape(getattr(lcs, name).shape),
                                   rtol=1e-12, atol=1e-14, err_msg=name)


def test_pivoting_published_gap_row_has_no_angle_term_when_h_equals_w():
    # Documented in docs/c3.md: the published E[9, 4] = -h sinθ + w cosθ + (w sinθ - h cosθ)
    # vanishes for h = w, so the planned ground gap depends on θ only through θ̇ (z·dt).
    for theta in (0.2, np.pi / 4, 1.0):
        x = np.zeros(10)
        x[4] = theta
        assert load_plant("pivoting").lcs(x).E[9, 4] == pytest.approx(0.0, abs=1e-15)
        assert load_plant("pivoting", h=0.5).lcs(x).E[9, 4] == pytest.approx(
            -0.5 * np.sin(theta) + np.cos(theta) + np.sin(theta) - 0.5 * np.cos(theta))


def test_pivoting_typo_option_only_changes_one_entry():
    x = load_plant("pivoting").defaults.x0
    a = load_plant("pivoting").lcs(x)
    b = load_plant("pivoting", fix_velocity_row_typo=True).lcs(x)
    diff = np.argwhere(~np.isclose(a.D, b.D, rtol=0, atol=0))
    assert diff.tolist() == [[3, 4]]
    assert b.D[3, 4] == pytest.approx(0.01 * np.sin(0.2))


def test_pivoting_is_state_dependent():
    p = load_plant("pivoting")
    x0 = p.defaults.x0
    x1 = x0.copy()
    x1[4] += 0.3
    assert not np.allclose(p.lcs(x0).F, p.lcs(x1).F)
    with pytest.raises(ValueError, match="shape"):
        p.lcs(np.zeros(9))
    with pytest.raises(ValueError, match="non-finite"):
        p.lcs(np.full(10, np.nan))


def test_cartpole_step_matches_hand_computed_wall_force():
    """Pole tip 5 cm into the right wall: λ1 = k·0.05 = 2.5 N, λ2 = 0; then Euler."""
    p = load_plant("cartpole-softwalls")
    mc, mp, lp, lc, g, k, dt = 0.978, 0.411, 0.6, 0.4267, 9.81, 50.0, 0.01
    x = np.array([0.40, 0.0, 0.1, -0.2])  # tip at x - lp·θ = 0.40 > 0.35
    u = np.array([0.7])
    x_next, lam = p.lcs().step(x, u)
    lam1 = k * (0.40 - 0.35)
    np.testing.assert_allclose(lam, [lam1, 0.0], atol=1e-12)
    a_cart = g * mp / mc * x[1] + u[0] / mc + (-1 / mc + lp / (mc * lc)) * lam1
    a_pole = (g * (mc + mp) / (lc * mc) * x[1] + u[0] / (lc * mc)
              + (-1 / (mc * lc) + lp * (mc + mp) / (mc * mp * lc**2)) * lam1)
    expected = x + dt * np.array([x[2], x[3], a_cart, a_pole])
    np.testing.assert_allclose(x_next, expected, rtol=1e-13, atol=1e-15)
    # And the left wall, symmetric: tip at -0.38 → λ2 = 50·0.03.
    x = np.array([-0.38, 0.0, 0.0, 0.0])
    _, lam = p.lcs().step(x, np.zeros(1))
    np.testing.assert_allclose(lam, [0.0, k * 0.03], atol=1e-12)


def test_cartpole_no_contact_between_walls():
    p = load_plant("cartpole-softwalls")
    _, lam = p.step(np.array([0.1, 0.05, 0.0, 0.0]), np.zeros(1))
    assert np.all(lam == 0.0)


def test_defaults_shapes_and_paper_values():
    for name in ("cartpole-softwalls", "finger-gaiting", "pivoting"):
        p = load_plant(name)
        dflt = p.defaults
        n_z = p.n_x + p.n_lambda + p.n_u
        assert dflt.Q.shape == dflt.QN.shape == (p.n_x, p.n_x)
        assert dflt.R.shape == (p.n_u, p.n_u)
        assert dflt.G.shape == dflt.U.shape == (n_z, n_z)
        assert dflt.x0.shape == dflt.x_goal.shape == dflt.x_lower.shape == (p.n_x,)
        assert dflt.u_lower.shape == dflt.u_upper.shape == (p.n_u,)
        assert np.all(np.linalg.eigvalsh(dflt.Q) >= 0) and np.all(np.linalg.eigvalsh(dflt.R) > 0)
        assert not dflt.Q.flags.writeable
    cp = load_plant("cartpole-softwalls")
    lcs = cp.lcs()
    QN = cp.defaults.QN
    # QN solves the DARE: residual of the Riccati equation is ~0.
    A, B, Q, R = lcs.A, lcs.B, cp.defaults.Q, cp.defaults.R
    K = np.linalg.solve(R + B.T @ QN @ B, B.T @ QN @ A)
    np.testing.assert_allclose(A.T @ QN @ A - A.T @ QN @ B @ K + Q, QN, rtol=1e-9)
    assert cp.defaults.G[-1, -1] == 0.0  # authors' zero G on u
    fg = load_plant("finger-gaiting").defaults
    assert (fg.x_lower[2], fg.x_upper[2], fg.x_lower[4], fg.x_upper[4]) == (1, 3, 3, 5)
    assert (fg.u_lower[2:], fg.u_upper[2:]).__repr__()
    pv = load_plant("pivoting").defaults
    np.testing.assert_allclose(pv.x_goal[[0, 2, 4, 6, 8]], [0, np.sqrt(2), np.pi / 4, 0.9, 0.9])


def test_lcs_dt_override():
    p = load_plant("cartpole-softwalls")
    l2 = p.lcs(dt=0.02)
    assert isinstance(l2, LCS) and l2.dt == 0.02
    np.testing.assert_allclose(l2.B, 2 * p.lcs().B)
    assert p.lcs() is p.lcs()  # the default LCS is built once


def test_finger_gaiting_gravity_without_grip():
    """No normal force: the object free-falls one step, friction λ = 0."""
    p = load_plant("finger-gaiting")
    x = np.array([-7.0, 0, 2, 0, 4, 0])
    x_next, lam = p.step(x, np.zeros(4))
    h, g = 0.1, 9.81
    np.testing.assert_allclose(x_next[:2], [-7.0 - g * h * h, -g * h])
    np.testing.assert_allclose(lam[[1, 2, 4, 5]], 0.0, atol=1e-12)


def test_sample_start_distribution():
    rng = np.random.default_rng(0)
    from plants import FingerGaiting
    xs = np.array([FingerGaiting.sample_start(rng) for _ in range(200)])
    assert xs[:, 0].min() >= -8 and xs[:, 0].max() <= -6
    assert xs[:, 2].min() >= 2 and xs[:, 2].max() <= 3
    assert np.all(xs[:, [1, 3, 5]] == 0)


def test_cartpole_dare_matches_scipy():
    p = load_plant("cartpole-softwalls")
    lcs = p.lcs()
    ref = scipy.linalg.solve_discrete_are(lcs.A, lcs.B, p.defaults.Q, p.defaults.R)
    np.testing.assert_allclose(p.defaults.QN, ref)
