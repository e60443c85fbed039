"""Model error and disturbances for the Franka ball task (seed 003 §VII-C: "the table in the
hardware setup is slightly tilted", "the friction coefficient ... was simply set to μ = 1",
"we manually disturb the ball").

C3 always plans with the simplified model (``franka-ball``: level table, μ = 1, ball 0.132 kg,
r = 3.15 cm). :class:`RobustnessOptions` changes only the *simulated* world
(:mod:`plants.franka_sim` + :mod:`plants.sim`), so every option is a mismatch between the
planning model and the "real" system:

* ``table_slant_deg``: the table tilted by θ. The ball's weight then has the component
  m g sin θ along the table, downhill; it is applied as a constant force on each ball's centre
  (the change of the normal force, m g (1 − cos θ), is 0.02% at 1° and not modelled; the arm
  stands on level ground). Free, a ball rolls downhill at 5/7 g sin θ (0.12 m/s² at 1°).
* ``friction``: μ of every simulated contact (end effector-ball, ball-table).
* ``ball_mass_scale``, ``ball_radius_scale``: the simulated ball's mass and radius over the
  model's (the ball starts resting on the table, the end effector as far above its top as in
  the nominal start).
* ``push_times`` with ``push_impulse``: impulses J [N·s] on each ball's centre, each applied
  as the force J / δt over the one simulator step that starts at that time, so the ball's
  velocity jumps by J / m (a push at the centre: with table friction it then slides until it
  rolls, at 5/7 of that speed).

:func:`push_recovery` measures the band statistics after each push; the benchmark table is
``benchmarks/bench_franka_robustness.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import C3ValueError

__all__ = ["RobustnessOptions", "BallForces", "scene_options", "simulated_start",
           "push_recovery", "GRAVITY"]

GRAVITY = 9.81
"""[m/s²], as the simulator's."""


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class RobustnessOptions:
    """Differences between the simulated world and C3's planning model (module docstring).

    Attributes:
        table_slant_deg: table tilt θ [deg] (0: level, as the model).
        slant_direction_deg: downhill direction, counter-clockwise from +x [deg] (90: towards
            +y; the paper's hardware trajectory was shifted towards +y).
        friction: μ of every simulated contact (None: the model's 1).
        ball_mass_scale: simulated ball mass / model ball mass (0.132 kg).
        ball_radius_scale: simulated ball radius / model ball radius (3.15 cm).
        push_times: times of impulsive pushes on the ball(s) [s].
        push_impulse: (J_x, J_y) of every push, in the world frame [N·s] (0.0066 N·s changes a
            0.132 kg ball's velocity by 50 mm/s).
    """

    table_slant_deg: float = 0.0
    slant_direction_deg: float = 90.0
    friction: float | None = None
    ball_mass_scale: float = 1.0
    ball_radius_scale: float = 1.0
    push_times: tuple[float, ...] = ()
    push_impulse: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        for name in ("table_slant_deg", "slant_direction_deg", "ball_mass_scale",
                     "ball_radius_scale"):
            if not _number(getattr(self, name)):
                raise C3ValueError(f"RobustnessOptions.{name} must be a finite number, got "
                                   f"{getattr(self, name)!r}")
        if not -30.0 <= self.table_slant_deg <= 30.0:
            raise C3ValueError(f"RobustnessOptions.table_slant_deg must be in [-30, 30] [deg], "
                               f"got {self.table_slant_deg!r}")
        if not (self.ball_mass_scale > 0 and self.ball_radius_scale > 0):
            raise C3ValueError("RobustnessOptions: ball_mass_scale and ball_radius_scale must "
                               "be > 0")
        if self.friction is not None and not (_number(self.friction) and self.friction >= 0):
            raise C3ValueError(f"RobustnessOptions.friction must be >= 0 or None, got "
                               f"{self.friction!r}")
        if not (isinstance(self.push_times, tuple)
                and all(_number(t) and t >= 0 for t in self.push_times)):
            raise C3ValueError(f"RobustnessOptions.push_times must be a tuple of times >= 0 [s], "
                               f"got {self.push_times!r}")
        if list(self.push_times) != sorted(self.push_times):
            raise C3ValueError(f"RobustnessOptions.push_times must be increasing, got "
                               f"{self.push_times!r}")
        j = self.push_impulse
        if not (isinstance(j, tuple) and len(j) == 2 and all(_number(v) for v in j)):
            raise C3ValueError(f"RobustnessOptions.push_impulse must be a (J_x, J_y) tuple "
                               f"[N·s], got {j!r}")

    @property
    def is_nominal(self) -> bool:
        """True when the simulated world is the model's (no option changes anything)."""
        return (self.table_slant_deg == 0 and self.friction is None
                and self.ball_mass_scale == 1 and self.ball_radius_scale == 1
                and (not self.push_times or self.push_impulse == (0.0, 0.0)))

    def slant_force(self, mass: float) -> np.ndarray:
        """(3,) the downhill force m g sin θ on a ball of ``mass`` [kg] [N]."""
        th = math.radians(self.table_slant_deg)
        az = math.radians(self.slant_direction_deg)
        f = mass * GRAVITY * math.sin(th)
        return np.array([f * math.cos(az), f * math.sin(az), 0.0])


def scene_options(r: RobustnessOptions | None) -> Any:
    """The simulated scene's :class:`plants.franka_sim.FrankaSceneOptions` under ``r``."""
    from plants.franka_sim import FrankaSceneOptions

    base = FrankaSceneOptions()
    if r is None:
        return base
    return FrankaSceneOptions(mu=base.mu if r.friction is None else float(r.friction),
                              stiffness=base.stiffness, dissipation=base.dissipation,
                              ee_radius=base.ee_radius,
                              ball_radius=base.ball_radius * r.ball_radius_scale,
                              ball_mass=base.ball_mass * r.ball_mass_scale,
                              finger_opening=base.finger_opening)


def simulated_start(r: RobustnessOptions | None, ee0: np.ndarray,
                    balls0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The simulated start (end-effector centre (3,), ball centres (k, 3)) for the model's
    ``ee0``, ``balls0``: balls resting on the table with the simulated radius, the end effector
    raised by the growth of the ball's diameter (so it starts as far above the ball's top)."""
    ee0 = np.array(ee0, float)
    balls0 = np.array(balls0, float).reshape(-1, 3)
    if r is None or r.ball_radius_scale == 1:
        return ee0, balls0
    from plants.models.franka_ball import BALL_RADIUS

    r_sim = BALL_RADIUS * r.ball_radius_scale
    balls0[:, 2] = r_sim
    ee0[2] += max(0.0, 2 * (r_sim - BALL_RADIUS))
    return ee0, balls0


class BallForces:
    """The external forces of ``r`` on the balls, added to the simulator's generalized forces.

    Args:
        r: :class:`RobustnessOptions`.
        ball_velocity_index: per ball, the index of its first translational velocity in the
            simulator's v (a ball is a world-frame translation joint then a spherical joint, so
            its first three generalized forces are the world-frame force on its centre).
        ball_mass: simulated ball mass [kg].
        dt: simulator time step δt [s].
    """

    def __init__(self, r: RobustnessOptions, ball_velocity_index: list[int], ball_mass: float,
                 dt: float):
        self.r = r
        self.idx = list(ball_velocity_index)
        self.dt = float(dt)
        self.f_slant = r.slant_force(ball_mass)
        self.f_push = np.array([*r.push_impulse, 0.0]) / self.dt
        self.times = np.asarray(r.push_times, float)

    def force(self, t: float) -> np.ndarray:
        """(3,) world-frame force on each ball's centre during the step starting at t [N]."""
        f = self.f_slant.copy()
        if self.times.size:
            # the step [t, t + δt) that contains a push time (times on the step grid start it)
            eps = 1e-9 * self.dt
            if np.any((self.times >= t - eps) & (self.times < t + self.dt - eps)):
                f += self.f_push
        return f

    def add(self, t: float, tau: np.ndarray) -> None:
        """Add the forces at time t to the generalized forces ``tau`` (n_v,) in place."""
        f = self.force(t)
        if not np.any(f):
            return
        for j in self.idx:
            tau[j:j + 3] += f


def push_recovery(t: np.ndarray, error: np.ndarray, band: float,
                  push_times: tuple[float, ...] | list[float]) -> list[dict[str, Any]]:
    """Per push: did the ball leave the band before the next push (or the end), how far, and
    how long after the push it was back in the band.

    Args:
        t: (T,) times [s]; error: (T,) tracking error [m]; band: half-width [m].
        push_times: the push times [s].

    Returns:
        One dict per push inside the run: ``time_s``, ``left_band``, ``max_error_m`` (until the
        next push or the end), ``recovery_time_s`` (0 if it never left; the time from the push
        to the end of the last excursion of that window that returned; None if the ball was
        still out at the window's end), ``band_fraction`` of that window.
    """
    t = np.asarray(t, float)
    e = np.asarray(error, float)
    out = []
    ends = list(push_times[1:]) + [math.inf]
    for tp, te in zip(push_times, ends):
        if tp > t[-1]:
            break
        w = (t >= tp) & (t < te)
        tw, ew = t[w], e[w]
        outside = ~(ew <= band)
        rec: float | None
        if not outside.any():
            rec = 0.0
        elif outside[-1]:
            rec = None
        else:
            last_out = int(np.flatnonzero(outside)[-1])
            rec = float(tw[last_out + 1] - tp)
        dtw = np.diff(tw)
        frac = float(np.sum(dtw[~outside[:-1]]) / (tw[-1] - tw[0])) if tw.size > 1 else 1.0
        out.append({"time_s": float(tp), "left_band": bool(outside.any()),
                    "max_error_m": float(ew.max()), "recovery_time_s": rec,
                    "band_fraction": frac})
    return out
