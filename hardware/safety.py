"""Safety layer between the controller and the robot.

Every command that reaches the robot is a :class:`SafeCommand`, and only the safety layer makes
them: :meth:`SafetyLayer.filter` for the planner's targets and :meth:`SafetyLayer.hold` for
holds (watchdog, shutdown, errors); :class:`~hardware.franka.FrankaAdapter` refuses anything
else. :meth:`SafetyLayer.filter`, in this order,

1. rejects a non-finite target (replaced by a :meth:`~SafetyLayer.hold`),
2. limits the distance of the equilibrium from the measured end effector (``max_offset``:
   with stiffness K this bounds the impedance force to about Λ K ``max_offset``),
3. limits the change from the previous command: per command (``max_step``) and per second
   (``max_speed``, using the real time between commands),
4. clamps the target into the workspace box (always last, so the result is inside the box),
5. clamps the desired force and torque norms,
6. limits the rotation of the commanded orientation from the previous command
   (``max_rotation_step``, along the shortest arc).

A hold is never an unfiltered measurement: it is the measured position clamped into the
workspace box and moved at most ``max_step`` from the last safe command (so a spoofed or
corrupt measurement cannot move the equilibrium further than one ordinary command could),
with the last commanded orientation and zero wrench. Without a finite measurement it is the
last safe command.

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

__all__ = ["SafetyOptions", "InterventionKind", "Intervention", "Target", "SafeCommand",
           "SafetyLayer"]

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
    max_rotation_step: float = 0.05
    """Largest rotation of the commanded orientation between two commands [rad]."""

    def __post_init__(self) -> None:
        lo, hi = np.asarray(self.workspace_min, float), np.asarray(self.workspace_max, float)
        if lo.shape != (3,) or hi.shape != (3,) or not np.all(np.isfinite(lo)) or not np.all(
                np.isfinite(hi)) or np.any(lo >= hi):
            raise HardwareValueError(f"SafetyOptions.workspace_min/max must be 3 finite numbers "
                                     f"each with min < max, got {self.workspace_min} and "
                                     f"{self.workspace_max}")
        for name in ("max_speed", "max_step", "max_offset", "max_force", "max_torque",
                     "stale_after", "max_rotation_step"):
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
    HOLD = 9
    """A hold had to be changed: measured pose outside the box, or too far from the last
    safe command, or no finite pose to hold at all."""
    ROBOT_FAULT = 10
    """The robot reported a fault (robot_mode other than IDLE/MOVE, or an error flag):
    commanding stopped."""
    ROTATION = 11
    """Commanded orientation rotated more than max_rotation_step since the previous command."""


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


@dataclass(frozen=True)
class SafeCommand(Target):
    """A :class:`Target` made by :class:`SafetyLayer` (``filter`` or ``hold``): inside every
    limit. The robot adapters send nothing else (a type check against accidents, not a
    cryptographic proof)."""


_Q_FALLBACK = np.array([1.0, 0.0, 0.0, 0.0])  # tool pointing down; used only when no valid
# orientation (target, previous command or measurement) exists at all


def _unit_quaternion(q: Any) -> np.ndarray | None:
    """``q`` (4,) normalised, or None if it is malformed, non-finite or far from unit."""
    try:
        q = np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        return None
    if q.shape != (4,) or not np.all(np.isfinite(q)):
        return None
    n = float(np.linalg.norm(q))
    return q / n if 0.5 < n < 1.5 else None


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
        self._prev_q: np.ndarray | None = None

    @property
    def interventions(self) -> int:
        """Number of interventions on the planner's commands (watchdog trips, holds, shutdown
        and robot faults are recorded but not counted here)."""
        return sum(r.kind not in (InterventionKind.WATCHDOG, InterventionKind.SHUTDOWN,
                                  InterventionKind.HOLD, InterventionKind.ROBOT_FAULT)
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

    @property
    def last_command(self) -> SafeCommand | None:
        """Position and orientation of the last safe command (zero wrench), None before it."""
        if self._prev is None:
            return None
        return SafeCommand(self._prev.copy(), (self._prev_q if self._prev_q is not None
                                               else _Q_FALLBACK).copy(), np.zeros(3), np.zeros(3))

    def reset(self, position: np.ndarray | None = None, t: float | None = None,
              quaternion: np.ndarray | None = None) -> None:
        """Forget the previous command (e.g. after a hold): the next one is limited against
        ``position`` (usually the measured pose, clamped into the box) if given.

        Args:
            position: (3,) reference for the step limits [m], or None.
            t: time.monotonic() of that reference [s] (None: no speed limit on the next one).
            quaternion: (4,) orientation (x, y, z, w) to hold if no better one is known.
        """
        p = None if position is None else np.asarray(position, dtype=float)
        if p is not None and not (p.shape == (3,) and np.all(np.isfinite(p))):
            p = None
        self._prev = None if p is None else np.clip(p, self._lo, self._hi)
        self._prev_t = t
        q = _unit_quaternion(quaternion) if quaternion is not None else None
        if q is not None:
            self._prev_q = q

    def hold(self, measured_position: np.ndarray, measured_quaternion: np.ndarray | None,
             t: float, why: str = "hold") -> SafeCommand | None:
        """A safe command that keeps the arm where it is, with zero wrench.

        The position is the measured one clamped into the workspace box, then moved at most
        ``max_step`` from the last safe command (if any); without a finite measurement it is
        the last safe command. The orientation is the last commanded one (the measured one
        before any command). Every change is recorded (``hold``).

        Args:
            measured_position: (3,) measured end-effector position [m] (may be anything).
            measured_quaternion: (4,) measured orientation (x, y, z, w), or None.
            t: time.monotonic() now [s].
            why: What the hold is for (in the records).

        Returns:
            The hold, or None when there is no finite pose to hold at all (no measurement and
            no previous command): then nothing may be sent.
        """
        try:
            meas = np.asarray(measured_position, dtype=float)
        except (TypeError, ValueError):
            meas = np.full(3, np.nan)
        finite = meas.shape == (3,) and bool(np.all(np.isfinite(meas)))
        if finite:
            p = np.clip(meas, self._lo, self._hi)
            if not np.array_equal(p, meas):
                self.record(t, InterventionKind.HOLD, f"{why}: measured pose outside the "
                            "workspace box, clamped", meas, p)
        elif self._prev is not None:
            p = self._prev.copy()
            self.record(t, InterventionKind.HOLD, f"{why}: no finite measurement, holding the "
                        "last safe command", (), p)
        else:
            self.record(t, InterventionKind.HOLD, f"{why}: no finite pose to hold; nothing sent")
            return None
        if self._prev is not None:
            delta = p - self._prev
            if np.linalg.norm(delta) > self.options.max_step:
                before = p
                p = self._prev + _clip_norm(delta, self.options.max_step)
                self.record(t, InterventionKind.HOLD, f"{why}: hold {np.linalg.norm(delta):.4f}"
                            f" m from the last safe command > max_step "
                            f"{self.options.max_step} m", before, p)
        p = np.clip(p, self._lo, self._hi)  # (already inside: the box is convex)
        q = self._prev_q  # the last commanded orientation (a measurement could be corrupt)
        if q is None and measured_quaternion is not None:
            q = _unit_quaternion(measured_quaternion)
        if q is None:
            self.record(t, InterventionKind.HOLD, f"{why}: no valid orientation to hold; "
                        "nothing sent")
            return None
        self._prev, self._prev_t, self._prev_q = p, t, q
        return SafeCommand(p, q.copy(), np.zeros(3), np.zeros(3))

    def filter(self, target: Target, measured_position: np.ndarray, t: float,
               measured_quaternion: np.ndarray | None = None) -> SafeCommand | None:
        """The command to send for ``target``, given the measured end-effector position.

        Args:
            target: What the planner asked for.
            measured_position: (3,) measured end-effector position [m].
            t: time.monotonic() now [s].
            measured_quaternion: (4,) measured orientation, used if the target is invalid.

        Returns:
            A command satisfying every limit (equal to ``target`` when no limit is hit); for
            an invalid target, :meth:`hold` (None when there is nothing finite to hold:
            then nothing may be sent).
        """
        o = self.options
        meas = np.asarray(measured_position, dtype=float)
        try:
            p = np.asarray(target.position, dtype=float)
            q = np.asarray(target.quaternion, dtype=float)
            f = np.asarray(target.force, dtype=float)
            m = np.asarray(target.torque, dtype=float)
        except (TypeError, ValueError, AttributeError):
            p = q = f = m = np.full(1, np.nan)
        q_unit = _unit_quaternion(q)
        meas_ok = meas.shape == (3,) and bool(np.all(np.isfinite(meas)))
        if not (p.shape == (3,) and f.shape == (3,) and m.shape == (3,) and meas_ok
                and np.all(np.isfinite(p)) and np.all(np.isfinite(f)) and np.all(np.isfinite(m))
                and q_unit is not None):
            self.record(t, InterventionKind.INVALID_TARGET, "non-finite or malformed target "
                        "or measurement; holding", np.ravel(p)[:3])
            q_meas = measured_quaternion if q_unit is None else q_unit
            return self.hold(meas, q_meas, t, "invalid target")
        q = q_unit
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
        if self._prev_q is not None:
            q = self._limit_rotation(q, t)
        self._prev, self._prev_t, self._prev_q = p, t, q
        return SafeCommand(p, q, f, m)

    def _limit_rotation(self, q: np.ndarray, t: float) -> np.ndarray:
        """``q`` rotated back towards the previous command's orientation so that the rotation
        between them is at most ``max_rotation_step`` (slerp on the shortest arc)."""
        assert self._prev_q is not None
        q0 = self._prev_q
        d = float(q0 @ q)
        if d < 0.0:  # q and -q are the same rotation: take the short way
            q, d = -q, -d
        angle = 2.0 * math.acos(min(1.0, d))
        limit = self.options.max_rotation_step
        if angle <= limit:
            return q
        half, frac = angle / 2.0, limit / angle
        out = (math.sin((1 - frac) * half) * q0 + math.sin(frac * half) * q) / math.sin(half)
        out /= np.linalg.norm(out)
        self.record(t, InterventionKind.ROTATION, f"rotation {angle:.3f} rad > "
                    f"max_rotation_step {limit} rad", q, out)
        return out

    def watchdog(self, t: float, state_age: float, camera_age: float) -> bool:
        """Check data freshness; True while the loop must hold.

        A trip (fresh -> stale) is recorded once; recovery (stale -> fresh) is logged and
        forgets the *time* of the previous command (no speed limit across the gap), not its
        position: the first command after a hold is still at most ``max_step`` from it.

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
            self._prev_t = None
            LOGGER.warning("watchdog: data fresh again, resuming")
        return stale
