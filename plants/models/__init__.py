"""Registered multibody plants (issue 4): Pinocchio + coal models whose LCS comes from the
multibody factory (``plants.multibody``), with the authors' controller settings.

Registry names: ``cube-pivoting``, ``cube-rotate-3d``, ``cartpole-urdf``, ``franka-ball``,
``franka-balls-2``, ``franka-balls-3``, ``franka-panda``. Importing this package only
registers the plants; each builds its Pinocchio model on first use.
"""

from .base import CONTACT_MODELS, MultibodyModelPlant
from .cartpole import CartpoleURDF, CartpoleURDFParams
from .cube_pivoting import CubePivoting, CubePivotingParams
from .cube_rotate_3d import CubeRotate3D, CubeRotate3DParams
from .franka_ball import FrankaBall, FrankaBallParams
from .franka_balls import FrankaBalls, FrankaBalls2, FrankaBalls3, FrankaBallsParams
from .franka_panda import FrankaPanda, FrankaPandaParams

__all__ = [
    "CONTACT_MODELS",
    "MultibodyModelPlant",
    "CubePivoting",
    "CubePivotingParams",
    "CubeRotate3D",
    "CubeRotate3DParams",
    "CartpoleURDF",
    "CartpoleURDFParams",
    "FrankaBall",
    "FrankaBallParams",
    "FrankaBalls",
    "FrankaBalls2",
    "FrankaBalls3",
    "FrankaBallsParams",
    "FrankaPanda",
    "FrankaPandaParams",
]
