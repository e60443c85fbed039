"""Benchmark the force-sensed deployment rehearsal with 1 mm camera noise (issue 21 item 5) by
seed: ``hardware.lockstep.run_lockstep`` (the twin, full Panda, and the deploy loop with the C3
planner on one simulated clock; deterministic), one lap of the true ball, share of the lap in
the 2 cm band.

Twin: 1 mm camera noise (seeded by ``TwinOptions.seed``), ``O_F_ext_hat_K`` with 1 N noise, the
eq.-36 controller with the tuning's gains. Deploy: C3 with the force-sensed step 5
(``c3: {tuning: ...}``), the same gains, the camera's constant-velocity Kalman filter with 1 mm
measurement noise and the tuning's process noise (``vision_accel_std`` of
``c3mpc.tasks.franka_ball.TUNINGS``: 0.3 m/s² vision, 0.02 noisy). Configurations:

* "vision, 4 ms": ``tuning: vision`` (nominal gait, K = 2000, ζ = 1, step-5 floor 8 ms; camera
  filter 0.3 m/s²), command delay and Δt_c 4 ms (``LockstepOptions``' defaults), the loop on
  its 100 Hz schedule;
* "vision, 8 ms" / "vision, 12 ms": the same with 8 / 12 ms command delay and Δt_c;
* "vision, ticks at detection, 4 ms" / "8 ms": the loop also ticks at each new detection
  (``DeployOptions.tick_on_detection``, so C3 plans at the detection as the simulated loop);
* "vision planner, camera filter 0.02 (noisy's), 4 ms": the vision tuning with the noisy
  tuning's camera filter (what the filter's process noise does here);
* "noisy, 4 ms": ``tuning: noisy`` (K = 3000, ζ = 0.7, step-5 floor 4 ms; filter 0.02 m/s²),
  the previous deploy configuration for 1 mm noise (~150 simulated s a run);
* "noisy, ticks at detection, 4 / 6 / 8 ms": the same ticking at each detection (~180 s);
* "noisy, 100 Hz ticks only, 8 ms": the comparison row for the ticks at 8 ms.

``--only PREFIX`` runs the configurations whose name starts with it (default "vision, "; the
saved rows of the others are kept), ``--seeds`` picks the seeds, ``--jobs N`` runs N at a time
(processes). Writes ``benchmarks/results/bench_lockstep_rehearsal.json`` and the
``bench_lockstep_rehearsal`` section of ``docs/BENCHMARKS.md``. The results are on the
simulated clock (a run repeated under another load differed by 2 ms of lap time,
docs/deployment.md); the wall time per run depends on the load (the machine is shared, 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_report.py
import _report  # noqa: E402

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_lockstep_rehearsal.json"
KEY = "bench_lockstep_rehearsal"
START, END = _report.markers(KEY)

# name, tuning, command delay = Δt_c [s], time limit [simulated s], camera filter's process
# noise [m/s²] (None: the tuning's), tick at each detection
RUNS: list[tuple[str, str, float, float, float | None, bool]] = [
    ("vision, 4 ms", "vision", 0.004, 60.0, None, False),
    ("vision, 8 ms", "vision", 0.008, 60.0, None, False),
    ("vision, 12 ms", "vision", 0.012, 60.0, None, False),
    ("vision, ticks at detection, 4 ms", "vision", 0.004, 60.0, None, True),
    ("vision, ticks at detection, 8 ms", "vision", 0.008, 60.0, None, True),
    ("vision planner, camera filter 0.02 (noisy's), 4 ms", "vision", 0.004, 60.0, 0.02, False),
    ("noisy, 4 ms", "noisy", 0.004, 150.0, None, False),
    ("noisy, ticks at detection, 4 ms", "noisy", 0.004, 180.0, None, True),
    ("noisy, ticks at detection, 6 ms", "noisy", 0.006, 180.0, None, True),
    ("noisy, ticks at detection, 8 ms", "noisy", 0.008, 180.0, None, True),
    ("noisy, 100 Hz ticks only, 8 ms", "noisy", 0.008, 150.0, None, False),
]


def _one(job: tuple[str, str, float, float, float | None, bool, int]) -> dict[str, Any]:
    from hardware.lockstep import LockstepOptions, rehearsal_options, run_lockstep

    name, tuning, latency, duration, accel_std, tick, seed = job
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    twin, deploy = rehearsal_options(seed, tuning=tuning, tick_on_detection=tick,
                                     kalman_accel_std=accel_std)
    log = run_lockstep(twin, deploy, LockstepOptions(duration=duration, command_delay=latency,
                                                     planning_latency=latency))
    return {
        "name": name, "tuning": tuning, "seed": seed, "latency_s": latency,
        "tick_on_detection": tick,
        "camera_accel_std": deploy.camera.kalman_accel_std,
        "duration_s": duration, "lap_time_s": log.lap_time,
        "lap_angle_deg": log.lap_angle_deg, "band_fraction": log.band_fraction,
        "max_radial_error_m": float(log.radial_error.max()),
        "interventions": log.interventions, "twin_rejections": len(log.twin_rejections),
        "plans": log.plans, "planner_failures": log.planner_failures,
        "exit_reason": log.exit_reason, "wall_time_s": time.perf_counter() - t0,
        "load_average_start": load0, "load_average_end": os.getloadavg()[0],
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        START,
        "## Force-sensed deployment rehearsal, 1 mm camera noise "
        "(`benchmarks/bench_lockstep_rehearsal.py`)",
        "",
        f"{result['timestamp']}, {result['machine']}. `hardware.lockstep.run_lockstep`: the "
        "twin (full Panda, 1 mm camera noise, `O_F_ext_hat_K` with 1 N noise) and `c3mpc "
        "deploy`'s loop (C3 with the force-sensed step 5, Kalman-filtered camera) on one "
        "simulated clock, one lap of the true ball; command delay = Δt_c = the milliseconds "
        "in the run's name. The machine was shared by other engineers' jobs: its load changes "
        "the wall time (and, by ~2 ms of lap time, the run: docs/deployment.md). Issue 21's "
        "criterion: >= 75% of the lap in the 2 cm band. The noisy rows with ticks at the "
        "detection come from the earlier `bench_franka_lockstep.py` (merged into this script; "
        "the source is in the JSON); n/r: not recorded by that run.",
        "",
        "| run | seed | lap [s] | in 2 cm band | max radial error [cm] | safety interventions "
        "| failed plans | wall [min] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        lap = (f"{r['lap_time_s']:.1f}" if r["lap_time_s"] is not None else
               f"not completed ({r['lap_angle_deg']:.0f}° in {r['duration_s']:.0f} s)")
        lines.append(
            f"| {r['name']} | {r['seed']} | {lap} | {r['band_fraction'] * 100:.1f}% "
            f"| {r['max_radial_error_m'] * 100:.1f} "
            f"| {'n/r' if r['interventions'] is None else r['interventions']} "
            f"| {r['planner_failures']} | {r['wall_time_s'] / 60:.1f} |")
    lines += ["", "Configurations and the diagnosis: docs/deployment.md, \"Force-sensed "
              "deployment (1 mm camera noise)\".", END]
    return "\n".join(lines)


def _save(runs: list[dict[str, Any]], quiet: bool, write: bool = True) -> dict[str, Any]:
    """``runs`` merged with the saved rows of the other runs; written when ``write``."""
    runs = list(runs)
    if JSON_PATH.exists():
        new = {(r["name"], r["seed"]) for r in runs}
        runs += [r for r in json.loads(JSON_PATH.read_text())["runs"]
                 if (r["name"], r["seed"]) not in new]
    order = [name for name, *_ in RUNS]
    runs.sort(key=lambda r: (order.index(r["name"]) if r["name"] in order else len(order),
                             r["seed"]))
    m = _report.machine_info()
    result = {"timestamp": _report.utc_timestamp(),
              "machine": f"{m['processor']} ({m['cpu_count']} CPUs, shared), Python "
                         f"{m['python']}",
              "machine_info": m, "runs": runs}
    if write:
        _report.publish(result, markdown(result), KEY, JSON_PATH, quiet=quiet)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="vision, ",
                    help="run only configurations whose name starts with this (default: "
                         "'vision, ': the vision tuning's latencies)")
    ap.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated seeds")
    ap.add_argument("--jobs", type=int, default=1, help="runs at a time (processes)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--render", action="store_true",
                    help="rewrite the markdown section from the saved JSON without running")
    ap.add_argument("--quiet", action="store_true", help="no progress line, no table on stdout")
    args = ap.parse_args(argv)
    if args.render:
        return _report.render_saved(markdown, KEY, JSON_PATH)
    seeds = [int(s) for s in args.seeds.split(",")]
    jobs = [(name, tuning, lat, dur, acc, tick, seed) for name, tuning, lat, dur, acc, tick
            in RUNS if name.startswith(args.only) for seed in seeds]
    runs: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max(1, args.jobs)) as ex:
        futures = [ex.submit(_one, job) for job in jobs]
        bar = _report.progress(len(futures), "lock-step rehearsal", args.quiet, "runs")
        for done, f in enumerate(as_completed(futures), 1):
            runs.append(f.result())
            bar.update(done)
            if not args.no_write:  # save each run as it ends (a run takes minutes)
                _save(runs, quiet=True)
        bar.close()
    result = _save(runs, quiet=args.quiet, write=not args.no_write)
    if not args.quiet or args.no_write:
        print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
