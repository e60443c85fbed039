"""benchmarks/_report.py: the helpers every benchmark script shares (machine record, load
average of old and new saved results, timestamps, command line)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _report  # noqa: E402


def test_load_average_reads_new_and_old_keys():
    new = _report.machine_info()
    assert len(_report.load_average(new)) == 3 and "load_avg" in new
    assert _report.load_average({"load_average": [1.5, 2.0, 3.0]}) == [1.5, 2.0, 3.0]
    assert _report.load_average({"load_average": 0.7}) == [0.7]  # bench_estimators' old form
    with pytest.raises(KeyError, match="no load average"):
        _report.load_average({"platform": "x"})


@pytest.mark.parametrize("name", ["bench_sim", "bench_estimators", "bench_lcs_factory",
                                  "bench_contact_solvers"])
def test_every_saved_machine_record_has_a_readable_load_average(name):
    path = ROOT / "benchmarks" / "results" / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path.name} not saved")
    m = json.loads(path.read_text())["machine"]
    la = _report.load_average(m)
    assert la and all(x >= 0 for x in la)


def test_timestamp_and_parser():
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", _report.utc_timestamp())
    p = _report.argument_parser("Title.\n\n  indented line", "a smoke run")
    assert p.parse_args(["--quick"]).quick and not p.parse_args([]).quick
    assert "  indented line" in p.format_help()  # description formatting kept


def test_publish_writes_json_and_replaces_only_its_section(tmp_path, monkeypatch):
    md = tmp_path / "BENCHMARKS.md"
    other = "<!-- other:start -->\nkeep me\n<!-- other:end -->"
    md.write_text(f"# Benchmarks\n\n{other}\n\n<!-- k:start -->\nold\n<!-- k:end -->\n")
    monkeypatch.setattr(_report, "MD_PATH", md)
    monkeypatch.setattr(_report.replace_section, "__defaults__", (md,))
    out = tmp_path / "results" / "k.json"
    _report.publish({"x": [1, 2]}, "<!-- k:start -->\nnew\n<!-- k:end -->", "k", out)
    assert json.loads(out.read_text()) == {"x": [1, 2]}
    assert not out.with_name("k.json.tmp").exists()
    text = md.read_text()
    assert "new" in text and "old" not in text and other in text
