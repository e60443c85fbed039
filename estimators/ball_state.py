"""The ball state estimate shared by the camera tracker and the simulator's emulated vision."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

__all__ = ["BallStatus", "BallState"]


class BallStatus(IntEnum):
    """Outcome of one estimator step."""

    OK = 0
    """Updated from at least one accepted measurement this step."""
    INITIALIZING = 1
    """First accepted measurement: the position is valid, velocity and angular velocity are
    not estimated yet (zero by convention, flagged by this status)."""
    PREDICTED = 2
    """No accepted measurement this step; the state is extrapolated (constant velocity) for at
    most ``max_coast_time``."""
    LOST = 3
    """No accepted measurement for longer than ``max_coast_time``; arrays are NaN."""
    NOT_INITIALIZED = 4
    """No measurement accepted yet; arrays are NaN."""
    INCONSISTENT = 5
    """Cameras disagree and nothing decides which is right (two cameras, no track); arrays
    are NaN if there is no track, else the prediction is returned."""

    @property
    def valid(self) -> bool:
        """True when the position can be used (OK, INITIALIZING, PREDICTED)."""
        return self in (BallStatus.OK, BallStatus.INITIALIZING, BallStatus.PREDICTED)


@dataclass(frozen=True)
class BallState:
    """Estimated translational and rotational state of a ball, world frame.

    Attributes:
        t: time of the estimate [s].
        position: (3,) centre [m].
        velocity: (3,) linear velocity [m/s].
        angular_velocity: (3,) angular velocity [rad/s] (from rolling without slipping,
            ω = n × v / r).
        orientation: (4,) unit quaternion (w, x, y, z), body to world, integrated from ω
            starting at identity.
        angle: (3,) rotation vector ∫ω dt [rad] (the integrated angle about each world axis).
        status: :class:`BallStatus`.
        n_measurements: cameras (or measurements) fused this step.
        rejected: names of the cameras rejected as outliers this step.
        measurement: (3,) the fused raw measurement before filtering (NaN if none).
        message: detail for non-OK statuses.
    """

    t: float
    position: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray
    orientation: np.ndarray
    angle: np.ndarray
    status: BallStatus
    n_measurements: int = 0
    rejected: tuple[str, ...] = ()
    measurement: np.ndarray | None = None
    message: str = ""

    @property
    def valid(self) -> bool:
        """True when the position can be used (see :attr:`BallStatus.valid`)."""
        return self.status.valid

    @property
    def x(self) -> np.ndarray:
        """The ball's 13-vector [q (w,x,y,z), p, ω, v] (the simplified model's ball state)."""
        return np.concatenate([self.orientation, self.position, self.angular_velocity,
                               self.velocity])

    @classmethod
    def invalid(cls, t: float, status: BallStatus, message: str = "",
                rejected: tuple[str, ...] = ()) -> "BallState":
        """A state with NaN arrays and the given (non-valid) status."""
        nan3 = np.full(3, np.nan)
        return cls(t, nan3, nan3.copy(), nan3.copy(), np.full(4, np.nan), nan3.copy(), status,
                   0, rejected, nan3.copy(), message)
