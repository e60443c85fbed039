"""Benchmark the multibody -> LCS factory on the registered multibody plants (issue 4 part 4).

For every multibody plant (``cube-pivoting``, ``cartpole-urdf``, ``franka-ball``,
``franka-balls-2``, ``franka-balls-3``, ``franka-panda``) and every contact model
(Stewart-Trinkle, Anitescu, frictionless spring) we time ``plant.lcs(x, u, contact_model=...)``
one call at a time (``time.perf_counter``), cycling over a pool of states near the plant's start
state (random perturbations of q and v, so the contact queries and linearisations change). The
call is also split into its three stages, timed separately on the same states:

* *smooth*: ``MultibodyPlant.linearize`` (Pinocchio ABA derivatives, kinematic step map);
* *contacts*: ``MultibodyPlant.contact_kinematics`` (forward kinematics, joint Jacobians, one
  coal distance query per contact pair, vectorised contact Jacobians);
* *assembly*: ``lcs.factory.build_lcs`` (pure-numpy LCS matrices and the ``LCS`` object).

In-run peers: the hand-written analytic LCS of the paper's plants (``pivoting``, re-evaluated at
each state like the factory; ``cartpole-softwalls``, built for a time step) on the same machine.

For ``franka-ball`` the factory time is compared with a C3 solve at the plant's defaults (MIQP
projection, N = 5, s = 2; ``c3mpc.tasks.build_controller``), measured in the same run on the
same states: the ratio factory / solve must be small for Algorithm 3 (issue 4).

Writes ``benchmarks/results/bench_lcs_factory.json`` and the ``bench_lcs_factory`` section of
``docs/BENCHMARKS.md`` (only that section is replaced).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python benchmarks/bench_lcs_factory.py` without install
    sys.path.insert(0, str(ROOT))

import _report  # noqa: E402
from lcs.factory import build_lcs  # noqa: E402
from plants import load_plant  # noqa: E402

PLANTS = ("cube-pivoting", "cartpole-urdf", "franka-ball", "franka-balls-2", "franka-balls-3",
          "franka-panda")
MODELS = ("stewart_trinkle", "anitescu", "frictionless_spring")
JSON_PATH = ROOT / "benchmarks" / "results" / "bench_lcs_factory.json"
MD_PATH = ROOT / "docs" / "BENCHMARKS.md"
START, END = _report.markers("bench_lcs_factory")
PAPER_C3_HZ = 73.0  # seed 003 §VII-A: C3 on the simplified Franka ball model, i7-11800H


# ----------------------------------------------------------------------------- helpers
def stats(samples: list[float]) -> dict[str, float]:
    a = np.asarray(samples)
    return {"median": float(np.median(a)), "mean": float(a.mean()), "std": float(a.std()),
            "min": float(a.min()), "n": int(a.size)}


def time_calls(fn: Callable[[Any], Any], args: list[Any], repeats: int) -> list[float]:
    """Per-call wall times of ``fn(a)`` cycling over ``args`` (one warm-up pass first)."""
    for a in args:
        fn(a)
    out = []
    for r in range(repeats):
        for a in args:
            t0 = time.perf_counter()
            fn(a)
            out.append(time.perf_counter() - t0)
    return out


def state_pool(plant: Any, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``size`` states near the start state: q perturbed by 2 mm / 0.02 rad scale, v by 0.05."""
    x0 = np.asarray(plant.defaults.x0, dtype=float)
    pool = [x0.copy()]
    for _ in range(size - 1):
        x = x0.copy()
        x[:plant.n_q] += 0.002 * rng.standard_normal(plant.n_q)
        x[plant.n_q:] += 0.05 * rng.standard_normal(plant.n_v)
        pool.append(x)
    return pool


def machine_info() -> dict:
    """Where this benchmark ran (see benchmarks/_report.py)."""
    import pinocchio
    return _report.machine_info(pinocchio=pinocchio.__version__)


def bench_plant(name: str, pool_size: int, repeats: int, rng: np.random.Generator) -> list[dict]:
    plant = load_plant(name)
    mb = plant.multibody
    pool = state_pool(plant, pool_size, rng)
    u0 = np.zeros(plant.n_u)
    tau0 = plant.actuation(u0)
    dt = plant.dt
    rows = []
    smooth = stats(time_calls(lambda x: mb.linearize(x, tau0, dt), pool, repeats))
    contacts = stats(time_calls(lambda x: mb.contact_data(x), pool, repeats))
    lins = [mb.linearize(x, tau0, dt) for x in pool]
    cds = [mb.contact_data(x) for x in pool]
    for model in MODELS:
        total = stats(time_calls(lambda x: plant.lcs(x, u0, contact_model=model), pool,
                                 repeats))
        kw = plant._lcs_options()
        assembly = stats(time_calls(
            lambda i: build_lcs(lins[i], cds[i], model, dt, check=False, **kw),
            list(range(len(pool))), repeats))
        rows.append({"plant": name, "contact_model": model, "n_x": plant.n_x,
                     "n_u": plant.n_u, "n_lambda": plant.num_lambda(model),
                     "n_contacts": plant.n_contacts, "total": total, "smooth": smooth,
                     "contacts": contacts, "assembly": assembly,
                     "other_median": total["median"] - smooth["median"] - contacts["median"]
                     - assembly["median"]})
    return rows


def bench_peers(pool_size: int, repeats: int, rng: np.random.Generator) -> list[dict]:
    """The paper's analytic LCS plants, timed the same way."""
    piv = load_plant("pivoting")
    x0 = np.asarray(piv.defaults.x0)
    pool = [x0 + 0.01 * rng.standard_normal(x0.size) for _ in range(pool_size)]
    rows = [{"peer": "pivoting (analytic, per state)", "n_x": piv.n_x, "n_lambda": piv.n_lambda,
             "total": stats(time_calls(lambda x: piv.lcs(x), pool, repeats))}]
    cp = load_plant("cartpole-softwalls")
    rows.append({"peer": "cartpole-softwalls (analytic, per dt)", "n_x": cp.n_x,
                 "n_lambda": cp.n_lambda,
                 "total": stats(time_calls(lambda dt: cp._build(dt), [0.01, 0.02] * pool_size,
                                           repeats))})
    return rows


def bench_franka_ratio(pool_size: int, repeats: int, rng: np.random.Generator) -> dict:
    """Factory time vs a C3 solve at franka-ball's defaults, on the same states, same run."""
    from c3mpc.tasks import build_controller

    plant = load_plant("franka-ball")
    ctrl = build_controller(plant)
    pool = state_pool(plant, pool_size, rng)
    u0 = np.zeros(plant.n_u)
    lcss = [plant.lcs(x, u0) for x in pool]
    factory: list[float] = []
    solve: list[float] = []
    statuses: list[int] = []
    for i in range(len(pool)):  # warm-up (Gurobi/numba set-up)
        ctrl.update_lcs(lcss[i])
        ctrl.solve(pool[i])
    for _ in range(repeats):
        for i, x in enumerate(pool):
            t0 = time.perf_counter()
            lcs = plant.lcs(x, u0)
            t1 = time.perf_counter()
            ctrl.update_lcs(lcs)
            res = ctrl.solve(x)
            t2 = time.perf_counter()
            factory.append(t1 - t0)
            solve.append(t2 - t1)
            statuses.append(int(res.status))
    f, s = stats(factory), stats(solve)
    d = plant.defaults
    return {"plant": "franka-ball", "contact_model": plant.contact_model,
            "projection": d.projection, "N": d.N, "admm_iter": d.admm_iter,
            "factory": f, "c3_solve": s, "ratio_median": f["median"] / s["median"],
            "ratio_mean": f["mean"] / s["mean"],
            "c3_ok_fraction": float(np.mean(np.asarray(statuses) == 0)),
            "paper_c3_hz": PAPER_C3_HZ}


# ----------------------------------------------------------------------------- output
def _ms(s: dict) -> str:
    return f"{s['median'] * 1e3:.3f} | {s['mean'] * 1e3:.3f} ± {s['std'] * 1e3:.3f}"


def markdown(result: dict) -> str:
    m = result["machine"]
    fr = result["franka_ratio"]
    lines = [
        START,
        "## Multibody → LCS factory (`benchmarks/bench_lcs_factory.py`)",
        "",
        f"Run {result['timestamp']} ({'quick' if result['quick'] else 'full'} mode) on "
        f"{m['processor']} ({m['cpu_count']} CPUs, load average at start "
        f"{_report.load_average(m)[0]:.1f}), {m['platform']}; Python {m['python']}, "
        f"numpy {m['numpy']}, Pinocchio {m['pinocchio']}.",
        "",
        "Time per `plant.lcs(x, u, contact_model=...)` call in milliseconds, over "
        f"{result['settings']['pool']} states near each plant's start state × "
        f"{result['settings']['repeats']} repeats. The stages are timed separately on the same "
        "states: *smooth* = Pinocchio ABA derivatives and kinematic map "
        "(`MultibodyPlant.linearize`), *contacts* = coal distances + contact Jacobians "
        "(`MultibodyPlant.contact_data`), *assembly* = `lcs.factory.build_lcs` (numpy "
        "matrices + `LCS` validation), *other* = total − the three (state/input validation "
        "and the plant adapter; negative when the stages' own validation is counted twice or "
        "by noise). Smooth and contact stages do not depend on the contact model.",
        "",
        "| plant | contact model | n_x | n_λ | n_c | total median [ms] | total mean ± std [ms] "
        "| smooth median [ms] | contacts median [ms] | assembly median [ms] | other [ms] |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['plant']} | {r['contact_model']} | {r['n_x']} | {r['n_lambda']} | "
            f"{r['n_contacts']} | {_ms(r['total'])} | {r['smooth']['median'] * 1e3:.3f} | "
            f"{r['contacts']['median'] * 1e3:.3f} | {r['assembly']['median'] * 1e3:.3f} | "
            f"{r['other_median'] * 1e3:.3f} |")
    lines += ["", "In-run peers (hand-written analytic LCS of the paper's plants):", "",
              "| peer | n_x | n_λ | median [ms] | mean ± std [ms] |", "|---|---:|---:|---:|---:|"]
    for r in result["peers"]:
        lines.append(f"| {r['peer']} | {r['n_x']} | {r['n_lambda']} | {_ms(r['total'])} |")
    lines += [
        "",
        f"**Franka ball (simplified model, {fr['contact_model']}, n_x = 19, n_λ = 12): factory "
        f"vs C3 solve** at the plant's defaults ({fr['projection']} projection, N = {fr['N']}, "
        f"s = {fr['admm_iter']}), same states, same run: factory median "
        f"{fr['factory']['median'] * 1e3:.3f} ms, C3 solve median "
        f"{fr['c3_solve']['median'] * 1e3:.3f} ms (mean {fr['c3_solve']['mean'] * 1e3:.3f} ms;"
        f" {fr['c3_ok_fraction'] * 100:.0f} % of solves status OK; the factory is timed inside "
        "the loop, alternating with the solves, which makes it slower than alone in the table "
        "above) → factory / solve = "
        f"**{fr['ratio_median']:.2f}** (medians), {fr['ratio_mean']:.2f} (means). "
        f"Factory + solve ≈ {1.0 / (fr['factory']['median'] + fr['c3_solve']['median']):.0f} "
        f"Hz; the paper's C3 ran at about {fr['paper_c3_hz']:.0f} Hz on an i7-11800H (C++, "
        "Drake AutoDiff factory).",
        "",
        "Notes: times include Python-level argument validation and the `LCS` constructor's "
        "checks. The contact stage is one coal query per configured pair plus one "
        "`computeJointJacobians`; the smooth stage is one `computeABADerivatives` (plus "
        "`tangentMap`/`dIntegrate` for quaternion joints). On this shared 2-vCPU VM medians "
        "move by about ±20 % between runs.",
        END,
    ]
    return "\n".join(lines)


def write_markdown(section: str) -> None:
    """Insert or replace this benchmark's section of docs/BENCHMARKS.md."""
    _report.replace_section(section, "bench_lcs_factory")


def main(argv: list[str] | None = None) -> int:
    parser = _report.argument_parser(__doc__,
                                     "fewer states and repeats (a smoke run, noisier numbers)")
    parser.add_argument("--no-write", action="store_true",
                        help="print the markdown, do not write the JSON / BENCHMARKS.md")
    args = parser.parse_args(argv)
    pool, repeats = (4, 3) if args.quick else (16, 20)
    rng = np.random.default_rng(0)
    result: dict[str, Any] = {
        "timestamp": _report.utc_timestamp(),
        "quick": bool(args.quick), "machine": machine_info(),
        "settings": {"pool": pool, "repeats": repeats}, "rows": [], "peers": [],
    }
    bar = _report.progress(len(PLANTS) + 2, "lcs factory", args.quiet, "parts")
    for name in PLANTS:
        _report.show(bar, f"lcs factory: {name}")
        result["rows"] += bench_plant(name, pool, repeats, rng)
        bar.update(bar.done + 1)
    _report.show(bar, "lcs factory: analytic peers")
    result["peers"] = bench_peers(pool, repeats, rng)
    bar.update(bar.done + 1)
    _report.show(bar, "lcs factory: franka factory vs C3 solve")
    result["franka_ratio"] = bench_franka_ratio(pool, repeats, rng)
    bar.update(bar.done + 1)
    md = markdown(result)
    print(md)
    if not args.no_write:
        _report.publish(result, md, "bench_lcs_factory", JSON_PATH)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
