"""benchmarks/bench_deformable_drake.py bookkeeping: ``--ours-only`` re-times our solver on a
saved row (same scene and step count), keeps the row's Drake column, keeps the earlier ours as
``ours_drake_run`` and the table says which run each column is from. Drake itself is not run
(the Drake column here is a placeholder record, never displayed as a measurement)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_deformable_drake as bench  # noqa: E402


def test_ours_only_keeps_the_drake_column_and_names_both_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "JSON_PATH", tmp_path / "drake.json")
    old_ours = bench.run_ours(4, 3, 0.0)
    drake = {"vertices": old_ours["vertices"], "precompute_s": 0.1, "step_time": 123.0, "min_z_final": -1e-4,
             "com_z_final": 0.1}
    saved = {"timestamp": "2026-01-01T00:00:00Z", "machine": {"processor": "cpu", "cpu_count": 2,
                                                              "load_avg": [3.0, 2.0, 1.0]},
             "quick": False, "steps": 3, "drake_version": "1.0",
             "rows": [{"cells": 4, "ours": old_ours, "drake": drake, "timestamp": "2026-01-01T00:00:00Z",
                       "load": 3.0, "steps": 3, "drop": 0.0}]}
    bench.JSON_PATH.write_text(json.dumps(saved))
    res = bench.retime_ours([4], quiet=True)
    row = res["rows"][0]
    assert row["drake"] == drake and row["ours_drake_run"] == old_ours
    assert row["ours"]["vertices"] == old_ours["vertices"] == 125 and row["ours"]["contacts"] > 0
    assert row["ours"]["min_z_final"] == pytest.approx(old_ours["min_z_final"], abs=1e-9)  # same scene
    text = bench.render(res)
    assert "Drake run 2026-01-01T00:00:00Z (load 3.0)" in text and f"commit {row['ours_commit']}" in text
    assert f"| {row['ours']['step_time']:.1f} | 123.0 |" in text
    with pytest.raises(SystemExit, match="no saved Drake row"):
        bench.retime_ours([5], quiet=True)
