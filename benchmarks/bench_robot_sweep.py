"""Robots we did not write, through the own-robot path, every solver at its defaults (issue 19).

The robots and the path are those of ``tests/test_robot_sweep.py`` (its ``load``: a fixed-base
arm through a task file with a ground plane, a legged robot through a task file with
``floating_base: true``). Per robot: n_q, n_v, the scene's joint limits and geometries, the LCS's
A/B errors against central finite differences of forward dynamics. Per (robot, solver), 1 s
under gravity at δt = 1 ms: completion, non-converged steps, the largest joint-limit violation and
its near-rigid bound (max |v| δt / 2π, at least 1e-3 rad), ms per step (after an untimed warm-up
step, so numba compilation is not counted).

Writes ``benchmarks/results/bench_robot_sweep.json`` and the ``bench_robot_sweep`` section of
``docs/BENCHMARKS.md``. ``--quick``: the light robots, SAP only, no markdown.
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests", Path(__file__).resolve().parent):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
import _report  # noqa: E402
from plants.sim import Simulator  # noqa: E402
from test_robot_sweep import ARMS, LEGGED, SOLVERS, lcs_finite_difference_errors, limit_violation, load  # noqa: E402

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_robot_sweep.json"
KEY = "bench_robot_sweep"
DURATION = 1.0
QUICK = ("double_pendulum", "finger_edu", "z1", "solo12", "go2")


def run_robot(name: str, solvers) -> dict:
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as tmp:
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        plant, scene = load(name, Path(tmp))
        load_s = time.perf_counter() - t0
        err_A, err_B = lcs_finite_difference_errors(plant)
        out = {"n_q": plant.n_q, "n_v": plant.n_v, "n_u": plant.n_u, "limits": len(scene.limits),
               "geometries": len(scene.geometries), "lcs_A_rel_err": err_A, "lcs_B_rel_err": err_B,
               "load_s": load_s, "runs": {}}
        for solver in solvers:
            Simulator(scene, solver=solver, dt=1e-3).run(1e-3)  # untimed warm-up (compilation)
            sim = Simulator(scene, solver=solver, dt=1e-3)
            t0 = time.perf_counter()
            try:
                traj = sim.run(DURATION)
            except Exception as err:  # noqa: BLE001 - a benchmark records what a user would see
                out["runs"][solver] = {"complete": False, "error": f"{type(err).__name__}: {err}"[:300]}
                continue
            wall = time.perf_counter() - t0
            viol, bound = limit_violation(scene, traj)
            out["runs"][solver] = {"complete": True, "finite": bool(np.isfinite(traj.q).all()),
                                   "steps": traj.n_steps, "non_converged": int(np.count_nonzero(traj.stats["status"])),
                                   "limit_violation": viol, "limit_bound": bound,
                                   "ms_per_step": 1e3 * wall / traj.n_steps}
    return out


def markdown(result: dict) -> str:
    start, end = _report.markers(KEY)
    m = result["machine"]
    solvers = result["solvers"]
    lines = [start, "## Robots we did not write, every solver (`benchmarks/bench_robot_sweep.py`)", "",
             f"Run {result['timestamp']} on {m['processor']} ({m['cpu_count']} cores, shared with other "
             f"engineers' jobs: load average {', '.join(f'{x:.1f}' for x in m['load_avg'])}; times are noisy). "
             "example-robot-data robots no other test uses, default options, 1 s under gravity at δt = 1 ms "
             "(arms fixed 30 cm above a ground plane through a task file; legged robots dropped with a "
             "floating base). LCS: largest relative error of A / B against central differences of forward "
             "dynamics at a random state. Cells: non-converged steps / 1000 (advanced on the best iterate), "
             "the largest joint-limit violation [rad] (≤ its near-rigid bound max |v| δt/2π, at least 1e-3, in "
             "every cell), ms per step.", "",
             "| robot | n_q / n_v, limits, geometries | LCS A / B | " + " | ".join(solvers) + " |",
             "|---|---|---|" + "---|" * len(solvers)]
    for name, r in result["robots"].items():
        cells = []
        for s in solvers:
            run = r["runs"][s]
            if not run["complete"]:
                cells.append(f"**{run['error'].split(':')[0]}**")
                continue
            nc = f"{run['non_converged']}/{run['steps']}, " if run["non_converged"] else ""
            cells.append(f"{nc}{max(run['limit_violation'], 0.0):.1e}, {run['ms_per_step']:.1f} ms")
        lines.append(f"| {name} | {r['n_q']} / {r['n_v']}, {r['limits']}, {r['geometries']} | "
                     f"{r['lcs_A_rel_err']:.0e} / {r['lcs_B_rel_err']:.0e} | " + " | ".join(cells) + " |")
    lines += ["", end]
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = _report.argument_parser(__doc__, "the light robots, SAP only, no markdown")
    parser.add_argument("--robots", nargs="*", default=None, help="subset of robots")
    parser.add_argument("--solvers", nargs="*", default=list(SOLVERS), help="subset of solvers")
    args = parser.parse_args(argv)
    robots = args.robots or (QUICK if args.quick else [*ARMS, *LEGGED])
    solvers = ["sap"] if args.quick else args.solvers
    result = {"timestamp": _report.utc_timestamp(), "machine": _report.machine_info(), "solvers": solvers,
              "duration_s": DURATION, "robots": {}}
    for name in _report.track(robots, "robot sweep", args.quiet, "robots"):
        r = result["robots"][name] = run_robot(name, solvers)
        _report.say(f"{name}: " + ", ".join(
            f"{s} {v.get('non_converged', 'F')} nc, viol {v.get('limit_violation', 0):.1e}"
            for s, v in r["runs"].items()))
    if args.quick or args.robots:
        return result
    _report.publish(result, markdown(result), KEY, JSON_PATH)
    return result


if __name__ == "__main__":
    main()
