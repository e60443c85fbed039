r"""The QP step of C3 (seed 003 eq. 21), condensed and factor-once.

At ADMM iteration i the QP is

.. math::

    \min_{x,\lambda,u} \sum_{k=0}^{N} (x_k - x^d_k)^\top Q_k (x_k - x^d_k)
        + \sum_{k=0}^{N-1} u_k^\top R_k u_k
        + \sigma_i \sum_{k=0}^{N-1} (z_k - r_k)^\top G_k (z_k - r_k)

subject to :math:`x_0 = \hat x`, the LCS dynamics :math:`x_{k+1} = A_k x_k + B_k u_k +
D_k\lambda_k + d_k`, and the user's linear constraints; :math:`z_k = [x_k; \lambda_k; u_k]`,
:math:`r_k = \delta_k - w_k` and :math:`\sigma_i = \rho\,\rho_s^i` (Q_N is the terminal cost).

**Condensing.** With :math:`p_k = [\lambda_k; u_k]` and :math:`p = [p_0; \dots; p_{N-1}]` the
states are affine in p: :math:`X = [x_0; \dots; x_N] = S_x \hat x + s_d + T p`. The cost becomes
:math:`p^\top (H_c + \sigma_i H_G) p + 2 (g_c + \sigma_i g_G(r))^\top p` where H_c, H_G and the
maps giving g_c, g_G are computed once per LCS/cost update (docs/c3.md derives them).

**Factor once.** The sequence :math:`\sigma_i` is the same at every solve, so for an LCS that
does not change between solves the Cholesky factor of :math:`H_c + \sigma_i H_G` (equality-only
QPs) or the OSQP workspace (QPs with inequalities) of each ADMM iteration is built once and then
only re-used: a solve costs a few matrix-vector products and triangular solves per iteration.
A changed LCS (``set_data``) invalidates the caches; OSQP workspaces are then updated in place
(``update(Px=, Ax=)``), never rebuilt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse as sp

from ._dense_qp import GI_OPTIMAL, gi_solve

__all__ = ["LinearConstraint", "QPStepResult", "CondensedQP"]


@dataclass(frozen=True)
class LinearConstraint:
    """``lower <= C v_k <= upper`` on one variable block at the given knots.

    Attributes:
        variable: "state" (knots 1..N by default), "input" or "force" (knots 0..N-1).
        C: (r, n_block) matrix.
        lower, upper: (r,) bounds (±inf allowed).
        knots: knot indices, or None for the default range.
    """

    variable: str
    C: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    knots: tuple[int, ...] | None = None


@dataclass(frozen=True)
class QPStepResult:
    """One QP-step solution: z (N, n_z), the terminal state x_N and a success flag."""

    z: np.ndarray
    x_N: np.ndarray
    ok: bool
    status: str
    iterations: int


def _blockdiag(blocks: np.ndarray) -> np.ndarray:
    """(K, a, b) -> (K a, K b) block-diagonal matrix."""
    K, a, b = blocks.shape
    out = np.zeros((K, a, K, b))
    idx = np.arange(K)
    out[idx, :, idx, :] = blocks
    return out.reshape(K * a, K * b)


class CondensedQP:
    """Builds and solves the QP step for fixed dimensions, horizon and constraint layout.

    Args:
        n_x, n_lambda, n_u: LCS dimensions.
        N: horizon.
        constraints: the user's linear constraints (fixed for the lifetime of the object).
        osqp_settings: settings for OSQP when inequalities are present.
    """

    def __init__(self, n_x: int, n_lambda: int, n_u: int, N: int,
                 constraints: list[LinearConstraint], osqp_settings: dict[str, Any],
                 solver: str = "active-set", convex_sets: list[Any] | None = None,
                 reserve_force0: bool = False):
        self.n_x, self.n_lambda, self.n_u, self.N = n_x, n_lambda, n_u, N
        self.m = n_lambda + n_u
        self.n_z = n_x + self.m
        self.constraints = list(constraints)
        self._force0: np.ndarray | None = None
        self._force0_cache: dict[float, Any] = {}
        self._force0_K: np.ndarray | None = None
        self._force0_rows: slice | None = None
        if reserve_force0 and (self.constraints or convex_sets) and n_lambda:
            # λ_0 = value as a two-sided row block (bounds set per solve by set_fixed_force0);
            # without other constraints the equality is imposed by a Schur complement instead.
            self.constraints.append(LinearConstraint("force", np.eye(n_lambda),
                                                     np.full(n_lambda, -np.inf),
                                                     np.full(n_lambda, np.inf), (0,)))
        self.osqp_settings = dict(osqp_settings)
        if solver not in ("active-set", "osqp"):
            raise ValueError(f"solver must be 'active-set' or 'osqp', got {solver!r}")
        self.solver = solver
        self.fallbacks = 0  # active-set solves handed to OSQP (diagnostics)
        self.convex_sets = list(convex_sets or [])
        self._cvx: dict[float, Any] = {}
        self._build_constraint_selectors()
        if len(self.constraints) > len(constraints):
            self._force0_rows = slice(self._n_con - n_lambda, self._n_con)
        self._factors: dict[float, Any] = {}
        self._J0: dict[float, np.ndarray] = {}
        self._triu: tuple[np.ndarray, np.ndarray] | None = None  # strict upper triangle
        self._osqp: dict[float, Any] = {}
        self._osqp_stale: set[float] = set()
        self._ready = False

    # ------------------------------------------------------------------ constraints
    @property
    def has_inequalities(self) -> bool:
        """True when user constraints exist (the QP then goes to OSQP)."""
        return self._n_con > 0

    def _build_constraint_selectors(self) -> None:
        """Constraint rows as ``lo <= S_X X + S_p p <= hi`` with constant selector matrices."""
        n_x, m, N = self.n_x, self.m, self.N
        SX_rows, Sp_rows, lo, hi = [], [], [], []
        for con in self.constraints:
            C = con.C
            r = C.shape[0]
            if con.variable == "state":
                knots = con.knots if con.knots is not None else tuple(range(1, N + 1))
                for k in knots:
                    S = np.zeros((r, (N + 1) * n_x))
                    S[:, k * n_x:(k + 1) * n_x] = C
                    SX_rows.append(S)
                    Sp_rows.append(np.zeros((r, N * m)))
            else:
                off = 0 if con.variable == "force" else self.n_lambda
                knots = con.knots if con.knots is not None else tuple(range(N))
                for k in knots:
                    S = np.zeros((r, N * m))
                    S[:, k * m + off: k * m + off + C.shape[1]] = C
                    Sp_rows.append(S)
                    SX_rows.append(np.zeros((r, (N + 1) * n_x)))
            lo.extend([con.lower] * len(knots))
            hi.extend([con.upper] * len(knots))
        self._n_con = sum(s.shape[0] for s in Sp_rows)
        if self._n_con:
            self._SX = np.vstack(SX_rows)
            self._Sp = np.vstack(Sp_rows)
            self._lo = np.concatenate(lo)
            self._hi = np.concatenate(hi)
            self._fin_lo = np.flatnonzero(np.isfinite(self._lo))
            self._fin_hi = np.flatnonzero(np.isfinite(self._hi))

    # ------------------------------------------------------------------ data
    def set_data(self, A: np.ndarray, B: np.ndarray, D: np.ndarray, d: np.ndarray,
                 Q: np.ndarray, R: np.ndarray, G: np.ndarray, x_des: np.ndarray) -> None:
        """Condense the QP for new LCS matrices / costs / targets.

        Args:
            A, B, D, d: per-knot LCS matrices, shapes (N, n_x, n_x), (N, n_x, n_u),
                (N, n_x, n_lambda), (N, n_x).
            Q: (N+1, n_x, n_x) state costs, Q[N] the terminal cost.
            R: (N, n_u, n_u) input costs.
            G: (N, n_z, n_z) ADMM weights (before the σ_i scaling).
            x_des: (N+1, n_x) targets.
        """
        n_x, m, N = self.n_x, self.m, self.N
        Bbar = np.concatenate([D, B], axis=2)  # p_k = [λ_k; u_k]
        # X = Sx x0 + sd + T p, by the recursion x_{k+1} = A_k x_k + Bbar_k p_k + d_k.
        Sx = np.empty((N + 1, n_x, n_x))
        sd = np.empty((N + 1, n_x))
        T = np.zeros((N + 1, n_x, N * m))
        Sx[0], sd[0] = np.eye(n_x), 0.0
        for k in range(N):
            Sx[k + 1] = A[k] @ Sx[k]
            sd[k + 1] = A[k] @ sd[k] + d[k]
            T[k + 1, :, : k * m] = A[k] @ T[k, :, : k * m]
            T[k + 1, :, k * m:(k + 1) * m] = Bbar[k]
        self._Sx = Sx.reshape((N + 1) * n_x, n_x)
        self._sd = sd.reshape(-1)
        T = T.reshape((N + 1) * n_x, N * m)
        self._T = T
        Qbig = _blockdiag(Q)
        TQ = T.T @ Qbig
        H_c = TQ @ T
        Rp = np.zeros((N, m, m))
        Rp[:, self.n_lambda:, self.n_lambda:] = R
        H_c += _blockdiag(Rp)
        Ts = T[: N * n_x]
        Gxx = _blockdiag(G[:, :n_x, :n_x])
        Gxp = _blockdiag(G[:, :n_x, n_x:])
        Gpp = _blockdiag(G[:, n_x:, n_x:])
        K1 = Ts.T @ Gxx + Gxp.T
        H_G = K1 @ Ts + Ts.T @ Gxp + Gpp
        self._H_c = 0.5 * (H_c + H_c.T)
        self._H_G = 0.5 * (H_G + H_G.T)
        self._TQ = TQ
        self._QXd = TQ @ x_des.reshape(-1)
        self._K1 = K1
        self._factors.clear()
        self._J0.clear()
        self._cvx.clear()
        self._osqp_stale = set(self._osqp)
        if self._n_con:
            self._Acon = self._SX @ T + self._Sp
            # one-sided rows for the active-set method: C p >= b
            self._Cgi = np.ascontiguousarray(np.vstack([self._Acon[self._fin_lo],
                                                        -self._Acon[self._fin_hi]]))
        self._ready = True

    def set_target(self, x_des: np.ndarray) -> None:
        """New targets (N+1, n_x) without re-condensing."""
        self._QXd = self._TQ @ x_des.reshape(-1)

    # ------------------------------------------------------------------ solve
    def initial_state_terms(self, x0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(X0, g_c) for a solve from x0: the free response and the constant gradient."""
        X0 = self._Sx @ x0 + self._sd
        return X0, self._TQ @ X0 - self._QXd

    def solve(self, X0: np.ndarray, g_c: np.ndarray, Gr: np.ndarray, sigma: float
              ) -> QPStepResult:
        """Solve the QP step at penalty scale ``sigma``.

        Args:
            X0: free response from :meth:`initial_state_terms`.
            g_c: constant gradient from :meth:`initial_state_terms`.
            Gr: (N, n_z) the G-weighted references ``G_k r_k`` (r = δ - w). Passing G r
                rather than r lets callers fold affine extra variables (C3+'s η) into G.
            sigma: the ADMM penalty scale ρ·ρ_s^i.
        """
        n_x, m, N = self.n_x, self.m, self.N
        # g_G = K1 X0s - (Tsᵀ (G r)^x + (G r)^p)   (docs/c3.md, condensed QP step)
        g = g_c + sigma * (self._K1X0(X0) - self._T[: N * n_x].T @ Gr[:, :n_x].reshape(-1)
                           - Gr[:, n_x:].reshape(-1))
        if self.convex_sets:
            p, ok, status, iters = self._solve_cvxpy(X0, g, sigma)
        elif self._n_con:
            p, ok, status, iters = (None, False, "", 0)
            if self.solver == "active-set":
                p, ok, status, iters = self._solve_active_set(X0, g, sigma)
            if not ok:
                if self.solver == "active-set":
                    self.fallbacks += 1
                p, ok, status, iters = self._solve_osqp(X0, g, sigma)
        else:
            p, ok, status, iters = self._solve_kkt(g, sigma)
        X = X0 + self._T @ p
        z = np.concatenate([X[: N * n_x].reshape(N, n_x), p.reshape(N, m)], axis=1)
        return QPStepResult(z, X[N * n_x:], ok, status, iters)

    def _K1X0(self, X0: np.ndarray) -> np.ndarray:
        return self._K1 @ X0[: self.N * self.n_x]

    def _solve_kkt(self, g: np.ndarray, sigma: float) -> tuple[np.ndarray, bool, str, int]:
        fac = self._factor(sigma)
        if fac[0] == "chol":
            p = -scipy.linalg.cho_solve(fac[1], g, check_finite=False)
        else:
            p = -(fac[1] @ g)
        if self._force0 is not None:
            p = self._impose_force0(p, fac, sigma)
        ok = bool(np.all(np.isfinite(p)))
        return p, ok, "solved" if ok else "non-finite", 0

    def _factor(self, sigma: float) -> tuple[str, Any]:
        fac = self._factors.get(sigma)
        if fac is None:
            H = self._H_c + sigma * self._H_G
            try:
                fac = ("chol", scipy.linalg.cho_factor(H, lower=True, check_finite=False))
            except np.linalg.LinAlgError:
                # Singular reduced Hessian (e.g. a λ with neither cost nor G weight): the
                # minimum-norm minimiser via the pseudo-inverse is still a valid QP solution.
                fac = ("pinv", np.linalg.pinv(H, rcond=1e-12, hermitian=True))
            self._factors[sigma] = fac
        return fac

    # ------------------------------------------------------------------ fixed λ_0
    def set_fixed_force0(self, lam0: np.ndarray | None, K: np.ndarray | None = None) -> None:
        """Fix the first knot's forces in the next solves: ``λ_0 − K u_0 = lam0`` (n_lambda,);
        ``K`` (n_lambda, n_u) None means λ_0 = lam0; ``lam0`` None frees λ_0.

        Without inequality constraints the equality ``S p = lam0`` (S = [I, −K, 0] selects
        λ_0 − K u_0 from p) is imposed exactly on the unconstrained minimiser p_f by the Schur
        complement ``p = p_f + H⁻¹Sᵀ (S H⁻¹ Sᵀ)⁺ (lam0 − S p_f)`` (H⁻¹Sᵀ cached per σ when K is
        None); with constraints it is a two-sided row block reserved at construction
        (``reserve_force0=True``), whose u_0 columns hold −K.
        """
        nl, nu = self.n_lambda, self.n_u
        if K is not None:
            K = np.array(K, dtype=float).reshape(nl, nu)
            if lam0 is None:
                raise ValueError("set_fixed_force0: K needs lam0")
        was_fixed = self._force0 is not None
        had_K = self._force0_K is not None
        self._force0 = None if lam0 is None else np.array(lam0, dtype=float).reshape(-1)
        self._force0_K = K
        if self._force0_rows is not None:
            rows = self._force0_rows
            self._lo[rows] = -np.inf if lam0 is None else self._force0
            self._hi[rows] = np.inf if lam0 is None else self._force0
            self._cvx.clear()  # cvxpy problems hold the bounds as constants: rebuilt
            rows_changed = K is not None or had_K
            if rows_changed:
                self._Sp[rows, nl:nl + nu] = 0.0 if K is None else -K
                if self._ready:
                    self._Acon = self._SX @ self._T + self._Sp
                self._osqp.clear()  # OSQP holds the constraint matrix
            if was_fixed != (lam0 is not None) or rows_changed:  # the finite-bound rows changed
                self._fin_lo = np.flatnonzero(np.isfinite(self._lo))
                self._fin_hi = np.flatnonzero(np.isfinite(self._hi))
                if self._ready:
                    self._Cgi = np.ascontiguousarray(np.vstack([self._Acon[self._fin_lo],
                                                                -self._Acon[self._fin_hi]]))
        elif lam0 is not None and self._n_con:
            raise ValueError("set_fixed_force0 with constraints needs reserve_force0=True at "
                             "construction")

    def _impose_force0(self, p: np.ndarray, fac: tuple[str, Any], sigma: float) -> np.ndarray:
        nl = self.n_lambda
        K = self._force0_K
        cached = None if K is not None else self._force0_cache.get(sigma)
        if cached is None or cached[0] is not fac:  # new σ, a new factor (set_data) or K
            S_T = np.zeros((p.shape[0], nl))
            S_T[:nl] = np.eye(nl)
            if K is not None:
                S_T[nl:nl + self.n_u] = -K.T
            if fac[0] == "chol":
                HinvST = scipy.linalg.cho_solve(fac[1], S_T, check_finite=False)
            else:
                HinvST = fac[1] @ S_T
            W = S_T.T @ HinvST
            W_pinv = np.linalg.pinv(0.5 * (W + W.T), rcond=1e-12, hermitian=True)
            cached = (fac, HinvST, W_pinv, S_T)
            if K is None:
                self._force0_cache[sigma] = cached
        _, HinvST, W_pinv, S_T = cached
        assert self._force0 is not None
        return p + HinvST @ (W_pinv @ (self._force0 - S_T.T @ p))

    def _solve_active_set(self, X0: np.ndarray, g: np.ndarray, sigma: float
                          ) -> tuple[np.ndarray, bool, str, int]:
        """Goldfarb-Idnani from the cached Cholesky factor (c3mpc._dense_qp)."""
        fac = self._factor(sigma)
        if fac[0] != "chol":
            return np.empty(0), False, "hessian not positive definite", 0
        J0 = self._J0.get(sigma)
        if J0 is None:
            Linv, info = scipy.linalg.lapack.dtrtri(fac[1][0], lower=1)
            if info != 0:
                return np.empty(0), False, "singular Cholesky factor", 0
            # J0 = L^{-T}: dtrtri leaves the factor's upper triangle (the Hessian's entries)
            # above the diagonal; zero it in place (same values as np.tril, no temporaries)
            n = Linv.shape[0]
            if self._triu is None or self._triu[0].size != n * (n - 1) // 2:
                self._triu = np.triu_indices(n, 1)
            Linv[self._triu] = 0.0
            J0 = np.ascontiguousarray(Linv.T)
            self._J0[sigma] = J0
        off = self._SX @ X0
        b = np.concatenate([self._lo[self._fin_lo] - off[self._fin_lo],
                            off[self._fin_hi] - self._hi[self._fin_hi]])
        x0 = -scipy.linalg.cho_solve(fac[1], g, check_finite=False)
        p = np.empty_like(x0)
        act = np.zeros(b.shape[0], np.int64)
        scale = max(1.0, float(np.abs(b).max(initial=0.0)))
        status, iters = gi_solve(J0, x0, self._Cgi, b, 1e-9 * scale, 20 * (x0.shape[0] + 1), p,
                                 act)
        ok = status == GI_OPTIMAL and bool(np.all(np.isfinite(p)))
        return p, ok, "solved" if ok else f"active-set status {status}", int(iters)

    def _osqp_matrices(self, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        H = self._H_c + sigma * self._H_G
        n = H.shape[0]
        rr, cc = np.tril_indices(n)  # column-major upper triangle: (row=cc, col=rr)
        Px = H[cc, rr]
        Ax = self._Acon.ravel(order="F")
        return Px, Ax

    # ------------------------------------------------------------------ one-off weights
    def solve_with_weights(self, X0: np.ndarray, g_c: np.ndarray, Gr: np.ndarray,
                           sigma: float, G: np.ndarray) -> QPStepResult:
        """The QP step once with other ADMM weights ``G`` (N, n_z, n_z) at σ, nothing cached
        (C3+'s final augmented cost scaling, which depends on the last projection).

        Condensed as :meth:`set_data` does for its G; solved by a fresh Cholesky factor
        (λ_0 fixed by the same Schur complement) or, with linear constraints, by a one-off
        OSQP problem. User convex sets are not supported here (ValueError).
        """
        if self.convex_sets:
            raise ValueError("solve_with_weights does not support user convex sets")
        n_x, m, N = self.n_x, self.m, self.N
        Ts = self._T[: N * n_x]
        Gxx = _blockdiag(G[:, :n_x, :n_x])
        Gxp = _blockdiag(G[:, :n_x, n_x:])
        Gpp = _blockdiag(G[:, n_x:, n_x:])
        K1 = Ts.T @ Gxx + Gxp.T
        H_G = K1 @ Ts + Ts.T @ Gxp + Gpp
        H = self._H_c + sigma * 0.5 * (H_G + H_G.T)
        g = g_c + sigma * (K1 @ X0[: N * n_x] - Ts.T @ Gr[:, :n_x].reshape(-1)
                           - Gr[:, n_x:].reshape(-1))
        if self._n_con:
            import osqp

            off = self._SX @ X0
            n = N * m
            P = sp.csc_matrix(np.triu(H))
            solver = osqp.OSQP()
            solver.setup(P, g, sp.csc_matrix(self._Acon),
                         np.maximum(self._lo - off, -1e30), np.minimum(self._hi - off, 1e30),
                         verbose=False, **self.osqp_settings)
            res = solver.solve(raise_error=False)
            ok = (int(res.info.status_val) in (1, 2) and res.x is not None
                  and bool(np.all(np.isfinite(res.x))))
            p = np.asarray(res.x, dtype=float) if ok else np.full(n, np.nan)
            status, iters = str(res.info.status), int(res.info.iter)
        else:
            try:
                fac: tuple[str, Any] = ("chol", scipy.linalg.cho_factor(H, lower=True,
                                                                         check_finite=False))
                p = -scipy.linalg.cho_solve(fac[1], g, check_finite=False)
            except np.linalg.LinAlgError:
                fac = ("pinv", np.linalg.pinv(H, rcond=1e-12, hermitian=True))
                p = -(fac[1] @ g)
            if self._force0 is not None:
                p = self._impose_force0(p, fac, -1.0)  # key -1: never a real σ
                self._force0_cache.pop(-1.0, None)
            ok = bool(np.all(np.isfinite(p)))
            status, iters = ("solved" if ok else "non-finite"), 0
        X = X0 + self._T @ p
        z = np.concatenate([X[: N * n_x].reshape(N, n_x), p.reshape(N, m)], axis=1)
        return QPStepResult(z, X[N * n_x:], ok, status, iters)

    def _solve_osqp(self, X0: np.ndarray, g: np.ndarray, sigma: float
                    ) -> tuple[np.ndarray, bool, str, int]:
        import osqp

        off = self._SX @ X0
        lo = self._lo - off
        hi = self._hi - off
        solver = self._osqp.get(sigma)
        if solver is None:
            n = self.N * self.m
            rr, cc = np.tril_indices(n)
            Px, Ax = self._osqp_matrices(sigma)
            P = sp.csc_matrix((Px, (cc, rr)), shape=(n, n))
            ri, ci = np.indices(self._Acon.shape)
            A = sp.csc_matrix((Ax, (ri.ravel(order="F"), ci.ravel(order="F"))),
                              shape=self._Acon.shape)
            solver = osqp.OSQP()
            solver.setup(P, g, A, np.maximum(lo, -1e30), np.minimum(hi, 1e30), verbose=False,
                         **self.osqp_settings)
            self._osqp[sigma] = solver
        else:
            if sigma in self._osqp_stale:
                Px, Ax = self._osqp_matrices(sigma)
                solver.update(Px=Px, Ax=Ax)
                self._osqp_stale.discard(sigma)
            solver.update(q=g, l=np.maximum(lo, -1e30), u=np.minimum(hi, 1e30))
        res = solver.solve(raise_error=False)
        sv = int(res.info.status_val)
        ok = sv in (1, 2) and res.x is not None and bool(np.all(np.isfinite(res.x)))
        return (np.asarray(res.x, dtype=float) if ok else np.full(self.N * self.m, np.nan),
                ok, str(res.info.status), int(res.info.iter))

    # ------------------------------------------------------------------ user convex sets
    def _solve_cvxpy(self, X0: np.ndarray, g: np.ndarray, sigma: float
                     ) -> tuple[np.ndarray, bool, str, int]:
        """The QP step with the user's cvxpy sets: one parametrised problem per σ.

        The gradient and the free response X0 are cvxpy Parameters, so cvxpy canonicalises
        each problem once and later solves only refill the data. Slower than the compiled
        paths; used only when convex sets were added.
        """
        import cvxpy as cp

        prob = self._cvx.get(sigma)
        n_x, m, N = self.n_x, self.m, self.N
        if prob is None:
            p = cp.Variable(N * m)
            g_par = cp.Parameter(N * m)
            X0_par = cp.Parameter((N + 1) * n_x)
            H = self._H_c + sigma * self._H_G
            X = X0_par + self._T @ p
            x = cp.reshape(X, (N + 1, n_x), order="C")
            pm = cp.reshape(p, (N, m), order="C")
            lam, u = pm[:, : self.n_lambda], pm[:, self.n_lambda:]
            cons = []
            if self._n_con:
                rows = self._SX @ X + self._Sp @ p
                fl, fh = self._fin_lo, self._fin_hi
                if fl.size:
                    cons.append(rows[fl] >= self._lo[fl])
                if fh.size:
                    cons.append(rows[fh] <= self._hi[fh])
            for fn in self.convex_sets:
                cons.extend(list(fn(x, lam, u)))
            obj = cp.Minimize(cp.quad_form(p, cp.psd_wrap(H)) + 2 * g_par @ p)
            prob = (cp.Problem(obj, cons), p, g_par, X0_par)
            if not prob[0].is_dcp(dpp=True):
                raise ValueError("the convex sets must be DCP (and DPP) cvxpy constraints")
            self._cvx[sigma] = prob
        problem, p, g_par, X0_par = prob
        g_par.value = g
        X0_par.value = X0
        try:
            problem.solve(solver=cp.CLARABEL)
        except cp.error.SolverError as e:
            return np.full(N * m, np.nan), False, f"cvxpy: {e}", 0
        ok = problem.status in ("optimal", "optimal_inaccurate") and p.value is not None
        val = np.asarray(p.value, dtype=float) if ok else np.full(N * m, np.nan)
        return val, ok, str(problem.status), int(problem.solver_stats.num_iters or 0)

