"""Exceptions of the ``plants`` package."""

from __future__ import annotations

from typing import Any

__all__ = [
    "PlantError",
    "UnknownPlantError",
    "UnknownSolverError",
    "UnknownSceneError",
    "SceneError",
    "ContactSolveError",
]


class PlantError(Exception):
    """Root of every error raised by :mod:`plants`."""


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
