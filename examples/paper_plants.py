"""C3 on the three LCS plants of the C3 paper (seed 003 §VI), each with the paper's settings.

Runs the cart-pole with soft walls (LCP projection), finger gaiting (exact MIQP) and pivoting
(the authors' script protocol: re-plan every 70 ms) in closed loop on their own LCS and prints,
per task, whether it met its success criterion, the accumulated cost and the control rate::

    python examples/paper_plants.py                 # all three, their default durations
    python examples/paper_plants.py --duration 2 --tasks cartpole-softwalls
"""

from __future__ import annotations

import argparse

import numpy as np

from c3mpc import C3Options, run_closed_loop
from c3mpc.tasks import build_controller, get_task

TASKS = ("cartpole-softwalls", "finger-gaiting", "pivoting")


def run_task(name: str, duration: float | None) -> bool:
    """Close the loop on one paper task with its paper settings; print and return success."""
    task = get_task(name)
    plant = task.plant()
    d = plant.defaults
    options = C3Options(projection=d.projection, admm_iter=d.admm_iter, rho=d.rho,
                        rho_scale=d.rho_scale)
    controller = build_controller(plant, options, x0=d.x0)
    steps = int(round((duration or task.duration) / plant.dt))
    log = run_closed_loop(plant, controller, d.x0, steps, replan_every=task.replan_every)
    ok = bool(task.success(log))
    print(f"{name:20s} success={ok!s:5s} cost={log.accumulated_cost:10.4g} "
          f"rate={log.control_rate:6.0f} Hz  final x[0:2]={np.round(log.x[-1][:2], 3)}")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    ap.add_argument("--duration", type=float, help="simulated seconds (default: the task's)")
    args = ap.parse_args(argv)
    results = [run_task(name, args.duration) for name in args.tasks]
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
