"""Where a simulator step's time goes (docs/sap.md §9.1): CPU time per step by component, and each
compiled piece against its readable numpy reference.

CPU time (``time.process_time``) rather than wall time: the machine these numbers come from is
shared, and other users' load stretches wall time 2-4x while leaving CPU time nearly alone.

1. Components: timing wrappers around ``Simulator.step``, ``contact_problem``, ``free_motion``,
   the detector's ``detect``, the controller and ``solver.solve`` during ``run`` (each wrapper adds
   ~1 µs); "assembly" is the rest of ``contact_problem`` (poses, contact rows, joint limits, the
   problem object), "update" the rest of ``step`` (checks, integration), "run loop" the rest of
   ``run`` (statistics, plausibility checks). Median of 3 runs.
2. Pieces: each compiled piece and its reference (``Simulator(compiled=False)``,
   ``SAPOptions(compiled=False)``) on the same state, min of 5 x 1000 calls.

    PYTHONPATH=$PWD python benchmarks/profile_sim_step.py
"""

from __future__ import annotations

import time
import timeit
import warnings

import numpy as np

SCENES = (("cube-slide", {}, 0.4), ("cube-rest-5", {}, 0.3), ("franka-push-ball", {"hand_collision": False}, 0.5))


def components() -> None:
    from plants.sim import load_scene

    clock = time.process_time_ns

    def wrap(obj, name, acc, key):
        f = getattr(obj, name)

        def timed(*a, **k):
            t0 = clock()
            out = f(*a, **k)
            acc[key] += clock() - t0
            return out

        setattr(obj, name, timed)

    print("CPU µs per step: run = step + run loop; step = contact_problem + solve + update")
    for scene, kw, duration in SCENES:
        runs = []
        for _ in range(3):
            sim = load_scene(scene, **kw)
            sim.run(0.01)
            acc = dict.fromkeys(("step", "cp", "solve", "fm", "detect", "ctrl"), 0)
            wrap(sim, "step", acc, "step")
            wrap(sim, "contact_problem", acc, "cp")
            wrap(sim.solver, "solve", acc, "solve")
            wrap(sim, "free_motion", acc, "fm")
            wrap(sim.scene.detector, "detect", acc, "detect")
            if sim.controller is not None:
                wrap(sim, "controller", acc, "ctrl")
            t0 = clock()
            traj = sim.run(duration)
            total = clock() - t0
            row = {k: v / traj.n_steps / 1e3 for k, v in acc.items()}
            row["run"] = total / traj.n_steps / 1e3
            runs.append(row)
        r = {k: float(np.median([x[k] for x in runs])) for k in runs[0]}
        print(f"  {scene}: run {r['run']:.0f} | step {r['step']:.0f} = contact_problem {r['cp']:.0f} (free motion "
              f"{r['fm']:.0f}, controller {r['ctrl']:.0f}, detection {r['detect']:.0f}, assembly "
              f"{r['cp'] - r['fm'] - r['detect'] - r['ctrl']:.0f}) + solve {r['solve']:.0f} + update "
              f"{r['step'] - r['cp'] - r['solve']:.0f} | run loop {r['run'] - r['step']:.0f}")


def pieces() -> None:
    from plants.sim import SAPSolver, load_scene
    from plants.sim._blas import blas_threads

    def cpu_us(f, n: int = 1000) -> float:
        return min(timeit.Timer(f, timer=time.process_time).repeat(number=n, repeat=5)) / n * 1e6

    print("CPU µs per call, reference -> compiled")
    for scene, kw, _ in SCENES:
        sim = load_scene(scene, **kw)
        sim.run(0.05)
        q, v, data = sim.q, sim.v, sim.data
        tau = np.zeros(sim.model.nv)
        out = {}
        with blas_threads(1):
            for compiled in (False, True):
                sim.compiled = compiled
                sim._pin.computeJointJacobians(sim.model, data, q)
                Rg, pg = sim._geometry_poses(data)
                c = sim.scene.detector.detect(Rg, pg)
                Jw = np.array(data.J.reshape(6, sim.model.nv), order="C")
                problem, _ = sim.contact_problem()
                solver = SAPSolver(compiled=compiled)
                result = solver.solve(problem)
                sim.last_problem = problem
                v_star, A = sim.free_motion(q, v, tau)
                rows = sim._contact_rows if compiled else sim._contact_rows_numpy
                row = {"free motion": cpu_us(lambda: sim.free_motion(q, v, tau)),
                       "poses": cpu_us(lambda: sim._geometry_poses(data)),
                       "contact rows": cpu_us(lambda: rows(c, Rg, pg, Jw)),
                       "SAP solve": cpu_us(lambda: solver.solve(problem)),
                       "penetration check": cpu_us(lambda: sim._overlap_ratios(c, result))}
                if sim._limit_dof.size:
                    row["joint limits"] = cpu_us(lambda: sim._limits(q, v, v_star, A))
                out[compiled] = row
        sim.compiled = True
        print(f"  {scene}: " + ", ".join(f"{k} {out[False][k]:.1f} -> {out[True][k]:.1f}" for k in out[True]))


def main() -> None:
    warnings.simplefilter("ignore")
    components()
    pieces()


if __name__ == "__main__":
    main()
