"""numba's ``njit``, or an identity decorator when numba is missing (numba is a core dependency;
the fallback keeps the packages importable without it). Shared by the compiled kernels of
``lcs`` and ``plants.sim``."""

from __future__ import annotations

try:
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only on installs without numba
    HAVE_NUMBA = False

    def njit(*args, **kwargs):  # type: ignore[no-redef]
        """Identity decorator used when numba is missing."""
        if len(args) == 1 and callable(args[0]):
            return args[0]
        return lambda f: f


__all__ = ["HAVE_NUMBA", "njit"]
