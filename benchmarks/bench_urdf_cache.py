"""URDF parse cache (``plants.multibody.urdf.load_urdf``): load times before and after (issue 19).

A task file loads its model file twice, for the planning plant and for the scene, and
``pinocchio.buildGeomFromUrdf`` reads every collision mesh each time (~5 s for so101's STLs).
Per robot (example-robot-data, through a task file with a ground plane as in
``tests/test_robot_sweep.py``): ``load_urdf`` with the cache cleared (a parse) and warm (copies
of the cached parse), and the user's path, ``load_task_file`` + ``task.scene()``, with no cache
(``_CACHE_SIZE = 0``, the behaviour before the cache), with a cold cache (the first load in a
process: the plant parses, the scene hits) and warm (a second load of the same task).

Writes ``benchmarks/results/bench_urdf_cache.json`` and the ``bench_urdf_cache`` section of
``docs/BENCHMARKS.md``. ``--quick``: z1 only, no markdown.
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests", Path(__file__).resolve().parent):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
import _report  # noqa: E402
from plants.multibody import urdf as urdf_mod  # noqa: E402
from plants.multibody.resources import default_package_dirs, example_robot_data_path  # noqa: E402
from plants.task_file import load_task_file  # noqa: E402
from test_robot_sweep import ARMS, GROUND, TASK  # noqa: E402

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_urdf_cache.json"
KEY = "bench_urdf_cache"
ROBOTS = {"so101": ARMS["so101"], "xarm7": ARMS["xarm7"], "kinova": ARMS["kinova"],
          "z1": ARMS["z1"]}


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_robot(name: str) -> dict:
    file, link = ROBOTS[name]
    path = example_robot_data_path(file)
    dirs = list(default_package_dirs(path))
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as tmp:
        warnings.simplefilter("ignore")
        (Path(tmp) / "ground.xml").write_text(GROUND)
        task_path = Path(tmp) / "task.yaml"
        task_path.write_text(TASK.format(file=file, link=link))

        def task_and_scene() -> None:
            load_task_file(task_path).scene()

        urdf_mod.clear_urdf_cache()
        parse = timed(lambda: urdf_mod.load_urdf(path, None, dirs))
        copy = min(timed(lambda: urdf_mod.load_urdf(path, None, dirs)) for _ in range(3))
        size = urdf_mod._CACHE_SIZE
        urdf_mod._CACHE_SIZE = 0
        try:
            urdf_mod.clear_urdf_cache()
            before = timed(task_and_scene)
        finally:
            urdf_mod._CACHE_SIZE = size
        urdf_mod.clear_urdf_cache()
        cold = timed(task_and_scene)
        warm = timed(task_and_scene)
    return {"load_urdf_parse_s": parse, "load_urdf_cached_s": copy, "task_and_scene_no_cache_s": before,
            "task_and_scene_cold_cache_s": cold, "task_and_scene_warm_cache_s": warm}


def markdown(result: dict) -> str:
    start, end = _report.markers(KEY)
    m = result["machine"]
    lines = [start, "## URDF parse cache: task-file load times (`benchmarks/bench_urdf_cache.py`)", "",
             f"Run {result['timestamp']} on {m['processor']} ({m['cpu_count']} cores, shared with other engineers' "
             f"jobs: load average {', '.join(f'{x:.1f}' for x in _report.load_average(m))}; times are "
             "noisy). `load_urdf`: a parse (cache cleared) and the best of 3 cached loads (copies). "
             "Task file (the robot 30 cm above a ground plane, `load_task_file` + `scene()`): no cache "
             "(as before: the plant and the scene each parse), a cold cache (first load in a process) "
             "and a warm one (the same task again). Seconds.", "",
             "| robot | load_urdf parse | load_urdf cached | task + scene, no cache | cold cache | warm cache |",
             "|---|---|---|---|---|---|"]
    for name, r in result["robots"].items():
        lines.append(f"| {name} | {r['load_urdf_parse_s']:.2f} | {r['load_urdf_cached_s']:.2f} | "
                     f"{r['task_and_scene_no_cache_s']:.2f} | {r['task_and_scene_cold_cache_s']:.2f} | "
                     f"{r['task_and_scene_warm_cache_s']:.2f} |")
    lines += ["", end]
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = _report.argument_parser(__doc__, "z1 only, no markdown")
    args = parser.parse_args(argv)
    robots = ["z1"] if args.quick else list(ROBOTS)
    result = {"timestamp": _report.utc_timestamp(), "machine": _report.machine_info(), "robots": {}}
    for name in _report.track(robots, "urdf cache", args.quiet, "robots"):
        r = result["robots"][name] = run_robot(name)
        _report.say(f"{name}: " + ", ".join(f"{k} {v:.2f}" for k, v in r.items()))
    if not args.quick:
        _report.publish(result, markdown(result), KEY, JSON_PATH)
    return result


if __name__ == "__main__":
    main()
