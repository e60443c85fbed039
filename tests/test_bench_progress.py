"""benchmarks/: every script takes ``--quiet`` and shows progress through ``_report.progress``
(a ``plants.progress.ProgressLine`` on stderr), which ``--quiet`` silences."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _report  # noqa: E402

from plants.progress import ProgressLine  # noqa: E402

SCRIPTS = sorted((ROOT / "benchmarks").glob("bench_*.py"))

# Runs each script as __main__ with ``--help`` in one child process (the scripts' heavy imports,
# Pinocchio, numba, Gurobi, are paid once instead of once per script) and prints
# {script: [exit code, help text]} as JSON.
HELP_DRIVER = r"""
import contextlib, io, json, os, runpy, sys
out = {}
for path in sys.argv[1:]:
    sys.path.insert(0, os.path.dirname(path))  # as `python benchmarks/bench_x.py` does
    buf = io.StringIO()
    sys.argv = [path, "--help"]
    code = None
    with contextlib.redirect_stdout(buf):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as e:
            code = e.code
    out[path] = [code, buf.getvalue()]
print(json.dumps(out))
"""


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal (what ProgressLine redraws in place on)."""

    def isatty(self) -> bool:
        return True


def test_argument_parser_has_quiet():
    p = _report.argument_parser("Title.", "a smoke run")
    assert p.parse_args(["--quiet"]).quiet and not p.parse_args([]).quiet
    assert "--quiet" in p.format_help() and "no progress lines" in p.format_help()


def test_quiet_progress_writes_nothing(capsys):
    bar = _report.progress(5, "lcp", quiet=True)
    assert not isinstance(bar, ProgressLine)
    for i in range(5):
        _report.show(bar, f"case {i}")
        bar.update(i + 1)
    bar.close()
    assert list(_report.track(range(4), "x", quiet=True)) == [0, 1, 2, 3]
    _report.say("a result", bar)
    out = capsys.readouterr()
    assert out.err == "" and out.out == "a result\n"


def test_progress_in_a_log_prints_one_line_per_tenth(capsys):
    items = list(_report.track(range(20), "scenes", quiet=False, unit="runs"))
    assert items == list(range(20))
    lines = capsys.readouterr().err.splitlines()
    # tenths 0..10 of 20 items (update(1) is tenth 0, update(20) tenth 10), one line each
    assert len(lines) == len({10 * k // 20 for k in range(1, 21)}) == 11
    assert lines[-1].startswith("scenes [" + "#" * ProgressLine.width + "] 20/20 runs")


def test_show_and_say_on_a_terminal():
    term = _Terminal()
    bar = ProgressLine(3, "bench", unit="cases", stream=term, min_interval=3600.0)
    _report.show(bar, "bench: case 1")  # drawn at once, whatever the redraw interval
    assert term.getvalue().endswith("bench: case 1 [" + "." * bar.width + "] 0/3 cases, "
                                    "0 cases/s, --:-- left\x1b[K")
    bar.update(1)
    before = len(term.getvalue())
    out = io.StringIO()
    sys_stdout, sys.stdout = sys.stdout, out
    try:
        _report.say("case 1: 12 ms", bar)
    finally:
        sys.stdout = sys_stdout
    assert out.getvalue() == "case 1: 12 ms\n"
    after = term.getvalue()[before:]
    # the line is wiped before the result and drawn again (1/3 done) below it
    assert after.startswith("\r\x1b[K\r") and "1/3 cases" in after and after.endswith("\x1b[K")
    bar.update(3)  # done: the terminal gets its newline
    assert term.getvalue().endswith("\n")


def test_every_benchmark_script_takes_quiet():
    assert len(SCRIPTS) >= 15, [s.name for s in SCRIPTS]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", HELP_DRIVER, *map(str, SCRIPTS)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    helps = json.loads(proc.stdout.splitlines()[-1])
    for script in SCRIPTS:
        code, text = helps[str(script)]
        assert code == 0, (script.name, code, text)
        assert "--quiet" in text, f"{script.name} --help has no --quiet:\n{text}"


def test_every_benchmark_script_passes_quiet_to_its_progress():
    """Taking the flag is not enough: each script hands ``args.quiet`` on to its progress lines
    (a static check; running the benchmarks takes minutes)."""
    for script in SCRIPTS:
        src = script.read_text()
        assert re.search(r"\b(args|a)\.quiet\b", src), f"{script.name} ignores --quiet"
        assert re.search(r"\b(_report\.)?(progress|track)\(", src), \
            f"{script.name} shows no progress line"
        assert "ProgressLine(" not in src, f"{script.name}: use _report.progress, not its own line"
