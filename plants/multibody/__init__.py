"""Pinocchio multibody plants with coal collision geometry, and their LCS (seed 003 §IV).

Public API::

    from plants.multibody import MultibodyPlant, ContactPair, ModelBuilder, Sphere, Box, HalfSpace
    plant = MultibodyPlant.from_urdf(path, [ContactPair("ee", "table", mu=0.4)])
    plant = MultibodyPlant.from_mjcf(path_xml, [...])            # all bodies, one joint per MJCF
                                                               # joint, start pose in plant.q0
    plant.n_q, plant.n_v, plant.n_x, plant.n_u
    xdot = plant.forward_dynamics(x, u)                        # smooth, no contact
    lcs = plant.lcs(x, u, contact_model="stewart_trinkle", dt=0.01)   # or "anitescu",
                                                               # "frictionless_spring"
    x_next, lam = plant.step(x, u, dt=0.01)                    # one LCS step
    x_ref = plant.simulate_nonlinear_step(x, u, dt=0.01)       # nonlinear reference step
    res = solve_ik(plant.model, "ee_link", [0.4, 0, 0.1], rpy_quaternion([3.14159, 0, 0]))
                                                               # res.q, res.status (IKStatus)

The math is in ``docs/lcs-factory.md``.
"""

from .builder import JOINT_TYPES, Box, Cylinder, HalfSpace, ModelBuilder, Plane, Shape, Sphere
from .contacts import ContactDescription, ContactGeometry, ContactKinematics, ContactPair
from .errors import (
    MissingCollisionGeometryError,
    ModelImportWarning,
    MultibodyError,
    MultibodyTypeError,
    MultibodyValueError,
    UnknownFrameError,
    UnknownGeometryError,
    UnknownJointError,
    UnreachablePoseError,
)
from .ik import IKOptions, IKResult, IKStatus, frame_pose, solve_ik
from .model import FLOATING_JOINTS, LCP_REGULARIZATIONS, MultibodyPlant, solve_contact_lcp
from .mjcf import MJCFModel, load_mjcf
from .orientation import align_quaternions, quaternion_angle, rpy_quaternion
from .resources import example_robot_data_dir, example_robot_data_path
from .urdf import load_urdf

__all__ = [
    "MultibodyPlant",
    "ContactPair",
    "ModelBuilder",
    "Sphere",
    "Box",
    "Cylinder",
    "HalfSpace",
    "Plane",
    "Shape",
    "JOINT_TYPES",
    "FLOATING_JOINTS",
    "solve_contact_lcp",
    "LCP_REGULARIZATIONS",
    "ContactDescription",
    "ContactKinematics",
    "ContactGeometry",
    "MultibodyError",
    "MultibodyValueError",
    "MultibodyTypeError",
    "UnknownGeometryError",
    "UnknownJointError",
    "MissingCollisionGeometryError",
    "UnknownFrameError",
    "UnreachablePoseError",
    "ModelImportWarning",
    "solve_ik",
    "frame_pose",
    "IKOptions",
    "IKResult",
    "IKStatus",
    "load_urdf",
    "load_mjcf",
    "MJCFModel",
    "example_robot_data_dir",
    "example_robot_data_path",
    "quaternion_angle",
    "align_quaternions",
    "rpy_quaternion",
]
