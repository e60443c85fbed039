"""A Franka Panda pinches a soft ball on the ground and lifts it (scene ``panda-pinch``).

The Panda (example-robot-data's URDF) follows a planned pinch-and-lift: Pinocchio's forward
kinematics places its two fingertip pads, which act on the ball as moving obstacles with their
velocities (one-way coupling). The script prints the ball's height, the pads' forces on it and
their vertical sum against its weight, with seed 004's solver ("fba") or seed 002's ("nsn"), and
can write a meshcat recording::

    python examples/deformable_grasp.py                          # fba, 1 s
    python examples/deformable_grasp.py --solver nsn --html grasp.html
"""

from __future__ import annotations

import argparse

import numpy as np

from plants import load_scene


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--solver", choices=("fba", "nsn"), default="fba", help="deformable solver")
    ap.add_argument("--duration", type=float, default=1.0, help="simulated seconds")
    ap.add_argument("--cells", type=int, default=5, help="ball resolution (cells per diameter)")
    ap.add_argument("--html", default=None, help="write a meshcat recording to this file")
    args = ap.parse_args(argv)
    sim = load_scene("panda-pinch", solver=args.solver, cells=args.cells)
    z0 = sim.x[:, 2].mean()
    traj = sim.run(args.duration)
    f = sim.obstacle_forces()
    weight = sim.info["mass"] * 9.81
    lifted = sim.x[:, 2].mean() - z0
    print(f"solver {args.solver}: ball of {sim.system.n} nodes lifted {100 * lifted:.2f} cm "
          f"(commanded {100 * sim.info['lift']:.0f} cm)")
    for name in ("panda_left_pad", "panda_right_pad", "ground"):
        print(f"  force of {name:16s} on the ball [N]: {np.array2string(f[name], precision=3)}")
    vertical = f["panda_left_pad"][2] + f["panda_right_pad"][2]
    print(f"  pads' vertical force / weight: {vertical / weight:.4f}")
    if args.html:
        from plants.sim.deformable.viewer import DeformableViewer

        with DeformableViewer(sim.world) as viewer:
            viewer.record(traj, fps=20)
            print(f"wrote {viewer.save_html(args.html)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
