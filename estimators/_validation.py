"""Argument checks shared by the estimators (ValueError/TypeError naming the argument)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import EstimatorTypeError, EstimatorValueError


def as_float_array(name: str, value: Any, shape: tuple[int | None, ...] | None = None,
                   finite: bool = True) -> np.ndarray:
    """``value`` as a float64 array; checks the shape (None: any size on that axis) and
    finiteness."""
    if isinstance(value, (str, bytes)) or value is None:
        raise EstimatorTypeError(f"{name} must be an array of numbers, got {type(value).__name__}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as e:
        raise EstimatorTypeError(f"{name} must be an array of numbers, got "
                                 f"{type(value).__name__}") from e
    if shape is not None:
        ok = arr.ndim == len(shape) and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = "(" + ", ".join("N" if s is None else str(s) for s in shape) + ")"
            raise EstimatorValueError(f"{name} must have shape {want}, got {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        raise EstimatorValueError(f"{name} must be finite (no NaN/Inf)")
    return arr


def positive_float(name: str, value: Any) -> float:
    """A finite float > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise EstimatorTypeError(f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not (np.isfinite(v) and v > 0):
        raise EstimatorValueError(f"{name} must be a positive finite number, got {value!r}")
    return v


def check_image(name: str, image: Any, width: int | None = None, height: int | None = None
                ) -> np.ndarray:
    """A uint8 image of shape (H, W) or (H, W, 3), optionally of the camera's size."""
    if not isinstance(image, np.ndarray):
        raise EstimatorTypeError(f"{name} must be a numpy array (H, W) or (H, W, 3) of uint8, "
                                 f"got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise EstimatorTypeError(f"{name} must have dtype uint8, got {image.dtype}")
    if not (image.ndim == 2 or (image.ndim == 3 and image.shape[2] == 3)):
        raise EstimatorValueError(f"{name} must have shape (H, W) or (H, W, 3), got "
                                  f"{image.shape}")
    if width is not None and height is not None and image.shape[:2] != (height, width):
        raise EstimatorValueError(f"{name} must be {width}x{height} (W x H) for this camera, got "
                                  f"shape {image.shape}")
    return image
