"""Exceptions of the ``hardware`` package."""

from __future__ import annotations

from typing import Any

__all__ = [
    "HardwareError",
    "HardwareValueError",
    "BridgeError",
    "BridgeConnectionError",
    "BridgeClosedError",
    "MessageError",
]


class HardwareError(Exception):
    """Root of every error raised by :mod:`hardware`."""


class HardwareValueError(HardwareError, ValueError):
    """Bad input: an option out of range, an unknown option key, a malformed argument."""


class BridgeError(HardwareError):
    """A ROS-bridge transport problem."""


class BridgeConnectionError(BridgeError, ConnectionError):
    """Could not connect to the bridge within the timeout; ``url`` and ``timeout`` say which."""

    def __init__(self, message: str, url: str = "", timeout: float | None = None):
        super().__init__(message)
        self.url = url
        self.timeout = timeout


class BridgeClosedError(BridgeError):
    """An operation was attempted on a transport that has been closed."""


class MessageError(HardwareError, ValueError):
    """A received or outgoing message is malformed or out of range (NaN, missing field, wrong
    frame, ...). ``topic`` and ``reason`` say which and why; ``message`` holds the payload."""

    def __init__(self, topic: str, reason: str, message: Any = None):
        super().__init__(f"{topic}: {reason}")
        self.topic = topic
        self.reason = reason
        self.message = message
