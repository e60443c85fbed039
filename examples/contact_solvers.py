"""Every contact solver on the same scene, side by side (seed 001 SAP, seed 000 CANAL and
SubADMM, seed 002 NSN, and the PGS baseline).

Each solver runs the scene with its default options; the table shows, per solver, whether the
run completed, the steps whose solve did not meet its tolerance, the deepest penetration, the
wall time per step and how far the final positions are from SAP's::

    python examples/contact_solvers.py                          # cube-drop-3 for 0.3 s
    python examples/contact_solvers.py --scene cube-rest-5 --duration 0.05
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from plants import available_scenes, load_scene
from plants.errors import ContactSolveError

SOLVERS = ("sap", "canal", "subadmm", "nsn", "pgs")


def run_solver(scene: str, solver: str, duration: float) -> dict:
    """Run ``scene`` with ``solver`` (default options); what happened, as a row of the table."""
    sim = load_scene(scene, solver=solver)
    t0 = time.perf_counter()
    try:
        traj = sim.run(duration)
    except ContactSolveError as err:  # a solver that stops the run says where and why
        return {"solver": solver, "completed": False, "note": f"stopped at step {err.step}: "
                f"{err.result.status.name}", "q": None}
    wall = time.perf_counter() - t0
    status = traj.stats["status"]
    return {"solver": solver, "completed": True, "q": traj.q[-1],
            "unconverged": int(np.count_nonzero(status != 0)),
            "penetration_mm": max(0.0, -1e3 * float(np.min(traj.stats["min_phi"]))),
            "ms_per_step": 1e3 * wall / traj.n_steps, "note": ""}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", default="cube-drop-3", choices=available_scenes())
    ap.add_argument("--duration", type=float, default=0.3, help="simulated seconds")
    ap.add_argument("--solvers", nargs="+", choices=SOLVERS, default=list(SOLVERS))
    args = ap.parse_args(argv)
    rows = [run_solver(args.scene, s, args.duration) for s in args.solvers]
    reference = next((r["q"] for r in rows if r["solver"] == "sap" and r["completed"]), None)
    print(f"{args.scene}, {args.duration} s, default options")
    print(f"{'solver':8s} {'done':5s} {'unconverged':>11s} {'penetration':>12s} "
          f"{'ms/step':>8s} {'|q - q_sap|':>12s}")
    for r in rows:
        if not r["completed"]:
            print(f"{r['solver']:8s} {'no':5s} {r['note']}")
            continue
        dq = "" if reference is None else f"{np.abs(r['q'] - reference).max():.2e}"
        print(f"{r['solver']:8s} {'yes':5s} {r['unconverged']:11d} "
              f"{r['penetration_mm']:9.3f} mm {r['ms_per_step']:8.2f} {dq:>12s}")
    return 0 if all(r["completed"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
