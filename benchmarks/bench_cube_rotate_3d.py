"""The quaternion cost on a 3-D contact task (issue 24): ``cube-rotate-3d`` with and without it.

A 1 m cube (free-flyer, unit-quaternion state) turned by two 3-D point fingers
(``plants/models/cube_rotate_3d.py``): on a table (default; 4 support points, μ = 0.1,
gravity) or floating (``table=False``, no gravity). C3 with the plant's defaults (MIQP,
N = 10, Δt = 50 ms, re-linearised every step, the plant's own LCS step as the closed loop),
3 s per run, under three costs on the quaternion block of Q:

* ``raw``: Q's raw-component block, 1000·I (what a cost on q does without the option);
* ``quat w=125``: the quaternion cost with the matched weight (w = c/8: the same small-angle
  curvature, ``plant.quaternion_weight``);
* ``quat w=500``: the quaternion cost, four times stiffer.

Goals: on the table 45° (default; also from the start's quaternion stored with the other
sign, -q0: the same orientation), 90° and 150° about +z; floating 45° about +z, 60° and
90° about (0, 1, 1)/√2; from the default start. Then 5 seeded starts (cube turned ±15° about
+z, fingers 0-2 cm off the faces and ±5 cm along them; goal 60° about +z) on the table and
floating, and 5 floating ones also tilted ±10° about y.
Angle error = 2 acos|⟨q, q_goal⟩| from the quaternions. Success: within 5° at the end and
over the last second.

Writes ``benchmarks/results/bench_cube_rotate_3d.json`` and the ``bench_cube_rotate_3d``
section of ``docs/BENCHMARKS.md`` (only that section is replaced).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report  # noqa: E402
from c3mpc import C3Options  # noqa: E402
from c3mpc.runner import run_closed_loop  # noqa: E402
from c3mpc.tasks import build_controller  # noqa: E402
from lcs.errors import LCPSolveError  # noqa: E402
from plants import load_plant  # noqa: E402
from plants.models.cube_rotate_3d import QUATERNION_INDEX as QI  # noqa: E402

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_cube_rotate_3d.json"
KEY = "bench_cube_rotate_3d"
START, END = _report.markers(KEY)
COSTS = (("raw", 0.0), ("quat w=125", 125.0), ("quat w=500", 500.0))
GOALS = (("table", "45° about z", (0, 0, 1), 45),
         ("table", "45° about z, start stored as -q0", (0, 0, 1), 45),
         ("table", "90° about z", (0, 0, 1), 90),
         ("table", "150° about z", (0, 0, 1), 150),
         ("floating", "45° about z", (0, 0, 1), 45),
         ("floating", "60° about (0,1,1)", (0, 1, 1), 60),
         ("floating", "90° about (0,1,1)", (0, 1, 1), 90))
SEEDS = (("table", "±15° yaw", False), ("floating", "±15° yaw", False),
         ("floating", "±15° yaw, ±10° pitch", True))


def _angle_deg(x: np.ndarray, qg: np.ndarray) -> float:
    q = x[QI:QI + 4] / np.linalg.norm(x[QI:QI + 4])
    return float(np.rad2deg(2.0 * np.arccos(min(1.0, abs(float(q @ qg))))))


def _rotz_quat(deg_z: float, deg_y: float = 0.0) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    return Rotation.from_euler("zy", [deg_z, deg_y], degrees=True).as_quat()


def run_one(plant: Any, weight: float, x0: np.ndarray, steps: int) -> dict[str, Any]:
    d = plant.defaults
    opts = C3Options(projection=d.projection, admm_iter=d.admm_iter, rho=d.rho,
                     rho_scale=d.rho_scale, quaternion_weight=weight,
                     quaternion_indices=plant.quaternion_indices if weight > 0 else ())
    ctrl = build_controller(plant, opts)
    t = time.perf_counter()
    try:
        log = run_closed_loop(plant, ctrl, x0, steps)
    except LCPSolveError as e:  # the plant's own LCS step could not be solved
        return {"final_error_deg": None, "max_error_last_1s_deg": None, "success": False,
                "first_within_5deg_s": None, "max_cube_offset_m": None, "failed_steps": None,
                "wall_s_per_step": None, "error": f"plant step: {e}"}
    wall = time.perf_counter() - t
    qg = plant.goal_quaternion
    err = np.array([_angle_deg(x, qg) for x in log.x])
    last = int(round(1.0 / plant.dt))
    within = np.nonzero(err <= 5.0)[0]
    return {"final_error_deg": float(err[-1]), "max_error_last_1s_deg": float(err[-last:].max()),
            "success": bool(err[-last:].max() <= 5.0),
            "first_within_5deg_s": float(within[0] * plant.dt) if within.size else None,
            "max_cube_offset_m": float(np.abs(log.x[:, :3] - x0[:3]).max()),
            "failed_steps": int(log.extras["failed_steps"]), "wall_s_per_step": wall / steps}


def seeded_starts(plant: Any, tilt: bool, n: int = 5) -> list[np.ndarray]:
    rng = np.random.default_rng(24 + int(tilt))
    out = []
    for _ in range(n):
        x0 = plant.defaults.x0.copy()
        x0[QI:QI + 4] = _rotz_quat(rng.uniform(-15, 15), rng.uniform(-10, 10) if tilt else 0.0)
        x0[7] -= rng.uniform(0, 0.02)
        x0[10] += rng.uniform(0, 0.02)
        x0[[8, 9, 11, 12]] += rng.uniform(-0.05, 0.05, size=4)
        out.append(x0)
    return out


def run_all(duration: float, quiet: bool = False) -> dict[str, Any]:
    rows, seeds = [], []
    bar = _report.progress(len(GOALS) * len(COSTS) + len(SEEDS) * len(COSTS), "cube-rotate-3d",
                           quiet, unit="runs")
    done = 0
    for scene, gname, axis, deg in GOALS:
        plant = load_plant("cube-rotate-3d", table=scene == "table", goal_axis=axis,
                           goal_angle=np.deg2rad(deg))
        steps = int(round(duration / plant.dt))
        for cname, w in COSTS:
            _report.show(bar, f"{scene}, {gname}, {cname}")
            x0 = plant.defaults.x0.copy()
            if "-q0" in gname:  # the same orientation, the quaternion's other sign
                x0[QI:QI + 4] *= -1.0
            rows.append({"scene": scene, "goal": gname, "cost": cname, "weight": w,
                         **run_one(plant, w, x0, steps)})
            done += 1
            bar.update(done)
    for scene, sname, tilt in SEEDS:
        plant = load_plant("cube-rotate-3d", table=scene == "table", goal_angle=np.pi / 3)
        steps = int(round(duration / plant.dt))
        starts = seeded_starts(plant, tilt)
        for cname, w in COSTS:
            _report.show(bar, f"{scene}, seeded starts {sname}, {cname}")
            runs = [run_one(plant, w, x0, steps) for x0 in starts]
            seeds.append({"scene": scene, "starts": sname, "cost": cname, "weight": w,
                          "successes": sum(r["success"] for r in runs), "n": len(runs),
                          "final_errors_deg": [r["final_error_deg"] for r in runs]})
            done += 1
            bar.update(done)
    return {"rows": rows, "seeds": seeds}


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        START,
        "## Quaternion cost on a 3-D contact task (`benchmarks/bench_cube_rotate_3d.py`)",
        "",
        f"{result['timestamp']}, {m['processor']} ({m['cpu_count']} CPUs, shared with other "
        f"jobs: times are noisy), Python {m['python']}. `cube-rotate-3d` (a cube turned by two "
        f"3-D point fingers; table: on a table, μ = 0.1, gravity; floating: `table=False`, "
        f"no gravity), C3 with the plant's defaults (MIQP, N = 10, Δt = 50 ms), "
        f"{result['duration_s']:g} s per run from the default start. raw: Q's "
        "raw-component block 1000·I; quat: `quaternion_weight` w (w = 125 has the raw "
        "block's small-angle curvature). Angle error 2 acos|⟨q, q_goal⟩|; success: ≤ 5° over "
        "the last second.",
        "",
        "| scene | goal | cost | success | final error [°] | first ≤ 5° [s] "
        "| max cube offset [cm] | failed solves | wall / step [ms] |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        if r.get("error"):
            lines.append(f"| {r['scene']} | {r['goal']} | {r['cost']} | False | — | — | — | — "
                         f"| {r['error']} |")
            continue
        first = "—" if r["first_within_5deg_s"] is None else f"{r['first_within_5deg_s']:.2f}"
        lines.append(f"| {r['scene']} | {r['goal']} | {r['cost']} | {r['success']} | "
                     f"{r['final_error_deg']:.2f} | {first} | "
                     f"{r['max_cube_offset_m'] * 100:.1f} | {r['failed_steps']} | "
                     f"{r['wall_s_per_step'] * 1e3:.0f} |")
    lines += ["", "Seeded starts (goal 60° about z; fingers 0-2 cm off the faces, ±5 cm along "
              "them):", "", "| scene | starts | cost | successes | final errors [°] |",
              "|---|---|---|---|---|"]
    for s in result["seeds"]:
        errs = ", ".join("LCP failed" if e is None else f"{e:.1f}"
                         for e in s["final_errors_deg"])
        lines.append(f"| {s['scene']} | {s['starts']} | {s['cost']} | "
                     f"{s['successes']}/{s['n']} | {errs} |")
    lines += ["", "Analysis: docs/c3.md, \"Quaternion costs\".", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = _report.argument_parser(__doc__, "1 s per run instead of 4 (a smoke run)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    duration = 1.0 if args.quick else 3.0
    result = {"timestamp": _report.utc_timestamp(), "machine": _report.machine_info(),
              "duration_s": duration, **run_all(duration, args.quiet)}
    md = markdown(result)
    print(md)
    if not (args.no_write or args.quick):
        _report.publish(result, md, KEY, JSON_PATH)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
