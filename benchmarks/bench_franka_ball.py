"""Benchmark the Franka ball closed loop (issue 7): controller rate and tracking, in the loop.

Configurations (each one closed-loop run of ``c3mpc.tasks.franka_ball.run_franka_ball``: C3 /
Algorithm 3 on the simplified model, full Panda in ``plants.sim`` under the impedance law,
emulated 80 Hz vision; defaults of ``FrankaBallOptions``):

* 1 ball, circle, MIQP projection (paper: C3 ~73 Hz, N = 5, s = 2; in the 2 cm band "always");
* 1 ball with 1 mm vision noise (paper: ~75% in the band), on the wall clock and at a fixed
  4 ms latency (deterministic), both up to 130 s (the noisy lap takes ~95-104 s);
* 2 balls, line, MIQP (paper: ~40 Hz, task succeeds);
* 3 balls, line, Anitescu, convex "qp" projection (paper: ~100 Hz, succeeds) and MIQP
  projection (paper: ~30 Hz, "empirically too slow to stably complete the task").

The line task (docs/franka-ball.md, "Multi-ball"): the balls start in a row on x = 0.55 m and
the run is complete when every ball has advanced 0.1 m along +y while all are within 2 cm of
the line. Each multi-ball configuration is run twice (seeds 0 and 1; without vision noise the
runs differ only through the measured wall-clock planning latency).

Reported per run: ``controller_rate_hz`` (1 / median measured Algorithm 3 cycle: LCS, C3,
re-simulation), ``plans_per_simulated_second`` (how often it actually planned in the loop:
once per camera sample at most), C3's median solve time, band fraction, max error, task
completion. The paper's numbers are the peer (i7-11800H, Drake); ours are measured here, with
the machine in the JSON. The machine is shared (2 cores): rates move with its load.

Writes ``benchmarks/results/bench_franka_ball.json`` and the ``bench_franka_ball`` section of
``docs/BENCHMARKS.md`` (only that section is replaced).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_report.py
import _report  # noqa: E402
from c3mpc.tasks.franka_ball import FrankaBallOptions, run_franka_ball, summarize  # noqa: E402

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_franka_ball.json"
MD_PATH = ROOT / "docs" / "BENCHMARKS.md"
START, END = _report.markers("bench_franka_ball")

RUNS = [
    # name, options, paper rate [Hz], paper outcome
    ("1 ball, circle", dict(n_balls=1), 73.0, "always in the 2 cm band"),
    ("1 ball, 1 mm noise", dict(n_balls=1, noise_std=0.001, seed=1, duration=130.0), 73.0,
     "~75% in the band"),
    ("1 ball, 1 mm noise, fixed 4 ms latency",
     dict(n_balls=1, noise_std=0.001, seed=1, duration=130.0, planning_latency=0.004,
          min_command_delay=None), 73.0, "~75% in the band"),
    *[(f"2 balls, line (MIQP), seed {i}", dict(n_balls=2, seed=i), 40.0, "succeeds")
      for i in (0, 1)],
    *[(f"3 balls, line (qp), seed {i}", dict(n_balls=3, seed=i), 100.0, "succeeds")
      for i in (0, 1)],
    *[(f"3 balls, line (MIQP), seed {i}", dict(n_balls=3, projection="miqp", seed=i), 30.0,
       "too slow to complete stably") for i in (0, 1)],
]


def run_all(duration: float | None, quiet: bool = False) -> list[dict[str, Any]]:
    out = []
    bar = _report.progress(len(RUNS), "franka ball", quiet, "runs")
    for name, kw, paper_hz, paper_outcome in RUNS:
        o = FrankaBallOptions(**({**kw, "duration": duration} if duration else kw))
        _report.show(bar, f"franka ball: {name}")
        s = summarize(run_franka_ball(o))
        out.append({
            "name": name, "paper_rate_hz": paper_hz, "paper_outcome": paper_outcome,
            "projection": s["c3_options"]["projection"], "plant": s["plant"],
            "simulated_time_s": s["simulated_time_s"], "wall_time_s": s["wall_time_s"],
            "controller_rate_hz": s["controller_rate_hz"],
            "plans_per_simulated_second": s["plans_per_simulated_second"],
            "solve_time_median_s": s["solve_time_median_s"],
            "plan_time_p95_s": s["plan_time_p95_s"],
            "band_fraction": s["band_fraction"], "max_error_m": s["max_error_m"],
            "task_completed": s["task_completed"], "lap_angle_deg": s["lap_angle_deg"],
            "line_done_time_s": s["line_done_time_s"],
            "ball_advance_m": s["ball_advance_m"], "failed_plans": s["failed_plans"],
            "sim_error": s["sim_error"], "noise_std": o.noise_std,
            "returned_after_every_exit": s["returned_to_band_after_every_exit"],
            "tuning": o.resolved_tuning, "force_sensing": s["force_sensing"],
        })
        bar.update(bar.done + 1)
    return out


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        START,
        "## Franka ball closed loop (`benchmarks/bench_franka_ball.py`)",
        "",
        f"{result['timestamp']}, {m['processor']} ({m['cpus']} CPUs, shared), Python "
        f"{m['python']}; each row one closed-loop run (full Panda in `plants.sim`, C3 on the "
        f"simplified model, 80 Hz emulated vision), {result['duration_note']}. Peer: the "
        "paper's numbers (i7-11800H, Drake).",
        "",
        "| run | projection | controller rate [Hz] (paper) | plans / sim s | C3 median [ms] "
        "| in 2 cm band | max error [cm] | completed (paper) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        err = r["max_error_m"]
        err_s = f"{err * 100:.1f}" if err < 10.0 else "diverged"
        done = r["task_completed"]
        if done and r.get("line_done_time_s") is not None:
            done = f"True, {r['line_done_time_s']:.1f} s"
        if r.get("noise_std"):
            done = f"{done}; returned after every exit: {r['returned_after_every_exit']}"
        lines.append(
            f"| {r['name']} | {r['projection']} | {r['controller_rate_hz']:.0f} "
            f"({r['paper_rate_hz']:.0f}) | {r['plans_per_simulated_second']:.0f} | "
            f"{r['solve_time_median_s'] * 1e3:.1f} | {r['band_fraction'] * 100:.1f}% | "
            f"{err_s} | {done} ({r['paper_outcome']})"
            + (" — simulator stopped: SAP failure" if r["sim_error"] else "") + " |")
    lines += ["", "Controller rate = 1 / median Algorithm 3 cycle (LCS + C3 + re-simulation), "
              "measured in the loop; the loop plans at most once per camera sample. Completed: "
              "one lap (1 ball; a lap takes 53-61 s, longer than a 20 s run) or every ball "
              "0.1 m along +y while all are within 2 cm of the line x = 0.55 m (2-3 balls; "
              "the time is when that happened, the run stops then). With 1 mm noise the "
              "defaults are the noisy tuning with the force-sensed step 5 (4 ms command-delay "
              "floor; the fixed-latency row is deterministic), runs of at most 130 s, and the "
              "issue's criterion is >= 75% with a return after every exit. Full laps and the "
              "multi-ball diagnosis: docs/franka-ball.md.",
              END]
    return "\n".join(lines)


def write_markdown(section: str) -> None:
    """Insert or replace this benchmark's section of docs/BENCHMARKS.md."""
    _report.replace_section(section, "bench_franka_ball")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=None,
                    help="simulated seconds per run (default: the task's limit; 1 ball stops "
                    "after a lap)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--render", action="store_true", help="rewrite the markdown section from "
                    "the saved JSON without running")
    _report.add_quiet(ap)
    args = ap.parse_args(argv)
    if args.render:
        md = markdown(json.loads(JSON_PATH.read_text()))
        print(md)
        write_markdown(md)
        return 0
    result = {
        "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count()},
        "duration_note": (f"{args.duration:g} s simulated each" if args.duration else
                          "1 ball: until one lap (at most 60 s; with noise 130 s), line: at "
                          "most 30 s"),
        "runs": run_all(args.duration, args.quiet),
    }
    md = markdown(result)
    print(md)
    if not args.no_write:
        _report.publish(result, md, "bench_franka_ball", JSON_PATH)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
