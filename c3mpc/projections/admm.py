r"""The ADMM projection of C3 (seed 003 §V-B3 "ADMM Projection"; Park & Boyd [17] §4.4).

The projection (23) of one knot is the nonconvex QCQP

.. math::

    \min_{\delta, s}\; (\delta - v)^\top U (\delta - v) \quad\text{s.t.}\quad
    s = E\delta^x + F\delta^\lambda + H\delta^u + c,\quad
    (\delta^\lambda_i, s_i) \in \mathcal{C} = \{(a, b): a \ge 0,\ b \ge 0,\ a b \le 0\}
    \;\; \forall i .

Park & Boyd's ADMM heuristic for nonconvex QCQPs keeps a copy of the variables for the
nonconvex constraints and alternates (scaled form, fixed penalty ``rho``):

1. convex step — an equality-constrained QP, here a linear solve with a per-knot matrix
   factorised once (the slack ``s`` is eliminated through its defining equality):
   :math:`\delta^{j+1} = \arg\min (\delta-v)^\top U(\delta-v)
   + \rho\|(\delta^\lambda, s(\delta)) - (p^j, r^j) + \mu^j\|^2`;
2. nonconvex step — the Euclidean projection of :math:`(\delta^\lambda, s) + \mu` onto
   :math:`\mathcal{C}^{n_\lambda}`, closed form per pair: ``(max(a, 0), 0)`` if ``a >= b``
   else ``(0, max(b, 0))``;
3. dual step — :math:`\mu \mathrel{+}= (\delta^\lambda, s) - (p, r)`.

The copy starts at the projection of ``v``'s own pairs, ``(p, r) = Π(v^λ, s(v))``, with
``μ = 0`` (no warm start across calls).

Faithfulness notes. Park & Boyd project onto each single-constraint set with a bisection
(their App. B); introducing the slack ``s`` makes every complementarity pair its own
2-variable set whose projection is the closed form above (what that bisection returns), and
one copy ``(p, r)`` of all pairs replaces their one copy per constraint (the pairs act on
disjoint coordinates; their per-constraint copies only add proximal terms on coordinates a
constraint does not touch). ``rho`` and the iteration budget are fixed, as in [17]; there is
no ``rho`` adaptation. Everything is vectorised over knots and pairs with numpy.

Termination and output. A knot has converged when the primal residual
``max|(δ^λ, s) − (p, r)|`` and the change of ``(p, r)`` are both at most
``tol·max(1, |v_k|∞, |c_k|∞)``; it is then frozen with status OPTIMAL and its convex-step
iterate δ is returned (complementary to within the tolerance). A knot still running after
``max_iterations`` is APPROXIMATE and returns the iterate with the smallest complementarity
violation ``max_i |min(δ^λ_i, s_i)|`` it produced. The seed warns that the method "fared
poorly for high dimensional projections ... rarely satisfying the complementarity
constraints"; APPROXIMATE is the expected outcome there.

``polish=True`` (off by default; not part of the seed's method) adds one exact step: fix the
final pattern of ``(p, r)`` (``λ_i = 0`` where ``p_i = 0``, else ``s_i = 0``), solve the
resulting equality-constrained projection exactly (batched KKT solve) and keep it for knots
where it is feasible; those knots are OPTIMAL with exact complementarity.
"""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np

from ..errors import C3ValueError
from .base import Projection, ProjectionData, ProjectionResult, ProjectionStatus
from .lcp import _validate

__all__ = ["ADMMProjection", "project_complementarity_pairs"]


def project_complementarity_pairs(a: np.ndarray, b: np.ndarray
                                  ) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise Euclidean projection of ``(a, b)`` onto ``{a ≥ 0, b ≥ 0, a·b = 0}``."""
    keep_a = a >= b
    return (np.where(keep_a, np.maximum(a, 0.0), 0.0),
            np.where(keep_a, 0.0, np.maximum(b, 0.0)))


class ADMMProjection(Projection):
    """ADMM heuristic (Park & Boyd) for the nonconvex projection QCQP (seed 003 §V-B3).

    Args:
        rho: fixed ADMM penalty on the consensus ``(δ^λ, s) = (p, r)``, in the units of U
            (the cost is ``(δ − v)ᵀU(δ − v) + rho·|·|²``). Default 10 (for the paper plants, whose
            U has weight 1 on λ, 10 converged on most knots; 1 and 100 did markedly worse).
        max_iterations: iteration budget (per call; knots that converge earlier stop early).
        tol: relative convergence tolerance (see the module docstring).
        epsilon: ``ε ≥ 0`` added to U in the convex step, so that it stays uniquely solvable
            for zero-weight entries (it pulls them towards v). Default 1e-9.
        polish: add the exact active-pattern step described in the module docstring.

    ``iterations`` holds the ADMM iterations each knot ran. Status: OPTIMAL (converged, or
    polished), APPROXIMATE (iteration budget reached).
    """

    name: ClassVar[str] = "admm"

    def __init__(self, rho: float = 10.0, max_iterations: int = 200, tol: float = 1e-6,
                 epsilon: float = 1e-9, polish: bool = False):
        if not (np.isfinite(rho) and rho > 0):
            raise C3ValueError(f"rho must be > 0, got {rho}")
        if int(max_iterations) < 1:
            raise C3ValueError(f"max_iterations must be >= 1, got {max_iterations}")
        if not (np.isfinite(tol) and tol > 0):
            raise C3ValueError(f"tol must be > 0, got {tol}")
        if not (np.isfinite(epsilon) and epsilon >= 0):
            raise C3ValueError(f"epsilon must be >= 0, got {epsilon}")
        self.rho = float(rho)
        self.max_iterations = int(max_iterations)
        self.tol = float(tol)
        self.epsilon = float(epsilon)
        self.polish = bool(polish)
        self._key: tuple | None = None
        self._mats: tuple[np.ndarray, ...] = ()
        self.last_residual = np.zeros(0)
        """Per-knot complementarity violation of the returned iterates (before polishing)."""

    # ------------------------------------------------------------------ helpers
    def _factor(self, E: np.ndarray, F: np.ndarray, H: np.ndarray, U: np.ndarray
                ) -> tuple[np.ndarray, ...]:
        """Per-knot matrices of the convex step, cached while the data do not change.

        With ``B = [S_λ; M]`` (``M = [E F H]``, ``S_λ`` selects λ), ``Y = (δ^λ, s)`` and the
        copy ``Z = (p, r)``, the convex step is
        ``δ = K⁻¹(W v + ρ Bᵀ(Z − μ − ĉ))``, ``K = W + ρ BᵀB``, ``W = sym(U) + εI``,
        ``ĉ = (0, c)``; so ``Y = B δ + ĉ`` is affine in ``Z − μ`` with matrix ``G = ρ B K⁻¹ Bᵀ``.
        Returns ``(M, W, B, Kinv, T = K⁻¹Bᵀ, G)``.
        """
        N, n_lam, n_x = E.shape
        key = (E.shape, H.shape, E.tobytes(), F.tobytes(), H.tobytes(), U.tobytes())
        if self._key != key:
            M = np.concatenate([E, F, H], axis=2)
            n_z = M.shape[2]
            W = 0.5 * (U + np.swapaxes(U, 1, 2)) + self.epsilon * np.eye(n_z)
            S = np.zeros((N, n_lam, n_z))
            S[:, np.arange(n_lam), n_x + np.arange(n_lam)] = 1.0
            B = np.concatenate([S, M], axis=1)
            K = W + self.rho * np.einsum("kij,kil->kjl", B, B)
            try:
                Kinv = np.linalg.inv(K)
            except np.linalg.LinAlgError as exc:
                raise C3ValueError(
                    "the ADMM convex step is singular: U + rho (S_λᵀS_λ + MᵀM) is not "
                    "positive definite (a zero-weight entry of U that no constraint touches); "
                    "use epsilon > 0") from exc
            T = np.einsum("kij,klj->kil", Kinv, B)
            G = self.rho * np.einsum("kij,kjl->kil", B, T)
            self._mats = (M, W, B, Kinv, T, G)
            self._key = key
        return self._mats

    def _polish(self, v: np.ndarray, M: np.ndarray, W: np.ndarray, c: np.ndarray,
                lam_zero: np.ndarray, n_x: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact projection with a fixed pattern; returns (delta, natural residual)."""
        N, n_lam, n_z = M.shape
        S = np.zeros((N, n_lam, n_z))
        S[:, np.arange(n_lam), n_x + np.arange(n_lam)] = 1.0
        C = np.where(lam_zero[:, :, None], S, M)
        d = np.where(lam_zero, 0.0, -c)
        KKT = np.zeros((N, n_z + n_lam, n_z + n_lam))
        KKT[:, :n_z, :n_z] = 2.0 * W
        KKT[:, :n_z, n_z:] = np.swapaxes(C, 1, 2)
        KKT[:, n_z:, :n_z] = C
        rhs = np.concatenate([2.0 * np.einsum("kij,kj->ki", W, v), d], axis=1)
        try:
            sol = np.linalg.solve(KKT, rhs[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            sol = np.einsum("kij,kj->ki", np.linalg.pinv(KKT), rhs)
        delta = sol[:, :n_z]
        lam = delta[:, n_x:n_x + n_lam]
        s = np.einsum("kij,kj->ki", M, delta) + c
        nat = np.abs(np.minimum(lam, s)).max(axis=1)
        nat[~np.all(np.isfinite(sol), axis=1)] = np.inf
        return delta, nat

    # ------------------------------------------------------------------ projection
    def project(self, v: np.ndarray, data: ProjectionData, admm_iteration: int = 0
                ) -> ProjectionResult:
        """Run the ADMM heuristic on all knots at once."""
        t0 = time.perf_counter()
        v, E, F, H, c, U = _validate(v, data)
        N, n_lam, n_x = E.shape
        if n_lam == 0:
            return ProjectionResult(v.copy(), np.zeros(N, np.int64), time.perf_counter() - t0,
                                    np.zeros(N, np.int64))
        M, W, B, Kinv, T, G = self._factor(E, F, H, U)
        rho = self.rho
        m = 2 * n_lam
        scale = np.maximum(1.0, np.maximum(np.abs(v).max(axis=1), np.abs(c).max(axis=1)))
        thr = self.tol * scale

        c_hat = np.concatenate([np.zeros((N, n_lam)), c], axis=1)
        Kwv = np.einsum("kij,kj->ki", Kinv, np.einsum("kij,kj->ki", W, v))
        a0 = Kwv - rho * np.einsum("kij,kj->ki", T, c_hat)          # δ = a0 + ρ T (Z − μ)
        y0 = np.einsum("kij,kj->ki", B, a0) + c_hat                # Y = y0 + G (Z − μ)
        Y = np.einsum("kij,kj->ki", B, v) + c_hat
        Z = np.concatenate(project_complementarity_pairs(Y[:, :n_lam], Y[:, n_lam:]), axis=1)
        mu = np.zeros((N, m))

        D_out = np.zeros((N, m))
        best_nat = np.full(N, np.inf)
        done = np.zeros(N, dtype=bool)
        iters = np.full(N, self.max_iterations, dtype=np.int64)
        # preallocated work arrays (the loop is dominated by numpy call overhead)
        D = np.empty((N, m))
        Y = np.empty((N, m))
        A = np.empty((N, m))
        Zn = np.empty((N, m))
        keep = np.empty((N, n_lam), dtype=bool)
        tmp = np.empty((N, m))
        nat = np.empty(N)
        for it in range(1, self.max_iterations + 1):
            np.subtract(Z, mu, out=D)
            np.matmul(G, D[:, :, None], out=Y[:, :, None])          # convex step
            Y += y0
            np.add(Y, mu, out=A)
            a, b = A[:, :n_lam], A[:, n_lam:]
            np.greater_equal(a, b, out=keep)                       # nonconvex step
            np.maximum(a, 0.0, out=Zn[:, :n_lam])
            np.maximum(b, 0.0, out=Zn[:, n_lam:])
            Zn[:, :n_lam] *= keep
            np.logical_not(keep, out=keep)
            Zn[:, n_lam:] *= keep
            np.subtract(Y, Zn, out=tmp)
            mu += tmp                                              # dual step
            prim = np.abs(tmp, out=tmp).max(axis=1)
            np.subtract(Zn, Z, out=tmp)
            dual = np.abs(tmp, out=tmp).max(axis=1)
            Z, Zn = Zn, Z
            np.minimum(Y[:, :n_lam], Y[:, n_lam:], out=tmp[:, :n_lam])
            np.abs(tmp[:, :n_lam]).max(axis=1, out=nat)
            conv = (prim <= thr) & (dual <= thr)
            keep_it = ~done & (conv | (nat < best_nat))
            if keep_it.any():
                D_out[keep_it] = D[keep_it]
                best_nat[keep_it] = nat[keep_it]
                conv &= ~done
                if conv.any():
                    iters[conv] = it
                    done |= conv
                    if done.all():
                        break
        out = a0 + rho * np.einsum("kij,kj->ki", T, D_out)
        p = Z[:, :n_lam]
        status = np.where(done, ProjectionStatus.OPTIMAL,
                          ProjectionStatus.APPROXIMATE).astype(np.int64)
        if self.polish:
            d_pol, nat_pol = self._polish(v, M, W, c, p <= 0.0, n_x)
            ok = nat_pol <= thr
            out[ok] = d_pol[ok]
            status[ok] = ProjectionStatus.OPTIMAL
        self.last_residual = best_nat
        return ProjectionResult(out, status, time.perf_counter() - t0, iters)
