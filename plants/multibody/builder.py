"""Programmatic multibody models from primitive shapes (Pinocchio model + coal geometry).

Example::

    from plants.multibody import ModelBuilder, ContactPair, Sphere, HalfSpace
    b = ModelBuilder()
    b.add_body("ground", parent="universe", joint="fixed", shape=HalfSpace())
    b.add_body("ball", joint="free", placement=[0, 0, 0.1], mass=0.5, shape=Sphere(0.05))
    plant = b.build([ContactPair("ball", "ground", mu=0.5)])

Each body gets a joint named ``"<body>_joint"`` (none for ``joint="fixed"``), a BODY frame named
``"<body>"`` and, when ``shape`` is given, a collision geometry named ``"<body>"``. Extra shapes
are added with :meth:`ModelBuilder.add_geometry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, Union

import numpy as np

from .contacts import ContactPair
from .errors import MultibodyTypeError, MultibodyValueError
from .model import MultibodyPlant

__all__ = ["ModelBuilder", "Sphere", "Box", "Cylinder", "HalfSpace", "Plane", "Shape",
           "JOINT_TYPES"]


def _positive(name: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as e:
        raise MultibodyTypeError(f"{name} must be a positive number, got {value!r}") from e
    if not (v > 0 and np.isfinite(v)):
        raise MultibodyValueError(f"{name} must be positive and finite, got {value!r}")
    return v


@dataclass(frozen=True)
class Sphere:
    """A sphere of ``radius`` [m] centred at its frame."""

    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("Sphere.radius", self.radius))

    def coal(self) -> Any:
        """The coal collision geometry."""
        import coal

        return coal.Sphere(self.radius)

    def inertia(self, mass: float) -> Any:
        """The solid's ``pin.Inertia`` for ``mass`` [kg] about its centre."""
        import pinocchio as pin

        return pin.Inertia.FromSphere(mass, self.radius)


@dataclass(frozen=True)
class Box:
    """A box with full side lengths ``sx, sy, sz`` [m], centred at its frame."""

    sx: float
    sy: float
    sz: float

    def __post_init__(self) -> None:
        for n in ("sx", "sy", "sz"):
            object.__setattr__(self, n, _positive(f"Box.{n}", getattr(self, n)))

    def coal(self) -> Any:
        """The coal collision geometry."""
        import coal

        return coal.Box(self.sx, self.sy, self.sz)

    def inertia(self, mass: float) -> Any:
        """The solid's ``pin.Inertia`` for ``mass`` [kg] about its centre."""
        import pinocchio as pin

        return pin.Inertia.FromBox(mass, self.sx, self.sy, self.sz)


@dataclass(frozen=True)
class Cylinder:
    """A cylinder of ``radius`` and full ``length`` [m] along its frame's z axis, centred."""

    radius: float
    length: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("Cylinder.radius", self.radius))
        object.__setattr__(self, "length", _positive("Cylinder.length", self.length))

    def coal(self) -> Any:
        """The coal collision geometry."""
        import coal

        return coal.Cylinder(self.radius, self.length)

    def inertia(self, mass: float) -> Any:
        """The solid's ``pin.Inertia`` for ``mass`` [kg] about its centre."""
        import pinocchio as pin

        return pin.Inertia.FromCylinder(mass, self.radius, self.length)


@dataclass(frozen=True)
class HalfSpace:
    """The half-space ``{p : normal·p <= offset}`` in its frame (solid below the plane).

    The signed distance to it is negative inside. Attach it to a fixed body (``"universe"``).
    """

    normal: tuple[float, float, float] = (0.0, 0.0, 1.0)
    offset: float = 0.0

    def __post_init__(self) -> None:
        n = np.asarray(self.normal, dtype=float).reshape(-1)
        if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-12:
            raise MultibodyValueError(f"HalfSpace.normal must be a nonzero 3-vector, got "
                                      f"{self.normal!r}")
        n = n / np.linalg.norm(n)
        object.__setattr__(self, "normal", (float(n[0]), float(n[1]), float(n[2])))
        object.__setattr__(self, "offset", float(self.offset))

    def coal(self) -> Any:
        """The coal collision geometry."""
        import coal

        return coal.Halfspace(np.array(self.normal), self.offset)

    def inertia(self, mass: float) -> Any:
        """A half-space has no inertia (always raises)."""
        raise MultibodyValueError("a HalfSpace has no inertia: give inertia= explicitly or "
                                  "attach it with joint='fixed' and mass=0")


#: A plane as a contact surface is the half-space below it (one-sided, signed distance).
Plane = HalfSpace

Shape = Union[Sphere, Box, Cylinder, HalfSpace]

JOINT_TYPES = ("free", "planar", "prismatic_x", "prismatic_y", "prismatic_z",
               "revolute_x", "revolute_y", "revolute_z", "fixed")


def _placement(value: Any, what: str) -> Any:
    """SE3 from None, an SE3, a (3,) translation, a (4, 4) transform, or (R (3,3), p (3,))."""
    import pinocchio as pin

    if value is None:
        return pin.SE3.Identity()
    if isinstance(value, pin.SE3):
        return pin.SE3(value)
    if isinstance(value, tuple) and len(value) == 2:
        R = np.asarray(value[0], dtype=float)
        p = np.asarray(value[1], dtype=float).reshape(-1)
        if R.shape != (3, 3) or p.shape != (3,):
            raise MultibodyValueError(f"{what}: (R, p) must be a (3, 3) rotation and a (3,) "
                                      f"translation")
        return pin.SE3(R, p)
    arr = np.asarray(value, dtype=float)
    if arr.shape == (3,):
        return pin.SE3(np.eye(3), arr)
    if arr.shape == (4, 4):
        return pin.SE3(arr)
    raise MultibodyValueError(f"{what} must be None, a pin.SE3, a (3,) translation, a (4, 4) "
                              f"transform or (R, p), got shape {arr.shape}")


class ModelBuilder:
    """Builds a Pinocchio model and its coal collision model from primitive shapes."""

    def __init__(self) -> None:
        import pinocchio as pin

        self._pin = pin
        self.model = pin.Model()
        self.collision_model = pin.GeometryModel()
        # body name -> (joint id, placement of the body frame in that joint's frame, frame id)
        self._bodies: dict[str, tuple[int, Any, int]] = {"universe": (0, pin.SE3.Identity(), 0)}

    def _body(self, name: str) -> tuple[int, Any, int]:
        if name not in self._bodies:
            raise MultibodyValueError(f"unknown parent body {name!r}; bodies so far: "
                                      f"{', '.join(repr(b) for b in self._bodies)}")
        return self._bodies[name]

    def add_body(self, name: str, parent: str = "universe", joint: str = "free",
                 placement: Any = None, mass: float = 1.0, shape: Shape | None = None,
                 inertia: Any = None) -> "ModelBuilder":
        """Add a rigid body attached to ``parent`` by ``joint``.

        Args:
            name: unique body name (also its collision geometry's name when ``shape`` is given).
            parent: the parent body (``"universe"`` is the world).
            joint: one of :data:`JOINT_TYPES`. ``"planar"`` moves in the joint frame's x-y
                plane and rotates about its z; orient it with ``placement``. ``"fixed"`` welds
                the body to its parent.
            placement: the joint frame (= body frame at q = 0) in the parent body's frame:
                None, pin.SE3, (3,) translation, (4, 4) or (R, p).
            mass: [kg] (> 0 for a moving body; 0 allowed for fixed bodies).
            shape: a collision shape centred at the body frame (None: no geometry).
            inertia: a ``pin.Inertia`` (default: the solid shape's inertia with ``mass``).

        Returns:
            self, for chaining.

        Raises:
            ValueError: duplicate name, unknown parent or joint type, bad mass/placement.
        """
        pin = self._pin
        if not isinstance(name, str) or not name:
            raise MultibodyTypeError(f"body name must be a non-empty string, got {name!r}")
        if name in self._bodies:
            raise MultibodyValueError(f"a body named {name!r} already exists")
        if joint not in JOINT_TYPES:
            raise MultibodyValueError(f"joint must be one of {JOINT_TYPES}, got {joint!r}")
        parent_joint, parent_in_joint, parent_frame = self._body(parent)
        M = parent_in_joint * _placement(placement, "placement")
        m = float(mass)
        if not (np.isfinite(m) and m >= 0):
            raise MultibodyValueError(f"mass must be >= 0 [kg], got {mass!r}")
        if joint != "fixed" and m <= 0 and inertia is None:
            raise MultibodyValueError(f"body {name!r} on a moving joint needs mass > 0")
        if inertia is None:
            if m == 0:
                inertia = pin.Inertia.Zero()
            elif shape is None:
                raise MultibodyValueError(f"body {name!r}: give a shape or an inertia")
            else:
                inertia = shape.inertia(m)
        if joint == "fixed":
            jid = parent_joint
            body_in_joint = M
            fid = self.model.addFrame(pin.Frame(name, jid, parent_frame, body_in_joint,
                                                pin.FrameType.BODY))
            if m > 0 or inertia is not None:
                self.model.appendBodyToJoint(jid, inertia, body_in_joint)
        else:
            jm = {
                "free": pin.JointModelFreeFlyer, "planar": pin.JointModelPlanar,
                "prismatic_x": pin.JointModelPX, "prismatic_y": pin.JointModelPY,
                "prismatic_z": pin.JointModelPZ, "revolute_x": pin.JointModelRX,
                "revolute_y": pin.JointModelRY, "revolute_z": pin.JointModelRZ,
            }[joint]()
            jid = self.model.addJoint(parent_joint, jm, M, f"{name}_joint")
            self.model.addJointFrame(jid, parent_frame)
            self.model.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
            body_in_joint = pin.SE3.Identity()
            fid = self.model.addBodyFrame(name, jid, body_in_joint, -1)
        self._bodies[name] = (jid, body_in_joint, fid)
        if shape is not None:
            self.add_geometry(name, name, shape)
        return self

    def add_geometry(self, name: str, body: str, shape: Shape,
                     placement: Any = None) -> "ModelBuilder":
        """Attach a collision shape named ``name`` to ``body`` at ``placement`` (body frame)."""
        pin = self._pin
        if not hasattr(shape, "coal"):
            raise MultibodyTypeError(f"shape must be a Sphere, Box, Cylinder or HalfSpace, got "
                                     f"{type(shape).__name__}")
        if any(g.name == name for g in self.collision_model.geometryObjects):
            raise MultibodyValueError(f"a collision geometry named {name!r} already exists")
        jid, body_in_joint, fid = self._body(body)
        P = body_in_joint * _placement(placement, "placement")
        geom = pin.GeometryObject(name, jid, fid, P, shape.coal())
        self.collision_model.addGeometryObject(geom)
        return self

    def build(self, contact_pairs: Sequence[ContactPair] = (), *,
              actuated_joints: Sequence[str] | None = None, actuation: Any = None,
              name: str = "multibody") -> MultibodyPlant:
        """The :class:`MultibodyPlant` of the bodies added so far.

        Args:
            contact_pairs: the configured pairs (body or geometry names).
            actuated_joints: joint (``"<body>_joint"``) or body names with one input per joint
                velocity, in the given order. None: all non-floating joints.
            actuation: an explicit (n_v, n_u) B instead of ``actuated_joints``.
            name: the plant's label.
        """
        if actuation is not None and actuated_joints is not None:
            raise MultibodyValueError("give actuated_joints or actuation, not both")
        if actuation is None:
            joints = None
            if actuated_joints is not None:
                if isinstance(actuated_joints, str):
                    actuated_joints = [actuated_joints]
                names = set(self.model.names)
                joints = [j if j in names or f"{j}_joint" not in names else f"{j}_joint"
                          for j in actuated_joints]
            actuation = MultibodyPlant.actuation_for_joints(self.model, joints)
        return MultibodyPlant(self.model.copy(), self.collision_model.copy(), contact_pairs,
                              actuation=actuation, name=name)
