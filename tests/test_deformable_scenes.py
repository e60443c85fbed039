"""The deformable scenes through ``load_scene`` (public contract) and seed 004's experiments:
stick/slip on a slope at μ* ± 1e-3 (Fig. 7) and the twisting bar's energy convergence (Fig. 9)."""

import numpy as np
import pytest

from plants.sim import available_scenes, load_scene
from plants.sim.deformable import DeformableTrajectory
from plants.sim.deformable.convergence import relative_energy_error

MU_STAR = np.tan(np.radians(10.0))  # 0.17632698


def test_load_scene_contract():
    assert {"deformable-slope", "twisting-bar"} <= set(available_scenes())
    sim = load_scene("deformable-slope", mu=0.18, slope_deg=10.0)
    assert sim.info["name"] == "deformable-slope" and sim.info["mu_star"] == pytest.approx(0.17632698, abs=1e-8)
    traj = sim.run(0.05)
    assert isinstance(traj, DeformableTrajectory)
    X = traj.deformable_positions["box"]
    assert X.shape == (6, sim.world.body("box").n_nodes, 3) and np.isfinite(X).all()
    assert traj.q.shape == (6, 0) and traj.v.shape == (6, 0) and traj.t.shape == (6,)
    assert traj.stats["n_contacts"].shape == (5,) and (traj.stats["n_contacts"] > 0).all()


def test_load_scene_rejects_bad_solver_and_options():
    with pytest.raises(ValueError, match="solver must be one of"):
        load_scene("deformable-slope", solver="sap")
    with pytest.raises(ValueError, match="unknown FBA solver options"):
        load_scene("deformable-slope", solver_options={"cr_iters": 3})
    with pytest.raises(ValueError, match="scheme"):
        load_scene("twisting-bar", scheme="midpoint")
    with pytest.raises(ValueError, match="material must be one of"):
        load_scene("twisting-bar", material="rubber")


def _classify(mu, cells, preconditioner="w_diagonal", T=1.0):
    """(slides, downhill speed at T [m/s], downhill acceleration over the second half [m/s²])."""
    sim = load_scene("deformable-slope", mu=mu, cells=cells, solver_options={"preconditioner": preconditioner})
    traj = sim.run(T)
    v = traj.deformable_velocities["box"].mean(1) @ sim.info["downhill"]
    n = v.size - 1
    accel = (v[-1] - v[n // 2]) / (traj.t[-1] - traj.t[n // 2])
    # a box sliding at Δμ = 1e-3 reaches g cosθ 1e-3 T; half of it separates stick from slide
    threshold = 0.5 * 9.81 * np.cos(np.radians(10)) * 1e-3 * T
    return v[-1] > threshold, v[-1], accel, sim


@pytest.mark.parametrize("dmu", [-1e-3, 1e-3])
def test_slope_stick_slip_resolved_at_1e_3_with_w_diagonal(dmu):
    """Seed 004 Fig. 7 with the defaults (5 local-global, 10 CR, FB, W-diagonal preconditioner)."""
    slides, v, accel, sim = _classify(MU_STAR + dmu, cells=2)
    assert slides == (dmu < 0)
    if dmu < 0:  # slides with the analytic acceleration g (sin θ − μ cos θ)
        assert accel == pytest.approx(sim.info["slide_acceleration"], rel=0.1)
    else:  # sticks: the start-up transient decays
        assert accel < 0


def test_slope_mass_inverse_preconditioner_sticks_spuriously():
    """Macklin 2019's r = h²/m, h/m on the stiff box: at μ* − 1e-3 (should slide) the box sticks."""
    slides, v, accel, _ = _classify(MU_STAR - 1e-3, cells=2, preconditioner="mass_inverse")
    assert not slides and abs(v) < 1e-3


@pytest.mark.parametrize("dmu", [-1e-3, 1e-3])
def test_slope_stick_slip_default_mesh(dmu):
    slides, v, accel, sim = _classify(MU_STAR + dmu, cells=4)
    assert slides == (dmu < 0)


@pytest.mark.parametrize("youngs", [1e5, 1e9])
def test_twisting_bar_energy_error_below_1e_3_in_5_iterations(youngs):
    """Seed 004 Fig. 9 with the default options (complete global step q = Sᵀ(S b), Anderson
    acceleration): a relative energy error < 1e-3 within 5 local-global iterations at low and high
    stiffness; one Jacobi sweep per iteration (the incomplete baseline) does not. The 360° case:
    test_deformable_anderson.py."""
    sim = load_scene("twisting-bar", youngs=youngs, twist_rate=np.pi / 2)
    sim.run(0.5)  # 90° of relative twist
    conv = relative_energy_error(sim, iterations=5, reference_iterations=1000)
    assert conv.reference_gradient < 1e-8  # q* is the step's minimizer
    e_si, e_j = conv.errors["sparse_inverse"], conv.errors["jacobi"]
    assert 0 <= e_si[4] < 1e-3
    assert e_j[4] > 1e-3
    assert (np.diff(e_si) < 0).all()  # monotone decrease (PD is a descent method)


def _tet_volume(X, T):
    d = X[..., T[:, 1:], :] - X[..., T[:, :1], :]
    return np.einsum("...mj,...mj->...m", d[..., 0, :], np.cross(d[..., 1, :], d[..., 2, :])).sum(-1) / 6


def test_squeeze_ball_passes_rollers_and_recovers_its_volume():
    """Seed 004 Fig. 5: a Neo-Hookean ball (E = 1e4, μ = 0.5) is pulled through a gap of half its
    diameter by the rollers' friction, and recovers its rest volume within 5 %; no node tunnels
    into a roller and nothing becomes NaN."""
    sim = load_scene("squeeze-ball", cells=4)
    traj = sim.run(1.0)
    X = traj.deformable_positions["ball"]
    T = sim.world.body("ball").mesh.elements
    assert np.isfinite(X).all()
    V = _tet_volume(X, T)
    assert V.min() < 0.95 * V[0]  # it was squeezed
    assert X[-1].mean(0)[0] > sim.info["exit_x"] and X[-1, :, 0].min() > 0.0  # passed
    assert abs(V[-1] / V[0] - 1) < 0.05  # recovered
    for roller in sim.world.obstacles:  # no tunnelling (1 mm tolerance) at any step
        phi = np.array([roller.query(x, 0.0)[0].min() for x in X])
        assert phi.min() > -1e-3


def test_cloth_corner_drapes_over_the_cube_without_tunnelling():
    """Seed 004 Fig. 6: a cloth falls on a cube; its centre rests on the top face, its corners
    hang below it, and no node goes through the cube or the ground (1 mm)."""
    sim = load_scene("cloth-corner", cells=10)
    traj = sim.run(0.8)
    X = traj.deformable_positions["cloth"]
    assert np.isfinite(X).all()
    cube, ground = sim.world.obstacles
    top = sim.info["cube"]
    for x in X:
        assert cube.query(x, 0.0)[0].min() > -1e-3 and ground.query(x, 0.0)[0].min() > -1e-3
    centre = np.argmin(np.linalg.norm(sim.world.body("cloth").mesh.X[:, :2], axis=1))
    assert X[-1, centre, 2] == pytest.approx(top, abs=2e-3)
    assert X[-1, :, 2].min() < top - 0.2


def _lateral_stretch_analytic(material, s, nu, E=1e5):
    """σ₂ of a cloth in uniaxial plane stress at axial stretch s (∂ψ/∂σ₂ = 0), from each energy's
    closed form (plane-stress Lamé μ = E/(2(1+ν)), λ = Eν/(1 − ν²))."""
    mu, lam = E / (2 * (1 + nu)), E * nu / (1 - nu**2)
    if material == "arap":
        return 1.0
    if material == "corotational":
        return 1.0 - lam * (s - 1) / (2 * mu + lam)
    m, l = 1.5 * mu, lam + 2 * mu / 3  # Stable Neo-Hookean, d = 2
    a = 1 + mu / l

    def p22(t):
        return m * t * (1 - 1 / (s * s + t * t + 1)) + l * (s * t - a) * s

    lo, hi = 0.1, 1.5
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if p22(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


@pytest.mark.parametrize("material", ["arap", "corotational", "neohookean"])
def test_cloth_extension_lateral_contraction_matches_uniaxial_plane_stress(material):
    """Seed 004 Fig. 10 as a static check: the middle of a 4:1 strip whose ends are pulled apart
    is in uniaxial plane stress, so its width ratio equals the lateral stretch σ₂ that each
    energy's closed form gives at the middle's axial stretch σ₁ (ARAP: 1; co-rotational:
    1 − ν(σ₁ − 1); Neo-Hookean: the root of ∂ψ/∂σ₂ = 0). Statics: implicit Euler with h = 0.1 s
    (its damping settles the strip; a single h = 1 s step to full stretch folds the first column
    of triangles over the clamped edge: an in-plane reflection is an isometry of a 3×2 F)."""
    from plants.sim.deformable.materials import signed_svd

    sim = load_scene("cloth-extension", material=material, dt=0.1, cells=(16, 4), solver_options={"iterations": 30})
    traj = sim.run(3.0)
    body = sim.world.body("cloth")
    X0, X = body.mesh.X, traj.deformable_positions["cloth"][-1]
    mid = np.isclose(X0[:, 0], 0.0)
    width = (X[mid, 1].max() - X[mid, 1].min()) / 0.25
    centre = np.abs(X0[body.mesh.elements].mean(1)[:, 0]) < 0.03
    _, s, _ = signed_svd(sim.system.deformation_gradients(X)[0][centre])
    s1 = s[:, 0].mean()
    assert s1 == pytest.approx(1.3, abs=0.02)  # the ends are pulled to 1.3 × the length
    assert np.abs(sim.v).max() < 1e-6  # settled
    assert width == pytest.approx(_lateral_stretch_analytic(material, s1, 0.45), abs=3e-3)
    assert s[:, 1].mean() == pytest.approx(width, abs=3e-3)
    assert np.abs(X[:, 2]).max() < 1e-9  # stays in its plane


@pytest.mark.slow
def test_pulled_ball_passes_the_gap_between_posts():
    """Seed 004 Fig. 3: a soft ball pulled by hard bilateral rows on its front nodes squeezes
    through a gap of 0.6 diameters between two posts, recovers its volume (5 %), no tunnelling."""
    sim = load_scene("pulled-through-gap")
    traj = sim.run(1.2)
    X = traj.deformable_positions["ball"]
    T = sim.world.body("ball").mesh.elements
    V = _tet_volume(X, T)
    assert np.isfinite(X).all() and X[-1, :, 0].min() > 0.1  # wholly past the posts (x = 0 ± 0.05)
    assert np.ptp(X[:, :, 1], axis=1).min() < 0.9 * 0.2  # squeezed laterally in the gap
    assert abs(V[-1] / V[0] - 1) < 0.05
    for post in sim.world.obstacles:
        assert min(post.query(x, 0.0)[0].min() for x in X) > -1e-3
    h = sim.info["handle_nodes"]
    np.testing.assert_allclose(X[-1, h], sim.world.body("ball").mesh.X[h] + [0.5 * traj.t[-1], 0, 0], atol=1e-9)


def test_robot_mesh_from_a_file_as_a_cloth_shell():
    """A mesh we did not make: an example-robot-data STL read with meshio as a triangle shell
    (Stable Neo-Hookean membrane, Laplace-Beltrami bending), scaled to 10 cm and dropped on
    the ground: it lands, stays finite and does not go through."""
    pytest.importorskip("meshio")
    from plants.sim.deformable import (
        DeformableBody,
        DeformableSimulator,
        DeformableWorld,
        HalfSpace,
        SimplexMesh,
        StableNeoHookean,
        load_mesh,
    )
    from plants.sim.scene import example_robot_data_dir

    path = example_robot_data_dir() / "robots/pr2_description/meshes/head_v0/head_pan_L.stl"
    if not path.exists():
        pytest.skip(f"{path} not installed")
    with np.errstate(over="ignore"):  # meshio's binary-STL size check overflows a uint32 (harmless)
        m = load_mesh(path, kind="triangle")
    X = (m.X - m.X.mean(0)) * (0.1 / np.ptp(m.X, axis=0).max())
    X[:, 2] += 0.02 - X[:, 2].min()
    body = DeformableBody("shell", SimplexMesh(X, m.elements), StableNeoHookean(1e5, 0.3), bending=1e-3)
    sim = DeformableSimulator(DeformableWorld((body,), (HalfSpace(mu=0.5),)))
    traj = sim.run(0.8)
    P = traj.deformable_positions["shell"]
    assert np.isfinite(P).all()
    assert P[-1, :, 2].min() == pytest.approx(0.0, abs=1e-3)  # resting on the ground
    assert traj.stats["min_gap"].min() > -1e-3


def _lateral_stretch_3d(material, s, nu=0.45, E=1e5):
    """σ₂ = σ₃ of a bar in uniaxial stress at axial stretch s (∂ψ/∂σ₂ = 0, 3-D Lamé)."""
    mu, lam = E / (2 * (1 + nu)), E * nu / ((1 + nu) * (1 - 2 * nu))
    if material == "corotational":
        return 1 - lam * (s - 1) / (2 * mu + 2 * lam)  # = 1 − ν(s − 1)
    m, l = 4 * mu / 3, lam + 5 * mu / 6  # Stable Neo-Hookean, d = 3
    a = 1 + mu / l

    def p22(t):
        return m * t * (1 - 1 / (s * s + 2 * t * t + 1)) + l * (s * t * t - a) * s * t

    lo, hi = 0.05, 1.5
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if p22(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


@pytest.mark.parametrize("solver", ["fba", "nsn"])
def test_fem_bar_extension_corotational_loses_volume_neohookean_keeps_it(solver):
    """Seed 002 Fig. 13: a bar pulled to twice its length (E = 1e5, ν = 0.45). Its middle is in
    uniaxial stress, so the lateral stretch matches each energy's closed form at the measured
    axial stretch (3e-3): co-rotational contracts by 1 − ν(σ₁ − 1) and loses a third of its
    volume; Stable Neo-Hookean keeps it within 10 %."""
    from plants.sim.deformable.materials import signed_svd

    vol = {}
    for material in ("corotational", "neohookean"):
        sim = load_scene("fem-bar", solver=solver, material=material, dt=0.05)
        X = sim.run(2.0).deformable_positions["bar"][-1]
        body = sim.world.body("bar")
        centre = np.abs(body.mesh.X[body.mesh.elements].mean(1)[:, 0]) < 0.05
        Ft = sim.system.deformation_gradients(X)[0][centre]
        _, s, _ = signed_svd(np.transpose(Ft, (0, 2, 1)))
        s1, s2 = s[:, 0].mean(), s[:, 1:].mean()
        assert s1 > 1.95
        assert s2 == pytest.approx(_lateral_stretch_3d(material, s1), abs=3e-3)
        vol[material] = _tet_volume(X, body.mesh.elements) / sim.info["rest_volume"]
    assert vol["corotational"] < 0.7
    assert abs(vol["neohookean"] - 1) < 0.15


def test_gripper_lifts_the_soft_ball_and_the_finger_forces_carry_its_weight():
    """Two kinematic finger pads pinch a Neo-Hookean ball on the ground and lift it 10 cm: the ball
    rises with them (slip < 2 mm), leaves the ground, and while held the vertical friction forces
    of the two pads sum to its weight (1 %), their squeezing forces cancel."""
    sim = load_scene("gripper-ball", cells=4)
    z0 = sim.x[:, 2].mean()
    traj = sim.run(1.0)
    X = traj.deformable_positions["ball"]
    assert np.isfinite(X).all()
    assert X[-1, :, 2].mean() - z0 == pytest.approx(sim.info["lift"], abs=2e-3)
    assert X[-1, :, 2].min() > 0.05
    f = sim.obstacle_forces()
    left, right, ground = f["finger_left"], f["finger_right"], f["ground"]
    weight = sim.info["mass"] * 9.81
    assert left[2] + right[2] == pytest.approx(weight, rel=1e-2)
    assert np.allclose(ground, 0.0)
    assert left[1] < -5.0 and left[1] + right[1] == pytest.approx(0.0, abs=0.05 * abs(left[1]))
    assert traj.stats["min_gap"].min() > -1e-3


def test_panda_pinch_lifts_the_ball_with_pads_placed_by_forward_kinematics():
    """One-way coupling: a kinematic Panda (example-robot-data URDF) pinches and lifts a soft ball: the pads follow Pinocchio's
    forward kinematics of the planned joint trajectory (at the lift's end they have risen by the
    commanded 10 cm, mid-lift their velocity is the smoothstep's 1.5 lift / lift_time, upwards),
    the ball rises with them, and the pads' vertical forces carry its weight."""
    import pinocchio as pin

    from plants.sim.deformable.robot_obstacles import PAD_HALF_EXTENTS, PAD_OFFSET

    sim = load_scene("panda-pinch", cells=4, coupling="one-way")
    left = sim.world.obstacles[0]
    info = sim.info
    # forward kinematics, independently: the left pad's centre at t = 0 and after the lift
    model = pin.buildModelFromUrdf(str(__import__("plants.multibody.resources", fromlist=["x"])
                                       .example_robot_data_path("robots/panda_description/urdf/panda.urdf")))
    data = model.createData()

    def pad(t):
        pin.framesForwardKinematics(model, data, info["trajectory"](t))
        R = data.oMf[model.getFrameId("panda_hand")].rotation
        return data.oMf[model.getFrameId("panda_leftfinger")].translation + R @ [0, PAD_HALF_EXTENTS[1], PAD_OFFSET]

    np.testing.assert_allclose(left.center, pad(0.0), atol=1e-12)
    d_end, _ = left.translation(0.8)
    np.testing.assert_allclose(d_end, pad(0.8) - pad(0.0), atol=1e-12)
    np.testing.assert_allclose(d_end, [0, 0, info["lift"]] + (pad(0.3) - pad(0.0)), atol=1e-6)
    _, v_mid = left.translation(0.6)
    np.testing.assert_allclose(v_mid, [0, 0, 1.5 * info["lift"] / 0.4], atol=0.02 * 1.5 * info["lift"] / 0.4)
    z0 = sim.x[:, 2].mean()
    traj = sim.run(1.0)
    X = traj.deformable_positions["ball"]
    assert np.isfinite(X).all() and X[-1, :, 2].min() > 0.05  # off the ground
    assert X[-1, :, 2].mean() - z0 == pytest.approx(info["lift"], abs=3e-3)
    f = sim.obstacle_forces()
    assert f["panda_left_pad"][2] + f["panda_right_pad"][2] == pytest.approx(info["mass"] * 9.81, rel=1e-2)
