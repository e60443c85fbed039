r"""Planning latency in the Franka ball loop: the expected command delay and the state the
plan should start from (docs/franka-ball.md, "Slow planning: latency compensation").

Algorithm 3 plans from the estimate x̂(t) and its command takes effect a delay L later; the
command is then held until the next one replaces it, a hold H later. The default tuning was
made for L equal to the 8 ms command-delay floor (step 5 re-simulates over the floor plus one
camera period, which is H while the planner is faster than a camera period). When planning is
slower than the floor (a loaded machine: 25-40 ms), the loop

1. *expects* the delay L from the recent cycle times (:class:`DelayEstimator`: a high
   quantile of the last cycles, at least the floor, in whole simulator steps) and holds every
   command at least that long (an adaptive command-delay floor), so the prediction below is
   right whenever the planner is no slower than expected;
2. *predicts* the state L − L_0 ahead (L_0 the floor the tuning was made for) under the
   command that is in force meanwhile (:func:`predict_under_command`: the end effector under
   the impedance law towards the held x_d, the ball through the planning model's contact
   LCS), and plans from that state at that time, so the plan sees the latency the tuning saw;
3. re-simulates step 5 over L_0 + H, with H the hold that follows from L
   (:func:`command_hold`), so x_d is the plan's state when the next command replaces this one,
   as at the floor.

With L <= L_0 nothing changes (no prediction, the tuning's step 5).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from ..algorithm3 import BallTaskLayout
from ..errors import C3ValueError

__all__ = ["DelayEstimator", "command_hold", "predict_under_command"]


class DelayEstimator:
    """The command delay to expect from the recent Algorithm 3 cycle times.

    Args:
        floor: the smallest delay [s] (the loop's command-delay floor; > 0).
        sim_dt: simulator step [s]; the delay is rounded up to whole steps, as the loop does.
        window: how many recent cycle times are kept.
        quantile: which quantile of them is expected (0.8: four cycles in five finish within
            the expectation; a slower one takes effect late, as without the estimate).
    """

    def __init__(self, floor: float, sim_dt: float, window: int = 10, quantile: float = 0.8):
        for name, v in (("floor", floor), ("sim_dt", sim_dt)):
            if isinstance(v, bool) or not (isinstance(v, (int, float)) and math.isfinite(v)
                                           and v > 0):
                raise C3ValueError(f"DelayEstimator: {name} must be a number > 0 [s], got {v!r}")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise C3ValueError(f"DelayEstimator: window must be an int >= 1, got {window!r}")
        if not (0.0 <= quantile <= 1.0):
            raise C3ValueError(f"DelayEstimator: quantile must be in [0, 1], got {quantile!r}")
        self.floor = float(floor)
        self.sim_dt = float(sim_dt)
        self.quantile = float(quantile)
        self._times: deque[float] = deque(maxlen=window)

    def steps(self, delay: float) -> int:
        """Whole simulator steps (at least one) covering ``delay`` [s]."""
        return max(1, int(math.ceil(delay / self.sim_dt - 1e-9)))

    def expected(self) -> float:
        """The delay [s] to plan for: the quantile of the recent cycle times, at least the
        floor, rounded up to simulator steps (the floor alone before the first cycle)."""
        d = self.floor
        if self._times:
            d = max(d, float(np.quantile(np.fromiter(self._times, float), self.quantile)))
        return self.steps(d) * self.sim_dt

    def record(self, cycle_time: float) -> None:
        """Add a measured cycle time [s] (non-finite or negative values are ignored)."""
        if math.isfinite(cycle_time) and cycle_time >= 0:
            self._times.append(float(cycle_time))


def command_hold(delay: float, camera_period: float, plan_on_new_sample: bool = True) -> float:
    """How long a command is held [s] when every plan takes ``delay`` [s].

    The next plan starts when the command takes effect (``delay`` after this plan started),
    and with ``plan_on_new_sample`` only once a camera sample newer than this plan's has come:
    after a delay of at least one camera period one always has, so the next command replaces
    this one ``delay`` later; after a shorter delay the next plan waits for the sample, one
    camera period after this plan started. So the hold is max(delay, camera period) with
    ``plan_on_new_sample``, else ``delay``.
    """
    if not (delay > 0 and camera_period > 0):
        raise C3ValueError(f"command_hold: delay and camera_period must be > 0 [s], got "
                           f"{delay!r}, {camera_period!r}")
    if not plan_on_new_sample:
        return float(delay)
    return max(float(delay), float(camera_period))


def predict_under_command(plant: Any, layout: BallTaskLayout, x: np.ndarray, p_ref: np.ndarray,
                          v_ref: np.ndarray, a_ff: np.ndarray, f_ff: np.ndarray, stiffness: float,
                          damping: float, horizon: float) -> np.ndarray:
    r"""The planning model's state ``horizon`` [s] after ``x`` while the end effector tracks a
    held impedance command.

    The end effector of the simplified model is a point mass driven by its acceleration input;
    under the impedance law (as :class:`c3mpc.tasks.franka_ball._ModelWorld` applies it) its
    acceleration is :math:`K (p_r - p) + D (v_r - v) + a_{ff} + f_{ff} / m`. Over the step h the
    law is taken implicitly in the end-effector state (stable for any K h², D h):
    :math:`v^+ = v + h a`, :math:`p^+ = p + h v^+`, :math:`a = K (p_r - p^+) + D (v_r - v^+) +
    a_{ff} + f_{ff}/m`, i.e.

    .. math::

        a = \frac{K (p_r - p - h v) + D (v_r - v) + a_{ff} + f_{ff}/m}{1 + h D + h^2 K},

    and the model is stepped once through its LCS linearised at (x, a) with time step h, so the
    ball and the end effector-ball contact follow the model (contact forces included).

    Args:
        plant: the planning plant (``plant.lcs(x, u, dt=)``; its input is the end-effector
            acceleration [m/s²]).
        layout: where the end effector is in x.
        x: (n_x,) the state now.
        p_ref, v_ref: (3,) the held reference position [m] and velocity [m/s].
        a_ff: (3,) acceleration feed-forward [m/s²] (zeros if off).
        f_ff: (3,) force feed-forward [N] (zeros if off).
        stiffness, damping: K [1/s²] and D [1/s] of the law.
        horizon: h [s] (> 0).

    Returns:
        (n_x,) the predicted state (``x`` itself, copied, if the contact LCP is not solved).
    """
    from lcs import LCPSolveError

    if not (horizon > 0 and math.isfinite(horizon)):
        raise C3ValueError(f"horizon must be > 0 [s], got {horizon!r}")
    x = np.asarray(x, float)
    h = float(horizon)
    p = x[list(layout.ee_position)]
    v = x[list(layout.ee_velocity)]
    K, D = float(stiffness), float(damping)
    a = (K * (np.asarray(p_ref) - p - h * v) + D * (np.asarray(v_ref) - v)
         + np.asarray(a_ff) + np.asarray(f_ff) / layout.ee_mass) / (1.0 + h * D + h * h * K)
    try:
        x_next, _ = plant.lcs(x, a, dt=h).step(x, a)
    except LCPSolveError:
        return x.copy()
    return x_next
