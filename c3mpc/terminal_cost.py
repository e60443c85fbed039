r"""A terminal cost for C3 from one contact mode of the LCS: the mode's discrete Riccati solution.

With the contact rows ``A`` (a set of λ indices) held active, the LCS

.. math::

    x_{k+1} = A x_k + B u_k + D \lambda_k + d, \qquad
    0 \le \lambda \perp E x + F \lambda + H u + c \ge 0

reduces to a linear system: the active rows hold with equality,
:math:`\lambda_A = -F_{AA}^{-1}(E_A x + H_A u + c_A)`, the others are zero, so

.. math::

    x_{k+1} = (A - D_A F_{AA}^{-1} E_A)\, x_k + (B - D_A F_{AA}^{-1} H_A)\, u_k + \text{const}.

The stabilising solution P of the discrete algebraic Riccati equation of that pair with the stage
costs (Q, R) is the infinite-horizon cost-to-go of the mode's LQR, :math:`(x - x^d)^T P (x - x^d)`
to first order near the target. Used as C3's ``QN`` (eq. 15's terminal weight), it gives a short
horizon the value of the motion beyond it: the standard terminal ingredient of stabilising MPC
(Mayne et al. 2000), here for the contact mode the system should end in. The cart-pole's paper
defaults already use the contact-free DARE; for pivoting the seed's Q as QN leaves a per-step
re-planning loop in a limit cycle, while the DARE of the mode "box sticking on its ground corner"
settles it (docs/c3.md, "Pivoting: per-step re-planning").
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import scipy.linalg

from lcs import LCS

from .errors import C3TypeError, C3ValueError

__all__ = ["contact_mode_dynamics", "contact_mode_dare"]


def _active(active: Sequence[int], n_lambda: int) -> np.ndarray:
    idx = np.asarray(list(active), dtype=int) if len(active) else np.zeros(0, dtype=int)
    if (idx.ndim != 1 or np.any(idx < 0) or np.any(idx >= n_lambda)
            or np.unique(idx).size != idx.size):
        raise C3ValueError(f"active must be distinct contact indices in [0, {n_lambda}), got "
                           f"{list(active)}")
    return idx


def contact_mode_dynamics(lcs: LCS, active: Sequence[int], k: int = 0
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A_m (n_x, n_x), B_m (n_x, n_u), d_m (n_x,)) of the LCS at knot ``k`` with the contact rows
    ``active`` at equality and every other λ zero: ``x_{k+1} = A_m x + B_m u + d_m``.

    Raises:
        TypeError: ``lcs`` is not an :class:`lcs.LCS`.
        ValueError: bad indices, or F restricted to the active rows is singular (the mode does
            not determine λ).
    """
    if not isinstance(lcs, LCS):
        raise C3TypeError(f"lcs must be an lcs.LCS, got {type(lcs).__name__}")
    idx = _active(active, lcs.n_lambda)
    st = lcs.stacked(k + 1)
    A, B, D, d = st.A[k], st.B[k], st.D[k], st.d[k]
    if idx.size == 0:
        return A.copy(), B.copy(), d.copy()
    F_aa = st.F[k][np.ix_(idx, idx)]
    if np.linalg.cond(F_aa) > 1e12:
        raise C3ValueError(f"F restricted to the active contacts {idx.tolist()} is singular "
                           f"(condition number {np.linalg.cond(F_aa):.3g}): the mode does not "
                           f"determine their forces; choose another set of rows")
    rhs = np.column_stack([st.E[k][idx], st.H[k][idx], st.c[k][idx]])
    K = np.linalg.solve(F_aa, rhs)  # λ_A = −K [x; u; 1]
    n_x, n_u = lcs.n_x, lcs.n_u
    D_a = D[:, idx]
    return A - D_a @ K[:, :n_x], B - D_a @ K[:, n_x:n_x + n_u], d - D_a @ K[:, -1]


def contact_mode_dare(lcs: LCS, Q: Any, R: Any, active: Sequence[int], k: int = 0,
                      discount: float = 1.0) -> np.ndarray:
    """P (n_x, n_x): the stabilising DARE solution of :func:`contact_mode_dynamics` with the
    stage costs Q (n_x, n_x, PSD) and R (n_u, n_u, PD); use it as C3's ``QN``.

    ``discount`` γ in (0, 1] solves the discounted problem Σ γ^k (xᵀQx + uᵀRu), i.e. the DARE
    of (√γ A_m, √γ B_m): well posed also when the mode has uncontrollable states on the unit
    circle (a contact that ties two coordinates together), which the undiscounted one is not.

    Raises:
        ValueError: shapes, or no stabilising solution (the mode is not stabilisable with these
            inputs, e.g. a free-floating body whose active contacts transmit no input).
    """
    Q = np.asarray(Q, dtype=float)
    R = np.asarray(R, dtype=float)
    if Q.shape != (lcs.n_x, lcs.n_x):
        raise C3ValueError(f"Q must have shape ({lcs.n_x}, {lcs.n_x}), got {Q.shape}")
    if R.shape != (lcs.n_u, lcs.n_u):
        raise C3ValueError(f"R must have shape ({lcs.n_u}, {lcs.n_u}), got {R.shape}")
    if not (isinstance(discount, (int, float)) and not isinstance(discount, bool)
            and 0 < discount <= 1):
        raise C3ValueError(f"discount must be a number in (0, 1], got {discount!r}")
    Am, Bm, _ = contact_mode_dynamics(lcs, active, k)
    s = np.sqrt(float(discount))
    try:
        P = scipy.linalg.solve_discrete_are(s * Am, s * Bm, Q, R)
    except (np.linalg.LinAlgError, ValueError) as e:
        raise C3ValueError(f"no stabilising Riccati solution for the contact mode "
                           f"{list(active)}: {e}") from e
    if not np.all(np.isfinite(P)):
        raise C3ValueError(f"the Riccati solution for the contact mode {list(active)} is not "
                           f"finite")
    return 0.5 * (P + P.T)
