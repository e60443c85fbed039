"""Evaluating plans: trajectory costs, LCS roll-outs, PD tracking, coarse/fine resampling.

The equivalents of DAIRLab/c3's ``TrajectoryEvaluator`` (``core/traj_eval.h``), as functions on
arrays (a trajectory is an array whose first axis is time):

* :func:`quadratic_trajectory_cost` — Σ_k (d_k − d^des_k)[s]ᵀ W_k[s, s] (d_k − d^des_k)[s] over
  an index subset s = start:end (their ``ComputeQuadraticTrajectoryCost``); a plan's cost is
  ``quadratic_trajectory_cost(x, Q, x_des) + quadratic_trajectory_cost(u, R)``, which equals
  ``C3Result.cost``;
* :func:`simulate_lcs` — roll an input plan out through the LCS (their
  ``SimulateLCSOverTrajectory``), optionally on a finer LCS with the inputs held;
* :func:`simulate_pd_tracking` — track a state plan with PD control plus the planned inputs
  as feed-forward (their ``SimulatePDControlWithLCS``);
* :func:`zero_order_hold` / :func:`downsample` and the plan versions
  :func:`zero_order_hold_plan` / :func:`downsample_plan`; :func:`fine_steps_per_coarse_step`.

One difference: their ``LCS::Simulate`` uses knot 0's matrices at every step; ours steps a
time-varying LCS with knot k's matrices at step k (identical for a time-invariant LCS).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lcs import LCS

from .errors import C3TypeError, C3ValueError

__all__ = ["quadratic_trajectory_cost", "simulate_lcs", "simulate_pd_tracking",
           "zero_order_hold", "zero_order_hold_plan", "downsample", "downsample_plan",
           "fine_steps_per_coarse_step"]


def _traj(name: str, value: Any, ndim: int = 2) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as e:
        raise C3TypeError(f"{name} must be a real array, got {type(value).__name__}") from e
    if arr.ndim != ndim or arr.shape[0] == 0:
        raise C3ValueError(f"{name} must be a non-empty {ndim}-D array (time first), got shape "
                           f"{arr.shape}")
    if not np.isfinite(arr).all():
        raise C3ValueError(f"{name} has a non-finite (NaN/Inf) entry")
    return arr


def _rate(name: str, rate: Any) -> int:
    if isinstance(rate, bool) or not isinstance(rate, (int, np.integer)) or rate < 1:
        raise C3ValueError(f"{name} must be an integer >= 1, got {rate!r}")
    return int(rate)


def quadratic_trajectory_cost(data: Any, weights: Any, desired: Any = None, start: int = 0,
                              end: int | None = None) -> float:
    """Σ_k (d_k − d^des_k)[start:end]ᵀ W_k[start:end, start:end] (d_k − d^des_k)[start:end].

    Args:
        data: (T, n) trajectory.
        weights: (n, n) for every k, or (T, n, n) per k.
        desired: None (zeros), (n,) for every k, or (T, n).
        start, end: the index subset [start, end) of each vector (default: all).

    Raises:
        ValueError: shapes that do not match, or 0 <= start <= end <= n violated.
    """
    d = _traj("data", data)
    T, n = d.shape
    W = np.asarray(weights, dtype=float)
    if W.shape == (n, n):
        W = np.broadcast_to(W, (T, n, n))
    if W.shape != (T, n, n):
        raise C3ValueError(f"weights must have shape ({n}, {n}) or ({T}, {n}, {n}), got "
                           f"{W.shape}")
    ref = np.zeros(n) if desired is None else np.asarray(desired, dtype=float)
    ref = np.broadcast_to(ref, (T, n)) if ref.shape == (n,) else ref
    if ref.shape != (T, n):
        raise C3ValueError(f"desired must have shape ({n},) or ({T}, {n}), got {ref.shape}")
    end = n if end is None else end
    if not 0 <= start <= end <= n:
        raise C3ValueError(f"need 0 <= start <= end <= {n}, got start={start}, end={end}")
    e = (d - ref)[:, start:end]
    return float(np.einsum("ka,kab,kb->", e, W[:, start:end, start:end], e))


def fine_steps_per_coarse_step(coarse: LCS, fine: LCS) -> int:
    """r = coarse.dt / fine.dt, an integer (their ``CheckCoarseAndFineLCSCompatibility``).

    Raises:
        ValueError: different state or input dimensions, or a ratio that is not an integer.
    """
    if (coarse.n_x, coarse.n_u) != (fine.n_x, fine.n_u):
        raise C3ValueError(f"coarse and fine LCS must have the same n_x, n_u, got "
                           f"{(coarse.n_x, coarse.n_u)} and {(fine.n_x, fine.n_u)}")
    r = coarse.dt / fine.dt
    if r < 1 - 1e-9 or abs(r - round(r)) > 1e-9 * r:
        raise C3ValueError(f"coarse.dt / fine.dt must be an integer >= 1, got "
                           f"{coarse.dt} / {fine.dt} = {r}")
    return int(round(r))


def zero_order_hold(traj: Any, rate: int) -> np.ndarray:
    """Repeat each sample ``rate`` times: (T, n) -> (T·rate, n)."""
    return np.repeat(_traj("traj", traj), _rate("rate", rate), axis=0)


def downsample(traj: Any, rate: int) -> np.ndarray:
    """Every ``rate``-th sample: (T·rate, n) -> (T, n); T·rate must divide evenly."""
    t = _traj("traj", traj)
    rate = _rate("rate", rate)
    if t.shape[0] % rate:
        raise C3ValueError(f"traj has {t.shape[0]} samples, not a multiple of rate={rate}")
    return t[::rate].copy()


def _plan(x: Any, u: Any) -> tuple[np.ndarray, np.ndarray]:
    x, u = _traj("x", x), _traj("u", u)
    if x.shape[0] != u.shape[0] + 1:
        raise C3ValueError(f"x must have one more sample than u (N+1 states, N inputs), got "
                           f"{x.shape[0]} and {u.shape[0]}")
    return x, u


def zero_order_hold_plan(x: Any, u: Any, rate: int) -> tuple[np.ndarray, np.ndarray]:
    """(x (N+1, n_x), u (N, n_u)) -> (x (N·rate+1, n_x), u (N·rate, n_u)): states and inputs
    held over the fine steps, the final state kept."""
    x, u = _plan(x, u)
    return np.vstack([zero_order_hold(x[:-1], rate), x[-1:]]), zero_order_hold(u, rate)


def downsample_plan(x: Any, u: Any, rate: int) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of :func:`zero_order_hold_plan`.

    (N·rate+1, n_x), (N·rate, n_u) -> (N+1, n_x), (N, n_u): every rate-th sample, the final
    state kept.
    """
    x, u = _plan(x, u)
    return np.vstack([downsample(x[:-1], rate), x[-1:]]), downsample(u, rate)


def _check_lcs(lcs: Any, steps: int, name: str = "lcs") -> None:
    if not isinstance(lcs, LCS):
        raise C3TypeError(f"{name} must be an lcs.LCS, got {type(lcs).__name__}")
    if lcs.N is not None and lcs.N < steps:
        raise C3ValueError(f"{name} has {lcs.N} knots, the roll-out needs {steps}")


def simulate_lcs(x0: Any, u_plan: Any, lcs: LCS, fine_lcs: LCS | None = None) -> np.ndarray:
    """Roll ``u_plan`` (N, n_u) out from ``x0`` (n_x,) through the LCS: (N+1, n_x) states.

    Each step solves the LCP for λ (``LCS.step``). With ``fine_lcs`` (time step lcs.dt / r)
    each input is held for r fine steps and every r-th state is returned.
    """
    u = _traj("u_plan", u_plan)
    x0 = _traj("x0", x0, ndim=1)
    if x0.shape != (lcs.n_x,) or u.shape[1] != lcs.n_u:
        raise C3ValueError(f"x0 must be ({lcs.n_x},) and u_plan (N, {lcs.n_u}), got "
                           f"{x0.shape} and {u.shape}")
    sim, rate = lcs, 1
    if fine_lcs is not None:
        rate = fine_steps_per_coarse_step(lcs, fine_lcs)
        sim, u = fine_lcs, zero_order_hold(u, rate)
    _check_lcs(sim, u.shape[0], "fine_lcs" if fine_lcs is not None else "lcs")
    x = np.empty((u.shape[0] + 1, lcs.n_x))
    x[0] = x0
    for k in range(u.shape[0]):
        x[k + 1] = sim.step(x[k], u[k], k if sim.N is not None else 0)[0]
    return x[::rate].copy()


def simulate_pd_tracking(x_plan: Any, Kp: Any, Kd: Any, lcs: LCS, u_plan: Any = None,
                         fine_lcs: LCS | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Track a state plan with PD control through the LCS (their ``SimulatePDControlWithLCS``).

    u_k = K_p (x^plan_k − x_k) + K_d (x^plan_k − x_k) [+ u^plan_k], where K_p (n_u, n_x) has
    the non-zero entries of ``Kp`` (n_x,) in order, one per input (the actuated positions),
    and K_d likewise from ``Kd`` (the actuated velocities); x_0 = x^plan_0.

    Args:
        x_plan: (N+1, n_x) planned states.
        Kp, Kd: (n_x,) gains with exactly n_u non-zero entries each.
        lcs: the LCS to simulate.
        u_plan: (N, n_u) feed-forward inputs, or None (no feed-forward).
        fine_lcs: simulate on this finer LCS with the plan zero-order held, then downsample.

    Returns:
        (x (N+1, n_x), u (N, n_u)) simulated states and applied inputs (on the coarse grid).
    """
    x_plan = _traj("x_plan", x_plan)
    n_x, n_u = lcs.n_x, lcs.n_u
    N = x_plan.shape[0] - 1
    ff = u_plan is not None
    u_plan = np.zeros((N, n_u)) if u_plan is None else u_plan
    x_plan, u_plan = _plan(x_plan, u_plan)
    if x_plan.shape[1] != n_x or u_plan.shape[1] != n_u:
        raise C3ValueError(f"x_plan must be (N+1, {n_x}) and u_plan (N, {n_u}), got "
                           f"{x_plan.shape} and {u_plan.shape}")
    gains = []
    for name, K in (("Kp", Kp), ("Kd", Kd)):
        K = _traj(name, K, ndim=1)
        nz = np.flatnonzero(K)
        if K.shape != (n_x,) or nz.size != n_u:
            raise C3ValueError(f"{name} must have shape ({n_x},) with exactly n_u={n_u} non-zero "
                               f"entries, got shape {K.shape} with {nz.size}")
        M = np.zeros((n_u, n_x))
        M[np.arange(n_u), nz] = K[nz]
        gains.append(M)
    K = gains[0] + gains[1]
    sim, rate = lcs, 1
    if fine_lcs is not None:
        rate = fine_steps_per_coarse_step(lcs, fine_lcs)
        sim = fine_lcs
        x_plan, u_plan = zero_order_hold_plan(x_plan, u_plan, rate)
    steps = u_plan.shape[0]
    _check_lcs(sim, steps, "fine_lcs" if fine_lcs is not None else "lcs")
    x = np.empty((steps + 1, n_x))
    u = np.empty((steps, n_u))
    x[0] = x_plan[0]
    for k in range(steps):
        u[k] = K @ (x_plan[k] - x[k]) + (u_plan[k] if ff else 0.0)
        x[k + 1] = sim.step(x[k], u[k], k if sim.N is not None else 0)[0]
    if rate > 1:
        return downsample_plan(x, u, rate)
    return x, u
