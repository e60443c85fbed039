"""Strict JSON for everything c3mpc writes or sends: non-finite floats become ``null``.

Python's ``json`` writes ``NaN``/``Infinity``, which are not JSON: roslibjs, Foxglove and most
readers reject them, and rosbridge itself sends ``null``. One helper, used by the run logs
(:mod:`c3mpc.mcap_log`), the deploy report and the rosbridge server.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["finite_or_none"]


def finite_or_none(x: Any) -> Any:
    """``x`` with every non-finite float (in nested dicts, lists and tuples) replaced by None."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite_or_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite_or_none(v) for v in x]
    return x
