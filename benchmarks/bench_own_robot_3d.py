"""Benchmark the 3-D bring-your-own-robot examples (issue 19 item 8): C3 in the simulator.

* ``two_finger_cube``: two 3-D point fingers turn a free cube (a quaternion) 45° about z on a
  table (``examples/own_robot/two_finger_cube/``); seeded starts: the cube turned by up to ±15°
  about z, fingers on its faces.
* ``ur5_push``: a UR5 (example-robot-data) pushes a free box 10 cm along a table, three model
  files in one task file (``examples/own_robot/ur5_push/``); seeded starts: the box 0-2 cm
  further and up to ±1.5 cm to the side.
* ``jaw_gripper``: a parallel-jaw gripper (a yaw hinge carrying two closing jaws) turns the
  two-finger example's cube 45° (``examples/own_robot/jaw_gripper/``); seeded starts: cube and
  hand turned by up to ±15° about z.
* ``panda_push``: the same push by a Panda (example-robot-data, 9 joints; ``examples/own_robot/
  panda_push/``), from its start only (a plan takes seconds).

Each run is the example as a user runs it (task file defaults, ``c3mpc run`` settings): C3 at the
file's control rate in SAP. Reported per run: the final goal errors (position [cm], orientation
[°]), success (the task file's ``goal_reached``: position within 2 cm, orientation within 0.05
rad), the control rate, C3's median / largest plan time and the wall time. The machine is shared
(2 cores): times move with its load.

Writes ``benchmarks/results/bench_own_robot_3d.json`` and the ``bench_own_robot_3d`` section of
``docs/BENCHMARKS.md`` (only that section is replaced).
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_report.py
import _report  # noqa: E402

ROOT = _report.ROOT
JSON_PATH = ROOT / "benchmarks" / "results" / "bench_own_robot_3d.json"


def _example(name: str):
    sys.path.insert(0, str(ROOT / "examples" / "own_robot" / name))
    try:
        return __import__(name)
    finally:
        sys.path.pop(0)


EXAMPLES = ("two_finger_cube", "jaw_gripper", "ur5_push", "panda_push")
TURNS = ("two_finger_cube", "jaw_gripper")  # started turned about z


def _starts(name: str, n: int) -> list[tuple[str, tuple[float, ...]]]:
    out: list[tuple[str, tuple[float, ...]]] = [("nominal", ())]
    for seed in range(1, n + 1 if name != "panda_push" else 1):
        rng = np.random.default_rng(seed)
        if name in TURNS:
            args: tuple[float, ...] = (float(rng.uniform(-np.deg2rad(15), np.deg2rad(15))),)
        else:
            args = (float(rng.uniform(0.0, 0.02)), float(rng.uniform(-0.015, 0.015)))
        out.append((f"seed {seed}", args))
    return out


def _run(name: str, start: str, args: tuple[float, ...]) -> dict:
    printed = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(printed):
        task, log = _example(name).main(*args)
    wall = time.perf_counter() - t0
    for line in printed.getvalue().splitlines():
        _report.say(f"{name} {start}: {line}")
    errors = task.goal_errors(log.x[-1])
    pos = next(v for k, v in errors.items() if k.endswith(".position"))
    ori = next(v for k, v in errors.items() if k.endswith(".orientation"))
    return {"example": name, "start": start, "args": list(args), "position_error_m": pos,
            "orientation_error_rad": ori, "success": bool(task.goal_reached(log.x[-1])),
            "duration_s": float(task.duration),
            "control_rate_hz": float(log.extras["control_rate"]),
            "solve_median_ms": 1e3 * float(np.median(log.solve_time)),
            "solve_max_ms": 1e3 * float(log.solve_time.max()), "wall_s": wall,
            "failed_plans": int(log.extras["failed_steps"]),
            "not_converged_plans": int(log.extras["not_converged_steps"]),
            "sim_not_converged": int(np.count_nonzero(log.extras["sim_stats"]["status"]))}


def _describe(args: list[float], name: str) -> str:
    if not args:
        return "—"
    if name in TURNS:
        return f"yaw {np.rad2deg(args[0]):+.1f}°"
    return f"box {100 * args[0]:+.1f} / {100 * args[1]:+.1f} cm"


def main(argv: list[str] | None = None) -> int:
    parser = _report.argument_parser(__doc__, "1 seeded start per example instead of 3")
    args = parser.parse_args(argv)
    n = 1 if args.quick else 3
    plan = [(name, s, a) for name in EXAMPLES for s, a in _starts(name, n)]
    bar = _report.progress(len(plan), "own-robot 3-D", args.quiet, "runs")
    runs = []
    import warnings

    for name, start, a in plan:
        _report.show(bar, f"{name}: {start}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the UR5's convex-hull note
            runs.append(_run(name, start, a))
        bar.update(bar.done + 1)
    rates = {name: float(np.mean([r["success"] for r in runs if r["example"] == name]))
             for name in EXAMPLES}
    result = {"timestamp": _report.utc_timestamp(), "machine": _report.machine_info(),
              "runs": runs, "success_rate": rates}
    start, end = _report.markers("bench_own_robot_3d")
    rows = "\n".join(
        f"| {r['example']} | {r['start']} ({_describe(r['args'], r['example'])}) | "
        f"{100 * r['position_error_m']:.2f} | {np.rad2deg(r['orientation_error_rad']):.2f} | "
        f"{r['success']} | {r['control_rate_hz']:.0f} | "
        f"{r['solve_median_ms']:.0f} / {r['solve_max_ms']:.0f} | {r['failed_plans']} / "
        f"{r['not_converged_plans']} / {r['sim_not_converged']} | {r['wall_s']:.0f} |"
        for r in runs)
    m = result["machine"]
    md = (f"{start}\n## Bring your own robot in 3-D: a free cube turned by two fingers and by a jaw "
          f"gripper, a box pushed by a UR5 and by a Panda "
          f"(`benchmarks/bench_own_robot_3d.py`)\n\n"
          f"{result['timestamp']}, {m['platform'].split('-')[0]} ({m['cpu_count']} CPUs, shared "
          f"with other jobs: times are noisy), Python {m['python']}; each row one run of the "
          f"example as a user runs it (task file defaults: C3 MIQP, N = 10, LCS dt 0.1 s, "
          f"G = U = 0.1·I, re-planning at 10 Hz with zero-order hold in SAP at 1 ms; "
          + ", ".join(sorted({f"{r['example']} {r['duration_s']:g} s" for r in runs}))
          + "). Success: the goal object within 2 cm of its goal position and "
          f"0.05 rad (2.9°) of its goal orientation.\n\n"
          f"| example | start | position error [cm] | orientation error [°] | success | "
          f"control rate [Hz] | C3 median / max [ms] | failed / not converged plans / "
          f"sim steps not converged | wall [s] |\n|---|---|---|---|---|---|---|---|---|\n{rows}\n\n"
          + "Success over the seeded starts: " + ", ".join(
              f"{k} {100 * v:.0f}% (incl. nominal)" for k, v in rates.items())
          + ". C3 plans take longer than the 100 ms period on this machine; the runs use "
          "`delay=\"none\"`. See docs/own-robot.md.\n" + end)
    _report.publish(result, md, "bench_own_robot_3d", JSON_PATH)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
