"""The plant protocol: what every plant offers the controller layer.

The paper's LCS plants (:mod:`plants.paper`), the registered multibody plants
(:mod:`plants.models`) and a :class:`plants.multibody.MultibodyPlant` built from a user's URDF
or MJCF file all satisfy :class:`Plant`, so each goes straight into
``c3mpc.run_closed_loop``, Algorithm 3 (``c3mpc.Algorithm3Planner``), ``c3mpc.run_in_simulator``
and the CLI, without adapters::

    from plants import Plant, check_plant
    isinstance(plant, Plant)      # structural check of the members' presence
    check_plant(plant)            # also their types: ValueError/TypeError naming the member

State ``x`` is (n_x,), input ``u`` (n_u,), contact forces ``λ`` (n_lambda,) in the plant's
units (a multibody plant: ``x = [q; v]`` in [m, rad, m/s, rad/s], ``u`` in [N or N·m], ``λ``
impulse-free forces in [N]).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from lcs import LCS

__all__ = ["Plant", "check_plant", "PLANT_MEMBERS"]


@runtime_checkable
class Plant(Protocol):
    """A plant the controller acts on.

    Attributes:
        n_x, n_u, n_lambda: state, input and complementarity dimensions (ints).
        dt: the plant's time step [s] (of :meth:`lcs` and :meth:`step`).
        state_dependent: True when :meth:`lcs` depends on ``(x, u)`` (the runner then
            re-linearizes at every control step); False for a fixed LCS.
        defaults: :class:`plants.ControlDefaults` (cost Q, R, QN, ADMM weights G, U, horizon N,
            bounds, start ``x0``, goal ``x_goal``) or ``None`` when the plant has no settings
            of its own.
        state_names: (n_x,) names of the state entries.
        input_names: (n_u,) names of the inputs.
    """

    @property
    def n_x(self) -> int: ...

    @property
    def n_u(self) -> int: ...

    @property
    def n_lambda(self) -> int: ...

    @property
    def dt(self) -> float: ...

    @property
    def state_dependent(self) -> bool: ...

    @property
    def defaults(self) -> Any: ...

    @property
    def state_names(self) -> tuple[str, ...]: ...

    @property
    def input_names(self) -> tuple[str, ...]: ...

    def lcs(self, x: Any, u: Any = None) -> LCS:
        """The LCS at state ``x`` (n_x,) and input ``u`` (n_u,), time step :attr:`dt`."""
        ...

    def step(self, x: Any, u: Any) -> tuple[np.ndarray, np.ndarray]:
        """One step of the plant's own dynamics: ``(x_next (n_x,), lam (n_lambda,))``."""
        ...


#: The members of :class:`Plant`, in the order :func:`check_plant` checks them.
PLANT_MEMBERS = ("n_x", "n_u", "n_lambda", "dt", "state_dependent", "defaults", "state_names",
                 "input_names", "lcs", "step")


def check_plant(plant: Any, argname: str = "plant") -> Any:
    """Check that ``plant`` satisfies :class:`Plant`; return it.

    Raises:
        TypeError: a member is missing or of the wrong kind (``n_lambda`` a method, not an
            int, as on ``MultibodyPlant`` before issue 19), naming it.
        ValueError: a negative dimension, a non-positive ``dt``, or names of the wrong count.
    """
    missing = [m for m in PLANT_MEMBERS if not hasattr(plant, m)]
    if missing:
        raise TypeError(f"{argname} ({type(plant).__name__}) does not satisfy plants.Plant: "
                        f"missing {', '.join(missing)}")
    for m in ("n_x", "n_u", "n_lambda"):
        v = getattr(plant, m)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{argname}.{m} must be an int, got {type(v).__name__} ({v!r})")
        if v < 0:
            raise ValueError(f"{argname}.{m} must be >= 0, got {v}")
    dt = plant.dt
    if isinstance(dt, bool) or not isinstance(dt, (int, float, np.integer, np.floating)):
        raise TypeError(f"{argname}.dt must be a number of seconds, got {dt!r}")
    if not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"{argname}.dt must be a positive time step [s], got {dt}")
    if not isinstance(plant.state_dependent, (bool, np.bool_)):
        raise TypeError(f"{argname}.state_dependent must be a bool, got "
                        f"{plant.state_dependent!r}")
    for m, n in (("state_names", plant.n_x), ("input_names", plant.n_u)):
        names = tuple(getattr(plant, m))
        if len(names) != n or not all(isinstance(s, str) for s in names):
            raise ValueError(f"{argname}.{m} must be {n} strings, got {names!r}")
    for m in ("lcs", "step"):
        if not callable(getattr(plant, m)):
            raise TypeError(f"{argname}.{m} must be a method")
    return plant
