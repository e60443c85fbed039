"""The sweep driver: Optuna ask-and-tell, trials on a process pool or a Dask cluster.

The driver is the only process that touches the study's storage. It asks Optuna for a trial
(``study.ask`` with the study's distributions: the sampler decides, including TPE's use of the
finished trials), submits :func:`c3mpc.sweep.worker.evaluate_trial` of that trial to an executor
and tells Optuna the outcome as soon as the future completes; at most as many trials are in
flight as the executor has worker slots. Executors are ``concurrent.futures`` ones:

* local (default): ``ProcessPoolExecutor`` with one process per core (``--workers``), started by
  ``forkserver`` (workers fork from a server that has imported the worker module);
* Dask (``--dask ADDRESS``): ``distributed.Client(ADDRESS).get_executor(pure=False)``; the
  slots are the cluster's worker threads, re-read as workers come and go.

Scheduling, retries of lost workers, and data movement are the executor's business; the driver
only keeps the number of trials in flight at the number of slots.

Fault handling: a trial that raises or runs out of time comes back as a failed outcome and is
told FAIL with ``user_attrs["error"]``; a future that does not return within the hard limit
(``1.5 × timeout + 10 s``: code that never reaches a deadline check) is told FAIL and abandoned
(its slot stays taken until it returns; when every local worker is stuck the pool is replaced,
and local workers still running abandoned trials are killed when the sweep ends); a future whose worker died is
told FAIL with the executor's error. Ctrl-C (handled between storage writes) marks in-flight
trials interrupted (not counted; a grid re-queues their points on the next run) and returns
without the report; ``trials.csv`` is rewritten after every finished trial.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..errors import C3ValueError
from .storage import (RunFolder, counted_trials, enqueue_grid, is_interrupted, mark_interrupted,
                      open_study, recover_interrupted, write_trials_csv)
from .study import Study
from .worker import TrialOutcome, TrialSpec, evaluate_trial

__all__ = ["run_sweep", "SweepSummary", "hard_limit"]


def hard_limit(timeout: float) -> float:
    """Seconds after which the driver gives up on a trial that has not returned."""
    return 1.5 * timeout + 10.0


@dataclass(frozen=True)
class SweepSummary:
    """What a :func:`run_sweep` call did.

    Attributes:
        study_name: the study's name in the storage.
        out_dir: the run folder.
        budget: the trial budget.
        counted: trials counted against the budget after this run (complete + failed).
        complete: trials that completed.
        failed: trials that failed (raised / timed out), interruptions excluded.
        interrupted: trials cut off by a stopped driver (this or an earlier run; not counted).
        ran: trials finished by this call.
        resumed_from: counted trials found in the folder at the start.
        zombies: RUNNING trials of a killed earlier run marked interrupted at the start.
        stopped_by_user: Ctrl-C ended the run early.
        best: best trials (one, or the Pareto front): ``{number, values, params}`` each.
        elapsed: wall time [s].
    """

    study_name: str
    out_dir: Path
    budget: int
    counted: int
    complete: int
    failed: int
    interrupted: int
    ran: int
    resumed_from: int
    zombies: int
    stopped_by_user: bool
    best: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    elapsed: float = 0.0


# ------------------------------------------------------------------------ executors
def _exit_with(driver: int) -> None:
    """Kill this process (SIGKILL) as soon as process ``driver`` is gone, on any death.

    Local workers are forked by the forkserver, not by the driver, so ``prctl(PR_SET_PDEATHSIG)``
    would watch the wrong parent: the forkserver only exits once every worker has closed its
    copy of the forkserver's liveness pipe, i.e. after the workers. Instead a daemon thread
    waits on a pidfd of the driver (Linux >= 5.3; ``select`` sleeps in the kernel, no polling)
    or, where pidfds are missing, checks the driver every 0.5 s. So ``kill -9`` of the driver
    takes the busy workers with it, and then the forkserver and the resource tracker exit on
    their own.
    """
    import select

    try:
        fd = os.pidfd_open(driver)
    except ProcessLookupError:  # the driver died before this worker started
        os._exit(1)
    except (AttributeError, OSError):  # no pidfd: poll
        fd = None

    def watch() -> None:
        if fd is not None:
            select.select([fd], [], [])  # readable once the driver has exited
        else:
            while True:
                time.sleep(0.5)
                try:
                    os.kill(driver, 0)
                except ProcessLookupError:
                    break
                except PermissionError:  # pid reused by another user's process
                    break
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="exit-with-driver", daemon=True).start()


def _worker_init(driver: int) -> None:
    """Local workers: Ctrl-C is the driver's to handle; die with the driver."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with(driver)


class _LocalExecutor:
    def __init__(self, workers: int):
        self.workers = workers
        self.pool = self._new_pool()

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["c3mpc.sweep.worker"])
        return cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx,
                                      initializer=_worker_init, initargs=(os.getpid(),))

    def describe(self) -> str:
        return f"local process pool of {self.workers} worker(s)"

    def slots(self) -> int:
        return self.workers

    def submit(self, spec: TrialSpec) -> cf.Future:
        try:
            return self.pool.submit(evaluate_trial, spec)
        except cf.process.BrokenProcessPool:  # a worker died: start a fresh pool
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = self._new_pool()
            return self.pool.submit(evaluate_trial, spec)

    def reclaim(self) -> bool:
        """Every worker is stuck in an abandoned trial: replace the pool. Returns True."""
        self.close(kill=True)
        self.pool = self._new_pool()
        return True

    def close(self, kill: bool) -> None:
        # ProcessPoolExecutor has no public way to stop a busy worker before Python 3.14
        # (terminate_workers); killing our own children by pid is what it does.
        procs = list(getattr(self.pool, "_processes", {}).values()) if kill else []
        self.pool.shutdown(wait=not kill, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(5)


class _DaskExecutor:
    def __init__(self, address: str):
        from distributed import Client

        try:
            self.client = Client(address, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise C3ValueError(f"cannot connect to the Dask scheduler at {address!r}: {e}") from e
        self.address = address
        self.executor = self.client.get_executor(pure=False)

    def describe(self) -> str:
        return f"Dask cluster at {self.address}, {self.slots()} worker threads"

    def slots(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, spec: TrialSpec) -> cf.Future:
        return self.executor.submit(evaluate_trial, spec)

    def reclaim(self) -> bool:
        """Dask cannot stop a running task: wait for abandoned trials to return. False."""
        return False

    def close(self, kill: bool) -> None:
        try:
            self.executor.shutdown(wait=False)
        finally:
            self.client.close()


# ------------------------------------------------------------------------ progress
class _Progress:
    """One status line on stderr: done/budget, failures, best so far, elapsed."""

    def __init__(self, study: Study, stream: TextIO | None, enabled: bool):
        self.study = study
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()

    def update(self, ostudy: Any, counted: int, running: int, last: str = "") -> None:
        if not self.enabled:
            return
        from optuna.trial import TrialState

        trials = ostudy.get_trials(deepcopy=False)
        failed = sum(t.state == TrialState.FAIL and not is_interrupted(t) for t in trials)
        budget = self.study.trials
        width = 24
        filled = int(width * min(counted, budget) / budget)
        line = (f"{self.study.name} [{'#' * filled}{'.' * (width - filled)}] {counted}/{budget} "
                f"trials ({failed} failed, {running} running) | {_best_text(ostudy, self.study)}"
                f" | {_clock(time.perf_counter() - self.t0)}")
        if last and not self.tty:
            line += f" | {last}"
        if self.tty:
            self.stream.write("\r" + line.ljust(getattr(self, "_width", 0)))
            self._width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        if self.enabled:
            self.stream.write(text + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}"


def _best_text(ostudy: Any, study: Study) -> str:
    best = best_trials(ostudy, study)
    if not best:
        return "best: -"
    if len(study.objectives) == 1:
        b = best[0]
        return f"best {study.metrics[0]}={b['values'][0]:.6g} (#{b['number']})"
    from optuna.trial import TrialState

    done = ostudy.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    per_metric = ", ".join(
        f"{m}={(max if o.direction == 'maximize' else min)(t.values[i] for t in done):.6g}"
        for i, (m, o) in enumerate(zip(study.metrics, study.objectives)))
    return f"Pareto front: {len(best)} trial(s); best {per_metric}"


def best_trials(ostudy: Any, study: Study) -> tuple[dict[str, Any], ...]:
    """The best trial (single objective) or the Pareto front, as plain dicts."""
    from optuna.trial import TrialState

    if not any(t.state == TrialState.COMPLETE for t in ostudy.get_trials(deepcopy=False)):
        return ()
    trials = [ostudy.best_trial] if len(study.objectives) == 1 else ostudy.best_trials
    return tuple({"number": t.number, "values": list(t.values), "params": dict(t.params)}
                 for t in sorted(trials, key=lambda t: t.number))


# ------------------------------------------------------------------------ driver
@dataclass
class _Running:
    trial: Any
    submitted: float


def run_sweep(study: Study, out: str | Path, *, trials: int | None = None,
              dask_address: str | None = None, workers: int | None = None,
              progress: bool = True, report: bool = True,
              stream: TextIO | None = None) -> SweepSummary:
    """Run (or resume) ``study`` in the run folder ``out``.

    Args:
        study: a validated study (:func:`c3mpc.sweep.load_study`).
        out: run folder (created); holds ``study.journal``, ``trials.csv``, ``study.yaml`` and
            ``report/``. Running again with the same folder resumes the study.
        trials: trial budget overriding the study's (capped at the grid size).
        dask_address: run trials on the Dask scheduler at this address (e.g.
            ``tcp://10.0.0.5:8786``) instead of a local process pool.
        workers: local pool size (default: the number of cores).
        progress: write the progress line to ``stream`` (default stderr).
        report: write the report (table and plots) when the budget is spent.

    Returns:
        :class:`SweepSummary`.

    Raises:
        C3ValueError: the folder is locked by another sweep, holds a different study, or the
            Dask scheduler is unreachable.
    """
    if trials is not None:
        study = study.with_trials(trials)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise C3ValueError(f"workers must be an integer >= 1, got {workers!r}")
    folder = RunFolder(Path(out))
    t0 = time.perf_counter()
    with folder.lock():
        ostudy, storage = open_study(study, folder)
        if Path(study.source).is_file() and not folder.study_copy.exists():
            shutil.copyfile(study.source, folder.study_copy)
        zombies = recover_interrupted(ostudy, storage)
        enqueue_grid(ostudy, study)
        resumed_from = counted_trials(ostudy)
        write_trials_csv(ostudy, folder.trials_csv, study.metrics)
        bar = _Progress(study, stream, progress)
        ran, stopped = _drive(study, ostudy, storage, folder, bar, dask_address,
                              workers or _cores())
        write_trials_csv(ostudy, folder.trials_csv, study.metrics)
        summary = _summarise(study, ostudy, folder, ran, resumed_from, zombies, stopped,
                             time.perf_counter() - t0)
    if report and not summary.stopped_by_user:
        from .report import write_report

        write_report(folder.root, study.name)
    return summary


def _cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _drive(study: Study, ostudy: Any, storage: Any, folder: RunFolder, bar: _Progress,
           dask_address: str | None, workers: int) -> tuple[int, bool]:
    """The ask / submit / tell loop. Returns (trials finished here, stopped by Ctrl-C)."""
    counted = counted_trials(ostudy)
    if counted >= study.trials:
        bar.update(ostudy, counted, 0, "budget already spent")
        bar.close()
        return 0, False
    task = study.resolve_task()
    base = {**task.base_options().to_dict(), **study.options}
    distributions = study.distributions()
    executor: Any = (_DaskExecutor(dask_address) if dask_address
                     else _LocalExecutor(min(workers, study.trials - counted)))
    inflight: dict[cf.Future, _Running] = {}
    abandoned: list[cf.Future] = []
    ran = 0
    stopped = False
    limit = hard_limit(study.timeout)
    bar.message(f"{study.name}: {study.trials - counted} trial(s) to run on "
                f"{executor.describe()}; storage {folder.journal}")
    ctrl_c = _CtrlC()
    try:
        while True:
            if ctrl_c.requested:
                raise KeyboardInterrupt
            abandoned = [f for f in abandoned if not f.done()]
            free = executor.slots() - len(inflight) - len(abandoned)
            while free > 0 and counted + len(inflight) < study.trials:
                trial = ostudy.ask(distributions)
                spec = TrialSpec(number=trial.number, task=study.task, base_options=base,
                                 params=dict(trial.params), seeds=study.seeds,
                                 duration=study.duration,
                                 start_perturbation=study.start_perturbation, noise=study.noise,
                                 timeout=study.timeout, metrics=tuple(study.metrics))
                inflight[executor.submit(spec)] = _Running(trial, time.perf_counter())
                free -= 1
            if not inflight:
                if counted >= study.trials:
                    break
                # every slot is held by an abandoned (hung) trial
                if executor.reclaim():
                    abandoned = []
                else:
                    cf.wait(abandoned, timeout=0.5, return_when=cf.FIRST_COMPLETED)
                continue
            done, _ = cf.wait(list(inflight), timeout=0.5, return_when=cf.FIRST_COMPLETED)
            now = time.perf_counter()
            for fut in list(inflight):
                run = inflight[fut]
                if fut in done:
                    outcome = _outcome_of(fut, run.trial.number)
                elif now - run.submitted > limit:
                    outcome = TrialOutcome(run.trial.number, None, {}, f"timed out: no result "
                                           f"after {now - run.submitted:.0f} s (hard limit "
                                           f"{limit:.0f} s for timeout {study.timeout:g} s)")
                    fut.cancel()
                    abandoned.append(fut)
                else:
                    continue
                del inflight[fut]
                _tell(ostudy, run.trial, outcome)
                counted += 1
                ran += 1
                write_trials_csv(ostudy, folder.trials_csv, study.metrics)
                bar.update(ostudy, counted, len(inflight),
                           f"#{outcome.number} " + ("failed: " + outcome.error if outcome.failed
                                                    else "done"))
    except BaseException as e:  # Ctrl-C, or the executor / storage failed
        for run in inflight.values():
            mark_interrupted(storage, run.trial._trial_id)
        write_trials_csv(ostudy, folder.trials_csv, study.metrics)
        if not isinstance(e, KeyboardInterrupt):
            raise
        stopped = True
    finally:
        ctrl_c.restore()
        bar.close()
        executor.close(kill=stopped or bool(abandoned) or bool(inflight))
    return ran, stopped


class _CtrlC:
    """Turn the first Ctrl-C (SIGINT) into a flag the driver loop checks between storage writes.

    A KeyboardInterrupt raised in the middle of an Optuna ``tell`` could leave a half-recorded
    trial; with the flag the loop stops at its next turn (within 0.5 s). A second Ctrl-C raises
    at once. Only the main thread can install signal handlers; elsewhere Ctrl-C acts as usual.
    """

    def __init__(self) -> None:
        self.requested = False
        self.previous: Any = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None


def _outcome_of(fut: cf.Future, number: int) -> TrialOutcome:
    try:
        return fut.result()
    except Exception as e:  # noqa: BLE001 -- the worker died or the result did not arrive
        return TrialOutcome(number, None, {}, f"worker failure: {type(e).__name__}: {e}")


def _tell(ostudy: Any, trial: Any, outcome: TrialOutcome) -> None:
    from optuna.trial import TrialState

    trial.set_user_attr("wall_time", float(outcome.wall_time))
    trial.set_user_attr("worker", outcome.worker)
    if outcome.failed:
        trial.set_user_attr("error", outcome.error)
        ostudy.tell(trial, state=TrialState.FAIL)
    else:
        trial.set_user_attr("metrics", {k: float(v) for k, v in outcome.metrics.items()})
        ostudy.tell(trial, list(outcome.values))


def _summarise(study: Study, ostudy: Any, folder: RunFolder, ran: int, resumed_from: int,
               zombies: int, stopped: bool, elapsed: float) -> SweepSummary:
    from optuna.trial import TrialState

    trials = ostudy.get_trials(deepcopy=False)
    return SweepSummary(
        study_name=study.name, out_dir=folder.root, budget=study.trials,
        counted=counted_trials(ostudy),
        complete=sum(t.state == TrialState.COMPLETE for t in trials),
        failed=sum(t.state == TrialState.FAIL and not is_interrupted(t) for t in trials),
        interrupted=sum(is_interrupted(t) for t in trials), ran=ran,
        resumed_from=resumed_from, zombies=zombies, stopped_by_user=stopped,
        best=best_trials(ostudy, study), elapsed=elapsed)
