"""The sweep's view of a task: run one seeded closed-loop episode with a trial's settings.

A study names its task either by registry name (any key of :data:`c3mpc.tasks.TASKS`) or by an
import path ``"package.module:attribute"``. Both resolve, through :func:`resolve_task`, to an
object with the :class:`SweepTask` interface:

* a :class:`c3mpc.tasks.Task` (registered or imported) is wrapped in :class:`ClosedLoopTask`,
  which builds the controller exactly as ``c3mpc run`` does (:meth:`c3mpc.tasks.Task.controller`
  from the plant's ``defaults``) and drives it with :func:`c3mpc.runner.run_closed_loop`. Tasks
  added to ``TASKS`` later (multibody plants, the Franka ball) work unchanged as long as their
  plant exposes ``defaults`` (:class:`plants.paper.base.ControlDefaults`-like: ``N, Q, R, QN, G,
  U, x0, ...``) and the ``plants`` step interface;
* any other imported object is used as it is if it has ``name``, ``base_options()`` and
  ``run_episode(...)`` (a task whose controller is not built by ``build_controller``).

The sweep package never special-cases a task name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Protocol, runtime_checkable

import numpy as np

from ..errors import C3ValueError
from ..options import C3Options
from ..runner import run_closed_loop
from ..tasks import TASKS, Task, build_controller

__all__ = ["TrialSetting", "Episode", "SweepTask", "ClosedLoopTask", "TaskFileTask",
           "resolve_task", "WEIGHT_SCALES", "WORLDS", "TASK_FILE_SUFFIXES", "TrialTimeoutError"]

#: Where a trial's episodes run: the plant's own LCS step, or the contact simulator.
WORLDS = ("lcs", "simulator")
#: A study ``task:`` ending so is a task file (``plants.load_task_file``).
TASK_FILE_SUFFIXES = (".yaml", ".yml")

#: Cost-weight scale factors a study may search over, and the matrices they multiply.
WEIGHT_SCALES = {"G_scale": "G", "U_scale": "U", "Q_scale": "Q (and QN)", "R_scale": "R"}


class TrialTimeoutError(C3ValueError):
    """A trial ran past its time limit (raised inside the episode, between control steps)."""


@dataclass(frozen=True)
class TrialSetting:
    """What one trial changes relative to the task's paper settings.

    Attributes:
        options: the complete controller options.
        N: MPC horizon (None: the task's).
        scales: cost-weight factors ``{"G_scale": g, "U_scale": u, "Q_scale": q, "R_scale": r}``
            (missing entries are 1). They scale the controller's weights only: the logged
            accumulated cost always uses the task's own Q and R, so that costs of different
            trials compare.
    """

    options: C3Options
    N: int | None = None
    scales: Mapping[str, float] = field(default_factory=dict)

    def scale(self, name: str) -> float:
        """The factor ``name`` (1 when the trial does not set it)."""
        return float(self.scales.get(name, 1.0))


@dataclass(frozen=True)
class Episode:
    """Metrics of one closed-loop episode.

    Attributes:
        success: the task's success criterion held.
        accumulated_cost: Σ_k (x_k − x_des)ᵀQ(·) + u_kᵀRu_k with the task's Q, R.
        control_rate: 1 / median controller solve time [Hz].
        failed_steps: controller steps whose status was a failure.
        steps: control steps run.
    """

    success: bool
    accumulated_cost: float
    control_rate: float
    failed_steps: int
    steps: int


@runtime_checkable
class SweepTask(Protocol):
    """What the sweep needs from a task."""

    name: str

    def base_options(self) -> C3Options:
        """The options a trial starts from before the study's overrides and samples."""

    def run_episode(self, setting: TrialSetting, seed: int, *, duration: float | None,
                    start_perturbation: np.ndarray, noise: float,
                    check_deadline: Callable[[], None]) -> Episode:
        """Run one episode from the start of ``seed``; call ``check_deadline()`` often."""


class _WeightedPlant:
    """A plant whose ``defaults`` carry scaled cost weights; everything else is delegated."""

    def __init__(self, plant: Any, defaults: Any):
        self._plant = plant
        self.defaults = defaults

    def __getattr__(self, name: str) -> Any:
        return getattr(self._plant, name)


@dataclass(frozen=True)
class ClosedLoopTask:
    """A :class:`c3mpc.tasks.Task` run the way ``c3mpc run`` runs it.

    Episode ``seed`` starts from ``task.start(default_rng(seed))`` when the task has a start
    distribution, else from the paper's start ``defaults.x0``; in both cases plus a uniform
    perturbation in ``[-p, p]`` per state entry (``p = start_perturbation``), drawn from the same
    generator. Process noise (if any) uses ``default_rng(seed + 1_000_003)``.
    """

    task: Task

    @property
    def name(self) -> str:
        """The task's registry name."""
        return self.task.name

    def base_options(self) -> C3Options:
        """The paper's projection, ADMM iterations and penalties for the task's plant, with the
        task's own overrides (:meth:`c3mpc.tasks.Task.base_options`)."""
        return C3Options.from_dict(self.task.base_options(self.task.plant()))

    def start_state(self, plant: Any, seed: int, start_perturbation: np.ndarray) -> np.ndarray:
        """The start state of episode ``seed`` (see the class docstring)."""
        rng = np.random.default_rng(seed)
        x0 = (self.task.start(rng) if self.task.start is not None
              else np.array(plant.defaults.x0, dtype=float))
        p = np.broadcast_to(np.asarray(start_perturbation, dtype=float), x0.shape)
        if np.any(p > 0):
            x0 = x0 + rng.uniform(-1.0, 1.0, size=x0.shape) * p
        return x0

    def run_episode(self, setting: TrialSetting, seed: int, *, duration: float | None,
                    start_perturbation: np.ndarray, noise: float,
                    check_deadline: Callable[[], None]) -> Episode:
        """One seeded closed-loop episode with the trial's options, horizon and weights."""
        plant = self.task.plant()
        d = plant.defaults
        q = setting.scale("Q_scale")
        scaled = d.replace(G=setting.scale("G_scale") * d.G, U=setting.scale("U_scale") * d.U,
                           Q=q * d.Q, QN=q * d.QN, R=setting.scale("R_scale") * d.R)
        x0 = self.start_state(plant, seed, start_perturbation)
        check_deadline()
        ctrl = self.task.controller(_WeightedPlant(plant, scaled), setting.options,
                                    N=setting.N, x0=x0)
        steps = max(1, int(round((duration or self.task.duration) / plant.dt)))

        def stop(x: np.ndarray, k: int) -> bool:
            check_deadline()
            return False

        log = run_closed_loop(plant, ctrl, x0, steps, Q=d.Q, R=d.R, x_des=d.x_goal,
                              noise_std=noise * self.task.noise_scale,
                              rng=np.random.default_rng(seed + 1_000_003),
                              replan_every=self.task.replan_every, stop=stop)
        return Episode(success=bool(self.task.success(log)),
                       accumulated_cost=log.accumulated_cost, control_rate=log.control_rate,
                       failed_steps=int(log.extras.get("failed_steps", 0)),
                       steps=int(log.u.shape[0]))


@lru_cache(maxsize=8)
def _load_task_file(path: str) -> Any:
    from plants import load_task_file

    return load_task_file(path)


@dataclass(frozen=True)
class TaskFileTask:
    """A task file (``plants.load_task_file``) as a sweep task.

    Episode ``seed`` starts from the file's ``start`` plus a uniform perturbation in ``[-p, p]``
    per state entry drawn from ``default_rng(seed)``; ``world="simulator"`` (the default for task
    files) runs C3 in the contact simulator at the file's control rate
    (:func:`c3mpc.run_in_simulator`), ``world="lcs"`` on the planning plant's own LCS step
    (:func:`c3mpc.run_closed_loop`). Success: every goal joint within the file's
    ``success.tolerance`` at the end (as ``c3mpc run TASK_FILE``); the accumulated cost uses the
    file's Q and R at the control instants.
    """

    path: str
    world: str = "simulator"

    @property
    def task(self) -> Any:
        return _load_task_file(self.path)

    @property
    def name(self) -> str:
        """The task's plant name."""
        return str(self.task.plant.name)

    def base_options(self) -> C3Options:
        """The task file's projection, ADMM iterations and penalties."""
        d = self.task.plant.defaults
        return C3Options(projection=d.projection, admm_iter=d.admm_iter, rho=d.rho,
                         rho_scale=d.rho_scale)

    def run_episode(self, setting: TrialSetting, seed: int, *, duration: float | None,
                    start_perturbation: np.ndarray, noise: float,
                    check_deadline: Callable[[], None]) -> Episode:
        """One seeded episode in the study's world with the trial's options and weights."""
        from ..sim_loop import run_in_simulator

        task = self.task
        plant = task.plant
        d = plant.defaults
        q = setting.scale("Q_scale")
        scaled = d.replace(G=setting.scale("G_scale") * d.G, U=setting.scale("U_scale") * d.U,
                           Q=q * d.Q, QN=q * d.QN, R=setting.scale("R_scale") * d.R)
        rng = np.random.default_rng(seed)
        x0 = np.array(task.x0, dtype=float)
        p = np.broadcast_to(np.asarray(start_perturbation, dtype=float), x0.shape)
        if np.any(p > 0):
            x0 = x0 + rng.uniform(-1.0, 1.0, size=x0.shape) * p
        check_deadline()
        # a task file has no Task.controller: the controller c3mpc run builds for it
        ctrl = build_controller(_WeightedPlant(plant, scaled), setting.options, N=setting.N,
                                x0=x0)
        T = duration or task.duration

        def stop(*_: Any) -> bool:
            check_deadline()
            return False

        if self.world == "simulator":
            log = run_in_simulator(plant, ctrl, task.simulator(x0), T,
                                   control_rate=task.control_rate, Q=d.Q, R=d.R,
                                   x_des=d.x_goal, stop=stop)
        else:
            steps = max(1, int(round(T / plant.dt)))
            log = run_closed_loop(plant, ctrl, x0, steps, Q=d.Q, R=d.R, x_des=d.x_goal,
                                  noise_std=noise, rng=np.random.default_rng(seed + 1_000_003),
                                  stop=stop)
        return Episode(success=bool(task.goal_reached(log.x[-1])), accumulated_cost=log.accumulated_cost,
                       control_rate=log.control_rate,
                       failed_steps=int(log.extras.get("failed_steps", 0)),
                       steps=int(log.u.shape[0]))


def resolve_task(ref: str, world: str = "lcs") -> SweepTask:
    """The task a study names: a ``c3mpc.tasks.TASKS`` key, ``"module:attribute"``, or a task
    file (``.yaml``/``.yml``) run in ``world`` ("simulator" or "lcs").

    Raises:
        C3ValueError: unknown name, import failure, or an object that is not a task.
    """
    if not isinstance(ref, str) or not ref:
        raise C3ValueError(f"task must be a task name or 'module:attribute', got {ref!r}")
    if world not in WORLDS:
        raise C3ValueError(f"world must be one of {list(WORLDS)}, got {world!r}")
    if ref.lower().endswith(TASK_FILE_SUFFIXES):
        try:
            task = TaskFileTask(ref, world)
            task.task  # load and validate now (one line with the file and line on error)
        except FileNotFoundError as e:
            raise C3ValueError(f"task file {ref!r} not found") from e
        except ValueError as e:
            raise C3ValueError(str(e)) from None
        return task
    if world != "lcs":
        raise C3ValueError("world 'simulator' needs a task file (a registered task has no "
                           "simulation scene)")
    if ref in TASKS:
        return ClosedLoopTask(TASKS[ref])
    if ":" not in ref:
        raise C3ValueError(f"unknown task {ref!r}; tasks: {sorted(TASKS)} (or an import path "
                           f"'package.module:attribute')")
    module_name, _, attr = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise C3ValueError(f"cannot import task {ref!r}: {e}") from None
    if isinstance(obj, Task):
        return ClosedLoopTask(obj)
    if isinstance(obj, SweepTask):
        return obj
    raise C3ValueError(f"task {ref!r} is a {type(obj).__name__}, expected a c3mpc.tasks.Task or "
                       f"an object with name, base_options() and run_episode()")
