"""ROS-bridge transport (roslibpy) against our rosbridge v2 server, over real websockets on
127.0.0.1 (random free ports; every server is started and stopped by its test)."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import numpy as np
import pytest

pytest.importorskip("roslibpy")
pytest.importorskip("websockets")

from hardware.errors import BridgeConnectionError, HardwareValueError  # noqa: E402
from hardware.rosbridge import (  # noqa: E402
    BridgeOptions,
    RosBridgeServer,
    RosBridgeTransport,
    ServerThread,
)
from _loopback import free_port, wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server():
    st = ServerThread(RosBridgeServer()).start()
    yield st
    st.stop()


def _transport(url: str, **kw) -> RosBridgeTransport:
    tr = RosBridgeTransport(BridgeOptions(url=url, **kw))
    tr.connect()
    return tr


def test_round_trip_between_two_roslibpy_clients_and_in_process_endpoints(server):
    """Messages published by one client arrive intact at another client and at in-process
    handlers; in-process publications reach the subscribed client; a service call works."""
    got_in_process = []
    server.call(lambda: server.server.on_publish("/chatter", "custom_msgs/Nested",
                                                 lambda m, t: got_in_process.append(m)))
    server.call(lambda: server.server.add_service(
        "/add", lambda args: {"sum": args["a"] + args["b"]}))
    a = _transport(server.server.url)
    b = _transport(server.server.url)
    try:
        sub = b.subscribe("/chatter", "custom_msgs/Nested")
        pub = a.publisher("/chatter", "custom_msgs/Nested", queue_size=64)
        assert wait_until(lambda: any(c.subscriptions for c in server.call(
            server.server.client_stats)), 5)
        msgs = [{"header": {"seq": i, "stamp": {"secs": 12, "nsecs": 345},
                            "frame_id": "panda_link0"},
                 "values": [0.1 * i, -1e-300, 1.7976931348623157e308, i],
                 "text": "équilibre ✓", "nested": {"flag": i % 2 == 0, "empty": []}}
                for i in range(20)]
        for m in msgs:
            assert pub.publish(m)
        assert a.flush(5)
        assert wait_until(lambda: len(got_in_process) == 20 and sub.count == 20, 5)
        assert got_in_process == msgs  # in order and bit-exact (JSON round trip of floats)
        assert sub.latest().msg == msgs[-1]
        st = pub.stats()
        assert (st.enqueued, st.sent, st.dropped, st.queued) == (20, 20, 0, 0)

        state_sub = a.subscribe("/state", "std_msgs/Float64MultiArray")
        assert wait_until(lambda: sum("/state" in c.subscriptions for c in server.call(
            server.server.client_stats)) == 1, 5)
        t_before = time.monotonic()
        server.call(lambda: server.server.publish("/state", {"data": [1.5, 2.5]}))
        r = state_sub.wait(5)
        assert r is not None and r.msg == {"data": [1.5, 2.5]}
        assert t_before <= r.t_receive <= time.monotonic()
        assert 0 <= state_sub.age() < 5

        import roslibpy

        svc = roslibpy.Service(a._ros, "/add", "custom_srvs/Add")
        assert svc.call(roslibpy.ServiceRequest({"a": 2, "b": 40}), timeout=5)["sum"] == 42
    finally:
        a.close()
        b.close()


def test_server_answers_malformed_and_type_conflicting_requests_with_status_errors(server):
    """The server rejects garbage and type conflicts with a status message, keeps serving."""
    from websockets.asyncio.client import connect

    async def talk():
        async with connect(server.server.url) as ws:
            await ws.send("not json")
            e1 = json.loads(await ws.recv())
            await ws.send(json.dumps({"op": "advertise", "topic": "/x", "type": "a/A"}))
            await ws.send(json.dumps({"op": "subscribe", "topic": "/x", "type": "b/B"}))
            e2 = json.loads(await ws.recv())
            await ws.send(json.dumps({"op": "fly"}))
            e3 = json.loads(await ws.recv())
            await ws.send(json.dumps({"op": "subscribe", "topic": "/x", "type": "a/A",
                                      "id": "s1"}))
            await asyncio.sleep(0.1)
            return e1, e2, e3

    fut = asyncio.run_coroutine_threadsafe(talk(), server.loop)
    e1, e2, e3 = fut.result(10)
    assert e1["op"] == e2["op"] == e3["op"] == "status"
    assert "malformed" in e1["msg"] and "cannot subscribe" in e2["msg"]
    assert "unsupported op" in e3["msg"]


def test_connect_timeout_raises_bridge_connection_error():
    port = free_port()  # nothing listens there
    tr = RosBridgeTransport(BridgeOptions(url=f"ws://127.0.0.1:{port}", connect_timeout=0.5))
    t0 = time.monotonic()
    with pytest.raises(BridgeConnectionError) as ei:
        tr.connect()
    assert 0.5 <= time.monotonic() - t0 < 3.0
    assert ei.value.timeout == 0.5 and str(port) in ei.value.url


def test_reconnects_with_backoff_after_server_restart():
    """Stop the server, start a new one on the same port: the transport reconnects by itself,
    re-subscribes, and publishes to the new server; nothing queued while down is replayed
    beyond the bounded queue."""
    st = ServerThread(RosBridgeServer()).start()
    port = st.server.port
    tr = _transport(st.server.url, reconnect_initial_delay=0.1, reconnect_max_delay=0.5,
                    queue_size=4)
    try:
        sub = tr.subscribe("/state", "std_msgs/Int32")
        pub = tr.publisher("/cmd", "std_msgs/Int32")
        assert wait_until(lambda: st.call(lambda: st.server.n_clients) == 1, 5)
        st.stop()
        assert wait_until(lambda: not tr.is_connected, 5)
        for i in range(10):  # published while down: bounded queue keeps the newest 4
            pub.publish({"data": i})
        s = pub.stats()
        assert s.queued == 4 and s.dropped == 6 and s.sent == 0
        time.sleep(0.6)  # a few failed attempts with backoff
        st2 = ServerThread(RosBridgeServer(port=port)).start()
        try:
            got = []
            st2.call(lambda: st2.server.on_publish("/cmd", "std_msgs/Int32",
                                                   lambda m, t: got.append(m["data"])))
            assert tr.wait_connected(10)
            assert wait_until(lambda: got == [6, 7, 8, 9], 5), got
            # roslibpy re-subscribes ~1 s after the drop
            def delivered():
                st2.call(lambda: st2.server.publish("/state", {"data": 99}))
                return sub.latest() is not None and sub.latest().msg == {"data": 99}
            assert wait_until(delivered, 10, dt=0.05)
            stats = tr.stats()
            assert stats.connects == 2 and stats.disconnects == 1 and stats.connected
        finally:
            tr.close()
            st2.stop()
    finally:
        tr.close()
        st.stop()


def test_back_pressure_slow_consumer_bounds_queue_and_counts_drops(server):
    """The server stops reading: TCP fills, the socket write buffer passes its threshold, the
    transport pauses; the bounded queue drops the oldest setpoints. After the consumer resumes,
    exactly the messages counted as sent arrive, in order, ending with the newest."""
    got: list[int] = []
    server.call(lambda: server.server.on_publish("/setpoint", "std_msgs/String",
                                                 lambda m, t: got.append(m["i"])))
    tr = _transport(server.server.url, queue_size=8, write_buffer_bytes=65536)
    try:
        pub = tr.publisher("/setpoint", "std_msgs/String")
        logpub = tr.publisher("/log", "std_msgs/String", queue_size=3, policy="drop_newest")
        server.call(lambda: server.server.pause_reading(True))
        payload = "x" * 100_000
        n = 600
        refused = 0
        for i in range(n):
            pub.publish({"i": i, "data": payload})
            if i % 50 == 0:
                refused += not logpub.publish({"i": i})
            time.sleep(0.001)
        s = pub.stats()
        stats = tr.stats()
        assert stats.flow_pauses >= 1
        assert s.max_depth <= 8 and s.queued <= 8 + tr.options.max_in_flight
        assert s.enqueued == n == s.sent + s.dropped + s.queued
        assert s.dropped > n // 2  # most were shed while the consumer stalled
        ls = logpub.stats()
        assert refused >= 1 and ls.dropped == refused  # drop_newest refuses, counts
        server.call(lambda: server.server.pause_reading(False))
        assert tr.flush(20)
        s = pub.stats()
        assert s.enqueued == s.sent + s.dropped and s.queued == 0
        assert wait_until(lambda: len(got) == s.sent, 10), (len(got), s.sent)
        assert got == sorted(got) and got[-1] == n - 1
    finally:
        tr.close()


def test_bridge_options_validate():
    with pytest.raises(HardwareValueError, match="url"):
        BridgeOptions(url="http://x")
    with pytest.raises(HardwareValueError, match="queue_size"):
        BridgeOptions(queue_size=0)
    with pytest.raises(HardwareValueError, match="policy"):
        tr = RosBridgeTransport()
        tr._ros = object()  # pretend connected: validation happens before any I/O
        tr.publisher("/x", "a/A", policy="fifo")  # type: ignore[arg-type]


def test_subscribe_throttle_rate_queue_length_and_latch_as_rosbridge(server):
    """A 200 Hz topic subscribed with throttle_rate 100 ms: queue_length 1 delivers about one
    message per 100 ms (the newest of the interval), queue_length 0 the first message after
    each interval (rosbridge's two handlers); a latched topic's last message reaches a client
    that subscribes later."""
    from websockets.sync.client import connect

    srv = server.server
    server.call(lambda: srv.advertise("/fast", "std_msgs/Int32"))

    def feed(stop):
        i = 0
        while not stop.is_set():
            i += 1
            server.call(lambda i=i: srv.publish("/fast", {"data": i}))
            time.sleep(0.005)

    stop = threading.Event()
    with connect(srv.url, proxy=None) as q1, connect(srv.url, proxy=None) as q0, connect(
            srv.url, proxy=None) as plain:
        q1.send(json.dumps({"op": "subscribe", "topic": "/fast", "throttle_rate": 100,
                            "queue_length": 1}))
        q0.send(json.dumps({"op": "subscribe", "topic": "/fast", "throttle_rate": 100}))
        plain.send(json.dumps({"op": "subscribe", "topic": "/fast"}))
        time.sleep(0.1)
        feeder = threading.Thread(target=feed, args=(stop,))
        feeder.start()
        got = {"q1": [], "q0": [], "plain": []}
        t_end = time.monotonic() + 1.0
        while time.monotonic() < t_end:
            for name, ws in (("q1", q1), ("q0", q0), ("plain", plain)):
                try:
                    while True:
                        got[name].append((time.monotonic(),
                                          json.loads(ws.recv(timeout=0))["msg"]["data"]))
                except TimeoutError:
                    pass
            time.sleep(0.002)
        stop.set()
        feeder.join()
    rate_plain = len(got["plain"])
    assert rate_plain > 60, rate_plain  # ~200 Hz minus a loaded machine
    for name in ("q1", "q0"):
        n = len(got[name])
        assert 6 <= n <= 11, (name, n)  # 1 s at one message per 100 ms
        gaps = np.diff([t for t, _ in got[name]])
        assert np.all(gaps > 0.06), (name, gaps)  # never two inside one interval (+jitter)
    # latch: the last message of a latched topic reaches a late subscriber
    with connect(srv.url, proxy=None) as pub:
        pub.send(json.dumps({"op": "advertise", "topic": "/map", "type": "std_msgs/String",
                             "latch": True}))
        pub.send(json.dumps({"op": "publish", "topic": "/map", "msg": {"data": "v1"}}))
        pub.send(json.dumps({"op": "publish", "topic": "/map", "msg": {"data": "v2"}}))
        time.sleep(0.1)
        with connect(srv.url, proxy=None) as late:
            late.send(json.dumps({"op": "subscribe", "topic": "/map"}))
            assert json.loads(late.recv(timeout=2))["msg"] == {"data": "v2"}


def test_transport_authenticates_on_every_connection_reconnects_included(tmp_path):
    """With a secret file the transport's first message is the auth op, again after the
    server restarts: the subscription resumes on the new, authenticating server."""
    secret = "fedcba9876543210"
    f = tmp_path / "secret"
    f.write_text(secret)
    st = ServerThread(RosBridgeServer(auth_secret=secret)).start()
    port = st.server.port
    tr = _transport(st.server.url, reconnect_initial_delay=0.1, reconnect_max_delay=0.5,
                    auth_secret_file=str(f), auth_secret_env="")
    try:
        st.call(lambda: st.server.advertise("/state", "std_msgs/Int32"))
        sub = tr.subscribe("/state", "std_msgs/Int32")

        def delivered(server_thread, value):
            server_thread.call(lambda: server_thread.server.publish("/state", {"data": value}))
            return sub.latest() is not None and sub.latest().msg == {"data": value}

        assert wait_until(lambda: delivered(st, 1), 5, dt=0.05)
        assert st.call(lambda: st.server.status_count) == 0  # nothing was refused
        st.stop()
        assert wait_until(lambda: not tr.is_connected, 5)
        st2 = ServerThread(RosBridgeServer(port=port, auth_secret=secret)).start()
        try:
            st2.call(lambda: st2.server.advertise("/state", "std_msgs/Int32"))
            assert tr.wait_connected(10)
            assert wait_until(lambda: delivered(st2, 2), 10, dt=0.05)
            assert st2.call(lambda: st2.server.status_count) == 0
            assert all(c.authenticated for c in st2.call(st2.server.client_stats))
        finally:
            tr.close()
            st2.stop()
    finally:
        tr.close()
        st.stop()
