"""Helpers of the tests that start servers and subprocesses on loopback (rosbridge, twin,
deploy): a free port, polling until a condition holds, and an environment that imports this
checkout."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(pred: Callable[[], bool], timeout: float, dt: float = 0.01) -> bool:
    """Poll ``pred`` every ``dt`` seconds for up to ``timeout`` seconds; its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(dt)
    return pred()


def repo_env() -> dict:
    """os.environ with this checkout first on PYTHONPATH (for subprocesses)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env
