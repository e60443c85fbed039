"""The libfranka transport (hardware.franky_transport, issue 21 item 6) against franky-sim: a
third-party simulator that speaks the libfranka network protocol (MuJoCo inside), started as
its own process on a loopback address; the transport talks to it through the real franky
(franky-control) and libfranka. No fakes: what runs here is what would run against a robot,
minus the real-time kernel (``realtime: false``)."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from hardware.errors import HardwareValueError
from hardware.franky_transport import FrankyOptions

HOST = "127.0.0.83"  # franky-sim binds a loopback address per robot


def test_franky_options_are_strict():
    with pytest.raises(HardwareValueError, match="translational_stiffness"):
        FrankyOptions(translational_stiffness=-1.0)
    with pytest.raises(HardwareValueError, match="realtime"):
        FrankyOptions(realtime="no")
    from hardware.deploy import DeployOptions

    with pytest.raises(HardwareValueError, match="transport"):
        DeployOptions(transport="libfranka")
    o = DeployOptions.from_dict({"transport": "franky", "franky": {"host": HOST}})
    assert o.franky.host == HOST


@pytest.fixture
def franky_sim():
    """franky-sim's MuJoCo server as a subprocess on HOST; yields the process."""
    pytest.importorskip("franky")
    pytest.importorskip("franky_sim")
    pytest.importorskip("mujoco")
    code = ("import sys; from franky_sim import run_server_main; "
            f"sys.argv = ['franky-sim', '-s', 'mujoco', '--hostname', '{HOST}']; "
            "run_server_main()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 60
        for line in proc.stdout:  # "Connect to the server using '127.0.0.83' ..."
            lines.append(line)
            if "Connect to the server" in line or time.monotonic() > deadline:
                break
        assert proc.poll() is None, "".join(lines)
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


def _move_to_start(p: list[float]) -> np.ndarray:
    """The operator's step before a run: franky's own motion generator brings the end
    effector to ``p`` (inside the deploy workspace box); returns the start orientation."""
    import franky

    robot = franky.Robot(HOST, realtime_config=franky.RealtimeConfig.Ignore)
    robot.relative_dynamics_factor = 0.1
    q = np.array(robot.state.O_T_EE.quaternion)
    robot.move(franky.CartesianMotion(franky.Affine(p, q)))
    reached = np.array(robot.state.O_T_EE.translation)
    del robot  # one FCI client at a time
    assert np.linalg.norm(reached - p) < 5e-3, reached
    return q


def _read_log(path):
    with open(path) as fh:
        rows = list(csv.reader(fh))
    col = {n: i for i, n in enumerate(rows[0])}
    return col, np.array([[float(v) for v in r] for r in rows[1:]])


@pytest.mark.slow
def test_deploy_over_libfranka_drives_franky_sim_around_the_circle(franky_sim, tmp_path):
    """`c3mpc deploy` with ``transport: franky`` (no ROS anywhere) and the reference circle
    planner against franky-sim: the run completes, every command passes the safety layer
    (all inside the workspace box, steps ≤ max_step), the end effector follows the circle
    (franky's Cartesian impedance at 1000 N/m) and the report is written (CSV, MCAP)."""
    from hardware.deploy import DeployOptions, ExitReason, run_deploy

    _move_to_start([0.55, 0.1, 0.30])
    o = DeployOptions.from_dict({
        "transport": "franky", "require_camera": False, "planner_type": "circle",
        "franky": {"host": HOST, "realtime": False},
        "planner": {"max_target_speed": 0.1}})
    s = run_deploy("franka-ball", o, duration=8.0, report_dir=tmp_path, status=None,
                   handle_signals=False)
    assert s.exit_reason == ExitReason.COMPLETED, s.message
    assert s.url == f"franky://{HOST}"
    assert s.rejected_state_messages == 0, s.state_rejections
    assert s.commands_sent > 0.5 * 100 * 8.0 and s.holds_sent == 1
    col, d = _read_log(tmp_path / "log.csv")
    cmd = d[:, [col["cmd_x"], col["cmd_y"], col["cmd_z"]]]
    cmd = cmd[np.all(np.isfinite(cmd), axis=1)]
    lo, hi = np.array(o.safety.workspace_min), np.array(o.safety.workspace_max)
    assert np.all(cmd >= lo - 1e-9) and np.all(cmd <= hi + 1e-9)
    assert np.max(np.linalg.norm(np.diff(cmd, axis=0), axis=1)) <= o.safety.max_step + 1e-9
    ee = d[:, [col["ee_x"], col["ee_y"]]]
    rel = ee - np.array([0.55, 0.0])
    ang = np.unwrap(np.arctan2(rel[:, 1], rel[:, 0]))
    radial = np.abs(np.linalg.norm(rel, axis=1) - 0.1)
    advance = math.degrees(ang[-1] - ang[0])
    print(f"franky-sim: {s.commands_sent} commands at {s.achieved_rate_hz:.1f} Hz, "
          f"{s.state_messages} robot states, advance {advance:.0f} deg, radial error median "
          f"{np.median(radial) * 1e3:.1f} mm, max {radial.max() * 1e3:.1f} mm")
    assert advance > 60.0
    assert np.median(radial) < 0.01
    assert (tmp_path / "run.mcap").stat().st_size > 1000
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["options"]["transport"] == "franky"


@pytest.mark.slow
def test_libfranka_state_semantics_and_robot_loss(franky_sim):
    """Under franky's torque-level impedance controller franky-sim reports O_T_EE_d equal to
    the measured O_T_EE (no motion generator: the semantics the twin emulates), a zero
    external wrench in free space and MOVE mode; when the simulator process dies, no state
    arrives after it (the deploy loop's 50 ms watchdog holds), and once libfranka's control
    loop gives up (UDP receive timeout) the transport latches a fault and refuses every later
    command."""
    from hardware.franky_transport import FrankyRobot
    from hardware.safety import SafetyLayer, Target

    q = _move_to_start([0.5, 0.0, 0.35])
    r = FrankyRobot(FrankyOptions(host=HOST, realtime=False))
    r.connect()
    try:
        time.sleep(0.5)
        s = r.robot.state
        np.testing.assert_allclose(np.array(s.O_T_EE_d.matrix), np.array(s.O_T_EE.matrix),
                                   atol=1e-9)
        st = r.state()
        assert st.robot_mode == 2 and st.errors == () and np.abs(st.external_wrench).max() < 1.0
        safety = SafetyLayer()
        safety.reset(st.position, time.monotonic(), st.quaternion)
        cmd = safety.filter(Target(st.position + [0.0, 0.01, 0.0], q, np.zeros(3),
                                   np.zeros(3)), st.position, time.monotonic() + 0.1,
                            st.quaternion)
        assert r.command(cmd)
        with pytest.raises(TypeError, match="SafeCommand"):
            r.command(Target(st.position, q, np.zeros(3), np.zeros(3)))
        time.sleep(1.0)
        assert abs(r.state().position[1] - cmd.position[1]) < 3e-3  # tracked
        franky_sim.kill()
        t_kill = time.monotonic()
        deadline = t_kill + 5.0
        while r.fault is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert r.fault is not None
        print(f"last state {1e3 * (r.state().t_receive - t_kill):.0f} ms after the kill, "
              f"fault latched {1e3 * (r.fault.t_receive - t_kill):.0f} ms after it: "
              f"{r.fault.describe()}")
        assert r.state().t_receive - t_kill < 0.05  # stale at once: the watchdog's cue
        assert "control_loop_ended" in r.fault.errors
        assert not r.command(cmd) and r.refused_commands == 1
    finally:
        r.close()
