"""Camera adapter: ball detections from a topic into a ball-state estimate.

A tracker (the ``estimators`` package on the camera PC, or the simulated camera) publishes the
ball centre as ``geometry_msgs/PointStamped`` in the robot's base frame. This adapter validates
each detection (finite, right frame, a stamp that is finite, close to the local clock and not
from the future (:func:`~hardware.latest_state.check_stamp`), no jump larger than ``max_jump``
from the previous accepted one), and estimates the velocity by filtered finite differences over
header stamps (``filter: difference``, the default) or a constant-velocity Kalman filter over
the stamps (``filter: kalman``, :class:`estimators.BallFilter`, as ``c3mpc run franka-ball
--noise`` estimates the ball: use it with a noisy tracker). Rejected detections are counted and
logged, never used.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import messages
from .config import LoadableOptions
from .errors import HardwareValueError, MessageError
from .latest_state import LatestValidState, check_stamp, check_stamp_tolerances
from .rosbridge.transport import RosBridgeTransport

__all__ = ["CameraOptions", "BallState", "BallDetectionAdapter"]

LOGGER = logging.getLogger("hardware.camera")

DEFAULT_KALMAN_ACCEL_STD = 0.02
"""Kalman process noise [m/s²] of a camera adapter outside a C3 deploy (the value before the
tunings chose it; ``CameraOptions.kalman_accel_std``)."""


@dataclass(frozen=True)
class CameraOptions(LoadableOptions):
    """Topic and validation settings of the ball detections."""

    topic: str = "/ball_tracker/ball_position"
    """Ball centre detections (geometry_msgs/PointStamped)."""

    frame_id: str = "panda_link0"
    """Expected frame of the detections (the robot base frame)."""

    max_jump: float = 0.05
    """Largest accepted distance [m] from the previous accepted detection; a tracker glitch
    beyond it is rejected (after ``reacquire_after`` s without data any position is taken)."""

    reacquire_after: float = 0.5
    """Seconds without an accepted detection after which the jump check is reset."""

    velocity_filter: float = 0.3
    """Weight of the newest finite-difference velocity in the exponential filter, in (0, 1]
    (``filter: difference``)."""
    filter: str = "difference"
    """"difference": positions as detected, velocity by filtered finite differences;
    "kalman": position and velocity from a constant-velocity Kalman filter (noisy trackers)."""
    kalman_measurement_std: float = 0.001
    """Kalman measurement noise σ per axis [m] (the tracker's noise)."""
    kalman_accel_std: float | None = None
    """Kalman process noise, white acceleration [m/s²]. None: in a deploy with
    ``planner_type: c3``, the C3 planner's tuning's (``vision_accel_std`` of
    ``c3mpc.tasks.franka_ball.TUNINGS[c3.tuning]``: 0.01 nominal, 0.3 vision, 0.02 noisy, as
    the simulated loop filters its camera); elsewhere :data:`DEFAULT_KALMAN_ACCEL_STD`."""

    max_stamp_lag: float = 1.0
    """Largest age [s] of an accepted stamp against the local wall clock (delivery delay +
    clock offset; ``.inf`` disables the check)."""

    max_stamp_lead: float = 0.25
    """Largest lead [s] of an accepted stamp over the local wall clock: nothing comes from
    the future, so this only absorbs the residual offset of the synchronised clocks (the
    robot PC's and the workstation's)."""

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not self.topic.startswith("/"):
            raise HardwareValueError(f"CameraOptions.topic must start with '/', got "
                                     f"{self.topic!r}")
        if not self.max_jump > 0 or not self.reacquire_after > 0:
            raise HardwareValueError("CameraOptions.max_jump [m] and reacquire_after [s] must "
                                     "be > 0")
        if not 0 < self.velocity_filter <= 1:
            raise HardwareValueError(f"CameraOptions.velocity_filter must be in (0, 1], got "
                                     f"{self.velocity_filter!r}")
        if self.filter not in ("difference", "kalman"):
            raise HardwareValueError(f"CameraOptions.filter must be 'difference' or 'kalman', "
                                     f"got {self.filter!r}")
        for name in ("kalman_measurement_std", "kalman_accel_std"):
            v = getattr(self, name)
            if v is None and name == "kalman_accel_std":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise HardwareValueError(f"CameraOptions.{name} must be a positive number, "
                                         f"got {v!r}")
        check_stamp_tolerances(self, "CameraOptions")


@dataclass(frozen=True)
class BallState:
    """Estimated ball state in the base frame."""

    position: np.ndarray
    """(3,) ball centre [m]."""
    velocity: np.ndarray
    """(3,) velocity [m/s] (filtered finite differences)."""
    stamp: float
    """Header stamp of the detection [s]."""
    t_receive: float
    """Receive time, time.monotonic() [s]."""
    count: int
    """Accepted detections so far."""


class BallDetectionAdapter(LatestValidState[BallState]):
    """Subscribes to ball detections and keeps the newest valid ball state (``state()``)."""

    _what = "ball detection"
    _logger = LOGGER

    def __init__(self, transport: RosBridgeTransport | None,
                 options: CameraOptions | None = None):
        super().__init__()
        self.options = o = options or CameraOptions()
        self._kalman: Any = None
        if o.filter == "kalman":
            from estimators import BallFilter, BallTrackerOptions

            self._kalman = BallFilter(BallTrackerOptions(
                filter="kalman", kalman_measurement_std=o.kalman_measurement_std,
                kalman_accel_std=(DEFAULT_KALMAN_ACCEL_STD if o.kalman_accel_std is None
                                  else o.kalman_accel_std),
                gate_distance=o.max_jump))
        self._sub = (transport.subscribe(o.topic, "geometry_msgs/PointStamped", self._on_msg)
                     if transport is not None else None)

    def _on_msg(self, msg: dict[str, Any], t_receive: float) -> None:
        o = self.options
        try:
            p, stamp = messages.parse_point_stamped(msg, o.topic, o.frame_id)
        except MessageError as e:
            self._reject(str(e))
            return
        with self._lock:
            prev = self._state
            v = np.zeros(3)
            fresh = prev is not None and t_receive - prev.t_receive < o.reacquire_after
            why = check_stamp(stamp, time.time(), prev.stamp if fresh else None,
                              o.max_stamp_lag, o.max_stamp_lead)
            if why is not None:
                self._reject_locked(f"{o.topic}: {why}")
                return
            if fresh:
                dt = stamp - prev.stamp
                jump = float(np.linalg.norm(p - prev.position))
                if jump > o.max_jump:
                    self._reject_locked(f"{o.topic}: jump of {jump:.3f} m > max_jump "
                                        f"{o.max_jump} m")
                    return
                a = o.velocity_filter
                v = a * (p - prev.position) / dt + (1 - a) * prev.velocity
                if not np.all(np.isfinite(v)):
                    v = np.zeros(3)
            if self._kalman is not None:
                if not fresh:
                    self._kalman.reset()
                est = self._kalman.step(p, stamp)
                if est.valid:
                    p, v = np.array(est.position, float), np.array(est.velocity, float)
            count = 1 if prev is None else prev.count + 1
            self._state = BallState(p, v, stamp, t_receive, count)
        self._notify()
