"""Sweeps over a user's task file: trials run in the contact simulator by default (where the tuned
values must carry over), or in the planning LCS with ``world: lcs``."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from c3mpc.sweep import load_study, run_sweep
from c3mpc.sweep.episodes import TaskFileTask, TrialSetting
from c3mpc.sweep.study import StudyFileError

TASK = Path(__file__).resolve().parents[1] / "examples" / "own_robot" / "pusher_box.yaml"


def study_text(**extra: str) -> str:
    lines = [f"task: {TASK}", "search_space: {admm_iter: [10, 20]}", "sampler: grid",
             "objectives: [success_rate, accumulated_cost]", "seeds: 1", "duration: 1.0",
             "timeout: 300", *[f"{k}: {v}" for k, v in extra.items()]]
    return "\n".join(lines) + "\n"


def test_a_task_file_study_runs_its_trials_in_the_simulator(tmp_path):
    path = tmp_path / "pusher.yaml"
    path.write_text(study_text())
    study = load_study(path)
    assert study.world == "simulator" and Path(study.task) == TASK
    summary = run_sweep(study, tmp_path / "run", workers=1, progress=False, report=False)
    assert summary.complete == 2 and summary.failed == 0
    rows = list(csv.DictReader((tmp_path / "run" / "trials.csv").open()))
    assert sorted(int(r["param_admm_iter"]) for r in rows) == [10, 20]
    # the episode is the simulator run: its control rate is the task file's 10 Hz re-planning
    task = study.resolve_task()
    assert isinstance(task, TaskFileTask) and task.world == "simulator"
    episode = task.run_episode(TrialSetting(task.base_options()), 0, duration=0.5,
                               start_perturbation=[0.0], noise=0.0, check_deadline=lambda: None)
    assert episode.steps == 5  # 0.5 s at 10 Hz: the simulator world, not the 0.1 s LCS steps


def test_world_lcs_runs_the_planning_plant_and_relative_paths_follow_the_study(tmp_path):
    (tmp_path / "tasks").mkdir()
    for f in TASK.parent.glob("pusher_box.*"):
        (tmp_path / "tasks" / f.name).write_text(f.read_text())
    path = tmp_path / "s.yaml"
    path.write_text(study_text(world="lcs").replace(str(TASK), "tasks/pusher_box.yaml"))
    study = load_study(path)
    assert study.world == "lcs" and Path(study.task) == (tmp_path / "tasks" / "pusher_box.yaml")
    task = study.resolve_task()
    episode = task.run_episode(TrialSetting(task.base_options()), 0, duration=0.5,
                               start_perturbation=[0.0], noise=0.0, check_deadline=lambda: None)
    assert episode.steps == 5  # 0.5 s of the 0.1 s planning LCS


@pytest.mark.parametrize("text, match", [
    ("task: cartpole-softwalls\nworld: simulator\nsearch_space: {admm_iter: [2, 3]}\n",
     "line 2.*simulator needs a task file"),
    (study_text(world="mujoco"), "world.*must be one of"),
    (study_text(noise="0.1"), "noise.*must be 0"),
    ("task: nowhere/task.yaml\nsearch_space: {admm_iter: [2, 3]}\n", "line 1.*not found"),
])
def test_bad_world_settings_are_one_line_with_the_line(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(StudyFileError, match=match):
        load_study(path)
