r"""The projection step of C3 (seed 003 eqs. 22-23) and the interface every method implements.

At ADMM iteration i, for every knot k independently, project ``v_k = z_k + w_k`` onto the
complementarity set of the LCS, in the weighted norm of ``U_k``:

.. math::

    \delta_k = \arg\min_{\delta} (\delta - v_k)^\top U_k (\delta - v_k)
    \quad \text{s.t.} \quad 0 \le \delta^\lambda \perp E_k \delta^x + F_k \delta^\lambda
    + H_k \delta^u + c_k \ge 0 .

Per-knot variables are ordered ``z = [x; lambda; u]`` (``n_z = n_x + n_lambda + n_u``), as in the
authors' solver. All arrays are stacked over the N knots.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar

import numpy as np

__all__ = ["ProjectionStatus", "ProjectionResult", "ProjectionData", "Projection"]


class ProjectionStatus(IntEnum):
    """Per-knot outcome of a projection."""

    OPTIMAL = 0
    """Solved to optimality (exact methods) or converged (approximate ones)."""
    APPROXIMATE = 1
    """An approximate method stopped on its iteration budget; delta is its best iterate."""
    TIME_LIMIT = 2
    """The solver hit its time limit; delta is the best feasible point found."""
    INFEASIBLE = 3
    """No point satisfies the complementarity constraints; delta is NaN."""
    FAILED = 4
    """Numerical or backend failure; delta is NaN."""


@dataclass(frozen=True)
class ProjectionData:
    """The LCS complementarity data and weights of all knots.

    Attributes:
        E: (N, n_lambda, n_x)
        F: (N, n_lambda, n_lambda)
        H: (N, n_lambda, n_u)
        c: (N, n_lambda)
        U: (N, n_z, n_z) projection weights (symmetric PSD; most methods need diag > 0 on the
            lambda block).
    """

    E: np.ndarray
    F: np.ndarray
    H: np.ndarray
    c: np.ndarray
    U: np.ndarray

    @property
    def N(self) -> int:
        """Number of knots."""
        return int(self.E.shape[0])

    @property
    def n_x(self) -> int:
        """State dimension."""
        return int(self.E.shape[2])

    @property
    def n_lambda(self) -> int:
        """Number of complementarity variables."""
        return int(self.E.shape[1])

    @property
    def n_u(self) -> int:
        """Input dimension."""
        return int(self.H.shape[2])


@dataclass(frozen=True)
class ProjectionResult:
    """Result of projecting all N knots.

    Attributes:
        delta: (N, n_z) projected points (NaN rows where a knot failed).
        status: (N,) :class:`ProjectionStatus` codes.
        solve_time: wall time in [s] for all knots.
        iterations: (N,) method-specific counts (B&B nodes, ADMM iterations, pivots).
    """

    delta: np.ndarray
    status: np.ndarray
    solve_time: float
    iterations: np.ndarray

    @property
    def ok(self) -> bool:
        """True when no knot is INFEASIBLE or FAILED."""
        return bool(np.all(self.status <= ProjectionStatus.TIME_LIMIT))


class Projection(ABC):
    """A projection method. Built once per controller, then called every ADMM iteration.

    Implementations keep whatever they can reuse between calls (factorizations, persistent
    solver models, warm starts) and must not rebuild it in :meth:`project` unless the data
    changed shape.
    """

    name: ClassVar[str]

    @abstractmethod
    def project(self, v: np.ndarray, data: ProjectionData, admm_iteration: int = 0
                ) -> ProjectionResult:
        """Project every knot's ``v[k]`` (shape (N, n_z)) onto its complementarity set."""

    def check(self, data: ProjectionData) -> None:  # noqa: B027 - optional hook
        """Raise ValueError if the method cannot handle ``data`` (e.g. the QP projection on a
        non-PSD F). Called when the LCS is set or updated, not every iteration."""
