"""Bring your own robot, an arm we did not write the examples for: a Panda pushes a box.

Three model files (example-robot-data's panda.urdf, the UR5 push's box.xml and table.xml) -> one
task file (panda_push.yaml) -> one planning LCS (48 complementarity pairs) -> C3 -> SAP.
Run: ``python examples/own_robot/panda_push/panda_push.py`` or
``c3mpc run examples/own_robot/panda_push/panda_push.yaml`` (docs/own-robot.md).
"""

import warnings
from pathlib import Path

import numpy as np

from c3mpc import run_in_simulator
from c3mpc.tasks import build_controller
from plants import load_task_file


def main(duration: float | None = None):
    with warnings.catch_warnings():  # the Panda's meshes become convex hulls (said once per file)
        warnings.simplefilter("ignore")
        task = load_task_file(Path(__file__).with_name("panda_push.yaml"))
        plant = task.plant                    # 9 joints + free box: n_q 16, n_v 15, n_u 9
        controller = build_controller(plant, x0=task.x0)
        sim = task.simulator(task.x0)
    log = run_in_simulator(plant, controller, sim, duration or task.duration,
                           control_rate=task.control_rate)
    errors = task.goal_errors(log.x[-1])
    print(f"box {100 * errors['box.position']:.1f} cm and "
          f"{np.rad2deg(errors['box.orientation']):.1f} deg from its goal; C3 "
          f"{1e3 * np.median(log.solve_time):.0f} ms per plan at "
          f"{log.extras['control_rate']:.0f} Hz")
    return task, log


if __name__ == "__main__":
    main()
