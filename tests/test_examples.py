"""The scripts of examples/ run as a user runs them (a subprocess), shortened, and say what
their README promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, str(ROOT / "examples" / name), *args], cwd=cwd or ROOT,
                          env=env, capture_output=True, text=True, timeout=600)


def test_examples_readme_lists_every_script():
    readme = (ROOT / "examples" / "README.md").read_text()
    for script in (ROOT / "examples").glob("*.py"):
        assert f"`{script.name}`" in readme, script.name


def test_paper_plants_reach_their_goals():
    out = run_example("paper_plants.py")
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [line for line in out.stdout.splitlines() if "success=" in line]
    assert [line.split()[0] for line in lines] == ["cartpole-softwalls", "finger-gaiting",
                                                   "pivoting"]
    assert all("success=True" in line for line in lines)


def test_contact_solvers_table_compares_every_solver_with_sap():
    out = run_example("contact_solvers.py", "--scene", "cube-rest-3", "--duration", "0.005",
                      "--solvers", "sap", "nsn")
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    rows = {line.split()[0]: line.split() for line in out.stdout.splitlines()[2:]}
    assert set(rows) == {"sap", "nsn"} and rows["sap"][1] == rows["nsn"][1] == "yes"
    assert float(rows["sap"][-1]) == 0.0 and float(rows["nsn"][-1]) < 1e-3  # |q - q_sap|


def test_sweep_on_a_local_dask_cluster(tmp_path):
    study = tmp_path / "tiny.yaml"
    study.write_text("name: tiny\ntask: cartpole-softwalls\noptions: {projection: lcp}\n"
                     "search_space: {admm_iter: [2, 10]}\nsampler: grid\n"
                     "objectives: accumulated_cost\nseeds: 1\nduration: 0.3\ntimeout: 120\n")
    out = run_example("sweep_dask.py", "--study", str(study), "--out", str(tmp_path / "run"),
                      "--workers", "2", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    assert "2 complete, 0 failed on tcp://127.0.0.1:" in out.stdout
    assert len((tmp_path / "run" / "trials.csv").read_text().splitlines()) == 3


def test_deploy_rehearsal_is_authenticated_and_safe(tmp_path):
    out = run_example("deploy_rehearsal.py", "--duration", "1", "--report",
                      str(tmp_path / "rep"), cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    assert "exit: completed" in out.stdout
    assert "safety interventions 0, watchdog trips 0, rejected by the robot 0" in out.stdout
    import json

    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert summary["commands_sent"] >= 80 and (tmp_path / "rep" / "run.mcap").is_file()


def test_deformables_stick_above_and_slide_below_the_friction_threshold():
    out = run_example("deformables.py", "--duration", "0.5")
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    w_diag = [line for line in out.stdout.splitlines() if "w_diagonal" in line]
    assert w_diag[0].endswith("-> slides") and w_diag[1].endswith("-> sticks")


def test_deformable_grasp_lifts_the_ball_and_records_it(tmp_path):
    out = run_example("deformable_grasp.py", "--cells", "3", "--html", str(tmp_path / "grasp.html"))
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    ratio = float(out.stdout.split("vertical force / weight:")[1].split()[0])
    assert abs(ratio - 1) < 0.02
    assert "lifted 9." in out.stdout or "lifted 10." in out.stdout
    assert "fingers held open by the ball" in out.stdout  # two-way coupling, the default
    assert (tmp_path / "grasp.html").stat().st_size > 200_000
