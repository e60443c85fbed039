"""Sweeps never lose or duplicate a finished trial (issue 26, part 4).

* a resumed random sampler continues instead of replaying the first run's proposals;
* an empty, deleted, truncated or garbage journal is detected, backed up and reported, and the
  run refuses to rewrite the more complete ``trials.csv``;
* ``kill -9`` of the driver takes its pool workers with it (real subprocess);
* a 1 KB alias-bomb study file fails fast, before any validation.

Trials are real cart-pole closed loops of 10 control steps (about 0.1 s each).
"""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from c3mpc.sweep import load_study, run_sweep
from c3mpc.sweep.storage import JournalDamagedError, TrialsShrinkError, write_trials_csv
from c3mpc.sweep.study import StudyFileError

ROOT = Path(__file__).resolve().parents[1]

STUDY = """\
name: harden
task: cartpole-softwalls
options: {projection: lcp}
search_space:
  rho_scale: {low: 1.5, high: 4.0}
  G_scale: {low: 0.5, high: 2.0, log: true}
sampler: {name: random, seed: 1}
objectives: accumulated_cost
seeds: 1
duration: 0.1
timeout: 60
trials: 3
"""


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def params(path: Path) -> list[tuple[str, str]]:
    return [(r["param_rho_scale"], r["param_G_scale"]) for r in rows(path)]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> tuple[Path, Path]:
    """A study file and a run folder holding 3 trials, then resumed to 6."""
    base = tmp_path_factory.mktemp("sweep")
    study = base / "study.yaml"
    study.write_text(STUDY)
    out = base / "run"
    first = run_sweep(load_study(study), out, workers=1, progress=False, report=False)
    assert first.counted == 3
    first_params = params(out / "trials.csv")
    second = run_sweep(load_study(study), out, trials=6, workers=1, progress=False,
                       report=False)
    assert second.counted == 6 and second.resumed_from == 3
    assert params(out / "trials.csv")[:3] == first_params  # nothing rewritten
    return study, out


def test_resumed_random_sampler_proposes_new_parameter_sets(finished_run):
    _, out = finished_run
    p = params(out / "trials.csv")
    assert len(p) == 6
    assert len(set(p)) == 6, f"a resumed sampler repeated parameter sets: {p}"


def _damage(journal: Path, how: str) -> None:
    lines = journal.read_bytes().splitlines(keepends=True)
    if how == "empty":
        journal.write_bytes(b"")
    elif how == "deleted":
        journal.unlink()
    elif how == "truncated":  # cut at a line boundary: readable, but trials are gone
        journal.write_bytes(b"".join(lines[: len(lines) // 3]))
    elif how == "garbage":
        lines[len(lines) // 2] = b"\x00\x01 not json {\n"
        journal.write_bytes(b"".join(lines))


@pytest.mark.parametrize("how", ["empty", "deleted", "truncated", "garbage"])
def test_damaged_journal_is_backed_up_and_the_more_complete_table_kept(finished_run, tmp_path,
                                                                      how):
    study, done = finished_run
    out = tmp_path / "run"
    shutil.copytree(done, out)
    before = (out / "trials.csv").read_bytes()
    journal = out / "study.journal"
    _damage(journal, how)
    damaged = journal.read_bytes() if journal.exists() else None
    with pytest.raises(JournalDamagedError) as info:
        run_sweep(load_study(study), out, trials=8, workers=1, progress=False, report=False)
    assert (out / "trials.csv").read_bytes() == before  # all 6 finished rows kept
    assert "Nothing was overwritten" in str(info.value)
    if damaged is None:
        assert info.value.backup is None and not journal.exists()
    else:
        assert info.value.backup is not None and info.value.backup.read_bytes() == damaged
        assert str(info.value.backup) in str(info.value)
    if how != "garbage":
        assert len(info.value.missing) >= 1


def test_trials_csv_is_never_rewritten_smaller(finished_run, tmp_path):
    import optuna

    _, done = finished_run
    path = tmp_path / "trials.csv"
    shutil.copyfile(done / "trials.csv", path)
    empty = optuna.create_study()
    with pytest.raises(TrialsShrinkError):
        write_trials_csv(empty, path, ["accumulated_cost"])
    assert len(rows(path)) == 6


def test_alias_bomb_study_file_fails_fast(tmp_path):
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    text = "\n".join(levels) + "\nname: bomb\n"
    assert len(text) < 1024
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    t0 = time.perf_counter()
    with pytest.raises(StudyFileError, match="alias"):
        load_study(path)
    assert time.perf_counter() - t0 < 5.0


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def _descendants(pid: int) -> set[int]:
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for c in tree.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux-only")
def test_kill_9_of_the_driver_takes_its_workers_with_it(tmp_path):
    study = tmp_path / "long.yaml"  # trials of ~10000 control steps: busy for many seconds
    study.write_text(STUDY.replace("duration: 0.1", "duration: 100.0")
                     .replace("trials: 3", "trials: 4"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "c3mpc.cli", "sweep", str(study), "--out",
           str(tmp_path / "run"), "--workers", "2", "--quiet", "--no-report"]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while time.monotonic() < deadline:  # forkserver + 2 workers (+ resource tracker)
            workers = _descendants(proc.pid)
            if len(workers) >= 3 and (tmp_path / "run" / "study.journal").exists():
                break
            time.sleep(0.2)
        assert len(workers) >= 3, "the sweep did not start its pool"
        time.sleep(1.0)  # the workers are inside their trials now
        workers = _descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.2)
        left = [p for p in workers if _alive(p)]
        assert not left, f"processes left behind after kill -9 of the driver: {left}"
    finally:
        for p in _descendants(proc.pid) | {proc.pid}:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_chaos_kills_and_a_garbage_journal_lose_and_duplicate_nothing(tmp_path):
    """The issue's acceptance: 5 random ``kill -9``s of the driver during a 40-trial sweep, then
    a journal with a garbage line (refused, backed up; restored from the backup), then the
    same command until the budget is spent: no finished trial lost or changed, no parameter
    set repeated, no process left behind."""
    import random

    study = tmp_path / "chaos.yaml"
    study.write_text(STUDY.replace("trials: 3", "trials: 40"))
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "c3mpc.cli", "sweep", str(study), "--out", str(out),
           "--workers", "2", "--quiet", "--no-report"]
    rng = random.Random(26)
    seen: dict[str, dict[str, str]] = {}
    leftovers: set[int] = set()

    def check_grown() -> None:
        now = {r["number"]: r for r in rows(out / "trials.csv")} if (
            out / "trials.csv").exists() else {}
        for number, row in seen.items():
            assert now.get(number) == row, f"trial {number} lost or changed"
        seen.update(now)

    for _ in range(5):
        proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(2.0, 5.0))
        leftovers |= _descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        check_grown()
    journal = out / "study.journal"
    good = journal.read_bytes()
    lines = good.splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:5] + [b"garbage\n"] + lines[5:]))
    refused = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and "Nothing was overwritten" in refused.stderr
    check_grown()
    backups = list(out.glob("study.journal.damaged-*"))
    assert len(backups) == 1
    journal.write_bytes(good)  # the user restores the journal
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    check_grown()
    final = rows(out / "trials.csv")
    counted = [r for r in final if r["state"] == "COMPLETE"
               or (r["state"] == "FAIL" and r["interrupted"] != "True")]
    assert len(counted) == 40
    finished = [(r["param_rho_scale"], r["param_G_scale"]) for r in final if r["state"] in
                ("COMPLETE", "FAIL")]
    assert len(set(finished)) == len(finished), "a parameter set was run twice"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(p) for p in leftovers):
        time.sleep(0.2)
    assert not [p for p in leftovers if _alive(p)], "processes left behind"
