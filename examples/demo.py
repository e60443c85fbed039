"""Cart-pole with soft walls under an LQR policy, simulated as the paper's LCS.

The interim flagship demo (until the C3 controller lands): the pole starts tilted and
moving towards a wall (the authors' test start x0 = [0.1, -0.5, 0.5, -0.4]); an LQR designed
on the contact-free model catches it, the wall pushes back through the LCP, and the demo prints
a short summary of the run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.linalg

from plants import load_plant


def main(argv: list[str] | None = None) -> int:
    """Run the demo and print its summary."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=5.0, help="simulated time [s]")
    ap.add_argument("--x0", type=float, nargs=4, default=[0.1, -0.5, 0.5, -0.4],
                    metavar=("X", "THETA", "XDOT", "THETADOT"), help="start state")
    args = ap.parse_args(argv)

    plant = load_plant("cartpole-softwalls")
    lcs, dflt = plant.lcs(), plant.defaults
    P = scipy.linalg.solve_discrete_are(lcs.A, lcs.B, dflt.Q, dflt.R)
    K = np.linalg.solve(dflt.R + lcs.B.T @ P @ lcs.B, lcs.B.T @ P @ lcs.A)

    steps = int(round(args.duration / plant.dt))
    x = np.array(args.x0, dtype=float)
    xs, lams, us = [x], [], []
    t0 = time.perf_counter()
    for _ in range(steps):
        u = -K @ x
        x, lam = plant.step(x, u)
        xs.append(x)
        lams.append(lam)
        us.append(u)
    wall = time.perf_counter() - t0
    xs, lams, us = np.array(xs), np.array(lams), np.array(us)

    contact = lams.max(axis=1) > 0
    settled = np.flatnonzero(np.abs(xs).max(axis=1) > 0.1)
    t_settle = (settled[-1] + 1) * plant.dt if settled.size else 0.0
    print(f"c3mpc demo: {plant.name} (n_x={plant.n_x}, n_lambda={plant.n_lambda}), LQR policy")
    print(f"  start state           {np.array2string(xs[0], precision=3)}")
    print(f"  simulated             {steps} steps of {plant.dt} s ({args.duration:.2f} s) "
          f"in {wall * 1e3:.1f} ms ({wall / steps * 1e6:.1f} us/step incl. one LCP each)")
    print(f"  steps in wall contact {int(contact.sum())}  (first at t = "
          f"{(np.argmax(contact) * plant.dt if contact.any() else float('nan')):.2f} s)")
    print(f"  peak wall force       right {lams[:, 0].max():.2f} N, left {lams[:, 1].max():.2f} N")
    print(f"  peak |u|              {np.abs(us).max():.2f} N")
    print(f"  all states within 0.1 from t = {t_settle:.2f} s; final state "
          f"{np.array2string(xs[-1], precision=4)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
