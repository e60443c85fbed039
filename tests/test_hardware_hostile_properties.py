"""Property tests over hostile robot-state sequences (hypothesis): whatever the robot side (or
someone impersonating it) sends, and whatever the planner asks, every command the deploy
logic produces — planner commands, watchdog holds, final holds — is finite, inside the
workspace box, within the wrench limits and at most ``max_step`` from the previous one, and
nothing is produced once a fault was reported.

The states go through the real validation (:class:`FrankaAdapter` detached from a transport,
its ``_on_state`` exactly as the transport thread calls it) and the commands through the real
:class:`SafetyLayer`; the loop's decisions are those of :mod:`hardware.deploy` (fault →
stop; stale → one hold; else plan → filter; at the end a final hold).
"""

from __future__ import annotations

import math
import time

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

from hardware import messages
from hardware.franka import FrankaAdapter
from hardware.planner import CirclePlanner
from hardware.safety import SafeCommand, SafetyLayer, SafetyOptions, Target

O = SafetyOptions()
LO, HI = np.array(O.workspace_min), np.array(O.workspace_max)
Q_DOWN = np.array([1.0, 0.0, 0.0, 0.0])

wild = st.one_of(st.floats(-3, 3, allow_nan=False),
                 st.sampled_from([math.nan, math.inf, -math.inf, 1e9, -1e9]))
near = st.floats(-0.05, 0.05, allow_nan=False)
_HOSTILE_STAMPS = [1e6, -1e6, 0.5, 5.0, -0.5, 0.0, math.nan, math.inf, -math.inf]
_FAULT_MODES = [0, 1, 3, 4, 5, 6]  # 1 (IDLE) is no fault


def _weighted(common, rare, rare_in_100: int):
    """``rare`` about ``rare_in_100`` % of the time, else ``common``."""
    return st.integers(0, 99).flatmap(lambda i: rare if i < rare_in_100 else common)


stamp_offsets = _weighted(st.floats(0.001, 0.02), st.sampled_from(_HOSTILE_STAMPS), 25)
modes = _weighted(st.just(2), st.sampled_from(_FAULT_MODES), 4)
errors = _weighted(st.just(()), st.lists(st.sampled_from(messages.ERROR_FIELDS), min_size=1,
                                         max_size=2).map(tuple), 2)
state_event = st.tuples(st.just("state"), st.one_of(
    st.tuples(near, near, near).map(lambda d: ("near", d)),
    st.tuples(wild, wild, wild).map(lambda p: ("abs", p))), stamp_offsets, modes, errors)
plan_event = st.tuples(st.just("plan"), st.one_of(
    st.just(None),  # the reference planner
    st.tuples(wild, wild, wild, wild, wild, wild, wild, wild, wild, wild)))  # a hostile
# target: position, force, orientation (x, y, z, w; any numbers)
other_event = st.sampled_from([("stale",), ("fresh",)])
events = st.lists(_weighted(st.one_of(state_event, plan_event), other_event, 10), min_size=1,
                  max_size=60)


def _state_msg(p, stamp: float, mode: int, errs) -> dict:
    T = np.eye(4)
    T[:3, :3] = messages.transform_from_pose(np.zeros(3), Q_DOWN)[:3, :3]
    T[:3, 3] = p  # may be non-finite: the parser must reject it
    msg = messages.franka_state(T, 0.0, robot_mode=mode, current_errors=errs)
    if math.isfinite(stamp):
        msg["header"] = messages.header(stamp, "")
    else:  # what an attacker's NaN/inf stamp becomes on the wire (JSON null) or in Python
        msg["header"]["stamp"] = {"secs": stamp, "nsecs": 0}
    return msg


def _check(cmd: SafeCommand, prev: SafeCommand | None) -> None:
    assert isinstance(cmd, SafeCommand)
    for v in (cmd.position, cmd.quaternion, cmd.force, cmd.torque):
        assert np.all(np.isfinite(v))
    assert np.all(cmd.position >= LO) and np.all(cmd.position <= HI), cmd.position
    assert np.linalg.norm(cmd.force) <= O.max_force * (1 + 1e-12)
    assert np.linalg.norm(cmd.torque) <= O.max_torque * (1 + 1e-12)
    assert abs(np.linalg.norm(cmd.quaternion) - 1) < 1e-9
    if prev is not None:
        assert np.linalg.norm(cmd.position - prev.position) <= O.max_step + 1e-12
        d = min(1.0, abs(float(cmd.quaternion @ prev.quaternion)))
        assert 2 * math.acos(d) <= O.max_rotation_step + 1e-6


class _Scripted(CirclePlanner):
    """The reference planner, or the hostile target set for the next tick."""

    def __init__(self) -> None:
        super().__init__()
        self.next: Target | None = None

    def plan(self, robot, ball, t):
        return self.next if self.next is not None else super().plan(robot, ball, t)


@settings(max_examples=200, deadline=None)
@given(evs=events)
def test_no_command_ever_leaves_the_box_or_is_non_finite(evs):
    """The deploy loop's own tick (``_Run.step``/``finish``) against a detached adapter that
    records what it would publish."""
    from hardware.deploy import DeployOptions, ExitReason, _Run

    adapter = FrankaAdapter(None)
    planner = _Scripted()
    run = _Run("franka-ball", DeployOptions(require_camera=False, max_stale_time=0.01), None,
               planner, None)
    wall0, mono0 = time.time(), 1000.0
    k = 0
    stamp = wall0
    p_true = np.array([0.6, 0.0, 0.15])
    started = False
    end = None
    stale = False
    first = ("state", ("near", (0.0, 0.0, 0.0)), 0.001, 2, ())  # the run starts on real data
    for ev in [first, *evs]:
        k += 1
        now = mono0 + 0.005 * k
        if ev[0] == "state":
            _, (how, v), dt, mode, errs = ev
            p = p_true + np.array(v) if how == "near" else np.array(v, dtype=float)
            if how == "near":
                p_true = p
            s = stamp + dt if math.isfinite(dt) else dt
            adapter._on_state(_state_msg(p, s, mode, errs), now)
            if adapter.state() is not None and adapter.state().stamp > stamp:
                stamp = adapter.state().stamp
            continue
        if ev[0] in ("stale", "fresh"):
            stale = ev[0] == "stale"
            continue
        st_ = adapter.state()
        assert st_ is not None
        assert np.all(np.isfinite(st_.velocity)) and np.all(np.isfinite(st_.position))
        if not started:
            run.begin(st_, now)
            started = True
        spec = ev[1]
        planner.next = None if spec is None else Target(
            np.array(spec[:3]), np.array(spec[6:]), np.array(spec[3:6]), np.zeros(3))
        end, *_ = run.step(adapter, st_, None, now, 0.2 if stale else 0.001, 0.0)
        if end is not None:
            break
    n_before_finish = len(adapter.dry_run)
    reason = run.finish(adapter, adapter.state(), mono0 + 0.005 * (k + 1),
                        end or ExitReason.COMPLETED)
    sent = list(adapter.dry_run)
    prev = None
    for cmd in sent:  # continuity across holds and resumptions too
        _check(cmd, prev)
        prev = cmd
    if adapter.fault is not None:  # nothing after the fault arrived, not even a final hold
        assert reason == ExitReason.ROBOT_FAULT and len(sent) == n_before_finish
    event(f"commands sent: {'0' if not sent else '1-5' if len(sent) <= 5 else '>5'}")
    event(f"exit: {reason.value}")
    event(f"states rejected: {'0' if not adapter.rejected else '>0'}")


def test_a_hold_is_never_the_raw_measurement():
    """The issue's case: one accepted measurement far outside the box (here bypassing the
    stamp checks, as if it had been genuine) must not become the hold: the hold is clamped
    into the box and within max_step of the last safe command."""
    layer = SafetyLayer(O, nominal_period=0.01)
    last = np.array([0.6, 0.0, 0.15])
    layer.reset(last, 0.0, Q_DOWN)
    cmd = layer.hold(np.array([1.2, 0.9, 0.9]), Q_DOWN, 0.01)
    assert np.all(cmd.position >= LO) and np.all(cmd.position <= HI)
    np.testing.assert_allclose(np.linalg.norm(cmd.position - last), O.max_step)
    direction = np.clip([1.2, 0.9, 0.9], LO, HI) - last
    np.testing.assert_allclose(cmd.position, last + O.max_step * direction
                               / np.linalg.norm(direction))
    assert [r.kind.name for r in layer.records] == ["HOLD", "HOLD"]
    assert layer.interventions == 0  # holds are recorded, not counted as interventions
    # no finite measurement: the last safe command
    again = layer.hold(np.array([np.nan, 0, 0]), None, 0.02)
    np.testing.assert_array_equal(again.position, cmd.position)
    # nothing finite at all and no previous command: nothing may be sent
    assert SafetyLayer(O).hold(np.full(3, np.nan), None, 0.0) is None


# -- the bridge server's protocol handling -------------------------------------------------
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats()
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8),
                                                                        children, max_size=4),
    max_leaves=12)
_ops = st.sampled_from(["advertise", "unadvertise", "publish", "subscribe", "unsubscribe",
                        "call_service", "set_level", "auth", "fragment", "status", "",
                        "advertise_service", "unadvertise_service", "service_response"])
_topics = st.one_of(st.sampled_from(["/known", "/x", "known", "/a b", "", "//x", "/~x"]),
                    _json)
_request = st.fixed_dictionaries(
    {"op": _ops},
    optional={"topic": _topics, "type": st.one_of(st.just("std_msgs/String"), _json),
              "msg": _json, "id": _json, "throttle_rate": _json, "queue_length": _json,
              "latch": _json, "service": _topics, "args": _json, "level": _json,
              "mac": _json, "t": _json, "end": _json,
              "num": st.one_of(st.integers(-1, 3), _json),
              "total": st.one_of(st.integers(0, 3), _json),
              "data": st.one_of(st.sampled_from(['{"op": "set_level", "level": "info"}',
                                                 '{"op": "pub', 'lish"}', "{}"]), _json),
              "fragment_size": st.one_of(st.integers(-1, 200), _json),
              "compression": _json, "timeout": _json, "values": _json, "result": _json})


@settings(max_examples=100, deadline=None)
@given(requests=st.lists(st.one_of(_request, _json), min_size=1, max_size=12),
       auth=st.booleans())
def test_the_server_answers_any_json_without_an_internal_error(requests, auth):
    """Arbitrary JSON requests (valid ops with fields of any type, and any other JSON):
    the protocol handler never fails (no "internal error" reply), answers at most once per
    request, and keeps its tables bounded."""
    import asyncio
    import json

    from hardware.rosbridge.server import RosBridgeServer, ServerOptions, _Client

    server = RosBridgeServer(options=ServerOptions(max_topics_per_client=3, max_topics=4),
                             auth_secret="0123456789abcdef" if auth else None)
    server.advertise("/known", "std_msgs/String")
    loop = asyncio.new_event_loop()
    try:
        c = _Client(None, 8, authenticated=not auth)
        for r in requests:
            before = len(c.replies)
            server._dispatch(c, json.dumps(r))
            assert len(c.replies) - before <= 1
        replies = [json.loads(x) for x in c.replies]
        assert not any("internal error" in m.get("msg", "") for m in replies), replies
        assert all(m["op"] in ("status", "service_response") for m in replies)
        assert server.n_topics <= 4 and c.n_topics() <= 3
        if auth:
            assert not c.subs and not c.advertised and len(c.queue) == 0
            assert not c.services and not c.partial and c.fragment_size is None
    finally:
        loop.close()
