"""What runs on a worker: one trial = one episode per seed, scored by the study's metrics.

:func:`evaluate_trial` is a plain, picklable function of a :class:`TrialSpec`; it never raises.
A trial whose episode raises or runs out of time returns a :class:`TrialOutcome` with
``error`` set, so the driver records it as FAILED with the message and the sweep goes on. The
time limit is checked between control steps (the episode's ``stop`` hook) and between seeds; the
driver adds a hard limit for code that never returns (see :mod:`c3mpc.sweep.execution`).
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..options import C3Options
from .episodes import WEIGHT_SCALES, TrialSetting, TrialTimeoutError, resolve_task
from .objectives import trial_metrics

__all__ = ["TrialSpec", "TrialOutcome", "evaluate_trial"]


@dataclass(frozen=True)
class TrialSpec:
    """Everything a worker needs to run one trial (plain data: pickles to any machine).

    Attributes:
        number: the Optuna trial number (for messages).
        task: task reference (registry name or "module:attribute").
        base_options: options before the trial's samples (task defaults + study overrides).
        params: the sampled parameters ``{name: value}``.
        seeds: episode seeds.
        duration: simulated time per episode [s] (None: the task's).
        start_perturbation: start perturbation half-width(s).
        noise: process-noise σ.
        timeout: wall-time limit of the trial [s].
        metrics: objective metric names, in order.
    """

    number: int
    task: str
    base_options: Mapping[str, Any]
    params: Mapping[str, Any]
    seeds: tuple[int, ...]
    duration: float | None
    start_perturbation: tuple[float, ...]
    noise: float
    timeout: float
    metrics: tuple[str, ...]

    def setting(self) -> TrialSetting:
        """The trial's options, horizon and weight scales."""
        option_params = {k: v for k, v in self.params.items()
                         if k not in WEIGHT_SCALES and k != "N"}
        options = C3Options.from_dict({**self.base_options, **option_params})
        N = self.params.get("N")
        scales = {k: float(v) for k, v in self.params.items() if k in WEIGHT_SCALES}
        return TrialSetting(options=options, N=None if N is None else int(N), scales=scales)


@dataclass(frozen=True)
class TrialOutcome:
    """Result of one trial.

    Attributes:
        number: the trial number.
        values: objective values in the study's order (None when the trial failed).
        metrics: every metric of the trial (empty when it failed).
        error: why the trial failed ("" when it did not).
        wall_time: seconds the trial took on the worker.
        worker: host and process id of the worker.
    """

    number: int
    values: tuple[float, ...] | None
    metrics: Mapping[str, float] = field(default_factory=dict)
    error: str = ""
    wall_time: float = 0.0
    worker: str = ""

    @property
    def failed(self) -> bool:
        """The trial raised or timed out."""
        return self.values is None


def evaluate_trial(spec: TrialSpec) -> TrialOutcome:
    """Run a trial's episodes and score them (never raises; see the module docstring)."""
    t0 = time.perf_counter()
    worker = f"{socket.gethostname()}:{os.getpid()}"

    def check_deadline() -> None:
        elapsed = time.perf_counter() - t0
        if elapsed > spec.timeout:
            raise TrialTimeoutError(f"timed out: {elapsed:.1f} s > timeout {spec.timeout:g} s")

    try:
        task = resolve_task(spec.task)
        setting = spec.setting()
        episodes = []
        for seed in spec.seeds:
            check_deadline()
            episodes.append(task.run_episode(
                setting, seed, duration=spec.duration,
                start_perturbation=np.asarray(spec.start_perturbation, dtype=float),
                noise=spec.noise, check_deadline=check_deadline))
        metrics = trial_metrics(episodes)
        values = tuple(float(metrics[m]) for m in spec.metrics)
        if any(np.isnan(v) for v in values):
            raise ValueError(f"objective is NaN: {dict(zip(spec.metrics, values))}")
        return TrialOutcome(spec.number, values, metrics, "", time.perf_counter() - t0, worker)
    except Exception as e:  # noqa: BLE001 -- any failure of the trial is data, not a crash
        message = f"{type(e).__name__}: {e}"
        if not isinstance(e, TrialTimeoutError):
            frame = traceback.extract_tb(e.__traceback__)[-1]
            message += f" (at {os.path.basename(frame.filename)}:{frame.lineno})"
        return TrialOutcome(spec.number, None, {}, message, time.perf_counter() - t0, worker)
