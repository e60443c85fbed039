"""Argument checks shared by the public entry points (clear messages naming the argument).

This is the one input-validation layer of the toolkit: ``lcs`` uses it directly, ``c3mpc`` and
``estimators`` call the same functions with their own error classes (``errors=(TypeErr,
ValueErr)``), so every package raises its own root error with the same wording. The rules:

* **Strict types.** Numbers are ``int``/``float`` (or numpy's); ``bool`` is never a number and a
  number is never a ``bool``; strings are never parsed (that is the job of the text front ends:
  the CLI and the option loaders); complex values are rejected, not truncated.
* **Exact shapes.** A (2, 2) array is not a (4,) vector; only an (n, 1) column is accepted for an
  (n,) vector, where documented.
* **Finite values** unless the argument documents ±inf (bounds).
* **Range.** Python ints beyond float64 (``10**400``) or beyond an integer argument's maximum
  (``2**70`` iterations) are a clear error, not an OverflowError from deep inside.
* **Size limits up front**: :func:`check_memory` refuses a problem whose estimated memory exceeds
  :data:`MAX_MEMORY_BYTES` and says how much it would need.

Every message names the argument, what was expected and what was given.
"""

from __future__ import annotations

import numbers
import os
from typing import Any

import numpy as np

from .errors import LCSTypeError, LCSValueError

__all__ = ["as_float_array", "check_finite", "as_matrix", "as_vector", "check_number",
           "check_bool", "check_choice", "check_memory", "MAX_MEMORY_BYTES", "describe"]

Errors = tuple[type[Exception], type[Exception]]
_LCS_ERRORS: Errors = (LCSTypeError, LCSValueError)


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not POSIX: assume 16 GiB
        return 16 * 2**30


MAX_MEMORY_BYTES = _physical_memory() // 2
"""Largest estimated working memory a problem may need: half the machine's physical memory."""


def describe(value: Any) -> str:
    """A short description of a given value for error messages (type and a clipped repr)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
        return f"int with {len(str(abs(value)))} digits"
    if isinstance(value, np.ndarray):
        return f"array of dtype {value.dtype} and shape {value.shape}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover


def check_memory(what: str, n_bytes: float, errors: Errors = _LCS_ERRORS,
                 limit: float | None = None) -> None:
    """Raise a ValueError when ``n_bytes`` (an estimate) exceeds the memory limit.

    Args:
        what: the problem and its sizes, e.g. ``"C3 with N=200000, n_x=4"``.
        n_bytes: estimated memory in bytes.
        limit: the limit (default :data:`MAX_MEMORY_BYTES`).
    """
    limit = MAX_MEMORY_BYTES if limit is None else limit
    if n_bytes > limit:
        raise errors[1](f"{what} would need about {_format_bytes(n_bytes)} of memory, more than "
                        f"the limit of {_format_bytes(limit)} (half the physical memory); "
                        f"use a smaller problem")


def check_number(name: str, value: Any, *, integer: bool = False, minimum: float | None = None,
                 maximum: float | None = None, exclusive_minimum: bool = False,
                 exclusive_maximum: bool = False, finite: bool = True, allow_none: bool = False,
                 errors: Errors = _LCS_ERRORS) -> Any:
    """A real scalar (``float``) or, with ``integer``, an ``int``, checked against a range.

    Strings, ``bool`` and complex values are rejected with a TypeError; NaN (always), ±inf
    (unless ``finite=False``), values outside ``[minimum, maximum]`` and Python ints too large
    for float64 with a ValueError. Returns ``None`` for ``None`` when ``allow_none``.
    """
    type_err, value_err = errors
    if value is None and allow_none:
        return None
    expected = "an integer" if integer else "a real number"
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or (
            integer and not isinstance(value, numbers.Integral)):
        raise type_err(f"{name} must be {expected}, got {describe(value)}")
    if integer:
        v: Any = int(value)
    else:
        try:
            v = float(value)
        except OverflowError:
            raise value_err(f"{name} must be a real number within float64 range "
                            f"(|x| < 1.8e308), got {describe(value)}") from None
    if v != v:
        raise value_err(f"{name} must be {expected}, got NaN")
    if finite and not integer and v in (float("inf"), float("-inf")):
        raise value_err(f"{name} must be finite, got {v}")

    def bound_text() -> str:
        lo = "" if minimum is None else (f"> {minimum}" if exclusive_minimum else f">= {minimum}")
        hi = "" if maximum is None else (f"< {maximum}" if exclusive_maximum else f"<= {maximum}")
        return " and ".join(t for t in (lo, hi) if t)

    too_low = minimum is not None and (v <= minimum if exclusive_minimum else v < minimum)
    too_high = maximum is not None and (v >= maximum if exclusive_maximum else v > maximum)
    if too_low or too_high:
        shown = describe(value) if integer and abs(v) > 10**15 else repr(v)
        if minimum == 0 and maximum is None:
            sign = "positive" if exclusive_minimum else "non-negative"
            what = f"a {sign} {'integer' if integer else 'real number'}"
        else:
            what = f"{expected} {bound_text()}"
        raise value_err(f"{name} must be {what}, got {shown}")
    return v


def check_bool(name: str, value: Any, errors: Errors = _LCS_ERRORS) -> bool:
    """``value`` if it is a ``bool`` (or numpy bool); a TypeError naming ``name`` otherwise
    (``"false"``, 0, 1 and None are not booleans)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise errors[0](f"{name} must be a bool (True or False), got {describe(value)}")


def check_choice(name: str, value: Any, choices: tuple[Any, ...],
                 errors: Errors = _LCS_ERRORS) -> Any:
    """``value`` if it is one of ``choices`` (compared by type and value)."""
    for c in choices:
        if type(value) is type(c) and value == c:
            return value
    raise errors[1](f"{name} must be one of {list(choices)}, got {describe(value)}")


def _object_to_float(name: str, arr: np.ndarray, errors: Errors) -> np.ndarray:
    """An object array of real numbers (e.g. Python ints beyond int64) as float64."""
    out = np.empty(arr.shape, dtype=np.float64)
    for idx, v in np.ndenumerate(arr):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise errors[0](f"{name} must be an array of real numbers, but entry {idx} is "
                            f"{describe(v)}")
        try:
            out[idx] = float(v)
        except OverflowError:
            raise errors[1](f"{name} entry {idx} is outside float64 range: "
                            f"{describe(v)}") from None
    return out


def as_float_array(name: str, value: Any, errors: Errors = _LCS_ERRORS) -> np.ndarray:
    """``value`` as a float64 array, strictly.

    Accepted: arrays and (nested) sequences of ints and floats. Rejected with a TypeError naming
    ``name``: None, strings (also inside sequences), booleans, complex numbers, ragged nesting
    and other objects.
    """
    type_err = errors[0]
    if value is None or isinstance(value, (str, bytes)):
        raise type_err(f"{name} must be a real-valued array-like, got {describe(value)}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:  # ragged nesting (numpy >= 1.24)
        raise type_err(f"{name} must be a real-valued array-like, got "
                       f"{type(value).__name__} ({e})") from e
    kind = arr.dtype.kind
    if kind == "f":
        return arr.astype(np.float64, copy=False)
    if kind in "iu":
        return arr.astype(np.float64)
    if kind == "O" and arr.size:
        return _object_to_float(name, arr, errors)
    if kind == "O":
        return arr.astype(np.float64)
    what = {"b": "booleans", "c": "complex numbers (the imaginary part would be lost)",
            "U": "strings", "S": "bytes", "M": "datetimes", "m": "timedeltas"}.get(
        kind, f"dtype {arr.dtype}")
    raise type_err(f"{name} must be an array of real numbers, got {what} "
                   f"({describe(value) if not isinstance(value, np.ndarray) else arr.dtype})")


def check_finite(name: str, arr: np.ndarray, errors: Errors = _LCS_ERRORS) -> None:
    """Raise a ValueError naming ``name`` if ``arr`` holds NaN or Inf."""
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise errors[1](f"{name} has a non-finite entry at index "
                        f"{tuple(int(i) for i in bad)}")


def as_matrix(name: str, value: Any, rows: int | None, cols: int | None,
              errors: Errors = _LCS_ERRORS) -> np.ndarray:
    """A finite 2-D float matrix of shape (rows, cols); ``None`` leaves a dimension free."""
    arr = as_float_array(name, value, errors)
    if arr.ndim != 2:
        raise errors[1](
            f"{name} must be a 2-D matrix of shape {_shape_str(rows, cols)}, got ndim={arr.ndim} "
            f"(shape {arr.shape})"
        )
    if (rows is not None and arr.shape[0] != rows) or (cols is not None and arr.shape[1] != cols):
        raise errors[1](f"{name} must have shape {_shape_str(rows, cols)}, got {arr.shape}")
    check_finite(name, arr, errors)
    return arr


def as_vector(name: str, value: Any, size: int | None, errors: Errors = _LCS_ERRORS,
              finite: bool = True) -> np.ndarray:
    """A finite 1-D float vector of length ``size``; an (size, 1) column is flattened, any
    other 2-D shape (e.g. (2, 2) for size 4) is rejected."""
    arr = as_float_array(name, value, errors)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise errors[1](
            f"{name} must be a vector of shape ({'n' if size is None else size},), got shape "
            f"{arr.shape}"
        )
    if size is not None and arr.shape[0] != size:
        raise errors[1](f"{name} must have shape ({size},), got {arr.shape}")
    if finite:
        check_finite(name, arr, errors)
    return arr


def _shape_str(rows: int | None, cols: int | None) -> str:
    return f"({'n' if rows is None else rows}, {'m' if cols is None else cols})"
