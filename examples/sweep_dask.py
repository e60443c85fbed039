"""A hyperparameter sweep of C3 on a Dask cluster (docs/sweeps.md).

Without ``--scheduler`` it starts a ``LocalCluster`` on loopback (worker processes on this
machine) and stops it at the end; with ``--scheduler tcp://HOST:8786`` the same study runs on
your cluster (start it with ``dask scheduler`` and ``dask worker tcp://HOST:8786 --nthreads 1``
on each machine). The study is the documented cart-pole one; re-running with the same
``--out`` resumes it::

    python examples/sweep_dask.py --trials 4 --out sweeps/dask-demo
    python examples/sweep_dask.py --scheduler tcp://10.0.0.5:8786 --trials 60
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from c3mpc.sweep import load_study, run_sweep

STUDY = Path(__file__).resolve().parent / "sweeps" / "cartpole.yaml"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", default=str(STUDY), help="study file (default: %(default)s)")
    ap.add_argument("--scheduler", help="Dask scheduler address (default: a LocalCluster)")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    ap.add_argument("--trials", type=int, help="trial budget (default: the study's)")
    ap.add_argument("--out", default="sweeps/dask-demo", help="run folder")
    args = ap.parse_args(argv)
    study = load_study(args.study)  # validated before a cluster starts
    with contextlib.ExitStack() as stack:
        address = args.scheduler
        if address is None:
            from distributed import LocalCluster

            cluster = stack.enter_context(LocalCluster(
                n_workers=args.workers, threads_per_worker=1, processes=True,
                host="127.0.0.1", dashboard_address=None))
            address = cluster.scheduler_address
        summary = run_sweep(study, args.out, trials=args.trials, dask_address=address,
                            report=False)
    print(f"{summary.complete} complete, {summary.failed} failed on {address}; "
          f"results in {summary.out_dir}/trials.csv")
    for best in summary.best:
        print(f"  best #{best['number']}: {best['values']}  {best['params']}")
    return 0 if summary.failed == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
