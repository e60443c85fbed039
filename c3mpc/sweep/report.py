"""Sweep report: a results table and plots, from a run folder's storage.

``write_report(DIR)`` (also ``c3mpc sweep-report DIR``) reads ``DIR/study.journal`` and writes
into ``DIR/report/``:

* ``results.md``: the best trials (single objective: sorted by value; several objectives: the
  Pareto front first), then counts of complete / failed / interrupted trials and failure messages;
* ``summary.json``: the same in machine-readable form;
* per objective ``<metric>``: ``history_<metric>.png|.html`` (objective history with
  best-so-far), ``importance_<metric>.png|.html`` (parameter importance, Optuna's default
  evaluator), ``parallel_<metric>.png|.html`` (parallel coordinates);
* with several objectives also ``pareto.png|.html``.

PNGs are drawn with matplotlib, HTML with plotly (both through ``optuna.visualization``).
A plot that is undefined for the trials at hand (parameter importance needs at least two
complete trials whose parameters vary; nothing can be drawn before the first complete trial)
is skipped with a note in ``results.md`` instead of failing the report.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import C3ValueError
from .storage import RunFolder, is_interrupted

__all__ = ["write_report", "Report", "load_run"]

_TOP = 15


@dataclass(frozen=True)
class Report:
    """What :func:`write_report` wrote.

    Attributes:
        directory: the report folder.
        files: files written, relative to ``directory``.
        notes: plots skipped and why.
        table: the markdown results table.
    """

    directory: Path
    files: tuple[str, ...]
    notes: tuple[str, ...]
    table: str


def load_run(run_dir: str | Path, study_name: str | None = None) -> tuple[Any, list[str]]:
    """The Optuna study stored in a run folder and its objective metric names.

    ``study_name`` picks one study when the folder holds several (a study file renamed between
    runs); by default the most recently created one.
    """
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    folder = RunFolder(Path(run_dir))
    if not folder.journal.is_file():
        raise C3ValueError(f"{run_dir} is not a sweep run folder (no study.journal)")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = JournalStorage(JournalFileBackend(str(folder.journal),
                                                lock_obj=JournalFileOpenLock(str(folder.journal))))
    studies = storage.get_all_studies()
    if not studies:
        raise C3ValueError(f"{folder.journal} holds no study")
    names = [s.study_name for s in studies]
    if study_name is not None and study_name not in names:
        raise C3ValueError(f"{folder.journal} holds no study {study_name!r}; studies: {names}")
    ostudy = optuna.load_study(study_name=study_name or names[-1], storage=storage)
    metrics = list(ostudy.user_attrs.get("metrics") or
                   [f"objective_{i}" for i in range(len(ostudy.directions))])
    return ostudy, metrics


def write_report(run_dir: str | Path, study_name: str | None = None) -> Report:
    """Write the results table and plots of the run in ``run_dir`` (see module docstring)."""
    ostudy, metrics = load_run(run_dir, study_name)
    out = RunFolder(Path(run_dir)).report_dir
    out.mkdir(parents=True, exist_ok=True)
    from optuna.trial import TrialState

    trials = ostudy.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    failed = [t for t in trials if t.state == TrialState.FAIL and not is_interrupted(t)]
    interrupted = [t for t in trials if is_interrupted(t)]
    files: list[str] = []
    notes: list[str] = []
    multi = len(metrics) > 1
    signs = [1.0 if d.name == "MINIMIZE" else -1.0 for d in ostudy.directions]

    if multi and complete:
        front = {t.number for t in ostudy.best_trials}
        ranked = sorted(complete, key=lambda t: (t.number not in front,
                                                 signs[0] * t.values[0], t.number))
    else:
        front = set()
        ranked = sorted(complete, key=lambda t: (signs[0] * t.values[0], t.number))
    table = _table(ranked[:_TOP], metrics, front if multi else None)

    for i, metric in enumerate(metrics):
        target = (lambda t, i=i: t.values[i]) if multi else None
        _plot(out, f"history_{metric}", files, notes,
              lambda m, i=i, target=target: m.plot_optimization_history(
                  ostudy, target=target, target_name=metrics[i]), len(complete) >= 1,
              "no complete trial yet")
        _importance(ostudy, out, metric, target, files, notes, complete)
        _plot(out, f"parallel_{metric}", files, notes,
              lambda m, i=i, target=target: m.plot_parallel_coordinate(
                  ostudy, target=target, target_name=metrics[i]), len(complete) >= 1,
              "no complete trial yet")
    if multi:
        _plot(out, "pareto", files, notes,
              lambda m: m.plot_pareto_front(ostudy, target_names=metrics), len(complete) >= 1,
              "no complete trial yet")

    lines = [f"# Sweep `{ostudy.study_name}`", "",
             f"{len(complete)} complete, {len(failed)} failed, {len(interrupted)} interrupted "
             f"(not counted) trials. Objectives: " + ", ".join(
                 f"{m} ({d.name.lower()})" for m, d in zip(metrics, ostudy.directions)) + ".", "",
             "## Best trials" + (" (Pareto front marked *)" if multi else ""), "", table, ""]
    if failed:
        lines += ["## Failed trials", ""] + [f"- #{t.number}: {t.user_attrs.get('error', '?')}"
                                             for t in failed[:_TOP]] + [""]
    if notes:
        lines += ["## Plots not drawn", ""] + [f"- {n}" for n in notes] + [""]
    lines += ["## Plots", ""] + [f"- [{f}]({f})" for f in files] + [""]
    (out / "results.md").write_text("\n".join(lines))
    summary = {"study": ostudy.study_name, "metrics": metrics,
               "directions": [d.name.lower() for d in ostudy.directions],
               "complete": len(complete), "failed": len(failed),
               "interrupted": len(interrupted),
               "best": [{"number": t.number, "values": list(t.values), "params": t.params}
                        for t in (ranked[:1] if not multi else
                                  [t for t in ranked if t.number in front])],
               "files": files, "notes": notes}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return Report(out, tuple(["results.md", "summary.json"] + files), tuple(notes), table)


def _table(trials: list[Any], metrics: list[str], front: set[int] | None) -> str:
    if not trials:
        return "(no complete trial)"
    params: list[str] = []
    for t in trials:
        params.extend(k for k in t.params if k not in params)
    head = ["#"] + metrics + params
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in trials:
        mark = "*" if front is not None and t.number in front else ""
        cells = [f"{t.number}{mark}"] + [f"{v:.6g}" for v in t.values] + [
            _fmt(t.params.get(p, "")) for p in params]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _plot(out: Path, stem: str, files: list[str], notes: list[str],
          draw: Callable[[Any], Any], possible: bool, why_not: str) -> None:
    """Draw one optuna plot as PNG (matplotlib) and HTML (plotly); record a note on failure."""
    if not possible:
        notes.append(f"{stem}: {why_not}")
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna.visualization as vis
    import optuna.visualization.matplotlib as vis_mpl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optuna's matplotlib plots are "experimental"
        try:
            ax = draw(vis_mpl)
            fig = ax.figure if hasattr(ax, "figure") else ax.flat[0].figure
            fig.set_size_inches(9, 5)
            fig.tight_layout()
            fig.savefig(out / f"{stem}.png", dpi=90)
            plt.close(fig)
            files.append(f"{stem}.png")
        except Exception as e:  # noqa: BLE001 -- a plot must not fail the report
            plt.close("all")
            notes.append(f"{stem}.png: {type(e).__name__}: {e}")
        try:
            draw(vis).write_html(out / f"{stem}.html", include_plotlyjs="cdn")
            files.append(f"{stem}.html")
        except Exception as e:  # noqa: BLE001
            notes.append(f"{stem}.html: {type(e).__name__}: {e}")


def _importance(ostudy: Any, out: Path, metric: str, target: Any, files: list[str],
                notes: list[str], complete: list[Any]) -> None:
    stem = f"importance_{metric}"
    varied = [p for p in {k for t in complete for k in t.params}
              if len({repr(t.params.get(p)) for t in complete}) > 1]
    if len(complete) < 2 or not varied:
        notes.append(f"{stem}: parameter importance is undefined with {len(complete)} complete "
                     f"trial(s) and {len(varied)} varied parameter(s)")
        return
    import optuna

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optuna.importance.get_param_importances(ostudy, target=target)
    except Exception as e:  # noqa: BLE001 -- e.g. too few trials for the evaluator
        notes.append(f"{stem}: parameter importance is undefined here ({type(e).__name__}: {e})")
        return
    _plot(out, stem, files, notes, lambda m: m.plot_param_importances(
        ostudy, target=target, target_name=metric), True, "")
