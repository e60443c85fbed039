r"""The C3+ projection (authors' ``C3Plus``, notes §3; DAIRLab/c3 PR #22).

C3+ adds the slack :math:`\eta = E x + F \lambda + H u + c` as a decision variable of the QP
step, which enforces that equality; the complementarity set then only couples each pair
:math:`(\lambda_i, \eta_i)`, and the weighted projection onto
:math:`\{\lambda \ge 0,\ \eta \ge 0,\ \lambda \circ \eta = 0\}` is closed form.

Variable layout (differs from the other projections):

* ``v`` has shape ``(N, n_z + n_lambda)``: per knot ``[x; lambda; u; eta]``.
* ``data.U`` has shape ``(N, n_z + n_lambda, n_z + n_lambda)`` in that same order. Only its
  diagonal entries on the lambda block (``w_lambda``) and on the eta block (``w_eta``) are
  used; off-diagonal entries and the x/u weights are ignored. A negative ``w_lambda`` or
  ``w_eta`` raises :class:`~c3mpc.errors.C3ValueError`.
* ``data.E, F, H, c`` only fix ``n_x, n_lambda, n_u`` (the equality is the QP step's job).
* The returned ``delta`` has the same ``(N, n_z + n_lambda)`` layout.

Rule (per pair, exactly the authors'): if ``eta_i·√w_eta > lambda_i·√w_lambda`` then
``lambda_i = 0`` (keep ``eta_i``) else ``eta_i = 0``; then clip both at ``>= 0``. ``x`` and
``u`` pass through. This is the exact weighted Euclidean projection of the pair onto the
complementarity set, so every knot is OPTIMAL with ``iterations = 0``.
"""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np

from ..errors import C3ValueError
from .base import Projection, ProjectionData, ProjectionResult, ProjectionStatus
from .lcp import _validate

__all__ = ["C3PlusProjection"]


class C3PlusProjection(Projection):
    """Closed-form C3+ projection of ``(lambda, eta)`` pairs; takes no options.

    See the module docstring for the ``[x; lambda; u; eta]`` layout of ``v``, ``U`` and the
    result.
    """

    name: ClassVar[str] = "c3plus"

    @staticmethod
    def _dims(data: ProjectionData) -> tuple[int, int, int]:
        E = np.shape(data.E)
        H = np.shape(data.H)
        if len(E) != 3 or len(H) != 3:
            raise C3ValueError(f"E and H must be (N, n_lambda, n_x) and (N, n_lambda, n_u), "
                               f"got {E} and {H}")
        return int(E[2]), int(E[1]), int(H[2])

    def _weights(self, U: np.ndarray, n_x: int, n_lam: int, n_u: int
                 ) -> tuple[np.ndarray, np.ndarray]:
        diag = np.diagonal(U, axis1=1, axis2=2)
        w_lam = diag[:, n_x:n_x + n_lam]
        w_eta = diag[:, n_x + n_lam + n_u:]
        for name, w in (("lambda", w_lam), ("eta", w_eta)):
            if np.any(w < 0):
                k, i = (int(j) for j in np.argwhere(w < 0)[0])
                raise C3ValueError(
                    f"C3+ projection weight w_{name}[{i}] at knot {k} is negative ({w[k, i]:.6g}); "
                    f"the diagonal {name} entries of U must be >= 0")
        return w_lam, w_eta

    def check(self, data: ProjectionData) -> None:
        """Raise :class:`C3ValueError` on a wrongly shaped U or a negative lambda/eta weight."""
        n_x, n_lam, n_u = self._dims(data)
        U = np.asarray(data.U, dtype=float)
        n = n_x + 2 * n_lam + n_u
        if U.ndim != 3 or U.shape[1:] != (n, n):
            raise C3ValueError(f"C3+ needs U of shape (N, {n}, {n}) = (N, n_z + n_lambda, ...) "
                               f"in the order [x; lambda; u; eta], got {U.shape}")
        self._weights(U, n_x, n_lam, n_u)

    def project(self, v: np.ndarray, data: ProjectionData, admm_iteration: int = 0
                ) -> ProjectionResult:
        """Project every ``(lambda_i, eta_i)`` pair of ``v`` (shape (N, n_z + n_lambda))."""
        t0 = time.perf_counter()
        n_x, n_lam, n_u = self._dims(data)
        n = n_x + 2 * n_lam + n_u
        v, _, _, _, _, U = _validate(v, data, n_cols=n)
        N = v.shape[0]
        w_lam, w_eta = self._weights(U, n_x, n_lam, n_u)
        sl = slice(n_x, n_x + n_lam)
        se = slice(n_x + n_lam + n_u, n)
        lam, eta = v[:, sl], v[:, se]
        keep_eta = eta * np.sqrt(w_eta) > lam * np.sqrt(w_lam)
        delta = v.copy()
        delta[:, sl] = np.maximum(np.where(keep_eta, 0.0, lam), 0.0)
        delta[:, se] = np.maximum(np.where(keep_eta, eta, 0.0), 0.0)
        return ProjectionResult(delta, np.full(N, ProjectionStatus.OPTIMAL, dtype=np.int64),
                                time.perf_counter() - t0, np.zeros(N, dtype=np.int64))
