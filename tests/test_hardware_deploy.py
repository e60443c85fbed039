"""The deploy loop against the simulated Franka over real loopback websockets: watchdog timing,
data loss, SIGINT shutdown and an end-to-end ``c3mpc deploy`` rehearsal."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("roslibpy")
pytest.importorskip("websockets")

from hardware.deploy import DeployOptions, ExitReason, run_deploy  # noqa: E402
from hardware.rosbridge import BridgeOptions  # noqa: E402
from hardware.sim_robot import SimRobotOptions, start_sim_robot  # noqa: E402
from _loopback import repo_env, wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[1]
THRESHOLD = 0.05  # default watchdog threshold [s]
# Trip latency budget beyond the threshold: one loop period (10 ms), rosbridge delivery both
# ways and scheduling on a shared 2-core machine.
TOLERANCE = 0.05


def _options(url: str, **kw) -> DeployOptions:
    return DeployOptions(bridge=BridgeOptions(url=url), **kw)


def _run_in_thread(url: str, duration: float | None, **kw):
    box: dict = {}

    def target():
        box["summary"] = run_deploy("franka-ball", _options(url, **kw), duration=duration,
                                    status=None, handle_signals=False)

    th = threading.Thread(target=target, daemon=True)
    th.start()
    return th, box


def _final_hold(report_dir) -> tuple:
    """The final hold the deploy side recorded (interventions.json, kind "shutdown")."""
    records = json.loads((Path(report_dir) / "interventions.json").read_text())
    assert records[-1]["kind"] == "shutdown", records[-3:]
    return tuple(records[-1]["applied"])


def _in_box(p) -> bool:
    from hardware.safety import SafetyOptions

    o = SafetyOptions()
    return bool(np.all(np.asarray(p) >= o.workspace_min) and np.all(np.asarray(p)
                                                                     <= o.workspace_max))


def test_watchdog_trips_within_threshold_and_holds_when_camera_or_state_go_stale():
    st, robot = start_sim_robot()
    try:
        th, box = _run_in_thread(st.server.url, 4.0)
        assert wait_until(lambda: len(robot.commands) >= 50, 10)
        for pause in ("camera_paused", "state_paused"):
            st.call(lambda p=pause: setattr(robot, p, True))
            time.sleep(0.3)
            last_data = (robot.last_camera_publish if pause == "camera_paused"
                         else robot.last_state_publish)
            cmds = list(robot.commands)
            after = [c for c in cmds if c.t_receive > last_data]
            assert after, "nothing arrived after the data stopped"
            # Commanding went on until the trip, then one hold, then nothing (0.3 s).
            hold = after[-1]
            latency = hold.t_receive - last_data
            assert THRESHOLD <= latency <= THRESHOLD + TOLERANCE, [
                c.t_receive - last_data for c in after]
            # The hold passed the safety layer: inside the box, at most max_step from the
            # previous command.
            prev = cmds[cmds.index(hold) - 1]
            assert _in_box(hold.position)
            assert np.linalg.norm(hold.position - prev.position) <= 0.02 + 1e-12
            n_before = len(robot.commands)
            st.call(lambda p=pause: setattr(robot, p, False))
            assert wait_until(lambda: len(robot.commands) > n_before + 10, 3)  # resumed
        th.join(15)
        s = box["summary"]
        assert s.exit_reason == ExitReason.COMPLETED
        # Two induced trips; a loaded 2-core machine can starve this process (server, robot
        # and loop share it) for > 50 ms and add a genuine one: the watchdog doing its job.
        assert 2 <= s.watchdog_trips <= 3
        assert s.safety_interventions == 0
        assert s.holds_sent == s.watchdog_trips + 1  # one hold per trip + the final hold
    finally:
        st.stop()


def test_robot_side_killed_watchdog_holds_then_exits_data_lost():
    st, robot = start_sim_robot()
    th, box = _run_in_thread(st.server.url, None, max_stale_time=0.5)
    try:
        assert wait_until(lambda: len(robot.commands) >= 30, 10)
    finally:
        st.stop()
    t_kill = time.monotonic()
    th.join(15)
    assert not th.is_alive()
    s = box["summary"]
    assert s.exit_reason == ExitReason.DATA_LOST
    assert "stale" in s.message
    assert s.watchdog_trips >= 1  # (an extra, genuine one is possible on a starved machine)
    assert s.holds_sent == s.watchdog_trips + 1
    assert s.duration_s < 30
    assert time.monotonic() - t_kill < 5


def _deploy_cmd(url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "c3mpc.cli", "deploy", "franka-ball", "--bridge", url,
            *extra]


def test_sigint_ends_deploy_cleanly_with_a_final_hold(tmp_path):
    st, robot = start_sim_robot()
    try:
        proc = subprocess.Popen(_deploy_cmd(st.server.url, "--report", str(tmp_path)),
                                cwd=REPO, env=repo_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            assert wait_until(lambda: len(robot.commands) >= 50, 30)
            t_sig = time.monotonic()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, err
        summary = json.loads((tmp_path / "summary.json").read_text())
        assert summary["exit_reason"] == "interrupted"
        assert "interrupted" in out
        # the server thread may still be dispatching the last messages
        hold = _final_hold(tmp_path)
        assert wait_until(lambda: tuple(robot.commands[-1].position) == hold, 2)
        assert robot.commands[-1].t_receive > t_sig and _in_box(hold)
        assert summary["holds_sent"] == 1 and summary["commands_sent"] >= 50
        assert "[deploy franka-ball]" in err  # the status line
        records = json.loads((tmp_path / "interventions.json").read_text())
        assert records[-1]["kind"] == "shutdown"
    finally:
        st.stop()


def test_end_to_end_rehearsal_against_the_simulated_robot(tmp_path):
    """`c3mpc deploy franka-ball --duration 2` against the simulated robot: the loop runs at its
    rate with no safety intervention, and the simulated end effector goes round the circle."""
    st, robot = start_sim_robot(options=SimRobotOptions())
    try:
        t0 = time.monotonic()
        proc = subprocess.run(_deploy_cmd(st.server.url, "--duration", "2", "--report",
                                          str(tmp_path)),
                              cwd=REPO, env=repo_env(), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        s = json.loads((tmp_path / "summary.json").read_text())
        assert s["exit_reason"] == "completed"
        rate, duration = 100.0, 2.0
        info = {k: s[k] for k in ("commands_sent", "achieved_rate_hz", "overruns",
                                  "interventions_by_kind", "watchdog_trips")}
        assert 0.9 * rate * duration <= s["commands_sent"] <= rate * duration + 1, info
        assert s["safety_interventions"] == 0 and s["watchdog_trips"] == 0, info
        assert s["rejected_state_messages"] == 0 and s["rejected_camera_messages"] == 0
        # Every command the loop counted as sent reached the robot, and nothing else did.
        pose_pub = s["transport"]["publishers"][0]
        assert pose_pub["dropped"] == 0
        assert pose_pub["sent"] == s["commands_sent"] + s["holds_sent"]
        assert wait_until(lambda: sum(c.t_receive > t0 for c in robot.commands) == pose_pub["sent"],
                     2), (sum(c.t_receive > t0 for c in robot.commands), pose_pub)
        assert not robot.rejected
        # The simulated end effector followed the targets around the circle (centre
        # (0.55, 0), r = 0.1): it swept > 180 degrees and ends near the circle.
        trace = np.array([p for t, p in robot.ee_trace if t > t0])
        rel = trace[:, :2] - np.array([0.55, 0.0])
        swept = np.abs(np.diff(np.unwrap(np.arctan2(rel[:, 1], rel[:, 0])))).sum()
        assert swept > math.pi, swept
        r_end = np.linalg.norm(rel[-20:], axis=1)
        assert np.all(np.abs(r_end - 0.1) < 0.015), r_end
        assert abs(trace[-1, 2] - trace[0, 2]) < 1e-3  # height held
        # log.csv has a row per tick
        rows = (tmp_path / "log.csv").read_text().strip().splitlines()
        assert len(rows) - 1 == s["ticks"]
        assert (tmp_path / "log.png").stat().st_size > 10_000  # the plot of the log
        # run.mcap: the documented channels; one command pose per tick, equal to log.csv's
        from c3mpc.mcap_log import channels, read_channel
        from hardware.deploy import MCAP_CHANNELS

        assert set(MCAP_CHANNELS) <= set(channels(tmp_path / "run.mcap"))
        commanded = read_channel(tmp_path / "run.mcap", "/deploy/command")
        csv_rows = [list(map(float, r.split(","))) for r in rows[1:]]
        assert len(commanded) == s["ticks"]
        np.testing.assert_allclose([r["pose.position.x"] for r in commanded],
                                   [r[8] for r in csv_rows], rtol=1e-5)  # cmd_x, 6 digits
        assert len(read_channel(tmp_path / "run.mcap", "/deploy/safety")) == len(
            json.loads((tmp_path / "interventions.json").read_text()))
    finally:
        st.stop()


def test_killing_the_robot_side_stops_commanding_within_the_threshold_and_exits(tmp_path):
    """Issue 8 acceptance: deploy runs as its own process; the robot side (bridge server) is
    killed; the watchdog trips within threshold + tolerance of the last robot state (both
    processes share CLOCK_MONOTONIC) and the process exits cleanly with a message."""
    cfg = tmp_path / "deploy.yaml"
    cfg.write_text("max_stale_time: 0.5\n")
    st, robot = start_sim_robot()
    proc = subprocess.Popen(_deploy_cmd(st.server.url, "--config", str(cfg), "--report",
                                        str(tmp_path / "rep")),
                            cwd=REPO, env=repo_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: len(robot.commands) >= 50, 30)
    finally:
        st.stop()
    last_state = robot.last_state_publish
    n_commands = len(robot.commands)
    try:
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == ExitReason.DATA_LOST.exit_code, err
    assert "data_lost" in out and "stale" in out
    s = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert s["exit_reason"] == "data_lost" and s["watchdog_trips"] >= 1
    assert s["commands_sent"] >= n_commands - 2  # the last ones may have died with the socket
    trip = [r for r in json.loads((tmp_path / "rep" / "interventions.json").read_text())
            if r["kind"] == "watchdog"][-1]
    # (the last states published while the server shut down may never have been delivered,
    # so the lower bound is checked on the deploy side's own data ages below)
    assert trip["t"] - last_state <= THRESHOLD + TOLERANCE, trip["t"] - last_state
    rows = [r.split(",") for r in
            (tmp_path / "rep" / "log.csv").read_text().strip().splitlines()[1:]]
    held = [r[1] == "1" for r in rows]
    first = len(held) - held[::-1].index(False)  # start of the final hold
    # the loop held from the trip to the end (a genuine earlier trip on a starved machine
    # would show as an earlier, recovered hold) ...
    assert all(held[first:]) and len(held) - first >= 10  # held until the exit, 0.5 s later
    # ... and it held exactly when the robot state or camera data (whose source died too)
    # became older than the threshold
    def age(row):
        return max(float(row[14]), float(row[15]))

    assert age(rows[first]) > THRESHOLD >= age(rows[first - 1])


def test_a_failing_planner_ends_the_run_with_a_hold_not_a_crash(tmp_path):
    from hardware.planner import CirclePlanner

    class Failing(CirclePlanner):
        def plan(self, robot, ball, t):
            self.calls = getattr(self, "calls", 0) + 1
            if self.calls > 20:
                raise RuntimeError("solver exploded")
            return super().plan(robot, ball, t)

    st, robot = start_sim_robot()
    try:
        s = run_deploy("franka-ball", _options(st.server.url), duration=5.0, status=None,
                       handle_signals=False, planner=Failing(), report_dir=tmp_path)
        assert s.exit_reason == ExitReason.ERROR and s.exit_reason.exit_code == 1
        assert "solver exploded" in s.message
        assert s.commands_sent == 20 and s.holds_sent == 1
        hold = _final_hold(tmp_path)
        assert wait_until(lambda: tuple(robot.commands[-1].position) == hold, 2)
        assert json.loads((tmp_path / "summary.json").read_text())["exit_reason"] == "error"
    finally:
        st.stop()


def test_deploy_rides_through_a_bridge_restart():
    """The robot-side bridge restarts mid-run: the loop holds, the transport reconnects with
    backoff and re-subscribes, and commanding resumes on the new connection."""
    st, robot = start_sim_robot()
    port = st.server.port
    th, box = _run_in_thread(st.server.url, 5.0)
    try:
        assert wait_until(lambda: len(robot.commands) >= 30, 10)
    finally:
        st.stop()
    st2, robot2 = start_sim_robot(port=port)
    try:
        assert wait_until(lambda: len(robot2.commands) >= 30, 4)  # resumed on the new robot
        th.join(15)
        s = box["summary"]
        assert s.exit_reason == ExitReason.COMPLETED
        assert s.transport["connects"] == 2 and s.transport["disconnects"] == 1
        assert s.watchdog_trips >= 1 and s.safety_interventions == 0
    finally:
        st2.stop()


@pytest.mark.parametrize("tick_on_detection", [False, True])
def test_tick_on_detection_plans_at_every_detection(tick_on_detection):
    """``tick_on_detection``: the loop also ticks when a ball detection is accepted, so a
    planner that plans once per detection starts at the detection. With a slow 10 Hz schedule
    and the simulated robot's 80 Hz camera, the planner sees (nearly) every detection and
    within a few ms of its arrival when on; about one in eight, up to 100 ms late, when off."""
    from hardware.planner import CirclePlanner

    class Recording(CirclePlanner):
        def __init__(self):
            super().__init__()
            self.seen = []

        def plan(self, robot, ball, t):
            self.seen.append((time.monotonic(), ball.count, ball.t_receive))
            return super().plan(robot, ball, t)

    planner = Recording()
    st, robot = start_sim_robot()
    try:
        s = run_deploy("franka-ball", _options(st.server.url, rate_hz=10.0,
                                               tick_on_detection=tick_on_detection),
                       duration=2.0, status=None, handle_signals=False, planner=planner)
    finally:
        st.stop()
    assert s.exit_reason == ExitReason.COMPLETED
    counts = [c for _, c, _ in planner.seen]
    new = np.flatnonzero(np.diff(counts) > 0) + 1
    seen_share = len(np.unique(counts)) / (counts[-1] - counts[0] + 1)
    age = np.array([planner.seen[i][0] - planner.seen[i][2] for i in new])
    if tick_on_detection:
        assert seen_share > 0.8, seen_share  # a loaded machine may merge two arrivals
        assert np.median(age) < 0.01, np.median(age)
    else:
        assert seen_share < 0.3, seen_share
        assert len(planner.seen) <= 2.0 * 10 + 2
