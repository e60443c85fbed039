"""meshcat visualization of the Franka ball task: robot, balls, table, desired path, C3's planned
end-effector path and the desired contact force; live during a run and recorded as a standalone
HTML file.

The robot is drawn from the Panda's collision meshes (STL hulls of example-robot-data) in a
uniform orange (``ROBOT_RGB``, so that tests can find it in a screenshot), the spherical end
effector in red, balls in blue with a white marker showing their spin, the table in grey, the
desired path (circle or line) and its 2 cm band edges in green, C3's N+1 planned end-effector
knots as small yellow spheres, and the desired force λ_d → f as a magenta bar from the end
effector (1 cm per newton).

:meth:`FrankaBallViewer.record` turns a :class:`~c3mpc.tasks.franka_ball.FrankaBallLog` into a meshcat
animation (transforms only, ``fps`` frames per simulated second) and :meth:`save_html` writes
``vis.static_html()``: a single file with three.js inlined that plays the recording offline.

meshcat's Python client talks to a ``meshcat-server`` subprocess over ZMQ on loopback; the
viewer starts one unless given ``zmq_url``. ``plants`` is imported lazily (this module belongs to
the task/CLI layer, like :mod:`c3mpc.tasks.franka_ball`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FrankaBallViewer", "ROBOT_RGB", "BALL_RGB"]

ROBOT_RGB = (235, 120, 20)
"""Robot colour (sRGB 0-255)."""
BALL_RGB = (30, 90, 220)
EE_RGB = (220, 30, 30)
PATH_RGB = (20, 170, 60)
PLAN_RGB = (240, 210, 20)
FORCE_RGB = (220, 0, 220)
FORCE_SCALE = 0.01
"""Length of the force bar per newton [m/N]."""


def _hex(rgb: tuple[int, int, int]) -> int:
    return (rgb[0] << 16) | (rgb[1] << 8) | rgb[2]


def _translation(p: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


def _quat_xyzw_to_R(q: np.ndarray) -> np.ndarray:
    x, y, z, w = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def _bar(origin: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """Transform of a unit cylinder (axis y, centred) into a bar from origin along vec."""
    n = float(np.linalg.norm(vec))
    T = np.eye(4)
    if n < 1e-9:
        T[:3, :3] *= 1e-6
        T[:3, 3] = origin
        return T
    y = vec / n
    a = np.array([1.0, 0, 0]) if abs(y[0]) < 0.9 else np.array([0, 0, 1.0])
    x = np.cross(y, a)
    x /= np.linalg.norm(x)
    z = np.cross(x, y)
    T[:3, :3] = np.column_stack([x, y * n, z])
    T[:3, 3] = origin + 0.5 * vec
    return T


class FrankaBallViewer:
    """The task's meshcat scene.

    Args:
        n_balls: number of balls.
        zmq_url: an existing meshcat server (None: start one).
        path: "circle" (centre, radius) or "line" (x_c) desired path to draw.
        center, radius: of the circle [m]; the line is x = center[0].
        band: band half-width [m] (edges drawn).
        n_knots: number of planned end-effector knots drawn (N + 1).
    """

    def __init__(self, n_balls: int = 1, zmq_url: str | None = None, path: str = "circle",
                 center: tuple[float, float] = (0.55, 0.0), radius: float = 0.1,
                 band: float = 0.02, n_knots: int = 6):
        import meshcat
        import meshcat.geometry as g
        import pinocchio as pin

        from plants.franka_sim import arm_model, panda_sphere_urdf
        from plants.models.franka_ball import BALL_RADIUS, EE_RADIUS
        from plants.multibody.resources import example_robot_data_dir

        self._g, self._pin = g, pin
        self.vis = meshcat.Visualizer(zmq_url=zmq_url)
        self.n_balls, self.n_knots = n_balls, n_knots
        self.model = arm_model()
        self.data = self.model.createData()
        self.geom = pin.buildGeomFromUrdf(self.model, str(panda_sphere_urdf()),
                                          pin.GeometryType.COLLISION,
                                          package_dirs=[str(example_robot_data_dir().parent)])
        self.gdata = pin.GeometryData(self.geom)
        vis = self.vis
        vis.delete()
        robot_mat = g.MeshLambertMaterial(color=_hex(ROBOT_RGB))
        self._robot_names = []
        for go in self.geom.geometryObjects:
            name = go.name
            shape = go.geometry
            if go.meshPath and go.meshPath.lower().endswith(".stl"):
                obj = g.StlMeshGeometry.from_file(go.meshPath)
                mat = robot_mat
            elif type(shape).__name__ == "Sphere":
                obj = g.Sphere(float(shape.radius))
                mat = g.MeshLambertMaterial(color=_hex(EE_RGB))
            elif type(shape).__name__ == "Box":
                obj = g.Box(list(2.0 * np.asarray(shape.halfSide)))
                mat = robot_mat
            else:
                continue
            vis["robot"][name].set_object(obj, mat)
            self._robot_names.append(name)
        vis["table"].set_object(g.Box([0.9, 0.9, 0.02]),
                                g.MeshLambertMaterial(color=0x9a9a9a))
        vis["table"].set_transform(_translation([0.45, 0.0, -0.01]))
        ball_mat = g.MeshLambertMaterial(color=_hex(BALL_RGB))
        for i in range(n_balls):
            vis["balls"][f"ball{i}"].set_object(g.Sphere(BALL_RADIUS), ball_mat)
            vis["balls"][f"ball{i}"]["marker"].set_object(
                g.Sphere(0.25 * BALL_RADIUS), g.MeshLambertMaterial(color=0xffffff))
            vis["balls"][f"ball{i}"]["marker"].set_transform(
                _translation([0.0, 0.0, 0.9 * BALL_RADIUS]))
        line_mat = g.LineBasicMaterial(color=_hex(PATH_RGB), linewidth=3)
        for name, off in (("path", 0.0), ("band_in", -band), ("band_out", band)):
            if path == "circle":
                s = np.linspace(0, 2 * math.pi, 121)
                r = radius + off
                pts = np.stack([center[0] + r * np.sin(s), center[1] + r * np.cos(s),
                                np.full_like(s, 0.001)])
            else:
                pts = np.array([[center[0] + off] * 2, [-0.4, 0.4], [0.001, 0.001]])
            vis["target"][name].set_object(g.Line(g.PointsGeometry(pts.astype(np.float32)),
                                                  line_mat))
        knot_mat = g.MeshLambertMaterial(color=_hex(PLAN_RGB))
        for j in range(n_knots):
            vis["plan"][f"knot{j}"].set_object(g.Sphere(0.006), knot_mat)
        vis["force"].set_object(g.Cylinder(1.0, 0.004),
                                g.MeshLambertMaterial(color=_hex(FORCE_RGB)))
        self._ee_radius = EE_RADIUS
        # camera: three.js is y-up, meshcat rotates the default camera into z-up coordinates,
        # so this position is (x, z, -y) of the world: front-left, above the table
        vis["/Cameras/default"].set_transform(_translation([0.45, 0.0, 0.1]))
        vis["/Cameras/default/rotated/<object>"].set_property("position", [1.1, 0.8, 0.9])

    @property
    def url(self) -> str:
        """The viewer URL (open in a browser for the live view)."""
        return self.vis.url()

    # ------------------------------------------------------------------ poses
    def _robot_transforms(self, q_arm: np.ndarray) -> list[tuple[str, np.ndarray]]:
        pin = self._pin
        pin.forwardKinematics(self.model, self.data, np.asarray(q_arm, float))
        pin.updateGeometryPlacements(self.model, self.data, self.geom, self.gdata)
        out = []
        names = set(self._robot_names)
        for i, go in enumerate(self.geom.geometryObjects):
            if go.name in names:
                T = self.gdata.oMg[i].homogeneous.copy()
                if go.meshPath and go.meshPath.lower().endswith(".stl"):
                    T[:3, :3] = T[:3, :3] @ np.diag(np.asarray(go.meshScale, float))
                out.append((go.name, T))
        return out

    def _transforms(self, q_arm: np.ndarray | None, balls: np.ndarray, ball_quat: np.ndarray,
                    ee: np.ndarray, plan_ee: np.ndarray | None, force: np.ndarray | None
                    ) -> list[tuple[Any, np.ndarray]]:
        vis = self.vis
        out: list[tuple[Any, np.ndarray]] = []
        if q_arm is not None and np.all(np.isfinite(q_arm)):
            out += [(vis["robot"][n], T) for n, T in self._robot_transforms(q_arm)]
        for i in range(self.n_balls):
            T = _translation(balls[i])
            T[:3, :3] = _quat_xyzw_to_R(ball_quat[i])
            out.append((vis["balls"][f"ball{i}"], T))
        if plan_ee is not None:
            for j in range(min(self.n_knots, len(plan_ee))):
                out.append((vis["plan"][f"knot{j}"], _translation(plan_ee[j])))
        f = np.zeros(3) if force is None else np.asarray(force, float)
        out.append((vis["force"], _bar(np.asarray(ee, float), FORCE_SCALE * f)))
        return out

    def show(self, q_arm: np.ndarray | None, balls: np.ndarray, ball_quat: np.ndarray,
             ee: np.ndarray, plan_ee: np.ndarray | None = None,
             force: np.ndarray | None = None) -> None:
        """Live update: set the current poses."""
        for node, T in self._transforms(q_arm, balls, ball_quat, ee, plan_ee, force):
            node.set_transform(T)

    def record(self, log: Any, fps: float = 20.0) -> int:
        """Load ``log`` (a :class:`~c3mpc.tasks.franka_ball.FrankaBallLog`) as the viewer's
        animation; returns the number of frames."""
        from meshcat.animation import Animation

        from plants.viz import frame_node

        t = log.t
        frames = np.arange(t[0], t[-1] + 1e-9, 1.0 / fps)
        anim = Animation(default_framerate=fps)
        plan_idx = np.searchsorted(log.plan_active_t, frames, side="right") - 1
        idx = np.minimum(np.searchsorted(t, frames), len(t) - 1)
        for f, (i, j) in enumerate(zip(idx, plan_idx)):
            plan_ee = log.plan_ee_path[j] if j >= 0 else None
            force = log.plan_ee_force[j] if j >= 0 else None
            with anim.at_frame(self.vis, f) as frame:
                for node, T in self._transforms(log.q_arm[i], log.balls[i], log.ball_quat[i],
                                                log.ee[i], plan_ee, force):
                    frame_node(frame, self.vis, node).set_transform(T)
        self.vis.set_animation(anim, play=False)
        # show the first frame's poses statically too (a screenshot without playing)
        i0 = int(idx[0])
        self.show(log.q_arm[i0], log.balls[i0], log.ball_quat[i0], log.ee[i0],
                  log.plan_ee_path[0] if len(log.plan_ee_path) else None, None)
        return len(frames)

    def save_html(self, path: str | Path) -> Path:
        """Write the standalone HTML (``vis.static_html()``) to ``path``."""
        from plants.viz import save_static_html

        return save_static_html(self.vis, path)

    def close(self) -> None:
        """Stop the meshcat server this viewer started (if any)."""
        from plants.viz import stop_meshcat_server

        stop_meshcat_server(self.vis)

