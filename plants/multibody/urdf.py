"""URDF import: Pinocchio's parser, with the names and checks it leaves out.

``pinocchio.buildGeomFromUrdf`` names every collision geometry ``<link>_<k>`` (the k-th
``<collision>`` of the link), whatever the file says. :func:`load_urdf` renames them after the
file: a ``<collision name="...">`` keeps its name; an unnamed one keeps ``<link>_<k>``. A name
used twice in the file (some exporters call every element ``"collision"``) becomes
``<link>/<name>`` for all its uses, so names stay unique and still say where they come from.

Joint ``<dynamics damping friction>`` and ``<mimic>`` are not represented in the model: a warning
names the joints (the simulator's ``SceneBuilder.add_urdf`` honours them as joint damping, dry
friction and couplers, and turns the warning off). Mesh collision geometry is replaced by its convex hull wherever it is used (the simulator's
GJK/EPA, the LCS factory's coal distance queries); :func:`load_urdf` warns once per file
(:class:`~plants.multibody.errors.ModelImportWarning`), naming them. A ``<collision>`` whose shape
Pinocchio does not load (so it would be dropped) is an error naming the link.
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Any, Sequence

from .errors import ModelImportWarning, MultibodyValueError

__all__ = ["load_urdf", "clear_urdf_cache", "urdf_collision_names", "urdf_mimic_joints",
           "warn_convex_hulls"]

#: Parsed (model, collision model) pairs by (file, mtime, size, package dirs, root joint); see
#: :func:`load_urdf`. Least recently used entries go first beyond :data:`_CACHE_SIZE`.
_CACHE: "OrderedDict[tuple[Any, ...], tuple[Any, Any]]" = OrderedDict()
_CACHE_SIZE = 16


def clear_urdf_cache() -> None:
    """Forget every model :func:`load_urdf` has cached (the next load parses the file again)."""
    _CACHE.clear()


def _root_key(root_joint: Any) -> Any:
    """A hashable description of a root joint model (a composite by its parts, in order)."""
    if root_joint is None:
        return None
    parts = getattr(root_joint, "joints", None)
    if parts is not None and root_joint.shortname() == "JointModelComposite":
        return ("JointModelComposite", tuple(_root_key(j) for j in parts))
    return root_joint.shortname()


def urdf_collision_names(path: str | Path) -> dict[str, str]:
    """Map Pinocchio's generated geometry names (``<link>_<k>``) to the names in the file."""
    root = ET.parse(path).getroot()
    per_link: list[tuple[str, int, str | None]] = []
    for link in root.findall("link"):
        lname = link.get("name", "")
        for k, col in enumerate(link.findall("collision")):
            per_link.append((lname, k, col.get("name") or None))
    counts = Counter(n for _, _, n in per_link if n)
    generated = {f"{lname}_{k}" for lname, k, _ in per_link}
    out = {}
    for lname, k, n in per_link:
        if n is None:
            continue
        # a duplicated name, or one that collides with a generated name of another geometry
        clash = counts[n] > 1 or (n in generated and n != f"{lname}_{k}")
        out[f"{lname}_{k}"] = f"{lname}/{n}" if clash else n
    return out


def load_urdf(path: str | Path, root_joint: Any = None, package_dirs: Sequence[str] | None = None,
              root_joint_name: str = "root_joint", warn_meshes: bool = True, warn_dynamics: bool = True,
              warn_mimic: bool = True) -> tuple[Any, Any]:
    """(``pin.Model``, collision ``pin.GeometryModel``) of a URDF file, geometry named after the file.

    Args:
        path: the URDF file.
        root_joint: optional Pinocchio joint model attaching the root link (a floating base).
        package_dirs: folders where ``package://`` URIs are resolved.
        root_joint_name: the name of that joint.
        warn_meshes: warn about the mesh geometries replaced by their convex hulls (callers that
            keep only some geometries warn about those themselves: :func:`warn_convex_hulls`).
        warn_dynamics, warn_mimic: warn that ``<dynamics damping friction>`` / ``<mimic>`` are
            not represented (callers that honour them, as the simulator's
            ``SceneBuilder.add_urdf``, turn the warning off).

    Raises:
        FileNotFoundError: no such file. ValueError: a collision element that was not loaded.

    Parsing is cached (meshes make it slow: ~5 s for example-robot-data's so101): per file path,
    modification time and size, package dirs and root joint, the 16 most recent loads are kept
    and every call returns its own copies (``Model.copy()``, ``GeometryModel.clone()``), so a
    caller that renames or re-places them never changes the cache. A mesh edited in place is not
    noticed (the URDF's own time is the key): call :func:`clear_urdf_cache`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"URDF file not found: {path}")
    dirs = [str(p) for p in (package_dirs or [])]
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, tuple(dirs), _root_key(root_joint),
           root_joint_name)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        model, gm = _CACHE[key]
    else:
        model, gm = _CACHE[key] = _parse_urdf(path, root_joint, dirs, root_joint_name)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    model, gm = model.copy(), gm.clone()  # callers rename and re-place them: never the cached ones
    if warn_meshes:
        warn_convex_hulls(path, gm.geometryObjects, stacklevel=3)
    _warn_unrepresented(path, warn_dynamics, warn_mimic)
    return model, gm


def _parse_urdf(path: Path, root_joint: Any, dirs: list[str],
                root_joint_name: str) -> tuple[Any, Any]:
    """Pinocchio's parse of a URDF (model and collision model, meshes loaded), geometry renamed
    after the file; the uncached part of :func:`load_urdf`."""
    import pinocchio as pin

    if root_joint is None:
        model = pin.buildModelFromUrdf(str(path))
    else:
        model = pin.buildModelFromUrdf(str(path), root_joint, root_joint_name)
    gm = pin.buildGeomFromUrdf(model, str(path), pin.GeometryType.COLLISION, package_dirs=dirs)
    names = urdf_collision_names(path)
    n_file = sum(1 for link in ET.parse(path).getroot().findall("link") for _ in link.findall("collision"))
    if gm.ngeoms != n_file:
        loaded = [go.name for go in gm.geometryObjects]
        raise MultibodyValueError(f"{path.name}: {n_file} <collision> elements in the file but "
                                  f"{gm.ngeoms} loaded ({loaded}); an unsupported shape was dropped")
    for i, go in enumerate(gm.geometryObjects):
        new = names.get(go.name, go.name)
        if new != go.name:
            go.name = new
            gm.geometryObjects[i] = go
    return model, gm


def urdf_mimic_joints(path: str | Path) -> list[tuple[str, str, float, float]]:
    """The ``<mimic>`` elements of a URDF's movable joints: (joint, leading joint, multiplier,
    offset) each, meaning ``q[joint] = multiplier · q[leading joint] + offset`` (URDF defaults 1
    and 0). A ``<mimic>`` on a fixed joint (Talos' gripper links) has nothing to couple: skipped."""
    out = []
    for joint in ET.parse(path).getroot().findall("joint"):
        mimic = joint.find("mimic")
        if mimic is not None and joint.get("type") != "fixed":
            out.append((joint.get("name", ""), mimic.get("joint", ""), float(mimic.get("multiplier", "1") or 1),
                        float(mimic.get("offset", "0") or 0)))
    return out


def _warn_unrepresented(path: Path, warn_dynamics: bool = True, warn_mimic: bool = True) -> None:
    """Warn (one warning per kind, naming the joints) about joint elements the model ignores."""
    root = ET.parse(path).getroot()
    dynamics, mimic = [], []
    for joint in root.findall("joint"):
        name = joint.get("name", "?")
        dyn = joint.find("dynamics")
        if dyn is not None and any(float(dyn.get(k, "0") or 0) != 0.0 for k in ("damping", "friction")):
            dynamics.append(f"{name} (damping={dyn.get('damping', '0')}, friction={dyn.get('friction', '0')})")
        if joint.find("mimic") is not None:
            mimic.append(name)
    if dynamics and warn_dynamics:
        warnings.warn(f"{path.name}: joint <dynamics> damping/friction are not represented and are ignored: "
                      f"{', '.join(dynamics)} (add a plants.sim.JointSpring for a damper)",
                      ModelImportWarning, stacklevel=4)
    if mimic and warn_mimic:
        warnings.warn(f"{path.name}: <mimic> joints are simulated as independent joints: {', '.join(mimic)}",
                      ModelImportWarning, stacklevel=4)


def warn_convex_hulls(path: str | Path, geometry_objects: Sequence[Any], stacklevel: int = 2) -> None:
    """One :class:`ModelImportWarning` listing the mesh geometries among ``geometry_objects``."""
    import coal

    meshes = [f"{go.name} ({Path(go.meshPath).name})" for go in geometry_objects
              if isinstance(go.geometry, coal.BVHModelBase)]
    if meshes:
        warnings.warn(f"{Path(path).name}: {len(meshes)} mesh collision geometries are replaced by their "
                      f"convex hulls: {', '.join(meshes)}", ModelImportWarning, stacklevel=stacklevel + 1)

