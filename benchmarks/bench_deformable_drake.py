"""Our deformable solver (seed 004, "fba") beside Drake's ``DeformableModel`` (FEM + SAP) on the
same scene in the same run: a soft co-rotational ball dropped on the ground.

The two simulators get the same tetrahedral mesh (ours written to a .vtk file that Drake loads),
the same material (linear co-rotated: ψ = μ‖F − R‖² + λ/2 tr²(RᵀF − I), E = 1e5 Pa, ν = 0.4,
ρ = 1000 kg/m³; no damping), friction μ = 0.5, gravity and h = 0.01 s. Drake's ground is a rigid
box with compliant-hydroelastic properties (its deformable contact needs a meshed rigid geometry);
ours is a half-space. Per step we time our phases (seed 004 Table 3 columns: Schur = contact
detection + W, local, global, assembly, constraint solve, correction, frame) and Drake's whole
step (``Simulator.AdvanceTo``), as medians over the steps in contact, and the ratio ours/Drake.

Writes ``benchmarks/results/bench_deformable_drake.json`` and the ``bench_deformable_drake``
section of ``docs/BENCHMARKS.md``. ``--append`` adds the sizes run to the rows already there (a
row per size; each row keeps its own run time, load and step count), so the large sizes, whose
Drake steps take minutes, can be run one at a time.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _report  # noqa: E402

from plants.sim.deformable import (  # noqa: E402
    CoRotational,
    DeformableBody,
    DeformableSimulator,
    DeformableWorld,
    HalfSpace,
    sphere_tet_mesh,
)

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_deformable_drake.json"
RADIUS, YOUNGS, POISSON, DENSITY, MU, DT = 0.1, 1e5, 0.4, 1000.0, 0.5, 0.01
PHASES = ("schur_time", "local_time", "global_time", "assembly_time", "constraint_time", "correction_time", "step_time")


DROP = 0.005  # default gap [m] between the ball's bottom and the ground at t = 0


def _mesh(cells: int, drop: float = DROP):
    return sphere_tet_mesh(RADIUS, cells, center=(0.0, 0.0, RADIUS + drop))


def run_ours(cells: int, steps: int, drop: float = DROP) -> dict:
    mesh = _mesh(cells, drop)
    body = DeformableBody("ball", mesh, CoRotational(YOUNGS, POISSON), density=DENSITY)
    t0 = time.perf_counter()
    sim = DeformableSimulator(DeformableWorld((body,), (HalfSpace(name="ground", mu=MU),)), dt=DT)
    pre = time.perf_counter() - t0
    _report.say(f"  ours: {mesh.n_nodes} vertices, precomputation {pre:.1f} s")
    traj = sim.run(steps * DT)
    s = traj.stats
    contact = np.flatnonzero(s["n_contacts"] > 0)
    sel = contact[len(contact) // 3:] if contact.size else np.arange(steps)
    z = traj.deformable_positions["ball"][:, :, 2]
    return {"vertices": int(mesh.n_nodes), "tets": int(mesh.n_elements), "precompute_s": pre,
            "nnz_S": int(sim.system.inverse.S.nnz), "contacts": int(s["n_contacts"].max()),
            "min_z_final": float(z[-1].min()), "com_z_final": float(z[-1].mean()),
            **{k: 1e3 * float(np.median(s[k][sel])) for k in PHASES}}


def run_drake(cells: int, steps: int, folder: Path, drop: float = DROP) -> dict:
    import meshio
    import pydrake.all as pa

    mesh = _mesh(cells, drop)
    path = folder / f"ball_{cells}.vtk"
    meshio.write(str(path), meshio.Mesh(mesh.X, [("tetra", mesh.elements)]))
    builder = pa.DiagramBuilder()
    plant, _ = pa.AddMultibodyPlant(pa.MultibodyPlantConfig(time_step=DT, discrete_contact_approximation="sap"),
                                    builder)
    props = pa.ProximityProperties()
    pa.AddContactMaterial(dissipation=0.0, friction=pa.CoulombFriction(MU, MU), properties=props)
    config = pa.DeformableBodyConfig()
    config.set_youngs_modulus(YOUNGS)
    config.set_poissons_ratio(POISSON)
    config.set_mass_density(DENSITY)
    config.set_material_model(pa.MaterialModel.kLinearCorotated)
    geometry = pa.GeometryInstance(pa.RigidTransform(), pa.Mesh(str(path)), "ball")
    geometry.set_proximity_properties(props)
    body = plant.mutable_deformable_model().RegisterDeformableBody(geometry, config, 1.0)
    ground = pa.ProximityProperties()
    pa.AddContactMaterial(dissipation=0.0, friction=pa.CoulombFriction(MU, MU), properties=ground)
    pa.AddCompliantHydroelasticProperties(resolution_hint=1.0, hydroelastic_modulus=1e8, properties=ground)
    plant.RegisterCollisionGeometry(plant.world_body(), pa.RigidTransform([0.0, 0.0, -0.1]), pa.Box(4.0, 4.0, 0.2),
                                    "ground", ground)
    plant.Finalize()
    diagram = builder.Build()
    t0 = time.perf_counter()
    simulator = pa.Simulator(diagram)
    simulator.Initialize()
    pre = time.perf_counter() - t0
    times = []
    for k in range(steps):
        t0 = time.perf_counter()
        simulator.AdvanceTo((k + 1) * DT)
        times.append(time.perf_counter() - t0)
        _report.say(f"  Drake step {k + 1}/{steps}: {times[-1]:.1f} s")
    ctx = plant.GetMyContextFromRoot(simulator.get_context())
    P = np.asarray(plant.deformable_model().GetPositions(ctx, body))  # (3, n)
    return {"vertices": int(P.shape[1]), "precompute_s": pre, "step_time": 1e3 * float(np.median(times[steps // 3:])),
            "min_z_final": float(P[2].min()), "com_z_final": float(P[2].mean())}


def _drake_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("drake")
    except PackageNotFoundError:  # pragma: no cover - a source build of pydrake
        return "?"


def _row_runs(r: dict, res: dict) -> str:
    """Where a row's two columns come from: the Drake run (ours beside it) and, after
    ``--ours-only``, the later re-timing of ours."""
    drake = (f"{r['ours']['vertices']} vertices: Drake run {r.get('timestamp', res['timestamp'])} (load "
             f"{r.get('load', res['machine']['load_avg'][0]):.1f})")
    if "ours_drake_run" not in r:
        return drake + ", ours in the same run" + (f" (commit {r['commit']})" if "commit" in r else "")
    return (drake + f", ours there {r['ours_drake_run']['step_time']:.0f} ms/step (code of that run); ours re-timed "
            f"{r['ours_timestamp']} (load {r['ours_load']:.1f}, commit {r.get('ours_commit', '?')})")


def render(res: dict) -> str:
    start, end = _report.markers("bench_deformable_drake")
    m = res["machine"]
    retimed = any("ours_drake_run" in r for r in res["rows"])
    L = [start, "## Deformable solver vs Drake's DeformableModel (`benchmarks/bench_deformable_drake.py`)", "",
         f"On {m['processor']} ({m['cpu_count']} cores, shared with other engineers' jobs: the load average is "
         "given per run, timings are noisy, and the two columns of a row were not always measured at the same "
         f"load), pydrake {res['drake_version']}" + (" (--quick)" if res["quick"] else "") + ".", "",
         "A co-rotational ball (r = 0.1 m, E = 1e5 Pa, ν = 0.4, ρ = 1000 kg/m³, μ = 0.5) dropped from a gap "
         "(`drop`; 0: it starts touching the ground, every step in contact) onto the ground, h = 0.01 s, the same "
         "tetrahedral mesh in both (ours written to .vtk, loaded by Drake). Ours: seed 004's solver at its "
         "defaults (5 local-global, 10 CR iterations, FB, W-diagonal r; numpy/scipy/numba on one CPU thread). "
         "Drake: `DeformableModel` FEM with SAP (`discrete_contact_approximation=\"sap\"`), ground a "
         "compliant-hydroelastic box (Drake's deformable contact needs a meshed rigid geometry). Median ms per "
         "step over the last two thirds of the row's steps (in contact); our phases are summed over the 5 "
         "iterations of a step (seed 004 Table 3 lists them per iteration).", "",
         "Runs: " + "; ".join(_row_runs(r, res) for r in res["rows"]) + "." + (
             " Where ours was re-timed (`--ours-only`: the same scene and step count, Drake's column kept "
             "from its run), our columns are from the re-timing." if retimed else ""), "",
         "| vertices | tets | drop [mm] | steps | contacts | Schur | Local | Global | Assembly | Cst. solve | "
         "Correction | ours: step | Drake: step | ours / Drake | final bottom z ours / Drake [mm] |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        o, d = r["ours"], r["drake"]
        L.append(f"| {o['vertices']} | {o['tets']} | {1e3 * r.get('drop', DROP):.0f} | "
                 f"{r.get('steps', res['steps'])} | {o['contacts']} | {o['schur_time']:.1f} | {o['local_time']:.1f} | "
                 f"{o['global_time']:.1f} | {o['assembly_time']:.1f} | {o['constraint_time']:.1f} | "
                 f"{o['correction_time']:.1f} | {o['step_time']:.1f} | {d['step_time']:.1f} | "
                 f"{o['step_time'] / d['step_time']:.2g} | "
                 f"{1e3 * o['min_z_final']:.3f} / {1e3 * d['min_z_final']:.2f} |")
    L += ["", "Precomputation (ours: ordering, Cholesky and S; Drake: `Simulator.Initialize`): " + "; ".join(
        f"{r['ours']['vertices']} vertices: {r['ours']['precompute_s']:.1f} s / {r['drake']['precompute_s']:.1f} s"
        for r in res["rows"]) + ". The contact models differ: ours is rigid (Signorini; penetration ≤ a few µm "
        "after the fixed 5 iterations), "
        "Drake's deformable-rigid contact is compliant (a few tenths of a mm of overlap at rest)."]
    L.append(end)
    return "\n".join(L)


def _git_commit() -> str:
    """Short commit of the code that ran, "+dirty" when tracked code (not results or docs) differs."""
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)benchmarks/results", ":(exclude)docs"],  # code changes only
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        return out + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def retime_ours(cells: list[int] | None, quiet: bool) -> dict:
    """Re-time ours on rows of the saved results (``cells``; None: every row) with the same scene
    (drop) and step count, keeping each row's Drake column; the row records both runs."""
    if not JSON_PATH.exists():
        raise SystemExit(f"--ours-only needs saved results at {JSON_PATH}; run with Drake first")
    res = json.loads(JSON_PATH.read_text())
    for r in res["rows"]:
        r.setdefault("timestamp", res["timestamp"])
        r.setdefault("load", res["machine"]["load_avg"][0])
        r.setdefault("steps", res["steps"])
        r.setdefault("drop", DROP)
    known = {r["cells"] for r in res["rows"]}
    missing = sorted(set(cells or ()) - known)
    if missing:
        raise SystemExit(f"--ours-only: no saved Drake row for cells {missing} (rows: {sorted(known)})")
    commit = _git_commit()
    for r in _report.track([r for r in res["rows"] if cells is None or r["cells"] in cells], "ours", quiet, "meshes"):
        r.setdefault("ours_drake_run", r["ours"])
        r["ours"] = run_ours(r["cells"], r["steps"], r["drop"])
        r.update(ours_timestamp=_report.utc_timestamp(), ours_load=_report.machine_info()["load_avg"][0],
                 ours_commit=commit)
        _report.say(f"ball {r['ours']['vertices']} vertices: ours {r['ours']['step_time']:.1f} ms/step (was "
                    f"{r['ours_drake_run']['step_time']:.1f} in the Drake run), Drake {r['drake']['step_time']:.1f}")
    res["machine"] = _report.machine_info()
    return res


def main(argv=None) -> None:
    parser = _report.argument_parser(__doc__, "two smaller balls (729 and 2197 vertices), fewer steps")
    parser.add_argument("--cells", nargs="+", type=int, default=None,
                        help="ball resolutions (cells per diameter; (cells+1)³ vertices), default 12 16 21")
    parser.add_argument("--steps", type=int, default=None, help="steps per run (default 25; --quick 15)")
    parser.add_argument("--drop", type=float, default=DROP,
                        help=f"gap [m] between the ball and the ground at t = 0 (default {DROP}); 0 starts it "
                             "touching, so every step is in contact (for the large sizes, whose Drake steps are slow)")
    parser.add_argument("--ours-only", action="store_true",
                        help="re-time only our solver on the saved rows (--cells, default all), same scene and step "
                             "count, keeping each row's Drake column; the table says which run each column is from")
    parser.add_argument("--append", action="store_true",
                        help="add these sizes to the rows of the existing results (replacing the same sizes)")
    args = parser.parse_args(argv)
    if args.ours_only:
        res = retime_ours(args.cells, args.quiet)
        _report.publish(res, render(res), "bench_deformable_drake", JSON_PATH)
        return

    cells = args.cells or ([8, 12] if args.quick else [12, 16, 21])
    steps = args.steps or (15 if args.quick else 25)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in _report.track(cells, "drake", args.quiet, "meshes"):
            ours = run_ours(c, steps, args.drop)
            drake = run_drake(c, steps, Path(tmp), args.drop)
            rows.append({"cells": c, "ours": ours, "drake": drake, "timestamp": _report.utc_timestamp(),
                         "load": _report.machine_info()["load_avg"][0], "steps": steps, "drop": args.drop,
                         "commit": _git_commit()})
            _report.say(f"ball {ours['vertices']} vertices: ours {ours['step_time']:.1f} ms/step, "
                        f"Drake {drake['step_time']:.1f} ms/step")
    res = {"timestamp": _report.utc_timestamp(), "machine": _report.machine_info(), "quick": args.quick,
           "steps": steps, "drake_version": _drake_version(), "rows": rows}
    if args.append and JSON_PATH.exists():
        old = json.loads(JSON_PATH.read_text())
        for r in old["rows"]:
            r.setdefault("timestamp", old["timestamp"])
            r.setdefault("load", old["machine"]["load_avg"][0])
            r.setdefault("steps", old["steps"])
            r.setdefault("drop", DROP)
        new = {r["cells"] for r in rows}
        res["rows"] = sorted([r for r in old["rows"] if r["cells"] not in new] + rows, key=lambda r: r["cells"])
    _report.publish(res, render(res), "bench_deformable_drake", JSON_PATH)


if __name__ == "__main__":
    main()
