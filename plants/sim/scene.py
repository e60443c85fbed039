"""Scene description: a Pinocchio model of several bodies (free bodies, planar bodies, URDF/MJCF
robots) with collision geometries, per-geometry contact parameters and joint springs.

``SceneBuilder`` assembles one ``pinocchio.Model`` whose joints form a forest of trees (a free
body, or a whole robot, is one tree). Every ``add_*`` call appends whole trees after the previous
ones, so each tree owns contiguous velocity indices (the block structure :class:`ContactProblem`
relies on) whatever the order of the calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import SceneError
from ..multibody.placement import base_placement, place_fixed_base
from ..multibody.resources import default_package_dirs, example_robot_data_dir  # one locator for all of plants
from .geometry import Box, CoalShape, ContactDetector, ContactParams, Geometry, HalfSpace, Sphere

__all__ = ["SceneBuilder", "Scene", "JointSpring", "JointLimit", "BilateralConstraint", "JointCoupler",
           "PDActuator", "example_robot_data_dir"]


def _pin():
    import pinocchio as pin

    return pin


@dataclass(frozen=True)
class JointSpring:
    """Linear spring-damper on one scalar dof: f = −stiffness (q − rest) − damping v.

    ``stiffness`` [N/m or N·m/rad] and ``damping`` enter K and D of seed 001 eq. (15).
    """

    dof: int
    stiffness: float
    rest: float = 0.0
    damping: float = 0.0

    def __post_init__(self) -> None:
        if self.stiffness < 0 or self.damping < 0 or not np.isfinite([self.stiffness, self.damping]).all():
            raise ValueError("JointSpring stiffness and damping must be finite and >= 0 (K, D ⪰ 0)")


@dataclass(frozen=True)
class JointLimit:
    """Position limits of one scalar joint: ``lower ≤ q[q_index] ≤ upper`` (±inf: none).

    ``dof`` is the joint's velocity index, ``q_index`` its configuration index; limits are in the
    joint's unit ([rad] or [m]). The simulator enforces them as unilateral constraints.
    """

    dof: int
    q_index: int
    lower: float
    upper: float
    name: str = ""


def _compliance(stiffness: float | None, damping: float, what: str) -> tuple[float | None, float]:
    """Checked (stiffness, damping) of a constraint: None = near-rigid; else k > 0, d ≥ 0."""
    if stiffness is not None:
        stiffness = float(stiffness)
        if not (stiffness > 0):  # inf allowed: rigid
            raise ValueError(f"{what}: stiffness must be > 0 (or None: near-rigid), got {stiffness}")
    damping = float(damping)
    if not (np.isfinite(damping) and damping >= 0):
        raise ValueError(f"{what}: damping must be finite and >= 0, got {damping}")
    if damping > 0 and stiffness is None:
        raise ValueError(f"{what}: damping needs a finite stiffness (a near-rigid constraint has none)")
    return stiffness, damping


@dataclass(frozen=True)
class BilateralConstraint:
    """A bilateral constraint between two bodies (Pinocchio joints; 0 = the world).

    Kinds (``docs/sap.md``, "Constraints beyond contact"):

    * ``"ball"`` (3 rows): the point ``point_a`` of body a coincides with ``point_b`` of body b
      (a spherical joint closing a loop);
    * ``"weld"`` (6 rows): the frames ``(rotation_a, point_a)`` and ``(rotation_b, point_b)``
      coincide (position and orientation);
    * ``"distance"`` (1 row): ``‖p_b − p_a‖ = distance``.

    Points and rotations are in the frame of each body's joint. ``stiffness`` None: near-rigid
    (a stiffness whose period is one time step on the row's effective mass, SAP's regularization
    of a rigid constraint, seed 001 eq. 29); else a spring ``k`` [N/m or N·m/rad] with damping
    ``damping`` [N·s/m], the law of seed 000 eq. (4) / seed 001 eq. (17).
    """

    kind: str
    joint_a: int
    joint_b: int
    point_a: np.ndarray
    point_b: np.ndarray
    rotation_a: np.ndarray
    rotation_b: np.ndarray
    distance: float = 0.0
    stiffness: float | None = None
    damping: float = 0.0
    name: str = ""

    @property
    def n_rows(self) -> int:
        return {"ball": 3, "weld": 6, "distance": 1}[self.kind]


@dataclass(frozen=True)
class JointCoupler:
    """``q[q1] = multiplier · q[q0] + offset`` between two scalar joints (URDF ``<mimic>``).

    ``dof0``/``q0`` are the velocity/configuration indices of the leading joint, ``dof1``/``q1``
    those of the following one. Compliance as :class:`BilateralConstraint`.
    """

    dof0: int
    q0: int
    dof1: int
    q1: int
    multiplier: float = 1.0
    offset: float = 0.0
    stiffness: float | None = None
    damping: float = 0.0
    name: str = ""


@dataclass(frozen=True)
class PDActuator:
    """A PD-controlled actuator on a scalar joint, solved implicitly with the contacts (seed 001
    §VII): ``τ = clamp(−kp (q − q_target) − kd (v − v_target), −effort_limit, effort_limit)``
    with q, v those at the **end** of the step.

    Attributes: dof, q_index (the joint's indices), kp [N/m or N·m/rad] > 0, kd [N·s/m] ≥ 0,
    effort_limit [N or N·m] > 0 (inf: none), target: initial position target, name: joint name.
    """

    dof: int
    q_index: int
    kp: float
    kd: float
    effort_limit: float
    target: float
    name: str = ""


def _vec3(name: str, value: Any) -> np.ndarray:
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.shape != (3,) or not np.isfinite(arr).all():
        raise ValueError(f"{name} must be 3 finite coordinates [m], got {value!r}")
    return arr


def _contact_cap(name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an int >= 1 (contact points per geometry pair), got {value!r}")
    return int(value)


def _rot(rotation: Any) -> np.ndarray:
    R = np.eye(3) if rotation is None else np.asarray(rotation, float).reshape(3, 3)
    return R


def box_inertia(mass: float, half: Sequence[float]) -> np.ndarray:
    """Rotational inertia (3, 3) of a solid box of half extents ``half``."""
    a, b, c = (2.0 * np.asarray(half, float)) ** 2
    return mass / 12.0 * np.diag([b + c, a + c, a + b])


def sphere_inertia(mass: float, radius: float) -> np.ndarray:
    """Rotational inertia (3, 3) of a solid sphere."""
    return 0.4 * mass * radius**2 * np.eye(3)


class SceneBuilder:
    """Builds a :class:`Scene`.

    Args:
        gravity: (3,) in [m/s²].
        margin: contact detection margin [m]: pairs closer than this become (speculative)
            contacts of the step.
        excluded_groups: pairs of collision-group names that never collide.
        max_contacts_per_pair: the most contact points of one geometry pair, >= 1 (default 4:
            box / half-space and box / box pairs get their contact manifold, so a resting box
            stands on its 4 corners and a tipping box pivots about an edge; every other pair
            has one point). 1 keeps one point per pair.
        contacts_per_pair: caps for particular pairs of collision groups, overriding
            ``max_contacts_per_pair``: ``{("cube_box", "cube_box"): 1}``.
    """

    def __init__(
        self,
        gravity: Sequence[float] = (0.0, 0.0, -9.81),
        margin: float = 0.01,
        excluded_groups: Iterable[tuple[str, str]] = (),
        max_contacts_per_pair: int = 4,
        contacts_per_pair: dict[tuple[str, str], int] | None = None,
    ):
        pin = _pin()
        self.model = pin.Model()
        self.model.gravity.linear = np.asarray(gravity, float)
        self.margin = float(margin)
        if not (np.isfinite(self.margin) and self.margin >= 0):
            raise ValueError(f"margin must be >= 0 [m], got {margin}")
        self.excluded = {frozenset(p) for p in excluded_groups}
        self.max_contacts_per_pair = _contact_cap("max_contacts_per_pair", max_contacts_per_pair)
        if contacts_per_pair is not None and not isinstance(contacts_per_pair, dict):
            raise TypeError("contacts_per_pair must be a dict {(group, group): cap}, "
                            f"got {type(contacts_per_pair).__name__}")
        for k in contacts_per_pair or {}:
            if not (isinstance(k, tuple) and len(k) == 2 and all(isinstance(g, str) for g in k)):
                raise TypeError(f"contacts_per_pair keys must be pairs of group names (str, str), got {k!r}")
        self.contacts_per_pair = {frozenset(k): _contact_cap(f"contacts_per_pair[{k!r}]", v)
                                  for k, v in (contacts_per_pair or {}).items()}
        self.geoms: list[Geometry] = []
        self.q0: list[np.ndarray] = []
        self.v0: list[np.ndarray] = []
        self.springs: list[JointSpring] = []
        self.bodies: dict[str, int] = {}  # name -> joint id of its root joint
        self.limits: list[JointLimit] = []  # joint position limits (add_urdf)
        self.effort_limits: dict[int, float] = {}  # dof -> effort limit [N or N·m] (add_urdf)
        self.constraint_specs: list[tuple] = []  # bilateral constraints, resolved at build (need q0)
        self.couplers: list[JointCoupler] = []
        self.actuators: list[PDActuator] = []
        self.joint_damping: dict[int, float] = {}  # dof -> viscous damping [N·s/m or N·m·s/rad]
        self.joint_friction: dict[int, float] = {}  # dof -> dry (Coulomb) friction [N or N·m]
        self.self_pairs: set[tuple[int, int]] = set()  # same-tree geometry pairs that collide
        self.excluded_pairs: set[tuple[int, int]] = set()  # geometry pairs that never collide

    # ------------------------------------------------------------------ content
    def add_world_geometry(self, name: str, shape: Any, params: ContactParams, rotation=None, translation=(0, 0, 0), group: str = "world") -> None:
        """Anchored geometry (ground half-space, walls)."""
        self._add_geom(name, shape, 0, rotation, translation, params, group)

    def add_ground(self, params: ContactParams, height: float = 0.0, name: str = "ground") -> None:
        """The half-space z ≤ height."""
        self.add_world_geometry(name, HalfSpace(), params, translation=(0, 0, height), group="ground")

    def _add_geom(self, name, shape, joint, rotation, translation, params, group):
        if not isinstance(params, ContactParams):
            raise TypeError(f"params of geometry {name!r} must be ContactParams, got {type(params).__name__}")
        if any(g.name == name for g in self.geoms):
            raise ValueError(f"geometry name {name!r} is already used")
        self.geoms.append(
            Geometry(name, shape, int(joint), _rot(rotation), np.asarray(translation, float).reshape(3), params, group)
        )

    def add_free_body(
        self,
        name: str,
        mass: float,
        inertia: np.ndarray,
        geometries: Sequence[tuple],
        position: Sequence[float] = (0, 0, 0),
        quaternion: Sequence[float] = (0, 0, 0, 1),
        velocity: Sequence[float] = (0, 0, 0, 0, 0, 0),
    ) -> int:
        """A free rigid body (a tree of 6 dofs): a translation joint carrying a spherical joint.

        q = (position (3), quaternion (x, y, z, w)), as a free-flyer; v = (linear velocity of the
        centre of mass in the **world** frame, angular velocity in the **body** frame).

        Args:
            name: body name.
            mass: [kg] > 0.
            inertia: (3, 3) rotational inertia about the centre of mass (body frame).
            geometries: tuples ``(name, shape, params[, translation[, rotation[, group]]])`` in the
                body frame; at least one (a body without collision geometry is an error).
            position, quaternion: initial pose, quaternion (x, y, z, w).
            velocity: initial (linear world-frame, angular body-frame) velocity.

        Returns:
            The Pinocchio joint index.
        """
        pin = _pin()
        mass = float(mass)
        if not (np.isfinite(mass) and mass > 0):
            raise ValueError(f"mass of body {name!r} must be > 0 [kg], got {mass}")
        if not geometries:
            raise SceneError(f"body {name!r} has no collision geometry")
        # translation (world-aligned linear velocity) + spherical (body angular velocity):
        # same q layout as a free-flyer, but no ω × v term in the free motion, which explicit
        # schemes would integrate with a growing norm (the body-frame free-flyer convention).
        jt = self.model.addJoint(0, pin.JointModelTranslation(), pin.SE3.Identity(), name + "_translation")
        self.model.appendBodyToJoint(jt, pin.Inertia.Zero(), pin.SE3.Identity())
        jid = self.model.addJoint(jt, pin.JointModelSpherical(), pin.SE3.Identity(), name)
        self.model.appendBodyToJoint(jid, pin.Inertia(mass, np.zeros(3), np.asarray(inertia, float)), pin.SE3.Identity())
        self.model.addBodyFrame(name, jid, pin.SE3.Identity(), 0)
        quat = np.asarray(quaternion, float)
        quat = quat / np.linalg.norm(quat)
        self.q0.append(np.concatenate([np.asarray(position, float), quat]))
        self.v0.append(np.asarray(velocity, float).reshape(6))
        self._add_body_geoms(name, jid, geometries)
        self.bodies[name] = jid
        return jid

    def add_planar_body(
        self,
        name: str,
        mass: float,
        inertia_y: float,
        geometries: Sequence[tuple],
        x: float = 0.0,
        z: float = 0.0,
        angle: float = 0.0,
        velocity: Sequence[float] = (0, 0, 0),
    ) -> tuple[int, int, int]:
        """A body moving in the x-z plane: prismatic x, prismatic z, revolute y (a tree of 3 dofs).

        Returns the joint indices (x, z, angle); the dofs are consecutive.
        """
        pin = _pin()
        if not geometries:
            raise SceneError(f"body {name!r} has no collision geometry")
        jx = self.model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), name + "_x")
        self.model.appendBodyToJoint(jx, pin.Inertia.Zero(), pin.SE3.Identity())
        jz = self.model.addJoint(jx, pin.JointModelPZ(), pin.SE3.Identity(), name + "_z")
        self.model.appendBodyToJoint(jz, pin.Inertia.Zero(), pin.SE3.Identity())
        jr = self.model.addJoint(jz, pin.JointModelRY(), pin.SE3.Identity(), name + "_angle")
        I = np.diag([inertia_y, inertia_y, inertia_y])
        self.model.appendBodyToJoint(jr, pin.Inertia(float(mass), np.zeros(3), I), pin.SE3.Identity())
        self.q0.append(np.array([x, z, angle], float))
        self.v0.append(np.asarray(velocity, float).reshape(3))
        self._add_body_geoms(name, jr, geometries)
        self.bodies[name] = jx
        return jx, jz, jr

    def _add_body_geoms(self, body, jid, geometries):
        for g in geometries:
            gname, shape, params, *rest = g
            translation = rest[0] if len(rest) > 0 else (0, 0, 0)
            rotation = rest[1] if len(rest) > 1 else None
            group = rest[2] if len(rest) > 2 else "default"
            self._add_geom(f"{body}/{gname}", shape, jid, rotation, translation, params, group)

    def add_urdf(
        self,
        path: str | Path,
        params: ContactParams,
        q0: Sequence[float] | None = None,
        collision_links: Sequence[str] | None = None,
        group: str = "robot",
        package_dirs: Sequence[str] | None = None,
        *,
        floating_base: bool = False,
        prefix: str = "",
        base_position: Sequence[float] = (0.0, 0.0, 0.0),
        base_quaternion: Sequence[float] = (0.0, 0.0, 0.0, 1.0),
        v0: Sequence[float] | None = None,
        min_bounding_radius: float = 0.0,
        self_collision: bool = True,
        self_collision_exclude: Iterable[tuple[str, str]] = (),
        self_collision_include: Iterable[tuple[str, str]] = (),
        joint_limits: bool = True,
        effort_limits: bool = True,
        mimic: bool = True,
        joint_dynamics: bool = True,
    ) -> int:
        """A robot from URDF (or MJCF with a ``.xml`` suffix), with its collision geometry.

        Collision meshes become their convex hulls, cylinders and other primitives coal shapes
        (signed distances by GJK/EPA).

        Names come from the file: joint names, link (body) names and collision-geometry names
        (URDF ``<collision name>``, MJCF ``<geom name>``; generated only where the file has none:
        ``<link>_<k>``), each with ``prefix`` prepended. An MJCF file is read by
        :func:`plants.multibody.mjcf.load_mjcf` (every body, one Pinocchio joint per MJCF joint,
        free bodies at their start pose), a URDF by :func:`plants.multibody.urdf.load_urdf`.

        Self-collision filter (``self_collision=True``, the default): pairs of the robot's own
        geometries collide except (a) geometries of the same rigid body (one link, or links welded
        by fixed joints), (b) geometries of adjacent bodies (a body and its parent body, welded
        links counting as one body as in Drake's filter; geometry the file attaches to the world
        itself, such as an MJCF ``<worldbody>`` plane, is never adjacent, as MuJoCo's
        ``filterparent``), (c) pairs of one articulated robot (links below the same top link) that
        overlap (φ < 0) at the start configuration (q0 and the base pose), and (d) the pairs in
        ``self_collision_exclude``. ``self_collision_include``
        re-enables pairs that (b) or (c) excluded. ``self_collision=False``: none of the robot's
        pairs collide. The pairs are given by link or geometry names (without ``prefix``).

        Joint limits (``joint_limits=True``): the finite position limits of the robot's scalar
        joints (URDF ``<limit lower upper>``, MJCF ``range``) become unilateral constraints of the
        contact problem (see :class:`plants.sim.stepper.Simulator`). Effort limits
        (``effort_limits=True``): the actuation the simulator applies to a dof is clamped to the
        file's effort limit (URDF ``<limit effort>``, MJCF ``actuatorfrcrange``/actuator range).

        With ``floating_base=True`` the robot's root link is attached to the world by a free
        6-dof root that has the same layout as :meth:`add_free_body`. It is one Pinocchio composite
        joint: a translation followed by a spherical joint.
        q = (base position (3) [m], base quaternion (x, y, z, w), joint positions (n_q − 7)) and
        v = (base linear velocity in the **world** frame [m/s], base angular velocity in the
        **base** frame [rad/s], joint velocities (n_v − 6)). ``pinocchio.integrate`` is exact on
        it. The velocity is not Pinocchio's free-flyer (body-frame) convention.

        Args:
            path: URDF/MJCF file.
            params: contact parameters of every robot geometry.
            q0: initial joint configuration (default: the file's start configuration, i.e.
                ``pinocchio.neutral`` or MJCF ``qpos0``, clipped into the joint limits). Fixed
                base: (n_q,). Floating base:
                the joints after the root, (n_q − 7,); the base pose comes from ``base_position``
                and ``base_quaternion``.
            collision_links: keep only the geometries of these links, and those whose name (before
                ``prefix``) starts with one of these strings (default: all).
            group: collision group of the robot geometries.
            package_dirs: folders for ``package://`` URIs (default: the file's ancestors and the
                example-robot-data share folder, :func:`plants.multibody.resources.default_package_dirs`).
            floating_base: attach the root link by the free root described above (default: fixed to
                the world at the identity).
            prefix: prepended to the robot's joint, frame and geometry names, so that one file
                can be added several times (e.g. ``"a1_0/"``, ``"a1_1/"``).
            base_position: (3,) base position [m]: the initial base position with a floating base,
                the fixed placement of the robot's root in the world with a fixed base.
            base_quaternion: (4,) base orientation (x, y, z, w), normalized; initial (floating
                base) or fixed (fixed base) like ``base_position``.
            v0: initial velocity (n_v,) of the robot (default: zero); floating base: v as above.
            min_bounding_radius: drop collision geometries whose bounding radius [m] is below this
                (placeholders such as the A1's 1 mm IMU box). Default 0: keep all.
            self_collision: enable the robot's self-collision pairs (filtered as described above).
            self_collision_exclude: more (link or geometry name, link or geometry name) pairs that
                never collide.
            self_collision_include: pairs that collide although the default filter excludes them.
            joint_limits: enforce the file's joint position limits in the simulator.
            effort_limits: clamp the simulator's actuation to the file's effort limits.
            mimic: couple each URDF ``<mimic>`` joint to its leading joint (a
                :class:`JointCoupler`, ``q = multiplier · q_lead + offset``); False: independent.
            joint_dynamics: the URDF's ``<dynamics damping friction>`` as joint damping (implicit)
                and dry friction (a bounded constraint, solver ``"sap"`` only); False: ignored.

        Returns:
            The scene-model index of the robot's first joint (the free root with a floating base).

        Raises:
            SceneError: no collision geometry kept, or joint/frame names already in the scene (pass
                a distinct ``prefix``).
            ValueError: wrong sizes of ``q0``, ``v0``, ``base_position``, ``base_quaternion``, a
                non-finite/zero quaternion, or a negative ``min_bounding_radius``.
        """
        pin = _pin()
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(path)
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
        for flag, value in (("self_collision", self_collision), ("joint_limits", joint_limits),
                            ("effort_limits", effort_limits), ("floating_base", floating_base),
                            ("mimic", mimic), ("joint_dynamics", joint_dynamics)):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{flag} must be a bool, got {type(value).__name__}")
        min_bounding_radius = float(min_bounding_radius)
        if not (np.isfinite(min_bounding_radius) and min_bounding_radius >= 0):
            raise ValueError(f"min_bounding_radius must be a finite radius >= 0 [m], got {min_bounding_radius}")
        if package_dirs is None:
            package_dirs = default_package_dirs(path)
        mjcf = path.suffix == ".xml"
        root = None
        if floating_base:
            root = pin.JointModelComposite()
            root.addJoint(pin.JointModelTranslation())
            root.addJoint(pin.JointModelSpherical())
        if mjcf:
            from ..multibody.mjcf import load_mjcf

            loaded = load_mjcf(path, root, warn_springs=False)
            robot, gm, q_default = loaded.model, loaded.collision_model, loaded.q0
            file_excluded = list(loaded.excluded_body_pairs)
            file_springs = dict(loaded.joint_springs)
        else:
            from ..multibody.urdf import load_urdf

            robot, gm = load_urdf(path, root, list(package_dirs), warn_meshes=False, warn_dynamics=not joint_dynamics,
                                  warn_mimic=not mimic)
            q_default, file_excluded, file_springs = pin.neutral(robot), [], {}
        base = base_placement(base_position, base_quaternion)
        if not floating_base and q0 is None:  # a free body's start pose moves with its file
            from ..multibody.placement import place_free_poses

            q_default = place_free_poses(robot, q_default, base)
        q_robot = self._initial_configuration(robot, path, q0, floating_base, base_position, base_quaternion,
                                              q_default)
        if not floating_base:
            place_fixed_base(robot, gm, base)
        if v0 is None:
            v_robot = np.zeros(robot.nv)
        else:
            v_robot = np.asarray(v0, float).ravel()
            if v_robot.shape != (robot.nv,) or not np.isfinite(v_robot).all():
                raise ValueError(f"v0 of {path.name} must be {robot.nv} finite velocities, got shape {v_robot.shape}")
        link_of_geom = {go.name: robot.frames[go.parentFrame].name for go in gm.geometryObjects}
        body_parent = self._body_parents(robot)
        if prefix:
            for i in range(1, robot.njoints):
                robot.names[i] = prefix + robot.names[i]
            for i in range(1, len(robot.frames)):
                f = robot.frames[i]
                f.name = prefix + f.name
                robot.frames[i] = f
        for what, new_names, old_names in (
            ("joint", robot.names[1:], self.model.names[1:]),
            ("frame", [f.name for f in robot.frames[1:]], [f.name for f in self.model.frames[1:]]),
        ):
            clash = sorted(set(new_names) & set(old_names))
            if clash:
                raise SceneError(f"{path.name}: {what} names {clash[:3]} are already in the scene (pass a distinct prefix=)")
        offset = self.model.njoints - 1
        if self.model.njoints > 1:
            nq, nv = self.model.nq, self.model.nv
            from ..multibody.compose import append_model

            self.model = append_model(self.model, robot)  # (an MJCF body and joint may share a name)
            first = self.model.joints[offset + 1] if robot.njoints > 1 else None  # (a table: no joints)
            if (self.model.nq, self.model.nv) != (nq + robot.nq, nv + robot.nv) or (
                    first is not None and (first.idx_q, first.idx_v) != (nq, nv)):
                raise SceneError(f"{path.name}: the robot's joints were not appended after the scene's")  # q0 order
        else:
            g = self.model.gravity.linear.copy()
            self.model = robot
            self.model.gravity.linear = g
        self.q0.append(q_robot)
        self.v0.append(v_robot)
        n_added = 0
        kept = []  # (scene geometry index, link name, file geometry name, pin.GeometryObject)
        for go in gm.geometryObjects:
            if collision_links is not None and link_of_geom[go.name] not in collision_links and not any(
                    go.name.startswith(s) for s in collision_links):
                continue
            shape = self._coal_shape(go)
            if shape is None:
                raise SceneError(f"{path.name}: collision geometry {go.name!r} is an empty mesh")
            if shape.bounding_radius < min_bounding_radius:
                continue
            M = go.placement
            joint = go.parentJoint + offset if go.parentJoint > 0 else 0
            self._add_geom(prefix + go.name, shape, joint, M.rotation, M.translation, params, group)
            kept.append((len(self.geoms) - 1, link_of_geom[go.name], go.name, go))
            n_added += 1
        if not mjcf:  # the meshes actually kept (collision_links may keep a few of them)
            from ..multibody.urdf import warn_convex_hulls

            warn_convex_hulls(path, [go for *_, go in kept], stacklevel=2)
        if n_added == 0:
            raise SceneError(
                f"{path.name}: no collision geometry"
                + (f" on links {list(collision_links)}" if collision_links else "")
                + " (a mesh-only visual model cannot make contact)"
            )
        self._self_collision_filter(path, robot, q_robot, kept, body_parent, self_collision,
                                    list(self_collision_exclude) + file_excluded, list(self_collision_include))
        first_joint = offset + 1
        for jname, (stiffness, rest, damping) in file_springs.items():  # MJCF joint stiffness/damping
            dof = self.model.joints[self.model.getJointId(prefix + jname)].idx_v
            self.add_spring(JointSpring(dof, stiffness, rest, damping))
        for j in range(1, robot.njoints):
            jm = robot.joints[j]
            if jm.nq != 1 or jm.nv != 1:
                continue
            lo, hi = float(robot.lowerPositionLimit[jm.idx_q]), float(robot.upperPositionLimit[jm.idx_q])
            eff = float(robot.effortLimit[jm.idx_v]) if robot.effortLimit.size == robot.nv else np.inf
            dof = self.model.joints[j + offset].idx_v
            iq = self.model.joints[j + offset].idx_q
            if joint_limits and (np.isfinite(lo) or np.isfinite(hi)):
                if lo > hi:
                    raise SceneError(f"{path.name}: joint {robot.names[j]!r} has lower limit {lo} > upper {hi}")
                self.limits.append(JointLimit(dof, iq, lo, hi, robot.names[j]))
            if effort_limits and np.isfinite(eff) and eff > 0:
                self.effort_limits[dof] = eff
            if joint_dynamics and not mjcf:  # URDF <dynamics damping friction> (MJCF: its springs above)
                damping, friction = float(robot.damping[jm.idx_v]), float(robot.friction[jm.idx_v])
                if damping > 0:
                    self.joint_damping[dof] = damping
                if friction > 0:
                    self.joint_friction[dof] = friction
        if mimic and not mjcf:
            from ..multibody.urdf import urdf_mimic_joints

            missing = []
            for follower, leader, multiplier, offset in urdf_mimic_joints(path):
                if not (self.model.existJointName(prefix + leader) and self.model.existJointName(prefix + follower)):
                    missing.append(f"{follower} -> {leader}")  # a file whose mimic names no joint
                    continue
                self.add_coupler(prefix + leader, prefix + follower, multiplier, offset)
            if missing:
                import warnings

                from ..multibody.errors import ModelImportWarning

                warnings.warn(f"{path.name}: <mimic> elements naming joints the model does not have are ignored: "
                              f"{', '.join(missing)}", ModelImportWarning, stacklevel=2)
        return first_joint

    @staticmethod
    def _body_parents(robot) -> dict[str, str | None]:
        """Link name -> parent link name (None: the world), through joint and fixed-joint frames."""
        pin = _pin()
        frames = robot.frames
        out: dict[str, str | None] = {}
        for f in frames:
            if f.type != pin.FrameType.BODY:
                continue
            k = f.parentFrame
            while k > 0 and frames[k].type != pin.FrameType.BODY:
                k = frames[k].parentFrame
            out[f.name] = frames[k].name if k > 0 else None
        return out

    def _self_collision_filter(self, path, robot, q_robot, kept, body_parent, enabled, exclude, include) -> None:
        """Record which pairs of the robot's geometries collide (see :meth:`add_urdf`)."""
        import coal

        pin = _pin()
        names = {gname for _, _, gname, _ in kept} | {link for _, link, _, _ in kept}
        for what, pairs in (("self_collision_exclude", exclude), ("self_collision_include", include)):
            for pair in pairs:
                if len(pair) != 2:
                    raise ValueError(f"{what} entries must be (name, name) pairs, got {pair!r}")
                unknown = [n for n in pair if n not in names]
                if unknown and what == "self_collision_include":
                    raise ValueError(f"{path.name}: {what} names {unknown} are not links or collision geometries "
                                     f"of the robot; known: {sorted(names)}")
        def match(pair, a, b) -> bool:
            (ia, la, ga), (ib, lb, gb) = a, b
            x, y = pair
            return (x in (la, ga) and y in (lb, gb)) or (y in (la, ga) and x in (lb, gb))

        parents = list(robot.parents)

        def top(link: str) -> str:
            """The link at the top of ``link``'s chain of parent links."""
            while body_parent.get(link) is not None:
                link = body_parent[link]
            return link

        data = robot.createData()
        pin.forwardKinematics(robot, data, q_robot)
        poses = {}
        for idx, link, gname, go in kept:
            M = data.oMi[go.parentJoint] * go.placement
            poses[idx] = coal.Transform3s(M.rotation, M.translation)
        req = coal.DistanceRequest()
        req.enable_signed_distance = True
        for i in range(len(kept)):
            for k in range(i + 1, len(kept)):
                a, b = kept[i], kept[k]
                ga, gb = self.geoms[a[0]], self.geoms[b[0]]
                ja, jb = a[3].parentJoint, b[3].parentJoint
                same_body = a[1] == b[1] or ja == jb  # one link, or links welded together
                # adjacent: parent and child link (through the MJCF joint chains), or parent and
                # child rigid body (welded links count as one body, as Drake's filter); a world
                # geometry of the file itself (MJCF <worldbody><geom>, link "universe") never is
                world_side = (ja == 0 and a[1] == "universe") or (jb == 0 and b[1] == "universe")
                # (joint 0 is every link welded to the world: adjacent only within one robot)
                adjacent = (body_parent.get(a[1]) == b[1] or body_parent.get(b[1]) == a[1]
                            or (not world_side and (parents[ja] == jb or parents[jb] == ja)
                                and (0 not in (ja, jb) or top(a[1]) == top(b[1]))))
                key = (a[0], b[0])
                if not enabled or same_body:
                    self.excluded_pairs.add(key)
                    continue
                ta, tb = (a[0], a[1], a[2]), (b[0], b[1], b[2])
                if any(match(p, ta, tb) for p in exclude):
                    self.excluded_pairs.add(key)
                    continue
                forced = any(match(p, ta, tb) for p in include)
                overlap = False
                # the overlap rule is for one articulated robot (links below one top link), never
                # between separate bodies of a file (a cube resting on a table or on the floor)
                if not (adjacent or forced) and top(a[1]) == top(b[1]):
                    res = coal.DistanceResult()
                    d = coal.distance(ga.shape.coal(), poses[a[0]], gb.shape.coal(), poses[b[0]], req, res)
                    overlap = d < 0
                if (adjacent or overlap) and not forced:
                    self.excluded_pairs.add(key)
                else:
                    self.self_pairs.add(key)

    @staticmethod
    def _initial_configuration(robot, path: Path, q0, floating_base: bool, base_position, base_quaternion,
                               q_default) -> np.ndarray:
        """(n_q,) initial configuration of a robot being added (see :meth:`add_urdf`)."""
        from ..multibody.model import clip_into_limits

        # the default start (neutral, or MJCF qpos0) inside the joint limits: some files' neutral
        # (q = 0) lies outside them (Allegro's thumb joint_12.0 has lower = 0.263 rad)
        q = clip_into_limits(robot, q_default)
        n_joint_q = robot.nq - 7 if floating_base else robot.nq
        if q0 is not None:
            qj = np.asarray(q0, float).ravel()
            if qj.shape != (n_joint_q,) or not np.isfinite(qj).all():
                what = "joint positions after the floating base" if floating_base else "joint positions"
                raise ValueError(f"q0 of {path.name} must be {n_joint_q} finite {what}, got shape {qj.shape}")
            q[robot.nq - n_joint_q:] = qj
        if floating_base:
            pos = np.asarray(base_position, float).ravel()
            quat = np.asarray(base_quaternion, float).ravel()
            if pos.shape != (3,) or not np.isfinite(pos).all():
                raise ValueError(f"base_position must be 3 finite coordinates [m], got {base_position}")
            norm = np.linalg.norm(quat) if quat.shape == (4,) else 0.0
            if not (np.isfinite(norm) and norm > 0):
                raise ValueError(f"base_quaternion must be a non-zero (x, y, z, w), got {base_quaternion}")
            q[:3] = pos
            q[3:7] = quat / norm
        return q

    @staticmethod
    def _coal_shape(go) -> Any:
        import coal

        geom = go.geometry
        if isinstance(geom, coal.Sphere):
            return Sphere(geom.radius)
        if isinstance(geom, coal.Halfspace):  # MJCF plane: z <= 0 of its frame
            if np.allclose(np.asarray(geom.n, float), (0.0, 0.0, 1.0)) and geom.d == 0.0:
                return HalfSpace()
            raise SceneError(f"geometry {go.name!r}: only the half-space z <= 0 of its frame is supported")
        if isinstance(geom, coal.Box):
            return Box(tuple(np.asarray(geom.halfSide, float)))
        if isinstance(geom, coal.BVHModelBase):
            scale = np.asarray(go.meshScale, float)
            verts = np.asarray(geom.vertices(), float) * scale if hasattr(geom, "vertices") else None
            geom.buildConvexRepresentation(False)
            cvx = geom.convex
            if verts is None or not len(verts):
                return None
            return CoalShape(cvx, float(np.linalg.norm(verts, axis=1).max()))
        # other primitives (cylinder, capsule): bounding radius from the AABB
        geom.computeLocalAABB()
        bb = geom.aabb_local
        r = float(max(np.linalg.norm(bb.min_), np.linalg.norm(bb.max_)))
        return CoalShape(geom, r)

    # ------------------------------------------------------------------ constraints beyond contact
    def add_weld(self, body_a: str | None, body_b: str, *, position: Sequence[float] | None = None,
                 stiffness: float | None = None, damping: float = 0.0, name: str | None = None) -> None:
        """Weld body b to body a (None or ``"world"``: the world) at their relative pose in the
        scene's initial state: 6 bilateral rows (position of the weld point, orientation). The
        geometries of the two bodies (of body b and the anchored geometry, for the world) no
        longer collide with each other, as one rigid body's. Ball and distance constraints keep
        their bodies' collisions: exclude those with collision groups where they overlap.

        Args:
            body_a, body_b: a free/planar body name, a robot link (frame) name or a joint name.
            position: (3,) the weld point in the world at the initial state [m] (default: body b's
                origin); its position error is what the position rows measure.
            stiffness, damping: None (default): near-rigid; else a compliant weld (k [N/m] on the
                position rows and [N·m/rad] on the orientation rows, damping [N·s/m]).
            name: a label (default ``"weld:a-b"``).
        """
        self._add_constraint_spec("weld", body_a, body_b, position, stiffness, damping, name)

    def add_ball_constraint(self, body_a: str | None, body_b: str, *, position: Sequence[float] | None = None,
                            stiffness: float | None = None, damping: float = 0.0, name: str | None = None) -> None:
        """A ball (spherical) joint as a constraint: the point at ``position`` (world, initial state;
        default body b's origin) stays common to body a (None/``"world"``: the world) and body b.
        3 bilateral rows; closes kinematic loops (a four-bar) or hangs a free body (a pendulum).
        ``stiffness``/``damping`` as :meth:`add_weld`."""
        self._add_constraint_spec("ball", body_a, body_b, position, stiffness, damping, name)

    def add_distance_constraint(self, body_a: str | None, body_b: str, *, point_a: Sequence[float] = (0, 0, 0),
                                point_b: Sequence[float] = (0, 0, 0), distance: float | None = None,
                                stiffness: float | None = None, damping: float = 0.0,
                                name: str | None = None) -> None:
        """Keep ``‖p_b − p_a‖ = distance`` (1 bilateral row; a massless rod with ball ends).

        Args:
            point_a, point_b: (3,) the points in body a's / body b's frame [m] (world coordinates
                for the world).
            distance: [m] > 0 (default: the distance in the initial state).
            stiffness, damping: as :meth:`add_weld` ([N/m], [N·s/m]).
        """
        pa, pb = (_vec3(f"{k}", v) for k, v in (("point_a", point_a), ("point_b", point_b)))
        if distance is not None:
            distance = float(distance)
            if not (np.isfinite(distance) and distance > 0):
                raise ValueError(f"distance must be a finite length > 0 [m], got {distance}")
        self._add_constraint_spec("distance", body_a, body_b, None, stiffness, damping, name,
                                  extra=(pa, pb, distance))

    def _add_constraint_spec(self, kind, body_a, body_b, position, stiffness, damping, name, extra=()) -> None:
        for arg, body in (("body_a", body_a), ("body_b", body_b)):
            if body is not None and not isinstance(body, str):
                raise TypeError(f"{arg} must be a body/link/joint name or None (the world), got {type(body).__name__}")
        if body_b is None or body_b == "world":
            raise ValueError(f"body_b must be a body, got {body_b!r} (pass the world as body_a)")
        if position is not None:
            position = _vec3("position", position)
        label = name if name is not None else f"{kind}:{body_a or 'world'}-{body_b}"
        stiffness, damping = _compliance(stiffness, damping, label)
        self.constraint_specs.append((kind, label, body_a, body_b, position, stiffness, damping, extra))

    def add_coupler(self, joint0: str, joint1: str, multiplier: float = 1.0, offset: float = 0.0, *,
                    stiffness: float | None = None, damping: float = 0.0) -> None:
        """Couple two scalar joints: ``q[joint1] = multiplier · q[joint0] + offset`` (1 bilateral
        row; URDF ``<mimic>``, which :meth:`add_urdf` adds by default). Units: the joints' own
        ([rad] or [m]); ``stiffness``/``damping`` as :meth:`add_weld`."""
        dof0, iq0 = self._scalar_joint(joint0)
        dof1, iq1 = self._scalar_joint(joint1)
        if dof0 == dof1:
            raise ValueError(f"a coupler needs two different joints, got {joint0!r} twice")
        m, off = float(multiplier), float(offset)
        if not (np.isfinite(m) and np.isfinite(off)):
            raise ValueError(f"multiplier and offset must be finite, got {multiplier}, {offset}")
        stiffness, damping = _compliance(stiffness, damping, f"coupler {joint0}->{joint1}")
        self.couplers.append(JointCoupler(dof0, iq0, dof1, iq1, m, off, stiffness, damping, f"{joint0}->{joint1}"))

    def add_pd_actuator(self, joint: str, kp: float, kd: float, *, effort_limit: float | None = None,
                        target: float | None = None) -> None:
        """A PD-controlled actuator on a scalar joint, solved implicitly by the contact solver (seed
        001 §VII; as Drake's SAP): τ = clamp(−kp (q − q_d) − kd (v − v_d), ±effort_limit) with
        the end-of-step q, v, so stiff gains are stable at any δt and the torque saturates at
        exactly the limit. Targets change at run time: :meth:`Simulator.set_actuator_targets`.
        A controller's torque on the same joint (``Simulator(controller=...)``) adds to it, clamped
        to the joint's effort limit on its own.

        Args:
            joint: joint name (a scalar joint).
            kp: [N/m or N·m/rad] > 0; kd: [N·s/m or N·m·s/rad] ≥ 0.
            effort_limit: [N or N·m] > 0; None (default): the file's effort limit of the joint
                (``add_urdf``), else none; ``inf``: none. A finite limit needs solver ``"sap"``.
            target: initial position target q_d (default: the joint's initial position).
        """
        dof, iq = self._scalar_joint(joint)
        kp, kd = float(kp), float(kd)
        if not (np.isfinite(kp) and kp > 0):
            raise ValueError(f"kp of {joint!r} must be finite and > 0, got {kp} (a pure damper: add_joint_damping)")
        if not (np.isfinite(kd) and kd >= 0):
            raise ValueError(f"kd of {joint!r} must be finite and >= 0, got {kd}")
        if effort_limit is None:
            effort_limit = self.effort_limits.get(dof, np.inf)
        effort_limit = float(effort_limit)
        if not (effort_limit > 0):
            raise ValueError(f"effort_limit of {joint!r} must be > 0 (inf: none), got {effort_limit}")
        if target is not None:
            target = float(target)
            if not np.isfinite(target):
                raise ValueError(f"target of {joint!r} must be finite, got {target}")
        if any(a.dof == dof for a in self.actuators):
            raise ValueError(f"joint {joint!r} already has a PD actuator")
        self.actuators.append(PDActuator(dof, iq, kp, kd, effort_limit, np.nan if target is None else target, joint))

    def add_joint_damping(self, joint: str, damping: float) -> None:
        """Viscous joint damping τ = −d v [N·s/m or N·m·s/rad] ≥ 0, implicit in the free motion
        (A = M + δt D: stable at any δt). Replaces a previous value (URDF ``<dynamics damping>``)."""
        dof, _ = self._scalar_joint(joint)
        d = float(damping)
        if not (np.isfinite(d) and d >= 0):
            raise ValueError(f"damping of {joint!r} must be finite and >= 0, got {damping}")
        self.joint_damping[dof] = d

    def add_joint_friction(self, joint: str, friction: float) -> None:
        """Dry (Coulomb) joint friction of magnitude f [N or N·m] ≥ 0: a rigid constraint ``v = 0``
        whose impulse is bounded by ``δt f`` (seed 001 §VII), so the joint sticks while the other
        forces stay below f and slides against f otherwise. Needs solver ``"sap"``. Replaces a
        previous value (URDF ``<dynamics friction>``)."""
        dof, _ = self._scalar_joint(joint)
        f = float(friction)
        if not (np.isfinite(f) and f >= 0):
            raise ValueError(f"friction of {joint!r} must be finite and >= 0, got {friction}")
        self.joint_friction[dof] = f

    def _scalar_joint(self, name: str) -> tuple[int, int]:
        """(dof, q index) of the scalar (1-dof) joint ``name``."""
        if not isinstance(name, str):
            raise TypeError(f"joint must be a joint name, got {type(name).__name__}")
        if not self.model.existJointName(name):
            raise ValueError(f"no joint named {name!r}; joints: {list(self.model.names[1:])}")
        jm = self.model.joints[self.model.getJointId(name)]
        if jm.nq != 1 or jm.nv != 1:
            raise ValueError(f"joint {name!r} is not a scalar (1-dof) joint")
        return int(jm.idx_v), int(jm.idx_q)

    def _body_frame(self, name: str | None, data) -> tuple[int, Any]:
        """(joint, world placement ``pin.SE3`` at q0) of a body/link/joint name (None: world)."""
        pin = _pin()
        if name is None or name == "world":
            return 0, pin.SE3.Identity()
        model = self.model
        if name in self.bodies:  # a free or planar body: the joint that carries its geometry
            j = next(g.joint for g in self.geoms if g.name.startswith(name + "/"))
            return int(j), data.oMi[j]
        if model.existFrame(name):
            f = model.frames[model.getFrameId(name)]
            return int(f.parentJoint), data.oMi[f.parentJoint] * f.placement
        if model.existJointName(name):
            j = model.getJointId(name)
            return int(j), data.oMi[j]
        raise ValueError(f"no body, link or joint named {name!r} (bodies: {sorted(self.bodies)})")

    def _resolve_constraints(self, q0: np.ndarray) -> list[BilateralConstraint]:
        """The bilateral constraints with their points/frames in the joints' frames (FK at q0)."""
        pin = _pin()
        if not self.constraint_specs:
            return []
        data = self.model.createData()
        pin.forwardKinematics(self.model, data, q0)
        out = []
        for kind, label, body_a, body_b, position, stiffness, damping, extra in self.constraint_specs:
            ja, Xa = self._body_frame(body_a, data)  # placements of the constraint frames in the world
            jb, Xb = self._body_frame(body_b, data)
            if ja == jb:
                raise SceneError(f"constraint {label!r}: body_a and body_b are the same rigid body")
            Ma, Mb = data.oMi[ja] if ja else pin.SE3.Identity(), data.oMi[jb]  # joint frames in the world
            if kind == "distance":
                pa_local, pb_local, dist = extra
                # points given in the bodies' (link/frame) frames -> the joints' frames
                pa = (Ma.actInv(Xa)).act(pa_local) if ja else np.asarray(pa_local, float)
                pb = (Mb.actInv(Xb)).act(pb_local)
                wa = Ma.act(pa) if ja else pa
                wb = Mb.act(pb)
                d_now = float(np.linalg.norm(wb - wa))
                dist = d_now if dist is None else dist
                if not dist > 0 or d_now == 0.0:
                    raise SceneError(f"constraint {label!r}: the two points coincide (use add_ball_constraint)")
                out.append(BilateralConstraint("distance", ja, jb, pa, pb, np.eye(3), np.eye(3), dist,
                                               stiffness, damping, label))
                continue
            p = Xb.translation if position is None else position  # the world point
            pa = Ma.actInv(p) if ja else np.asarray(p, float)
            pb = Mb.actInv(p)
            Ra = Ma.rotation.T if ja else np.eye(3)  # the world frame's axes, in each joint's frame
            Rb = Mb.rotation.T
            out.append(BilateralConstraint(kind, ja, jb, np.asarray(pa, float), np.asarray(pb, float), Ra, Rb, 0.0,
                                           stiffness, damping, label))
            if kind == "weld":  # welded bodies are one rigid body: their geometries do not collide
                on_a = [i for i, g in enumerate(self.geoms) if g.joint == ja]
                on_b = [i for i, g in enumerate(self.geoms) if g.joint == jb]
                self.excluded_pairs.update((min(i, k), max(i, k)) for i in on_a for k in on_b)
        return out

    def add_spring(self, spring: JointSpring) -> None:
        """A spring-damper on a scalar dof (enters K, D of eq. 15)."""
        self.springs.append(spring)

    # ------------------------------------------------------------------ build
    def build(self) -> "Scene":
        """The finished scene (validates trees, geometry and springs)."""
        if not self.geoms:
            raise SceneError("the scene has no collision geometry")
        q0 = np.concatenate(self.q0)
        constraints = self._resolve_constraints(q0)  # (before the pair filter: welds exclude pairs)
        actuators = [a if np.isfinite(a.target) else
                     PDActuator(a.dof, a.q_index, a.kp, a.kd, a.effort_limit, float(q0[a.q_index]), a.name)
                     for a in self.actuators]
        return Scene(self.model, self.geoms, q0, np.concatenate(self.v0), self.springs, self.margin,
                     self.excluded, limits=self.limits, effort_limits=self.effort_limits,
                     self_pairs=self.self_pairs, excluded_pairs=self.excluded_pairs,
                     constraints=constraints, couplers=self.couplers, actuators=actuators,
                     joint_damping=self.joint_damping, joint_friction=self.joint_friction,
                     max_contacts_per_pair=self.max_contacts_per_pair, contacts_per_pair=self.contacts_per_pair)


class Scene:
    """A built scene: Pinocchio model + collision geometries + springs (see :class:`SceneBuilder`).

    Attributes:
        model, data: Pinocchio model and data (``data`` is created on first access).
        geometries: list of :class:`Geometry`.
        q0, v0: initial state.
        tree_starts: (n_trees + 1,) velocity offsets of the trees.
        limits: the :class:`JointLimit` s enforced by the simulator; ``limit_dof``,
            ``limit_q_index``, ``limit_lower``, ``limit_upper`` the same as arrays (n_l,).
        effort_limit: (n_v,) largest |actuation| per dof the simulator applies (inf: none).
        tree_of_joint: (n_joints,) tree index of each joint (−1 for the world joint 0).
        K, D, q_rest: (n_v,) diagonal joint stiffness/damping and spring rest positions.
        constraints: the :class:`BilateralConstraint` s (weld, ball, distance).
        couplers: the :class:`JointCoupler` s (URDF ``<mimic>`` and :meth:`SceneBuilder.add_coupler`).
        actuators: the :class:`PDActuator` s, in the order of ``Simulator.set_actuator_targets``.
        joint_damping: (n_v,) viscous joint damping (implicit in the free motion).
        joint_friction: (n_v,) dry joint friction magnitude [N or N·m] (0: none).
        max_contacts_per_pair: the scene's cap of contact points per geometry pair
            (:class:`SceneBuilder`); ``detector.cap`` holds each pair's, group overrides included.
    """

    def __init__(self, model, geometries, q0, v0, springs, margin, excluded, *, limits=(), effort_limits=None,
                 self_pairs=(), excluded_pairs=(), constraints=(), couplers=(), actuators=(), joint_damping=None,
                 joint_friction=None, max_contacts_per_pair: int = 4, contacts_per_pair=None):
        pin = _pin()
        self.model = model
        self._data = None  # created on first use: pinocchio.Data holds n_v³ tensors (~3.7 GB at n_v = 486)
        self.geometries = list(geometries)
        self.q0 = np.asarray(q0, float)
        self.v0 = np.asarray(v0, float)
        if self.q0.shape != (model.nq,) or self.v0.shape != (model.nv,):
            raise SceneError(f"initial state sizes {self.q0.shape}, {self.v0.shape} != ({model.nq},), ({model.nv},)")
        parents = np.array(model.parents)
        root = np.zeros(model.njoints, dtype=np.int64)
        for j in range(1, model.njoints):
            root[j] = j if parents[j] == 0 else root[parents[j]]
        roots = sorted(set(root[1:].tolist()))
        tree_of_root = {r: i for i, r in enumerate(roots)}
        self.tree_of_joint = np.array([-1] + [tree_of_root[root[j]] for j in range(1, model.njoints)])
        joints = list(model.joints)  # one conversion (each model.joints access copies the vector)
        dof_tree = np.empty(model.nv, dtype=np.int64)
        for j in range(1, model.njoints):
            jm = joints[j]
            dof_tree[jm.idx_v : jm.idx_v + jm.nv] = self.tree_of_joint[j]
        if (np.diff(dof_tree) < 0).any() or (np.diff(dof_tree) > 1).any():
            raise SceneError("trees must own contiguous dofs")
        self.tree_starts = np.concatenate([[0], np.flatnonzero(np.diff(dof_tree)) + 1, [model.nv]])
        # springs
        self.K = np.zeros(model.nv)
        self.D = np.zeros(model.nv)
        self.q_rest = np.zeros(model.nv)
        self.spring_q_index = np.zeros(model.nv, dtype=np.int64)
        self.has_springs = bool(springs)
        for s in springs:
            j = next((j for j in range(1, model.njoints) if joints[j].idx_v <= s.dof < joints[j].idx_v + joints[j].nv), None)
            if j is None or joints[j].nq != 1 or joints[j].nv != 1:
                raise SceneError(f"spring on dof {s.dof}: springs need a scalar (1-dof) joint")
            self.K[s.dof] += s.stiffness
            self.D[s.dof] += s.damping
            self.q_rest[s.dof] = s.rest
            self.spring_q_index[s.dof] = joints[j].idx_q
        # geometry arrays
        self.geom_joint = np.array([g.joint for g in geometries], dtype=np.int64)
        self.geom_R = np.array([g.rotation for g in geometries])
        self.geom_p = np.array([g.translation for g in geometries])
        self.geom_k = np.array([g.params.stiffness for g in geometries])
        self.geom_tau = np.array([g.params.dissipation for g in geometries])
        self.geom_mu = np.array([g.params.mu for g in geometries])
        # joint supports: column k of data.J belongs to joint j's Jacobian iff the dof's joint is j
        # or an ancestor of j
        self.joint_support = np.zeros((model.njoints, model.nv))
        for j in range(1, model.njoints):
            a = j
            while a > 0:
                jm = joints[a]
                self.joint_support[j, jm.idx_v : jm.idx_v + jm.nv] = 1.0
                a = int(parents[a])
        # per-pair contact parameters (k in series, stiffness-weighted τ_d, harmonic-mean μ) and the
        # weight of the contact point on a's witness point (on the stiffer surface)
        ka, kb = self.geom_k[:, None], self.geom_k[None, :]
        ta, tb = self.geom_tau[:, None], self.geom_tau[None, :]
        ma, mb = self.geom_mu[:, None], self.geom_mu[None, :]
        ia, ib = np.isinf(ka), np.isinf(kb)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.pair_stiffness = np.where(ia, kb, np.where(ib, ka, ka * kb / (ka + kb)))
            self.pair_dissipation = np.where(
                ia & ib, np.maximum(ta, tb), np.where(ia, tb, np.where(ib, ta, (kb * ta + ka * tb) / (ka + kb)))
            )
            self.pair_mu = np.where(ma + mb > 0, 2 * ma * mb / np.where(ma + mb > 0, ma + mb, 1.0), 0.0)
            self.pair_weight_a = np.where(ia & ib, 0.5, np.where(ia, 1.0, np.where(ib, 0.0, ka / (ka + kb))))
        self.n_geoms = len(geometries)
        geom_tree = self.tree_of_joint[self.geom_joint]
        groups = [g.group for g in geometries]
        n_g = len(geometries)
        ia, ib = np.triu_indices(n_g, 1)
        ok = (geom_tree[ia] != geom_tree[ib])  # same tree (or both world): only the robots' self pairs
        for pairs_, value in ((self_pairs, True), (excluded_pairs, False)):  # the robots' filters
            if pairs_:
                p_ = np.sort(np.array(sorted(pairs_), dtype=np.int64).reshape(-1, 2), axis=1)
                i, j = p_[:, 0], p_[:, 1]
                ok[i * n_g - i * (i + 1) // 2 + (j - i - 1)] = value  # row-major index in triu_indices(n_g, 1)
        if excluded:
            ex = np.array([frozenset((groups[i], groups[j])) in excluded for i, j in zip(ia[ok], ib[ok])])
            idx = np.flatnonzero(ok)
            ok[idx[ex]] = False
        pairs = np.stack([ia[ok], ib[ok]], axis=1)
        cap = np.full(len(pairs), int(max_contacts_per_pair), dtype=np.int64)
        for key, value in (contacts_per_pair or {}).items():  # per pair of collision groups
            key = frozenset(key)
            cap[[frozenset((groups[i], groups[j])) == key for i, j in pairs.tolist()]] = value
        self.detector = ContactDetector(self.geometries, pairs, margin, cap)
        self.max_contacts_per_pair = int(max_contacts_per_pair)
        self.margin = margin
        self.n_pairs = len(pairs)
        self.self_pairs = frozenset(tuple(sorted(p)) for p in self_pairs)  # same-tree pairs that collide
        self.excluded_pairs = frozenset(tuple(sorted(p)) for p in excluded_pairs)  # filtered out
        # joint limits and effort limits (seed 001 §VII: limits as constraints of the contact problem)
        self.limits = tuple(limits)
        self.limit_dof = np.array([lim.dof for lim in self.limits], dtype=np.int64)
        self.limit_q_index = np.array([lim.q_index for lim in self.limits], dtype=np.int64)
        self.limit_lower = np.array([lim.lower for lim in self.limits], dtype=float)
        self.limit_upper = np.array([lim.upper for lim in self.limits], dtype=float)
        self.effort_limit = np.full(model.nv, np.inf)
        for dof, value in (effort_limits or {}).items():
            self.effort_limit[dof] = value
        # constraints beyond contact (seed 001 §VII; docs/sap.md "Constraints beyond contact")
        self.constraints = tuple(constraints)
        self.couplers = tuple(couplers)
        self.actuators = tuple(actuators)
        self.joint_damping = np.zeros(model.nv)
        for dof, value in (joint_damping or {}).items():
            self.joint_damping[dof] = value
        self.joint_friction = np.zeros(model.nv)
        for dof, value in (joint_friction or {}).items():
            self.joint_friction[dof] = value
        _ = pin

    # ------------------------------------------------------------------ sizes
    @property
    def data(self) -> Any:
        """A ``pinocchio.Data`` of the model, created on first access (it is large: Pinocchio's
        second-order derivative tensors are n_v³, ~3.7 GB for the 27 A1s of ``a1-drop-27``)."""
        if self._data is None:
            self._data = self.model.createData()
        return self._data

    @property
    def n_q(self) -> int:
        return self.model.nq

    @property
    def n_v(self) -> int:
        return self.model.nv

    @property
    def n_trees(self) -> int:
        return self.tree_starts.size - 1

    # ------------------------------------------------------------------ kinematics helpers
    def geometry_poses(self, data, joints: list[int] | None = None, slot: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """World poses (R (n_g,3,3), p (n_g,3)) of the geometries from ``data.oMi`` (forwardKinematics done).

        ``joints`` (the sorted joints carrying geometry) and ``slot`` (each geometry's index into
        ``joints``), both precomputed by the stepper, restrict the reads of ``data.oMi`` to those
        joints; by default every joint is read.
        """
        if joints is None:
            joints, slot = list(range(self.model.njoints)), self.geom_joint
        n_j = len(joints)
        Rj = np.empty((n_j, 3, 3))
        pj = np.empty((n_j, 3))
        oMi = data.oMi
        for i, j in enumerate(joints):  # loop over joints carrying geometry (Pinocchio objects)
            M = oMi[j]
            Rj[i] = M.rotation
            pj[i] = M.translation
        Rg = Rj[slot]
        return Rg @ self.geom_R, (Rg @ self.geom_p[:, :, None])[:, :, 0] + pj[slot]

    def spring_forces(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Generalized spring-damper forces (n_v,)."""
        if not self.has_springs:
            return np.zeros(self.n_v)
        return -self.K * (q[self.spring_q_index] - self.q_rest) - self.D * v

    def energy(self, q: np.ndarray, v: np.ndarray) -> float:
        """Kinetic + gravitational + spring potential energy [J]."""
        pin = _pin()
        data = self.data
        kin = pin.computeKineticEnergy(self.model, data, q, v)
        pot = pin.computePotentialEnergy(self.model, data, q)
        spr = 0.5 * float(np.sum(self.K * (q[self.spring_q_index] - self.q_rest) ** 2)) if self.has_springs else 0.0
        return float(kin + pot + spr)
