"""A Franka Panda pinches a soft ball on the ground and lifts it (scene ``panda-pinch``).

The Panda (example-robot-data's URDF) follows a planned pinch-and-lift. By default it is coupled
two-way through the contact rows: its joint PD actuators track the plan, and the ball's contact
forces act on its dynamics, so the ball holds the fingers open (the script prints by how much and
the finger actuators' force). With ``--coupling one-way`` the fingertip pads are kinematic
obstacles placed by forward kinematics. The script prints the ball's height, the pads' forces on
it and their vertical sum against its weight, with seed 004's solver ("fba") or seed 002's
("nsn"), and can write a meshcat recording::

    python examples/deformable_grasp.py                          # fba, two-way, 1.5 s
    python examples/deformable_grasp.py --solver nsn --html grasp.html
    python examples/deformable_grasp.py --coupling one-way
"""

from __future__ import annotations

import argparse

import numpy as np

from plants import load_scene


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--solver", choices=("fba", "nsn"), default="fba", help="deformable solver")
    ap.add_argument("--duration", type=float, default=1.5, help="simulated seconds (the lift ends at 0.8 s)")
    ap.add_argument("--cells", type=int, default=5, help="ball resolution (cells per diameter)")
    ap.add_argument("--coupling", choices=("two-way", "one-way"), default="two-way",
                    help="the Panda's dynamics coupled to the ball, or kinematic pads")
    ap.add_argument("--html", default=None, help="write a meshcat recording to this file")
    args = ap.parse_args(argv)
    sim = load_scene("panda-pinch", solver=args.solver, cells=args.cells, coupling=args.coupling)
    z0 = sim.x[:, 2].mean()
    traj = sim.run(args.duration)
    f = sim.obstacle_forces()
    weight = sim.info["mass"] * 9.81
    lifted = sim.x[:, 2].mean() - z0
    print(f"solver {args.solver}: ball of {sim.system.n} nodes lifted {100 * lifted:.2f} cm "
          f"(commanded {100 * sim.info['lift']:.0f} cm)")
    pads = (("panda/left_pad", "panda/right_pad") if args.coupling == "two-way"
            else ("panda_left_pad", "panda_right_pad"))
    for name in (*pads, "ground"):
        print(f"  force of {name:16s} on the ball [N]: {np.array2string(f[name], precision=3)}")
    vertical = f[pads[0]][2] + f[pads[1]][2]
    print(f"  pads' vertical force / weight: {vertical / weight:.4f}")
    if args.coupling == "two-way":
        open_by = traj.q[-1, 7:] - sim.info["trajectory"](sim.t)[7:]
        tau, _ = sim.robot_torques("panda")
        print(f"  fingers held open by the ball [mm]: {np.array2string(1e3 * open_by, precision=2)}; "
              f"finger actuator forces [N]: {np.array2string(tau[7:], precision=2)}")
    if args.html:
        from plants.sim.deformable.viewer import DeformableViewer

        with DeformableViewer(sim.world) as viewer:
            viewer.record(traj, fps=20)
            print(f"wrote {viewer.save_html(args.html)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
