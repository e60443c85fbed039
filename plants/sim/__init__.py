"""The contact simulator: a solver-neutral contact problem per time step, the SAP solver
(seed 001), and (in ``plants.sim.stepper`` / ``plants.sim.scenes``) Pinocchio + coal time
stepping with the θ-method of seed 001 §3.

Public API::

    from plants.sim import ContactProblem, make_contact_solver
    result = make_contact_solver("sap").solve(problem)   # ContactSolverResult
"""

from .contact_problem import (
    ContactProblem,
    ContactSolver,
    ContactSolverResult,
    ContactSolverStatus,
    available_contact_solvers,
    make_contact_solver,
    register_contact_solver,
)
from .sap import SAPOptions, SAPSolver, project_cone_r, sap_parameters

__all__ = [
    "ContactProblem",
    "ContactSolver",
    "ContactSolverResult",
    "ContactSolverStatus",
    "available_contact_solvers",
    "make_contact_solver",
    "register_contact_solver",
    "SAPOptions",
    "SAPSolver",
    "project_cone_r",
    "sap_parameters",
]

from .geometry import Box, ContactParams, HalfSpace, Sphere  # noqa: E402
from .scene import BilateralConstraint, JointCoupler, JointLimit, JointSpring, PDActuator, Scene, SceneBuilder  # noqa: E402
from .scenes import available_scenes, load_scene, register_scene  # noqa: E402
from .diagnostics import (  # noqa: E402
    ConstraintFallbackWarning,
    NonConvergenceWarning,
    PlausibilityFlag,
    PlausibilityOptions,
    PlausibilityWarning,
    SimulationWarning,
)
from .stepper import SCHEMES, Simulator, Trajectory  # noqa: E402

__all__ += [
    "Box",
    "ContactParams",
    "HalfSpace",
    "Sphere",
    "JointLimit",
    "JointSpring",
    "BilateralConstraint",
    "JointCoupler",
    "PDActuator",
    "Scene",
    "SceneBuilder",
    "available_scenes",
    "load_scene",
    "register_scene",
    "SCHEMES",
    "Simulator",
    "Trajectory",
    "NonConvergenceWarning",
    "ConstraintFallbackWarning",
    "PlausibilityFlag",
    "PlausibilityOptions",
    "PlausibilityWarning",
    "SimulationWarning",
]

# Augmented-Lagrangian (seed 000), non-smooth Newton (seed 002) and PGS solvers: importing
# registers "canal", "subadmm", "nsn" and "pgs" with make_contact_solver / load_scene(solver=...).
from .canal import CANALOptions, CANALSolver  # noqa: E402
from .nsn import NSNOptions, NSNSolver  # noqa: E402
from .pgs import PGSOptions, PGSSolver  # noqa: E402
from .subadmm import SubADMMOptions, SubADMMSolver  # noqa: E402

__all__ += ["CANALOptions", "CANALSolver", "NSNOptions", "NSNSolver", "PGSOptions", "PGSSolver",
            "SubADMMOptions", "SubADMMSolver"]
from . import al_scenes  # noqa: E402,F401  (registers "mass-ratio-stack")

# Pinocchio's own ADMM / PGS constraint solvers as peers (registers "pin-admm", "pin-pgs"; needs only
# Pinocchio, already imported by the scene module).
from .peer_pinocchio import PinocchioADMMSolver, PinocchioPGSSolver, PinocchioSolverOptions  # noqa: E402

__all__ += ["PinocchioADMMSolver", "PinocchioPGSSolver", "PinocchioSolverOptions"]

# Deformable bodies (seed 004): registers "deformable-slope", "twisting-bar", ... with load_scene.
from . import deformable  # noqa: E402,F401
from .deformable import scenes as _deformable_scenes  # noqa: E402,F401
