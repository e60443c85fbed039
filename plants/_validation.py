"""Strict argument checks for ``plants``: the one validation layer of ``lcs._validation`` with the
plants' error classes (a TypeError for a string, bool or complex where numbers are expected, a
ValueError for a wrong shape or a non-finite value, each naming the argument)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lcs._validation import as_float_array, as_vector, check_memory, check_number

from .errors import PlantTypeError, PlantValueError

ERRORS = (PlantTypeError, PlantValueError)

__all__ = ["ERRORS", "vector", "number", "duration_steps"]


def vector(name: str, value: Any, size: int) -> np.ndarray:
    """A finite real (size,) vector; an (size, 1) column is accepted, (2, 2) for 4 is not."""
    return as_vector(name, value, size, ERRORS)


def array(name: str, value: Any) -> np.ndarray:
    """A real float64 array (no strings, booleans or complex numbers)."""
    return as_float_array(name, value, ERRORS)


def number(name: str, value: Any, **kw: Any) -> Any:
    """A real scalar checked against a range (``lcs._validation.check_number``)."""
    return check_number(name, value, errors=ERRORS, **kw)


def duration_steps(duration: Any, dt: float, bytes_per_step: int) -> int:
    """Steps of a run of ``duration`` [s] at ``dt``, refused up front when its log would not fit
    in memory (the estimate is in the message)."""
    duration = number("duration", duration, minimum=0.0)
    n = int(round(duration / dt))
    check_memory(f"a run of {duration:g} s ({n} steps of {dt:g} s)", (n + 1) * bytes_per_step,
                 ERRORS)
    return n
