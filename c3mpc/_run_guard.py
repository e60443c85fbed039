"""What a long command-line run needs so that no work is lost.

* :func:`prepare_report_dir` checks and creates the report folder *before* the run (an existing
  file, a folder that cannot be created or written: a one-line error, not a traceback after an
  hour of simulation);
* :class:`StopRequest` turns the first Ctrl-C (SIGINT) or a SIGTERM into a flag that the run's
  loop checks between steps, so the run ends cleanly and its partial report is written (marked
  ``interrupted``; the command exits with :data:`EXIT_INTERRUPTED`). A second Ctrl-C raises
  KeyboardInterrupt at once.
* the numeric ``argparse`` types of the command line (:func:`positive_float`, ...), which reject
  0, negatives, NaN and inf where they are meaningless, in one line.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

from .errors import C3ValueError

__all__ = ["prepare_report_dir", "StopRequest", "EXIT_INTERRUPTED", "positive_float",
           "non_negative_float", "positive_int", "non_negative_int"]

EXIT_INTERRUPTED = 130
"""Exit status of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, the shell convention)."""


def prepare_report_dir(path: str | Path, flag: str = "--report") -> Path:
    """Create the report folder now and check that a file can be written in it.

    Raises:
        C3ValueError: ``path`` exists and is not a folder, cannot be created, or is not
            writable (the message names the flag, the path and the reason).
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise C3ValueError(f"{flag} {str(path)!r} exists and is not a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise C3ValueError(f"{flag} {str(path)!r}: cannot create the folder: "
                           f"{e.strerror or e}") from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-check-", dir=p)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise C3ValueError(f"{flag} {str(path)!r}: the folder is not writable: "
                           f"{e.strerror or e}") from None
    return p


class StopRequest:
    """A flag set by the first SIGINT or SIGTERM while the context is active.

    Use ``with StopRequest() as stop: run(..., stop=lambda *_: stop.requested)``. The previous
    handlers are restored on exit. Only the main thread can install handlers; elsewhere the
    flag never sets and signals act as usual.
    """

    def __init__(self) -> None:
        self.requested = False
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> "StopRequest":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now
        self.requested = True
        self.signal_name = signal.Signals(signum).name

    def __call__(self, *_: Any) -> bool:
        """True once a stop was requested (usable as a ``stop(x, k)`` hook)."""
        return self.requested

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


# ---------------------------------------------------------------- argparse types
def _number(text: str, what: str, ok: Callable[[float], bool]) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not (math.isfinite(value) and ok(value)):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def _integer(text: str, what: str, ok: Callable[[int], bool]) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not ok(value) or value > 2**31 - 1:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (seconds, Hz, ...)."""
    return _number(text, "a finite number > 0", lambda v: v > 0)


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0 (a noise level, ...)."""
    return _number(text, "a finite number >= 0", lambda v: v >= 0)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (a horizon, a step count, ...)."""
    return _integer(text, "an integer >= 1", lambda v: v >= 1)


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0 (a seed)."""
    return _integer(text, "an integer >= 0", lambda v: v >= 0)
