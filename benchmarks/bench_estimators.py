"""Benchmark the camera estimators on images rendered from known ground truth (640x480).

Ball: for 1, 2 and 3 cameras (``estimators.synthetic.camera_ring``: 0.6 m from the table
centre, 0.45 m up, 60° field of view; the ball appears ~19-28 px in radius) and pixel-noise
levels σ ∈ {0, 2, 5} grey levels, seeded random ball poses on the table; error of the fused
single-frame position (``BallTracker.step`` after ``reset``). Side by side in the same run,
the *Hough-only* peer: the centre of OpenCV's Hough circle (no sub-pixel refinement, no
perspective correction), back-projected and intersected with the plane z = r. Depth
methods: "plane" (default) and "size" (depth from apparent size).

Tags: AprilTag 36h11 (8 cm) pose error and extrinsic calibration error from two known tags,
with our edge-line corner refinement and, as the peer, OpenCV's corner refinement alone.

Time per frame: detection + 3-D placement per camera, and a full 3-camera tracker step (not
counting rendering).

Writes ``benchmarks/results/bench_estimators.json`` and the ``bench_estimators`` section of
``docs/BENCHMARKS.md`` (only that section is replaced).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import _report  # noqa: E402
import cv2  # noqa: E402

from estimators import (BallTracker, BallTrackerOptions, TagDetector,  # noqa: E402
                        apparent_radius_range, calibrate_extrinsics, estimate_tag_pose,
                        make_transform, table_mask)
from estimators.synthetic import (RenderBall, RenderTag, Scene, Table,  # noqa: E402
                                  camera_ring, render)
from estimators.transforms import (invert_transform, rotation_angle_between,  # noqa: E402
                                   rotation_from_rotvec)

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_estimators.json"
MD_PATH = ROOT / "docs" / "BENCHMARKS.md"
START, END = _report.markers("bench_estimators")
R = 0.03
TABLE = Table()
NOISES = (0.0, 2.0, 5.0)


def hough_only(cam, img, mask, rr):
    """Peer: Hough circle centre -> ray -> plane z = r (what a minimal pipeline does)."""
    ch = np.clip(img.astype(np.float32) @ np.array([-0.5, -0.5, 1.0], np.float32), 0, 255)
    ch = np.where(mask > 0, ch, np.median(ch[mask > 0])).astype(np.uint8)
    ch = cv2.GaussianBlur(ch, (5, 5), 1.0)
    c = cv2.HoughCircles(ch, cv2.HOUGH_GRADIENT_ALT, dp=1.5, minDist=8, param1=60, param2=0.6,
                         minRadius=int(rr[0]), maxRadius=int(np.ceil(rr[1])))
    if c is None:
        return None
    return cam.intersect_plane(c.reshape(-1, 3)[0, :2], offset=R)[0]


def stats(e) -> dict:
    e = np.asarray(e, float) * 1e3
    if e.size == 0:
        return {"n": 0}
    return {"n": int(e.size), "median_mm": float(np.median(e)),
            "p90_mm": float(np.percentile(e, 90)),
            "max_mm": float(e.max()), "mean_mm": float(e.mean())}


def bench_ball(n_poses: int, seed: int, quiet: bool = False) -> dict:
    cams = camera_ring(3)
    rng = np.random.default_rng(seed)
    poses = [np.array([rng.uniform(0.42, 0.68), rng.uniform(-0.13, 0.13), R])
             for _ in range(n_poses)]
    masks = [table_mask(c, TABLE.corners, 3) for c in cams]
    rrs = [apparent_radius_range(c, R, TABLE.corners + [0, 0, R]) for c in cams]
    trackers = {(k, m): BallTracker(cams[:k], BallTrackerOptions(radius=R, depth_method=m),
                                    TABLE.corners)
                for k in (1, 2, 3) for m in ("plane", "size")}
    out = {}
    t_cam, t_step3 = [], []
    bar = _report.progress(len(NOISES) * n_poses + 1, "ball", quiet, "parts")
    for noise in NOISES:
        _report.show(bar, f"ball, noise σ={noise:g}")
        errs = {key: [] for key in trackers}
        miss = {key: 0 for key in trackers}
        peer = []
        for i, c in enumerate(poses):
            scene = Scene(table=TABLE, balls=(RenderBall(c, R),))
            imgs = [render(cam, scene, noise, seed * 1000 + i) for cam in cams]
            for key, tr in trackers.items():
                tr.reset()
                t0 = time.perf_counter()
                s = tr.step(imgs[:key[0]], 0.0)
                dt = time.perf_counter() - t0
                if key == (3, "plane"):
                    t_step3.append(dt)
                    t_cam += [o.time for o in tr.last_observations]
                if s.valid:
                    errs[key].append(np.linalg.norm(s.position - c))
                else:
                    miss[key] += 1
            for cam, img, m, rr in zip(cams, imgs, masks, rrs):
                p = hough_only(cam, img, m, rr)
                if p is not None:
                    peer.append(np.linalg.norm(p - c))
            bar.update(bar.done + 1)
        out[f"noise_{noise:g}"] = {
            "ours": {f"{k}cam_{m}": {**stats(errs[(k, m)]), "missed": miss[(k, m)]}
                     for (k, m) in trackers},
            "hough_only_per_camera": stats(peer),
        }
    _report.show(bar, "ball: tracking time (a rolling ball, 3 cameras)")
    out["tracking"] = bench_tracking_time(cams, seed)
    bar.update(bar.done + 1)
    out["time_per_camera_ms"] = {"median": 1e3 * float(np.median(t_cam)),
                                 "p90": 1e3 * float(np.percentile(t_cam, 90))}
    out["time_tracker_step_3cam_ms"] = {"median": 1e3 * float(np.median(t_step3)),
                                        "p90": 1e3 * float(np.percentile(t_step3, 90))}
    out["n_poses"] = n_poses
    return out


def bench_tracking_time(cams, seed: int, n_frames: int = 40) -> dict:
    """Per-step wall and CPU time of the 3-camera tracker following a rolling ball at 80 Hz,
    with the search window around the prediction (default) and on whole images."""
    v = np.array([0.2, 0.1, 0.0])
    frames = []
    for k in range(n_frames):
        c = np.array([0.45, -0.05, R]) + v * k / 80
        frames.append([render(cam, Scene(table=TABLE, balls=(RenderBall(c, R),)), 2.0, k)
                       for cam in cams])
    out = {}
    for label, window in (("window", 0.0), ("whole_image", None)):
        tr = BallTracker(cams, BallTrackerOptions(radius=R, search_window_px=window),
                         TABLE.corners)
        wall, cpu, valid = [], [], 0
        for k, imgs in enumerate(frames):
            t0, c0 = time.perf_counter(), time.process_time()
            s = tr.step(imgs, k / 80)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            valid += s.valid
        out[label] = {"wall_ms_median": 1e3 * float(np.median(wall[1:])),
                      "cpu_ms_median": 1e3 * float(np.median(cpu[1:])),
                      "valid_frames": valid, "frames": n_frames}
    return out


def bench_tags(n_views: int, seed: int, quiet: bool = False) -> dict:
    rng = np.random.default_rng(seed)
    res = {}
    bar = _report.progress(2 * n_views, "tags", quiet, "views")
    for label, det in (("ours_edge_refined", TagDetector()),
                       ("opencv_subpix_only", TagDetector(edge_refinement=False))):
        _report.show(bar, f"tags ({label})")
        done = bar.done
        te, re_, ce, cre, miss = [], [], [], [], 0
        rng = np.random.default_rng(seed)
        for i in range(n_views):
            bar.update(done + i)  # at the top: a missed view leaves the iteration early
            cam = camera_ring(1, start_angle_deg=rng.uniform(0, 360),
                              distance=rng.uniform(0.5, 0.7), height=rng.uniform(0.35, 0.55))[0]
            T1 = make_transform(rotation_from_rotvec([0, 0, rng.uniform(-np.pi, np.pi)]),
                                [rng.uniform(0.57, 0.65), rng.uniform(-0.1, 0.0), 0.0])
            T2 = make_transform(np.eye(3), [0.47, 0.1, 0.0])
            img = render(cam, Scene(table=TABLE, tags=(RenderTag(3, 0.08, T1),
                                                        RenderTag(7, 0.08, T2))), 1.0, i)
            d = {x.tag_id: x for x in det.detect(img, cam)}
            if 3 not in d or 7 not in d:
                miss += 1
                continue
            pose = estimate_tag_pose(cam, d[3], 0.08)
            truth = cam.transform_world_to_camera @ T1
            te.append(np.linalg.norm(pose.transform_tag_to_camera[:3, 3] - truth[:3, 3]))
            re_.append(np.degrees(rotation_angle_between(pose.transform_tag_to_camera[:3, :3],
                                                         truth[:3, :3])))
            T, _ = calibrate_extrinsics(cam, img, {3: T1, 7: T2}, 0.08, det)
            ce.append(np.linalg.norm(invert_transform(T)[:3, 3] - cam.position))
            cre.append(np.degrees(rotation_angle_between(T[:3, :3],
                                                         cam.transform_world_to_camera[:3, :3])))
        bar.update(done + n_views)
        res[label] = {"tag_translation": stats(te),
                      "tag_rotation_deg": {"median": float(np.median(re_)),
                                           "max": float(np.max(re_))},
                      "calibration_position": stats(ce),
                      "calibration_rotation_deg": {"median": float(np.median(cre)),
                                                   "max": float(np.max(cre))},
                      "missed_views": miss}
    res["n_views"] = n_views
    return res


def machine_info() -> dict:
    """Where this benchmark ran (see benchmarks/_report.py)."""
    return _report.machine_info(opencv=cv2.__version__)


def _row(name, s):
    if s.get("n", 0) == 0:
        return f"| {name} | 0 | – | – | – |"
    return (f"| {name} | {s['n']} | {s['median_mm']:.3f} | {s['p90_mm']:.3f} | "
            f"{s['max_mm']:.3f} |")


def markdown(r: dict) -> str:
    m = r["machine"]
    b, t = r["ball"], r["tags"]
    lines = [START, "## Camera estimators (`benchmarks/bench_estimators.py`)", "",
             f"Run {r['date']} ({r['mode']} mode) on {m['processor']} ({m['cpu_count']} CPUs, "
             f"load {_report.load_average(m)[0]:.1f}), Python {m['python']}, numpy {m['numpy']}, "
             f"OpenCV {m['opencv']}.", "",
             f"Images rendered by `estimators.synthetic` at 640x480 (60° FOV, cameras 0.6 m "
             f"from the table centre and 0.45 m up, ball radius 3 cm ≈ 19-28 px), "
             f"{b['n_poses']} seeded ball poses per noise level. Errors are |estimate - truth| "
             "of the single-frame fused position (no filtering). *Hough-only* is the in-run "
             "peer: the Hough circle centre back-projected onto the plane z = r, per camera.",
             ""]
    for noise in NOISES:
        d = b[f"noise_{noise:g}"]
        lines += [f"### Ball position, pixel noise σ = {noise:g} grey levels", "",
                  "| method | n | median [mm] | p90 [mm] | max [mm] |", "|---|---:|---:|---:|---:|"]
        for k in (1, 2, 3):
            for meth in ("plane", "size"):
                s = d["ours"][f"{k}cam_{meth}"]
                miss = f" (missed {s['missed']})" if s.get("missed") else ""
                lines.append(_row(f"ours, {k} camera{'s' if k > 1 else ''}, {meth}{miss}", s))
        lines.append(_row("Hough-only peer, per camera", d["hough_only_per_camera"]))
        lines.append("")
    lines += [f"Time per camera (detection + 3-D): median "
              f"{b['time_per_camera_ms']['median']:.1f} ms (p90 "
              f"{b['time_per_camera_ms']['p90']:.1f}); full 3-camera tracker step: median "
              f"{b['time_tracker_step_3cam_ms']['median']:.1f} ms (p90 "
              f"{b['time_tracker_step_3cam_ms']['p90']:.1f}), i.e. "
              f"{1e3 / b['time_tracker_step_3cam_ms']['median']:.0f} Hz, for acquisition "
              "(no track: whole images).", "",
              "Tracking a ball rolling at 0.22 m/s (3 cameras, 80 Hz, σ = 2), median per step:",
              "", "| search | wall [ms] | CPU [ms] | rate from CPU time [Hz] | valid frames |",
              "|---|---:|---:|---:|---:|"]
    for label, name in (("window", "window around the prediction (default)"),
                        ("whole_image", "whole image every frame")):
        s = b["tracking"][label]
        lines.append(f"| {name} | {s['wall_ms_median']:.1f} | {s['cpu_ms_median']:.1f} | "
                     f"{1e3 / max(s['cpu_ms_median'], 1e-9):.0f} | "
                     f"{s['valid_frames']}/{s['frames']} |")
    lines += ["", "Wall time includes waiting for the CPU on this shared machine (see the load "
              "above); CPU time is what one core spends. The paper's pipeline ran at 80-90 Hz.",
              "",
              f"### AprilTag 36h11 (8 cm), {t['n_views']} random views, σ = 1", "",
              "| corners | tag translation median / max [mm] | tag rotation median / max [deg] | "
              "calibrated camera position median / max [mm] | rotation median / max [deg] |",
              "|---|---:|---:|---:|---:|"]
    for label, name in (("ours_edge_refined", "ours: edge lines"),
                        ("opencv_subpix_only", "peer: OpenCV CORNER_REFINE_SUBPIX")):
        s = t[label]
        lines.append(f"| {name} | {s['tag_translation']['median_mm']:.3f} / "
                     f"{s['tag_translation']['max_mm']:.3f} | "
                     f"{s['tag_rotation_deg']['median']:.3f} / "
                     f"{s['tag_rotation_deg']['max']:.3f} | "
                     f"{s['calibration_position']['median_mm']:.3f} / "
                     f"{s['calibration_position']['max_mm']:.3f} | "
                     f"{s['calibration_rotation_deg']['median']:.3f} / "
                     f"{s['calibration_rotation_deg']['max']:.3f} |")
    lines += ["", "Caveat: rendered images model anti-aliasing, 8-bit quantisation and Gaussian "
              "noise, not motion blur, shadows, specular highlights, rolling shutter or "
              "calibration error of the intrinsics; real-camera errors will be larger.", END]
    return "\n".join(lines)


def write_markdown(section: str) -> None:
    """Insert or replace this benchmark's section of docs/BENCHMARKS.md."""
    _report.replace_section(section, "bench_estimators")


def main(argv: list[str] | None = None) -> int:
    parser = _report.argument_parser(__doc__, "few poses (a smoke run)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help="print only")
    a = parser.parse_args(argv)
    n_poses, n_views = (6, 6) if a.quick else (25, 20)
    cv2.setNumThreads(1)
    result = {"date": _report.utc_timestamp(),
              "mode": "quick" if a.quick else "full", "machine": machine_info(),
              "ball": bench_ball(n_poses, a.seed, a.quiet),
              "tags": bench_tags(n_views, a.seed, a.quiet)}
    section = markdown(result)
    if not a.no_write:
        _report.publish(result, section, "bench_estimators", JSON_PATH)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
