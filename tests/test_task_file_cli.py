"""``c3mpc run TASK_FILE``: a user's task file runs like a built-in task, with the same report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from c3mpc.cli import main
from c3mpc.mcap_log import read_channel
from plants import load_task_file

TASK = Path(__file__).resolve().parents[1] / "examples" / "own_robot" / "pusher_box.yaml"


def test_task_file_runs_in_the_simulator_and_writes_the_report(tmp_path, capsys):
    code = main(["run", str(TASK), "--report", str(tmp_path), "--quiet", "--no-html"])
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == 0 and summary["success"] is True and "success: True" in out
    assert abs(summary["final_goal_errors"]["box_x"]) < 0.01          # the box reached 0.2 m
    assert summary["control_rate_hz"] == pytest.approx(10.0)
    assert summary["plans"] == 30 and summary["failed_plans"] == 0
    data = np.load(tmp_path / "trajectory.npz")
    rows = read_channel(tmp_path / "run.mcap", "/c3mpc/state")
    assert len(rows) == summary["plans"] + 1
    i = load_task_file(TASK).plant.state_names.index("box_x")
    np.testing.assert_array_equal([r["x.box_x"] for r in rows], data["x"][:, i])
    assert (tmp_path / "trajectory.png").stat().st_size > 10_000


def test_task_file_errors_are_one_line(tmp_path, capsys):
    assert main(["run", str(TASK), "--seed", "3", "--quiet"]) == 2
    assert "--seed: not for a task file" in capsys.readouterr().err
    missing = tmp_path / "nope.yaml"
    assert main(["run", str(missing), "--quiet"]) == 2
    assert "not found" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(TASK.read_text().replace("model: pusher_box.xml",
                                            f"model: {TASK.with_name('pusher_box.xml')}")
                   + "success: {tolerance: -1}\n")
    assert main(["run", str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "tolerance" in err
    with pytest.raises(SystemExit):
        main(["run", "no-such-task"])
    assert "or give a task file" in capsys.readouterr().err
