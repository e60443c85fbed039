"""Multi-camera ball tracker (seed 003 §VII-C): images -> per-camera 3-D positions -> state.

Per camera: circle detection on the masked table region (:mod:`estimators.circle_detection`),
then the ball centre from the outline, intrinsics, extrinsics and the known radius
(:mod:`estimators.ball_geometry`). Across cameras: outlier rejection, averaging, filtering and
rolling kinematics (:class:`estimators.BallFilter`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ._validation import as_float_array, check_image
from .ball_filter import BallFilter
from .ball_geometry import apparent_radius_range, ball_center_from_outline, table_mask
from .ball_state import BallState
from .camera import Camera, load_cameras
from .circle_detection import CircleDetection, detect_ball_circle
from .errors import EstimatorTypeError, EstimatorValueError
from .options import BallTrackerOptions

__all__ = ["BallTracker", "CameraObservation"]


@dataclass(frozen=True)
class CameraObservation:
    """What one camera contributed to a tracker step.

    Attributes:
        camera: camera name.
        position: (3,) world position of the ball centre [m], or None (no detection).
        detection: the circle detection (None when given a position or nothing was found).
        accepted: False if the fusion rejected it (outlier or outside the gate).
        time: wall time spent on this camera's image [s].
    """

    camera: str
    position: np.ndarray | None
    detection: CircleDetection | None
    accepted: bool
    time: float


class BallTracker:
    """Ball state from synchronised images of several calibrated cameras.

    Args:
        cameras: the calibrated cameras (names must be unique).
        options: :class:`BallTrackerOptions`.
        table_corners: (K, 3) world polygon of the region the ball can be in (e.g.
            ``Table.corners``); gives each camera's image mask and apparent-radius range.
            None: the whole image, radius range from ``radius_px_range``.
        masks: optional per-camera (H, W) masks overriding the table-derived ones.
        mask_margin_px: erosion of the table-derived masks [px] (keeps the table border out).
        radius_px_range: apparent-radius range used when ``table_corners`` is None.

    ``step(measurement, t)`` takes one item per camera, in camera order: a uint8 image, a
    :class:`CircleDetection`, a (3,) world position, or None (camera has nothing).
    """

    def __init__(self, cameras: Sequence[Camera], options: BallTrackerOptions | None = None,
                 table_corners: np.ndarray | None = None,
                 masks: Sequence[np.ndarray | None] | None = None, mask_margin_px: float = 3.0,
                 radius_px_range: tuple[float, float] = (4.0, 150.0)):
        cameras = list(cameras)
        if not cameras or not all(isinstance(c, Camera) for c in cameras):
            raise EstimatorTypeError("cameras must be a non-empty sequence of estimators.Camera")
        names = [c.name for c in cameras]
        if len(set(names)) != len(names):
            raise EstimatorValueError(f"camera names must be unique, got {names}")
        self.cameras = cameras
        self.options = options if options is not None else BallTrackerOptions()
        self.filter = BallFilter(self.options)
        det_opts = self.options.detection
        if det_opts.limb_model is None:
            det_opts = dataclasses.replace(
                det_opts, limb_model="flat" if self.options.depth_method == "plane" else "sqrt")
        self.detection_options = det_opts
        r = self.options.radius
        self.masks: list[np.ndarray | None] = []
        self.radius_px_ranges: list[tuple[float, float]] = []
        for i, cam in enumerate(cameras):
            m = masks[i] if masks is not None else None
            if m is None and table_corners is not None:
                m = table_mask(cam, table_corners, mask_margin_px)
            if m is not None and np.asarray(m).shape != (cam.height, cam.width):
                raise EstimatorValueError(f"mask of camera {cam.name!r} must have shape "
                                          f"{(cam.height, cam.width)}")
            self.masks.append(m)
            if table_corners is not None:
                n = np.asarray(self.options.table_normal, float)
                raised = np.asarray(table_corners, float) + r * n / np.linalg.norm(n)
                self.radius_px_ranges.append(apparent_radius_range(cam, r, raised))
            else:
                self.radius_px_ranges.append(tuple(float(x) for x in radius_px_range))
        self.last_observations: list[CameraObservation] = []

    @classmethod
    def from_yaml(cls, path: str | Path) -> "BallTracker":
        """A tracker from one YAML rig file::

            cameras: {cam0: {...}, cam1: {...}}     # as in estimators.load_cameras
            # or: cameras_file: cameras.yaml        # relative to this file
            table_corners: [[0.2, -0.35, 0], [0.9, -0.35, 0], [0.9, 0.35, 0], [0.2, 0.35, 0]]
            options: {radius: 0.03, filter: kalman, detection: {min_contrast: 10}}

        Unknown keys raise ValueError.
        """
        from ._validation import load_yaml

        path = Path(path)
        data = load_yaml(path) or {}
        if not isinstance(data, Mapping):
            raise EstimatorValueError(f"{path}: expected a mapping at top level")
        known = {"cameras", "cameras_file", "table_corners", "options", "mask_margin_px"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise EstimatorValueError(f"{path}: unknown key(s) {unknown}; valid keys: "
                                      f"{sorted(known)}")
        if ("cameras" in data) == ("cameras_file" in data):
            raise EstimatorValueError(f"{path}: give exactly one of 'cameras' and 'cameras_file'")
        if "cameras_file" in data:
            cameras = load_cameras(path.parent / data["cameras_file"])
        else:
            if not isinstance(data["cameras"], Mapping):
                raise EstimatorValueError(f"{path}: 'cameras' must map names to cameras")
            cameras = {str(k): Camera.from_dict(v, str(k)) for k, v in data["cameras"].items()}
        options = BallTrackerOptions.from_dict(data.get("options") or {})
        corners = data.get("table_corners")
        if corners is not None:
            corners = as_float_array("table_corners", corners, (None, 3))
        return cls(list(cameras.values()), options, corners,
                   mask_margin_px=float(data.get("mask_margin_px", 3.0)))

    def reset(self) -> None:
        """Forget the track."""
        self.filter.reset()

    def observe(self, camera_index: int, item: Any, t: float | None = None
                ) -> CameraObservation:
        """One camera's contribution: detect (if an image) and place the ball in 3-D."""
        cam = self.cameras[camera_index]
        t0 = time.perf_counter()
        o = self.options
        det = None
        pos = None
        if item is None:
            pass
        elif isinstance(item, CircleDetection):
            det = item
        elif isinstance(item, np.ndarray) and item.dtype == np.uint8:
            check_image(f"measurement[{camera_index}]", item, cam.width, cam.height)
            prior = None
            pred = self.filter.predict_position(t) if t is not None else None
            if pred is not None:
                prior = cam.project(pred)[0]
                if not np.all(np.isfinite(prior)):
                    prior = None
            rr = self.radius_px_ranges[camera_index]
            window = None if o.search_window_px is None or prior is None else \
                (o.search_window_px if o.search_window_px > 0 else 2.5 * rr[1] + 20.0)
            det = detect_ball_circle(item, self.masks[camera_index], rr, self.detection_options,
                                     prior, search_half_width_px=window)
        elif isinstance(item, (np.ndarray, list, tuple)):
            p = np.asarray(item, dtype=float)
            if p.shape != (3,):
                if isinstance(item, np.ndarray) and p.ndim in (2, 3):
                    raise EstimatorTypeError(f"measurement[{camera_index}]: images must have "
                                             f"dtype uint8, got {item.dtype}")
                raise EstimatorValueError(f"measurement[{camera_index}] must be an image, a "
                                          f"CircleDetection, a (3,) position or None; got shape "
                                          f"{p.shape}")
            pos = p
        else:
            raise EstimatorTypeError(f"measurement[{camera_index}] must be an image, a "
                                     f"CircleDetection, a (3,) position or None; got "
                                     f"{type(item).__name__}")
        if det is not None:
            out = ball_center_from_outline(cam, det.edge_points, o.radius, o.depth_method,
                                           o.table_height, o.table_normal)
            pos = None if out is None else out[0]
        return CameraObservation(cam.name, pos, det, pos is not None,
                                 time.perf_counter() - t0)

    def step(self, measurement: Sequence[Any], t: float) -> BallState:
        """Fuse one synchronised set of camera measurements taken at time t [s].

        Args:
            measurement: one item per camera (image, CircleDetection, (3,) position or None).
            t: capture time [s], strictly increasing.

        Returns:
            :class:`BallState`; ``status`` says OK / INITIALIZING / PREDICTED / LOST / ...
        """
        if isinstance(measurement, np.ndarray) and measurement.dtype == np.uint8 and \
                len(self.cameras) == 1 and measurement.ndim in (2, 3):
            measurement = [measurement]
        if not isinstance(measurement, (list, tuple)) or len(measurement) != len(self.cameras):
            raise EstimatorValueError(f"measurement must be a list with one item per camera "
                                      f"({len(self.cameras)}), got "
                                      f"{type(measurement).__name__}"
                                      + (f" of length {len(measurement)}"
                                         if isinstance(measurement, (list, tuple)) else ""))
        obs = [self.observe(i, item, t) for i, item in enumerate(measurement)]
        P = np.array([o.position if o.position is not None else np.full(3, np.nan)
                      for o in obs])
        names = tuple(o.camera for o in obs)
        state = self.filter.step(P, t, names)
        rejected = set(state.rejected)
        self.last_observations = [
            CameraObservation(o.camera, o.position, o.detection,
                              o.position is not None and o.camera not in rejected
                              and state.status.name in ("OK", "INITIALIZING"), o.time)
            for o in obs]
        return state
