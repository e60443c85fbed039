"""Generic, typed access to FrankaBallOptions from ``c3mpc run franka-ball``: ``--set
FIELD=VALUE``, ``--config FILE``, ``--list-options`` (c3mpc/option_fields.py, c3mpc/tasks/franka_ball_cli.py).

The value parser is checked property-based against Python's own literal parsing (a float's
``repr`` parses back to the same float, bit for bit); the resolution of defaults < config file <
flags against options built directly with ``dataclasses.replace``; one short in-process run
(simplified-model world, 0.3 s simulated, ~3 s) checks that the resolved options reach
``summary.json``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from c3mpc.cli import build_parser, main
from c3mpc.tasks.franka_ball_cli import franka_ball_options, list_options_text
from c3mpc.option_fields import (
    OptionValueError,
    coerce_value,
    describe_fields,
    field_docs,
    flatten_mapping,
    parse_assignment,
    parse_value,
    read_mapping,
    resolve_options,
)
from c3mpc.options import C3Options
from c3mpc.tasks.franka_ball import TASK_STIFFNESS, FrankaBallOptions
from plants.impedance import ImpedanceGains


def _opts(*argv: str) -> tuple[FrankaBallOptions, dict]:
    return franka_ball_options(build_parser().parse_args(["run", "franka-ball", *argv]))


# ------------------------------------------------------------------------ value parser
@given(st.floats(allow_nan=False))
def test_float_text_round_trips_exactly(x):
    assert parse_value(repr(x), float) == x
    assert parse_value(f"  {x!r} ", float | None) == x


@given(st.integers(min_value=-10**30, max_value=10**30))
def test_int_text_round_trips(n):
    assert parse_value(str(n), int) == n
    assert parse_value(str(n), float) == float(n)


@given(st.text(max_size=12))
def test_float_parser_agrees_with_python_or_raises_a_named_error(text):
    try:
        expected = float(text)
    except ValueError:
        with pytest.raises(OptionValueError) as e:
            parse_value(text, float, "--set radius=" + text, "radius")
        assert e.value.field == "radius" and e.value.expected == "float"
        assert "radius must be float" in str(e.value)
    else:
        got = parse_value(text, float)
        assert got == expected or (math.isnan(got) and math.isnan(expected))


@given(st.text(max_size=8))
def test_bool_parser_accepts_only_the_documented_words(text):
    word = text.strip().lower()
    if word in ("true", "yes", "on", "1"):
        assert parse_value(text, bool) is True
    elif word in ("false", "no", "off", "0"):
        assert parse_value(text, bool) is False
    else:
        with pytest.raises(OptionValueError, match="must be bool|expected bool"):
            parse_value(text, bool)


@given(st.lists(st.floats(allow_nan=False), min_size=2, max_size=2),
       st.sampled_from(["{}", "({})", "[{}]", " ( {} ) "]), st.sampled_from([",", ", ", " ,"]))
def test_tuple_parser_accepts_brackets_and_spacing(values, wrap, sep):
    text = wrap.format(sep.join(repr(v) for v in values))
    assert parse_value(text, tuple[float, float]) == tuple(values)
    assert parse_value(text, tuple[float, ...]) == tuple(values)


def test_optional_none_words_and_wrong_arity():
    assert parse_value("none", float | None) is None
    assert parse_value("Null", str | None) is None
    assert parse_value("none", str) == "none"  # a plain str stays a string
    with pytest.raises(OptionValueError, match=r"center must be tuple\[float, float\] \(2 values\)"):
        parse_value("1,2,3", tuple[float, float], field="center")
    assert parse_value("b", typing.Literal["a", "b"]) == "b"
    with pytest.raises(OptionValueError, match="Literal"):
        parse_value("c", typing.Literal["a", "b"])


def test_coerce_checks_typed_values_from_files():
    assert coerce_value(3, float) == 3.0 and isinstance(coerce_value(3, float), float)
    assert coerce_value([1, 2.5], tuple[float, float]) == (1.0, 2.5)
    assert coerce_value("none", float | None) is None  # TOML has no null
    assert coerce_value("none", str | None) is None and coerce_value("none", str) == "none"
    assert coerce_value("1e-3", float) == 1e-3  # YAML 1.1 reads 1e-3 as a string
    assert coerce_value(None, float | None) is None
    for value, tp in [(True, float), (True, int), (1.5, int), (None, float), (1, bool),
                      (2, str), ([1, 2, 3], tuple[float, float])]:
        with pytest.raises(OptionValueError):
            coerce_value(value, tp, field="x")


def test_parse_assignment():
    assert parse_assignment("radius=0.1") == ("radius", "0.1")
    assert parse_assignment(" gait.phase2_back =0.05") == ("gait.phase2_back", "0.05")
    assert parse_assignment("solver=a=b") == ("solver", "a=b")
    for bad in ("radius", "=1", "1x=2", "a..b=1"):
        with pytest.raises(OptionValueError, match="FIELD=VALUE"):
            parse_assignment(bad)


# ------------------------------------------------------------------------ resolution
def test_no_flags_give_the_defaults():
    o, sources = _opts()
    assert o == FrankaBallOptions()
    assert sources == {"preset": "default", "config": None, "flags": {}, "set": {}}


def test_legacy_flags_still_work():
    o, _ = _opts("--balls", "2", "--noise", "0.001", "--solver", "canal", "--world", "model",
                 "--seed", "3", "--duration", "4", "--projection", "qp", "--horizon", "7")
    assert o == FrankaBallOptions(n_balls=2, noise_std=0.001, solver="canal", world="model",
                                  seed=3, duration=4.0, projection="qp", horizon=7)


def test_set_parses_every_kind_of_field():
    o, sources = _opts("--set", "min_command_delay=none", "--set", "planning_latency=0.01",
                       "--set", "vision_filter=kalman", "--set", "admm_iter=6",
                       "--set", "extrapolate_vision=false", "--set", "center=(0.5, -0.02)",
                       "--set", "gait.phase2_back=0.05", "--set", "projection=none",
                       "--set", "impedance.rotational_damping=25")
    expected = dataclasses.replace(
        FrankaBallOptions(), min_command_delay=None, planning_latency=0.01,
        vision_filter="kalman", admm_iter=6, extrapolate_vision=False, center=(0.5, -0.02),
        gait=dataclasses.replace(FrankaBallOptions().gait, phase2_back=0.05),
        impedance=ImpedanceGains(translational_stiffness=TASK_STIFFNESS, feedforward=True,
                                 rotational_damping=25.0))
    assert o == expected
    assert sources["set"]["center"] == "(0.5, -0.02)"


def test_impedance_overrides_start_from_the_task_default_for_that_many_balls():
    # run_franka_ball's default for more than one ball: no force feed-forward
    o, _ = _opts("--balls", "3", "--set", "impedance.damping_ratio=0.8")
    assert o.impedance == ImpedanceGains(translational_stiffness=TASK_STIFFNESS,
                                         feedforward=False, damping_ratio=0.8)


def test_precedence_defaults_then_file_then_flags(tmp_path):
    cfg = tmp_path / "fb.toml"
    cfg.write_text('[franka_ball]\nradius = 0.12\nnoise_std = 0.002\nworld = "model"\n'
                   'admm_iter = 3\n[franka_ball.gait]\nphase2_back = 0.03\n')
    o, sources = _opts("--config", str(cfg), "--noise", "0.001", "--set", "admm_iter=5")
    assert o.radius == 0.12 and o.world == "model"  # file over defaults
    assert o.noise_std == 0.001 and o.admm_iter == 5  # flags over the file
    # nested overrides start from the default of the options they land in: with noise,
    # the noisy tuning's gait
    assert o.gait == dataclasses.replace(FrankaBallOptions(noise_std=0.001).gait,
                                         phase2_back=0.03)
    assert o.horizon == FrankaBallOptions().horizon  # untouched: default
    assert sources["config"] == str(cfg)
    # the last --set of a field wins
    assert _opts("--set", "radius=0.2", "--set", "radius=0.3")[0].radius == 0.3


def test_yaml_config_at_top_level(tmp_path):
    cfg = tmp_path / "fb.yaml"
    cfg.write_text("sim_dt: 1e-3\ninput_limit: null\ncenter: [0.5, 0.0]\n")
    o, _ = _opts("--config", str(cfg))
    assert (o.sim_dt, o.input_limit, o.center) == (1e-3, None, (0.5, 0.0))


# ------------------------------------------------------------------------ error messages
def test_unknown_field_lists_the_valid_ones():
    with pytest.raises(OptionValueError) as e:
        _opts("--set", "radus=0.1")
    msg = str(e.value)
    assert "radus" in msg and "did you mean 'radius'" in msg
    for f in dataclasses.fields(FrankaBallOptions):
        assert f.name in msg and f.name in e.value.valid_fields
    with pytest.raises(OptionValueError, match="gait.phase2_bak.*valid fields: gait.phase1"):
        _opts("--set", "gait.phase2_bak=0.1")
    with pytest.raises(OptionValueError, match="radius is a float, it has no field 'x'"):
        _opts("--set", "radius.x=1")


@pytest.mark.parametrize("assignment, field, expected", [
    ("radius=abc", "radius", "float"), ("admm_iter=2.5", "admm_iter", "int"),
    ("stop_after_lap=maybe", "stop_after_lap", "bool"),
    ("min_command_delay=soon", "min_command_delay", "float | Literal['auto'] | None"),
    ("center=1", "center", "tuple[float, float]"),
    ("gait.phase2_back=x", "gait.phase2_back", "float"),
    ("impedance.feedforward=2", "impedance.feedforward", "bool")])
def test_bad_value_names_field_and_type(assignment, field, expected):
    with pytest.raises(OptionValueError) as e:
        _opts("--set", assignment)
    assert (e.value.field, e.value.expected) == (field, expected)
    assert f"{field} must be {expected}" in str(e.value) and assignment in str(e.value)


def test_values_the_dataclass_rejects_and_conflicts(tmp_path):
    with pytest.raises(OptionValueError, match=r"rejected --set radius=-1: radius must be > 0"):
        _opts("--set", "radius=-1")
    with pytest.raises(OptionValueError, match="n_balls is given twice: by --balls"):
        _opts("--balls", "2", "--set", "n_balls=3")
    with pytest.raises(OptionValueError, match="group of options"):
        _opts("--set", "gait=1")
    bad = tmp_path / "bad.toml"
    bad.write_text("[franka_ball]\nradius = true\n")
    with pytest.raises(OptionValueError, match=r"--config .*bad.toml: radius=True: radius must "
                                               r"be float, got True"):
        _opts("--config", str(bad))
    with pytest.raises(ValueError, match=".yaml/.yml/.toml"):
        _opts("--config", str(tmp_path / "fb.json"))


def test_cli_exit_code_and_message(capsys):
    assert main(["run", "franka-ball", "--set", "radius=abc", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "c3mpc: error: --set radius=abc: radius must be float, got 'abc'" in err
    assert main(["run", "cartpole-softwalls", "--set", "rho=2", "--quiet"]) == 2
    assert "for franka-ball" in capsys.readouterr().err


# ------------------------------------------------------------------------ files and listing
def _toml_value(v) -> str:
    if v is None:
        return '"none"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(v)


def _to_toml(o: FrankaBallOptions) -> str:
    top, tables = [], []
    for f in dataclasses.fields(o):
        v = getattr(o, f.name)
        if dataclasses.is_dataclass(v):
            tables.append(f"[franka_ball.{f.name}]")
            tables += [f"{g.name} = {_toml_value(getattr(v, g.name))}"
                       for g in dataclasses.fields(v)]
        else:
            top.append(f"{f.name} = {_toml_value(v)}")
    return "\n".join(["[franka_ball]", *top, *tables]) + "\n"


def test_toml_round_trip_of_every_field(tmp_path):
    o = dataclasses.replace(
        FrankaBallOptions(), n_balls=2, duration=12.5, stop_after_lap=False, noise_std=1e-3,
        vision_filter="lowpass", projection="qp", min_resim_dt=None, min_command_delay=None,
        planning_latency=0.012, input_limit=None, center=(0.6, -0.05), radius=0.08,
        gait=dataclasses.replace(FrankaBallOptions().gait, phase1_duration=0.8,
                                 phase1_match_velocity=True),
        impedance=ImpedanceGains(translational_stiffness=1500.0, feedforward=False), seed=7)
    path = tmp_path / "all.toml"
    path.write_text(_to_toml(o))
    loaded, _ = _opts("--config", str(path))
    assert loaded == o


def test_summary_options_reload_to_the_same_options():
    """summary.json's ``options`` (tasks.franka_ball._options_dict: tuples as lists, nested options
    as tables) is itself a valid config."""
    from c3mpc.tasks.franka_ball import _options_dict

    o = dataclasses.replace(FrankaBallOptions(), center=(0.5, 0.1), min_command_delay=None,
                            impedance=ImpedanceGains(rotational_damping=30.0))
    data = json.loads(json.dumps(_options_dict(o)))
    assert resolve_options(FrankaBallOptions, [("summary", flatten_mapping(data))],
                           {"impedance": __import__("c3mpc.tasks.franka_ball_cli", fromlist=["_nested"])
                            ._nested()["impedance"]}) == o


def test_read_mapping_rejects_non_mappings(tmp_path):
    p = tmp_path / "list.yaml"
    p.write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match="mapping at top level"):
        read_mapping(p)
    q = tmp_path / "broken.toml"
    q.write_text("radius = \n")
    with pytest.raises(ValueError, match="not valid TOML"):
        read_mapping(q)


def test_list_options_shows_every_field_with_type_default_and_doc(capsys):
    assert main(["run", "franka-ball", "--list-options"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == list_options_text()
    d = FrankaBallOptions()
    for f in dataclasses.fields(FrankaBallOptions):  # gait is listed field by field
        assert f"\n  {f.name}: " in out or f"\n  {f.name}." in out
    assert "\n  radius: float = 0.1\n      the circle of eq. (25).\n" in out
    assert "\n  min_command_delay: float | Literal['auto'] | None = 0.008\n" in out
    assert f"\n  gait.phase2_back: float = {d.gait.phase2_back!r}\n" in out
    assert f"\n  impedance.translational_stiffness: float = {TASK_STIFFNESS!r}\n" in out
    # every field is documented (a new field without a doc line fails here)
    undocumented = [i.name for i in describe_fields(FrankaBallOptions) if not i.doc]
    assert undocumented == []


def test_field_docs_reads_attribute_docstrings_too():
    docs = field_docs(C3Options)
    assert docs["admm_iter"].startswith("ADMM iterations s per solve")
    assert field_docs(FrankaBallOptions)["line_distance"].startswith("how far every ball")


# ------------------------------------------------------------------------ end to end (~3 s)
def test_resolved_options_reach_summary_json(tmp_path):
    cfg = tmp_path / "fb.toml"
    cfg.write_text('world = "model"\nduration = 0.3\n[gait]\nphase2_back = 0.05\n')
    out = tmp_path / "rep"
    code = main(["run", "franka-ball", "--config", str(cfg), "--set", "min_command_delay=0.01",
                 "--report", str(out), "--no-html", "--quiet"])
    assert code == 1  # 0.3 s cannot complete a lap
    s = json.loads((out / "summary.json").read_text())
    o = s["options"]
    assert (o["world"], o["duration"], o["min_command_delay"]) == ("model", 0.3, 0.01)
    assert o["gait"]["phase2_back"] == 0.05 and o["center"] == [0.55, 0.0]
    assert s["options_sources"] == {"preset": "default", "config": str(cfg), "flags": {},
                                    "set": {"min_command_delay": "0.01"}}


def test_summary_line_says_when_the_band_share_is_of_a_run_that_stopped_early(capsys):
    """A run the simulator stopped (e.g. diverged after a strike) reports its band share as a
    share of the simulated seconds, and the printout says so instead of "of the time"."""
    from c3mpc.tasks.franka_ball_cli import _print_summary

    s = {"simulated_time_s": 10.33, "wall_time_s": 35.9, "simulated": "panda world",
         "n_balls": 1, "lap_completed": False, "lap_time_s": None, "lap_angle_deg": -117.0,
         "excursions": [{"returned": False}], "left_band": True,
         "returned_to_band_after_every_exit": False, "band_m": 0.02, "band_fraction": 0.244,
         "max_error_m": 2.86, "controller_rate_hz": 250.0, "plan_time_median_s": 0.004,
         "solve_time_median_s": 0.004, "n_plans": 738, "failed_plans": 0,
         "contact_fraction_true": 0.28, "n_contact_onsets_true": 2,
         "contact_fraction_planned": 0.24}
    _print_summary({**s, "sim_error": "SimulationDivergedError: ..."})
    out = capsys.readouterr().out
    assert "SIMULATION STOPPED" in out
    assert "24.4% of the 10.3 s simulated before it stopped" in out
    _print_summary({**s, "sim_error": None})
    assert "24.4% of the time;" in capsys.readouterr().out


@pytest.mark.parametrize("field,value", [("torque_limits", "yes"), ("ball_on_table", 1),
                                         ("acceleration_feedforward", None),
                                         ("line_steer", "on")])
def test_boolean_options_reject_non_booleans(field, value):
    """A switch given as a string or number (a truthy "no" would silently turn it on) is an
    error naming the field."""
    from c3mpc.errors import C3ValueError
    from c3mpc.tasks.franka_ball import FrankaBallOptions

    with pytest.raises(C3ValueError, match=field):
        FrankaBallOptions(**{field: value})


@pytest.mark.parametrize("text", ["-1", "nan", "soon"])
def test_twin_status_interval_must_be_non_negative_seconds(text, capsys):
    from c3mpc.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["twin", "franka-ball", "--port", "0", "--status-interval", text])
    assert exc.value.code == 2
    assert "--status-interval: expected seconds >= 0" in capsys.readouterr().err


def test_noise_flag_selects_the_vision_tuning_unless_told_otherwise(tmp_path):
    from c3mpc.tasks.franka_ball import TUNINGS

    o, _ = _opts("--noise", "0.001")
    vision = TUNINGS["vision"]
    assert o.resolved_tuning == "vision" and o.force_sensing
    assert o.vision_accel_std == vision["vision_accel_std"]
    assert o.min_command_delay == vision["command_delay"]
    o, _ = _opts("--noise", "0.001", "--set", "tuning=noisy")
    noisy = TUNINGS["noisy"]
    assert o.resolved_tuning == "noisy" and o.min_command_delay == noisy["command_delay"]
    assert (o.lead_angle_deg, o.gait) == (noisy["lead_angle_deg"], noisy["gait"])
    o, _ = _opts("--noise", "0.001", "--set", "tuning=nominal")
    assert o.min_command_delay == 0.008 and o.lead_angle_deg == 20.0
    o, _ = _opts("--noise", "0.001", "--set", "lead_angle_deg=18", "--set",
                 "min_command_delay=0.006")
    assert o.lead_angle_deg == 18.0 and o.min_command_delay == 0.006
    assert o.ball_velocity_weight == vision["ball_velocity_weight"]
    cfg = tmp_path / "n.toml"
    cfg.write_text('[franka_ball]\nnoise_std = 0.001\nmin_command_delay = "auto"\n'
                   'lead_angle_deg = "none"\n')
    o, _ = _opts("--config", str(cfg))
    assert (o.min_command_delay, o.lead_angle_deg) == (vision["command_delay"],
                                                       vision["lead_angle_deg"])
    with pytest.raises(OptionValueError, match="tuning"):
        _opts("--set", "tuning=loud")


def test_noise_without_force_sensing_selects_the_vision_tuning():
    from c3mpc.tasks.franka_ball import TUNINGS
    from c3mpc.tasks.franka_ball_cli import _changed

    o, _ = _opts("--noise", "0.001", "--set", "force_sensing=false")
    vision = TUNINGS["vision"]
    assert o.resolved_tuning == "vision" and not o.force_sensing
    assert (o.vision_accel_std, o.gait, o.min_command_delay, o.resim_lead) == (
        vision["vision_accel_std"], vision["gait"], vision["command_delay"],
        vision["resim_lead"])
    assert _changed(o) == ["noise_std=0.001", "force_sensing=False"]
    o, _ = _opts("--noise", "0.001", "--set", "force_sensing=false", "--set",
                 "vision_accel_std=0.01")
    assert o.resolved_tuning == "vision" and o.vision_accel_std == 0.01


def test_success_uses_the_noise_free_or_the_noisy_criterion():
    from c3mpc.tasks.franka_ball_cli import success

    done = {"task_completed": True, "returned_to_band_after_every_exit": True}
    quiet, noisy = FrankaBallOptions(), FrankaBallOptions(noise_std=0.001)
    assert success(quiet, {**done, "band_fraction": 0.95})
    assert not success(quiet, {**done, "band_fraction": 0.94})
    assert success(noisy, {**done, "band_fraction": 0.75})
    assert not success(noisy, {**done, "band_fraction": 0.74})
    assert not success(noisy, {**done, "band_fraction": 0.9,
                               "returned_to_band_after_every_exit": False})
    assert not success(quiet, {**done, "task_completed": False, "band_fraction": 1.0})
