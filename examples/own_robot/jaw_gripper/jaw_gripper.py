"""Bring your own robot in 3-D: a parallel-jaw gripper turns a free cube (a quaternion) on a table.

Model file (jaw_gripper.xml: a yaw hinge carrying two closing jaws) -> task file
(jaw_gripper.yaml) -> LCS -> C3 -> simulator.
Run: ``python examples/own_robot/jaw_gripper/jaw_gripper.py`` or
``c3mpc run examples/own_robot/jaw_gripper/jaw_gripper.yaml`` (docs/own-robot.md).
"""

from pathlib import Path

import numpy as np

from c3mpc import run_in_simulator
from c3mpc.tasks import build_controller
from plants import load_task_file


def main(yaw0: float = 0.0, duration: float | None = None, task_file: str = "jaw_gripper.yaml"):
    """Run the task from the cube and the hand turned by ``yaw0`` [rad] about z (the jaws stay
    off the cube's faces as at the start); ``task_file``: this folder's ``jaw_gripper.yaml``
    (1 m cube) or ``jaw_gripper_small.yaml`` (the same gripper at hand scale, 10 cm)."""
    task = load_task_file(Path(__file__).with_name(task_file))
    plant = task.plant                        # a free cube and 3 joints: yaw, two jaws
    centre = list(task.x0[:3])                # the cube's start position [m]
    x0 = task.state({"cube": {"position": centre, "rpy": [0, 0, yaw0]}, "yaw": yaw0})
    controller = build_controller(plant, x0=x0)   # C3 with the task file's settings
    sim = task.simulator(x0)                       # the same model file in plants.sim (SAP)
    log = run_in_simulator(plant, controller, sim, duration or task.duration,
                           control_rate=task.control_rate)
    errors = task.goal_errors(log.x[-1])          # cube.position [m], cube.orientation [rad]
    print(f"cube {1e3 * errors['cube.position']:.1f} mm and "
          f"{np.rad2deg(errors['cube.orientation']):.1f} deg from its goal; C3 "
          f"{1e3 * np.median(log.solve_time):.0f} ms per plan at "
          f"{log.extras['control_rate']:.0f} Hz")
    return task, log


if __name__ == "__main__":
    import sys

    main(task_file=sys.argv[1] if len(sys.argv) > 1 else "jaw_gripper.yaml")
