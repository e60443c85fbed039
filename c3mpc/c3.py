r"""Consensus complementarity control: the C3 controller (seed 003 §V, Algorithm 1).

C3 solves the MPC problem over an LCS (eq. 15) approximately by ADMM on its consensus form
(eq. 16): the QP step (eq. 21) plans through the LCS dynamics ignoring complementarity, the
projection step (eqs. 22-23) enforces complementarity knot by knot, and the scaled dual w ties
them together while the penalty grows as :math:`\rho\,\rho_s^i`::

    δ ← δ_init, w ← 0, σ ← ρ
    repeat s times:
        z ← QP(σ, δ − w)                 (c3mpc.qp_step)
        δ ← Π_U(z + w)   per knot         (c3mpc.projections)
        w ← (w + z − δ) / ρ_s,  σ ← ρ_s σ
    z ← QP(σ, δ − w)                      (end_on_qp_step)

Usage::

    ctrl = C3(lcs, Q, R, G, U, N=10, options=C3Options(projection="miqp"))
    res = ctrl.solve(x0)          # C3Result; apply res.u[0]
    ctrl.update_lcs(new_lcs)      # re-linearised model for the next solve
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from lcs import LCS, LCPSolveError
from lcs import _validation as _v

from ._blas import blas_threads
from .errors import C3Error, C3TypeError, C3ValueError
from .options import C3Options
from .projections.base import Projection, ProjectionData, ProjectionStatus
from .qp_step import CondensedQP, LinearConstraint
from .result import C3Result, C3Status

__all__ = ["C3", "relative_complementarity_violation"]


_ERRORS = (C3TypeError, C3ValueError)

MAX_HORIZON = 10**9
"""Largest horizon N accepted; in practice the memory check (:func:`_qp_memory`) binds first."""


CONSTRAINT_TOLERANCE = 1e-3
"""Largest relative violation of a linear constraint (``/(1 + |C v|)``) accepted in a plan that
the QP solver reported as solved; beyond it the solve is ``QP_FAILED`` (OSQP can report success
on data it cannot represent, e.g. ``|x0| = 1e31`` against bounds of 10)."""


FORCE_FLOOR = 1e-6
"""Smallest force scale [N] of :func:`relative_complementarity_violation`: a plan whose forces
are all below it is judged against a micronewton (numerical noise of a force-free plan does
not count as a violation)."""


def relative_complementarity_violation(lcs: LCS, x: Any, u: Any, lam: Any) -> float:
    r"""The worst complementarity violation of a plan in force units, relative to its forces.

    For knot k and pair i with a positive Delassus entry :math:`F_{ii} > 0`, the slack
    :math:`s_i = E_i x_k + F_i λ_k + H_i u_k + c_i` in force units is :math:`s_i / F_{ii}` (the
    force that closes it through the pair's own entry); the pair's violation is
    :math:`|\min(λ_i, s_i / F_{ii})|` (0 iff λ_i ≥ 0, s_i ≥ 0, λ_i s_i = 0). Returned: the
    largest violation over knots and pairs divided by the plan's largest ``|λ_i|`` over those
    pairs, or by :data:`FORCE_FLOOR` when that is smaller (a plan without forces: only a
    violation above a micronewton counts). Pairs with
    :math:`F_{ii} = 0` (Stewart–Trinkle's friction-cone rows, whose multiplier is a sliding
    speed) are left out; their multipliers enter the tangent rows, which are in.

    The ratio is invariant to the units of x, u and of each slack row, and to the unit of force
    (one for all forces, as newtons are: a change scales every λ_i and s_i / F_ii alike), as
    long as the forces are above the floor.

    Args:
        lcs: the LCS of the plan (time-varying: knot k's matrices for knot k).
        x: (T, n_x) states of knots 0..T-1 (a plan's ``x[:-1]``).
        u: (T, n_u) inputs. lam: (T, n_lambda) forces in ``lcs``'s units (physical: the floor
            is in newtons).
    """
    x, u, lam = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (x, u, lam))
    T = x.shape[0]
    if T == 0 or lcs.n_lambda == 0:
        return 0.0
    st = lcs.stacked(T)
    slack = (np.einsum("kij,kj->ki", st.E, x) + np.einsum("kij,kj->ki", st.F, lam)
             + np.einsum("kij,kj->ki", st.H, u) + st.c)
    f = np.einsum("kii->ki", st.F)
    rows = f > 0
    if not rows.any():
        return 0.0
    viol = np.abs(np.minimum(lam[rows], slack[rows] / f[rows])).max()
    return float(viol / max(np.abs(lam[rows]).max(), FORCE_FLOOR))


def _check_finite(name: str, arr: np.ndarray) -> None:
    _v.check_finite(name, arr, _ERRORS)


def _as_array(name: str, value: Any) -> np.ndarray:
    """A float64 array, strictly (no strings, booleans, complex; see lcs._validation)."""
    return _v.as_float_array(name, value, _ERRORS)


def _qp_memory(N: int, n_x: int, n_lambda: int, n_u: int, n_zt: int) -> float:
    """Bytes the condensed QP step and the per-knot weights need (an estimate).

    The condensed map T is (N+1) n_x x N m and the Hessians (N m)^2 with m = n_lambda + n_u
    (a few copies: H_c, H_G and one factor per penalty); G, U are N n_zt^2 each.
    """
    m = n_lambda + n_u
    return 8.0 * ((N + 1) * n_x * N * m + 4.0 * (N * m) ** 2 + 2.0 * N * n_zt ** 2)


def _bound(name: str, value: Any, n: int, default: float) -> np.ndarray:
    """A box bound: None (all ``default``), a scalar, or an (n,) vector; NaN rejected."""
    if value is None:
        return np.full(n, default)
    arr = _as_array(name, value)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    elif arr.shape != (n,):
        raise C3ValueError(f"{name} must be a scalar or have shape ({n},), got shape "
                           f"{arr.shape}")
    if np.isnan(arr).any():
        i = int(np.flatnonzero(np.isnan(arr))[0])
        raise C3ValueError(f"{name} has a NaN entry at index {i} (use -inf/inf for no bound)")
    return arr


def _check_box(var: str, lo: np.ndarray, hi: np.ndarray) -> None:
    """lower <= upper, lower != +inf and upper != -inf (empty sets, not skipped rows)."""
    for i in range(lo.shape[0]):
        if lo[i] == np.inf or hi[i] == -np.inf or lo[i] > hi[i]:
            raise C3ValueError(f"{var} bounds at index {i} are empty: lower={lo[i]}, "
                               f"upper={hi[i]} (need lower <= upper, lower < inf, upper > -inf)")


def _per_knot(name: str, value: Any, count: int, n: int, psd: bool = True,
              allow_extra: bool = False) -> np.ndarray:
    """A cost matrix given once or per knot, as a (count, n, n) symmetric PSD stack."""
    arr = _as_array(name, value)
    if arr.ndim == 2:
        if arr.shape != (n, n):
            raise C3ValueError(f"{name} must have shape ({n}, {n}) (or be a list of {count} such "
                               f"matrices), got {arr.shape}")
        arr = np.broadcast_to(arr, (count, n, n)).copy()
    elif arr.ndim == 3:
        ok_counts = (count, count + 1) if allow_extra else (count,)
        if arr.shape[1:] != (n, n) or arr.shape[0] not in ok_counts:
            raise C3ValueError(f"{name} per knot must have shape ({count}, {n}, {n}), got "
                               f"{arr.shape}")
    else:
        raise C3ValueError(f"{name} must be an ({n}, {n}) matrix or a list of them, got shape "
                           f"{arr.shape}")
    _check_finite(name, arr)
    scale = max(1.0, float(np.abs(arr).max()))
    if not np.allclose(arr, arr.transpose(0, 2, 1), atol=1e-9 * scale, rtol=0):
        raise C3ValueError(f"{name} must be symmetric")
    if psd:
        eig = np.linalg.eigvalsh(arr).min(axis=1)
        bad = np.flatnonzero(eig < -1e-9 * scale)
        if bad.size:
            raise C3ValueError(f"{name} must be positive semidefinite; knot {int(bad[0])} has "
                               f"eigenvalue {eig[bad[0]]:.3g}")
    return 0.5 * (arr + arr.transpose(0, 2, 1))


class C3:
    """The C3 controller.

    Args:
        lcs: the :class:`lcs.LCS` to plan with (time-invariant, or time-varying with at least N
            knots).
        Q: (n_x, n_x) state cost, or a list of N (knots 0..N-1) or N+1 (incl. terminal) ones.
        R: (n_u, n_u) input cost, or N of them.
        G: (n_z, n_z) ADMM weight, n_z = n_x + n_lambda + n_u (C3+: n_z + n_lambda), or N.
        U: (n_z, n_z) projection weight (same layout as G), or N; None: U = G, one metric
            for both ADMM steps (DAIRLab/c3 projects with G when U is zero; docs/c3.md, "The
            ADMM metric and the convergence check").
        N: horizon (knots).
        x_des: targets: None (zeros), (n_x,) for every knot, or (N+1, n_x).
        QN: terminal cost (default: the last Q).
        options: :class:`C3Options`.
        constraints: :class:`c3mpc.qp_step.LinearConstraint` objects (or use
            :meth:`add_linear_constraint` / :meth:`set_bounds`).

    Raises:
        ValueError: a shape mismatch, non-finite entry, non-symmetric or non-PSD cost, N < 1,
            a time-varying LCS with fewer than N knots, or a projection that cannot handle the
            LCS (e.g. "qp" with an F that is not PSD).
        TypeError: ``lcs`` is not an :class:`lcs.LCS`, or ``options`` not :class:`C3Options`.
    """

    def __init__(self, lcs: LCS, Q: Any, R: Any, G: Any, U: Any = None, N: int = 10,
                 x_des: Any = None, QN: Any = None, options: C3Options | None = None, *,
                 constraints: Sequence[LinearConstraint] = ()):
        if options is None:
            options = C3Options()
        if not isinstance(options, C3Options):
            raise C3TypeError(f"options must be a C3Options, got {type(options).__name__}")
        self.options = options
        self.N = _v.check_number("N", N, integer=True, minimum=1, maximum=MAX_HORIZON,
                                 errors=_ERRORS)
        self._check_lcs(lcs, first=True)
        self.n_x, self.n_u, self.n_lambda = lcs.n_x, lcs.n_u, lcs.n_lambda
        self.n_z = self.n_x + self.n_lambda + self.n_u
        self._extended = options.projection == "c3plus"
        self.n_zt = self.n_z + (self.n_lambda if self._extended else 0)
        _v.check_memory(f"C3 with N={self.N}, n_x={self.n_x}, n_lambda={self.n_lambda}, "
                        f"n_u={self.n_u}",
                        _qp_memory(self.N, self.n_x, self.n_lambda, self.n_u, self.n_zt),
                        _ERRORS)
        gamma = options.discount ** np.arange(self.N + 1)

        Qs = _per_knot("Q", Q, self.N, self.n_x, allow_extra=True)
        if QN is None:
            QN_ = Qs[-1] if Qs.shape[0] == self.N + 1 else Qs[-1]
        else:
            QN_ = _per_knot("QN", QN, 1, self.n_x)[0]
        self._Q = np.concatenate([Qs[: self.N], QN_[None]]) * gamma[:, None, None]
        self._R = _per_knot("R", R, self.N, self.n_u) * gamma[: self.N, None, None]
        U = G if U is None else U
        self._G = _per_knot("G", G, self.N, self.n_zt) * gamma[: self.N, None, None]
        self._U = _per_knot("U", U, self.N, self.n_zt) * gamma[: self.N, None, None]
        if not options.discount_admm_weights:  # DAIRLab/c3's gamma: Q and R only
            self._G = _per_knot("G", G, self.N, self.n_zt)
            self._U = _per_knot("U", U, self.N, self.n_zt)
        self._x_des = self._targets(x_des)
        self._constraints: list[LinearConstraint] = []
        self._convex_sets: list[Any] = []
        for con in constraints:
            self._add_constraint(con)
        self._projection = self._make_projection()
        self._qp: CondensedQP | None = None
        self._last_plan: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._u_prev = np.zeros((self.N, self.n_u))  # penalize_input_change's reference
        self._x0_last = np.zeros(self.n_x)
        self._residual_masks: tuple[Any, ...] | None = None  # (G, λ scale, tied, scale)
        self.update_lcs(lcs)

    # ------------------------------------------------------------------ setup helpers
    def _check_lcs(self, lcs: Any, first: bool = False) -> None:
        if not isinstance(lcs, LCS):
            raise C3TypeError(f"lcs must be an lcs.LCS, got {type(lcs).__name__}")
        if lcs.N is not None and lcs.N < self.N:
            raise C3ValueError(f"the time-varying LCS has {lcs.N} knots but the horizon is "
                               f"N={self.N}")
        if not first and (lcs.n_x, lcs.n_u, lcs.n_lambda) != (self.n_x, self.n_u,
                                                                self.n_lambda):
            raise C3ValueError(
                f"update_lcs: dimensions changed from (n_x, n_u, n_lambda) = "
                f"{(self.n_x, self.n_u, self.n_lambda)} to {(lcs.n_x, lcs.n_u, lcs.n_lambda)}")

    def _targets(self, x_des: Any) -> np.ndarray:
        if x_des is None:
            return np.zeros((self.N + 1, self.n_x))
        arr = _as_array("x_des", x_des)
        if arr.shape == (self.n_x, 1):
            arr = arr[:, 0]
        if arr.shape == (self.n_x,):
            arr = np.broadcast_to(arr, (self.N + 1, self.n_x)).copy()
        if arr.shape != (self.N + 1, self.n_x):
            raise C3ValueError(f"x_des must have shape ({self.n_x},) or ({self.N + 1}, "
                               f"{self.n_x}), got {arr.shape}")
        _check_finite("x_des", arr)
        return arr

    def _make_projection(self) -> Projection:
        from .projections.registry import make_projection

        return make_projection(self.options.projection, self.options)

    # ------------------------------------------------------------------ constraints
    def add_linear_constraint(self, C: Any, lower: Any, upper: Any, variable: str = "state",
                              knots: Sequence[int] | None = None) -> None:
        """Add ``lower <= C v_k <= upper`` with v_k the state, input or force at each knot.

        Args:
            C: (r, n) matrix, n = n_x, n_u or n_lambda for variable "state", "input", "force".
            lower, upper: (r,) bounds; ±inf for one-sided constraints.
            variable: "state" (default knots 1..N), "input" or "force" (knots 0..N-1).
            knots: explicit knot indices.
        """
        sizes = {"state": self.n_x, "input": self.n_u, "force": self.n_lambda}
        if variable not in sizes:
            raise C3ValueError(f"variable must be one of {list(sizes)}, got {variable!r}")
        C = _as_array("C", C)
        if C.ndim == 1:
            C = C[None, :]
        if C.ndim != 2 or C.shape[1] != sizes[variable] or C.shape[0] < 1:
            raise C3ValueError(f"C for a {variable} constraint must have shape (r, "
                               f"{sizes[variable]}) with r >= 1, got shape {C.shape}")
        _check_finite("C", C)
        lo = _bound("lower", lower, C.shape[0], -np.inf)
        hi = _bound("upper", upper, C.shape[0], np.inf)
        _check_box(f"{variable} constraint", lo, hi)
        if knots is not None:
            top = self.N if variable == "state" else self.N - 1
            if isinstance(knots, (str, bytes)) or not hasattr(knots, "__iter__"):
                raise C3TypeError(f"knots must be a sequence of knot indices, got "
                                  f"{_v.describe(knots)}")
            knots = tuple(_v.check_number("knots entry", k, integer=True, minimum=0,
                                          maximum=top, errors=_ERRORS) for k in knots)
        self._add_constraint(LinearConstraint(variable, C, lo, hi, knots))

    def _add_constraint(self, con: LinearConstraint) -> None:
        if not isinstance(con, LinearConstraint):
            raise C3TypeError(f"constraints must be LinearConstraint objects, got "
                              f"{type(con).__name__}")
        self._constraints.append(con)
        self._qp = None  # the QP layout changed: rebuilt at the next update/solve

    def set_bounds(self, x_lower: Any = None, x_upper: Any = None, u_lower: Any = None,
                   u_upper: Any = None, lam_lower: Any = None, lam_upper: Any = None) -> None:
        """Box bounds on states (knots 1..N), inputs and forces.

        Each bound is None, a scalar or an (n,) vector; ``-inf``/``inf`` entries mean "no
        bound" and those rows are skipped. NaN, a wrong length, ``lower = +inf``,
        ``upper = -inf`` or ``lower > upper`` raise ValueError (the set would be empty).
        """
        for var, lo, hi, n in (("state", x_lower, x_upper, self.n_x),
                               ("input", u_lower, u_upper, self.n_u),
                               ("force", lam_lower, lam_upper, self.n_lambda)):
            if lo is None and hi is None:
                continue
            short = {"state": "x", "input": "u", "force": "lam"}[var]
            lo = _bound(f"{short}_lower", lo, n, -np.inf)
            hi = _bound(f"{short}_upper", hi, n, np.inf)
            _check_box(var, lo, hi)
            rows = np.flatnonzero(np.isfinite(lo) | np.isfinite(hi))
            if rows.size:
                self.add_linear_constraint(np.eye(n)[rows], lo[rows], hi[rows], var)

    def add_convex_constraint(self, fn: Any) -> None:
        """Add a convex set 𝒞 through cvxpy.

        Args:
            fn: ``fn(x, lam, u) -> list of cvxpy constraints``, called once per QP build with
                cvxpy expressions ``x`` (N+1, n_x), ``lam`` (N, n_lambda) and ``u`` (N, n_u).
                The constraints must be DCP. Example:
                ``ctrl.add_convex_constraint(lambda x, lam, u: [cp.norm(u, axis=1) <= 5])``.

        With convex sets the QP step is solved by cvxpy/Clarabel (parametrised, so it is
        canonicalised once per ADMM iteration's penalty), which is slower than the compiled
        paths used for linear constraints.
        """
        if not callable(fn):
            raise C3TypeError(f"fn must be callable (x, lam, u) -> constraints, got "
                              f"{type(fn).__name__}")
        self._convex_sets.append(fn)
        self._qp = None

    def remove_constraints(self) -> None:
        """Drop every user constraint (linear and convex)."""
        self._constraints.clear()
        self._convex_sets.clear()
        self._qp = None

    # ------------------------------------------------------------------ updates
    def update_lcs(self, lcs: LCS) -> None:
        """Plan with a new (e.g. re-linearised) LCS of the same dimensions from the next solve."""
        with blas_threads(self.options.blas_threads):
            self._update_lcs(lcs)

    def _update_lcs(self, lcs: LCS) -> None:
        self._check_lcs(lcs)
        self.lcs = lcs
        plan = lcs.scaled() if self.options.scale_lcs else lcs
        self._plan_lcs = plan
        st = plan.stacked(self.N)
        self._stacked = st  # the planning LCS over the horizon (views), until the next update
        self._data = ProjectionData(E=np.ascontiguousarray(st.E), F=np.ascontiguousarray(st.F),
                                    H=np.ascontiguousarray(st.H), c=np.ascontiguousarray(st.c),
                                    U=self._U)
        self._projection.check(self._data)
        if self._extended:
            # z̃ = M z + e with M = [I; E F H], e = [0; c]: C3+'s η = E x + F λ + H u + c.
            M = np.zeros((self.N, self.n_zt, self.n_z))
            M[:, : self.n_z] = np.eye(self.n_z)
            M[:, self.n_z:] = np.concatenate([st.E, st.F, st.H], axis=2)
            e = np.zeros((self.N, self.n_zt))
            e[:, self.n_z:] = st.c
            self._M, self._e = M, e
            G_eff = np.einsum("kab,kbc,kcd->kad", M.transpose(0, 2, 1), self._G, M)
        else:
            G_eff = self._G
        if self._qp is None:
            self._qp = CondensedQP(self.n_x, self.n_lambda, self.n_u, self.N,
                                   self._constraints, self._osqp_settings(),
                                   solver=self.options.qp_solver,
                                   convex_sets=self._convex_sets,
                                   reserve_force0=(self.options.lambda0_from_lcp
                                                   or self.options.first_step_forces
                                                   != "plan"))
        self._qp.set_data(st.A, st.B, st.D, st.d, self._Q, self._R, G_eff, self._x_des)
        self._qp_data = (st.A, st.B, st.D, st.d, G_eff)  # for per-solve cost updates

    def update_target(self, x_des: Any) -> None:
        """New target states: (n_x,) for every knot or (N+1, n_x)."""
        self._x_des = self._targets(x_des)
        if self._qp is not None:
            self._qp.set_target(self._x_des)

    def update_cost_matrices(self, Q: Any = None, R: Any = None, G: Any = None,
                             U: Any = None, QN: Any = None) -> None:
        """New costs of the same shapes (DAIRLab/c3's ``UpdateCostMatrices``); None keeps one.

        Accepted as at construction (one matrix or per knot; Q may include the terminal
        cost, QN replaces it) and discounted the same way. Takes effect from the next solve
        (the QP is re-condensed; the factorizations are rebuilt).
        """
        N, opts = self.N, self.options
        gamma = opts.discount ** np.arange(N + 1)
        Qn = self._Q.copy()
        if Q is not None:
            Qs = _per_knot("Q", Q, N, self.n_x, allow_extra=True)
            Qn = np.concatenate([Qs[:N], Qs[-1:]]) * gamma[:, None, None]
        if QN is not None:
            Qn[N] = _per_knot("QN", QN, 1, self.n_x)[0] * gamma[N]
        Rn = self._R if R is None else _per_knot("R", R, N, self.n_u) * gamma[:N, None, None]
        g_admm = gamma[:N, None, None] if opts.discount_admm_weights else 1.0
        Gn = self._G if G is None else _per_knot("G", G, N, self.n_zt) * g_admm
        Un = self._U if U is None else _per_knot("U", U, N, self.n_zt) * g_admm
        self._Q, self._R, self._G, self._U = Qn, Rn, Gn, Un
        with blas_threads(opts.blas_threads):
            self._update_lcs(self.lcs)

    @property
    def cost_matrices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(Q (N+1, n_x, n_x), R (N, …), G (N, …), U (N, …)) as used, discount applied
        (DAIRLab/c3's ``GetCostMatrices``); copies."""
        return self._Q.copy(), self._R.copy(), self._G.copy(), self._U.copy()

    @property
    def linear_constraints(self) -> tuple[LinearConstraint, ...]:
        """The user's linear constraints (DAIRLab/c3's ``GetLinearConstraints``)."""
        return tuple(self._constraints)

    def _osqp_settings(self) -> dict[str, Any]:
        o = self.options
        return dict(eps_abs=o.osqp_eps_abs, eps_rel=o.osqp_eps_rel, max_iter=o.osqp_max_iter,
                    polishing=o.osqp_polish, warm_starting=o.warm_start, scaled_termination=False)

    # ------------------------------------------------------------------ solve
    def solve(self, x0: Any) -> C3Result:
        """Run Algorithm 1 from state ``x0`` (n_x,) and return the plan as a :class:`C3Result`.

        Never raises on solver failure: a failed QP step or projection (including an exception
        raised by the QP solver, e.g. OSQP's), or a plan with non-finite entries (status
        ``FAILED``: e.g. ``|x0|`` so large that the cost overflows), gives a result with a failure
        status and the last feasible plan shifted by one knot (``fallback=True``), or NaN
        arrays when there is none. A success status always comes with finite x, u, lam, cost.

        Raises:
            ValueError: x0 is not a finite vector of shape (n_x,) (an (n_x, 1) column is
                accepted).
        """
        with blas_threads(self.options.blas_threads):
            res = self._solve(x0)
            if self.options.first_step_forces == "lcp-mode" and res.ok and self.n_lambda:
                res = self._resolve_with_first_step_mode(x0, res)
            return res

    def first_step_mode(self, x0: Any, u0: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """The affine response ``λ_0 = K u_0 + k`` of the planning LCS's first knot in the
        contact mode it takes at (x0, u0), in the planning LCS's units.

        The mode is the support A = {i: λ_i > 0} of λ = LCP(F_0, E_0 x0 + H_0 u0 + c_0); in it
        ``λ_A = −F_AA⁺(E_A x0 + H_A u_0 + c_A)`` and ``λ_I = 0`` (F_AA⁺ the pseudo-inverse; for
        a nondegenerate mode it is the inverse and λ_0(u0) equals the LCP's solution). Returns
        (K (n_lambda, n_u), k (n_lambda,)), or None when the LCP solver fails.
        """
        from lcs import solve_lcp

        st = self._plan_lcs.stacked(1)
        E, F, H, c = st.E[0], st.F[0], st.H[0], st.c[0]
        x0 = _v.as_vector("x0", x0, self.n_x, _ERRORS)
        u0 = _v.as_vector("u0", u0, self.n_u, _ERRORS)
        sol = solve_lcp(F, E @ x0 + H @ u0 + c)
        if not sol.found:
            return None
        lam = np.asarray(sol.z, dtype=float)
        act = np.flatnonzero(lam > 1e-9 * max(1.0, float(np.abs(lam).max())))
        K = np.zeros((self.n_lambda, self.n_u))
        k = np.zeros(self.n_lambda)
        if act.size:
            F_inv = np.linalg.pinv(F[np.ix_(act, act)], rcond=1e-10)
            K[act] = -F_inv @ H[act]
            k[act] = -F_inv @ (E[act] @ x0 + c[act])
        return K, k

    def _resolve_with_first_step_mode(self, x0: Any, first: C3Result) -> C3Result:
        """``first_step_forces="lcp-mode"``: solve again with λ_0 = K u_0 + k of the mode the
        first plan's u_0 puts the LCS in; the first plan is kept if that fails."""
        import dataclasses

        mode = self.first_step_mode(x0, first.u[0])
        if mode is None:
            return first
        qp = self._qp
        assert qp is not None
        qp.set_fixed_force0(mode[1], mode[0])
        try:
            second = self._solve(x0)
        finally:
            qp.set_fixed_force0(None)
        if not second.ok:
            return first
        return dataclasses.replace(second, solve_time=first.solve_time + second.solve_time)

    def _solve(self, x0: Any) -> C3Result:
        t_start = time.perf_counter()
        x0 = _v.as_vector("x0", x0, self.n_x, _ERRORS)
        if self._qp is None:
            self._update_lcs(self.lcs)
        qp = self._qp
        assert qp is not None
        opts = self.options
        N, n_x, n_zt = self.N, self.n_x, self.n_zt
        t_qp = t_proj = 0.0
        if opts.quaternion_weight > 0 and opts.quaternion_indices:
            self._apply_quaternion_costs(qp, x0)
        X0, g_c = qp.initial_state_terms(x0)
        self._x0_last = x0
        g_c = self._dairlab_terms(qp, x0, g_c)
        delta = np.zeros((N, n_zt))
        if opts.delta_init == "x0":
            delta[:, :n_x] = x0
        w = np.zeros((N, n_zt))
        sigma = opts.rho
        proj_status = np.zeros(N, dtype=int)
        iterations = 0
        residuals: list[np.ndarray] = []  # consensus residual per ADMM iteration
        for i in range(opts.admm_iter + 1):
            t0 = time.perf_counter()
            ref = delta if (i == opts.admm_iter and self._extended
                            and opts.c3plus_final_reference == "projection") else delta - w
            try:
                if i == opts.admm_iter and self._final_contact_scaling_on():
                    qp_res = self._final_scaled_step(qp, X0, g_c, ref, delta, sigma)
                else:
                    qp_res = qp.solve(X0, g_c, self._weighted_reference(ref), sigma)
            except C3Error:  # bad input (e.g. option indices beyond n_lambda): the caller's
                raise
            except Exception as e:  # noqa: BLE001 -- inputs are validated: a solver failure
                return self._failure(C3Status.QP_FAILED, f"QP step {i} raised "
                                     f"{type(e).__name__}: {e}", t_start, iterations,
                                     {"qp": t_qp, "projection": t_proj})
            t_qp += time.perf_counter() - t0
            if not qp_res.ok:
                return self._failure(C3Status.QP_FAILED, f"QP step {i} failed: {qp_res.status}",
                                     t_start, iterations, {"qp": t_qp, "projection": t_proj})
            if i == opts.admm_iter:
                break
            z = self._extend(qp_res.z)
            t0 = time.perf_counter()
            try:
                proj = self._projection.project(z + w, self._data, i)
            except C3Error:
                raise  # configuration errors of the projection (e.g. a missing backend)
            except Exception as e:  # noqa: BLE001 -- a solver failure becomes a status
                return self._failure(C3Status.PROJECTION_FAILED, f"projection at ADMM "
                                     f"iteration {i} raised {type(e).__name__}: {e}", t_start,
                                     iterations, {"qp": t_qp, "projection": t_proj})
            t_proj += time.perf_counter() - t0
            if not proj.ok:
                bad = int(np.argmax(proj.status > ProjectionStatus.TIME_LIMIT))
                return self._failure(
                    C3Status.PROJECTION_FAILED,
                    f"projection at ADMM iteration {i} failed at knot {bad} "
                    f"({ProjectionStatus(int(proj.status[bad])).name})",
                    t_start, iterations, {"qp": t_qp, "projection": t_proj})
            proj_status = np.maximum(proj_status, proj.status)
            delta = proj.delta
            residuals.append(self._consensus_residual(z, delta))
            w = (w + z - delta) / opts.rho_scale
            sigma *= opts.rho_scale
            iterations += 1

        if opts.end_on_qp_step:
            zf = qp_res.z
            x = np.vstack([zf[:, :n_x], qp_res.x_N])
        else:
            zf = delta[:, : self.n_z]
            if opts.projection_plan_states == "qp":  # DAIRLab/c3: the final QP step's states
                x = np.vstack([qp_res.z[:, :n_x], qp_res.x_N])
            else:
                x = self._reroll(x0, zf)
        lam_plan = zf[:, n_x:n_x + self.n_lambda]
        u = zf[:, n_x + self.n_lambda: self.n_z].copy()
        lam = self._plan_lcs.unscale_lambda(lam_plan)
        status = C3Status.SOLVED if np.all(proj_status == 0) else C3Status.MAX_ITERATIONS
        viol = float(np.max(self._complementarity_residual(x[:N], u, lam_plan))
                     ) * self._plan_lcs.lambda_scale
        rel_viol = relative_complementarity_violation(self.lcs, x[:N], u, lam)
        consensus, message = float("nan"), ""
        if iterations:  # the final QP iterate against the last projection
            residuals.append(self._consensus_residual(self._extend(qp_res.z), delta))
            consensus = float(residuals[-1].max())
            tol = opts.consensus_tolerance
            if tol is not None and consensus > tol:
                status = C3Status.NOT_CONVERGED
                worst = ("x", "lambda", "u")[int(np.argmax(residuals[-1]))]
                message = (f"ADMM consensus residual {consensus:.3g} > consensus_tolerance "
                           f"{tol:g} (largest in {worst}); the plan's contact forces are not "
                           f"complementary (complementarity violation {viol:.3g})")
            ctol = opts.complementarity_tolerance
            if ctol is not None and rel_viol > ctol:
                status = C3Status.NOT_CONVERGED
                message = "; ".join(m for m in (message, (
                    f"relative complementarity violation {rel_viol:.3g} > "
                    f"complementarity_tolerance {ctol:g}: the plan's slacks, in force units, "
                    f"are off complementarity by that fraction of its largest force")) if m)
        cost = self.plan_cost(x, u)
        timings = {"qp": t_qp, "projection": t_proj}
        x_sim, cost_sim = None, float("inf")
        if opts.resimulate_plan:
            t0 = time.perf_counter()
            x_sim, cost_sim = self.resimulate(x0, u)
            timings["resimulate"] = time.perf_counter() - t0
        if opts.end_on_qp_step and self._constraints:
            worst = self._constraint_violation(x, lam_plan, u)
            if worst > CONSTRAINT_TOLERANCE:
                return self._failure(
                    C3Status.QP_FAILED, f"the QP solver reported success but its plan violates "
                    f"a linear constraint by {worst:.3g} (relative; tolerance "
                    f"{CONSTRAINT_TOLERANCE:g})", t_start, iterations, timings)
        if not (np.isfinite(cost) and np.isfinite(viol) and np.all(np.isfinite(x))
                and np.all(np.isfinite(u)) and np.all(np.isfinite(lam))):
            return self._failure(
                C3Status.FAILED, f"the plan has non-finite entries (cost {cost}); max |x0| = "
                f"{np.max(np.abs(x0)):.3g} may be beyond what float64 arithmetic on this "
                f"problem can represent", t_start, iterations, timings)
        self._last_plan = (x, u, lam)
        self._u_prev = qp_res.z[:, n_x + self.n_lambda: self.n_z].copy()
        total = time.perf_counter() - t_start
        timings["other"] = total - t_qp - t_proj - timings.get("resimulate", 0.0)
        return C3Result(status=status, x=x, u=u, lam=lam, delta=delta, w=w,
                        iterations=iterations, solve_time=total, timings=timings,
                        complementarity_violation=viol, cost=cost,
                        resimulated_cost=cost_sim, resimulated_x=x_sim,
                        solver=f"c3/{opts.projection}", message=message,
                        consensus_residual=consensus,
                        relative_complementarity_violation=rel_viol,
                        extras={"consensus_residuals": np.array(residuals).reshape(-1, 3)})

    # ------------------------------------------------------------------ DAIRLab/c3 terms
    def _dairlab_terms(self, qp: CondensedQP, x0: np.ndarray, g_c: np.ndarray) -> np.ndarray:
        """Per-solve terms of the DAIRLab/c3 options: the input-change cost and the fixed λ_0.

        ``penalize_input_change`` turns u_kᵀR_k u_k into (u_k − u_k^prev)ᵀR_k(u_k − u_k^prev):
        same Hessian, gradient (half of it, as the QP stores it) shifted by −R_k u_k^prev on
        the u entries of p_k = [λ_k; u_k]; the constant u^prevᵀRu^prev does not change the
        minimiser. ``lambda0_from_lcp`` fixes λ_0 to LCP(F_0, E_0 x0 + c_0) (the LCS planned
        with, i.e. scaled when ``scale_lcs``) when H_0 = 0.
        """
        opts = self.options
        if opts.penalize_input_change:
            g = g_c.reshape(self.N, self.n_lambda + self.n_u).copy()
            g[:, self.n_lambda:] -= np.einsum("kab,kb->ka", self._R, self._u_prev)
            g_c = g.reshape(-1)
        if opts.lambda0_from_lcp and self.n_lambda:
            qp.set_fixed_force0(self.initial_force_from_lcp(x0))
        return g_c

    def _final_contact_scaling_on(self) -> bool:
        o = self.options
        return (self._extended and o.final_augmented_cost_contact_scaling is not None
                and o.final_augmented_cost_contact_indices is not None)

    def _final_scaled_step(self, qp: CondensedQP, X0: np.ndarray, g_c: np.ndarray,
                           ref: np.ndarray, delta: np.ndarray, sigma: float) -> Any:
        """C3+'s final QP step with ``final_augmented_cost_contact_scaling`` (DAIRLab/c3):
        per listed pair i, the G weight of λ_i (if the last projection zeroed δ^λ_i) or of
        η_i (otherwise) multiplied by the factor, as the symmetric D G D with D = diag(√s)."""
        o = self.options
        n_x, n_l, n_u = self.n_x, self.n_lambda, self.n_u
        idx = np.asarray(o.final_augmented_cost_contact_indices, dtype=int)
        if idx.size and idx.max() >= n_l:
            raise C3ValueError(f"final_augmented_cost_contact_indices must be < n_lambda="
                               f"{n_l}, got {tuple(idx)}")
        scale = np.ones((self.N, self.n_zt))
        for k in range(self.N):
            zero = delta[k, n_x + idx] == 0
            scale[k, n_x + idx[zero]] *= o.final_augmented_cost_contact_scaling
            scale[k, n_x + n_l + n_u + idx[~zero]] *= o.final_augmented_cost_contact_scaling
        d = np.sqrt(scale)
        G = d[:, :, None] * self._G * d[:, None, :]
        G_eff = np.einsum("kab,kbc,kcd->kad", self._M.transpose(0, 2, 1), G, self._M)
        Gr = np.einsum("kba,kbc,kc->ka", self._M, G, ref - self._e)
        return qp.solve_with_weights(X0, g_c, Gr, sigma, G_eff)

    def initial_force_from_lcp(self, x0: Any) -> np.ndarray | None:
        """λ_0 = LCP(F_0, E_0 x0 + c_0) in the planning LCS's units when H_0 = 0, else None.

        This is the force the (passive at knot 0) system will apply whatever the input; with
        ``lambda0_from_lcp`` every QP step plans with it. None also when the LCP solver fails
        (λ_0 is then left free).
        """
        from lcs import solve_lcp

        st = self._plan_lcs.stacked(1)
        if np.any(st.H[0] != 0):
            return None
        x0 = _as_array("x0", x0).reshape(-1)
        sol = solve_lcp(st.F[0], st.E[0] @ x0 + st.c[0])
        if not sol.found:
            return None
        return np.asarray(sol.z, dtype=float)

    def quaternion_cost_matrices(self, x0: Any) -> np.ndarray:
        """(N+1, n_x, n_x) the Q_k a solve from ``x0`` uses with ``quaternion_weight`` > 0:
        each quaternion's 4×4 block replaced by γ^k times
        :func:`c3mpc.quaternion_cost.quaternion_cost_block` (current quaternion of x0, target
        of knot k's x_des)."""
        from .quaternion_cost import quaternion_cost_block

        x0 = _as_array("x0", x0).reshape(-1)
        opts = self.options
        Q = self._Q.copy()
        gamma = opts.discount ** np.arange(self.N + 1)
        for i in opts.quaternion_indices:
            if i + 4 > self.n_x:
                raise C3ValueError(f"quaternion_indices: a quaternion at {i} needs n_x >= "
                                   f"{i + 4}, got n_x={self.n_x}")
            for k in range(self.N + 1):
                Q[k, i:i + 4, i:i + 4] = gamma[k] * quaternion_cost_block(
                    x0[i:i + 4], self._x_des[k, i:i + 4], opts.quaternion_weight,
                    opts.quaternion_regularizer_fraction)
        return Q

    def _apply_quaternion_costs(self, qp: CondensedQP, x0: np.ndarray) -> None:
        A, B, D, d, G_eff = self._qp_data
        qp.set_data(A, B, D, d, self.quaternion_cost_matrices(x0), self._R, G_eff,
                    self._x_des)

    @property
    def previous_input_plan(self) -> np.ndarray:
        """(N, n_u) the reference of ``penalize_input_change``: the inputs of the last
        successful solve's final QP step (zeros before the first solve)."""
        return self._u_prev.copy()

    # ------------------------------------------------------------------ pieces
    def _weighted_reference(self, r: np.ndarray) -> np.ndarray:
        """G_k r_k per knot in the QP's (non-extended) variables (see CondensedQP.solve)."""
        if not self._extended:
            return np.einsum("kab,kb->ka", self._G, r)
        return np.einsum("kba,kbc,kc->ka", self._M, self._G, r - self._e)

    def _extend(self, z: np.ndarray) -> np.ndarray:
        if not self._extended:
            return z
        return np.einsum("kab,kb->ka", self._M, z) + self._e

    def _consensus_residual(self, z: np.ndarray, delta: np.ndarray) -> np.ndarray:
        """(3,) the consensus residual of z and δ (N, n_zt) per block x, λ, u:
        ``‖z_b − δ_b‖∞ / (1 + max(‖z_b‖∞, ‖δ_b‖∞))`` over the entries G ties (G_ii > 0; an
        entry with no consensus weight, e.g. the cart-pole's u, is free in both steps), λ in
        physical units (see :attr:`C3Result.consensus_residual`)."""
        n_x, n_l, n_z = self.n_x, self.n_lambda, self.n_z
        ls = self._plan_lcs.lambda_scale
        cache = self._residual_masks
        if cache is None or cache[0] is not self._G or cache[1] != ls:  # once per G / scale
            tied = np.einsum("kii->ki", self._G)[:, :n_z] > 0
            scale = np.ones(n_z)
            scale[n_x:n_x + n_l] = ls
            cache = self._residual_masks = (self._G, ls, tied, scale)
        tied, scale = cache[2], cache[3]
        a = np.where(tied, z[:, :n_z] * scale, 0.0)
        b = np.where(tied, delta[:, :n_z] * scale, 0.0)
        out = np.zeros(3)
        for j, sl in enumerate((slice(0, n_x), slice(n_x, n_x + n_l), slice(n_x + n_l, n_z))):
            if sl.stop > sl.start:
                out[j] = np.abs(a[:, sl] - b[:, sl]).max() / (
                    1.0 + max(np.abs(a[:, sl]).max(), np.abs(b[:, sl]).max()))
        return out

    def _complementarity_residual(self, x: np.ndarray, u: np.ndarray,
                                  lam: np.ndarray) -> np.ndarray:
        """(N,) ``LCS.complementarity_residual`` of the planning LCS along the plan (x: (N,
        n_x)), from the matrices stacked at the last update (the same arithmetic, without
        re-validating and re-stacking them every solve)."""
        st = self._stacked
        s = (np.einsum("kij,kj->ki", st.E, x) + np.einsum("kij,kj->ki", st.F, lam)
             + np.einsum("kij,kj->ki", st.H, u) + st.c)
        return np.abs(np.minimum(lam, s)).max(axis=1, initial=0.0)

    def _reroll(self, x0: np.ndarray, z: np.ndarray) -> np.ndarray:
        st = self._stacked
        x = np.empty((self.N + 1, self.n_x))
        x[0] = x0
        for k in range(self.N):
            x[k + 1] = (st.A[k] @ x[k] + st.D[k] @ z[k, self.n_x:self.n_x + self.n_lambda]
                        + st.B[k] @ z[k, self.n_x + self.n_lambda:] + st.d[k])
        return x

    def _constraint_violation(self, x: np.ndarray, lam: np.ndarray, u: np.ndarray) -> float:
        """Largest relative violation ``max(lower - C v, C v - upper) / (1 + |C v|)`` of the
        linear constraints by a plan (lam in the planning LCS's units, as the QP sees it)."""
        worst = 0.0
        for con in self._constraints:
            V = {"state": x, "input": u, "force": lam}[con.variable]
            first = 1 if con.variable == "state" else 0
            knots = list(con.knots) if con.knots is not None else list(range(first,
                                                                              first + self.N))
            if not knots:
                continue
            vals = V[knots] @ con.C.T
            with np.errstate(invalid="ignore"):
                viol = np.maximum(con.lower - vals, vals - con.upper) / (1.0 + np.abs(vals))
            worst = max(worst, float(np.nanmax(viol, initial=0.0)))
        return worst

    def resimulate(self, x0: Any, u: Any) -> tuple[np.ndarray | None, float]:
        """The inputs ``u`` (N, n_u) applied to the LCS from ``x0``: (states (N+1, n_x), cost).

        Every step solves the contact LCP (complementarity exact), so this is what the plan
        costs on the model it was planned with, eq. (14), unlike :attr:`C3Result.cost`, which
        takes the ADMM plan's own states (λ from the last projection or QP step). Returns
        ``(None, nan)`` when an LCP along the rollout has no solution the solver finds.
        """
        try:
            x = self.lcs.rollout(x0, u).x
        except LCPSolveError:
            return None, float("nan")
        return x, self.plan_cost(x, u)

    def plan_cost(self, x: np.ndarray, u: np.ndarray) -> float:
        """Eq. (15)'s cost of a plan: Σ_k (x_k − x^d_k)ᵀQ_k(·) + u_kᵀR_k u_k, with Q_N."""
        e = x - self._x_des
        return float(np.einsum("ka,kab,kb->", e, self._Q, e)
                     + np.einsum("ka,kab,kb->", u, self._R, u))

    def _failure(self, status: C3Status, message: str, t_start: float, iterations: int,
                 timings: dict[str, float]) -> C3Result:
        if status is C3Status.QP_FAILED and self.options.on_qp_failure == "hold":
            # DAIRLab/c3's fallback: hold the current state, zero inputs and forces.
            self._u_prev = np.zeros((self.N, self.n_u))
            return C3Result(status=status, x=np.tile(self._x0_last, (self.N + 1, 1)),
                            u=np.zeros((self.N, self.n_u)),
                            lam=np.zeros((self.N, self.n_lambda)), delta=None, w=None,
                            iterations=iterations,
                            solve_time=time.perf_counter() - t_start, timings=timings,
                            solver=f"c3/{self.options.projection}", fallback=True,
                            message=message + "; holding x0 with zero input (on_qp_failure="
                                              "'hold')")
        if self._last_plan is not None:
            x, u, lam = self._last_plan
            x = np.vstack([x[1:], x[-1:]])
            u = np.vstack([u[1:], u[-1:]])
            lam = np.vstack([lam[1:], lam[-1:]])
            fallback = True
        else:
            x = np.full((self.N + 1, self.n_x), np.nan)
            u = np.full((self.N, self.n_u), np.nan)
            lam = np.full((self.N, self.n_lambda), np.nan)
            fallback = False
            message += "; no earlier feasible plan to fall back on (arrays are NaN)"
        return C3Result(status=status, x=x, u=u, lam=lam, delta=None, w=None,
                        iterations=iterations, solve_time=time.perf_counter() - t_start,
                        timings=timings, solver=f"c3/{self.options.projection}",
                        fallback=fallback, message=message)

    def __repr__(self) -> str:
        return (f"C3(n_x={self.n_x}, n_u={self.n_u}, n_lambda={self.n_lambda}, N={self.N}, "
                f"projection={self.options.projection!r}, admm_iter={self.options.admm_iter})")
