"""meshcat view of a deformable world: live, and recorded as a standalone HTML file.

:class:`DeformableViewer` draws each body's surface (the boundary triangles of a tetrahedral
mesh, outward oriented; every triangle of a cloth, two-sided) and the obstacles (half-spaces as
slabs, boxes, spheres, cylinders) moving along their paths. It follows :class:`plants.viz.Viewer`:
a ``meshcat-server`` on loopback started and stopped by the viewer, colours from
:data:`plants.viz.PALETTE` (body k gets colour k; obstacles are grey), :meth:`record` into a
meshcat animation and :meth:`save_html` for a file that plays offline.

meshcat animates transforms and properties, not vertices. A recording therefore holds one mesh
per frame and animates their ``visible`` property (frame f shows mesh f only): the file grows with
frames × surface vertices, which is why :meth:`record` takes ``fps`` (default 20) and
``max_frames``.

Usage::

    sim = load_scene("squeeze-ball")
    traj = sim.run(1.0)
    with DeformableViewer(sim.world) as viewer:
        viewer.record(traj)               # or viewer.show(sim.x, sim.t) while simulating
        viewer.save_html("squeeze.html")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .mesh import SimplexMesh
from .obstacles import BoxObstacle, CylinderObstacle, HalfSpace, SphereObstacle
from .world import DeformableWorld

__all__ = ["DeformableViewer", "surface_triangles"]


def surface_triangles(mesh: SimplexMesh) -> np.ndarray:
    """(k, 3) triangles to draw: a tetrahedral mesh's boundary faces (those of one tetrahedron),
    ordered so their normals point out of it at rest; a triangle mesh's own triangles."""
    if mesh.dim == 2:
        return mesh.elements.copy()
    T = mesh.elements
    faces = np.concatenate([T[:, [1, 2, 3]], T[:, [0, 2, 3]], T[:, [0, 1, 3]], T[:, [0, 1, 2]]])
    opposite = np.concatenate([T[:, 0], T[:, 1], T[:, 2], T[:, 3]])
    key = np.sort(faces, axis=1)
    _, inv, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    once = counts[inv.ravel()] == 1
    F, o = faces[once], opposite[once]
    X = mesh.X
    n = np.cross(X[F[:, 1]] - X[F[:, 0]], X[F[:, 2]] - X[F[:, 0]])
    inward = (n * (X[o] - X[F[:, 0]])).sum(1) > 0
    F[inward] = F[inward][:, [0, 2, 1]]
    return F


def _obstacle_geometry(ob, g) -> tuple[Any, np.ndarray]:
    """(meshcat geometry, 4×4 placement at t = 0) of an obstacle."""
    from ...viz import HALF_SPACE_SIZE

    T = np.eye(4)
    if isinstance(ob, HalfSpace):
        depth = 0.02
        n = ob.normal
        a = np.array([1.0, 0, 0]) if abs(n[0]) < 0.9 else np.array([0, 1.0, 0])
        t1 = np.cross(n, a)
        t1 /= np.linalg.norm(t1)
        T[:3, :3] = np.stack([t1, np.cross(n, t1), n], 1)
        T[:3, 3] = ob.point - 0.5 * depth * n
        return g.Box([HALF_SPACE_SIZE, HALF_SPACE_SIZE, depth]), T
    if isinstance(ob, BoxObstacle):
        T[:3, :3], T[:3, 3] = ob.rotation, ob.center
        return g.Box(list(2.0 * ob.half_extents)), T
    if isinstance(ob, SphereObstacle):
        T[:3, 3] = ob.center
        return g.Sphere(ob.radius), T
    if isinstance(ob, CylinderObstacle):  # meshcat's cylinder runs along its local y axis
        y = ob.axis
        a = np.array([1.0, 0, 0]) if abs(y[0]) < 0.9 else np.array([0, 0, 1.0])
        x = np.cross(y, a)
        x /= np.linalg.norm(x)
        T[:3, :3], T[:3, 3] = np.stack([x, y, np.cross(x, y)], 1), ob.center
        return g.Cylinder(2.0 * ob.half_length, ob.radius), T
    raise TypeError(f"cannot draw obstacle {ob.name!r} of type {type(ob).__name__}")


class DeformableViewer:
    """meshcat view of a :class:`DeformableWorld` (bodies' surfaces, obstacles, and the link boxes
    of coupled robots placed by forward kinematics of their configurations).

    Args:
        world: the world to draw.
        zmq_url: an existing meshcat server (None: start one on loopback).
    """

    def __init__(self, world: DeformableWorld, zmq_url: str | None = None) -> None:
        import meshcat
        import meshcat.geometry as g

        from ...viz import PALETTE, WORLD_RGB, _hex

        if not isinstance(world, DeformableWorld):
            raise TypeError(f"world must be a DeformableWorld, got {type(world).__name__}")
        self.world, self._g = world, g
        self.faces = [surface_triangles(b.mesh) for b in world.bodies]
        self.offsets = np.cumsum([0] + [b.n_nodes for b in world.bodies])
        self.colours = [PALETTE[k % len(PALETTE)] for k in range(len(world.bodies))]
        self._materials = [g.MeshLambertMaterial(color=_hex(c), side=2) for c in self.colours]
        self.vis = meshcat.Visualizer(zmq_url=zmq_url)
        self.vis.delete()
        self.root = self.vis["c3mpc"]
        self._obstacles = []
        for ob in world.obstacles:
            geom, T0 = _obstacle_geometry(ob, g)
            self.root["obstacles"][ob.name].set_object(geom, g.MeshLambertMaterial(
                color=_hex(WORLD_RGB), opacity=0.6 if isinstance(ob, HalfSpace) else 1.0,
                transparent=isinstance(ob, HalfSpace)))
            self._obstacles.append((ob, T0))
        self._robots = []  # (robot, model, data, [(frame id, LinkBox)])
        for r in world.robots:
            model = r.model
            shapes = [(model.getFrameId(sh.frame), sh) for sh in r.shapes]
            for _, sh in shapes:
                self.root["robots"][sh.name].set_object(g.Box(list(2.0 * sh.half_extents)),
                                                        g.MeshLambertMaterial(color=_hex(WORLD_RGB)))
            self._robots.append((r, model, model.createData(), shapes))
        self.show(np.concatenate([b.positions for b in world.bodies]), 0.0)

    @property
    def url(self) -> str:
        return self.vis.url()

    def _split(self, x) -> list[np.ndarray]:
        if isinstance(x, dict):
            return [np.asarray(x[b.name], float) for b in self.world.bodies]
        x = np.asarray(x, float)
        if x.shape != (int(self.offsets[-1]), 3):
            raise ValueError(f"x must have shape ({int(self.offsets[-1])}, 3) or be a dict of per-body positions, "
                             f"got {x.shape}")
        return [x[self.offsets[k]:self.offsets[k + 1]] for k in range(len(self.world.bodies))]

    def _obstacle_transforms(self, t: float) -> list[tuple[Any, np.ndarray]]:
        out = []
        for ob, T0 in self._obstacles:
            T = T0.copy()
            T[:3, 3] += ob.translation(t)[0]
            out.append((self.root["obstacles"][ob.name], T))
        return out

    def robot_transforms(self, q=None) -> list[tuple[Any, np.ndarray]]:
        """(meshcat node, 4×4 world placement) of every coupled robot's link box at the robots'
        configurations q (their concatenation, as a row of ``traj.q``; default: each robot's q0)."""
        import pinocchio as pin

        if not self._robots:
            return []
        n = sum(r.nq for r, *_ in self._robots)
        q = np.concatenate([r.q0 for r, *_ in self._robots]) if q is None else np.asarray(q, float)
        if q.shape != (n,) or not np.isfinite(q).all():
            raise ValueError(f"robot configurations q must be finite with shape ({n},), got {q.shape}")
        out, o = [], 0
        for r, model, data, shapes in self._robots:
            pin.framesForwardKinematics(model, data, q[o:o + r.nq])
            o += r.nq
            for fid, sh in shapes:
                oMf = data.oMf[fid]
                T = np.eye(4)
                T[:3, :3] = oMf.rotation @ sh.rotation
                T[:3, 3] = oMf.translation + oMf.rotation @ sh.translation
                out.append((self.root["robots"][sh.name], T))
        return out

    def show(self, x, t: float = 0.0, q=None) -> None:
        """Live update: all node positions x (n, 3) [m] (or {body name: (n_b, 3)}), the
        obstacles at time t [s], and the coupled robots at configurations q (default q0)."""
        for k, (b, X) in enumerate(zip(self.world.bodies, self._split(x))):
            if not np.isfinite(X).all():
                raise ValueError(f"positions of body {b.name!r} must be finite")
            self.root["bodies"][b.name]["live"].set_object(
                self._g.TriangularMeshGeometry(X, self.faces[k]), self._materials[k])
        for node, T in self._obstacle_transforms(t):
            node.set_transform(T)
        for node, T in self.robot_transforms(q):
            node.set_transform(T)

    def record(self, traj: Any, fps: float = 20.0, max_frames: int = 400) -> int:
        """Load a :class:`DeformableTrajectory` as the viewer's animation (one mesh per frame,
        ``fps`` frames per simulated second, at most ``max_frames``); returns the frame count."""
        from meshcat.animation import Animation

        from ...viz import frame_node

        if not (isinstance(fps, (int, float)) and not isinstance(fps, bool) and np.isfinite(fps) and fps > 0):
            raise ValueError(f"fps must be finite and > 0, got {fps!r}")
        t = np.asarray(traj.t, float)
        frames = np.arange(t[0], t[-1] + 1e-9, 1.0 / fps)
        if frames.size > max_frames:
            raise ValueError(f"{frames.size} frames exceed max_frames={max_frames}: lower fps or raise max_frames")
        idx = np.minimum(np.searchsorted(t, frames - 1e-9), t.size - 1)
        self.frame_positions = []
        for k, b in enumerate(self.world.bodies):
            P = np.asarray(traj.deformable_positions[b.name], float)
            self.root["bodies"][b.name]["live"].delete()
            for f, i in enumerate(idx):
                node = self.root["bodies"][b.name][f"f{f}"]
                node.set_object(self._g.TriangularMeshGeometry(P[i], self.faces[k]), self._materials[k])
                node.set_property("visible", f == 0)
            self.frame_positions.append(P[idx])
        anim = Animation(default_framerate=fps)
        for f, i in enumerate(idx):
            with anim.at_frame(self.vis, f) as frame:
                for b in self.world.bodies:
                    meshes = self.root["bodies"][b.name]
                    frame_node(frame, self.vis, meshes[f"f{f}"]).set_property("visible", "boolean", True)
                    if f > 0:
                        frame_node(frame, self.vis, meshes[f"f{f - 1}"]).set_property("visible", "boolean", False)
                for node, T in self._obstacle_transforms(float(t[i])):
                    frame_node(frame, self.vis, node).set_transform(T)
                if self._robots:
                    for node, T in self.robot_transforms(np.asarray(traj.q, float)[i]):
                        frame_node(frame, self.vis, node).set_transform(T)
        self.vis.set_animation(anim, play=False)
        self.frame_camera(np.concatenate([p[0] for p in self.frame_positions]))
        return int(frames.size)

    def frame_camera(self, x: np.ndarray) -> None:
        """Point the camera at the nodes x (n, 3) (front-left, from above)."""
        from ...viz import _transform

        lo, hi = x.min(0), x.max(0)
        target, radius = 0.5 * (lo + hi), max(0.5 * float(np.linalg.norm(hi - lo)), 0.1)
        self.vis["/Cameras/default"].set_transform(_transform(None, target))
        d = 2.2 * radius  # the camera child is in three.js y-up coordinates: (x, z, -y) of the world
        self.vis["/Cameras/default/rotated/<object>"].set_property("position", [1.2 * d, 0.9 * d, 1.2 * d])

    def save_html(self, path: str | Path) -> Path:
        """Write the standalone HTML recording to ``path`` (folders created)."""
        from ...viz import save_static_html

        return save_static_html(self.vis, path)

    def close(self) -> None:
        """Stop the meshcat server this viewer started (if any)."""
        from ...viz import stop_meshcat_server

        stop_meshcat_server(self.vis)

    def __enter__(self) -> "DeformableViewer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
