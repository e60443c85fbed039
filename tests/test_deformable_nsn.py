"""Seed 002's non-smooth Newton solver on deformables (``solver="nsn"``): its elasticity rows
against the energies and finite differences, one step against seed 004's converged local-global
step (the same implicit-Euler minimizer, found by a different algorithm), and every deformable
scene under both solvers."""

import numpy as np
import pytest

from plants.sim import load_scene
from plants.sim.deformable import (
    ARAP,
    CoRotational,
    DeformableBody,
    DeformableSimulator,
    DeformableWorld,
    FBAOptions,
    HalfSpace,
    LocalGlobalSystem,
    NSNOptions,
    StableNeoHookean,
    bar_tet_mesh,
    box_tet_mesh,
    cloth_sheet,
)
from plants.sim.deformable.nsn import ElasticRows

MATERIALS = [ARAP(1e6, 0.3), CoRotational(1e6, 0.3), StableNeoHookean(1e6, 0.3)]
MU_STAR = np.tan(np.radians(10.0))


def _mandel(S):
    d = S.shape[-1]
    if d == 3:
        return np.array([S[0, 0], S[1, 1], S[2, 2], np.sqrt(2) * S[1, 2], np.sqrt(2) * S[0, 2], np.sqrt(2) * S[0, 1]])
    return np.array([S[0, 0], S[1, 1], np.sqrt(2) * S[0, 1]])


def _unmandel(s):
    r = 1 / np.sqrt(2)
    if s.size == 6:
        return np.array([[s[0], r * s[5], r * s[4]], [r * s[5], s[1], r * s[3]], [r * s[4], r * s[3], s[2]]])
    return np.array([[s[0], r * s[2]], [r * s[2], s[1]]])


@pytest.mark.parametrize("mat", MATERIALS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("dim", [3, 2])
def test_elastic_rows_force_and_compliance(mat, dim):
    """Jᵀc is the elastic force of the assembled system (to round-off), and the compliance E is
    the inverse of ∂²(V ψ)/∂s² of the Mandel strain s of RᵀF (central differences of ψ(S) =
    ψ(eig S)), where that Hessian is positive definite (a mild stretch)."""
    rng = np.random.default_rng(1)
    mesh = bar_tet_mesh(1.0, 0.2, 3, 1) if dim == 3 else cloth_sheet((1.0, 1.0), (3, 3))
    body = DeformableBody("b", mesh, mat)
    sysm = LocalGlobalSystem(DeformableWorld((body,)), 0.01, FBAOptions(), prefactor=False)
    x = mesh.X + 0.03 * rng.standard_normal(mesh.X.shape)
    rows = ElasticRows(mesh, 0, mat, sysm.parts[0].volume)
    s, J, c, E = rows.evaluate(x, 3 * mesh.n_nodes)
    np.testing.assert_allclose((J.T @ c).reshape(-1, 3), sysm.elastic_gradient(x), atol=1e-9 * np.abs(c).max())
    ns = rows.ns
    for e in range(3):
        se = s[e * ns:(e + 1) * ns]

        def psi(v):
            w = np.linalg.eigvalsh(_unmandel(v))[::-1]
            return mat.psi(w[None], dim)[0]

        eps = 1e-5
        Hn = np.zeros((ns, ns))
        I = np.eye(ns) * eps
        for i in range(ns):
            for j in range(ns):
                Hn[i, j] = (psi(se + I[i] + I[j]) - psi(se + I[i] - I[j]) - psi(se - I[i] + I[j])
                            + psi(se - I[i] - I[j])) / (4 * eps * eps)
        if np.linalg.eigvalsh(Hn).min() > 0:
            Vol = sysm.parts[0].volume[e]
            np.testing.assert_allclose(np.linalg.inv(E[e]) / Vol, Hn, rtol=1e-4, atol=1e-4 * np.abs(Hn).max())
        # c is V ∂ψ/∂s (central differences)
        grad = np.array([(psi(se + I[i]) - psi(se - I[i])) / (2 * eps) for i in range(ns)])
        np.testing.assert_allclose(c[e * ns:(e + 1) * ns] / sysm.parts[0].volume[e], grad, rtol=1e-5,
                                   atol=1e-6 * np.abs(grad).max())


@pytest.mark.parametrize("mat", MATERIALS, ids=lambda m: type(m).__name__)
def test_nsn_step_reaches_the_implicit_euler_minimizer_of_the_fba_solver(mat):
    """A cantilever released under gravity: one NSN step (defaults: 8 Newton, 50 CR) lands on the
    minimizer of the incremental potential that 3000 local-global iterations find. The damped
    Newton step (t = 0.75) contracts the error by at best 1 − t per iteration, 0.25⁸ = 1.5e-5:
    gradient < 3e-5 of the start's, positions within 1e-7 m of a 1 mm step."""
    mesh = bar_tet_mesh(1.0, 0.2, 6, 2)
    ends = np.flatnonzero(np.isclose(mesh.X[:, 0], -0.5))
    world = DeformableWorld((DeformableBody("bar", mesh, mat, pinned=ends),))
    ref = DeformableSimulator(world, "fba")
    ref.step(iterations=3000)
    nsn = DeformableSimulator(world, "nsn")
    nsn.step()
    x_tilde = mesh.X + 0.01**2 * world.gravity
    sysm, free = ref.system, ref.system.free
    g0 = np.linalg.norm(sysm.incremental_potential_gradient(mesh.X, x_tilde)[free])
    g = np.linalg.norm(sysm.incremental_potential_gradient(nsn.x, x_tilde)[free])
    assert g < 3e-5 * g0
    np.testing.assert_allclose(nsn.x, ref.x, atol=1e-7)


def test_nsn_cloth_with_bending_rows_matches_fba():
    """Cloth with Laplace-Beltrami bending (the constant form as compliant rows): a clamped strip
    sagging for 0.2 s follows the local-global solver's trajectory."""
    mesh = cloth_sheet((0.4, 0.1), (8, 2))
    clamp = np.flatnonzero(np.isclose(mesh.X[:, 0], -0.2))
    body = DeformableBody("strip", mesh, StableNeoHookean(1e6, 0.3), thickness=1e-3, pinned=clamp, bending=1e-2)
    world = DeformableWorld((body,))
    a = DeformableSimulator(world, "fba", solver_options={"iterations": 200})
    b = DeformableSimulator(world, "nsn")
    xa, xb = a.run(0.2).deformable_positions["strip"], b.run(0.2).deformable_positions["strip"]
    sag = -xa[-1, :, 2].min()
    assert sag > 0.01
    assert np.abs(xa - xb).max() < 0.02 * sag


def test_nsn_free_fall_is_implicit_euler_to_the_damping_bound():
    """Free fall is linear: each damped Newton iteration (t = 0.75) leaves 1 − t of the error, so
    8 iterations give implicit Euler to 0.25⁸ = 1.5e-5 relative (the constant damping's price)."""
    body = DeformableBody("box", box_tet_mesh((0.1, 0.1, 0.1), (2, 2, 2)), StableNeoHookean(1e5, 0.3),
                          velocity=(0.1, 0.0, 0.0))
    sim = DeformableSimulator(DeformableWorld((body,)), "nsn")
    traj = sim.run(0.1)
    t = traj.t
    # implicit Euler: v_k = v_0 + k h g, x_k = x_0 + Σ h v_i
    k = np.arange(t.size)
    z = -9.81 * 0.01**2 * k * (k + 1) / 2
    com = traj.deformable_positions["box"].mean(1)
    np.testing.assert_allclose(com[:, 2] - com[0, 2], z, rtol=2e-5, atol=1e-12)
    np.testing.assert_allclose(com[:, 0] - com[0, 0], 0.1 * t, atol=1e-12)


def test_nsn_box_rests_with_its_weight_on_the_ground():
    """Σ λ_n = m g at rest, and the box neither sinks nor jitters."""
    body = DeformableBody("box", box_tet_mesh((0.1, 0.1, 0.1), (2, 2, 2), center=(0, 0, 0.05)),
                          StableNeoHookean(1e6, 0.3))
    sim = DeformableSimulator(DeformableWorld((body,), (HalfSpace(mu=0.5),)), "nsn")
    traj = sim.run(0.3)
    rows = sim.last_rows
    lam_n = sim.last_lambda[0:3 * rows.n_contacts:3]
    assert lam_n.sum() == pytest.approx(sim.system.mass.sum() * 9.81, rel=1e-3)
    assert traj.stats["min_gap"][-1] > -1e-5
    assert np.abs(sim.v).max() < 1e-3


def test_nsn_options_reject_bad_input():
    with pytest.raises(ValueError, match="unknown NSN solver options"):
        NSNOptions.from_dict({"iterations": 5})
    with pytest.raises(ValueError, match="damping"):
        NSNOptions(damping=0.0)
    with pytest.raises(ValueError, match="preconditioner"):
        NSNOptions(preconditioner="w_diagonal")
    with pytest.raises(TypeError, match="geometric_stiffness"):
        NSNOptions(geometric_stiffness=1)
    with pytest.raises(ValueError, match="newton_iterations"):
        NSNOptions(newton_iterations=0)
    with pytest.raises(TypeError, match="takes NSNOptions"):
        load_scene("deformable-slope", solver="nsn", solver_options=FBAOptions())
    with pytest.raises(ValueError, match="unknown NSN solver options"):
        load_scene("deformable-slope", solver="nsn", solver_options={"cr_iters": 3})


SCENES = [("deformable-slope", dict(cells=2)), ("twisting-bar", dict(cells_along=4, cells_across=1)),
          ("squeeze-ball", dict(cells=3)), ("cloth-corner", dict(cells=6)), ("cloth-extension", dict(cells=(8, 2))),
          ("pulled-through-gap", dict(cells=4)), ("fem-bar", dict(cells_along=6)),
          ("gripper-ball", dict(cells=3)), ("panda-pinch", dict(cells=3))]


@pytest.mark.parametrize("name,params", SCENES, ids=[s[0] for s in SCENES])
def test_every_deformable_scene_runs_with_both_solvers_and_they_agree(name, params):
    """The solver matrix: 3 steps of each scene with "fba" and "nsn" (defaults); both are finite
    and, both approximating the same implicit-Euler steps, agree to 5 % of the motion (+ 10 µm)."""
    out = {}
    for solver in ("fba", "nsn"):
        sim = load_scene(name, solver=solver, **params)
        assert sim.solver == solver
        x0 = sim.x.copy()
        traj = sim.run(3 * sim.dt)
        X = np.concatenate(list(traj.deformable_positions.values()), axis=1)
        assert X.shape[0] == 4 and np.isfinite(X).all()
        out[solver] = X[-1]
    motion = np.abs(out["fba"] - x0).max()
    assert np.abs(out["fba"] - out["nsn"]).max() < 0.05 * motion + 1e-5


def _slides(mu, preconditioner):
    sim = load_scene("deformable-slope", solver="nsn", mu=mu, cells=2, solver_options={"preconditioner": preconditioner})
    traj = sim.run(1.0)
    v = traj.deformable_velocities["box"].mean(1) @ sim.info["downhill"]
    return v[-1] > 0.5 * 9.81 * np.cos(np.radians(10)) * 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("dmu", [-1e-3, 1e-3])
def test_nsn_slope_with_r_h2_resolves_stick_slip_at_1e_3(dmu):
    """Seed 004 Fig. 7 with seed 002's solver: r = h² classifies the stiff box (E = 1e8) at μ* ± 1e-3."""
    assert _slides(MU_STAR + dmu, "h2") == (dmu < 0)


@pytest.mark.slow
def test_nsn_slope_effective_mass_r_sticks_spuriously():
    """Macklin's effective-mass r (h²/m, h/m: the mass alone, blind to the stiffness) on the stiff
    box: at μ* − 1e-2 it should slide and sticks (seed 004 §5.4's criticism); at μ* − 1e-1 it slides."""
    assert not _slides(MU_STAR - 1e-2, "effective_mass")
    assert _slides(MU_STAR - 1e-1, "effective_mass")


@pytest.mark.parametrize("material", ["corotational", "neohookean"])
def test_nsn_converges_on_a_sudden_large_stretch_with_geometric_stiffness(material):
    """One h = 0.05 s step in which the pinned ends jump to 1.2 × the bar's length (large strain,
    cold start): 30 Newton iterations with the capped diagonal secant reach the implicit-Euler
    minimizer of 3000 local-global iterations to 1e-6 m."""
    kw = dict(material=material, dt=0.05, ramp_time=0.0, stretch=1.2, cells_along=6, cells_across=1)
    ref = load_scene("fem-bar", **kw)
    rec: list = []
    ref.step(iterations=3000, record=rec)
    sim = load_scene("fem-bar", solver="nsn", solver_options={"warm_start": False}, **kw)
    sim.step(iterations=30)
    assert np.abs(sim.x - rec[-1]).max() < 1e-6


def test_nsn_divergence_is_an_error_not_nan():
    """A 50 % stretch in one step of a Neo-Hookean bar makes the damped Newton iteration diverge:
    SimulationDivergedError, and the state is left as it was."""
    from plants.errors import SimulationDivergedError

    sim = load_scene("fem-bar", solver="nsn", material="neohookean", dt=0.05, ramp_time=0.0, stretch=1.5)
    x0 = sim.x.copy()
    with np.errstate(all="ignore"), pytest.raises(SimulationDivergedError):
        sim.step(iterations=30)
    np.testing.assert_array_equal(sim.x, x0)
    assert sim.t == 0.0
