"""Time per step against the number of objects (seed 001 §VI-C1, Figs. 11-12): ours (SAP) beside
Drake's SAP and MuJoCo, in the same run.

The seed's clutter scene: spheres (r = 5 cm, 0.524 kg) and 10 cm boxes (1 kg) dropped in four
columns into an 80 cm container, k = 1e12 N/m (near-rigid), τ_d = δt, μ = 1, δt = 10 ms; with
walls (one globally coupled pile) and without (independent islands). Ours is ``clutter-40`` with
``n_objects``; the peers are built here with the same bodies and start poses:

* Drake: ``MultibodyPlant`` with ``discrete_contact_approximation="sap"``, point contact, the same
  geometry (boxes with eight 1 mm corner spheres, spheres, half-space ground and walls), stiffness
  and relaxation time, and the same collision filters (corner-corner, box-ground/wall and
  corner-sphere pairs excluded).
* MuJoCo: the same bodies as MJCF (box and sphere geoms, plane ground, box walls),
  ``implicitfast``, elliptic cones, Newton solver, default solref/solimp: its own soft-contact
  model and its own box-box collision (no corner spheres), so only its speed is comparable.

Each simulator runs ``--duration`` seconds (the drop and the pile forming); the time per step is
the mean over the run. Peers missing (``pip install -e '.[peers]'``) are skipped and said so.

    python benchmarks/bench_sim_scaling.py                       # 10 ... 400 objects, 0.5 s each
    python benchmarks/bench_sim_scaling.py --sizes 10 40 160 320 --duration 2
    python benchmarks/bench_sim_scaling.py --quick               # 10 and 40 objects, 0.3 s

Ours steps a scene of many objects on per-chunk rigid-body terms
(:class:`plants.sim.tree_dynamics.TreeDynamics`; a whole-model ``pinocchio.Data`` would hold
n_v³-sized tensors, ~28 GB at 160 objects) and factors SAP's Newton Hessian block-sparsely on
islands of many trees (:mod:`plants.sim._sap_sparse`), so the sweep reaches the seed's 400.
"""

from __future__ import annotations

import time

import numpy as np

from _report import ROOT, argument_parser, machine_info, progress, publish, say, show, utc_timestamp

JSON_PATH = ROOT / "benchmarks" / "results" / "bench_sim_scaling.json"
KEY = "bench_sim_scaling"
DT, MU, K = 1e-2, 1.0, 1e12
R_BALL, H_BOX, R_CORNER = 0.05, 0.05, 1e-3
WALLS = [((-1, 0, 0), (0.4, 0, 0)), ((1, 0, 0), (-0.4, 0, 0)), ((0, -1, 0), (0, 0.4, 0)),
         ((0, 1, 0), (0, -0.4, 0))]
CORNERS = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1], indexing="ij")).reshape(3, -1).T


def bodies_of(sim) -> list[dict]:
    """The objects of our clutter scene with their start poses (so the peers drop the same).

    A free body of ours is a translation joint followed by a spherical one (docs/contact-solvers.md
    §10): the position is the first's q, the quaternion (x, y, z, w) the second's.
    """
    model, q0, out = sim.scene.model, sim.scene.q0, []
    for j in range(1, model.njoints):
        name = model.names[j]
        if not name.endswith("_translation"):
            continue
        p = q0[model.joints[j].idx_q:model.joints[j].idx_q + 3]
        s = model.joints[j + 1].idx_q
        quat = q0[s:s + 4] / np.linalg.norm(q0[s:s + 4])  # peers demand a unit quaternion
        body = name[: -len("_translation")]
        out.append({"name": body, "kind": "sphere" if body.startswith("sphere") else "box",
                    "p": p.copy(), "quat_xyzw": quat})
    return out


def run_ours(n: int, walls: bool, duration: float) -> dict:
    from plants import load_scene

    sim = load_scene("clutter-40", solver="sap", dt=DT, n_objects=n, walls=walls)
    bodies = bodies_of(sim)
    steps = int(round(duration / DT))
    t0, c0 = time.perf_counter(), time.process_time()
    traj = sim.run(duration)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"ms_per_step": 1e3 * wall / steps, "cpu_ms_per_step": 1e3 * cpu / steps, "mean_contacts": float(np.mean(traj.stats["n_contacts"])),
            "mean_iterations": float(np.mean(traj.stats["iterations"])), "bodies": bodies}


def run_drake(bodies: list[dict], walls: bool, duration: float) -> dict:
    from pydrake.all import (AddContactMaterial, AddMultibodyPlant, Box, CollisionFilterDeclaration,
                             CoulombFriction, DiagramBuilder, GeometrySet, HalfSpace,
                             MultibodyPlantConfig, ProximityProperties, Quaternion, RigidTransform,
                             RotationMatrix, Simulator, SpatialInertia, Sphere)

    b = DiagramBuilder()
    plant, sg = AddMultibodyPlant(MultibodyPlantConfig(
        time_step=DT, discrete_contact_approximation="sap", contact_model="point"), b)

    def props(tau: float):  # Drake needs a finite point stiffness: the ground gets the objects'
        p = ProximityProperties()
        AddContactMaterial(dissipation=None, point_stiffness=K,
                           friction=CoulombFriction(MU, MU), properties=p)
        p.AddProperty("material", "relaxation_time", tau)
        return p

    statics = [plant.RegisterCollisionGeometry(plant.world_body(), RigidTransform(), HalfSpace(),
                                               "ground", props(0.0))]
    if walls:
        for i, (n, p) in enumerate(WALLS):
            R = RotationMatrix.MakeFromOneVector(np.array(n, float), 2)
            statics.append(plant.RegisterCollisionGeometry(
                plant.world_body(), RigidTransform(R, np.array(p, float)), HalfSpace(),
                f"wall{i}", props(0.0)))
    boxes, corners, balls, handles = [], [], [], []
    for body in bodies:
        if body["kind"] == "sphere":
            m = 1000 * 4 / 3 * np.pi * R_BALL ** 3
            rb = plant.AddRigidBody(body["name"], SpatialInertia.SolidSphereWithMass(m, R_BALL))
            balls.append(plant.RegisterCollisionGeometry(rb, RigidTransform(), Sphere(R_BALL),
                                                         body["name"], props(DT)))
        else:
            rb = plant.AddRigidBody(body["name"], SpatialInertia.SolidBoxWithMass(
                1.0, 2 * H_BOX, 2 * H_BOX, 2 * H_BOX))
            boxes.append(plant.RegisterCollisionGeometry(
                rb, RigidTransform(), Box(2 * H_BOX, 2 * H_BOX, 2 * H_BOX), body["name"], props(DT)))
            for j, s in enumerate(CORNERS):
                corners.append(plant.RegisterCollisionGeometry(
                    rb, RigidTransform(s * (H_BOX - R_CORNER)), Sphere(R_CORNER),
                    f"{body['name']}_c{j}", props(DT)))
        handles.append(rb)
    plant.Finalize()
    sg.collision_filter_manager().Apply(
        CollisionFilterDeclaration().ExcludeWithin(GeometrySet(corners))
        .ExcludeBetween(GeometrySet(boxes), GeometrySet(statics))
        .ExcludeBetween(GeometrySet(corners), GeometrySet(balls)))
    sim = Simulator(b.Build())
    pc = plant.GetMyMutableContextFromRoot(sim.get_mutable_context())
    for body, rb in zip(bodies, handles):
        x, y, z, w = body["quat_xyzw"]
        plant.SetFreeBodyPose(pc, rb, RigidTransform(Quaternion(w, x, y, z), body["p"]))
    sim.Initialize()
    steps = int(round(duration / DT))
    t0, c0 = time.perf_counter(), time.process_time()
    sim.AdvanceTo(steps * DT)
    return {"ms_per_step": 1e3 * (time.perf_counter() - t0) / steps,
            "cpu_ms_per_step": 1e3 * (time.process_time() - c0) / steps}


def run_mujoco(bodies: list[dict], walls: bool, duration: float) -> dict:
    import mujoco

    geoms = ['<geom name="ground" type="plane" size="0 0 1"/>']
    if walls:
        for i, (n, p) in enumerate(WALLS):
            centre = np.array(p, float) - 0.05 * np.array(n, float)
            half = [0.05 if abs(c) else 0.5 for c in n[:2]] + [1.0]
            geoms.append(f'<geom name="wall{i}" type="box" size="{half[0]} {half[1]} {half[2]}" '
                         f'pos="{centre[0]} {centre[1]} 1.0"/>')
    objects = []
    for body in bodies:
        x, y, z, w = body["quat_xyzw"]
        px, py, pz = body["p"]
        geom = (f'<geom type="sphere" size="{R_BALL}" density="1000"/>' if body["kind"] == "sphere"
                else f'<geom type="box" size="{H_BOX} {H_BOX} {H_BOX}" mass="1"/>')
        objects.append(f'<body name="{body["name"]}" pos="{px} {py} {pz}" quat="{w} {x} {y} {z}">'
                       f'<freejoint/>{geom}</body>')
    xml = (f'<mujoco><option timestep="{DT}" integrator="implicitfast" cone="elliptic" '
           f'solver="Newton"/><default><geom friction="{MU} 0.005 0.0001"/></default>'
           f'<worldbody>{"".join(geoms)}{"".join(objects)}</worldbody></mujoco>')
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    steps = int(round(duration / DT))
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        mujoco.mj_step(model, data)
    return {"ms_per_step": 1e3 * (time.perf_counter() - t0) / steps,
            "cpu_ms_per_step": 1e3 * (time.process_time() - c0) / steps}


def _available(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def main() -> None:
    ap = argument_parser(__doc__, "10 and 40 objects, 0.3 s each")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 40, 80, 160, 320, 400])
    ap.add_argument("--duration", type=float, default=0.5, help="simulated seconds per run")
    args = ap.parse_args()
    sizes, duration = ([10, 40], 0.3) if args.quick else (args.sizes, args.duration)
    peers = {"drake": _available("pydrake"), "mujoco": _available("mujoco")}
    run_ours(10, True, 0.05)  # untimed warm-up: loads the compiled kernels (the chunked path's too)
    rows = []
    simulators = 1 + sum(peers.values())  # ours and the installed peers, one run each
    bar = progress(2 * len(sizes) * simulators, "scaling", args.quiet, "runs")
    for walls in (True, False):
        for n in sizes:
            show(bar, f"scaling walls={walls} n={n}: ours")
            ours = run_ours(n, walls, duration)
            bar.update(bar.done + 1)
            bodies = ours.pop("bodies")
            row = {"walls": walls, "n_objects": n, "ours": ours}
            if peers["drake"]:
                show(bar, f"scaling walls={walls} n={n}: drake")
                row["drake"] = run_drake(bodies, walls, duration)
                bar.update(bar.done + 1)
            if peers["mujoco"]:
                show(bar, f"scaling walls={walls} n={n}: mujoco")
                row["mujoco"] = run_mujoco(bodies, walls, duration)
                bar.update(bar.done + 1)
            rows.append(row)
            say(f"walls={walls!s:5s} n={n:4d}: ours {ours['ms_per_step']:8.2f} ms/step"
                + "".join(f", {k} {row[k]['ms_per_step']:8.2f}" for k in ("drake", "mujoco")
                          if k in row), bar)
    versions = {}
    if peers["drake"]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            versions["drake"] = version("drake")
        except PackageNotFoundError:
            versions["drake"] = "?"

    if peers["mujoco"]:
        import mujoco

        versions["mujoco"] = mujoco.__version__
    result = {"timestamp": utc_timestamp(), "machine": machine_info(**versions), "dt": DT,
              "duration_s": duration, "peers": peers, "rows": rows}
    m = result["machine"]
    missing = [k for k, ok in peers.items() if not ok]
    lines = [f"<!-- {KEY}:start -->",
             "## Scaling with the number of objects (`benchmarks/bench_sim_scaling.py`, seed 001 "
             "§VI-C1)", "",
             f"The seed's clutter (spheres and 10 cm boxes in four columns, 80 cm container, "
             f"k = 1e12 N/m, τ_d = δt, μ = 1, δt = 10 ms), {duration:g} s per run from the drop; "
             f"mean wall time per step, and in parentheses the process's CPU time per step "
             f"(`time.process_time`: far less disturbed by the machine's other users). Ours runs the "
             f"compiled step of docs/sap.md §9"
             + "".join(f", {k} {m[k]}" for k in ("drake", "mujoco") if k in m)
             + f". Run {result['timestamp']} on {m['processor']} "
             f"({m['cpu_count']} cores, load {m['load_avg'][0]:.1f}; other work was running on "
             "the machine)." + (f" Not installed, skipped: {', '.join(missing)}." if missing else ""),
             "", "| walls | objects | ours [ms/step] (CPU) | Drake SAP [ms/step] (CPU) | ours / Drake wall (CPU) | "
             "MuJoCo [ms/step] (CPU) | ours / MuJoCo | contacts (ours, mean) | Newton it. (ours) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {'yes' if r['walls'] else 'no'} | {r['n_objects']} | skipped: "
                         f"{r['skipped']} | | | | | | |")
            continue
        o = r["ours"]["ms_per_step"]
        d = r.get("drake", {}).get("ms_per_step", float("nan"))
        mj = r.get("mujoco", {}).get("ms_per_step", float("nan"))
        oc = r["ours"].get("cpu_ms_per_step", float("nan"))
        dc = r.get("drake", {}).get("cpu_ms_per_step", float("nan"))
        mc = r.get("mujoco", {}).get("cpu_ms_per_step", float("nan"))
        lines.append(f"| {'yes' if r['walls'] else 'no'} | {r['n_objects']} | {o:.2f} ({oc:.2f}) | {d:.2f} ({dc:.2f}) | "
                     f"{o / d:.2f} ({oc / dc:.2f}) | {mj:.3f} ({mc:.3f}) | {o / mj:.1f} | {r['ours']['mean_contacts']:.0f} | "
                     f"{r['ours']['mean_iterations']:.1f} |")
    fit = {}
    for walls in (True, False):  # log-log slope of CPU time per step against the objects, 40 and up
        for who in ("ours", "drake", "mujoco"):
            pts = [(r["n_objects"], r[who]["cpu_ms_per_step"]) for r in rows
                   if r["walls"] is walls and who in r and r["n_objects"] >= 40]
            if len(pts) >= 2:
                x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
                fit[(walls, who)] = float(np.polyfit(x, y, 1)[0])
    result["cpu_growth_exponent"] = {f"{'walls' if w else 'no_walls'}/{who}": e for (w, who), e in fit.items()}
    lines += ["", ("Growth of the CPU time per step from 40 objects up (log-log slope, 1 = linear): "
              + "; ".join(f"{'with' if w else 'without'} walls: " + ", ".join(
                  f"{ {'ours': 'ours', 'drake': 'Drake', 'mujoco': 'MuJoCo'}[who]} {fit[(w, who)]:.2f}"
                  for who in ("ours", "drake", "mujoco") if (w, who) in fit) for w in (True, False)) + ".")
              if fit else "Growth exponents need two sizes from 40 objects up.",
              "", "Ours steps many objects on per-chunk rigid-body terms (`plants.sim.tree_dynamics`: "
              "Pinocchio's CRBA, bias forces and Jacobians on sub-models of ≤ 36 dofs; a whole-model "
              "`pinocchio.Data` would hold n_v³ tensors, ~28 GB at 160 objects, which capped this sweep "
              "at 80 before) and factors SAP's Newton Hessian block-sparsely on islands of more than "
              "24 dofs (`plants.sim._sap_sparse`: trees as supernodes, minimum-degree order; seed 001 "
              "§IV-D). Each run starts from the drop, so the first steps are free fall and the pile "
              "forms during the run; the mean is over the whole run for every simulator alike.",
              f"<!-- {KEY}:end -->"]
    publish(result, "\n".join(lines), KEY, JSON_PATH)


if __name__ == "__main__":
    main()
