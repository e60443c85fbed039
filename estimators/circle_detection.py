"""Ball detection in one image: Hough circles on a masked table region, then sub-pixel edges.

1. A detection channel: a linear colour projection ``w · [B, G, R]`` (default "redness"
   R - (B + G) / 2, for an orange/red ball on a neutral table) or the grey image. A linear
   projection keeps anti-aliased edge pixels linear in the coverage, so the mid-level crossing
   below is unbiased under any shading.
2. Candidates: ``cv2.HoughCircles`` (HOUGH_GRADIENT_ALT) on the 8-bit, slightly blurred channel,
   with pixels outside the mask set to the median level inside it (no artificial mask edges)
   and radii in ``radius_px_range``.
3. Refinement: the channel is sampled (bilinear) along ``n`` radial profiles through the
   candidate circle; on each, the edge is where the profile crosses the mean of the levels just
   inside and just outside it (linear interpolation). Profiles without enough contrast or
   outside the mask are dropped; a circle is fitted to the edge points (algebraic fit, trimmed
   at 3 robust sigmas), and the profiles are re-sampled around it.

The edge points (not the circle) are what the 3-D estimate uses: a sphere's outline is an
ellipse, and :mod:`estimators.ball_geometry` fits the viewing cone to the points directly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import as_float_array, check_image
from .errors import EstimatorValueError

__all__ = ["CircleDetectionOptions", "CircleDetection", "detect_ball_circle",
           "detection_channel", "refine_circle", "fit_circle"]


@dataclass(frozen=True)
class CircleDetectionOptions:
    """Settings of :func:`detect_ball_circle` (defaults suit a 640x480 view of a ~3 cm ball)."""

    channel_weights_bgr: tuple[float, float, float] | None = (-0.5, -0.5, 1.0)
    """Weights w of the detection channel ``w · [B, G, R]`` (None: grey image). The ball must be
    brighter than its surroundings in this channel."""

    hough_canny_threshold: float = 60.0
    """Upper Canny threshold of ``cv2.HoughCircles`` (param1), in channel levels."""

    hough_circularity: float = 0.6
    """``HOUGH_GRADIENT_ALT`` param2: minimum circle "perfectness" in (0, 1]."""

    min_contrast: float = 12.0
    """Minimum level difference across an edge profile for it to count [levels]."""

    min_edge_fraction: float = 0.5
    """Share of the radial profiles that must give an edge point for a detection."""

    max_rms_px: float = 1.0
    """Largest RMS circle-fit residual of the kept edge points for a detection [px]."""

    edge_width_px: float = 1.5
    """Expected width of an edge (blur) [px]; the local levels are read this far plus one
    pixel either side of the crossing."""

    limb_model: str | None = None
    """How the level just inside the ball's edge is extrapolated from readings 1.75 and 3.5 px
    inside: "flat" (the nearer reading), "linear", or "sqrt" (Lambertian shading near a
    sphere's limb varies like the square root of the distance to it). None: "flat" for the
    depth method "plane", "sqrt" for "size" (the tracker resolves it). On rendered scenes
    "flat" gives the most accurate outline centre (plane method, median 0.03 mm) and "sqrt"
    the least biased size (size method: median 0.46 mm vs 0.77 mm, max 1.5 vs 7 mm); see
    docs/estimators.md §2."""

    refine_iterations: int = 2
    """Re-sampling rounds of the radial profiles."""

    max_candidates: int = 4
    """Hough candidates verified, best-voted first."""

    def __post_init__(self) -> None:
        if self.channel_weights_bgr is not None:
            w = as_float_array("channel_weights_bgr", self.channel_weights_bgr, (3,))
            if not np.any(w):
                raise EstimatorValueError("channel_weights_bgr must not be all zeros")
        for name in ("hough_canny_threshold", "min_contrast", "max_rms_px", "edge_width_px"):
            if not getattr(self, name) > 0:
                raise EstimatorValueError(f"CircleDetectionOptions.{name} must be > 0")
        if not 0 < self.hough_circularity <= 1:
            raise EstimatorValueError("CircleDetectionOptions.hough_circularity must be in (0, 1]")
        if not 0 < self.min_edge_fraction <= 1:
            raise EstimatorValueError("CircleDetectionOptions.min_edge_fraction must be in (0, 1]")
        if self.limb_model not in (None, "flat", "linear", "sqrt"):
            raise EstimatorValueError("CircleDetectionOptions.limb_model must be None, 'flat', "
                                      f"'linear' or 'sqrt', got {self.limb_model!r}")
        if self.refine_iterations < 1 or self.max_candidates < 1:
            raise EstimatorValueError("refine_iterations and max_candidates must be >= 1")


@dataclass(frozen=True)
class CircleDetection:
    """A ball outline found in an image.

    Attributes:
        center_px: (2,) centre (u, v) of the fitted circle [px] (not the projection of the
            ball centre; see :mod:`estimators.ball_geometry`).
        radius_px: fitted radius [px].
        edge_points: (M, 2) sub-pixel outline points [px] (inliers of the fit).
        rms_px: RMS distance of the edge points to the circle [px].
        edge_fraction: share of the radial profiles that gave an inlier edge point.
    """

    center_px: np.ndarray
    radius_px: float
    edge_points: np.ndarray
    rms_px: float
    edge_fraction: float


def detection_channel(image: np.ndarray, weights_bgr: tuple[float, float, float] | None
                      ) -> np.ndarray:
    """float32 (H, W) detection channel of a uint8 (H, W[, 3]) image."""
    if image.ndim == 2:
        return image.astype(np.float32)
    if weights_bgr is None:
        import cv2

        return cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    w = np.asarray(weights_bgr, dtype=np.float32)
    return image.astype(np.float32) @ w


def fit_circle(points: np.ndarray) -> tuple[np.ndarray, float]:
    """Algebraic (Kasa) least-squares circle through (M, 2) points: centre (2,), radius."""
    p = np.asarray(points, dtype=float)
    m = p.mean(axis=0)
    q = p - m  # centring improves conditioning
    A = np.empty((len(q), 3))
    A[:, :2] = q
    A[:, 2] = 1.0
    b = (q ** 2).sum(axis=1)
    sol = np.linalg.solve(A.T @ A, A.T @ b)  # 3x3 normal equations: well conditioned (centred)
    c = sol[:2] / 2
    r = float(np.sqrt(max(sol[2] + c @ c, 0.0)))
    return c + m, r


def _sample_profiles(channel: np.ndarray, center: np.ndarray, radius: float, half_width: float,
                     n_angles: int, step: float = 0.25):
    import cv2

    theta = np.linspace(0.0, 2 * np.pi, n_angles, endpoint=False)
    rho = np.arange(-half_width, half_width + 1e-9, step) + radius
    cos, sin = np.cos(theta)[:, None], np.sin(theta)[:, None]
    mx = (center[0] + rho[None, :] * cos).astype(np.float32)
    my = (center[1] + rho[None, :] * sin).astype(np.float32)
    prof = cv2.remap(channel, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    inside_img = (mx >= 0) & (my >= 0) & (mx <= channel.shape[1] - 1) & (my <= channel.shape[0] - 1)
    return theta, rho, prof.astype(float), inside_img.all(axis=1)


def _interp_rows(prof: np.ndarray, rho: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Row-wise linear interpolation of prof (n, m) sampled at uniform rho (m,) at ``at`` (n,)."""
    step = rho[1] - rho[0]
    f = np.clip((at - rho[0]) / step, 0, len(rho) - 1 - 1e-9)
    j = f.astype(int)
    f -= j
    rows = np.arange(len(prof))
    return prof[rows, j] * (1 - f) + prof[rows, j + 1] * f


def _crossings(prof: np.ndarray, rho: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Per row, the first position where prof falls through ``level`` (NaN if none)."""
    above = prof >= level[:, None]
    fall = above[:, :-1] & ~above[:, 1:]
    has = fall.any(axis=1)
    j = np.argmax(fall, axis=1)
    rows = np.arange(len(prof))
    p0, p1 = prof[rows, j], prof[rows, j + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (p0 - level) / (p0 - p1)
    out = rho[j] + f * (rho[j + 1] - rho[j])
    out[~has] = np.nan
    return out


def refine_circle(channel: np.ndarray, center: np.ndarray, radius: float,
                  options: CircleDetectionOptions = CircleDetectionOptions(),
                  mask: np.ndarray | None = None) -> CircleDetection | None:
    """Sub-pixel outline of a bright disc near (center, radius) in ``channel`` (see module doc).

    Returns None when too few profiles give an edge or the fit residual is too large.
    """
    center = np.asarray(center, dtype=float)
    n_angles = int(np.clip(2 * np.pi * radius, 48, 360))
    half = max(3.0, 0.3 * radius)
    step = 0.25
    off = options.edge_width_px / 2 + 1.0  # where the local levels are read, from the crossing
    result = None
    for _ in range(options.refine_iterations):
        theta, rho, prof, in_img = _sample_profiles(channel, center, radius, half + 2 * off,
                                                    n_angles,
                                                    step)
        # coarse: mid-level between the profile's ends
        k = max(2, int(round(1.0 / step)))
        hi, lo = prof[:, :k].mean(axis=1), prof[:, -k:].mean(axis=1)
        edge = _crossings(prof, rho, 0.5 * (hi + lo))
        # fine: mid-level between the levels just inside and just outside the crossing
        ok = np.isfinite(edge)
        e = np.where(ok, edge, radius)
        # the levels are read at +-off and +-2 off and extrapolated to +-0.5 px: outside (the
        # table) linearly, inside by options.limb_model (see there)
        hi1, hi2, lo1, lo2 = (_interp_rows(prof, rho, e + o)
                              for o in (-off, -2 * off, off, 2 * off))
        g_lin = (off - 0.5) / off
        g_in = {"flat": 0.0, "linear": g_lin,
                "sqrt": (np.sqrt(off) - np.sqrt(0.5)) / (np.sqrt(2 * off) - np.sqrt(off))}[
                    options.limb_model or "flat"]
        hi, lo = hi1 + g_in * (hi1 - hi2), lo1 + g_lin * (lo1 - lo2)
        window = np.abs(rho[None, :] - e[:, None]) <= off
        prof_w = np.where(window, prof, np.where(rho[None, :] < e[:, None], np.inf, -np.inf))
        edge = _crossings(prof_w, rho, 0.5 * (hi + lo))
        ok = np.isfinite(edge) & (hi - lo >= options.min_contrast) & in_img
        pts = center + edge[:, None] * np.column_stack([np.cos(theta), np.sin(theta)])
        if mask is not None and ok.any():
            safe = np.where(ok[:, None], pts, 0.0)
            ui = np.clip(np.rint(safe[:, 0]).astype(int), 0, mask.shape[1] - 1)
            vi = np.clip(np.rint(safe[:, 1]).astype(int), 0, mask.shape[0] - 1)
            ok &= np.where(ok, mask[vi, ui] > 0, False)
        if ok.sum() < max(6, options.min_edge_fraction * n_angles):
            return None
        keep = ok.copy()
        for _trim in range(3):  # trimmed fit: drop outline points off the circle (occlusions)
            c, r = fit_circle(pts[keep])
            res = np.linalg.norm(pts - c, axis=1) - r
            sigma = 1.4826 * np.median(np.abs(res[keep]))
            new = ok & (np.abs(res) <= max(3 * sigma, 0.15))
            if new.sum() == keep.sum():
                break
            keep = new
            if keep.sum() < 6:
                return None
        c, r = fit_circle(pts[keep])
        res = np.linalg.norm(pts[keep] - c, axis=1) - r
        result = CircleDetection(c, r, pts[keep], float(np.sqrt(np.mean(res ** 2))),
                                 float(keep.sum() / n_angles))
        center, radius = c, r
        half = max(2.0, 3 * result.rms_px)
    if result is None or result.edge_fraction < options.min_edge_fraction or \
            result.rms_px > options.max_rms_px:
        return None
    return result


def detect_ball_circle(image: np.ndarray, mask: np.ndarray | None = None,
                       radius_px_range: tuple[float, float] = (4.0, 120.0),
                       options: CircleDetectionOptions = CircleDetectionOptions(),
                       expected_center_px: np.ndarray | None = None,
                       search_half_width_px: float | None = None) -> CircleDetection | None:
    """Find the ball in one image.

    Args:
        image: (H, W, 3) BGR or (H, W) grey uint8 image.
        mask: optional (H, W) uint8/bool mask of the table region; edges outside are ignored.
        radius_px_range: (min, max) apparent radius [px] (see
            :func:`estimators.ball_geometry.apparent_radius_range`).
        options: :class:`CircleDetectionOptions`.
        expected_center_px: optional (2,) prior (e.g. the predicted ball position projected);
            candidates are verified nearest first.
        search_half_width_px: with a prior, first search only the window of this half-width
            around it (about 10x faster than the whole image at 640x480), then, if nothing is
            found there, the whole image.

    Returns:
        The detection, or None when no candidate passes the checks.
    """
    check_image("image", image)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.shape != image.shape[:2]:
            raise EstimatorValueError(f"mask must have shape {image.shape[:2]}, got {mask.shape}")
    rmin, rmax = (float(x) for x in radius_px_range)
    if not 0 < rmin < rmax:
        raise EstimatorValueError(f"radius_px_range must be 0 < min < max, got {radius_px_range}")
    if expected_center_px is not None and search_half_width_px is not None:
        e = np.asarray(expected_center_px, dtype=float)
        h, w = image.shape[:2]
        x0, y0 = (max(0, int(np.floor(e[k] - search_half_width_px))) for k in (0, 1))
        x1 = min(w, int(np.ceil(e[0] + search_half_width_px)) + 1)
        y1 = min(h, int(np.ceil(e[1] + search_half_width_px)) + 1)
        if x1 - x0 > 2 * rmin + 4 and y1 - y0 > 2 * rmin + 4:
            off = np.array([x0, y0], dtype=float)
            det = _detect(image[y0:y1, x0:x1], None if mask is None else mask[y0:y1, x0:x1],
                          rmin, rmax, options, e - off)
            if det is not None:
                return CircleDetection(det.center_px + off, det.radius_px,
                                       det.edge_points + off, det.rms_px, det.edge_fraction)
    return _detect(image, mask, rmin, rmax, options, expected_center_px)


def _detect(image: np.ndarray, mask: np.ndarray | None, rmin: float, rmax: float,
            options: CircleDetectionOptions, expected_center_px: np.ndarray | None
            ) -> CircleDetection | None:
    import cv2

    channel = detection_channel(image, options.channel_weights_bgr)
    ch8 = np.clip(channel, 0, 255)
    if mask is not None:
        inside = mask > 0
        if not inside.any():
            return None
        vals = ch8[inside]
        ch8 = np.where(inside, ch8, np.median(vals[:: max(1, vals.size // 4096)]))
    ch8 = cv2.GaussianBlur(ch8.astype(np.uint8), (5, 5), 1.0)
    circles = cv2.HoughCircles(ch8, cv2.HOUGH_GRADIENT_ALT, dp=1.5, minDist=max(2 * rmin, 8.0),
                               param1=options.hough_canny_threshold,
                               param2=options.hough_circularity,
                               minRadius=int(np.floor(rmin)), maxRadius=int(np.ceil(rmax)))
    if circles is None:
        return None
    cands = circles.reshape(-1, 3)[: 4 * options.max_candidates]
    if expected_center_px is not None:
        e = np.asarray(expected_center_px, dtype=float)
        cands = cands[np.argsort(np.linalg.norm(cands[:, :2] - e, axis=1), kind="stable")]
    for cx, cy, r in cands[: options.max_candidates]:
        det = refine_circle(channel, np.array([cx, cy]), float(r), options, mask)
        if det is not None and rmin <= det.radius_px <= rmax:
            return det
    return None
