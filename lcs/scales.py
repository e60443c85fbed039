r"""ADMM weights G = U from the plant's own scales (docs/c3.md, "Scale-aware ADMM weights").

C3's consensus term :math:`σ (z − δ + w)^T G (z − δ + w)` adds to the plan's cost
:math:`\sum x^T Q x + u^T R u`, so G must be in the cost's units per unit² of each entry of
z = [x; λ; u]: a fixed G = 0.1·I is "0.1 per m², per N², per (m/s)²", which is heavy for a
robot measured in kilometres and weak for one measured in millimetres. This module chooses G
per entry as a fraction α of the cost's own curvature in that entry, one step ahead::

    G_x = α diag(Q)                  a state error costs what the plan's cost says
    G_λ = α diag(Dᵀ Q D)             a force error costs the state change it makes (D: λ → x⁺)
    G_u = α diag(R + Bᵀ Q B)         an input error: its own cost and the state change it makes

Multipliers that move no state (D's column zero, e.g. Stewart–Trinkle's γ, a sliding speed)
take the weight of the forces they shift: γ_j enters row i's slack with F_ij, which that row's
force closes through its Delassus entry F_ii > 0, so a change Δγ_j is worth a force change
F_ij Δγ_j / F_ii::

    G_λ,j = α Σ_i (F_ij / F_ii)² · diag(Dᵀ Q D)_i      over rows i with F_ii > 0, i ≠ j

**Units invariance.** Under a change of units x → S_x x, u → S_u u, λ → S_λ λ and of each
slack row s → S_c s (positive diagonal S), the LCS becomes (S_x A S_x⁻¹, S_x B S_u⁻¹, S_x D
S_λ⁻¹, S_x d, S_c E S_x⁻¹, S_c F S_λ⁻¹, S_c H S_u⁻¹, S_c c) and the same cost is Q → S_x⁻¹ Q
S_x⁻¹, R → S_u⁻¹ R S_u⁻¹; every formula above then gives G → S⁻¹ G S⁻¹, so the QP step, the
projection (whose MIQP has no big-M constant) and the plan are the same, in the new units
(``tests/test_admm_weights.py``).

``lcs`` computes it (pure LCS and cost algebra, so that ``plants.load_task_file`` can fill a
task's defaults with it); :mod:`c3mpc.admm_weights` re-exports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import LCSTypeError, LCSValueError
from .lcs import LCS

__all__ = ["scaled_admm_weights", "DEFAULT_ADMM_WEIGHT_FRACTION"]

DEFAULT_ADMM_WEIGHT_FRACTION = 0.5
"""α: the fraction of the cost's one-step curvature each entry of G gets. On the 1 m, 1 kg
jaw gripper (examples/own_robot/jaw_gripper) the one-step curvatures of λ and u are 0.1-0.6,
so α = 0.5 gives G_λ, G_u ≈ 0.05-0.3, the size of the task files' fixed G = 0.1·I there."""


def scaled_admm_weights(lcs: LCS, Q: Any, R: Any,
                        alpha: float = DEFAULT_ADMM_WEIGHT_FRACTION) -> np.ndarray:
    """The diagonal of G (= U) for C3 from the LCS and the cost (module docstring).

    Args:
        lcs: the LCS planned with (time-varying: knot 0's matrices).
        Q: (n_x, n_x) state cost (PSD). R: (n_u, n_u) input cost (PSD).
        alpha: the fraction α > 0 of the cost's curvature.

    Returns:
        (n_x + n_lambda + n_u,) nonnegative weights in C3's order [x; λ; u]; ``np.diag`` of it
        is G. An entry is 0 only where the cost does not see it at all (a state with Q_ii = 0,
        an input with R_ii = 0 that moves no costed state, a force that moves none).

    Raises:
        TypeError: ``lcs`` is not an :class:`lcs.LCS`. ValueError: Q or R of the wrong shape or
        not finite, or alpha not a positive finite number.
    """
    if not isinstance(lcs, LCS):
        raise LCSTypeError(f"lcs must be an lcs.LCS, got {type(lcs).__name__}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or \
            not (np.isfinite(alpha) and alpha > 0):
        raise LCSValueError(f"alpha must be a positive finite number, got {alpha!r}")
    n_x, n_l, n_u = lcs.n_x, lcs.n_lambda, lcs.n_u
    Q = np.asarray(Q, dtype=float)
    R = np.asarray(R, dtype=float)
    for name, M, n in (("Q", Q, n_x), ("R", R, n_u)):
        if M.shape != (n, n):
            raise LCSValueError(f"{name} must have shape ({n}, {n}), got {M.shape}")
        if not np.all(np.isfinite(M)):
            raise LCSValueError(f"{name} has a non-finite entry")
    st = lcs.stacked(1)
    B, D, F = st.B[0], st.D[0], st.F[0]
    h_x = np.diag(Q).copy()
    h_u = np.diag(R) + np.einsum("ij,ik,kj->j", B, Q, B)
    h_l = np.einsum("ij,ik,kj->j", D, Q, D)
    f = np.diag(F)
    rows = f > 0
    moves_nothing = ~np.any(D != 0, axis=0)
    if np.any(moves_nothing) and np.any(rows):
        ratio = np.zeros_like(F)
        ratio[rows] = F[rows] / f[rows, None]
        np.fill_diagonal(ratio, 0.0)
        via = np.einsum("ij,i->j", ratio ** 2, np.where(rows, h_l, 0.0))
        h_l = np.where(moves_nothing, via, h_l)
    return alpha * np.clip(np.concatenate([h_x, h_l, h_u]), 0.0, None)
