"""The trajectory a simulator returns (its own module: numpy only, so that pinocchio-free code such
as :mod:`plants.sim.deformable` can subclass it; :mod:`plants.sim.stepper` re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Trajectory"]


@dataclass(frozen=True)
class Trajectory:
    """A simulated trajectory.

    Attributes:
        t: (N+1,) times [s].
        q: (N+1, n_q) configurations.
        v: (N+1, n_v) generalized velocities.
        stats: per-step arrays (N,) keyed by :data:`plants.sim.stepper.STAT_FIELDS`: solver ``status``, Newton
            ``iterations``, ``line_search_iterations``, ``n_contacts``, ``residual`` (eq. 26 left
            side), ``momentum_error`` (eq. 32), ``cost``, ``min_phi`` (smallest signed distance
            at the step's start [m]), ``free_motion_iterations``, ``solve_time`` and ``step_time`` [s],
            ``penetration_ratio`` (deepest overlap, at the step's start or predicted at its end by the
            solution, over its allowance, see
            :class:`~plants.sim.diagnostics.PlausibilityOptions`; ≥ 1 is deep) and ``flags``
            (:class:`~plants.sim.diagnostics.PlausibilityFlag` bits).
        summary: what the run's warnings said, as data: ``non_converged`` (count),
            ``first_non_converged_step``, ``worst_residual`` (and its step), ``deep_penetration_steps``,
            ``energy_growth_steps``, ``suggested_dt`` [s] (None when nothing was flagged).
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    stats: dict[str, np.ndarray] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return int(self.t.size - 1)
