"""Single-threaded BLAS for the contact simulator: see :mod:`lcs._blas`."""

from lcs._blas import blas_threads

__all__ = ["blas_threads"]
