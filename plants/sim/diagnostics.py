"""Run diagnostics of the simulator: solver non-convergence and physical plausibility.

A contact solver that runs out of budget returns its best iterate (status ``MAX_ITERATIONS`` or
``STAGNATED``); the simulator advances on it unless it runs ``strict`` and counts such steps in
``traj.stats``. At the end of a run it emits at most one :class:`NonConvergenceWarning` (how many
steps, the worst residual, the first step) and at most one :class:`PlausibilityWarning`.

Plausibility (:class:`PlausibilityOptions`), checked every step:

* **deep penetration**: a contact overlaps by more than ``penetration_fraction`` × the size of
  the smaller body involved (a body's size: the largest inscribed half-size among its collision
  geometries: a sphere's radius, a box's smallest half extent; a mesh's bounding radius);
* **energy growth** (scenes without a controller, every ``energy_every``-th sample): the mechanical
  energy rises above its starting value by more than ``energy_fraction`` × max(|E₀|, W ℓ) (W the
  total weight, ℓ the largest body size): a passive scene cannot gain energy (the schemes and SAP
  are dissipative, seed 001 §IV);

Deep penetration with a converged solver is the signature of seed 001 §VIII: with near-rigid
contact SAP's regularization R_n = β² w_i / (4π²) (eq. 29) makes the penetration of a resting
contact ∝ δt², and the Delassus estimate w_i sizes a contact by the light body while it carries
the heavy stack above it. The suggested δt assumes that δt² scaling: it brings the deepest
overlap to ``target_fraction`` × the body size.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntFlag

import numpy as np

from .geometry import Box, HalfSpace, Sphere

__all__ = [
    "SimulationWarning",
    "NonConvergenceWarning",
    "PlausibilityWarning",
    "PlausibilityFlag",
    "PlausibilityOptions",
    "ConstraintFallbackWarning",
    "body_sizes",
    "shape_size",
    "suggest_dt",
    "suggest_margin_dt",
]


class SimulationWarning(UserWarning):
    """Root of the simulator's run warnings."""


class NonConvergenceWarning(SimulationWarning):
    """Some steps of a run advanced on a contact solve that did not meet its stopping criterion."""


class PlausibilityWarning(SimulationWarning):
    """A run produced a physically implausible state (deep penetration, energy growth)."""


class ConstraintFallbackWarning(SimulationWarning):
    """The solver cannot take bounded joint-space constraints (only SAP can): the scene's joint dry
    friction is left out and its effort-limited PD actuators are evaluated explicitly."""


class PlausibilityFlag(IntFlag):
    """Per-step flags in ``traj.stats["flags"]``."""

    NONE = 0
    NOT_CONVERGED = 1
    """The contact solve did not meet its stopping criterion (best iterate used)."""
    DEEP_PENETRATION = 2
    """A contact at the step's start overlaps deeper than the allowance."""
    ENERGY_GROWTH = 4
    """The mechanical energy after the step exceeds the start's beyond the allowance."""


@dataclass(frozen=True)
class PlausibilityOptions:
    """Thresholds of the plausibility checks (see the module docstring).

    Attributes:
        penetration_fraction: deep when the overlap exceeds this fraction of the smaller body's
            size (0.1: 5 mm for the 10 cm cubes; resting contacts at the shipped δt overlap by
            1e-7 .. 1e-5 m).
        target_fraction: the suggested δt aims at overlaps of this fraction of the body size.
        energy_fraction: allowed energy rise, relative to max(|E₀|, W ℓ) (1: a blow-up, not the
            bounded oscillation of symplectic Euler, measured at 0.11 × on spring-cylinder).
        check_energy: evaluate the energy (scenes without a controller only).
        energy_every: at every this many samples of the trajectory and the last (flags and counts
            refer to the sampled steps; 2 µs a sample on cube-rest-5).
        hull_check_every: check the overlap of body hulls (see ``Simulator``; a box sinking
            through another, which its corner spheres miss) every this many steps (0: never). A
            check costs 70-140 µs on cube-rest-5 (coal GJK/EPA on the adjacent boxes), a quarter
            to half of a step; a box takes many steps to sink through another (heavy-stack: 6 mm
            per step at δt = 8.3 ms) and stays inside it, so every 20th step catches it. Measured
            on cube-rest-5 (best of 5): 273 µs per step without checks, 288 with them and no hull
            check, 300 every 20th step, 308 every 10th.
    """

    penetration_fraction: float = 0.1
    target_fraction: float = 1e-3
    energy_fraction: float = 1.0
    check_energy: bool = True
    energy_every: int = 10
    hull_check_every: int = 20

    def __post_init__(self) -> None:
        for name in ("penetration_fraction", "target_fraction", "energy_fraction"):
            val = getattr(self, name)
            if not (np.isfinite(val) and val > 0):
                raise ValueError(f"{name} must be finite and > 0, got {val!r}")
        if not self.target_fraction < self.penetration_fraction:
            raise ValueError("target_fraction must be < penetration_fraction")
        if not isinstance(self.check_energy, (bool, np.bool_)):
            raise TypeError(f"check_energy must be a bool, got {self.check_energy!r}")
        for name, low in (("hull_check_every", 0), ("energy_every", 1)):
            val = getattr(self, name)
            if isinstance(val, (bool, np.bool_)) or not isinstance(val, (int, np.integer)):
                raise TypeError(f"{name} must be an int, got {val!r}")
            if val < low:
                raise ValueError(f"{name} must be >= {low}, got {val}")


def shape_size(shape) -> float:
    """Inscribed half-size of one collision shape [m] (inf for a half-space)."""
    if isinstance(shape, Sphere):
        return float(shape.radius)
    if isinstance(shape, Box):
        return float(min(shape.half))
    if isinstance(shape, HalfSpace):
        return float("inf")
    return float(getattr(shape, "bounding_radius", np.inf))


def body_sizes(geometries) -> np.ndarray:
    """(n_geoms,) the size of the body each geometry belongs to: the largest inscribed half-size
    among the geometries of its joint (corner spheres inside a box take the box's); anchored
    geometries (joint 0) keep their own."""
    own = np.array([shape_size(g.shape) for g in geometries], dtype=float)
    joints = np.array([g.joint for g in geometries], dtype=np.int64)
    out = own.copy()
    for j in np.unique(joints[joints > 0]):  # loop over bodies, not contacts
        sel = joints == j
        out[sel] = own[sel].max()
    return out


def suggest_dt(dt: float, depth: float, size: float, target_fraction: float) -> float:
    """δt that brings an overlap ``depth`` to ``target_fraction`` × ``size``, assuming depth ∝ δt²
    (seed 001 eq. 29), rounded down to 1, 2 or 5 × 10^k [s]."""
    ideal = dt * np.sqrt(target_fraction * size / max(depth, 1e-300))
    ideal = min(ideal, dt / 2)
    exp = np.floor(np.log10(ideal))
    for m in (5.0, 2.0, 1.0):
        if m * 10**exp <= ideal:
            return float(m * 10**exp)
    return float(10**exp)


def suggest_margin_dt(dt: float, depth: float, margin: float) -> float:
    """δt at which a contact that appeared ``depth`` deep within one step (it closed more than
    ``margin`` + ``depth`` in δt) would have been detected: δt · margin / (margin + depth), rounded
    down to 1, 2 or 5 × 10^k [s]."""
    ideal = dt * margin / (margin + depth) if margin > 0 else dt / 2
    exp = np.floor(np.log10(ideal))
    for m in (5.0, 2.0, 1.0):
        if m * 10**exp <= ideal:
            return float(m * 10**exp)
    return float(10**exp)

