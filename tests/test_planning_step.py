"""The planning-step check (plants.planning_step): one step's travel of each robot-object contact
under the object's weight, relative to the contact's size, on every task file of the repo; the
warning at load; ``planning: {dt: auto}``."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

from plants import TaskFileError, load_task_file
from plants.planning_step import (MAX_STEP_RATIO, PlanningStepWarning, check_planning_step)

ROOT = Path(__file__).resolve().parents[1]
JAW = ROOT / "examples" / "own_robot" / "jaw_gripper"
JAW_SMALL = JAW / "jaw_gripper_small.yaml"


def _task_files() -> list[Path]:
    """Every task file in the repo (examples/, tests/data/): a YAML mapping with ``contacts:``."""
    out = []
    for folder in ("examples", "tests/data"):
        for p in sorted((ROOT / folder).rglob("*.y*ml")):
            data = yaml.safe_load(p.read_text())
            if isinstance(data, dict) and isinstance(data.get("contacts"), list):
                out.append(p)
    return out


TASK_FILES = _task_files()
STALLS_AT_DEFAULT_DT = {"jaw_gripper_small.yaml"}  # docs/own-robot.md, "Hand scale"


def _load(path: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        task = load_task_file(path)
    return task, [w for w in caught if issubclass(w.category, PlanningStepWarning)]


def test_the_repo_has_the_task_files_this_check_was_calibrated_on():
    names = {p.name for p in TASK_FILES}
    assert {"jaw_gripper.yaml", "jaw_gripper_small.yaml", "two_finger_cube.yaml",
            "pusher_box.yaml", "pusher_box_vertical.yaml", "ur5_push.yaml", "panda_push.yaml",
            "pusher_box_large.yaml"} <= names


@pytest.mark.parametrize("path", TASK_FILES, ids=lambda p: p.name)
def test_every_task_file_that_works_at_its_dt_passes_and_the_hand_scale_gripper_is_flagged(path):
    """No simulation: one mass matrix and one contact evaluation per file. Every file that works
    at its planning step passes without a warning; the hand-scale jaw gripper (which stalls at
    the default 0.1 s and works at 0.05 s) is flagged, with 0.05 s suggested."""
    task, caught = _load(path)
    check = task.planning_step
    assert check.dt == task.plant.dt == 0.1  # no file sets dt: the default
    assert check.contacts, "every repo task has a robot-object contact to check"
    if path.name in STALLS_AT_DEFAULT_DT:
        assert not check.passed and check.ratio > 2 * MAX_STEP_RATIO
        assert check.suggested_dt() == 0.05
        assert len(caught) == 1
        msg = str(caught[0].message)
        assert str(path) in msg and check.worst.robot_body in msg
        assert f"{check.ratio:.3g}x" in msg and "planning: {dt: 0.05}" in msg
    else:
        assert check.passed and check.ratio < MAX_STEP_RATIO / 2, check.worst
        assert check.suggested_dt() == check.dt
        assert caught == []


def test_hand_scale_gripper_ratio_against_the_analytic_one():
    """The jaw slides along the contact normal (20 g) against the cube's face centre (0.2 kg,
    no lever arm): W = 1/0.02 + 1/0.2 = 55 /kg; the cube's weight moves the contact
    0.2·9.81·0.1²·55 = 1.0791 m in one step, 21.58 cube half-widths (5 cm)."""
    task, _ = _load(JAW_SMALL)
    w = task.planning_step.worst
    assert w.robot_body in ("left_jaw", "right_jaw") and w.object_geometry == "cube_body"
    assert w.object_mass == pytest.approx(0.2, rel=1e-12)
    assert w.delassus == pytest.approx(55.0, rel=1e-9)
    assert w.size == pytest.approx(0.05, rel=1e-12)
    assert w.displacement == pytest.approx(0.2 * 9.81 * 0.01 * 55.0, rel=1e-9)
    assert w.ratio == pytest.approx(0.2 * 9.81 * 0.01 * 55.0 / 0.05, rel=1e-9)


def test_delassus_entry_against_articulated_body_dynamics_on_the_ur5():
    """The UR5 (example-robot-data's URDF) pushing its box: W = J_n M⁻¹ J_nᵀ from the check
    against J_n · ABA(τ = J_nᵀ) at rest without gravity (Featherstone's algorithm, no mass
    matrix). The tool block's face touches the box's face, so the witness point is not unique
    (coal's first distance query on a fresh plant picks another point of the face than later
    ones): both sides are computed from one settled contact evaluation."""
    import pinocchio as pin

    task, _ = _load(ROOT / "examples" / "own_robot" / "ur5_push" / "ur5_push.yaml")
    plant = task.plant
    q = task.x0[:plant.n_q]
    model = pin.Model(plant.model)
    model.gravity.linear[:] = 0.0
    data = model.createData()
    plant._contacts.evaluate(model.createData(), q)
    checked = {(s.robot_geometry, s.object_geometry): s.delassus
               for s in check_planning_step(plant, task.x0).contacts}
    kin = plant._contacts.evaluate(model.createData(), q)
    names = [g.name for g in plant.collision_model.geometryObjects]
    n = 0
    for c in range(kin.n_c):
        key = (names[int(kin.geometry_a[c])], names[int(kin.geometry_b[c])])
        if key in checked:
            a = pin.aba(model, data, q, np.zeros(plant.n_v), kin.J_n[c])
            assert checked[key] == pytest.approx(float(kin.J_n[c] @ a), rel=1e-9)
            n += 1
    assert n >= 1


def test_ratio_scales_with_dt_squared_and_the_suggested_step_passes():
    task, _ = _load(JAW_SMALL)
    check = task.planning_step
    half = check_planning_step(task.plant, task.x0, 0.05)
    assert half.ratio == pytest.approx(check.ratio / 4, rel=1e-12)
    assert half.ratio == pytest.approx(check.ratio_at(0.05), rel=1e-12)
    assert half.passed and half.suggested_dt() == 0.05
    # the largest passing step of the halving sequence: 0.05 passes, 0.1 does not
    assert check.suggested_dt(0.2) == 0.05
    strict = check_planning_step(task.plant, task.x0, 0.1, max_ratio=1.0)
    assert strict.suggested_dt() == 0.0125  # at 0.025: 21.6/16 = 1.35 > 1; at 0.0125: 0.34


def test_check_rejects_bad_arguments():
    task, _ = _load(JAW_SMALL)
    with pytest.raises(ValueError, match="dt"):
        check_planning_step(task.plant, task.x0, -0.1)
    with pytest.raises(ValueError, match="max_ratio"):
        check_planning_step(task.plant, task.x0, 0.1, max_ratio=True)
    with pytest.raises(ValueError, match="x0"):
        check_planning_step(task.plant, task.x0[:-1])
    with pytest.raises(ValueError, match="start"):
        task.planning_step.suggested_dt(0.0)


# ---------------------------------------------------------------------------- dt: auto
def _with_planning(tmp_path, src: Path, planning: str) -> Path:
    for model in src.parent.glob("*.xml"):
        (tmp_path / model.name).write_text(model.read_text())
    text = src.read_text().replace("cost:", f"planning: {planning}\ncost:", 1)
    (tmp_path / src.name).write_text(text)
    return tmp_path / src.name


@pytest.mark.parametrize("name, dt", [("jaw_gripper_small.yaml", 0.05),
                                      ("jaw_gripper.yaml", 0.1)])
def test_auto_dt_takes_the_largest_passing_step(tmp_path, name, dt):
    task, caught = _load(_with_planning(tmp_path, JAW / name, "{dt: auto}"))
    assert caught == []
    assert task.plant.dt == task.defaults.dt == dt
    assert task.control_rate == pytest.approx(1.0 / dt)  # re-plans once per planning step
    assert task.planning_step.dt == 0.1  # the check at the start of the halving sequence


def test_a_given_dt_that_passes_does_not_warn(tmp_path):
    task, caught = _load(_with_planning(tmp_path, JAW_SMALL, "{dt: 0.05}"))
    assert caught == [] and task.plant.dt == 0.05 and task.planning_step.passed


@pytest.mark.parametrize("value", ["fast", "true", "[0.1]"])
def test_planning_dt_must_be_a_number_or_auto(tmp_path, value):
    with pytest.raises(TaskFileError, match="planning.dt: must be a number .s. or 'auto'"):
        load_task_file(_with_planning(tmp_path, JAW_SMALL, f"{{dt: {value}}}"))


@pytest.mark.slow
def test_hand_scale_gripper_turns_the_cube_with_auto_dt(tmp_path):
    """``planning: {dt: auto}`` on the hand-scale jaw gripper (which stalls at the default 0.1 s:
    44.9° of 45° left after 1.5 s) picks 0.05 s and turns the cube to its goal within 1 s."""
    from c3mpc import run_in_simulator
    from c3mpc.tasks import build_controller

    task, _ = _load(_with_planning(tmp_path, JAW_SMALL, "{dt: auto}"))
    assert task.plant.dt == 0.05
    log = run_in_simulator(task.plant, build_controller(task.plant, x0=task.x0),
                           task.simulator(task.x0), 1.0, control_rate=task.control_rate)
    assert task.goal_reached(log.x[-1]), task.goal_errors(log.x[-1])
    assert log.extras["failed_steps"] == 0
