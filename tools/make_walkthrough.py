"""Write examples/walkthrough.ipynb (unexecuted) from the cells below.

The notebook is generated so that its source stays reviewable as plain Python; CI executes it
(tests/test_walkthrough.py). Re-run after editing: ``python tools/make_walkthrough.py``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

CELLS: list[tuple[str, str]] = [
    ("md", """# c3mpc in one notebook

From a linear complementarity system (LCS) to C3 in closed loop, the contact simulator, a
meshcat replay and a hyperparameter sweep. Each section is a few lines; the docs linked in
each one have the math. Run it from the repository root (`.venv/bin/jupyter lab`, or any
Jupyter with the c3mpc venv as kernel)."""),
    ("md", """## 1. An LCS and its complementarity step (`docs/lcs.md`, `docs/lcp.md`)

$x_{k+1} = A x_k + B u_k + D \\lambda_k + d$, with $0 \\le \\lambda_k \\perp E x_k + F \\lambda_k
+ H u_k + c \\ge 0$. The paper's cart-pole between two soft walls: pushed into the right wall,
the wall pushes back."""),
    ("code", """import numpy as np
import matplotlib.pyplot as plt
from lcs import solve_lcp
from plants import load_plant

cartpole = load_plant("cartpole-softwalls")
lcs = cartpole.lcs()
x_next, lam = lcs.step(np.array([0.4, 0.0, 0.0, 0.0]), np.zeros(1))
print(lcs)
print("wall forces", lam)
sol = solve_lcp(np.eye(2), [-1.0, 2.0])          # Lemke's method
print(sol.status.name, sol.z)"""),
    ("md", """## 2. C3 on the cart-pole, in closed loop (`docs/c3.md`)

`C3.solve(x)` runs ADMM over the horizon (QP step, per-knot projection, dual update) and returns
a plan with a status; `run_closed_loop` applies its first input and re-plans every step."""),
    ("code", """from c3mpc import C3, C3Options, run_closed_loop

d = cartpole.defaults                            # the paper's Q, R, G, U, N and bounds
ctrl = C3(lcs, d.Q, d.R, d.G, d.U, N=d.N, x_des=d.x_goal, QN=d.QN,
          options=C3Options(projection="lcp", admm_iter=d.admm_iter))
x0 = d.x0
plan = ctrl.solve(x0)
print(plan.status.name, "first input", plan.u[0], f"solved in {plan.solve_time * 1e3:.1f} ms")

log = run_closed_loop(cartpole, ctrl, x0, 300)   # 3 s at dt = 0.01 s
fig, ax = plt.subplots(2, 1, figsize=(7, 4), sharex=True)
ax[0].plot(log.t, log.x[:, :2], label=cartpole.state_names[:2]); ax[0].legend()
ax[1].step(log.t[:-1], log.u[:, 0], where="post"); ax[1].set_ylabel("u [N]")
ax[1].set_xlabel("t [s]")
print(f"{log.control_rate:.0f} Hz, final state {np.round(log.x[-1], 3)}")"""),
    ("md", """## 3. The contact simulator (`docs/sap.md`, `docs/contact-solvers.md`)

Pinocchio + coal scenes stepped by SAP (seed 001) or another solver on the same contact
problem. A cube slides on the ground and stops under Coulomb friction."""),
    ("code", """from plants import load_scene

sim = load_scene("cube-slide", solver="sap", dt=1e-3)
traj = sim.run(1.0)
plt.figure(figsize=(7, 2.5))
plt.plot(traj.t, traj.v[:, 0]); plt.ylabel("cube v_x [m/s]"); plt.xlabel("t [s]")
print(f"{traj.n_steps} steps, {np.median(traj.stats['step_time']) * 1e6:.0f} µs per step, "
      f"final v_x = {traj.v[-1, 0]:.4f} m/s")"""),
    ("md", """## 4. The Franka ball task and a meshcat replay (`docs/franka-ball.md`)

C3 (Algorithm 3) plans on the simplified model; the full Panda in the contact simulator tracks
the plan through the impedance law. The viewer records the run into a standalone HTML file."""),
    ("code", """from c3mpc.tasks.franka_ball import FrankaBallOptions, run_franka_ball, summarize
from c3mpc.tasks.franka_ball_viz import FrankaBallViewer

fb_log = run_franka_ball(FrankaBallOptions(duration=0.5))
summary = summarize(fb_log)
print(f"band fraction {summary['band_fraction']:.2f}, controller {summary['controller_rate_hz']:.0f} Hz")
viewer = FrankaBallViewer(1)
try:
    viewer.record(fb_log)
    html = viewer.save_html("walkthrough-meshcat.html")
finally:
    viewer.close()
print("replay:", html)   # open it in a browser; in Jupyter: IPython.display.IFrame(html, 800, 500)"""),
    ("md", """## 5. A hyperparameter sweep (`docs/sweeps.md`)

A study file names the task, the search space, the sampler and the objectives; `run_sweep`
runs it on a local process pool (or a Dask cluster) and resumes it when run again."""),
    ("code", """from c3mpc.sweep import load_study, run_sweep
import pathlib, tempfile

study_file = pathlib.Path(tempfile.mkdtemp()) / "study.yaml"
study_file.write_text('''name: walkthrough
task: cartpole-softwalls
options: {projection: lcp}
search_space: {admm_iter: [2, 10]}
sampler: grid
objectives: accumulated_cost
seeds: 2
duration: 1.0
''')
result = run_sweep(load_study(study_file), study_file.parent / "run", workers=2, progress=False,
                   report=False)
print(result.complete, "trials; best:", result.best)"""),
]


def build() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "md"
                else nbformat.v4.new_code_cell(src) for kind, src in CELLS]
    return nb


if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "examples" / "walkthrough.ipynb"
    nbformat.write(build(), out)
    print(f"wrote {out}")
