"""Seed 002's options of NSN (issue #20 item 6): the complementarity preconditioner choices of
Fig. 17 in our units, the fixed Newton counts of Table 2, and the stiff chain scene (Fig. 7)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from plants import load_scene
from plants.sim import NSNOptions, NSNSolver
from plants.sim.al_scenes import STIFF_CHAIN
from plants.sim.contact_problem import ContactProblem, ContactSolverStatus

G = 9.81


def _resting_particle(m=2.0, dt=1e-2):
    return ContactProblem(A=m * np.eye(3), v_star=[0.0, 0.0, -G * dt], J=np.eye(3), phi0=[0.0], mu=[0.5],
                          stiffness=[np.inf], dissipation=[0.0], dt=dt)


@pytest.mark.parametrize("pre", ["unit", "h2", "effective_mass"])
def test_every_preconditioner_solves_a_resting_particle_to_its_weight(pre):
    """γ_n = m g δt whatever r (the root of the NCP does not depend on the scaling)."""
    p = _resting_particle()
    r = NSNSolver(preconditioner=pre, max_iterations=300).solve(p)
    assert r.status is ContactSolverStatus.SOLVED
    np.testing.assert_allclose(r.gamma, [0.0, 0.0, 2.0 * G * 1e-2], atol=1e-10)


def test_the_preconditioners_reach_the_same_impulses_on_a_stiff_chain_step():
    """r scales the NCP functions, not their roots: on a stiff-chain step (18 contacts of 3 g
    links) the three choices converge at defaults (metric 1e-10) to the same impulses, to 1e-5 of
    the largest (the tip link's corner frictions are nearly indeterminate: 2.5e-6 apart)."""
    sim = load_scene("stiff-chain", solver="nsn", plausibility=None)
    for _ in range(3):
        sim.step()
    p = sim.contact_problem()[0]
    out = {pre: NSNSolver(preconditioner=pre).solve(p) for pre in ("unit", "h2", "effective_mass")}
    ref = out["effective_mass"].gamma
    for pre, r in out.items():
        assert r.status is ContactSolverStatus.SOLVED, pre
        np.testing.assert_allclose(r.gamma, ref, atol=1e-5 * np.abs(ref).max(), err_msg=pre)


def test_fixed_count_runs_exactly_its_newton_iterations():
    """``fixed_count(n)``: n Newton iterations of the given CR count, no tolerance, zero start;
    the residual falls with n on a stiff-chain step."""
    sim = load_scene("stiff-chain", solver="nsn", plausibility=None)
    for _ in range(3):
        sim.step()
    p = sim.contact_problem()[0]
    res = []
    for n in (4, 8):
        solver = NSNSolver(NSNOptions.fixed_count(n, 40))
        r = solver.solve(p)
        assert r.iterations == n and r.status is ContactSolverStatus.MAX_ITERATIONS
        assert solver.last_trace.linear_iterations == (40,) * n or max(solver.last_trace.linear_iterations) <= 40
        res.append(r.residual)
    assert res[1] < res[0]
    with pytest.raises(ValueError, match="preconditioner"):
        NSNOptions(preconditioner="jacobi")


def test_stiff_chain_scene_is_the_papers_beam_pressed_on_the_ground():
    """16 links of 3 g, 15 joints of 250 N·m/rad; it starts clear of the ground (0.1 mm) and at
    rest, the springs press the tip on the ground. Static check of the result: the ground's force
    balances the bending moment the springs hold at the root: |Σ_j k q_j| at equilibrium equals
    the moment of the tip force and the links' weight about the first joint (within 2 %)."""
    sim = load_scene("stiff-chain")
    info = sim.info
    assert sim.model.nv == STIFF_CHAIN["n_links"] - 1 == 15
    np.testing.assert_allclose(sim.scene.K, STIFF_CHAIN["bending_stiffness"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no plausibility warning (no initial overlap), SAP converges
        traj = sim.run(1.0)
    assert traj.stats["min_phi"][0] > 0
    assert np.abs(traj.v[-1]).max() < 1e-3  # at rest
    # moment balance about the first joint (y axis) of the whole beam beyond it
    import pinocchio as pin

    model, data = sim.model, sim.model.createData()
    q = traj.q[-1]
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    j1 = data.oMi[1].translation  # the first bending joint
    r, p = sim.last_result, sim.last_problem
    f = r.gamma.reshape(-1, 3) / sim.dt  # (t1, t2, n) per contact
    frames = p.bodies.frames
    force = np.einsum("ci,cij->cj", f, frames)  # world forces on the beam (side b)
    points = p.bodies.points
    moment = np.cross(points - j1, force).sum(axis=0)[1]
    com_moment = 0.0
    for j in range(1, model.njoints):
        c = data.oMi[j].act(model.inertias[j].lever)
        com_moment += np.cross(c - j1, [0, 0, -model.inertias[j].mass * G])[1]
    spring = -STIFF_CHAIN["bending_stiffness"] * q[0]  # the moment the first joint's spring exerts
    assert moment + com_moment == pytest.approx(-spring, rel=2e-2)
    assert 3.0 < force[:, 2].sum() < 8.0  # a few newtons on 48 g of links
    assert info["press"] == 0.01


@pytest.mark.parametrize("solver", ["sap", "canal", "subadmm", "nsn", "pgs"])
def test_every_solver_completes_the_stiff_chain_at_defaults(solver):
    """The new shipped scene with the one-word switch: 0.25 s (30 steps) complete, finite, and the
    beam's tip on the ground carrying the same total normal force as CANAL's (5 %). SubADMM's 100
    iterations leave its first contact steps unconverged (linear rate on 3 g links held by
    250 N·m/rad): its tip sinks ~0.7 mm on 2 steps and is flagged, not raised."""
    from plants.sim.diagnostics import PlausibilityWarning

    sim = load_scene("stiff-chain", solver=solver)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traj = sim.run(0.25)
    assert np.isfinite(traj.q).all() and traj.n_steps == 30
    flagged = [w for w in caught if w.category is PlausibilityWarning]
    assert bool(flagged) == (solver == "subadmm")
    force = sim.last_result.gamma.reshape(-1, 3)[:, 2].sum() / sim.dt
    ref = load_scene("stiff-chain", solver="canal")
    ref.run(0.25)
    assert force == pytest.approx(ref.last_result.gamma.reshape(-1, 3)[:, 2].sum() / ref.dt, rel=5e-2)
