"""The result of a C3 solve (and of the MIQP baseline, which returns the same type)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

__all__ = ["C3Status", "C3Result"]


class C3Status(IntEnum):
    """Outcome of :meth:`c3mpc.C3.solve` or :func:`c3mpc.solve_miqp_mpc`."""

    SOLVED = 0
    """Every step succeeded (for C3: all QP steps and projections; for the MIQP: optimal)."""
    MAX_ITERATIONS = 1
    """A sub-solver stopped on its iteration budget; the plan is usable but not converged."""
    TIME_LIMIT = 2
    """The time limit was hit; the plan is the best feasible one found."""
    QP_FAILED = 3
    """A QP step failed; the plan is the last feasible plan (see ``C3Result.fallback``)."""
    PROJECTION_FAILED = 4
    """A projection failed; the plan is the last feasible plan."""
    INFEASIBLE = 5
    """The problem has no feasible plan (the MIQP baseline proved it)."""
    FAILED = 6
    """Any other solver failure; no plan (NaN arrays) or the last feasible plan."""
    NOT_CONVERGED = 7
    """Every step succeeded but C3's ADMM did not reach consensus: the final QP iterate and
    the last projection differ by more than ``C3Options.consensus_tolerance``
    (:attr:`C3Result.consensus_residual`), so the plan counts on contact forces that are not
    complementary (typically a diverging ADMM, e.g. a projection weight U unlike G). The plan
    is returned (and applied by the closed loops, as before this status existed) but is not
    a solution of the contact problem. Takes precedence over MAX_ITERATIONS. Also set when the
    plan's relative complementarity violation exceeds ``C3Options.complementarity_tolerance``
    (:attr:`C3Result.relative_complementarity_violation`): z close to δ in (x, λ, u) but a
    slack that is far from complementary at the plan's force scale (a light, hand-scale
    robot)."""

    @property
    def ok(self) -> bool:
        """True when the plan can be applied (SOLVED, MAX_ITERATIONS, TIME_LIMIT or
        NOT_CONVERGED)."""
        return self in (C3Status.SOLVED, C3Status.MAX_ITERATIONS, C3Status.TIME_LIMIT,
                        C3Status.NOT_CONVERGED)

    @property
    def failed(self) -> bool:
        """True for a failure status (no plan of this solve: QP_FAILED, PROJECTION_FAILED,
        INFEASIBLE, FAILED); the closed loops count these as ``failed_steps``."""
        return not self.ok


FAILURE_STATUSES = (C3Status.QP_FAILED, C3Status.PROJECTION_FAILED, C3Status.INFEASIBLE,
                    C3Status.FAILED)
"""The statuses with no plan of their own (:attr:`C3Status.failed`)."""


def count_failed(statuses: Any) -> int:
    """How many of the logged status codes (an int array) are failures (closed loops'
    ``failed_steps``); NOT_CONVERGED, MAX_ITERATIONS and TIME_LIMIT plans are not."""
    return int(np.count_nonzero(np.isin(np.asarray(statuses, dtype=int),
                                        [int(s) for s in FAILURE_STATUSES])))


def count_not_converged(statuses: Any) -> int:
    """How many of the logged status codes are NOT_CONVERGED (closed loops'
    ``not_converged_steps``)."""
    return int(np.count_nonzero(np.asarray(statuses, dtype=int)
                                == int(C3Status.NOT_CONVERGED)))


@dataclass(frozen=True)
class C3Result:
    """A plan over the horizon, with diagnostics.

    Attributes:
        status: see :class:`C3Status`.
        x: (N+1, n_x) planned states, x[0] = x0.
        u: (N, n_u) planned inputs; apply ``u[0]``.
        lam: (N, n_lambda) planned contact forces, in physical units.
        delta: (N, n_z) last projection (consensus copy), z = [x; lambda; u]; None for MIQP.
        w: (N, n_z) last scaled dual; None for MIQP.
        iterations: ADMM iterations run (MIQP: branch-and-bound nodes, or 0).
        solve_time: wall time in [s].
        timings: per-phase wall times in [s], e.g. {"qp": ..., "projection": ..., "setup": ...}.
        complementarity_violation: max over knots of the natural residual
            ``|min(lambda, E x + F lambda + H u + c)|`` of the returned plan.
        consensus_residual: C3's ADMM consensus residual between the final QP iterate z and
            the last projection δ, ``max_b ‖z_b − δ_b‖∞ / (1 + max(‖z_b‖∞, ‖δ_b‖∞))`` over
            the blocks b = x, λ (physical units), u, counting only the entries G ties
            (G_ii > 0; dimensionless); above ``C3Options.consensus_tolerance`` the status is
            NOT_CONVERGED. NaN for the MIQP baseline and for failed solves. Per block and per
            ADMM iteration in
            ``extras["consensus_residuals"]`` ((iterations + 1, 3): after each projection, then
            the final QP step's).
        relative_complementarity_violation: the plan's worst ``|min(λ_i, s_i / F_ii)|`` (each
            slack in force units through its Delassus entry F_ii > 0) over its largest force
            (:func:`c3mpc.c3.relative_complementarity_violation`; dimensionless, the same in any
            units); above ``C3Options.complementarity_tolerance`` the status is NOT_CONVERGED.
            NaN for the MIQP baseline and for failed solves.
        cost: objective value of the returned plan (eq. 15's cost, without the ADMM terms),
            evaluated on the plan's own (x, u): for C3 the states follow the LCS dynamics
            with the plan's λ, which need not satisfy complementarity, so this can be below
            the MIQP optimum.
        resimulated_cost: eq. (14)'s cost of the plan's inputs ``u`` simulated through the
            LCS from x0 (every λ_k the solution of the contact LCP, complementarity exact):
            what the plan costs if applied open loop to the model it was planned with. NaN
            when a contact LCP along the rollout could not be solved; inf for failed solves.
        resimulated_x: (N+1, n_x) the states of that rollout (None when not computed).
        solver: which solver produced the plan ("c3/miqp", "gurobi", "scip", ...).
        fallback: True when x/u/lam are the last feasible plan, not this solve's.
        message: human-readable detail for failure statuses.
        extras: backend-specific diagnostics.
    """

    status: C3Status
    x: np.ndarray
    u: np.ndarray
    lam: np.ndarray
    delta: np.ndarray | None
    w: np.ndarray | None
    iterations: int
    solve_time: float
    timings: dict[str, float] = field(default_factory=dict)
    complementarity_violation: float = float("inf")
    consensus_residual: float = float("nan")
    relative_complementarity_violation: float = float("nan")
    cost: float = float("inf")
    resimulated_cost: float = float("inf")
    resimulated_x: np.ndarray | None = None
    solver: str = ""
    fallback: bool = False
    message: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the plan can be applied."""
        return self.status.ok

    @property
    def u0(self) -> np.ndarray:
        """The first planned input, the one a receding-horizon loop applies."""
        return self.u[0]
