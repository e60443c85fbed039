"""Bring your own robot, several model files: a UR5 (example-robot-data) pushes a box on a table.

Three model files (the arm's URDF from example-robot-data, box.xml, table.xml) -> one task file
(ur5_push.yaml, ``models:``) -> one planning LCS -> C3 -> the contact simulator.
Run: ``python examples/own_robot/ur5_push/ur5_push.py`` or
``c3mpc run examples/own_robot/ur5_push/ur5_push.yaml`` (docs/own-robot.md).
"""

import warnings
from pathlib import Path

import numpy as np

from c3mpc import run_in_simulator
from c3mpc.tasks import build_controller
from plants import load_task_file
from plants.multibody import ModelImportWarning


def main(box_dx: float = 0.0, box_dy: float = 0.0, duration: float | None = None):
    """Run the task with the box moved by (box_dx, box_dy) [m] from its start in the file."""
    with warnings.catch_warnings():  # the UR5's meshes become convex hulls (said once per file)
        warnings.simplefilter("ignore", ModelImportWarning)
        task = load_task_file(Path(__file__).with_name("ur5_push.yaml"))
        plant = task.plant                    # arm (6 joints) + free box: n_q 13, n_v 12, n_u 6
        x0 = task.state({"box": {"position": [0.45 + box_dx, box_dy, 0.05]}})
        controller = build_controller(plant, x0=x0)   # C3 with the task file's settings
        sim = task.simulator(x0)                       # the three files in plants.sim (SAP)
    log = run_in_simulator(plant, controller, sim, duration or task.duration,
                           control_rate=task.control_rate)   # + the arm's gravity torques
    errors = task.goal_errors(log.x[-1])          # box.position [m], box.orientation [rad]
    print(f"box {100 * errors['box.position']:.1f} cm and "
          f"{np.rad2deg(errors['box.orientation']):.1f} deg from its goal; C3 "
          f"{1e3 * np.median(log.solve_time):.0f} ms per plan at "
          f"{log.extras['control_rate']:.0f} Hz")
    return task, log


if __name__ == "__main__":
    main()
