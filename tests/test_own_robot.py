"""Issue 19, bring your own robot: one plant protocol, one task file for the LCS and the
simulator, C3 in the simulator at a fixed rate, and the pusher-box example reaching its goal."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from c3mpc import C3, C3Options, StateMap, run_closed_loop, run_in_simulator
from plants import Plant, TaskFileError, check_plant, load_plant, load_task_file
from plants.multibody import ContactPair, MultibodyPlant, UnknownJointError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "own_robot"
TASK = EXAMPLE / "pusher_box.yaml"
DATA = Path(__file__).parent / "data"
PLANE = (0.0, 1.0, 0.0)
PAIRS = [ContactPair("pusher_tip", "box_body", 0.4, 1, planar_normal=PLANE)] + [
    ContactPair(f"foot_{s}", "ground", 0.5, 1, planar_normal=PLANE)
    for s in ("front_left", "front_right", "back_left", "back_right")]


# ---------------------------------------------------------------------------- 1. one protocol
@pytest.mark.parametrize("name", ["cartpole-softwalls", "finger-gaiting", "pivoting",
                                  "cube-pivoting", "cartpole-urdf", "franka-ball"])
def test_registered_plants_satisfy_the_protocol(name):
    plant = load_plant(name)
    assert isinstance(plant, Plant)
    check_plant(plant)
    x0 = plant.defaults.x0
    assert plant.lcs(x0, np.zeros(plant.n_u)).n_lambda == plant.n_lambda


@pytest.mark.parametrize("kind", ["urdf", "mjcf"])
def test_multibody_plant_from_a_file_satisfies_the_protocol(kind):
    path = DATA / f"pusher_box.{'urdf' if kind == 'urdf' else 'xml'}"
    plant = (MultibodyPlant.from_urdf(path, PAIRS, actuated_joints=["pusher_x", "pusher_z"])
             if kind == "urdf" else MultibodyPlant.from_mjcf(path, PAIRS))
    assert isinstance(plant, Plant)
    check_plant(plant)
    # 5 contacts, one friction direction each: Stewart-Trinkle 2·5 + 2·5, Anitescu 2·5
    assert plant.n_lambda == plant.num_lambda() == 20
    assert plant.num_lambda("anitescu") == 10
    x = plant.state({"box_x": 0.1})
    L = plant.lcs(x)
    assert (L.n_x, L.n_u, L.n_lambda, L.dt) == (plant.n_x, plant.n_u, plant.n_lambda, plant.dt)
    # the defaults of lcs()/step() are the plant's dt and contact model
    L2 = plant.lcs(x, np.zeros(plant.n_u), contact_model="stewart_trinkle", dt=0.01)
    np.testing.assert_array_equal(L.A, L2.A)
    x_next, lam = plant.step(x, np.zeros(plant.n_u))
    assert x_next.shape == (plant.n_x,) and lam.shape == (plant.n_lambda,)
    assert set(plant.input_names) == {"pusher_x", "pusher_z"}
    assert plant.state_names[plant.state_names.index("box_x")] == "box_x"
    assert x[plant.state_names.index("box_x")] == 0.1


def test_check_plant_names_what_is_wrong():
    class Old:  # MultibodyPlant before issue 19: n_lambda a method, no dt/defaults
        n_x, n_u, state_dependent = 2, 1, True
        state_names, input_names, defaults = ("a", "b"), ("u",), None

        def n_lambda(self):
            return 0

        def lcs(self, x, u=None):
            return None

        def step(self, x, u):
            return x, np.zeros(0)

    with pytest.raises(TypeError, match="missing dt"):
        check_plant(Old())
    Old.dt = 0.01
    with pytest.raises(TypeError, match="n_lambda must be an int"):
        check_plant(Old())


def test_multibody_plant_goes_straight_into_run_closed_loop():
    """The issue's TypeError: run_closed_loop(MultibodyPlant.from_urdf(...)) with no adapter."""
    plant = MultibodyPlant.from_urdf(DATA / "pusher_box.urdf", PAIRS,
                                     actuated_joints=["pusher_x", "pusher_z"], dt=0.05)
    x0 = plant.state()
    n_z = plant.n_x + plant.n_lambda + plant.n_u
    Q = np.diag([1.0] * plant.n_x)
    ctrl = C3(plant.lcs(x0), Q, 0.01 * np.eye(plant.n_u), 0.1 * np.eye(n_z), np.eye(n_z), N=5,
              x_des=x0, options=C3Options(projection="lcp", admm_iter=2))
    log = run_closed_loop(plant, ctrl, x0, 3, Q=Q)
    assert log.x.shape == (4, plant.n_x) and log.lam.shape == (3, plant.n_lambda)
    np.testing.assert_allclose(log.t, [0, 0.05, 0.1, 0.15])
    # the logged states are the plant's own LCS steps under the logged inputs
    for k in range(3):
        np.testing.assert_allclose(plant.step(log.x[k], log.u[k])[0], log.x[k + 1], atol=1e-9)


# ---------------------------------------------------------------------------- 2. task file
def test_task_file_gives_the_planning_plant_and_the_scene():
    task = load_task_file(TASK)
    plant = task.plant
    check_plant(plant)
    assert plant is not None and plant.defaults is task.defaults
    assert plant.dt == 0.1 and plant.n_u == 1 and plant.n_contacts == 5
    # planar: one friction direction per pair, μ per pair from the file
    assert [p.num_friction_directions for p in plant.contact_pairs] == [1] * 5
    assert [p.mu for p in plant.contact_pairs] == [0.4] + [0.5] * 4
    # goal by joint name; the other joints keep the start
    names = plant.state_names
    assert task.x_goal[names.index("box_x")] == 0.2
    assert task.x_goal[names.index("pusher_x")] == 0.35
    assert task.x_goal[names.index("box_z")] == task.x0[names.index("box_z")]
    d = task.defaults
    assert d.Q[names.index("box_x"), names.index("box_x")] == 500
    assert d.Q[names.index("box_x_dot"), names.index("box_x_dot")] == 10
    assert d.Q[names.index("pusher_x"), names.index("pusher_x")] == 500
    # one ADMM metric by default: the projection's U is the consensus weight G = 0.1·I
    np.testing.assert_array_equal(d.G, 0.1 * np.eye(d.G.shape[0]))
    np.testing.assert_array_equal(d.U, d.G)
    np.testing.assert_array_equal(d.u_upper, [20.0])  # the MJCF's actuatorfrcrange
    assert (d.N, d.admm_iter, d.rho_scale) == (10, 20, 1.5)  # the task file's defaults
    # the simulation scene: the same file, the same joints, μ per geometry from the pairs
    scene = task.scene()
    assert list(scene.model.names) == list(plant.model.names)
    mu = {g.name: g.params.mu for g in scene.geometries}
    assert mu["pusher_tip"] == mu["box_body"] == 0.4
    assert mu["foot_back_left"] == mu["ground"] == 0.5
    # load_plant accepts the task file as well as a registered name
    p2 = load_plant(str(TASK))
    np.testing.assert_array_equal(p2.defaults.x_goal, task.x_goal)
    assert isinstance(load_plant(EXAMPLE / "pusher_box.urdf"), MultibodyPlant)


def _write(tmp_path, text):
    (tmp_path / "pusher_box.xml").write_text((EXAMPLE / "pusher_box.xml").read_text())
    p = tmp_path / "task.yaml"
    p.write_text(text)
    return p


BASE = """model: pusher_box.xml
contacts:
  - {a: pusher_tip, b: box_body, mu: 0.4}
"""


@pytest.mark.parametrize("extra,line,match", [
    ("planing: {dt: 0.1}\n", 4, "unknown key 'planing'"),
    ("planning:\n  dt: 0.1\n  horizon: 5\n", 6, "unknown key 'horizon'"),
    ("goal: {box_y: 0.2}\n", 4, "box_y"),
    ("cost:\n  Q: {box_q: 3}\n", 5, "'box_q' is not a joint"),
    ("simulation: {solver: bullet}\n", 4, "must be one of"),
    ("planning: {dt: -1}\n", 4, "must be > 0"),
])
def test_task_file_errors_name_the_line(tmp_path, extra, line, match):
    path = _write(tmp_path, BASE + extra)
    with pytest.raises(TaskFileError, match=match) as err:
        load_task_file(path)
    assert err.value.line == line
    assert f"line {line}" in str(err.value)


def test_task_file_unknown_contact_geometry_is_an_error(tmp_path):
    path = _write(tmp_path, "model: pusher_box.xml\ncontacts:\n"
                            "  - {a: pusher_tip, b: lid, mu: 0.4}\n")
    with pytest.raises(TaskFileError, match="lid"):
        load_task_file(path)


def test_state_by_joint_name_rejects_unknown_joints():
    plant = MultibodyPlant.from_mjcf(DATA / "pusher_box.xml", PAIRS)
    with pytest.raises(UnknownJointError):
        plant.state({"box_y": 1.0})
    with pytest.raises(ValueError, match="needs 1 value"):
        plant.state({"box_x": [1.0, 2.0]})


# ---------------------------------------------------------------------------- 5. C3 in the sim
class _ConstantPlan:
    """A controller whose plan is a fixed input per call (to check the hold and the delay)."""

    def __init__(self, inputs, n_lambda):
        self.inputs, self.k, self.n_lambda = inputs, 0, n_lambda

    def update_lcs(self, lcs):
        pass

    def solve(self, x):
        from c3mpc import C3Status

        u = self.inputs[min(self.k, len(self.inputs) - 1)]
        self.k += 1
        return type("R", (), {"u": np.array([u]), "status": C3Status.SOLVED,
                              "lam": np.zeros((1, self.n_lambda))})()


@pytest.mark.parametrize("delay", ["none", 0.0042])
def test_run_in_simulator_holds_each_command_for_one_period(delay):
    task = load_task_file(TASK)
    plant, sim = task.plant, task.simulator()
    inputs = [np.array([1.0]), np.array([-1.0]), np.array([0.5])]
    log = run_in_simulator(plant, _ConstantPlan(inputs, plant.n_lambda), sim, 0.03,
                           control_rate=100.0, delay=delay)
    assert log.extras["control_period_steps"] == 10 and log.extras["control_rate"] == 100.0
    assert log.u.shape == (3, 1) and log.x.shape == (4, plant.n_x)
    np.testing.assert_allclose(log.t, [0, 0.01, 0.02, 0.03])
    applied = log.extras["applied_u"]
    lag = 0 if delay == "none" else 5  # ceil(4.2 ms / 1 ms)
    for k in range(3):
        np.testing.assert_array_equal(applied[10 * k + lag:10 * (k + 1)],
                                      np.tile(inputs[k], (10 - lag, 1)))
        if lag and k:
            np.testing.assert_array_equal(applied[10 * k:10 * k + lag],
                                          np.tile(inputs[k - 1], (lag, 1)))
    # the log's states are the simulator's at the control instants, mapped by joint name
    smap = StateMap.by_joint_name(plant, sim.scene)
    for k in range(4):
        i = 10 * k
        np.testing.assert_array_equal(log.x[k], smap.state(log.extras["sim_q"][i],
                                                           log.extras["sim_v"][i]))


def test_run_in_simulator_rejects_bad_arguments():
    task = load_task_file(TASK)
    ctrl = _ConstantPlan([np.zeros(1)], task.plant.n_lambda)
    for kw, match in [({"control_rate": 0.0}, "control_rate"), ({"delay": "late"}, "delay"),
                      ({"delay": -1.0}, "delay")]:
        with pytest.raises(ValueError, match=match):
            run_in_simulator(task.plant, ctrl, task.simulator(), 0.01, **kw)


# ---------------------------------------------------------------------------- 8. the example
def _example():
    sys.path.insert(0, str(EXAMPLE))
    try:
        import pusher_box
    finally:
        sys.path.remove(str(EXAMPLE))
    return pusher_box


def _box_error(task, log):
    i = task.plant.state_names.index("box_x")
    return float(log.x[-1, i] - task.x_goal[i])


def test_pusher_box_example_reaches_its_goal_in_the_simulator():
    """The walkthrough's example with its task file's defaults: C3 at 10 Hz in SAP."""
    task, log = _example().main()
    assert abs(_box_error(task, log)) <= 0.01  # measured +0.6 cm
    names = task.plant.state_names
    assert np.abs(log.x[:, names.index("box_theta")]).max() <= 0.05  # pushed, not tipped
    assert log.extras["failed_steps"] == 0 and np.all(log.status == 0)
    # C3 ran at the task file's 10 Hz, each command held for 100 simulator steps (1 ms)
    assert log.extras["control_rate"] == task.control_rate == 10.0
    assert log.u.shape == (30, 1) and log.extras["sim_t"][-1] == pytest.approx(3.0)
    applied = log.extras["applied_u"].reshape(30, 100)
    np.testing.assert_array_equal(applied, np.repeat(log.u, 100, axis=1))


def test_pusher_box_example_converges_and_is_a_smooth_function_of_the_start():
    """The example's C3 plans satisfy complementarity (the ADMM converges), so the outcome moves
    smoothly with the start. With the earlier task file (U = 1000 on x, 1 on λ and u; G = 0.1·I)
    every plan diverged (violation median 18.6 N) and a 1e-12 m shift moved the result by cm."""
    task = load_task_file(TASK)
    plant = task.plant
    from c3mpc.tasks import build_controller

    i = plant.state_names.index("box_x")
    errors = []
    for shift in (0.0, 1e-9, 1e-3):
        x0 = task.state({"box_x": shift})
        ctrl = build_controller(plant, x0=x0)
        violations = []
        solve = ctrl.solve

        def logged(x, solve=solve, violations=violations):
            r = solve(x)
            violations.append(r.complementarity_violation)
            return r

        ctrl.solve = logged
        log = run_in_simulator(plant, ctrl, task.simulator(x0), task.duration,
                               control_rate=task.control_rate)
        assert np.median(violations) < 0.1 and max(violations) < 1.0  # [N]; measured 0.014
        errors.append(log.x[-1, i] - task.x_goal[i])
    # measured +0.56 / +0.56 / +0.62 cm: a 1e-9 m shift changes nothing visible, 1 mm < 2 mm
    assert abs(errors[1] - errors[0]) < 1e-4 and abs(errors[2] - errors[0]) < 2e-3
    assert max(abs(e) for e in errors) <= 0.01


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pusher_box_example_succeeds_from_seeded_starts(seed):
    """Box and pusher start up to 5 cm off; success: box within 2.5 cm of its goal, upright."""
    rng = np.random.default_rng(seed)
    box_x0, pusher_x0 = rng.uniform(-0.05, 0.05, 2)
    task, log = _example().main(box_x0, pusher_x0)
    assert abs(_box_error(task, log)) <= 0.025
    assert np.abs(log.x[:, task.plant.state_names.index("box_theta")]).max() <= 0.05


def test_vertical_pusher_pushes_the_box_and_holds_its_height():
    """The pusher-box with a second, vertical pusher joint (gravity compensation on), with the
    default ADMM metric U = G: the box reaches its goal (measured +0.82 cm) and the pusher
    stays at its height. With the earlier default U (1000 on x) C3's first plan drove
    ``pusher_z`` to its −20 N bound and the box ended 20 cm short (docs/own-robot.md)."""
    task, log = _example().main(task_file="pusher_box_vertical.yaml")
    assert task.plant.n_u == 2 and task.plant.input_names[1].endswith("z")
    assert abs(_box_error(task, log)) <= 0.02
    assert task.goal_reached(log.x[-1])
    z = log.x[:, task.plant.state_names.index("pusher_z")]
    assert np.abs(z - z[0]).max() <= 0.05  # [m]: measured 3.0 cm up, back to 0.9 cm at 3 s
    assert log.extras["failed_steps"] == 0 and log.extras["not_converged_steps"] == 0


class _SlowPlan(_ConstantPlan):
    """Takes at least ``seconds`` of wall time per plan."""

    def __init__(self, inputs, n_lambda, seconds):
        super().__init__(inputs, n_lambda)
        self.seconds = seconds

    def solve(self, x):
        import time

        t0 = time.perf_counter()
        while time.perf_counter() - t0 < self.seconds:
            pass
        return super().solve(x)


def test_run_in_simulator_measured_delay_follows_the_solve_time():
    task = load_task_file(TASK)
    plant = task.plant
    inputs = [np.array([1.0]), np.array([-1.0])]
    log = run_in_simulator(plant, _SlowPlan(inputs, plant.n_lambda, 0.003), task.simulator(),
                           0.02, control_rate=100.0, delay="measured")
    lag = log.extras["delay_steps"]
    assert log.solve_time.min() >= 0.003
    np.testing.assert_array_equal(lag, np.minimum(np.ceil(log.solve_time / 1e-3 - 1e-9), 10))
    applied = log.extras["applied_u"][:, 0]
    assert np.all(applied[:lag[0]] == 0.0) and np.all(applied[lag[0]:10] == 1.0)
    assert np.all(applied[10:10 + lag[1]] == 1.0) and np.all(applied[10 + lag[1]:] == -1.0)


def test_task_file_contact_params_per_geometry_and_link(tmp_path):
    path = _write(tmp_path, BASE + """contact_params:
  default: {stiffness: 2.0e5, dissipation: 0.002}
  geometries:
    ground: {mu: 0.8}
    box: {stiffness: 3.0e5}
""")
    task = load_task_file(path)
    params = {g.name: g.params for g in task.scene().geometries}
    assert params["ground"].mu == 0.8 and params["ground"].stiffness == 2.0e5
    # a link name sets every geometry of the link
    assert params["box_body"].stiffness == params["foot_back_left"].stiffness == 3.0e5
    assert params["box_body"].mu == 0.4  # from its pair
    assert params["pusher_tip"].dissipation == 0.002
    bad = _write(tmp_path, BASE + "contact_params:\n  geometries:\n    ground: {friction: 1}\n")
    with pytest.raises(TaskFileError, match="unknown key 'friction'") as err:
        load_task_file(bad)
    assert err.value.line == 6


UR5 = "robots/ur_description/urdf/ur5_joint_limited_robot.urdf"


def _discrete_step(plant, x, u, dt):
    a = plant.forward_dynamics(x, u)[plant.n_q:]
    v_next = x[plant.n_q:] + dt * a
    return np.concatenate([x[:plant.n_q] + dt * v_next, v_next])


@pytest.mark.filterwarnings("ignore::plants.multibody.ModelImportWarning")
def test_gravity_compensation_lcs_matches_central_differences():
    """τ = B u + S g(q): the LCS's A/B against central differences of forward dynamics on a
    UR5 (a robot we did not write; g depends on q), and u = 0 holds it still."""
    from plants.multibody import example_robot_data_path

    plant = MultibodyPlant.from_urdf(example_robot_data_path(UR5), [], gravity_compensation=True)
    rng = np.random.default_rng(19)
    dt, h = 0.01, 1e-6
    for _ in range(2):
        x = np.concatenate([rng.uniform(-1, 1, plant.n_q), rng.normal(size=plant.n_v)])
        u = rng.normal(size=plant.n_u)
        L = plant.lcs(x, u, dt=dt)
        A = np.column_stack([(_discrete_step(plant, x + h * e, u, dt)
                              - _discrete_step(plant, x - h * e, u, dt)) / (2 * h)
                             for e in np.eye(plant.n_x)])
        B = np.column_stack([(_discrete_step(plant, x, u + h * e, dt)
                              - _discrete_step(plant, x, u - h * e, dt)) / (2 * h)
                             for e in np.eye(plant.n_u)])
        assert np.abs(L.A - A).max() <= 1e-5 * np.abs(A).max()
        assert np.abs(L.B - B).max() <= 1e-5 * np.abs(B).max()
    x_rest = np.concatenate([x[:plant.n_q], np.zeros(plant.n_v)])
    assert np.abs(plant.forward_dynamics(x_rest, np.zeros(plant.n_u))[plant.n_q:]).max() <= 1e-9


@pytest.mark.filterwarnings("ignore::plants.multibody.ModelImportWarning")
@pytest.mark.parametrize("compensate", [True, False])
def test_run_in_simulator_applies_gravity_compensation(compensate):
    """u = 0 with the plant's gravity compensation holds a UR5 in the simulator; without it
    the arm falls (the feed-forward is evaluated at every simulator step)."""
    from plants.multibody import example_robot_data_path
    from plants.sim import ContactParams, SceneBuilder, Simulator

    path = example_robot_data_path(UR5)
    plant = MultibodyPlant.from_urdf(path, [], gravity_compensation=compensate)
    q0 = np.array([0.0, -1.0, 1.0, -0.5, 0.3, 0.0])
    b = SceneBuilder()
    b.add_urdf(path, ContactParams(1e5, 1e-3, 0.5), q0=q0, self_collision=False)
    sim = Simulator(b.build(), "sap", 1e-3)
    log = run_in_simulator(plant, _ConstantPlan([np.zeros(6)], 0), sim, 0.2, control_rate=50)
    drift = np.abs(log.x[-1, :6] - q0).max()
    if compensate:
        assert drift <= 1e-3
    else:
        assert drift >= 0.05


def test_pusher_box_urdf_variant_keeps_its_planning_contacts_and_reaches_the_goal(tmp_path):
    """The URDF welds the ground to the world link, so the self-collision filter sees it as part
    of the robot and dropped the feet-ground pairs (touching at the start): the box sank onto its
    body. The task file's planning contacts always collide in the scene."""
    text = TASK.read_text().replace("model: pusher_box.xml", "model: pusher_box.urdf\n"
                                    "actuated_joints: [pusher_x]")
    (tmp_path / "pusher_box.urdf").write_text((EXAMPLE / "pusher_box.urdf").read_text())
    (tmp_path / "task.yaml").write_text(text)
    task = load_task_file(tmp_path / "task.yaml")
    scene = task.scene()
    names = [g.name for g in scene.geometries]
    excluded = {frozenset((names[a], names[b])) for a, b in scene.excluded_pairs}
    for a, b in task.contact_geometry_pairs:
        assert frozenset((a, b)) not in excluded
    assert ("foot_back_left", "ground") in task.contact_geometry_pairs
    plant = task.plant
    from c3mpc.tasks import build_controller

    log = run_in_simulator(plant, build_controller(plant), task.simulator(), task.duration,
                           control_rate=task.control_rate)
    i = plant.state_names.index("box_x")
    assert abs(log.x[-1, i] - task.x_goal[i]) <= 0.025  # measured +0.6 cm (7.9 cm before)
    assert log.x[:, plant.state_names.index("box_z")].min() >= -1e-3  # standing on its feet


def test_load_scene_accepts_a_task_file_or_a_model_file():
    from plants import load_scene

    sim = load_scene(str(TASK))
    task = load_task_file(TASK)
    assert sim.dt == task.sim_dt and type(sim.solver).__name__ == "SAPSolver"
    assert list(sim.scene.model.names) == list(task.plant.model.names)
    np.testing.assert_array_equal(sim.q, task.x0[:task.plant.n_q])
    sim = load_scene(EXAMPLE / "pusher_box.xml", solver="canal", dt=2e-3)
    assert sim.dt == 2e-3 and type(sim.solver).__name__ == "CANALSolver"
    with pytest.raises(FileNotFoundError):
        load_scene("no_such_robot.urdf")
