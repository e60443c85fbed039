"""Study files (issue 9): parsing, validation with line numbers, failing before any trial."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from c3mpc import run_closed_loop
from c3mpc.cli import main as cli_main
from c3mpc.sweep import StudyFileError, TrialSpec, evaluate_trial, load_study, parse_study
from c3mpc.tasks import TASKS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sweeps" / "cartpole.yaml"

GOOD = """\
name: t
task: cartpole-softwalls
options: {projection: lcp}
search_space:
  rho: {low: 0.1, high: 10, log: true}
  admm_iter: {low: 2, high: 6}
  G_scale: [0.5, 2]
sampler: random
objectives: accumulated_cost
seeds: 2
duration: 0.5
"""

# (study text, line the error must name, words the message must contain)
INVALID = {
    "unknown parameter": (GOOD.replace("  G_scale:", "  G_scael:"), 7,
                          "unknown parameter 'G_scael'"),
    "empty range": (GOOD.replace("{low: 2, high: 6}", "{low: 6, high: 2}"), 6, "empty range"),
    "empty list": (GOOD.replace("[0.5, 2]", "[]"), 7, "empty list"),
    "unknown task": (GOOD.replace("task: cartpole-softwalls", "task: cartpole-hardwalls"), 2,
                     "unknown task 'cartpole-hardwalls'"),
    "unimportable task": (GOOD.replace("task: cartpole-softwalls", "task: no_such_mod:task"), 2,
                          "cannot import task"),
    "unknown sampler": (GOOD.replace("sampler: random", "sampler: cmaes"), 8,
                        "unknown sampler 'cmaes'"),
    "unknown metric": (GOOD.replace("objectives: accumulated_cost",
                                    "objectives:\n  - success_rate\n  - {metric: speed}"), 11,
                       "unknown metric 'speed'"),
    "bad direction": (GOOD.replace("objectives: accumulated_cost",
                                   "objectives:\n  - {metric: success_rate, direction: up}"), 10,
                      "direction must be one of"),
    "invalid option value": (GOOD.replace("  G_scale: [0.5, 2]",
                                          "  rho_scale: {low: 0.5, high: 2}"), 7,
                             "C3Options.rho_scale must be"),
    "invalid choice": (GOOD.replace("  G_scale: [0.5, 2]", "  delta_init: [x0, zerso]"), 7,
                       "C3Options.delta_init must be"),
    "unknown option": (GOOD.replace("options: {projection: lcp}",
                                    "options:\n  projection: lcp\n  admm_iters: 3"), 5,
                       "unknown C3Options field"),
    "unknown top-level key": (GOOD + "trails: 5\n", 12, "unknown key"),
    "grid needs values": (GOOD.replace("sampler: random", "sampler: grid"), 5,
                          "grid sampler needs"),
    "log range through zero": (GOOD.replace("low: 0.1, high: 10, log: true",
                                            "low: 0, high: 10, log: true"), 5,
                               "log range needs low > 0"),
    "non-positive scale": (GOOD.replace("[0.5, 2]", "[0, 2]"), 7, "weight scales must be > 0"),
    "bad name": (GOOD.replace("name: t", "name: ../t"), 1, "must be letters, digits"),
    "malformed yaml": (GOOD.replace("[0.5, 2]", "[0.5, 2"), 8, "malformed YAML"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_study_names_the_line(case):
    text, line, words = INVALID[case]
    with pytest.raises(StudyFileError) as err:
        parse_study(text, source="study.yaml")
    assert err.value.line == line, str(err.value)
    assert f"study.yaml, line {line}:" in str(err.value)
    assert words in str(err.value)


@pytest.mark.parametrize("case", ["unknown parameter", "empty range", "unknown task",
                                  "unknown sampler", "unknown metric"])
def test_cli_rejects_invalid_study_before_any_trial(tmp_path, capsys, case):
    text, line, words = INVALID[case]
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    out = tmp_path / "run"
    assert cli_main(["sweep", str(path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"bad.yaml, line {line}:" in err and words in err
    assert not out.exists()  # no storage, no trial


def test_good_study_parses_with_defaults():
    s = parse_study(GOOD)
    assert [p.name for p in s.search_space] == ["rho", "admm_iter", "G_scale"]
    assert [p.kind for p in s.search_space] == ["float", "int", "categorical"]
    assert s.search_space[0].log and s.search_space[0].low == 0.1
    assert s.directions == ["minimize"] and s.seeds == (0, 1) and s.trials == 20
    assert s.sampler.name == "random" and s.sampler.seed == 0
    d = s.distributions()
    assert d["admm_iter"].low == 2 and d["admm_iter"].high == 6
    # the fingerprint ignores the budget but not the search space
    assert s.with_trials(5).fingerprint() == s.fingerprint()
    assert parse_study(GOOD.replace("high: 6", "high: 7")).fingerprint() != s.fingerprint()


def test_grid_budget_is_capped_at_grid_size():
    text = GOOD.replace("sampler: random", "sampler: grid").replace(
        "{low: 0.1, high: 10, log: true}", "{low: 0.1, high: 10, log: true, points: 3}")
    s = parse_study(text)
    assert s.search_space[0].grid_values() == pytest.approx((0.1, 1.0, 10.0))
    assert s.grid_size() == 3 * 5 * 2 and s.trials == 30
    assert s.with_trials(100).trials == 30 and s.with_trials(7).trials == 7


def test_example_study_is_valid():
    s = load_study(EXAMPLE)
    assert s.name == "cartpole-c3" and s.task == "cartpole-softwalls"
    assert s.metrics == ["success_rate", "accumulated_cost"]
    assert s.directions == ["maximize", "minimize"]
    assert s.trials == 60 and len(s.seeds) == 8


@settings(max_examples=40, deadline=None)
@given(low=st.floats(-1e3, 1e3, allow_nan=False), width=st.floats(-10, 10, allow_nan=False),
       points=st.integers(2, 9))
def test_float_ranges_property(low, width, points):
    """A range parses iff low < high; its grid has `points` values from low to high."""
    high = low + width
    text = (f"task: cartpole-softwalls\nsearch_space:\n  G_scale: {{low: 1, high: 2}}\n"
            f"  discount: [1.0]\n  qp_epsilon: {{low: {low!r}, high: {high!r}, "
            f"points: {points}}}\n")
    if low < high and low >= 0:
        s = parse_study(text)
        grid = s.search_space[2].grid_values()
        assert len(grid) == points and grid[0] == pytest.approx(low)
        assert grid[-1] == pytest.approx(high, abs=1e-9 * max(1.0, abs(high)))
    else:
        with pytest.raises(StudyFileError) as err:
            parse_study(text)
        assert err.value.line == 5
        assert ("empty range" in str(err.value)) == (not low < high) or math.isclose(low, high)


@pytest.mark.parametrize("task_name", sorted(TASKS))
def test_every_registered_task_runs_through_the_sweep_unchanged(task_name):
    """The task hook: any c3mpc.tasks entry (paper and multibody plants) is a sweep task, and a
    trial's metrics equal a direct `c3mpc run`-style closed loop with the same settings."""
    study = parse_study(f"task: {task_name}\nsearch_space:\n  admm_iter: [2, 3]\n"
                        f"objectives: [accumulated_cost, success_rate]\nduration: 0.05\n")
    base = study.resolve_task().base_options()
    spec = TrialSpec(0, task_name, base.to_dict(), {"admm_iter": 3}, (0,), 0.05, (0.0,), 0.0,
                     300.0, tuple(study.metrics))
    outcome = evaluate_trial(spec)
    assert not outcome.failed, outcome.error

    task = TASKS[task_name]
    plant = task.plant()
    d = plant.defaults
    x0 = task.start(np.random.default_rng(0)) if task.start else np.asarray(d.x0, dtype=float)
    options = base.replace(admm_iter=3)
    steps = max(1, int(round(0.05 / plant.dt)))  # at least one step (finger gaiting: dt 0.1)
    log = run_closed_loop(plant, task.controller(plant, options, x0=x0), x0, steps,
                          replan_every=task.replan_every)
    assert outcome.values[0] == pytest.approx(log.accumulated_cost, rel=1e-9)
    assert outcome.values[1] == float(task.success(log))
