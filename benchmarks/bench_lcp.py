"""Benchmark the LCP solver: ``solve_lcp`` (single) and ``solve_lcp_batch`` (B = 10).

Cases:

* random contact-like LCPs of size n = 2, 6, 10, 24: ``F = J M^-1 J^T + eps I`` with a random
  contact Jacobian J, a random SPD mass matrix M and eps = 1e-3, and ``q = J v + b`` with mixed
  signs (some contacts active, some not);
* the cart-pole soft-wall LCP of the C3 paper: ``F = I / 50`` (2x2), ``q = E x + c`` with
  ``E = [[-1, 0.6, 0, 0], [1, -0.6, 0, 0]]``, ``c = [0.35, 0.35]``, at states where one wall is
  in contact.

Each case is timed one call at a time with ``time.perf_counter`` after a warm-up (numba
compile / cache load), cycling over a pool of problems; the pure-numpy reference
``lcs._lemke_reference.lemke_reference`` is timed on the same problems as the in-run peer.
The C3 paper's LCP projection time (Table III, 1.4e-5 +- 1.8e-6 s on an i7-11800H) is quoted
alongside with the ratio paper / ours (> 1 means ours is faster). Note that the paper's number is
one projection inside the authors' C++ controller; the ratio compares orders of magnitude, not
identical workloads on identical machines.

Writes ``benchmarks/results/bench_lcp.json`` and the ``bench_lcp`` section of
``docs/BENCHMARKS.md`` (only that section is replaced).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python benchmarks/bench_lcp.py` without an install
    sys.path.insert(0, str(ROOT))

import _report  # noqa: E402
from lcs import LCPStatus, solve_lcp, solve_lcp_batch  # noqa: E402
from lcs._lemke_kernel import STATUS_SOLVED  # noqa: E402
from lcs._lemke_reference import lemke_reference  # noqa: E402

PAPER_MEAN = 1.4e-5  # [s] C3 paper, Table III, LCP projection time
PAPER_STD = 1.8e-6  # [s]
PAPER_MACHINE = "Intel i7-11800H (C3 paper, Table III)"
SIZES = (2, 6, 10, 24)
BATCH = 10
POOL = 64  # distinct problems per case (cycled through during timing)
JSON_PATH = ROOT / "benchmarks" / "results" / "bench_lcp.json"
MD_PATH = ROOT / "docs" / "BENCHMARKS.md"
START, END = _report.markers("bench_lcp")


# ----------------------------------------------------------------------------- problems
def contact_lcp(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A contact-like LCP: F = J M^-1 J^T + eps I (PSD-ish, often rank deficient), mixed q."""
    nv = max(2, n // 2 + 2)  # fewer velocities than contacts for large n: J M^-1 J^T singular
    J = rng.standard_normal((n, nv))
    L = rng.standard_normal((nv, nv))
    M = L @ L.T + nv * np.eye(nv)
    F = J @ np.linalg.solve(M, J.T) + 1e-3 * np.eye(n)
    v = rng.standard_normal(nv)
    b = 0.3 * rng.standard_normal(n)
    q = J @ v * 0.5 + b
    if np.all(q >= 0):  # make sure there is at least one active contact
        q[rng.integers(n)] = -abs(q).max() - 0.1
    return F, q


def cartpole_lcp(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The cart-pole soft-wall LCP at a random state with one wall in contact."""
    E = np.array([[-1.0, 0.6, 0.0, 0.0], [1.0, -0.6, 0.0, 0.0]])
    c = np.array([0.35, 0.35])
    F = np.eye(2) / 50.0
    while True:
        x = np.array([rng.uniform(-0.6, 0.6), rng.uniform(-0.4, 0.4),
                      rng.uniform(-1, 1), rng.uniform(-1, 1)])
        q = E @ x + c
        if q.min() < 0:  # the cart/pole pushes into a wall
            return F, q


def make_pool(case: str, n: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    if case == "cartpole":
        return [cartpole_lcp(rng) for _ in range(POOL)]
    return [contact_lcp(rng, n) for _ in range(POOL)]


# ----------------------------------------------------------------------------- timing
def time_calls(fn, args_pool: list, reps: int, warmup: int | None = None) -> list[float]:
    """Per-call wall times [s] of ``fn(*args)``, cycling over ``args_pool``.

    ``warmup`` untimed calls first (default: 5 % of ``reps``, at least 20).
    """
    warmup = max(20, reps // 20) if warmup is None else warmup
    for k in range(warmup):
        fn(*args_pool[k % len(args_pool)])
    times = []
    for k in range(reps):
        args = args_pool[k % len(args_pool)]
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return times


def stats(times: list[float], per: int = 1) -> dict:
    t = np.asarray(times) / per
    return {"median": float(np.median(t)), "mean": float(t.mean()), "std": float(t.std(ddof=1)),
            "min": float(t.min()), "reps": int(t.size)}


def _reference_batch(Fs: np.ndarray, qs: np.ndarray) -> None:
    for F, q in zip(Fs, qs):
        lemke_reference(F, q)


def prepare_case(case: str, n: int, seed: int) -> dict:
    """Problem pool and batches of one case, after checking that every problem is solved."""
    pool = make_pool(case, n, seed)
    pivots = []
    for F, q in pool:  # correctness first: solved, and both solvers agree
        sol = solve_lcp(F, q)
        if sol.status is not LCPStatus.SOLVED:
            raise RuntimeError(f"{case} n={n}: benchmark problem not solved ({sol.status.name})")
        st, z_ref, it_ref = lemke_reference(F, q)
        if st != STATUS_SOLVED or np.abs(z_ref - sol.z).max() > 1e-7:
            raise RuntimeError(f"{case} n={n}: reference disagrees with solve_lcp")
        pivots.append(it_ref)
    # batches of B problems with per-problem F (B, n, n)
    batches = []
    for k in range(POOL):
        idx = [(k + j) % POOL for j in range(BATCH)]
        batches.append((np.stack([pool[i][0] for i in idx]), np.stack([pool[i][1] for i in idx])))
    if not all(solve_lcp_batch(*b).all_found for b in batches):
        raise RuntimeError(f"{case} n={n}: batch not solved")
    return {"case": case, "n": n, "pool": pool, "batches": batches,
            "pivots": float(np.mean(pivots)),
            "times": {"single": [], "ref_single": [], "batch": [], "ref_batch": []}}


def time_case_round(c: dict, reps: int, ref_reps: int) -> None:
    """One round of the four timings of a case; appends to ``c['times']``."""
    t = c["times"]
    t["single"] += time_calls(solve_lcp, c["pool"], reps)
    t["ref_single"] += time_calls(lemke_reference, c["pool"], ref_reps, warmup=5)
    t["batch"] += time_calls(solve_lcp_batch, c["batches"], max(reps // 2, 20))
    t["ref_batch"] += time_calls(_reference_batch, c["batches"], max(ref_reps // BATCH, 5),
                                 warmup=1)


def case_rows(c: dict) -> list[dict]:
    t = c["times"]
    base = {"case": c["case"], "n": c["n"], "mean_lemke_pivots": c["pivots"]}
    rows = [
        {**base, "mode": "single", "batch": 1, "ours": stats(t["single"]),
         "reference": stats(t["ref_single"])},
        {**base, "mode": "batch_per_call", "batch": BATCH, "ours": stats(t["batch"]),
         "reference": stats(t["ref_batch"])},
        {**base, "mode": "batch_per_problem", "batch": BATCH, "ours": stats(t["batch"], BATCH),
         "reference": stats(t["ref_batch"], BATCH)},
    ]
    for r in rows:
        r["paper_over_ours"] = PAPER_MEAN / r["ours"]["mean"]
        r["reference_over_ours"] = r["reference"]["mean"] / r["ours"]["mean"]
    return rows


# ----------------------------------------------------------------------------- machine / output
def machine_info() -> dict:
    """Where this benchmark ran (see benchmarks/_report.py)."""
    import numba
    return _report.machine_info(numba=numba.__version__)


def _fmt(s: dict) -> str:
    """Two table cells: median, mean ± std."""
    return f"{s['median']:.2e} | {s['mean']:.2e} ± {s['std']:.1e}"


def markdown(result: dict) -> str:
    m = result["machine"]
    lines = [
        START,
        "## LCP solver (`benchmarks/bench_lcp.py`)",
        "",
        f"Run {result['timestamp']} ({'quick' if result['quick'] else 'full'} mode) on "
        f"{m['processor']} ({m['cpu_count']} CPUs), {m['platform']}; Python {m['python']}, "
        f"numpy {m['numpy']}, numba {m['numba']}.",
        "",
        "Times in seconds per call (per problem for `batch /problem`). "
        "*Reference* is the pure-numpy Lemke (`lcs._lemke_reference`) on the same problems. "
        f"Paper: C3 LCP projection time {PAPER_MEAN:.1e} ± {PAPER_STD:.1e} s "
        f"({PAPER_MACHINE}); *paper/ours* and *ref/ours* are ratios of means, > 1 means ours is "
        "faster. The paper's figure is one "
        "projection inside the authors' C++ controller on another machine, so the ratio "
        "compares orders of magnitude, not identical workloads.",
        "",
        "| case | n | mode | ours median [s] | ours mean ± std [s] | reference median [s] "
        "| reference mean ± std [s] | ref/ours | paper/ours | Lemke pivots |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    mode_name = {"single": "single", "batch_per_call": f"batch B={BATCH} /call",
                 "batch_per_problem": "batch /problem"}
    for r in result["rows"]:
        lines.append(
            f"| {r['case']} | {r['n']} | {mode_name[r['mode']]} | {_fmt(r['ours'])} | "
            f"{_fmt(r['reference'])} | {r['reference_over_ours']:.1f} | "
            f"{r['paper_over_ours']:.2f} | {r['mean_lemke_pivots']:.1f} |"
        )
    lines += [
        "",
        "Notes: for n ≤ 3 `solve_lcp` takes the compiled complementary-basis enumeration path "
        "(0 Lemke pivots), while the reference always pivots; *Lemke pivots* is the mean "
        "pivot count of the reference on the pool. Single calls include argument validation "
        "and result construction (Python overhead), which dominates for small n. Timings are "
        f"interleaved over {result['settings']['rounds']} round(s) of all cases; on a shared "
        "VM the small-n medians still move by about ±30 % from run to run.",
        END,
    ]
    return "\n".join(lines)


def write_markdown(section: str) -> None:
    """Insert or replace this benchmark's section of docs/BENCHMARKS.md."""
    _report.replace_section(section, "bench_lcp")


def main(argv: list[str] | None = None) -> int:
    parser = _report.argument_parser(__doc__,
                                     "fewer repetitions (a smoke run, noisier numbers)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the problem pools")
    args = parser.parse_args(argv)
    reps, ref_reps, rounds = (200, 40, 1) if args.quick else (20000, 2000, 5)

    # warm-up: load/compile the numba kernels before anything is timed
    t0 = time.perf_counter()
    solve_lcp(np.eye(4) + 0.1, -np.ones(4))
    solve_lcp(np.eye(2), [-1.0, 1.0])
    solve_lcp_batch(np.eye(3), -np.ones((2, 3)))
    print(f"warm-up (numba compile / cache load): {time.perf_counter() - t0:.2f} s", flush=True)

    cases = [prepare_case(case, n, args.seed + 100 * i)
             for i, (case, n) in enumerate([("contact", n) for n in SIZES] + [("cartpole", 2)])]
    # Interleaved rounds: every case is timed in every round, so slow periods of a shared
    # machine spread over all cases instead of biasing one.
    bar = _report.progress(rounds * len(cases), "lcp", args.quiet)
    for r in range(rounds):
        for i, c in enumerate(cases):
            _report.show(bar, f"lcp round {r + 1}/{rounds}: {c['case']} n={c['n']}")
            t0 = time.perf_counter()
            time_case_round(c, reps // rounds, ref_reps // rounds)
            t = c["times"]
            _report.say(f"[round {r + 1}/{rounds}, case {i + 1}/{len(cases)}] {c['case']} n={c['n']}: "
                        f"single median {np.median(t['single']):.2e} s (reference "
                        f"{np.median(t['ref_single']):.2e} s), batch/problem "
                        f"{np.median(t['batch']) / BATCH:.2e} s  [{time.perf_counter() - t0:.1f} s]", bar)
            bar.update(bar.done + 1)
    rows = [row for c in cases for row in case_rows(c)]

    result = {
        "benchmark": "bench_lcp",
        "timestamp": _report.utc_timestamp(),
        "quick": args.quick,
        "machine": machine_info(),
        "settings": {"reps_single": reps, "reps_reference": ref_reps, "batch": BATCH,
                     "pool": POOL, "rounds": rounds, "seed": args.seed,
                     "timer": "time.perf_counter"},
        "paper": {"lcp_projection_mean_s": PAPER_MEAN, "lcp_projection_std_s": PAPER_STD,
                  "source": "C3 paper, Table III", "machine": PAPER_MACHINE},
        "rows": rows,
    }
    section = markdown(result)
    _report.publish(result, section, "bench_lcp", JSON_PATH)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
