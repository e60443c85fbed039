"""Array backends of the deformable solver: NumPy/SciPy on the CPU (the default and the tested
path) and, optionally, CuPy on an NVIDIA GPU for seed 004's two GPU phases: the global step
q = Sᵀ(S b) (two sparse mat-vecs with the explicit sparse inverse) and the constraint solve
(conjugate residual on ΩWΩ + E with the Delassus block W). CuPy is imported only when
``backend="cupy"`` is asked for; the local step, contact detection and assembly stay on the CPU
(the paper's hybrid layout, seed 004 §7.1).

A backend moves arrays (``to_device`` / ``to_host``: the identity for NumPy) and builds device
CSR matrices (``sparse``); the solver code is written once against its ``xp`` namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

__all__ = ["BACKENDS", "ArrayBackend", "make_backend", "cupy_available"]

BACKENDS = ("numpy", "cupy")


def cupy_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # ImportError, or CUDA driver/runtime errors on a machine without a GPU
        return False


@dataclass(frozen=True)
class ArrayBackend:
    """An array namespace ``xp`` with host/device transfers and a device CSR constructor."""

    name: str
    xp: Any
    to_device: Callable[[np.ndarray], Any]
    to_host: Callable[[Any], np.ndarray]
    sparse: Callable[[sp.spmatrix], Any]
    synchronize: Callable[[], None]


def make_backend(name: str) -> ArrayBackend:
    """The backend called ``name`` ("numpy" or "cupy").

    Raises:
        ValueError: unknown name.
        ImportError: "cupy" without an importable CuPy (``pip install cupy-cuda12x``).
    """
    if name == "numpy":
        return ArrayBackend("numpy", np, lambda a: a, lambda a: a, lambda m: m.tocsr(), lambda: None)
    if name == "cupy":
        try:
            import cupy
            import cupyx.scipy.sparse as csp
        except ImportError as e:
            raise ImportError("backend='cupy' needs CuPy (pip install cupy-cuda12x); the default backend is "
                              "'numpy'") from e

        def to_host(a):
            return cupy.asnumpy(a)

        return ArrayBackend("cupy", cupy, cupy.asarray, to_host, lambda m: csp.csr_matrix(m.tocsr()),
                            lambda: cupy.cuda.Stream.null.synchronize())
    raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")
