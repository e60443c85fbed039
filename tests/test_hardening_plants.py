"""Issue 26 in plants and hardware: the one validation layer (lcs._validation) at their public
entry points: no strings, booleans or complex numbers as numbers, exact shapes, runs too long
for memory refused up front, malformed config files as one line with the file and line."""

from __future__ import annotations

import numpy as np
import pytest

from hardware.config import HardwareValueError
from hardware.deploy import DeployOptions
from plants import load_plant, load_scene
from plants.errors import PlantTypeError, PlantValueError


@pytest.fixture(scope="module")
def sim():
    return load_scene("cube-slide")


@pytest.mark.parametrize("duration, error, match", [
    ("0.01", PlantTypeError, "duration must be a real number, got str"),
    (True, PlantTypeError, "duration must be a real number, got bool"),
    (float("nan"), PlantValueError, "duration"),
    (-1.0, PlantValueError, "duration"),
    (1e12, PlantValueError, r"would need about .* of memory"),
])
def test_simulator_run_duration_is_checked(sim, duration, error, match):
    with pytest.raises(error, match=match):
        sim.run(duration)


@pytest.mark.parametrize("dt, error", [("0.001", PlantTypeError), (True, PlantTypeError),
                                       (0.0, PlantValueError), (float("inf"), PlantValueError)])
def test_load_scene_dt_is_checked(dt, error):
    with pytest.raises(error, match="dt"):
        load_scene("cube-slide", dt=dt)


def test_simulator_state_must_be_real_and_shaped(sim):
    with pytest.raises(PlantTypeError, match="complex"):
        sim.set_state(sim.q.astype(complex), sim.v)
    with pytest.raises(PlantValueError, match=r"q must have shape \(7,\)"):
        sim.set_state(np.zeros(3), sim.v)
    with pytest.raises(PlantTypeError, match="t must be a real number"):
        sim.set_state(sim.q, sim.v, t="0")


def test_paper_plant_inputs_are_strict():
    plant = load_plant("cartpole-softwalls")
    with pytest.raises(PlantValueError, match=r"x must be a vector of shape "
                                              r"\(4,\), got shape \(2, 2\)"):
        plant.lcs(np.zeros((2, 2)), np.zeros(1))
    with pytest.raises(PlantTypeError, match="complex"):
        plant.step(np.zeros(4, complex), np.zeros(1))
    with pytest.raises(PlantTypeError, match="booleans"):
        plant.step(np.zeros(4), np.array([True]))
    with pytest.raises(PlantTypeError, match="dt must be a real number, got str"):
        plant.lcs(dt="0.1")
    x_next, _ = plant.step(np.zeros((4, 1)), [0.0])  # a column is a vector
    assert x_next.shape == (4,)


def test_multibody_plant_state_is_not_flattened():
    plant = load_plant("cube-pivoting")
    with pytest.raises(ValueError, match=r"must be a vector of shape \(14,\), got shape \(2, 7\)"):
        plant.lcs(np.zeros((2, 7)), np.zeros(4))


def test_hardware_config_errors_name_the_file_and_line(tmp_path):
    bad = tmp_path / "deploy.yaml"
    bad.write_text("rate_hz: 100\nsafety: [\n")
    with pytest.raises(HardwareValueError, match=r"deploy.yaml, line \d+: not valid YAML"):
        DeployOptions.from_file(bad)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n" + "".join(
        f"{k}: &{k} [{', '.join(['*' + p] * 10)}]\n" for p, k in zip("abcdef", "bcdefg")))
    with pytest.raises(HardwareValueError, match="bomb.yaml"):
        DeployOptions.from_file(bomb)
