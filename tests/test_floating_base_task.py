"""A floating-base robot from a task file (``floating_base: true``): example-robot-data's Go2 on a
ground plane. The planning plant's free-flyer and the scene's free root (translation + spherical)
share the name ``root_joint`` and the configuration; their linear velocities are in the root frame
(plant) and in the world frame (scene). Checked against independent computations: the frames' world
placements and velocities of both models, the LCS's A and B against central differences of the
forward dynamics, and a drop onto the ground under a joint PD hold."""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

from c3mpc import StateMap
from plants.multibody.errors import ModelImportWarning
from plants.task_file import TaskFileError, load_task_file

GO2 = "package://example-robot-data/robots/go2_description/urdf/go2.urdf"
GROUND = """<mujoco model="ground"><worldbody>
  <geom name="ground" type="plane" size="2 2 0.01"/></worldbody></mujoco>"""
STAND = {"thigh": 0.8, "calf": -1.5}  # [rad] a standing pose (hip joints 0)
LEGS = ("FL", "FR", "RL", "RR")
TASK = """models:
  - {{file: "{go2}", floating_base: true, base_position: [0, 0, 0.35],
     base_quaternion: [0, 0, 0.3826834, 0.9238795]}}
  - {{file: ground.xml}}
contacts:
  - {{a: [FL_foot_0, FR_foot_0, RL_foot_0, RR_foot_0], b: ground, mu: 0.8}}
start: {{{start}}}
"""


@pytest.fixture
def task(tmp_path):
    start = ", ".join(f"{leg}_{j}_joint: {q}" for leg in LEGS for j, q in STAND.items())
    (tmp_path / "ground.xml").write_text(GROUND)
    (tmp_path / "task.yaml").write_text(TASK.format(go2=GO2, start=start))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelImportWarning)  # meshes -> convex hulls
        yield load_task_file(tmp_path / "task.yaml")


def random_state(model, rng) -> tuple[np.ndarray, np.ndarray]:
    q = pin.integrate(model, pin.neutral(model), rng.uniform(-1.0, 1.0, model.nv))
    return q, rng.normal(size=model.nv)


def test_plant_and_scene_share_the_root_joint_and_its_start_pose(task):
    plant, scene = task.plant, task.scene()
    assert plant.model.names[1] == scene.model.names[1] == "root_joint"
    assert plant.model.joints[1].shortname() == "JointModelFreeFlyer"
    assert (plant.n_q, plant.n_v, plant.n_u) == (19, 18, 12)  # the base is not actuated
    assert np.allclose(task.x0[:7], [0, 0, 0.35, 0, 0, 0.3826834, 0.9238795], atol=1e-7)
    assert np.allclose(scene.q0[:7], task.x0[:7]) and np.allclose(scene.q0, task.x0[:plant.n_q])


def test_state_map_round_trips_and_matches_world_kinematics(task):
    """scene → plan → scene is exact; the plan's state and the scene's give every link the same
    world placement and the same world-frame velocity (the velocity conventions differ)."""
    plant, scene = task.plant, task.scene()
    smap = StateMap.by_joint_name(plant, scene)
    assert smap.free_roots == ((0, 0),)
    rng = np.random.default_rng(7)
    qs, vs = random_state(scene.model, rng)
    x = smap.state(qs, vs)
    q2, v2 = smap.scene_state(x, np.zeros_like(qs), np.zeros_like(vs))
    assert np.array_equal(q2, qs) and np.allclose(v2, vs, rtol=0, atol=1e-14)
    assert np.allclose(smap.state(q2, v2), x, rtol=0, atol=1e-14)
    assert not np.allclose(x[plant.n_q:plant.n_q + 3], vs[:3])  # rotated: not a plain copy

    pm, sm = plant.model, scene.model
    pd, sd = pm.createData(), sm.createData()
    pin.forwardKinematics(pm, pd, x[:plant.n_q], x[plant.n_q:])
    pin.forwardKinematics(sm, sd, qs, vs)
    pin.updateFramePlacements(pm, pd)
    pin.updateFramePlacements(sm, sd)
    world = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    for name in ("base", *(f"{leg}_foot" for leg in LEGS)):
        fp, fs = pm.getFrameId(name), sm.getFrameId(name)
        assert np.allclose(pd.oMf[fp].homogeneous, sd.oMf[fs].homogeneous, atol=1e-12)
        assert np.allclose(pin.getFrameVelocity(pm, pd, fp, world).vector,
                           pin.getFrameVelocity(sm, sd, fs, world).vector, atol=1e-12)


def test_state_map_forces_do_the_same_work(task):
    """A generalized force on the plan's base, mapped to the scene, does the same power on every
    velocity (τ_plan · v_plan = τ_scene · v_scene)."""
    plant, scene = task.plant, task.scene()
    smap = StateMap.by_joint_name(plant, scene)
    rng = np.random.default_rng(3)
    qs, vs = random_state(scene.model, rng)
    tau = rng.normal(size=plant.n_v)
    x = smap.state(qs, vs)
    assert float(tau @ x[plant.n_q:]) == pytest.approx(float(smap.generalized_forces(tau, qs) @ vs),
                                                       rel=1e-12)
    with pytest.raises(ValueError, match="needs the simulator's q"):
        smap.generalized_forces(tau)
    assert not smap.rotates_forces  # the default input drives the leg joints only


def test_lcs_matches_central_differences(task):
    from test_robot_sweep import lcs_finite_difference_errors

    err_A, err_B = lcs_finite_difference_errors(task.plant)
    assert err_A <= 1e-5 and err_B <= 1e-5


def test_dropped_go2_lands_and_rests(task):
    """Dropped from 1.6 cm above the ground (its feet's signed distance in the planning model), the
    robot holding its standing pose by a joint PD lands upright and comes to rest within 0.5 s."""
    plant = task.plant
    gap = min(c.phi for c in plant.contact_descriptions(task.x0))
    assert 0.005 < gap < 0.03
    sim = task.simulator()
    smap = StateMap.by_joint_name(plant, sim.scene)
    q_hold = task.x0[7:plant.n_q]

    def hold(t, q, v):
        x = smap.state(q, v)
        tau = np.zeros(plant.n_v)
        tau[6:] = 60.0 * (q_hold - x[7:plant.n_q]) - 2.0 * x[plant.n_q + 6:]
        return smap.generalized_forces(tau, q)

    sim.controller = hold
    base_speed = []
    for _ in range(round(0.5 / sim.dt)):
        r = sim.step()
        assert int(r.status) == 0
        base_speed.append(np.abs(sim.v[:6]).max())
    touchdown = task.x0[2] - gap
    assert touchdown - 0.05 < sim.q[2] < touchdown + 1e-3  # on its feet (the PD sags a little)
    up = pin.Quaternion(sim.q[6], *sim.q[3:6]).toRotationMatrix()[:, 2]
    assert up[2] > np.cos(0.1)  # upright within 0.1 rad
    assert max(base_speed[-100:]) < 0.1  # at rest over the last 0.1 s [m/s, rad/s]
    assert max(base_speed) > 0.3  # it fell (g·√(2 gap / g) ≈ 0.56 m/s)


@pytest.mark.parametrize("where, value, match", [
    ("floating_base", "1", "must be true or false"),
    ("base_quaternion", "[0, 0, 0, 0]", "non-zero quaternion"),
])
def test_bad_floating_base_keys_name_the_line(tmp_path, where, value, match):
    (tmp_path / "ground.xml").write_text(GROUND)
    text = TASK.format(go2=GO2, start="").replace(
        {"floating_base": "floating_base: true", "base_quaternion":
         "base_quaternion: [0, 0, 0.3826834, 0.9238795]"}[where], f"{where}: {value}")
    (tmp_path / "task.yaml").write_text(text)
    with pytest.raises(TaskFileError, match=match) as e:
        load_task_file(tmp_path / "task.yaml")
    assert e.value.line in (2, 3) and e.value.key.endswith(where)


def test_floating_base_at_the_top_level_is_the_same_robot(tmp_path):
    """``model:`` with ``floating_base: true`` gives the same planning model as ``models:``."""
    (tmp_path / "task.yaml").write_text(f"""model: "{GO2}"
floating_base: true
base_position: [0.1, 0, 0.4]
contacts:
  - {{a: FL_foot_0, b: FR_foot_0, mu: 0.5}}
""")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelImportWarning)
        task = load_task_file(tmp_path / "task.yaml")
        scene = task.scene()
    assert task.plant.model.names[1] == "root_joint" and task.plant.n_q == 19
    assert np.allclose(task.x0[:7], [0.1, 0, 0.4, 0, 0, 0, 1])
    assert np.allclose(scene.q0[:7], task.x0[:7])
    StateMap.by_joint_name(task.plant, scene)  # the maps agree


HOPPER = """<mujoco model="hopper"><worldbody>
 <body name="torso"><geom name="torso_geom" type="box" size="0.1 0.1 0.05" mass="2"/>
  <body name="leg" pos="0 0 -0.1"><joint name="knee" type="hinge" axis="0 1 0" range="-1 1"/>
   <geom name="foot" type="sphere" size="0.03" pos="0 0 -0.1" mass="0.5"/></body></body>
</worldbody><actuator><motor joint="knee"/></actuator></mujoco>"""


def test_mjcf_floating_base_with_a_prefix(tmp_path):
    """An MJCF body without a free joint, given ``floating_base`` and a prefix in ``models:``: both
    models call the root ``h/root_joint``, the map rotates its velocity, and it falls freely."""
    (tmp_path / "ground.xml").write_text(GROUND)
    (tmp_path / "hopper.xml").write_text(HOPPER)
    (tmp_path / "task.yaml").write_text("""models:
  - {file: hopper.xml, floating_base: true, base_position: [0, 0, 0.5], prefix: "h/"}
  - {file: ground.xml}
contacts:
  - {a: h/foot, b: ground, mu: 0.5}
start: {root_joint: {position: [0, 0, 0.5], rpy: [0, 0.2, 0]}}
""".replace("root_joint:", "h/root_joint:"))
    task = load_task_file(tmp_path / "task.yaml")
    sim = task.simulator()
    assert list(task.plant.model.names) == list(sim.scene.model.names) == ["universe", "h/root_joint", "h/knee"]
    assert task.plant.n_u == 1  # the file's actuator, not the root
    smap = StateMap.by_joint_name(task.plant, sim.scene)
    assert smap.free_roots == ((0, 0),)
    assert np.allclose(smap.state(sim.q, sim.v), task.x0)
    sim.run(0.1)  # free fall (the foot is 0.27 m up): ż = −g t, the same in both conventions
    x = smap.state(sim.q, sim.v)
    R = pin.Quaternion(x[6], *x[3:6]).toRotationMatrix()
    assert np.allclose(R @ x[task.plant.n_q:task.plant.n_q + 3], sim.v[:3], atol=1e-12)
    assert sim.v[2] == pytest.approx(-9.81 * 0.1, rel=1e-2)


def test_c3_runs_on_the_go2_in_the_simulator(task):
    """``run_in_simulator`` with C3 (the task file's defaults) on the floating-base Go2, 0.2 s at
    10 Hz: each plan's state is the map of the simulator's state at that instant (the base's
    linear velocity in the base frame), every plan applied, every simulator step converged."""
    from c3mpc import run_in_simulator
    from c3mpc.result import count_failed
    from c3mpc.tasks import build_controller

    plant = task.plant
    sim = task.simulator()
    smap = StateMap.by_joint_name(plant, sim.scene)
    log = run_in_simulator(plant, build_controller(plant), sim, 0.2, control_rate=10)
    period = log.extras["control_period_steps"]
    # every plan applied (no failure status; C3's consensus check may mark a plan of this
    # untuned standing task NOT_CONVERGED, which the loop applies and counts apart)
    assert count_failed(log.status) == 0 and (log.extras["sim_stats"]["status"] == 0).all()
    for k in range(len(log.status)):
        q, v = log.extras["sim_q"][k * period], log.extras["sim_v"][k * period]
        np.testing.assert_allclose(log.x[k], smap.state(q, v), rtol=0, atol=1e-12)
        R = pin.Quaternion(q[6], *q[3:6]).toRotationMatrix()
        np.testing.assert_allclose(R @ log.x[k][plant.n_q:plant.n_q + 3], v[:3], atol=1e-12)
    assert np.isfinite(log.extras["sim_q"]).all() and log.extras["sim_q"][-1][2] > 0.2
