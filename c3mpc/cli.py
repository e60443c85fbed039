"""The ``c3mpc`` command line.

    c3mpc run TASK [--projection P] [--config FILE] [--duration S] [--report DIR] [--seed N]
                   [--noise SIGMA] [--replan-every M] [--horizon N] [--quiet]
    c3mpc run TASK_FILE.yaml [--duration S] [--report DIR] [--projection P] [--config FILE]
                   [--horizon N] [--no-html] [--quiet]      (your robot: docs/own-robot.md)
    c3mpc run franka-ball [--balls 1|2|3] [--noise 0.001] [--solver sap] [--world panda|model]
                   [--duration S] [--report DIR] [--no-html] [--preset default|paper]
                   [--config FILE] [--set FIELD=VALUE ...] [--list-options]

``run`` closes the loop on one of the paper's tasks with C3 and prints a summary; ``--report``
writes ``summary.json`` (success, accumulated cost, median/mean solve time, control rate) and
plots of states, inputs, forces and solve times.

    c3mpc deploy franka-ball --bridge ws://HOST:9090 [--config FILE] [--duration S]
                 [--report DIR] [--rate HZ] [--quiet]

``deploy`` runs the controller on a robot (or on the simulated one, ``python -m
hardware.sim_robot``) through a rosbridge server, behind the safety layer; see
docs/deployment.md.

    c3mpc twin franka-ball --port PORT [--host 127.0.0.1] [--duration S] [--world panda|model]
                           [--status-interval S]

``twin`` serves the franka-ball simulation (full Panda + impedance controller + emulated
cameras) over the rosbridge protocol, the robot side of a ``deploy`` rehearsal.

    c3mpc sweep STUDY.yaml [--trials N] [--out DIR] [--dask ADDRESS] [--workers N] [--quiet]
    c3mpc sweep-report DIR

``sweep`` runs (or resumes) a hyperparameter study (docs/sweeps.md); ``sweep-report`` rewrites
the results table and plots of a run folder.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np

from lcs._validation import check_memory

from ._run_guard import (EXIT_INTERRUPTED, StopRequest, non_negative_float, non_negative_int,
                         positive_float, positive_int, prepare_report_dir)
from .errors import C3Error, C3TypeError, C3ValueError
from .mcap_log import write_closed_loop
from .option_fields import read_mapping
from .options import PROJECTIONS, C3Options
from .result import count_failed, count_not_converged
from .runner import ClosedLoopLog, run_closed_loop
from .tasks import TASKS, get_task

__all__ = ["main"]


def _summary(task_name: str, log: ClosedLoopLog, success: bool, criterion: str,
             options: C3Options, N: int) -> dict[str, Any]:
    return {
        "task": task_name,
        "success": bool(success),
        "criterion": criterion,
        "steps": int(log.u.shape[0]),
        "simulated_time_s": float(log.t[-1]),
        "accumulated_cost": log.accumulated_cost,
        "median_solve_time_s": float(np.median(log.solve_times)),
        "mean_solve_time_s": float(np.mean(log.solve_times)),
        "control_rate_hz": log.control_rate,
        "failed_steps": count_failed(log.status),
        "not_converged_steps": count_not_converged(log.status),
        "final_state": log.x[-1].tolist(),
        "horizon": N,
        "options": {k: v for k, v in options.to_dict().items() if k != "extra"},
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "processor": platform.processor() or platform.machine()},
    }


def _write_report(out: Path, summary: dict[str, Any], log: ClosedLoopLog, plant: Any) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    np.savez(out / "trajectory.npz", t=log.t, x=log.x, u=log.u, lam=log.lam,
             solve_time=log.solve_time, status=log.status)
    write_closed_loop(out / "run.mcap", log, plant.state_names, plant.input_names)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True)
    for i, name in enumerate(plant.state_names):
        axes[0].plot(log.t, log.x[:, i], label=name)
    axes[0].set_ylabel("state")
    axes[0].legend(fontsize=7, ncol=3)
    for i, name in enumerate(plant.input_names):
        axes[1].step(log.t[:-1], log.u[:, i], where="post", label=name)
    axes[1].set_ylabel("input")
    axes[1].legend(fontsize=7)
    axes[2].plot(log.t[:-1], log.lam)
    axes[2].set_ylabel("λ (plant)")
    axes[3].plot(log.t[:-1], log.solve_time * 1e3)
    axes[3].set_ylabel("solve time [ms]")
    axes[3].set_xlabel("t [s]")
    fig.suptitle(f"{summary['task']}: success={summary['success']}, "
                 f"{summary['control_rate_hz']:.0f} Hz")
    fig.tight_layout()
    fig.savefig(out / "trajectory.png", dpi=100)
    plt.close(fig)


def _task_name(text: str) -> str:
    """A built-in task name or a task file path (argparse type of ``run``'s TASK)."""
    from .tasks.task_file import is_task_file

    if text in TASKS or text == "franka-ball" or is_task_file(text):
        return text
    raise argparse.ArgumentTypeError(
        f"invalid choice: {text!r} (choose from {', '.join(sorted([*TASKS, 'franka-ball']))}, "
        "or give a task file: path/to/task.yaml)")


def _plant_param(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` with a float value (argparse type of ``--plant-param``)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name.strip()}: expected a number, got "
                                         f"{value!r}") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"{name.strip()}: expected a finite number, got "
                                         f"{value!r}")
    return name.strip(), number


def _plant_params(args: argparse.Namespace, task: Any) -> dict[str, float]:
    """``--plant-param`` as keyword arguments of the plant, checked against its parameters."""
    import dataclasses

    params = dict(getattr(args, "plant_param", None) or [])
    if not params:
        return {}
    default = task.plant()
    fields = getattr(default, "params", None)
    names = ([f.name for f in dataclasses.fields(fields)]
             if dataclasses.is_dataclass(fields) else [])
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise C3ValueError(f"--plant-param: {', '.join(unknown)} is not a parameter of "
                           f"{task.plant_name or task.name}; valid: {', '.join(names) or 'none'}")
    for name in params:  # keep a bool field a bool (none of the physical ones is)
        if isinstance(getattr(fields, name), bool):
            raise C3ValueError(f"--plant-param: {name} is a flag, not a number")
    return params


def _cmd_run(args: argparse.Namespace) -> int:
    from .tasks.task_file import is_task_file, run_task_file_command

    if getattr(args, "plant_param", None) and (args.task == "franka-ball"
                                               or is_task_file(args.task)):
        raise C3ValueError("--plant-param is for the paper's tasks; franka-ball takes --set, a "
                           "task file names its model file")
    if is_task_file(args.task):
        return run_task_file_command(args)
    if args.task == "franka-ball":
        from .tasks.franka_ball_cli import run_franka_ball_command

        return run_franka_ball_command(args)
    if args.set or args.list_options or getattr(args, "preset", None):
        raise ValueError("--set, --preset and --list-options are for franka-ball "
                         f"(FrankaBallOptions); for {args.task}, give C3Options in a --config "
                         "file")
    fb_only = [f"--{n.replace('_', '-')}" for n in ("trajectory", "trajectory_period",
                                                    "trajectory_size", "laps")
               if getattr(args, n, None) is not None]
    if fb_only:
        raise ValueError(f"{', '.join(fb_only)}: for franka-ball only, not {args.task}")
    noise = 0.0 if args.noise is None else args.noise
    task = get_task(args.task)
    plant_params = _plant_params(args, task)
    try:
        plant = task.plant(**plant_params)
    except ValueError as e:  # the plant's own range checks (e.g. mu3 > 0)
        raise C3ValueError(f"--plant-param: {e}") from e
    d = plant.defaults
    base = task.base_options(plant)
    if args.config:
        base.update(_read_config(args.config))
    if args.projection:
        base["projection"] = args.projection
    options = C3Options.from_dict(base)
    N = d.N if args.horizon is None else args.horizon
    duration = task.duration if args.duration is None else args.duration
    steps = max(1, int(round(duration / plant.dt)))
    check_memory(f"a run of {steps} steps (--duration {duration:g} s at dt {plant.dt} s)",
                 8.0 * steps * (2 * plant.n_x + plant.n_u + getattr(plant, "n_lambda", 0) + 4),
                 (C3TypeError, C3ValueError))
    report = prepare_report_dir(args.report) if args.report else None  # before the run
    x0 = d.x0 if args.seed is None or task.start is None else task.start(
        np.random.default_rng(args.seed))
    ctrl = task.controller(plant, options, N=N, x0=x0)
    if not args.quiet:
        print(f"c3mpc run {task.name}: projection={options.projection}, N={N}, "
              f"admm_iter={options.admm_iter}, {steps} steps of {plant.dt} s")
    replan_every = task.replan_every if args.replan_every is None else args.replan_every
    with StopRequest() as stop:
        log = run_closed_loop(plant, ctrl, x0, steps, noise_std=noise * task.noise_scale,
                              rng=np.random.default_rng(args.seed or 0),
                              replan_every=replan_every, progress=not args.quiet, stop=stop)
    interrupted = stop.requested
    ok = task.success(log) and not interrupted
    summary = _summary(task.name, log, ok, task.criterion, options, N)
    summary.update(replan_every=replan_every, noise_sigma=noise, plant_params=plant_params,
                   noise_std_per_step=noise * task.noise_scale, interrupted=interrupted,
                   requested_steps=steps)
    if interrupted:
        print(f"  interrupted by {stop.signal_name} after {log.u.shape[0]} of {steps} steps; "
              f"the summary covers those steps")
    print(f"  success: {ok} ({task.criterion})")
    print(f"  accumulated cost {summary['accumulated_cost']:.6g}; solve time median "
          f"{summary['median_solve_time_s'] * 1e3:.2f} ms, mean "
          f"{summary['mean_solve_time_s'] * 1e3:.2f} ms ({summary['control_rate_hz']:.0f} Hz); "
          f"failed steps {summary['failed_steps']}")
    print(f"  final state {np.array2string(log.x[-1], precision=3)}")
    if report is not None:
        _write_report(report, summary, log, plant)
        print(f"  {'partial ' if interrupted else ''}report written to {args.report}/ "
              f"(summary.json, trajectory.png, trajectory.npz, run.mcap)")
    if interrupted:
        return EXIT_INTERRUPTED
    return 0 if ok else 1


def _read_config(path: str) -> dict[str, Any]:
    """Option overrides from a YAML/TOML file, validated against C3Options' fields."""
    data = read_mapping(path)  # C3ValueError for another suffix, a parse error, a non-mapping
    C3Options.from_file(path)  # validates names and values now: one line with file and line
    return dict(data)


def _version() -> str:
    from . import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    ap = argparse.ArgumentParser(prog="c3mpc", description="C3 model-predictive control of "
                                 "contact-rich systems.")
    ap.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                    help="print the installed c3mpc version and exit")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="close the loop on a task with C3",
                         description="Run C3 in closed loop on one of the paper's tasks.")
    run.add_argument("task", type=_task_name, metavar="TASK|TASK_FILE", help="task name ("
                     f"{', '.join(sorted([*TASKS, 'franka-ball']))}; franka-ball: C3 + full Panda "
                     "in the contact simulator, docs/franka-ball.md) or a task file (.yaml: your "
                     "own robot, docs/own-robot.md)")
    run.add_argument("--projection", choices=PROJECTIONS, help="projection method "
                     "(default: the paper's for the task)")
    run.add_argument("--config", help="YAML/TOML file of C3Options overrides (franka-ball: "
                     "of FrankaBallOptions, at top level or under [franka_ball])")
    run.add_argument("--duration", type=positive_float,
                     help="simulated time [s] (> 0; default: task's)")
    run.add_argument("--horizon", type=positive_int, help="MPC horizon N (>= 1; default: "
                     "paper's)")
    run.add_argument("--report", help="directory for summary.json and plots")
    run.add_argument("--seed", type=non_negative_int, help="random start from the paper's "
                     "distribution (finger gaiting) and noise seed")
    run.add_argument("--noise", type=non_negative_float, default=None,
                     help="process-noise σ in the task's units (per-step std = σ × the task's "
                          "noise scale: 1, or Δt for pivoting as in the paper's script; "
                          "default 0); franka-ball: vision noise [m] (noise_std)")
    run.add_argument("--replan-every", type=positive_int, default=None, metavar="M",
                     help="re-plan every M plant steps, holding u_0 in between (default: the "
                          "task's protocol; 7 for pivoting, else 1)")
    run.add_argument("--plant-param", action="append", metavar="NAME=VALUE", default=None,
                     type=_plant_param,
                     help="a physical parameter of the task's plant, repeatable (e.g. pivoting's "
                          "ground friction: --plant-param mu3=0.5; names: the plant's *Params "
                          "dataclass)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    fb = run.add_argument_group("franka-ball")
    fb.add_argument("--balls", type=int, choices=(1, 2, 3), default=None,
                    help="1: circle; 2, 3: line (default 1)")
    fb.add_argument("--solver", default=None, help="contact solver of the simulator "
                    "(default sap)")
    fb.add_argument("--world", choices=("panda", "model"), default=None,
                    help="panda: full Panda in the contact simulator; model: the simplified "
                    "model's LCS (default panda)")
    fb.add_argument("--trajectory", default=None,
                    choices=("circle", "figure8", "square", "triangle"),
                    help="1 ball: a time-based desired trajectory x_d(t) of this shape "
                    "(§VII-D; default: the state-based circle); other fields: "
                    "--set trajectory.FIELD=VALUE")
    fb.add_argument("--trajectory-period", type=positive_float, default=None, metavar="S",
                    help="time for one traversal of --trajectory [s] (default 60)")
    fb.add_argument("--trajectory-size", type=positive_float, default=None, metavar="M",
                    help="--trajectory's circle radius / figure-eight half-height / polygon "
                    "in-radius [m] (default per shape)")
    fb.add_argument("--laps", type=positive_int, default=None,
                    help="1 ball: laps (state-based circle: stop after this many; per-lap "
                    "statistics in the summary)")
    fb.add_argument("--no-html", action="store_true", help="skip the meshcat recording")
    fb.add_argument("--preset", choices=("default", "paper"), default=None,
                    help="named FrankaBallOptions values under --config and --set: 'paper' is "
                    "seed 003 as written (s = 2, QP iterate, eq. 36 with K = 500, ...; "
                    "docs/franka-ball.md, 'The paper preset'); default: 'default'")
    fb.add_argument("--set", action="append", metavar="FIELD=VALUE",
                    help="set any FrankaBallOptions field, parsed with its type (repeatable; "
                    "dotted names for nested options: gait.phase2_back=0.05; 'none' for None); "
                    "overrides --config")
    fb.add_argument("--list-options", action="store_true",
                    help="print every FrankaBallOptions field (type, default, doc) and exit")
    run.set_defaults(func=_cmd_run)
    _add_deploy_parser(sub)
    _add_sweep_parsers(sub)
    return ap


def _add_sweep_parsers(sub: Any) -> None:
    sweep = sub.add_parser("sweep", help="hyperparameter sweep of C3 on a task (Optuna)",
                           description="Run or resume the study in STUDY.yaml (docs/sweeps.md).")
    sweep.add_argument("study", help="study file (see examples/sweeps/cartpole.yaml)")
    sweep.add_argument("--trials", type=positive_int, help="trial budget (default: the "
                       "study's)")
    sweep.add_argument("--out", help="run folder (default: sweeps/<study name>); re-running "
                       "with the same folder resumes the study")
    sweep.add_argument("--dask", metavar="ADDRESS", help="run trials on this Dask scheduler "
                       "(e.g. tcp://host:8786) instead of a local process pool")
    sweep.add_argument("--workers", type=positive_int, help="local pool size (default: number "
                       "of cores)")
    sweep.add_argument("--quiet", action="store_true", help="no progress line")
    sweep.add_argument("--no-report", action="store_true", help="skip the report at the end")
    sweep.set_defaults(func=_cmd_sweep)
    rep = sub.add_parser("sweep-report", help="results table and plots of a sweep run folder",
                         description="Write DIR/report/ (results.md, plots) from DIR's storage.")
    rep.add_argument("dir", help="run folder of `c3mpc sweep`")
    rep.set_defaults(func=_cmd_sweep_report)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep.cli import sweep_command

    return sweep_command(args)


def _cmd_sweep_report(args: argparse.Namespace) -> int:
    from .sweep.cli import sweep_report_command

    return sweep_report_command(args)


def _add_deploy_parser(sub: Any) -> None:
    dep = sub.add_parser("deploy", help="run on a robot through a ROS bridge",
                         description="Run the controller on a Franka (or the simulated robot) "
                         "through a rosbridge websocket, behind the safety layer "
                         "(docs/deployment.md).")
    dep.add_argument("task", choices=["franka-ball"], help="task name")
    dep.add_argument("--bridge", metavar="ws://HOST:PORT",
                     help="rosbridge websocket URL (required unless --franky, where it carries "
                          "the camera only)")
    dep.add_argument("--franky", metavar="HOST", help="drive the robot through libfranka "
                     "(franky-control) at HOST instead of the bridge (transport: franky)")
    dep.add_argument("--config", help="YAML/TOML of hardware.deploy.DeployOptions")
    dep.add_argument("--duration", type=positive_float, help="seconds to run (default: until "
                     "Ctrl-C)")
    dep.add_argument("--report", help="directory for summary.json, interventions.json, log.csv")
    dep.add_argument("--rate", type=positive_float, help="control rate [Hz] (default: config's, "
                     "100)")
    dep.add_argument("--quiet", action="store_true", help="no status line")
    dep.add_argument("--auth-secret-file", metavar="FILE", help="authenticate to the bridge "
                     "(rosauth MAC) with the secret in FILE (default: $C3MPC_BRIDGE_SECRET "
                     "if set, else no authentication)")
    dep.set_defaults(func=_cmd_deploy)
    twin = sub.add_parser("twin", help="serve the simulated robot over rosbridge",
                          description="Serve the franka-ball closed-loop simulation (full Panda "
                          "+ impedance controller + emulated cameras) over the rosbridge "
                          "protocol, for `c3mpc deploy` rehearsals (docs/deployment.md).")
    twin.add_argument("task", choices=["franka-ball"], help="task name")
    twin.add_argument("--port", type=int, required=True, help="TCP port (0: any free port)")
    twin.add_argument("--host", default="127.0.0.1", help="interface to bind")
    twin.add_argument("--duration", type=positive_float, help="seconds to serve (default: until "
                      "Ctrl-C)")
    twin.add_argument("--config", help="YAML/TOML of hardware.twin.TwinOptions")
    twin.add_argument("--status-interval", type=_non_negative_seconds, default=5.0, metavar="S",
                      help="print simulated time and real-time factor every S seconds "
                           "(default 5; 0: never)")
    twin.add_argument("--world", choices=("panda", "model"), help="panda (default): full Panda "
                      "in the contact simulator; model: the simplified model's LCS")
    twin.add_argument("--controller", choices=("eq36", "stock"), help="eq36 (default): the "
                      "project's eq.-36 impedance controller with a wrench input; stock: "
                      "franka_ros' cartesian_impedance_example_controller (N/m, filtered "
                      "equilibrium, no wrench input)")
    twin.add_argument("--auth-secret-file", metavar="FILE", help="require rosauth "
                      "authentication with the secret in FILE (default: $C3MPC_BRIDGE_SECRET "
                      "if set, else none)")
    twin.set_defaults(func=_cmd_twin)


def _cmd_deploy(args: argparse.Namespace) -> int:
    from hardware.deploy import deploy_command  # lazy: hardware depends on c3mpc, not reverse

    if getattr(args, "config", None):
        read_mapping(args.config)  # one line with file and line for malformed YAML/TOML
    if getattr(args, "report", None):
        prepare_report_dir(args.report)  # before connecting to the robot
    return deploy_command(args)


def _non_negative_seconds(text: str) -> float:
    """argparse type: a finite number of seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value


def _cmd_twin(args: argparse.Namespace) -> int:
    from hardware.twin import twin_command  # lazy, as deploy

    return twin_command(args)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``c3mpc`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (ValueError, C3Error) as e:  # bad input: one clear line, no traceback
        print(f"c3mpc: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C, or one outside a run's loop
        print("c3mpc: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
