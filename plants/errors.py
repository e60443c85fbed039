"""Exceptions of the ``plants`` package."""

from __future__ import annotations

__all__ = ["PlantError", "UnknownPlantError"]


class PlantError(Exception):
    """Root of every error raised by :mod:`plants`."""


class UnknownPlantError(PlantError, ValueError):
    """``load_plant`` was given a name that is not registered; ``.available`` lists the names."""

    def __init__(self, name: str, available: list[str]):
        super().__init__(f"unknown plant {name!r}; registered plants: {', '.join(available)}")
        self.name = name
        self.available = available
