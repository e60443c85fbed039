"""The planning-step check (``plants.check_planning_step``) on every task file and on probes.

* every task file of the repo (``examples/``, ``tests/data/``): the check's ratio at the file's
  planning step, pass or warn, and the step ``planning: {dt: auto}`` would take (no simulation);
* closed loops (C3 with the task file's settings in SAP, 1.5 s) at the default dt 0.1 s, at
  0.05 s and with ``planning: {dt: auto}``: the hand-scale jaw gripper (calibration), and two
  probes the check was not calibrated on: the 1 m jaw gripper with 10 g jaws instead of 100 g
  (flagged: m_obj W 10x larger) and the hand-scale gripper with 100 g jaws instead of 20 g
  (passes: m_obj W 3.7x smaller).

The machine is shared (2 cores): wall times move with its load.

Writes ``benchmarks/results/bench_planning_step.json`` and the ``bench_planning_step`` section
of ``docs/BENCHMARKS.md``.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_report.py
import _report  # noqa: E402
from bench_scale import _errors_text, _run  # noqa: E402

ROOT = _report.ROOT
JSON_PATH = ROOT / "benchmarks" / "results" / "bench_planning_step.json"
JAW = ROOT / "examples" / "own_robot" / "jaw_gripper"

#: (name, task file, jaw mass [kg] replacing the model's, or None for the model as it is)
PROBES = [
    ("jaw_gripper_small", JAW / "jaw_gripper_small.yaml", None),
    ("jaw_gripper, 10 g jaws", JAW / "jaw_gripper.yaml", 0.01),
    ("jaw_gripper_small, 100 g jaws", JAW / "jaw_gripper_small.yaml", 0.1),
]


def task_files() -> list[Path]:
    """Every task file in the repo: a YAML mapping with a ``contacts:`` list."""
    out = []
    for folder in ("examples", "tests/data"):
        for p in sorted((ROOT / folder).rglob("*.y*ml")):
            data = yaml.safe_load(p.read_text())
            if isinstance(data, dict) and isinstance(data.get("contacts"), list):
                out.append(p)
    return out


def _probe_file(path: Path, jaw_mass: float | None, planning: str, folder: Path) -> Path:
    """A copy of the task file and its model: jaw masses (inertia scaled with them), planning."""
    import re

    from plants import load_task_file

    model = load_task_file(path).model_path
    xml = model.read_text()
    if jaw_mass is not None:
        def jaw(m: re.Match) -> str:
            scale = jaw_mass / float(m.group(1))
            inertia = " ".join(f"{scale * float(v):.6g}" for v in m.group(2).split())
            return f'mass="{jaw_mass:g}" diaginertia="{inertia}"'
        xml, n = re.subn(r'mass="([0-9.]+)" diaginertia="([^"]+)"(?=/>\s*<geom name="(?:left|'
                         r'right)_tip")', jaw, xml)
        assert n == 2, "two jaws"
    sub = folder / f"{abs(hash((str(path), jaw_mass, planning)))}"
    sub.mkdir()
    (sub / model.name).write_text(xml)
    text = path.read_text()
    if planning:
        text = text.replace("cost:", f"planning: {planning}\ncost:", 1)
    (sub / path.name).write_text(text)
    return sub / path.name


def main(argv: list[str] | None = None) -> int:
    from plants import load_task_file

    parser = _report.argument_parser(__doc__, "only the task-file checks, no closed loop")
    args = parser.parse_args(argv)
    checks = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in task_files():
            task = load_task_file(path)
            c = task.planning_step
            checks.append({"file": str(path.relative_to(ROOT)), "dt": c.dt, "ratio": c.ratio,
                           "passed": c.passed, "auto_dt": c.suggested_dt(0.1),
                           "body": c.worst.robot_body if c.worst else None})
            _report.say(f"{path.name}: ratio {c.ratio:.3g}, passed {c.passed}")
    runs = []
    cases = [] if args.quick else [(p, planning) for p in PROBES
                                   for planning in ("", "{dt: 0.05}", "{dt: auto}")]
    bar = _report.progress(len(cases), "planning step", args.quiet, "runs")
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (name, path, jaw_mass), planning in cases:
            label = f"{name} {planning or 'defaults'}"
            _report.show(bar, label)
            file = _probe_file(path, jaw_mass, planning, Path(tmp))
            check = load_task_file(file).planning_step
            run = _run(file, 1.5)
            run.update(robot=name, planning=planning or "defaults", check_ratio=check.ratio)
            runs.append(run)
            _report.say(f"{label}: dt {run['planning_dt']:g}, {_errors_text(run['errors'])}, "
                        f"success {run['success']}", bar)
            bar.update(bar.done + 1)
    result = {"timestamp": _report.utc_timestamp(), "machine": _report.machine_info(),
              "threshold": load_threshold(), "task_files": checks, "runs": runs}
    start_marker, end_marker = _report.markers("bench_planning_step")
    m = result["machine"]
    file_rows = "\n".join(
        f"| `{c['file']}` | {c['body']} | {c['dt']:g} | {c['ratio']:.3g} | {c['passed']} | "
        f"{c['auto_dt']:g} |" for c in checks)
    run_rows = "\n".join(
        f"| {r['robot']} | {r['check_ratio']:.3g} | {r['planning']} | {r['planning_dt']:g} | "
        f"{_errors_text(r['errors'])} | {r['success']} | {r['not_converged_plans']} / "
        f"{r['plans']} | {r['wall_s']:.0f} |" for r in runs)
    md = (f"{start_marker}\n## The planning-step check (`benchmarks/bench_planning_step.py`)\n\n"
          f"{result['timestamp']}, {m['platform'].split('-')[0]} ({m['cpu_count']} CPUs, shared "
          f"with other jobs: times are noisy), Python {m['python']}. Ratio: m_obj g dt² W / ℓ "
          f"of the worst robot-object contact at the start (threshold "
          f"{result['threshold']:g}; docs/own-robot.md, \"The planning step check\").\n\n"
          f"| task file | body | dt [s] | ratio | passed | dt: auto [s] |\n"
          f"|---|---|---|---|---|---|\n{file_rows}\n\n"
          + (f"Closed loops, 1.5 s, C3 with the task file's settings in SAP at 1 ms (the "
             f"cube's goal: 45° about z, tolerance 0.05 rad and the file's position "
             f"tolerance):\n\n| robot | check ratio (at the run's dt; auto: at 0.1 s) | planning | "
             f"dt [s] | final errors | "
             f"success | NOT_CONVERGED / plans | wall [s] |\n|---|---|---|---|---|---|---|---|\n"
             f"{run_rows}\n" if runs else "")
          + end_marker)
    _report.publish(result, md, "bench_planning_step", JSON_PATH)
    return 0


def load_threshold() -> float:
    from plants.planning_step import MAX_STEP_RATIO

    return MAX_STEP_RATIO


if __name__ == "__main__":
    raise SystemExit(main())
