"""Single-threaded BLAS for small dense linear algebra on hot paths (controller, contact solves).

C3's QP step and the contact solvers factor matrices of a few hundred rows at most.
Multi-threaded BLAS (OpenBLAS' default: one thread per core) only adds synchronisation there,
and on a loaded 2-core machine it is catastrophic: a 140x140 Cholesky measured 3 ms instead of
0.1 ms (the pivoting controller 290 ms per step instead of 9 ms), a 240x240 one 4-40 ms instead
of ~0.5 ms (clutter-40). ``blas_threads`` sets the BLAS thread count for a ``with`` block and
restores it afterwards. It lives in ``lcs``, the package both ``c3mpc`` and ``plants`` may use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["blas_threads"]

_CONTROLLERS: list[Any] | None = None
_ACTIVE: list[int] = []  # thread counts of the enclosing ``blas_threads`` blocks (innermost last)


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
    """Limit every loaded BLAS library to ``n`` threads inside the block (None: no-op).

    Nested blocks asking for the thread count already set by an enclosing block cost nothing
    (no threadpoolctl query): the stepper sets it once per run, the solver's own block per step
    is then free (threadpoolctl's get/set took ~25 µs per step).
    """

    __slots__ = ("n", "_prev", "_pushed")

    def __init__(self, n: int | None):
        self.n = n
        self._prev: list[tuple[Any, int]] = []
        self._pushed = False

    def __enter__(self) -> "blas_threads":
        if self.n is not None and not (_ACTIVE and _ACTIVE[-1] == self.n):
            for c in _controllers():
                prev = c.num_threads
                if prev != self.n:
                    c.set_num_threads(self.n)
                    self._prev.append((c, prev))
            _ACTIVE.append(self.n)
            self._pushed = True
        return self

    def __exit__(self, *exc: Any) -> None:
        for c, prev in self._prev:
            c.set_num_threads(prev)
        self._prev.clear()
        if self._pushed:
            _ACTIVE.pop()
            self._pushed = False
