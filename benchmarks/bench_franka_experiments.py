"""Franka ball experiments of seed 003 §VII-C/D beyond the single lap: time-based trajectories
(Figs. 16, 18), several laps in a row, and robustness to model error and pushes.

Every run is ``c3mpc run franka-ball`` in-process with a fixed simulated planning latency of
4 ms (8 ms in ``trajectories_8ms``; ``planning_latency``, so each number is deterministic and
independent of the machine's load; the machine's wall time is reported but the machine was
shared):

* ``trajectories``: each shape of :mod:`c3mpc.tasks.ball_trajectories` for one traversal of
  x_d at the default options; the error is |x_d(t) − x_b(t)| (Fig. 18);
* ``trajectories_8ms``: the same at a fixed 8 ms planning latency;
* ``laps``: the state-based circle for ``--laps`` laps in a row (per-lap time, band share);
* ``robustness``: the state-based circle for 30 s (two thirds of a lap) under each model error of
  :class:`c3mpc.tasks.franka_robustness.RobustnessOptions` and under pushes (recovery time).

Writes ``benchmarks/results/bench_franka_experiments_<part>.json`` per part, the tracking-error
figure ``docs/figures/franka_trajectories.png`` and a section of docs/BENCHMARKS.md rendered from
all parts present (parts can run in parallel processes).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _report  # noqa: E402
from c3mpc.tasks.ball_trajectories import TRAJECTORY_SHAPES, TrajectoryOptions  # noqa: E402
from c3mpc.tasks.franka_ball import FrankaBallOptions, run_franka_ball, summarize  # noqa: E402
from c3mpc.tasks.franka_robustness import RobustnessOptions  # noqa: E402

KEY = "bench_franka_experiments"
PARTS = ("trajectories", "trajectories_8ms", "laps", "robustness")
LATENCY = 0.004
TRAJECTORY_LATENCY = {"trajectories": LATENCY, "trajectories_8ms": 0.008}
FIGURE = ROOT / "docs" / "figures" / "franka_trajectories.png"
ROBUSTNESS_DURATION = 30.0
PUSH_TIME = 10.0

ROBUSTNESS_CASES: dict[str, RobustnessOptions | None] = {
    "nominal": None,
    "slant 0.25° towards +y": RobustnessOptions(table_slant_deg=0.25),
    "slant 0.5° towards +y": RobustnessOptions(table_slant_deg=0.5),
    "slant 1° towards +y": RobustnessOptions(table_slant_deg=1.0),
    "slant 2° towards +y": RobustnessOptions(table_slant_deg=2.0),
    "slant 1° towards +x": RobustnessOptions(table_slant_deg=1.0, slant_direction_deg=0.0),
    "friction 0.5": RobustnessOptions(friction=0.5),
    "friction 0.3": RobustnessOptions(friction=0.3),
    "ball mass ×1.5": RobustnessOptions(ball_mass_scale=1.5),
    "ball mass ×0.67": RobustnessOptions(ball_mass_scale=2 / 3),
    "ball radius ×1.1": RobustnessOptions(ball_radius_scale=1.1),
    "ball radius ×0.9": RobustnessOptions(ball_radius_scale=0.9),
    "push 0.0066 N·s +x (50 mm/s)": RobustnessOptions(push_times=(PUSH_TIME,),
                                                     push_impulse=(0.0066, 0.0)),
    "push 0.0066 N·s −y (50 mm/s)": RobustnessOptions(push_times=(PUSH_TIME,),
                                                     push_impulse=(0.0, -0.0066)),
    "push 0.0132 N·s +x (100 mm/s)": RobustnessOptions(push_times=(PUSH_TIME,),
                                                      push_impulse=(0.0132, 0.0)),
}
"""The robustness runs (the model: level table, μ = 1, 0.132 kg, r = 3.15 cm). A 50 mm/s push
is about five times the ball's rolling speed in a lap."""


def _run(o: FrankaBallOptions) -> tuple[dict[str, Any], Any]:
    t0 = time.perf_counter()
    log = run_franka_ball(o)
    s = summarize(log)
    keep = ("simulated_time_s", "band_fraction", "max_error_m", "mean_error_m", "final_error_m",
            "lap_completed", "lap_time_s", "lap_angle_deg", "task_completed", "sim_error",
            "laps", "pushes", "trajectory", "n_plans", "failed_plans",
            "returned_to_band_after_every_exit", "excursions")
    row = {k: s.get(k) for k in keep}
    row["wall_s"] = time.perf_counter() - t0
    return row, log


def run_trajectories(quick: bool, quiet: bool, cases: list[str] | None,
                     latency: float = LATENCY) -> dict[str, Any]:
    rows = {}
    series = {}
    shapes = [s for s in TRAJECTORY_SHAPES if cases is None or s in cases]
    for shape in _report.track(shapes, "trajectories", quiet, "shapes"):
        o = FrankaBallOptions(trajectory=TrajectoryOptions(shape=shape), planning_latency=latency,
                              duration=10.0 if quick else None)
        row, log = _run(o)
        rows[shape] = row
        every = max(1, int(round(0.1 / (log.t[1] - log.t[0]))))
        series[shape] = {"t": np.round(log.t[::every], 3).tolist(),  # 0.1 s, 0.01 mm
                         "error": np.round(log.error[::every], 5).tolist(),
                         "ball": np.round(log.balls[::every, 0, :2], 5).tolist(),
                         "x_d": np.round(log.ball_targets[::every, 0], 5).tolist()}
        _report.say(f"  {shape}: {row['band_fraction'] * 100:.1f}% in the band, max "
                    f"{row['max_error_m'] * 100:.2f} cm ({row['simulated_time_s']:.0f} s, "
                    f"{row['wall_s']:.0f} s wall)")
    return {"rows": rows, "series": series}


def run_laps(laps: int, quick: bool, quiet: bool) -> dict[str, Any]:
    o = FrankaBallOptions(laps=1 if quick else laps, planning_latency=LATENCY,
                          duration=10.0 if quick else None)
    row, _ = _run(o)
    _report.say(f"  {laps} laps: {[round(lap['time_s'], 1) for lap in row['laps'] or []]} s, "
                f"band {[round(lap['band_fraction'], 3) for lap in row['laps'] or []]}")
    return {"laps_requested": laps, "row": row}


def run_robustness(quick: bool, quiet: bool, cases: list[str] | None) -> dict[str, Any]:
    rows = {}
    names = [n for n in ROBUSTNESS_CASES if cases is None or n in cases]
    for name in _report.track(names, "robustness", quiet, "runs"):
        r = ROBUSTNESS_CASES[name]
        o = FrankaBallOptions(robustness=r, planning_latency=LATENCY, stop_after_lap=False,
                              duration=12.0 if quick else ROBUSTNESS_DURATION)
        row, _ = _run(o)
        rows[name] = row
        _report.say(f"  {name}: {row['band_fraction'] * 100:.1f}% in the band, max "
                    f"{row['max_error_m'] * 100:.2f} cm, {row['lap_angle_deg']:.0f}° of the lap")
    return {"rows": rows, "duration_s": ROBUSTNESS_DURATION, "push_time_s": PUSH_TIME}


def _figure(traj: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = traj["series"]
    fig, axes = plt.subplots(2, len(series), figsize=(3.4 * len(series), 6.4), squeeze=False)
    for j, (shape, d) in enumerate(series.items()):
        ax = axes[0, j]
        xd, b = np.asarray(d["x_d"]), np.asarray(d["ball"])
        ax.plot(xd[:, 0], xd[:, 1], "b--", lw=1, label="x_d(t)")
        ax.plot(b[:, 0], b[:, 1], "k", lw=1, label="ball")
        ax.set_aspect("equal")
        ax.set_title(shape)
        ax.set_xlabel("x [m]")
        if j == 0:
            ax.set_ylabel("y [m]")
            ax.legend(fontsize=7)
        ax = axes[1, j]
        ax.plot(d["t"], np.asarray(d["error"]) * 100, "k", lw=1)
        ax.axhline(2.0, color="r", ls="--", lw=1)
        row = traj["rows"][shape]
        ax.set_title(f"{row['band_fraction'] * 100:.1f}% in the 2 cm band", fontsize=9)
        ax.set_xlabel("t [s]")
        if j == 0:
            ax.set_ylabel("|x_d(t) − x_b(t)| [cm]")
    fig.suptitle("Time-based trajectories (simulated Panda, fixed 4 ms latency); cf. seed 003 "
                 "Figs. 16, 18")
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=80)
    plt.close(fig)


def _fmt_rec(p: dict[str, Any]) -> str:
    if not p["left_band"]:
        return "stayed in"
    return "not back" if p["recovery_time_s"] is None else f"{p['recovery_time_s']:.1f} s"


def render(parts: dict[str, dict[str, Any]]) -> str:
    start, end = _report.markers(KEY)
    lines = [start, "## Franka ball: time-based trajectories, laps, robustness "
             "(`benchmarks/bench_franka_experiments.py`)", ""]
    lines.append("Seed 003 §VII-C/D in simulation (full Panda, SAP, emulated 80 Hz vision, no "
                 "noise), every run at a fixed simulated planning latency of 4 ms (unless stated) "
                 "(deterministic; the shared machine's load does not change the numbers, only "
                 "the wall time). Options and definitions: docs/franka-ball.md, \"Time-based "
                 "trajectories\", \"Several laps\", \"Robustness\".")
    if "trajectories" in parts:
        d = parts["trajectories"]
        lines += ["", "### Time-based trajectories (Figs. 16, 18)", "",
                  "One traversal of x_d at the defaults (`c3mpc run franka-ball --trajectory "
                  "SHAPE --set planning_latency=0.004`); error = |x_d(t) − x_b(t)|. "
                  f"Run {d['timestamp']}, load average {d['machine']['load_avg'][0]:.1f} on "
                  f"{d['machine']['cpu_count']} cores.", "",
                  "| shape | path length [m] | period [s] | speed [mm/s] | simulated [s] | in 2 cm "
                  "band | max error [cm] | mean error [cm] | wall [s] |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for shape, r in d["result"]["rows"].items():
            tr = r["trajectory"]
            lines.append(f"| {shape} | {tr['length_m']:.3f} | {tr['period_s']:g} | "
                         f"{tr['speed_m_per_s'] * 1e3:.1f} | {r['simulated_time_s']:.1f} | "
                         f"**{r['band_fraction'] * 100:.1f}%** | {r['max_error_m'] * 100:.2f} | "
                         f"{r['mean_error_m'] * 100:.2f} | {r['wall_s']:.0f} |")
        if "trajectories_8ms" in parts:
            d8 = parts["trajectories_8ms"]
            lines += ["", f"The same at a fixed 8 ms latency (`--set planning_latency=0.008`; run "
                      f"{d8['timestamp']}, load average {d8['machine']['load_avg'][0]:.1f}):", "",
                      "| shape | in 2 cm band | max error [cm] | mean error [cm] | wall [s] |",
                      "|---|---|---|---|---|"]
            for shape, r in d8["result"]["rows"].items():
                lines.append(f"| {shape} | **{r['band_fraction'] * 100:.1f}%** | "
                             f"{r['max_error_m'] * 100:.2f} | {r['mean_error_m'] * 100:.2f} | "
                             f"{r['wall_s']:.0f} |")
        lines += ["", "![tracking errors](figures/franka_trajectories.png)"]
    if "laps" in parts:
        d = parts["laps"]
        r = d["result"]["row"]
        lines += ["", "### Several laps in a row (state-based circle)", "",
                  f"`c3mpc run franka-ball --laps {d['result']['laps_requested']} --set "
                  f"planning_latency=0.004`; run {d['timestamp']}.", "",
                  "| lap | time [s] | in 2 cm band | max error [cm] | mean error [cm] |",
                  "|---|---|---|---|---|"]
        for lap in r["laps"] or []:
            lines.append(f"| {lap['lap'] + 1} | {lap['time_s']:.1f} | "
                         f"{lap['band_fraction'] * 100:.1f}% | {lap['max_error_m'] * 100:.2f} | "
                         f"{lap['mean_error_m'] * 100:.2f} |")
        lines.append(f"\nWhole run: {r['simulated_time_s']:.1f} s simulated, "
                     f"{r['band_fraction'] * 100:.1f}% in the band, "
                     f"{r['lap_angle_deg']:.0f}° in all.")
    if "robustness" in parts:
        d = parts["robustness"]
        res = d["result"]
        lines += ["", "### Robustness: model error and pushes (state-based circle)", "",
                  f"C3 plans with the level-table, μ = 1, 0.132 kg, r = 3.15 cm model; the "
                  f"simulated world differs as listed (`--set robustness.FIELD=VALUE`). Each run "
                  f"{res['duration_s']:g} s from the standard start (two thirds of a lap "
                  f"nominal); pushes at t = {res['push_time_s']:g} s on the ball's centre. "
                  f"Recovery: time from "
                  f"the push until the ball is back in the band for good within the run. Run "
                  f"{d['timestamp']}, load average {d['machine']['load_avg'][0]:.1f}.", "",
                  "| world vs model | in 2 cm band | max error [cm] | lap progress [°] | "
                  "after the push: max error [cm], recovery |",
                  "|---|---|---|---|---|"]
        for name, r in res["rows"].items():
            push = ""
            if r.get("pushes"):
                p = r["pushes"][0]
                push = f"{p['max_error_m'] * 100:.2f}, {_fmt_rec(p)}"
            err = f" (simulator stopped: {r['sim_error']})" if r.get("sim_error") else ""
            if abs(r["lap_angle_deg"]) < 1.0 and r["max_error_m"] < 1e-3:
                err += " (the ball never moved: not touched)"
            elif abs(r["lap_angle_deg"]) < 10.0:  # in the band only because it stayed put
                err += f" (the ball stalled: {r['lap_angle_deg']:.0f}° in the run)"
            big = r["max_error_m"] > 0.5  # the ball rolled away over the (infinite) table
            mx = f"{r['max_error_m']:.0f} m: rolled away" if big else \
                f"{r['max_error_m'] * 100:.2f}"
            lines.append(f"| {name} | {r['band_fraction'] * 100:.1f}%{err} | {mx} | "
                         f"{r['lap_angle_deg']:.0f} | {push} |")
    lines.append(end)
    return "\n".join(lines)


def _json_path(part: str) -> Path:
    return ROOT / "benchmarks" / "results" / f"{KEY}_{part}.json"


def main() -> None:
    ap = _report.argument_parser(__doc__, "10-12 s runs only (smoke test)")
    ap.add_argument("--part", choices=(*PARTS, "all", "render"), default="all")
    ap.add_argument("--laps", type=int, default=2, help="laps of the laps part (default 2)")
    ap.add_argument("--cases", nargs="*", default=None,
                    help="robustness cases or trajectory shapes to run (default all)")
    args = ap.parse_args()
    todo = PARTS if args.part == "all" else (() if args.part == "render" else (args.part,))
    for part in todo:
        if part in TRAJECTORY_LATENCY:
            result = run_trajectories(args.quick, args.quiet, args.cases,
                                      TRAJECTORY_LATENCY[part])
            if part != "trajectories":  # the figure draws the 4 ms runs only
                result.pop("series")
        elif part == "laps":
            result = run_laps(args.laps, args.quick, args.quiet)
        else:
            result = run_robustness(args.quick, args.quiet, args.cases)
        if args.quick:
            continue
        path = _json_path(part)
        if part != "laps" and args.cases is not None and path.exists():
            old = json.loads(path.read_text())["result"]  # a subset re-run: merge by case
            order = list(ROBUSTNESS_CASES if part == "robustness" else TRAJECTORY_SHAPES)
            for key in ("rows", "series"):
                if key in result:
                    merged = {**old.get(key, {}), **result[key]}
                    result[key] = {n: merged[n] for n in order if n in merged}
        rec = {"timestamp": _report.utc_timestamp(), "machine": _report.machine_info(),
               "latency_s": LATENCY, "result": result}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        rec["latency_s"] = TRAJECTORY_LATENCY.get(part, LATENCY)
        tmp.write_text(json.dumps(rec, indent=None if part in TRAJECTORY_LATENCY else 1,
                                  default=float))
        tmp.replace(path)
        print(f"wrote {path.relative_to(ROOT)}")
    if args.quick:
        return
    parts = {p: json.loads(_json_path(p).read_text()) for p in PARTS if _json_path(p).exists()}
    if "trajectories" in parts:
        _figure(parts["trajectories"]["result"])
    _report.replace_section(render(parts), KEY)
    print(f"updated {_report.MD_PATH.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
