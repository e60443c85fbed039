"""The newest accepted state of a validated message stream, and a record of rejected messages.

The robot-state and ball-detection adapters both parse messages on the transport thread, keep
only the newest valid state (under a lock, read by the control loop) and count, remember and
log the messages they reject, never using them. :class:`LatestValidState` is that shared part.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Generic, TypeVar

__all__ = ["LatestValidState"]

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
