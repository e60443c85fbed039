r"""MIQP projection of C3 (seed 003 eq. 23) with Gurobi: the authors' big-M formulation.

Per knot, with binaries ``b`` (``b_i = 1`` means "lambda_i may be positive, the slack is 0")::

    min  (delta - v)^T U (delta - v)
    s.t. 0 <= lambda <= M (1 - b)
         0 <= E delta_x + F lambda + H delta_u + c <= M b
         -bound <= delta <= bound,   b in {0, 1}^n_lambda

as in the authors' ``C3MIQP`` (M = 1000, bound = 1e4), with two deliberate differences: the
full U enters the objective (the authors used only its diagonal), and the models are
**persistent**: one Gurobi environment and one model per knot are built on the first call; later
calls only change the linear objective coefficients ``-2 U v`` and the constant ``v^T U v``, the
changed constraint coefficients (``Model.chgCoeff``, entry by entry) and right-hand sides when
E, F, H or c changed, and the quadratic objective when U changed. Models are rebuilt only when the
dimensions or N change.

Note that big-M and the variable box make this a restriction of eq. 23: a projection needing
``lambda_i > M`` or a slack ``> M`` (or ``|delta| > bound``) is cut off (possibly reported
INFEASIBLE). Gurobi's integrality tolerance (``IntFeasTol``, default 1e-5) times M also bounds the
complementarity violation of the returned point (1e-2 by default); pass
``params={"IntFeasTol": 1e-9, ...}`` for tight results.

Status mapping: OPTIMAL -> OPTIMAL; TIME_LIMIT with a solution -> TIME_LIMIT; INFEASIBLE and
INF_OR_UNBD (the box makes the problem bounded) -> INFEASIBLE with NaN; anything else -> FAILED
with NaN.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..errors import C3ValueError, GurobiLicenseError, SolverUnavailableError
from .base import Projection, ProjectionData, ProjectionResult, ProjectionStatus
from .lcp import _validate

__all__ = ["GurobiMIQPProjection"]

_SIZE_LIMIT_ERRNO = 10010


def _import_gurobipy() -> Any:
    try:
        import gurobipy  # noqa: PLC0415
    except ImportError as exc:  # pragma: no cover - exercised only without gurobipy
        raise SolverUnavailableError(
            "the 'miqp-gurobi' projection needs gurobipy: pip install gurobipy "
            "(or use the exact projection 'miqp', which needs no external solver)") from exc
    return gurobipy


def _license_error(exc: Exception, size: Any) -> GurobiLicenseError:
    return GurobiLicenseError(
        f"Gurobi refused the projection model ({exc}). The pip licence of gurobipy is "
        "size-limited (at most 2000 variables and constraints, 200 variables with quadratic "
        f"terms); this model has (variables, constraints) = {size}. Install a full licence "
        "or use the exact projection 'miqp'.", model_size=size)


def _is_size_error(exc: Exception) -> bool:
    errno = getattr(exc, "errno", None)
    msg = str(exc).lower()
    return errno == _SIZE_LIMIT_ERRNO or "size-limited" in msg or "size limited" in msg


class _KnotModel:
    """One persistent Gurobi model (one knot)."""

    __slots__ = ("model", "d", "b", "dvars", "c_lo", "c_hi", "c_lam", "lo_list", "hi_list",
                 "G", "c", "U")


class GurobiMIQPProjection(Projection):
    """Big-M MIQP projection with persistent per-knot Gurobi models.

    Args:
        M: big-M constant (default 1000, the authors').
        bound: box on every entry of delta (default 1e4, the authors' ``kVariableBounds``).
        threads: Gurobi ``Threads`` (default 1).
        time_limit: optional time limit per knot in [s].
        warm_start: set ``Start`` of delta and b from the previous solution of the same knot
            (the one of the same ADMM iteration if there is one, else the last one).
        params: extra Gurobi parameters (e.g. ``{"MIPGap": 1e-10, "IntFeasTol": 1e-9}``).

    Attributes:
        models: the per-knot ``gurobipy.Model`` objects (empty before the first call).
        rebuilds: how many times the models were (re)built.
    """

    name = "miqp-gurobi"

    def __init__(self, *, M: float = 1000.0, bound: float = 1e4, threads: int = 1,
                 time_limit: float | None = None, warm_start: bool = True,
                 params: dict[str, Any] | None = None):
        if not (np.isfinite(M) and M > 0):
            raise C3ValueError(f"M must be a positive finite number, got {M}")
        if not (np.isfinite(bound) and bound > 0):
            raise C3ValueError(f"bound must be a positive finite number, got {bound}")
        if int(threads) < 0:
            raise C3ValueError(f"threads must be >= 0, got {threads}")
        if time_limit is not None and not time_limit > 0:
            raise C3ValueError(f"time_limit must be positive, got {time_limit}")
        self._gp = _import_gurobipy()
        self.M = float(M)
        self.bound = float(bound)
        self.threads = int(threads)
        self.time_limit = None if time_limit is None else float(time_limit)
        self.warm_start = bool(warm_start)
        self.params = dict(params or {})
        self._env = None
        self._knots: list[_KnotModel] = []
        self._dims: tuple[int, ...] | None = None
        self._starts: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._last_start: tuple[np.ndarray, np.ndarray] | None = None
        self.rebuilds = 0

    @property
    def models(self) -> list[Any]:
        """The per-knot Gurobi models."""
        return [k.model for k in self._knots]

    # ------------------------------------------------------------------ building
    def _get_env(self) -> Any:
        if self._env is None:
            gp = self._gp
            try:
                env = gp.Env(empty=True)
                env.setParam("OutputFlag", 0)
                env.start()
            except gp.GurobiError as exc:
                if _is_size_error(exc):
                    raise _license_error(exc, None) from exc
                raise
            self._env = env
        return self._env

    def _set_params(self, model: Any) -> None:
        model.Params.Threads = self.threads
        if self.time_limit is not None:
            model.Params.TimeLimit = self.time_limit
        for k, val in self.params.items():
            model.setParam(k, val)

    def _build_knot(self, E, F, H, c, U) -> _KnotModel:
        gp = self._gp
        GRB = gp.GRB
        m, nx = E.shape
        nu = H.shape[1]
        nz = nx + m + nu
        km = _KnotModel()
        model = gp.Model(env=self._get_env())
        self._set_params(model)
        lb = np.full(nz, -self.bound)
        lb[nx:nx + m] = 0.0
        d = model.addMVar(nz, lb=lb, ub=self.bound, name="delta")
        b = model.addMVar(m, vtype=GRB.BINARY, name="b")
        G = np.hstack([E, F, H])
        Z = np.zeros((m, nz))
        Z[:, nx:nx + m] = np.eye(m)
        MI = self.M * np.eye(m)
        # x=None: all variables in model order [delta; b].
        km.c_lo = model.addMConstr(np.hstack([G, np.zeros((m, m))]), None, ">", -c)
        km.c_hi = model.addMConstr(np.hstack([G, -MI]), None, "<", -c)
        km.c_lam = model.addMConstr(np.hstack([Z, MI]), None, "<", np.full(m, self.M))
        model.setMObjective(U, None, 0.0, xQ_L=d, xQ_R=d, sense=GRB.MINIMIZE)
        model.update()
        km.model, km.d, km.b = model, d, b
        km.dvars = d.tolist()
        km.lo_list = km.c_lo.tolist()
        km.hi_list = km.c_hi.tolist()
        km.G, km.c, km.U = G.copy(), c.copy(), U.copy()
        return km

    def _update_knot(self, km: _KnotModel, E, F, H, c, U) -> None:
        G = np.hstack([E, F, H])
        if not np.array_equal(G, km.G):
            rows, cols = np.nonzero(G != km.G)
            for i, j in zip(rows.tolist(), cols.tolist()):
                val = float(G[i, j])
                km.model.chgCoeff(km.lo_list[i], km.dvars[j], val)
                km.model.chgCoeff(km.hi_list[i], km.dvars[j], val)
            km.G = G
        if not np.array_equal(c, km.c):
            km.c_lo.RHS = -c
            km.c_hi.RHS = -c
            km.c = c.copy()
        if not np.array_equal(U, km.U):
            km.model.setMObjective(U, None, 0.0, xQ_L=km.d, xQ_R=km.d,
                                   sense=self._gp.GRB.MINIMIZE)
            km.U = U.copy()

    def _ensure_models(self, E, F, H, c, U) -> None:
        N, m, nx = E.shape
        dims = (N, m, nx, H.shape[2])
        gp = self._gp
        try:
            if dims != self._dims:
                for km in self._knots:
                    km.model.dispose()
                self._knots = [self._build_knot(E[k], F[k], H[k], c[k], U[k])
                               for k in range(N)]
                self._dims = dims
                self._starts.clear()
                self._last_start = None
                self.rebuilds += 1
            else:
                for k in range(N):
                    self._update_knot(self._knots[k], E[k], F[k], H[k], c[k], U[k])
        except gp.GurobiError as exc:
            if _is_size_error(exc):
                nz = nx + m + H.shape[2]
                raise _license_error(exc, (nz + m, 3 * m)) from exc
            raise

    # ------------------------------------------------------------------ projection
    def project(self, v: np.ndarray, data: ProjectionData, admm_iteration: int = 0
                ) -> ProjectionResult:
        """Project every knot's ``v[k]`` by solving its persistent MIQP."""
        t0 = time.perf_counter()
        gp = self._gp
        GRB = gp.GRB
        v, E, F, H, c, U = _validate(v, data)
        N, m, nx = E.shape
        nz = U.shape[1]
        U = 0.5 * (U + np.swapaxes(U, 1, 2))
        self._ensure_models(E, F, H, c, U)
        start = self._starts.get(int(admm_iteration), self._last_start)
        delta = np.full((N, nz), np.nan)
        status = np.full(N, int(ProjectionStatus.FAILED), np.int64)
        nodes = np.zeros(N, np.int64)
        bsol = np.zeros((N, m))
        Uv = np.einsum("kij,kj->ki", U, v)
        for k in range(N):
            km = self._knots[k]
            model = km.model
            km.d.Obj = -2.0 * Uv[k]
            model.ObjCon = float(v[k] @ Uv[k])
            if self.warm_start and start is not None and np.all(np.isfinite(start[0][k])):
                km.d.Start = start[0][k]
                km.b.Start = start[1][k]
            try:
                model.optimize()
            except gp.GurobiError as exc:
                if _is_size_error(exc):
                    raise _license_error(exc, (model.NumVars, model.NumConstrs)) from exc
                raise
            st = model.Status
            nodes[k] = int(model.NodeCount)
            has_sol = model.SolCount > 0
            if st == GRB.OPTIMAL and has_sol:
                status[k] = ProjectionStatus.OPTIMAL
            elif st == GRB.TIME_LIMIT and has_sol:
                status[k] = ProjectionStatus.TIME_LIMIT
            elif st in (GRB.INFEASIBLE, GRB.INF_OR_UNBD):
                status[k] = ProjectionStatus.INFEASIBLE
                continue
            else:
                continue
            delta[k] = km.d.X
            bsol[k] = np.round(km.b.X)
        if self.warm_start:
            ok = np.all(np.isfinite(delta), axis=1)
            if start is not None:
                delta_s = np.where(ok[:, None], delta, start[0])
                b_s = np.where(ok[:, None], bsol, start[1])
            else:
                delta_s, b_s = delta, bsol
            self._starts[int(admm_iteration)] = (delta_s, b_s)
            self._last_start = (delta_s, b_s)
        return ProjectionResult(delta, status, time.perf_counter() - t0, nodes)

    def close(self) -> None:
        """Dispose of the models and the environment."""
        for km in self._knots:
            km.model.dispose()
        self._knots = []
        self._dims = None
        if self._env is not None:
            self._env.dispose()
            self._env = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass
