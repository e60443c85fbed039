"""Robots we did not write, through the own-robot path with default options (issue 19: "robots we
did not write and you did not tune for will be tried the same way").

Each example-robot-data robot below (none of them used by another test) is loaded as a user
would: a fixed-base arm through a task file (the robot's URDF by ``package://`` plus a ground
plane, one contact pair), a legged robot through a task file with ``floating_base: true``
(a free-flyer ``root_joint`` in the plant, the scene's free root of that name; feet-ground pairs).
Checked: the LCS's A and B against central finite differences of forward dynamics at a random
state (tangent-space directions for the free-flyer, 1e-5 relative), an arm's distal-link pose by inverse kinematics (1e-6), a
short SAP run (finite, joint limits held), the viewer's HTML recording; the slow test runs 1 s
with every solver. docs/own-robot.md §4, "Robots we did not write".
"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

from plants import load_task_file
from plants.multibody import ModelImportWarning, MultibodyPlant, example_robot_data_path, frame_pose, solve_ik
from plants.sim import NonConvergenceWarning, Simulator
from plants.sim.geometry import ContactParams
from plants.sim.scene import SceneBuilder
from plants.viz import Viewer

DT = 1e-3
# name: (file in example-robot-data, a distal link for the task file's contact pair; None: legged,
# floating base, dropped from `height`)
ARMS = {
    "double_pendulum": ("robots/double_pendulum_description/urdf/double_pendulum.urdf", "link2"),
    "finger_edu": ("robots/finger_edu_description/robots/finger_edu.urdf", "finger_lower_link"),
    "z1": ("robots/z1_description/urdf/z1.urdf", "link06"),
    "so101": ("robots/so_arm_description/urdf/so101.urdf", "gripper_link"),
    "xarm7": ("robots/xarm_description/urdf/xarm7.urdf", "link7"),
    "kinova": ("robots/kinova_description/robots/kinova.urdf", "j2s6s200_link_6"),
}
LEGGED = {
    "solo12": ("robots/solo_description/robots/solo12.urdf", 0.6, "_FOOT"),
    "go2": ("robots/go2_description/urdf/go2.urdf", 0.5, "_foot"),
}
HEAVY = {"so101", "xarm7", "kinova"}  # large STL meshes: 5 s per load of so101 (pinocchio/coal read them)
ROBOTS = [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in [*ARMS, *LEGGED]]
SOLVERS = ("sap", "canal", "subadmm", "nsn", "pgs")

GROUND = """<mujoco model="ground"><worldbody>
  <geom name="ground" type="plane" size="2 2 0.01"/></worldbody></mujoco>"""
TASK = """models:
  - {{file: "package://example-robot-data/{file}", base_position: [0, 0, 0.3]}}
  - {{file: ground.xml}}
contacts:
  - {{a: {link}, b: ground, mu: 0.5}}
"""
LEGGED_TASK = """models:
  - {{file: "package://example-robot-data/{file}", floating_base: true, base_position: [0, 0, {height}]}}
  - {{file: ground.xml}}
contacts:
  - {{a: [{feet}], b: ground, mu: 0.5}}
"""


@pytest.fixture(autouse=True)
def _quiet_import_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelImportWarning)  # meshes -> convex hulls (said once)
        warnings.simplefilter("ignore", NonConvergenceWarning)  # counted in traj.stats instead
        warnings.simplefilter("ignore", RuntimeWarning)  # subadmm's once-per-process notes
        yield


def load(name: str, tmp_path):
    """(planning plant, scene) of a robot, as a user loads it (module docstring)."""
    if name in ARMS:
        file, link = ARMS[name]
        (tmp_path / "ground.xml").write_text(GROUND)
        (tmp_path / "task.yaml").write_text(TASK.format(file=file, link=link))
        task = load_task_file(tmp_path / "task.yaml")
        return task.plant, task.scene()
    file, height, foot = LEGGED[name]
    legs = ("FL", "FR", "HL", "HR") if name == "solo12" else ("FL", "FR", "RL", "RR")
    feet = ", ".join(leg + foot for leg in legs)
    (tmp_path / "ground.xml").write_text(GROUND)
    (tmp_path / "task.yaml").write_text(LEGGED_TASK.format(file=file, height=height, feet=feet))
    task = load_task_file(tmp_path / "task.yaml")
    return task.plant, task.scene()


def random_configuration(model, rng) -> np.ndarray:
    """A seeded random configuration: q0 ⊕ (uniform tangent in [−1, 1]), then every one-dof joint
    with finite limits uniform inside them (clipped to ±3)."""
    q = pin.integrate(model, pin.neutral(model), rng.uniform(-1.0, 1.0, model.nv))
    for j in range(1, model.njoints):
        jm = model.joints[j]
        lo, hi = model.lowerPositionLimit[jm.idx_q], model.upperPositionLimit[jm.idx_q]
        if jm.nq == 1 and abs(lo) < 1e30 and abs(hi) < 1e30:
            q[jm.idx_q] = rng.uniform(max(lo, -3.0), min(hi, 3.0))
    return q


def lcs_finite_difference_errors(plant, seed: int = 19, h: float = 1e-6, dt: float = 0.01):
    """Largest relative errors of the LCS's A and B against central differences of the smooth
    step (v⁺ = v + δt a(x, u), q⁺ = q ⊕ δt v⁺, a from forward dynamics) at a random state inside
    the joint limits. q-directions are tangent (q ⊕ ±h e_i), compared with A_q N(q)."""
    model = plant.model
    rng = np.random.default_rng(seed)
    q = random_configuration(model, rng)
    v = rng.normal(size=plant.n_v)
    u = rng.normal(size=plant.n_u)
    L = plant.lcs(np.concatenate([q, v]), u, dt=dt)

    def step(q_, v_, u_):
        a = plant.forward_dynamics(np.concatenate([q_, v_]), u_)[plant.n_q:]
        v_next = v_ + dt * a
        return np.concatenate([pin.integrate(model, q_, dt * v_next), v_next])

    E = np.eye(plant.n_v)
    fd_q = [(step(pin.integrate(model, q, h * e), v, u) - step(pin.integrate(model, q, -h * e), v, u)) / (2 * h)
            for e in E]
    fd_v = [(step(q, v + h * e, u) - step(q, v - h * e, u)) / (2 * h) for e in E]
    A_fd = np.column_stack(fd_q + fd_v)
    B_fd = np.column_stack([(step(q, v, u + h * e) - step(q, v, u - h * e)) / (2 * h) for e in np.eye(plant.n_u)])
    A = np.hstack([L.A[:, :plant.n_q] @ pin.tangentMap(model, q), L.A[:, plant.n_q:]])
    return (np.abs(A - A_fd).max() / np.abs(A_fd).max(), np.abs(L.B - B_fd).max() / np.abs(B_fd).max())


def check_ik(model, frame: str, seed: int = 19) -> None:
    """solve_ik reaches the frame's pose at a random configuration inside the limits, to 1e-6
    by forward kinematics, inside the limits."""
    q_target = random_configuration(model, np.random.default_rng(seed))
    p, R = frame_pose(model, q_target, frame)
    oriented = model.nv >= 6
    result = solve_ik(model, frame, p, R if oriented else None)
    assert result.converged
    p_ik, R_ik = frame_pose(model, result.q, frame)
    assert np.abs(p_ik - p).max() <= 1e-6 and (not oriented or np.abs(R_ik - R).max() <= 1e-6)
    assert (result.q >= model.lowerPositionLimit - 1e-12).all() and (result.q <= model.upperPositionLimit + 1e-12).all()


def limit_violation(scene, traj) -> tuple[float, float]:
    """(largest violation of the scene's joint limits [rad or m], the near-rigid bound on it).

    A limit is SAP's near-rigid constraint (docs/own-robot.md §2): a spring of period δt, so a
    dof that hits its limit at speed |v| overshoots by at most about |v| δt / 2π. The bound is
    that, at the fastest speed any limited dof reached, or 1e-3 rad, whichever is larger."""
    if not scene.limits:
        return 0.0, 1e-3
    qi = traj.q[:, scene.limit_q_index]
    viol = float(np.maximum(scene.limit_lower - qi, qi - scene.limit_upper).max())
    dofs = [scene.model.joints[scene.model.getJointId(lim.name)].idx_v for lim in scene.limits]
    return viol, max(1e-3, float(np.abs(traj.v[:, dofs]).max()) * DT / (2 * np.pi))


@pytest.mark.parametrize("name", ROBOTS)
def test_robot_loads_linearizes_simulates_and_renders(name, tmp_path):
    plant, scene = load(name, tmp_path)
    # the planning model: every joint of the file, one input per non-floating dof
    assert plant.n_u == plant.n_v - (6 if name in LEGGED else 0)
    assert list(plant.model.names) == list(scene.model.names)
    err_A, err_B = lcs_finite_difference_errors(plant)
    assert err_A <= 1e-5 and err_B <= 1e-5
    if name in ARMS:  # the distal link's pose (position only below 6 dofs) by inverse kinematics
        check_ik(plant.model, ARMS[name][1])
    # the scene with the simulator's defaults: a short run under gravity
    traj = Simulator(scene, dt=DT).run(0.15)
    assert np.isfinite(traj.q).all() and (traj.stats["status"] == 0).all()
    viol, bound = limit_violation(scene, traj)
    assert viol <= bound
    if name in LEGGED:  # falling freely towards the ground: v_z = −g t before any contact
        assert traj.v[-1, 2] == pytest.approx(-9.81 * 0.15, rel=0.02)
    with Viewer.from_scene(scene) as viewer:
        frames = viewer.record_trajectory(traj, fps=20)
        html = viewer.save_html(tmp_path / f"{name}.html").read_text()
    assert [s.name for s in viewer.shapes] == [g.name for g in scene.geometries]
    assert frames == 4 and "animation" in html.lower() and len(html) > 200_000


def test_default_start_is_inside_the_joint_limits_for_planning_and_simulation():
    """Kinova's neutral configuration (q = 0) lies 0.82 rad below joint 2's lower limit: the
    planning plant's start (the task file's default) is clipped into the limits as the scene's is.
    Before, a task file started the scene 0.82 rad outside the limit and SAP's limit impulse threw
    the arm at 2400 rad/s at step 0 (SimulationDivergedError)."""
    path = example_robot_data_path(ARMS["kinova"][0])
    plant = MultibodyPlant.from_urdf(path, [])
    model = plant.model
    q_neutral = pin.neutral(model)
    assert (q_neutral < model.lowerPositionLimit - 0.5).any()  # the file's neutral: outside
    assert (plant.q0 >= model.lowerPositionLimit).all() and (plant.q0 <= model.upperPositionLimit).all()
    b = SceneBuilder()
    b.add_urdf(path, ContactParams(1e5, 1e-3, 0.5))
    np.testing.assert_array_equal(b.build().q0, plant.q0)


@pytest.mark.slow
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", [*ARMS, *LEGGED])
def test_robot_runs_1s_with_every_solver(name, solver, tmp_path):
    """1 s under gravity with each solver at its defaults: no exception, finite, the limits held
    (a step that misses its tolerance advances on its best iterate and is counted)."""
    _, scene = load(name, tmp_path)
    traj = Simulator(scene, solver=solver, dt=DT).run(1.0)
    assert np.isfinite(traj.q).all()
    viol, bound = limit_violation(scene, traj)
    assert viol <= bound
