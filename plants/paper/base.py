"""Shared pieces of the C3 paper's analytic LCS plants (seed 003 §VI)."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from lcs import LCS

from .._validation import number, vector

__all__ = ["ControlDefaults", "PaperLCSPlant"]


def _ro(a: Any) -> np.ndarray:
    arr = np.array(a, dtype=float)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class ControlDefaults:
    """The paper's controller settings for a plant (seed 003 §VI; authors' code where silent).

    Cost and consensus matrices follow the solver's variable order ``z = [x; lambda; u]``.

    Attributes:
        N: MPC horizon (knots).
        dt: LCS time step in [s].
        Q: (n_x, n_x) state cost.
        R: (n_u, n_u) input cost.
        QN: (n_x, n_x) terminal cost.
        G: (n_z, n_z) ADMM augmented-cost weight, n_z = n_x + n_lambda + n_u.
        U: (n_z, n_z) projection weight.
        admm_iter: ADMM iterations s.
        rho: initial ADMM penalty ρ.
        rho_scale: penalty growth ρ_s per iteration.
        projection: the projection the paper used ("miqp", "lcp", ...).
        x0: (n_x,) the paper's start state.
        x_goal: (n_x,) target state.
        x_lower, x_upper: (n_x,) state bounds (±inf where free).
        u_lower, u_upper: (n_u,) input bounds (±inf where free).
    """

    N: int
    dt: float
    Q: np.ndarray
    R: np.ndarray
    QN: np.ndarray
    G: np.ndarray
    U: np.ndarray
    admm_iter: int
    rho: float
    rho_scale: float
    projection: str
    x0: np.ndarray
    x_goal: np.ndarray
    x_lower: np.ndarray
    x_upper: np.ndarray
    u_lower: np.ndarray
    u_upper: np.ndarray
    notes: str = field(default="")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (np.ndarray, list, tuple)):
                object.__setattr__(self, f.name, _ro(v))

    def replace(self, **changes: Any) -> "ControlDefaults":
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


class PaperLCSPlant(ABC):
    """A plant whose model is an analytic LCS from the C3 paper.

    The plant's "true" dynamics are its LCS evaluated at the current state (for the
    state-dependent pivoting model, re-built at every step), so ``step`` is exactly what the
    paper simulated.
    """

    name: ClassVar[str]
    state_names: ClassVar[tuple[str, ...]]
    input_names: ClassVar[tuple[str, ...]]
    lambda_names: ClassVar[tuple[str, ...]]
    state_dependent: ClassVar[bool] = False

    def __init__(self, params: Any):
        self.params = params

    @property
    def n_x(self) -> int:
        """State dimension."""
        return len(self.state_names)

    @property
    def n_u(self) -> int:
        """Input dimension."""
        return len(self.input_names)

    @property
    def n_lambda(self) -> int:
        """Number of complementarity variables."""
        return len(self.lambda_names)

    @property
    def dt(self) -> float:
        """The plant's time step in [s]."""
        return float(self.params.dt)

    def lcs(self, x: Any = None, u: Any = None, dt: float | None = None) -> LCS:
        """The LCS at state ``x`` and input ``u`` (time step ``dt``, default the plant's).

        State-independent plants build it once per time step (:meth:`_build`) and return the
        cached instance for the plant's own ``dt``; state-dependent plants override this.
        """
        if x is not None:  # checked even where the LCS does not depend on them
            self._state(x)
        if u is not None:
            vector("u", u, self.n_u)
        if dt is not None:
            dt = number("dt", dt, minimum=0.0, exclusive_minimum=True)
        if dt is None or dt == self.dt:
            return self._default_lcs
        return self._build(dt)

    @cached_property
    def _default_lcs(self) -> LCS:
        return self._build(self.dt)

    def _build(self, dt: float) -> LCS:
        """The LCS for time step ``dt`` (state-independent plants implement this)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _build or lcs")

    @property
    @abstractmethod
    def defaults(self) -> ControlDefaults:
        """The paper's controller settings for this plant."""

    def _state(self, x: Any) -> np.ndarray:
        if x is None:
            return np.asarray(self.defaults.x0, dtype=float)
        return vector("x", x, self.n_x)

    def saturate(self, u: Any) -> np.ndarray:
        """``u`` clipped to the actuator limits ``defaults.u_lower/u_upper``."""
        u = vector("u", u, self.n_u)
        d = self.defaults
        return np.clip(u, d.u_lower, d.u_upper)

    def step(self, x: Any, u: Any) -> tuple[np.ndarray, np.ndarray]:
        """Advance the plant one step ``dt``: returns ``(x_next, lam)``.

        The input is first saturated at the actuator limits (:meth:`saturate`): e.g. a finger
        cannot pull, so a planned normal force of -1e-7 N (solver tolerance) acts as 0. Without
        this the friction rows ``mu u_n - lambda_t >= 0`` of the paper's LCS make the contact
        LCP unsolvable.
        """
        x = self._state(x)
        u = self.saturate(u)
        return self.lcs(x, u).step(x, u)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, n_x={self.n_x}, n_u={self.n_u}, "
                f"n_lambda={self.n_lambda}, dt={self.dt})")
