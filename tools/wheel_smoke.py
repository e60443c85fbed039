"""Smoke test of an installed c3mpc wheel (run by ``make wheel-check`` in an empty venv).

Run it with the venv's Python from a directory outside the source tree::

    python tools/wheel_smoke.py /path/to/venv/bin/c3mpc

It checks that the five packages import from the venv (not from a checkout), that the
packaged model files are there (a URDF plant loads), that ``c3mpc --version`` prints the
installed distribution's version, that the command-line help of the main commands works, and
that ``c3mpc run cartpole-softwalls --duration 1``
writes a report whose summary has the expected number of steps. Exits non-zero with a
message on the first failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tempfile
from importlib.metadata import version
from pathlib import Path


def _fail(message: str) -> None:
    print(f"wheel smoke test FAILED: {message}", file=sys.stderr)
    raise SystemExit(1)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        _fail("usage: wheel_smoke.py PATH_TO_C3MPC_SCRIPT")
    script = argv[0]
    site = Path(sysconfig.get_paths()["purelib"]).resolve()

    import c3mpc
    import estimators
    import hardware
    import lcs
    import plants

    for module in (c3mpc, lcs, plants, estimators, hardware):
        path = Path(module.__file__).resolve()
        if site not in path.parents:
            _fail(f"{module.__name__} imported from {path}, not from the venv's {site}")
        if not (path.parent / "py.typed").is_file():
            _fail(f"{module.__name__} has no py.typed marker in the wheel")

    installed = version("c3mpc")
    if c3mpc.__version__ != installed:
        _fail(f"c3mpc.__version__ is {c3mpc.__version__!r}, the distribution {installed!r}")
    plant = plants.load_plant("cube-pivoting")  # needs the URDF shipped as package data
    if (plant.n_x, plant.n_u) != (14, 4):
        _fail(f"cube-pivoting has n_x, n_u = {plant.n_x}, {plant.n_u}, expected 14, 4")

    out = subprocess.run([script, "--version"], capture_output=True, text=True, check=False)
    if out.returncode != 0 or out.stdout.strip() != f"c3mpc {installed}":
        _fail(f"`c3mpc --version` gave rc={out.returncode}, stdout={out.stdout!r}, "
              f"stderr={out.stderr!r}")

    for argv in (["--help"], ["run", "--help"], ["sweep", "--help"], ["deploy", "--help"]):
        helped = subprocess.run([script, *argv], capture_output=True, text=True, check=False)
        if helped.returncode != 0 or "usage: c3mpc" not in helped.stdout:
            _fail(f"`c3mpc {' '.join(argv)}` gave rc={helped.returncode}: {helped.stderr[-500:]}")

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report"
        run = subprocess.run([script, "run", "cartpole-softwalls", "--duration", "1",
                              "--report", str(report), "--quiet"],
                             capture_output=True, text=True, check=False)
        # exit status 1 is the task's own verdict (not balanced within 1 s), not an error
        if run.returncode not in (0, 1) or not (report / "summary.json").is_file():
            _fail(f"`c3mpc run cartpole-softwalls --duration 1` exited {run.returncode}:\n"
                  f"{run.stdout}\n{run.stderr}")
        summary = json.loads((report / "summary.json").read_text())
        if summary["success"] != (run.returncode == 0):
            _fail(f"exit status {run.returncode} disagrees with success={summary['success']}")
        if summary.get("steps") != 100:  # 1 s at the task's dt = 0.01 s
            _fail(f"summary.json reports {summary.get('steps')} steps, expected 100")
    print(f"wheel smoke test passed: c3mpc {installed} from {site}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
