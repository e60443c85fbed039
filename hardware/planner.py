"""Planners for the deploy loop: state in, impedance target out.

:class:`Planner` is the protocol the loop calls every tick. :class:`CirclePlanner` is the
reference target generator used until the C3 planner for ``franka-ball`` is wired in: it drives
the end effector around the task's circle (centre (0.55, 0), radius 0.1 m, seed 003 §VII-A)
with the paper's lead angle of 20°: the target is the point on the circle 20° ahead of the
end effector's current angle, at a fixed height, in the initial orientation, with zero wrench.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .camera import BallState
from .config import LoadableOptions
from .errors import HardwareValueError
from .franka import RobotState
from .safety import Target

__all__ = ["Planner", "ResettablePlanner", "CirclePlannerOptions", "CirclePlanner"]


class Planner(Protocol):
    """What the deploy loop needs from a controller."""

    def plan(self, robot: RobotState, ball: BallState | None, t: float) -> Target:
        """The impedance target for this tick.

        Args:
            robot: Newest valid robot state.
            ball: Newest valid ball state (None when the loop runs without a camera).
            t: time.monotonic() [s].
        """
        ...


class ResettablePlanner(Planner, Protocol):
    """A planner with internal state to forget after a hold (optional for planners)."""

    def reset(self) -> None:
        """Start over from the measured state at the next :meth:`plan` call."""
        ...


@dataclass(frozen=True)
class CirclePlannerOptions(LoadableOptions):
    """Settings of :class:`CirclePlanner`."""

    center: tuple[float, ...] = (0.55, 0.0)
    """Circle centre (x, y) in the base frame [m]."""
    radius: float = 0.1
    """Circle radius [m]."""
    lead_angle_deg: float = 20.0
    """How far ahead of the end effector the target sits on the circle [deg]."""
    direction: int = 1
    """+1 counter-clockwise (seen from above), -1 clockwise."""
    height: float | None = None
    """Target height z [m]; None keeps the end effector's height at the first tick."""
    max_lead_distance: float = 0.04
    """Largest distance of the target from the end effector [m] while it approaches the
    circle from elsewhere."""
    max_target_speed: float = 0.5
    """Largest speed of the target itself [m/s]: from the first tick (where it starts at the
    end effector) the target moves towards the lead point at most this fast, so a planner
    that starts away from the circle does not step the equilibrium (keep it below the safety
    layer's max_speed)."""
    max_target_step: float = 0.015
    """Largest change of the target per tick [m], whatever the time since the previous one
    (a late tick must not produce a jump; keep it below the safety layer's max_step)."""

    def __post_init__(self) -> None:
        if len(self.center) != 2 or not all(math.isfinite(c) for c in self.center):
            raise HardwareValueError(f"CirclePlannerOptions.center must be 2 finite numbers, got "
                                     f"{self.center!r}")
        if not (self.radius > 0 and self.max_lead_distance > 0 and self.max_target_speed > 0
                and self.max_target_step > 0):
            raise HardwareValueError("CirclePlannerOptions.radius, max_lead_distance [m] and "
                                     "max_target_speed [m/s], max_target_step [m] must be > 0")
        if not 0 < self.lead_angle_deg < 180:
            raise HardwareValueError(f"CirclePlannerOptions.lead_angle_deg must be in (0, 180), "
                                     f"got {self.lead_angle_deg!r}")
        if self.direction not in (1, -1):
            raise HardwareValueError(f"CirclePlannerOptions.direction must be 1 or -1, got "
                                     f"{self.direction!r}")


class CirclePlanner:
    """End-effector circle tracking with a lead angle (reference planner, no C3)."""

    def __init__(self, options: CirclePlannerOptions | None = None):
        self.options = options or CirclePlannerOptions()
        self._z: float | None = self.options.height
        self._q: np.ndarray | None = None
        self._prev: np.ndarray | None = None
        self._prev_t = 0.0

    def reset(self) -> None:
        """After a hold: the next target starts at the end effector again and ramps up."""
        self._prev = None

    def target_on_circle(self, position: np.ndarray) -> np.ndarray:
        """(2,) point on the circle ``lead_angle`` ahead of ``position``'s angle [m]."""
        o = self.options
        c = np.asarray(o.center, dtype=float)
        rel = np.asarray(position, dtype=float)[:2] - c
        theta = math.atan2(rel[1], rel[0]) + o.direction * math.radians(o.lead_angle_deg)
        return c + o.radius * np.array([math.cos(theta), math.sin(theta)])

    def plan(self, robot: RobotState, ball: BallState | None, t: float) -> Target:
        """Target 20° ahead on the circle; see :class:`Planner`."""
        if self._z is None:
            self._z = float(robot.position[2])
        if self._q is None:
            self._q = np.array(robot.quaternion, dtype=float)
        goal = np.array([*self.target_on_circle(robot.position), self._z])
        offset = goal - robot.position
        dist = float(np.linalg.norm(offset))
        if dist > self.options.max_lead_distance:
            goal = robot.position + offset * (self.options.max_lead_distance / dist)
        prev = robot.position if self._prev is None else self._prev
        step = goal - prev
        max_step = min(self.options.max_target_speed * max(t - self._prev_t, 0.0),
                       self.options.max_target_step)
        if self._prev is None:
            max_step = 0.0  # first tick: the target starts at the end effector
        n = float(np.linalg.norm(step))
        if n > max_step:
            goal = prev + step * (max_step / n)
        self._prev, self._prev_t = goal, t
        return Target(goal, self._q.copy(), np.zeros(3), np.zeros(3))
