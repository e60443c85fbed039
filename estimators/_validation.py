"""Argument checks shared by the estimators (ValueError/TypeError naming the argument)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lcs import _validation as _v

from .errors import EstimatorTypeError, EstimatorValueError


_ERRORS = (EstimatorTypeError, EstimatorValueError)


def as_float_array(name: str, value: Any, shape: tuple[int | None, ...] | None = None,
                   finite: bool = True) -> np.ndarray:
    """``value`` as a float64 array, strictly (the rules of :mod:`lcs._validation`: no
    strings, booleans or complex numbers); checks the shape (None: any size on that axis) and
    finiteness."""
    arr = _v.as_float_array(name, value, _ERRORS)
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
    return _v.check_number(name, value, minimum=0.0, exclusive_minimum=True, errors=_ERRORS)


def real_number(name: str, value: Any, **kw: Any) -> Any:
    """A real number checked by :func:`lcs._validation.check_number` (keywords: ``minimum``,
    ``allow_none``, ...), with the estimators' errors."""
    return _v.check_number(name, value, errors=_ERRORS, **kw)


def check_bool(name: str, value: Any) -> bool:
    """A bool (not "no", not 0/1)."""
    return _v.check_bool(name, value, _ERRORS)


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


def load_yaml(path: Any) -> Any:
    """A YAML file's data through the guarded loader of :mod:`c3mpc._yaml` (size and alias
    limits); an unreadable or malformed file is one EstimatorValueError naming the file and
    the line."""
    from c3mpc._yaml import read_yaml_file

    return read_yaml_file(path, EstimatorValueError)[0]
