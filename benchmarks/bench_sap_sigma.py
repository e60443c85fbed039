"""SAP's friction regularization σ (seed 001 §VI-C2, Figs. 14-15): slip and cond(H) against σ.

The seed's experiment: 40 objects (spheres and boxes) dropped into a container, with and
without walls, δt = 10 ms, 10 s, SAP. For each σ it reports

* the mean steady-state slip: ‖(J v)_t‖ over contacts that carry a normal impulse, averaged
  over the last 2 s, against the bound of eq. (31), v_s = σ μ g δt (μ = 1, g = 9.81 m/s²);
* cond(H) of SAP's Newton matrix H = A + Jᵀ G J at the last step (eq. App. D; the seed finds
  cond(H) ∝ σ⁻¹);
* the mean Newton iterations per step (the seed: growing like |ln σ|);
* the wall time per step.

The seed's claims to compare with (the sweep range is only in its figure): slip stays below
v_s; with walls it follows the bound's slope, without walls it is much smaller and drops for
σ > 10⁻³ (boxes drift until a face lies flat); σ = 10⁻³ is "a good compromise".

    python benchmarks/bench_sap_sigma.py            # σ = 1e-5 ... 1e-1, 10 s each
    python benchmarks/bench_sap_sigma.py --quick    # σ = 1e-4, 1e-3, 1e-2, 2 s each
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from _report import ROOT, argument_parser, machine_info, progress, publish, say, show, utc_timestamp

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_sap_sigma.json"
KEY = "bench_sap_sigma"
G, MU, DT = 9.81, 1.0, 1e-2


def run_case(sigma: float, walls: bool, duration: float, steady: float, bar: Any = None) -> dict:
    """One clutter-40 run with SAP at ``sigma``; slip, cond(H), iterations, time per step.

    ``bar``: a progress line (``_report.progress``) advanced once per step, or None.
    """
    from plants import load_scene
    from plants.sim.sap import SAPSolver

    sim = load_scene("clutter-40", solver="sap", dt=DT, walls=walls,
                     solver_options={"sigma": sigma})
    steps = int(round(duration / DT))
    first_steady = steps - int(round(steady / DT))
    slips, iterations, wall = [], [], 0.0
    for k in range(steps):
        t0 = time.perf_counter()
        result = sim.step()
        wall += time.perf_counter() - t0
        iterations.append(result.iterations)
        problem = sim.last_problem
        if k >= first_steady and problem is not None and problem.n_c:
            vc = (problem.J @ sim.v).reshape(-1, 3)
            active = result.gamma.reshape(-1, 3)[:, 2] > 0
            slips.extend(np.linalg.norm(vc[active, :2], axis=1))
        if bar is not None:
            bar.update(bar.done + 1)
    solver = SAPSolver(sigma=sigma)
    ws = solver.workspace(problem)
    _, _, _, G_blocks, *_ = SAPSolver._evaluate(ws, sim.v, True)
    H = problem.A + ws.jtgj(G_blocks)
    return {"sigma": sigma, "walls": walls, "steps": steps,
            "mean_slip_m_s": float(np.mean(slips)) if slips else float("nan"),
            "median_slip_m_s": float(np.median(slips)) if slips else float("nan"),
            "share_above_bound": float(np.mean(np.asarray(slips) > sigma * MU * G * DT))
            if slips else float("nan"),
            "slip_bound_m_s": sigma * MU * G * DT, "active_contacts": len(slips),
            "cond_H": float(np.linalg.cond(H)),
            "mean_iterations": float(np.mean(iterations)),
            "max_iterations": int(np.max(iterations)),
            "ms_per_step": 1e3 * wall / steps}


def main() -> None:
    args = argument_parser(__doc__, "3 values of σ, 2 s each").parse_args()
    sigmas = [1e-4, 1e-3, 1e-2] if args.quick else [1e-5, 1e-4, 1e-3, 1e-2, 1e-1]
    duration, steady = (2.0, 0.5) if args.quick else (10.0, 2.0)
    rows = []
    bar = progress(2 * len(sigmas) * int(round(duration / DT)), "sap σ", args.quiet, "steps")
    for walls in (True, False):
        for sigma in sigmas:
            show(bar, f"clutter-40 walls={walls} σ={sigma:.0e}")
            row = run_case(sigma, walls, duration, steady, bar)
            rows.append(row)
            say(f"walls={walls!s:5s} σ={sigma:.0e}: slip {row['mean_slip_m_s']:.2e} m/s "
                f"(bound {row['slip_bound_m_s']:.2e}), cond(H) {row['cond_H']:.2e}, "
                f"{row['mean_iterations']:.1f} Newton it., {row['ms_per_step']:.1f} ms/step", bar)
    result = {"timestamp": utc_timestamp(), "machine": machine_info(), "dt": DT,
              "duration_s": duration, "steady_window_s": steady, "rows": rows}
    m = result["machine"]
    lines = [f"<!-- {KEY}:start -->",
             "## SAP's σ: slip and cond(H) (`benchmarks/bench_sap_sigma.py`, seed 001 §VI-C2)", "",
             f"clutter-40 (40 spheres and boxes in an 80 cm container, μ = 1), δt = 10 ms, "
             f"{duration:g} s per run; slip averaged over the last {steady:g} s over contacts "
             f"with a normal impulse; cond(H) at the last step. Run {result['timestamp']} on "
             f"{m['processor']} ({m['cpu_count']} cores, load {m['load_avg'][0]:.1f}).", "",
             "| walls | σ | mean slip [m/s] | median slip [m/s] | bound σμgδt [m/s] | "
             "mean / bound | contacts above the bound | cond(H) | Newton it. (mean, max) | "
             "ms/step |", "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        lines.append(f"| {'yes' if r['walls'] else 'no'} | {r['sigma']:.0e} | "
                     f"{r['mean_slip_m_s']:.2e} | {r['median_slip_m_s']:.2e} | "
                     f"{r['slip_bound_m_s']:.2e} | {r['mean_slip_m_s'] / r['slip_bound_m_s']:.2f} | "
                     f"{100 * r['share_above_bound']:.1f} % | {r['cond_H']:.2e} | "
                     f"{r['mean_iterations']:.1f}, {r['max_iterations']} | {r['ms_per_step']:.1f} |")
    for walls in (True, False):
        sub = [r for r in rows if r["walls"] == walls]
        s = np.log10([r["sigma"] for r in sub])
        slope = np.polyfit(s, np.log10([r["cond_H"] for r in sub]), 1)[0]
        lines.append("")
        lines.append(f"{'With' if walls else 'Without'} walls: log-log slope of cond(H) against "
                     f"σ = {slope:.2f} (the seed: −1).")
    lines.append(f"<!-- {KEY}:end -->")
    publish(result, "\n".join(lines), KEY, JSON_PATH)


if __name__ == "__main__":
    main()
