"""Exceptions of the :mod:`estimators` package."""

from __future__ import annotations

from typing import Any

__all__ = ["EstimatorError", "EstimatorValueError", "EstimatorTypeError", "CalibrationError"]


class EstimatorError(Exception):
    """Root of every error raised by :mod:`estimators`."""


class EstimatorValueError(EstimatorError, ValueError):
    """Bad input: wrong shape, NaN/Inf, non-positive radius, unknown option."""


class EstimatorTypeError(EstimatorError, TypeError):
    """An argument has the wrong type (e.g. a float image where uint8 is expected)."""


class CalibrationError(EstimatorError, RuntimeError):
    """Calibration could not be computed (e.g. the reference tag is not visible).

    Attributes:
        detected_ids: tag ids that were detected in the image.
    """

    def __init__(self, message: str, detected_ids: Any = None):
        super().__init__(message)
        self.detected_ids = detected_ids
