"""Issue 8 acceptance on the twin: `c3mpc twin franka-ball` (the issue-7 world: full Panda in
plants.sim under the eq. (36) impedance controller, emulated cameras) served over real loopback
websockets, `c3mpc deploy franka-ball` with the C3 planner (c3mpc.algorithm3) against it; the
ball must move along the circle; then the twin is killed and the watchdog must stop
commanding within the threshold and deploy must exit cleanly with a message."""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _loopback import free_port, repo_env, wait_until  # noqa: E402

pytest.importorskip("roslibpy")
pytest.importorskip("websockets")
pytest.importorskip("pinocchio")

REPO = Path(__file__).resolve().parents[1]
THRESHOLD = 0.05  # default watchdog threshold [s]
TOLERANCE = 0.05  # one loop period, rosbridge delivery, scheduling on a shared 2-core machine
CENTER = np.array([0.55, 0.0])
RADIUS = 0.1


def _phase_angle(xy: np.ndarray) -> np.ndarray:
    """Unwrapped eq. (25) phase angle atan2(x − x_c, y − y_c) [rad]: increases along the task
    (the target is 20° ahead of the ball in this angle)."""
    rel = np.asarray(xy) - CENTER
    return np.unwrap(np.arctan2(rel[:, 0], rel[:, 1]))


def test_world_accessor_steps_the_panda_under_the_commanded_equilibrium():
    """make_franka_ball_world: the issue-7 Panda world driven step by step. Lifting the
    equilibrium 3 cm off the ball: after 0.4 s the end effector (critically damped, ω = √500,
    settling ~4/ω = 0.18 s) is within 2 mm of it; the ball stays at its start (no contact)."""
    from hardware.twin import make_franka_ball_world

    w = make_franka_ball_world("panda")
    p0, R0, v0 = w.ee_pose()
    np.testing.assert_allclose(p0, w.ee0, atol=2e-3)  # IK of the task's start pose
    b0 = w.ball()
    goal = p0 + [0.0, 0.0, 0.03]
    w.command(goal, np.zeros(3))
    while w.t < 0.4:
        w.step()
    p, R, v = w.ee_pose()
    assert np.linalg.norm(p - goal) < 2e-3, p - goal
    assert np.linalg.norm(v) < 0.02
    np.testing.assert_allclose(R, R0, atol=1e-2)  # orientation held
    assert np.linalg.norm(w.ball()[:2] - b0[:2]) < 1e-3


def test_twin_options_are_strict():
    from hardware.errors import HardwareValueError
    from hardware.twin import TwinOptions

    with pytest.raises(HardwareValueError, match="world"):
        TwinOptions(world="mujoco")
    with pytest.raises(HardwareValueError, match="camera_rate_hz"):
        TwinOptions(camera_rate_hz=0)
    with pytest.raises(HardwareValueError, match="sim_dtt.*valid"):
        TwinOptions.from_dict({"sim_dtt": 0.001})
    assert TwinOptions.from_dict({"impedance": {"rotational_damping": 30}}
                                 ).impedance.rotational_damping == 30


RUN_S = 22.0  # seconds of C3 control before the twin is killed


def test_deploy_c3_against_the_twin_rolls_the_ball_then_survives_the_twin_dying(tmp_path):
    """End to end over real websockets, both sides as their own processes.

    Thresholds (justified in docs/deployment.md, "Rehearsal on the twin"): the issue-7 closed
    loop (same world, same Algorithm 3, no network) goes round once in 53-61 s and is in the
    2 cm band 31-100% of a lap (max error 1.2-15.4 cm); through the bridge we measured 37-315°
    in ~23 s, 65-98% in the band, max error 2.2-13.5 cm (10 runs). Required: the ball's phase
    angle advances >= 20° in the 22 s, >= 50% of the time in the 2 cm band, never more than
    20 cm off the circle (not lost: the issue-7 laps reach 15.4 cm). The ball checks are
    skipped (with the numbers) when the twin could not keep real time, i.e. another load
    starved the machine; the watchdog checks run regardless."""
    port = free_port()
    twin_log = tmp_path / "twin.log"
    # the task's nominal gains on both sides (the ImpedanceParams default, the authors'
    # K = 500, loses the ball in the simulated loop too: docs/deployment.md, "Bridged loop
    # against the simulated loop")
    gains = "impedance:\n  translational_stiffness: 2000.0\n  damping_ratio: 1.0\n"
    (tmp_path / "twin.yaml").write_text(gains)
    with open(twin_log, "w") as fh:  # a file, not a pipe: nobody reads it during the run
        twin = subprocess.Popen([sys.executable, "-m", "c3mpc.cli", "twin", "franka-ball",
                                 "--port", str(port), "--status-interval", "2",
                                 "--config", str(tmp_path / "twin.yaml")], cwd=REPO,
                                env=repo_env(), stdout=fh, stderr=subprocess.STDOUT, text=True)
    deploy = None
    try:
        assert wait_until(lambda: "serving on" in twin_log.read_text(), 30), twin_log.read_text()
        cfg = tmp_path / "deploy.yaml"
        cfg.write_text("planner_type: c3\nmax_stale_time: 0.5\n"
                       "camera:\n  velocity_filter: 1.0\nfranka:\n  velocity_filter: 1.0\n"
                       + gains)
        rep = tmp_path / "rep"
        deploy = subprocess.Popen([sys.executable, "-m", "c3mpc.cli", "deploy", "franka-ball",
                                   "--bridge", f"ws://127.0.0.1:{port}", "--config", str(cfg),
                                   "--report", str(rep), "--quiet"],
                                  cwd=REPO, env=repo_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        # the loop starts after the planner's warm-up and the first data; give it RUN_S then
        # kill the robot side without warning
        time.sleep(4.0)
        assert deploy.poll() is None
        time.sleep(RUN_S)
        t_kill = time.monotonic()
        twin.send_signal(signal.SIGKILL)
        twin.wait(10)
        out, err = deploy.communicate(timeout=30)
    finally:
        for p in (twin, deploy):
            if p is not None and p.poll() is None:
                p.kill()
    assert deploy.returncode == 3, err[-2000:]  # data_lost
    assert "data_lost" in out and "stale" in out
    s = json.loads((rep / "summary.json").read_text())
    assert s["exit_reason"] == "data_lost" and s["planner"] == "C3Planner"
    assert s["planner_failures"] == 0 and s["rejected_state_messages"] == 0, s["state_rejections"]
    rows = [r.split(",") for r in (rep / "log.csv").read_text().strip().splitlines()]
    head, rows = rows[0], rows[1:]
    col = {n: i for i, n in enumerate(head)}
    data = np.array([[float(v) for v in r] for r in rows])
    held = data[:, col["held"]] == 1
    running = np.flatnonzero(~held)
    assert running.size > 0.6 * 100 * RUN_S * 0.8, running.size  # >= ~60 Hz of commands

    # -- the twin dies: the watchdog holds within the threshold and nothing is sent after ---
    trips = [r for r in json.loads((rep / "interventions.json").read_text())
             if r["kind"] == "watchdog"]
    assert trips
    assert 0 <= trips[-1]["t"] - t_kill <= THRESHOLD + TOLERANCE, trips[-1]["t"] - t_kill
    first = running[-1] + 1  # the final hold: from the trip to the exit
    assert np.all(held[first:]) and held.size - first >= 10
    age = np.maximum(data[:, col["state_age_s"]], data[:, col["camera_age_s"]])
    assert age[first] > THRESHOLD >= age[first - 1]
    assert age[first] <= THRESHOLD + TOLERANCE
    print(f"trip {1e3 * (trips[-1]['t'] - t_kill):.0f} ms after the kill, data age at the trip "
          f"{1e3 * age[first]:.0f} ms; loop {s['achieved_rate_hz']:.1f} Hz, {s['commands_sent']} "
          f"commands, {s['safety_interventions']} interventions "
          f"{s['interventions_by_kind']}, plan time median {1e3 * s['plan_time_median_s']:.2f}"
          f" ms (cached ticks included), max {1e3 * s['plan_time_max_s']:.0f} ms")

    # -- the ball moves along the task ----------------------------------------------------
    last = running[-1]
    ball = data[: last + 1, [col["ball_x"], col["ball_y"]]]
    t = data[: last + 1, col["t"]]
    ang = _phase_angle(ball)
    advance = math.degrees(ang[-1] - ang[0])
    radial = np.abs(np.linalg.norm(ball - CENTER, axis=1) - RADIUS)
    info = (f"advance {advance:.1f} deg in {t[-1]:.1f} s, max radial error "
            f"{radial.max() * 100:.1f} cm, in 2 cm band {np.mean(radial <= 0.02):.2f}")
    print(info)
    # A real-time loop needs a machine that can run it: the twin prints its real-time factor
    # every 2 s; when other processes starved it (simulated / wall time < 0.9 on average after
    # the first 2 s, which hold the deploy side's start-up) the ball test says nothing about
    # our code, so it is skipped with the measured factors (the checks above still ran).
    rt = [float(m) for m in re.findall(r"real-time factor ([0-9.]+)", twin_log.read_text())]
    assert len(rt) >= 2, twin_log.read_text()
    info += f"; twin real-time factors {rt}, plan time median {s['plan_time_median_s']:.4f} s"
    if np.mean(rt[1:]) < 0.9:
        pytest.skip(f"machine too loaded for the real-time loop: twin real-time factor "
                    f"{np.mean(rt[1:]):.2f} on average; {info}")
    assert t[-1] > 0.8 * RUN_S, info
    assert advance >= 20.0, info
    assert np.mean(radial <= 0.02) >= 0.5, info
    assert radial.max() <= 0.20, info


def test_twin_cli_prints_its_real_time_factor_while_serving():
    """`c3mpc twin --status-interval 1` prints one status line per second of wall time with the
    simulated time and the real-time factor; the simplified-model world keeps real time on an
    idle core (factor close to 1), and the final line reports the whole run."""
    out = subprocess.run([sys.executable, "-m", "c3mpc.cli", "twin", "franka-ball", "--port",
                          str(free_port()), "--world", "model", "--duration", "3.5",
                          "--status-interval", "1"], cwd=REPO, env=repo_env(),
                         capture_output=True, text=True, timeout=60).stdout
    lines = re.findall(r"t = ([0-9.]+) s simulated, real-time factor ([0-9.]+) over the last "
                       r"([0-9.]+) s", out)
    assert len(lines) >= 2, out
    t = [float(a) for a, _, _ in lines]
    assert all(b > a for a, b in zip(t, t[1:])), out  # simulated time advances
    assert all(0.95 <= float(w) <= 1.5 for _, _, w in lines), out  # ~1 s of wall time each
    assert all(0.0 < float(f) <= 1.05 for _, f, _ in lines), out
    assert "stopped at simulated t" in out and "real-time factor" in out.splitlines()[-1]
