"""The newest accepted state of a validated message stream, and a record of rejected messages.

The robot-state and ball-detection adapters both parse messages on the transport thread, keep
only the newest valid state (under a lock, read by the control loop) and count, remember and
log the messages they reject, never using them. :class:`LatestValidState` is that shared part.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
from typing import Any, Callable, Generic, TypeVar

from .errors import HardwareValueError

__all__ = ["LatestValidState", "check_stamp", "check_stamp_tolerances"]

S = TypeVar("S")


class LatestValidState(Generic[S]):
    """Holds the newest accepted state ``S`` and the rejected messages of one stream.

    Subclasses set :attr:`_what` (named in the log line) and :attr:`_logger`, store accepted
    states in ``self._state`` while holding ``self._lock``, and call :meth:`_reject` (or
    :meth:`_reject_locked` with the lock held) for a message they refuse.

    Attributes:
        rejected: number of rejected messages so far.
        rejections: the reasons of the last 20 rejections, newest last.
    """

    _what = "message"
    _logger = logging.getLogger("hardware")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: S | None = None
        self.rejected = 0
        self.rejections: collections.deque[str] = collections.deque(maxlen=20)
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` after each accepted state (on the transport thread, outside the lock;
        keep it short: the deploy loop's is ``threading.Event.set``)."""
        self._listeners.append(fn)

    def _notify(self) -> None:
        for fn in self._listeners:
            fn()

    def _reject(self, reason: str) -> None:
        with self._lock:
            self._reject_locked(reason)

    def _reject_locked(self, reason: str) -> None:
        self.rejected += 1
        self.rejections.append(reason)
        if self.rejected <= 5 or self.rejected % 100 == 0:  # a flood is logged sparsely
            self._logger.warning("rejected %s #%d: %s", self._what, self.rejected, reason)

    def state(self) -> S | None:
        """The newest valid state, or None before the first one."""
        with self._lock:
            return self._state


def check_stamp_tolerances(o: Any, cls: str) -> None:
    """Validate the ``max_stamp_lag`` (> 0, inf allowed) and ``max_stamp_lead`` (finite,
    >= 0) fields of an options dataclass named ``cls``; raises HardwareValueError."""
    lag, lead = o.max_stamp_lag, o.max_stamp_lead
    if isinstance(lag, bool) or not isinstance(lag, (int, float)) or math.isnan(lag) or lag <= 0:
        raise HardwareValueError(f"{cls}.max_stamp_lag must be a positive number of seconds "
                                 f"(.inf: no check), got {lag!r}")
    if isinstance(lead, bool) or not isinstance(lead, (int, float)) or not (
            math.isfinite(lead) and lead >= 0):
        raise HardwareValueError(f"{cls}.max_stamp_lead must be a finite number of seconds "
                                 f">= 0, got {lead!r}")


def check_stamp(stamp: float, wall_now: float, prev_stamp: float | None, max_stamp_lag: float,
                max_stamp_lead: float) -> str | None:
    """Why a header stamp is unacceptable, or None if it is fine.

    The robot's clock is assumed synchronised with the local wall clock ``wall_now``
    (time.time(); chrony/NTP between the robot PC and the workstation). A stamp must be

    * finite;
    * at most ``max_stamp_lead`` [s] ahead of ``wall_now``: a message cannot come from the
      future, only the clocks' residual offset can make it look so. A forged future stamp
      is therefore rejected before it becomes the reference, and one inside the tolerance
      makes the later, genuine messages look old ("not after") for at most
      ``max_stamp_lead``;
    * at most ``max_stamp_lag`` [s] behind ``wall_now`` (delivery delay plus clock offset;
      ``math.inf`` disables this side);
    * after ``prev_stamp``, the previous accepted stamp (None: the first message).
    """
    if not math.isfinite(stamp):
        return f"non-finite stamp {stamp!r}"
    offset = stamp - wall_now
    if offset > max_stamp_lead:
        return (f"stamp {offset:.3f} s ahead of the local clock (> max_stamp_lead "
                f"{max_stamp_lead} s): from the future, or the clocks are not synchronised")
    if -offset > max_stamp_lag:
        return (f"stamp {-offset:.3f} s behind the local clock (> max_stamp_lag "
                f"{max_stamp_lag} s): delayed, or the clocks are not synchronised")
    if prev_stamp is not None and stamp <= prev_stamp:
        return f"stamp {stamp:.6f} not after {prev_stamp:.6f}"
    return None
