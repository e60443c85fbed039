"""Sweep fault handling (issue 9): a trial that raises or times out is recorded as FAILED with
its error and the sweep goes on.

The task is the real cart-pole closed loop, wrapped (through the study file's
"module:attribute" task hook) so that chosen settings misbehave:
admm_iter 3 raises, admm_iter 4 hangs without ever reaching a deadline check (the driver's hard
limit must end it), and admm_iter 5 simulates 100 s so that the cooperative per-step deadline
fires. The others must complete with the same cost as a direct closed-loop run.
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
from dataclasses import dataclass

import numpy as np
import pytest

import c3mpc.sweep.execution as execution
from c3mpc import C3Options, C3ValueError, run_closed_loop
from c3mpc.cli import main as cli_main
from c3mpc.sweep import ClosedLoopTask, SweepLockedError, load_study, run_sweep
from c3mpc.sweep.storage import RunFolder
from c3mpc.tasks import TASKS, build_controller


@dataclass(frozen=True)
class FlakyCartpole(ClosedLoopTask):
    """The cart-pole task with injected faults keyed on admm_iter."""

    def run_episode(self, setting, seed, *, duration, start_perturbation, noise, check_deadline):
        if setting.options.admm_iter == 3:
            raise RuntimeError("injected failure for admm_iter=3")
        if setting.options.admm_iter == 4:
            time.sleep(120)  # never checks the deadline: only the driver's hard limit ends it
        if setting.options.admm_iter == 5:
            duration = 100.0  # ~10000 control steps: the per-step deadline check fires first
        return super().run_episode(setting, seed, duration=duration,
                                   start_perturbation=start_perturbation, noise=noise,
                                   check_deadline=check_deadline)


FLAKY = FlakyCartpole(TASKS["cartpole-softwalls"])

STUDY = """\
name: faults
task: test_sweep_faults:FLAKY
options: {projection: lcp}
search_space:
  admm_iter: [2, 3, 4, 5, 6, 10]
sampler: {name: grid, seed: 3}
objectives: accumulated_cost
seeds: 1
duration: 0.5
timeout: 5.0
"""


def direct_cost(admm_iter: int) -> float:
    plant = TASKS["cartpole-softwalls"].plant()
    d = plant.defaults
    ctrl = build_controller(plant, C3Options(projection="lcp", admm_iter=admm_iter), x0=d.x0)
    return run_closed_loop(plant, ctrl, d.x0, 50).accumulated_cost


def test_failing_and_hanging_trials_are_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(execution, "hard_limit", lambda timeout: timeout + 1.0)
    path = tmp_path / "faults.yaml"
    path.write_text(STUDY)
    t0 = time.perf_counter()
    # one worker: the hung trial holds the only slot, so the driver must replace the pool
    summary = run_sweep(load_study(path), tmp_path / "run", workers=1, progress=False,
                        report=False)
    elapsed = time.perf_counter() - t0
    assert summary.counted == summary.budget == 6
    assert summary.complete == 3 and summary.failed == 3 and not summary.stopped_by_user
    with open(tmp_path / "run" / "trials.csv") as f:
        rows = {int(r["param_admm_iter"]): r for r in csv.DictReader(f)}
    assert sorted(rows) == [2, 3, 4, 5, 6, 10]
    assert rows[3]["state"] == "FAIL" and "RuntimeError: injected failure" in rows[3]["error"]
    assert rows[4]["state"] == "FAIL" and "hard limit" in rows[4]["error"]
    assert rows[5]["state"] == "FAIL" and "TrialTimeoutError: timed out" in rows[5]["error"]
    for n in (2, 6, 10):
        assert rows[n]["state"] == "COMPLETE" and rows[n]["error"] == ""
        assert float(rows[n]["value_accumulated_cost"]) == pytest.approx(direct_cost(n),
                                                                         rel=1e-9)
    # the sweep went on after failures: some trial completed after the first failure
    failed_numbers = [int(r["number"]) for r in rows.values() if r["state"] == "FAIL"]
    assert any(int(r["number"]) > min(failed_numbers) for r in rows.values()
               if r["state"] == "COMPLETE")
    # the hanging worker was abandoned after its hard limit, not waited for (sleep is 120 s)
    assert elapsed < 60


def test_report_resume_and_folder_guards(tmp_path, capsys):
    """A two-objective report with one complete trial: parameter importance is undefined (a
    note, not a crash), the Pareto plot is drawn. The run folder survives a cut journal line,
    refuses a changed study and a second driver."""
    path = tmp_path / "one.yaml"
    path.write_text(STUDY.replace("[2, 3, 4, 5, 6, 10]", "[2, 3]").replace(
        "objectives: accumulated_cost", "objectives: [accumulated_cost, failed_steps]"))
    progress = io.StringIO()
    run_sweep(load_study(path), tmp_path / "run", workers=1, progress=True, stream=progress,
              report=False)
    lines = progress.getvalue().splitlines()  # one line per finished trial when not a tty
    assert "2 trial(s) to run on local process pool of 1 worker(s)" in lines[0]
    assert "2/2 trials (1 failed, 0 running)" in lines[-1]
    assert "Pareto front: 1 trial(s); best accumulated_cost=" in lines[-1]
    assert cli_main(["sweep-report", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "note: importance_accumulated_cost: parameter importance is undefined" in out
    report = tmp_path / "run" / "report"
    summary = json.loads((report / "summary.json").read_text())
    assert summary["complete"] == 1 and summary["failed"] == 1
    for stem in ("history_accumulated_cost", "parallel_failed_steps", "pareto"):
        assert f"{stem}.png" in summary["files"] and f"{stem}.html" in summary["files"]
        assert (report / f"{stem}.png").stat().st_size > 5000
    assert np.isfinite(summary["best"][0]["values"][0])
    text = (report / "results.md").read_text()
    assert "injected failure" in text and "1 complete, 1 failed" in text

    # a journal whose last write was cut by a kill still opens, with every finished trial
    with open(tmp_path / "run" / "study.journal", "ab") as f:
        f.write(b'{"op_code": 5, "worker_id": "x", "trial_id": 0, "par')
    summary = run_sweep(load_study(path), tmp_path / "run", progress=False, report=False)
    assert summary.ran == 0 and summary.counted == 2 and summary.resumed_from == 2

    # the folder refuses another definition under the same name, and a second driver
    changed = tmp_path / "changed.yaml"
    changed.write_text(STUDY.replace("[2, 3, 4, 5, 6, 10]", "[2, 7]"))
    with pytest.raises(C3ValueError, match="another definition"):
        run_sweep(load_study(changed), tmp_path / "run", progress=False, report=False)
    with RunFolder(tmp_path / "run").lock():
        with pytest.raises(SweepLockedError, match=f"pid {os.getpid()}"):
            run_sweep(load_study(path), tmp_path / "run", progress=False, report=False)
