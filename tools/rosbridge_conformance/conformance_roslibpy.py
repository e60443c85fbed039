"""rosbridge conformance checks driven by roslibpy, the Python rosbridge client.

    python tools/rosbridge_conformance/conformance_roslibpy.py ws://127.0.0.1:9090 \\
        [--secret-file F]

Runs the same checks, with the same names, as ``conformance_roslibjs.mjs`` against any
rosbridge v2 server (the project's own, or rosbridge_suite's ``rosbridge_server`` on ROS 1 or
ROS 2): each check opens its own connections and makes its own traffic, so nothing but the
server is needed. Prints one JSON report on stdout (``client``, ``url``, ``checks``: name,
kind, ok, detail, value); ``kind`` is ``protocol`` (rosbridge_suite does it too) or
``extension`` (only the project's server: status replies to refused requests); ``ok`` is null
for a check this client cannot make. Exit code 0 when every protocol check passed, else 1.
See docs/deployment.md ("Conformance with rosbridge_suite").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import secrets
import sys
import time
import traceback
from typing import Any, Callable
from urllib.parse import urlparse

import roslibpy

NS = "/conformance"


def wait_for(pred: Callable[[], bool], timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


class Runner:
    def __init__(self, url: str, secret: str | None):
        self.url = url
        u = urlparse(url)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 9090
        self.secret = secret
        self.checks: list[dict[str, Any]] = []
        self.opened: list[roslibpy.Ros] = []

    # -- connections ------------------------------------------------------------------------
    def auth_message(self) -> dict[str, Any]:
        """rosauth's MAC: sha512(secret + client + dest + rand + t + level + end)."""
        t = int(time.time())
        end, level, client, rand = t + 3600, "admin", "conformance", secrets.token_hex(16)
        text = f"{self.secret}{client}{self.host}{rand}{t}{level}{end}"
        return {"op": "auth", "mac": hashlib.sha512(text.encode()).hexdigest(),
                "client": client, "dest": self.host, "rand": rand, "t": t, "level": level,
                "end": end}

    def connect(self, auth: bool = True) -> roslibpy.Ros:
        ros = roslibpy.Ros(self.host, self.port)
        statuses: list[dict] = []
        ros.statuses = statuses  # type: ignore[attr-defined]

        def install(proto: Any) -> Any:
            # roslibpy 2.1 registers no handler for the 'status' op (it raises "No handler
            # registered for operation status"): add one, as hardware.rosbridge.transport does
            proto._message_handlers["status"] = lambda m: statuses.append(dict(m))
            return proto

        ros.factory.on_ready(install)
        if self.secret and auth:
            ros.send_on_ready(roslibpy.Message(self.auth_message()))  # first, on connect
        ros.run(timeout=5)
        self.opened.append(ros)
        return ros

    # -- bookkeeping ------------------------------------------------------------------------
    def record(self, name: str, kind: str, ok: bool | None, detail: str, value: Any = None):
        self.checks.append({"name": name, "kind": kind, "ok": ok, "detail": detail,
                            "value": value})

    def run(self, name: str, kind: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:
            self.record(name, kind, False, f"exception: {type(e).__name__}: {e}",
                        traceback.format_exc(limit=3))

    # -- the checks -------------------------------------------------------------------------
    def publish_subscribe(self) -> None:
        a, b = self.connect(), self.connect()
        got: list[str] = []
        roslibpy.Topic(b, f"{NS}/chatter", "std_msgs/String").subscribe(
            lambda m: got.append(m["data"]))
        pub = roslibpy.Topic(a, f"{NS}/chatter", "std_msgs/String")
        pub.advertise()
        time.sleep(0.3)
        sent = [f"équilibre ✓ {i}" for i in range(20)]
        for s in sent:
            pub.publish(roslibpy.Message({"data": s}))
        wait_for(lambda: len(got) >= 20, 3)
        self.record("publish_subscribe", "protocol", got == sent,
                    f"20 std_msgs/String sent, {len(got)} received in order and intact: "
                    f"{got == sent}", len(got))

    def throttle_queue(self) -> None:
        name, mtype = f"{NS}/fast", "std_msgs/Int32"
        a = self.connect()
        got: dict[str, list] = {}
        for key, (rate, length) in {"q1": (100, 1), "q0": (100, 0), "plain": (0, 0)}.items():
            ros = self.connect()
            got[key] = []
            roslibpy.Topic(ros, name, mtype, throttle_rate=rate, queue_length=length).subscribe(
                lambda m, k=key: got[k].append((time.monotonic(), m["data"])))
        pub = roslibpy.Topic(a, name, mtype)
        pub.advertise()
        time.sleep(0.3)
        t0 = time.monotonic()
        i = 0
        while time.monotonic() - t0 < 1.5:
            pub.publish(roslibpy.Message({"data": i}))
            i += 1
            time.sleep(0.01)
        seconds = time.monotonic() - t0
        time.sleep(0.3)
        hz = {k: len(v) / seconds for k, v in got.items()}
        pub_hz = i / seconds
        ok = 5 <= hz["q1"] <= 12 and 5 <= hz["q0"] <= 12 and hz["plain"] > 0.5 * pub_hz
        self.record("throttle_queue", "protocol", ok,
                    f"published {pub_hz:.1f} Hz; throttle_rate 100 ms: queue_length 1 -> "
                    f"{hz['q1']:.1f} Hz, queue_length 0 -> {hz['q0']:.1f} Hz; unthrottled "
                    f"{hz['plain']:.1f} Hz", {"published_hz": pub_hz, **hz})

    def latch(self) -> None:
        a = self.connect()
        pub = roslibpy.Topic(a, f"{NS}/latched", "std_msgs/String", latch=True)
        pub.advertise()
        time.sleep(0.2)
        pub.publish(roslibpy.Message({"data": "v1"}))
        pub.publish(roslibpy.Message({"data": "v2"}))
        time.sleep(0.3)
        late = self.connect()
        got: list[str] = []
        roslibpy.Topic(late, f"{NS}/latched", "std_msgs/String").subscribe(
            lambda m: got.append(m["data"]))
        wait_for(lambda: got, 2)
        self.record("latch", "protocol", got[:1] == ["v2"],
                    f"a subscriber arriving after two publications got {got}", got)

    def relative_name(self) -> None:
        a, b = self.connect(), self.connect()
        got: list[str] = []
        roslibpy.Topic(b, "conformance/relative", "std_msgs/String").subscribe(
            lambda m: got.append(m["data"]))
        pub = roslibpy.Topic(a, f"{NS}/relative", "std_msgs/String")
        pub.advertise()
        time.sleep(0.3)
        pub.publish(roslibpy.Message({"data": "hello"}))
        wait_for(lambda: got, 2)
        self.record("relative_name", "protocol", got[:1] == ["hello"],
                    f"subscribed as 'conformance/relative', published on "
                    f"'/conformance/relative': {got}", got)

    def nan_to_null(self) -> None:
        a, b = self.connect(), self.connect()
        got: list[dict] = []
        roslibpy.Topic(b, f"{NS}/nan", "std_msgs/Float64").subscribe(lambda m: got.append(m))
        pub = roslibpy.Topic(a, f"{NS}/nan", "std_msgs/Float64")
        pub.advertise()
        time.sleep(0.3)
        pub.publish(roslibpy.Message({"data": math.nan}))  # Python's json writes NaN
        wait_for(lambda: got, 2)
        self.record("nan_to_null", "protocol", len(got) == 1 and got[0]["data"] is None,
                    f"roslibpy published {{'data': nan}} (sent as NaN); the subscriber parsed "
                    f"{got}", got)

    def fragments_in(self) -> None:
        a, b = self.connect(), self.connect()
        got: list[str] = []
        roslibpy.Topic(b, f"{NS}/fragmented", "std_msgs/String").subscribe(
            lambda m: got.append(m["data"]))
        roslibpy.Topic(a, f"{NS}/fragmented", "std_msgs/String").advertise()
        time.sleep(0.3)
        payload = "x" * 500 + " end"
        text = json.dumps({"op": "publish", "topic": f"{NS}/fragmented",
                           "msg": {"data": payload}})
        size = -(-len(text) // 3)
        for i in range(3):
            a.send_on_ready(roslibpy.Message({"op": "fragment", "id": "frag-py-1",
                                              "data": text[i * size:(i + 1) * size],
                                              "num": i, "total": 3}))
        wait_for(lambda: got, 2)
        whole = got == [payload]
        self.record("fragments_in", "protocol", whole,
                    f"a publish op sent as 3 fragment ops arrived "
                    f"{'whole' if whole else str(got)[:80]}", len(got))

    def fragments_out(self) -> None:
        self.record("fragments_out", "protocol", None,
                    f"skipped: roslibpy {roslibpy.__version__} has no handler for the "
                    "fragment op (it cannot receive fragmented messages)")

    def rosapi_topics(self) -> None:
        a = self.connect()
        roslibpy.Topic(a, f"{NS}/listed", "std_msgs/String").advertise()
        time.sleep(0.3)
        topics = a.get_topics()
        mtype = a.get_topic_type(f"{NS}/listed")
        listed = f"{NS}/listed" in topics
        ok = listed and mtype == "std_msgs/String"
        self.record("rosapi_topics", "protocol", ok,
                    f"/rosapi/topics lists {NS}/listed: {listed}; /rosapi/topic_type: "
                    f"{mtype!r}", {"n_topics": len(topics), "type": mtype})

    def rosapi_params(self) -> None:
        a = self.connect()
        value = {"kp": 1.5, "list": [1, 2, 3], "name": "c3"}
        a.set_param(f"{NS}/gains", value)
        back = a.get_param(f"{NS}/gains")
        leaf = a.get_param(f"{NS}/gains/kp")
        names = a.get_params()
        missing = a.get_param(f"{NS}/no_such_param")
        a.delete_param(f"{NS}/gains")
        gone = a.get_param(f"{NS}/gains")
        ok = (back == value and leaf == 1.5 and f"{NS}/gains/kp" in names and missing is None
              and gone is None)
        self.record("rosapi_params", "protocol", ok,
                    f"set/get of a dict: {back == value}; leaf {NS}/gains/kp = {leaf}; listed "
                    f"by get_param_names: {f'{NS}/gains/kp' in names}; missing -> {missing}; "
                    f"after delete -> {gone}", {"back": back, "leaf": leaf})

    def services(self) -> None:
        provider, caller = self.connect(), self.connect()
        name, stype = f"{NS}/set_flag", "std_srvs/SetBool"
        srv = roslibpy.Service(provider, name, stype)

        def handler(request, response):
            response["success"] = not request["data"]
            response["message"] = f"got {str(request['data']).lower()}"
            return True

        srv.advertise(handler)
        time.sleep(0.3)

        def call(service: str) -> tuple[bool, Any]:
            try:
                return True, dict(roslibpy.Service(caller, service, stype).call(
                    roslibpy.ServiceRequest({"data": True}), timeout=3))
            except Exception as e:
                return False, str(e)

        r = call(name)
        listed = name in caller.get_services()
        missing = call(f"{NS}/no_such_service")
        srv.unadvertise()
        time.sleep(0.3)
        after = call(name)
        ok = (r == (True, {"success": False, "message": "got true"}) and listed
              and not missing[0] and not after[0])
        self.record("services", "protocol", ok,
                    f"client-offered {stype}: {r}; listed by /rosapi/services: {listed}; "
                    f"missing service -> failure {missing[1]!r}; after unadvertise_service -> "
                    f"failure {not after[0]}", {"response": r[1]})

    def status_levels(self) -> None:
        a = self.connect()

        def by_id(i: str) -> list[dict]:
            return [m for m in a.statuses if m.get("id") == i]  # type: ignore[attr-defined]

        a.send_on_ready(roslibpy.Message({"op": "publish", "id": "bad-1",
                                          "topic": f"{NS}/never_advertised",
                                          "msg": {"data": 1}}))
        a.send_on_ready(roslibpy.Message({"op": "advertise", "id": "bad-2",
                                          "topic": f"{NS}/untyped"}))
        wait_for(lambda: by_id("bad-1") and by_id("bad-2"), 2)
        a.set_status_level("none", "level-1")
        a.send_on_ready(roslibpy.Message({"op": "publish", "id": "bad-3",
                                          "topic": f"{NS}/never_advertised",
                                          "msg": {"data": 1}}))
        time.sleep(0.3)
        muted = not by_id("bad-3")
        a.set_status_level("error", "level-2")
        a.send_on_ready(roslibpy.Message({"op": "publish", "id": "bad-4",
                                          "topic": f"{NS}/never_advertised",
                                          "msg": {"data": 1}}))
        wait_for(lambda: by_id("bad-4"), 2)
        e1, e2, e4 = by_id("bad-1"), by_id("bad-2"), by_id("bad-4")
        ok = (bool(e1) and e1[0]["level"] == "error" and bool(e2) and e2[0]["level"] == "error"
              and muted and bool(e4) and e4[0]["level"] == "error")
        self.record("status_levels", "extension", ok,
                    f"publish to an unknown topic -> {e1[0]['msg'] if e1 else None!r}; advertise "
                    f"without a type -> {e2[0]['msg'] if e2 else None!r}; after set_level none: "
                    f"{'silent' if muted else 'answered'}; after set_level error: "
                    f"{'answered' if e4 else 'silent'}")

    def auth(self) -> None:
        good = self.connect()
        got: list[str] = []
        roslibpy.Topic(good, f"{NS}/guarded", "std_msgs/String").subscribe(
            lambda m: got.append(m["data"]))
        intruder = self.connect(auth=False)
        seen: list[str] = []
        roslibpy.Topic(intruder, f"{NS}/guarded", "std_msgs/String").subscribe(
            lambda m: seen.append(m["data"]))
        roslibpy.Topic(intruder, f"{NS}/guarded", "std_msgs/String").publish(
            roslibpy.Message({"data": "from the intruder"}))
        pub = roslibpy.Topic(good, f"{NS}/guarded", "std_msgs/String")
        pub.advertise()
        time.sleep(0.3)
        pub.publish(roslibpy.Message({"data": "from an authenticated client"}))
        wait_for(lambda: got, 2)
        time.sleep(0.2)
        ok = got == ["from an authenticated client"] and not seen
        self.record("auth", "protocol", ok,
                    f"authenticated subscriber got {got}; the unauthenticated client read "
                    f"{len(seen)} and its publication did not arrive: "
                    f"{'from the intruder' not in got}")

    def all(self) -> None:
        for name in ("publish_subscribe", "throttle_queue", "latch", "relative_name",
                     "nan_to_null", "fragments_in", "fragments_out", "rosapi_topics",
                     "rosapi_params", "services"):
            self.run(name, "protocol", getattr(self, name))
        self.run("status_levels", "extension", self.status_levels)
        if self.secret:
            self.run("auth", "protocol", self.auth)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url", nargs="?", default="ws://127.0.0.1:9090")
    ap.add_argument("--secret-file", help="rosauth shared secret (first line of the file)")
    a = ap.parse_args(argv)
    secret = None
    if a.secret_file:
        with open(a.secret_file) as f:
            secret = f.readline().rstrip("\n")
    runner = Runner(a.url, secret)
    runner.all()
    for ros in runner.opened:
        try:
            ros.close()
        except Exception:
            pass
    print(json.dumps({"client": f"roslibpy {roslibpy.__version__}", "url": a.url,
                      "checks": runner.checks}, indent=1, default=str))
    sys.stdout.flush()
    ok = all(c["ok"] is not False for c in runner.checks if c["kind"] == "protocol")
    return 0 if ok else 1


if __name__ == "__main__":
    import os

    code = main()
    os._exit(code)  # the twisted reactor thread does not stop on its own
