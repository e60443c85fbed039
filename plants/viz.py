"""meshcat view of any robot or scene: live, and recorded as a standalone HTML file.

:class:`Viewer` draws the geometry attached to the joints of a Pinocchio model and moves it
with the configuration ``q``. Two doors in:

* :meth:`Viewer.from_scene` for a contact-simulator :class:`~plants.sim.Scene` (its collision
  geometry: spheres, boxes, half-spaces, convex hulls; optionally the contact points at each
  frame), with :meth:`Viewer.record_trajectory` for a ``sim.run(T)`` result;
* :meth:`Viewer.from_geometry_model` for a Pinocchio ``GeometryModel`` (the collision or visual
  model of a :class:`~plants.multibody.MultibodyPlant` or of any URDF/MJCF: primitives and mesh
  files).

Colours: geometry fixed to the world is grey; each kinematic tree gets its own colour of
:data:`PALETTE` (tree 0 first), so a robot and the objects it touches are told apart. Contact
points are drawn in :data:`CONTACT_RGB`.

:meth:`Viewer.record` turns a trajectory into a meshcat animation (transforms only, ``fps``
frames per simulated second) and :meth:`Viewer.save_html` writes ``vis.static_html()``: one
file with three.js inlined that plays the recording offline. meshcat's Python client talks to
a ``meshcat-server`` subprocess on loopback; the viewer starts one unless given ``zmq_url``
and stops it on :meth:`Viewer.close` (or at the end of a ``with`` block).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Viewer", "VisualShape", "PALETTE", "WORLD_RGB", "CONTACT_RGB"]

PALETTE: tuple[tuple[int, int, int], ...] = (
    (235, 120, 20), (30, 90, 220), (20, 170, 60), (200, 40, 160), (240, 200, 20),
    (20, 190, 200), (150, 80, 30), (120, 60, 220))
"""Colours of kinematic trees 0, 1, ... (sRGB 0-255), repeated when there are more trees."""
WORLD_RGB = (150, 150, 150)
"""Colour of geometry fixed to the world."""
CONTACT_RGB = (230, 20, 20)
"""Colour of contact points."""
HALF_SPACE_SIZE = 4.0
"""Side of the slab that draws a half-space [m]."""


def _hex(rgb: Sequence[int]) -> int:
    return (int(rgb[0]) << 16) | (int(rgb[1]) << 8) | int(rgb[2])


@dataclass(frozen=True)
class VisualShape:
    """One drawn geometry.

    Attributes:
        name: unique name (the meshcat path under ``/c3mpc``).
        joint: Pinocchio joint index it is attached to (0: world).
        placement: (4, 4) pose of the drawn object in the joint frame (scale included).
        geometry: the meshcat geometry object.
        rgb: colour (0-255).
        opacity: 1 opaque.
    """

    name: str
    joint: int
    placement: np.ndarray
    geometry: Any
    rgb: tuple[int, int, int]
    opacity: float = 1.0


def _transform(R: np.ndarray | None = None, p: Sequence[float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    T[:3, 3] = p
    return T


_Y_TO_Z = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
"""Rotation taking meshcat's cylinder axis (y) to coal's (z)."""


def _mesh_from_points(points: np.ndarray) -> Any:
    """A closed triangle mesh: the convex hull of ``points`` (n, 3)."""
    import meshcat.geometry as g
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points)
    faces = hull.simplices.copy()
    centre = points[hull.vertices].mean(axis=0)
    for f in faces:  # orient every face outwards (three.js culls back faces)
        a, b, c = points[f]
        if np.dot(np.cross(b - a, c - a), a - centre) < 0:
            f[[1, 2]] = f[[2, 1]]
    return g.TriangularMeshGeometry(points, faces)


def _coal_geometry(shape: Any) -> tuple[Any, np.ndarray] | None:
    """meshcat geometry and its placement in the shape frame for a coal shape (None: skip)."""
    import coal
    import meshcat.geometry as g

    if isinstance(shape, coal.Sphere):
        return g.Sphere(float(shape.radius)), np.eye(4)
    if isinstance(shape, coal.Box):
        return g.Box(list(2.0 * np.asarray(shape.halfSide, float))), np.eye(4)
    if isinstance(shape, coal.Cylinder):
        return (g.Cylinder(2.0 * float(shape.halfLength), float(shape.radius)),
                _transform(_Y_TO_Z))
    if isinstance(shape, coal.Capsule):
        r, h = float(shape.radius), float(shape.halfLength)
        u = np.random.default_rng(0).normal(size=(400, 3))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        pts = r * u
        pts[:, 2] += np.where(u[:, 2] >= 0, h, -h)  # two hemispheres joined by the side
        return _mesh_from_points(pts), np.eye(4)
    if isinstance(shape, coal.Halfspace):
        n = np.asarray(shape.n, float)
        return _half_space(n, float(shape.d))
    if isinstance(shape, coal.ConvexBase):
        return _mesh_from_points(np.asarray(shape.points(), float)), np.eye(4)
    if isinstance(shape, coal.BVHModelBase):
        verts = np.asarray(shape.vertices(), float)
        tris = np.array([[shape.tri_indices(i)[k] for k in range(3)]
                         for i in range(shape.num_tris)], dtype=np.uint32)
        return g.TriangularMeshGeometry(verts, tris), np.eye(4)
    return None


def _half_space(normal: np.ndarray, offset: float) -> tuple[Any, np.ndarray]:
    """A thin slab just inside the half-space nᵀx ≤ d."""
    import meshcat.geometry as g

    n = normal / np.linalg.norm(normal)
    a = np.array([1.0, 0, 0]) if abs(n[0]) < 0.9 else np.array([0, 1.0, 0])
    x = np.cross(a, n)
    x /= np.linalg.norm(x)
    R = np.column_stack([x, np.cross(n, x), n])
    thickness = 0.01
    return (g.Box([HALF_SPACE_SIZE, HALF_SPACE_SIZE, thickness]),
            _transform(R, n * (offset - 0.5 * thickness)))


def _tree_colours(model: Any) -> np.ndarray:
    """(njoints, 3) colour per joint: grey for the world, a palette colour per tree."""
    root = np.zeros(model.njoints, dtype=int)
    for j in range(1, model.njoints):
        parent = model.parents[j]
        root[j] = j if parent == 0 else root[parent]
    roots = sorted({int(r) for r in root[1:]})
    colours = np.array([WORLD_RGB] * model.njoints)
    for j in range(1, model.njoints):
        colours[j] = PALETTE[roots.index(root[j]) % len(PALETTE)]
    return colours


class Viewer:
    """meshcat view of the geometry of a Pinocchio model.

    Args:
        model: the ``pinocchio.Model`` whose joints carry the shapes.
        shapes: what to draw (:class:`VisualShape`).
        zmq_url: an existing meshcat server (None: start one on loopback).
        scene: a contact-simulator scene, for contact points (``contacts=True``).
        contacts: draw the contact points of each frame (scenes only).
        max_contacts: contact points drawn at most per frame.
    """

    def __init__(self, model: Any, shapes: Sequence[VisualShape], zmq_url: str | None = None,
                 scene: Any = None, contacts: bool = False, max_contacts: int = 64) -> None:
        import meshcat
        import meshcat.geometry as g
        import pinocchio as pin

        if contacts and scene is None:
            raise ValueError("contacts=True needs a scene (use Viewer.from_scene)")
        if isinstance(max_contacts, bool) or not isinstance(max_contacts, int) or max_contacts < 0:
            raise TypeError(f"max_contacts must be an integer >= 0, got {max_contacts!r}")
        self._pin, self._g = pin, g
        self.model = model
        self.data = model.createData()
        self.shapes = list(shapes)
        names = [s.name for s in self.shapes]
        if len(set(names)) != len(names):
            raise ValueError("shape names must be unique")
        self.scene, self.contacts, self.max_contacts = scene, bool(contacts), max_contacts
        self.vis = meshcat.Visualizer(zmq_url=zmq_url)
        self.vis.delete()
        root = self.vis["c3mpc"]
        for s in self.shapes:
            material = g.MeshLambertMaterial(color=_hex(s.rgb), opacity=s.opacity,
                                             transparent=s.opacity < 1.0)
            root["geometry"][s.name].set_object(s.geometry, material)
        if self.contacts:
            mat = g.MeshLambertMaterial(color=_hex(CONTACT_RGB))
            for i in range(max_contacts):
                root["contacts"][f"c{i}"].set_object(g.Sphere(0.006), mat)
        self._world = [s for s in self.shapes if s.joint == 0]
        self._moving = [s for s in self.shapes if s.joint != 0]
        for s in self._world:  # static: placed once
            root["geometry"][s.name].set_transform(s.placement)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_scene(cls, scene: Any, *, zmq_url: str | None = None, contacts: bool = False,
                   max_contacts: int = 64) -> Viewer:
        """A viewer of a :class:`~plants.sim.Scene`'s collision geometry."""
        from .sim.geometry import Box, CoalShape, HalfSpace, Sphere

        import meshcat.geometry as g

        colours = _tree_colours(scene.model)
        shapes = []
        for geo in scene.geometries:
            shape = geo.shape
            local = np.eye(4)
            if isinstance(shape, Sphere):
                mc = g.Sphere(shape.radius)
            elif isinstance(shape, Box):
                mc = g.Box(list(2.0 * np.asarray(shape.half)))
            elif isinstance(shape, HalfSpace):
                mc, local = _half_space(np.array([0.0, 0.0, 1.0]), 0.0)
            elif isinstance(shape, CoalShape):
                converted = _coal_geometry(shape.shape)
                if converted is None:
                    raise TypeError(f"geometry {geo.name!r}: cannot draw coal shape "
                                    f"{type(shape.shape).__name__}")
                mc, local = converted
            else:
                raise TypeError(f"geometry {geo.name!r}: unknown shape {type(shape).__name__}")
            placement = _transform(geo.rotation, geo.translation) @ local
            shapes.append(VisualShape(geo.name, int(geo.joint), placement, mc,
                                      tuple(int(c) for c in colours[geo.joint]),
                                      0.6 if isinstance(shape, HalfSpace) else 1.0))
        return cls(scene.model, shapes, zmq_url=zmq_url, scene=scene, contacts=contacts,
                   max_contacts=max_contacts)

    @classmethod
    def from_geometry_model(cls, model: Any, geometry_model: Any, *,
                            zmq_url: str | None = None) -> Viewer:
        """A viewer of a Pinocchio ``GeometryModel`` (collision or visual): primitives, convex
        hulls and mesh files (STL, OBJ, DAE), with each object's mesh scale."""
        import meshcat.geometry as g

        colours = _tree_colours(model)
        shapes = []
        for go in geometry_model.geometryObjects:
            joint = int(go.parentJoint)
            placement = np.asarray(go.placement.homogeneous, float)
            rgb = tuple(int(c) for c in colours[joint])
            path = str(getattr(go, "meshPath", "") or "")
            suffix = Path(path).suffix.lower()
            if suffix in (".stl", ".obj", ".dae") and Path(path).is_file():
                loader = {".stl": g.StlMeshGeometry, ".obj": g.ObjMeshGeometry,
                          ".dae": g.DaeMeshGeometry}[suffix]
                mc = loader.from_file(path)
                local = np.diag([*np.asarray(go.meshScale, float), 1.0])
            else:
                converted = _coal_geometry(go.geometry)
                if converted is None:
                    raise TypeError(f"geometry {go.name!r}: cannot draw "
                                    f"{type(go.geometry).__name__}")
                mc, local = converted
            shapes.append(VisualShape(go.name, joint, placement @ local, mc, rgb))
        return cls(model, shapes, zmq_url=zmq_url)

    # ------------------------------------------------------------------ poses
    @property
    def url(self) -> str:
        """The viewer URL (open it in a browser for the live view)."""
        return self.vis.url()

    def _q(self, q: Any) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if q.shape != (self.model.nq,):
            raise ValueError(f"q must have shape ({self.model.nq},), got {q.shape}")
        if not np.all(np.isfinite(q)):
            raise ValueError("q must be finite")
        return q

    def _transforms(self, q: np.ndarray) -> list[tuple[Any, np.ndarray]]:
        pin = self._pin
        pin.forwardKinematics(self.model, self.data, q)
        root = self.vis["c3mpc"]
        out = []
        for s in self._moving:
            out.append((root["geometry"][s.name], self.data.oMi[s.joint].homogeneous @ s.placement))
        if self.contacts:
            points = self._contact_points()
            for i in range(self.max_contacts):
                T = np.eye(4)
                if i < len(points):
                    T[:3, 3] = points[i]
                else:
                    T[:3, :3] *= 1e-6  # hidden
                out.append((root["contacts"][f"c{i}"], T))
        return out

    def _contact_points(self) -> np.ndarray:
        scene = self.scene
        Rg, pg = scene.geometry_poses(self.data)
        found = scene.detector.detect(Rg, pg)
        return found.point()[np.argsort(found.phi)[: self.max_contacts]] if found.n_c else \
            np.zeros((0, 3))

    def show(self, q: Any) -> None:
        """Live update: draw configuration ``q`` (n_q,)."""
        for node, T in self._transforms(self._q(q)):
            node.set_transform(T)

    def frame_camera(self, q: Any) -> None:
        """Point the camera at the moving geometry at ``q`` (front-left, from above)."""
        self._pin.forwardKinematics(self.model, self.data, self._q(q))
        centres = [(self.data.oMi[s.joint].homogeneous @ s.placement)[:3, 3]
                   for s in self._moving]
        if not centres:
            return
        centres = np.array(centres)
        lo, hi = centres.min(axis=0), centres.max(axis=0)
        target, radius = 0.5 * (lo + hi), max(0.5 * float(np.linalg.norm(hi - lo)), 0.15)
        self.vis["/Cameras/default"].set_transform(_transform(None, target))
        # meshcat's camera child is in three.js y-up coordinates: (x, z, -y) of the world
        d = 2.2 * radius
        self.vis["/Cameras/default/rotated/<object>"].set_property(
            "position", [1.2 * d, 0.9 * d, 1.2 * d])

    def record(self, t: Any, q: Any, fps: float = 30.0) -> int:
        """Load a trajectory as the viewer's animation; returns the number of frames.

        Args:
            t: (T,) increasing times [s].
            q: (T, n_q) configurations.
            fps: frames per simulated second (the configuration at or just after each frame
                time is shown).
        """
        from meshcat.animation import Animation

        t = np.asarray(t, float)
        q = np.asarray(q, float)
        if t.ndim != 1 or q.shape != (t.size, self.model.nq) or t.size == 0:
            raise ValueError(f"t must be (T,) and q (T, {self.model.nq}); got {t.shape} and "
                             f"{q.shape}")
        if not (np.isfinite(fps) and fps > 0):
            raise ValueError(f"fps must be finite and > 0, got {fps!r}")
        frames = np.arange(t[0], t[-1] + 1e-9, 1.0 / fps)
        idx = np.minimum(np.searchsorted(t, frames), t.size - 1)
        anim = Animation(default_framerate=fps)
        for f, i in enumerate(idx):
            with anim.at_frame(self.vis, f) as frame:
                for node, T in self._transforms(self._q(q[i])):
                    frame_node(frame, self.vis, node).set_transform(T)
        self.vis.set_animation(anim, play=False)
        self.show(q[int(idx[0])])  # the first frame statically too (a screenshot shows it)
        self.frame_camera(q[int(idx[0])])
        return len(frames)

    def record_trajectory(self, traj: Any, fps: float = 30.0) -> int:
        """:meth:`record` of a simulator trajectory (``traj.t``, ``traj.q``)."""
        return self.record(traj.t, traj.q, fps)

    def save_html(self, path: str | Path) -> Path:
        """Write the standalone HTML recording to ``path`` (folders created)."""
        return save_static_html(self.vis, path)

    def close(self) -> None:
        """Stop the meshcat server this viewer started (if any)."""
        stop_meshcat_server(self.vis)

    def __enter__(self) -> Viewer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def save_static_html(vis: Any, path: str | Path) -> Path:
    """Write ``vis.static_html()`` (one file, three.js inlined) to ``path``; folders created."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(vis.static_html())
    return p


def stop_meshcat_server(vis: Any) -> None:
    """Stop the ``meshcat-server`` subprocess a ``meshcat.Visualizer`` started (if any)."""
    window = getattr(vis, "window", None)
    proc = getattr(window, "server_proc", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait(timeout=5)


def frame_node(frame: Any, vis: Any, node: Any) -> Any:
    """The animation frame's handle for ``node`` (same path relative to the root)."""
    h = frame
    for s in node.path.entries[len(vis.path.entries):]:
        h = h[s]
    return h
