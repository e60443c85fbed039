"""The plant registry: ``load_plant(name)`` and ``register_plant``.

Plants register a factory under a stable name (the names in the public API contract). A
factory takes keyword parameters and returns a plant instance.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from .errors import UnknownPlantError

__all__ = ["register_plant", "load_plant", "available_plants"]

_REGISTRY: dict[str, Callable[..., Any]] = {}
T = TypeVar("T", bound=Callable[..., Any])


def register_plant(name: str) -> Callable[[T], T]:
    """Class/function decorator registering a plant factory under ``name``."""

    def deco(factory: T) -> T:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"plant name {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return deco


def available_plants() -> list[str]:
    """Names accepted by :func:`load_plant`, sorted."""
    return sorted(_REGISTRY)


def load_plant(name: str, **params: Any) -> Any:
    """Build the plant registered as ``name``.

    Args:
        name: e.g. ``"cartpole-softwalls"``, ``"finger-gaiting"``, ``"pivoting"``.
        **params: overrides of the plant's parameter dataclass fields (e.g. ``dt=0.02``).

    Raises:
        ValueError: unknown name (the message lists the registered ones) or parameter.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise UnknownPlantError(name, available_plants()) from None
    return factory(**params)
