"""estimators on images rendered from known ground truth (640x480, estimators.synthetic).

Measured error distributions are printed (run with -s) and bounded by the targets of issue 8
(ball position <= 1 mm).
"""

from __future__ import annotations

import numpy as np
import pytest

from estimators import (BallStatus, BallTracker, BallTrackerOptions, Camera, CameraIntrinsics,
                        CircleDetectionOptions, TagDetector, ball_center_from_outline, calibrate_extrinsics,
                        detect_ball_circle, estimate_object_pose, estimate_tag_pose,
                        make_transform, table_mask)
from estimators.ball_geometry import apparent_radius_range
from estimators.synthetic import RenderBall, RenderTag, Scene, Table, camera_ring, render
from estimators.transforms import invert_transform, rotation_angle_between, rotation_from_rotvec

R = 0.03
TABLE = Table()


def _ball_poses(n, seed):
    rng = np.random.default_rng(seed)
    return [np.array([rng.uniform(0.42, 0.68), rng.uniform(-0.13, 0.13), R]) for _ in range(n)]


def _camera_errors(cams, poses, noise, method="plane", seed=0):
    options = CircleDetectionOptions(limb_model="flat" if method == "plane" else "sqrt")
    errs = []
    for k, c in enumerate(poses):
        scene = Scene(table=TABLE, balls=(RenderBall(c, R),))
        for cam in cams:
            img = render(cam, scene, noise_std=noise, rng=seed + k)
            det = detect_ball_circle(img, table_mask(cam, TABLE.corners, 3),
                                     apparent_radius_range(cam, R, TABLE.corners + [0, 0, R]),
                                     options)
            assert det is not None, f"ball not found by {cam.name} at {c}"
            p, _ = ball_center_from_outline(cam, det.edge_points, R, method)
            errs.append(np.linalg.norm(p - c))
    return np.array(errs)


@pytest.mark.parametrize("noise", [0.0, 2.0])
def test_ball_position_error_below_1mm_per_camera(noise):
    """6 seeded poses x 3 cameras, plane method: every single-camera error <= 1 mm."""
    errs = _camera_errors(camera_ring(3), _ball_poses(6, 11), noise)
    print(f"\nball error [mm], noise {noise}: median {np.median(errs) * 1e3:.3f}, "
          f"p90 {np.percentile(errs, 90) * 1e3:.3f}, max {errs.max() * 1e3:.3f}")
    assert errs.max() <= 1e-3
    assert np.median(errs) <= 0.3e-3


def test_ball_depth_from_size_is_less_accurate_but_bounded():
    errs = _camera_errors(camera_ring(3), _ball_poses(3, 5), 1.0, method="size")
    print(f"\nsize-method error [mm]: median {np.median(errs) * 1e3:.2f}, max "
          f"{errs.max() * 1e3:.2f}")
    # depth ∝ 1/apparent size: 0.03 px of radius bias (shading at the limb) is ~1 mm
    assert errs.max() <= 2e-3


def test_ball_position_with_lens_distortion():
    dist = np.array([-0.15, 0.06, 0.0005, -0.0005, -0.01])
    intr = CameraIntrinsics(CameraIntrinsics.from_fov(640, 480, 60).K, 640, 480, dist)
    cams = camera_ring(2, intrinsics=intr)
    errs = _camera_errors(cams, _ball_poses(3, 2), 1.0)
    assert errs.max() <= 1e-3


def test_tracker_fuses_three_cameras_below_1mm():
    cams = camera_ring(3)
    tracker = BallTracker(cams, BallTrackerOptions(radius=R), TABLE.corners)
    for c in _ball_poses(3, 7):
        tracker.reset()
        imgs = [render(cam, Scene(table=TABLE, balls=(RenderBall(c, R),)), 2.0, 1) for cam in cams]
        s = tracker.step(imgs, 0.0)
        assert s.status == BallStatus.INITIALIZING and s.n_measurements == 3
        assert np.linalg.norm(s.position - c) <= 1e-3
        assert all(o.accepted for o in tracker.last_observations)


def test_tracker_rolling_sequence_velocity_and_angular_velocity():
    """Rendered images of a ball rolling at 0.25 m/s, 2 cameras at 80 Hz: velocity within
    15 mm/s and ω within 0.5 rad/s (of 8.3) of the analytic rolling motion after 0.25 s."""
    cams = camera_ring(2, start_angle_deg=200)
    tracker = BallTracker(cams, BallTrackerOptions(radius=R, filter="kalman"), TABLE.corners)
    v = np.array([0.2, 0.15, 0.0])
    omega = np.cross([0, 0, 1], v) / R
    p0 = np.array([0.42, -0.12, R])
    errs_v, errs_w = [], []
    for k in range(32):
        t = k / 80
        c = p0 + v * t
        imgs = [render(cam, Scene(table=TABLE, balls=(RenderBall(c, R),)), 1.5, k) for cam in cams]
        s = tracker.step(imgs, t)
        assert s.valid
        if t >= 0.25:
            errs_v.append(np.linalg.norm(s.velocity - v))
            errs_w.append(np.linalg.norm(s.angular_velocity - omega))
    print(f"\nrolling: velocity error max {max(errs_v) * 1e3:.1f} mm/s, ω error max "
          f"{max(errs_w):.2f} rad/s")
    assert max(errs_v) < 0.015
    assert max(errs_w) < 0.5


def test_miscalibrated_camera_is_rejected_as_outlier():
    cams = camera_ring(3)
    T = cams[2].transform_world_to_camera.copy()
    T[:3, 3] += [0.03, 0.0, 0.0]  # 3 cm extrinsic error
    bad = [cams[0], cams[1], Camera(cams[2].intrinsics, T, "cam2")]
    c = np.array([0.55, 0.02, R])
    imgs = [render(cam, Scene(table=TABLE, balls=(RenderBall(c, R),)), 1.0, 0) for cam in cams]
    s = BallTracker(bad, BallTrackerOptions(radius=R), TABLE.corners).step(imgs, 0.0)
    assert s.rejected == ("cam2",) and s.n_measurements == 2
    assert np.linalg.norm(s.position - c) <= 1e-3


def test_lost_ball_yields_invalid_status():
    cams = camera_ring(2)
    tracker = BallTracker(cams, BallTrackerOptions(radius=R, max_coast_time=0.03), TABLE.corners)
    c = np.array([0.5, 0.0, R])
    with_ball = [render(cam, Scene(table=TABLE, balls=(RenderBall(c, R),))) for cam in cams]
    empty = [render(cam, Scene(table=TABLE)) for cam in cams]
    assert tracker.step(empty, 0.0).status == BallStatus.NOT_INITIALIZED
    assert tracker.step(with_ball, 0.0125).status == BallStatus.INITIALIZING
    assert tracker.step(empty, 0.025).status == BallStatus.PREDICTED
    s = tracker.step(empty, 0.05)
    assert s.status == BallStatus.LOST and not s.valid and np.all(np.isnan(s.position))


# ------------------------------------------------------------------ AprilTags
def _tag_scene(seed):
    rng = np.random.default_rng(seed)
    T1 = make_transform(rotation_from_rotvec([0, 0, rng.uniform(-np.pi, np.pi)]),
                        [rng.uniform(0.57, 0.65), rng.uniform(-0.1, 0.0), 0.0])
    T2 = make_transform(np.eye(3), [0.47, 0.1, 0.0])
    return T1, T2


def test_tag_pose_and_extrinsic_calibration_accuracy():
    """4 seeded views: tag pose <= 1 mm / 0.3 deg; camera calibrated from two known tags
    <= 1.5 mm (optical centre) / 0.15 deg."""
    det = TagDetector()
    t_err, r_err, ct_err, cr_err = [], [], [], []
    for seed in range(4):
        cam = camera_ring(5, start_angle_deg=30 + 40 * seed)[0]
        T1, T2 = _tag_scene(seed)
        img = render(cam, Scene(table=TABLE, tags=(RenderTag(3, 0.08, T1), RenderTag(7, 0.08, T2))),
                     1.0, seed)
        d = {x.tag_id: x for x in det.detect(img, cam)}
        assert set(d) == {3, 7}
        pose = estimate_tag_pose(cam, d[3], 0.08)
        truth = cam.transform_world_to_camera @ T1
        t_err.append(np.linalg.norm(pose.transform_tag_to_camera[:3, 3] - truth[:3, 3]))
        r_err.append(np.degrees(rotation_angle_between(pose.transform_tag_to_camera[:3, :3],
                                                       truth[:3, :3])))
        T, rms = calibrate_extrinsics(cam, img, {3: T1, 7: T2}, 0.08)
        assert rms < 0.3
        ct_err.append(np.linalg.norm(invert_transform(T)[:3, 3] - cam.position))
        cr_err.append(np.degrees(rotation_angle_between(T[:3, :3],
                                                        cam.transform_world_to_camera[:3, :3])))
    print(f"\ntag: {max(t_err) * 1e3:.3f} mm, {max(r_err):.3f} deg; calibration: "
          f"{max(ct_err) * 1e3:.3f} mm, {max(cr_err):.3f} deg")
    assert max(t_err) <= 1e-3 and max(r_err) <= 0.3
    assert max(ct_err) <= 1.5e-3 and max(cr_err) <= 0.15


def test_calibrated_cameras_track_the_ball_within_2mm():
    """End to end: calibrate each camera from tags, then track the ball with those cameras."""
    truth_cams = camera_ring(3)
    T1, T2 = _tag_scene(9)
    tags = (RenderTag(3, 0.08, T1), RenderTag(7, 0.08, T2))
    cal = []
    for cam in truth_cams:
        img = render(cam, Scene(table=TABLE, tags=tags), 1.0, 0)
        T, _ = calibrate_extrinsics(cam, img, {3: T1, 7: T2}, 0.08)
        cal.append(cam.with_extrinsics(T))
    c = np.array([0.6, -0.05, R])
    imgs = [render(cam, Scene(table=TABLE, balls=(RenderBall(c, R),)), 1.0, 1)
            for cam in truth_cams]
    s = BallTracker(cal, BallTrackerOptions(radius=R), TABLE.corners).step(imgs, 0.0)
    print(f"\nball with calibrated cameras: {np.linalg.norm(s.position - c) * 1e3:.3f} mm")
    assert np.linalg.norm(s.position - c) <= 2e-3


def test_object_pose_from_two_cameras():
    cams = camera_ring(2)
    T_obj = make_transform(rotation_from_rotvec([0, 0, 0.4]), [0.55, 0.05, 0.0])
    T_tag_obj = make_transform(np.eye(3), [0.03, -0.02, 0.0])
    tag = RenderTag(5, 0.06, T_obj @ T_tag_obj)
    imgs = [render(cam, Scene(table=TABLE, tags=(tag,)), 1.0, i) for i, cam in enumerate(cams)]
    est = estimate_object_pose(cams, imgs, {5: T_tag_obj}, 0.06)
    assert est.valid and est.tag_ids == (5,) and set(est.per_camera) == {"cam0", "cam1"}
    assert np.linalg.norm(est.transform_object_to_world[:3, 3] - T_obj[:3, 3]) <= 1e-3
    assert np.degrees(rotation_angle_between(est.transform_object_to_world[:3, :3],
                                             T_obj[:3, :3])) <= 0.2
    none = estimate_object_pose(cams, [render(c, Scene(table=TABLE)) for c in cams],
                                {5: T_tag_obj}, 0.06)
    assert not none.valid and none.reprojection_error_px == float("inf")


def test_search_window_matches_whole_image_and_falls_back():
    cam = camera_ring(1)[0]
    c = np.array([0.52, 0.04, R])
    img = render(cam, Scene(table=TABLE, balls=(RenderBall(c, R),)), 2.0, 4)
    mask = table_mask(cam, TABLE.corners, 3)
    rr = apparent_radius_range(cam, R, TABLE.corners + [0, 0, R])
    whole = detect_ball_circle(img, mask, rr)
    true_px = cam.project(c)[0]
    windowed = detect_ball_circle(img, mask, rr, expected_center_px=true_px,
                                  search_half_width_px=80)
    np.testing.assert_allclose(windowed.center_px, whole.center_px, atol=0.02)
    wrong = detect_ball_circle(img, mask, rr, expected_center_px=true_px + [250, 0],
                               search_half_width_px=60)  # window misses: whole image
    np.testing.assert_allclose(wrong.center_px, whole.center_px, atol=0.02)


def test_ball_touched_by_end_effector_sphere_is_still_located():
    """The end-effector sphere (r = 1.95 cm, grey) touching the ball from above hides part
    of its outline in some views; the trimmed outline fit keeps the fused error <= 1 mm."""
    cams = camera_ring(3)
    tracker = BallTracker(cams, BallTrackerOptions(radius=R), TABLE.corners)
    rng = np.random.default_rng(0)
    for trial in range(3):
        c = np.array([rng.uniform(0.45, 0.65), rng.uniform(-0.1, 0.1), R])
        d = rng.normal(size=3)
        d[2] = abs(d[2]) + 0.3
        d /= np.linalg.norm(d)
        ee = RenderBall(c + d * (R + 0.0195), 0.0195, (150.0, 150.0, 150.0))
        scene = Scene(table=TABLE, balls=(RenderBall(c, R), ee))
        tracker.reset()
        s = tracker.step([render(cam, scene, 2.0, trial) for cam in cams], 0.0)
        assert s.valid and s.n_measurements >= 2
        assert np.linalg.norm(s.position - c) <= 1e-3


def test_extrinsic_calibration_with_lens_distortion():
    dist = np.array([-0.15, 0.06, 0.0005, -0.0005, -0.01])
    intr = CameraIntrinsics(CameraIntrinsics.from_fov(640, 480, 60).K, 640, 480, dist)
    cam = camera_ring(3, intrinsics=intr)[1]
    T1 = make_transform(rotation_from_rotvec([0, 0, 0.7]), [0.6, -0.05, 0.0])
    T2 = make_transform(np.eye(3), [0.47, 0.1, 0.0])
    img = render(cam, Scene(table=TABLE, tags=(RenderTag(3, 0.08, T1), RenderTag(7, 0.08, T2))),
                 1.0, 0)
    T, rms = calibrate_extrinsics(cam, img, {3: T1, 7: T2}, 0.08)
    assert rms < 0.2
    assert np.linalg.norm(invert_transform(T)[:3, 3] - cam.position) <= 1.5e-3
    assert np.degrees(rotation_angle_between(T[:3, :3],
                                             cam.transform_world_to_camera[:3, :3])) <= 0.15
    from estimators import CalibrationError

    with pytest.raises(CalibrationError, match="none of the reference tags") as e:
        calibrate_extrinsics(cam, img, {42: T1}, 0.08)
    assert sorted(e.value.detected_ids) == [3, 7]
