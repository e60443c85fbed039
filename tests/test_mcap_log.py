"""c3mpc.mcap_log: MCAP run logs read back by the format's reference reader."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from mcap.reader import make_reader

from c3mpc.mcap_log import POSE_IN_FRAME_SCHEMA, McapLog, channels, read_channel, record_schema


def test_poses_and_records_round_trip_with_schemas_foxglove_knows(tmp_path):
    path = tmp_path / "log.mcap"
    with McapLog(path) as log:
        log.add_channel("/ee", POSE_IN_FRAME_SCHEMA)
        log.add_channel("/metrics", record_schema("c3mpc.Metrics", {"err": "error [m]"}))
        for k in range(5):
            log.pose("/ee", 0.01 * k, (k, 2.0, 3.0), (0.0, 0.0, math.sin(0.1), math.cos(0.1)))
            log.write("/metrics", 0.01 * k, {"err": 0.5 * k, "gaps": [k, -k]})
    assert channels(path) == {"/ee": "foxglove.PoseInFrame", "/metrics": "c3mpc.Metrics"}
    rows = read_channel(path, "/ee")
    assert [r["pose.position.x"] for r in rows] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert rows[3]["log_time_s"] == pytest.approx(0.03)
    assert rows[3]["timestamp.sec"] == 0 and rows[3]["timestamp.nsec"] == 30_000_000
    assert rows[0]["pose.orientation.w"] == pytest.approx(math.cos(0.1))
    assert read_channel(path, "/metrics")[2] | {} == {
        "log_time_s": pytest.approx(0.02), "timestamp.sec": 0, "timestamp.nsec": 20_000_000,
        "err": 1.0, "gaps": [2, -2]}
    with path.open("rb") as f:  # the schemas travel in the file, as JSON Schema
        summary = make_reader(f).get_summary()
    schema = next(s for s in summary.schemas.values() if s.name == "foxglove.PoseInFrame")
    assert schema.encoding == "jsonschema"
    assert set(json.loads(schema.data)["properties"]) == {"timestamp", "frame_id", "pose"}


def test_non_finite_numbers_are_written_as_null_not_invalid_json(tmp_path):
    path = tmp_path / "nan.mcap"
    with McapLog(path) as log:
        log.add_channel("/m", record_schema("c3mpc.M", {"a": "a", "b": "b"}))
        log.write("/m", 0.0, {"a": float("nan"), "b": [1.0, float("inf")]})
    (row,) = read_channel(path, "/m")
    assert row["a"] is None and row["b"] == [1.0, None]


def test_misuse_is_a_clear_error(tmp_path):
    with McapLog(tmp_path / "x.mcap") as log:
        log.add_channel("/a", POSE_IN_FRAME_SCHEMA)
        with pytest.raises(ValueError, match="'/b' is not registered"):
            log.write("/b", 0.0, {})
        with pytest.raises(ValueError, match="already registered"):
            log.add_channel("/a", POSE_IN_FRAME_SCHEMA)
        with pytest.raises(ValueError, match="finite time >= 0"):
            log.pose("/a", float("nan"), (0, 0, 0))
    with pytest.raises(ValueError, match=r"no channel '/c'; channels: \['/a'\]"):
        read_channel(tmp_path / "x.mcap", "/c")


def test_a_log_interrupted_by_an_exception_is_still_readable(tmp_path):
    path = tmp_path / "partial.mcap"
    with pytest.raises(RuntimeError):
        with McapLog(path) as log:
            log.add_channel("/ee", POSE_IN_FRAME_SCHEMA)
            for k in range(3):
                log.pose("/ee", k, np.zeros(3))
            raise RuntimeError("Ctrl-C stand-in")
    assert len(read_channel(path, "/ee")) == 3
