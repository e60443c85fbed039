"""Benchmark one Algorithm 3 planning cycle of the Franka ball loop (issue 23): the wall and
CPU time of ``Algorithm3Planner.plan`` (step 2 the LCS, step 3 C3 with N = 5, step 5 the
re-simulation) and of its parts, on the states a real lap visits.

States: a closed-loop run of the default one-ball task (full Panda, fixed 8 ms latency,
``--record`` simulated seconds) records every plan's x̂ and time; a fresh planner then replans
them all ``--repeat`` times. Reported per cycle: wall time (what the loop's latency is) and
the thread's CPU time (what the machine's load does not change: on the shared 2-core machine
the wall time is the CPU time times the number of runnable jobs per core, roughly), median and
95th percentile; and the CPU time of each part.

``--tree PATH`` times another checkout (e.g. the code before a change, unpacked with
``git archive``) in a subprocess, for a before/after comparison in the same conditions. Writes
``benchmarks/results/bench_franka_cycle.json`` and the ``bench_franka_cycle`` section of
``docs/BENCHMARKS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# the code timed: this checkout, or in a ``--tree`` child the other checkout (first on the path)
CODE = Path(sys.argv[sys.argv.index("--_root") + 1]).resolve() if "--_root" in sys.argv else ROOT
sys.path.insert(0, str(CODE))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_report.py
import _report  # noqa: E402

sys.path.insert(0, str(CODE))  # _report puts this checkout first; CODE goes before it

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_franka_cycle.json"
START, END = _report.markers("bench_franka_cycle")


def record_states(seconds: float) -> list[tuple[list[float], float]]:
    """(x̂, t) of every plan of a closed-loop run of ``seconds`` simulated seconds."""
    from c3mpc.tasks.franka_ball import preset_options, run_franka_ball

    states: list[tuple[list[float], float]] = []
    o = preset_options("default", planning_latency=0.008, duration=seconds)
    run_franka_ball(o, on_plan=lambda t, plan, frame: states.append(
        (plan.plan_x[0].tolist(), float(t))))
    return states


def time_cycles(states: list[tuple[list[float], float]], repeat: int) -> dict[str, Any]:
    """Wall and CPU time per ``plan`` call and CPU time per part (this interpreter's code)."""
    import numpy as np
    from plants import load_plant

    from c3mpc.tasks.franka_ball import build_planner, preset_options

    o = preset_options("default")
    plant = load_plant(o.plant_name)
    planner, _ = build_planner(plant, o)
    planner.plan(np.asarray(states[0][0]), 0.0)  # warm-up (kernels compiled)
    wall, cpu = [], []
    for _ in range(repeat):
        planner.u_prev = np.zeros(plant.n_u)
        for x, t in states:
            x = np.asarray(x)
            w0, c0 = time.perf_counter(), time.thread_time()
            planner.plan(x, t)
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - w0)
    # the parts, by hand, on the same states (CPU time)
    parts: dict[str, list[float]] = {"step 2: LCS": [], "step 3: C3 update": [],
                                     "step 3: C3 solve": [], "step 5: LCS + step": []}
    ctrl = planner.controllers[0]
    u_prev = np.zeros(plant.n_u)
    for x, t in states:
        x = np.asarray(x)
        c0 = time.thread_time()
        lcs = plant.lcs(x, u_prev)
        c1 = time.thread_time()
        ctrl.update_lcs(lcs)
        ctrl.update_target(planner.target(x, t).x_goal)
        c2 = time.thread_time()
        res = ctrl.solve(x)
        c3 = time.thread_time()
        u = np.asarray(res.u[0])
        plant.lcs(x, u, dt=0.0205).step(x, u)
        c4 = time.thread_time()
        u_prev = u
        for k, v in zip(parts, (c1 - c0, c2 - c1, c3 - c2, c4 - c3)):
            parts[k].append(v)

    def stats(v: list[float]) -> dict[str, float]:
        a = np.asarray(v) * 1e3
        return {"median_ms": float(np.median(a)), "p95_ms": float(np.percentile(a, 95))}

    return {"cycles": len(wall), "wall": stats(wall), "cpu": stats(cpu),
            "parts_cpu": {k: stats(v) for k, v in parts.items()}}


def _time_tree(tree: str, states_file: str, repeat: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--_child",
                          states_file, "--repeat", str(repeat), "--_root", tree], env=env,
                         check=True,
                         capture_output=True, text=True, cwd=tree)
    return json.loads(out.stdout.strip().splitlines()[-1])


def markdown(result: dict[str, Any]) -> str:
    lines = [
        START,
        "## Franka ball: one Algorithm 3 cycle (`benchmarks/bench_franka_cycle.py`)",
        "",
        f"{result['timestamp']}, {result['machine']}; {result['n_states']} states of a "
        f"{result['record_s']:g} s closed-loop lap (default one-ball task, fixed 8 ms latency), "
        f"each replanned {result['repeat']} times by a fresh `Algorithm3Planner` (C3 N = 5, "
        "MIQP projection, 4 ADMM iterations). Wall = what the loop's latency is; CPU = the "
        "thread's CPU time. The machine was shared by other engineers' jobs: load average "
        f"{result['load_start']:.1f} at the start, {result['load_end']:.1f} at the end, so the "
        "wall times are noisy (about the CPU time times the jobs per core); the before/after "
        "rows ran back to back.",
        "",
        "| code | wall median [ms] | wall p95 [ms] | CPU median [ms] | CPU p95 [ms] |",
        "|---|---|---|---|---|",
    ]
    for name, r in result["runs"].items():
        lines.append(f"| {name} | {r['wall']['median_ms']:.2f} | {r['wall']['p95_ms']:.2f} "
                     f"| {r['cpu']['median_ms']:.2f} | {r['cpu']['p95_ms']:.2f} |")
    lines += ["", "CPU time per part (median [ms]):", "",
              "| code | " + " | ".join(next(iter(result["runs"].values()))["parts_cpu"]) + " |",
              "|---|" + "---|" * len(next(iter(result["runs"].values()))["parts_cpu"])]
    for name, r in result["runs"].items():
        lines.append(f"| {name} | " + " | ".join(f"{v['median_ms']:.2f}"
                                                 for v in r["parts_cpu"].values()) + " |")
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--record", type=float, default=3.0, help="simulated seconds recorded")
    ap.add_argument("--repeat", type=int, default=3, help="replans of every state")
    ap.add_argument("--tree", action="append", default=[],
                    help="NAME=PATH: also time the checkout at PATH (e.g. the code before)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--quiet", action="store_true", help="no table on stdout")
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--_root", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child is not None:  # time the code at CODE on saved states
        import c3mpc

        assert Path(c3mpc.__file__).resolve().is_relative_to(CODE), c3mpc.__file__
        print(json.dumps(time_cycles(json.loads(Path(args._child).read_text()), args.repeat)))
        return 0
    load0 = os.getloadavg()[0]
    states = record_states(args.record)
    states_file = ROOT / "benchmarks" / "results" / "_franka_cycle_states.json"
    states_file.write_text(json.dumps(states))
    runs: dict[str, Any] = {}
    try:
        for spec in _report.track([*args.tree, None], "franka cycle", args.quiet, "checkouts"):
            if spec is None:
                runs["this tree"] = time_cycles(states, args.repeat)
            else:
                name, _, path = spec.partition("=")
                runs[name] = _time_tree(path, str(states_file), args.repeat)
    finally:
        states_file.unlink()
    m = _report.machine_info()
    result = {"timestamp": _report.utc_timestamp(), "record_s": args.record,
              "repeat": args.repeat, "n_states": len(states),
              "machine": f"{m['processor']} ({m['cpu_count']} CPUs, shared), Python "
                         f"{m['python']}", "machine_info": m, "load_start": load0,
              "load_end": os.getloadavg()[0], "runs": runs}
    md = markdown(result)
    if not args.quiet or args.no_write:
        print(md)
    if not args.no_write:
        _report.publish(result, md, "bench_franka_cycle", JSON_PATH)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
