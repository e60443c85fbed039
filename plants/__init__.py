"""What the controller acts on: the paper's LCS plants, Pinocchio multibody plants (registered
or from a user's URDF/MJCF file) and the contact simulator.

Public API::

    from plants import load_plant, load_task_file
    plant = load_plant("cartpole-softwalls")   # or "finger-gaiting", "pivoting", "cube-pivoting", ...
    plant = load_plant("robot_task.yaml")      # a task file: a user's model file + contacts + cost
    lcs = plant.lcs(x, u)                      # the LCS at a state
    plant.defaults                             # Q, R, G, U, N, dt, bounds, x0, goal
    task = load_task_file("robot_task.yaml")   # the planning plant and the simulation scene

Every plant satisfies :class:`plants.Plant` (``plants/protocol.py``).
"""

from . import paper  # noqa: F401  (registers the paper plants)
from . import models  # noqa: F401  (registers the multibody plants; models are built lazily)
from .errors import PlantError, UnknownPlantError
from .multibody import ContactPair, ModelBuilder, MultibodyPlant
from .protocol import PLANT_MEMBERS, Plant, check_plant
from .paper import CartpoleSoftWalls, ControlDefaults, FingerGaiting, PaperLCSPlant, Pivoting
from .registry import available_plants, load_plant, register_plant
from .sim import available_scenes, load_scene  # the contact simulator's scenes
from .planning_step import PlanningStepWarning, check_plan_rollout, check_planning_step
from .task_file import TaskFile, TaskFileError, load_task_file

__all__ = [
    "Plant",
    "check_plant",
    "PLANT_MEMBERS",
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
    "load_task_file",
    "TaskFile",
    "TaskFileError",
    "check_planning_step",
    "check_plan_rollout",
    "PlanningStepWarning",
]
