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

__all__ = ["RunFolder", "SweepLockedError", "JournalDamagedError", "TrialsShrinkError",
           "check_journal", "open_study", "recover_interrupted",
           "enqueue_grid", "counted_trials", "write_trials_csv", "is_interrupted",
           "INTERRUPTED_ERROR"]

INTERRUPTED_ERROR = ("interrupted: the sweep process stopped before this trial finished; it does "
                     "not count against the budget")


class SweepLockedError(C3ValueError):
    """Another sweep process holds the run folder."""


class JournalDamagedError(C3ValueError):
    """The journal lost finished trials that ``trials.csv`` still records (or is unreadable).

    The run refuses to go on (it would rewrite ``trials.csv`` from the poorer journal).

    Attributes:
        missing: trial numbers in ``trials.csv`` that the journal does not hold as finished.
        backup: where the damaged journal was copied (None when there was no journal).
    """

    def __init__(self, message: str, missing: tuple[int, ...] = (), backup: Path | None = None):
        super().__init__(message)
        self.missing = missing
        self.backup = backup


class TrialsShrinkError(C3ValueError):
    """A rewrite of ``trials.csv`` would have dropped finished trials; it was not done."""


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


def _backup(path: Path) -> Path:
    """Copy ``path`` to ``path.damaged-<UTC time>`` (a new name each time) and return it."""
    import shutil
    import time

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    shutil.copy2(path, target)
    return target


def _journal_problem(path: Path) -> str | None:
    """Why the journal cannot be read as Optuna journal lines (None when it can)."""
    if not path.exists():
        return None
    with open(path, "rb") as f:
        for i, line in enumerate(f, start=1):
            try:
                entry = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                return f"line {i} is not a journal entry (not JSON)"
            if not isinstance(entry, dict) or "op_code" not in entry:
                return f"line {i} is not a journal entry (no op_code)"
    return None


def finished_in_csv(path: Path) -> dict[int, str]:
    """``{trial number: state}`` of the rows of an existing ``trials.csv`` ({} if none)."""
    if not path.exists():
        return {}
    try:
        with open(path, newline="") as f:
            return {int(r["number"]): r.get("state", "") for r in csv.DictReader(f)
                    if (r.get("number") or "").strip().lstrip("-").isdigit()}
    except (OSError, csv.Error, KeyError, UnicodeDecodeError):
        return {}


def check_journal(ostudy: Any, folder: RunFolder, problem: str | None = None) -> None:
    """Refuse to go on when the journal holds fewer finished trials than ``trials.csv``.

    ``trials.csv`` is rebuilt from the journal after every trial; when the journal has been
    emptied, deleted, truncated or damaged, that rebuild would silently drop finished trials.
    The journal (if any) is backed up and :class:`JournalDamagedError` says what is missing
    and how to recover.

    Args:
        ostudy: the study loaded from the journal, or None when it could not be loaded.
        problem: why the journal could not be read, if it could not.
    """
    in_csv = finished_in_csv(folder.trials_csv)
    if ostudy is not None:
        held = {t.number for t in ostudy.get_trials(deepcopy=False) if t.state.is_finished()}
    else:
        held = set()
    missing = tuple(sorted(set(in_csv) - held))
    if not missing and problem is None:
        return
    backup = _backup(folder.journal) if folder.journal.exists() else None
    state = ("missing" if not folder.journal.exists() else
             "empty" if folder.journal.stat().st_size == 0 else
             f"damaged ({problem})" if problem else "incomplete")
    saved = f"; it was copied to {backup}" if backup else ""
    if missing:
        raise JournalDamagedError(
            f"{folder.journal} is {state}{saved}: {folder.trials_csv} records "
            f"{len(in_csv)} finished trial(s) and {len(missing)} of them (numbers "
            f"{_ranges(missing)}) are not in the journal. Nothing was overwritten. Restore the "
            f"journal from a backup, or move {folder.trials_csv.name} away to start the study "
            f"over.", missing, backup)
    raise JournalDamagedError(
        f"{folder.journal} is {state}{saved}. Nothing was overwritten. Restore the journal from "
        f"a backup, or remove it (and {folder.trials_csv.name}) to start the study over.",
        (), backup)


def _ranges(numbers: tuple[int, ...]) -> str:
    shown = ", ".join(str(n) for n in numbers[:10])
    return shown + (f", ... ({len(numbers)} in all)" if len(numbers) > 10 else "")


def open_study(study: Study, folder: RunFolder) -> tuple[Any, Any]:
    """Create or load the Optuna study of ``study`` in ``folder`` (hold ``folder.lock()``).

    Returns:
        ``(optuna_study, storage)``.

    The sampler is seeded with the study's seed plus the number of trials already in the
    storage, so a resumed random or TPE sampler continues with new proposals instead of
    repeating the first run's (the grid sampler is resumed by :func:`enqueue_grid`).

    Raises:
        C3ValueError: the folder holds a study of the same name with another definition
            (search space, objectives, seeds, ...), or another number of objectives.
        JournalDamagedError: the journal is unreadable, or lost finished trials that
            ``trials.csv`` records (see :func:`check_journal`).
    """
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    folder.root.mkdir(parents=True, exist_ok=True)
    _repair_journal(folder.journal)
    problem = _journal_problem(folder.journal)
    if problem is not None or (finished_in_csv(folder.trials_csv) and (
            not folder.journal.exists() or folder.journal.stat().st_size == 0)):
        check_journal(None, folder, problem)  # raises: nothing is written to the folder
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
    if study.name in existing:  # load_study writes nothing (create_study would log a create)
        ostudy = optuna.load_study(study_name=study.name, storage=storage,
                                   sampler=study.sampler.build(study))
        check_journal(ostudy, folder)
    else:
        if finished_in_csv(folder.trials_csv):
            check_journal(None, folder)  # trials.csv of a study the journal does not hold
        ostudy = optuna.create_study(storage=storage, study_name=study.name,
                                     directions=study.directions,
                                     sampler=study.sampler.build(study))
    existing_trials = len(ostudy.get_trials(deepcopy=False))
    if existing_trials and study.sampler.name != "grid":
        ostudy.sampler = study.sampler.build(study, offset=existing_trials)
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

    Never shrinks the table: a rewrite that would drop a trial the file already holds raises
    :class:`TrialsShrinkError` and leaves the file as it was.

    Returns:
        The number of rows written.
    """
    rows = list(_rows(ostudy, metrics))
    dropped = set(finished_in_csv(path)) - {int(r["number"]) for r in rows}
    if dropped:
        raise TrialsShrinkError(f"refusing to rewrite {path}: the journal no longer holds "
                                f"trial(s) {_ranges(tuple(sorted(dropped)))} that it records")
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
