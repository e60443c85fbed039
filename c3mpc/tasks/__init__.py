"""Tasks: what a closed loop runs, built-in and a user's, behind one registry.

* :mod:`.registry`: the :class:`Task` type (a plant, a controller built from the plant's
  settings, a success test), the registry ``TASKS`` (the paper's plants and the registered
  multibody plants), :func:`get_task` and :func:`build_controller`, which ``c3mpc run``, the
  sweeps and the benchmarks share;
* :mod:`.task_file`: ``c3mpc run path/to/task.yaml``, a user's task file (docs/own-robot.md) run
  in the contact simulator with the same report as the built-in tasks;
* :mod:`.franka_ball` (with :mod:`.franka_ball_cli`, :mod:`.franka_ball_report`,
  :mod:`.franka_ball_viz`, :mod:`.contact_sensing`): the C3 paper's Franka ball rolling
  (Algorithm 3 + full Panda in the simulator), docs/franka-ball.md.

The controller core (``c3mpc.c3``, ``qp_step``, ``projections``, ``options``, ``result``,
``miqp_mpc``) does not import this package.
"""

from .registry import TASKS, Task, build_controller, get_task, longest_run_within

__all__ = ["Task", "TASKS", "get_task", "build_controller", "longest_run_within"]
