"""The Franka ball task's presets and cost/gait options (c3mpc/tasks/franka_ball.py,
c3mpc/algorithm3.py): ``preset_options("paper")`` / ``c3mpc run franka-ball --preset paper``
hold seed 003's settings, checked against the planning plant's own paper defaults (an
independent record of §VII-A); ``ball_position_weight`` and ``phase2_ball_weight`` reach C3's
cost; the staged Phase II return (``GaitOptions.phase2_lift``) puts the end-effector bias where
the docs say, above the ball. Fast: no closed-loop run except one 0.3 s model-world run.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from c3mpc.algorithm3 import CircleTarget, GaitOptions
from c3mpc.cli import build_parser, main
from c3mpc.errors import C3ValueError
from c3mpc.option_fields import OptionValueError
from c3mpc.tasks.franka_ball import (
    PRESETS,
    FrankaBallOptions,
    build_planner,
    franka_layout,
    preset_options,
    task_gains,
)
from c3mpc.tasks.franka_ball_cli import franka_ball_options
from plants import load_plant
from plants.impedance import ImpedanceGains


def _opts(*argv: str) -> tuple[FrankaBallOptions, dict]:
    return franka_ball_options(build_parser().parse_args(["run", "franka-ball", *argv]))


def _Q(planner, phase: int) -> np.ndarray:
    return np.diag(planner.controllers[phase].cost_matrices[0][0])


def _input_bounds(ctrl) -> list:
    return [c for c in ctrl._constraints if c.variable == "input"]


# ------------------------------------------------------------------------ the paper preset
def test_paper_preset_is_the_plants_paper_defaults_and_eq36_exactly():
    plant = load_plant("franka-ball")
    d = plant.defaults  # §VII-A as recorded by the plant: s = 2, rho_s = 3, N = 5, dt = 0.1
    o = preset_options("paper")
    assert (o.admm_iter, o.horizon) == (d.admm_iter, d.N) == (2, 5)
    assert o.end_on_qp_step is True  # the final QP iterate, as the authors' code
    assert o.impedance == ImpedanceGains()  # the authors' K = 500, damping ratio 1
    assert o.impedance.translational_stiffness == 500.0
    assert o.acceleration_feedforward is False and o.input_limit is None
    assert o.min_command_delay is None and o.min_resim_dt == 0.0  # Δt_c = measured time
    assert o.force_sensing is False and o.vision_filter == "none"
    assert o.lead_angle_deg == 20.0
    planner, c3 = build_planner(plant, o)
    assert (c3.admm_iter, c3.rho_scale, c3.end_on_qp_step) == (2, d.rho_scale, True)
    assert d.rho_scale == 3.0
    # ball-velocity weight as the plant's (authors') 0.1, everything else of Q untouched
    np.testing.assert_array_equal(_Q(planner, 0), np.diag(d.Q))
    for ctrl in planner.controllers:  # no input bound
        assert _input_bounds(ctrl) == []
    bounded, _ = build_planner(plant, FrankaBallOptions())
    (con,) = _input_bounds(bounded.controllers[0])
    assert np.all(con.upper == 5.0) and np.all(con.lower == -5.0)


def test_default_preset_is_the_defaults_and_overrides_win():
    assert preset_options("default") == FrankaBallOptions()
    o = preset_options("paper", admm_iter=4, noise_std=0.001)
    assert o.admm_iter == 4 and o.noise_std == 0.001 and o.end_on_qp_step is True
    with pytest.raises(C3ValueError, match=r"preset must be one of \['default', 'paper'\]"):
        preset_options("papers")
    assert sorted(PRESETS) == ["default", "paper"]


def test_cli_preset_is_the_lowest_layer(tmp_path):
    o, src = _opts("--preset", "paper")
    assert o == preset_options("paper") and src["preset"] == "paper"
    o, src = _opts()
    assert o == FrankaBallOptions() and src["preset"] == "default"
    cfg = tmp_path / "c.toml"
    cfg.write_text("admm_iter = 3\n")
    o, _ = _opts("--preset", "paper", "--config", str(cfg), "--set", "input_limit=5")
    assert o == preset_options("paper", admm_iter=3, input_limit=5.0)
    with pytest.raises(SystemExit) as e:  # argparse: unknown preset
        main(["run", "franka-ball", "--preset", "fast"])
    assert e.value.code == 2


def test_cli_preset_run_records_its_source(tmp_path):
    rep = tmp_path / "rep"
    code = main(["run", "franka-ball", "--preset", "paper", "--world", "model", "--duration",
                 "0.3", "--report", str(rep), "--no-html", "--quiet"])
    assert code == 1  # 0.3 s: no lap
    s = json.loads((rep / "summary.json").read_text())
    assert s["options_sources"]["preset"] == "paper"
    assert s["options"]["admm_iter"] == 2 and s["options"]["end_on_qp_step"] is True
    assert s["impedance"]["translational_stiffness"] == 500.0
    assert s["c3_options"]["admm_iter"] == 2


# ------------------------------------------------------------------------ cost options
@pytest.mark.parametrize("n_balls", [1, 3])
def test_ball_position_weight_reaches_both_phases_and_nothing_else(n_balls):
    o0 = FrankaBallOptions(n_balls=n_balls)
    plant = load_plant(o0.plant_name, **o0.plant_params)
    lay = franka_layout(plant)
    xy = [i for pair in lay.ball_xy for i in pair]
    base, _ = build_planner(plant, o0)
    hi, _ = build_planner(plant, dataclasses.replace(o0, ball_position_weight=30000.0))
    for ph in (0, 1):
        q0, q1 = _Q(base, ph), _Q(hi, ph)
        assert np.all(q0[xy] == np.diag(plant.defaults.Q)[xy])  # None: the plant's
        assert np.all(q1[xy] == 30000.0)
        rest = np.ones(q0.size, bool)
        rest[xy] = False
        np.testing.assert_array_equal(q0[rest], q1[rest])


def test_phase2_ball_weight_changes_only_phase2():
    o = FrankaBallOptions(phase2_ball_weight=1.0)
    plant = load_plant("franka-ball")
    lay = franka_layout(plant)
    xy = [i for pair in lay.ball_xy for i in pair]
    p, _ = build_planner(plant, o)
    base, _ = build_planner(plant, FrankaBallOptions())
    np.testing.assert_array_equal(_Q(p, 0), _Q(base, 0))
    assert np.all(_Q(p, 1)[xy] == 1.0)
    assert np.all(_Q(p, 1)[list(lay.ee_position)] == o.phase2_ee_weight)


@pytest.mark.parametrize("field", ["ball_position_weight", "phase2_ball_weight"])
@pytest.mark.parametrize("value", [-1.0, float("nan"), True, "1e4"])
def test_weights_reject_bad_values_naming_the_field(field, value):
    with pytest.raises((C3ValueError, TypeError, ValueError), match=field):
        FrankaBallOptions(**{field: value})


def test_cli_sets_the_new_weights():
    o, _ = _opts("--set", "ball_position_weight=30000", "--set", "phase2_ball_weight=none")
    assert o.ball_position_weight == 30000.0 and o.phase2_ball_weight is None
    with pytest.raises(OptionValueError, match="ball_position_weight"):
        _opts("--set", "ball_position_weight=heavy")


# ------------------------------------------------------------------------ step 5's lead
class _Clock:
    """plan() reads the clock at start, after C3 and at the end: Δt_c = ``dt``."""

    def __init__(self, dt: float):
        self.dt, self.calls = dt, 0

    def __call__(self) -> float:
        self.calls += 1
        return 0.0 if self.calls % 3 == 1 else self.dt


@pytest.mark.parametrize("kw, expected", [
    ({}, 0.008 + 1 / 80),  # defaults: the 8 ms command-delay floor + one camera period
    ({"min_command_delay": None}, 0.003 + 1 / 80),  # the measured 3 ms + one camera period
    ({"resim_lead": 0.005, "min_command_delay": None}, 0.008),
    ({"resim_lead": 0.0, "min_command_delay": None}, 0.003),  # Algorithm 3 as written
    ({"vision_rate_hz": 50.0, "min_command_delay": None}, 0.003 + 0.02),
])
def test_step5_interval_is_the_delay_plus_the_lead_and_x_d_is_that_lcs_step(kw, expected):
    plant = load_plant("franka-ball")
    planner, _ = build_planner(plant, FrankaBallOptions(**kw))
    planner.clock = _Clock(0.003)
    x = np.array(plant.defaults.x0, float)
    x[0:3] = [0.40, -0.10, 0.30]  # far from the ball: no contact
    x[10:13] = [0.05, -0.02, 0.01]
    plan = planner.plan(x, 0.0)
    assert plan.dt_c == pytest.approx(0.003) and plan.dt_resim == pytest.approx(expected)
    # independent: the point end effector under acceleration u over h (semi-implicit Euler)
    v_d = x[10:13] + plan.u * expected
    np.testing.assert_allclose(plan.x_d[10:13], v_d, atol=1e-9)
    np.testing.assert_allclose(plan.x_d[0:3], x[0:3] + expected * v_d, atol=1e-9)


def test_resim_lead_tuning_and_validation():
    assert FrankaBallOptions().resim_lead is None  # one ball, noise-free: one camera period
    assert FrankaBallOptions(n_balls=2).resim_lead == 0.0  # the line task: as before
    assert FrankaBallOptions(noise_std=0.001, tuning="noisy").resim_lead == 0.0  # noisy
    assert FrankaBallOptions(noise_std=0.001).resim_lead is None  # vision: the nominal one
    assert preset_options("paper").resim_lead == 0.0
    for bad in (-0.001, float("nan"), True, "0.01"):
        with pytest.raises((C3ValueError, TypeError, ValueError), match="resim_lead"):
            FrankaBallOptions(resim_lead=bad)


# ------------------------------------------------------------------------ staged Phase II
def test_phase2_lift_then_behind_above_the_ball():
    plant = load_plant("franka-ball")
    lay = franka_layout(plant)
    g = GaitOptions(phase2_lift=0.003, phase2_back=0.027, phase2_height=0.0775)
    tgt = CircleTarget(plant.defaults.x_goal, lay, (0.55, 0.0), 0.1, 20.0, g)
    x = np.array(plant.defaults.x0, float)
    ball = lay.balls(x)[0]
    x[list(lay.ee_position)] = ball + [0.004, -0.002, lay.ball_radius + lay.ee_radius]
    ee = lay.ee(x)
    top = ball[2] + lay.ball_radius + lay.ee_radius
    # Phase I: on top of the ball
    np.testing.assert_allclose(tgt(x, 0.5).x_goal[list(lay.ee_position)], [*ball[:2], top])
    # first third of Phase II: straight up from where the end effector is
    for t in (1.0, 1.0 + 0.5 / 3 - 1e-6, 2.5 + 0.1):
        assert g.lifting(t)
        np.testing.assert_allclose(tgt(x, t).x_goal[list(lay.ee_position)],
                                   [ee[0], ee[1], top + 0.003])
    # then behind the ball (opposite to its target), above the ball: outside contact
    for t in (1.0 + 0.5 / 3 + 1e-6, 1.49):
        assert not g.lifting(t)
        pt = tgt(x, t)
        b = pt.x_goal[list(lay.ee_position)]
        e = pt.ball_targets[0] - ball[:2]
        e /= np.linalg.norm(e)
        np.testing.assert_allclose(b[:2], ball[:2] - 0.027 * e, atol=1e-12)
        assert b[2] == 0.0775
        assert np.linalg.norm(b - ball) > lay.ball_radius + lay.ee_radius
    assert not GaitOptions().lifting(1.1)  # None: the single bias


@pytest.mark.parametrize("kw", [{"phase2_lift": -0.001}, {"phase2_lift": float("inf")},
                                {"phase2_lift": True}, {"phase2_lift_fraction": 1.5}])
def test_gait_rejects_bad_lift_options(kw):
    with pytest.raises(C3ValueError, match="phase2_lift"):
        GaitOptions(**kw)


def test_task_gains_are_unchanged_by_the_preset_machinery():
    assert task_gains(FrankaBallOptions()).translational_stiffness == 2000.0
