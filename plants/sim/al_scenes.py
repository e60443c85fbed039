"""Scenes of the augmented-Lagrangian issue (seed 000 §VII-B): ``mass-ratio-stack``.

``mass-ratio-stack``: the dish-piling mass-ratio test in box form: ``n_plates`` thin plates of
0.1 kg (0.2 × 0.2 × 0.02 m) stacked on the ground under one 5 kg box (0.2 m), μ = 0.5,
near-rigid contact (k = 1e12 N/m, τ_d = 0). Every body carries corner spheres (point-like contacts
inside its box) so that each face-to-face contact is four corner contacts, as in the cube scenes.
The Unitree A1 scenes (``a1-drop-8``, ``a1-drop-27``) need floating-base URDF robots in
``SceneBuilder`` and are not provided (see docs/contact-solvers.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .geometry import Box, ContactParams, Sphere
from .scene import SceneBuilder, box_inertia
from .scenes import SceneSpec, register_scene

__all__ = ["PLATE_MASS", "TOP_MASS"]

PLATE_MASS = 0.1
TOP_MASS = 5.0
_CORNER_R = 1e-3
_EXCLUDED = [("box", "box"), ("corner", "corner"), ("box", "ground")]


def _slab(b: SceneBuilder, name: str, mass: float, half, z: float, params: ContactParams) -> None:
    half = np.asarray(half, float)
    geoms = [("box", Box(tuple(half)), params, (0, 0, 0), None, "box")]
    corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1], indexing="ij")).reshape(3, -1).T
    for i, s in enumerate(corners):
        geoms.append((f"corner{i}", Sphere(_CORNER_R), params, s * (half - _CORNER_R), None, "corner"))
    b.add_free_body(name, mass, box_inertia(mass, tuple(half)), geoms, (0.0, 0.0, z))


@register_scene("mass-ratio-stack")
def _mass_ratio_stack(dt=None, n_plates: int = 3, plate_mass: float = PLATE_MASS, top_mass: float = TOP_MASS,
                      mu: float = 0.5) -> SceneSpec:
    """``n_plates`` light plates under a heavy box, at rest (mass ratio top_mass/plate_mass = 50)."""
    params = ContactParams(1e12, 0.0, mu)
    b = SceneBuilder(margin=0.01, excluded_groups=_EXCLUDED)
    b.add_ground(ContactParams(float("inf"), 0.0, mu))
    plate = (0.1, 0.1, 0.01)
    z = 0.0
    for i in range(int(n_plates)):
        _slab(b, f"plate{i}", plate_mass, plate, z + plate[2], params)
        z += 2 * plate[2]
    top = (0.1, 0.1, 0.1)
    _slab(b, "top", top_mass, top, z + top[2], params)
    return SceneSpec(b.build(), 1e-3 if dt is None else dt,
                     info={"n_plates": n_plates, "mass_ratio": top_mass / plate_mass})


# ---------------------------------------------------------------------------- floating-base robots
A1_STAND = np.array([0.0, 0.8, -1.5] * 4)  # hip, thigh, calf per leg: a crouched standing pose


class _FloatingRobotBuilder(SceneBuilder):
    """``SceneBuilder`` plus floating-base URDF robots (a translation + spherical root, as
    ``add_free_body`` uses: world linear velocity, body angular velocity). Kept here until
    ``SceneBuilder.add_urdf`` offers a floating base."""

    def add_floating_urdf(self, path, params: ContactParams, position, joint_q=None, group: str = "robot") -> None:
        """A floating-base robot from URDF at ``position`` (identity orientation) with joint angles
        ``joint_q`` (default neutral); joint and frame names get the prefix ``r<k>_``."""
        import pinocchio as pin

        from .scene import example_robot_data_dir

        if self._has_free:
            raise ValueError("add floating robots before free bodies (each tree must own contiguous dofs)")
        root = pin.JointModelComposite()
        root.addJoint(pin.JointModelTranslation())
        root.addJoint(pin.JointModelSpherical())
        robot = pin.buildModelFromUrdf(str(path), root)
        dirs = [str(p) for p in Path(path).resolve().parents] + [str(example_robot_data_dir().parent)]
        gm = pin.buildGeomFromUrdf(robot, str(path), pin.GeometryType.COLLISION, package_dirs=dirs)
        prefix = f"r{len(self.q0)}_"
        for i in range(1, robot.njoints):
            robot.names[i] = prefix + robot.names[i]
        for i in range(1, len(robot.frames)):
            f = robot.frames[i]
            f.name = prefix + f.name
            robot.frames[i] = f
        offset = self.model.njoints - 1
        if self.model.njoints > 1:
            self.model = pin.appendModel(self.model, robot, 0, pin.SE3.Identity())
        else:
            g = self.model.gravity.linear.copy()
            self.model = robot
            self.model.gravity.linear = g
        q = pin.neutral(robot)
        q[:3] = position
        q[3:7] = (0.0, 0.0, 0.0, 1.0)
        if joint_q is not None:
            q[7:] = joint_q
        self.q0.append(q)
        self.v0.append(np.zeros(robot.nv))
        for go in gm.geometryObjects:
            shape = self._coal_shape(go)
            if shape is None or shape.bounding_radius < 2e-3:
                continue  # no shape, or a placeholder (the A1's 1 mm "imu" box)
            M = go.placement
            self._add_geom(prefix + go.name, shape, go.parentJoint + offset, M.rotation, M.translation, params, group)


def _a1_drop(n_robots: int):
    def factory(dt=None, mu: float = 0.8, height: float = 0.45, spacing: float = 0.6) -> SceneSpec:
        from .scene import example_robot_data_dir

        urdf = example_robot_data_dir() / "robots/a1_description/urdf/a1.urdf"
        params = ContactParams(1e12, 0.0, mu)
        b = _FloatingRobotBuilder(margin=0.01)
        b.add_ground(ContactParams(float("inf"), 0.0, mu))  # first: the detector expects half-spaces as side a
        side = int(np.ceil(np.sqrt(n_robots))) if n_robots <= 9 else 3
        for k in range(n_robots):
            layer, idx = divmod(k, side * side) if n_robots > 9 else (0, k)
            x, y = (idx % side - (side - 1) / 2) * spacing, (idx // side - (side - 1) / 2) * spacing
            z = height + 0.5 * layer
            b.add_floating_urdf(urdf, params, (x + 0.05 * layer, y + 0.03 * layer, z), A1_STAND)
        return SceneSpec(b.build(), 1.0 / 240 if dt is None else dt, info={"n_robots": n_robots})

    return factory


for _n in (8, 27):
    register_scene(f"a1-drop-{_n}")(_a1_drop(_n))
