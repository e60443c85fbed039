"""Algorithm 3's step 5 with the end effector-ball gap read from the arm's contact force.

Why (docs/franka-ball.md, "Step 5 reads micrometres"): step 5 re-simulates the rigid LCS over
Δt_c and resolves, within that one step, whatever penetration of the end effector into the
ball it is given. In Phase II the end effector presses the ball into the table, the compliant
contacts of the world are compressed by tens of micrometres, and the gait relies on step 5
seeing that compression: its LCP turns each 0.1 mm of estimated gap into about 0.7 N of λ_d and
25 mm/s of x_d velocity. A camera estimate cannot be that accurate: a constant 0.3 mm offset of
the ball stops the noise-free lap, and 1 mm noise leaves the ball in the 2 cm band 30-50% of a
90 s run.

The arm can measure that compression, however. Its external-force estimate (libfranka's
``O_F_ext_hat_K``) gives the contact force F, and with the contacts' stiffnesses F is a
compression:

    φ = −F / k_pair − s n_z,    s = (F n_z + m_b g) / k_table,

where k_pair is the end effector-ball stiffness (series), s the ball's sink into the table under
its normal load and n_z the vertical component of the contact normal. Step 5's state comes from
the estimate with the end effector moved along the estimated normal onto that gap; the normal's
direction still comes from the camera. Without a sensed contact (F below a threshold), the
geometric gap is used, clamped at 0: the force sensor says the two are not pressed together.

:class:`ForceSensedGap` does the conversion; ``c3mpc.tasks.franka_ball`` emulates the sensor
(``estimators.EmulatedForceSensor``: the contact's elastic force + Gaussian noise) and passes
the result to :meth:`c3mpc.algorithm3.Algorithm3Planner.plan` as ``x_resim``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..algorithm3 import BallTaskLayout
from ..errors import C3ValueError

__all__ = ["ForceSensedGap"]

GRAVITY = 9.81


@dataclass(frozen=True)
class ForceSensedGap:
    """End effector-ball gap from the measured contact force (module docstring).

    Attributes:
        pair_stiffness: k_pair, the end effector-ball contact stiffness [N/m]. The simulated
            scene's spheres have 1e6 N/m each, 5e5 N/m in series (``plants.franka_sim``).
        table_stiffness: k_table, the ball's sink into the table per newton of normal load
            [N/m]. The scene's table is rigid, but the simulator's near-rigid contact still
            sinks the ball in proportion to its load: regressing the sink on F·n_z over a lap
            gives 2.04e-6 m/N (4.9e5 N/m, residual 0.5 µm median; tested).
        threshold: force below which no contact is declared [N] (3 σ of a 1 N sensor noise).
        ball_mass: m_b [kg] (its weight loads the table too).
    """

    pair_stiffness: float = 5e5
    table_stiffness: float = 4.9e5
    threshold: float = 3.0
    ball_mass: float = 0.132

    def __post_init__(self) -> None:
        for name in ("pair_stiffness", "table_stiffness", "ball_mass"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool)
                    and math.isfinite(v) and v > 0):
                raise C3ValueError(f"ForceSensedGap.{name} must be a finite number > 0, "
                                   f"got {v!r}")
        t = self.threshold
        if not (isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t)
                and t >= 0):
            raise C3ValueError(f"ForceSensedGap.threshold must be a finite number >= 0 [N], "
                               f"got {self.threshold!r}")

    def gap(self, force: float, n_z: float) -> float:
        """φ [m] (negative: compressed) for a measured normal force [N] on a contact whose
        normal (ball → end effector) has vertical component ``n_z``."""
        sink = (force * n_z + self.ball_mass * GRAVITY) / self.table_stiffness
        return -force / self.pair_stiffness - sink * n_z

    def step5_state(self, x_hat: np.ndarray, force: float, layout: BallTaskLayout,
                    ball: int = 0) -> np.ndarray:
        """Step 5's state: ``x_hat`` (n_x,) with the end effector moved along the estimated
        normal so that its gap to ball ``ball`` is :meth:`gap` (contact sensed, ``force`` >
        ``threshold`` [N]) or the estimated gap clamped at 0 (not sensed). A copy of
        ``x_hat`` when nothing changes (or the centres coincide)."""
        x = np.array(x_hat, dtype=float)
        if not math.isfinite(force):
            raise C3ValueError(f"force must be finite [N], got {force!r}")
        ee = list(layout.ee_position)
        e = x[ee]
        b = layout.balls(x)[ball]
        d = e - b
        n = float(np.linalg.norm(d))
        if n < 1e-12:
            return x
        r_sum = layout.ee_radius + layout.ball_radius
        phi = n - r_sum
        if force > self.threshold:
            new = self.gap(force, d[2] / n)
        else:
            new = max(phi, 0.0)
        if new != phi:
            x[ee] = b + d / n * (r_sum + new)
        return x
