"""The study file: what a sweep searches, how it scores a trial, and how many trials it runs.

A study is a YAML file (see docs/sweeps.md and examples/sweeps/cartpole.yaml)::

    name: cartpole-c3              # study name in the storage (default: the file's stem)
    task: cartpole-softwalls       # c3mpc.tasks name, "package.module:attribute", or a task
                                   # file (path/to/task.yaml, relative to the study file)
    world: lcs                     # where trials run: lcs (the planning LCS) or simulator (the
                                   # contact simulator; task files only, and their default)
    options: {projection: lcp}     # fixed C3Options overrides for every trial
    search_space:
      rho: {low: 0.1, high: 10, log: true}
      admm_iter: {low: 2, high: 20}
      G_scale: {low: 0.1, high: 10, log: true}
      N: [5, 10, 15]               # a list: categorical (and the grid values)
    sampler: tpe                   # grid | random | tpe, or {name: tpe, seed: 0}
    objectives:
      - {metric: success_rate, direction: maximize}
      - accumulated_cost           # direction defaults to the metric's natural one
    trials: 50
    seeds: 8                       # 8 -> seeds 0..7, or a list [0, 3, 5]
    duration: 3.0                  # simulated seconds per episode (default: task's)
    start_perturbation: 0.1        # ± uniform on each start-state entry (or one per entry)
    noise: 0.0                     # process-noise σ per step
    timeout: 120                   # seconds per trial (all seeds)

:func:`load_study` parses and validates everything (parameter names against ``C3Options``,
ranges, choices through ``C3Options`` validation, the task, sampler and objectives) before any
trial runs; each error is a :class:`StudyFileError` naming the file, the line and the key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import yaml

from ..errors import C3ValueError
from ..options import C3Options
from ._yaml_lines import YAMLLimitError, load_located
from .episodes import (TASK_FILE_SUFFIXES, WEIGHT_SCALES, WORLDS, ClosedLoopTask, SweepTask,
                       resolve_task)
from .objectives import DIRECTIONS, METRICS

__all__ = ["Study", "ParamSpec", "ObjectiveSpec", "SamplerSpec", "StudyFileError", "load_study",
           "parse_study", "SAMPLERS", "searchable_parameters"]

SAMPLERS = ("grid", "random", "tpe")
_TOP_KEYS = ("name", "task", "world", "options", "search_space", "sampler", "objectives",
             "trials", "seeds", "duration", "start_perturbation", "noise", "timeout")
_PARAM_KEYS = ("low", "high", "log", "step", "points", "type", "choices")
_DEFAULT_TRIALS = 20
_DEFAULT_TIMEOUT = 600.0


class StudyFileError(C3ValueError):
    """An invalid study file. ``file``, ``line`` (1-based, 0 if unknown) and ``key`` say where."""

    def __init__(self, message: str, file: str, line: int, key: str):
        where = f"{file}, line {line}" if line else file
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")
        self.file, self.line, self.key, self.reason = file, line, key, message


def searchable_parameters() -> dict[str, str]:
    """Parameter names a search space may use, with their value type."""
    kinds = {"int": "int", "float": "float", "bool": "bool", "str": "str",
             "float | None": "float", "int | None": "int"}
    params = {f.name: kinds[str(f.type)] for f in dataclasses.fields(C3Options)
              if str(f.type) in kinds}
    params.update({name: "float" for name in WEIGHT_SCALES})
    params["N"] = "int"
    return params


@dataclass(frozen=True)
class ParamSpec:
    """One searched parameter.

    Attributes:
        name: a C3Options field, a weight scale (G_scale, U_scale, Q_scale, R_scale) or N.
        kind: "float", "int" or "categorical".
        low, high: range bounds (inclusive) for "float"/"int".
        log: sample the range log-uniformly.
        step: grid / quantisation step of the range (None: continuous).
        points: number of grid points of a continuous float range (grid sampler only).
        choices: the values of a categorical parameter.
        line: line of the parameter in the study file.
    """

    name: str
    kind: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    step: float | int | None = None
    points: int | None = None
    choices: tuple[Any, ...] = ()
    line: int = 0

    def distribution(self) -> Any:
        """The Optuna distribution of this parameter."""
        from optuna.distributions import (CategoricalDistribution, FloatDistribution,
                                          IntDistribution)

        if self.kind == "categorical":
            return CategoricalDistribution(list(self.choices))
        if self.kind == "int":
            return IntDistribution(int(self.low), int(self.high), log=self.log,
                                   step=int(self.step or 1))
        return FloatDistribution(float(self.low), float(self.high), log=self.log,
                                 step=None if self.step is None else float(self.step))

    def grid_values(self) -> tuple[Any, ...] | None:
        """The values the grid sampler visits (None: a continuous range without step/points)."""
        if self.kind == "categorical":
            return self.choices
        if self.kind == "int":
            return tuple(range(int(self.low), int(self.high) + 1, int(self.step or 1)))
        if self.step is not None:
            n = int(math.floor((self.high - self.low) / self.step + 1e-9)) + 1
            return tuple(float(self.low + i * self.step) for i in range(n))
        if self.points is not None:
            space = np.geomspace if self.log else np.linspace
            return tuple(float(v) for v in space(self.low, self.high, self.points))
        return None

    def to_dict(self) -> dict[str, Any]:
        """The spec without its line (used for the study fingerprint)."""
        d = dataclasses.asdict(self)
        d.pop("line")
        d["choices"] = list(self.choices)
        return d


@dataclass(frozen=True)
class ObjectiveSpec:
    """An objective: a metric of :data:`c3mpc.sweep.objectives.METRICS` and its direction."""

    metric: str
    direction: str


@dataclass(frozen=True)
class SamplerSpec:
    """The Optuna sampler: "grid", "random" or "tpe", with its seed."""

    name: str = "tpe"
    seed: int | None = 0

    def build(self, study: "Study", offset: int = 0) -> Any:
        """A fresh Optuna sampler for ``study``.

        Args:
            offset: trials already in the storage; the seed used is ``(seed + offset) mod
                2**32``, so a resumed sampler draws a new stream instead of replaying the
                first run's proposals (which would repeat parameter sets).
        """
        import optuna

        seed = None if self.seed is None else (self.seed + offset) % 2**32
        if self.name == "grid":
            return _GridSampler({p.name: list(p.grid_values() or ()) for p in
                                 study.search_space}, seed=seed)
        if self.name == "random":
            return optuna.samplers.RandomSampler(seed=seed)
        # constant_liar: trials still running count as bad, so parallel asks spread out
        return optuna.samplers.TPESampler(seed=seed, constant_liar=True)


def _grid_sampler_class() -> type:
    import optuna

    class GridSampler(optuna.samplers.GridSampler):
        """Optuna's grid sampler without its ``study.stop()`` on exhaustion.

        ``Study.stop`` is valid only inside ``Study.optimize``; the sweep driver uses
        ask-and-tell and caps the trial budget at the grid size itself.
        """

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            return None

    return GridSampler


def _GridSampler(search_space: dict[str, list[Any]], seed: int | None) -> Any:  # noqa: N802
    return _grid_sampler_class()(search_space, seed=seed)


@dataclass(frozen=True)
class Study:
    """A validated study (see the module docstring for the file format).

    Attributes:
        name: study name in the storage.
        task: the task reference as written in the file (a task file: its absolute path).
        world: where trials run: "lcs" (the plant's own LCS step) or "simulator" (the contact
            simulator, :func:`c3mpc.run_in_simulator`; task files only).
        search_space: searched parameters, in file order.
        objectives: one or more objectives (multi-objective when more than one).
        sampler: the sampler.
        trials: trial budget (finished trials, failed ones included; capped at the grid size).
        seeds: episode seeds; each trial runs one episode per seed.
        duration: simulated time per episode [s] (None: the task's).
        start_perturbation: (1,) or (n_x,) half-width of the uniform start perturbation.
        noise: process-noise standard deviation per step.
        timeout: wall-time limit per trial [s].
        options: fixed C3Options overrides for every trial.
        source: the file the study came from.
    """

    name: str
    task: str
    search_space: tuple[ParamSpec, ...]
    objectives: tuple[ObjectiveSpec, ...]
    sampler: SamplerSpec = SamplerSpec()
    trials: int = _DEFAULT_TRIALS
    seeds: tuple[int, ...] = (0,)
    duration: float | None = None
    start_perturbation: tuple[float, ...] = (0.0,)
    noise: float = 0.0
    timeout: float = _DEFAULT_TIMEOUT
    options: Mapping[str, Any] = field(default_factory=dict)
    source: str = "<string>"
    world: str = "lcs"

    @property
    def directions(self) -> list[str]:
        """Optuna directions, one per objective."""
        return [o.direction for o in self.objectives]

    @property
    def metrics(self) -> list[str]:
        """Objective metric names, in order."""
        return [o.metric for o in self.objectives]

    def distributions(self) -> dict[str, Any]:
        """``{name: optuna distribution}`` of the search space."""
        return {p.name: p.distribution() for p in self.search_space}

    def grid_size(self) -> int | None:
        """Number of grid points (None unless the sampler is "grid")."""
        if self.sampler.name != "grid":
            return None
        return int(np.prod([len(p.grid_values() or ()) for p in self.search_space]))

    def with_trials(self, trials: int) -> "Study":
        """A copy with another trial budget (``--trials``), capped at the grid size."""
        if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
            raise C3ValueError(f"trials must be an integer >= 1, got {trials!r}")
        grid = self.grid_size()
        return dataclasses.replace(self, trials=min(trials, grid) if grid else trials)

    def fingerprint(self) -> str:
        """Hash of everything that defines the trials' meaning (not name, budget or timeout).

        A run folder refuses to resume a study whose fingerprint changed.
        """
        payload = {"task": self.task, "search_space": [p.to_dict() for p in self.search_space],
                   "objectives": [dataclasses.asdict(o) for o in self.objectives],
                   "sampler": dataclasses.asdict(self.sampler), "seeds": list(self.seeds),
                   "duration": self.duration, "start_perturbation": list(self.start_perturbation),
                   "noise": self.noise, "options": dict(self.options)}
        if self.world != "lcs":  # (studies written before `world` existed keep their hash)
            payload["world"] = self.world
        text = json.dumps(payload, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def resolve_task(self) -> SweepTask:
        """The task object (see :func:`c3mpc.sweep.episodes.resolve_task`)."""
        return resolve_task(self.task, self.world)


def load_study(path: str | Path) -> Study:
    """Read and validate a study file.

    Raises:
        StudyFileError: any problem, naming the file, line and key.
        FileNotFoundError: no such file.
    """
    p = Path(path)
    return parse_study(p.read_text(), source=str(p), default_name=p.stem)


def parse_study(text: str, source: str = "<string>", default_name: str = "study") -> Study:
    """Parse and validate study YAML text (see :func:`load_study`)."""
    return _Parser(text, source, default_name).parse()


class _Parser:
    def __init__(self, text: str, source: str, default_name: str):
        self.source = source
        self.default_name = default_name
        try:
            self.data, self.value_lines, self.key_lines = load_located(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            what = "" if isinstance(e, YAMLLimitError) else "malformed YAML: "
            raise StudyFileError(f"{what}{getattr(e, 'problem', None) or e}",
                                 source, mark.line + 1 if mark else 0, "") from None

    # ------------------------------------------------------------------ errors
    def error(self, path: tuple[Any, ...], message: str, at_key: bool = False) -> StudyFileError:
        lines = self.key_lines if at_key else self.value_lines
        line = lines.get(path) or self.key_lines.get(path) or self.value_lines.get(path[:-1], 0)
        key = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path)
        return StudyFileError(message, self.source, line, key.replace(".[", "["))

    def number(self, path: tuple[Any, ...], value: Any, what: str = "a number") -> float:
        if isinstance(value, bool):
            raise self.error(path, f"must be {what}, got {value!r}")
        try:
            v = float(value)  # YAML 1.1 reads 1e-3 (no dot) as a string
        except (TypeError, ValueError):
            raise self.error(path, f"must be {what}, got {value!r}") from None
        if not math.isfinite(v):
            raise self.error(path, f"must be finite, got {value!r}")
        return v

    def integer(self, path: tuple[Any, ...], value: Any, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"must be an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(path, f"must be >= {minimum}, got {value}")
        return value

    # ------------------------------------------------------------------ parse
    def parse(self) -> Study:
        data = self.data
        if not isinstance(data, dict):
            raise self.error((), "a study file must be a mapping of keys (task, search_space, "
                             "objectives, ...)")
        for key in data:
            if key not in _TOP_KEYS:
                raise self.error((key,), f"unknown key; valid keys: {list(_TOP_KEYS)}",
                                 at_key=True)
        for key in ("task", "search_space"):
            if key not in data:
                raise StudyFileError(f"missing required key {key!r}", self.source, 1, "")
        name = data.get("name", self.default_name)
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise self.error(("name",), f"must be letters, digits, '.', '_' or '-' (it names "
                             f"the default run folder), got {name!r}")
        task_ref, world = self.parse_world(data["task"], data.get("world"))
        task = self.parse_task(task_ref, world)
        base = self.parse_options(data.get("options") or {}, task)
        sampler = self.parse_sampler(data.get("sampler", "tpe"))
        space = self.parse_space(data["search_space"], base, sampler)
        objectives = self.parse_objectives(data.get("objectives", ["success_rate"]))
        seeds = self.parse_seeds(data.get("seeds", 1))
        duration = None
        if data.get("duration") is not None:
            duration = self.number(("duration",), data["duration"], "a time in [s]")
            if duration <= 0:
                raise self.error(("duration",), f"must be > 0 s, got {duration}")
        perturbation = self.parse_perturbation(data.get("start_perturbation", 0.0), task)
        noise = self.number(("noise",), data.get("noise", 0.0))
        if noise < 0:
            raise self.error(("noise",), f"must be >= 0, got {noise}")
        if noise > 0 and world == "simulator":
            raise self.error(("noise",), "process noise is added to the planning LCS's state; "
                             "with world: simulator it must be 0")
        timeout = self.number(("timeout",), data.get("timeout", _DEFAULT_TIMEOUT),
                              "a time in [s]")
        if timeout <= 0:
            raise self.error(("timeout",), f"must be > 0 s, got {timeout}")
        study = Study(name=name, task=task_ref, world=world, search_space=space,
                      objectives=objectives, sampler=sampler, seeds=seeds, duration=duration,
                      start_perturbation=perturbation, noise=noise, timeout=timeout,
                      options=dict(data.get("options") or {}), source=self.source)
        grid = study.grid_size()
        trials = data.get("trials", grid or _DEFAULT_TRIALS)
        trials = self.integer(("trials",), trials, minimum=1)
        return study.with_trials(trials)

    def parse_world(self, ref: Any, world: Any) -> tuple[Any, str]:
        """The task reference (a task file: its absolute path, relative paths taken from the
        study file's folder) and the world trials run in (default: "simulator" for a task
        file, "lcs" otherwise)."""
        is_file = isinstance(ref, str) and ref.lower().endswith(TASK_FILE_SUFFIXES)
        if is_file:
            path = Path(ref)
            if not path.is_absolute() and self.source not in ("<string>", ""):
                path = Path(self.source).resolve().parent / path
            if not path.is_file():
                raise self.error(("task",), f"task file {ref!r} not found (looked at {path})")
            ref = str(path.resolve())
        if world is None:
            return ref, "simulator" if is_file else "lcs"
        if world not in WORLDS:
            raise self.error(("world",), f"must be one of {list(WORLDS)}, got {world!r}")
        if world == "simulator" and not is_file:
            raise self.error(("world",), "simulator needs a task file (path/to/task.yaml): a "
                             "registered task has no simulation scene")
        return ref, world

    def parse_task(self, ref: Any, world: str = "lcs") -> SweepTask:
        try:
            return resolve_task(ref, world)
        except ValueError as e:
            raise self.error(("task",), str(e)) from None

    def parse_options(self, options: Any, task: SweepTask) -> dict[str, Any]:
        if not isinstance(options, dict):
            raise self.error(("options",), "must be a mapping of C3Options fields")
        fields = C3Options.field_names()
        for key in options:
            if key not in fields:
                raise self.error(("options", key), f"unknown C3Options field; valid: {fields}",
                                 at_key=True)
        base = task.base_options().to_dict()
        base.update(options)
        try:
            C3Options.from_dict(base)
        except (TypeError, ValueError) as e:
            bad = next((k for k in options if f"C3Options.{k} " in str(e)), None)
            raise self.error(("options", bad) if bad else ("options",), str(e)) from None
        return base

    def parse_sampler(self, spec: Any) -> SamplerSpec:
        seed: Any = 0
        path: tuple[Any, ...] = ("sampler",)
        if isinstance(spec, dict):
            unknown = [k for k in spec if k not in ("name", "seed")]
            if unknown:
                raise self.error(("sampler", unknown[0]), "unknown key; valid: ['name', 'seed']",
                                 at_key=True)
            name, seed = spec.get("name", "tpe"), spec.get("seed", 0)
            path = ("sampler", "name") if "name" in spec else path
        else:
            name = spec
        if name not in SAMPLERS:
            raise self.error(path, f"unknown sampler {name!r}; samplers: {list(SAMPLERS)}")
        if seed is not None:
            seed = self.integer(("sampler", "seed"), seed, minimum=0)
        return SamplerSpec(name, seed)

    def parse_objectives(self, spec: Any) -> tuple[ObjectiveSpec, ...]:
        path0 = ("objectives",)
        items = [spec] if isinstance(spec, (str, dict)) else spec
        if not isinstance(items, list) or not items:
            raise self.error(path0, "must be a metric name or a non-empty list of "
                             f"{{metric, direction}}; metrics: {sorted(METRICS)}")
        out = []
        for i, item in enumerate(items):
            path = path0 + (i,) if not isinstance(spec, (str, dict)) else path0
            if isinstance(item, str):
                metric, direction = item, None
            elif isinstance(item, dict):
                unknown = [k for k in item if k not in ("metric", "direction")]
                if unknown:
                    raise self.error(path + (unknown[0],), "unknown key; valid: ['metric', "
                                     "'direction']", at_key=True)
                if "metric" not in item:
                    raise self.error(path, "objective needs a 'metric'")
                metric, direction = item["metric"], item.get("direction")
                path = path + ("metric",)
            else:
                raise self.error(path, f"must be a metric name or {{metric, direction}}, got "
                                 f"{item!r}")
            if metric not in METRICS:
                raise self.error(path, f"unknown metric {metric!r}; metrics: {sorted(METRICS)}")
            if direction is None:
                direction = METRICS[metric].default_direction
            elif direction not in DIRECTIONS:
                raise self.error(path[:-1] + ("direction",), f"direction must be one of "
                                 f"{list(DIRECTIONS)}, got {direction!r}")
            if any(o.metric == metric for o in out):
                raise self.error(path, f"metric {metric!r} is listed twice")
            out.append(ObjectiveSpec(metric, direction))
        return tuple(out)

    def parse_seeds(self, spec: Any) -> tuple[int, ...]:
        if isinstance(spec, int) and not isinstance(spec, bool):
            if spec < 1:
                raise self.error(("seeds",), f"must be >= 1 (a count) or a list, got {spec}")
            return tuple(range(spec))
        if not isinstance(spec, list) or not spec:
            raise self.error(("seeds",), "must be a count or a non-empty list of integers")
        seeds = tuple(self.integer(("seeds", i), s, minimum=0) for i, s in enumerate(spec))
        if len(set(seeds)) != len(seeds):
            raise self.error(("seeds",), f"seeds repeat: {list(seeds)}")
        return seeds

    def parse_perturbation(self, spec: Any, task: SweepTask) -> tuple[float, ...]:
        path = ("start_perturbation",)
        values = spec if isinstance(spec, list) else [spec]
        out = tuple(self.number(path + ((i,) if isinstance(spec, list) else ()), v)
                    for i, v in enumerate(values))
        if not out or any(v < 0 for v in out):
            raise self.error(path, f"must be >= 0 (a number or one per state entry), got {spec}")
        if len(out) > 1 and isinstance(task, ClosedLoopTask):
            n_x = task.task.plant().n_x
            if len(out) != n_x:
                raise self.error(path, f"needs one entry per state ({n_x}), got {len(out)}")
        return out

    # ------------------------------------------------------------------ search space
    def parse_space(self, spec: Any, base: dict[str, Any],
                    sampler: SamplerSpec) -> tuple[ParamSpec, ...]:
        if not isinstance(spec, dict) or not spec:
            raise self.error(("search_space",), "must be a non-empty mapping of parameter -> "
                             "range or list of values")
        valid = searchable_parameters()
        out = []
        for name, pspec in spec.items():
            path = ("search_space", name)
            if name not in valid:
                raise self.error(path, f"unknown parameter {name!r}; searchable: "
                                 f"{sorted(valid)}", at_key=True)
            if name in (self.data.get("options") or {}):
                raise self.error(path, f"{name!r} is also fixed under options:", at_key=True)
            param = self.parse_param(path, name, valid[name], pspec)
            self.check_values(path, param, base)
            if sampler.name == "grid" and param.grid_values() is None:
                raise self.error(path, "the grid sampler needs a list of values, or `step` or "
                                 "`points` for a float range")
            out.append(param)
        return tuple(out)

    def parse_param(self, path: tuple[Any, ...], name: str, vtype: str, spec: Any) -> ParamSpec:
        line = self.key_lines.get(path, 0)
        if isinstance(spec, list) or (isinstance(spec, dict) and "choices" in spec):
            choices = spec if isinstance(spec, list) else spec["choices"]
            cpath = path if isinstance(spec, list) else path + ("choices",)
            if isinstance(spec, dict) and set(spec) != {"choices"}:
                extra = sorted(set(spec) - {"choices"})[0]
                raise self.error(path + (extra,), "a categorical parameter takes only `choices`",
                                 at_key=True)
            if not isinstance(choices, list) or not choices:
                raise self.error(cpath, "empty list of values")
            if len({repr(c) for c in choices}) != len(choices):
                raise self.error(cpath, f"values repeat: {choices}")
            for i, c in enumerate(choices):
                if not isinstance(c, (bool, int, float, str)) or c is None:
                    raise self.error(cpath + (i,), f"values must be numbers, strings or "
                                     f"booleans, got {c!r}")
            if vtype == "float":
                choices = [self.number(cpath + (i,), c) for i, c in enumerate(choices)]
            elif vtype == "int":
                choices = [self.integer(cpath + (i,), c) for i, c in enumerate(choices)]
            return ParamSpec(name, "categorical", choices=tuple(choices), line=line)
        if not isinstance(spec, dict):
            raise self.error(path, "must be a range {low, high[, log, step]} or a list of values")
        for key in spec:
            if key not in _PARAM_KEYS:
                raise self.error(path + (key,), f"unknown key; valid: {list(_PARAM_KEYS)}",
                                 at_key=True)
        if vtype in ("str", "bool"):
            raise self.error(path, f"{name} takes {vtype} values: give a list of choices")
        kind = spec.get("type", vtype)
        if kind not in ("int", "float") or (vtype == "int" and kind != "int"):
            expected = "int" if vtype == "int" else "int or float"
            raise self.error(path + ("type",), f"type must be {expected}, got {kind!r}")
        for key in ("low", "high"):
            if key not in spec:
                raise self.error(path, f"a range needs `low` and `high` (missing {key!r})")
        if kind == "int":
            low = self.integer(path + ("low",), spec["low"])
            high = self.integer(path + ("high",), spec["high"])
        else:
            low = self.number(path + ("low",), spec["low"])
            high = self.number(path + ("high",), spec["high"])
        if not low < high:
            raise self.error(path, f"empty range: low ({low}) must be < high ({high})")
        log = spec.get("log", False)
        if not isinstance(log, bool):
            raise self.error(path + ("log",), f"must be true or false, got {log!r}")
        if log and low <= 0:
            raise self.error(path + ("low",), f"a log range needs low > 0, got {low}")
        step = spec.get("step")
        if step is not None:
            step = (self.integer(path + ("step",), step, minimum=1) if kind == "int"
                    else self.number(path + ("step",), step))
            if step <= 0:
                raise self.error(path + ("step",), f"must be > 0, got {step}")
            if log:
                raise self.error(path + ("step",), "`step` cannot be combined with `log`")
        points = spec.get("points")
        if points is not None:
            points = self.integer(path + ("points",), points, minimum=2)
            if kind != "float" or step is not None:
                raise self.error(path + ("points",), "`points` is for float ranges without "
                                 "`step`", at_key=True)
        return ParamSpec(name, kind, low=low, high=high, log=log, step=step, points=points,
                         line=line)

    def check_values(self, path: tuple[Any, ...], param: ParamSpec, base: dict[str, Any]) -> None:
        """Run the parameter's extreme / listed values through the options' own validation."""
        values = param.choices if param.kind == "categorical" else (param.low, param.high)
        for value in values:
            if param.name in WEIGHT_SCALES:
                if not (isinstance(value, (int, float)) and value > 0):
                    raise self.error(path, f"weight scales must be > 0, got {value!r}")
            elif param.name == "N":
                if value < 1:
                    raise self.error(path, f"horizon N must be >= 1, got {value}")
            else:
                try:
                    C3Options.from_dict({**base, param.name: value})
                except (TypeError, ValueError) as e:
                    raise self.error(path, f"value {value!r} is invalid: {e}") from None
