"""Our SAP stepper against Drake's SAP (the `peers` extra): skipped cleanly without drake."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from plants import load_scene

pytest.importorskip("pydrake")


def _bench():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sim.py"
    spec = importlib.util.spec_from_file_location("bench_sim", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rest_stack_penetration_matches_drake_sap():
    """Same geometry, stiffness and regularization (β = 1, σ = 1e-3): the bottom cube of the
    5-cube stack sinks by the same amount in both (measured: 7.94705e-7 vs 7.94708e-7 m)."""
    bench = _bench()
    sim, plant, pc, bodies = bench.drake_build(5, 1e-3)
    sim.AdvanceTo(0.2)
    z_drake = [plant.EvalBodyPoseInWorld(pc, b).translation()[2] for b in bodies]
    ours = load_scene("cube-rest-5", dt=1e-3)
    traj = ours.run(0.2)
    z_ours = traj.q[-1, 2::7]
    pen_drake = 0.05 - z_drake[0]
    pen_ours = 0.05 - z_ours[0]
    assert pen_ours == pytest.approx(pen_drake, rel=1e-3)
    for zo, zd in zip(z_ours, z_drake):
        assert zo == pytest.approx(zd, abs=1e-8)


def test_spring_cylinder_slip_dissipation_matches_drake_sap():
    """Rolling spring-cylinder (seed 001 §VI-B, μ = 1, σ = 1e-3, δt = 20 ms) with symplectic
    Euler, the scheme of Drake's discrete SAP: the same trajectory and the same energy, so the
    regularized-stiction slip loss (∝ σ) is Drake's (measured over 600 s: 16.58 % in both)."""
    import numpy as np

    bench = _bench()
    t, E_drake, x_drake = bench.drake_cylinder(20.0)
    sim = load_scene("spring-cylinder", mu=1.0, scheme="symplectic_euler")
    traj = sim.run(20.0)
    E_ours = sim.energy(traj)
    assert E_ours[0] == pytest.approx(E_drake[0], rel=1e-9)  # same total mechanical energy (ground datum)
    np.testing.assert_allclose(traj.q[:, 0], x_drake, atol=1e-6)
    np.testing.assert_allclose(E_ours, E_drake, rtol=1e-5)
    loss = lambda E: 1 - E[-270:].mean() / E[:270].mean()  # noqa: E731 - 10 periods averaged
    assert loss(E_ours) == pytest.approx(loss(E_drake), rel=1e-3)
    assert loss(E_ours) > 0
