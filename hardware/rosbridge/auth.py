"""rosauth-compatible authentication of rosbridge clients (the ``auth`` op, MAC method).

rosbridge_server with ``authenticate:=true`` expects every client to send first::

    {"op": "auth", "mac": MAC, "client": CLIENT, "dest": DEST, "rand": RAND,
     "t": T, "level": LEVEL, "end": END}

and checks it with rosauth's ``ros_mac_authentication`` node: the request is accepted when
``|t − now|`` is below ``allowed_time_delta`` (5 s by default), ``end`` is in the future, and

.. math::

    \\mathrm{MAC} = \\mathrm{hex}(\\mathrm{SHA512}(s \\,\\|\\, c \\,\\|\\, d \\,\\|\\, r \\,\\|\\,
    \\lfloor t \\rfloor \\,\\|\\, \\ell \\,\\|\\, \\lfloor e \\rfloor))

(string concatenation; ``t`` and ``end`` are ROS times, of which rosauth hashes the whole
seconds), with ``s`` the shared secret (rosauth reads it from a file and requires exactly 16
characters). This module computes and checks that MAC and loads the secret from a file or an
environment variable. Comparisons are constant-time (:func:`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import secrets
import socket
import time
from pathlib import Path
from typing import Any

from ..errors import HardwareValueError

__all__ = ["SECRET_ENV", "MIN_SECRET_LENGTH", "load_secret", "mac", "auth_message",
           "check_auth"]

#: Environment variable holding the shared secret when no file is given.
SECRET_ENV = "C3MPC_BRIDGE_SECRET"

#: Shortest accepted secret (rosauth requires exactly 16 characters: use 16 to share the
#: secret with a real rosbridge_server + rosauth).
MIN_SECRET_LENGTH = 16


def load_secret(path: str | Path | None = None, env: str | None = SECRET_ENV) -> str | None:
    """The shared secret: the first line of ``path`` if given, else the environment variable
    ``env`` if set and non-empty, else None (no authentication).

    Raises:
        HardwareValueError: unreadable file, or a secret shorter than
            :data:`MIN_SECRET_LENGTH` characters.
    """
    if path:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise HardwareValueError(f"cannot read the bridge secret file {str(path)!r}: {e}"
                                     ) from e
        secret, where = (text.splitlines() or [""])[0], f"file {str(path)!r}"
    elif env and os.environ.get(env):
        secret, where = os.environ[env], f"environment variable {env}"
    else:
        return None
    if len(secret) < MIN_SECRET_LENGTH:
        raise HardwareValueError(f"the bridge secret in the {where} has {len(secret)} "
                                 f"characters; at least {MIN_SECRET_LENGTH} are needed "
                                 "(rosauth: exactly 16)")
    return secret


def mac(secret: str, client: str, dest: str, rand: str, t: float, level: str,
        end: float) -> str:
    """rosauth's MAC: SHA-512 hex of secret + client + dest + rand + ⌊t⌋ + level + ⌊end⌋."""
    text = f"{secret}{client}{dest}{rand}{int(t)}{level}{int(end)}"
    return hashlib.sha512(text.encode("utf-8")).hexdigest()


def auth_message(secret: str, dest: str, *, client: str | None = None, level: str = "admin",
                 lifetime: float = 24 * 3600.0, now: float | None = None) -> dict[str, Any]:
    """The ``auth`` op a client sends (fresh random string, ``t`` = now, ``end`` = now +
    ``lifetime`` [s])."""
    t = time.time() if now is None else now
    client = client if client is not None else socket.gethostname()
    rand = secrets.token_hex(16)
    end = t + lifetime
    return {"op": "auth", "mac": mac(secret, client, dest, rand, t, level, end),
            "client": client, "dest": dest, "rand": rand, "t": int(t), "level": level,
            "end": int(end)}


def check_auth(secret: str, m: dict[str, Any], now: float, tolerance: float) -> str | None:
    """Why the ``auth`` op ``m`` is refused, or None if it is valid (rosauth's checks)."""
    fields = {"mac": str, "client": str, "dest": str, "rand": str, "level": str}
    for name, typ in fields.items():
        if not isinstance(m.get(name), typ):
            return f"auth: field {name!r} must be a string"
    for name in ("t", "end"):
        v = m.get(name)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"auth: field {name!r} must be a finite number of seconds"
    if abs(m["t"] - now) >= tolerance:
        return (f"auth: t is {m['t'] - now:+.1f} s from the server clock (allowed "
                f"{tolerance} s)")
    if m["end"] <= now:
        return "auth: the session end time has passed"
    expected = mac(secret, m["client"], m["dest"], m["rand"], m["t"], m["level"], m["end"])
    if not hmac.compare_digest(expected, m["mac"]):
        return "auth: MAC does not match"
    return None
