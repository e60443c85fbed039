"""Soak: memory and solve-time drift over 10,000 closed-loop steps (issue 26).

Two long runs, each in this one process, with the defaults:

* **cart-pole** (``cartpole-softwalls``, C3 with the paper's options): ``run_closed_loop`` for
  10,000 control steps (100 s simulated) with process noise σ = 0.05 (seeded), so the
  controller keeps working instead of resting at the goal;
* **Franka ball** (``c3mpc.tasks_franka.run_franka_ball``: full Panda in the contact simulator,
  impedance control, emulated cameras, C3 re-planning): 10,000 simulator steps (20 s
  simulated at 2 ms), laps not stopped.

The resident set size (RSS, from ``/proc/self/statm``) is sampled every 250 steps through the
runs' stop hooks (which never stop them), with the process CPU time. Reported per run: RSS
after the warm-up (the first 20 % of the steps) and at the end, and the growth between them
(acceptance: < 5 %); the wall-clock solve times after the warm-up split into five equal blocks
(median of each); and the trend: a least-squares line through the CPU time per step of each
250-step block after the warm-up, as a relative change over the run (acceptance: no upward
trend, i.e. below +10 %).

The machine is shared (other jobs run on its cores), so wall-clock solve times carry the other
jobs' load (a few slow solves pull any line fitted through them); the CPU time this process
spends per step does not, which is why the trend is measured on it.

Writes ``benchmarks/results/bench_soak.json`` and the ``bench_soak`` section of
``docs/BENCHMARKS.md``. ``--quick``: 1,000 steps each (a smoke run; not published).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python benchmarks/bench_soak.py` without an install
    sys.path.insert(0, str(ROOT))

import _report  # noqa: E402

STEPS = 10_000
WARMUP = 0.2
SAMPLE_EVERY = 250
RSS_LIMIT = 0.05  # acceptance: growth after warm-up below 5 %
TREND_LIMIT = 0.10  # acceptance: fitted solve-time change over the run below +10 %
JSON_PATH = ROOT / "benchmarks" / "results" / "bench_soak.json"
KEY = "bench_soak"


def rss_mib() -> float:
    """Resident set size of this process [MiB]."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class Sampler:
    """A stop hook that samples RSS every ``SAMPLE_EVERY`` calls and never stops the run."""

    def __init__(self) -> None:
        self.calls = 0
        self.samples: list[tuple[int, float]] = [(0, rss_mib())]
        self.cpu: list[tuple[int, float]] = [(0, time.process_time())]

    def __call__(self, *_: Any) -> bool:
        self.calls += 1
        if self.calls % SAMPLE_EVERY == 0:
            self.samples.append((self.calls, rss_mib()))
            self.cpu.append((self.calls, time.process_time()))
        return False


def drift(sampler: Sampler, solve_times: np.ndarray, steps: int) -> dict[str, Any]:
    """RSS growth after the warm-up and the solve-time trend (see the module docstring)."""
    samples = sampler.samples
    warm = int(WARMUP * steps)
    after = [(k, r) for k, r in samples if k >= warm]
    rss_warm, rss_end = after[0][1], after[-1][1]
    t = solve_times[int(WARMUP * len(solve_times)):]
    t = t[np.isfinite(t)]
    blocks = [float(np.median(b)) for b in np.array_split(t, 5)]
    # CPU time of this process per step, per block of SAMPLE_EVERY steps: insensitive to the
    # other jobs on a shared machine (wall-clock solve times are not)
    cpu = np.array([(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(sampler.cpu, sampler.cpu[1:])
                    if a[0] >= warm])
    slope = np.polyfit(np.arange(cpu.size), cpu, 1)[0] if cpu.size >= 2 else 0.0
    fitted_change = float(slope * cpu.size / np.median(cpu)) if cpu.size else 0.0
    growth = (rss_end - rss_warm) / rss_warm
    return {"steps": steps, "rss_mib_start": samples[0][1], "rss_mib_after_warmup": rss_warm,
            "rss_mib_end": rss_end, "rss_growth_after_warmup": growth,
            "rss_samples": samples, "solves": int(t.size),
            "solve_time_median_s": float(np.median(t)),
            "solve_time_block_medians_s": blocks,
            "cpu_per_step_s": cpu.tolist(), "cpu_per_step_median_s": float(np.median(cpu)),
            "solve_time_fitted_change": fitted_change,
            "rss_ok": bool(growth < RSS_LIMIT), "trend_ok": bool(fitted_change < TREND_LIMIT)}


def soak_cartpole(steps: int) -> dict[str, Any]:
    from c3mpc import run_closed_loop
    from c3mpc.tasks import TASKS, build_controller

    task = TASKS["cartpole-softwalls"]
    plant = task.plant()
    d = plant.defaults
    from c3mpc import C3Options

    options = C3Options(projection=d.projection, admm_iter=d.admm_iter, rho=d.rho,
                        rho_scale=d.rho_scale)
    ctrl = build_controller(plant, options, N=d.N, x0=d.x0)
    sampler = Sampler()
    t0 = time.perf_counter()
    log = run_closed_loop(plant, ctrl, d.x0, steps, noise_std=0.05,
                          rng=np.random.default_rng(26), stop=sampler)
    out = drift(sampler, log.solve_time, steps)
    out.update(wall_s=time.perf_counter() - t0, failed_steps=int(log.extras["failed_steps"]))
    return out


def soak_franka(steps: int) -> dict[str, Any]:
    from c3mpc.tasks_franka import FrankaBallOptions, run_franka_ball

    o = FrankaBallOptions()
    o = FrankaBallOptions(duration=steps * o.sim_dt, stop_after_lap=False)
    sampler = Sampler()
    t0 = time.perf_counter()
    log = run_franka_ball(o, should_stop=sampler)
    out = drift(sampler, log.plan_time, steps)
    out.update(wall_s=time.perf_counter() - t0, simulated_s=float(log.t[-1]),
               plans=int(log.plan_time.size), sim_error=log.info["sim_error"],
               failed_plans=int(np.sum(log.plan_status >= 3)))
    return out


def section(result: dict[str, Any]) -> str:
    start, end = _report.markers(KEY)
    m = result["machine"]
    lines = [start, "## Soak: 10,000 closed-loop steps (`benchmarks/bench_soak.py`)", "",
             f"Run {result['timestamp']} on {m['processor']} ({m['cpu_count']} cores, shared "
             f"with other jobs: load average {m['load_avg'][0]:.1f}); Python {m['python']}. "
             "RSS is sampled every 250 steps; the warm-up is the first 20 % of the steps. "
             "Solve time: C3 per control step (cart-pole) or the whole Algorithm 3 cycle per "
             "plan (Franka), wall clock. Trend: least-squares line through the process CPU "
             "time per step of each 250-step block (not disturbed by the other jobs). "
             "Acceptance (issue 26): RSS growth after warm-up < 5 %, no upward trend (fitted "
             "change over the run < +10 %).", "",
             "| run | steps | wall [s] | RSS after warm-up → end [MiB] | growth | solves | "
             "median solve [ms] | wall block medians [ms] | CPU per step [ms] | "
             "CPU trend over the run | failures |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in result["runs"].items():
        blocks = ", ".join(f"{b * 1e3:.2f}" for b in r["solve_time_block_medians_s"])
        fails = r.get("failed_steps", r.get("failed_plans", 0))
        lines.append(f"| {name} | {r['steps']} | {r['wall_s']:.0f} | "
                     f"{r['rss_mib_after_warmup']:.1f} → {r['rss_mib_end']:.1f} | "
                     f"{r['rss_growth_after_warmup'] * 100:+.2f} % | {r['solves']} | "
                     f"{r['solve_time_median_s'] * 1e3:.2f} | {blocks} | "
                     f"{r['cpu_per_step_median_s'] * 1e3:.2f} | "
                     f"{r['solve_time_fitted_change'] * 100:+.1f} % | {fails} |")
    verdict = all(r["rss_ok"] and r["trend_ok"] for r in result["runs"].values())
    lines += ["", f"Both acceptance criteria hold for every run: **{verdict}**.", end]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = _report.argument_parser(__doc__, "1,000 steps per run, not published")
    ap.add_argument("--only", choices=("cartpole", "franka"), help="run one soak")
    args = ap.parse_args(argv)
    steps = 1_000 if args.quick else STEPS
    runs: dict[str, Callable[[int], dict[str, Any]]] = {"cart-pole": soak_cartpole,
                                                         "franka-ball": soak_franka}
    if args.only:
        runs = {k: v for k, v in runs.items() if k.startswith(args.only)}
    result: dict[str, Any] = {"timestamp": _report.utc_timestamp(),
                              "machine": _report.machine_info(), "runs": {}}
    for name, fn in runs.items():
        r = fn(steps)
        result["runs"][name] = r
        print(f"{name}: RSS {r['rss_mib_after_warmup']:.1f} -> {r['rss_mib_end']:.1f} MiB "
              f"({r['rss_growth_after_warmup'] * 100:+.2f} %), solve median "
              f"{r['solve_time_median_s'] * 1e3:.2f} ms, blocks "
              f"{[round(b * 1e3, 2) for b in r['solve_time_block_medians_s']]} ms, CPU per "
              f"step {r['cpu_per_step_median_s'] * 1e3:.2f} ms, CPU trend "
              f"{r['solve_time_fitted_change'] * 100:+.1f} %", flush=True)
    if not args.quick and not args.only:
        _report.publish(result, section(result), KEY, JSON_PATH)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
