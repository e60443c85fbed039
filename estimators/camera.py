"""Pinhole camera model: intrinsics K (+ optional OpenCV distortion) and extrinsics.

Conventions (OpenCV): the camera frame has x right, y down, z forward (optical axis). A world
point p_w maps to the camera frame by ``transform_world_to_camera`` (4x4), p_c = R p_w + t, and
to pixels by the pinhole model u ~ K [x/z, y/z, 1] after the lens distortion of the normalised
coordinates (x/z, y/z). See docs/estimators.md §1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ._validation import as_float_array
from .errors import EstimatorTypeError, EstimatorValueError
from .transforms import invert_transform

__all__ = ["CameraIntrinsics", "Camera", "load_cameras", "save_cameras"]

# Keys of ROS camera_info / OpenCV calibration YAML files that carry nothing we need.
_IGNORED_KEYS = ("camera_name", "distortion_model", "rectification_matrix", "projection_matrix")


def _matrix_from_yaml(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A matrix written either as nested lists or as {rows, cols, data} (ROS / OpenCV)."""
    if isinstance(value, Mapping):
        if "data" not in value:
            raise EstimatorValueError(f"{name} must be a list or a mapping with 'data'")
        arr = np.asarray(value["data"], dtype=float)
        if "rows" in value and "cols" in value:
            arr = arr.reshape(int(value["rows"]), int(value["cols"]))
    else:
        arr = np.asarray(value, dtype=float)
    if len(shape) == 1:
        arr = arr.reshape(-1)
    return as_float_array(name, arr, shape if shape != (None,) else None)


@dataclass(frozen=True)
class CameraIntrinsics:
    """Intrinsic calibration of one camera.

    Attributes:
        K: (3, 3) camera matrix [[fx, s, cx], [0, fy, cy], [0, 0, 1]] in [px].
        width: image width in [px].
        height: image height in [px].
        distortion: OpenCV distortion coefficients (k1, k2, p1, p2[, k3[, k4, k5, k6]]), or
            None / all zeros for an ideal pinhole.
    """

    K: np.ndarray
    width: int
    height: int
    distortion: np.ndarray | None = None

    def __post_init__(self) -> None:
        K = as_float_array("K", self.K, (3, 3))
        if not (K[0, 0] > 0 and K[1, 1] > 0):
            raise EstimatorValueError(f"K must have positive focal lengths fx, fy, got "
                                      f"{K[0, 0]}, {K[1, 1]}")
        if not (np.allclose(K[2], [0.0, 0.0, 1.0]) and K[1, 0] == 0):
            raise EstimatorValueError("K must be upper triangular with last row [0, 0, 1]")
        for name in ("width", "height"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise EstimatorTypeError(f"{name} must be an int, got {type(v).__name__}")
            if v <= 0:
                raise EstimatorValueError(f"{name} must be positive, got {v}")
        K.setflags(write=False)
        object.__setattr__(self, "K", K)
        object.__setattr__(self, "width", int(self.width))
        object.__setattr__(self, "height", int(self.height))
        dist = self.distortion
        if dist is not None:
            dist = as_float_array("distortion", dist).reshape(-1)
            if dist.size not in (4, 5, 8):
                raise EstimatorValueError(f"distortion must have 4, 5 or 8 coefficients, got "
                                          f"{dist.size}")
            if not np.any(dist):
                dist = None
            else:
                dist.setflags(write=False)
        object.__setattr__(self, "distortion", dist)

    @property
    def focal_length(self) -> float:
        """Mean focal length (fx + fy) / 2 in [px]."""
        return 0.5 * float(self.K[0, 0] + self.K[1, 1])

    @property
    def K_inv(self) -> np.ndarray:
        """Inverse of K."""
        return np.linalg.inv(self.K)

    @classmethod
    def from_fov(cls, width: int, height: int, horizontal_fov_deg: float) -> "CameraIntrinsics":
        """Square pixels, principal point at the image centre, the given horizontal field of
        view [deg]."""
        f = 0.5 * width / np.tan(np.radians(horizontal_fov_deg) / 2)
        K = np.array([[f, 0.0, (width - 1) / 2], [0.0, f, (height - 1) / 2], [0.0, 0.0, 1.0]])
        return cls(K, width, height)

    # -------------------------------------------------------------- normalised <-> pixels
    def _distort(self, xy: np.ndarray) -> np.ndarray:
        """OpenCV's distortion model (plumb_bob / rational) on normalised coordinates (N, 2)."""
        k = np.zeros(8)
        k[: self.distortion.size] = self.distortion
        k1, k2, p1, p2, k3, k4, k5, k6 = k
        x, y = xy[:, 0], xy[:, 1]
        r2 = x * x + y * y
        radial = (1 + r2 * (k1 + r2 * (k2 + r2 * k3))) / (1 + r2 * (k4 + r2 * (k5 + r2 * k6)))
        xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
        yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
        return np.column_stack([xd, yd])

    def distort_normalized(self, xy: np.ndarray) -> np.ndarray:
        """Pixels (N, 2) of undistorted normalised coordinates (N, 2) (x/z, y/z)."""
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        if self.distortion is not None:
            xy = self._distort(xy)
        return xy @ self.K[:2, :2].T + self.K[:2, 2]

    def undistort_pixels(self, pixels: np.ndarray) -> np.ndarray:
        """Undistorted normalised coordinates (N, 2) of pixels (N, 2) (inverse of the above).

        With distortion: Gauss-Newton on the distortion model (numeric 2x2 Jacobians), from
        the distorted coordinates; converges to ~1e-12 for the distortions of real lenses
        inside the image.
        """
        px = np.asarray(pixels, dtype=float).reshape(-1, 2)
        xd = (px - self.K[:2, 2]) @ np.linalg.inv(self.K[:2, :2]).T
        if self.distortion is None:
            return xd
        x = xd.copy()
        h = 1e-7
        for _ in range(30):
            f = self._distort(x) - xd
            if np.max(np.abs(f)) < 1e-13:
                break
            jx = (self._distort(x + [h, 0.0]) - self._distort(x)) / h
            jy = (self._distort(x + [0.0, h]) - self._distort(x)) / h
            det = jx[:, 0] * jy[:, 1] - jy[:, 0] * jx[:, 1]
            dx = (jy[:, 1] * f[:, 0] - jy[:, 0] * f[:, 1]) / det
            dy = (-jx[:, 1] * f[:, 0] + jx[:, 0] * f[:, 1]) / det
            x -= np.column_stack([dx, dy])
        return x

    def to_dict(self) -> dict[str, Any]:
        """YAML-ready mapping (see :func:`load_cameras`)."""
        d: dict[str, Any] = {"image_width": self.width, "image_height": self.height,
                             "camera_matrix": self.K.tolist()}
        if self.distortion is not None:
            d["distortion_coefficients"] = self.distortion.tolist()
        return d


@dataclass(frozen=True)
class Camera:
    """A calibrated camera: intrinsics and the extrinsic transform_world_to_camera.

    Attributes:
        intrinsics: :class:`CameraIntrinsics`.
        transform_world_to_camera: (4, 4) rigid transform, p_camera = R p_world + t.
        name: a label (used in logs, status messages and YAML files).
    """

    intrinsics: CameraIntrinsics
    transform_world_to_camera: np.ndarray = field(default_factory=lambda: np.eye(4))
    name: str = "camera"

    def __post_init__(self) -> None:
        if not isinstance(self.intrinsics, CameraIntrinsics):
            raise EstimatorTypeError(f"intrinsics must be a CameraIntrinsics, got "
                                     f"{type(self.intrinsics).__name__}")
        T = as_float_array("transform_world_to_camera", self.transform_world_to_camera, (4, 4))
        R = T[:3, :3]
        if not (np.allclose(R.T @ R, np.eye(3), atol=1e-6) and np.linalg.det(R) > 0
                and np.allclose(T[3], [0, 0, 0, 1])):
            raise EstimatorValueError("transform_world_to_camera must be a rigid transform "
                                      "(orthonormal rotation, det +1, last row [0, 0, 0, 1])")
        T.setflags(write=False)
        object.__setattr__(self, "transform_world_to_camera", T)

    # ----------------------------------------------------------------- convenience
    @property
    def K(self) -> np.ndarray:
        """(3, 3) camera matrix."""
        return self.intrinsics.K

    @property
    def width(self) -> int:
        """Image width in [px]."""
        return self.intrinsics.width

    @property
    def height(self) -> int:
        """Image height in [px]."""
        return self.intrinsics.height

    @property
    def transform_camera_to_world(self) -> np.ndarray:
        """(4, 4) inverse of transform_world_to_camera."""
        return invert_transform(self.transform_world_to_camera)

    @property
    def position(self) -> np.ndarray:
        """Optical centre in world coordinates [m], (3,)."""
        R, t = self.transform_world_to_camera[:3, :3], self.transform_world_to_camera[:3, 3]
        return -R.T @ t

    def with_extrinsics(self, transform_world_to_camera: np.ndarray) -> "Camera":
        """A copy with other extrinsics (e.g. after :func:`estimators.calibrate_extrinsics`)."""
        return Camera(self.intrinsics, transform_world_to_camera, self.name)

    # ---------------------------------------------------------------- projection
    def points_to_camera(self, points_world: np.ndarray) -> np.ndarray:
        """Camera-frame coordinates (N, 3) of world points (N, 3) or (3,)."""
        p = as_float_array("points_world", points_world)
        if not (p.ndim in (1, 2) and p.shape[-1] == 3):
            raise EstimatorValueError(f"points_world must have shape (N, 3) or (3,), got {p.shape}")
        p2 = p.reshape(-1, 3)
        T = self.transform_world_to_camera
        return p2 @ T[:3, :3].T + T[:3, 3]

    def project(self, points_world: np.ndarray) -> np.ndarray:
        """Pixel coordinates (N, 2) of world points (N, 3) (or (3,) -> (1, 2)).

        Points behind the camera (z <= 0) give NaN pixels.
        """
        pc = self.points_to_camera(points_world)
        z = pc[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            xy = pc[:, :2] / z[:, None]
        px = self.intrinsics.distort_normalized(np.where(z[:, None] > 0, xy, 0.0))
        px[z <= 0] = np.nan
        return px

    def pixels_to_rays(self, pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Back-projection: the viewing rays of pixels (N, 2) (or (2,)).

        Returns:
            origin: (3,) the optical centre in world coordinates [m].
            directions: (N, 3) unit directions in world coordinates.
        """
        px = as_float_array("pixels", pixels)
        if px.shape[-1] != 2 or px.ndim > 2:
            raise EstimatorValueError(f"pixels must have shape (N, 2) or (2,), got {px.shape}")
        xy = self.intrinsics.undistort_pixels(px.reshape(-1, 2))
        d_cam = np.column_stack([xy, np.ones(len(xy))])
        d_cam /= np.linalg.norm(d_cam, axis=1, keepdims=True)
        R = self.transform_world_to_camera[:3, :3]
        return self.position, d_cam @ R  # R^T d for each row

    def back_project(self, pixels: np.ndarray, depth: np.ndarray) -> np.ndarray:
        """World points (N, 3) at camera-frame depth z (N,) or scalar along the pixels' rays."""
        px = as_float_array("pixels", pixels).reshape(-1, 2)
        z = np.broadcast_to(as_float_array("depth", depth), (len(px),))
        xy = self.intrinsics.undistort_pixels(px)
        pc = np.column_stack([xy * z[:, None], z])
        Tinv = self.transform_camera_to_world
        return pc @ Tinv[:3, :3].T + Tinv[:3, 3]

    def intersect_plane(self, pixels: np.ndarray, normal: np.ndarray = (0.0, 0.0, 1.0),
                        offset: float = 0.0) -> np.ndarray:
        """World points (N, 3) where the pixels' rays meet the plane n·p = offset (NaN if the
        ray is parallel to the plane or meets it behind the camera)."""
        n = as_float_array("normal", normal, (3,))
        o, d = self.pixels_to_rays(pixels)
        denom = d @ n
        with np.errstate(divide="ignore", invalid="ignore"):
            s = (offset - n @ o) / denom
        s = np.where((np.abs(denom) > 1e-12) & (s > 0), s, np.nan)
        return o + s[:, None] * d

    # ----------------------------------------------------------------- YAML
    def to_dict(self) -> dict[str, Any]:
        """YAML-ready mapping (see :func:`load_cameras`)."""
        d = self.intrinsics.to_dict()
        d["transform_world_to_camera"] = self.transform_world_to_camera.tolist()
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str = "camera") -> "Camera":
        """A camera from a mapping (the per-camera entry of :func:`load_cameras`'s file)."""
        if not isinstance(data, Mapping):
            raise EstimatorTypeError(f"camera {name!r} must be a mapping, got "
                                     f"{type(data).__name__}")
        known = {"image_width", "image_height", "camera_matrix", "distortion_coefficients",
                 "transform_world_to_camera", "transform_camera_to_world", *_IGNORED_KEYS}
        unknown = sorted(set(data) - known)
        if unknown:
            raise EstimatorValueError(f"camera {name!r}: unknown key(s) {unknown}; valid keys: "
                                      f"{sorted(known)}")
        missing = [k for k in ("image_width", "image_height", "camera_matrix") if k not in data]
        if missing:
            raise EstimatorValueError(f"camera {name!r}: missing key(s) {missing}")
        model = data.get("distortion_model", "plumb_bob")
        if model not in ("plumb_bob", "rational_polynomial"):
            raise EstimatorValueError(f"camera {name!r}: distortion_model must be 'plumb_bob' or "
                                      f"'rational_polynomial', got {model!r}")
        K = _matrix_from_yaml(f"{name}.camera_matrix", data["camera_matrix"], (3, 3))
        dist = data.get("distortion_coefficients")
        if dist is not None:
            dist = _matrix_from_yaml(f"{name}.distortion_coefficients", dist, (None,))
        intr = CameraIntrinsics(K, data["image_width"], data["image_height"], dist)
        if "transform_world_to_camera" in data and "transform_camera_to_world" in data:
            raise EstimatorValueError(f"camera {name!r}: give transform_world_to_camera or "
                                      "transform_camera_to_world, not both")
        if "transform_world_to_camera" in data:
            T = _matrix_from_yaml(f"{name}.transform_world_to_camera",
                                  data["transform_world_to_camera"], (4, 4))
        elif "transform_camera_to_world" in data:
            T = invert_transform(_matrix_from_yaml(f"{name}.transform_camera_to_world",
                                                   data["transform_camera_to_world"], (4, 4)))
        else:
            T = np.eye(4)
        return cls(intr, T, name)


def load_cameras(path: str | Path) -> dict[str, Camera]:
    """Cameras from a YAML file.

    Two layouts are accepted: a single camera (the keys below at top level; named after the
    file) or several under ``cameras: {NAME: {...}}``. Per camera::

        image_width: 640
        image_height: 480
        camera_matrix: [[fx, 0, cx], [0, fy, cy], [0, 0, 1]]    # or {rows: 3, cols: 3, data: [...]}
        distortion_coefficients: [k1, k2, p1, p2, k3]          # optional (same two forms)
        transform_world_to_camera: [[...4x4...]]               # or transform_camera_to_world

    ROS ``camera_info`` calibration files load as they are (their ``camera_name``,
    ``distortion_model``, ``rectification_matrix`` and ``projection_matrix`` are ignored);
    extrinsics default to identity then. Unknown keys raise ValueError.
    """
    from ._validation import load_yaml

    path = Path(path)
    data = load_yaml(path) or {}
    if not isinstance(data, Mapping):
        raise EstimatorValueError(f"{path}: expected a mapping at top level")
    if "cameras" in data:
        if set(data) != {"cameras"} or not isinstance(data["cameras"], Mapping):
            raise EstimatorValueError(f"{path}: a multi-camera file holds only "
                                      "'cameras: {NAME: {...}}'")
        return {str(k): Camera.from_dict(v, str(k)) for k, v in data["cameras"].items()}
    name = str(data.get("camera_name", path.stem))
    return {name: Camera.from_dict(data, name)}


def save_cameras(path: str | Path, cameras: Mapping[str, Camera] | list[Camera]) -> None:
    """Write cameras in the multi-camera layout of :func:`load_cameras`."""
    import yaml

    if not isinstance(cameras, Mapping):
        cameras = {c.name: c for c in cameras}
    Path(path).write_text(yaml.safe_dump({"cameras": {k: c.to_dict()
                                                      for k, c in cameras.items()}},
                                         sort_keys=False))
