"""The run folder: Optuna storage, the single-driver lock, crash recovery and ``trials.csv``.

Storage choice: Optuna's ``JournalStorage`` with a file backend (``DIR/study.journal``). It is an
append-only log of small JSON lines, each written with one ``write`` + ``fsync``; a finished trial
is on disk once its ``tell`` returns, so SIGKILL or Ctrl-C cannot lose it. It needs no database
server or SQLAlchemy migrations, and the file is plain text that ``optuna.load_study`` reads
directly. Only the driver process writes it (workers return results to the driver), so there is
never write contention; the lock ``DIR/.sweep.lock`` (``flock``, released by the kernel when the
process dies) keeps a second driver off the same folder.

Recovery on (re)start:

* a truncated last journal line (a write cut by a kill; in practice a ``write`` of one short
  line completes or does not happen) is cut off so the log stays readable;
* a stale journal lock file left by a killed writer is removed (we hold the folder lock, so no
  other writer exists);
* trials still RUNNING are zombies of a killed driver: they are marked FAIL with
  ``user_attrs["interrupted"] = True`` and an error message and are not counted against the
  trial budget (the sampler proposes the remaining trials);
* for the grid sampler every grid point is an enqueued trial (``Study.enqueue_trial``, in a
  seeded random order): at every start, each point not held by a COMPLETE, FAILED (not
  interrupted) or waiting trial is enqueued (again), so a kill loses no point and runs none
  twice. An enqueued trial keeps its whole point in ``system_attrs["fixed_params"]`` from the
  moment it exists, even if the driver dies halfway through ``ask``.
"""

from __future__ import annotations

import csv
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..errors import C3ValueError
from .study import Study

__all__ = ["RunFolder", "SweepLockedError", "open_study", "recover_interrupted",
           "enqueue_grid", "counted_trials", "write_trials_csv", "is_interrupted",
           "INTERRUPTED_ERROR"]

INTERRUPTED_ERROR = ("interrupted: the sweep process stopped before this trial finished; it does "
                     "not count against the budget")


class SweepLockedError(C3ValueError):
    """Another sweep process holds the run folder."""


@dataclass(frozen=True)
class RunFolder:
    """Paths of a run folder."""

    root: Path

    @property
    def journal(self) -> Path:
        """Optuna journal storage file."""
        return self.root / "study.journal"

    @property
    def trials_csv(self) -> Path:
        """One row per finished trial."""
        return self.root / "trials.csv"

    @property
    def study_copy(self) -> Path:
        """The study file the run was started with."""
        return self.root / "study.yaml"

    @property
    def report_dir(self) -> Path:
        """Tables and plots."""
        return self.root / "report"

    @property
    def lock_path(self) -> Path:
        """The single-driver lock file."""
        return self.root / ".sweep.lock"

    def lock(self) -> "_FolderLock":
        """Exclusive lock of the folder for this process (a context manager)."""
        return _FolderLock(self.lock_path)


class _FolderLock:
    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> "_FolderLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise SweepLockedError(f"another sweep (pid {holder}) is running in "
                                   f"{self.path.parent}; wait for it or use another "
                                   f"--out") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _repair_journal(path: Path) -> None:
    """Cut a partial last line (a write interrupted by a kill) off the journal."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        data = f.read()
        if data.endswith(b"\n"):
            return
        f.truncate(data.rfind(b"\n") + 1)


def open_study(study: Study, folder: RunFolder) -> tuple[Any, Any]:
    """Create or load the Optuna study of ``study`` in ``folder`` (hold ``folder.lock()``).

    Returns:
        ``(optuna_study, storage)``.

    Raises:
        C3ValueError: the folder holds a study of the same name with another definition
            (search space, objectives, seeds, ...), or another number of objectives.
    """
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    folder.root.mkdir(parents=True, exist_ok=True)
    _repair_journal(folder.journal)
    stale = Path(str(folder.journal) + ".lock")  # we hold the folder lock: no other writer
    if stale.exists():
        stale.unlink()
    backend = JournalFileBackend(str(folder.journal), lock_obj=JournalFileOpenLock(
        str(folder.journal)))
    storage = JournalStorage(backend)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    existing = {s.study_name: s for s in storage.get_all_studies()}
    if study.name in existing:
        fp = existing[study.name].user_attrs.get("fingerprint")
        if fp is not None and fp != study.fingerprint():
            raise C3ValueError(f"{folder.root} holds study {study.name!r} with another "
                               f"definition (task, search space, objectives, seeds, ...); use a "
                               f"new --out or restore the study file")
    ostudy = optuna.create_study(storage=storage, study_name=study.name, load_if_exists=True,
                                 directions=study.directions, sampler=study.sampler.build(study))
    if study.name not in existing:
        ostudy.set_user_attr("fingerprint", study.fingerprint())
        ostudy.set_user_attr("metrics", study.metrics)
        ostudy.set_user_attr("task", study.task)
    return ostudy, storage


def is_interrupted(trial: Any) -> bool:
    """The trial was cut off by a stopped driver (it does not count against the budget)."""
    return bool(trial.user_attrs.get("interrupted", False))


def counted_trials(ostudy: Any) -> int:
    """Trials that count against the budget: COMPLETE, and FAIL that were not interruptions."""
    from optuna.trial import TrialState

    return sum(1 for t in ostudy.get_trials(deepcopy=False)
               if t.state == TrialState.COMPLETE
               or (t.state == TrialState.FAIL and not is_interrupted(t)))


def recover_interrupted(ostudy: Any, storage: Any) -> int:
    """Mark the zombie RUNNING trials of a killed driver FAIL + interrupted; return how many."""
    from optuna.trial import TrialState

    zombies = 0
    for t in ostudy.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        mark_interrupted(storage, t._trial_id)
        zombies += 1
    return zombies


def mark_interrupted(storage: Any, trial_id: int) -> None:
    """Record a trial as FAIL, interrupted (not counted against the budget)."""
    from optuna.trial import TrialState

    storage.set_trial_user_attr(trial_id, "interrupted", True)
    storage.set_trial_user_attr(trial_id, "error", INTERRUPTED_ERROR)
    storage.set_trial_state_values(trial_id, TrialState.FAIL)


def enqueue_grid(ostudy: Any, study: Study) -> int:
    """Enqueue every grid point not yet held by a trial (grid sampler only); return how many."""
    import itertools

    import numpy as np
    from optuna.trial import TrialState

    if study.sampler.name != "grid":
        return 0
    names = [p.name for p in study.search_space]
    points = list(itertools.product(*(p.grid_values() for p in study.search_space)))
    order = np.random.default_rng(study.sampler.seed).permutation(len(points))
    held = set()
    for t in ostudy.get_trials(deepcopy=False):
        if t.state == TrialState.FAIL and is_interrupted(t):
            continue
        params = t.system_attrs.get("fixed_params") or t.params
        held.add(tuple(params.get(n) for n in names))
    n = 0
    for i in order:
        if points[i] not in held:
            ostudy.enqueue_trial(dict(zip(names, points[i])), user_attrs={"grid_point": int(i)})
            n += 1
    return n


def _rows(ostudy: Any, metrics: list[str]) -> Iterator[dict[str, Any]]:
    names: list[str] = []
    trials = [t for t in ostudy.get_trials(deepcopy=False) if t.state.is_finished()]
    for t in trials:
        names.extend(k for k in t.params if k not in names)
    for t in sorted(trials, key=lambda t: t.number):
        row: dict[str, Any] = {"number": t.number, "state": t.state.name}
        for i, m in enumerate(metrics):
            row[f"value_{m}"] = (repr(float(t.values[i])) if t.values is not None else "")
        for k in names:
            row[f"param_{k}"] = t.params.get(k, "")
        ua = t.user_attrs
        row["error"] = ua.get("error", "")
        row["interrupted"] = bool(ua.get("interrupted", False))
        row["wall_time_s"] = (f"{ua['wall_time']:.3f}" if "wall_time" in ua else "")
        row["metrics"] = json.dumps(ua.get("metrics", {}), sort_keys=True)
        row["worker"] = ua.get("worker", "")
        yield row


def write_trials_csv(ostudy: Any, path: Path, metrics: list[str]) -> int:
    """Rewrite ``path`` atomically (temp file + ``os.replace``): one row per finished trial.

    Columns: number, state, value_<metric> per objective, param_<name> per parameter, error,
    interrupted, wall_time_s, metrics (JSON of every metric), worker.

    Returns:
        The number of rows written.
    """
    rows = list(_rows(ostudy, metrics))
    header = ["number", "state"] + [f"value_{m}" for m in metrics]
    for row in rows:
        header.extend(k for k in row if k not in header)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return len(rows)
