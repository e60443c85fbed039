"""Ctrl-C or SIGKILL mid-sweep loses no finished trial; re-running the command resumes (issue 9).

The sweep runs as its own process (``python -m c3mpc.cli sweep``, local pool of 2 workers) in a
new session. Run 1 gets Ctrl-C (SIGINT) once two trials have finished; run 2 (the same command)
resumes and, once two more trials have finished, its whole session is SIGKILLed (driver and
pool workers, as a killed job would be); run 3 (the same command) completes the study.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from optuna.trial import TrialState

from c3mpc.sweep.report import load_run

STUDY = """\
name: kill-resume
task: cartpole-softwalls
options: {projection: lcp}
search_space:
  admm_iter: {low: 2, high: 6}
  G_scale: [0.5, 2.0]
sampler: grid
objectives:
  - accumulated_cost
  - success_rate
seeds: 1
duration: 0.8
start_perturbation: 0.1
timeout: 60
"""


def read_rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def key(row: dict[str, str]) -> tuple[str, ...]:
    return (row["number"], row["state"], row["value_accumulated_cost"],
            row["value_success_rate"], row["param_admm_iter"], row["param_G_scale"])


def test_ctrl_c_and_sigkill_then_rerun_keep_every_finished_trial(tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text(STUDY)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "c3mpc.cli", "sweep", str(study), "--out", str(out),
           "--workers", "2", "--quiet", "--no-report"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    def start_and_wait(min_rows: int) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True)
        deadline = time.monotonic() + 120
        while len(read_rows(out / "trials.csv")) < min_rows:
            if proc.poll() is not None or time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                raise AssertionError(f"no progress: {proc.communicate()}")
            time.sleep(0.05)
        return proc

    # run 1: Ctrl-C -> exit code 130, in-flight trials failed as interrupted, nothing RUNNING
    proc = start_and_wait(2)
    os.kill(proc.pid, signal.SIGINT)
    try:
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert "re-run the same command to resume" in stdout
    after_ctrl_c = read_rows(out / "trials.csv")
    ostudy, _ = load_run(out)
    assert not ostudy.get_trials(states=(TrialState.RUNNING,))
    assert len(after_ctrl_c) == len(ostudy.get_trials(states=(TrialState.COMPLETE,
                                                              TrialState.FAIL)))
    interrupted_by_ctrl_c = {r["number"] for r in after_ctrl_c if r["interrupted"] == "True"}
    assert all(r["state"] == "FAIL" for r in after_ctrl_c if r["number"] in
               interrupted_by_ctrl_c)

    # run 2: resumes, then SIGKILL of its whole session
    proc = start_and_wait(len(after_ctrl_c) + 2)
    os.killpg(proc.pid, signal.SIGKILL)  # the session we started: driver + pool workers
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL

    before = read_rows(out / "trials.csv")
    for r in after_ctrl_c:  # run 2 kept what run 1 finished
        assert key(next(b for b in before if b["number"] == r["number"])) == key(r)
    ostudy, _ = load_run(out)
    stored = ostudy.get_trials(deepcopy=False)
    finished_before = {t.number for t in stored if t.state.is_finished()}
    zombies = {t.number: dict(t.params) for t in stored if t.state == TrialState.RUNNING}
    assert {int(r["number"]) for r in before} <= finished_before  # csv never ahead of storage
    assert sum(r["state"] == "COMPLETE" for r in before) < 10

    rerun = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    after = read_rows(out / "trials.csv")

    # nothing finished before the kill is lost or changed; nothing is duplicated
    after_by_number = {r["number"]: r for r in after}
    assert len(after_by_number) == len(after)
    for r in before:
        assert key(after_by_number[r["number"]]) == key(r)
    ostudy, _ = load_run(out)
    stored = ostudy.get_trials(deepcopy=False)
    assert len(stored) == len(after) and all(t.state.is_finished() for t in stored)
    assert finished_before <= {t.number for t in stored}
    # the budget counts finished trials; the killed run's RUNNING trials are failed as
    # interrupted and not counted; every grid point ran exactly once to completion
    assert {r["number"] for r in after if r["interrupted"] == "True"} == \
        {str(n) for n in zombies} | interrupted_by_ctrl_c
    complete = [r for r in after if r["state"] == "COMPLETE"]
    assert len(complete) == 10 == len(after) - len(zombies) - len(interrupted_by_ctrl_c)
    assert sorted((int(r["param_admm_iter"]), float(r["param_G_scale"])) for r in complete) == \
        sorted((s, g) for s in range(2, 7) for g in (0.5, 2.0))
    n_before = sum(r["state"] == "COMPLETE" for r in before)
    assert f"resumed from {n_before}" in rerun.stdout
    assert f"{len(zombies)} trial(s) of a killed run marked interrupted" in rerun.stdout or \
        not zombies
