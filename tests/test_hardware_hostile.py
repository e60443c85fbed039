"""Hostile clients and faulty robots against the deploy path (issue 21's acceptance suite).

Real websockets on 127.0.0.1: the simulated Franka behind our rosbridge server, the deploy loop
on roslibpy, and a raw websocket client playing the attacker (any local process can open a
socket). Checked throughout: zero commands outside the workspace box reach the robot, zero
non-finite commands, and every rejected request is answered with a rosbridge ``status``.
"""

from __future__ import annotations

import json
import math
import threading
import time
import tracemalloc

import numpy as np
import pytest

pytest.importorskip("roslibpy")
pytest.importorskip("websockets")

from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from hardware import messages  # noqa: E402
from hardware.deploy import DeployOptions, ExitReason, run_deploy  # noqa: E402
from hardware.franka import FrankaOptions  # noqa: E402
from hardware.rosbridge import (  # noqa: E402
    BridgeOptions,
    RosBridgeServer,
    ServerOptions,
    ServerThread,
)
from hardware.rosbridge.auth import auth_message, mac  # noqa: E402
from hardware.safety import SafetyOptions  # noqa: E402
from hardware.sim_robot import start_sim_robot  # noqa: E402
from _loopback import wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(90)

F = FrankaOptions()
STATE, EQ, WRENCH = F.state_topic, F.equilibrium_topic, F.wrench_topic
BOX = SafetyOptions()
LO, HI = np.array(BOX.workspace_min), np.array(BOX.workspace_max)
SECRET = "0123456789abcdef"  # 16 characters, as rosauth requires


def _raw(url: str, **kw):
    """A raw websocket client (no roslibpy): the attacker."""
    return connect(url, proxy=None, compression=None, open_timeout=5, **kw)


def _recv_all(ws, timeout: float = 0.3, total: float = 60.0) -> list[dict]:
    """Every message that arrives within ``timeout`` seconds of the previous one (for at most
    ``total`` seconds)."""
    out = []
    end = time.monotonic() + total
    while time.monotonic() < end:
        try:
            out.append(json.loads(ws.recv(timeout=timeout)))
        except (TimeoutError, ConnectionClosed):
            break
    return out


def _statuses(msgs: list[dict]) -> list[dict]:
    return [m for m in msgs if m.get("op") == "status"]


def _in_box(p) -> bool:
    p = np.asarray(p)
    return bool(np.all(np.isfinite(p)) and np.all(p >= LO - 1e-12) and np.all(p <= HI + 1e-12))


def _deploy_in_thread(url: str, duration: float, **kw):
    box: dict = {}

    def target():
        box["summary"] = run_deploy("franka-ball", DeployOptions(
            bridge=kw.pop("bridge", BridgeOptions(url=url)), **kw), duration=duration,
            status=None, handle_signals=False)

    th = threading.Thread(target=target, daemon=True)
    th.start()
    return th, box


def _franka_state(p, stamp: float, mode: int = 2, errors=()) -> dict:
    T = messages.transform_from_pose(np.asarray(p, float), np.array([1.0, 0, 0, 0]))
    return messages.franka_state(T, stamp, robot_mode=mode, current_errors=errors)


# -- spoofed robot state -------------------------------------------------------------------
def test_spoofed_future_and_nan_stamped_states_are_rejected_and_do_not_poison_the_stream():
    """An attacker publishes robot states on the state topic: one at (1.2, 0.9, 0.9) stamped
    10⁶ s in the future, others with NaN stamps (sent as the JSON token NaN, forwarded as
    null) and NaN positions. The deploy side rejects them, keeps accepting the real states
    (no watchdog trip, the run completes), and no command outside the box or non-finite
    reaches the robot, holds included. (A watchdog trip is possible on a loaded machine; its
    hold passes the safety layer like every command.)"""
    st, robot = start_sim_robot()
    try:
        th, box = _deploy_in_thread(st.server.url, 2.0)
        assert wait_until(lambda: len(robot.commands) >= 30, 10)
        with _raw(st.server.url) as ws:
            now = time.time()
            spoofs = [_franka_state([1.2, 0.9, 0.9], now + 1e6)]
            nan_stamp = _franka_state([0.6, 0.0, 0.15], now)
            nan_stamp["header"]["stamp"]["secs"] = math.nan
            spoofs.append(nan_stamp)
            nan_pose = _franka_state([0.6, 0.0, 0.15], now + 0.001)
            nan_pose["O_T_EE"][12] = math.nan
            spoofs.append(nan_pose)
            for i, m in enumerate(spoofs * 5):
                ws.send(json.dumps({"op": "publish", "topic": STATE, "msg": m, "id": f"s{i}"}))
                time.sleep(0.02)
            assert _statuses(_recv_all(ws, 0.1)) == []  # a valid publish: no status
        th.join(15)
        s = box["summary"]
        assert s.exit_reason == ExitReason.COMPLETED, s.message
        # every spoof, and no genuine state taken for an old one (before, one future stamp
        # made every later state "not after" it and the run ended data_lost)
        assert s.rejected_state_messages >= 15
        assert sum("ahead of the local clock" in r for r in s.state_rejections) == 5
        assert not any("not after" in r for r in s.state_rejections), s.state_rejections
        if s.rejected_state_messages > 15:  # only a starved machine delays genuine states
            print("genuine states rejected on this (loaded) run:", s.state_rejections)
        assert s.commands_sent >= 150
        cmds = list(robot.commands)
        assert all(_in_box(c.position) for c in cmds)
        assert not robot.rejected  # the robot-side guard never had to step in
    finally:
        st.stop()


# -- commands from an unauthenticated local client -----------------------------------------
def test_out_of_box_command_walk_and_5000_newton_wrench_are_rejected_with_a_status():
    """A local client walks the equilibrium down in 2 cm steps to z = -0.65 m and sends a
    5000 N feed-forward force. The robot-side guard accepts only the in-box steps, answers
    every rejected one with a status error (id echoed) and never applies the wrench."""
    st, robot = start_sim_robot()
    try:
        with _raw(st.server.url) as ws:
            ws.send(json.dumps({"op": "advertise", "topic": EQ,
                                "type": "geometry_msgs/PoseStamped"}))
            ws.send(json.dumps({"op": "advertise", "topic": WRENCH,
                                "type": "geometry_msgs/WrenchStamped"}))
            p0 = st.call(lambda: robot.p.copy())
            zs = np.arange(p0[2], -0.65 - 1e-9, -0.02)
            replies = []
            for i, z in enumerate(zs):
                p = np.array([p0[0], p0[1], z])
                msg = messages.pose_stamped(p, [1.0, 0, 0, 0], "panda_link0", time.time())
                ws.send(json.dumps({"op": "publish", "topic": EQ, "msg": msg, "id": f"w{i}"}))
                replies += _recv_all(ws, 0.04)  # the arm follows (K = 500: ~0.1 s)
            wrench = messages.wrench_stamped([0, 0, -5000.0], [0, 0, 0], "panda_link0",
                                             time.time())
            ws.send(json.dumps({"op": "publish", "topic": WRENCH, "msg": wrench, "id": "f"}))
            replies += _recv_all(ws, 0.3)
        outside = [f"w{i}" for i, z in enumerate(zs) if z < LO[2]]
        status = _statuses(replies)
        ids = [m.get("id") for m in status]
        assert ids == outside + ["f"], ids
        assert all(m["level"] == "error" and "rejected by the robot" in m["msg"]
                   for m in status)
        assert "outside the workspace box" in status[0]["msg"]
        assert "5000" in status[-1]["msg"] or "above the limits" in status[-1]["msg"]
        cmds = list(robot.commands)
        assert len(cmds) == len(zs) - len(outside)
        assert all(_in_box(c.position) for c in cmds)
        assert st.call(lambda: robot.f_d.tolist()) == [0.0, 0.0, 0.0]
        assert st.call(lambda: robot.p[2]) > LO[2] - 0.005  # the arm stayed above the table
        assert len(robot.rejected) == len(outside) + 1
    finally:
        st.stop()


# -- authentication and origins ------------------------------------------------------------
def _auth_server():
    return start_sim_robot(auth_secret=SECRET)


def test_unauthenticated_clients_read_nothing_and_command_nothing():
    """With a secret, a client that has not authenticated gets a status error for each
    request, no robot state, and moves nothing; a wrong MAC, a stale t and a replayed MAC are
    refused; three failures close the connection (1008); a valid auth op opens everything."""
    st, robot = _auth_server()
    try:
        url = st.server.url
        with _raw(url) as ws:
            ws.send(json.dumps({"op": "subscribe", "topic": STATE, "id": "sub"}))
            pose = messages.pose_stamped(st.call(lambda: robot.p.copy()), [1.0, 0, 0, 0],
                                         "panda_link0", time.time())
            ws.send(json.dumps({"op": "publish", "topic": EQ, "msg": pose, "id": "pub"}))
            msgs = _recv_all(ws, 0.3)
            assert [m["op"] for m in msgs] == ["status", "status"]  # no state message
            assert [m["id"] for m in msgs] == ["sub", "pub"]
            assert all("not authenticated" in m["msg"] for m in msgs)
            # a valid auth op, then the same again (replay) from another connection
            good = auth_message(SECRET, "127.0.0.1")
            ws.send(json.dumps(good))
            ws.send(json.dumps({"op": "subscribe", "topic": STATE, "id": "sub2"}))
            got = _recv_all(ws, 0.2, total=0.3)
            assert any(m["op"] == "publish" and m["topic"] == STATE for m in got)
            assert _statuses(got) == []
        assert len(robot.commands) == 0
        with _raw(url) as ws:
            bad_mac = dict(auth_message(SECRET, "127.0.0.1"), mac="0" * 128)
            stale = auth_message(SECRET, "127.0.0.1", now=time.time() - 60)
            for m in (good, bad_mac, stale):
                ws.send(json.dumps(m))
            msgs = _recv_all(ws, 0.3)
            text = [m["msg"] for m in _statuses(msgs)]
            assert len(text) == 3 and "replay" in text[0] and "MAC does not match" in text[1]
            assert "from the server clock" in text[2]
            with pytest.raises(ConnectionClosed) as ei:
                ws.recv(timeout=1)
            assert ei.value.rcvd is not None and ei.value.rcvd.code == 1008
    finally:
        st.stop()


def test_rosauth_mac_formula_and_secret_loading(tmp_path, monkeypatch):
    """The MAC is rosauth's: SHA-512 hex of secret + client + dest + rand + whole seconds of
    t + level + whole seconds of end (computed here independently); the secret comes from a
    file's first line or the environment, at least 16 characters."""
    import hashlib

    from hardware.errors import HardwareValueError
    from hardware.rosbridge.auth import check_auth, load_secret

    expected = hashlib.sha512((SECRET + "ws-client" + "robot-pc" + "r4nd" + "1700000000"
                               + "admin" + "1700086400").encode()).hexdigest()
    assert mac(SECRET, "ws-client", "robot-pc", "r4nd", 1700000000.7, "admin",
               1700086400.2) == expected
    m = auth_message(SECRET, "robot-pc", client="ws-client", now=1700000000.7)
    assert m["t"] == 1700000000 and len(m["rand"]) == 32
    assert check_auth(SECRET, m, 1700000002.0, 5.0) is None
    assert "from the server clock" in check_auth(SECRET, m, 1700000010.0, 5.0)
    assert "MAC" in check_auth("x" * 16, m, 1700000002.0, 5.0)
    assert "'t'" in check_auth(SECRET, dict(m, t="1700000000"), 1700000002.0, 5.0)
    f = tmp_path / "secret"
    f.write_text(SECRET + "\nignored\n")
    monkeypatch.setenv("C3MPC_BRIDGE_SECRET", "e" * 20)
    assert load_secret(f) == SECRET and load_secret() == "e" * 20
    monkeypatch.delenv("C3MPC_BRIDGE_SECRET")
    assert load_secret() is None
    f.write_text("short")
    with pytest.raises(HardwareValueError, match="at least 16"):
        load_secret(f)
    with pytest.raises(HardwareValueError, match="cannot read"):
        load_secret(tmp_path / "missing")
    with pytest.raises(HardwareValueError, match="auth_secret"):
        RosBridgeServer(auth_secret="short")


def test_deploy_authenticates_from_a_secret_file_and_fails_clearly_without_it(tmp_path):
    st, robot = _auth_server()
    try:
        secret_file = tmp_path / "bridge.secret"
        secret_file.write_text(SECRET + "\n")
        s = run_deploy("franka-ball", DeployOptions(
            bridge=BridgeOptions(url=st.server.url, auth_secret_file=str(secret_file),
                                 auth_secret_env="")), duration=1.0, status=None,
            handle_signals=False)
        assert s.exit_reason == ExitReason.COMPLETED and s.commands_sent >= 80
        n = s.commands_sent + s.holds_sent
        assert wait_until(lambda: len(robot.commands) == n, 2)
        s = run_deploy("franka-ball", DeployOptions(
            bridge=BridgeOptions(url=st.server.url, auth_secret_env=""), startup_timeout=1.0),
            duration=1.0, status=None, handle_signals=False)
        assert s.exit_reason == ExitReason.STARTUP_TIMEOUT
        assert "not authenticated" in s.message  # the bridge's status reached the operator
        assert len(robot.commands) == n
    finally:
        st.stop()


def test_foreign_origin_is_refused_at_the_handshake():
    sth = ServerThread(RosBridgeServer(options=ServerOptions(
        allowed_origins=("http://localhost:8080",)))).start()
    try:
        url = sth.server.url
        with pytest.raises(InvalidStatus) as ei:
            _raw(url, origin="http://evil.example")
        assert ei.value.response.status_code == 403
        with _raw(url, origin="http://localhost:8080") as ws:  # allowed browser origin
            ws.send("{}")
            assert _statuses(_recv_all(ws, 0.2))[0]["level"] == "error"
        with _raw(url) as ws:  # no Origin: a script or roslibpy
            ws.send(json.dumps({"op": "set_level", "level": "info"}))
            assert _recv_all(ws, 0.1) == []
        assert sth.call(lambda: sth.server.rejected_handshakes) == 1
    finally:
        sth.stop()
    sth = ServerThread(RosBridgeServer()).start()  # default: no browser origin at all
    try:
        with pytest.raises(InvalidStatus):
            _raw(sth.server.url, origin="http://localhost:8080")
    finally:
        sth.stop()


# -- floods and resource exhaustion --------------------------------------------------------
def test_a_5000_message_flood_of_malformed_requests_gets_5000_statuses_and_no_disconnect():
    sth = ServerThread(RosBridgeServer()).start()
    try:
        sth.call(lambda: sth.server.advertise("/known", "std_msgs/Float64"))
        bad = [
            lambda i: "not json",
            lambda i: json.dumps([1, 2]),
            lambda i: json.dumps({"op": "fly", "id": i}),
            lambda i: json.dumps({"op": "advertise", "topic": "/x", "id": i}),  # no type
            lambda i: json.dumps({"op": "publish", "topic": f"/unknown{i}", "msg": {},
                                  "id": i}),
            lambda i: json.dumps({"op": "publish", "topic": "/known", "msg": 3, "id": i}),
            lambda i: json.dumps({"op": "subscribe", "topic": ["a"], "id": i}),
            lambda i: json.dumps({"op": "unsubscribe", "topic": {"a": 1}, "id": i}),
            lambda i: json.dumps({"op": "subscribe", "topic": "/a", "id": [i]}),
            lambda i: json.dumps({"op": "subscribe", "topic": "/bad name!", "id": i}),
            lambda i: json.dumps({"op": "call_service", "service": 5, "id": i}),
        ]
        n = 5000
        with _raw(sth.server.url, max_queue=None) as ws:
            got = []
            reader = threading.Thread(target=lambda: got.extend(_recv_all(ws, 1.0)))
            reader.start()
            for i in range(n):
                ws.send(bad[i % len(bad)](i))
            reader.join(60)
            assert len(got) == n and all(m["op"] == "status" and m["level"] == "error"
                                         for m in got)
            with_id = [i for i in range(n) if i % len(bad) not in (0, 1, 8)]
            assert [m.get("id") for m in got if "id" in m] == with_id  # ids echoed, in order
            # still connected and served
            ws.send(json.dumps({"op": "subscribe", "topic": "/known", "id": "ok"}))
            time.sleep(0.1)
            sth.call(lambda: sth.server.publish("/known", {"data": math.nan}))
            raw = ws.recv(timeout=2)
            assert "NaN" not in raw and json.loads(raw)["msg"] == {"data": None}  # NaN -> null
        assert sth.call(lambda: sth.server.status_count) == n
    finally:
        sth.stop()


def test_unique_megabyte_topic_names_leave_server_memory_bounded():
    """Topic names of ~1 MB (each unique), then thousands of unique valid names: every
    request is answered, the server's topic table stays bounded and is emptied when the
    client leaves, and the Python heap does not grow with what was sent (tracemalloc)."""
    o = ServerOptions()
    sth = ServerThread(RosBridgeServer(options=o)).start()
    try:
        n_big, n_small = 30, 2000
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        with _raw(sth.server.url, max_size=None) as ws:
            got = []
            reader = threading.Thread(target=lambda: got.extend(_recv_all(ws, 1.0)))
            reader.start()
            for i in range(n_big):
                name = f"/{i:04d}" + "a" * 1_000_000
                ws.send(json.dumps({"op": ("subscribe", "advertise")[i % 2], "topic": name,
                                    "type": "std_msgs/String", "id": i}))
            for i in range(n_small):
                ws.send(json.dumps({"op": "advertise", "topic": f"/t{i}_" + "b" * 200,
                                    "type": "std_msgs/String", "id": f"s{i}"}))
            reader.join(60)
            grown = tracemalloc.get_traced_memory()[0] - before
            n_topics = sth.call(lambda: sth.server.n_topics)
        sent_bytes = n_big * 1_000_000 + n_small * 220
        tracemalloc.stop()
        status = _statuses(got)
        assert len(status) == n_big + n_small - o.max_topics_per_client
        assert all("characters" in m["msg"] for m in status[:n_big])
        assert all("already holds" in m["msg"] for m in status[n_big:])
        assert n_topics == o.max_topics_per_client
        assert grown < 0.1 * sent_bytes, (grown, sent_bytes)
        assert wait_until(lambda: sth.call(lambda: sth.server.n_topics) == 0, 2)
    finally:
        sth.stop()


# -- robot faults --------------------------------------------------------------------------
def test_reflex_state_stops_commanding_within_one_control_period():
    """The robot enters REFLEX with cartesian_reflex (as after a collision): the deploy side
    publishes nothing once the first fault state arrived, the robot receives no command more
    than one control period (+ delivery) after it published that state, and the run ends
    with exit_reason robot_fault (status 6) naming the mode and the flag, without a final
    hold; the fault is latched even though the robot recovers right after."""
    st, robot = start_sim_robot()
    try:
        th, box = _deploy_in_thread(st.server.url, 10.0)
        assert wait_until(lambda: len(robot.commands) >= 50, 10)
        st.call(lambda: robot.inject_fault(4, ("cartesian_reflex",)))
        assert wait_until(lambda: robot.fault_published_at == robot.fault_published_at, 2)
        time.sleep(0.1)
        t_fault = robot.fault_published_at
        st.call(robot.recover)  # a transient fault is still a fault
        th.join(15)
        s = box["summary"]
        assert s.exit_reason == ExitReason.ROBOT_FAULT and s.exit_reason.exit_code == 6
        assert "REFLEX" in s.message and "cartesian_reflex" in s.message
        assert s.robot_fault.startswith("robot_mode REFLEX (4)")
        assert s.holds_sent == 0 and s.duration_s < 5
        period = 0.01  # one tick at 100 Hz
        # the loop stopped within one period (+ scheduling slack on a loaded 2-core box) of
        # the fault state's arrival; the adapter published nothing after it in any case
        assert 0 <= s.fault_reaction_s <= period + 0.01, s.fault_reaction_s
        assert s.refused_commands <= 1
        delivery = 0.04  # robot side: loopback both ways, loaded box
        late = [c.t_receive - t_fault for c in robot.commands if c.t_receive > t_fault]
        late += [t - t_fault for t in robot.rejected_times if t > t_fault]
        assert all(d <= period + delivery for d in late), late
    finally:
        st.stop()


def test_fault_states_and_stamps_are_validated_before_use():
    """Direct checks of the state validation (detached adapter): mode and error flags are
    parsed and latched, malformed ones rejected; stamps must be finite, near the local clock
    and not from the future; after a spoofed future stamp later real states are accepted;
    the velocity estimate stays finite; only SafeCommands can be sent."""
    from hardware.franka import FrankaAdapter
    from hardware.safety import Target

    a = FrankaAdapter(None)
    now = time.time()
    t0 = time.monotonic()
    a._on_state(_franka_state([0.5, 0, 0.2], now), t0)
    a._on_state(_franka_state([1.2, 0.9, 0.9], now + 1e6), t0 + 0.005)  # future
    a._on_state(_franka_state([1.2, 0.9, 0.9], now + 0.5), t0 + 0.006)  # 0.5 s ahead
    a._on_state(_franka_state([0.5, 0, 0.2], now - 5.0), t0 + 0.007)  # 5 s old
    bad = _franka_state([0.5, 0, 0.2], now + 0.01)
    bad["robot_mode"] = "2"  # a number sent as a string
    a._on_state(bad, t0 + 0.01)
    bad = _franka_state([0.5, 0, 0.2], now + 0.01)
    bad["current_errors"]["cartesian_reflex"] = 1
    a._on_state(bad, t0 + 0.01)
    a._on_state(_franka_state([0.501, 0, 0.2], now + 0.01), t0 + 0.01)  # real: accepted
    st = a.state()
    assert a.rejected == 5 and st.count == 2 and a.fault is None
    assert "behind the local clock" in a.rejections[2]
    np.testing.assert_allclose(st.velocity, [0.5 * 0.001 / 0.01, 0, 0], rtol=1e-5)
    assert all("ahead of the local clock" in r for r in list(a.rejections)[:2])
    a._on_state(_franka_state([0.501, 0, 0.2], now + 0.02, mode=4,
                              errors=("cartesian_reflex", "joint_reflex")), t0 + 0.02)
    assert a.fault is not None and a.fault.errors == ("cartesian_reflex", "joint_reflex")
    a._on_state(_franka_state([0.501, 0, 0.2], now + 0.03), t0 + 0.03)
    assert a.fault.robot_mode == 4  # latched
    with pytest.raises(TypeError, match="SafeCommand"):
        a.command(Target(np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3), np.zeros(3)))


def test_robot_validates_commands_like_rosbridge_and_answers_every_rejection():
    """A command without a header or with an empty frame_id is accepted (rosbridge delivers
    it, the stock controller ignores the header); numbers sent as strings, unknown fields and
    another frame are refused with a status naming the problem."""
    st, robot = start_sim_robot()
    try:
        p = st.call(lambda: robot.p.copy()) + [0.0, 0.0, 0.01]
        good = messages.pose_stamped(p, [1.0, 0, 0, 0], "panda_link0", time.time())
        no_header = {"pose": good["pose"]}
        empty_frame = json.loads(json.dumps(good))
        empty_frame["header"]["frame_id"] = ""
        as_string = json.loads(json.dumps(good))
        as_string["pose"]["position"]["z"] = str(p[2])
        extra = json.loads(json.dumps(good))
        extra["pose"]["position"]["speed"] = 1.0
        other = json.loads(json.dumps(good))
        other["header"]["frame_id"] = "world"
        with _raw(st.server.url) as ws:
            ws.send(json.dumps({"op": "advertise", "topic": EQ,
                                "type": "geometry_msgs/PoseStamped"}))
            for i, m in enumerate([no_header, empty_frame, as_string, extra, other]):
                ws.send(json.dumps({"op": "publish", "topic": EQ, "msg": m, "id": i}))
            status = _statuses(_recv_all(ws, 0.3))
        assert [m["id"] for m in status] == [2, 3, 4]
        assert "non-numeric field 'z'" in status[0]["msg"]
        assert "unknown field(s) ['speed']" in status[1]["msg"]
        assert "frame_id 'world'" in status[2]["msg"]
        assert wait_until(lambda: len(robot.commands) == 2, 2)
    finally:
        st.stop()


def test_c3mpc_deploy_cli_authenticates_with_a_secret_file(tmp_path):
    """``c3mpc deploy --auth-secret-file F`` against a bridge that requires authentication."""
    import subprocess
    import sys

    from _loopback import REPO, repo_env

    st, robot = _auth_server()
    try:
        secret_file = tmp_path / "secret"
        secret_file.write_text(SECRET + "\n")
        env = repo_env()
        env.pop("C3MPC_BRIDGE_SECRET", None)
        proc = subprocess.run([sys.executable, "-m", "c3mpc.cli", "deploy", "franka-ball",
                               "--bridge", st.server.url, "--duration", "1", "--quiet",
                               "--auth-secret-file", str(secret_file)],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "authenticated" in proc.stdout and "NOT authenticated" not in proc.stdout
        assert len(robot.commands) >= 50
    finally:
        st.stop()


def test_a_robot_side_rejection_reaches_the_deploy_summary():
    """The deploy side's safety box is wider than the robot's guard (a configuration
    mistake): the robot refuses the commands outside its box with a status, and the deploy
    summary lists those statuses for the operator."""
    from hardware.bridged_robot import RobotGuardOptions
    from hardware.sim_robot import SimRobotOptions

    guard = RobotGuardOptions(workspace_max=(0.64, 0.35, 0.45))  # the circle reaches x = 0.65
    st, robot = start_sim_robot(options=SimRobotOptions(guard=guard))
    try:
        s = run_deploy("franka-ball", DeployOptions(bridge=BridgeOptions(url=st.server.url)),
                       duration=1.0, status=None, handle_signals=False)
        assert s.exit_reason == ExitReason.COMPLETED
        assert robot.rejected and s.bridge_statuses
        assert all("outside the workspace box" in m for m in s.bridge_statuses)
        assert all(_in_box(c.position) and c.position[0] <= 0.64 + 1e-9
                   for c in robot.commands)
    finally:
        st.stop()


def test_throttle_queues_cannot_hoard_memory():
    """A client that subscribes to its own topic with a one-hour throttle and a 1000-message
    queue, then publishes 60 messages of 0.5 MB: what the server buffers for it stays within
    max_client_buffer_bytes (the rest is dropped and counted)."""
    budget = 4 << 20
    sth = ServerThread(RosBridgeServer(options=ServerOptions(
        max_client_buffer_bytes=budget))).start()
    try:
        with _raw(sth.server.url, max_size=None) as ws:
            ws.send(json.dumps({"op": "advertise", "topic": "/x", "type": "std_msgs/String"}))
            ws.send(json.dumps({"op": "subscribe", "topic": "/x", "throttle_rate": 3_600_000,
                                "queue_length": 1000}))
            payload = "p" * 500_000
            for i in range(60):
                ws.send(json.dumps({"op": "publish", "topic": "/x",
                                    "msg": {"data": payload, "i": i}}))
            first = json.loads(ws.recv(timeout=5))  # the first message passes the throttle
            assert first["msg"]["i"] == 0
            assert _recv_all(ws, 0.3) == []  # the rest waits for the next interval (1 h)

            def buffered():
                (c,) = list(sth.server._clients)
                return c.buffered, c.dropped

            assert wait_until(lambda: sth.call(buffered)[1] > 0, 5)
            held, dropped = sth.call(buffered)
            assert held <= budget and held + dropped * 500_000 >= 59 * 500_000 * 0.99
    finally:
        sth.stop()
