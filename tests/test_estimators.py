"""estimators: camera model, geometry, filter and input validation (no images).

Image-based accuracy tests are in test_estimators_vision.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimators import (BallFilter, BallState, BallStatus, BallTracker, BallTrackerOptions,
                        Camera, CameraIntrinsics, EstimatorError, ball_center_from_outline,
                        fit_sphere_cone, load_cameras, look_at, save_cameras)
from estimators.synthetic import RenderBall, camera_ring
from estimators.transforms import (invert_transform, quaternion_from_rotvec,
                                   rotation_angle_between, rotation_from_quaternion,
                                   rotation_from_rotvec, rotvec_from_rotation)

INTR = CameraIntrinsics.from_fov(640, 480, 60.0)
DIST = np.array([-0.12, 0.05, 0.001, -0.0008, -0.01])


def _camera(distortion=None) -> Camera:
    intr = INTR if distortion is None else CameraIntrinsics(INTR.K, 640, 480, distortion)
    return Camera(intr, look_at([0.0, -0.5, 0.5], [0.55, 0.0, 0.0]), "cam")


# ------------------------------------------------------------------ camera model
@settings(max_examples=60, deadline=None)
@given(u=st.floats(20, 620), v=st.floats(20, 460), depth=st.floats(0.2, 3.0),
       distorted=st.booleans())
def test_projection_back_projection_round_trip(u, v, depth, distorted):
    """pixel -> point at depth -> pixel is the identity; the ray passes through the point."""
    cam = _camera(DIST if distorted else None)
    p = cam.back_project(np.array([u, v]), depth)[0]
    assert cam.points_to_camera(p)[0, 2] == pytest.approx(depth, rel=1e-9)
    np.testing.assert_allclose(cam.project(p)[0], [u, v], atol=1e-6)
    o, d = cam.pixels_to_rays(np.array([u, v]))
    w = p - o
    assert np.linalg.norm(np.cross(w, d[0])) < 1e-9 * np.linalg.norm(w) + 1e-12
    assert w @ d[0] > 0


@settings(max_examples=40, deadline=None)
@given(rv=st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3))
def test_rotation_conversions_round_trip(rv):
    R = rotation_from_rotvec(np.array(rv))
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    assert rotation_angle_between(rotation_from_rotvec(rotvec_from_rotation(R)), R) < 1e-7
    assert rotation_angle_between(rotation_from_quaternion(quaternion_from_rotvec(rv)), R) < 1e-7


def test_look_at_points_the_optical_axis_at_the_target():
    cam = _camera()
    np.testing.assert_allclose(cam.project(np.array([0.55, 0.0, 0.0]))[0], INTR.K[:2, 2],
                               atol=1e-9)
    np.testing.assert_allclose(cam.position, [0.0, -0.5, 0.5], atol=1e-12)
    T = cam.transform_world_to_camera
    np.testing.assert_allclose(invert_transform(T) @ T, np.eye(4), atol=1e-12)


def test_intersect_plane_recovers_table_points():
    cam = _camera(DIST)
    pts = np.array([[0.5, 0.1, 0.0], [0.7, -0.2, 0.0], [0.3, 0.0, 0.0]])
    np.testing.assert_allclose(cam.intersect_plane(cam.project(pts)), pts, atol=1e-9)


def test_camera_yaml_round_trip_and_ros_camera_info(tmp_path):
    cams = {c.name: c for c in camera_ring(2)}
    cams["cam1"] = Camera(CameraIntrinsics(INTR.K, 640, 480, DIST),
                          cams["cam1"].transform_world_to_camera, "cam1")
    path = tmp_path / "cams.yaml"
    save_cameras(path, cams)
    back = load_cameras(path)
    assert list(back) == ["cam0", "cam1"]
    for k in cams:
        np.testing.assert_allclose(back[k].K, cams[k].K)
        np.testing.assert_allclose(back[k].transform_world_to_camera,
                                   cams[k].transform_world_to_camera)
    np.testing.assert_allclose(back["cam1"].intrinsics.distortion, DIST)
    assert back["cam0"].intrinsics.distortion is None
    ros = tmp_path / "left.yaml"
    ros.write_text(
        "image_width: 640\nimage_height: 480\ncamera_name: left\n"
        "camera_matrix: {rows: 3, cols: 3, data: [600, 0, 319.5, 0, 600, 239.5, 0, 0, 1]}\n"
        "distortion_model: plumb_bob\n"
        "distortion_coefficients: {rows: 1, cols: 5, data: [-0.1, 0.01, 0, 0, 0]}\n"
        "rectification_matrix: {rows: 3, cols: 3, data: [1, 0, 0, 0, 1, 0, 0, 0, 1]}\n"
        "projection_matrix: {rows: 3, cols: 4,\n"
        "  data: [600, 0, 319.5, 0, 0, 600, 239.5, 0, 0, 0, 1, 0]}\n")
    left = load_cameras(ros)["left"]
    assert left.K[0, 0] == 600 and left.intrinsics.distortion[0] == -0.1
    bad = tmp_path / "bad.yaml"
    bad.write_text("image_width: 640\nimage_height: 480\ncamera_matrix: [[1,0,0],[0,1,0],[0,0,1]]\n"
                   "focal: 3\n")
    with pytest.raises(ValueError, match="unknown key"):
        load_cameras(bad)


# ------------------------------------------------------------------ bad input
def test_bad_intrinsics_and_extrinsics_raise():
    K = INTR.K.copy()
    K[0, 0] = np.nan
    with pytest.raises(ValueError, match="K must be finite"):
        CameraIntrinsics(K, 640, 480)
    with pytest.raises(ValueError, match=r"K must have shape \(3, 3\)"):
        CameraIntrinsics(np.eye(4), 640, 480)
    with pytest.raises(ValueError, match="positive focal"):
        CameraIntrinsics(np.diag([-1.0, 1.0, 1.0]), 640, 480)
    with pytest.raises(TypeError, match="width must be an int"):
        CameraIntrinsics(INTR.K, 640.0, 480)
    T = np.eye(4)
    T[:3, :3] *= 2
    with pytest.raises(ValueError, match="rigid transform"):
        Camera(INTR, T)
    with pytest.raises(ValueError, match="distortion must have 4, 5 or 8"):
        CameraIntrinsics(INTR.K, 640, 480, [0.1, 0.2, 0.3])


def test_bad_radius_and_options_raise():
    with pytest.raises(ValueError, match="radius must be a positive"):
        RenderBall([0, 0, 0], 0.0)
    with pytest.raises(ValueError, match="radius must be a positive"):
        BallTrackerOptions(radius=-0.01)
    with pytest.raises(ValueError, match="radius must be a positive"):
        ball_center_from_outline(_camera(), np.zeros((10, 2)), 0.0)
    with pytest.raises(ValueError, match="depth_method"):
        BallTrackerOptions(depth_method="guess")
    with pytest.raises(ValueError, match=r"unknown BallTrackerOptions option\(s\) \['radus'\]"):
        BallTrackerOptions.from_dict({"radus": 0.03})
    with pytest.raises(ValueError, match="unknown detection option"):
        BallTrackerOptions.from_dict({"detection": {"min_contrst": 3}})
    opts = BallTrackerOptions.from_dict({"radius": 0.02, "detection": {"min_contrast": 5.0}})
    assert opts.detection.min_contrast == 5.0 and opts.radius == 0.02


def test_bad_measurements_raise():
    cams = camera_ring(2)
    tr = BallTracker(cams)
    good = np.zeros((480, 640, 3), np.uint8)
    with pytest.raises(TypeError, match="dtype uint8"):
        tr.step([good.astype(np.float32), good], 0.0)
    with pytest.raises(ValueError, match="must be 640x480"):
        tr.step([np.zeros((240, 320, 3), np.uint8), good], 0.0)
    with pytest.raises(ValueError, match=r"\(H, W\) or \(H, W, 3\)"):
        tr.step([np.zeros((480, 640, 4), np.uint8), good], 0.0)
    with pytest.raises(ValueError, match="one item per camera"):
        tr.step([good], 0.0)
    with pytest.raises(TypeError, match="must be an image, a CircleDetection"):
        tr.step(["cam", good], 0.0)
    f = BallFilter()
    f.step(np.array([0.5, 0.0, 0.03]), 1.0)
    with pytest.raises(ValueError, match="t must increase strictly"):
        f.step(np.array([0.5, 0.0, 0.03]), 1.0)
    with pytest.raises(ValueError, match="must not contain Inf"):
        f.step(np.array([np.inf, 0.0, 0.03]), 2.0)
    with pytest.raises(ValueError, match=r"shape \(3,\) or \(m, 3\)"):
        f.step(np.zeros(4), 3.0)
    with pytest.raises(EstimatorError):
        BallTrackerOptions(filter="median")


# ------------------------------------------------------------------ geometry
@settings(max_examples=30, deadline=None)
@given(x=st.floats(0.35, 0.75), y=st.floats(-0.2, 0.2), z=st.floats(0.0, 0.1),
       r=st.floats(0.01, 0.06), distorted=st.booleans())
def test_sphere_cone_fit_is_exact_on_ideal_outlines(x, y, z, r, distorted):
    """Outline pixels from the analytic tangent cone -> centre recovered to 1e-9 m (both
    depth methods), although the outline's centre is not the projected ball centre."""
    cam = _camera(DIST if distorted else None)
    c_w = np.array([x, y, z + r])
    c = cam.points_to_camera(c_w)[0]
    d = np.linalg.norm(c)
    a = c / d
    alpha = np.arcsin(r / d)
    e1 = np.cross(a, [1.0, 0.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(a, e1)
    phi = np.linspace(0, 2 * np.pi, 50, endpoint=False)
    rays = np.cos(alpha) * a + np.sin(alpha) * (np.cos(phi)[:, None] * e1
                                                + np.sin(phi)[:, None] * e2)
    px = cam.intrinsics.distort_normalized(rays[:, :2] / rays[:, 2:3])
    fit = fit_sphere_cone(cam, px)
    assert fit.half_angle == pytest.approx(alpha, abs=1e-10)
    p_size, _ = ball_center_from_outline(cam, px, r, "size")
    p_plane, _ = ball_center_from_outline(cam, px, r, "plane", table_height=z)
    np.testing.assert_allclose(p_size, c_w, atol=1e-9)
    np.testing.assert_allclose(p_plane, c_w, atol=1e-9)


# ------------------------------------------------------------------ filter
R_BALL = 0.03
N_UP = np.array([0.0, 0.0, 1.0])


def _straight(t):
    v = np.array([0.2, -0.1, 0.0])
    return np.array([0.45, 0.05, R_BALL]) + v * t, v


@pytest.mark.parametrize("kind", ["lowpass", "kalman"])
def test_filter_rolling_straight_line_matches_analytic(kind):
    """Exact positions of a ball rolling at constant velocity: after the transient the
    velocity is exact (finite differences of a low-passed ramp), ω = n × v / r, and the
    integrated angle equals the analytic rolling angle (distance / r about n × v̂)."""
    f = BallFilter(BallTrackerOptions(radius=R_BALL, filter=kind))
    dt = 1 / 80
    states = [f.step(_straight(k * dt)[0], k * dt) for k in range(160)]
    assert states[0].status == BallStatus.INITIALIZING
    assert all(s.status == BallStatus.OK for s in states[1:])
    s = states[-1]
    _, v = _straight(s.t)
    np.testing.assert_allclose(s.velocity, v, atol=1e-4)
    omega = np.cross(N_UP, v) / R_BALL
    np.testing.assert_allclose(s.angular_velocity, omega, atol=1e-2)
    # angle: ∫ω dt over the estimate's history equals ω_true (t - lag) minus the transient; the
    # rotation since t=1 s (transient over) is exact
    s1 = states[80]
    np.testing.assert_allclose(s.angle - s1.angle, omega * (s.t - s1.t), rtol=1e-3)
    R_rel = rotation_from_quaternion(s.orientation) @ rotation_from_quaternion(s1.orientation).T
    assert rotation_angle_between(R_rel, rotation_from_rotvec(omega * (s.t - s1.t))) < 1e-3


def test_filter_circle_with_noise_kalman_tracks_velocity():
    """Circle of radius 0.1 m at 0.1 m/s (the paper's task), 0.5 mm noise at 80 Hz."""
    rng = np.random.default_rng(3)
    f = BallFilter(BallTrackerOptions(radius=R_BALL, filter="kalman"))
    w, rc, dt = 1.0, 0.1, 1 / 80
    errs_v, errs_p, errs_raw = [], [], []
    for k in range(400):
        t = k * dt
        p = np.array([0.55 + rc * np.sin(w * t), rc * np.cos(w * t), R_BALL])
        v = rc * w * np.array([np.cos(w * t), -np.sin(w * t), 0.0])
        z = p + rng.normal(0, 0.0005, 3)
        s = f.step(z, t)
        if k > 80:
            errs_raw.append(np.linalg.norm(z - p))
            errs_v.append(np.linalg.norm(s.velocity - v))
            errs_p.append(np.linalg.norm(s.position - p))
            np.testing.assert_allclose(s.angular_velocity,
                                       np.cross(N_UP, s.velocity) / R_BALL, atol=1e-9)
    assert np.median(errs_p) < 0.85 * np.median(errs_raw)  # filtering reduces the noise
    assert np.median(errs_v) < 0.02  # 20 % of the 0.1 m/s speed (measured: 15 mm/s)


def test_outlier_camera_is_rejected_by_median_mad():
    f = BallFilter(BallTrackerOptions(radius=R_BALL))
    p = np.array([0.5, 0.0, R_BALL])
    P = np.array([p + [0.0002, 0, 0], p - [0.0001, 0.0002, 0], p + [0.04, -0.03, 0.0]])
    s = f.step(P, 0.0, ("a", "b", "c"))
    assert s.rejected == ("c",) and s.n_measurements == 2
    np.testing.assert_allclose(s.position, P[:2].mean(axis=0), atol=1e-12)


def test_two_disagreeing_cameras_need_a_track():
    f = BallFilter(BallTrackerOptions(radius=R_BALL))
    p = np.array([0.5, 0.0, R_BALL])
    s = f.step(np.array([p, p + [0.05, 0, 0]]), 0.0)
    assert s.status == BallStatus.INCONSISTENT and not s.valid
    assert np.all(np.isnan(s.position))
    f.step(p, 0.1)
    s = f.step(np.array([p, p + [0.03, 0, 0]]), 0.11, ("good", "bad"))
    assert s.status == BallStatus.OK and s.rejected == ("bad",)


def test_lost_ball_is_a_status_never_zeros():
    f = BallFilter(BallTrackerOptions(radius=R_BALL, max_coast_time=0.05))
    s = f.step(None, 0.0)
    assert s.status == BallStatus.NOT_INITIALIZED and not s.valid
    assert np.all(np.isnan(s.position)) and np.all(np.isnan(s.velocity))
    for k in range(1, 5):
        f.step(_straight(k / 80)[0], k / 80)
    s = f.step(np.full((2, 3), np.nan), 5 / 80)  # cameras see nothing
    assert s.status == BallStatus.PREDICTED and s.valid
    s = f.step(None, 6 / 80)
    assert s.status == BallStatus.PREDICTED
    s = f.step(None, 10 / 80)  # 0.0625 s since the last measurement > 0.05
    assert s.status == BallStatus.LOST and not s.valid
    assert np.all(np.isnan(s.position)) and np.all(np.isnan(s.angular_velocity))
    assert "no accepted measurement" in s.message
    s = f.step(_straight(11 / 80)[0], 11 / 80)  # re-acquired: a fresh track
    assert s.status == BallStatus.INITIALIZING and s.valid
    assert isinstance(s, BallState) and s.x.shape == (13,)


def test_gate_rejects_jumps_while_tracking():
    f = BallFilter(BallTrackerOptions(radius=R_BALL, gate_distance=0.02))
    for k in range(5):
        f.step(_straight(k / 80)[0], k / 80)
    s = f.step(_straight(5 / 80)[0] + [0.1, 0, 0], 5 / 80)
    assert s.status == BallStatus.PREDICTED and s.rejected == ("camera0",)


def test_emulated_vision_samples_at_camera_rate_and_rolls():
    """Called at 1 kHz, the emulation measures at 80 Hz (holds the estimate in between);
    without noise and filtering the finite-difference velocity of a straight roll is exact."""
    from estimators import EmulatedBallVision

    vis = EmulatedBallVision(BallTrackerOptions(radius=R_BALL, filter="none",
                                                velocity_cutoff_hz=None), rate_hz=80.0)
    times = np.arange(0, 0.5, 1e-3)
    states = [vis.step(_straight(t)[0], t) for t in times]
    stamps = sorted({s.t for s in states})
    assert np.allclose(np.diff(stamps), 1 / 80, atol=1.1e-3)  # sampled on the 1 ms grid
    s = states[-1]
    _, v = _straight(s.t)
    np.testing.assert_allclose(s.velocity, v, atol=1e-12)
    np.testing.assert_allclose(s.position, _straight(s.t)[0], atol=1e-12)
    np.testing.assert_allclose(s.angular_velocity, np.cross(N_UP, v) / R_BALL, atol=1e-9)
    noisy = EmulatedBallVision(BallTrackerOptions(radius=R_BALL), noise_std=0.001, rng=1)
    z = np.array([noisy.step([0.5, 0.0, R_BALL], k / 80).measurement for k in range(400)])
    assert np.std(z[:, 0]) == pytest.approx(0.001, rel=0.15)
    with pytest.raises(ValueError, match="noise_std"):
        EmulatedBallVision(noise_std=-1.0)


def test_tracker_from_yaml_rig_file(tmp_path):
    cams = camera_ring(2)
    save_cameras(tmp_path / "cams.yaml", cams)
    rig = tmp_path / "rig.yaml"
    rig.write_text("cameras_file: cams.yaml\n"
                   "table_corners: [[0.2, -0.35, 0], [0.9, -0.35, 0], [0.9, 0.35, 0], "
                   "[0.2, 0.35, 0]]\n"
                   "options: {radius: 0.025, filter: kalman, detection: {min_contrast: 10.0}}\n")
    tr = BallTracker.from_yaml(rig)
    assert [c.name for c in tr.cameras] == ["cam0", "cam1"]
    assert tr.options.radius == 0.025 and tr.options.filter == "kalman"
    assert tr.options.detection.min_contrast == 10.0
    assert tr.masks[0] is not None and tr.masks[0].any()
    (tmp_path / "bad.yaml").write_text("cameras_file: cams.yaml\ntable: 1\n")
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['table'\]"):
        BallTracker.from_yaml(tmp_path / "bad.yaml")
