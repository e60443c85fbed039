"""Multi-point contact (issue #20 item 4): box / half-space and box / box manifolds.

Geometry against closed forms (the corners of a tilted box, the clipped square of two yawed
faces), then physics against analytic answers: a box at rest carries mg/4 on each corner, a box
pushed at its top tips exactly when the push's moment about the far edge exceeds gravity's,
and pivots about that edge; a box on a box rests on four points carrying its weight."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from plants import load_scene
from plants.sim import Simulator
from plants.sim.diagnostics import PlausibilityWarning
from plants.sim.geometry import Box, ContactDetector, ContactParams, Geometry, HalfSpace, Sphere
from plants.sim.manifold import box_box_manifold, reduce_manifold
from plants.sim.scene import SceneBuilder, box_inertia
from plants.sim.scenes import CubeSpec

G = 9.81
H = 0.05  # half side of the test boxes [m]
P = ContactParams()


def _geoms(*shapes):
    return [Geometry(f"g{i}", s, i, np.eye(3), np.zeros(3), P) for i, s in enumerate(shapes)]


def _both(det, R, p):
    """Contacts of the compiled and the numpy detector (asserted equal)."""
    a, b = det.detect(R, p), det.detect_numpy(R, p)
    for f in ("phi", "normal", "point_a", "point_b", "a", "b"):
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=0, atol=1e-14)
    return a


# ----------------------------------------------------------------------------- geometry
def test_box_on_plane_has_its_four_lowest_corners_with_their_own_depths():
    """A box tilted by θ about y over the ground: the 4 corners of its bottom face, each at
    φ = z_c + R·corner (closed form); the raised two by 2h sin θ above the low two."""
    det = ContactDetector(_geoms(HalfSpace(), Box((H, H, H))), np.array([[0, 1]]), margin=0.02)
    theta, zc = 0.05, H * np.cos(0.05) + H * np.sin(0.05) - 1e-4  # low edge 0.1 mm deep
    R = np.array([np.eye(3), Rotation.from_euler("y", theta).as_matrix()])
    p = np.array([[0, 0, 0], [0, 0, zc]])
    c = _both(det, R, p)
    corners = np.array([[sx * H, sy * H, -H] for sx in (-1, 1) for sy in (-1, 1)])
    expected = np.sort(zc + corners @ R[1].T[:, 2])
    np.testing.assert_allclose(np.sort(c.phi), expected, atol=1e-15)
    assert c.n_c == 4 and (c.a == 0).all() and (c.b == 1).all()
    np.testing.assert_allclose(c.normal, np.tile([0, 0, 1.0], (4, 1)))
    np.testing.assert_allclose(c.point_b - c.point_a, c.phi[:, None] * c.normal, atol=1e-15)
    np.testing.assert_allclose(np.sort(c.phi)[2:] - np.sort(c.phi)[:2], 2 * H * np.sin(theta), rtol=1e-12)
    # a higher box: only the corners within the 20 mm margin (the low edge at 16 mm, the high one at 21 mm)
    p[1, 2] = zc + 1e-4 + 0.016
    assert _both(det, R, p).n_c == 2


def test_caps_per_pair_keep_the_deepest_point_and_the_widest_support():
    """cap 1: the deepest corner only; cap 2: the two ends of the low edge are not both kept —
    the deepest and the corner farthest from it (the diagonal), the widest 2-point support."""
    det1 = ContactDetector(_geoms(HalfSpace(), Box((H, H, H))), np.array([[0, 1]]), 0.02, max_contacts_per_pair=1)
    R = np.array([np.eye(3), Rotation.from_euler("xy", [0.01, 0.03]).as_matrix()])
    p = np.array([[0, 0, 0], [0, 0, H]])
    full = ContactDetector(_geoms(HalfSpace(), Box((H, H, H))), np.array([[0, 1]]), 0.02).detect(R, p)
    one = _both(det1, R, p)
    assert one.n_c == 1 and one.phi[0] == full.phi.min()
    with pytest.raises(ValueError, match="max_contacts_per_pair"):
        ContactDetector(_geoms(HalfSpace(), Box((H, H, H))), np.array([[0, 1]]), 0.02, max_contacts_per_pair=0)
    with pytest.raises(ValueError, match="max_contacts_per_pair"):
        SceneBuilder(max_contacts_per_pair=2.5)


def test_caps_per_pair_of_groups_override_the_scene_cap():
    """SceneBuilder(contacts_per_pair={("box", "ground"): 2}): the resting box touches the ground at
    2 points (its deepest corner and the diagonal one), another box on it still at 4; bad keys
    and caps are refused with the argument's name."""
    b = SceneBuilder(margin=0.01, contacts_per_pair={("ground", "box"): 2})
    b.add_ground(ContactParams(float("inf"), 0.0, 0.5))
    for i in range(2):
        b.add_free_body(f"b{i}", 1.0, box_inertia(1.0, (H, H, H)), [("g", Box((H, H, H)), P, (0, 0, 0), None, "box")],
                        (0.0, 0.0, H + 2 * H * i - 1e-5 * (i == 0)))
    scene = b.build()
    import pinocchio as pin

    data = scene.model.createData()
    pin.forwardKinematics(scene.model, data, scene.q0)
    c = _both(scene.detector, *scene.geometry_poses(data))
    ground = c.a == 0
    assert ground.sum() == 2 and (~ground).sum() == 4
    d = np.linalg.norm(np.diff(c.point_b[ground], axis=0))
    assert d == pytest.approx(2 * np.sqrt(2) * H)  # the diagonal
    with pytest.raises(TypeError, match="contacts_per_pair"):
        SceneBuilder(contacts_per_pair={"box": 2})
    with pytest.raises(ValueError, match="contacts_per_pair"):
        SceneBuilder(contacts_per_pair={("box", "ground"): 0})


def test_reduction_of_an_octagon_keeps_a_quadrilateral_around_the_centre():
    """Eq. M5 on the 8 points of a square's corners and edge midpoints at equal depth, one
    corner slightly deeper: the 4 corners are kept (the deepest first, its diagonal, ...)."""
    corners = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], float)
    mids = np.array([[0, 1], [-1, 0], [0, -1], [1, 0]], float)
    x = np.zeros((8, 3))
    x[::2, :2], x[1::2, :2] = corners, mids
    phi = np.zeros(8)
    phi[4] = -1e-6  # corner (-1, -1)
    keep = reduce_manifold(phi, x, np.array([0, 0, 1.0]), 4)
    assert 4 in keep and sorted(keep.tolist()) == [0, 2, 4, 6]
    assert reduce_manifold(phi, x, np.array([0, 0, 1.0]), 1).tolist() == [4]
    assert sorted(reduce_manifold(phi, x, np.array([0, 0, 1.0]), 2).tolist()) == [0, 4]  # the diagonal
    assert reduce_manifold(phi, x, np.array([0, 0, 1.0]), 8).size == 8


def test_box_on_box_face_contact_is_the_clipped_overlap_of_the_two_faces():
    """The top box yawed by 0.3 rad: the overlap of the two squares is an octagon (closed form:
    the incident square's corners inside the reference face and the crossings of the edges);
    every clipped point lies on both faces' planes at the gap, and the 4 kept ones include the
    deepest; the GJK/EPA point alone for an edge–edge contact (box rotated 45° about two axes)."""
    gap = -2e-4
    Rb = Rotation.from_euler("z", 0.3).as_matrix()
    pb = np.array([0.01, 0.0, 2 * H + gap])
    man = box_box_manifold(np.eye(3), np.zeros(3), np.full(3, H), Rb, pb, np.full(3, H), np.array([0, 0, 1.0]), 0.01)
    phi, n, xa, xb = man
    np.testing.assert_allclose(n, [0, 0, 1])
    np.testing.assert_allclose(phi, gap, atol=1e-15)
    np.testing.assert_allclose(xa[:, 2], H, atol=1e-15)  # on a's top face
    np.testing.assert_allclose(xb[:, 2], H + gap, atol=1e-15)  # on b's bottom face
    assert phi.size == 8  # the octagon
    assert (np.abs(xa[:, :2]) <= H + 1e-15).all()  # inside a's face
    local = (xb - pb) @ Rb  # inside b's face
    assert (np.abs(local[:, :2]) <= H + 1e-12).all()
    # area of the octagon = overlap of the two squares (shapely-free: the polygon's shoelace area
    # against a Monte-Carlo-free closed check: it contains the centre of the overlap and each
    # vertex is a corner of one square or an intersection of two edges)
    on_edge_a = np.isclose(np.abs(xa[:, :2]), H).any(axis=1)
    on_edge_b = np.isclose(np.abs(local[:, :2]), H).any(axis=1)
    assert (on_edge_a | on_edge_b).all()
    # through the detector: 4 points, GJK/EPA's depth among them
    det = ContactDetector(_geoms(Box((H, H, H)), Box((H, H, H))), np.array([[0, 1]]), 0.01)
    c = _both(det, np.array([np.eye(3), Rb]), np.array([np.zeros(3), pb]))
    assert c.n_c == 4
    np.testing.assert_allclose(c.phi, gap, atol=2e-6)  # coal's GJK/EPA tolerance is 1e-6
    # edge-edge: no face within FACE_ALIGNMENT of the normal -> the one GJK/EPA point
    # (the lower box turned 45° about y: its top edge along y; the upper one 45° about x: its
    # bottom edge along x; they cross at the top, 0.1 mm deep, every face at 45° to the normal)
    Ra, Rb = Rotation.from_euler("y", np.pi / 4).as_matrix(), Rotation.from_euler("x", np.pi / 4).as_matrix()
    pe = np.array([0.0, 0.0, 2 * H * np.sqrt(2) - 1e-4])
    c = _both(det, np.array([Ra, Rb]), np.array([np.zeros(3), pe]))
    assert c.n_c == 1
    assert c.phi[0] == pytest.approx(-1e-4, abs=1e-9)
    np.testing.assert_allclose(np.abs(c.normal[0]), [0, 0, 1], atol=1e-6)


@pytest.mark.parametrize("cap", [1, 2, 3, 4, 8])
def test_compiled_manifolds_match_the_numpy_reference(cap):
    """300 seeded random poses of a box over the ground and over another box (half of them
    nearly face to face: small tilts, so faces clip; the rest any orientation), boxes of unequal
    sizes: the numba kernels give the numpy reference's contacts, in its order."""
    rng = np.random.default_rng(cap)
    det = ContactDetector(_geoms(HalfSpace(), Box((0.05, 0.04, 0.03)), Box((0.06, 0.05, 0.02))),
                          np.array([[0, 1], [1, 2]]), 0.01, max_contacts_per_pair=cap)
    n_contacts = 0
    for k in range(300):
        tilt = 0.05 if k % 2 else np.pi
        R1 = Rotation.from_rotvec(rng.uniform(-tilt, tilt, 3)).as_matrix()
        R2 = Rotation.from_rotvec(rng.uniform(-tilt, tilt, 3) + [0, 0, rng.uniform(-np.pi, np.pi)]).as_matrix()
        p1 = np.array([0.0, 0.0, rng.uniform(0.0, 0.06)])
        p2 = p1 + np.r_[rng.uniform(-0.05, 0.05, 2), rng.uniform(0.03, 0.09)]
        c = _both(det, np.array([np.eye(3), R1, R2]), np.array([np.zeros(3), p1, p2]))
        assert (np.bincount(c.a * 3 + c.b, minlength=9) <= cap).all()
        n_contacts += c.n_c
    assert n_contacts > 300  # the poses make contact


# ----------------------------------------------------------------------------- physics
def _box_scene(mu=1.0, box_on_box=False, yaw=0.0, cap=4):
    """One box (1 kg, 0.1 m) on the ground, or a second one on top of it (yawed), box manifolds."""
    b = SceneBuilder(margin=0.01, max_contacts_per_pair=cap)
    b.add_ground(ContactParams(float("inf"), 0.0, mu))
    params = ContactParams(1e12, 0.0, mu)
    n = 2 if box_on_box else 1
    for i in range(n):
        q = Rotation.from_euler("z", yaw * i).as_quat()
        b.add_free_body(f"box{i}", 1.0, box_inertia(1.0, (H, H, H)), [("box", Box((H, H, H)), params)],
                        (0.0, 0.0, H + 2 * H * i), q)
    return b.build()


def _normal_forces(sim):
    r, p = sim.last_result, sim.last_problem
    return r.gamma.reshape(-1, 3)[:, 2] / p.dt


def test_resting_box_carries_a_quarter_of_its_weight_on_each_corner_and_does_not_turn():
    """Box on the ground, every solver at defaults: 4 contacts, each normal force mg/4 (symmetry
    + equilibrium), their sum mg; over 1 s the orientation does not drift (< 1e-9 rad) and the box
    does not slide."""
    sim = Simulator(_box_scene(), dt=1e-3)
    traj = sim.run(1.0)
    assert (traj.stats["n_contacts"] == 4).all()
    f = _normal_forces(sim)
    np.testing.assert_allclose(f, G / 4, rtol=1e-6)
    assert f.sum() == pytest.approx(G, rel=1e-6)
    quat = traj.q[:, 3:7]
    angle = 2 * np.arcsin(np.clip(np.linalg.norm(quat[:, :3], axis=1), 0, 1))
    assert angle.max() < 1e-9
    assert np.abs(traj.q[:, :2]).max() < 1e-9


@pytest.mark.parametrize("solver", ["sap", "canal", "subadmm", "nsn", "pgs"])
def test_every_solver_holds_a_resting_box_on_its_four_corners(solver):
    """The same at each solver's defaults, 0.1 s: forces summing to mg with no net moment, no
    plausibility flag; mg/4 each to the solver's accuracy for the solvers of compliant contact.
    PGS solves the rigid problem, whose 4-point support is statically indeterminate: any
    moment-free split is a solution (it returns 2.92/1.98 N on the diagonals), and at its default
    absolute tol 1e-10 it stagnates at a residual of ~3e-10 and says so."""
    sim = Simulator(_box_scene(), solver=solver, dt=1e-3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traj = sim.run(0.1)
    assert not [w for w in caught if w.category is PlausibilityWarning]
    if solver != "pgs":
        assert (traj.stats["status"] == 0).all()
    assert np.nanmax(traj.stats["residual"]) < 1e-8
    f = _normal_forces(sim)
    assert f.sum() == pytest.approx(G, rel=1e-6)
    x = sim.last_problem.bodies.points
    np.testing.assert_allclose(f @ x[:, :2], 0.0, atol=1e-6)  # no net moment about the centre
    if solver != "pgs":  # the regularized (compliant) contacts have a unique, symmetric answer
        np.testing.assert_allclose(f, G / 4, rtol=2e-3)
    np.testing.assert_allclose(traj.q[-1], traj.q[0], atol=1e-6)


def _push_at_top(force):
    """Controller: a world +x force [N] at the box's top-face centre (free body: world force on the
    translation, body-frame torque R^T (r × f) on the rotation)."""

    def controller(t, q, v):
        R = Rotation.from_quat(q[3:7]).as_matrix()
        f = np.array([force, 0.0, 0.0])
        r = R @ np.array([0.0, 0.0, H])
        return np.concatenate([f, R.T @ np.cross(r, f)])

    return controller


def _tip_angle(traj):
    return Rotation.from_quat(traj.q[:, 3:7]).as_euler("xyz")[:, 1]


@pytest.mark.parametrize("ratio, tips", [(0.97, False), (1.03, True)])
def test_box_pushed_at_its_top_tips_exactly_when_the_moment_criterion_says(ratio, tips):
    """Push F at height 2h: the box tips about its far bottom edge iff F·2h > mg·h, F_c = mg/2
    (friction μ = 1 > F/(mg), so it does not slide). 3 % below F_c it stands: the pitch settles
    at the near-rigid contacts' compliance (a few µrad, SAP's β regularization, seed 001 eq. 29)
    and stays there over 0.5 s; 3 % above it tips past 0.2 rad in 0.35 s (it starts as a hinge
    at the edge: ½ (ratio − 1) mg h t² / (2/3 m (2h)²) ≈ 0.14 rad at 0.35 s, then the push's
    arm grows and gravity's shrinks), pivoting about the edge: the edge's midpoint stays within
    0.1 mm of where it started."""
    scene = _box_scene(mu=1.0)
    sim = Simulator(scene, dt=1e-3, controller=_push_at_top(ratio * G / 2))
    traj = sim.run(0.35)
    pitch = _tip_angle(traj)
    if not tips:
        assert np.abs(pitch).max() < 1e-5
        assert abs(pitch[-1] - pitch[100]) < 1e-8  # settled, not creeping
        assert (traj.stats["n_contacts"] == 4).all()
        return
    assert pitch[-1] > 0.2
    R = Rotation.from_quat(traj.q[:, 3:7]).as_matrix()
    edge = traj.q[:, :3] + R @ np.array([H, 0.0, -H])  # midpoint of the far bottom edge
    assert np.abs(edge - edge[0]).max() < 1e-4
    # while pivoting, the two edge corners carry the box; the raised corners are speculative only
    assert traj.stats["n_contacts"][-1] >= 2


def _push_at_centre(force):
    def controller(t, q, v):
        return np.array([force, 0.0, 0.0, 0.0, 0.0, 0.0])  # through the centre of mass: no torque

    return controller


def test_box_pushed_at_its_centre_slides_with_the_front_corners_carrying_more():
    """Push F = 0.7 mg through the centre, μ = 0.5: the box slides with a = F/m − μg (x = ½at²
    at 0.3 s, 1 %) without tipping; the friction μmg at the ground, h below the centre, is
    balanced by the normal forces' moment: N_front − N_back = μmg (a cube: half width = half
    height), so the front edge carries (1 + μ)mg/2 = 0.75 mg and the back one 0.25 mg."""
    mu = 0.5
    sim = Simulator(_box_scene(mu=mu), dt=1e-3, controller=_push_at_centre(0.7 * G))
    traj = sim.run(0.3)
    a = 0.7 * G - mu * G
    assert traj.q[-1, 0] == pytest.approx(0.5 * a * 0.3**2, rel=1e-2)
    assert np.abs(_tip_angle(traj)).max() < 1e-5
    f = _normal_forces(sim)
    x = sim.last_problem.bodies.points[:, 0] - traj.q[-1, 0]
    assert f[x > 0].sum() == pytest.approx(0.75 * G, rel=1e-2)
    assert f[x < 0].sum() == pytest.approx(0.25 * G, rel=1e-2)


def test_one_contact_per_pair_cannot_hold_a_box_flat():
    """Cap 1 (one point per pair, the detector's behaviour before manifolds): the deepest corner
    alone holds the box, which rocks from corner to corner; with the manifold (cap 4, the
    default) the same box stays flat to 1e-9 rad."""
    def tilt(traj):
        return np.linalg.norm(Rotation.from_quat(traj.q[:, 3:7]).as_rotvec(), axis=1).max()

    rock = Simulator(_box_scene(cap=1), dt=1e-3).run(0.3)
    flat = Simulator(_box_scene(cap=4), dt=1e-3).run(0.3)
    assert (rock.stats["n_contacts"] == 1).all()
    assert tilt(rock) > 1e-5  # rocks from corner to corner (~9e-5 rad)
    assert tilt(flat) < 1e-9


def test_box_on_a_yawed_box_rests_on_four_points_carrying_its_weight():
    """Top box yawed 0.3 rad on the bottom one: 4 contacts between the boxes (the clipped octagon
    reduced to 4) whose normal forces sum to mg, 4 on the ground summing to 2mg; 1 s: neither
    box moves (1 µm) nor turns."""
    sim = Simulator(_box_scene(box_on_box=True, yaw=0.3), dt=1e-3)
    traj = sim.run(1.0)
    c = sim.last_problem.bodies
    f = _normal_forces(sim)
    joints = c.joints
    ground = joints[:, 0] == 0
    assert ground.sum() == 4 and (~ground).sum() == 4
    assert f[ground].sum() == pytest.approx(2 * G, rel=1e-6)
    assert f[~ground].sum() == pytest.approx(G, rel=1e-6)
    np.testing.assert_allclose(traj.q[-1], traj.q[0], atol=1e-6)


def test_cube_scenes_in_box_mode_stand_and_land_like_the_corner_cubes():
    """CubeSpec(contact="box"): cube-rest-3 stands with 4 contacts per pair (12) and cube-drop-3
    lands at the same heights as the corner cubes; the corner mode (default) is unchanged."""
    rest = load_scene("cube-rest-3", cube=CubeSpec(contact="box"))
    traj = rest.run(0.2)
    assert (traj.stats["n_contacts"] == 12).all()
    np.testing.assert_allclose(traj.q[-1].reshape(3, 7)[:, 2], 0.05 + 0.1 * np.arange(3), atol=1e-5)
    drop = load_scene("cube-drop-3", cube=CubeSpec(contact="box")).run(1.5)
    z = np.sort(drop.q[-1].reshape(3, 7)[:, 2])
    np.testing.assert_allclose(z, 0.05 + 0.1 * np.arange(3), atol=2e-3)
    with pytest.raises(ValueError, match="contact"):
        CubeSpec(contact="mesh")


def _rodrigues(w):
    th = np.linalg.norm(w)
    k = w / th
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K


@pytest.mark.parametrize("cap", [1, 4])
def test_exactly_touching_box_faces_coal_cannot_answer_get_a_finite_contact(cap):
    """Two 10 cm boxes stacked face to face, tilted by ~1e-11 rad: coal's default GJK returns
    φ = −DBL_MAX with a NaN normal for this pose (found by a random search, ~2 in 10⁴ such poses);
    the detector retries with the Nesterov-accelerated GJK and gets the gap (to GJK's 1e-6) and normal."""
    from plants.sim.geometry import Box, ContactDetector, ContactParams, Geometry

    wa = np.array([9.9621328211759615e-12, -1.4444228129685853e-13, 4.0523949150062965e-12])
    pa = np.array([4.0525343922532420e-10, -1.7831510114496125e-10, 9.9999937200129485e-01])
    wb = np.array([3.8370957818757517e-13, 5.3362869738926842e-13, 8.3446738282632271e-12])
    pb = np.array([-6.031020867630366e-10, 2.289010464789123e-09, 8.999987245624769e-01])
    P = ContactParams(1e5, 1e-3, 0.5)
    geoms = [Geometry(n, Box((0.05, 0.05, 0.05)), j, np.eye(3), np.zeros(3), P) for n, j in (("top", 1), ("low", 2))]
    det = ContactDetector(geoms, np.array([[0, 1]]), margin=1e-3, max_contacts_per_pair=cap)
    c = det.detect(np.stack([_rodrigues(wa), _rodrigues(wb)]), np.stack([pa, pb]))
    gap = (pa[2] - pb[2]) - 0.1  # the faces' separation [m] (rotations ~1e-11: negligible)
    assert c.phi.size >= 1 and np.isfinite(c.phi).all() and np.isfinite(c.normal).all()
    np.testing.assert_allclose(c.phi, gap, atol=2e-6)  # coal's GJK/EPA tolerance is 1e-6
    np.testing.assert_allclose(np.abs(c.normal[:, 2]), 1.0, atol=1e-6)
