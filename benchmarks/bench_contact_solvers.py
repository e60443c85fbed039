"""Benchmark the contact solvers of seeds 000/002 (CANAL, SubADMM, NSN) against PGS and SAP.

All solvers run in one process on the same problems (``plants.sim``; the machine is stated):

* **Single-step sets** (seed 000 §VII-A/B): a scene's contact problem frozen after 20 SAP steps
  and perturbed by 100 random external wrenches (``plants.sim.accuracy.perturbed_problems``,
  seed 0, ±0.3 × weight): ``cube-rest-5`` (five 1 kg cubes) and ``mass-ratio-stack`` (three
  0.1 kg plates under a 5 kg box). Per solver: the accuracy metric of seed 000 §VII (natural-map
  residual / n_c) after a fixed budget, its value after k iterations, time per solve.
* **Table II analogue**: CANAL vs damped semismooth Newton (backtracking on ‖r‖²) on the
  strict-operator equation (eq. 19), 10 AL loops each at fixed β = 1e4, on the mass-ratio set:
  inner (Newton) iterations, failure rate (an inner loop that does not reach its tolerance in 100
  steps), final residual.
* **Table III analogue**: SubADMM (body-level splitting, composite-rigid-body build + branch-sparse
  LTDL) vs "No Body" (per-tree pieces, dense per-tree Cholesky) vs "No Sub" (full-system ADMM, one
  sparse LU of the whole ``A + βJᵀJ``), 100 iterations each at the same β₀, on frozen steps of ``a1-drop-8`` /
  ``a1-drop-27`` (Unitree A1, 18 dofs each, dropped at δt = 1/240 s), ``clutter-40`` (40 free
  bodies) and ``cube-drop-5``. Time per solve without the accuracy evaluation (fastest and median
  of 21, the three variants interleaved), and the metric after the 100 iterations.
* **Scenes**: every solver runs ``cube-rest-5`` and ``mass-ratio-stack`` with the one-word switch.

Writes ``benchmarks/results/bench_contact_solvers.json`` and the ``bench_contact_solvers`` section
of ``docs/BENCHMARKS.md``. ``--quick``: 10 cases per set, no markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_report.py
import _report  # noqa: E402
from plants.sim import (  # noqa: E402
    CANALSolver,
    ContactSolverStatus,
    NSNSolver,
    PGSSolver,
    SubADMMSolver,
    load_scene,
)
from plants.sim.accuracy import contact_residual, perturbed_problems, random_problem  # noqa: E402
from plants.sim.al_newton import damped_semismooth_newton  # noqa: E402

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_contact_solvers.json"
MD_PATH = ROOT / "docs" / "BENCHMARKS.md"
START, END = _report.markers("bench_contact_solvers")
CHECKPOINTS = (1, 5, 10, 20, 50, 100)
# scene runs: tolerances of the metric that each method reaches in practice (documented in the table)
SCENE_SOLVERS = (("sap", {}), ("canal", {}), ("nsn", {"tol": 1e-8}), ("subadmm", {"tol": 1e-6, "max_iterations": 3000}),
                 ("pgs", {"tol": 1e-6, "max_iterations": 3000}))


def machine_info() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"platform": platform.platform(), "processor": cpu, "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "numpy": np.__version__, "load_average": list(os.getloadavg())}


def frozen_problem(scene: str, steps: int = 20, **params):
    sim = load_scene(scene, solver="sap", **params)
    for _ in range(steps):
        sim.step()
    return sim.contact_problem()[0]


def solver_suite() -> dict:
    """Name -> solver with a fixed budget (tolerances below reach: the budget is what runs)."""
    return {
        "canal": CANALSolver(warm_start=False, tol=1e-10, max_iterations=100),
        "subadmm": SubADMMSolver(warm_start=False, tol=1e-14, max_iterations=100),
        "subadmm (adaptive β)": SubADMMSolver(warm_start=False, tol=1e-14, max_iterations=100, adaptive_penalty=True),
        "nsn (FB)": NSNSolver(tol=1e-14, max_iterations=100, linear_iterations=50),
        "nsn (min-map)": NSNSolver(ncp="min", tol=1e-14, max_iterations=100, linear_iterations=50),
        "pgs": PGSSolver(warm_start=False, tol=1e-14, max_iterations=100),
        "subadmm (adaptive β, 1000 it)": SubADMMSolver(warm_start=False, tol=1e-14, max_iterations=1000,
                                                      adaptive_penalty=True),
        "pgs (1000 sweeps)": PGSSolver(warm_start=False, tol=1e-14, max_iterations=1000),
        "subadmm (α = 1.8, adaptive β, 400 it)": SubADMMSolver(warm_start=False, tol=1e-14, max_iterations=400,
                                                               adaptive_penalty=True, relaxation=1.8),
        "subadmm (adaptive β, 1500 it)": SubADMMSolver(warm_start=False, tol=1e-14, max_iterations=1500,
                                                      adaptive_penalty=True),
        # the solver as used: stop at the acceptance tolerance (metric checked every iteration)
        "subadmm (adaptive β, stop at 1e-6, ≤ 1000 it)": SubADMMSolver(warm_start=False, tol=1e-6, max_iterations=1000,
                                                                      adaptive_penalty=True),
    }


def run_set(name: str, problems, quiet: bool = False) -> dict:
    out = {}
    suite = solver_suite()
    bar = _report.progress(len(suite) * len(problems), name, quiet, "solves")
    for sname, solver in suite.items():
        _report.show(bar, f"{name}: {sname}")
        res, times, iters, at = [], [], [], {k: [] for k in CHECKPOINTS}
        for p in problems:
            r = solver.solve(p)
            res.append(contact_residual(p, r.gamma).residual)
            times.append(r.solve_time)
            iters.append(r.iterations)
            h = r.residual_history
            for k in CHECKPOINTS:  # residual after k iterations (the last one if it stopped earlier)
                at[k].append(h[min(k, len(h) - 1)])
            bar.update(bar.done + 1)
        res = np.array(res)
        out[sname] = {
            "median_residual": float(np.median(res)), "max_residual": float(res.max()),
            "frac_le_1e-8": float(np.mean(res <= 1e-8)), "frac_le_1e-6": float(np.mean(res <= 1e-6)),
            "median_time_s": float(np.median(times)), "mean_iterations": float(np.mean(iters)),
            "median_residual_at": {str(k): float(np.median(v)) for k, v in at.items()},
        }
        _report.say(f"  {name:18s} {sname:22s} median res {out[sname]['median_residual']:.2e} max {res.max():.2e} "
                    f"time {1e3 * np.median(times):.2f} ms iters {np.mean(iters):.1f}", bar)
    bar.close()
    return out


# ----------------------------------------------------------------------------- Table II baseline
def damped_sn(p, beta=1e4, loops=10, max_inner=100):
    """Damped semismooth Newton on eq. (19) (plants.sim.al_newton): (λ, inner iterations, failed)."""
    r = damped_semismooth_newton(p, beta=beta, loops=loops, max_inner=max_inner)
    return r.gamma, r.inner_iterations, r.failed


def table2(problems, label: str, quiet: bool = False) -> dict:
    """CANAL against the damped semismooth Newton baseline on ``problems`` (``label``: the set)."""
    canal = CANALSolver(warm_start=False, beta0=1e4, beta_max=1e4, max_iterations=10, tol=1e-300, max_newton=100)
    rows = {"canal": {"inner": [], "fail": [], "res": []}, "damped_sn": {"inner": [], "fail": [], "res": []}}
    for p in _report.track(problems, f"table II {label}", quiet, "problems"):
        r = canal.solve(p)
        rows["canal"]["inner"].append(r.inner_iterations)
        rows["canal"]["fail"].append(r.status is ContactSolverStatus.NUMERICAL_ERROR)
        rows["canal"]["res"].append(contact_residual(p, r.gamma).residual)
        lam, inner, failed = damped_sn(p)
        rows["damped_sn"]["inner"].append(inner)
        rows["damped_sn"]["fail"].append(failed)
        rows["damped_sn"]["res"].append(contact_residual(p, lam).residual)
    out = {}
    for k, v in rows.items():
        out[k] = {"mean_inner_iterations": float(np.mean(v["inner"])), "failure_rate": float(np.mean(v["fail"])),
                  "mean_neg_log10_residual": float(np.mean(-np.log10(np.maximum(v["res"], 1e-300))))}
        print(f"  table II {label} {k:10s} {out[k]}", flush=True)
    return out


TABLE3_VARIANTS = (("body", "SubADMM"), ("no_body", "No Body"), ("no_sub", "No Sub"))
TABLE3_PROBLEMS = (("a1-drop-8", 110), ("a1-drop-27", 130), ("clutter-40", 60), ("cube-drop-5", 400))


def table3(problem, label: str, repeats: int = 21, quiet: bool = False) -> dict:
    """The three variants on one problem, 100 iterations each, interleaved ``repeats`` times."""
    out = {"n_v": problem.n_v, "n_c": problem.n_c, "n_trees": problem.n_trees,
           "tree_tree_contacts": int((problem.contact_trees >= 0).all(axis=1).sum())}
    solvers = {v: SubADMMSolver(variant=v, max_iterations=100, tol=1e-300, warm_start=False, metric_every=100,
                                beta_rule="body")  # the seed's β₀ (pseudo-density over bodies)
               for v, _ in TABLE3_VARIANTS}
    solvers["body_rows"] = SubADMMSolver(variant="body", body_iteration="rows", max_iterations=100, tol=1e-300,
                                         warm_start=False, metric_every=100, beta_rule="body")
    for v in ("body", "no_body"):  # the split variants with the generic (not generated) tree solves
        solvers[f"{v}_generic"] = SubADMMSolver(variant=v, max_iterations=100, tol=1e-300, warm_start=False,
                                                metric_every=100, beta_rule="body", generated_solves=False)
    for v in ("body", "no_body"):  # the split variants with their islands on 2 threads (the seed's SubADMM is
        # parallel over subsystems; No Sub's whole-system factorization and solves stay serial)
        solvers[f"{v}_2t"] = SubADMMSolver(variant=v, max_iterations=100, tol=1e-300, warm_start=False,
                                           metric_every=100, beta_rule="body", threads=2)
    bar = _report.progress(len(solvers) * (repeats + 1), f"table III {label}", quiet, "solves")
    for s in solvers.values():
        s.solve(problem)  # compile / cache outside the timing
        bar.update(bar.done + 1)
    times = {v: [] for v in solvers}
    factor = {v: [] for v in solvers}
    core = {v: [] for v in solvers}  # factorization + the 100 iterations (no Python setup)
    last = {}
    for _ in range(repeats):
        for v, s in solvers.items():
            r = s.solve(problem)
            times[v].append(r.solve_time - r.timings["metric"])
            factor[v].append(r.timings["factor"])
            core[v].append(r.timings["factor"] + r.timings["iterate"])
            last[v] = r
            bar.update(bar.done + 1)
    bar.close()
    for v in solvers:
        r = last[v]
        out[v] = {"time_s": float(np.median(times[v])), "min_time_s": float(np.min(times[v])),
                  "factor_s": float(np.median(factor[v])), "min_core_s": float(np.min(core[v])),
                  "core_s": float(np.median(core[v])), "residual": float(r.residual), "beta": float(r.beta),
                  "pieces": int(r.timings["pieces"]), "solver": r.solver}
    # ratios of the fastest of the interleaved solves: the least disturbed by other processes on
    # the shared machine (the medians are in the JSON too)
    out["no_sub_over_sub"] = out["no_sub"]["min_time_s"] / out["body"]["min_time_s"]
    out["no_body_over_sub"] = out["no_body"]["min_time_s"] / out["body"]["min_time_s"]
    out["no_sub_over_sub_median"] = out["no_sub"]["time_s"] / out["body"]["time_s"]
    out["no_body_over_sub_median"] = out["no_body"]["time_s"] / out["body"]["time_s"]
    out["body_rows_over_sub"] = out["body_rows"]["min_time_s"] / out["body"]["min_time_s"]
    # paired: each round times every variant back to back, so the ratio within a round cancels
    # slow drifts of the shared machine; median and quartiles over the rounds
    for v in ("no_sub", "no_body"):
        r = np.asarray(times[v]) / np.asarray(times["body"])
        out[f"{v}_over_sub_paired"] = [float(x) for x in np.percentile(r, [25, 50, 75])]
    out["no_sub_over_sub_generic"] = out["no_sub"]["min_time_s"] / out["body_generic"]["min_time_s"]
    out["no_body_over_sub_generic"] = out["no_body_generic"]["min_time_s"] / out["body_generic"]["min_time_s"]
    for v in ("no_sub", "no_body", "body_rows"):  # the algorithmic core: factorization + iterations
        out[f"{v}_over_sub_core"] = out[v]["min_core_s"] / out["body"]["min_core_s"]
    # 2 threads: SubADMM and No Body with their islands in parallel against the serial No Sub
    out["no_sub_over_sub_2t"] = out["no_sub"]["min_time_s"] / out["body_2t"]["min_time_s"]
    out["no_body_2t_over_sub_2t"] = out["no_body_2t"]["min_time_s"] / out["body_2t"]["min_time_s"]
    out["no_sub_over_sub_2t_core"] = out["no_sub"]["min_core_s"] / out["body_2t"]["min_core_s"]
    out["no_body_2t_over_sub_2t_core"] = out["no_body_2t"]["min_core_s"] / out["body_2t"]["min_core_s"]
    r = np.asarray(times["no_sub"]) / np.asarray(times["body_2t"])
    out["no_sub_over_sub_2t_paired"] = [float(x) for x in np.percentile(r, [25, 50, 75])]
    print(f"  table III {label}: {out}", flush=True)
    return out


def scenes(duration: float, quiet: bool = False) -> dict:
    out = {}
    runs = [(scene, solver, opts, duration) for scene in ("cube-rest-5", "mass-ratio-stack")
            for solver, opts in SCENE_SOLVERS]
    # A1 drop (δt = 1/240 s, 0.5 s: fall and impact); PGS left out (a Python sweep over ~70 contacts)
    runs += [("a1-drop-8", solver, opts, 0.5) for solver, opts in SCENE_SOLVERS if solver != "pgs"]
    bar = _report.progress(len(runs), "scenes", quiet, "runs")
    for scene, solver, opts, duration in runs:
        _report.show(bar, f"scene {scene}/{solver}")
        warm = load_scene(scene, solver=solver, solver_options=opts)
        try:  # compile / load the compiled kernels outside the timing (first use in the process)
            warm.step()
            warm.step()
        except Exception:  # noqa: BLE001 - a failing solver is reported by the timed run below
            pass
        sim = load_scene(scene, solver=solver, solver_options=opts)
        t0 = time.perf_counter()
        try:
            traj = sim.run(duration)
            el = time.perf_counter() - t0
            out[f"{scene}/{solver}"] = {
                "ok": True, "duration_s": duration, "us_per_step": 1e6 * el / traj.n_steps,
                "mean_iterations": float(traj.stats["iterations"].mean()),
                "max_penetration_m": float(max(0.0, -traj.stats["min_phi"].min())),
                "max_drift_m": float(np.abs(traj.q[-1] - traj.q[0]).max())}
        except Exception as err:  # noqa: BLE001 - a failing solver is a result, reported as such
            out[f"{scene}/{solver}"] = {"ok": False, "error": f"{type(err).__name__}: {str(err)[:120]}"}
        _report.say(f"  scene {scene}/{solver}: {out[f'{scene}/{solver}']}", bar)
        bar.update(bar.done + 1)
    bar.close()
    return out


def fmt(x, spec=".2e"):
    return "—" if x is None else format(x, spec)


def markdown(res: dict) -> str:
    m = res["machine"]
    lines = [START, "## Contact solvers: CANAL, SubADMM, NSN, PGS (`benchmarks/bench_contact_solvers.py`)", "",
             f"Run {res['date']} ({res['mode']}) on {m['processor']} ({m['cpu_count']} CPUs, load average at start "
             f"{m['load_average'][0]:.1f}), {m['platform']}; Python {m['python']}, numpy {m['numpy']}. All solvers "
             "in one process, pure Python/numpy, single-threaded BLAS.", "",
             "Accuracy = seed 000 §VII metric (natural-map residual of the impulses with the strict operator, "
             "divided by the number of contacts). Budgets: 100 iterations for every solver (CANAL: AL iterations, "
             "stops at 1e-10; SubADMM/PGS: iterations/sweeps; NSN: Newton steps with ≤ 50 CR iterations each), plus "
             "SubADMM and PGS with 1000, SubADMM with 400 (over-relaxed) and 1500, all run to the end of the budget; "
             "*stop at 1e-6* = SubADMM as a solver with tol = 1e-6 (stops at the first iteration whose metric is "
             "≤ 1e-6). *res @ k*: median metric after k iterations (the last one if it stopped earlier).", ""]
    for set_name, rows in res["sets"].items():
        lines += [f"### Single-step set `{set_name}` ({res['n_cases']} cases)", "",
                  "| solver | median residual | max residual | ≤ 1e-8 | ≤ 1e-6 | median time [ms] | mean iterations | "
                  + " | ".join(f"res @ {k}" for k in CHECKPOINTS) + " |",
                  "|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(CHECKPOINTS)]
        for s, r in rows.items():
            lines.append(f"| {s} | {fmt(r['median_residual'])} | {fmt(r['max_residual'])} | {r['frac_le_1e-8']:.0%} | "
                         f"{r['frac_le_1e-6']:.0%} | {1e3 * r['median_time_s']:.2f} | {r['mean_iterations']:.1f} | "
                         + " | ".join(fmt(r["median_residual_at"][str(k)]) for k in CHECKPOINTS) + " |")
        lines.append("")
    lines += ["### Table II analogue (10 AL loops at fixed β = 1e4; same inner stopping rules)", "",
              "| set | solver | inner iterations | failure [%] | residual [-log10] |", "|---|---|---:|---:|---:|"]
    for set_name, t2 in res["table2"].items():
        for k, label in (("canal", "CANAL"), ("damped_sn", "damped SN (strict operator, eq. 19)")):
            lines.append(f"| {set_name} | {label} | {t2[k]['mean_inner_iterations']:.2f} | "
                         f"{100 * t2[k]['failure_rate']:.1f} | {t2[k]['mean_neg_log10_residual']:.2f} |")
    lines += ["", "Seed 000 Table II (dish piling): CANAL 30.55 inner iterations, 0 % failures, 8.22; "
              "DampedSN 246.9, 1.1 %, 8.56; TRDogleg 118.8, 1.2 %, 8.57.", ""]
    t3_run = ""
    if "table3_date" in res:
        t3 = res["table3_machine"]
        t3_run = (f"Run {res['table3_date']} (`--table3-only`; load average at start {t3['load_average'][0]:.1f}), "
                  "separately from the tables above. ")
    lines += ["### Table III analogue (100 iterations each, same β₀)", "", t3_run + "Times in ms: fastest (median).", "",
              "| problem | n_v | n_c (tree–tree) | trees | SubADMM [ms] | SubADMM row it. [ms] | No Body [ms] | No Sub [ms] | No Body / SubADMM | "
              "No Sub / SubADMM | factor SubADMM / No Body / No Sub [ms] | residual SubADMM | residual No Body | residual No Sub |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k, r in res["table3"].items():
        rows_it = (f"{1e3 * r['body_rows']['min_time_s']:.2f} ({1e3 * r['body_rows']['time_s']:.2f})"
                   if "body_rows" in r else "—")
        lines.append(f"| {k} | {r['n_v']} | {r['n_c']} ({r['tree_tree_contacts']}) | {r['n_trees']} | "
                     f"{1e3 * r['body']['min_time_s']:.2f} ({1e3 * r['body']['time_s']:.2f}) | {rows_it} | "
                     f"{1e3 * r['no_body']['min_time_s']:.2f} ({1e3 * r['no_body']['time_s']:.2f}) | "
                     f"{1e3 * r['no_sub']['min_time_s']:.2f} ({1e3 * r['no_sub']['time_s']:.2f}) | "
                     f"{r['no_body_over_sub']:.2f} ({r['no_body_over_sub_median']:.2f}) | "
                     f"{r['no_sub_over_sub']:.2f} ({r['no_sub_over_sub_median']:.2f}) | "
                     f"{1e3 * r['body']['factor_s']:.2f} / {1e3 * r['no_body']['factor_s']:.2f} / {1e3 * r['no_sub']['factor_s']:.2f} | "
                     f"{fmt(r['body']['residual'])} | {fmt(r['no_body']['residual'])} | {fmt(r['no_sub']['residual'])} |")
    if all("min_core_s" in r["body"] for r in res["table3"].values()):
        lines += ["", "Core of the same solves (factorization + the 100 compiled iterations, no Python setup), fastest "
                  "of 21 [ms]:", "",
                  "| problem | SubADMM | SubADMM row it. | No Body | No Sub | row it. / SubADMM | No Body / SubADMM | "
                  "No Sub / SubADMM |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for k, r in res["table3"].items():
            lines.append(f"| {k} | {1e3 * r['body']['min_core_s']:.3f} | {1e3 * r['body_rows']['min_core_s']:.3f} | "
                         f"{1e3 * r['no_body']['min_core_s']:.3f} | {1e3 * r['no_sub']['min_core_s']:.3f} | "
                         f"{r['body_rows_over_sub_core']:.2f} | {r['no_body_over_sub_core']:.2f} | "
                         f"{r['no_sub_over_sub_core']:.2f} |")
    if all("no_sub_over_sub_paired" in r for r in res["table3"].values()):
        lines += ["", "Paired ratios: within each of the 21 rounds the variants run back to back, so the ratio of "
                  "their times in one round cancels slow drifts of the shared machine. Median [quartiles] over the "
                  "rounds:", "", "| problem | No Sub / SubADMM | No Body / SubADMM |", "|---|---:|---:|"]
        for k, r in res["table3"].items():
            a, b = r["no_sub_over_sub_paired"], r["no_body_over_sub_paired"]
            lines.append(f"| {k} | {a[1]:.2f} [{a[0]:.2f}, {a[2]:.2f}] | {b[1]:.2f} [{b[0]:.2f}, {b[2]:.2f}] |")
    if all("body_generic" in r for r in res["table3"].values()):
        lines += ["", "Generated against generic tree solves (same solves, same run; `generated_solves=False` = the "
                  "generic compiled kernels that walk the tree at run time). SubADMM's LTDL solve and body passes and "
                  "No Body's dense Cholesky solve are generated per tree structure (`plants.sim._tree_codegen`); "
                  "No Sub's sparse LU pattern changes with the contacts, so it has no generated form. Fastest [ms]:", "",
                  "| problem | SubADMM generated / generic | No Body generated / generic | No Sub / SubADMM "
                  "generated (generic) | No Body / SubADMM generated (generic) |", "|---|---:|---:|---:|---:|"]
        for k, r in res["table3"].items():
            lines.append(f"| {k} | {1e3 * r['body']['min_time_s']:.3f} / {1e3 * r['body_generic']['min_time_s']:.3f} | "
                         f"{1e3 * r['no_body']['min_time_s']:.3f} / {1e3 * r['no_body_generic']['min_time_s']:.3f} | "
                         f"{r['no_sub_over_sub']:.2f} ({r['no_sub_over_sub_generic']:.2f}) | "
                         f"{r['no_body_over_sub']:.2f} ({r['no_body_over_sub_generic']:.2f}) |")
    if all("body_2t" in r for r in res["table3"].values()):
        lines += ["", "Islands on 2 threads (`SubADMMOptions.threads=2`, same run): SubADMM and No Body run the "
                  "islands of trees coupled through contacts in two groups on parallel threads, with the serial "
                  "run's bits (the seed's SubADMM is parallel over subsystems); No Sub factors and solves the "
                  "whole system serially. Fastest solve / core [ms]:", "",
                  "| problem | SubADMM 2 threads | No Body 2 threads | No Sub | No Sub / SubADMM 2 threads "
                  "(core; paired) | No Body / SubADMM, both 2 threads (core) |", "|---|---:|---:|---:|---:|---:|"]
        for k, r in res["table3"].items():
            b2, n2, ns, pq = r["body_2t"], r["no_body_2t"], r["no_sub"], r["no_sub_over_sub_2t_paired"]
            lines.append(f"| {k} | {1e3 * b2['min_time_s']:.3f} / {1e3 * b2['min_core_s']:.3f} | "
                         f"{1e3 * n2['min_time_s']:.3f} / {1e3 * n2['min_core_s']:.3f} | "
                         f"{1e3 * ns['min_time_s']:.3f} / {1e3 * ns['min_core_s']:.3f} | "
                         f"{r['no_sub_over_sub_2t']:.2f} ({r['no_sub_over_sub_2t_core']:.2f}; {pq[1]:.2f} "
                         f"[{pq[0]:.2f}, {pq[2]:.2f}]) | {r['no_body_2t_over_sub_2t']:.2f} "
                         f"({r['no_body_2t_over_sub_2t_core']:.2f}) |")
    lines += ["", "Seed 000 Table III (8 Laikagos, C++): SubADMM 0.435 ms, No Sub 1.21 ms (2.78×), No Body 0.638 ms "
              "(1.46×), residuals 4.88 / 4.88 / 4.86 (−log10); 3.63× vs No Sub with 27 robots. Times: fastest "
              "(median) of 21 interleaved solves; the ratios use the fastest, which other processes on the shared "
              "machine disturb least. A solve is everything from the problem to the impulses (pieces, β₀, factorization, 100 "
              "iterations) except the accuracy evaluation. The setup is compiled for all three (piece index, β₀, "
              "z⁰ and the first right-hand side, θ_d); SubADMM's body iteration gathers no dense piece rows (it "
              "never uses them). All three run their 100 iterations in one compiled call "
              "(no Python call per iteration) with the same compiled z/λ-step per contact. SubADMM = "
              "composite-rigid-body build of the per-body point masses + Featherstone's LTDL with branch-induced "
              "sparsity (its solve generated per tree structure), and the body-structured iteration (piece velocities from one forward pass of body "
              "velocities + the contact point's velocity ±F_i (v_b + ω_b × p_i) per piece, right-hand side from one backward pass of body wrenches, eq. 30-31; passes generated per tree structure too); "
              "*row it.* = SubADMM with each piece as a dense row block over its tree (the ablation of that "
              "iteration); No Body = per-tree Σ J_pᵀJ_p from the pieces + dense Cholesky (its solve generated per tree size), dense per-tree piece "
              "rows; No Sub = the whole sparse A + βJᵀJ (assembled in CSC by one compiled pass) factored by SuperLU, its L and U solved by compiled "
              "triangular solves (faster than `SuperLU.solve`: 3.7 vs 10.8 µs on 8 A1s, 28 vs 35 µs on 27). "
              "β₀ = the seed's pseudo-density over bodies for all three. "
              "On contacts between two trees No Sub has one piece where the split variants have two (|Z_i| = 2), so "
              "its iterates differ and its residual after 100 iterations is not the same.", "",
              f"### Scenes (one-word solver switch; stacks {res['scene_duration']} s at 1 ms, a1-drop-8 0.5 s at 1/240 s)", "",
              "Solver options: SAP and CANAL defaults (CANAL tol 1e-9, 300 AL iterations); NSN tol 1e-8; SubADMM and PGS tol 1e-6 "
              "with 3000-iteration budgets. A solver that misses its tolerance stops the run (the stepper refuses "
              "the step).", ""]
    if "scenes_date" in res:
        sm = res["scenes_machine"]
        lines += [f"Scene runs of {res['scenes_date']} (`--scenes-only`; load average at start "
                  f"{sm['load_average'][0]:.1f}), separately from the tables above.", ""]
    lines += ["| scene/solver | ok | µs/step | mean iterations | max penetration [m] | max abs(q(T) − q(0)) |",
              "|---|---|---:|---:|---:|---:|"]
    for k, r in res["scenes"].items():
        if r["ok"]:
            lines.append(f"| {k} | yes | {r['us_per_step']:.0f} | {r['mean_iterations']:.1f} | {fmt(r['max_penetration_m'])} | {fmt(r['max_drift_m'])} |")
        else:
            lines.append(f"| {k} | **no**: {r['error']} | | | | |")
    lines += ["", END]
    return "\n".join(lines)


def write_markdown(section: str) -> None:
    """Insert or replace this benchmark's section of docs/BENCHMARKS.md."""
    _report.replace_section(section, "bench_contact_solvers")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 cases per set, short scenes, no markdown")
    ap.add_argument("--table3-only", action="store_true",
                    help="only the Table III analogue: replaces res['table3'] in the existing JSON (the other "
                         "tables stay from their run; 'table3_date'/'table3_machine' record this one) and "
                         "rewrites the section")
    ap.add_argument("--scenes-only", action="store_true",
                    help="only the scene runs: replaces res['scenes'] in the existing JSON ('scenes_date' / "
                         "'scenes_machine' record this run) and rewrites the section")
    _report.add_quiet(ap)
    args = ap.parse_args(argv)
    from plants.sim._blas import blas_threads

    if args.scenes_only:
        if not JSON_PATH.exists():
            raise SystemExit(f"--scenes-only needs an existing {JSON_PATH} (run the full benchmark first)")
        res = json.loads(JSON_PATH.read_text())
        with blas_threads(1):
            res["scenes"] = scenes(res["scene_duration"], args.quiet)
        res["scenes_date"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        res["scenes_machine"] = machine_info()
        _report.publish(res, markdown(res), "bench_contact_solvers", JSON_PATH, indent=1)
        return 0

    if args.table3_only:
        with blas_threads(1):
            table = {f"{name} (step {steps})": table3(frozen_problem(name, steps=steps), name,
                                                              quiet=args.quiet)
                     for name, steps in TABLE3_PROBLEMS}
        if JSON_PATH.exists():
            res = json.loads(JSON_PATH.read_text())
            res["table3"] = table
            res["table3_date"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            res["table3_machine"] = machine_info()
            _report.publish(res, markdown(res), "bench_contact_solvers", JSON_PATH, indent=1)
        return 0

    n_cases = 10 if args.quick else 100
    res = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "mode": "quick" if args.quick else "full",
           "machine": machine_info(), "n_cases": n_cases}
    with blas_threads(1):
        sets = {"cube-rest-5": perturbed_problems(frozen_problem("cube-rest-5"), n_cases, seed=0, wrench_scale=0.3),
                "mass-ratio-stack": perturbed_problems(frozen_problem("mass-ratio-stack"), n_cases, seed=0,
                                                       wrench_scale=0.3)}
        res["sets"] = {k: run_set(k, v, args.quiet) for k, v in sets.items()}
        res["table2"] = {"mass-ratio-stack": table2(sets["mass-ratio-stack"][: (10 if args.quick else 30)],
                                                    "mass-ratio-stack", args.quiet),
                         "random (4 trees, 10 contacts)": table2([random_problem(s, n_trees=4, n_c=10)
                                                                  for s in range(10 if args.quick else 30)],
                                                                 "random", args.quiet)}
        res["table3"] = {f"{name} (step {steps})": table3(frozen_problem(name, steps=steps), name,
                                                              quiet=args.quiet)
                         for name, steps in TABLE3_PROBLEMS}
        res["scene_duration"] = 0.05 if args.quick else 0.2
        res["scenes"] = scenes(res["scene_duration"], args.quiet)
    if not args.quick:
        _report.publish(res, markdown(res), "bench_contact_solvers", JSON_PATH, indent=1)
    else:
        print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
