"""Bring your own robot: C3 pushes a box with a planar pusher inside the contact simulator.

Model file (pusher_box.xml) -> task file (pusher_box.yaml) -> LCS -> C3 -> simulator.
Run: ``python examples/own_robot/pusher_box.py`` (docs/own-robot.md walks through it);
``python examples/own_robot/pusher_box.py pusher_box_vertical.yaml`` runs the same task with a
pusher that also has a vertical joint and holds itself up (gravity compensation).
"""

from pathlib import Path

import numpy as np

from c3mpc import run_in_simulator
from c3mpc.tasks import build_controller
from plants import load_task_file


def main(box_x0: float = 0.0, pusher_x0: float = 0.0, task_file: str = "pusher_box.yaml"):
    task = load_task_file(Path(__file__).with_name(task_file))
    plant = task.plant                                   # planning model: LCS factory + settings
    x0 = task.state({"box_x": box_x0, "pusher_x": pusher_x0})
    controller = build_controller(plant, x0=x0)          # C3 with the task file's settings
    sim = task.simulator(x0)                             # same model file in plants.sim
    log = run_in_simulator(plant, controller, sim, task.duration,
                           control_rate=task.control_rate)
    i = plant.state_names.index("box_x")                 # state entries named by joint
    error = log.x[-1, i] - task.x_goal[i]
    print(f"box x error {100 * error:+.1f} cm, C3 {1e3 * np.median(log.solve_time):.0f} ms "
          f"per plan at {log.extras['control_rate']:.0f} Hz")
    return task, log


if __name__ == "__main__":
    import sys

    main(task_file=sys.argv[1] if len(sys.argv) > 1 else "pusher_box.yaml")
