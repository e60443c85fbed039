"""Rigid obstacles for deformable bodies, as analytic signed distance functions (SDFs).

Each obstacle answers ``query(x, t) -> (phi, normal, velocity)`` for points x (N, 3) at time t:
the signed distance φ [m] (> 0 outside), the outward unit normal ∇φ, and the velocity [m/s] of
the obstacle's material point there (for moving obstacles: the û of seed 004's friction rows
d_f = f·û, and the normal drift n·û of d_n). Obstacles move kinematically (prescribed linear
velocity, or a translation path ``motion(t) -> (displacement, velocity)`` (robot fingers), and a
spin about their own axis for cylinders: the rollers of ``squeeze-ball``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Obstacle", "HalfSpace", "SphereObstacle", "BoxObstacle", "CylinderObstacle"]


def _vec(v, name) -> np.ndarray:
    a = np.asarray(v, float)
    if a.shape != (3,) or not np.isfinite(a).all():
        raise ValueError(f"{name} must be a finite 3-vector, got {v!r}")
    return a


def _unit(v, name) -> np.ndarray:
    a = _vec(v, name)
    n = np.linalg.norm(a)
    if n == 0:
        raise ValueError(f"{name} must be non-zero")
    return a / n


@dataclass(frozen=True)
class Obstacle:
    """Base of the analytic obstacles: ``name``, friction ``mu``, and either a constant linear
    ``velocity`` [m/s] or a translation path ``motion(t) -> (displacement (3,) [m], velocity (3,)
    [m/s])`` from the initial placement (e.g. a robot finger's forward kinematics)."""

    name: str = "obstacle"
    mu: float = 0.5
    velocity: tuple = (0.0, 0.0, 0.0)
    motion: Callable[[float], tuple] | None = None

    def __post_init__(self):
        if not (np.isfinite(self.mu) and self.mu >= 0):
            raise ValueError(f"mu of obstacle {self.name!r} must be >= 0, got {self.mu}")
        object.__setattr__(self, "velocity", _vec(self.velocity, "velocity"))
        if self.motion is not None and not callable(self.motion):
            raise TypeError(f"motion of obstacle {self.name!r} must be callable(t) -> (displacement, velocity)")

    def translation(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(displacement (3,) [m], velocity (3,) [m/s]) of the obstacle at time t [s]."""
        if self.motion is None:
            return t * self.velocity, self.velocity
        d, v = self.motion(float(t))
        return _vec(d, f"motion displacement of {self.name!r}"), _vec(v, f"motion velocity of {self.name!r}")

    def query(self, x: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
        """(φ (N,), normal (N, 3), velocity (N, 3)) at points x (N, 3) and time t [s]."""
        raise NotImplementedError


@dataclass(frozen=True)
class HalfSpace(Obstacle):
    """The half-space n·(x − p) ≤ 0 (a ground plane or a slope): φ = n·(x − p)."""

    normal: tuple = (0.0, 0.0, 1.0)
    point: tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "normal", _unit(self.normal, "normal"))
        object.__setattr__(self, "point", _vec(self.point, "point"))

    def query(self, x, t):
        d, v = self.translation(t)
        phi = (x - (self.point + d)) @ self.normal
        return phi, np.broadcast_to(self.normal, x.shape), np.broadcast_to(v, x.shape)


@dataclass(frozen=True)
class SphereObstacle(Obstacle):
    """A rigid ball of ``radius`` [m] centred at ``center`` + t·velocity."""

    center: tuple = (0.0, 0.0, 0.0)
    radius: float = 0.1

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "center", _vec(self.center, "center"))
        if not self.radius > 0:
            raise ValueError(f"radius must be > 0 [m], got {self.radius}")

    def query(self, x, t):
        off, v = self.translation(t)
        d = x - (self.center + off)
        r = np.linalg.norm(d, axis=1)
        n = d / np.maximum(r, 1e-300)[:, None]
        n[r == 0] = (0.0, 0.0, 1.0)
        return r - self.radius, n, np.broadcast_to(v, x.shape)


def _box_sdf(local: np.ndarray, half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SDF and gradient of the box |x_i| ≤ half_i in its own frame."""
    q = np.abs(local) - half
    out = np.maximum(q, 0.0)
    ro = np.linalg.norm(out, axis=1)
    inside = ro == 0
    phi = np.where(inside, q.max(axis=1), ro)
    g = np.where(inside[:, None], 0.0, out / np.maximum(ro, 1e-300)[:, None])
    k = np.argmax(q, axis=1)
    gi = np.zeros_like(q)
    gi[np.arange(len(q)), k] = 1.0
    g = np.where(inside[:, None], gi, g) * np.where(local < 0, -1.0, 1.0)
    return phi, g


@dataclass(frozen=True)
class BoxObstacle(Obstacle):
    """A rigid box with ``half_extents`` [m], orientation ``rotation`` (3×3) and ``center``."""

    center: tuple = (0.0, 0.0, 0.0)
    half_extents: tuple = (0.1, 0.1, 0.1)
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "center", _vec(self.center, "center"))
        h = _vec(self.half_extents, "half_extents")
        if (h <= 0).any():
            raise ValueError(f"half_extents must be > 0 [m], got {h}")
        object.__setattr__(self, "half_extents", h)
        R = np.asarray(self.rotation, float)
        if R.shape != (3, 3) or not np.allclose(R.T @ R, np.eye(3), atol=1e-9):
            raise ValueError("rotation must be a 3x3 rotation matrix")
        object.__setattr__(self, "rotation", R)

    def query(self, x, t):
        off, v = self.translation(t)
        local = (x - (self.center + off)) @ self.rotation
        phi, g = _box_sdf(local, self.half_extents)
        return phi, g @ self.rotation.T, np.broadcast_to(v, x.shape)


@dataclass(frozen=True)
class CylinderObstacle(Obstacle):
    """A rigid capped cylinder (``radius``, ``half_length`` [m]) along unit ``axis`` through
    ``center``, spinning at ``spin`` [rad/s] about its axis (right-hand rule)."""

    center: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (0.0, 1.0, 0.0)
    radius: float = 0.05
    half_length: float = 1.0
    spin: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "center", _vec(self.center, "center"))
        object.__setattr__(self, "axis", _unit(self.axis, "axis"))
        if not (self.radius > 0 and self.half_length > 0):
            raise ValueError("radius and half_length must be > 0 [m]")

    def query(self, x, t):
        off, v = self.translation(t)
        rel = x - (self.center + off)
        a = rel @ self.axis
        radial = rel - a[:, None] * self.axis
        r = np.linalg.norm(radial, axis=1)
        er = radial / np.maximum(r, 1e-300)[:, None]
        d = np.stack([r - self.radius, np.abs(a) - self.half_length], 1)
        out = np.maximum(d, 0.0)
        ro = np.linalg.norm(out, axis=1)
        inside = ro == 0
        phi = np.where(inside, d.max(axis=1), ro)
        g2 = np.where(inside[:, None], (d == d.max(axis=1, keepdims=True)).astype(float),
                      out / np.maximum(ro, 1e-300)[:, None])
        n = g2[:, :1] * er + g2[:, 1:] * np.sign(a)[:, None] * self.axis
        n /= np.maximum(np.linalg.norm(n, axis=1), 1e-300)[:, None]
        vel = v + self.spin * np.cross(self.axis, radial)
        return phi, n, vel
