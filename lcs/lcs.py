r"""The linear complementarity system (LCS), seed 003 eq. (1).

.. math::

    x_{k+1} &= A_k x_k + B_k u_k + D_k \lambda_k + d_k, \\
    0 \le \lambda_k &\perp E_k x_k + F_k \lambda_k + H_k u_k + c_k \ge 0 .

The matrices are already discrete-time; ``dt`` [s] is the step they were built for. An LCS is
*time-invariant* (one set of matrices) or *time-varying* (per-knot matrices for knots
``0..N-1``); any argument may be given per knot (a list or a stacked 3-D array) and the rest
are shared. Instances are immutable: arrays are stored read-only and every transformation
(:meth:`LCS.scaled`, :meth:`LCS.replace`, ...) returns a new LCS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np

from ._validation import as_float_array, as_matrix, as_vector, check_number
from .errors import LCPSolveError, LCSTypeError, LCSValueError
from .lcp import LCPResult, _solve_validated, solve_lcp_batch

__all__ = ["LCS", "LCSKnot", "Rollout"]

_NAMES = ("A", "B", "D", "d", "E", "F", "H", "c")


def _is_ragged(value: Any) -> bool:
    """True for a list/tuple of real arrays whose shapes differ (a ragged per-knot list)."""
    if not isinstance(value, (list, tuple)) or len(value) < 2:
        return False
    try:
        shapes = {np.asarray(v, dtype=np.float64).shape for v in value}
    except (TypeError, ValueError):
        return False
    return len(shapes) > 1


class LCSKnot(NamedTuple):
    """The eight matrices of one knot (time-invariant LCS: the same at every knot)."""

    A: np.ndarray
    B: np.ndarray
    D: np.ndarray
    d: np.ndarray
    E: np.ndarray
    F: np.ndarray
    H: np.ndarray
    c: np.ndarray


@dataclass(frozen=True)
class Rollout:
    """A simulated LCS trajectory.

    Attributes:
        x: (T+1, n_x) states, ``x[0] = x0``.
        lam: (T, n_lambda) complementarity variables, in the LCS's own (possibly scaled) units.
        u: (T, n_u) inputs that were applied.
    """

    x: np.ndarray
    lam: np.ndarray
    u: np.ndarray


class LCS:
    """Linear complementarity system (seed 003 eq. 1), time-invariant or time-varying.

    Args:
        A: (n_x, n_x) state matrix, or per knot.
        B: (n_x, n_u) input matrix, or per knot.
        D: (n_x, n_lambda) contact matrix, or per knot.
        d: (n_x,) affine dynamics term, or per knot.
        E: (n_lambda, n_x), or per knot.
        F: (n_lambda, n_lambda), or per knot.
        H: (n_lambda, n_u), or per knot.
        c: (n_lambda,), or per knot.
        dt: time step in [s] the discrete matrices were built for (> 0).
        lambda_scale: factor that maps this LCS's lambda to physical units,
            ``lam_true = lambda_scale * lam`` (1 unless built by :meth:`scaled`).

    Raises:
        ValueError: a matrix has the wrong shape (the message names it and the expected
            shape), a non-finite entry, per-knot lists of different lengths, or ``dt <= 0``.
        TypeError: a matrix is not a real array.

    Example:
        >>> lcs = LCS(A, B, D, d, E, F, H, c, dt=0.01)
        >>> x_next, lam = lcs.step(x, u)
    """

    __slots__ = ("_m", "_N", "_dt", "_lambda_scale", "_n_x", "_n_u", "_n_lambda")

    def __init__(self, A: Any, B: Any, D: Any, d: Any, E: Any, F: Any, H: Any, c: Any,
                 dt: float = 0.01, *, lambda_scale: float = 1.0):
        raw = {}
        for name, value in zip(_NAMES, (A, B, D, d, E, F, H, c)):
            try:
                raw[name] = as_float_array(name, value)
            except LCSTypeError as e:
                if not _is_ragged(value):  # genuinely not a real array: keep the TypeError
                    raise
                raise LCSValueError(f"{name}: per-knot matrices must all have the same shape "
                                    f"({e})") from e
        for name in ("A", "B", "D", "E", "F", "H"):
            if raw[name].ndim == 3 and raw[name].shape[0] == 0:
                raise LCSValueError(f"{name}: a time-varying LCS needs at least one knot, got "
                                    f"an empty per-knot stack of shape {raw[name].shape}")
        for name in ("d", "c"):
            arr = raw[name]
            if arr.ndim == 3 and arr.shape[0] == 0 or arr.ndim == 2 and arr.shape[0] == 0 \
                    and arr.shape[1] != 1:
                raise LCSValueError(f"{name}: a time-varying LCS needs at least one knot, got "
                                    f"an empty per-knot stack of shape {raw[name].shape}")
        # Dimensions from A, B, D (knot 0 when per knot). A flat B/H is a single input column.
        A0 = raw["A"][0] if raw["A"].ndim == 3 else raw["A"]
        if A0.ndim != 2 or A0.shape[0] != A0.shape[1]:
            raise LCSValueError(f"A must be a square (n_x, n_x) matrix (or per knot), got shape "
                                f"{raw['A'].shape}")
        n_x = A0.shape[0]
        for name in ("B", "H"):
            if raw[name].ndim == 1:
                raw[name] = raw[name][:, None]
        B0 = raw["B"][0] if raw["B"].ndim == 3 else raw["B"]
        D0 = raw["D"][0] if raw["D"].ndim == 3 else raw["D"]
        if B0.ndim != 2 or D0.ndim != 2:
            raise LCSValueError(f"B must be (n_x, n_u) and D must be (n_x, n_lambda), got shapes "
                                f"{raw['B'].shape} and {raw['D'].shape}")
        n_u, n_lam = B0.shape[1], D0.shape[1]
        shapes = {"A": (n_x, n_x), "B": (n_x, n_u), "D": (n_x, n_lam), "d": (n_x,),
                  "E": (n_lam, n_x), "F": (n_lam, n_lam), "H": (n_lam, n_u), "c": (n_lam,)}
        per_knot = {}
        for name in _NAMES:
            arr = raw[name]
            if len(shapes[name]) == 1:  # d, c: (n,), (n, 1) single; (N, n), (N, n, 1) per knot
                if arr.ndim == 3 and arr.shape[2] == 1:
                    arr = raw[name] = arr[:, :, 0]
                per_knot[name] = arr.ndim == 2 and arr.shape != (shapes[name][0], 1)
            else:
                per_knot[name] = arr.ndim == 3
        lengths = {k: raw[k].shape[0] for k in _NAMES if per_knot[k]}
        if len(set(lengths.values())) > 1:
            raise LCSValueError(
                "per-knot matrices must all have the same number of knots, got "
                + ", ".join(f"{k}: {n}" for k, n in lengths.items())
            )
        N = next(iter(lengths.values())) if lengths else None
        if N == 0:
            raise LCSValueError("a time-varying LCS needs at least one knot, got empty lists")
        mats: dict[str, np.ndarray] = {}
        for name in _NAMES:
            knots = raw[name] if per_knot[name] else [raw[name]]
            stack = []
            for k, value in enumerate(knots):
                label = f"{name}[{k}]" if per_knot[name] else name
                if len(shapes[name]) == 1:
                    stack.append(as_vector(label, value, shapes[name][0]))
                else:
                    stack.append(as_matrix(label, value, *shapes[name]))
            m = np.stack(stack)
            if N is not None and not per_knot[name]:  # shared in a time-varying LCS: per knot
                m = np.broadcast_to(m, (N,) + m.shape[1:])
            m = np.ascontiguousarray(m)
            m.setflags(write=False)
            mats[name] = m
        dt = check_number("dt", dt, minimum=0.0, exclusive_minimum=True)
        lambda_scale = check_number("lambda_scale", lambda_scale, minimum=0.0,
                                    exclusive_minimum=True)
        self._m = mats
        self._N = N
        self._dt = dt
        self._lambda_scale = lambda_scale
        self._n_x, self._n_u, self._n_lambda = n_x, n_u, n_lam

    @classmethod
    def _from_trusted(cls, A: np.ndarray, B: np.ndarray, D: np.ndarray, d: np.ndarray,
                      E: np.ndarray, F: np.ndarray, H: np.ndarray, c: np.ndarray,
                      dt: float) -> "LCS":
        """A time-invariant LCS from float64 matrices whose shapes the caller guarantees
        (the factory's own output), without the constructor's per-matrix validation; the
        entries are still checked finite (LCSValueError naming the matrix). Equal, matrix for
        matrix, to ``LCS(A, B, D, d, E, F, H, c, dt=dt)``."""
        mats: dict[str, np.ndarray] = {}
        for name, value in zip(_NAMES, (A, B, D, d, E, F, H, c)):
            m = np.ascontiguousarray(value, dtype=float)[None]
            if not np.isfinite(m).all():
                raise LCSValueError(f"{name} has non-finite entries")
            m.setflags(write=False)
            mats[name] = m
        if not (dt > 0 and math.isfinite(dt)):
            raise LCSValueError(f"dt must be > 0, got {dt!r}")
        self = cls.__new__(cls)
        self._m = mats
        self._N = None
        self._dt = float(dt)
        self._lambda_scale = 1.0
        self._n_x, self._n_u, self._n_lambda = A.shape[0], B.shape[1], D.shape[1]
        return self

    # ------------------------------------------------------------------ structure
    @property
    def n_x(self) -> int:
        """State dimension."""
        return self._n_x

    @property
    def n_u(self) -> int:
        """Input dimension."""
        return self._n_u

    @property
    def n_lambda(self) -> int:
        """Number of complementarity variables."""
        return self._n_lambda

    @property
    def dt(self) -> float:
        """Time step in [s]."""
        return self._dt

    @property
    def N(self) -> int | None:
        """Number of knots of a time-varying LCS; ``None`` when time-invariant."""
        return self._N

    @property
    def is_time_varying(self) -> bool:
        """True when the matrices differ per knot."""
        return self._N is not None

    @property
    def lambda_scale(self) -> float:
        """``lam_true = lambda_scale * lam`` (see :meth:`scaled`)."""
        return self._lambda_scale

    def _get(self, name: str) -> np.ndarray:
        m = self._m[name]
        return m if self.is_time_varying else m[0]

    A = property(lambda self: self._get("A"), doc="(n_x, n_x), or (N, n_x, n_x) per knot.")
    B = property(lambda self: self._get("B"), doc="(n_x, n_u), or (N, n_x, n_u) per knot.")
    D = property(lambda self: self._get("D"), doc="(n_x, n_lambda), or per knot.")
    d = property(lambda self: self._get("d"), doc="(n_x,), or (N, n_x) per knot.")
    E = property(lambda self: self._get("E"), doc="(n_lambda, n_x), or per knot.")
    F = property(lambda self: self._get("F"), doc="(n_lambda, n_lambda), or per knot.")
    H = property(lambda self: self._get("H"), doc="(n_lambda, n_u), or per knot.")
    c = property(lambda self: self._get("c"), doc="(n_lambda,), or (N, n_lambda) per knot.")

    def _check_knot(self, k: int) -> int:
        if k == 0 and self._N is None:
            return 0
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
            raise LCSValueError(f"k must be an integer knot index, got {k!r}")
        if self._N is not None and not 0 <= k < self._N:
            raise LCSValueError(f"knot k={k} is out of range for a time-varying LCS with "
                                f"N={self._N} knots (0..{self._N - 1})")
        if k < 0:
            raise LCSValueError(f"knot k must be >= 0, got {k}")
        return int(k) if self._N is not None else 0

    def knot(self, k: int = 0) -> LCSKnot:
        """The matrices at knot ``k`` (read-only views)."""
        i = self._check_knot(k)
        return LCSKnot(*(self._m[n][i] for n in _NAMES))

    def stacked(self, N: int) -> LCSKnot:
        """All matrices broadcast to ``N`` knots: A is (N, n_x, n_x), d is (N, n_x), ...

        For a time-varying LCS, ``N`` must not exceed :attr:`N` (the first N knots are used).
        """
        N = check_number("N", N, integer=True, minimum=1)
        if self._N is not None and N > self._N:
            raise LCSValueError(f"N={N} knots requested from a time-varying LCS with only "
                                f"{self._N} knots")
        if N < 1:
            raise LCSValueError(f"N must be >= 1, got {N}")
        out = []
        for n in _NAMES:
            m = self._m[n]
            out.append(m[:N] if self._N is not None else np.broadcast_to(m, (N,) + m.shape[1:]))
        return LCSKnot(*out)

    # ------------------------------------------------------------------ simulation
    def _xu(self, x: Any, u: Any) -> tuple[np.ndarray, np.ndarray]:
        x = as_vector("x", x, self._n_x)
        u = as_vector("u", np.zeros(0) if u is None and self._n_u == 0 else u, self._n_u)
        return x, u

    def solve_lambda(self, x: Any, u: Any, k: int = 0) -> LCPResult:
        """Solve LCP(E_k x + H_k u + c_k, F_k) for lambda at state ``x`` and input ``u``."""
        x, u = self._xu(x, u)
        i = self._check_knot(k)
        m = self._m
        return _solve_validated(m["F"][i], m["E"][i] @ x + m["H"][i] @ u + m["c"][i])

    def step(self, x: Any, u: Any, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """One step of the LCS from knot ``k``: returns ``(x_next, lam)``.

        Args:
            x: (n_x,) state.
            u: (n_u,) input.
            k: knot index (ignored by a time-invariant LCS).

        Raises:
            LCPSolveError: the LCP has no solution or was not solved; the failed
                :class:`lcs.LCPResult` is attached as ``.result``.
        """
        x, u = self._xu(x, u)
        i = self._check_knot(k)
        m = self._m
        sol = _solve_validated(m["F"][i], m["E"][i] @ x + m["H"][i] @ u + m["c"][i])
        if not sol.found:
            raise LCPSolveError(
                f"LCS.step: the contact LCP at knot {k} was not solved ({sol.status.name})", sol
            )
        x_next = m["A"][i] @ x + m["B"][i] @ u + m["D"][i] @ sol.z + m["d"][i]
        return x_next, sol.z

    def rollout(self, x0: Any, us: Any) -> Rollout:
        """Simulate ``T`` steps from ``x0`` under inputs ``us`` of shape (T, n_u).

        A time-varying LCS uses knot k for step k, so T must not exceed :attr:`N`.

        Raises:
            LCPSolveError: a step's LCP was not solved (the failed result is attached).
        """
        x = as_vector("x0", x0, self._n_x)
        us = as_float_array("us", us)
        if us.ndim == 1 and self._n_u == 1:
            us = us[:, None]
        if us.ndim != 2 or us.shape[1] != self._n_u:
            raise LCSValueError(f"us must have shape (T, {self._n_u}), got {us.shape}")
        if not np.all(np.isfinite(us)):
            raise LCSValueError("us has a non-finite entry")
        T = us.shape[0]
        if self._N is not None and T > self._N:
            raise LCSValueError(f"a time-varying LCS with N={self._N} knots cannot be rolled "
                                f"out for T={T} steps")
        xs = np.empty((T + 1, self._n_x))
        lams = np.empty((T, self._n_lambda))
        xs[0] = x
        for k in range(T):
            xs[k + 1], lams[k] = self.step(xs[k], us[k], k if self._N is not None else 0)
        return Rollout(xs, lams, us.copy())

    # ------------------------------------------------------------------ residuals
    def _traj(self, x: Any, u: Any, lam: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        x = as_float_array("x", x)
        single = x.ndim == 1
        x = np.atleast_2d(x)
        u = np.atleast_2d(as_float_array("u", u))
        lam = np.atleast_2d(as_float_array("lam", lam))
        if self._n_u == 1 and u.shape[0] == 1 and u.shape[1] == x.shape[0] and not single:
            u = u.T
        T = x.shape[0]
        for name, arr, n in (("x", x, self._n_x), ("u", u, self._n_u), ("lam", lam,
                                                                         self._n_lambda)):
            if arr.shape != (T, n):
                raise LCSValueError(f"{name} must have shape ({T}, {n}) to match x, got "
                                    f"{arr.shape}")
        if self._N is not None and T > self._N:
            raise LCSValueError(f"{T} knots given for a time-varying LCS with N={self._N}")
        return x, u, lam, single

    def complementarity_slack(self, x: Any, u: Any, lam: Any) -> np.ndarray:
        """``E x + F lam + H u + c`` at one knot (1-D inputs) or along a trajectory (T, .)."""
        x, u, lam, single = self._traj(x, u, lam)
        m = self.stacked(x.shape[0])
        s = (np.einsum("kij,kj->ki", m.E, x) + np.einsum("kij,kj->ki", m.F, lam)
             + np.einsum("kij,kj->ki", m.H, u) + m.c)
        return s[0] if single else s

    def complementarity_residual(self, x: Any, u: Any, lam: Any) -> np.ndarray | float:
        """Natural residual ``max_i |min(lam_i, slack_i)|`` per knot (0 iff complementary).

        Covers all three conditions at once: lam >= 0, slack >= 0 and lam ⟂ slack.
        Returns a float for one knot, or a (T,) array along a trajectory.
        """
        x, u, lam, single = self._traj(x, u, lam)
        s = np.atleast_2d(self.complementarity_slack(x, u, lam))
        r = np.abs(np.minimum(lam, s)).max(axis=1, initial=0.0)
        return float(r[0]) if single else r

    def complementarity_violation(self, x: Any, u: Any, lam: Any) -> np.ndarray | float:
        """``max_i |lam_i * slack_i|`` plus the negative parts of lam and slack, per knot."""
        x, u, lam, single = self._traj(x, u, lam)
        s = np.atleast_2d(self.complementarity_slack(x, u, lam))
        v = np.maximum.reduce([np.abs(lam * s), np.maximum(-lam, 0), np.maximum(-s, 0)])
        r = v.max(axis=1, initial=0.0)
        return float(r[0]) if single else r

    def dynamics_residual(self, x: Any, u: Any, lam: Any) -> np.ndarray:
        """``x[k+1] - (A x[k] + B u[k] + D lam[k] + d)`` for a trajectory with x of (T+1, n_x)."""
        x = np.atleast_2d(as_float_array("x", x))
        T = x.shape[0] - 1
        _, u, lam, _ = self._traj(x[:-1], u, lam)
        m = self.stacked(T)
        pred = (np.einsum("kij,kj->ki", m.A, x[:-1]) + np.einsum("kij,kj->ki", m.B, u)
                + np.einsum("kij,kj->ki", m.D, lam) + m.d)
        return x[1:] - pred

    # ------------------------------------------------------------------ transforms
    def scaled(self) -> "LCS":
        r"""The same system with lambda rescaled so that D and A have comparable size.

        With :math:`s = \|A_0\|_F / \|D_0\|_F` (knot 0 for every knot, as in the authors' code):
        :math:`D \leftarrow sD`, :math:`E, H, c \leftarrow E/s, H/s, c/s`, F unchanged, so the
        scaled variable is :math:`\lambda/s` and the complementarity slack is divided by s. The
        returned LCS records the accumulated factor in :attr:`lambda_scale`; use
        :meth:`unscale_lambda` to map its lambda back to physical units.
        Returns ``self`` unchanged when ``D_0 = 0`` (lambda has no effect to balance).
        """
        nA = np.linalg.norm(self._m["A"][0])
        nD = np.linalg.norm(self._m["D"][0])
        if nD == 0.0 or nA == 0.0:
            return self
        s = nA / nD
        return self.replace(D=self._m["D"] * s, E=self._m["E"] / s, H=self._m["H"] / s,
                            c=self._m["c"] / s, lambda_scale=self._lambda_scale * s)

    def unscale_lambda(self, lam: Any) -> np.ndarray:
        """Map this LCS's lambda to physical units: ``lambda_scale * lam``."""
        return self._lambda_scale * as_float_array("lam", lam)

    def replace(self, **changes: Any) -> "LCS":
        """A new LCS with some matrices (or ``dt``, ``lambda_scale``) replaced.

        Stacked arrays of the current knot layout are accepted, so ``lcs.replace(c=lcs.c)``
        round-trips for both time-invariant and time-varying systems.
        """
        unknown = set(changes) - set(_NAMES) - {"dt", "lambda_scale"}
        if unknown:
            raise LCSValueError(f"unknown LCS field(s) {sorted(unknown)}; valid: "
                                f"{list(_NAMES) + ['dt', 'lambda_scale']}")
        args = {}
        for n in _NAMES:
            v = changes.get(n, self._m[n])
            if n in changes:
                args[n] = v
            else:
                args[n] = v if self._N is not None else v[0]
            if n in changes and self._N is None:
                arr = np.asarray(v)
                vector = n in ("d", "c")
                if arr.ndim == (2 if vector else 3) and arr.shape[0] == 1:
                    args[n] = arr[0]
        return LCS(**args, dt=changes.get("dt", self._dt),
                   lambda_scale=changes.get("lambda_scale", self._lambda_scale))

    def at_knot(self, k: int) -> "LCS":
        """The time-invariant LCS made of knot ``k``'s matrices."""
        kn = self.knot(k)
        return LCS(*kn, dt=self._dt, lambda_scale=self._lambda_scale)

    def as_time_varying(self, N: int) -> "LCS":
        """This LCS with its matrices stacked for ``N`` knots."""
        st = self.stacked(N)
        return LCS(*(np.array(m) for m in st), dt=self._dt, lambda_scale=self._lambda_scale)

    def has_same_dimensions_as(self, other: "LCS") -> bool:
        """True when n_x, n_u and n_lambda agree."""
        return (self.n_x, self.n_u, self.n_lambda) == (other.n_x, other.n_u, other.n_lambda)

    def __repr__(self) -> str:
        kind = f"time-varying, N={self._N}" if self._N is not None else "time-invariant"
        extra = f", lambda_scale={self._lambda_scale:.4g}" if self._lambda_scale != 1.0 else ""
        return (f"LCS(n_x={self._n_x}, n_u={self._n_u}, n_lambda={self._n_lambda}, "
                f"dt={self._dt}, {kind}{extra})")

    @staticmethod
    def from_knots(knots: Sequence[LCSKnot], dt: float = 0.01) -> "LCS":
        """A time-varying LCS from a sequence of per-knot matrix tuples."""
        if len(knots) == 0:
            raise LCSValueError("from_knots needs at least one knot")
        cols = list(zip(*knots))
        return LCS(*(list(c) for c in cols), dt=dt)

    def batch_lambda(self, x: Any, u: Any) -> Any:
        """Solve the contact LCP at every knot of a trajectory in one batched call.

        Args:
            x: (T, n_x) states, u: (T, n_u) inputs (knot k uses the knot-k matrices).

        Returns:
            :class:`lcs.LCPBatchResult` for the T LCPs.
        """
        x = np.atleast_2d(as_float_array("x", x))
        u = np.atleast_2d(as_float_array("u", u))
        T = x.shape[0]
        if x.shape != (T, self._n_x) or u.shape != (T, self._n_u):
            raise LCSValueError(f"x and u must have shapes ({T}, {self._n_x}) and "
                                f"({T}, {self._n_u}), got {x.shape} and {u.shape}")
        m = self.stacked(T)
        q = np.einsum("kij,kj->ki", m.E, x) + np.einsum("kij,kj->ki", m.H, u) + m.c
        F = self._m["F"] if self._N is None else self._m["F"][:T]
        return solve_lcp_batch(F, q)
