"""A world of deformable bodies, rigid analytic obstacles, bilateral attachments and robots
coupled two-way through the contact rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .body import DeformableBody
from .obstacles import Obstacle

__all__ = ["Attachment", "DeformableWorld"]


@dataclass(frozen=True)
class Attachment:
    """Bilateral position rows (seed 004 Eq. 15b) holding nodes of a body at targets.

    Attributes:
        body: name of the body.
        nodes: node indices (k,).
        target: ``target(t, X0) -> (k, 3)`` positions [m] at time t [s] given the nodes' initial
            positions X0 (k, 3); default: X0 (a pin).
        compliance: e = 1/stiffness [m/N] of each row (0: a hard constraint).
    """

    body: str
    nodes: np.ndarray | tuple
    target: Callable[[float, np.ndarray], np.ndarray] | None = None
    compliance: float = 0.0

    def __post_init__(self):
        nodes = np.unique(np.asarray(self.nodes, dtype=np.int64).reshape(-1))
        if nodes.size == 0:
            raise ValueError("an attachment needs at least one node")
        if not (np.isfinite(self.compliance) and self.compliance >= 0):
            raise ValueError(f"compliance must be >= 0 [m/N], got {self.compliance}")
        object.__setattr__(self, "nodes", nodes)


@dataclass(frozen=True)
class DeformableWorld:
    """Deformable bodies, kinematic obstacles, attachments, gravity [m/s²], and robots
    (:class:`~plants.sim.deformable.coupling.CoupledRobot`) whose dynamics are coupled two-way with
    the bodies through the contact rows."""

    bodies: tuple
    obstacles: tuple = ()
    attachments: tuple = ()
    gravity: np.ndarray | tuple = (0.0, 0.0, -9.81)
    info: dict = field(default_factory=dict)
    robots: tuple = ()

    def __post_init__(self):
        bodies = tuple(self.bodies)
        if not bodies or not all(isinstance(b, DeformableBody) for b in bodies):
            raise TypeError("bodies must be a non-empty sequence of DeformableBody")
        names = [b.name for b in bodies]
        if len(set(names)) != len(names):
            raise ValueError(f"body names must be unique, got {names}")
        obstacles = tuple(self.obstacles)
        if not all(isinstance(o, Obstacle) for o in obstacles):
            raise TypeError("obstacles must be Obstacle instances")
        atts = tuple(self.attachments)
        for a in atts:
            if not isinstance(a, Attachment):
                raise TypeError("attachments must be Attachment instances")
            if a.body not in names:
                raise ValueError(f"attachment names unknown body {a.body!r}; bodies: {names}")
            body = bodies[names.index(a.body)]
            if a.nodes.max() >= body.n_nodes:
                raise ValueError(f"attachment nodes of {a.body!r} must lie in [0, {body.n_nodes})")
            if np.intersect1d(a.nodes, body.pinned).size:
                raise ValueError(f"attachment nodes of {a.body!r} must not be pinned (kinematic) nodes")
        from .coupling import CoupledRobot

        robots = tuple(self.robots)
        if not all(isinstance(r, CoupledRobot) for r in robots):
            raise TypeError("robots must be CoupledRobot instances")
        keys = [ob.name for ob in obstacles] + [s.name for r in robots for s in r.shapes]
        if robots and len(set(keys)) != len(keys):
            raise ValueError(f"obstacle and robot link-box names must be unique, got {keys}")
        g = np.asarray(self.gravity, float)
        if g.shape != (3,) or not np.isfinite(g).all():
            raise ValueError(f"gravity must be a finite 3-vector [m/s^2], got {self.gravity!r}")
        object.__setattr__(self, "bodies", bodies)
        object.__setattr__(self, "obstacles", obstacles)
        object.__setattr__(self, "attachments", atts)
        object.__setattr__(self, "gravity", g)
        object.__setattr__(self, "robots", robots)

    def body(self, name: str) -> DeformableBody:
        for b in self.bodies:
            if b.name == name:
                return b
        raise KeyError(f"no body {name!r}; bodies: {[b.name for b in self.bodies]}")
