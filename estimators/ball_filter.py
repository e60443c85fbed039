"""Fusing per-camera ball positions into a ball state (seed 003 §VII-A/§VII-C).

One step (docs/estimators.md §3):

1. outlier rejection across cameras: with m >= 3 positions p_i, the component-wise median p̃
   and distances d_i = |p_i - p̃|; camera i is rejected if d_i > max(k · 1.4826 · median(d),
   d_min). With m = 2, disagreeing cameras (> 2 d_min apart) are resolved by the track's
   prediction, or the step is INCONSISTENT. While tracking, positions farther than the gate
   from the prediction are rejected first;
2. averaging of the accepted positions -> z;
3. filtering: first-order low-pass p̂ += a (z - p̂), a = Δt / (τ + Δt), τ = 1 / (2π f_c), and
   finite differences v = (p̂_k - p̂_{k-1}) / Δt (optionally low-passed), or a
   constant-velocity Kalman filter;
4. rolling without slipping on a plane with normal n: ω = n × v_t / r, v_t = v - n (nᵀv);
   orientation q_{k+1} = exp(ω Δt) ⊗ q_k and angle θ_{k+1} = θ_k + ω Δt.

The emulated vision of the simulator feeds ground-truth positions (plus noise) into the same
filter: ``BallFilter.step(position, t)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ._validation import as_float_array, real_number
from .ball_state import BallState, BallStatus
from .errors import EstimatorTypeError, EstimatorValueError
from .options import BallTrackerOptions
from .transforms import quaternion_from_rotvec, quaternion_multiply

__all__ = ["BallFilter", "cv_steady_state", "reject_outliers"]


def reject_outliers(positions: np.ndarray, sigmas: float, min_distance: float
                    ) -> np.ndarray:
    """Boolean (m,) mask of the positions (m, 3) kept by the median + MAD rule (m >= 3).

    For m <= 2 every position is kept (nothing to vote with); callers resolve pairs.
    """
    P = np.asarray(positions, dtype=float)
    if len(P) <= 2:
        return np.ones(len(P), bool)
    med = np.median(P, axis=0)
    d = np.linalg.norm(P - med, axis=1)
    thr = max(sigmas * 1.4826 * float(np.median(d)), min_distance)
    return d <= thr


@dataclass
class _Track:
    t: float
    p: np.ndarray
    v: np.ndarray
    P: np.ndarray | None  # Kalman covariance (6, 6)
    q: np.ndarray
    angle: np.ndarray
    last_measurement_t: float
    n_updates: int


class BallFilter:
    """Position measurements -> :class:`BallState` (outlier rejection, averaging, filtering,
    rolling). One step verb: ``state = filter.step(positions, t)``.

    Args:
        options: :class:`BallTrackerOptions` (radius, filter, gates, ...).
    """

    def __init__(self, options: BallTrackerOptions | None = None):
        self.options = options if options is not None else BallTrackerOptions()
        n = np.asarray(self.options.table_normal, dtype=float)
        self._n = n / np.linalg.norm(n)
        self._track: _Track | None = None
        self._last_t: float | None = None
        self.last_valid_state: BallState | None = None

    def reset(self) -> None:
        """Forget the track (next accepted measurement re-initialises)."""
        self._track = None
        self._last_t = None
        self.last_valid_state = None

    @property
    def tracking(self) -> bool:
        """True while a track exists (not lost)."""
        return self._track is not None

    # ------------------------------------------------------------------ prediction
    def predict_position(self, t: float) -> np.ndarray | None:
        """Constant-velocity prediction of the position at time t [s] (None without a track)."""
        if self._track is None:
            return None
        return self._track.p + self._track.v * (t - self._track.t)

    # ------------------------------------------------------------------ the step
    def step(self, positions: np.ndarray | None, t: float,
             names: tuple[str, ...] | None = None) -> BallState:
        """Fuse this step's per-camera positions measured at time t.

        Args:
            positions: (3,) one position, (m, 3) one per camera (rows may be NaN for cameras
                without a detection), or None / (0, 3) for no measurement [m].
            t: measurement time [s], strictly increasing.
            names: optional (m,) camera names (for ``BallState.rejected``).

        Returns:
            The state estimate (status says whether it is usable).
        """
        t = real_number("t", t)
        if self._last_t is not None and t <= self._last_t:
            raise EstimatorValueError(f"t must increase strictly: got {t} after {self._last_t}")
        if positions is None:
            P = np.zeros((0, 3))
        else:
            P = as_float_array("positions", positions, finite=False)
            if P.shape == (3,):
                P = P[None, :]
            if P.ndim != 2 or P.shape[1] != 3:
                raise EstimatorValueError(f"positions must have shape (3,) or (m, 3), got "
                                          f"{P.shape}")
            if np.any(np.isinf(P)):
                raise EstimatorValueError("positions must not contain Inf (use NaN for 'no "
                                          "detection')")
        if names is None:
            names = tuple(f"camera{i}" for i in range(len(P)))
        else:
            if isinstance(names, str) or not hasattr(names, "__len__"):
                raise EstimatorTypeError(f"names must be a sequence of {len(P)} camera names, "
                                         f"got {type(names).__name__}")
            if len(names) != len(P):
                raise EstimatorValueError(f"names must hold one camera name per position: "
                                          f"{len(P)} position(s), got {len(names)} name(s)")
            names = tuple(names)
        self._last_t = t  # the input is valid: the step happens
        seen = np.all(np.isfinite(P), axis=1)
        P, names = P[seen], tuple(nm for nm, s in zip(names, seen) if s)
        z, rejected, inconsistent = self._fuse(P, names, t)
        if z is None:
            return self._no_measurement(t, rejected, inconsistent)
        return self._update(z, t, len(P) - len(rejected), rejected)

    def _fuse(self, P: np.ndarray, names: tuple[str, ...], t: float):
        o = self.options
        keep = np.ones(len(P), bool)
        pred = self.predict_position(t)
        if pred is not None and len(P):
            keep &= np.linalg.norm(P - pred, axis=1) <= o.gate_distance
        idx = np.flatnonzero(keep)
        if len(idx) >= 3:
            keep[idx] = reject_outliers(P[idx], o.outlier_sigmas, o.outlier_min_distance)
        elif len(idx) == 2 and np.linalg.norm(P[idx[0]] - P[idx[1]]) > 2 * o.outlier_min_distance:
            if pred is None:
                return None, tuple(names), True
            far = idx[np.argmax(np.linalg.norm(P[idx] - pred, axis=1))]
            keep[far] = False
        rejected = tuple(nm for nm, k in zip(names, keep) if not k)
        if not keep.any():
            return None, rejected, False
        return P[keep].mean(axis=0), rejected, False

    def _rolling(self, v: np.ndarray) -> np.ndarray:
        if not self.options.rolling:
            return np.zeros(3)
        n = self._n
        v_t = v - n * (n @ v)
        return np.cross(n, v_t) / self.options.radius

    def _integrate_rotation(self, tr: _Track, omega: np.ndarray, dt: float) -> None:
        tr.q = quaternion_multiply(quaternion_from_rotvec(omega * dt), tr.q)
        tr.q /= np.linalg.norm(tr.q)
        tr.angle = tr.angle + omega * dt

    def _state(self, tr: _Track, status: BallStatus, n: int, rejected: tuple[str, ...],
               z: np.ndarray | None, message: str = "") -> BallState:
        omega = self._rolling(tr.v) if status != BallStatus.INITIALIZING else np.zeros(3)
        st = BallState(tr.t, tr.p.copy(), tr.v.copy(), omega, tr.q.copy(), tr.angle.copy(),
                       status, n, rejected, np.full(3, np.nan) if z is None else z.copy(),
                       message)
        if st.valid:
            self.last_valid_state = st
        return st

    def _update(self, z: np.ndarray, t: float, n: int, rejected: tuple[str, ...]) -> BallState:
        o = self.options
        tr = self._track
        if tr is None:
            P0 = None
            if o.filter == "kalman":
                P0 = np.diag([o.kalman_measurement_std ** 2] * 3 + [1.0] * 3)
            self._track = _Track(t, z.copy(), np.zeros(3), P0, np.array([1.0, 0, 0, 0]),
                                 np.zeros(3), t, 1)
            return self._state(self._track, BallStatus.INITIALIZING, n, rejected, z,
                               "first measurement: velocity not estimated yet")
        dt = t - tr.t
        omega_prev = self._rolling(tr.v)
        if o.filter in ("lowpass", "none"):
            a = 1.0 if o.filter == "none" else dt / (1.0 / (2 * np.pi * o.position_cutoff_hz)
                                                     + dt)
            p_new = tr.p + a * (z - tr.p)
            v_fd = (p_new - tr.p) / dt
            if tr.n_updates == 1 or o.velocity_cutoff_hz is None:
                v_new = v_fd
            else:
                b = dt / (1.0 / (2 * np.pi * o.velocity_cutoff_hz) + dt)
                v_new = tr.v + b * (v_fd - tr.v)
            tr.p, tr.v = p_new, v_new
        else:
            tr.p, tr.v, tr.P = _kalman_step(tr.p, tr.v, tr.P, z, dt, o.kalman_accel_std,
                                            o.kalman_measurement_std)
        # the rotation over [t_prev, t] uses the mean of the old and new rolling rates
        self._integrate_rotation(tr, 0.5 * (omega_prev + self._rolling(tr.v)), dt)
        tr.t = t
        tr.last_measurement_t = t
        tr.n_updates += 1
        return self._state(tr, BallStatus.OK, n, rejected, z)

    def _no_measurement(self, t: float, rejected: tuple[str, ...], inconsistent: bool
                        ) -> BallState:
        tr = self._track
        if tr is None:
            if inconsistent:
                return BallState.invalid(t, BallStatus.INCONSISTENT,
                                         "two cameras disagree and there is no track to decide",
                                         rejected)
            return BallState.invalid(t, BallStatus.NOT_INITIALIZED, "no ball measured yet",
                                     rejected)
        if t - tr.last_measurement_t > self.options.max_coast_time:
            self._track = None
            return BallState.invalid(t, BallStatus.LOST,
                                     f"no accepted measurement for "
                                     f"{t - tr.last_measurement_t:.3f} s", rejected)
        dt = t - tr.t
        omega = self._rolling(tr.v)
        tr.p = tr.p + tr.v * dt
        if tr.P is not None:
            F = _cv_transition(dt)
            tr.P = F @ tr.P @ F.T + _cv_process_noise(dt, self.options.kalman_accel_std)
        self._integrate_rotation(tr, omega, dt)
        tr.t = t
        status = BallStatus.INCONSISTENT if inconsistent else BallStatus.PREDICTED
        return self._state(tr, status, 0, rejected, None,
                           "extrapolated: no accepted measurement this step")


def _cv_transition(dt: float) -> np.ndarray:
    F = np.eye(6)
    F[:3, 3:] = dt * np.eye(3)
    return F


def _cv_process_noise(dt: float, accel_std: float) -> np.ndarray:
    q = accel_std ** 2
    Q = np.zeros((6, 6))
    Q[:3, :3] = q * dt ** 4 / 4 * np.eye(3)
    Q[:3, 3:] = Q[3:, :3] = q * dt ** 3 / 2 * np.eye(3)
    Q[3:, 3:] = q * dt ** 2 * np.eye(3)
    return Q


def _kalman_step(p, v, P, z, dt, accel_std, meas_std):
    F = _cv_transition(dt)
    x = F @ np.concatenate([p, v])
    P = F @ P @ F.T + _cv_process_noise(dt, accel_std)
    S = P[:3, :3] + meas_std ** 2 * np.eye(3)  # H = [I 0]
    K = np.linalg.solve(S, P[:3, :]).T  # P H^T S^-1 (S symmetric)
    x = x + K @ (z - x[:3])
    P = P - K @ P[:3, :]
    P = 0.5 * (P + P.T)
    return x[:3], x[3:], P


def cv_steady_state(dt: float, accel_std: float, measurement_std: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Steady state of the per-axis constant-velocity Kalman filter (``filter="kalman"``): the
    discrete algebraic Riccati equation of F = [[1, dt], [0, 1]], white-acceleration Q, H = [1 0].

    Args:
        dt: sample period [s]. accel_std: process noise [m/s²]. measurement_std: σ [m].

    Returns:
        (K (2,), P (2, 2)): the gain on (position, velocity) [-, 1/s] and the posterior
        covariance [m², m²/s; m²/s, m²/s²] the filter converges to with samples every dt.
    """
    F = np.array([[1.0, dt], [0.0, 1.0]])
    Q = accel_std ** 2 * np.array([[dt ** 4 / 4, dt ** 3 / 2], [dt ** 3 / 2, dt ** 2]])
    H = np.array([[1.0, 0.0]])
    prior = scipy.linalg.solve_discrete_are(F.T, H.T, Q, np.array([[measurement_std ** 2]]))
    K = (prior @ H.T / (H @ prior @ H.T + measurement_std ** 2)).ravel()
    return K, prior - np.outer(K, H @ prior)
