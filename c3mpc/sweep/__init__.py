"""Hyperparameter sweeps of C3 on closed-loop tasks (Optuna; local process pool or Dask).

    from c3mpc.sweep import load_study, run_sweep, write_report
    study = load_study("examples/sweeps/cartpole.yaml")    # validated before anything runs
    summary = run_sweep(study, "sweeps/cartpole", trials=40)  # resumes if the folder exists
    write_report("sweeps/cartpole")                          # table + plots in report/

Command line: ``c3mpc sweep STUDY.yaml [--trials N] [--out DIR] [--dask ADDRESS]`` and
``c3mpc sweep-report DIR``. See docs/sweeps.md.
"""

from .episodes import ClosedLoopTask, Episode, SweepTask, TrialSetting, resolve_task
from .execution import SweepSummary, run_sweep
from .objectives import METRICS
from .report import Report, write_report
from .storage import SweepLockedError
from .study import (SAMPLERS, ObjectiveSpec, ParamSpec, SamplerSpec, Study, StudyFileError,
                    load_study, parse_study, searchable_parameters)
from .worker import TrialOutcome, TrialSpec, evaluate_trial

__all__ = [
    "Study", "ParamSpec", "ObjectiveSpec", "SamplerSpec", "StudyFileError", "load_study",
    "parse_study", "searchable_parameters", "SAMPLERS", "METRICS",
    "SweepTask", "ClosedLoopTask", "TrialSetting", "Episode", "resolve_task",
    "TrialSpec", "TrialOutcome", "evaluate_trial",
    "run_sweep", "SweepSummary", "SweepLockedError", "write_report", "Report",
]
