"""Seed 004 Fig. 9 at the paper's twisting-bar size: the default solver (Anderson-accelerated
local-global iterations, history carried across steps), its ablations, the paper's plain
iteration, the incomplete Jacobi baseline, and the paper's named remedy (Chebyshev).

The paper's bar (Table 3): ARAP, ρ = 1000 kg/m³, E = 1e9 Pa, ν = 0.45, 5.3k vertices and 26.4k
tetrahedra, errors at frame 800; its length, cross-section and twist rate are not given, and its
5 tetrahedra per vertex suggest an unstructured mesh. The closest grid: 44 × 10 × 10 cells of 6
tetrahedra = exactly 26 400 tetrahedra, 5 445 vertices (the scene's 1 m × 0.2 m bar). The ends
turn at ±``twist_rate`` (π/4 rad/s: 360° of relative twist at frame 400; the bar sheds 360° past
about 450°, so frame 800 repeats frame 400 and is not run by default).

Each row: a trajectory simulated to the frame with one solver (``trajectory``: the defaults, or
the paper's plain iteration, ``anderson_window=0``), then, from that state, the relative energy
error e_k = (ε(q^k) − ε(q*)) / (ε(q⁰) − ε(q*)) of the next step's iterates for each variant
(:func:`plants.sim.deformable.convergence.relative_energy_error`: q⁰ = x_t + h v_t, the inertial
prediction; q* from ``reference`` default iterations, its gradient norm relative to q⁰'s is
reported; the default variant continues the trajectory's carried Anderson history). With
``--chebyshev``, plain iterations with Chebyshev semi-iterative acceleration (Wang 2015):
q^{k+1} = ω_{k+1}(q̂^{k+1} − q^{k−1}) + q^{k−1}, ω = 1 for the first ``delay`` iterations, then
ω = 2/(2 − ρ²), ω ← 4/(4 − ρ²ω).

Writes ``benchmarks/results/bench_deformable_twist_paper.json`` and the
``bench_deformable_twist_paper`` section of ``docs/BENCHMARKS.md`` (with ``--quick``:
``bench_deformable_twist_small``, the 20 × 4 × 4 bar at E = 1e5 and 1e9).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _report  # noqa: E402

from plants.sim import load_scene  # noqa: E402
from plants.sim.deformable import FBAOptions  # noqa: E402
from plants.sim.deformable.convergence import relative_energy_error  # noqa: E402

KEYS = {False: "bench_deformable_twist_paper", True: "bench_deformable_twist_small"}  # by --quick
# (ρ, delay): the best two of a sweep over ρ ∈ {0.8, 0.9, 0.95, 0.99}, delay ∈ {1, 2}
CHEBYSHEV = ((0.9, 2), (0.95, 2))
_D = FBAOptions()
# option changes relative to the trajectory's options (so each is spelled out in full)
VARIANTS = {f"default (Anderson m={_D.anderson_window}, carried)": {"anderson_window": _D.anderson_window,
                                                                  "anderson_carry": _D.anderson_carry},
            f"Anderson m={_D.anderson_window}, fresh each step": {"anderson_window": _D.anderson_window,
                                                                 "anderson_carry": False},
            "plain (paper)": {"anderson_window": 0},
            "Jacobi (incomplete)": {"global_step": "jacobi", "anderson_window": 0}}
TRAJECTORIES = {"default": {}, "plain": {"anderson_window": 0}}


def iterate(sim, n: int, rho: float | None = None, delay: int = 2) -> list[np.ndarray]:
    """n plain local-global iterations of one contact-free step from ``sim``'s state (the
    simulator's own local step, right-hand side and complete global solve), optionally
    Chebyshev-accelerated; returns the iterates (n, n_nodes, 3). ``sim`` is left unchanged."""
    sysm, h = sim.system, sim.dt
    free = sysm.free
    x_tilde = sim.x + h * sim.v + h * h * sim.world.gravity
    x_pin = sim._pinned_at(sim.t + h)
    q = sim.x + h * sim.v  # the default initial guess ("extrapolated")
    q[sysm.pinned] = x_pin
    qf = q[free].copy()
    prev, omega, out = qf.copy(), 1.0, []
    for k in range(n):
        targets = sim._local(q, [None] * len(sysm.parts))
        q_hat = sysm.solve(sim._b(targets, x_tilde[free], x_pin), qf)
        if rho is None or k < delay:
            new = q_hat
        else:
            omega = 2.0 / (2.0 - rho**2) if k == delay else 4.0 / (4.0 - rho**2 * omega)
            new = omega * (q_hat - prev) + prev
        prev, qf = qf, new
        q[free] = qf
        out.append(q.copy())
    return out


def measure(sim, iterations: int, reference: int, chebyshev: bool) -> dict:
    conv = relative_energy_error(sim, iterations=iterations, reference_iterations=reference, variants=VARIANTS)
    out = {"reference_gradient": conv.reference_gradient,
           "errors": {k: [float(x) for x in e] for k, e in conv.errors.items()},
           "ms_per_iteration": {k: 1e3 * t for k, t in conv.seconds_per_iteration.items()}}
    if chebyshev:  # from the same q⁰ and q*
        sysm, h = sim.system, sim.dt
        x_tilde = sim.x + h * sim.v + h * h * sim.world.gravity
        q0 = sim.x + h * sim.v
        q0[sysm.pinned] = sim._pinned_at(sim.t + h)
        e0, e_star = (sysm.incremental_potential(q, x_tilde) for q in (q0, conv.q_star))
        for rho, delay in CHEBYSHEV:
            out["errors"][f"plain + Chebyshev ρ={rho} after {delay}"] = [
                float((sysm.incremental_potential(q, x_tilde) - e_star) / (e0 - e_star))
                for q in iterate(sim, iterations, rho, delay)]
    return out


def render(res: dict) -> str:
    start, end = _report.markers(KEYS[res["quick"]])
    m = res["machine"]
    L = [start, ("## Twisting bar, small and quick (`benchmarks/bench_deformable_twist_paper.py --quick`)" if res["quick"]
                 else "## Twisting bar at the paper's size: default (Anderson), plain, Jacobi "
                 "(`benchmarks/bench_deformable_twist_paper.py`)"),
         "", f"Run {res['timestamp']} on {m['processor']} ({m['cpu_count']} cores, load {m['load_avg'][0]:.1f}; shared "
         "machine: wall times are noisy)" + (" (--quick)" if res["quick"] else "") + ".", "",
         f"ARAP bar, ν = 0.45, ρ = 1000 kg/m³, {res['cells'][0]} × {res['cells'][1]} × {res['cells'][1]} cells: "
         f"{res['vertices']} vertices, {res['tets']} tetrahedra (paper: 5.3k / 26.4k); ends turning at "
         f"±{res['twist_rate']:.3g} rad/s, h = 0.01 s. Trajectory: the solver that simulated the bar up to the "
         "frame; from its state, e_k of the next step's iterates for each variant (q⁰ = x_t + h v_t; q* from "
         f"{res['reference']} default iterations). ms/it: wall time of the measured step over its iterations "
         "(the default pays one extra local step per time step). A plain trajectory leaves no Anderson history "
         "to carry, so its two Anderson rows coincide. Chebyshev rows: from the same q⁰ and q*.", "",
         "Trajectory column: its solver, the rejected Anderson iterates over its steps, and the differences it "
         "carries into the measured step (0 after a rejection in the last iteration of the step before: then "
         "the carried and fresh rows coincide).", "",
         "| E [Pa] | frame | twist | trajectory | variant | e_1 | e_3 | e_5 | e_10 | ms/it | ‖∇ε(q*)‖/‖∇ε(q⁰)‖ |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        traj = r["trajectory"]
        if "trajectory_rejections" in r:
            traj += f" ({r['trajectory_rejections']} rej. / {r['trajectory_steps']} steps, carries {r['carried_history']})"
        for key, e in r["errors"].items():
            ms = r["ms_per_iteration"].get(key)
            L.append(f"| {r['youngs']:.0e} | {r['frame']} | {r['twist_deg']:.0f}° | {traj} | {key} | "
                     f"{e[0]:.2e} | {e[2]:.2e} | {e[4]:.2e} | {e[9]:.2e} | "
                     f"{'' if ms is None else f'{ms:.0f}'} | {r['reference_gradient']:.1e} |")
    L.append(end)
    return "\n".join(L)


def main(argv=None) -> None:
    parser = _report.argument_parser(__doc__, "the 20 × 4 × 4 bar (525 vertices) at π rad/s, frame 100 (360°)")
    parser.add_argument("--cells", nargs=2, type=int, default=None, metavar=("ALONG", "ACROSS"),
                        help="bar cells (default 44 10: the paper's 26.4k tetrahedra)")
    parser.add_argument("--frames", nargs="+", type=int, default=None, help="frames (default 400; --quick 100)")
    parser.add_argument("--youngs", nargs="+", type=float, default=None, help="E [Pa] (default 1e9; --quick 1e5 1e9)")
    parser.add_argument("--twist-rate", type=float, default=None, help="[rad/s] (default π/4; --quick π)")
    parser.add_argument("--trajectories", nargs="+", choices=sorted(TRAJECTORIES), default=["default", "plain"])
    parser.add_argument("--chebyshev", action="store_true", help="add plain + Chebyshev rows")
    args = parser.parse_args(argv)
    along, across = args.cells or ((20, 4) if args.quick else (44, 10))
    frames = args.frames or ([100] if args.quick else [400])
    youngs_list = args.youngs or ([1e5, 1e9] if args.quick else [1e9])
    rate = args.twist_rate or (np.pi if args.quick else np.pi / 4)
    iterations, reference = 10, 400
    rows, sim = [], None
    for youngs in youngs_list:
        for traj in args.trajectories:
            sim = load_scene("twisting-bar", youngs=youngs, cells_along=along, cells_across=across, twist_rate=rate,
                             solver_options=TRAJECTORIES[traj])
            rejections, steps = 0, 0
            for frame in _report.track(frames, f"E={youngs:.0e} {traj}", args.quiet, "frames"):
                t0 = time.perf_counter()
                stats = sim.run((frame - sim.step_index) * sim.dt).stats
                rejections += int(np.sum(stats["anderson_rejections"]))
                steps += len(stats["anderson_rejections"])
                history = 0 if sim._anderson is None else sim._anderson.depth
                row = {"youngs": youngs, "frame": frame, "trajectory": traj,
                       "twist_deg": float(np.degrees(2 * rate * sim.t)), "trajectory_rejections": rejections,
                       "trajectory_steps": steps, "carried_history": history,
                       **measure(sim, iterations, reference, args.chebyshev)}
                rows.append(row)
                _report.say(f"twist {along}x{across} E={youngs:.0e} {traj} frame {frame}: e5 "
                            + ", ".join(f"{k} {e[4]:.2e}" for k, e in row["errors"].items())
                            + f" ({time.perf_counter() - t0:.0f} s)")
    res = {"timestamp": _report.utc_timestamp(), "machine": _report.machine_info(), "quick": args.quick,
           "cells": [along, across], "vertices": int(sim.system.n), "twist_rate": rate,
           "tets": int(sum(b.mesh.n_elements for b in sim.world.bodies)),
           "iterations": iterations, "reference": reference, "rows": rows}
    key = KEYS[args.quick]
    _report.publish(res, render(res), key, ROOT / "benchmarks" / "results" / f"{key}.json")


if __name__ == "__main__":
    main()
