"""The optional CuPy backend of the deformable solver (global step and constraint solve on the
GPU) against the CPU path, the SciPy fallback for S without numba, and the GPU benchmark's
pinocchio-free import. The CuPy comparisons skip on machines without CuPy and a CUDA device."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from plants.sim import load_scene
from plants.sim.deformable import ARAP, DeformableBody, DeformableWorld, FBAOptions, LocalGlobalSystem, bar_tet_mesh
from plants.sim.deformable.backend import cupy_available
from plants.sim.deformable.sparse_inverse import cholesky_min_degree, linv_scipy

ROOT = Path(__file__).resolve().parents[1]
needs_gpu = pytest.mark.skipif(not cupy_available(), reason="CuPy with a CUDA device is not available")


@needs_gpu
@pytest.mark.parametrize("name,params", [("squeeze-ball", {"cells": 4}), ("deformable-slope", {"cells": 2, "mu": 0.1}),
                                         ("pulled-through-gap", {"cells": 4})])
def test_cupy_backend_matches_the_cpu_path(name, params):
    """10 steps with backend="cupy" follow the NumPy run to 1e-9 m (contacts and attachments)."""
    runs = {}
    for backend in ("numpy", "cupy"):
        sim = load_scene(name, solver_options={"backend": backend}, **params)
        runs[backend] = np.concatenate(list(sim.run(0.1).deformable_positions.values()), axis=1)
    assert np.abs(runs["cupy"] - runs["numpy"]).max() < 1e-9


def test_backend_option_is_validated():
    with pytest.raises(ValueError, match="backend must be one of"):
        FBAOptions(backend="gpu")
    if not cupy_available():
        try:
            import cupy  # noqa: F401
        except ImportError:
            with pytest.raises(ImportError, match="needs CuPy"):
                load_scene("deformable-slope", solver_options={"backend": "cupy"})


def test_sparse_inverse_without_numba_has_the_same_pattern_and_values():
    """The SciPy triangular-solve path for L⁻¹ (used where numba is missing) equals the compiled
    etree kernel's S entry for entry."""
    mesh = bar_tet_mesh(1.0, 0.2, 8, 2)
    sysm = LocalGlobalSystem(DeformableWorld((DeformableBody("b", mesh, ARAP(1e6, 0.3)),)), 0.01, FBAOptions())
    L, p = cholesky_min_degree(sysm.A)
    S = linv_scipy(L, block=37)[:, np.argsort(p)].tocsr()
    ref = sysm.inverse.S
    assert S.nnz == ref.nnz
    assert abs(S - ref).max() <= 1e-12 * abs(ref).max()


def test_gpu_benchmark_runs_where_pinocchio_coal_meshio_and_numba_are_missing(tmp_path):
    """benchmarks/bench_deformable_gpu.py on a 'numpy/scipy/cupy only' machine: with pinocchio,
    coal, meshio and numba made unimportable, the quick CPU run imports the deformable sub-package
    without plants/__init__, builds S without numba (nnz > n) and steps a contact scene."""
    out = tmp_path / "gpu.json"
    code = ("import sys, runpy\n"
            "for m in ('pinocchio', 'coal', 'hppfcl', 'meshio', 'numba'): sys.modules[m] = None\n"
            f"sys.argv = ['bench', '--quick', '--cpu-only', '--out', {str(out)!r}]\n"
            f"runpy.run_path({str(ROOT / 'benchmarks' / 'bench_deformable_gpu.py')!r}, run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads(out.read_text())
    assert res["pinocchio_imported"] is False and res["plants_init_ran"] is False and res["machine"]["numba"] is False
    assert [r["vertices"] for r in res["rows"]] == [99, 525]
    assert all(r["nnz_S"] > r["vertices"] and r["global_cpu_ms"] > 0 for r in res["rows"])
    assert res["steps"][0]["contacts_numpy"] > 0
