"""Quaternion costs (DAIRLab/c3's quaternion_weight / quaternion_regularizer_fraction)."""

from __future__ import annotations

import numpy as np
import pytest

from c3mpc import C3, C3Options
from c3mpc.quaternion_cost import (quaternion_cost_block, squared_angle_difference,
                                   squared_angle_hessian)
from lcs import LCS

Q1 = np.array([0.5, 0.5, 0.5, 0.5])
Q2 = np.array([0.707, 0.0, 0.0, 0.707])


def _fd_hessian(q, r, h=1e-5):
    H = np.zeros((4, 4))
    f = squared_angle_difference
    for i in range(4):
        for j in range(4):
            ei, ej = np.eye(4)[i] * h, np.eye(4)[j] * h
            H[i, j] = (f(q + ei + ej, r) - f(q + ei - ej, r) - f(q - ei + ej, r)
                       + f(q - ei - ej, r)) / (4 * h * h)
    return H


def test_hessian_matches_their_test_values():
    """DAIRLab/c3 systems/test/quaternion_cost_test.cc, HessianAngleDifferenceTest."""
    np.testing.assert_allclose(squared_angle_hessian(Q1, Q1),
                               8 * np.eye(4) - 2 * np.ones((4, 4)), atol=1e-4)
    a = 8.28319
    expected = np.array([[a, -2, -2, 2], [-2, 2, 4 - a, -2], [-2, 4 - a, 2, -2],
                         [2, -2, -2, a]])
    np.testing.assert_allclose(squared_angle_hessian(Q1, Q2), expected, atol=1e-4)


def test_hessian_matches_finite_differences_and_is_scale_invariant():
    rng = np.random.default_rng(3)
    for _ in range(10):
        q, r = rng.normal(size=4), rng.normal(size=4)
        r /= np.linalg.norm(r)
        H = squared_angle_hessian(q, r)
        np.testing.assert_allclose(H, _fd_hessian(q, r), atol=1e-4 * np.abs(H).max())
        np.testing.assert_allclose(squared_angle_hessian(2.5 * q, r), H / 2.5**2, rtol=1e-9,
                                   atol=1e-12)
    # the angle itself: a rotation by 0.3 rad about z
    r = np.array([1.0, 0, 0, 0])
    q = np.array([np.cos(0.15), 0, 0, np.sin(0.15)])
    assert squared_angle_difference(q, r) == pytest.approx(0.09, rel=1e-12)


def test_small_angle_limit_is_continuous():
    """Their HessianSmallAngleDifferenceTest: perturbing the target by 1e-3 per component
    barely changes the Hessian (the closed-form limit and the general formula agree)."""
    H0 = squared_angle_hessian(Q1, Q1)
    for i in range(4):
        r = Q1 + 1e-3 * np.eye(4)[i]
        H = squared_angle_hessian(Q1, r / np.linalg.norm(r))
        assert np.linalg.norm(H - H0) <= 1e-2 * np.linalg.norm(H0)


def test_cost_block_is_psd_and_not_diagonal():
    """Their QuaternionCostMatrixTest."""
    for q, r in ((Q1, Q2), (Q2, Q1), (Q1, Q1)):
        B = quaternion_cost_block(q, r, weight=1000.0, regularizer_fraction=0.5)
        assert np.linalg.eigvalsh(B).min() >= 0
        assert np.abs(B - np.diag(np.diag(B))).max() > 1.0


# ------------------------------------------------------------ a free-floating body in 3-D
DT = 0.05


def _E(q):
    """q̇ = E(q) ω for a body-frame angular velocity ω."""
    w, x, y, z = q
    return 0.5 * np.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])


def _body_lcs(q):
    """x = [q (4); ω (3)], u = angular acceleration; linearised about q (one inactive
    complementarity pair: 0 <= λ ⟂ λ + 1 >= 0 gives λ = 0)."""
    A = np.eye(7)
    A[:4, 4:] = DT * _E(q)
    B = np.zeros((7, 3))
    B[4:] = DT * np.eye(3)
    B[:4] = DT * DT * _E(q)
    return LCS(A, B, np.zeros((7, 1)), np.zeros(7), np.zeros((1, 7)), np.eye(1),
               np.zeros((1, 3)), np.ones(1), dt=DT)


def _step(x, u):
    """Exact rotation by the new angular velocity over DT (the true, nonlinear plant)."""
    q, w = x[:4], x[4:] + DT * u
    ang = np.linalg.norm(w) * DT
    dq = np.r_[np.cos(ang / 2), w / np.linalg.norm(w) * np.sin(ang / 2)] if ang > 0 else \
        np.array([1.0, 0, 0, 0])
    a, b = q, dq
    q = np.array([a[0] * b[0] - a[1:] @ b[1:],
                  *(a[0] * b[1:] + b[0] * a[1:] + np.cross(a[1:], b[1:]))])
    return np.r_[q / np.linalg.norm(q), w]


def _run(weight, q_raw=10.0, steps=60):
    axis = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    th = np.deg2rad(150)
    goal = np.r_[np.cos(th / 2), axis * np.sin(th / 2), 0, 0, 0]
    x = np.r_[1.0, 0, 0, 0, 0, 0, 0]
    opts = C3Options(projection="lcp", admm_iter=2, quaternion_weight=weight,
                     quaternion_indices=(0,) if weight else ())
    ctrl = C3(_body_lcs(x[:4]), np.diag([q_raw] * 4 + [1.0] * 3), 0.1 * np.eye(3),
              0.1 * np.eye(11), np.eye(11), N=10, x_des=goal, options=opts)
    for _ in range(steps):
        ctrl.update_lcs(_body_lcs(x[:4]))
        res = ctrl.solve(x)
        assert res.ok
        x = _step(x, res.u[0])
    return np.rad2deg(np.sqrt(squared_angle_difference(x[:4], goal[:4]))), ctrl, goal


def test_orientation_goal_reached_with_the_quaternion_cost():
    """150° about (1, 1, 0)/√2 from rest, 3 s: within 5° with the quaternion cost.
    docs/c3.md lists what happens without it (raw-component costs)."""
    err, ctrl, goal = _run(weight=10.0)
    assert err <= 5.0
    # the Q the solves use: the quaternion block replaced, the rest untouched
    x = np.r_[1.0, 0, 0, 0, 0.1, 0, 0]
    Q = ctrl.quaternion_cost_matrices(x)
    np.testing.assert_allclose(Q[3, :4, :4], quaternion_cost_block(x[:4], goal[:4], 10.0))
    np.testing.assert_array_equal(Q[:, 4:, 4:], np.broadcast_to(np.eye(3), (11, 3, 3)))
    np.testing.assert_array_equal(Q[:, :4, 4:], 0.0)


def test_quaternion_options_are_validated():
    with pytest.raises(ValueError, match="quaternion_weight"):
        C3Options(quaternion_weight=-1.0)
    with pytest.raises(ValueError, match="quaternion_indices"):
        C3Options(quaternion_indices=(-1,))
    assert C3Options.from_dict({"quaternion_indices": [0, 7]}).quaternion_indices == (0, 7)
    opts = C3Options(projection="lcp", quaternion_weight=1.0, quaternion_indices=(5,))
    ctrl = C3(_body_lcs(np.array([1.0, 0, 0, 0])), np.eye(7), np.eye(3), np.eye(11),
              np.eye(11), N=3, options=opts)
    with pytest.raises(ValueError, match="needs n_x >= 9"):
        ctrl.solve(np.r_[1.0, 0, 0, 0, 0, 0, 0])
