r"""Linear complementarity problems: ``solve_lcp`` and ``solve_lcp_batch``.

The LCP with matrix :math:`F \in \mathbb{R}^{n\times n}` and vector :math:`q \in \mathbb{R}^n`
asks for :math:`z` such that

.. math::

    z \ge 0, \qquad w = F z + q \ge 0, \qquad z^\top w = 0 .

This is the complementarity half of an LCS (seed 003, Definition 1), where
:math:`q = E x + H u + c`.

Method (docs/lcp.md has the derivation):

* **Shortcut** — :math:`q \ge 0` gives :math:`z = 0` immediately (no contact).
* **Tiny problems** (:math:`n \le 3`) — every complementary basis is tried, sparsest first, in a
  compiled kernel; the first that solves the LCP is returned. Falls back to Lemke.
* **Lemke's method** with a covering vector :math:`d > 0` (default all ones) and the
  lexicographic minimum-ratio test, which makes every basis lexico-feasible and distinct, so the
  method cannot cycle on degenerate problems. On success the final basis is re-solved densely
  ("polish") to remove pivoting round-off. Lemke's method processes every copositive-plus
  matrix, which includes every positive semidefinite one: for a monotone LCP it returns a
  solution whenever one exists, and its ray termination proves that none exists.

Every result carries a :class:`LCPStatus`; a failed solve returns NaN in ``z``, never zeros.
The one exception is :attr:`LCPStatus.INACCURATE`: a complementary basis *was* found, and its
``z``, ``w`` and (too large) ``residual`` are returned so that a caller may accept a near
solution knowingly (the C3 LCP projection does, up to its ``accept_residual``); its status is
never ``SOLVED``, so no caller can take it for a solution by accident.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from . import _lemke_kernel as _k
from ._validation import as_float_array, as_vector, check_finite, check_number
from .errors import LCSValueError

__all__ = ["LCPStatus", "LCPResult", "LCPBatchResult", "solve_lcp", "solve_lcp_batch"]


class LCPStatus(IntEnum):
    """Outcome of an LCP solve."""

    SOLVED = 0
    """z solves the LCP to the requested tolerance."""
    RAY_TERMINATION = 1
    """Lemke's method ended on a secondary ray; F is not PSD, so no conclusion about existence."""
    MAX_ITERATIONS = 2
    """The pivot budget ran out."""
    INFEASIBLE = 3
    """Ray termination with a positive semidefinite F: this LCP has no solution."""
    INACCURATE = 4
    """A basis was found, but its natural residual exceeds the tolerance (ill-conditioning)."""

    @property
    def found(self) -> bool:
        """True for :attr:`SOLVED`."""
        return self is LCPStatus.SOLVED


@dataclass(frozen=True)
class LCPResult:
    """Solution of one LCP.

    Attributes:
        z: (n,) the complementarity variable (lambda in an LCS); NaN when not solved, except
            for ``INACCURATE``, which carries the basis found (check ``residual``).
        w: (n,) ``F z + q``; NaN when not solved (``INACCURATE``: of the basis found).
        status: see :class:`LCPStatus`.
        iterations: number of Lemke pivots (0 for the shortcut and the tiny-problem path).
        residual: relative natural residual ``max|min(z, w)| / max(1, max|q|)``;
            ``inf`` when not solved (``INACCURATE``: the basis' residual, above ``tol``).
        solve_time: wall time in [s].
    """

    z: np.ndarray
    w: np.ndarray
    status: LCPStatus
    iterations: int
    residual: float
    solve_time: float

    @property
    def found(self) -> bool:
        """True when ``status`` is :attr:`LCPStatus.SOLVED`."""
        return self.status is LCPStatus.SOLVED


@dataclass(frozen=True)
class LCPBatchResult:
    """Solutions of B independent LCPs of the same size.

    Attributes:
        z: (B, n) solutions, NaN rows where not solved.
        w: (B, n) ``F z + q``.
        status: (B,) int array of :class:`LCPStatus` codes.
        iterations: (B,) Lemke pivots per problem.
        residual: (B,) relative natural residuals (``inf`` where not solved).
        solve_time: wall time of the whole batch in [s].
    """

    z: np.ndarray
    w: np.ndarray
    status: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    solve_time: float

    @property
    def all_found(self) -> bool:
        """True when every problem of the batch was solved."""
        return bool(np.all(self.status == LCPStatus.SOLVED))

    def __len__(self) -> int:
        return int(self.z.shape[0])

    def __getitem__(self, k: int) -> LCPResult:
        """The k-th problem's result as an :class:`LCPResult`."""
        return LCPResult(self.z[k], self.w[k], LCPStatus(int(self.status[k])),
                         int(self.iterations[k]), float(self.residual[k]), self.solve_time)


def _is_psd(F: np.ndarray) -> bool:
    S = 0.5 * (F + F.T)
    scale = max(1.0, float(np.abs(S).max()))
    return bool(np.linalg.eigvalsh(S).min() >= -1e-10 * scale)


def _check_batch_inputs(F: Any, q: Any) -> tuple[np.ndarray, np.ndarray]:
    F = as_float_array("F", F)
    q = as_float_array("q", q)
    if q.ndim != 2:
        raise LCSValueError(f"q must have shape (B, n) for a batch, got {q.shape}")
    nb, n = q.shape
    if F.ndim == 2:
        F = F[None]
    if F.ndim != 3 or F.shape[1:] != (n, n) or F.shape[0] not in (1, nb):
        raise LCSValueError(
            f"F must have shape ({n}, {n}) or ({nb}, {n}, {n}) to match q of shape {q.shape}, "
            f"got {F.shape}"
        )
    return np.ascontiguousarray(F), np.ascontiguousarray(q)


def _covering(covering_vector: Any, n: int) -> np.ndarray:
    if covering_vector is None:
        return np.ones(n)
    d = as_vector("covering_vector", covering_vector, n)
    if not np.all(d > 0):
        raise LCSValueError(f"covering_vector must be strictly positive, got min {d.min():.3g}")
    return d


_ONES: dict[int, np.ndarray] = {}


def _lemke(F: np.ndarray, q: np.ndarray, d: np.ndarray, max_it: int,
           tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The compiled Lemke kernel on B problems, its outputs allocated here.

    Args:
        F: (1, n, n) shared or (B, n, n) matrices, float64, C-contiguous.
        q: (B, n) vectors.
        d: (n,) covering vector.
        max_it: pivot budget per problem.
        tol: relative natural-residual tolerance.

    Returns:
        ``(z (B, n), w (B, n), residual (B,), status (B,), iterations (B,))``; a ray on a
        positive semidefinite F is reported as INFEASIBLE.

    Raises:
        LCSValueError: F or q holds a NaN/Inf (named, in these arrays' indexing).
    """
    nb, n = q.shape
    z = np.empty((nb, n))
    w = np.empty((nb, n))
    residual = np.empty(nb)
    status = np.empty(nb, np.int64)
    iters = np.empty(nb, np.int64)
    failed = _k.solve_batch(F, q, d, max_it, tol, z, w, residual, status, iters)
    if failed < 0:  # the kernel found a NaN/Inf: name it
        check_finite("F", F)
        check_finite("q", q)
    if failed:
        for k in np.flatnonzero(status == _k.STATUS_RAY):  # rare: classify with one eigvalsh
            if _is_psd(F[0] if F.shape[0] == 1 else F[k]):
                status[k] = LCPStatus.INFEASIBLE
    return z, w, residual, status, iters


def _solve_validated(F: np.ndarray, q: np.ndarray, tol: float = 1e-9) -> LCPResult:
    """:func:`solve_lcp` without input checks, for callers whose F and q are already validated
    float64 arrays of shapes (n, n) and (n,) (e.g. :meth:`lcs.LCS.step`)."""
    t0 = time.perf_counter()
    n = q.shape[0]
    d = _ONES.get(n)
    if d is None:
        d = _ONES[n] = np.ones(n)
    try:
        z, w, residual, status, iters = _lemke(F[None], q[None], d, 50 * (n + 1), tol)
    except LCSValueError:
        check_finite("F", F)  # name the entry in the caller's own indexing
        check_finite("q", q)
        raise
    return LCPResult(z[0], w[0], LCPStatus(int(status[0])), int(iters[0]), float(residual[0]),
                     time.perf_counter() - t0)


MAX_ITERATIONS_LIMIT = 2**31 - 1
"""Largest pivot budget accepted (the kernel counts pivots in 64-bit integers; a budget this
large is already far beyond any terminating run)."""


def _check_tol_iterations(tol: Any, max_iterations: Any, n: int) -> tuple[float, int]:
    """``tol`` in (0, 1) (a relative residual of 1 or more, or inf, would call any z a solution)
    and a pivot budget in [1, MAX_ITERATIONS_LIMIT] (default 50 (n + 1))."""
    tol = check_number("tol", tol, minimum=0.0, maximum=1.0, exclusive_minimum=True,
                       exclusive_maximum=True)
    if max_iterations is None:
        return tol, 50 * (n + 1)
    return tol, check_number("max_iterations", max_iterations, integer=True, minimum=1,
                             maximum=MAX_ITERATIONS_LIMIT)


def solve_lcp_batch(
    F: Any,
    q: Any,
    *,
    tol: float = 1e-9,
    max_iterations: int | None = None,
    covering_vector: Any = None,
) -> LCPBatchResult:
    """Solve B independent LCPs ``0 <= z_k  ⟂  F_k z_k + q_k >= 0`` in one compiled call.

    Args:
        F: (n, n) shared matrix or (B, n, n) one per problem.
        q: (B, n) vectors.
        tol: relative natural-residual tolerance for ``SOLVED``, in (0, 1).
        max_iterations: Lemke pivot budget per problem (an int >= 1); default ``50 (n + 1)``.
        covering_vector: (n,) strictly positive covering vector; default all ones.

    Returns:
        :class:`LCPBatchResult`.

    Raises:
        ValueError: shapes do not match or an entry is NaN/Inf.
        TypeError: an argument is not a real array.
    """
    t0 = time.perf_counter()
    F, q = _check_batch_inputs(F, q)
    nb, n = q.shape
    tol, max_it = _check_tol_iterations(tol, max_iterations, n)
    d = _covering(covering_vector, n)
    z, w, residual, status, iters = _lemke(F, q, d, max_it, tol)
    return LCPBatchResult(z, w, status, iters, residual, time.perf_counter() - t0)


def solve_lcp(
    F: Any,
    q: Any,
    *,
    tol: float = 1e-9,
    max_iterations: int | None = None,
    covering_vector: Any = None,
) -> LCPResult:
    """Solve the LCP ``0 <= z  ⟂  w = F z + q >= 0``.

    Args:
        F: (n, n) matrix.
        q: (n,) vector (an (n, 1) column is accepted).
        tol: relative natural-residual tolerance for ``SOLVED``, in (0, 1).
        max_iterations: Lemke pivot budget (an int >= 1); default ``50 (n + 1)``.
        covering_vector: (n,) strictly positive covering vector; default all ones.

    Returns:
        :class:`LCPResult` with ``z``, ``w``, ``status``, ``iterations``, ``residual``.

    Raises:
        ValueError: shapes do not match or an entry is NaN/Inf.
        TypeError: an argument is not a real array.

    Example:
        >>> import numpy as np
        >>> sol = solve_lcp(np.eye(2), [-1.0, 2.0])
        >>> sol.z, sol.status.name
        (array([1., 0.]), 'SOLVED')
    """
    q = as_float_array("q", q)
    if q.ndim == 2 and q.shape[1] == 1:
        q = q[:, 0]
    if q.ndim != 1:
        raise LCSValueError(f"q must be a vector of shape (n,), got {q.shape}")
    F = as_float_array("F", F)
    n = q.shape[0]
    if F.shape != (n, n):
        raise LCSValueError(f"F must have shape ({n}, {n}) to match q of shape ({n},), got {F.shape}")
    try:
        res = solve_lcp_batch(F, q[None], tol=tol, max_iterations=max_iterations,
                              covering_vector=covering_vector)
    except LCSValueError:
        check_finite("F", F)  # name the entry in the caller's own indexing
        check_finite("q", q)
        raise
    return LCPResult(res.z[0], res.w[0], LCPStatus(int(res.status[0])), int(res.iterations[0]),
                     float(res.residual[0]), res.solve_time)
