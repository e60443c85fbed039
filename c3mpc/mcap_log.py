"""Run logs in MCAP, the container Foxglove and PlotJuggler open.

Messages are JSON with a JSON-Schema per channel. Poses use Foxglove's well-known
``foxglove.PoseInFrame`` schema, so the 3-D panel draws them; everything else is a flat
``c3mpc.*`` record whose numeric fields the Plot panel plots directly (e.g.
``/c3mpc/state.x.cart_position``). Log times are the run's simulated (or robot) time in
nanoseconds, starting at 0.

Why MCAP with JSON rather than ROS messages: it needs no ROS installation to write or read,
and both viewers decode JSON channels from their schema alone. The ``mcap`` package (the
format's reference implementation) does the container; this module only shapes messages.

Reading back, e.g. into pandas (optional, not a dependency)::

    import pandas as pd
    from c3mpc.mcap_log import read_channel
    df = pd.DataFrame(read_channel("out/run.mcap", "/c3mpc/state"))   # one row a message
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from mcap.reader import make_reader
from mcap.writer import Writer

from ._json import finite_or_none

__all__ = ["McapLog", "read_channel", "channels", "POSE_IN_FRAME_SCHEMA", "record_schema",
           "write_closed_loop"]

_TIME = {"type": "object", "properties": {"sec": {"type": "integer", "minimum": 0},
                                          "nsec": {"type": "integer", "minimum": 0}}}
_VECTOR3 = {"type": "object", "properties": {k: {"type": "number"} for k in "xyz"}}
_QUATERNION = {"type": "object", "properties": {k: {"type": "number"} for k in "xyzw"}}

POSE_IN_FRAME_SCHEMA: dict[str, Any] = {
    "title": "foxglove.PoseInFrame",
    "description": "A timestamped pose in a named coordinate frame (Foxglove schema)",
    "type": "object",
    "properties": {
        "timestamp": _TIME,
        "frame_id": {"type": "string"},
        "pose": {"type": "object", "properties": {"position": _VECTOR3,
                                                  "orientation": _QUATERNION}},
    },
}


def record_schema(name: str, fields: Mapping[str, str]) -> dict[str, Any]:
    """JSON Schema of a flat ``c3mpc.*`` record.

    Args:
        name: schema title, e.g. ``"c3mpc.State"``.
        fields: field name -> description (with its unit). Values are numbers, lists of
            numbers, or objects of numbers; ``timestamp`` is added.
    """
    props: dict[str, Any] = {"timestamp": _TIME}
    for field, doc in fields.items():
        props[field] = {"description": doc}
    return {"title": name, "type": "object", "properties": props}


def _stamp(t: float) -> dict[str, int]:
    sec, nsec = divmod(_ns(t), 1_000_000_000)
    return {"sec": sec, "nsec": nsec}


def _ns(t: float) -> int:
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"log time must be a finite time >= 0 [s], got {t!r}")
    return int(round(t * 1e9))


class McapLog:
    """An MCAP file being written: register channels, then add messages in time order.

    Use as a context manager (the file is finished on exit, also after an exception, so a
    partial run stays readable)::

        with McapLog("run.mcap") as log:
            log.add_channel("/ee", POSE_IN_FRAME_SCHEMA)
            log.pose("/ee", t, position, quaternion)
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: BinaryIO = self.path.open("wb")
        self._writer = Writer(self._file)
        self._writer.start(profile="", library="c3mpc")
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self.messages = 0

    def add_channel(self, topic: str, schema: Mapping[str, Any]) -> None:
        """Register ``topic`` with a JSON schema (its ``title`` names the schema)."""
        if topic in self._channels:
            raise ValueError(f"channel {topic!r} is already registered")
        title = schema["title"]
        if title not in self._schemas:
            self._schemas[title] = self._writer.register_schema(
                name=title, encoding="jsonschema", data=json.dumps(schema).encode())
        self._channels[topic] = self._writer.register_channel(
            topic=topic, message_encoding="json", schema_id=self._schemas[title])

    def write(self, topic: str, t: float, message: Mapping[str, Any]) -> None:
        """Add one message at time ``t`` [s]; a ``timestamp`` field is added."""
        if topic not in self._channels:
            raise ValueError(f"channel {topic!r} is not registered; registered: "
                             f"{sorted(self._channels)}")
        ns = _ns(t)
        body = {"timestamp": _stamp(t), **message}
        try:
            data = json.dumps(body, allow_nan=False)
        except ValueError:  # a NaN or inf somewhere: written as null (rare, so checked late)
            data = json.dumps(finite_or_none(body))
        self._writer.add_message(channel_id=self._channels[topic], log_time=ns,
                                 publish_time=ns, data=data.encode())
        self.messages += 1

    def pose(self, topic: str, t: float, position: Sequence[float],
             quaternion: Sequence[float] = (0.0, 0.0, 0.0, 1.0), frame_id: str = "world") -> None:
        """Add a ``foxglove.PoseInFrame``: position [m], quaternion (x, y, z, w)."""
        px, py, pz = (float(v) for v in position)
        qx, qy, qz, qw = (float(v) for v in quaternion)
        self.write(topic, t, {"frame_id": frame_id, "pose": {
            "position": {"x": px, "y": py, "z": pz},
            "orientation": {"x": qx, "y": qy, "z": qz, "w": qw}}})

    def close(self) -> None:
        """Write the summary section and close the file (idempotent)."""
        if not self._file.closed:
            self._writer.finish()
            self._file.close()

    def __enter__(self) -> McapLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_channel(path: str | Path, topic: str) -> list[dict[str, Any]]:
    """The messages of ``topic`` as flat rows (nested keys joined by ``.``), in time order.

    Each row has ``log_time_s`` (the message's log time [s]) and the message's fields, e.g.
    ``pose.position.x``; lists stay lists. ``pandas.DataFrame(rows)`` makes a table of it.

    Raises:
        ValueError: the file has no channel ``topic`` (the message lists the channels).
    """
    with Path(path).open("rb") as f:
        reader = make_reader(f)
        topics = {c.topic for c in reader.get_summary().channels.values()}
        if topic not in topics:
            raise ValueError(f"{path} has no channel {topic!r}; channels: {sorted(topics)}")
        rows = []
        for _schema, _channel, message in reader.iter_messages(topics=[topic]):
            row = {"log_time_s": message.log_time * 1e-9}
            _flatten("", json.loads(message.data), row)
            rows.append(row)
    return rows


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}{k}.", v, out)
    else:
        out[prefix[:-1]] = value


def channels(path: str | Path) -> dict[str, str]:
    """Topic -> schema name of every channel in an MCAP file."""
    with Path(path).open("rb") as f:
        summary = make_reader(f).get_summary()
        return {c.topic: summary.schemas[c.schema_id].name for c in summary.channels.values()}



STATE_CHANNEL = "/c3mpc/state"


def write_closed_loop(path: str | Path, log: Any, state_names: Sequence[str],
                      input_names: Sequence[str]) -> Path:
    """Write a :class:`~c3mpc.runner.ClosedLoopLog` as MCAP: one ``/c3mpc/state`` message a step.

    Fields: ``x`` and ``u`` as objects keyed by the plant's state and input names (so a plot
    reads ``/c3mpc/state.x.theta``), ``lambda`` (the plant's contact forces), ``solve_time_s``
    (null on held steps), ``status`` (:class:`~c3mpc.result.C3Status` name) and
    ``stage_cost``. The last state, which has no input, is the last message with ``u`` null.
    """
    from .result import C3Status

    t, x = log.t.tolist(), log.x.tolist()
    u, lam = log.u.tolist(), log.lam.tolist()
    solve, cost, status = log.solve_time.tolist(), log.stage_cost.tolist(), log.status.tolist()
    names = {int(s): s.name for s in C3Status}
    with McapLog(path) as out:
        out.add_channel(STATE_CHANNEL, record_schema("c3mpc.ClosedLoopStep", {
            "x": "plant state by name (units of the plant's state)",
            "u": "applied input by name (null on the last state)",
            "lambda": "plant contact forces, (n_lambda,)",
            "solve_time_s": "controller wall time [s] (null when the previous input was held)",
            "status": "C3Status name of the plan whose input was applied",
            "stage_cost": "(x - x_des)' Q (x - x_des) + u' R u"}))
        for k, tk in enumerate(t):
            last = k == len(u)
            out.write(STATE_CHANNEL, tk, {
                "x": dict(zip(state_names, x[k])),
                "u": None if last else dict(zip(input_names, u[k])),
                "lambda": None if last else lam[k],
                "solve_time_s": None if last else solve[k],
                "status": None if last else names.get(int(status[k]), str(status[k])),
                "stage_cost": None if last else cost[k]})
    return Path(path)
