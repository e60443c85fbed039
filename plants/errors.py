"""Exceptions of the ``plants`` package."""

from __future__ import annotations

from typing import Any, Sequence

__all__ = [
    "PlantError",
    "UnknownPlantError",
    "UnknownSolverError",
    "UnknownSceneError",
    "SceneError",
    "ContactSolveError",
    "SimulationDivergedError",
    "MultibodyError",
    "MultibodyValueError",
    "MultibodyTypeError",
    "UnknownGeometryError",
    "UnknownJointError",
    "MissingCollisionGeometryError",
    "UnknownFrameError",
    "UnreachablePoseError",
]


class PlantError(Exception):
    """Root of every error raised by :mod:`plants`."""


class PlantValueError(PlantError, ValueError):
    """A plant or simulator argument has the right type but a wrong shape or value."""


class PlantTypeError(PlantError, TypeError):
    """A plant or simulator argument has the wrong type (a string for a number, complex, ...)."""


class UnknownPlantError(PlantError, ValueError):
    """``load_plant`` was given a name that is not registered; ``.available`` lists the names."""

    def __init__(self, name: str, available: list[str]):
        super().__init__(f"unknown plant {name!r}; registered plants: {', '.join(available)}")
        self.name = name
        self.available = available


class UnknownSolverError(PlantError, ValueError):
    """A contact-solver name that is not registered; ``.available`` lists the names."""

    def __init__(self, name: str, available: list[str]):
        super().__init__(f"unknown contact solver {name!r}; registered solvers: {', '.join(available)}")
        self.name = name
        self.available = available


class UnknownSceneError(PlantError, ValueError):
    """``load_scene`` was given a name that is not registered; ``.available`` lists the names."""

    def __init__(self, name: str, available: list[str]):
        super().__init__(f"unknown scene {name!r}; registered scenes: {', '.join(available)}")
        self.name = name
        self.available = available


class SceneError(PlantError, ValueError):
    """A scene description is invalid (e.g. a body without collision geometry)."""


class ContactSolveError(PlantError, RuntimeError):
    """The contact solver did not converge on a step; the simulator refused to advance.

    Attributes:
        problem: the step's :class:`plants.sim.ContactProblem` (``problem.save(path)`` replays it).
        result: the solver's :class:`plants.sim.ContactSolverResult`.
        step: index of the step; ``t``: its start time in [s].
    """

    def __init__(self, message: str, problem: Any, result: Any, step: int, t: float):
        super().__init__(message)
        self.problem = problem
        self.result = result
        self.step = step
        self.t = t


class SimulationDivergedError(ContactSolveError):
    """A step's solution is not finite or exceeds the simulator's ``max_speed``; the simulator
    refused to advance. Same attributes as :class:`ContactSolveError`."""


def _listing(names: Sequence[str], limit: int = 40) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


class MultibodyError(PlantError):
    """Root of the errors raised by :mod:`plants.multibody`."""


class MultibodyValueError(MultibodyError, ValueError):
    """An argument has a wrong value, shape or a non-finite entry (the message names it)."""


class MultibodyTypeError(MultibodyError, TypeError):
    """An argument has the wrong type."""


class UnknownGeometryError(MultibodyValueError):
    """A contact pair names a geometry/body that the model does not have.

    Attributes:
        name: the name that was not found.
        geometries: the collision-geometry names of the model.
        bodies: the body (frame) names of the model.
    """

    def __init__(self, name: str, geometries: Sequence[str], bodies: Sequence[str]):
        super().__init__(
            f"unknown geometry or body {name!r} in a contact pair; collision geometries: "
            f"{_listing(geometries)}; bodies: {_listing(bodies)}"
        )
        self.name = name
        self.geometries = list(geometries)
        self.bodies = list(bodies)


class UnknownJointError(MultibodyValueError):
    """An actuated joint name is not a joint of the model; ``.joints`` lists the valid ones."""

    def __init__(self, name: str, joints: Sequence[str]):
        super().__init__(f"unknown joint {name!r}; joints of the model: {_listing(joints)}")
        self.name = name
        self.joints = list(joints)


class MissingCollisionGeometryError(MultibodyValueError):
    """A contact pair names a body that exists but has no collision geometry.

    Attributes:
        name: the body name.
        geometries: the collision-geometry names the model does have.
    """

    def __init__(self, name: str, geometries: Sequence[str]):
        super().__init__(
            f"body {name!r} of a contact pair has no collision geometry in the collision model; "
            f"collision geometries: {_listing(geometries) or '(none)'}"
        )
        self.name = name
        self.geometries = list(geometries)


class UnknownFrameError(MultibodyValueError):
    """A frame name (inverse kinematics target) is not a frame of the model; ``.frames`` lists
    the valid ones (links, joints and fixed frames)."""

    def __init__(self, name: str, frames: Sequence[str]):
        super().__init__(f"unknown frame {name!r}; frames of the model: {_listing(frames)}")
        self.name = name
        self.frames = list(frames)


class UnreachablePoseError(MultibodyValueError):
    """Inverse kinematics found no configuration within the joint limits that puts a frame at
    its target pose.

    Attributes:
        frame: the frame's name.
        result: the best :class:`plants.multibody.ik.IKResult` found (``.q``, ``.position_error``
            [m], ``.rotation_error`` [rad]).
    """

    def __init__(self, frame: str, result: Any):
        super().__init__(
            f"frame {frame!r} cannot reach its target within the joint limits: the closest "
            f"configuration found leaves {result.position_error:.3g} m of position error"
            + (f" and {result.rotation_error:.3g} rad of rotation error"
               if getattr(result, "oriented", True) else "")
            + f" (tolerance {result.tolerance:.1g}; {result.attempts} starts)")
        self.frame = frame
        self.result = result
