"""Emulated vision (seed 003 §VII-A): the ball state from true positions, as cameras would.

The simulator knows the ball's position; the hardware only measures it at the camera rate
(80 Hz in the paper), with noise, and derives the rest. :class:`EmulatedBallVision` samples
the true position at ``rate_hz``, adds Gaussian noise, and runs the same
:class:`~estimators.BallFilter` as the camera tracker (finite-difference velocity, rolling
angular velocity, integrated angle). Between samples it returns the last estimate, so the
controller sees exactly the staleness it would see on hardware.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ._validation import as_float_array
from .ball_filter import BallFilter
from .ball_state import BallState
from .errors import EstimatorValueError
from .options import BallTrackerOptions

__all__ = ["EmulatedBallVision", "EmulatedForceSensor"]


class EmulatedBallVision:
    """True ball positions -> :class:`BallState` at a camera rate, with noise.

    Args:
        options: filter options (default: the paper's emulation, ``filter="none"``: raw
            position, finite-difference velocity without smoothing).
        rate_hz: camera rate [Hz] (80 in the paper).
        noise_std: Gaussian position noise per axis [m] (the paper: 0 or 0.001).
        rng: generator or seed of the noise.

    ``step(true_position, t)`` may be called at any rate >= 0; a new measurement is taken
    whenever a camera period has elapsed since the last one.
    """

    def __init__(self, options: BallTrackerOptions | None = None, rate_hz: float = 80.0,
                 noise_std: float = 0.0, rng: np.random.Generator | int | None = None):
        if options is None:
            options = BallTrackerOptions(filter="none", velocity_cutoff_hz=None)
        if not (np.isfinite(rate_hz) and rate_hz > 0):
            raise EstimatorValueError(f"rate_hz must be a positive number, got {rate_hz!r}")
        if not (np.isfinite(noise_std) and noise_std >= 0):
            raise EstimatorValueError(f"noise_std must be >= 0 [m], got {noise_std!r}")
        self.options = options
        self.period = 1.0 / float(rate_hz)
        self.noise_std = float(noise_std)
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self.filter = BallFilter(options)
        self._last: BallState | None = None
        self._next_t: float | None = None
        self._last_call: float | None = None

    def reset(self) -> None:
        """Forget the track and the sampling clock."""
        self.filter.reset()
        self._last = None
        self._next_t = None
        self._last_call = None

    def step(self, true_position: np.ndarray, t: float) -> BallState:
        """The estimate available at time t [s] given the true ball centre (3,) [m]."""
        p = as_float_array("true_position", true_position, (3,))
        t = float(t)
        if not np.isfinite(t):
            raise EstimatorValueError("t must be finite")
        if self._last_call is not None and t < self._last_call:
            raise EstimatorValueError(f"t must not go backwards: got {t} after {self._last_call}")
        self._last_call = t
        if self._last is not None and self._next_t is not None and t < self._next_t - 1e-12:
            return self._last
        z = p + (self.rng.normal(0.0, self.noise_std, 3) if self.noise_std > 0 else 0.0)
        self._last = self.filter.step(z, t)
        self._next_t = t + self.period
        return self._last

    def with_options(self, **changes) -> "EmulatedBallVision":
        """A fresh emulator with some filter options changed (e.g. ``radius=0.02``)."""
        return EmulatedBallVision(dataclasses.replace(self.options, **changes),
                                  1.0 / self.period, self.noise_std, self.rng)


class EmulatedForceSensor:
    """The arm's contact-force estimate at the end effector, emulated: the true normal force
    plus Gaussian noise (the Franka's external-wrench estimate, libfranka ``O_F_ext_hat_K``,
    is good to about 1 N once its offset is removed).

    Args:
        noise_std: standard deviation of the additive noise [N].
        rng: generator or seed of the noise.

    ``step(true_force)`` returns one reading [N] (called once per plan).
    """

    def __init__(self, noise_std: float = 1.0, rng: np.random.Generator | int | None = None):
        if not (isinstance(noise_std, (int, float)) and not isinstance(noise_std, bool)
                and np.isfinite(noise_std) and noise_std >= 0):
            raise EstimatorValueError(f"noise_std must be a finite number >= 0 [N], got "
                                      f"{noise_std!r}")
        self.noise_std = float(noise_std)
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)

    def step(self, true_force: float) -> float:
        """A reading of the normal force ``true_force`` [N] (finite, >= 0)."""
        f = float(true_force)
        if not (np.isfinite(f) and f >= 0):
            raise EstimatorValueError(f"true_force must be a finite force >= 0 [N], got "
                                      f"{true_force!r}")
        if self.noise_std > 0:
            f += float(self.rng.normal(0.0, self.noise_std))
        return f
