"""Scenes of the augmented-Lagrangian issue (seed 000 §VII-B): ``mass-ratio-stack``, ``a1-drop-8|27``,
and seed 002's ``heavy-stack`` (4096:1).

``mass-ratio-stack``: the dish-piling mass-ratio test in box form: ``n_plates`` thin plates of
0.1 kg (0.2 × 0.2 × 0.02 m) stacked on the ground under one 5 kg box (0.2 m), μ = 0.5,
near-rigid contact (k = 1e12 N/m, τ_d = 0). Every body carries corner spheres (point-like contacts
inside its box) so that each face-to-face contact is four corner contacts, as in the cube scenes.

``a1-drop-8``, ``a1-drop-27``: Unitree A1 quadrupeds from example-robot-data, each added by
``SceneBuilder.add_urdf(floating_base=True)`` (18 dofs: free root + 12 joints), unactuated, in a
crouched pose, base released at 0.45 m in a grid 0.6 m apart (27: three layers 0.5 m apart), δt = 1/240 s.
The trunk and calf boxes touch the ground with their contact manifolds (up to 4 points,
``max_contacts_per_pair``; 1 = one GJK/EPA point per pair, as before the manifolds).
"""

from __future__ import annotations

import numpy as np

from ..multibody.resources import example_robot_data_path
from .geometry import Box, ContactParams, Sphere
from .scene import SceneBuilder, box_inertia
from .scenes import SceneSpec, register_scene

__all__ = ["PLATE_MASS", "TOP_MASS", "A1_STAND", "A1_URDF", "HEAVY_STACK_MASSES"]

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


HEAVY_STACK_MASSES = (8.0, 64.0, 512.0, 4096.0, 32768.0)
"""Seed 002's heavy stack (Fig. 14 middle): masses growing ×8 upwards, 4096:1 top to bottom."""


@register_scene("heavy-stack")
def _heavy_stack(dt=None, masses=HEAVY_STACK_MASSES, side: float = 0.1, mu: float = 0.5) -> SceneSpec:
    """Seed 002 §9's heavy stack: five cubes of side ``side`` at rest on the ground, from 8 kg at
    the bottom to 32768 kg on top (the paper gives μ = 0.5 and the masses; the size, the
    near-rigid contact k = 1e12 N/m, τ_d = 0 and the corner spheres are ours, as in the cube
    scenes). Default δt = 1/120 s (8.3 ms, a real-time rate): SAP's regularization then lets the
    stack sink ~0.2 m (seed 001 §VIII), which the simulator flags with a suggested δt."""
    params = ContactParams(1e12, 0.0, mu)
    b = SceneBuilder(margin=0.01, excluded_groups=_EXCLUDED)
    b.add_ground(ContactParams(float("inf"), 0.0, mu))
    h = side / 2
    for i, m in enumerate(masses):
        _slab(b, f"box{i}", float(m), (h, h, h), h + i * side, params)
    return SceneSpec(b.build(), 1.0 / 120 if dt is None else dt,
                     info={"masses": tuple(float(m) for m in masses), "side": side,
                           "mass_ratio": float(max(masses) / min(masses))})


# ---------------------------------------------------------------------------- floating-base robots
A1_URDF = "robots/a1_description/urdf/a1.urdf"
A1_STAND = np.array([0.0, 0.8, -1.5] * 4)  # hip, thigh, calf per leg: a crouched standing pose
A1_MIN_GEOMETRY = 2e-3  # [m] bounding radius below which a collision geometry is a placeholder (the 1 mm IMU box)


def _a1_drop(n_robots: int):
    def factory(dt=None, mu: float = 0.8, height: float = 0.45, spacing: float = 0.6,
                max_contacts_per_pair: int = 4) -> SceneSpec:
        urdf = example_robot_data_path(A1_URDF)
        params = ContactParams(1e12, 0.0, mu)
        b = SceneBuilder(margin=0.01, max_contacts_per_pair=max_contacts_per_pair)
        b.add_ground(ContactParams(float("inf"), 0.0, mu))
        side = int(np.ceil(np.sqrt(n_robots))) if n_robots <= 9 else 3
        for k in range(n_robots):
            layer, idx = divmod(k, side * side) if n_robots > 9 else (0, k)
            x, y = (idx % side - (side - 1) / 2) * spacing, (idx // side - (side - 1) / 2) * spacing
            z = height + 0.5 * layer
            # the seed-000 benchmark scene as published: no self-collision, no joint limits
            b.add_urdf(urdf, params, q0=A1_STAND, floating_base=True, prefix=f"a1_{k}/",
                       base_position=(x + 0.05 * layer, y + 0.03 * layer, z), min_bounding_radius=A1_MIN_GEOMETRY,
                       self_collision=False, joint_limits=False)
        return SceneSpec(b.build(), 1.0 / 240 if dt is None else dt, info={"n_robots": n_robots})

    return factory


for _n in (8, 27):
    register_scene(f"a1-drop-{_n}")(_a1_drop(_n))


# ---------------------------------------------------------------------------- seed 002's stiff chain
STIFF_CHAIN = {"n_links": 16, "link_mass": 0.003, "bending_stiffness": 250.0, "length": 0.32}
"""Seed 002 §10.1.2 (Fetch Beam, Fig. 7): 16 rigid links of 0.003 kg joined with a bending
stiffness of 250 N·m (per joint, [N·m/rad]); the length is ours (the paper gives none)."""


def _chain_urdf(n_links: int, link_mass: float, length: float, width: float) -> str:
    l = length / n_links
    ixx = link_mass * (2 * width**2) / 12
    iyy = link_mass * (l**2 + width**2) / 12
    links, joints = [], []
    for i in range(n_links):
        links.append(
            f'<link name="link{i}"><inertial><origin xyz="{l / 2} 0 0"/><mass value="{link_mass}"/>'
            f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{iyy}" ixy="0" ixz="0" iyz="0"/></inertial>'
            f'<collision name="link{i}"><origin xyz="{l / 2} 0 0"/><geometry><box size="{l} {width} {width}"/>'
            f'</geometry></collision></link>')
        if i:
            joints.append(f'<joint name="bend{i}" type="revolute"><parent link="link{i - 1}"/><child link="link{i}"/>'
                          f'<origin xyz="{l} 0 0"/><axis xyz="0 1 0"/>'
                          f'<limit lower="-3.1" upper="3.1" effort="0" velocity="0"/></joint>')  # not enforced
    return '<?xml version="1.0"?><robot name="stiff_chain">' + "".join(links + joints) + "</robot>"


@register_scene("stiff-chain")
def _stiff_chain(dt=None, n_links: int = STIFF_CHAIN["n_links"], link_mass: float = STIFF_CHAIN["link_mass"],
                 bending_stiffness: float = STIFF_CHAIN["bending_stiffness"], length: float = STIFF_CHAIN["length"],
                 width: float = 0.01, tilt: float = 0.15, press: float = 0.01, mu: float = 0.5) -> SceneSpec:
    """Seed 002's stiff chain (the Fetch Beam of §10.1.2, Fig. 7): a beam of ``n_links`` rigid
    links of ``link_mass`` joined by revolute joints (about y) with ``bending_stiffness``, its
    first link held fixed (the gripper) and inclined down by ``tilt`` [rad] so that the straight
    beam's tip would end ``press`` [m] below the ground. It starts at rest, bent up (every joint by
    the same angle) until its tip clears the ground by 0.1 mm; released, the springs press the tip
    on the ground, which holds it bent (a tip force of a few newtons on links of 3 g: the
    stiffness-to-mass ratio of the paper's beam). Default δt = 1/120 s
    (the paper's 8.3 ms), implicit Euler (the joint springs are stiff: ω ≈ 10⁴ rad/s). Near-rigid
    contact (k = 1e12 N/m), μ = 0.5. ``info`` holds the straight beam's tip height."""
    import tempfile
    from pathlib import Path

    from .scene import JointSpring

    params = ContactParams(1e12, 0.0, mu)
    b = SceneBuilder(margin=0.01)
    b.add_ground(ContactParams(float("inf"), 0.0, mu))
    n, ell = int(n_links), float(length) / int(n_links)
    z0 = length * np.sin(tilt) - press + 0.5 * width * np.cos(tilt)  # root height: tip edge `press` below
    quat = (0.0, np.sin(tilt / 2), 0.0, np.cos(tilt / 2))  # about +y: the beam points down by `tilt`

    def tip_clearance(a: float) -> float:  # lowest tip corner over the ground, joints bent by a each
        theta = tilt + a * np.arange(n)  # link directions below the horizontal
        return z0 - ell * np.sin(theta).sum() - 0.5 * width * np.cos(theta[-1])

    lo, hi = -2.0 * tilt / n, 0.0  # start bent up just enough to clear the ground by 0.1 mm
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if tip_clearance(mid) < 1e-4 else (mid, hi)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stiff_chain.urdf"
        path.write_text(_chain_urdf(n, float(link_mass), float(length), float(width)))
        b.add_urdf(path, params, q0=np.full(n - 1, lo), base_position=(0.0, 0.0, z0), base_quaternion=quat,
                   self_collision=False, joint_limits=False, effort_limits=False)
    for dof in range(int(n_links) - 1):
        b.add_spring(JointSpring(dof=dof, stiffness=float(bending_stiffness), rest=0.0))
    return SceneSpec(b.build(), 1.0 / 120 if dt is None else dt, scheme="implicit_euler",
                     info={"n_links": int(n_links), "link_mass": float(link_mass),
                           "bending_stiffness": float(bending_stiffness), "length": float(length),
                           "tilt": float(tilt), "press": float(press), "root_height": float(z0)})
