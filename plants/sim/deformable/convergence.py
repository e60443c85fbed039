"""Seed 004 Fig. 9's measure: the relative energy error of the local-global iterates,
e_k = (ε(q^k) − ε(q*)) / (ε(q⁰) − ε(q*)), with ε the incremental potential of Eq. 1, q⁰ the
solver's initial guess (by default x_t + h v_t + h² g, the inertial prediction; the twisting
bar has no gravity) and q* the step's minimizer (many iterations of the complete solve with the
simulator's options; its gradient norm is returned so a caller can check it is converged)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import numpy as np

from .simulator import DeformableSimulator

__all__ = ["EnergyConvergence", "relative_energy_error"]


@dataclass(frozen=True)
class EnergyConvergence:
    """e_k per global step or variant (arrays (iterations,), index k − 1), wall time per
    iteration [s], the reference's relative gradient norm ‖∇ε(q*)‖ / ‖∇ε(q⁰)‖ on the free nodes,
    and q* itself."""

    errors: dict
    seconds_per_iteration: dict
    reference_gradient: float
    q_star: np.ndarray | None = None  # (n, 3) [m], the reference minimizer


def relative_energy_error(sim: DeformableSimulator, iterations: int = 20, reference_iterations: int = 2000,
                          global_steps=("sparse_inverse", "jacobi"), variants: dict | None = None) -> EnergyConvergence:
    """e_k, k = 1..iterations, of one step from ``sim``'s current state for each global step
    (contact-free worlds only), keyed by the global step's name; or, with ``variants`` (label →
    dict of :class:`FBAOptions` fields to replace, e.g. ``{"plain": {"anderson_window": 0}}``),
    for each variant, keyed by its label. ``sim`` is left unchanged."""
    import time

    x, v, t = sim.x.copy(), sim.v.copy(), sim.t
    h = sim.dt
    x_tilde = x + h * v + h * h * sim.world.gravity
    free = sim.system.free
    ref = DeformableSimulator(sim.world, dt=h, solver_options=replace(sim.options, global_step="sparse_inverse"))
    ref.set_state(x, v, t)
    rec: list = []
    ref.step(iterations=reference_iterations, record=rec)
    q_star = rec[-1]
    sysm = ref.system
    e_star = sysm.incremental_potential(q_star, x_tilde)
    x_pin = np.concatenate([b.pinned_positions(t + h) for b in sim.world.bodies])

    def initial(guess):  # the solver's q⁰ (pinned nodes at their new positions)
        q0 = {"predicted": x_tilde, "previous": x, "extrapolated": x + h * v}[guess].copy()
        q0[sysm.pinned] = x_pin
        return q0

    q0 = initial(sim.options.initial_guess)
    g_star = np.linalg.norm(sysm.incremental_potential_gradient(q_star, x_tilde)[free])
    g0 = np.linalg.norm(sysm.incremental_potential_gradient(q0, x_tilde)[free])
    if variants is None:
        variants = {gs: {"global_step": gs} for gs in global_steps}
    errors, times = {}, {}
    for gs, changes in variants.items():
        s = DeformableSimulator(sim.world, dt=h, solver_options=replace(sim.options, **changes))
        e0 = sysm.incremental_potential(initial(s.options.initial_guess), x_tilde)
        s.set_state(x, v, t)
        if s.options.anderson_carry and s.options.anderson_window == sim.options.anderson_window:
            s._anderson = copy.deepcopy(sim._anderson)  # the step ``sim`` would take next
        rec = []
        t0 = time.perf_counter()
        s.step(iterations=iterations, record=rec)
        times[gs] = (time.perf_counter() - t0) / iterations
        errors[gs] = np.array([(s.system.incremental_potential(q, x_tilde) - e_star) / (e0 - e_star) for q in rec])
    return EnergyConvergence(errors, times, float(g_star / g0), q_star)
