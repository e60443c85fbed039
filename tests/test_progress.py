"""plants.progress.ProgressLine and the progress option of the simulators and closed loops."""

from __future__ import annotations

import io

import pytest

from plants import load_scene
from plants.progress import ProgressLine


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_one_line_per_tenth_and_a_terminal_one_redrawn_line():
    log = io.StringIO()
    bar = ProgressLine(200, label="job", unit="steps", stream=log)
    for k in range(1, 201):
        bar.update(k)
    lines = log.getvalue().splitlines()
    assert len(lines) == 11 and lines[-1].startswith("job [" + "#" * 30 + "] 200/200 steps")
    tty = _Tty()
    bar = ProgressLine(200, stream=tty, min_interval=0.0)
    for k in range(1, 201):
        bar.update(k)
    text = tty.getvalue()
    assert text.count("\r") == 200 and text.endswith("\n") and text.count("\n") == 1


def test_bad_total_is_a_type_error():
    with pytest.raises(TypeError, match="total must be an integer >= 0"):
        ProgressLine(2.5)


def test_simulator_runs_show_progress_only_when_asked():
    quiet, shown = io.StringIO(), io.StringIO()
    load_scene("cube-slide").run(0.1, stream=quiet)
    load_scene("cube-slide").run(0.1, progress=True, stream=shown)
    assert quiet.getvalue() == ""
    assert shown.getvalue().splitlines()[-1].startswith("cube-slide [")
    assert "100/100 steps" in shown.getvalue()


def test_slow_work_shows_seconds_per_unit():
    bar = ProgressLine(10, unit="runs", stream=io.StringIO())
    bar.t0 -= 20.0  # 2 runs in 20 s
    bar.done = 2
    assert "10.0 s per run" in bar.text()
