"""The C3 paper's analytic LCS plants: cart-pole with soft walls, finger gaiting, pivoting."""

from .base import ControlDefaults, PaperLCSPlant
from .cartpole import CartpoleSoftWalls, CartpoleSoftWallsParams
from .finger_gaiting import FingerGaiting, FingerGaitingParams
from .pivoting import Pivoting, PivotingParams

__all__ = [
    "ControlDefaults",
    "PaperLCSPlant",
    "CartpoleSoftWalls",
    "CartpoleSoftWallsParams",
    "FingerGaiting",
    "FingerGaitingParams",
    "Pivoting",
    "PivotingParams",
]
