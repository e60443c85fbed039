"""Exceptions of the ``lcs`` package.

One root error, :class:`LCSError`; subclasses carry what is needed to diagnose the failure.
Input-validation errors also derive from :class:`ValueError` (or :class:`TypeError`) so that
callers can catch them the idiomatic way.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LCSError", "LCSValueError", "LCSTypeError", "LCPSolveError"]


class LCSError(Exception):
    """Root of every error raised by :mod:`lcs`."""


class LCSValueError(LCSError, ValueError):
    """An argument has the wrong shape, a non-finite entry or an invalid value."""


class LCSTypeError(LCSError, TypeError):
    """An argument has the wrong type (e.g. not convertible to a float array)."""


class LCPSolveError(LCSError, RuntimeError):
    """An LCP that had to be solved was not solved.

    Raised where an API cannot return a status (e.g. :meth:`lcs.LCS.step`, which returns
    ``(x_next, lam)``). The failed :class:`lcs.LCPResult` is attached as ``result``.
    """

    def __init__(self, message: str, result: Any):
        super().__init__(message)
        self.result = result
