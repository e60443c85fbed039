"""Named simulator scenes of the API contract and ``load_scene``.

    sim = load_scene("cube-slide", solver="sap", dt=1e-3)
    traj = sim.run(2.0)        # traj.t, traj.q, traj.v, traj.stats

Scenes: ``cube-drop-1|3|5``, ``cube-rest-3|5``, ``cube-slide``, ``spring-cylinder``,
``clutter-40``, ``franka-push-ball`` (and, in :mod:`plants.sim.al_scenes`, ``mass-ratio-stack``,
``heavy-stack``, ``a1-drop-8|27``, ``stiff-chain``). Cubes are 0.1 m, 1 kg, μ = 0.5, with eight
corner spheres (point-like contacts) inside the box hull; the box itself is the target of other
cubes' corners. ``CubeSpec(contact="box")`` makes each cube its box alone, touching with its
contact manifolds (:mod:`plants.sim.manifold`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .._validation import number
from ..errors import UnknownSceneError
from .geometry import Box, ContactParams, HalfSpace, Sphere
from .scene import JointSpring, Scene, SceneBuilder, box_inertia, example_robot_data_dir, sphere_inertia
from .diagnostics import PlausibilityOptions
from .stepper import Simulator

__all__ = ["load_scene", "available_scenes", "register_scene", "SceneSpec", "CUBE"]

G = 9.81


@dataclass(frozen=True)
class CubeSpec:
    """The test cube: side [m], mass [kg], μ, corner-sphere radius [m], contact stiffness [N/m]
    (near-rigid: the β regularization of eq. 29 sets the compliance) and τ_d [s].

    ``contact`` says how the cube touches things: ``"corners"`` (default) — its box plus eight
    corner spheres (point contacts; box–box pairs keep one GJK/EPA point for edge–edge contact);
    ``"box"`` — the box alone, with the box–half-space and box–box contact manifolds of
    :mod:`plants.sim.manifold` (up to 4 points per pair). docs/BENCHMARKS.md compares the two."""

    side: float = 0.1
    mass: float = 1.0
    mu: float = 0.5
    corner_radius: float = 1e-3
    stiffness: float = 1e12
    dissipation: float = 0.0
    contact: str = "corners"

    def __post_init__(self) -> None:
        if self.contact not in ("corners", "box"):
            raise ValueError(f"CubeSpec.contact must be 'corners' or 'box', got {self.contact!r}")


CUBE = CubeSpec()


@dataclass(frozen=True)
class SceneSpec:
    """What a scene factory returns: the scene, its default dt, scheme and controller."""

    scene: Scene
    dt: float
    scheme: str = "symplectic_euler"
    controller: Callable | None = None
    info: dict | None = None


_SCENES: dict[str, Callable[..., SceneSpec]] = {}


def register_scene(name: str):
    """Decorator registering a scene factory ``f(dt, **params) -> SceneSpec``."""

    def deco(f):
        if name in _SCENES and _SCENES[name] is not f:
            raise ValueError(f"scene name {name!r} is already registered")
        _SCENES[name] = f
        return f

    return deco


def available_scenes(kind: str | None = None) -> list[str]:
    """Names accepted by :func:`load_scene`, sorted.

    Args:
        kind: None (every scene), "rigid" (the scenes of the rigid contact solvers: sap, canal,
            subadmm, nsn, pgs) or "deformable" (those of :mod:`plants.sim.deformable`, with their
            own solvers).
    """
    if kind is None:
        return sorted(_SCENES)
    if kind not in ("rigid", "deformable"):
        raise ValueError(f"kind must be None, 'rigid' or 'deformable', got {kind!r}")
    deformable = {n for n, f in _SCENES.items() if f.__module__.startswith("plants.sim.deformable")}
    return sorted(deformable if kind == "deformable" else set(_SCENES) - deformable)


def load_scene(name: Any, solver: Any = None, dt: float | None = None, scheme: str | None = None,
               solver_options: dict | str | Any | None = None, strict: bool = False,
               plausibility: PlausibilityOptions | None = PlausibilityOptions(), **params: Any) -> Simulator:
    """A :class:`Simulator` on the scene registered as ``name`` (a
    :class:`plants.sim.deformable.DeformableSimulator` for the deformable scenes), or of a task or
    model file.

    Args:
        name: e.g. "cube-slide" (see :func:`available_scenes`); or a path: a task file
            (``.yaml``/``.yml``, :func:`plants.load_task_file`: its scene, solver and time step)
            or a URDF/MJCF file (the robot alone, ``SceneBuilder.add_urdf`` with default
            :class:`ContactParams`; ``params`` go to ``add_urdf``).
        solver: contact solver name or instance; default: the task file's, else "sap" (rigid
            scenes) or "fba" (deformable; "nsn" for seed 002's solver).
        dt: time step [s]; default: the scene's (a model file: 1 ms).
        scheme: θ-method ("symplectic_euler", "midpoint", ...); default: the scene's.
        solver_options: options of the named solver: keywords (e.g. ``{"rel_tol": 1e-5}``), a preset
            name (``"realtime"``) or an options object.
        strict: raise ``ContactSolveError`` on a step whose solve did not converge (default: advance
            on the solver's best iterate and warn once at the end of ``run``; see :class:`Simulator`).
        plausibility: thresholds of the deep-penetration / energy checks (None: off).
        **params: scene parameters (e.g. ``mu=0.0`` for "spring-cylinder").
    """
    import os
    from pathlib import Path

    if isinstance(name, os.PathLike) or (isinstance(name, str) and name not in _SCENES and
                                         name.lower().endswith((".yaml", ".yml", ".urdf", ".xml"))):
        path = Path(name)
        if not path.is_file():
            raise FileNotFoundError(f"no such task or model file: {path}")
        if path.suffix.lower() in (".yaml", ".yml"):
            if params:
                raise ValueError(f"load_scene({str(path)!r}): a task file takes no scene "
                                 f"parameters (got {', '.join(sorted(params))})")
            from ..task_file import load_task_file

            task = load_task_file(path)
            scene, solver, dt = task.scene(), solver or task.solver, dt or task.sim_dt
        else:
            b = SceneBuilder()
            b.add_urdf(path, ContactParams(), **params)
            scene, dt = b.build(), dt or 1e-3
        return Simulator(scene, solver=solver or "sap", dt=dt,
                         scheme=scheme or "symplectic_euler", solver_options=solver_options,
                         strict=strict, plausibility=plausibility)
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    try:
        factory = _SCENES[name]
    except KeyError:
        raise UnknownSceneError(name, available_scenes()) from None
    dt = number("dt", dt, minimum=0.0, exclusive_minimum=True, allow_none=True)
    spec = factory(dt=dt, **params)
    if hasattr(spec, "make_simulator"):  # deformable scenes (plants.sim.deformable.scenes)
        sim = spec.make_simulator(solver=solver, dt=dt, solver_options=solver_options, scheme=scheme)
        sim.info = dict(spec.info or {}, name=name)
        return sim
    solver = "sap" if solver is None else solver
    sim = Simulator(
        spec.scene, solver=solver, dt=spec.dt if dt is None else dt, scheme=scheme or spec.scheme,
        controller=spec.controller, solver_options=solver_options, strict=strict, plausibility=plausibility,
    )
    sim.info = dict(spec.info or {}, name=name)
    return sim


# ---------------------------------------------------------------------------- building blocks
_EXCLUDED = [("cube_box", "cube_box"), ("corner", "corner"), ("cube_box", "ground"), ("corner", "ball"),
             ("robot", "ground"), ("robot", "robot")]


def _builder(margin: float, cube: CubeSpec, box_box: bool) -> SceneBuilder:
    """The scene builder of the cube scenes: corner cubes never touch the ground or each other
    with their boxes but (``box_box``) through one GJK/EPA point for edge–edge contact; box cubes
    touch everything with their manifolds."""
    if cube.contact == "box":
        return SceneBuilder(margin=margin, excluded_groups=[("robot", "ground"), ("robot", "robot")])
    excluded = [g for g in _EXCLUDED if not (box_box and g == ("cube_box", "cube_box"))]
    return SceneBuilder(margin=margin, excluded_groups=excluded, contacts_per_pair={("cube_box", "cube_box"): 1})


def _ground(b: SceneBuilder, mu: float) -> None:
    b.add_ground(ContactParams(stiffness=float("inf"), dissipation=0.0, mu=mu))


def _add_cube(b: SceneBuilder, name: str, position, yaw: float = 0.0, velocity=(0, 0, 0, 0, 0, 0), cube: CubeSpec = CUBE,
              dissipation: float | None = None) -> None:
    h = cube.side / 2
    params = ContactParams(cube.stiffness, cube.dissipation if dissipation is None else dissipation, cube.mu)
    r = cube.corner_radius
    geoms = [("box", Box((h, h, h)), params, (0, 0, 0), None, "cube_box")]
    corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1], indexing="ij")).reshape(3, -1).T
    for i, s in enumerate([] if cube.contact == "box" else corners):
        geoms.append((f"corner{i}", Sphere(r), params, s * (h - r), None, "corner"))
    quat = (0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2))
    b.add_free_body(name, cube.mass, box_inertia(cube.mass, (h, h, h)), geoms, position, quat, velocity)


def _dt(dt, default):
    return default if dt is None else dt


# ---------------------------------------------------------------------------- scenes
def _cube_drop(n: int):
    def factory(dt=None, height: float = 0.2, cube: CubeSpec = CUBE):
        # box-box pairs stay on (coal GJK/EPA), as in clutter-40: the cubes land yawed 0.3 rad on each
        # other, and two equal squares turned by 0.3 rad each stick every corner out of the other's
        # face, so no corner touches a face (edge-edge contact only). With box-box excluded, cube 1
        # fell straight through cube 0 (found by the plausibility check's body hulls, issue #20).
        b = _builder(0.02, cube, box_box=True)
        _ground(b, cube.mu)
        for i in range(n):
            z = cube.side / 2 + height + i * (cube.side + 0.05)
            _add_cube(b, f"cube{i}", (0.01 * i, -0.005 * i, z), yaw=0.3 * i, cube=cube)
        return SceneSpec(b.build(), _dt(dt, 1e-3), info={"n_cubes": n, "cube": cube})

    return factory


def _cube_rest(n: int):
    def factory(dt=None, cube: CubeSpec = CUBE):
        b = _builder(0.01, cube, box_box=False)
        _ground(b, cube.mu)
        for i in range(n):
            _add_cube(b, f"cube{i}", (0.0, 0.0, cube.side / 2 + i * cube.side), cube=cube)
        return SceneSpec(b.build(), _dt(dt, 1e-3), info={"n_cubes": n, "cube": cube})

    return factory


for _n in (1, 3, 5):
    register_scene(f"cube-drop-{_n}")(_cube_drop(_n))
for _n in (3, 5):
    register_scene(f"cube-rest-{_n}")(_cube_rest(_n))


@register_scene("cube-slide")
def _cube_slide(dt=None, speed: float = 1.0, cube: CubeSpec = CUBE) -> SceneSpec:
    """One cube on the ground sliding along +x at ``speed``; stops after v²/(2 μ g)."""
    b = _builder(0.01, cube, box_box=False)
    _ground(b, cube.mu)
    _add_cube(b, "cube", (0.0, 0.0, cube.side / 2), velocity=(speed, 0, 0, 0, 0, 0), cube=cube)
    return SceneSpec(b.build(), _dt(dt, 1e-3), info={"speed": speed, "mu": cube.mu,
                                                     "stopping_distance": speed**2 / (2 * cube.mu * G)})


@register_scene("spring-cylinder")
def _spring_cylinder(dt=None, mu: float = 1.0, x0: float = 0.1, radius: float = 0.05, mass: float = 0.5,
                     spring: float = 100.0, stiffness: float = 1e4, dissipation: float = 0.02,
                     scheme: str = "midpoint") -> SceneSpec:
    """Seed 001 §VI-B: a cylinder (x, z, rotation about y) tied to a wall by a spring, on the
    ground. Contact k = 1e4 N/m, τ_d = 0.02 s, δt = 0.02 s; μ = 1 rolls, μ = 0 slides.
    It starts at rest at x0 and at its static contact depth mg/k."""
    b = SceneBuilder(margin=0.01)
    _ground(b, mu)
    params = ContactParams(stiffness, dissipation, mu)
    b.add_planar_body("cylinder", mass, 0.5 * mass * radius**2, [("disk", Sphere(radius), params)],
                      x=x0, z=radius - mass * G / stiffness)
    b.add_spring(JointSpring(dof=0, stiffness=spring, rest=0.0))
    return SceneSpec(b.build(), _dt(dt, 0.02), scheme=scheme,
                     info={"mass": mass, "radius": radius, "spring": spring, "x0": x0, "mu": mu,
                           "z_rest": radius - mass * G / stiffness})


@register_scene("clutter-40")
def _clutter(dt=None, n_objects: int = 40, walls: bool = True, seed: int = 0, margin: float = 0.05,
             cube_contact: str = "corners") -> SceneSpec:
    """Seed 001 §VI-C: spheres (r = 5 cm, 0.524 kg) and 10 cm boxes (1 kg) dropped in 4 columns
    into an 80 cm container; k = 1e12 N/m (near-rigid), τ_d = δt, μ = 1, δt = 10 ms.
    ``cube_contact``: the boxes' :attr:`CubeSpec.contact` ("corners" or "box")."""
    dt = _dt(dt, 1e-2)
    mu = 1.0
    params = ContactParams(1e12, dt, mu)
    # box-box pairs stay on (coal GJK/EPA): edge-edge contacts have no corner to detect them
    cube = CubeSpec(mu=mu, stiffness=1e12, contact=cube_contact)
    b = _builder(margin, cube, box_box=True)
    _ground(b, mu)
    if walls:
        wall = ContactParams(float("inf"), 0.0, mu)
        for name, nrm, pos in [("wall+x", (-1, 0, 0), (0.4, 0, 0)), ("wall-x", (1, 0, 0), (-0.4, 0, 0)),
                               ("wall+y", (0, -1, 0), (0, 0.4, 0)), ("wall-y", (0, 1, 0), (0, -0.4, 0))]:
            b.add_world_geometry(name, HalfSpace(), wall, rotation=_rot_z_to(np.array(nrm, float)), translation=pos, group="ground")
    rng = np.random.default_rng(seed)
    columns = [(-0.2, -0.2), (0.2, -0.2), (-0.2, 0.2), (0.2, 0.2)]
    for i in range(n_objects):
        cx, cy = columns[i % 4]
        level = i // 4
        pos = (cx + rng.uniform(-0.02, 0.02), cy + rng.uniform(-0.02, 0.02), 0.1 + 0.15 * level)
        if (i + level) % 2 == 0:
            r = 0.05
            m = 1000 * 4 / 3 * np.pi * r**3
            b.add_free_body(f"sphere{i}", m, sphere_inertia(m, r), [("ball", Sphere(r), params, (0, 0, 0), None, "ball")], pos)
        else:
            _add_cube(b, f"box{i}", pos, yaw=rng.uniform(0, np.pi), cube=cube, dissipation=dt)
    return SceneSpec(b.build(), dt, info={"n_objects": n_objects, "walls": walls})


def _rot_z_to(n: np.ndarray) -> np.ndarray:
    """A rotation whose z axis is the unit vector ``n``."""
    n = n / np.linalg.norm(n)
    a = np.array([1.0, 0, 0]) if abs(n[0]) < 0.9 else np.array([0, 1.0, 0])
    x = np.cross(a, n)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(n, x), n])


PANDA_READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])


@register_scene("franka-push-ball")
def _franka_push_ball(dt=None, ball_radius: float = 0.04, ball_mass: float = 0.1, mu: float = 0.5,
                      push_start: float = 0.25, push_end: float = 0.65, push_time: float = 2.0,
                      hand_collision: bool = True, mimic: bool = True) -> SceneSpec:
    """The Panda (example-robot-data URDF, hand and finger collision geometry) pushes a ball along
    +x with a Cartesian PD + gravity-compensation controller (the actuation hook).
    ``hand_collision=False`` keeps only the finger boxes (the hand mesh is an STL, which Drake's
    parser cannot use as collision geometry: the benchmark's like-for-like variant). The fingers
    are coupled by the URDF's ``<mimic>`` (``mimic=False``: independent; a coupler is a joint-space
    row, with which SubADMM runs its ``no_body`` variant)."""
    import pinocchio as pin

    urdf = example_robot_data_dir() / "robots/panda_description/urdf/panda.urdf"
    b = SceneBuilder(margin=0.02, excluded_groups=_EXCLUDED)
    robot_params = ContactParams(1e6, 1e-3, mu)
    links = ["panda_leftfinger", "panda_rightfinger"] + (["panda_hand"] if hand_collision else [])
    b.add_urdf(urdf, robot_params, q0=PANDA_READY, collision_links=links, mimic=mimic)
    _ground(b, mu)
    ball = ContactParams(1e6, 1e-3, mu)
    b.add_free_body("ball", ball_mass, sphere_inertia(ball_mass, ball_radius),
                    [("ball", Sphere(ball_radius), ball, (0, 0, 0), None, "ball")], (0.45, 0.0, ball_radius))
    scene = b.build()
    model = scene.model
    data = model.createData()
    hand = model.getFrameId("panda_hand")
    nv_robot = 9
    q_home = PANDA_READY.copy()
    pin.framesForwardKinematics(model, data, np.concatenate([q_home, scene.q0[9:]]))
    x_home = data.oMf[hand].translation.copy()
    z_push = ball_radius + 0.06  # hand frame height: the fingertips (~0.1 m below it) pass the ball centre
    kp, kd = np.full(3, 1500.0), np.full(3, 80.0)
    kp_null, kd_null = 20.0, 4.0
    null_weight = np.r_[np.ones(7) * 0.2, np.ones(2)]

    def target(t: float) -> np.ndarray:
        a = np.array([push_start, 0.0, z_push])
        if t < 1.0:  # descend behind the ball
            s = 0.5 - 0.5 * np.cos(np.pi * t)
            return (1 - s) * x_home + s * a
        s = min((t - 1.0) / push_time, 1.0)
        s = 0.5 - 0.5 * np.cos(np.pi * s)
        return a + s * np.array([push_end - push_start, 0.0, 0.0])

    def controller(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        Jf = pin.getFrameJacobian(model, data, hand, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3, :nv_robot]
        x = data.oMf[hand].translation
        xd = Jf @ v[:nv_robot]
        f = kp * (target(t) - x) - kd * xd
        g = pin.computeGeneralizedGravity(model, data, q)[:nv_robot]
        tau = Jf.T @ f + g - kp_null * (q[:nv_robot] - q_home) * null_weight - kd_null * v[:nv_robot]
        out = np.zeros(model.nv)
        out[:nv_robot] = tau
        return out

    return SceneSpec(scene, _dt(dt, 1e-3), controller=controller, info={"ball_radius": ball_radius, "target": target})
