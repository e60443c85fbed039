"""``c3mpc sweep`` and ``c3mpc sweep-report`` (wired into :mod:`c3mpc.cli`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import C3ValueError
from .execution import SweepSummary, run_sweep
from .report import write_report
from .study import load_study

__all__ = ["sweep_command", "sweep_report_command"]


def sweep_command(args: argparse.Namespace) -> int:
    """Run or resume a study. Exit code 0 when the budget is spent, 130 after Ctrl-C."""
    if not Path(args.study).is_file():
        raise C3ValueError(f"study file not found: {args.study}")
    study = load_study(args.study)  # every study-file error surfaces here, before any trial
    out = Path(args.out) if args.out else Path("sweeps") / study.name
    summary = run_sweep(study, out, trials=args.trials, dask_address=args.dask,
                        workers=args.workers, progress=not args.quiet,
                        report=not args.no_report)
    _print_summary(summary, study.metrics)
    if summary.stopped_by_user:
        print(f"  interrupted: re-run the same command to resume ({summary.counted}/"
              f"{summary.budget} trials done); `c3mpc sweep-report {out}` for the report so far")
        return 130
    return 0


def _print_summary(s: SweepSummary, metrics: list[str]) -> None:
    resumed = (f", resumed from {s.resumed_from}" if s.resumed_from else "") + (
        f", {s.zombies} trial(s) of a killed run marked interrupted" if s.zombies else "")
    print(f"c3mpc sweep {s.study_name}: {s.counted}/{s.budget} trials ({s.complete} complete, "
          f"{s.failed} failed; {s.ran} run now{resumed}) in {s.elapsed:.1f} s -> {s.out_dir}/")
    for b in s.best:
        values = ", ".join(f"{m}={v:.6g}" for m, v in zip(metrics, b["values"]))
        print(f"  best #{b['number']}: {values}  params {b['params']}")
    report = s.out_dir / "report" / "results.md"
    print(f"  trials: {s.out_dir / 'trials.csv'}" + (f"; report: {report}" if report.exists()
                                                      else ""))


def sweep_report_command(args: argparse.Namespace) -> int:
    """Write DIR/report/ and print the results table."""
    report = write_report(args.dir)
    print(report.table)
    for note in report.notes:
        print(f"  note: {note}")
    print(f"  report written to {report.directory}/ ({len(report.files)} files)")
    return 0
