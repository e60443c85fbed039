"""Projection methods by name: :func:`make_projection`.

=================  ==============================================================  ==========
name               class                                                           paper
=================  ==============================================================  ==========
``"lcp"``          :class:`c3mpc.projections.lcp.LCPProjection`                    §V-B3
``"qp"``           :class:`c3mpc.projections.qp.ConvexQPProjection`                eq. (24)
``"admm"``         :class:`c3mpc.projections.admm.ADMMProjection`                  §V-B3
``"c3plus"``       :class:`c3mpc.projections.c3plus.C3PlusProjection`              (C3+)
``"miqp"``         :class:`c3mpc.projections.miqp_exact.ExactMIQPProjection`       eq. (23)
``"miqp-gurobi"``  :class:`c3mpc.projections.miqp_gurobi.GurobiMIQPProjection`     eq. (23)
=================  ==============================================================  ==========

Names are case-insensitive; ``"c3+"`` is accepted for ``"c3plus"``. Classes are imported
lazily, so a missing optional backend only matters when its projection is requested.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from ..errors import C3TypeError, C3ValueError
from .base import Projection

__all__ = ["make_projection", "available_projections"]

_REGISTRY: dict[str, tuple[str, str]] = {
    "lcp": ("c3mpc.projections.lcp", "LCPProjection"),
    "qp": ("c3mpc.projections.qp", "ConvexQPProjection"),
    "admm": ("c3mpc.projections.admm", "ADMMProjection"),
    "c3plus": ("c3mpc.projections.c3plus", "C3PlusProjection"),
    "miqp": ("c3mpc.projections.miqp_exact", "ExactMIQPProjection"),
    "miqp-gurobi": ("c3mpc.projections.miqp_gurobi", "GurobiMIQPProjection"),
}
_ALIASES = {"c3+": "c3plus", "c3_plus": "c3plus", "miqp_gurobi": "miqp-gurobi"}


def available_projections() -> list[str]:
    """The valid projection names."""
    return list(_REGISTRY)


# C3Options field -> constructor keyword, per projection (used when a C3Options is passed)
_FROM_C3_OPTIONS: dict[str, dict[str, str]] = {
    "lcp": {},
    "qp": {"alpha": "qp_alpha", "epsilon": "qp_epsilon", "warm_start": "warm_start"},
    "admm": {"max_iterations": "admm_projection_iter"},
    "c3plus": {},
    # The exact projection's previous-mode start measured 5-35% slower (same optimum): not
    # forwarded; pass extra={"warm_start": True} to opt in.
    "miqp": {},
    "miqp-gurobi": {"M": "big_m", "time_limit": "projection_time_limit",
                    "threads": "num_threads", "warm_start": "warm_start"},
}


def _options_from_c3(key: str, c3_options: Any, cls: type) -> dict[str, Any]:
    """Constructor keywords taken from a :class:`c3mpc.options.C3Options` (duck-typed), plus
    its ``extra`` mapping; only keywords the constructor accepts are kept."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        params = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    out: dict[str, Any] = {}
    for kw, attr in _FROM_C3_OPTIONS[key].items():
        if hasattr(c3_options, attr) and (takes_any or kw in params):
            out[kw] = getattr(c3_options, attr)
    out.update(dict(getattr(c3_options, "extra", None) or {}))
    return out


def make_projection(name: str, c3_options: Any = None, /, **options: Any) -> Projection:
    """Build the projection called ``name`` with constructor ``options``.

    Args:
        name: one of :func:`available_projections` (case-insensitive; ``"c3+"`` accepted).
        c3_options: optional :class:`c3mpc.options.C3Options`; its projection fields
            (``qp_alpha``, ``qp_epsilon``, ``admm_projection_iter``, ``big_m``,
            ``projection_time_limit``, ``num_threads``, ``warm_start``) and its ``extra``
            mapping become constructor options (see ``_FROM_C3_OPTIONS``).
        **options: constructor options; they override those taken from ``c3_options``.

    Raises:
        C3ValueError: unknown name (the message lists the valid ones) or bad options.
        C3TypeError: ``name`` is not a string.
        SolverUnavailableError / ImportError: the method's backend is not installed.
    """
    if not isinstance(name, str):
        raise C3TypeError(f"projection name must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _REGISTRY:
        raise C3ValueError(f"unknown projection {name!r}; valid names: "
                           f"{', '.join(repr(n) for n in _REGISTRY)}")
    module, cls_name = _REGISTRY[key]
    cls = getattr(importlib.import_module(module), cls_name)
    kwargs = _options_from_c3(key, c3_options, cls) if c3_options is not None else {}
    kwargs.update(options)
    try:
        return cls(**kwargs)
    except C3TypeError:
        raise
    except TypeError as exc:  # unexpected keyword: say which projection rejected it
        raise C3ValueError(f"bad options for projection {key!r}: {exc}") from exc
