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
    UnknownFrameError,
    UnknownJointError,
    UnreachablePoseError,
)

__all__ = [
    "ModelImportWarning",
    "MultibodyError",
    "MultibodyValueError",
    "MultibodyTypeError",
    "UnknownGeometryError",
    "UnknownJointError",
    "MissingCollisionGeometryError",
    "UnknownFrameError",
    "UnreachablePoseError",
]


class ModelImportWarning(UserWarning):
    """A model file holds something the importer approximates or cannot represent (a mesh
    replaced by its convex hull, an ignored MJCF element); the message names the element."""
