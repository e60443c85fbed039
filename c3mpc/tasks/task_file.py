"""``c3mpc run path/to/task.yaml``: a user's task file run like a built-in task.

The task file (docs/own-robot.md) names the model file, the planning contacts, the costs, the
goal and the simulation; this runs C3 on its planning plant inside the contact simulator at the
file's control rate (:func:`c3mpc.run_in_simulator`) and reports like the built-in tasks:
``summary.json`` (success, the final error of every goal joint, control rate, solve times,
failed and not converged (ADMM) plans, non-converged simulator steps), ``trajectory.png``, ``trajectory.npz``, ``run.mcap`` and
``meshcat.html`` (the simulated scene, :class:`plants.viz.Viewer`).

Success: every joint the ``goal`` names ends within the task file's ``success.tolerance`` of
its goal (default 0.02, in the joint's unit: m or rad).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["run_task_file_command", "is_task_file"]

_NOT_FOR_TASK_FILES = ("seed", "noise", "replan_every", "balls", "solver", "world", "set")


def is_task_file(name: str) -> bool:
    """True when ``name`` reads as a task file path (not a built-in task name)."""
    return name.lower().endswith((".yaml", ".yml"))


def run_task_file_command(args: argparse.Namespace) -> int:
    """``c3mpc run TASK_FILE``: returns the exit status (0 success, 1 goal missed, 130 Ctrl-C)."""
    from plants import load_task_file

    from .._run_guard import EXIT_INTERRUPTED, StopRequest, prepare_report_dir
    from ..options import C3Options
    from ..option_fields import read_mapping
    from ..sim_loop import run_in_simulator
    from .registry import build_controller

    given = [f"--{k.replace('_', '-')}" for k in _NOT_FOR_TASK_FILES
             if getattr(args, k, None) not in (None, False, [])]
    if given or getattr(args, "list_options", False):
        raise ValueError(f"{', '.join(given) or '--list-options'}: not for a task file (its start, "
                         "solver and rates are in the file; give C3Options in --config)")
    path = Path(args.task)
    if not path.is_file():
        raise ValueError(f"task file {str(path)!r} not found")
    task = load_task_file(path)
    plant, d = task.plant, task.plant.defaults
    base: dict[str, Any] = dict(projection=d.projection, admm_iter=d.admm_iter, rho=d.rho,
                                rho_scale=d.rho_scale)
    if args.config:
        base.update(read_mapping(args.config))
        C3Options.from_file(args.config)  # one line with the file and line on a bad option
    if args.projection:
        base["projection"] = args.projection
    options = C3Options.from_dict(base)
    N = d.N if args.horizon is None else args.horizon
    duration = task.duration if args.duration is None else args.duration
    report = prepare_report_dir(args.report) if args.report else None  # before the run
    auto_dt = (task.data.get("planning") or {}).get("dt") == "auto"
    rollout = _first_plan_check(task, build_controller(plant, options, N=N, x0=task.x0), path,
                                warn=not auto_dt)
    # dt: auto goes on halving while the first plan's rollout does not follow it
    while auto_dt and rollout is not None and not rollout.passed and \
            plant.dt / 2 >= AUTO_DT_MIN * (1 - 1e-9):
        plant.dt = plant.dt / 2
        plant.defaults = dataclasses.replace(plant.defaults, dt=plant.dt)
        rollout = _first_plan_check(task, build_controller(plant, options, N=N, x0=task.x0),
                                    path, warn=False)
    if auto_dt and rollout is not None and not rollout.passed:
        import warnings

        from plants import PlanningStepWarning

        warnings.warn(PlanningStepWarning(rollout.message(str(path), plant.dt)), stacklevel=2)
    if "control_rate" not in (task.data.get("simulation") or {}):  # re-plan once per step
        task = dataclasses.replace(task, control_rate=1.0 / plant.dt)
    controller = build_controller(plant, options, N=N, x0=task.x0)
    sim = task.simulator(task.x0)
    name = plant.name
    if not args.quiet:
        print(f"c3mpc run {path}: {name}, projection={options.projection}, N={N}, "
              f"C3 at {task.control_rate:g} Hz in {task.solver} (δt {task.sim_dt:g} s) for "
              f"{duration:g} s")
    with StopRequest() as stop:
        log = run_in_simulator(plant, controller, sim, duration, control_rate=task.control_rate,
                               stop=stop, progress=not args.quiet)
    interrupted = stop.requested
    errors = task.goal_errors(log.x[-1])
    tolerances = task.goal_tolerances()
    worst = max((abs(e) for e in errors.values()), default=0.0)
    ok = task.goal_reached(log.x[-1]) and not interrupted
    solve = log.solve_times
    sim_status = log.extras["sim_stats"]["status"]
    summary = {
        "task": name, "task_file": str(path), "model": str(task.model_path),
        "success": bool(ok),
        "criterion": _criterion(task),
        "final_goal_errors": errors, "goal_tolerances": tolerances,
        "max_final_goal_error": worst,
        "simulated_time_s": float(log.extras["sim_t"][-1] - log.extras["sim_t"][0]),
        "plans": int(log.u.shape[0]), "failed_plans": int(log.extras["failed_steps"]),
        "not_converged_plans": int(log.extras["not_converged_steps"]),
        "control_rate_hz": float(log.extras["control_rate"]),
        "solve_time_median_s": float(np.median(solve)) if solve.size else float("nan"),
        "solve_time_max_s": float(np.max(solve)) if solve.size else float("nan"),
        "simulator": {"solver": task.solver, "dt": task.sim_dt,
                      "steps": int(sim_status.size),
                      "non_converged_steps": int(np.count_nonzero(sim_status))},
        "c3_options": options.to_dict(), "N": N, "interrupted": interrupted,
        "planning_dt": float(plant.dt), "planning_step_ratio": float(task.planning_step.ratio),
        "first_plan_rollout_progress": None if rollout is None else rollout.progress,
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
    }
    if interrupted:
        print(f"  interrupted by {stop.signal_name} after {summary['plans']} plans")
    print(f"  success: {ok} ({summary['criterion']})")
    print("  final goal errors: " + ", ".join(f"{k} {v:+.4f}" for k, v in errors.items()))
    print(f"  C3 median {summary['solve_time_median_s'] * 1e3:.1f} ms per plan at "
          f"{summary['control_rate_hz']:g} Hz; failed plans {summary['failed_plans']}, "
          f"not converged {summary['not_converged_plans']}; "
          f"simulator steps not converged {summary['simulator']['non_converged_steps']}")
    if report is not None:
        _write_report(report, summary, log, plant, sim, html=not args.no_html,
                      task_errors=task.goal_errors)
        print(f"  {'partial ' if interrupted else ''}report written to {args.report}/ "
              f"(summary.json, trajectory.png, trajectory.npz, run.mcap"
              f"{'' if args.no_html else ', meshcat.html'})")
    if interrupted:
        return EXIT_INTERRUPTED
    return 0 if ok else 1


#: ``planning: {dt: auto}`` in ``c3mpc run`` halves the planning step at most down to this [s]
#: while the first plan's own rollout does not follow it.
AUTO_DT_MIN = 0.0125


def _first_plan_check(task: Any, controller: Any, path: Path, warn: bool = True) -> Any:
    """Plan once from the start on a separate controller (the run's keeps no warm start from
    it) and compare the plan with its own LCS rollout (:func:`plants.planning_step.
    check_plan_rollout`); warn (:class:`plants.PlanningStepWarning`) when the rollout does not
    follow and ``warn``. None when the plan failed or has no rollout."""
    import warnings

    from plants.planning_step import PlanningStepWarning, check_plan_rollout

    res = controller.solve(task.x0)
    if not res.ok or res.resimulated_x is None:
        return None
    check = check_plan_rollout(task, res.x, res.resimulated_x)
    if warn and not check.passed:
        warnings.warn(PlanningStepWarning(check.message(str(path), task.plant.dt)), stacklevel=3)
    return check


def _criterion(task: Any) -> str:
    text = f"every goal joint within {task.success_tolerance:g} (m or rad) of its goal at the end"
    if any(k.endswith(".orientation") for k in task.goal_tolerances()):
        text += f", orientations within {task.orientation_tolerance:g} rad"
    return text


def _write_report(out: Path, summary: dict[str, Any], log: Any, plant: Any, sim: Any,
                  html: bool, task_errors: Any) -> None:
    from ..mcap_log import write_closed_loop

    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=_plain))
    np.savez(out / "trajectory.npz", t=log.t, x=log.x, u=log.u, lam=log.lam,
             solve_time=log.solve_time, status=log.status, sim_t=log.extras["sim_t"],
             sim_q=log.extras["sim_q"], sim_v=log.extras["sim_v"])
    write_closed_loop(out / "run.mcap", log, plant.state_names, plant.input_names)
    _plot(out / "trajectory.png", summary, log, plant, task_errors)
    if html:
        from plants.viz import Viewer

        with Viewer.from_scene(sim.scene) as viewer:
            viewer.record(log.extras["sim_t"], log.extras["sim_q"])
            viewer.save_html(out / "meshcat.html")


def _plot(path: Path, summary: dict[str, Any], log: Any, plant: Any,
          task_errors: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    goal = plant.defaults.x_goal
    names = plant.state_names
    for joint in summary["final_goal_errors"]:
        if joint in names:  # a one-dof joint: its position against the goal
            i = names.index(joint)
            (line,) = axes[0].plot(log.t, log.x[:, i], label=joint)
            axes[0].axhline(goal[i], color=line.get_color(), ls=":", lw=1)
        else:  # a free/spherical joint's position or orientation: its error against 0
            errs = [task_errors(x)[joint] for x in log.x]
            axes[0].plot(log.t, errs, label=f"{joint} error")
    axes[0].axhline(0.0, color="k", ls=":", lw=0.5)
    axes[0].set_ylabel("goal joints (dotted: goal)")
    axes[0].legend(fontsize=7)
    for j, name in enumerate(plant.input_names):
        axes[1].step(log.t[:-1], log.u[:, j], where="post", label=name)
    axes[1].set_ylabel("input")
    axes[1].legend(fontsize=7)
    axes[2].plot(log.t[:-1], log.solve_time * 1e3, ".")
    axes[2].set_ylabel("C3 solve [ms]")
    axes[2].set_xlabel("t [s]")
    fig.suptitle(f"{summary['task']}: success={summary['success']}, "
                 f"max goal error {summary['max_final_goal_error']:.3g}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    raise TypeError(f"not JSON serializable: {type(v).__name__}")
