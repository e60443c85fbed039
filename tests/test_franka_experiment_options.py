"""The Franka ball task's experiment options from Python and the command line: time-based
trajectories (``--trajectory``), several laps (``--laps``), model error and pushes
(``--set robustness.FIELD=...``); one short in-process run checks that they reach the loop and
the summary (the error is |x_d(t) − x_b(t)|, recomputed here from the logged ball)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from c3mpc.cli import build_parser, main
from c3mpc.errors import C3ValueError
from c3mpc.option_fields import OptionValueError
from c3mpc.tasks.ball_trajectories import TimedPath, TrajectoryOptions
from c3mpc.tasks.franka_ball import FrankaBallOptions, run_franka_ball, summarize
from c3mpc.tasks.franka_ball_cli import franka_ball_options, success
from c3mpc.tasks.franka_robustness import RobustnessOptions


def _opts(*argv: str) -> FrankaBallOptions:
    return franka_ball_options(build_parser().parse_args(["run", "franka-ball", *argv]))[0]


def test_trajectory_flags_and_nested_fields():
    o = _opts("--trajectory", "figure8", "--trajectory-period", "40", "--trajectory-size",
              "0.08", "--set", "trajectory.lead_distance=0.03")
    assert o.trajectory == TrajectoryOptions(shape="figure8", period=40.0, size=0.08,
                                             lead_distance=0.03)
    assert o.time_limit == pytest.approx(o.trajectory.duration)
    assert _opts().trajectory is None and _opts("--laps", "3").laps == 3
    assert _opts("--laps", "3").time_limit == 180.0


def test_robustness_fields_from_the_command_line():
    o = _opts("--set", "robustness.table_slant_deg=1.5", "--set", "robustness.push_times=2,5",
              "--set", "robustness.push_impulse=0.005,0", "--set", "robustness.friction=0.5")
    assert o.robustness == RobustnessOptions(table_slant_deg=1.5, push_times=(2.0, 5.0),
                                             push_impulse=(0.005, 0.0), friction=0.5)


def test_bad_experiment_options_are_refused_with_their_name(capsys):
    with pytest.raises(OptionValueError, match="trajectory.shape"):
        _opts("--trajectory", "figure8", "--set", "trajectory.shape=circle")
    with pytest.raises(OptionValueError, match="TrajectoryOptions"):
        _opts("--set", "trajectory.shape=star")
    with pytest.raises(SystemExit):
        _opts("--trajectory", "star")
    with pytest.raises(C3ValueError, match="one ball"):
        FrankaBallOptions(n_balls=2, trajectory=TrajectoryOptions())
    with pytest.raises(C3ValueError, match="robustness"):
        FrankaBallOptions(world="model", robustness=RobustnessOptions())
    with pytest.raises(C3ValueError, match="laps"):
        FrankaBallOptions(laps=0)
    assert main(["run", "cartpole-softwalls", "--trajectory", "circle"]) == 2
    assert "for franka-ball only" in capsys.readouterr().err


def test_a_time_based_run_takes_the_trajectory_tuning_keys():
    """The trajectory's gait and step 5 come from the tuning's ``trajectory_`` keys; the
    multi-ball line task keeps its ``line_`` ones and the state-based lap the plain ones."""
    from c3mpc.tasks.franka_ball import TUNINGS

    t = TUNINGS["nominal"]
    o = FrankaBallOptions(trajectory=TrajectoryOptions())
    assert (o.gait, o.resim_lead) == (t["trajectory_gait"], t["trajectory_resim_lead"])
    assert o.gait.phase2_lift is not None and o.resim_lead == 0.0  # staged, over the delay
    o = FrankaBallOptions(n_balls=2)
    assert (o.gait, o.resim_lead) == (t["line_gait"], t["line_resim_lead"])
    o = FrankaBallOptions()
    assert (o.gait, o.resim_lead) == (t["gait"], t["resim_lead"])
    o = _opts("--trajectory", "square", "--set", "trajectory.goal_law=schedule",
              "--set", "trajectory.lookahead=0.5", "--set", "trajectory.goal_velocity=false")
    assert (o.trajectory.goal_law, o.trajectory.lookahead, o.trajectory.goal_velocity) == (
        "schedule", 0.5, False)


def test_success_of_a_time_based_run_is_ninety_percent_in_the_band():
    o = FrankaBallOptions(trajectory=TrajectoryOptions())
    s = {"task_completed": True, "band_fraction": 0.91, "returned_to_band_after_every_exit": False}
    assert success(o, s)
    assert not success(o, {**s, "band_fraction": 0.89})
    assert not success(dataclasses.replace(o, trajectory=None), s)  # the circle's 95%


def test_short_run_with_a_trajectory_and_a_push_reaches_the_summary(tmp_path):
    o = FrankaBallOptions(duration=0.4, planning_latency=0.004,
                          trajectory=TrajectoryOptions(shape="square", period=20.0,
                                                       ramp_time=0.0),
                          robustness=RobustnessOptions(push_times=(0.1,),
                                                       push_impulse=(0.0066, 0.0)))
    log = run_franka_ball(o)
    s = summarize(log)
    path = TimedPath(o.trajectory, (0.55, 0.1))
    np.testing.assert_allclose(log.error, np.linalg.norm(
        path.position(log.t) - log.balls[:, 0, :2], axis=1), atol=1e-12)
    assert s["trajectory"]["shape"] == "square"
    assert s["trajectory"]["length_m"] == pytest.approx(path.length)
    assert s["task_completed"] and s["laps"] == []  # a 20 s lap does not end in 0.4 s
    (push,) = s["pushes"]
    assert push["time_s"] == 0.1
    # the push reached the ball: it moves along +x at up to J / m = 50 mm/s after 0.1 s
    i0, i1 = np.searchsorted(log.t, [0.1, 0.3])
    v = (log.balls[i1, 0, 0] - log.balls[i0 + 1, 0, 0]) / (log.t[i1] - log.t[i0 + 1])
    assert 0.02 < v <= 0.0501
    assert s["options"]["robustness"]["push_impulse"] == (0.0066, 0.0)
    # the report: the figure draws x_d(t), the summary is valid JSON with the new records
    from c3mpc.tasks.franka_ball_report import write_report

    paths = write_report(tmp_path, log, s)
    assert paths["trajectory.png"].stat().st_size > 10_000
    saved = json.loads(paths["summary.json"].read_text())
    assert saved["trajectory"]["shape"] == "square" and saved["pushes"][0]["time_s"] == 0.1
