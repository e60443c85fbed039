"""c3mpc.state_prediction: DAIRLab/c3's clamped state prediction, on analytic cases."""

from __future__ import annotations

import numpy as np
import pytest

from c3mpc.state_prediction import PredictionJoint, predict_state

DT = 0.1
CART = PredictionJoint(q_index=0, v_index=2, max_acceleration=10.0, name="CartSlider")


def _plan(v=1.0, N=5):
    """Cart moving at v, pole at rest: x = [p, θ, ṗ, θ̇], knots 0..N."""
    t = DT * np.arange(N + 1)
    return np.stack([v * t, 0 * t, v + 0 * t, 0 * t], axis=1)


def test_no_prediction_on_the_first_solve_or_without_joints():
    x = np.array([0.0, 0.1, 1.0, 0.0])
    np.testing.assert_array_equal(predict_state(x, _plan(), 0.0, DT, [CART]), x)
    np.testing.assert_array_equal(predict_state(x, _plan(), 0.15, DT, []), x)


def test_a_consistent_plan_is_interpolated():
    x = np.array([0.0, 0.1, 1.0, 0.0])
    out = predict_state(x, _plan(), 0.15, DT, [CART])
    # between knots 1 and 2: p = 0.15, v = 1 (within x ± v T ± a T²)
    np.testing.assert_allclose(out, [0.15, 0.1, 1.0, 0.0], atol=1e-12)


def test_an_inconsistent_plan_is_clamped_by_the_acceleration_limit():
    x = np.array([0.0, 0.0, 0.0, 0.0])  # at rest, the plan says it moves at 5 m/s
    T = 0.15
    out = predict_state(x, _plan(v=5.0), T, DT, [CART])
    assert out[0] == pytest.approx(10.0 * T * T)  # q + vT + aT² (their bound)
    assert out[2] == pytest.approx(10.0 * T)     # v + aT


def test_beyond_the_horizon_the_last_used_knot_is_n_minus_1():
    x = np.array([0.0, 0.0, 1.0, 0.0])
    out = predict_state(x, _plan(N=5), 10.0, DT, [PredictionJoint(0, 2, 1e6)])
    assert out[0] == pytest.approx(4 * DT)  # knot N-1 = 4, not x_N


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_acceleration"):
        PredictionJoint(0, 2, 0.0)
    with pytest.raises(ValueError, match="plan_x"):
        predict_state(np.zeros(4), np.zeros((2, 4)), 0.1, DT, [CART])
    with pytest.raises(ValueError, match="out of range"):
        predict_state(np.zeros(4), _plan(), 0.1, DT, [PredictionJoint(0, 7, 1.0)])


def test_their_option_file_joints_resolve_to_prediction_joints(tmp_path):
    from pathlib import Path

    from c3mpc.dairlab import load_dairlab_config

    src = Path(__file__).parent / "data" / "dairlab" / "c3_controller_cartpole_options.yaml"
    text = src.read_text().replace(
        'state_prediction_joints: []\n  # - name : "CartSlider"\n  #   max_acceleration : 10',
        'state_prediction_joints:\n  - name : "CartSlider"\n    max_acceleration : 10')
    assert "  - name" in text
    p = tmp_path / "opts.yaml"
    p.write_text(text)
    cfg = load_dairlab_config(p)
    assert cfg.state_prediction_joints == (("CartSlider", 10.0),)
    assert cfg.prediction_joints({"CartSlider": (0, 2)}) == [CART]
    with pytest.raises(ValueError, match="no indices"):
        cfg.prediction_joints({})
