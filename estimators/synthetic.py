"""A small pinhole renderer for rehearsals and tests: a table, shaded balls and AprilTags.

Everything is rendered from known ground truth with the same :class:`~estimators.Camera`
model the estimators use, so errors measured on these images are errors of the estimators
(plus the image formation effects modelled here: anti-aliased edges, 8-bit quantisation and
optional Gaussian pixel noise). Not modelled: shadows, specular highlights, motion blur, lens
vignetting.

* Table: the plane z = ``table.height`` inside an x-y rectangle, a base colour modulated by a
  smooth procedural texture; outside it the background colour.
* Tags: OpenCV's AprilTag dictionary image (``cv2.aruco.generateImageMarker``) with a one-cell
  white quiet zone, warped into the view through the homography of its plane (per-pixel
  inverse mapping, 4x supersampled and area-averaged for anti-aliasing).
* Balls: exact silhouettes. A sphere (centre c, radius r, camera frame) is seen where the ray x
  satisfies g(x) = (xᵀc)² - (|c|² - r²)|x|² >= 0 with xᵀc > 0; pixel coverage is
  clip(0.5 + s / w, 0, 1) with s = g / |∇_pixels g| the first-order (Sampson) distance to the
  silhouette in pixels and w the edge blur width. Lambertian shading
  albedo · (ambient + (1 - ambient) max(0, n·l)).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ._validation import as_float_array, positive_float
from .camera import Camera, CameraIntrinsics
from .errors import EstimatorValueError
from .transforms import invert_transform

__all__ = ["Table", "RenderBall", "RenderTag", "Scene", "render", "tag_texture",
           "camera_ring",
           "APRILTAG_DICTIONARIES"]

#: AprilTag families -> OpenCV aruco dictionary names.
APRILTAG_DICTIONARIES = {"16h5": "DICT_APRILTAG_16h5", "25h9": "DICT_APRILTAG_25h9",
                         "36h10": "DICT_APRILTAG_36h10", "36h11": "DICT_APRILTAG_36h11"}


@dataclass(frozen=True)
class Table:
    """A rectangular table top at z = height (world frame), axis-aligned in x-y.

    Attributes:
        height: z of the table surface [m].
        x_range: (x_min, x_max) [m].
        y_range: (y_min, y_max) [m].
        color_bgr: base colour, 0-255 per channel.
        texture_amplitude: relative brightness variation of the procedural texture (0: plain).
        texture_period: typical wavelength of the texture [m].
    """

    height: float = 0.0
    x_range: tuple[float, float] = (0.2, 0.9)
    y_range: tuple[float, float] = (-0.35, 0.35)
    color_bgr: tuple[float, float, float] = (120.0, 140.0, 125.0)
    texture_amplitude: float = 0.12
    texture_period: float = 0.05

    @property
    def corners(self) -> np.ndarray:
        """(4, 3) corners of the table top in world coordinates [m], counter-clockwise."""
        (x0, x1), (y0, y1), z = self.x_range, self.y_range, self.height
        return np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z], [x0, y1, z]], dtype=float)


@dataclass(frozen=True)
class RenderBall:
    """A sphere to render: centre [m] (world), radius [m], albedo colour (0-255 BGR)."""

    center: np.ndarray
    radius: float
    color_bgr: tuple[float, float, float] = (40.0, 110.0, 235.0)  # orange

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", as_float_array("center", self.center, (3,)))
        object.__setattr__(self, "radius", positive_float("radius", self.radius))


@dataclass(frozen=True)
class RenderTag:
    """An AprilTag: id, family, edge length of its black square [m] and transform_tag_to_world.

    The tag frame has its origin at the tag centre, x to the right and y up as the tag is read,
    z out of the tag face (OpenCV's ``SOLVEPNP_IPPE_SQUARE`` convention).
    """

    tag_id: int
    size: float
    transform_tag_to_world: np.ndarray
    family: str = "36h11"

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", positive_float("size", self.size))
        object.__setattr__(self, "transform_tag_to_world",
                           as_float_array("transform_tag_to_world", self.transform_tag_to_world,
                                          (4, 4)))
        if self.family not in APRILTAG_DICTIONARIES:
            raise EstimatorValueError(f"family must be one of {list(APRILTAG_DICTIONARIES)}, "
                                      f"got {self.family!r}")


@dataclass(frozen=True)
class Scene:
    """What :func:`render` draws.

    Attributes:
        table: the table (None: no table, background everywhere).
        balls: balls, drawn over everything else (the renderer does not occlude balls).
        tags: tags, drawn over the table.
        light_direction: direction towards the light, world frame (normalised internally).
        ambient: ambient share of the lighting in [0, 1].
        background_bgr: colour where no surface is hit.
    """

    table: Table | None = field(default_factory=Table)
    balls: tuple[RenderBall, ...] = ()
    tags: tuple[RenderTag, ...] = ()
    light_direction: tuple[float, float, float] = (0.3, -0.4, 1.0)
    ambient: float = 0.3
    background_bgr: tuple[float, float, float] = (60.0, 60.0, 60.0)


@lru_cache(maxsize=64)
def tag_texture(tag_id: int, family: str = "36h11", cell_px: int = 16) -> np.ndarray:
    """Grey (uint8) image of a tag with a one-cell white quiet zone; the black square spans
    pixels [cell_px, cell_px * (bits + 3)) on both axes, bits = 4, 5 or 6 data cells."""
    import cv2

    if family not in APRILTAG_DICTIONARIES:
        raise EstimatorValueError(f"family must be one of {list(APRILTAG_DICTIONARIES)}")
    dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco,
                                                           APRILTAG_DICTIONARIES[family]))
    cells = dictionary.markerSize + 2  # data bits + black border
    marker = cv2.aruco.generateImageMarker(dictionary, int(tag_id), cells * cell_px, borderBits=1)
    out = np.full(((cells + 2) * cell_px,) * 2, 255, np.uint8)
    out[cell_px:-cell_px, cell_px:-cell_px] = marker
    out.setflags(write=False)
    return out


_RAY_CACHE: dict[bytes, np.ndarray] = {}


def _pixel_rays(camera: Camera) -> np.ndarray:
    """(H, W, 3) unnormalised camera-frame rays [x, y, 1] of every pixel centre (cached per
    intrinsics; read-only)."""
    intr = camera.intrinsics
    key = intr.K.tobytes() + np.array([intr.width, intr.height]).tobytes() + (
        b"" if intr.distortion is None else intr.distortion.tobytes())
    if key not in _RAY_CACHE:
        if len(_RAY_CACHE) >= 8:
            _RAY_CACHE.pop(next(iter(_RAY_CACHE)))
        rays = _compute_pixel_rays(camera)
        rays.setflags(write=False)
        _RAY_CACHE[key] = rays
    return _RAY_CACHE[key]


def _compute_pixel_rays(camera: Camera) -> np.ndarray:
    h, w = camera.height, camera.width
    u, v = np.meshgrid(np.arange(w, dtype=float), np.arange(h, dtype=float))
    xy = camera.intrinsics.undistort_pixels(np.column_stack([u.ravel(), v.ravel()]))
    return np.concatenate([xy, np.ones((len(xy), 1))], axis=1).reshape(h, w, 3)


def _render_table(camera: Camera, scene: Scene, rays_world: np.ndarray,
                  origin: np.ndarray) -> np.ndarray:
    h, w = rays_world.shape[:2]
    img = np.empty((h, w, 3))
    img[:] = scene.background_bgr
    table = scene.table
    if table is None:
        return img
    dz = rays_world[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (table.height - origin[2]) / dz
    x = origin[0] + s * rays_world[..., 0]
    y = origin[1] + s * rays_world[..., 1]
    hit = (s > 0) & (x >= table.x_range[0]) & (x <= table.x_range[1]) & \
        (y >= table.y_range[0]) & (y <= table.y_range[1])
    k = 2 * np.pi / table.texture_period
    tex = 0.5 * (np.sin(k * x[hit] + 1.3 * np.sin(0.7 * k * y[hit]))
                 * np.cos(0.83 * k * y[hit] - 0.4) + 0.5 * np.sin(0.37 * k * (x[hit] + y[hit])))
    brightness = 1.0 + table.texture_amplitude * tex
    img[hit] = brightness[:, None] * np.asarray(table.color_bgr)[None, :]
    return img


_BACKGROUND_CACHE: dict[bytes, np.ndarray] = {}


def _background(camera: Camera, scene: Scene, rays_cam: np.ndarray) -> np.ndarray:
    """Table and tags as seen by the camera (cached: they do not move between frames)."""
    intr = camera.intrinsics
    key = repr((camera.transform_world_to_camera.tobytes(), intr.K.tobytes(), intr.width,
                intr.height, None if intr.distortion is None else intr.distortion.tobytes(),
                scene.table, scene.background_bgr,
                [(t.tag_id, t.family, t.size, t.transform_tag_to_world.tobytes())
                 for t in scene.tags])).encode()
    if key not in _BACKGROUND_CACHE:
        if len(_BACKGROUND_CACHE) >= 12:
            _BACKGROUND_CACHE.pop(next(iter(_BACKGROUND_CACHE)))
        T_cw = invert_transform(camera.transform_world_to_camera)
        img = _render_table(camera, scene, rays_cam @ T_cw[:3, :3].T, T_cw[:3, 3])
        for tag in scene.tags:
            _render_tag(img, camera, tag, rays_cam)
        img = img.astype(np.float32)
        img.setflags(write=False)
        _BACKGROUND_CACHE[key] = img
    return _BACKGROUND_CACHE[key]


def _render_tag(img: np.ndarray, camera: Camera, tag: RenderTag, rays_cam: np.ndarray,
                supersample: int = 4) -> None:
    import cv2

    tex = tag_texture(tag.tag_id, tag.family).astype(np.float32)
    n_tex = tex.shape[0]
    cell = 16
    black_px = n_tex - 2 * cell  # edge of the black square in texture pixels
    T_tag_to_camera = camera.transform_world_to_camera @ tag.transform_tag_to_world
    R, t = T_tag_to_camera[:3, :3], T_tag_to_camera[:3, 3]
    # bounding box of the tag (with quiet zone) in the image
    half = 0.5 * tag.size * n_tex / black_px
    corners = np.array([[-half, -half, 0], [half, -half, 0], [half, half, 0], [-half, half, 0]])
    pc = corners @ R.T + t
    if np.any(pc[:, 2] <= 0):
        return
    px = camera.intrinsics.distort_normalized(pc[:, :2] / pc[:, 2:3])
    u0, v0 = np.floor(px.min(axis=0)).astype(int) - 2
    u1, v1 = np.ceil(px.max(axis=0)).astype(int) + 2
    u0, v0 = max(u0, 0), max(v0, 0)
    u1, v1 = min(u1, camera.width - 1), min(v1, camera.height - 1)
    if u1 < u0 or v1 < v0:
        return
    # supersampled pixel positions inside the box -> undistorted rays -> tag plane
    ss = supersample
    offs = (np.arange(ss) + 0.5) / ss - 0.5
    uu = (np.arange(u0, u1 + 1)[:, None] + offs[None, :]).ravel()
    vv = (np.arange(v0, v1 + 1)[:, None] + offs[None, :]).ravel()
    U, V = np.meshgrid(uu, vv)
    xy = camera.intrinsics.undistort_pixels(np.column_stack([U.ravel(), V.ravel()]))
    d = np.column_stack([xy, np.ones(len(xy))])  # camera-frame rays
    n = R[:, 2]  # tag normal in camera frame; plane n·p = n·t
    denom = d @ n
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (n @ t) / denom
    P = s[:, None] * d - t  # camera-frame vector from tag origin
    local = P @ R  # tag-frame coordinates
    # tag frame (x right, y up) -> texture pixels (column right, row down); texel centres at
    # integer + 0.5 in continuous coordinates
    scale = black_px / tag.size
    map_x = (local[:, 0] * scale + n_tex / 2 - 0.5).astype(np.float32)
    map_y = (-local[:, 1] * scale + n_tex / 2 - 0.5).astype(np.float32)
    valid = (s > 0) & np.isfinite(s)
    map_x[~valid] = -10
    shape = U.shape
    val = cv2.remap(tex, map_x.reshape(shape), map_y.reshape(shape), cv2.INTER_LINEAR,
                    borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    alpha = cv2.remap(np.ones_like(tex), map_x.reshape(shape), map_y.reshape(shape),
                      cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    bh, bw = v1 - v0 + 1, u1 - u0 + 1
    val = cv2.resize(val, (bw, bh), interpolation=cv2.INTER_AREA)
    alpha = cv2.resize(alpha, (bw, bh), interpolation=cv2.INTER_AREA)
    region = img[v0:v1 + 1, u0:u1 + 1]
    region[:] = region * (1 - alpha[..., None]) + val[..., None]  # val already times alpha


def _ball_box(camera: Camera, c: np.ndarray, r: float, edge_width: float
              ) -> tuple[int, int, int, int] | None:
    """Pixel box (v0, v1, u0, u1) holding the image of a sphere (camera-frame centre c): the
    whole image if its silhouette reaches behind the camera, None if it misses the image."""
    h, w = camera.height, camera.width
    d = float(np.linalg.norm(c))
    a = c / d
    alpha = np.arcsin(min(r / d, 1.0))
    e1 = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(a, e1)
    phi = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    rays = np.cos(alpha) * a + np.sin(alpha) * (np.cos(phi)[:, None] * e1
                                                + np.sin(phi)[:, None] * e2)
    if np.any(rays[:, 2] <= 0.05):  # near-grazing or behind: do not trust the projection
        return 0, h, 0, w
    px = camera.intrinsics.distort_normalized(rays[:, :2] / rays[:, 2:3])
    m = 3.0 + edge_width
    u0, v0 = np.floor(px.min(axis=0) - m).astype(int)
    u1, v1 = np.ceil(px.max(axis=0) + m).astype(int) + 1
    u0, v0, u1, v1 = max(u0, 0), max(v0, 0), min(u1, w), min(v1, h)
    if u1 <= u0 or v1 <= v0:
        return None
    return int(v0), int(v1), int(u0), int(u1)


def _render_ball(img: np.ndarray, camera: Camera, ball: RenderBall, rays_cam: np.ndarray,
                 light_cam: np.ndarray, ambient: float, edge_width: float) -> None:
    T = camera.transform_world_to_camera
    c = T[:3, :3] @ ball.center + T[:3, 3]
    r = ball.radius
    cc = float(c @ c)
    if c[2] <= 0 or cc <= r * r:
        return
    box = _ball_box(camera, c, r, edge_width)
    if box is None:
        return
    v0, v1, u0, u1 = box
    x = rays_cam[v0:v1, u0:u1]  # (h, w, 3), third component 1
    img = img[v0:v1, u0:u1]  # a view: writes go to the image
    xc = x @ c
    xx = np.einsum("hwk,hwk->hw", x, x)
    g = xc * xc - (cc - r * r) * xx
    fx, fy = camera.K[0, 0], camera.K[1, 1]
    gx = (2 * xc * c[0] - 2 * (cc - r * r) * x[..., 0]) / fx  # d g / d u (pixels)
    gy = (2 * xc * c[1] - 2 * (cc - r * r) * x[..., 1]) / fy
    s = g / np.maximum(np.hypot(gx, gy), 1e-300)
    alpha = np.clip(0.5 + s / edge_width, 0.0, 1.0)
    alpha[xc <= 0] = 0.0
    m = alpha > 0
    if not np.any(m):
        return
    # Lambertian shading at the first intersection (tangent point for grazing rays)
    xm = x[m]
    norm = np.sqrt(xx[m])
    dhat = xm / norm[:, None]
    b = xc[m] / norm
    disc = np.maximum(b * b - cc + r * r, 0.0)
    tt = b - np.sqrt(disc)
    normal = (tt[:, None] * dhat - c) / r
    shade = ambient + (1 - ambient) * np.maximum(normal @ light_cam, 0.0)
    col = shade[:, None] * np.asarray(ball.color_bgr)[None, :]
    a = alpha[m][:, None]
    img[m] = img[m] * (1 - a) + col * a


def render(camera: Camera, scene: Scene, noise_std: float = 0.0,
           rng: np.random.Generator | int | None = None, edge_width: float = 1.0) -> np.ndarray:
    """Render ``scene`` as seen by ``camera``.

    Args:
        camera: the camera (intrinsics, distortion, extrinsics).
        scene: table, balls, tags and lighting.
        noise_std: standard deviation of additive Gaussian pixel noise, in grey levels (0-255).
        rng: random generator or seed for the noise.
        edge_width: width [px] of the anti-aliasing ramp of ball silhouettes (1 = box filter of
            one pixel; larger values emulate optical blur).

    Returns:
        (H, W, 3) uint8 BGR image.
    """
    if not isinstance(camera, Camera):
        raise EstimatorValueError("camera must be an estimators.Camera")
    if noise_std < 0:
        raise EstimatorValueError(f"noise_std must be >= 0, got {noise_std}")
    edge_width = positive_float("edge_width", edge_width)
    rays_cam = _pixel_rays(camera)
    img = _background(camera, scene, rays_cam).copy()  # float32
    light = np.asarray(scene.light_direction, dtype=float)
    light = camera.transform_world_to_camera[:3, :3] @ (light / np.linalg.norm(light))
    # far balls first so near ones cover them
    T = camera.transform_world_to_camera
    order = sorted(scene.balls, key=lambda b: -float(np.linalg.norm(T[:3, :3] @ b.center
                                                                    + T[:3, 3])))
    for ball in order:
        _render_ball(img, camera, ball, rays_cam, light, scene.ambient, edge_width)
    if noise_std > 0:
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        img += noise_std * gen.standard_normal(img.shape, dtype=np.float32)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def camera_ring(n_cameras: int = 3, target: tuple[float, float, float] = (0.55, 0.0, 0.0),
                distance: float = 0.6, height: float = 0.45, start_angle_deg: float = 180.0,
                intrinsics: CameraIntrinsics | None = None) -> list[Camera]:
    """Cameras evenly spaced on a horizontal circle around ``target``, looking at it.

    Args:
        n_cameras: how many (named cam0, cam1, ...).
        target: the point they look at [m] (default: the paper's circle centre on the table).
        distance: horizontal distance from the target [m].
        height: height above the target [m].
        start_angle_deg: azimuth of cam0 about the target (180: behind it, on the -x side).
        intrinsics: default 640x480 with a 60° horizontal field of view.
    """
    from .transforms import look_at

    if intrinsics is None:
        intrinsics = CameraIntrinsics.from_fov(640, 480, 60.0)
    tgt = np.asarray(target, dtype=float)
    cams = []
    for i in range(n_cameras):
        a = np.radians(start_angle_deg) + 2 * np.pi * i / n_cameras
        eye = tgt + np.array([distance * np.cos(a), distance * np.sin(a), height])
        cams.append(Camera(intrinsics, look_at(eye, tgt), f"cam{i}"))
    return cams
