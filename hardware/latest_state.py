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
from typing import Any, Generic, TypeVar

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
    """Validate the ``max_clock_offset`` (> 0, inf allowed) and ``max_stamp_lead`` (finite,
    > 0) fields of an options dataclass named ``cls``; raises HardwareValueError."""
    for name in ("max_clock_offset", "max_stamp_lead"):
        v = getattr(o, name)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or v <= 0:
            raise HardwareValueError(f"{cls}.{name} must be a positive number of seconds, got "
                                     f"{v!r}")
    if not math.isfinite(o.max_stamp_lead):
        raise HardwareValueError(f"{cls}.max_stamp_lead must be finite, got "
                                 f"{o.max_stamp_lead!r}")


def check_stamp(stamp: float, wall_now: float, prev_stamp: float | None,
                prev_t_receive: float | None, t_receive: float, max_clock_offset: float,
                max_stamp_lead: float) -> str | None:
    """Why a header stamp is unacceptable, or None if it is fine.

    A stamp must be finite, within ``max_clock_offset`` [s] of the local wall clock
    ``wall_now`` (the robot and workstation clocks are assumed synchronised, e.g. by chrony;
    ``math.inf`` disables the check), after the previous accepted stamp, and at most
    ``max_stamp_lead`` [s] ahead of the previous stamp advanced by the local time that passed
    between the two receptions (``t_receive - prev_t_receive``, time.monotonic()): the robot's
    clock cannot run faster than ours. A stamp from the future is therefore rejected *before*
    it becomes the reference, so it cannot make the later, genuine messages look old (a
    spoofed stamp inside both tolerances delays them by at most ``max_stamp_lead``).
    """
    if not math.isfinite(stamp):
        return f"non-finite stamp {stamp!r}"
    offset = stamp - wall_now
    if abs(offset) > max_clock_offset:
        return (f"stamp {offset:+.3f} s from the local clock (> max_clock_offset "
                f"{max_clock_offset} s; synchronise the clocks or raise it)")
    if prev_stamp is None or prev_t_receive is None:
        return None
    if stamp <= prev_stamp:
        return f"stamp {stamp:.6f} not after {prev_stamp:.6f}"
    lead = stamp - (prev_stamp + max(0.0, t_receive - prev_t_receive))
    if lead > max_stamp_lead:
        return (f"stamp {lead:.3f} s ahead of the robot clock (> max_stamp_lead "
                f"{max_stamp_lead} s)")
    return None
