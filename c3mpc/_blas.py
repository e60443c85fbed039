"""Single-threaded BLAS for the controller's hot path.

C3's linear algebra is on matrices of a few hundred entries per side. Multi-threaded BLAS
(OpenBLAS' default: one thread per core) only adds synchronisation there, and on a loaded
2-core machine it is catastrophic: a 140x140 Cholesky measured 3 ms instead of 0.1 ms, the
pivoting controller 290 ms per step instead of 9 ms (docs/BENCHMARKS.md). ``blas_threads``
sets the BLAS thread count for the duration of a ``with`` block and restores it afterwards,
at the cost of a few ctypes calls (threadpoolctl's own context manager costs ~30 us).
"""

from __future__ import annotations

from typing import Any

__all__ = ["blas_threads"]

_CONTROLLERS: list[Any] | None = None


def _controllers() -> list[Any]:
    global _CONTROLLERS
    if _CONTROLLERS is None:
        try:
            from threadpoolctl import ThreadpoolController

            _CONTROLLERS = list(ThreadpoolController().select(user_api="blas").lib_controllers)
        except Exception:  # noqa: BLE001 - no threadpoolctl or an unknown BLAS: do nothing
            _CONTROLLERS = []
    return _CONTROLLERS


class blas_threads:  # noqa: N801 - used like a function: ``with blas_threads(1):``
    """Context manager limiting every loaded BLAS library to ``n`` threads (None: no-op)."""

    __slots__ = ("n", "_prev")

    def __init__(self, n: int | None):
        self.n = n
        self._prev: list[tuple[Any, int]] = []

    def __enter__(self) -> "blas_threads":
        if self.n is not None:
            for c in _controllers():
                prev = c.num_threads
                if prev != self.n:
                    c.set_num_threads(self.n)
                    self._prev.append((c, prev))
        return self

    def __exit__(self, *exc: Any) -> None:
        for c, prev in self._prev:
            c.set_num_threads(prev)
        self._prev.clear()
