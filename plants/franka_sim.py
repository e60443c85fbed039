"""The full Panda with a spherical end effector and balls on a table, as a contact-simulator
scene (``plants.sim``), plus the arm model its impedance controller uses.

Built only through the simulator's public API (:class:`plants.sim.SceneBuilder`): the
example-robot-data ``panda.urdf`` is rewritten once into a cache file in which the gripper
fingers are welded (``finger_opening``) and a link ``ee_sphere`` carrying a collision sphere of
the simplified model's end-effector radius sits at ``panda_hand_tcp``; the scene keeps only that
sphere as robot collision geometry (the other links never come near the table in this task, and
convex hulls of the link meshes would cost GJK calls every step). Balls are free bodies (r =
0.0315 m, 0.132 kg, as :mod:`plants.models.franka_ball`) on the half-space z <= 0.

Contact parameters: end-effector sphere and balls k = 1e6 N/m, τ_d = 1 ms (the
``franka-push-ball`` scene's values), table rigid (SAP's β regularization), μ = 1 everywhere
(the paper's model). Robot links do not collide with the table.

State layout of the simulator: ``q = [7 arm joints, (ball position (3), quaternion (x, y, z,
w))...]``, ``v = [7 joint velocities, (ball linear velocity (world), angular velocity
(body))...]``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .models.franka_ball import BALL_MASS, BALL_RADIUS, EE_RADIUS

__all__ = ["FrankaSceneOptions", "panda_sphere_urdf", "build_franka_ball_scene",
           "arm_model", "solve_ik", "EE_FRAME", "N_ARM", "PANDA_HOME"]

EE_FRAME = "ee_sphere"
"""Frame at the end-effector sphere's centre (the TCP)."""
N_ARM = 7
PANDA_HOME = np.array([0.0, 0.36, 0.0, -2.39, 0.0, 2.748, 0.0])
"""The authors' nominal arm configuration (dairlib ``q_init_franka``) [rad]."""


@dataclass(frozen=True)
class FrankaSceneOptions:
    """Contact parameters of the scene (see module docstring).

    Attributes:
        mu: friction coefficient of every contact.
        stiffness: contact stiffness of the end-effector sphere and the balls [N/m].
        dissipation: τ_d of the end-effector sphere and the balls [s].
        ee_radius: end-effector sphere radius [m].
        ball_radius: [m].
        ball_mass: [kg].
        finger_opening: welded finger position [m].
    """

    mu: float = 1.0
    stiffness: float = 1e6
    dissipation: float = 1e-3
    ee_radius: float = EE_RADIUS
    ball_radius: float = BALL_RADIUS
    ball_mass: float = BALL_MASS
    finger_opening: float = 0.0

    def __post_init__(self) -> None:
        for name in ("stiffness", "ee_radius", "ball_radius", "ball_mass"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"FrankaSceneOptions.{name} must be > 0, got {v!r}")
        if not (np.isfinite(self.mu) and self.mu >= 0 and self.dissipation >= 0):
            raise ValueError("FrankaSceneOptions: mu and dissipation must be >= 0")
        if not 0.0 <= self.finger_opening <= 0.04:
            raise ValueError(f"finger_opening must be in [0, 0.04] m, got "
                             f"{self.finger_opening!r}")


def panda_sphere_urdf(ee_radius: float = EE_RADIUS, finger_opening: float = 0.0) -> Path:
    """Path of the rewritten Panda URDF (cached in the temp folder, keyed by its content)."""
    from .multibody.resources import example_robot_data_path

    src = example_robot_data_path("robots/panda_description/urdf/panda.urdf")
    root = ET.fromstring(Path(src).read_text())
    for j in root.findall("joint"):
        if j.get("name") in ("panda_finger_joint1", "panda_finger_joint2"):
            j.set("type", "fixed")
            for tag in ("limit", "axis", "dynamics", "mimic", "safety_controller"):
                for e in j.findall(tag):
                    j.remove(e)
            origin = j.find("origin")
            xyz = [float(s) for s in origin.get("xyz", "0 0 0").split()]
            sign = 1.0 if j.get("name").endswith("1") else -1.0
            xyz[1] += sign * finger_opening
            origin.set("xyz", " ".join(repr(v) for v in xyz))
    link = ET.SubElement(root, "link", name=EE_FRAME)
    inertial = ET.SubElement(link, "inertial")
    ET.SubElement(inertial, "origin", xyz="0 0 0", rpy="0 0 0")
    ET.SubElement(inertial, "mass", value="0.001")
    ET.SubElement(inertial, "inertia", ixx="1e-7", ixy="0", ixz="0", iyy="1e-7", iyz="0",
                  izz="1e-7")
    col = ET.SubElement(link, "collision")
    ET.SubElement(col, "origin", xyz="0 0 0", rpy="0 0 0")
    geo = ET.SubElement(col, "geometry")
    ET.SubElement(geo, "sphere", radius=repr(float(ee_radius)))
    joint = ET.SubElement(root, "joint", name="ee_sphere_joint", type="fixed")
    ET.SubElement(joint, "parent", link="panda_hand_tcp")
    ET.SubElement(joint, "child", link=EE_FRAME)
    ET.SubElement(joint, "origin", xyz="0 0 0", rpy="0 0 0")
    text = ET.tostring(root, encoding="unicode")
    key = hashlib.sha1(text.encode()).hexdigest()[:12]
    out = Path(tempfile.gettempdir()) / f"c3mpc_panda_sphere_{key}.urdf"
    if not out.exists():
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, out)
    return out


def arm_model(options: FrankaSceneOptions | None = None) -> Any:
    """The Pinocchio model of the arm alone (7 joints, fingers welded): the controller's M_f."""
    import pinocchio as pin

    o = options or FrankaSceneOptions()
    return pin.buildModelFromUrdf(str(panda_sphere_urdf(o.ee_radius, o.finger_opening)))


def solve_ik(model: Any, p_des: Sequence[float], q0: Sequence[float] = PANDA_HOME,
             frame: str = EE_FRAME, R_des: np.ndarray | None = None, iters: int = 200,
             tol: float = 1e-6) -> np.ndarray:
    """Joint angles putting ``frame`` at ``p_des`` (and orientation ``R_des``, default: the
    orientation at ``q0``), by damped least squares from ``q0``.

    Raises:
        ValueError: no solution within ``iters`` iterations (error above ``tol``).
    """
    import pinocchio as pin

    data = model.createData()
    fid = model.getFrameId(frame)
    q = np.asarray(q0, float).copy()
    pin.framesForwardKinematics(model, data, q)
    R_des = data.oMf[fid].rotation.copy() if R_des is None else np.asarray(R_des, float)
    p_des = np.asarray(p_des, float)
    err = np.inf
    for _ in range(iters):
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacement(model, data, fid)
        M = data.oMf[fid]
        e = np.concatenate([p_des - M.translation, pin.log3(R_des @ M.rotation.T)])
        err = float(np.linalg.norm(e))
        if err < tol:
            return q
        J = pin.getFrameJacobian(model, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        q = q + J.T @ np.linalg.solve(J @ J.T + 1e-6 * np.eye(6), e)
    raise ValueError(f"solve_ik: no solution for p_des={p_des} (error {err:.2e})")


def build_franka_ball_scene(q_arm: Sequence[float], ball_positions: Sequence[Sequence[float]],
                            options: FrankaSceneOptions | None = None) -> Any:
    """The :class:`plants.sim.Scene`: arm at ``q_arm`` (7,), balls at rest at the given centres
    (k, 3) [m]."""
    from .sim import ContactParams, SceneBuilder, Sphere
    from .sim.scene import sphere_inertia

    o = options or FrankaSceneOptions()
    b = SceneBuilder(margin=0.01, excluded_groups=[("robot", "ground"), ("robot", "robot")])
    soft = ContactParams(o.stiffness, o.dissipation, o.mu)
    b.add_urdf(panda_sphere_urdf(o.ee_radius, o.finger_opening), soft,
               q0=np.asarray(q_arm, float), collision_links=[EE_FRAME])
    b.add_ground(ContactParams(float("inf"), 0.0, o.mu))
    I = sphere_inertia(o.ball_mass, o.ball_radius)
    for i, p in enumerate(np.asarray(ball_positions, float).reshape(-1, 3)):
        b.add_free_body(f"ball{i}", o.ball_mass, I,
                        [(f"ball{i}", Sphere(o.ball_radius), soft, (0, 0, 0), None, "ball")],
                        tuple(p))
    return b.build()
