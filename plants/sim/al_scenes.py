"""Scenes of the augmented-Lagrangian issue (seed 000 §VII-B): ``mass-ratio-stack``.

``mass-ratio-stack``: the dish-piling mass-ratio test in box form: ``n_plates`` thin plates of
0.1 kg (0.2 × 0.2 × 0.02 m) stacked on the ground under one 5 kg box (0.2 m), μ = 0.5,
near-rigid contact (k = 1e12 N/m, τ_d = 0). Every body carries corner spheres (point-like contacts
inside its box) so that each face-to-face contact is four corner contacts, as in the cube scenes.
The Unitree A1 scenes (``a1-drop-8``, ``a1-drop-27``) need floating-base URDF robots in
``SceneBuilder`` and are not provided (see docs/contact-solvers.md).
"""

from __future__ import annotations

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
