"""Argument checks shared by the ``lcs`` package (clear messages naming the argument)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import LCSTypeError, LCSValueError


def as_float_array(name: str, value: Any) -> np.ndarray:
    """Convert ``value`` to a float64 array or raise a TypeError naming ``name``."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise LCSTypeError(
            f"{name} must be a real-valued array-like, got {type(value).__name__}"
        ) from e
    return arr


def check_finite(name: str, arr: np.ndarray) -> None:
    """Raise a ValueError naming ``name`` if ``arr`` holds NaN or Inf."""
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise LCSValueError(f"{name} has a non-finite entry at index {tuple(int(i) for i in bad)}")


def as_matrix(name: str, value: Any, rows: int | None, cols: int | None) -> np.ndarray:
    """A finite 2-D float matrix of shape (rows, cols); ``None`` leaves a dimension free."""
    arr = as_float_array(name, value)
    if arr.ndim != 2:
        raise LCSValueError(
            f"{name} must be a 2-D matrix of shape {_shape_str(rows, cols)}, got ndim={arr.ndim} "
            f"(shape {arr.shape})"
        )
    if (rows is not None and arr.shape[0] != rows) or (cols is not None and arr.shape[1] != cols):
        raise LCSValueError(
            f"{name} must have shape {_shape_str(rows, cols)}, got {arr.shape}"
        )
    check_finite(name, arr)
    return arr


def as_vector(name: str, value: Any, size: int | None) -> np.ndarray:
    """A finite 1-D float vector of length ``size``; (size, 1) columns are flattened."""
    arr = as_float_array(name, value)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise LCSValueError(
            f"{name} must be a vector of shape ({'n' if size is None else size},), got shape "
            f"{arr.shape}"
        )
    if size is not None and arr.shape[0] != size:
        raise LCSValueError(f"{name} must have shape ({size},), got {arr.shape}")
    check_finite(name, arr)
    return arr


def _shape_str(rows: int | None, cols: int | None) -> str:
    return f"({'n' if rows is None else rows}, {'m' if cols is None else cols})"
