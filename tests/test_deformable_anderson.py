"""Anderson acceleration of the local-global iteration (``FBAOptions.anderson_window``, Peng et
al. 2018): the mixer against linear algebra, the accelerated step against the plain one and an
independent sparse solve, the energy safeguard, and seed 004 Fig. 9's acceptance with defaults."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from plants.sim import load_scene
from plants.sim.deformable import (
    ARAP,
    CoRotational,
    DeformableBody,
    DeformableSimulator,
    DeformableWorld,
    FBAOptions,
    bar_tet_mesh,
    cloth_sheet,
)
from plants.sim.deformable.anderson import AndersonMixer
from plants.sim.deformable.convergence import relative_energy_error


# ---------------------------------------------------------------------------- the mixer
def _linear_map(n=8, seed=0):
    """G(x) = B x + c with a nonsymmetric B of spectral radius 0.95 (slow plain iteration)."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    B = Q @ np.diag(np.linspace(-0.5, 0.95, n)) @ Q.T + 0.05 * rng.standard_normal((n, n))
    B *= 0.95 / np.abs(np.linalg.eigvals(B)).max()
    return B, rng.standard_normal(n)


def test_anderson_window_zero_is_the_plain_iteration():
    B, c = _linear_map()
    mixer = AndersonMixer(0)
    x = np.zeros_like(c)
    for _ in range(5):
        g = B @ x + c
        nxt = mixer.mix(x, g)
        assert np.array_equal(nxt, g)
        x = nxt


def test_anderson_solves_a_linear_fixed_point_in_n_plus_one_maps():
    """On an affine map in R^n, type-II Anderson with a full window is GMRES (Walker & Ni 2011):
    it reaches the fixed point (I − B)⁻¹c in at most n + 1 evaluations of G; the plain iteration
    (ρ(B) = 0.95) is still far."""
    n = 8
    B, c = _linear_map(n)
    x_star = np.linalg.solve(np.eye(n) - B, c)
    mixer = AndersonMixer(n)
    x = np.zeros(n)
    plain = np.zeros(n)
    for _ in range(n + 1):
        x = mixer.mix(x, B @ x + c)
        plain = B @ plain + c
    assert np.linalg.norm(x - x_star) < 1e-8 * np.linalg.norm(x_star)
    assert np.linalg.norm(plain - x_star) > 0.1 * np.linalg.norm(x_star)


def test_anderson_mix_is_the_least_squares_combination():
    """q_{k+1} = Σ α_i g_i with Σ α_i = 1 minimizing ‖Σ α_i f_i‖ (the constrained form of the
    same problem, solved here by its KKT system)."""
    rng = np.random.default_rng(3)
    B, c = _linear_map(6, seed=3)
    mixer = AndersonMixer(3)
    xs, gs = [], []
    x = rng.standard_normal(6)
    for _ in range(4):
        g = np.tanh(B @ x) + c  # nonlinear: no finite termination, a generic mixing step
        xs.append(x)
        gs.append(g)
        x = mixer.mix(x, g)
    F = np.stack([g - q for g, q in zip(gs, xs)], 1)  # last 4 residuals = window 3 + 1
    kkt = np.block([[F.T @ F, np.ones((4, 1))], [np.ones((1, 4)), np.zeros((1, 1))]])
    alpha = np.linalg.solve(kkt, np.r_[np.zeros(4), 1.0])[:4]
    assert np.allclose(x, np.stack(gs, 1) @ alpha, atol=1e-10)


def test_anderson_options_reject_bad_input():
    for bad in (-1, 2.5, True, "5"):
        with pytest.raises(ValueError, match="window"):
            AndersonMixer(bad)
        with pytest.raises(ValueError, match="anderson_window"):
            FBAOptions(anderson_window=bad)
    with pytest.raises(TypeError, match="anderson_carry"):
        FBAOptions(anderson_carry="yes")
    with pytest.raises(ValueError, match="unknown"):
        FBAOptions.from_dict({"anderson": 5})


# ---------------------------------------------------------------------------- the accelerated step
def _bar(youngs=1e7, twist_rate=np.pi / 2, **kw):
    return load_scene("twisting-bar", youngs=youngs, twist_rate=twist_rate, **kw)


def test_window_zero_is_plain_pd_against_an_independent_sparse_solve():
    """anderson_window = 0 gives the paper's plain iteration q^{k+1} = A⁻¹ b(project(G q^k)), here
    recomputed with SuperLU on A instead of the sparse inverse Sᵀ S."""
    sim = _bar()
    sim.run(0.2)
    plain = DeformableSimulator(sim.world, dt=sim.dt, solver_options=FBAOptions(anderson_window=0))
    plain.set_state(sim.x, sim.v, sim.t)
    rec = []
    plain.step(iterations=4, record=rec)
    sysm, h = plain.system, plain.dt
    lu = spla.splu(sysm.A)
    x_tilde = sim.x + h * sim.v
    x_pin = plain._pinned_at(sim.t + h)
    q = x_tilde.copy()
    q[sysm.pinned] = x_pin
    for k in range(4):
        P = plain._local(q, [None])
        q = q.copy()
        q[sysm.free] = lu.solve(plain._b(P, x_tilde[sysm.free], x_pin))
        assert np.abs(q - rec[k]).max() < 1e-10


def test_anderson_converges_to_the_plain_minimizer():
    """Both iterations converge to the same q* (the step's minimizer): 1e-8 m apart, with the
    incremental potential's gradient 1e-9 of the initial one."""
    sim = _bar(youngs=1e7)
    sim.run(0.5)  # 90° of relative twist
    out = {}
    for window, n in ((5, 200), (0, 600)):
        s = DeformableSimulator(sim.world, dt=sim.dt, solver_options=FBAOptions(anderson_window=window))
        s.set_state(sim.x, sim.v, sim.t)
        rec = []
        s.step(iterations=n, record=rec)
        out[window] = rec[-1]
    sysm, h = sim.system, sim.dt
    x_tilde = sim.x + h * sim.v
    q0 = x_tilde.copy()
    q0[sysm.pinned] = sim._pinned_at(sim.t + h)
    grad = lambda q: np.linalg.norm(sysm.incremental_potential_gradient(q, x_tilde)[sysm.free])  # noqa: E731
    assert grad(out[5]) < 1e-9 * grad(q0)
    assert np.abs(out[5] - out[0]).max() < 1e-8


def test_projective_energy_is_the_incremental_potential():
    """ε(x, project(G x)) from the local step's output equals the SVD-based Eq. 1 potential, on a
    tetrahedral bar and on ARAP cloth with Laplace-Beltrami bending (its ½ xᵀQx term)."""
    rng = np.random.default_rng(1)
    bar = DeformableBody("bar", bar_tet_mesh(1.0, 0.2, 6, 2), ARAP(1e6, 0.4), density=1000.0)
    cloth = DeformableBody("cloth", cloth_sheet((0.5, 0.5), (6, 6)), ARAP(1e5, 0.3), density=200.0, bending=1e-3)
    for body in (bar, cloth):
        sim = DeformableSimulator(DeformableWorld((body,)), dt=0.01)
        x = body.mesh.X + 0.05 * rng.standard_normal(body.mesh.X.shape)
        x_tilde = body.mesh.X + 0.01 * rng.standard_normal(body.mesh.X.shape)
        e = sim.system.projective_energy(x, x_tilde, sim._local(x, [None]))
        assert e == pytest.approx(sim.system.incremental_potential(x, x_tilde), rel=1e-10)


@pytest.mark.parametrize("twist_rate, youngs", [(10 * np.pi, 1e9), (30 * np.pi, 1e7), (20 * np.pi, 1e9)])
def test_energy_safeguard_keeps_the_energy_monotone(twist_rate, youngs):
    """Sudden large twists (18°-54° per step): with the safeguard every iterate's incremental
    potential is at most the previous one's."""
    sim = _bar(youngs=youngs, twist_rate=twist_rate)
    for _ in range(3):
        x, v = sim.x.copy(), sim.v.copy()
        rec = []
        sim.step(iterations=30, record=rec)
        e = np.array([sim.system.incremental_potential(q, x + sim.dt * v) for q in rec])
        assert (np.diff(e) <= 1e-12 * abs(e[0])).all()


def test_energy_safeguard_fires_on_a_sudden_twist():
    """The case above where an accelerated iterate raises the energy: the safeguard rejects it."""
    sim = _bar(youngs=1e7, twist_rate=30 * np.pi)
    stats = sim.step(iterations=30)
    assert stats.anderson_rejections >= 1


def test_anderson_is_off_where_it_does_not_apply():
    """ADMM-PD materials, contact/attachment rows and the Jacobi baseline run the plain iteration:
    the same iterates with the default window and with 0."""
    co = DeformableBody("bar", bar_tet_mesh(1.0, 0.2, 6, 2), CoRotational(1e6, 0.4), density=1000.0,
                        pinned=np.arange(9))
    for world, extra in ((DeformableWorld((co,)), {}),
                         (_bar().world, {"global_step": "jacobi"})):
        recs = []
        for window in (5, 0):
            s = DeformableSimulator(world, dt=0.01, solver_options=FBAOptions(anderson_window=window, **extra))
            rec = []
            s.step(iterations=4, record=rec)
            s.step(iterations=4, record=rec)
            recs.append(np.array(rec))
        assert np.array_equal(recs[0], recs[1])


# ---------------------------------------------------------------------------- Fig. 9 with defaults
@pytest.mark.parametrize("youngs", [1e5, 1e9])
def test_twisting_bar_defaults_reach_1e_3_in_5_iterations_at_360_degrees(youngs):
    """Seed 004 Fig. 9 with the default options (Anderson, m = 5, history carried across steps)
    on the 20×4×4 bar at 360° of relative twist (1 s at π rad/s): e_5 < 1e-3 at low and high
    stiffness, at most the plain iteration's and the fresh-history Anderson's from the same
    state; one Jacobi sweep per iteration stays above 1e-3 even after 20 iterations."""
    sim = _bar(youngs=youngs, twist_rate=np.pi, cells_along=20, cells_across=4)
    sim.run(1.0)
    conv = relative_energy_error(sim, iterations=20, reference_iterations=400,
                                 variants={"default": {}, "fresh": {"anderson_carry": False},
                                           "plain": {"anderson_window": 0},
                                           "jacobi": {"global_step": "jacobi", "anderson_window": 0}})
    assert conv.reference_gradient < 1e-8
    e = conv.errors
    assert 0 <= e["default"][4] < 1e-3
    assert e["default"][4] <= min(e["fresh"][4], e["plain"][4])
    assert e["jacobi"][19] > 1e-3


def test_carried_history_is_dropped_on_set_state_and_after_unaccelerated_steps():
    """A teleport (set_state) or a step that is not accelerated ends the chain of secants."""
    sim = _bar()
    sim.run(0.05)
    assert sim._anderson is not None and sim._anderson.depth > 0
    sim.set_state(sim.x, sim.v, sim.t)
    assert sim._anderson is None
    sim.step()
    assert sim._anderson is not None
    jacobi = DeformableSimulator(sim.world, dt=sim.dt, solver_options=FBAOptions(global_step="jacobi"))
    jacobi.step()
    assert jacobi._anderson is None
