"""Per-lap statistics of a Franka ball run (several laps in a row, seed 003 §VII-C: "we allow
the robot to complete multiple loops to demonstrate the consistency of our approach").

* State-based circle: lap k is the interval in which the ball's unwrapped phase angle on the
  circle (eq. 25's α, clockwise from +y) goes from 2πk to 2π(k + 1); the first starts at t = 0.
* Time-based trajectory: lap k is x_d's k-th traversal (:meth:`TimedPath.lap_start_times`).

Each lap reports its time and the share of it with the error inside the band; only laps that
finished within the run are listed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["circle_lap_boundaries", "lap_statistics"]


def circle_lap_boundaries(t: np.ndarray, ball_xy: np.ndarray,
                          center: tuple[float, float] | list[float]) -> np.ndarray:
    """Times at which the ball completes 0, 1, 2, ... laps round ``center`` [s]: (n + 1,) with
    t[0] first, n the completed laps.

    The phase angle α = atan2(x − x_c, y − y_c) is unwrapped step by step (each step's change
    taken in (−π, π]); lap k ends at the first sample where α − α(0) ≥ 2π (k + 1).
    """
    t = np.asarray(t, float)
    p = np.asarray(ball_xy, float)
    a = np.arctan2(p[:, 0] - center[0], p[:, 1] - center[1])
    d = (np.diff(a) + math.pi) % (2 * math.pi) - math.pi
    prog = np.concatenate([[0.0], np.cumsum(d)])
    n = int(math.floor(prog.max() / (2 * math.pi))) if prog.size else 0
    ends = [float(t[np.argmax(prog >= 2 * math.pi * (k + 1))]) for k in range(max(n, 0))]
    return np.array([float(t[0]), *ends])


def lap_statistics(t: np.ndarray, error: np.ndarray, band: float,
                   boundaries: np.ndarray) -> list[dict[str, Any]]:
    """One dict per lap between consecutive ``boundaries`` (times [s]) within ``t``:
    ``lap`` (0-based), ``start_s``, ``end_s``, ``time_s``, ``band_fraction`` (time share with
    ``error`` <= ``band``), ``max_error_m``, ``mean_error_m`` (time-weighted)."""
    t = np.asarray(t, float)
    e = np.asarray(error, float)
    out = []
    for k, (a, b) in enumerate(zip(boundaries[:-1], boundaries[1:])):
        if b > t[-1] + 1e-12:
            break
        w = (t >= a - 1e-12) & (t <= b + 1e-12)
        tw, ew = t[w], e[w]
        dt = np.diff(tw)
        span = float(tw[-1] - tw[0]) if tw.size > 1 else 0.0
        inside = ew[:-1] <= band
        out.append({"lap": k, "start_s": float(a), "end_s": float(b), "time_s": float(b - a),
                    "band_fraction": float(np.sum(dt[inside]) / span) if span > 0 else 1.0,
                    "max_error_m": float(ew.max()),
                    "mean_error_m": float(np.sum(dt * ew[:-1]) / span) if span > 0
                    else float(ew[0])})
    return out
