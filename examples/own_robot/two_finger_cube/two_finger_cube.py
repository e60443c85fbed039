"""Bring your own robot in 3-D: two fingers turn a free cube (a quaternion) on a table.

Model file (two_finger_cube.xml) -> task file (two_finger_cube.yaml) -> LCS -> C3 -> simulator.
Run: ``python examples/own_robot/two_finger_cube/two_finger_cube.py`` or
``c3mpc run examples/own_robot/two_finger_cube/two_finger_cube.yaml`` (docs/own-robot.md).
"""

from pathlib import Path

import numpy as np

from c3mpc import run_in_simulator
from c3mpc.tasks import build_controller
from plants import load_task_file


def main(yaw0: float = 0.0, duration: float | None = None):
    """Run the task from the cube turned by ``yaw0`` [rad] about z (fingers on its faces)."""
    task = load_task_file(Path(__file__).with_name("two_finger_cube.yaml"))
    plant = task.plant                        # planning model: a free-flyer cube, 6 inputs
    c, s = np.cos(yaw0), np.sin(yaw0)         # finger tips 5 mm off the turned +-y faces
    x0 = task.state({"cube": {"position": [0, 0, 0.5], "rpy": [0, 0, yaw0]},
                     "left_x": -0.605 * s, "left_y": 0.605 * (c - 1),
                     "right_x": 0.605 * s, "right_y": -0.605 * (c - 1)})
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
