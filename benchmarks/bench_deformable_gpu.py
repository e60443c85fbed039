"""CPU (NumPy/SciPy) vs GPU (CuPy) for seed 004's two GPU phases, at several mesh sizes.

* **Global step** q = Sᵀ(S b): two sparse mat-vecs with the explicit sparse inverse, b (n, 3);
  on the GPU with b resident on the device, and with the host→device→host copies included.
* **Constraint solve**: 10 conjugate-residual iterations on ΩWΩ + E with the Delassus block
  W = (A⁻¹)_UU of a contact set (the nodes of the bar's bottom face, 3 rows each).
* **Whole step** of the ``squeeze-ball`` world with ``backend="numpy"`` and ``backend="cupy"``.

Each GPU result is checked against the CPU one (max relative difference in the JSON).

Runs on a machine with only numpy, scipy and (optionally) cupy: it imports the deformable
sub-package without ``plants/__init__.py`` (which loads Pinocchio and coal for the rigid
simulator) and works without numba (S is then built with SciPy's triangular solves). Usage:

    python benchmarks/bench_deformable_gpu.py --out deformable_gpu.json          # CPU + GPU
    python benchmarks/bench_deformable_gpu.py --quick --cpu-only --out cpu.json  # smoke run
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def import_deformable():
    """``plants.sim.deformable`` without running ``plants/__init__.py`` or ``plants/sim/__init__.py``.

    Those two files import the rigid simulator (Pinocchio, coal), and ``lcs/__init__.py`` imports
    the LCS factory (Pinocchio). Registering empty package modules for ``plants``, ``plants.sim``
    and ``lcs`` whose ``__path__`` is the source folder lets Python find their sub-modules
    (``plants.sim.deformable``, ``plants.errors``, ``lcs._numba``, ...) without executing those
    ``__init__`` files; the deformable code itself needs only numpy, scipy (numba optional)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    for name, rel in (("plants", "plants"), ("plants.sim", "plants/sim"), ("lcs", "lcs")):
        if name not in sys.modules:
            mod = types.ModuleType(name)
            mod.__path__ = [str(ROOT / rel)]
            sys.modules[name] = mod
    import plants.sim.deformable as deformable

    return deformable


def _median_time(fn, sync, repeats: int) -> float:
    fn()
    sync()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def _reldiff(a, b) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def bench_mesh(d, cells, use_gpu: bool, repeats: int) -> dict:
    from plants.sim.deformable.backend import make_backend
    from plants.sim.deformable.cr import conjugate_residual
    from plants.sim.deformable.simulator import Delassus

    along, across = cells
    mesh = d.bar_tet_mesh(1.0, 0.2, along, across)
    world = d.DeformableWorld((d.DeformableBody("bar", mesh, d.ARAP(1e7, 0.3)),))
    t0 = time.perf_counter()
    sysm = d.LocalGlobalSystem(world, 0.01, d.FBAOptions())
    pre = time.perf_counter() - t0
    S = sysm.inverse.S
    n = S.shape[0]
    rng = np.random.default_rng(0)
    b = rng.standard_normal((n, 3))
    row = {"mesh": f"bar {along}x{across}x{across}", "vertices": int(mesh.n_nodes), "tets": int(mesh.n_elements),
           "nnz_S": int(S.nnz), "precompute_s": pre}
    cpu = make_backend("numpy")
    q_cpu = sysm.inverse.solve(b)
    row["global_cpu_ms"] = 1e3 * _median_time(lambda: sysm.inverse.solve(b), cpu.synchronize, repeats)
    # contact set: the bottom face's nodes, three rows each (normal + two tangents of a tilted frame)
    nodes = np.flatnonzero(np.isclose(mesh.X[:, 2], mesh.X[:, 2].min()))
    t0 = time.perf_counter()
    block = sysm.inverse_block(nodes)
    row["schur_cpu_ms"] = 1e3 * (time.perf_counter() - t0)
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    C = np.tile(Q.T, (nodes.size, 1))
    pos = np.repeat(np.arange(nodes.size), 3)
    m = 3 * nodes.size
    omega = rng.uniform(0.3, 1.0, m)
    E = rng.uniform(0.0, 1e-2, m) * np.abs(block).max()
    rhs = rng.standard_normal(m)
    row["contact_rows"] = m

    def constraint_solve(be, W):
        om, Ed = be.to_device(omega), be.to_device(E)
        diag = be.to_device(omega**2 * W.diagonal() + E)
        return conjugate_residual(lambda x: om * W.matvec(om * x) + Ed * x, be.to_device(rhs), 10, diagonal=diag)

    W_cpu = Delassus(block, pos, C, cpu)
    x_cpu = constraint_solve(cpu, W_cpu)
    row["constraint_cpu_ms"] = 1e3 * _median_time(lambda: constraint_solve(cpu, W_cpu), cpu.synchronize, repeats)
    if use_gpu:
        gpu = make_backend("cupy")
        S_d, ST_d = gpu.sparse(S), gpu.sparse(S.T.tocsr())
        b_d = gpu.to_device(b)
        q_gpu = gpu.to_host(ST_d @ (S_d @ b_d))
        row["global_gpu_diff"] = _reldiff(q_gpu, q_cpu)
        row["global_gpu_ms"] = 1e3 * _median_time(lambda: ST_d @ (S_d @ b_d), gpu.synchronize, repeats)
        row["global_gpu_with_copies_ms"] = 1e3 * _median_time(
            lambda: gpu.to_host(ST_d @ (S_d @ gpu.to_device(b))), gpu.synchronize, repeats)
        W_gpu = Delassus(block, pos, C, gpu)
        row["constraint_gpu_diff"] = _reldiff(gpu.to_host(constraint_solve(gpu, W_gpu)), x_cpu)
        row["constraint_gpu_ms"] = 1e3 * _median_time(lambda: constraint_solve(gpu, W_gpu), gpu.synchronize, repeats)
    return row


def bench_step(d, cells: int, use_gpu: bool, steps: int) -> dict:
    """ms per step (median) of the squeezing-ball world with each backend, and the position gap."""
    # the squeeze-ball scene's world (plants.sim.deformable.scenes needs plants.sim's scene registry)
    r, gap, speed = 0.1, 0.1, 0.5
    mesh = d.sphere_tet_mesh(r, cells, center=(-2 * r * 0.999 + 0.02, 0.0, 0.0))
    ball = d.DeformableBody("ball", mesh, d.StableNeoHookean(1e4, 0.4), velocity=(speed, 0.0, 0.0))
    rollers = tuple(d.CylinderObstacle(name=f"roller{i}", mu=0.5, center=(0.0, 0.0, s * (gap / 2 + r)), axis=(0, 1, 0),
                                       radius=r, half_length=2 * r, spin=-s * speed / r)
                    for i, s in enumerate((1.0, -1.0)))
    world, dt = d.DeformableWorld((ball,), rollers, gravity=(0.0, 0.0, 0.0)), 0.01
    out = {"scene": f"squeeze-ball cells={cells}", "vertices": int(world.bodies[0].n_nodes)}
    X = {}
    for be in ("numpy", "cupy") if use_gpu else ("numpy",):
        sim = d.DeformableSimulator(world, dt=dt, solver_options={"backend": be})
        ts = []
        for _ in range(steps):
            ts.append(sim.step().step_time)
        out[f"step_{be}_ms"] = 1e3 * float(np.median(ts[steps // 2:]))
        out[f"contacts_{be}"] = int(sim.last_stats.n_contacts)
        X[be] = sim.x
    if use_gpu:
        out["step_gpu_position_diff_m"] = float(np.abs(X["cupy"] - X["numpy"]).max())
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--quick", action="store_true", help="two small meshes, a short step run (smoke test)")
    parser.add_argument("--cpu-only", action="store_true", help="skip the GPU even if CuPy is available")
    parser.add_argument("--repeats", type=int, default=20, help="timed repetitions per measurement (median)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines (for logs and CI)")
    args = parser.parse_args(argv)
    d = import_deformable()
    # after import_deformable: _report's plants.progress then loads without plants/__init__.py
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import _report
    from plants.sim.deformable.backend import cupy_available
    from plants.sim.deformable.sparse_inverse import HAVE_NUMBA

    use_gpu = (not args.cpu_only) and cupy_available()
    info = {"python": platform.python_version(), "platform": platform.platform(), "processor": platform.processor(),
            "numpy": np.__version__, "numba": HAVE_NUMBA, "gpu": None}
    import scipy

    info["scipy"] = scipy.__version__
    if use_gpu:
        import cupy

        info["cupy"] = cupy.__version__
        info["gpu"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    elif not args.cpu_only:
        print("CuPy or a CUDA device is not available: CPU numbers only", file=sys.stderr)
    meshes = [(10, 2), (20, 4)] if args.quick else [(20, 4), (30, 6), (40, 8), (50, 10), (60, 12)]
    rows = []
    for cells in _report.track(meshes, "meshes", args.quiet, unit="meshes"):
        rows.append(bench_mesh(d, cells, use_gpu, 3 if args.quick else args.repeats))
        r = rows[-1]
        print(f"{r['mesh']}: V={r['vertices']} nnz(S)={r['nnz_S']} global CPU {r['global_cpu_ms']:.2f} ms"
              + (f", GPU {r['global_gpu_ms']:.3f} ms ({r['global_gpu_with_copies_ms']:.2f} with copies)" if use_gpu else "")
              + f"; constraint CPU {r['constraint_cpu_ms']:.2f} ms"
              + (f", GPU {r['constraint_gpu_ms']:.2f} ms" if use_gpu else ""), flush=True)
    steps = [bench_step(d, c, use_gpu, 10 if args.quick else 40) for c in ((4,) if args.quick else (6, 10))]
    res = {"machine": info, "rows": rows, "steps": steps, "quick": args.quick,
           "pinocchio_imported": sys.modules.get("pinocchio") is not None, "plants_init_ran": hasattr(sys.modules["plants"], "__file__")
           and sys.modules["plants"].__file__ is not None}
    Path(args.out).write_text(json.dumps(res, indent=1))
    print(f"wrote {args.out}")
    return res


if __name__ == "__main__":
    main()
