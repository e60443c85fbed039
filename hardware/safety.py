"""Safety layer between the controller and the robot.

Every command passes :meth:`SafetyLayer.filter`, which, in this order,

1. rejects a non-finite target (replaced by holding the measured pose),
2. limits the distance of the equilibrium from the measured end effector (``max_offset``:
   with stiffness K this bounds the impedance force to about Λ K ``max_offset``),
3. limits the change from the previous command: per command (``max_step``) and per second
   (``max_speed``, using the real time between commands),
4. clamps the target into the workspace box (always last, so the result is inside the box),
5. clamps the desired force and torque norms.

:meth:`SafetyLayer.watchdog` trips when the robot state or the camera data are older than
``stale_after`` (default 50 ms): the loop must then stop commanding and hold. Every
intervention is an :class:`Intervention` record (kept in ``records``) and a ``logging``
warning on the ``hardware.safety`` logger.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from .config import LoadableOptions
from .errors import HardwareValueError

__all__ = ["SafetyOptions", "InterventionKind", "Intervention", "Target", "SafetyLayer"]

LOGGER = logging.getLogger("hardware.safety")


@dataclass(frozen=True)
class SafetyOptions(LoadableOptions):
    """Limits of the safety layer. Lengths in [m], times in [s], forces in [N]."""

    workspace_min: tuple[float, ...] = (0.30, -0.35, 0.02)
    """Lower corner of the workspace box (x, y, z) in the base frame [m]."""
    workspace_max: tuple[float, ...] = (0.80, 0.35, 0.45)
    """Upper corner of the workspace box [m]."""
    max_speed: float = 0.6
    """Largest commanded target speed, ``|Δtarget| / Δt`` between commands [m/s]."""
    max_step: float = 0.02
    """Largest change of the target between two commands [m]."""
    max_offset: float = 0.06
    """Largest distance of the target from the measured end effector [m]."""
    max_force: float = 30.0
    """Largest desired force norm [N]."""
    max_torque: float = 3.0
    """Largest desired torque norm [N m]."""
    stale_after: float = 0.05
    """Watchdog threshold: robot state or camera data older than this trip it [s]."""

    def __post_init__(self) -> None:
        lo, hi = np.asarray(self.workspace_min, float), np.asarray(self.workspace_max, float)
        if lo.shape != (3,) or hi.shape != (3,) or not np.all(np.isfinite(lo)) or not np.all(
                np.isfinite(hi)) or np.any(lo >= hi):
            raise HardwareValueError(f"SafetyOptions.workspace_min/max must be 3 finite numbers "
                                     f"each with min < max, got {self.workspace_min} and "
                                     f"{self.workspace_max}")
        for name in ("max_speed", "max_step", "max_offset", "max_force", "max_torque",
                     "stale_after"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise HardwareValueError(f"SafetyOptions.{name} must be a positive finite "
                                         f"number, got {v!r}")


class InterventionKind(IntEnum):
    """Why the safety layer changed or stopped a command."""

    INVALID_TARGET = 1
    """Non-finite target or wrench: replaced by holding the measured pose."""
    OFFSET = 2
    """Target too far from the measured end effector."""
    STEP = 3
    """Target moved more than max_step since the previous command."""
    SPEED = 4
    """Target moved faster than max_speed."""
    WORKSPACE = 5
    """Target outside the workspace box."""
    WRENCH = 6
    """Desired force or torque above its limit."""
    WATCHDOG = 7
    """Robot state or camera data stale: commanding stopped, hold sent."""
    SHUTDOWN = 8
    """Operator interrupt or loss of connection: final hold sent."""


@dataclass(frozen=True)
class Intervention:
    """One logged intervention."""

    t: float
    """time.monotonic() [s]."""
    kind: InterventionKind
    detail: str
    requested: tuple[float, ...]
    """What the controller asked for (position or wrench), empty if not applicable."""
    applied: tuple[float, ...]
    """What was sent instead."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON logs."""
        return {"t": self.t, "kind": self.kind.name.lower(), "detail": self.detail,
                "requested": list(self.requested), "applied": list(self.applied)}


@dataclass(frozen=True)
class Target:
    """An impedance target: equilibrium pose and desired wrench, base frame."""

    position: np.ndarray
    """(3,) equilibrium position [m]."""
    quaternion: np.ndarray
    """(4,) equilibrium orientation (x, y, z, w)."""
    force: np.ndarray
    """(3,) desired end-effector force [N] (feed-forward of the contact force λ_d)."""
    torque: np.ndarray
    """(3,) desired torque [N m]."""


def _clip_norm(v: np.ndarray, limit: float) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v if n <= limit else v * (limit / n)


class SafetyLayer:
    """Filters commands and watches data freshness; keeps a record of every intervention."""

    def __init__(self, options: SafetyOptions | None = None,
                 nominal_period: float | None = None):
        """Args:
            options: Limits.
            nominal_period: The control period [s]; the speed limit uses
                max(actual time between commands, nominal_period) so that a late tick followed
                by a prompt one is not mistaken for a speed-up.
        """
        self.options = options or SafetyOptions()
        self.nominal_period = nominal_period
        self._lo = np.asarray(self.options.workspace_min, dtype=float)
        self._hi = np.asarray(self.options.workspace_max, dtype=float)
        self.records: list[Intervention] = []
        self.watchdog_trips = 0
        self.tripped = False
        self._prev: np.ndarray | None = None
        self._prev_t: float | None = None

    @property
    def interventions(self) -> int:
        """Number of command interventions (watchdog trips and shutdown holds excluded)."""
        return sum(r.kind not in (InterventionKind.WATCHDOG, InterventionKind.SHUTDOWN)
                   for r in self.records)

    def record(self, t: float, kind: InterventionKind, detail: str,
               requested: np.ndarray | tuple = (), applied: np.ndarray | tuple = ()) -> None:
        """Append an intervention record and log it."""
        rec = Intervention(t, kind, detail, tuple(float(x) for x in requested),
                           tuple(float(x) for x in applied))
        self.records.append(rec)
        level = logging.INFO if kind == InterventionKind.SHUTDOWN else logging.WARNING
        LOGGER.log(level, "safety %s: %s", kind.name.lower(), detail)

    def in_workspace(self, p: np.ndarray) -> bool:
        """True if ``p`` (3,) lies in the workspace box."""
        return bool(np.all(p >= self._lo) and np.all(p <= self._hi))

    def reset(self, position: np.ndarray | None = None, t: float | None = None) -> None:
        """Forget the previous command (e.g. after a hold): the next one is limited against
        ``position`` (usually the measured pose) if given."""
        self._prev = None if position is None else np.array(position, dtype=float)
        self._prev_t = t

    def filter(self, target: Target, measured_position: np.ndarray, t: float) -> Target:
        """The command to send for ``target``, given the measured end-effector position.

        Args:
            target: What the planner asked for.
            measured_position: (3,) measured end-effector position [m].
            t: time.monotonic() now [s].

        Returns:
            A target satisfying every limit (equal to ``target`` when no limit is hit).
        """
        o = self.options
        meas = np.asarray(measured_position, dtype=float)
        p = np.asarray(target.position, dtype=float)
        q = np.asarray(target.quaternion, dtype=float)
        f = np.asarray(target.force, dtype=float)
        m = np.asarray(target.torque, dtype=float)
        if not (p.shape == (3,) and q.shape == (4,) and f.shape == (3,) and m.shape == (3,)
                and np.all(np.isfinite(p)) and np.all(np.isfinite(q)) and np.all(np.isfinite(f))
                and np.all(np.isfinite(m)) and float(np.linalg.norm(q)) > 0.5):
            hold = np.clip(meas, self._lo, self._hi)
            self.record(t, InterventionKind.INVALID_TARGET, "non-finite or malformed target; "
                        "holding the measured pose", np.ravel(p)[:3], hold)
            q_hold = q / np.linalg.norm(q) if (q.shape == (4,) and np.all(np.isfinite(q))
                                                and np.linalg.norm(q) > 0.5) else None
            self._prev, self._prev_t = hold, t
            return Target(hold, q_hold if q_hold is not None else np.array([1.0, 0, 0, 0]),
                          np.zeros(3), np.zeros(3))
        q = q / np.linalg.norm(q)
        requested = p.copy()
        offset = p - meas
        if np.linalg.norm(offset) > o.max_offset:
            p = meas + _clip_norm(offset, o.max_offset)
            self.record(t, InterventionKind.OFFSET, f"target {np.linalg.norm(offset):.4f} m from "
                        f"the end effector > max_offset {o.max_offset} m", requested, p)
        if self._prev is not None:
            delta = p - self._prev
            if np.linalg.norm(delta) > o.max_step:
                before = p
                p = self._prev + _clip_norm(delta, o.max_step)
                self.record(t, InterventionKind.STEP, f"step {np.linalg.norm(delta):.4f} m > "
                            f"max_step {o.max_step} m", before, p)
            if self._prev_t is not None and t > self._prev_t:
                delta = p - self._prev
                dt = max(t - self._prev_t, self.nominal_period or 0.0)
                if np.linalg.norm(delta) > o.max_speed * dt:
                    before = p
                    p = self._prev + _clip_norm(delta, o.max_speed * dt)
                    self.record(t, InterventionKind.SPEED, f"speed {np.linalg.norm(delta) / dt:.3f}"
                                f" m/s > max_speed {o.max_speed} m/s", before, p)
        if not self.in_workspace(p):
            before = p
            p = np.clip(p, self._lo, self._hi)
            self.record(t, InterventionKind.WORKSPACE, "target outside the workspace box",
                        before, p)
        if np.linalg.norm(f) > o.max_force:
            before = f
            f = _clip_norm(f, o.max_force)
            self.record(t, InterventionKind.WRENCH, f"force {np.linalg.norm(before):.2f} N > "
                        f"max_force {o.max_force} N", before, f)
        if np.linalg.norm(m) > o.max_torque:
            before = m
            m = _clip_norm(m, o.max_torque)
            self.record(t, InterventionKind.WRENCH, f"torque {np.linalg.norm(before):.2f} N m > "
                        f"max_torque {o.max_torque} N m", before, m)
        self._prev, self._prev_t = p, t
        return Target(p, q, f, m)

    def watchdog(self, t: float, state_age: float, camera_age: float) -> bool:
        """Check data freshness; True while the loop must hold.

        A trip (fresh -> stale) is recorded once; recovery (stale -> fresh) is logged and
        :meth:`reset` forgets the previous command so commanding resumes from the measured pose.

        Args:
            t: time.monotonic() now [s].
            state_age: seconds since the newest robot state arrived (inf if none yet).
            camera_age: seconds since the newest camera detection arrived (inf if none yet).
        """
        limit = self.options.stale_after
        stale = state_age > limit or camera_age > limit
        if stale and not self.tripped:
            which = " and ".join(name for name, age in (("robot state", state_age),
                                                         ("camera", camera_age)) if age > limit)
            self.tripped = True
            self.watchdog_trips += 1
            self.record(t, InterventionKind.WATCHDOG, f"{which} stale (state {state_age * 1e3:.0f}"
                        f" ms, camera {camera_age * 1e3:.0f} ms > {limit * 1e3:.0f} ms): holding")
        elif not stale and self.tripped:
            self.tripped = False
            self.reset()
            LOGGER.warning("watchdog: data fresh again, resuming")
        return stale
