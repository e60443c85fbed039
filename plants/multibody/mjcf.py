r"""An MJCF (MuJoCo XML) reader that builds a Pinocchio model and its coal collision model.

Why our own reader rather than ``pinocchio.buildModelFromMJCF`` (Pinocchio 4.1): measured on
small files, Pinocchio's parser keeps only the first body under ``<worldbody>``, turns a body
with several joints into one ``JointModelComposite`` (named ``Composite_<first joint>``, so the
other joint names are lost and the analytic ABA derivatives of such joints disagree with finite
differences), and places a ``<freejoint>`` body wrongly when it has an ``euler`` orientation. The
MJCF semantics we need are small and documented, so we read the file with ``xml.etree`` and
build the model joint by joint:

* every body of ``<worldbody>`` (nested bodies keep their tree); names from the file (bodies,
  joints, geoms), generated names (``body<i>``, ``<body>_joint<k>``, ``<body>_geom<k>``) only
  where the file has none;
* a body with joints ``j_1 .. j_n`` becomes a chain of ``n`` single-dof Pinocchio joints with
  massless intermediate links, in MuJoCo's order (each joint acts about its own ``pos``/``axis``
  in the body frame, after the previous ones), so every joint keeps its name and its own dof;
* ``<freejoint>`` / ``type="free"``: a free-flyer whose configuration is the body's world pose
  (MuJoCo's qpos convention); its start pose is the body's ``pos``/orientation; ``type="ball"``:
  a spherical joint;
* body / geom / inertial orientations from ``quat`` (w x y z), ``euler`` (``<compiler
  eulerseq>``), ``axisangle``, ``xyaxes`` or ``zaxis``; angles in degrees unless
  ``<compiler angle="radian">``;
* ``<default>`` classes (nested, ``class`` and ``childclass``);
* inertia from ``<inertial>`` or, without it, from the geoms (``mass`` or ``density``, default
  1000 kg/m³) as MuJoCo's ``inertiafromgeom="auto"``;
* joint ``range`` (``limited`` / ``<compiler autolimits>``), ``armature``,
  ``actuatorfrcrange``; actuators (``motor``, ``general``) with their joint, ``gear`` and force
  or control range give the effort limit; keyframes (``<key qpos>``) become
  ``model.referenceConfigurations`` (``"qpos0"`` is the default start configuration);
* collision geoms: ``sphere``, ``box``, ``capsule``, ``cylinder``, ``ellipsoid``, ``plane``
  (a half-space), ``mesh`` (its convex hull, with a ``ModelImportWarning``), ``fromto``
  placements. A geom with ``contype="0" conaffinity="0"`` is visual only.

Joint ``stiffness``/``damping`` are returned per joint (:attr:`MJCFModel.joint_springs`; the
simulator scene applies them as joint springs). Anything else that changes the dynamics
(tendons, equality constraints, ``frictionloss``, position/velocity servos, geom contact
parameters, ``gravcomp``) is a warning naming the elements
(:class:`~plants.multibody.errors.ModelImportWarning`, one per kind and file), or an error where
ignoring it would give a wrong model (a joint ``ref`` ≠ 0, ``coordinate="global"``,
``hfield``/``sdf`` geoms, mocap bodies, a free joint below the top level). Elements without
effect on the dynamics (``site``, ``camera``, ``light``, ``sensor``, ``visual``, ``asset`` textures and
materials, ``statistic``, ``size``) are ignored.
"""

from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ModelImportWarning, MultibodyValueError

__all__ = ["MJCFModel", "load_mjcf"]

_NO_DYNAMICS = {"site", "camera", "light"}
_IGNORED_TOP = {"visual", "statistic", "size", "sensor", "extension", "custom"}


@dataclass
class MJCFModel:
    """What :func:`load_mjcf` returns.

    Attributes:
        model: the ``pinocchio.Model`` (gravity from ``<option gravity>``; limits, effort limits
            and armature set; ``referenceConfigurations`` holds ``"qpos0"`` and the keyframes).
        collision_model: the ``pinocchio.GeometryModel`` of the collision geoms.
        q0: (n_q,) the start configuration (MuJoCo's ``qpos0``: free bodies at their start pose).
        actuated_joints: joint names driven by ``<actuator>`` entries, in actuator order.
        excluded_body_pairs: ``<contact><exclude body1 body2>`` pairs.
        joint_springs: hinge/slide joint name -> (stiffness [N/m or N·m/rad], springref [m or
            rad], damping [N·s/m or N·m·s/rad]) where the file gives a stiffness or damping.
    """

    model: Any
    collision_model: Any
    q0: np.ndarray
    actuated_joints: list[str] = field(default_factory=list)
    excluded_body_pairs: list[tuple[str, str]] = field(default_factory=list)
    joint_springs: dict[str, tuple[float, float, float]] = field(default_factory=dict)


def _floats(text: str | None, n: int | None = None, what: str = "") -> np.ndarray | None:
    if text is None:
        return None
    try:
        arr = np.array([float(t) for t in text.split()], dtype=float)
    except ValueError:
        raise MultibodyValueError(f"MJCF {what}: expected numbers, got {text!r}") from None
    if n is not None and arr.size != n:
        raise MultibodyValueError(f"MJCF {what}: expected {n} numbers, got {text!r}")
    return arr


def _quat_wxyz_to_R(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    import pinocchio as pin

    n = np.linalg.norm(axis)
    if n < 1e-12:
        raise MultibodyValueError("MJCF axisangle: zero axis")
    return pin.exp3(np.asarray(axis, float) / n * angle)


class _Reader:
    def __init__(self, path: Path):
        self.path = path
        self.root = self._inline_includes(ET.parse(path).getroot(), path.parent)
        if self.root.tag != "mujoco":
            raise MultibodyValueError(f"{path.name}: not an MJCF file (root element <{self.root.tag}>)")
        comp = {}
        for c in self.root.findall("compiler"):
            comp.update(c.attrib)
        if comp.get("coordinate", "local") != "local":
            raise MultibodyValueError(f"{path.name}: <compiler coordinate=\"global\"> is not supported")
        self.degree = comp.get("angle", "degree") == "degree"
        self.eulerseq = comp.get("eulerseq", "xyz")
        self.autolimits = comp.get("autolimits", "true") == "true"
        self.inertiafromgeom = comp.get("inertiafromgeom", "auto")  # "auto": geoms only without <inertial>
        self.meshdir = path.parent / comp.get("meshdir", comp.get("assetdir", ""))
        self.defaults: dict[str, dict[str, dict[str, str]]] = {}
        for d in self.root.findall("default"):
            self._read_default(d, "main", None)
        self.meshes: dict[str, tuple[Path, np.ndarray]] = {}
        self.hulls: list[str] = []  # mesh geoms replaced by their convex hulls (one warning per file)
        for asset in self.root.findall("asset"):
            for m in asset.findall("mesh"):
                a = self._attrs(m, "mesh", None)
                if "file" not in a:
                    raise MultibodyValueError(f"{path.name}: <mesh name={a.get('name')!r}> without a file "
                                              f"(inline vertices are not supported)")
                name = a.get("name", Path(a["file"]).stem)
                scale = _floats(a.get("scale", "1 1 1"), 3, f"mesh {name} scale")
                self.meshes[name] = (self.meshdir / a["file"], scale)

    def _inline_includes(self, root: ET.Element, folder: Path) -> ET.Element:
        for parent in list(root.iter()):
            for i, child in enumerate(list(parent)):
                if child.tag == "include":
                    inc = folder / child.get("file", "")
                    if not inc.is_file():
                        raise MultibodyValueError(f"{self.path.name}: <include file={child.get('file')!r}> "
                                                  f"not found")
                    sub = self._inline_includes(ET.parse(inc).getroot(), inc.parent)
                    parent.remove(child)
                    for k, el in enumerate(list(sub)):
                        parent.insert(i + k, el)
        return root

    def _read_default(self, el: ET.Element, name: str, parent: str | None) -> None:
        base = {t: dict(a) for t, a in self.defaults.get(parent, {}).items()} if parent else {}
        for child in el:
            if child.tag == "default":
                continue
            base.setdefault(child.tag, {}).update(child.attrib)
        self.defaults[name] = base
        for child in el.findall("default"):
            cname = child.get("class")
            if cname is None:
                raise MultibodyValueError(f"{self.path.name}: nested <default> without a class")
            self._read_default(child, cname, name)

    def _attrs(self, el: ET.Element, tag: str, childclass: str | None) -> dict[str, str]:
        cls = el.get("class", childclass or "main")
        if cls not in self.defaults and cls != "main":
            raise MultibodyValueError(f"{self.path.name}: <{el.tag}> uses unknown default class {cls!r}")
        out = dict(self.defaults.get(cls, {}).get(tag, {}))
        out.update(el.attrib)
        return out

    def angle(self, value: float) -> float:
        return math.radians(value) if self.degree else value

    def rotation(self, a: dict[str, str], what: str) -> np.ndarray:
        """Orientation of an element from quat/euler/axisangle/xyaxes/zaxis (identity if none)."""
        if "quat" in a:
            return _quat_wxyz_to_R(_floats(a["quat"], 4, f"{what} quat"))
        if "axisangle" in a:
            v = _floats(a["axisangle"], 4, f"{what} axisangle")
            return _axis_angle(v[:3], self.angle(v[3]))
        if "euler" in a:
            e = _floats(a["euler"], 3, f"{what} euler")
            R = np.eye(3)
            for k, ax in enumerate(self.eulerseq):
                axis = np.eye(3)["xyz".index(ax.lower())]
                Rk = _axis_angle(axis, self.angle(e[k]))
                R = R @ Rk if ax.islower() else Rk @ R  # lower case: rotating axes (intrinsic)
            return R
        if "xyaxes" in a:
            v = _floats(a["xyaxes"], 6, f"{what} xyaxes")
            x = v[:3] / np.linalg.norm(v[:3])
            y = v[3:] - (v[3:] @ x) * x
            y /= np.linalg.norm(y)
            return np.column_stack([x, y, np.cross(x, y)])
        if "zaxis" in a:
            z = _floats(a["zaxis"], 3, f"{what} zaxis")
            z = z / np.linalg.norm(z)
            c = np.cross([0.0, 0.0, 1.0], z)
            s, cth = np.linalg.norm(c), z[2]
            return np.eye(3) if s < 1e-12 and cth > 0 else _axis_angle(c if s > 1e-12 else np.array([1.0, 0, 0]),
                                                                      math.atan2(s, cth))
        return np.eye(3)


def _geom_shape(reader: _Reader, a: dict[str, str], name: str):
    """(coal shape, volume [m³], pin.Inertia of unit mass about the geom frame, pose (R, p))."""
    import coal
    import pinocchio as pin

    kind = a.get("type", "sphere")
    size = _floats(a.get("size", "0 0 0"), None, f"geom {name} size")
    R = reader.rotation(a, f"geom {name}")
    p = _floats(a.get("pos", "0 0 0"), 3, f"geom {name} pos")
    if "fromto" in a:
        ft = _floats(a["fromto"], 6, f"geom {name} fromto")
        d = ft[3:] - ft[:3]
        L = np.linalg.norm(d)
        p = 0.5 * (ft[:3] + ft[3:])
        R = reader.rotation({"zaxis": " ".join(map(str, d))}, f"geom {name}")
        size = np.array([size[0], 0.5 * L, 0.5 * L])
    if kind == "sphere":
        r = size[0]
        return coal.Sphere(r), 4 / 3 * math.pi * r**3, pin.Inertia.FromSphere(1.0, r), (R, p)
    if kind == "box":
        h = size[:3]
        return coal.Box(*(2 * h)), 8 * h.prod(), pin.Inertia.FromBox(1.0, *(2 * h)), (R, p)
    if kind == "capsule":
        r, hl = size[0], size[1]
        vol = math.pi * r * r * 2 * hl + 4 / 3 * math.pi * r**3
        return coal.Capsule(r, 2 * hl), vol, pin.Inertia.FromCapsule(1.0, r, 2 * hl), (R, p)
    if kind == "cylinder":
        r, hl = size[0], size[1]
        return coal.Cylinder(r, 2 * hl), math.pi * r * r * 2 * hl, pin.Inertia.FromCylinder(1.0, r, 2 * hl), (R, p)
    if kind == "ellipsoid":
        ax = size[:3]
        return coal.Ellipsoid(*ax), 4 / 3 * math.pi * ax.prod(), pin.Inertia.FromEllipsoid(1.0, *ax), (R, p)
    if kind == "plane":
        return coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0), 0.0, pin.Inertia.Zero(), (R, p)
    if kind == "mesh":
        mesh = a.get("mesh")
        if mesh not in reader.meshes:
            raise MultibodyValueError(f"{reader.path.name}: geom {name!r} uses unknown mesh {mesh!r}")
        file, scale = reader.meshes[mesh]
        bvh = coal.MeshLoader().load(str(file), scale)
        bvh.buildConvexHull(True, "Qt")
        hull = bvh.convex
        vol = float(hull.computeVolume())
        com = np.asarray(hull.computeCOM(), float)
        I_com = np.asarray(hull.computeMomentofInertiaRelatedToCOM(), float) / max(vol, 1e-300)
        reader.hulls.append(f"{name} ({file.name})")
        return hull, vol, pin.Inertia(1.0, com, I_com), (R, p)
    raise MultibodyValueError(f"{reader.path.name}: geom {name!r} of type {kind!r} is not supported "
                              f"(supported: sphere, box, capsule, cylinder, ellipsoid, plane, mesh)")


def load_mjcf(path: str | Path, root_joint: Any = None, root_joint_name: str = "root_joint",
              warn_springs: bool = True) -> MJCFModel:
    """Read an MJCF file into a Pinocchio model, collision model and start configuration.

    Args:
        path: the ``.xml`` file.
        root_joint: optional Pinocchio joint model that attaches every top-level body to the world
            (a floating base); ``None``: top-level bodies hang from the world as the file says.
        root_joint_name: the name of that joint.
        warn_springs: warn that hinge/slide joint ``stiffness``/``damping`` are not part of the
            Pinocchio model (they are returned in :attr:`MJCFModel.joint_springs`; the simulator
            scene turns them into joint springs and passes False).

    Raises:
        FileNotFoundError: no such file. ValueError: an element we cannot represent (named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"MJCF file not found: {path}")
    assembler = _Assembler(_Reader(path), root_joint, root_joint_name, warn_springs)
    loaded = assembler.build()
    for message in assembler.messages:  # raised here: they point at the caller's line
        warnings.warn(f"{path.name}: {message}", ModelImportWarning, stacklevel=2)
    return loaded


_CONTACT_ATTRIBUTES = ("friction", "solref", "solimp", "condim", "priority", "margin", "gap")
_KNOWN_TOP = {"compiler", "option", "default", "asset", "worldbody", "actuator", "keyframe", "contact"}


def _visual_only(a: dict[str, str]) -> bool:
    return a.get("contype", "1") == "0" and a.get("conaffinity", "1") == "0"


class _Assembler:
    """Builds the Pinocchio model of a parsed file, body by body (one use)."""

    def __init__(self, reader: _Reader, root_joint: Any, root_joint_name: str, warn_springs: bool):
        import pinocchio as pin

        self.pin = pin
        self.r = reader
        self.fname = reader.path.name
        self.root_joint = root_joint
        self.warn_springs = warn_springs
        self.model = pin.Model()
        self.model.name = reader.root.get("model", reader.path.stem)
        self.gm = pin.GeometryModel()
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.effort: dict[int, float] = {}  # idx_v -> effort limit from the joint
        self.armature: dict[int, float] = {}  # idx_v -> armature
        self.q0_parts: list[np.ndarray] = []
        self.joint_by_name: dict[str, int] = {}
        self.joint_springs: dict[str, tuple[float, float, float]] = {}
        self.geom_names: set[str] = set()
        self.n_bodies = 0
        # what is not represented, one warning per kind at the end
        self.notes: dict[str, list[str]] = {"springs": [], "joint": [], "servos": [], "contact": []}
        self.messages: list[str] = []  # the warnings, emitted by load_mjcf
        self.world_joint, self.world_frame = 0, 0
        if root_joint is not None:
            self.world_joint = self.model.addJoint(0, root_joint, pin.SE3.Identity(), root_joint_name)
            self.world_frame = self.model.addJointFrame(self.world_joint, 0)
            self.lower += [-np.inf] * root_joint.nq
            self.upper += [np.inf] * root_joint.nq
            self.q0_parts.append(pin.neutral(_single_joint_model(root_joint)))

    def warn(self, message: str) -> None:
        self.messages.append(message)

    # ------------------------------------------------------------------ the whole file
    def build(self) -> MJCFModel:
        pin, r, model = self.pin, self.r, self.model
        for opt in r.root.findall("option"):
            if "gravity" in opt.attrib:
                model.gravity.linear = _floats(opt.get("gravity"), 3, "option gravity")
            for child in opt:
                if child.tag != "flag":
                    self.warn(f"<option><{child.tag}> is ignored")
        for el in r.root:
            if el.tag in ("tendon", "equality"):
                self.warn(f"<{el.tag}> ({len(list(el))} entries) is not represented and is ignored")
            elif el.tag not in _KNOWN_TOP and el.tag not in _IGNORED_TOP:
                self.warn(f"unknown element <{el.tag}> is ignored")
        for wb in r.root.findall("worldbody"):
            for k, g in enumerate(wb.findall("geom")):
                a = r._attrs(g, "geom", None)
                name = self.geom_name(a.get("name"), "world", k)
                if _visual_only(a):
                    continue
                self.note_contact_attributes(a, name)
                shape, _, _, (R, p) = _geom_shape(r, a, name)
                self.gm.addGeometryObject(pin.GeometryObject(name, 0, 0, pin.SE3(R, p), shape))
            for child in wb:
                if child.tag == "body":
                    self.visit(child, self.world_joint, self.world_frame, pin.SE3.Identity(),
                               child.get("childclass"), True)
                elif child.tag != "geom" and child.tag not in _NO_DYNAMICS:
                    self.warn(f"<worldbody><{child.tag}> is ignored")
        model.lowerPositionLimit = np.array(self.lower, dtype=float)
        model.upperPositionLimit = np.array(self.upper, dtype=float)
        actuated = self.actuators()
        if self.armature:
            arm = np.zeros(model.nv)
            for iv, val in self.armature.items():
                arm[iv] = val
            model.armature = arm
        q0 = np.concatenate(self.q0_parts) if self.q0_parts else np.zeros(0)
        if q0.shape != (model.nq,):  # pragma: no cover - internal consistency
            raise MultibodyValueError(f"{self.fname}: internal error, q0 has {q0.size} entries for n_q = "
                                      f"{model.nq}")
        model.referenceConfigurations["qpos0"] = q0.copy()
        self.keyframes()
        excluded = []
        for c in r.root.findall("contact"):
            for el in c:
                if el.tag == "exclude":
                    excluded.append((el.get("body1"), el.get("body2")))
                else:
                    self.warn(f"<contact><{el.tag}> is ignored")
        self.warn_summary()
        return MJCFModel(model, self.gm, q0, actuated, excluded, self.joint_springs)

    def warn_summary(self) -> None:
        n = self.notes
        if n["joint"]:
            self.warn(f"joint attributes are not represented and are ignored: {', '.join(n['joint'])}")
        if n["springs"]:
            self.warn(f"joint stiffness/damping are not part of this model and are ignored: "
                      f"{', '.join(n['springs'])}")
        if n["servos"]:
            self.warn(f"servo actuators are treated as torque inputs (their gains are not represented): "
                      f"{', '.join(n['servos'])}")
        if n["contact"]:
            self.warn(f"MuJoCo contact parameters are not used (contact stiffness, dissipation and friction "
                      f"come from plants.sim.ContactParams / ContactPair.mu): {', '.join(n['contact'])}")
        if self.r.hulls:
            self.warn(f"{len(self.r.hulls)} mesh geoms are replaced by their convex hulls: "
                      f"{', '.join(self.r.hulls)}")

    def actuators(self) -> list[str]:
        """Actuated joint names (actuator order); sets ``model.effortLimit``."""
        model, r = self.model, self.r
        actuated: list[str] = []
        eff = np.full(model.nv, np.inf)
        for act in r.root.findall("actuator"):
            for el in act:
                a = r._attrs(el, el.tag, None)
                jn = a.get("joint")
                if jn is None:
                    self.warn(f"actuator <{el.tag} name={a.get('name')!r}> without a joint (tendon/site "
                              f"transmission) is ignored")
                    continue
                if jn not in self.joint_by_name:
                    raise MultibodyValueError(f"{self.fname}: actuator {a.get('name')!r} drives unknown joint "
                                              f"{jn!r}")
                if el.tag not in ("motor", "general"):
                    self.notes["servos"].append(f"{jn} (<{el.tag}>)")
                actuated.append(jn)
                gear = _floats(a.get("gear", "1"), None, "actuator gear")[0]
                iv = model.joints[self.joint_by_name[jn]].idx_v
                limit = np.inf
                if a.get("forcerange") and a.get("forcelimited", "auto") != "false":
                    limit = float(np.abs(_floats(a["forcerange"], 2, "actuator forcerange")).max())
                elif a.get("ctrlrange") and a.get("ctrllimited", "auto") != "false":
                    limit = abs(gear) * float(np.abs(_floats(a["ctrlrange"], 2, "actuator ctrlrange")).max())
                eff[iv] = min(eff[iv], limit)
        for iv, f in self.effort.items():
            eff[iv] = min(eff[iv], f)
        model.effortLimit = eff
        return actuated

    def keyframes(self) -> None:
        """``<key qpos>`` into ``model.referenceConfigurations`` (quaternions reordered)."""
        model, root = self.model, self.root_joint
        for kf in self.r.root.findall("keyframe"):
            for i, key in enumerate(kf.findall("key")):
                if key.get("qpos") is None:
                    continue
                qk = _floats(key.get("qpos"), model.nq - (root.nq if root is not None else 0), "keyframe qpos")
                model.referenceConfigurations[key.get("name") or f"key{i}"] = _mujoco_to_pinocchio_q(
                    model, qk, root is not None)

    # ------------------------------------------------------------------ bodies
    def add_joint(self, parent: int, jm: Any, placement: Any, name: str, lo: list[float], hi: list[float],
                  frame_parent: int) -> tuple[int, int]:
        if name in self.joint_by_name:
            raise MultibodyValueError(f"{self.fname}: two joints are named {name!r}")
        jid = self.model.addJoint(parent, jm, placement, name)
        fid = self.model.addJointFrame(jid, frame_parent)
        self.joint_by_name[name] = jid
        self.lower.extend(lo)
        self.upper.extend(hi)
        return jid, fid

    def geom_name(self, given: str | None, body: str, k: int) -> str:
        name = given or f"{body}_geom{k}"
        if name in self.geom_names:
            raise MultibodyValueError(f"{self.fname}: two geoms are named {name!r}")
        self.geom_names.add(name)
        return name

    def note_contact_attributes(self, a: dict[str, str], name: str) -> None:
        used = sorted(k for k in _CONTACT_ATTRIBUTES if k in a)
        if used:
            self.notes["contact"].append(f"{name} ({', '.join(used)})")

    def add_geoms(self, body_el: ET.Element, body_name: str, jid: int, fid: int, body_in_joint: Any,
                  childclass: str | None) -> Any:
        """Collision geoms of a body; returns the body's inertia from its geoms (about the body frame)."""
        pin, r = self.pin, self.r
        inertia = pin.Inertia.Zero()
        has_inertial = body_el.find("inertial") is not None and r.inertiafromgeom != "true"
        for k, g in enumerate(body_el.findall("geom")):
            a = r._attrs(g, "geom", childclass)
            name = self.geom_name(a.get("name"), body_name, k)
            if has_inertial and _visual_only(a):
                continue  # visual only, and the body's <inertial> gives its mass: nothing to load
            shape, vol, unit_inertia, (R, p) = _geom_shape(r, a, name)
            M = pin.SE3(R, p)
            mass = float(a["mass"]) if "mass" in a else float(a.get("density", "1000")) * vol
            if mass > 0:
                inertia += M.act(pin.Inertia(mass, unit_inertia.lever, unit_inertia.inertia * mass))
            if _visual_only(a):
                continue
            self.note_contact_attributes(a, name)
            self.gm.addGeometryObject(pin.GeometryObject(name, jid, fid, body_in_joint * M, shape))
        return inertia

    def body_inertia(self, body_el: ET.Element, geom_inertia: Any, name: str) -> Any:
        pin, r = self.pin, self.r
        inert = body_el.find("inertial")
        if inert is None or r.inertiafromgeom == "true":
            return geom_inertia if r.inertiafromgeom != "false" else pin.Inertia.Zero()
        a = dict(inert.attrib)
        mass = float(a.get("mass", "0"))
        p = _floats(a.get("pos", "0 0 0"), 3, f"body {name} inertial pos")
        R = r.rotation(a, f"body {name} inertial")
        if "fullinertia" in a:
            xx, yy, zz, xy, xz, yz = _floats(a["fullinertia"], 6, f"body {name} fullinertia")
            I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        else:
            I = np.diag(_floats(a.get("diaginertia", "0 0 0"), 3, f"body {name} diaginertia"))
        return pin.Inertia(mass, p, R @ I @ R.T)

    def visit(self, body_el: ET.Element, parent_joint: int, parent_frame: int, parent_in_joint: Any,
              childclass: str | None, top_level: bool) -> None:
        """Add a body, its joints (a chain of single-dof joints), geoms and inertia; then its children."""
        pin, r, model = self.pin, self.r, self.model
        self.n_bodies += 1
        name = body_el.get("name") or f"body{self.n_bodies}"
        childclass = body_el.get("childclass", childclass)
        if body_el.get("mocap") == "true":
            raise MultibodyValueError(f"{self.fname}: mocap body {name!r} is not supported")
        if float(body_el.get("gravcomp", "0")) != 0.0:
            self.warn(f"body {name!r} gravcomp={body_el.get('gravcomp')} is ignored (not represented)")
        pos = _floats(body_el.get("pos", "0 0 0"), 3, f"body {name} pos")
        offset = parent_in_joint * pin.SE3(r.rotation(dict(body_el.attrib), f"body {name}"), pos)
        # <freejoint> takes no defaults (MuJoCo: it has no class and ignores <default>)
        joints = [r._attrs(j, "joint", childclass) if j.tag == "joint" else {**j.attrib, "type": "free"}
                  for j in body_el if j.tag in ("joint", "freejoint")]
        jid, fid, body_in_joint = parent_joint, parent_frame, offset
        prev_pos = np.zeros(3)
        for k, a in enumerate(joints):
            kind = a.get("type", "hinge")
            jname = a.get("name") or f"{name}_joint{k}"
            self.joint_attributes(a, kind, jname)
            jpos = _floats(a.get("pos", "0 0 0"), 3, f"joint {jname} pos")
            # joint k acts about its anchor in the body frame, after joints 0..k-1 (MuJoCo's order)
            place = (offset if k == 0 else pin.SE3(np.eye(3), -prev_pos)) * pin.SE3(np.eye(3), jpos)
            if kind == "free":
                if not (top_level and parent_joint == self.world_joint and self.root_joint is None) or len(joints) > 1:
                    raise MultibodyValueError(f"{self.fname}: free joint {jname!r} must be the only joint of a "
                                              f"top-level body, and the file cannot take a root joint "
                                              f"(floating_base=True) as well")
                jid, fid = self.add_joint(parent_joint, pin.JointModelFreeFlyer(), pin.SE3.Identity(), jname,
                                          [-np.inf] * 7, [np.inf] * 7, parent_frame)
                quat = pin.Quaternion(offset.rotation).coeffs()  # (x, y, z, w)
                self.q0_parts.append(np.concatenate([offset.translation, quat]))  # the world pose (qpos)
                body_in_joint = pin.SE3.Identity()
                continue
            jm, lo, hi = self.joint_model(a, kind, jname)
            jid, fid = self.add_joint(jid, jm, place, jname, lo, hi, fid)
            iv = model.joints[jid].idx_v
            frc = a.get("actuatorfrcrange")
            if frc is not None and a.get("actuatorfrclimited", "auto") != "false":
                self.effort[iv] = float(np.abs(_floats(frc, 2, f"joint {jname} actuatorfrcrange")).max())
            if float(a.get("armature", "0")) != 0.0:
                self.armature[iv] = float(a["armature"])
            prev_pos = jpos
            body_in_joint = pin.SE3(np.eye(3), -jpos)
        if joints:
            bfid = model.addBodyFrame(name, jid, body_in_joint, fid)
        else:  # welded to its parent
            bfid = model.addFrame(pin.Frame(name, jid, fid, body_in_joint, pin.FrameType.BODY))
        geom_inertia = self.add_geoms(body_el, name, jid, bfid, body_in_joint, childclass)
        inertia = self.body_inertia(body_el, geom_inertia, name)
        if inertia.mass > 0 or np.abs(inertia.inertia).max() > 0:
            model.appendBodyToJoint(jid, inertia, body_in_joint)
        for child in body_el:
            if child.tag == "body":
                self.visit(child, jid, bfid, body_in_joint, childclass, False)
            elif child.tag not in ("joint", "freejoint", "geom", "inertial") and child.tag not in _NO_DYNAMICS:
                self.warn(f"<{child.tag}> in body {name!r} is ignored")

    def joint_attributes(self, a: dict[str, str], kind: str, jname: str) -> None:
        """Check or record a joint's attributes beyond its kinematics (ref, springs, friction)."""
        if float(a.get("ref", "0")) != 0.0:
            raise MultibodyValueError(f"{self.fname}: joint {jname!r} has ref={a['ref']} (only ref=0 is supported)")
        if "springdamper" in a:
            self.notes["joint"].append(f"{jname} springdamper (give stiffness/damping)")
        if float(a.get("frictionloss", "0")) != 0.0:
            self.notes["joint"].append(f"{jname} frictionloss={float(a['frictionloss']):g}")
        if kind == "ball" and "range" in a and a.get("limited", "auto") != "false":
            self.notes["joint"].append(f"{jname} range (a ball joint's cone limit)")
        stiffness, springref, damping = (float(a.get(k, "0")) for k in ("stiffness", "springref", "damping"))
        if stiffness != 0.0 or damping != 0.0:
            scalar = kind in ("hinge", "slide")
            if not scalar or self.warn_springs:
                self.notes["springs"].append(f"{jname} (stiffness={stiffness:g}, damping={damping:g}"
                                             f"{'' if scalar else ', ' + kind + ' joint'})")
            if scalar:
                rest = self.r.angle(springref) if kind == "hinge" else springref
                self.joint_springs[jname] = (stiffness, rest, damping)

    def joint_model(self, a: dict[str, str], kind: str, jname: str) -> tuple[Any, list[float], list[float]]:
        """(Pinocchio joint model, lower, upper) of a hinge, slide or ball joint; records q0."""
        pin, r = self.pin, self.r
        if kind == "ball":
            self.q0_parts.append(np.array([0.0, 0.0, 0.0, 1.0]))
            return pin.JointModelSpherical(), [-np.inf] * 4, [np.inf] * 4
        if kind not in ("hinge", "slide"):
            raise MultibodyValueError(f"{self.fname}: joint {jname!r} of type {kind!r} is not supported")
        axis = _floats(a.get("axis", "0 0 1"), 3, f"joint {jname} axis")
        axis = axis / np.linalg.norm(axis)
        ax = int(np.argmax(np.abs(axis)))
        aligned = abs(axis[ax] - 1.0) < 1e-12
        if kind == "hinge":
            jm = ([pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ][ax]() if aligned
                  else pin.JointModelRevoluteUnaligned(axis))
        else:
            jm = ([pin.JointModelPX, pin.JointModelPY, pin.JointModelPZ][ax]() if aligned
                  else pin.JointModelPrismaticUnaligned(axis))
        limited = a.get("limited", "auto")
        rng = _floats(a.get("range"), 2, f"joint {jname} range")
        on = limited == "true" or (limited == "auto" and r.autolimits and rng is not None)
        if on and rng is None:
            raise MultibodyValueError(f"{self.fname}: joint {jname!r} is limited but has no range")
        self.q0_parts.append(np.zeros(1))
        if not on:
            return jm, [-np.inf], [np.inf]
        if kind == "hinge":
            return jm, [r.angle(rng[0])], [r.angle(rng[1])]
        return jm, [float(rng[0])], [float(rng[1])]


def _single_joint_model(jm: Any) -> Any:
    import pinocchio as pin

    m = pin.Model()
    m.addJoint(0, jm, pin.SE3.Identity(), "j")
    return m


def _mujoco_to_pinocchio_q(model: Any, qpos: np.ndarray, has_root: bool) -> np.ndarray:
    """MuJoCo qpos (quaternions w x y z) to Pinocchio q (x y z w)."""
    import pinocchio as pin

    q = pin.neutral(model)
    start = model.joints[1].nq if has_root else 0
    q[start:] = qpos
    for j in range(1, model.njoints):
        jm = model.joints[j]
        kind = jm.shortname()
        if has_root and j == 1:
            continue
        iq = jm.idx_q
        if kind == "JointModelFreeFlyer":
            q[iq + 3:iq + 7] = np.roll(q[iq + 3:iq + 7], -1)
        elif kind == "JointModelSpherical":
            q[iq:iq + 4] = np.roll(q[iq:iq + 4], -1)
    return q
