"""Exceptions of :mod:`plants.multibody` (defined in :mod:`plants.errors`, re-exported here).

All derive from :class:`plants.errors.PlantError`; input-validation errors also derive from
:class:`ValueError` / :class:`TypeError`.
"""

from ..errors import (  # noqa: F401
    MissingCollisionGeometryError,
    MultibodyError,
    MultibodyTypeError,
    MultibodyValueError,
    UnknownGeometryError,
    UnknownJointError,
)

__all__ = [
    "MultibodyError",
    "MultibodyValueError",
    "MultibodyTypeError",
    "UnknownGeometryError",
    "UnknownJointError",
    "MissingCollisionGeometryError",
]
