"""The rosbridge server's protocol details that the real clients cannot show (they never send
fragments out of order or hold a service call forever): fragment reassembly and its bounds,
outgoing fragmentation, client-offered services and their failure paths, rosapi's parameter
server, relative and private names, status levels. Raw websockets on 127.0.0.1; each server
is started and stopped by its test. The conformance with the real clients is
tests/test_rosbridge_conformance.py."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("websockets")

from websockets.sync.client import connect  # noqa: E402

from hardware.errors import HardwareValueError  # noqa: E402
from hardware.rosbridge import RosBridgeServer, ServerOptions, ServerThread  # noqa: E402
from hardware.rosbridge.rosapi import ParamServer, resolve_name  # noqa: E402
from _loopback import wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server(request):
    opts = getattr(request, "param", None) or ServerOptions()
    st = ServerThread(RosBridgeServer(options=opts)).start()
    yield st
    st.stop()


def _ws(st):
    return connect(st.server.url, proxy=None, compression=None, open_timeout=5)


def _send(ws, **m) -> None:
    ws.send(json.dumps(m))


def _recv(ws, timeout: float = 2.0) -> dict:
    return json.loads(ws.recv(timeout=timeout))


def _recv_all(ws, timeout: float = 0.3) -> list[dict]:
    out = []
    while True:
        try:
            out.append(json.loads(ws.recv(timeout=timeout)))
        except TimeoutError:
            return out


def _fragments(text: str, n: int, mid) -> list[dict]:
    size = -(-len(text) // n)
    return [{"op": "fragment", "id": mid, "data": text[i * size:(i + 1) * size], "num": i,
             "total": n} for i in range(n)]


def _subscribed(st, topic: str, n: int = 1) -> None:
    assert wait_until(lambda: sum(topic in c.subscriptions for c in st.call(
        st.server.client_stats)) >= n, 5)


# -- fragments -----------------------------------------------------------------------------
def test_fragments_reassemble_in_num_order_and_every_misuse_gets_a_status(server):
    """Out-of-order fragments make the original message (rosbridge_suite joins them in
    arrival order); duplicates, a changed total, out-of-range numbers, missing fields and a
    fragment inside a fragment are refused with a status naming the problem."""
    server.call(lambda: server.server.advertise("/f", "std_msgs/String"))
    with _ws(server) as sub, _ws(server) as pub:
        _send(sub, op="subscribe", topic="/f")
        _subscribed(server, "/f")
        text = json.dumps({"op": "publish", "topic": "/f", "msg": {"data": "abc" * 100}})
        frags = _fragments(text, 5, "m1")
        for f in [frags[i] for i in (3, 0, 4, 2)]:
            pub.send(json.dumps(f))
        _send(pub, **{**frags[2], "data": "x"})  # duplicate number
        _send(pub, **{**frags[1], "total": 6})  # total differs from the first fragment's
        _send(pub, **{**frags[1], "num": 5})  # out of range
        _send(pub, op="fragment", id="m2", num=0, total=1)  # no data
        inner = json.dumps(_fragments(text, 1, "m4")[0])
        _send(pub, op="fragment", id="m3", data=inner, num=0, total=1)  # nested
        errors = [m["msg"] for m in _recv_all(pub)]
        assert len(errors) == 5
        assert "already received" in errors[0] and "differs" in errors[1]
        assert "out of range" in errors[2] and "needs an 'id'" in errors[3]
        assert "cannot itself be a fragment" in errors[4]
        assert _recv_all(sub, 0.1) == []  # nothing delivered while one fragment is missing
        pub.send(json.dumps(frags[1]))
        assert _recv(sub)["msg"] == {"data": "abc" * 100}
        assert _recv_all(pub, 0.1) == []  # success is silent


@pytest.mark.parametrize("server", [ServerOptions(max_message_bytes=4096,
                                                  max_fragmented_messages=2,
                                                  fragment_timeout=0.3)], indirect=True)
def test_fragment_reassembly_is_bounded_in_size_count_and_time(server):
    """A fragmented message may not grow beyond max_message_bytes, a client may not keep more
    than max_fragmented_messages open, and an incomplete one is dropped after
    fragment_timeout: the server's reassembly memory returns to zero."""
    with _ws(server) as ws:
        _send(ws, op="set_level", level="warning")
        _send(ws, op="fragment", id="big", data="x" * 3000, num=0, total=3)
        _send(ws, op="fragment", id="big", data="x" * 3000, num=1, total=3)  # 6000 > 4096
        assert "exceeds 4096 bytes" in _recv(ws)["msg"]
        for mid in ("a", "b", "c"):
            _send(ws, op="fragment", id=mid, data="{", num=0, total=2)
        m = _recv(ws)
        assert m["id"] == "c" and "2 fragmented messages" in m["msg"]
        time.sleep(0.4)
        _send(ws, op="fragment", id="d", data="{", num=0, total=2)  # expires a and b
        timed_out = _recv_all(ws)
        assert sorted(m["id"] for m in timed_out) == ["a", "b"]
        assert all(m["level"] == "warning" and "timed out" in m["msg"] for m in timed_out)
        clients = list(server.server._clients)
        assert len(clients) == 1 and set(clients[0].partial) == {"d"}
        assert clients[0].partial_bytes == 1 + 64


def test_fragment_size_splits_outgoing_messages_and_is_validated(server):
    """A client that sends fragment_size gets longer messages as fragment ops whose data join
    to the message; too small a size is refused; null turns it off."""
    server.call(lambda: server.server.advertise("/big", "std_msgs/String"))
    with _ws(server) as ws:
        _send(ws, op="subscribe", topic="/big", fragment_size=10, id="s0")
        assert "fragment_size" in _recv(ws)["msg"]  # below min_fragment_size (64)
        _send(ws, op="subscribe", topic="/big", fragment_size=100)
        _subscribed(server, "/big")
        server.call(lambda: server.server.publish("/big", {"data": "z" * 1000}))
        frags = [_recv(ws) for _ in range(11)]
        assert all(f["op"] == "fragment" and f["total"] == 11 for f in frags)
        assert [f["num"] for f in frags] == list(range(11))
        assert all(len(f["data"]) <= 100 for f in frags) and len({f["id"] for f in frags}) == 1
        whole = json.loads("".join(f["data"] for f in frags))
        assert whole == {"op": "publish", "topic": "/big", "msg": {"data": "z" * 1000}}
        _send(ws, op="subscribe", topic="/big", fragment_size=None)
        time.sleep(0.1)
        server.call(lambda: server.server.publish("/big", {"data": "z" * 1000}))
        assert _recv(ws)["op"] == "publish"


# -- services offered by clients -----------------------------------------------------------
@pytest.mark.parametrize("server", [ServerOptions(service_timeout=0.3, max_pending_calls=2)],
                         indirect=True)
def test_client_offered_service_timeouts_withdrawal_and_bounds(server):
    """A provider that never answers: the caller gets result false after service_timeout (or
    its own timeout), and at most max_pending_calls wait; a provider that leaves fails its
    waiting calls; answers with a wrong id are refused; in-process services (rosapi) cannot
    be taken over; the server routes the answer under the name each side spelled."""
    with _ws(server) as provider, _ws(server) as caller:
        _send(provider, op="advertise_service", service="/rosapi/topics", type="rosapi/Topics",
              id="hijack")
        assert "served by the server itself" in _recv(provider)["msg"]
        _send(provider, op="advertise_service", service="flag", type="std_srvs/SetBool")
        assert wait_until(lambda: "/flag" in server.call(server.server.service_types), 5)
        _send(caller, op="call_service", service="/flag", args={"data": True}, id="c1")
        req = _recv(provider)
        assert req["op"] == "call_service" and req["service"] == "flag"  # its spelling
        assert req["args"] == {"data": True}
        _send(provider, op="service_response", service="flag", id="wrong", result=True,
              values={})
        assert "no call with id 'wrong'" in _recv(provider)["msg"]
        _send(provider, op="service_response", service="flag", id=req["id"], result=True,
              values={"success": True, "message": "ok"})
        assert _recv(caller) == {"op": "service_response", "service": "/flag", "id": "c1",
                                 "values": {"success": True, "message": "ok"}, "result": True}
        # never answered: timeouts (server default 0.3 s, or the call's own) and the bound
        t0 = time.monotonic()
        _send(caller, op="call_service", service="/flag", args={"data": True}, id="c2")
        _send(caller, op="call_service", service="/flag", args={"data": True}, id="c3",
              timeout=0.1)
        _send(caller, op="call_service", service="/flag", args={"data": True}, id="c4")
        r4 = _recv(caller)
        assert r4["id"] == "c4" and r4["result"] is False and "2 service calls" in r4["values"]
        r3, r2 = _recv(caller), _recv(caller)
        assert (r3["id"], r2["id"]) == ("c3", "c2")
        assert not r2["result"] and "did not answer within 0.3 s" in r2["values"]
        assert 0.25 < time.monotonic() - t0 < 2.0
        assert len(_recv_all(provider)) == 2  # c2 and c3 reached it (c4 was refused)
        # the provider leaves with a call waiting
        _send(caller, op="call_service", service="/flag", args={"data": False}, id="c5")
        assert _recv(provider)["op"] == "call_service"
    with _ws(server) as caller:  # the old caller left too; a new one finds no service
        _send(caller, op="call_service", service="/flag", id="c6")
        r6 = _recv(caller)
        assert r6["result"] is False and "does not exist" in r6["values"]
    assert server.call(lambda: len(server.server._calls)) == 0


def test_provider_leaving_fails_waiting_calls_and_unadvertise_needs_ownership(server):
    with _ws(server) as caller:
        with _ws(server) as provider, _ws(server) as other:
            _send(provider, op="advertise_service", service="/s", type="std_srvs/Trigger")
            time.sleep(0.1)
            _send(other, op="unadvertise_service", service="/s", id="u")
            assert "does not offer it" in _recv(other)["msg"]
            _send(caller, op="call_service", service="/s", id="w")
            assert _recv(provider)["op"] == "call_service"
        r = _recv(caller)
        assert r["id"] == "w" and r["result"] is False and "withdrawn" in r["values"]


# -- rosapi --------------------------------------------------------------------------------
def test_param_server_tree_semantics_and_bound():
    """ROS's parameter tree: namespaces from paths, dicts from namespaces, subtree delete,
    leaf names; relative names are global; the JSON size is bounded."""
    p = ParamServer(max_bytes=200)
    p.set("/a/b", 1)
    p.set("a/c", [1.5, "x"])
    p.set("/d", {"e": {"f": True}})
    assert p.get("/a") == {"b": 1, "c": [1.5, "x"]} and p.get("/d/e/f") is True
    assert p.names() == ["/a/b", "/a/c", "/d/e/f"]
    assert p.has("/a") and p.has("/a/b") and not p.has("/a/z") and p.get("/a/z", 7) == 7
    got = p.get("/a")
    got["b"] = 99  # a copy: the tree is not changed through it
    assert p.get("/a/b") == 1
    p.delete("/a")
    assert p.names() == ["/d/e/f"] and not p.has("/a/b")
    with pytest.raises(HardwareValueError, match="200"):
        p.set("/big", "x" * 300)
    assert p.names() == ["/d/e/f"]  # the refused set changed nothing
    assert resolve_name("x") == "/x" and resolve_name("~x") == "/rosbridge_websocket/x"


def test_rosapi_services_report_the_graph_and_refuse_bad_requests(server):
    """topics/types, publishers/subscribers, services and their types, time, and a failed
    parameter request (non-JSON value) answered with result false, as rosapi does."""
    srv = server.server
    server.call(lambda: srv.advertise("/robot_state", "franka_msgs/FrankaState"))
    server.call(lambda: srv.on_publish("/cmd", "geometry_msgs/PoseStamped", lambda m, t: None))
    server.call(lambda: srv.add_service("/reset", lambda a: {}, "std_srvs/Trigger"))
    with _ws(server) as ws:
        _send(ws, op="subscribe", topic="~private", type="std_msgs/Int32")

        def call(srv_name, /, **args):
            _send(ws, op="call_service", service=srv_name, args=args, id=srv_name)
            m = _recv(ws)
            assert m["op"] == "service_response" and m["id"] == srv_name
            return m

        topics = call("/rosapi/topics")["values"]
        table = dict(zip(topics["topics"], topics["types"]))
        assert table == {"/robot_state": "franka_msgs/FrankaState",
                         "/cmd": "geometry_msgs/PoseStamped",
                         "/rosbridge_websocket/private": "std_msgs/Int32"}
        assert call("/rosapi/topic_type", topic="cmd")["values"] == {
            "type": "geometry_msgs/PoseStamped"}
        assert call("/rosapi/topic_type", topic="/nothing")["values"] == {"type": ""}
        assert call("/rosapi/topics_for_type", type="std_msgs/Int32")["values"] == {
            "topics": ["/rosbridge_websocket/private"]}
        assert call("/rosapi/publishers", topic="/robot_state")["values"]["publishers"]
        assert not call("/rosapi/publishers", topic="/cmd")["values"]["publishers"]
        assert call("/rosapi/subscribers", topic="/cmd")["values"]["subscribers"]
        services = call("/rosapi/services")["values"]["services"]
        assert "/reset" in services and "/rosapi/get_param" in services
        assert call("/rosapi/service_type", service="/reset")["values"] == {
            "type": "std_srvs/Trigger"}
        t = call("/rosapi/get_time")["values"]["time"]
        assert abs(t["secs"] + 1e-9 * t["nsecs"] - time.time()) < 5
        bad = call("/rosapi/set_param", name="/x", value="not json")
        assert bad["result"] is False and "JSON" in bad["values"]
        assert call("/rosapi/set_param", name="/x", value="[1, 2]")["result"] is True
        assert call("/rosapi/get_param", name="x")["values"] == {"value": "[1, 2]"}
        assert call("/rosapi/get_param", name="/y", default="3")["values"] == {"value": "3"}
        assert call("/rosapi/has_param", name="/x")["values"] == {"exists": True}
        assert call("/rosapi/search_param", name="x")["values"] == {"global_name": "/x"}
    assert server.call(lambda: srv.params.get("/x")) == [1, 2]


def test_rosapi_can_be_turned_off():
    st = ServerThread(RosBridgeServer(options=ServerOptions(rosapi=False))).start()
    try:
        with _ws(st) as ws:
            _send(ws, op="call_service", service="/rosapi/topics", id="t")
            assert _recv(ws)["result"] is False
    finally:
        st.stop()


# -- names, levels, QoS --------------------------------------------------------------------
def test_each_subscriber_gets_messages_under_the_name_it_subscribed_with(server):
    """rosbridge answers a subscription under the client's own spelling of the topic:
    ``chatter`` and ``/chatter`` are one topic, delivered twice to a client that used both."""
    server.call(lambda: server.server.advertise("/chatter", "std_msgs/String"))
    with _ws(server) as ws:
        _send(ws, op="subscribe", topic="chatter")
        _send(ws, op="subscribe", topic="/chatter")
        time.sleep(0.1)
        server.call(lambda: server.server.publish("/chatter", {"data": "hi"}))
        got = _recv_all(ws)
        assert sorted(m["topic"] for m in got) == ["/chatter", "chatter"]
        _send(ws, op="unsubscribe", topic="chatter")
        time.sleep(0.1)
        server.call(lambda: server.server.publish("/chatter", {"data": "hi"}))
        assert [m["topic"] for m in _recv_all(ws)] == ["/chatter"]


def test_set_level_selects_which_statuses_a_client_gets(server):
    """Default ``error``: errors only; ``warning`` adds warnings (e.g. an untyped subscribe
    to an unknown topic); ``info`` adds the successes; ``none`` silences all; a bad level is
    an error."""
    with _ws(server) as ws:
        _send(ws, op="subscribe", topic="/u1", id="1")  # warning: not sent by default
        _send(ws, op="set_level", level="loud", id="2")
        _send(ws, op="set_level", level=["info"], id="2b")  # found by the fuzz property
        assert [(m["level"], m["id"]) for m in _recv_all(ws)] == [("error", "2"),
                                                                 ("error", "2b")]
        _send(ws, op="set_level", level="warning")
        _send(ws, op="subscribe", topic="/u2", id="3")
        _send(ws, op="advertise", topic="/typed", type="std_msgs/Int32", id="4")  # info
        assert [(m["level"], m["id"]) for m in _recv_all(ws)] == [("warning", "3")]
        _send(ws, op="set_level", level="info")
        _send(ws, op="advertise", topic="/typed2", type="std_msgs/Int32", id="5")
        assert [(m["level"], m["id"]) for m in _recv_all(ws)] == [("info", "5")]
        _send(ws, op="set_level", level="none")
        _send(ws, op="fly", id="6")
        assert _recv_all(ws) == []
    assert server.call(lambda: server.server.status_count) == 5  # raised, sent or not


def test_two_subscriptions_of_one_client_use_the_smaller_queue_as_rosbridge(server):
    from hardware.rosbridge.server import _Delivery

    d = _Delivery()
    d.configure({"a": (100, 5), "b": (200, 1)})
    assert d.throttle == pytest.approx(0.1) and d.queue_length == 1


@settings(max_examples=60, deadline=None)
@given(payload=st.text(max_size=300), n=st.integers(1, 12), data=st.data())
def test_any_split_and_order_of_fragments_rebuilds_the_message_exactly(payload, n, data):
    """A publish op cut into n fragments (possibly empty ones) sent in any order reaches the
    in-process handler exactly once, equal to the original; the client's reassembly memory
    returns to zero."""
    from hardware.rosbridge.server import _Client

    server = RosBridgeServer()
    got = []
    server.on_publish("/f", "std_msgs/String", lambda m, t: got.append(m))
    text = json.dumps({"op": "publish", "topic": "/f", "msg": {"data": payload}})
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), min_size=n - 1,
                                     max_size=n - 1)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    c = _Client(None, 8, authenticated=True)
    for i in data.draw(st.permutations(range(n))):
        server._dispatch(c, json.dumps({"op": "fragment", "id": 7, "data": pieces[i],
                                        "num": i, "total": n}))
    assert got == [{"data": payload}] and not c.replies
    assert not c.partial and c.partial_bytes == 0
