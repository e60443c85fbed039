"""Deformable bodies with seed 004's solver: the stiff box on a 10° slope (Fig. 7).

A box (E = 1e8 Pa, Stable Neo-Hookean) rests on a 10° slope: it must stick when the friction
coefficient μ is above μ* = tan 10° = 0.17633 and slide when it is below, with the analytic
acceleration g (sin θ − μ cos θ). The script runs μ* − Δμ and μ* + Δμ with the W-diagonal
complementarity preconditioner (the paper's) and with the mass-inverse one (Macklin 2019) and
prints how far the box moved in ``--duration`` seconds against the analytic distance::

    python examples/deformables.py                      # Δμ = 0.01, 1 s
    python examples/deformables.py --delta-mu 0.001     # the acceptance threshold of issue 22

docs/deformables.md has the math and the other scenes (twisting-bar, squeeze-ball, cloth-corner,
cloth-extension, pulled-through-gap).
"""

from __future__ import annotations

import argparse

import numpy as np

from plants import load_scene


def slide(mu: float, preconditioner: str, duration: float) -> tuple[float, float]:
    """(distance the box's centre moved downhill [m], the analytic distance [m])."""
    sim = load_scene("deformable-slope", mu=mu, slope_deg=10.0,
                     solver_options={"preconditioner": preconditioner})
    traj = sim.run(duration)
    x = traj.deformable_positions["box"]
    downhill = sim.info["downhill"]
    moved = float((x[-1].mean(axis=0) - x[0].mean(axis=0)) @ downhill)
    return moved, 0.5 * sim.info["slide_acceleration"] * duration ** 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--delta-mu", type=float, default=0.01, help="distance of μ from μ*")
    ap.add_argument("--duration", type=float, default=1.0, help="simulated seconds")
    args = ap.parse_args(argv)
    mu_star = float(np.tan(np.radians(10.0)))
    print(f"μ* = tan 10° = {mu_star:.5f}; box moved in {args.duration:g} s [mm] (analytic)")
    ok = True
    for preconditioner in ("w_diagonal", "mass_inverse"):
        for sign, word in ((-1, "slide"), (+1, "stick")):
            mu = mu_star + sign * args.delta_mu
            moved, exact = slide(mu, preconditioner, args.duration)
            verdict = "slides" if moved > max(0.5 * exact, 5e-3) else "sticks"
            right = (verdict == "slides") == (word == "slide")
            print(f"  {preconditioner:12s} μ = {mu:.5f}: {1e3 * moved:8.2f} ({1e3 * exact:7.2f}) "
                  f"-> {verdict}{'' if right else '  (wrong)'}")
            if preconditioner == "w_diagonal":
                ok &= right
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
