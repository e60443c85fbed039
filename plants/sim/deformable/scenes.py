"""Registered deformable scenes (``load_scene`` names) of seed 004's experiments.

* ``deformable-slope`` (Fig. 7): a stiff elastic box (ρ = 1000 kg/m³, E = 1e8 Pa) on a slope of
  ``slope_deg`` (10°); it sticks if μ > μ* = tan θ and slides if μ ≤ μ*.
* ``twisting-bar`` (Fig. 9): an ARAP bar whose end cross-sections rotate in opposite senses
  about its axis (pinned, kinematic nodes); no gravity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..scenes import register_scene
from .body import DeformableBody
from .local_global import FBAOptions
from .nsn import NSNOptions
from .materials import ARAP, CoRotational, Material, StableNeoHookean
from .mesh import bar_tet_mesh, box_tet_mesh, cloth_sheet, sphere_tet_mesh
from .obstacles import BoxObstacle, CylinderObstacle, HalfSpace
from .simulator import SOLVERS, DeformableSimulator
from .world import Attachment, DeformableWorld

__all__ = ["DeformableSceneSpec", "MATERIALS", "make_material"]

MATERIALS = {"arap": ARAP, "corotational": CoRotational, "neohookean": StableNeoHookean}
"""Material names accepted by the scenes' ``material`` parameter."""


def make_material(name: str, youngs: float, poisson: float) -> Material:
    """A material by name ("arap", "corotational", "neohookean" = Stable Neo-Hookean)."""
    if name not in MATERIALS:
        raise ValueError(f"material must be one of {sorted(MATERIALS)}, got {name!r}")
    return MATERIALS[name](float(youngs), float(poisson))


@dataclass(frozen=True)
class DeformableSceneSpec:
    """What a deformable scene factory returns; ``load_scene`` calls :meth:`make_simulator`."""

    world: DeformableWorld
    dt: float
    solver_options: dict = field(default_factory=dict)
    info: dict | None = None
    nsn_options: dict = field(default_factory=dict)

    def make_simulator(self, solver=None, dt: float | None = None, solver_options: dict | None = None,
                       scheme: str | None = None) -> DeformableSimulator:
        """The :class:`DeformableSimulator` (solver "fba" by default, or "nsn"; the scene's
        options for that solver, updated by ``solver_options``)."""
        if scheme is not None:
            raise ValueError(f"deformable scenes integrate with implicit Euler only; scheme must be None, got {scheme!r}")
        solver = "fba" if solver is None else solver
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS} for a deformable scene, got {solver!r}")
        if isinstance(solver_options, (FBAOptions, NSNOptions)):
            opts = solver_options
        elif solver == "fba":
            opts = FBAOptions.from_dict({**self.solver_options, **(solver_options or {})})
        else:
            opts = NSNOptions.from_dict({**self.nsn_options, **(solver_options or {})})
        return DeformableSimulator(self.world, solver=solver, dt=self.dt if dt is None else dt, solver_options=opts)


def _rot_y(theta: float) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


@register_scene("deformable-slope")
def deformable_slope(dt=None, mu: float = 0.5, slope_deg: float = 10.0, side: float = 0.1, cells: int = 4,
                     youngs: float = 1e8, poisson: float = 0.3, density: float = 1000.0,
                     material: str = "neohookean") -> DeformableSceneSpec:
    """Seed 004 Fig. 7: a box of ``side`` [m] at rest on a slope of ``slope_deg`` [deg] (x points
    downhill along the slope). ``info``: μ* = tan θ and the analytic slide distance
    ½ g (sin θ − μ cos θ) t² per second² (0 when μ > μ*)."""
    if not (0.0 <= slope_deg < 90.0):
        raise ValueError(f"slope_deg must lie in [0, 90), got {slope_deg}")
    if not mu >= 0:
        raise ValueError(f"mu must be >= 0, got {mu}")
    th = np.radians(slope_deg)
    R = _rot_y(th)
    n = R[:, 2]
    mesh = box_tet_mesh((side,) * 3, (cells,) * 3).transformed(R, n * side / 2)
    body = DeformableBody("box", mesh, make_material(material, youngs, poisson), density=density)
    world = DeformableWorld((body,), (HalfSpace(name="slope", mu=float(mu), normal=n),))
    g = 9.81
    accel = max(0.0, g * (np.sin(th) - mu * np.cos(th)))
    return DeformableSceneSpec(world, 0.01 if dt is None else dt,
                               info={"mu": mu, "mu_star": float(np.tan(th)), "downhill": R[:, 0],
                                     "normal": n, "slide_acceleration": accel})


@register_scene("twisting-bar")
def twisting_bar(dt=None, length: float = 1.0, width: float = 0.2, cells_along: int = 10, cells_across: int = 2,
                 youngs: float = 1e7, poisson: float = 0.45, density: float = 1000.0, twist_rate: float = np.pi / 4,
                 material: str = "arap") -> DeformableSceneSpec:
    """Seed 004 Fig. 9: a bar along x; the nodes of each end face rotate about the x axis at
    ±``twist_rate`` [rad/s] (pinned); no gravity."""
    mesh = bar_tet_mesh(length, width, cells_along, cells_across)
    X = mesh.X
    ends = np.flatnonzero(np.isclose(np.abs(X[:, 0]), length / 2))

    def motion(t, X0):
        ang = np.sign(X0[:, 0]) * twist_rate * t
        c, s = np.cos(ang), np.sin(ang)
        return np.stack([X0[:, 0], c * X0[:, 1] - s * X0[:, 2], s * X0[:, 1] + c * X0[:, 2]], 1)

    body = DeformableBody("bar", mesh, make_material(material, youngs, poisson), density=density, pinned=ends,
                          pin_motion=motion)
    world = DeformableWorld((body,), gravity=(0.0, 0.0, 0.0))
    return DeformableSceneSpec(world, 0.01 if dt is None else dt, info={"twist_rate": twist_rate, "pinned": ends})


@register_scene("squeeze-ball")
def squeeze_ball(dt=None, radius: float = 0.1, cells: int = 6, youngs: float = 1e4, poisson: float = 0.4,
                 density: float = 1000.0, mu: float = 0.5, gap: float = 0.1, roller_radius: float = 0.1,
                 surface_speed: float = 0.5, material: str = "neohookean") -> DeformableSceneSpec:
    """Seed 004 Fig. 5 (after IPC): a soft ball rolled toward two counter-rotating rollers (axes
    along y at x = 0, a ``gap`` [m] between them) whose surfaces move at ``surface_speed`` [m/s]
    along +x in the gap; friction (μ) pulls the ball through. No gravity. ``info["exit_x"]``: x
    beyond which the ball has passed the rollers."""
    if not 0 < gap < 2 * radius:
        raise ValueError(f"gap must lie in (0, 2 radius) [m], got {gap}")
    x0 = -(roller_radius + radius) * 0.999 + 0.0
    mesh = sphere_tet_mesh(radius, cells, center=(x0 + 0.02, 0.0, 0.0))
    body = DeformableBody("ball", mesh, make_material(material, youngs, poisson), density=density,
                          velocity=(surface_speed, 0.0, 0.0))
    zc = gap / 2 + roller_radius
    spin = surface_speed / roller_radius
    rollers = (CylinderObstacle(name="roller_top", mu=mu, center=(0.0, 0.0, zc), axis=(0, 1, 0), radius=roller_radius,
                                half_length=2 * radius, spin=-spin),
               CylinderObstacle(name="roller_bottom", mu=mu, center=(0.0, 0.0, -zc), axis=(0, 1, 0),
                                radius=roller_radius, half_length=2 * radius, spin=spin))
    world = DeformableWorld((body,), rollers, gravity=(0.0, 0.0, 0.0))
    return DeformableSceneSpec(world, 0.01 if dt is None else dt,
                               info={"exit_x": roller_radius + radius, "gap": gap, "radius": radius})


@register_scene("cloth-corner")
def cloth_corner(dt=None, size: float = 1.0, cells: int = 20, youngs: float = 1e5, poisson: float = 0.4,
                 density: float = 1000.0, thickness: float = 1e-3, mu: float = 0.3, cube: float = 0.4,
                 height: float = 0.05, bending: float = 0.0, material: str = "neohookean") -> DeformableSceneSpec:
    """Seed 004 Fig. 6: a square cloth (``size`` [m], ``cells``² quads, Laplace-Beltrami bending
    stiffness ``bending`` [J], none by default) falls from ``height`` [m] above a static cube of
    side ``cube`` [m] standing on the ground."""
    mesh = cloth_sheet((size, size), (cells, cells), center=(0.0, 0.0, cube + height))
    body = DeformableBody("cloth", mesh, make_material(material, youngs, poisson), density=density, thickness=thickness,
                          bending=bending)
    obstacles = (BoxObstacle(name="cube", mu=mu, center=(0.0, 0.0, cube / 2), half_extents=(cube / 2,) * 3),
                 HalfSpace(name="ground", mu=mu))
    return DeformableSceneSpec(DeformableWorld((body,), obstacles), 0.01 if dt is None else dt,
                               info={"cube": cube})


@register_scene("cloth-extension")
def cloth_extension(dt=None, size=(1.0, 0.25), cells=(40, 10), stretch: float = 1.3, ramp_time: float = 1.0,
                    youngs: float = 1e5, poisson: float = 0.45, density: float = 1000.0, thickness: float = 1e-3,
                    material: str = "neohookean") -> DeformableSceneSpec:
    """Seed 004 Fig. 10: a cloth strip whose two short edges (pinned) are pulled apart along x to
    ``stretch`` × its length over ``ramp_time`` [s] (smoothstep), then held; no gravity. The
    middle of a long strip is in uniaxial plane stress: its width shows each material's lateral
    contraction (ARAP: none; co-rotational: 1 − ν(s − 1); Neo-Hookean: near area-preserving)."""
    if not stretch > 0:
        raise ValueError(f"stretch must be > 0, got {stretch}")
    mesh = cloth_sheet(size, cells)
    L = float(size[0])
    ends = np.flatnonzero(np.isclose(np.abs(mesh.X[:, 0]), L / 2))

    def motion(t, X0):
        a = min(max(t / ramp_time, 0.0), 1.0) if ramp_time > 0 else 1.0
        s = 1.0 + (stretch - 1.0) * a * a * (3 - 2 * a)
        out = X0.copy()
        out[:, 0] *= s
        return out

    body = DeformableBody("cloth", mesh, make_material(material, youngs, poisson), density=density,
                          thickness=thickness, pinned=ends, pin_motion=motion)
    return DeformableSceneSpec(DeformableWorld((body,), gravity=(0.0, 0.0, 0.0)), 0.01 if dt is None else dt,
                               info={"stretch": stretch, "size": tuple(size), "ramp_time": ramp_time})


@register_scene("pulled-through-gap")
def pulled_through_gap(dt=None, radius: float = 0.1, cells: int = 6, youngs: float = 1e5, poisson: float = 0.4,
                       density: float = 1000.0, mu: float = 0.2, gap: float = 0.12, post_radius: float = 0.05,
                       speed: float = 0.5, handle: float = 0.04, material: str = "neohookean") -> DeformableSceneSpec:
    """Seed 004 Fig. 3: a soft ball pulled along +x at ``speed`` [m/s] by a moving positional
    constraint (hard bilateral rows on the nodes within ``handle`` [m] of its front point) through
    a ``gap`` [m] between two vertical cylinders (posts); no gravity. ``info["exit_x"]``: x beyond
    which the whole ball has passed the posts."""
    if not 0 < gap < 2 * radius:
        raise ValueError(f"gap must lie in (0, 2 radius) [m], got {gap}")
    x0 = -(post_radius + radius + 0.01)
    mesh = sphere_tet_mesh(radius, cells, center=(x0, 0.0, 0.0))
    front = np.flatnonzero(np.linalg.norm(mesh.X - (x0 + radius, 0.0, 0.0), axis=1) <= handle)
    body = DeformableBody("ball", mesh, make_material(material, youngs, poisson), density=density)
    pull = Attachment("ball", front, target=lambda t, X0: X0 + np.array([speed * t, 0.0, 0.0]))
    yc = gap / 2 + post_radius
    posts = tuple(CylinderObstacle(name=f"post{i}", mu=mu, center=(0.0, sgn * yc, 0.0), axis=(0, 0, 1),
                                   radius=post_radius, half_length=2 * radius) for i, sgn in enumerate((1.0, -1.0)))
    world = DeformableWorld((body,), posts, attachments=(pull,), gravity=(0.0, 0.0, 0.0))
    return DeformableSceneSpec(world, 0.01 if dt is None else dt,
                               info={"exit_x": post_radius + 2 * radius, "gap": gap, "handle_nodes": front})


@register_scene("fem-bar")
def fem_bar(dt=None, length: float = 1.0, width: float = 0.2, cells_along: int = 10, cells_across: int = 2,
            stretch: float = 2.0, ramp_time: float = 1.0, youngs: float = 1e5, poisson: float = 0.45,
            density: float = 1000.0, material: str = "corotational") -> DeformableSceneSpec:
    """Seed 002 Fig. 13 (material extension): a bar along x whose end faces (pinned) are pulled
    apart to ``stretch`` × its length over ``ramp_time`` [s] (smoothstep), then held; no gravity.
    Linear co-rotational elasticity loses volume at large stretch; Stable Neo-Hookean keeps it
    (``info["rest_volume"]`` [m³] to compare with)."""
    if not stretch > 0:
        raise ValueError(f"stretch must be > 0, got {stretch}")
    mesh = bar_tet_mesh(length, width, cells_along, cells_across)
    ends = np.flatnonzero(np.isclose(np.abs(mesh.X[:, 0]), length / 2))

    def motion(t, X0):
        a = min(max(t / ramp_time, 0.0), 1.0) if ramp_time > 0 else 1.0
        out = X0.copy()
        out[:, 0] *= 1.0 + (stretch - 1.0) * a * a * (3 - 2 * a)
        return out

    body = DeformableBody("bar", mesh, make_material(material, youngs, poisson), density=density, pinned=ends,
                          pin_motion=motion)
    return DeformableSceneSpec(DeformableWorld((body,), gravity=(0.0, 0.0, 0.0)), 0.01 if dt is None else dt,
                               info={"stretch": stretch, "rest_volume": length * width * width, "ramp_time": ramp_time})


def _smoothstep(t: float, t0: float, t1: float) -> tuple[float, float]:
    """(s, ds/dt) of the cubic smoothstep from 0 at t0 to 1 at t1."""
    if t <= t0:
        return 0.0, 0.0
    if t >= t1:
        return 1.0, 0.0
    a = (t - t0) / (t1 - t0)
    return a * a * (3 - 2 * a), 6 * a * (1 - a) / (t1 - t0)


@register_scene("gripper-ball")
def gripper_ball(dt=None, radius: float = 0.04, cells: int = 5, youngs: float = 1e5, poisson: float = 0.4,
                 density: float = 1000.0, mu: float = 0.8, squeeze: float = 0.008, lift: float = 0.1,
                 close_time: float = 0.3, lift_start: float = 0.4, lift_time: float = 0.4,
                 material: str = "neohookean") -> DeformableSceneSpec:
    """A two-finger gripper pinches a soft ball resting on the ground and lifts it: two rigid finger
    pads (boxes 2 × 6 × 6 cm, friction ``mu``) close along y until each has pressed ``squeeze`` [m]
    into the ball (over ``close_time`` [s]), then rise by ``lift`` [m] (from ``lift_start`` over
    ``lift_time``) and hold. The pads are kinematic obstacles with velocities (one-way coupling):
    the ball's contact forces on each pad are :meth:`DeformableSimulator.obstacle_forces`."""
    if not 0 < squeeze < radius:
        raise ValueError(f"squeeze must lie in (0, radius) [m], got {squeeze}")
    mesh = sphere_tet_mesh(radius, cells, center=(0.0, 0.0, radius))
    body = DeformableBody("ball", mesh, make_material(material, youngs, poisson), density=density)
    half = (0.03, 0.01, 0.03)  # pad half extents [m]: thin along y, the closing direction
    start_gap = 0.01  # clearance of each pad from the ball at t = 0
    travel = start_gap + squeeze

    def finger(side: float):
        def motion(t):
            s, ds = _smoothstep(t, 0.0, close_time)
            z, dz = _smoothstep(t, lift_start, lift_start + lift_time)
            return (np.array([0.0, -side * travel * s, lift * z]), np.array([0.0, -side * travel * ds, lift * dz]))
        return motion

    pads = tuple(BoxObstacle(name=f"finger_{'left' if side > 0 else 'right'}", mu=mu,
                             center=(0.0, side * (radius + start_gap + half[1]), radius), half_extents=half,
                             motion=finger(side)) for side in (1.0, -1.0))
    world = DeformableWorld((body,), pads + (HalfSpace(name="ground", mu=0.5),))
    return DeformableSceneSpec(world, 0.01 if dt is None else dt,
                               info={"lift": lift, "lift_end": lift_start + lift_time, "radius": radius,
                                     "mass": float(body.node_masses().sum())})


@register_scene("panda-pinch")
def panda_pinch(dt=None, radius: float = 0.03, cells: int = 5, youngs: float = 1e5, poisson: float = 0.4,
                density: float = 1000.0, mu: float = 0.8, squeeze: float = 0.006, lift: float = 0.1,
                close_time: float = 0.3, lift_start: float = 0.4, lift_time: float = 0.4, center=(0.45, 0.0),
                material: str = "neohookean", coupling: str = "two-way") -> DeformableSceneSpec:
    """A Franka Panda (example-robot-data URDF) pinches a soft ball on the ground from above between
    its two fingertip pads and lifts it by ``lift`` [m] along a planned joint trajectory
    (``info["trajectory"]``, q(t)); the fingers are commanded to close to ``radius − squeeze``.

    ``coupling="two-way"`` (default): the Panda is a :class:`~.coupling.CoupledRobot`, its joint
    PD actuators (gravity-compensated, :data:`~.robot_obstacles.PANDA_KP`) track the trajectory and
    the pads' contact rows act on its dynamics: the ball pushes the fingers open (their deflection
    times the finger stiffness is the squeeze force) and hangs on the arm's actuators; the robot's
    state is ``traj.q``/``traj.v`` (9 columns), its torques ``sim.robot_torques("panda")``.
    ``coupling="one-way"``: the pads are kinematic obstacles following the trajectory's forward
    kinematics (:mod:`.robot_obstacles`), the fingers close fully whatever the ball does."""
    from .robot_obstacles import panda_coupled_robot, panda_finger_pads, panda_pinch_trajectory

    if coupling not in ("two-way", "one-way"):
        raise ValueError(f"coupling must be 'two-way' or 'one-way', got {coupling!r}")
    c = np.array([float(center[0]), float(center[1]), radius])
    traj = panda_pinch_trajectory(c, radius, squeeze, lift, close_time, lift_start, lift_time)
    mesh = sphere_tet_mesh(radius, cells, center=tuple(c))
    body = DeformableBody("ball", mesh, make_material(material, youngs, poisson), density=density)
    ground = HalfSpace(name="ground", mu=0.5)
    if coupling == "one-way":
        world = DeformableWorld((body,), panda_finger_pads(traj, mu) + (ground,))
    else:
        world = DeformableWorld((body,), (ground,), robots=(panda_coupled_robot(traj, mu),))
    return DeformableSceneSpec(world, 0.01 if dt is None else dt,
                               info={"lift": lift, "radius": radius, "mass": float(body.node_masses().sum()),
                                     "trajectory": traj, "coupling": coupling})
