"""Seed 000 Table II: CANAL against the two direct Newton solvers of the strict-operator equation
(eq. 19), trust-region dogleg and damped semismooth Newton (plants/sim/al_newton.py).

The seed's setup: single-step cases of its dish-piling scene, 10 AL loops per case at a fixed
penalty; per method the inner (Newton) iterations summed over the 10 loops, the failure rate (a
loop that does not reach its tolerance) and the final residual (−log10). Ours: the same three
methods on the same problems, 10 AL loops at β = 1e4, at most 100 inner iterations per loop, one
stopping rule for all (CANAL's Newton-loop rule, docs/contact-solvers.md):

* ``mass-ratio-stack`` — three 0.1 kg plates under a 5 kg box (our dish-piling analogue), its
  contact problem after 20 SAP steps perturbed by random wrenches (±0.3 × weight, seed 0);
* ``cube-rest-5`` — the same perturbations of a five-cube stack;
* ``random`` — random multi-tree problems (4 trees, 10 contacts; plants.sim.accuracy.random_problem).

Residual: the accuracy metric of seed 000 §VII (natural-map residual / n_c) of the final impulses.
Also the wall time per case (pure numpy for the two baselines, CANAL's own implementation).

    python benchmarks/bench_al_table2.py            # 30 cases per set
    python benchmarks/bench_al_table2.py --quick    # 5 cases per set
"""

from __future__ import annotations

import time

import numpy as np

from _report import ROOT, argument_parser, machine_info, progress, publish, say, show, utc_timestamp

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_al_table2.json"
KEY = "bench_al_table2"
BETA, LOOPS, MAX_INNER = 1e4, 10, 100
PAPER = {"canal": (30.55, 0.0, 8.2231), "tr_dogleg": (118.8, 1.2, 8.5693), "damped_sn": (246.9, 1.1, 8.5644)}
LABELS = {"canal": "CANAL", "tr_dogleg": "TRDogleg", "damped_sn": "DampedSN"}


def problem_sets(n: int) -> dict:
    from plants.sim import load_scene
    from plants.sim.accuracy import perturbed_problems, random_problem

    def frozen(scene: str):
        sim = load_scene(scene, solver="sap")
        for _ in range(20):
            sim.step()
        return sim.contact_problem()[0]

    return {"mass-ratio-stack": perturbed_problems(frozen("mass-ratio-stack"), n, seed=0, wrench_scale=0.3),
            "cube-rest-5": perturbed_problems(frozen("cube-rest-5"), n, seed=0, wrench_scale=0.3),
            "random (4 trees, 10 contacts)": [random_problem(s, n_trees=4, n_c=10) for s in range(n)]}


def solve(method: str, p) -> tuple[np.ndarray, int, bool, float]:
    """(γ, inner iterations, failed, seconds) of one case."""
    from plants.sim import CANALSolver, ContactSolverStatus
    from plants.sim.al_newton import damped_semismooth_newton, trust_region_dogleg

    t0 = time.perf_counter()
    if method == "canal":
        r = CANALSolver(warm_start=False, beta0=BETA, beta_max=BETA, max_iterations=LOOPS, tol=1e-300,
                        max_newton=MAX_INNER).solve(p)
        out = r.gamma, r.inner_iterations, r.status is ContactSolverStatus.NUMERICAL_ERROR
    else:
        f = trust_region_dogleg if method == "tr_dogleg" else damped_semismooth_newton
        r = f(p, beta=BETA, loops=LOOPS, max_inner=MAX_INNER)
        out = r.gamma, r.inner_iterations, r.failed
    return (*out, time.perf_counter() - t0)


def main() -> None:
    args = argument_parser(__doc__, "5 cases per set").parse_args()
    from plants.sim._blas import blas_threads
    from plants.sim.accuracy import contact_residual

    n = 5 if args.quick else 30
    with blas_threads(1):
        sets = problem_sets(n)
        table = {}
        bar = progress(sum(len(v) for v in sets.values()) * len(LABELS), "table II", args.quiet)
        for name, problems in sets.items():
            rows = {m: {"inner": [], "fail": [], "res": [], "time": []} for m in LABELS}
            for method in LABELS:
                show(bar, f"{name}: {LABELS[method]}")
                for p in problems:
                    gamma, inner, failed, sec = solve(method, p)
                    rows[method]["inner"].append(inner)
                    rows[method]["fail"].append(bool(failed))
                    rows[method]["res"].append(contact_residual(p, gamma).residual)
                    rows[method]["time"].append(sec)
                    bar.update(bar.done + 1)
            table[name] = {m: {"mean_inner_iterations": float(np.mean(v["inner"])),
                               "failure_rate": float(np.mean(v["fail"])),
                               "mean_neg_log10_residual": float(np.mean(-np.log10(np.maximum(v["res"], 1e-300)))),
                               "median_time_ms": 1e3 * float(np.median(v["time"])),
                               "cases": len(v["inner"])} for m, v in rows.items()}
            for m, r in table[name].items():
                say(f"{name:30s} {LABELS[m]:9s} inner {r['mean_inner_iterations']:7.2f} fail "
                    f"{100 * r['failure_rate']:5.1f} % res {r['mean_neg_log10_residual']:.2f} "
                    f"{r['median_time_ms']:.1f} ms", bar)
        bar.close()
    result = {"timestamp": utc_timestamp(), "machine": machine_info(), "quick": args.quick, "cases_per_set": n,
              "beta": BETA, "loops": LOOPS, "max_inner": MAX_INNER, "sets": table,
              "paper": {LABELS[k]: dict(zip(("inner", "failure_percent", "neg_log10_residual"), v))
                        for k, v in PAPER.items()}}
    m = result["machine"]
    lines = [f"<!-- {KEY}:start -->",
             "## Seed 000 Table II: CANAL vs trust-region dogleg vs damped semismooth Newton "
             "(`benchmarks/bench_al_table2.py`)", "",
             f"10 AL loops at fixed β = {BETA:g}, ≤ {MAX_INNER} Newton iterations per loop, one stopping rule "
             "(CANAL's Newton loop) for the three; inner iterations summed over the loops (the dogleg counts "
             "its rejected trial steps); failure = a loop that did not reach the rule; residual = seed 000 "
             f"§VII's metric of the final impulses (−log10, mean). {n} cases per set. Math: "
             "docs/contact-solvers.md §11. Run "
             f"{result['timestamp']} on {m['processor']} ({m['cpu_count']} cores shared by several engineers, "
             f"load {m['load_avg'][0]:.1f}: times are noisy){' — --quick' if args.quick else ''}.", "",
             "| set | method | inner it. | failure [%] | residual [−log10] | median ms / case |",
             "|---|---|---:|---:|---:|---:|"]
    for name, t in table.items():
        for k in LABELS:
            r = t[k]
            lines.append(f"| {name} | {LABELS[k]} | {r['mean_inner_iterations']:.2f} | "
                         f"{100 * r['failure_rate']:.1f} | {r['mean_neg_log10_residual']:.2f} | "
                         f"{r['median_time_ms']:.1f} |")
    for k in LABELS:
        it, fail, res = PAPER[k]
        lines.append(f"| **seed 000 Table II** (dish piling, C++) | {LABELS[k]} | {it} | {fail} | {res} | — |")
    lines.append(f"<!-- {KEY}:end -->")
    publish(result, "\n".join(lines), KEY, JSON_PATH)


if __name__ == "__main__":
    main()
