"""What the controller acts on: the paper's LCS plants (and, in later issues, Pinocchio
multibody plants and the contact simulator).

Public API::

    from plants import load_plant
    plant = load_plant("cartpole-softwalls")   # or "finger-gaiting", "pivoting"
    lcs = plant.lcs(x, u)                      # the LCS at a state
    plant.defaults                             # the paper's Q, R, G, U, N, dt, bounds, x0, goal
"""

from . import paper  # noqa: F401  (registers the paper plants)
from . import models  # noqa: F401  (registers the multibody plants; models are built lazily)
from .errors import PlantError, UnknownPlantError
from .multibody import ContactPair, ModelBuilder, MultibodyPlant
from .paper import CartpoleSoftWalls, ControlDefaults, FingerGaiting, PaperLCSPlant, Pivoting
from .registry import available_plants, load_plant, register_plant
from .sim import available_scenes, load_scene  # the contact simulator's scenes

__all__ = [
    "load_plant",
    "available_plants",
    "register_plant",
    "PlantError",
    "UnknownPlantError",
    "PaperLCSPlant",
    "ControlDefaults",
    "CartpoleSoftWalls",
    "FingerGaiting",
    "Pivoting",
    "MultibodyPlant",
    "ContactPair",
    "ModelBuilder",
    "load_scene",
    "available_scenes",
]
