"""Deformable bodies for ``plants.sim``: tetrahedral solids and triangle cloth, hyperelastic
materials, and seed 004's local-global solver with NCP frictional contact.

Public API::

    from plants.sim import load_scene
    sim = load_scene("deformable-slope", mu=0.18, slope_deg=10.0)   # solver="fba"
    traj = sim.run(1.0)
    traj.deformable_positions["box"]        # (steps + 1, n_nodes, 3) [m]

    from plants.sim.deformable import (DeformableBody, DeformableWorld, DeformableSimulator,
                                       StableNeoHookean, box_tet_mesh, HalfSpace)

    # robots coupled two-way through the contact rows; surfaces filled with tetrahedra (fTetWild)
    from plants.sim.deformable import CoupledRobot, LinkBox, tetrahedralize

The math, with seed 004's equation numbers: ``docs/deformables.md``.
"""

from .body import DeformableBody, lumped_mass, rest_shape
from .coupling import CoupledRobot, LinkBox
from .local_global import FBAOptions, LocalGlobalSystem, StepStats
from .materials import ARAP, CoRotational, Material, StableNeoHookean, energy_density, first_piola, local_step
from .nsn import NSNOptions
from .mesh import SimplexMesh, bar_tet_mesh, box_tet_mesh, cloth_sheet, load_mesh, sphere_tet_mesh, tetrahedralize
from .obstacles import BoxObstacle, CylinderObstacle, HalfSpace, Obstacle, SphereObstacle
from .simulator import SOLVERS, DeformableSimulator, DeformableTrajectory
from .sparse_inverse import SparseInverse
from .world import Attachment, DeformableWorld

__all__ = [
    "ARAP", "Attachment", "BoxObstacle", "CoRotational", "CoupledRobot", "CylinderObstacle", "DeformableBody",
    "DeformableSimulator", "DeformableTrajectory", "DeformableWorld", "FBAOptions", "HalfSpace",
    "LinkBox", "LocalGlobalSystem", "Material", "NSNOptions", "Obstacle", "SOLVERS", "SimplexMesh", "SparseInverse",
    "SphereObstacle", "StableNeoHookean", "StepStats", "bar_tet_mesh", "box_tet_mesh", "cloth_sheet",
    "energy_density", "first_piola", "load_mesh", "local_step", "lumped_mass", "rest_shape", "sphere_tet_mesh",
    "tetrahedralize",
]
