"""The twin's full franka_msgs/FrankaState (issue 21 item 4) and its emulation of franka_ros'
stock Cartesian impedance controller.

Field names and types are checked against franka_ros' own message definitions
(tests/data/franka_msgs/*.msg, copied with their commit); the values against independent
computations on the same Pinocchio Panda: forward kinematics of the published q, gravity
torques, and static equilibrium (the controller's torque balances the contact force the
published wrench reports)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pinocchio")

from hardware import messages  # noqa: E402
from hardware.errors import HardwareValueError  # noqa: E402
from hardware.stock_impedance import (StockCartesianImpedance, StockImpedanceOptions,  # noqa: E402
                                      equilibrium_step_response)

DATA = Path(__file__).parent / "data" / "franka_msgs"


def _msg_fields(name: str) -> list[tuple[str, str]]:
    """(type, name) of each field of a ROS .msg file (constants and comments skipped)."""
    out = []
    for line in (DATA / f"{name}.msg").read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line or "=" in line:
            continue
        typ, field = line.split()
        out.append((typ, field))
    return out


def test_field_table_matches_franka_msgs_definition():
    """FRANKA_STATE_FIELDS lists FrankaState.msg's fields after the header, in order, with
    their types and array lengths; ERROR_FIELDS lists Errors.msg's booleans in order."""
    fields = _msg_fields("FrankaState")
    assert fields[0] == ("std_msgs/Header", "header")
    expected = []
    for typ, name in fields[1:]:
        m = re.fullmatch(r"(\w+(?:/\w+)?)(?:\[(\d+)\])?", typ)
        assert m, typ
        expected.append((name, (m.group(1), int(m.group(2) or 0))))
    assert list(messages.FRANKA_STATE_FIELDS.items()) == expected
    errors = _msg_fields("Errors")
    assert all(t == "bool" for t, _ in errors)
    assert messages.ERROR_FIELDS == tuple(n for _, n in errors)


def test_franka_state_builder_rejects_unknown_fields_and_bad_lengths():
    T = np.eye(4)
    with pytest.raises(HardwareValueError, match="not a float64 field"):
        messages.franka_state(T, 1.0, fields={"q_dot": np.zeros(7)})
    with pytest.raises(HardwareValueError, match="robot_mode"):
        messages.franka_state(T, 1.0, fields={"robot_mode": 2})
    with pytest.raises(HardwareValueError, match="q must be 7 finite"):
        messages.franka_state(T, 1.0, fields={"q": np.zeros(6)})
    with pytest.raises(HardwareValueError, match="finite"):
        messages.franka_state(T, 1.0, fields={"time": math.nan})


def test_parse_external_wrench():
    T = np.eye(4)
    assert messages.parse_external_wrench(messages.franka_state(T, 1.0)) is None
    w = messages.parse_external_wrench(messages.franka_state(T, 1.0,
                                                             external_wrench=[1, 2, 3, 0, 0, 0]))
    np.testing.assert_array_equal(w, [1, 2, 3, 0, 0, 0])
    from hardware.errors import MessageError

    for bad in ([1, 2, 3], [1, 2, 3, 0, 0, "0"], [1, 2, 3, 0, 0, True], [math.nan] * 6):
        with pytest.raises(MessageError, match="O_F_ext_hat_K"):
            messages.parse_external_wrench({"O_F_ext_hat_K": bad})


class _Recorder:
    """Stands in for the bridge server: keeps the last message published on each topic."""

    def __init__(self):
        self.last: dict[str, dict] = {}

    def publish(self, topic, msg):
        self.last[topic] = msg


def _twin(**kw):
    from hardware.twin import FrankaBallTwin, TwinOptions

    rec = _Recorder()
    return FrankaBallTwin(rec, TwinOptions(**kw)), rec


def _state(twin, rec) -> dict:
    twin.p, twin.R, _ = twin.world.ee_pose()
    twin.publish_state(1.7e9 + twin.world.t)
    msg = rec.last[twin.options.franka.state_topic]
    return json.loads(json.dumps(msg))  # what goes over the wire (strict JSON)


def test_twin_publishes_every_field_with_libfranka_semantics():
    """Pressing the ball: every FrankaState field is present with its length; O_T_EE is the
    forward kinematics of the published q; tau_J − tau_J_d is g(q); O_T_EE_d is the measured
    pose (torque control: no motion generator), not the commanded equilibrium; the wrench
    points down (the robot pushes the ball: libfranka's positive sign) and at rest the
    controller's torque without gravity balances it: tau_J_d ≈ Jᵀ O_F_ext_hat_K =
    tau_ext_hat_filtered (the simulator's contact force against the published estimate)."""
    import pinocchio as pin
    from plants.franka_sim import EE_FRAME, arm_model

    twin, rec = _twin(force_noise_std=0.0)
    w = twin.world
    p0 = w.ee_pose()[0]
    eq = p0 - [0.0, 0.0, 0.01]  # 1 cm into the ball: the eq.-36 spring presses it down
    twin.apply_equilibrium(eq, np.array([1.0, 0, 0, 0]))
    while w.t < 0.6:
        w.step()
    msg = _state(twin, rec)
    for name, (typ, n) in messages.FRANKA_STATE_FIELDS.items():
        assert name in msg, name
        if typ == "float64":
            assert (isinstance(msg[name], float) if n == 0 else len(msg[name]) == n), name
    assert set(msg["current_errors"]) == set(messages.ERROR_FIELDS)
    assert msg["robot_mode"] == 2 and not any(msg["last_motion_errors"].values())
    assert msg["time"] == pytest.approx(w.t)

    model = arm_model()
    data = model.createData()
    q = np.array(msg["q"])
    pin.framesForwardKinematics(model, data, q)
    T_fk = data.oMf[model.getFrameId(EE_FRAME)].homogeneous
    T = np.array(msg["O_T_EE"]).reshape(4, 4, order="F")
    np.testing.assert_allclose(T, T_fk, atol=1e-9)
    np.testing.assert_allclose(np.array(msg["O_T_EE_d"]).reshape(4, 4, order="F"), T)
    assert np.linalg.norm(T[:3, 3] - eq) > 5e-3  # the equilibrium is not in the message
    g = pin.computeGeneralizedGravity(model, data, q)
    np.testing.assert_allclose(np.array(msg["tau_J"]) - msg["tau_J_d"], g, atol=1e-9)

    f = np.array(msg["O_F_ext_hat_K"])
    assert f[2] < -2.0 and np.abs(f[:2]).max() < 0.2 * abs(f[2]) and not f[3:].any(), f
    R = T[:3, :3]
    np.testing.assert_allclose(msg["K_F_ext_hat_K"][:3], R.T @ f[:3], atol=1e-12)
    assert np.linalg.norm(msg["dq"]) < 1e-2  # at rest
    tau_ext = np.array(msg["tau_ext_hat_filtered"])
    # static balance: what the controller pushes (tau_J − g) is what the contact takes
    np.testing.assert_allclose(msg["tau_J_d"], tau_ext, atol=0.05 * np.abs(tau_ext).max())


def test_stock_filter_step_response_is_the_analytic_one():
    """The equilibrium filter, tick by tick, follows 1 − 0.995ᵏ of a step (time constant
    −1/(1000 ln 0.995) ≈ 0.1995 s); n ticks in one call equal n single ticks."""
    from plants.franka_sim import EE_FRAME, arm_model, PANDA_HOME

    model = arm_model()
    a = StockCartesianImpedance(model, EE_FRAME, np.array(PANDA_HOME))
    b = StockCartesianImpedance(model, EE_FRAME, np.array(PANDA_HOME))
    p0 = a.position_d.copy()
    step = np.array([0.02, -0.01, 0.03])
    for c in (a, b):
        c.set_equilibrium(p0 + step, a.orientation_d.as_quat())
    frac = []
    for k in range(1, 401):
        a.advance(1)
        frac.append((a.position_d - p0) @ step / (step @ step))
    np.testing.assert_allclose(frac, equilibrium_step_response(np.arange(1, 401)), rtol=1e-12)
    assert frac[199] == pytest.approx(1 - math.exp(-0.2 / 0.19950), abs=2e-3)  # ~63 % at τ
    for _ in range(200):
        b.advance(2)
    np.testing.assert_allclose(b.position_d, a.position_d, atol=1e-12)
    # the gains ramp from zero with the same filter
    np.testing.assert_allclose(a.stiffness[:3], 200.0 * equilibrium_step_response(400))


def test_stock_options_follow_dynamic_reconfigure_ranges():
    assert StockImpedanceOptions().translational_stiffness == 200.0
    with pytest.raises(HardwareValueError, match=r"\[0, 400\].*per unit task inertia"):
        StockImpedanceOptions(translational_stiffness=500.0)  # the project's eq.-36 default
    with pytest.raises(HardwareValueError, match=r"\[0, 30\]"):
        StockImpedanceOptions(rotational_stiffness=900.0)
    with pytest.raises(HardwareValueError, match="world 'panda'"):
        from hardware.twin import TwinOptions

        TwinOptions(controller="stock", world="model")


def test_twin_stock_mode_tracks_the_filtered_equilibrium_and_ignores_wrenches():
    """Stock mode: an equilibrium step of 2 cm up reaches the controller through the filter
    (after 0.3 s of 2 ms steps: 1 − 0.995³⁰⁰ of it), wrench commands are ignored, and the end
    effector settles towards the equilibrium as a ~200 N/m spring allows (within 2 mm of the
    filtered equilibrium after 2 s, the nominal Λ-weighted closed loop being much slower than
    the eq.-36 one)."""
    twin, rec = _twin(controller="stock", force_noise_std=0.0)
    w = twin.world
    p0 = w.ee_pose()[0]
    goal = p0 + [0.0, 0.0, 0.02]
    twin.apply_equilibrium(goal, np.array([1.0, 0, 0, 0]))
    twin.apply_wrench(np.array([0.0, 0.0, -20.0]), np.zeros(3))
    assert twin.wrenches_ignored == 1
    while w.t < 0.3 - 1e-9:
        w.step()
    done = (twin.stock.position_d - p0)[2] / 0.02
    assert done == pytest.approx(equilibrium_step_response(300), rel=1e-9)
    while w.t < 2.0 - 1e-9:
        w.step()
    p = w.ee_pose()[0]
    assert np.linalg.norm(p - twin.stock.position_d) < 2e-3, p - twin.stock.position_d
    msg = _state(twin, rec)
    assert msg["O_F_ext_hat_K"] == [0.0] * 6  # lifted off the ball
