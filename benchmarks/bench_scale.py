"""Own robots at other scales (issue 19's hand-scale limit): C3 with task-file defaults in SAP.

* ``jaw_gripper_small``: the jaw gripper 10x smaller (10 cm, 0.2 kg cube; 20 g jaws;
  ``examples/own_robot/jaw_gripper/jaw_gripper_small.yaml``) turns the cube 45° about z, from
  its start and from seeded starts (cube and hand turned by up to ±15°, the jaw gripper
  benchmark's seeds), 1.5 s: with the defaults (planning dt 0.1 s, G = U = 0.1·I), with
  ``planning: {dt: 0.05}``, and with ``planning: {G: scaled}`` (from its start only).
* ``pusher_box`` (``examples/own_robot/pusher_box.yaml``, 3 s) and ``pusher_box_large`` (the
  same robot 10x larger, lengths x10, masses x1000; ``tests/data/pusher_box_large.yaml``, 8 s):
  fixed G = 0.1·I against ``G: scaled``; the large one also with its input cost R written for
  its forces (1e-8 per N², the example's 0.01 for forces 1000x larger).

Reported per run: the final goal errors, success (the task file's ``goal_reached``), how many
plans were NOT_CONVERGED, the median consensus residual and relative complementarity
violation of the plans (``C3Result.relative_complementarity_violation``), and the wall time.
The machine is shared (2 cores): times move with its load.

Writes ``benchmarks/results/bench_scale.json`` and the ``bench_scale`` section of
``docs/BENCHMARKS.md``.
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_report.py
import _report  # noqa: E402

ROOT = _report.ROOT
JSON_PATH = ROOT / "benchmarks" / "results" / "bench_scale.json"
SMALL = ROOT / "examples" / "own_robot" / "jaw_gripper" / "jaw_gripper_small.yaml"
PUSHER = ROOT / "examples" / "own_robot" / "pusher_box.yaml"
LARGE = ROOT / "tests" / "data" / "pusher_box_large.yaml"


def _variant(path: Path, folder: Path, planning: str = "", R: float | None = None) -> Path:
    """A copy of the task file (and its model) with ``planning: {...}`` and ``cost.R`` set."""
    from plants import load_task_file

    model = load_task_file(path).model_path
    (folder / model.name).write_text(model.read_text())
    text = path.read_text()
    if planning:
        text = text.replace("cost:", f"planning: {planning}\ncost:", 1)
    if R is not None:
        text = text.replace("cost:\n", f"cost:\n  R: {R:.1e}\n", 1)
    out = folder / f"{path.stem}_{abs(hash((planning, R)))}.yaml"
    out.write_text(text)
    return out


def _run(path: Path, duration: float, yaw0: float | None = None) -> dict:
    from c3mpc import run_in_simulator
    from c3mpc.tasks import build_controller
    from plants import load_task_file

    t0 = time.perf_counter()
    task = load_task_file(path)
    plant = task.plant
    x0 = task.x0 if yaw0 is None else task.state(
        {"cube": {"position": list(task.x0[:3]), "rpy": [0, 0, yaw0]}, "yaw": yaw0})
    ctrl = build_controller(plant, x0=x0)
    plans: list = []
    solve = ctrl.solve

    def recording(x):
        res = solve(x)
        plans.append((int(res.status), res.consensus_residual,
                      res.relative_complementarity_violation))
        return res

    ctrl.solve = recording
    log = run_in_simulator(plant, ctrl, task.simulator(x0), duration,
                           control_rate=task.control_rate)
    errors = task.goal_errors(log.x[-1])
    status = np.array([p[0] for p in plans])
    return {"errors": {k: float(v) for k, v in errors.items()},
            "success": bool(task.goal_reached(log.x[-1])), "plans": len(plans),
            "not_converged_plans": int(np.count_nonzero(status == 7)),
            "failed_plans": int(log.extras["failed_steps"]),
            "consensus_residual_median": float(np.nanmedian([p[1] for p in plans])),
            "relative_complementarity_median": float(np.median([p[2] for p in plans])),
            "planning_dt": float(plant.dt), "duration_s": duration,
            "wall_s": time.perf_counter() - t0}


def _cases(quick: bool) -> list[tuple[str, str, Path, str, float | None, float, float | None]]:
    """(robot, start, task file, planning, R, duration, yaw0)."""
    seeds = [1] if quick else [1, 2, 3, 4, 5]
    starts = [("nominal", 0.0)] + [
        (f"seed {s}", float(np.random.default_rng(s).uniform(-np.deg2rad(15),
                                                              np.deg2rad(15)))) for s in seeds]
    out = []
    for planning in ("", "{dt: 0.05}"):
        out += [("jaw_gripper_small", name, SMALL, planning, None, 1.5, yaw)
                for name, yaw in starts]
    out.append(("jaw_gripper_small", "nominal", SMALL, "{G: scaled}", None, 1.5, 0.0))
    for planning in ("", "{G: scaled}"):
        out.append(("pusher_box", "nominal", PUSHER, planning, None, 3.0, None))
        for R in (None, 1e-8):
            out.append(("pusher_box_large", "nominal", LARGE, planning, R, 8.0, None))
    return out


def _errors_text(errors: dict[str, float]) -> str:
    parts = []
    for k, v in errors.items():
        if k.endswith(".orientation"):
            parts.append(f"{k} {np.rad2deg(v):.2f}°")
        else:
            parts.append(f"{k} {1e3 * v:+.1f} mm")
    return ", ".join(parts)


def _row(r: dict) -> str:
    planning = r["planning"] + ("" if r["R"] is None else f", R {r['R']:g}")
    start = r["start"] + ("" if r["yaw0_deg"] is None else f" ({r['yaw0_deg']:+.1f}°)")
    return (f"| {r['robot']} | {planning} | {start} | {_errors_text(r['errors'])} | "
            f"{r['success']} | {r['not_converged_plans']} / {r['plans']} | "
            f"{r['consensus_residual_median']:.3f} | {r['relative_complementarity_median']:.3f} "
            f"| {r['wall_s']:.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = _report.argument_parser(__doc__, "one seeded start instead of five")
    args = parser.parse_args(argv)
    cases = _cases(args.quick)
    bar = _report.progress(len(cases), "scale", args.quiet, "runs")
    runs = []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for robot, start, path, planning, R, duration, yaw0 in cases:
            label = f"{robot} {start} {planning or 'defaults'}" + ("" if R is None else
                                                                   f" R={R:g}")
            _report.show(bar, label)
            file = _variant(path, Path(tmp), planning, R) if planning or R is not None else path
            run = _run(file, duration, yaw0)
            run.update(robot=robot, start=start, planning=planning or "defaults", R=R,
                       yaw0_deg=None if yaw0 is None else float(np.rad2deg(yaw0)))
            runs.append(run)
            _report.say(f"{label}: {_errors_text(run['errors'])}, success {run['success']}, "
                        f"{run['not_converged_plans']}/{run['plans']} NOT_CONVERGED", bar)
            bar.update(bar.done + 1)
    groups: dict[str, list[bool]] = {}
    for r in runs:
        R = "" if r["R"] is None else f", R {r['R']:g}"
        key = f"{r['robot']} ({r['planning']}{R})"
        groups.setdefault(key, []).append(r["success"])
    rates = {k: f"{sum(v)}/{len(v)}" for k, v in groups.items()}
    result = {"timestamp": _report.utc_timestamp(), "machine": _report.machine_info(),
              "runs": runs, "success": rates}
    start_marker, end_marker = _report.markers("bench_scale")
    rows = "\n".join(_row(r) for r in runs)
    m = result["machine"]
    md = (f"{start_marker}\n## Own robots at other scales: a hand-scale jaw gripper and a 10x "
          f"pusher-box (`benchmarks/bench_scale.py`)\n\n"
          f"{result['timestamp']}, {m['platform'].split('-')[0]} ({m['cpu_count']} CPUs, shared "
          f"with other jobs: times are noisy), Python {m['python']}. Each row one closed loop "
          f"of C3 (task file settings, MIQP, N = 10, re-planning at 1/dt with zero-order hold) "
          f"in SAP at 1 ms; `planning` is what the run changed in the task file. Success: the "
          f"task file's tolerances (hand-scale cube 2 mm and 0.05 rad; large box 0.2 m; "
          f"pusher-box 2 cm).\n\n"
          f"| robot | planning | start | final errors | success | NOT_CONVERGED / plans | "
          f"consensus residual (median) | relative complementarity violation (median) | "
          f"wall [s] |\n|---|---|---|---|---|---|---|---|---|\n{rows}\n\n"
          + "Success: " + ", ".join(f"{k} {v}" for k, v in rates.items())
          + ". See docs/c3.md, \"Scale-aware ADMM weights\" and docs/own-robot.md, \"Hand "
            "scale\".\n" + end_marker)
    _report.publish(result, md, "bench_scale", JSON_PATH)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
