"""Objective metrics of a sweep: how a trial's episodes (one per seed) become numbers.

=================  ==========================================================  ============
metric             value of a trial                                             default
=================  ==========================================================  ============
success_rate       fraction of seeds whose episode meets the task's criterion  maximize
accumulated_cost   mean over seeds of Σ_k stage cost with the task's Q, R       minimize
control_rate       median over seeds of the episode's control rate [Hz]         maximize
failed_steps       mean over seeds of controller steps with a failure status    minimize
=================  ==========================================================  ============

``control_rate`` is a wall-clock measurement: it depends on the machine and its load, so
trials compared on it should run on like workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .episodes import Episode

__all__ = ["METRICS", "DIRECTIONS", "Metric", "trial_metrics"]

DIRECTIONS = ("minimize", "maximize")


@dataclass(frozen=True)
class Metric:
    """A trial metric: its aggregate over episodes and its natural direction."""

    name: str
    aggregate: Callable[[Sequence[Episode]], float]
    default_direction: str
    description: str


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("success_rate", lambda eps: float(np.mean([e.success for e in eps])), "maximize",
           "fraction of seeded starts that meet the task's success criterion"),
    Metric("accumulated_cost", lambda eps: float(np.mean([e.accumulated_cost for e in eps])),
           "minimize", "mean over seeds of the accumulated stage cost (task's Q, R)"),
    Metric("control_rate", lambda eps: float(np.median([e.control_rate for e in eps])),
           "maximize", "median over seeds of 1 / median solve time [Hz]"),
    Metric("failed_steps", lambda eps: float(np.mean([e.failed_steps for e in eps])),
           "minimize", "mean over seeds of controller steps with a failure status"),
)}


def trial_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """Every metric of :data:`METRICS` for a trial's episodes (one per seed)."""
    if not episodes:
        raise ValueError("a trial needs at least one episode")
    return {name: m.aggregate(episodes) for name, m in METRICS.items()}
