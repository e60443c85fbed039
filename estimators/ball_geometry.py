"""3-D ball centre from its outline in one calibrated camera (docs/estimators.md §2, eqs. 3-5).

The rays tangent to a sphere (centre c, radius r) form a right circular cone with its apex at
the optical centre, axis a = c / |c| and half-angle α, sin α = r / |c|. Every unit viewing ray
u_i of an outline point satisfies u_iᵀ a = cos α, which is linear in w = a / cos α:

    U w = 1,   a = w / |w|,   cos α = 1 / |w|                                  (3)

(least squares over the outline points, after undistortion). This is exact under perspective:
the outline is an ellipse whose centre is *not* the image of the ball centre, an offset of
about a pixel off-axis at our scales, which a circle-centre method would turn into millimetres.

Two ways to place the ball along the axis a (camera frame, p = s a):

* ``"size"`` — depth from the apparent size: s = |c| = r / sin α.                  (4)
* ``"plane"`` — the ball rests on the table: intersect the axis ray with the plane
  nᵀ p = h + r (n the table normal, h its offset, both in world coordinates).       (5)

"plane" is the more accurate (the depth of "size" scales the angular error of α by |c|/α,
about 30x the lateral error for a 3 cm ball at 0.7 m) but is wrong when the ball is lifted;
"size" needs no table model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import as_float_array, positive_float
from .camera import Camera
from .errors import EstimatorValueError

__all__ = ["OutlineFit", "fit_sphere_cone", "ball_center_from_outline", "apparent_radius_range",
           "table_mask", "BALL_DEPTH_METHODS"]

#: Accepted ``method`` values of :func:`ball_center_from_outline`.
BALL_DEPTH_METHODS = ("plane", "size")


@dataclass(frozen=True)
class OutlineFit:
    """The viewing cone of a sphere fitted to its outline.

    Attributes:
        axis_camera: (3,) unit cone axis in the camera frame (direction of the ball centre).
        half_angle: cone half-angle α [rad].
        rms_rad: RMS angular residual of the outline rays [rad].
        n_points: outline points used (after trimming).
    """

    axis_camera: np.ndarray
    half_angle: float
    rms_rad: float
    n_points: int


def _solve_cone(U: np.ndarray) -> np.ndarray:
    """Least-squares w of U w = 1 (eq. 3) by QR (U is nearly rank-deficient for small balls:
    all rays point the same way, so normal equations would square its condition number)."""
    Q, Rq = np.linalg.qr(U)
    return np.linalg.solve(Rq, Q.sum(axis=0))


def fit_sphere_cone(camera: Camera, edge_points_px: np.ndarray, trim_sigma: float = 3.0
                    ) -> OutlineFit | None:
    """Fit eq. (3) to (M, 2) outline pixels; None if degenerate (M < 5 or cos α >= 1)."""
    px = as_float_array("edge_points_px", edge_points_px, (None, 2))
    if len(px) < 5:
        return None
    xy = camera.intrinsics.undistort_pixels(px)
    U = np.column_stack([xy, np.ones(len(xy))])
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    keep = np.ones(len(U), bool)
    for _ in range(3):
        w = _solve_cone(U[keep])
        nw = float(np.linalg.norm(w))
        if nw <= 1.0:
            return None
        a, cos_a = w / nw, 1.0 / nw
        res = np.arccos(np.clip(U @ a, -1, 1)) - np.arccos(cos_a)
        sigma = 1.4826 * np.median(np.abs(res[keep]))
        new = np.abs(res) <= max(trim_sigma * sigma, 1e-9)
        if new.sum() < 5 or new.sum() == keep.sum():
            break
        keep = new
    w = _solve_cone(U[keep])
    nw = float(np.linalg.norm(w))
    if nw <= 1.0:
        return None
    a = w / nw
    alpha = float(np.arccos(1.0 / nw))
    res = np.arccos(np.clip(U[keep] @ a, -1, 1)) - alpha
    return OutlineFit(a, alpha, float(np.sqrt(np.mean(res ** 2))), int(keep.sum()))


def ball_center_from_outline(camera: Camera, edge_points_px: np.ndarray, radius: float,
                             method: str = "plane", table_height: float = 0.0,
                             table_normal: np.ndarray = (0.0, 0.0, 1.0)
                             ) -> tuple[np.ndarray, OutlineFit] | None:
    """World position [m] of the ball centre from its outline in one camera.

    Args:
        camera: calibrated camera.
        edge_points_px: (M, 2) outline points [px] (e.g. ``CircleDetection.edge_points``).
        radius: ball radius [m] (> 0).
        method: "plane" (eq. 5: the ball rests on the plane n·p = table_height) or "size"
            (eq. 4: depth from the apparent size).
        table_height: plane offset h [m] (the table's z for n = e_z).
        table_normal: (3,) table normal n, world frame (normalised here).

    Returns:
        (position (3,), cone fit), or None when the fit is degenerate or the axis misses the
        plane.
    """
    radius = positive_float("radius", radius)
    if method not in BALL_DEPTH_METHODS:
        raise EstimatorValueError(f"method must be one of {list(BALL_DEPTH_METHODS)}, got "
                                  f"{method!r}")
    fit = fit_sphere_cone(camera, edge_points_px)
    if fit is None:
        return None
    Tcw = camera.transform_camera_to_world
    if method == "size":
        s = radius / np.sin(fit.half_angle)
        return Tcw[:3, :3] @ (s * fit.axis_camera) + Tcw[:3, 3], fit
    n = as_float_array("table_normal", table_normal, (3,))
    n = n / np.linalg.norm(n)
    d = Tcw[:3, :3] @ fit.axis_camera
    o = Tcw[:3, 3]
    denom = float(n @ d)
    if abs(denom) < 1e-9:
        return None
    s = (table_height + radius - n @ o) / denom
    if s <= 0:
        return None
    return o + s * d, fit


def table_mask(camera: Camera, corners_world: np.ndarray, margin_px: float = 0.0) -> np.ndarray:
    """(H, W) uint8 mask (255 inside) of a world polygon (e.g. ``Table.corners``) as imaged.

    The polygon edges are sampled densely, so lens distortion bends them correctly. A positive
    ``margin_px`` shrinks the mask (erosion) so the polygon's own border is excluded.
    """
    import cv2

    P = as_float_array("corners_world", corners_world, (None, 3))
    dense = np.concatenate([np.linspace(P[i], P[(i + 1) % len(P)], 50, endpoint=False)
                            for i in range(len(P))])
    pc = camera.points_to_camera(dense)
    mask = np.zeros((camera.height, camera.width), np.uint8)
    if np.any(pc[:, 2] <= 0):  # polygon partly behind the camera: clip crudely
        pc = pc[pc[:, 2] > 0]
        if len(pc) < 3:
            return mask
    px = camera.intrinsics.distort_normalized(pc[:, :2] / pc[:, 2:3])
    cv2.fillPoly(mask, [np.round(px * 16).astype(np.int32)], 255, shift=4)
    if margin_px > 0:
        k = int(2 * np.ceil(margin_px) + 1)
        mask = cv2.erode(mask, np.ones((k, k), np.uint8))
    return mask


def apparent_radius_range(camera: Camera, radius: float, region_world: np.ndarray,
                          slack: float = 0.25) -> tuple[float, float]:
    """(min, max) apparent radius [px] of a ball of ``radius`` [m] whose centre lies in the
    convex hull of ``region_world`` (N, 3) points (e.g. table corners raised by the radius),
    widened by ``slack`` (relative)."""
    radius = positive_float("radius", radius)
    P = as_float_array("region_world", region_world, (None, 3))
    # sample the region (corners, edge midpoints, centroid) and take the distance extremes
    pts = np.concatenate([P, 0.5 * (P + np.roll(P, 1, axis=0)), P.mean(axis=0, keepdims=True)])
    dist = np.linalg.norm(camera.points_to_camera(pts), axis=1)
    # the nearest point of the hull may be inside a face: bound by the point-plane distance too
    f = camera.intrinsics.focal_length
    r_px = f * np.tan(np.arcsin(np.clip(radius / dist, 0, 1)))
    lo, hi = float(r_px.min()), float(r_px.max())
    return max(2.0, lo * (1 - slack)), hi * (1 + slack)
