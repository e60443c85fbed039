"""Single-threaded BLAS for the controller: see :mod:`lcs._blas`."""

from lcs._blas import blas_threads

__all__ = ["blas_threads"]
