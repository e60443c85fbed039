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
import time
from dataclasses import dataclass

import numpy as np
import pytest

import c3mpc.sweep.execution as execution
from c3mpc import C3Options, run_closed_loop
from c3mpc.sweep import ClosedLoopTask, load_study, run_sweep
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


def test_report_handles_a_single_complete_trial(tmp_path):
    """Parameter importance is undefined with one complete trial: a note, not a crash."""
    path = tmp_path / "one.yaml"
    path.write_text(STUDY.replace("[2, 3, 4, 5, 6, 10]", "[2, 3]"))
    run_sweep(load_study(path), tmp_path / "run", workers=1, progress=False, report=False)
    from c3mpc.sweep import write_report

    report = write_report(tmp_path / "run")
    assert any("importance" in n and "undefined" in n for n in report.notes)
    assert "history_accumulated_cost.png" in report.files
    assert (report.directory / "history_accumulated_cost.png").stat().st_size > 5000
    assert "| 0 " in report.table or "| 1 " in report.table
    text = (report.directory / "results.md").read_text()
    assert "injected failure" in text and "1 complete, 1 failed" in text
    assert np.isfinite(float(report.table.splitlines()[2].split("|")[2]))
