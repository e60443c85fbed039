"""Cost of multi-point contact (issue #20 item 4): the cube scenes and clutter-40 with their cubes
as corner spheres (the shipped default) and as boxes with contact manifolds.

* ``corners``: each cube is its box plus eight 1 mm corner spheres; box–box pairs keep one
  GJK/EPA point (edge–edge contact), the corners touch the ground and other boxes in closed form.
* ``box``: each cube is its box alone; box–ground and box–box pairs get their manifold (up to 4
  points: the incident face's corners, or the clipped face polygon, plants/sim/manifold.py).

For each scene and mode: µs per step (whole step: detection, assembly, SAP, update; the median of
``--rounds`` interleaved rounds after a warm-up), mean contacts per step, mean and max SAP
iterations, the final heights against the resting heights (stacks: 0.05 + 0.1 i m), and the share
of steps whose detection was spent in box manifolds (detection time / step time for both modes).

``--baseline DIR``: also run the shipped (corner) scenes with the checkout in DIR (e.g. the main
branch before manifolds) in a child process, interleaved with the rounds, to show what the change
costs the default scenes (same contacts and iterations expected; the time of the whole step).

    python benchmarks/bench_contact_manifold.py            # 1 s per scene (clutter-40 2 s), 3 rounds
    python benchmarks/bench_contact_manifold.py --quick    # 0.2 s per scene (clutter 0.5 s), 1 round
    python benchmarks/bench_contact_manifold.py --baseline /work/main
    python benchmarks/bench_contact_manifold.py --a1-only   # a1-drop-8 with 1 vs 4 points per pair

The last part, ``a1-drop-8`` (every solver, 0.35 s) with one point per pair and with manifolds,
shows what manifolds do to a robot with box links: no deep penetration at landing, more contacts.
"""

from __future__ import annotations

import json
import time

import numpy as np

from _report import ROOT, argument_parser, machine_info, progress, publish, say, show, track, utc_timestamp

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_contact_manifold.json"
KEY = "bench_contact_manifold"
SCENES = ["cube-slide", "cube-rest-3", "cube-rest-5", "cube-drop-1", "cube-drop-3", "cube-drop-5", "clutter-40"]


def _sim(scene: str, mode: str):
    from plants import load_scene
    from plants.sim.scenes import CubeSpec

    if scene == "clutter-40":
        return load_scene(scene, cube_contact=mode)
    return load_scene(scene, cube=CubeSpec(contact=mode))


def run_case(scene: str, mode: str, duration: float) -> dict:
    """One run of ``scene`` with cubes in ``mode``; per-step time split into detection and the rest."""
    sim = _sim(scene, mode)
    sim.run(min(0.02, duration))  # warm-up (numba caches, first factorizations)
    sim = _sim(scene, mode)
    det = sim.scene.detector
    detect, spent = det.detect, [0.0]

    def timed(R, p):
        t0 = time.perf_counter()
        out = detect(R, p)
        spent[0] += time.perf_counter() - t0
        return out

    det.detect = timed
    t0 = time.perf_counter()
    traj = sim.run(duration)
    wall = time.perf_counter() - t0
    del det.detect
    n = traj.n_steps
    q = traj.q[-1]
    row = {"scene": scene, "mode": mode, "steps": n, "dt": sim.dt, "us_per_step": 1e6 * wall / n,
           "detect_us_per_step": 1e6 * spent[0] / n,
           "contacts_mean": float(traj.stats["n_contacts"].mean()),
           "contacts_max": int(traj.stats["n_contacts"].max()),
           "iterations_mean": float(traj.stats["iterations"].mean()),
           "iterations_max": int(traj.stats["iterations"].max()),
           "nonconverged_steps": int((traj.stats["status"] != 0).sum()),
           "deep_penetration_steps": int(traj.summary.get("deep_penetration_steps", 0))}
    if scene.startswith("cube-rest") or scene.startswith("cube-drop"):
        z = np.sort(q.reshape(-1, 7)[:, 2])
        row["height_error_m"] = float(np.abs(z - (0.05 + 0.1 * np.arange(z.size))).max())
    return row


BASELINE_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
from plants import load_scene
scene, duration = sys.argv[1], float(sys.argv[2])
load_scene(scene).run(min(0.02, duration))
sim = load_scene(scene)
t0 = time.perf_counter()
traj = sim.run(duration)
wall = time.perf_counter() - t0
print(json.dumps({"us_per_step": 1e6 * wall / traj.n_steps, "contacts_mean": float(traj.stats["n_contacts"].mean()),
                  "iterations_mean": float(traj.stats["iterations"].mean())}))
"""


def run_baseline(checkout: str, scene: str, duration: float) -> dict:
    """The shipped scene (corner cubes) run by the code in ``checkout`` (a child process)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=checkout)
    out = subprocess.run([sys.executable, "-c", BASELINE_CHILD, scene, str(duration)], cwd=checkout, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argument_parser(__doc__, "0.2 s per scene (clutter-40 0.5 s), 1 round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median reported)")
    parser.add_argument("--baseline", default=None, help="a checkout to run the shipped scenes with, for comparison")
    parser.add_argument("--a1-only", action="store_true",
                        help="only the a1-drop-8 part, merged into the existing JSON and markdown")
    args = parser.parse_args()
    if args.a1_only:
        result = json.loads(JSON_PATH.read_text())
        result["a1"] = a1_part(0.1 if args.quick else 0.35, args.quiet)
        result["a1"].update(timestamp=utc_timestamp(), load_avg=machine_info()["load_avg"][0])
        publish(result, render(result), KEY, JSON_PATH)
        return
    rounds = 1 if args.quick else args.rounds
    rows, baseline = [], {}
    bar = progress(len(SCENES) * 2 * rounds, "manifold", args.quiet)
    for scene in SCENES:
        if scene.startswith("cube-drop"):
            duration = 0.5 if args.quick else 1.5  # through the landing (at ~0.2 s)
        elif scene == "clutter-40":
            duration = 0.5 if args.quick else 2.0
        else:
            duration = 0.2 if args.quick else 1.0
        per_mode, base = {}, []
        for r in range(rounds):
            for mode in ("corners", "box"):
                show(bar, f"{scene} {mode} round {r + 1}")
                per_mode.setdefault(mode, []).append(run_case(scene, mode, duration))
                bar.update(bar.done + 1)
            if args.baseline:
                show(bar, f"{scene} baseline round {r + 1}")
                base.append(run_baseline(args.baseline, scene, duration))
        if base:
            times = [x["us_per_step"] for x in base]
            baseline[scene] = dict(base[int(np.argsort(times)[len(times) // 2])], us_per_step_rounds=times)
        for mode, runs in per_mode.items():
            times = [x["us_per_step"] for x in runs]
            row = dict(runs[int(np.argsort(times)[len(times) // 2])])
            row["us_per_step_rounds"] = times
            rows.append(row)
            say(f"{scene:12s} {mode:7s}: {row['us_per_step']:8.0f} µs/step (detection "
                f"{row['detect_us_per_step']:6.0f}), {row['contacts_mean']:6.1f} contacts, "
                f"{row['iterations_mean']:.2f} it.", bar)
    bar.close()
    result = {"timestamp": utc_timestamp(), "machine": machine_info(), "quick": args.quick,
              "rounds": rounds, "rows": rows, "baseline_checkout": args.baseline, "baseline": baseline}
    result["a1"] = a1_part(0.1 if args.quick else 0.35, args.quiet)
    publish(result, render(result), KEY, JSON_PATH)


def a1_part(duration: float, quiet: bool) -> dict:
    """``a1-drop-8`` with one contact point per pair (before manifolds) and with manifolds (the
    default): every solver at defaults through the landing."""
    import warnings

    from plants import load_scene

    out = {"duration_s": duration, "rows": []}
    cases = [(cap, s) for cap in (1, 4) for s in ("sap", "canal", "subadmm", "nsn", "pgs")]
    for cap, solver in track(cases, "a1-drop-8", quiet, "runs"):
        sim = load_scene("a1-drop-8", solver=solver, max_contacts_per_pair=cap)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traj = sim.run(duration)
        wall = time.perf_counter() - t0
        st = traj.stats
        out["rows"].append({"max_contacts_per_pair": cap, "solver": solver, "ms_per_step": 1e3 * wall / traj.n_steps,
                            "contacts_mean": float(st["n_contacts"].mean()),
                            "nonconverged_steps": int((st["status"] != 0).sum()), "steps": traj.n_steps,
                            "worst_residual": float(np.nanmax(st["residual"])),
                            "deep_penetration_steps": int(traj.summary.get("deep_penetration_steps", 0)),
                            "min_phi_m": float(st["min_phi"].min())})
        r = out["rows"][-1]
        say(f"a1-drop-8 cap {cap} {solver:8s}: {r['ms_per_step']:.1f} ms/step, {r['contacts_mean']:.1f} contacts, "
            f"{r['nonconverged_steps']} non-converged, {r['deep_penetration_steps']} deep, "
            f"deepest {1e3 * -r['min_phi_m']:.2f} mm")
    return out


def render(result: dict) -> str:
    """The markdown section of ``result``."""
    rows, baseline, rounds = result["rows"], result["baseline"], result["rounds"]
    m = result["machine"]
    lines = [f"<!-- {KEY}:start -->",
             "## Multi-point contact: corner spheres vs box manifolds (`benchmarks/bench_contact_manifold.py`)", "",
             "Each cube as its box plus 8 corner spheres (`CubeSpec(contact=\"corners\")`, the shipped "
             "default; box–box pairs keep one GJK/EPA point) or as its box alone with box–ground and "
             "box–box contact manifolds (`contact=\"box\"`, up to 4 points per pair, "
             "docs/contact-solvers.md §10). SAP at defaults; µs per whole step "
             f"(median of {rounds} interleaved round(s)), detection µs per step alone. Run "
             f"{result['timestamp']} on {m['processor']} ({m['cpu_count']} cores shared by several "
             f"engineers, load {m['load_avg'][0]:.1f}: timings are noisy){' — --quick' if result['quick'] else ''}.",
             "",
             "| scene | δt [ms] | steps | cubes as | µs/step | detection µs/step | contacts (mean, max) | "
             "SAP it. (mean, max) | non-converged | max height error [mm] | box / corners time |",
             "|---|---:|---:|---|---:|---:|---|---|---:|---:|---:|"]
    for r in rows:
        ref = next(x for x in rows if x["scene"] == r["scene"] and x["mode"] == "corners")
        h = f"{1e3 * r['height_error_m']:.3f}" if "height_error_m" in r else "—"
        ratio = f"{r['us_per_step'] / ref['us_per_step']:.2f}" if r["mode"] == "box" else ""
        lines.append(f"| {r['scene']} | {1e3 * r['dt']:g} | {r['steps']} | {r['mode']} | {r['us_per_step']:.0f} | "
                     f"{r['detect_us_per_step']:.0f} | {r['contacts_mean']:.1f}, {r['contacts_max']} | "
                     f"{r['iterations_mean']:.2f}, {r['iterations_max']} | {r['nonconverged_steps']} | {h} | {ratio} |")
    if baseline:
        lines += ["", f"Shipped scenes (corner cubes) against the checkout `{result['baseline_checkout']}` (before "
                  "manifolds), "
                  "same rounds, interleaved:", "",
                  "| scene | before µs/step | after µs/step | after / before | contacts before, after | "
                  "SAP it. before, after |", "|---|---:|---:|---:|---|---|"]
        for scene, b in baseline.items():
            r = next(x for x in rows if x["scene"] == scene and x["mode"] == "corners")
            lines.append(f"| {scene} | {b['us_per_step']:.0f} | {r['us_per_step']:.0f} | "
                         f"{r['us_per_step'] / b['us_per_step']:.2f} | {b['contacts_mean']:.1f}, {r['contacts_mean']:.1f} | "
                         f"{b['iterations_mean']:.2f}, {r['iterations_mean']:.2f} |")
    if result.get("a1"):
        a1 = result["a1"]
        lines += ["", f"`a1-drop-8` (8 Unitree A1: trunk, thigh and calf boxes) through the landing, "
                  f"{a1['duration_s']:g} s at δt = 1/240 s, every solver at defaults, one point per pair "
                  f"(`max_contacts_per_pair=1`, before manifolds) and manifolds (4, the default)"
                  + (f"; run {a1['timestamp']}, load {a1['load_avg']:.1f}" if "timestamp" in a1 else "") + ":", "",
                  "| solver | points per pair | contacts (mean) | ms/step | non-converged steps | worst residual | "
                  "deep-penetration steps | deepest [mm] |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in sorted(a1["rows"], key=lambda r: (r["solver"], r["max_contacts_per_pair"])):
            lines.append(f"| {r['solver']} | {r['max_contacts_per_pair']} | {r['contacts_mean']:.1f} | "
                         f"{r['ms_per_step']:.1f} | {r['nonconverged_steps']}/{r['steps']} | {r['worst_residual']:.1e} | "
                         f"{r['deep_penetration_steps']} | {-1e3 * r['min_phi_m']:.2f} |")
    lines.append(f"<!-- {KEY}:end -->")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
