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


def main(yaw0: float = 0.0, duration: float | None = None):
    """Run the task from the cube and the hand turned by ``yaw0`` [rad] about z (the jaws stay
    5 mm off the cube's faces)."""
    task = load_task_file(Path(__file__).with_name("jaw_gripper.yaml"))
    plant = task.plant                        # a free cube and 3 joints: yaw, two jaws
    x0 = task.state({"cube": {"position": [0, 0, 0.5], "rpy": [0, 0, yaw0]}, "yaw": yaw0})
    controller = build_controller(plant, x0=x0)   # C3 with the task file's settings
    sim = task.simulator(x0)                       # the same model file in plants.sim (SAP)
    log = run_in_simulator(plant, controller, sim, duration or task.duration,
                           control_rate=task.control_rate)
    errors = task.goal_errors(log.x[-1])          # cube.position [m], cube.orientation [rad]
    print(f"cube {100 * errors['cube.position']:.1f} cm and "
          f"{np.rad2deg(errors['cube.orientation']):.1f} deg from its goal; C3 "
          f"{1e3 * np.median(log.solve_time):.0f} ms per plan at "
          f"{log.extras['control_rate']:.0f} Hz")
    return task, log


if __name__ == "__main__":
    main()
