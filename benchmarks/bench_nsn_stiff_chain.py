"""Seed 002's stiff chain and heavy stack with NSN: the complementarity preconditioner options
(Figs. 16-17: r = 1, r = h², effective mass) and fixed Newton counts (Table 2: 4-8) as a
real-time preset.

* **Preconditioners** (Fig. 16: quartiles of the error per Newton iteration over the steps of
  the beam; Fig. 17: per-iteration error on a high-mass-ratio scene): the contact problems of
  the first ``--steps`` steps of ``stiff-chain`` (16 links of 3 g, 250 N·m/rad joints, pressed
  on the ground) and of ``heavy-stack`` (5 boxes, 8 → 32768 kg), recorded along a run with NSN
  at its defaults, each solved by NSN with 100 Newton iterations of 40 conjugate-residual steps
  (``NSNOptions.fixed_count(100)``, zero start, the figure's setting) for each
  ``preconditioner``: "unit" (the paper's r = 1), "h2" (r = h²), "effective_mass" (eq. 66, our
  default). Reported: the quartiles over the steps of seed 000's accuracy metric after k Newton
  iterations, and the share of steps below 1e-6.
* **Fixed Newton counts** (the paper's real-time use, Table 2: 4-8 iterations, no tolerance):
  both scenes run with ``NSNOptions.fixed_count(n)`` for n = 4 ... 8, zero start (the paper) and
  warm start, against the same scene run with NSN at its defaults (converged to 1e-10) as the
  reference: median and max per-step metric, the beam's tip contact force and the stack's top-box
  height against the reference's, ms per step.

    python benchmarks/bench_nsn_stiff_chain.py            # 40 steps per scene, runs of 1 s
    python benchmarks/bench_nsn_stiff_chain.py --quick    # 10 steps, runs of 0.25 s
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from _report import ROOT, argument_parser, machine_info, progress, publish, say, show, utc_timestamp

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_nsn_stiff_chain.json"
KEY = "bench_nsn_stiff_chain"
SCENES = ("stiff-chain", "heavy-stack")
PRECONDITIONERS = ("unit", "h2", "effective_mass")
CHECK = (1, 2, 4, 8, 16, 32, 64, 100)
COUNTS = (4, 5, 6, 7, 8)


def recorded_problems(scene: str, steps: int) -> list:
    """The contact problems of the first ``steps`` steps of ``scene`` run with NSN (defaults)."""
    from plants import load_scene

    sim = load_scene(scene, solver="nsn", plausibility=None)
    out = []
    for _ in range(steps):
        out.append(sim.contact_problem()[0])
        sim.step()
    return [p for p in out if p.n_c]


def preconditioner_study(problems: list, bar) -> dict:
    from plants.sim import NSNOptions, NSNSolver

    out = {}
    for pre in PRECONDITIONERS:
        solver = NSNSolver(NSNOptions.fixed_count(100, 40, preconditioner=pre))
        hist = []
        for p in problems:
            r = solver.solve(p)
            h = np.asarray(r.residual_history[:101], float)  # warm start + 100 iterations
            hist.append(np.pad(h, (0, 101 - h.size), constant_values=h[-1] if h.size else np.nan))
            bar.update(bar.done + 1)
        H = np.array(hist)
        out[pre] = {str(k): {"q25": float(np.nanpercentile(H[:, k], 25)), "median": float(np.nanmedian(H[:, k])),
                             "q75": float(np.nanpercentile(H[:, k], 75)), "max": float(np.nanmax(H[:, k])),
                             "share_le_1e-6": float(np.mean(H[:, k] <= 1e-6))} for k in CHECK}
    return out


def observable(scene: str, sim) -> float:
    """Beam: the total normal contact force [N]; stack: the top box's height [m]."""
    if scene == "stiff-chain":
        r = sim.last_result
        return float(r.gamma.reshape(-1, 3)[:, 2].sum() / sim.dt) if r is not None and r.gamma.size else 0.0
    return float(sim.q[-7 + 2])


def run(scene: str, duration: float, options) -> dict:
    from plants import load_scene

    sim = load_scene(scene, solver="nsn", solver_options=options, plausibility=None)
    n = int(round(duration / sim.dt))
    metric, obs = [], []
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(n):
            r = sim.step()
            metric.append(r.residual if np.isfinite(r.residual) else np.inf)
            obs.append(observable(scene, sim))
    wall = time.perf_counter() - t0
    return {"metric": np.array(metric), "observable": np.array(obs), "ms_per_step": 1e3 * wall / n, "steps": n}


def main() -> None:
    args = argument_parser(__doc__, "10 steps per scene, runs of 0.25 s").parse_args()
    from plants.sim import NSNOptions
    from plants.sim._blas import blas_threads

    steps, duration = (10, 0.25) if args.quick else (40, 1.0)
    result = {"timestamp": utc_timestamp(), "machine": machine_info(), "quick": args.quick, "steps": steps,
              "duration_s": duration, "preconditioners": {}, "fixed_counts": {}}
    with blas_threads(1):
        problems = {s: recorded_problems(s, steps) for s in SCENES}
        bar = progress(sum(len(v) for v in problems.values()) * len(PRECONDITIONERS), "preconditioners",
                       args.quiet, "solves")
        for s in SCENES:
            show(bar, f"{s}: preconditioners")
            result["preconditioners"][s] = preconditioner_study(problems[s], bar)
            for pre, row in result["preconditioners"][s].items():
                say(f"{s:12s} r={pre:15s} median metric after 4/8/100 it.: {row['4']['median']:.2e} "
                    f"{row['8']['median']:.2e} {row['100']['median']:.2e}", bar)
        bar.close()
        bar = progress(len(SCENES) * (1 + 2 * len(COUNTS)), "fixed counts", args.quiet, "runs")
        for s in SCENES:
            show(bar, f"{s}: reference")
            ref = run(s, duration, NSNOptions())
            bar.update(bar.done + 1)
            rows = [{"newton": "defaults (tol 1e-10)", "start": "zero", "median_metric": float(np.median(ref["metric"])),
                     "max_metric": float(np.max(ref["metric"])), "observable_error": 0.0,
                     "ms_per_step": ref["ms_per_step"]}]
            for start in ("zero", "warm"):
                for n in COUNTS:
                    show(bar, f"{s}: {n} Newton, {start} start")
                    r = run(s, duration, NSNOptions.fixed_count(n, 40, start=start))
                    err = np.abs(r["observable"] - ref["observable"])
                    rows.append({"newton": n, "start": start, "median_metric": float(np.median(r["metric"])),
                                 "max_metric": float(np.max(r["metric"])), "observable_error": float(err.max()),
                                 "ms_per_step": r["ms_per_step"]})
                    bar.update(bar.done + 1)
                    say(f"{s:12s} {n} Newton ({start}): median metric {rows[-1]['median_metric']:.2e}, "
                        f"max {rows[-1]['max_metric']:.2e}, observable error {rows[-1]['observable_error']:.2e}, "
                        f"{r['ms_per_step']:.1f} ms/step", bar)
            result["fixed_counts"][s] = {"rows": rows, "reference_observable_final": float(ref["observable"][-1])}
        bar.close()
    m = result["machine"]
    lines = [f"<!-- {KEY}:start -->",
             "## Seed 002: stiff chain and heavy stack with NSN — preconditioners and fixed Newton counts "
             "(`benchmarks/bench_nsn_stiff_chain.py`)", "",
             "`stiff-chain`: seed 002's Fetch Beam (§10.1.2, Fig. 7): 16 links of 3 g, joints of 250 N·m/rad, the "
             "first link held, the beam pressed on the ground, δt = 1/120 s, implicit Euler. `heavy-stack`: 5 boxes "
             "8 → 32768 kg (Fig. 14 middle), δt = 1/120 s. Metric: seed 000 §VII's accuracy metric (natural-map "
             "residual / n_c). Math and the unit conversion of r: docs/contact-solvers.md §5.2. Run "
             f"{result['timestamp']} on {m['processor']} ({m['cpu_count']} cores shared by several engineers, load "
             f"{m['load_avg'][0]:.1f}: times are noisy){' — --quick' if args.quick else ''}.", "",
             f"### Preconditioners (Figs. 16-17 analogue): metric after k Newton iterations, quartiles over "
             f"{steps} recorded steps (40 CR steps per Newton iteration, zero start)", "",
             "| scene | r | k = 1 | 2 | 4 | 8 | 16 | 32 | 64 | 100 | steps ≤ 1e-6 at 8 / 100 |",
             "|---|---|---|---|---|---|---|---|---|---|---:|"]
    for s in SCENES:
        for pre in PRECONDITIONERS:
            row = result["preconditioners"][s][pre]
            cells = [f"{row[str(k)]['median']:.1e} [{row[str(k)]['q25']:.0e}, {row[str(k)]['q75']:.0e}]" for k in CHECK]
            lines.append(f"| {s} | {pre} | " + " | ".join(cells) +
                         f" | {100 * row['8']['share_le_1e-6']:.0f} % / {100 * row['100']['share_le_1e-6']:.0f} % |")
    lines += ["", "Seed 002 (plots only, Figs. 16-17): with r = 1 the beam converges super-linearly in far fewer steps "
              "and its median error is often an order of magnitude above the effective-mass r; r = h² helps at low "
              "mass ratios but fails at high ones; the effective mass is the most reliable.", "",
              f"### Fixed Newton counts (the real-time preset, `NSNOptions.fixed_count(n)`), {duration:g} s runs", "",
              "Observable error: the beam's total normal contact force [N] / the top box's height [m], largest "
              "deviation from the reference run (NSN defaults) over the run.", "",
              "| scene | Newton it. | start | median metric | max metric | observable error | ms/step |",
              "|---|---|---|---:|---:|---:|---:|"]
    for s in SCENES:
        for r in result["fixed_counts"][s]["rows"]:
            lines.append(f"| {s} | {r['newton']} | {r['start']} | {r['median_metric']:.2e} | {r['max_metric']:.2e} | "
                         f"{r['observable_error']:.2e} | {r['ms_per_step']:.1f} |")
    lines += ["", "Seed 002 Table 2: Fetch Beam 6 Newton × 50 linear iterations (18.6 ms per solve on a GPU, "
              "float32, 300 contacts); other scenes 4-8 Newton iterations; no accuracy is tabulated."]
    lines.append(f"<!-- {KEY}:end -->")
    publish(result, "\n".join(lines), KEY, JSON_PATH)


if __name__ == "__main__":
    main()
