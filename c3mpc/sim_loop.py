"""C3 inside the contact simulator at a fixed control rate (issue 19 item 5).

:func:`run_in_simulator` closes the loop between a controller that plans on a *planning plant*
(a :class:`plants.Plant`, e.g. the :class:`plants.multibody.MultibodyPlant` of a task file) and
the stiff contact simulator :class:`plants.sim.Simulator` of the same robot:

every control period ``1 / control_rate`` (a whole number of simulator steps)

1. the simulator's (q, v) is mapped to the planning state x (by joint name, see
   :class:`StateMap`); the unit quaternions of free and spherical joints (the plant's
   ``quaternion_indices``) are taken in the hemisphere of the goal's (q and −q are the same
   orientation), so a cost on the raw components measures the short way round;
2. the controller re-linearizes (``controller.update_lcs(plant.lcs(x, u_prev))`` when the plant
   is state dependent) and solves from x; the wall time of this is the *solve time*;
3. the plan's first input u₀ becomes generalized forces τ = B u₀ on the simulator's dofs and is
   held (zero-order hold) until the next command; a plant with ``gravity_compensation`` adds
   its ``feedforward(q)`` (S g(q)) at every simulator step, as a robot's low-level loop does. With ``delay="measured"`` the new command
   takes effect only after the measured solve time has passed in simulated time (rounded up to
   simulator steps; the previous command is held meanwhile), as on a robot where planning takes
   time; ``delay=<seconds>`` uses a fixed latency instead.

The log is a :class:`c3mpc.runner.ClosedLoopLog` (the same format as :func:`run_closed_loop`),
sampled at the control instants; the full-rate simulator trajectory is in its ``extras``.
This is the runner layer: it may import :mod:`plants`.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .errors import C3ValueError
from .result import count_failed, count_not_converged
from .runner import ClosedLoopLog

__all__ = ["StateMap", "run_in_simulator"]


@dataclass(frozen=True)
class StateMap:
    """Index maps between a planning plant's state/input and a simulator scene's (q, v, τ).

    A floating base is Pinocchio's free-flyer in the planning plant and the scene's free root
    (translation + spherical joint) in the simulator, both named ``root_joint``: the same
    configuration (position, quaternion x, y, z, w) but the linear velocity in the root frame
    (plant) or in the world frame (scene); :attr:`free_roots` lists them and :meth:`state`,
    :meth:`scene_state` and :meth:`forces` rotate that part (:mod:`plants.multibody.free_root`).

    Attributes:
        q_index: (n_q_plan,) simulator q entry of each planning q entry.
        v_index: (n_v_plan,) simulator v entry of each planning v entry.
        B: (n_v_plan, n_u) the planning plant's actuation (τ_plan = B u).
        n_v_sim: the simulator's n_v.
        free_roots: per floating base, (planning q index of its configuration, planning v index of
            its velocity); default none.
    """

    q_index: np.ndarray
    v_index: np.ndarray
    B: np.ndarray
    n_v_sim: int
    free_roots: tuple[tuple[int, int], ...] = ()

    @classmethod
    def by_joint_name(cls, plant: Any, scene: Any, prefix: str = "") -> "StateMap":
        """Match every joint of ``plant.model`` to the scene joint named ``prefix + name``.

        A planning free-flyer matches a scene free root of the same name (see the class);
        otherwise the two joints must be of one type.

        Raises:
            ValueError: a planning joint has no scene joint of that name, or the two joints
                differ in size or type (names the joint).
        """
        from plants.multibody.free_root import is_free_flyer, is_scene_free_root

        pm, sm = plant.model, scene.model
        snames = list(sm.names)
        q_idx: list[int] = []
        v_idx: list[int] = []
        roots: list[tuple[int, int]] = []
        for j in range(1, pm.njoints):
            name = prefix + pm.names[j]
            if name not in snames:
                raise C3ValueError(f"planning joint {pm.names[j]!r} has no joint {name!r} in the "
                                   f"simulator scene (scene joints: {', '.join(snames[1:])})")
            a, b = pm.joints[j], sm.joints[snames.index(name)]
            if (a.nq, a.nv) != (b.nq, b.nv):
                raise C3ValueError(f"joint {name!r}: planning model has nq={a.nq}, nv={a.nv}, the "
                                   f"scene nq={b.nq}, nv={b.nv}")
            if is_free_flyer(a) and is_scene_free_root(b):
                roots.append((a.idx_q, a.idx_v))
            elif a.shortname() != b.shortname():
                raise C3ValueError(f"joint {name!r}: the planning model's is a {a.shortname()}, "
                                   f"the scene's a {b.shortname()} (a floating base: add the "
                                   f"robot with floating_base in both, e.g. from one task file)")
            q_idx += range(b.idx_q, b.idx_q + b.nq)
            v_idx += range(b.idx_v, b.idx_v + b.nv)
        return cls(np.array(q_idx, dtype=np.int64), np.array(v_idx, dtype=np.int64),
                   np.asarray(plant.B, dtype=float), int(sm.nv), tuple(roots))

    def state(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The planning state x = [q_plan; v_plan] from the simulator's (q, v)."""
        from plants.multibody.free_root import quaternion_rotation

        x = np.concatenate([q[self.q_index], v[self.v_index]])
        n_q = self.q_index.size
        for iq, iv in self.free_roots:
            lin = slice(n_q + iv, n_q + iv + 3)
            x[lin] = quaternion_rotation(x[iq + 3:iq + 7]).T @ x[lin]
        return x

    def scene_state(self, x: np.ndarray, q: np.ndarray,
                    v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The simulator's (q, v) with the planning state x written in (the inverse of
        :meth:`state`); entries of the scene outside the plan keep their value in (q, v).

        Args:
            x: (n_q_plan + n_v_plan,) planning state.
            q, v: (n_q_sim,), (n_v_sim,) the scene state to start from (not modified).
        """
        from plants.multibody.free_root import quaternion_rotation

        n_q = self.q_index.size
        x = np.asarray(x, dtype=float)
        if x.shape != (n_q + self.v_index.size,):
            raise C3ValueError(f"x must have shape ({n_q + self.v_index.size},), got {x.shape}")
        q_out, v_out = np.array(q, dtype=float), np.array(v, dtype=float)
        q_out[self.q_index] = x[:n_q]
        v_plan = x[n_q:].copy()
        for iq, iv in self.free_roots:
            v_plan[iv:iv + 3] = quaternion_rotation(x[iq + 3:iq + 7]) @ v_plan[iv:iv + 3]
        v_out[self.v_index] = v_plan
        return q_out, v_out

    def generalized_forces(self, tau_plan: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        """(n_v_sim,) the scene's generalized forces of the planning plant's ``tau_plan``
        (n_v_plan,) (zero on other dofs). A force on a floating base's linear dofs is rotated to
        the world frame, which needs the simulator's ``q``.

        Raises:
            ValueError: a force on a floating base's linear dofs and no ``q``.
        """
        from plants.multibody.free_root import quaternion_rotation

        tau_plan = np.array(tau_plan, dtype=float)
        for iq, iv in self.free_roots:
            if np.any(tau_plan[iv:iv + 3]):
                if q is None:
                    raise C3ValueError("a force on a floating base's linear dofs needs the "
                                       "simulator's q (its orientation)")
                quat = np.asarray(q, dtype=float)[self.q_index[iq + 3:iq + 7]]
                tau_plan[iv:iv + 3] = quaternion_rotation(quat) @ tau_plan[iv:iv + 3]
        tau = np.zeros(self.n_v_sim)
        tau[self.v_index] = tau_plan
        return tau

    @property
    def rotates_forces(self) -> bool:
        """Whether the input reaches a floating base's linear dofs (then :meth:`forces` needs q)."""
        return any(np.any(self.B[iv:iv + 3]) for _, iv in self.free_roots)

    def forces(self, u: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        """(n_v_sim,) generalized forces of the planning input u (zero on other dofs); ``q`` (the
        simulator's) is needed only where :attr:`rotates_forces`."""
        return self.generalized_forces(self.B @ u, q)


def _delay_steps(delay: Any, solve_time: float, dt: float) -> int:
    if delay == "none":
        return 0
    seconds = solve_time if delay == "measured" else float(delay)
    return int(math.ceil(seconds / dt - 1e-9))


def run_in_simulator(plant: Any, controller: Any, simulator: Any, duration: float, *,
                     control_rate: float | None = None, x_des: Any = None, Q: Any = None,
                     R: Any = None, delay: str | float = "none",
                     state_map: StateMap | None = None,
                     stop: Callable[[np.ndarray, float], bool] | None = None,
                     progress: bool = False, stream: Any = None) -> ClosedLoopLog:
    """Run ``controller`` on ``plant``'s model inside ``simulator`` at ``control_rate``.

    Args:
        plant: the planning plant (:class:`plants.Plant`; for the default state map also
            ``model`` and ``B``, as a :class:`plants.multibody.MultibodyPlant`).
        controller: a :class:`c3mpc.C3` built on ``plant.lcs`` (anything with ``solve(x)``
            returning ``.u`` (N, n_u) and ``.status``, and ``update_lcs(lcs)``).
        simulator: a :class:`plants.sim.Simulator` of the same robot, at its start state (its
            ``controller`` is replaced during the run and restored after it, also on error).
        duration: simulated time [s] (> 0).
        control_rate: re-planning rate [Hz] (default ``1 / plant.dt``); the control period is
            rounded to a whole number of simulator steps (at least one).
        x_des, Q, R: target and weights of the logged stage cost (default: ``plant.defaults``).
        delay: ``"none"`` (the command acts at the instant of the measurement), ``"measured"``
            (it acts after the measured solve time) or a latency in [s] (>= 0).
        state_map: the (q, v) ↔ x and u → τ maps (default :meth:`StateMap.by_joint_name`).
        stop: optional ``stop(x, t) -> bool`` checked at each control instant.
        progress: print a progress bar to ``stream`` (default stderr).

    Returns:
        :class:`ClosedLoopLog` at the control instants: ``t`` (T+1,), ``x`` (T+1, n_x)
        planning states, ``u`` (T, n_u) commands, ``lam`` (T, n_lambda) the plan's first
        contact forces, ``solve_time`` (T,) [s], ``status`` (T,), ``stage_cost`` (T,).
        ``extras``: ``"control_rate"`` (the rate run [Hz]), ``"control_period_steps"``,
        ``"sim_t"``, ``"sim_q"``, ``"sim_v"`` (the full-rate trajectory), ``"applied_u"``
        ((n_steps, n_u) the input acting at each simulator step), ``"delay_steps"`` (T,),
        ``"failed_steps"`` (plans with a failed status), ``"not_converged_steps"`` (plans
        whose ADMM did not reach consensus, status NOT_CONVERGED), ``"sim_stats"`` (per
        simulator step, :data:`plants.sim.stepper.STAT_FIELDS`).

    Raises:
        ValueError: bad duration, rate or delay; a planning joint missing from the scene.
        plants.errors.ContactSolveError, SimulationDivergedError: the simulator failed (the
        state at failure is in the error).
    """
    duration = float(duration)
    if not (math.isfinite(duration) and duration > 0):
        raise C3ValueError(f"duration must be a positive time [s], got {duration}")
    rate = 1.0 / float(plant.dt) if control_rate is None else float(control_rate)
    if not (math.isfinite(rate) and rate > 0):
        raise C3ValueError(f"control_rate must be a positive rate [Hz], got {control_rate!r}")
    if not (delay in ("none", "measured") or (isinstance(delay, (int, float))
                                               and not isinstance(delay, bool)
                                               and math.isfinite(delay) and delay >= 0)):
        raise C3ValueError(f"delay must be 'none', 'measured' or a latency >= 0 [s], got "
                           f"{delay!r}")
    dt_sim = float(simulator.dt)
    period = max(1, int(round(1.0 / (rate * dt_sim))))
    n_steps = int(round(duration / dt_sim))
    T = max(1, int(math.ceil(n_steps / period)))
    smap = StateMap.by_joint_name(plant, simulator.scene) if state_map is None else state_map

    dflt = getattr(plant, "defaults", None)
    n_x, n_u, n_l = int(plant.n_x), int(plant.n_u), int(plant.n_lambda)
    Q = (dflt.Q if dflt is not None else np.zeros((n_x, n_x))) if Q is None else np.asarray(Q)
    R = (dflt.R if dflt is not None else np.zeros((n_u, n_u))) if R is None else np.asarray(R)
    x_des = (dflt.x_goal if dflt is not None else np.zeros(n_x)) if x_des is None \
        else np.asarray(x_des, dtype=float)
    state_dependent = bool(getattr(plant, "state_dependent", False))
    quaternions = tuple(int(i) for i in (getattr(plant, "quaternion_indices", ()) or ()))

    def measure() -> np.ndarray:  # the planning state; quaternions on x_des's side (q ≡ −q)
        x = smap.state(simulator.q, simulator.v)
        if quaternions:
            from plants.multibody.orientation import align_quaternions

            x = align_quaternions(x, x_des, quaternions)
        return x

    stream = sys.stderr if stream is None else stream

    xs = np.empty((T + 1, n_x))
    us = np.empty((T, n_u))
    lams = np.full((T, n_l), np.nan)
    times = np.empty(T)
    statuses = np.empty(T, dtype=int)
    costs = np.empty(T)
    delays = np.zeros(T, dtype=np.int64)
    sim_t = np.empty(n_steps + 1)
    sim_q = np.empty((n_steps + 1, simulator.model.nq))
    sim_v = np.empty((n_steps + 1, simulator.model.nv))
    applied = np.empty((n_steps, n_u))
    from plants.sim.stepper import STAT_FIELDS

    stats = {f: np.zeros(n_steps) for f in STAT_FIELDS}
    sim_t[0], sim_q[0], sim_v[0] = simulator.t, simulator.q, simulator.v

    held = np.zeros(n_u)  # the command acting now
    tau_held = smap.forces(held, simulator.q)
    previous_controller = simulator.controller
    feedforward = getattr(plant, "feedforward", None) \
        if getattr(plant, "gravity_compensation", False) else None

    def actuation(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        if feedforward is None and not smap.rotates_forces:
            return tau_held
        # a force on a floating base turns with it; the plant's gravity compensation, every step
        tau = smap.forces(held, q) if smap.rotates_forces else tau_held.copy()
        if feedforward is not None:
            tau += smap.generalized_forces(feedforward(q[smap.q_index]), q)
        return tau

    simulator.controller = actuation
    u_prev = held
    step = 0
    k = 0
    stopped = False
    try:
        bar = None
        if progress:
            from plants.progress import ProgressLine

            bar = ProgressLine(T, unit="plans", stream=stream)
        while step < n_steps:
            x = measure()
            xs[k] = x
            t_start = time.perf_counter()
            if state_dependent and hasattr(controller, "update_lcs"):
                controller.update_lcs(plant.lcs(x, u_prev))
            res = controller.solve(x)
            times[k] = time.perf_counter() - t_start
            statuses[k] = int(res.status)
            u_new = np.asarray(res.u[0], dtype=float)
            if not np.all(np.isfinite(u_new)):
                u_new = np.zeros(n_u)
            lam = getattr(res, "lam", None)
            if lam is not None and np.shape(lam)[-1] == n_l and len(lam):
                lams[k] = lam[0]
            e = x - x_des
            costs[k] = float(e @ Q @ e + u_new @ R @ u_new)
            us[k] = u_new
            delays[k] = min(_delay_steps(delay, times[k], dt_sim), period)
            end = min(step + period, n_steps)
            for i in range(step, end):
                if i - step == delays[k]:
                    held = u_new
                    tau_held = smap.forces(held, simulator.q)
                t0 = time.perf_counter()
                r = simulator.step()
                stats["step_time"][i] = time.perf_counter() - t0
                stats["status"][i] = int(r.status)
                stats["iterations"][i] = r.iterations
                stats["solve_time"][i] = r.solve_time
                applied[i] = held
                sim_t[i + 1], sim_q[i + 1], sim_v[i + 1] = simulator.t, simulator.q, simulator.v
            if delays[k] >= end - step:  # the command arrives after this period: it acts from now
                held = u_new
                tau_held = smap.forces(held, simulator.q)
            u_prev = u_new
            step = end
            k += 1
            if bar is not None:
                bar.update(k)
            if stop is not None and step < n_steps and stop(measure(), float(simulator.t)):
                stopped = True
                break
    finally:
        simulator.controller = previous_controller
    xs[k] = measure()
    t_ctrl = sim_t[0] + np.arange(k + 1) * period * dt_sim
    t_ctrl[-1] = sim_t[step]
    return ClosedLoopLog(
        t=t_ctrl, x=xs[:k + 1], u=us[:k], lam=lams[:k], solve_time=times[:k],
        status=statuses[:k], stage_cost=costs[:k], stopped_early=stopped,
        extras={"failed_steps": count_failed(statuses[:k]),
                "not_converged_steps": count_not_converged(statuses[:k]),
                "control_rate": 1.0 / (period * dt_sim), "control_period_steps": period,
                "delay": delay, "delay_steps": delays[:k], "sim_t": sim_t[:step + 1],
                "sim_q": sim_q[:step + 1], "sim_v": sim_v[:step + 1],
                "applied_u": applied[:step],
                "sim_stats": {f: a[:step] for f, a in stats.items()}})
