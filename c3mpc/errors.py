"""Exceptions of the ``c3mpc`` package."""

from __future__ import annotations

from typing import Any

__all__ = ["C3Error", "C3ValueError", "C3TypeError", "SolverUnavailableError",
           "GurobiLicenseError"]


class C3Error(Exception):
    """Root of every error raised by :mod:`c3mpc`."""


class C3ValueError(C3Error, ValueError):
    """Bad input: wrong shape, NaN/Inf, non-PSD cost, invalid option value."""


class C3TypeError(C3Error, TypeError):
    """An argument has the wrong type."""


class SolverUnavailableError(C3Error, ImportError):
    """A backend (gurobipy, pyscipopt, ...) is not installed; the message says how to get it."""


class GurobiLicenseError(C3Error, RuntimeError):
    """Gurobi refused the model (the pip licence is size-limited: at most 2000 variables and
    constraints, and 200 variables once quadratic terms are present). ``model_size`` holds what
    was attempted."""

    def __init__(self, message: str, model_size: Any = None):
        super().__init__(message)
        self.model_size = model_size
