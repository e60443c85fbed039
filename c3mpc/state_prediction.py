r"""Compensating solve latency by predicting the state (DAIRLab/c3's ``state_prediction_joints``).

A plan computed from the state measured at time t is applied at t + T, T the (filtered) solve
time. DAIRLab/c3's controller therefore starts each solve not from the measured state x but
from the previous plan evaluated T later, clamped for each listed joint to what its maximum
acceleration a allows from the measured state:

.. math::

    \hat x = \text{previous plan at } T \quad\text{(linear interpolation between knots,
    at most knot } N-1\text{)},\qquad T' = \min((N-1)\,\Delta t,\ T),

    q_j \leftarrow \operatorname{clamp}(\hat q_j,\ q_j + v_j T' - a_j T'^2,\ q_j + v_j T' +
    a_j T'^2), \qquad v_j \leftarrow \operatorname{clamp}(\hat v_j,\ v_j - a_j T',\ v_j + a_j T').

Only the listed joints' entries change; the other states stay as measured. With T = 0 (the
first solve) the state is returned unchanged. The bounds are theirs, including a_j T'² (not
a_j T'²/2) on positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import C3ValueError

__all__ = ["PredictionJoint", "predict_state"]


@dataclass(frozen=True)
class PredictionJoint:
    """One joint whose state is predicted.

    Attributes:
        q_index: index of its position in the state x = [q; v].
        v_index: index of its velocity in x (n_q + its velocity index).
        max_acceleration: a_j > 0 in [m/s²] or [rad/s²].
        name: for messages.
    """

    q_index: int
    v_index: int
    max_acceleration: float
    name: str = ""

    def __post_init__(self) -> None:
        if not (np.isfinite(self.max_acceleration) and self.max_acceleration > 0):
            raise C3ValueError(f"PredictionJoint {self.name!r}: max_acceleration must be a "
                               f"positive number, got {self.max_acceleration!r}")
        if self.q_index < 0 or self.v_index < 0:
            raise C3ValueError(f"PredictionJoint {self.name!r}: indices must be >= 0")


def predict_state(x: Any, plan_x: Any, elapsed: float, dt: float,
                  joints: Sequence[PredictionJoint]) -> np.ndarray:
    """The state to solve from, given the measured ``x`` (n_x,) and the previous plan.

    Args:
        x: measured state (n_x,).
        plan_x: the previous plan's states (N+1, n_x), ``C3Result.x``; the terminal state
            x_N is not used (their plan stops at x_{N−1}).
        elapsed: T, the time the solve is expected to take [s] (0: no prediction).
        dt: the plan's knot spacing [s].
        joints: the predicted joints.

    Returns:
        (n_x,) the predicted state (a new array).
    """
    x = np.array(x, dtype=float).reshape(-1)
    P = np.asarray(plan_x, dtype=float)
    if P.ndim != 2 or P.shape[1] != x.shape[0] or P.shape[0] < 3:
        raise C3ValueError(f"plan_x must have shape (N+1, {x.shape[0]}) with N >= 2, got "
                           f"{P.shape}")
    if not (elapsed >= 0 and np.isfinite(elapsed)) or not dt > 0:
        raise C3ValueError(f"need elapsed >= 0 and dt > 0, got elapsed={elapsed}, dt={dt}")
    if elapsed == 0 or not joints:
        return x
    N = P.shape[0] - 1  # the plan's horizon; theirs ends at knot N-1
    pred = P[N - 1]
    if elapsed < (N - 1) * dt:
        k = int(np.floor(elapsed / dt))
        w = elapsed / dt - k
        pred = (1 - w) * P[k] + w * P[k + 1]
    T = min((N - 1) * dt, elapsed)
    out = x.copy()
    for j in joints:
        if max(j.q_index, j.v_index) >= x.shape[0]:
            raise C3ValueError(f"PredictionJoint {j.name!r}: index out of range for n_x="
                               f"{x.shape[0]}")
        a = j.max_acceleration
        q, v = x[j.q_index], x[j.v_index]
        out[j.q_index] = np.clip(pred[j.q_index], q + v * T - a * T * T, q + v * T + a * T * T)
        out[j.v_index] = np.clip(pred[j.v_index], v - a * T, v + a * T)
    return out
