"""The plant registry: ``load_plant(name)`` and ``register_plant``.

Plants register a factory under a stable name (the names in the public API contract). A
factory takes keyword parameters and returns a plant instance.
"""

from __future__ import annotations

import os
from pathlib import Path
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


def load_plant(name: str | os.PathLike, **params: Any) -> Any:
    """Build the plant registered as ``name``, or the plant of a task file or model file.

    Args:
        name: a registered name, e.g. ``"cartpole-softwalls"``, ``"finger-gaiting"``,
            ``"pivoting"``; or a path: a task file (``.yaml``/``.yml``, see
            :func:`plants.load_task_file`: the plant with its contact pairs and controller
            settings) or a URDF (``.urdf``) / MJCF (``.xml``) file (a
            :class:`plants.multibody.MultibodyPlant` without contact pairs unless
            ``contact_pairs=`` is given; ``params`` go to ``from_urdf``/``from_mjcf``).
        **params: overrides of the plant's parameter dataclass fields (e.g. ``dt=0.02``).

    Raises:
        ValueError: unknown name (the message lists the registered ones) or parameter.
        FileNotFoundError: a path that does not exist.
    """
    if isinstance(name, os.PathLike) or (isinstance(name, str) and name not in _REGISTRY
                                         and name.lower().endswith(_FILE_SUFFIXES)):
        return _load_file(Path(name), params)
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise UnknownPlantError(name, available_plants()) from None
    return factory(**params)


_FILE_SUFFIXES = (".yaml", ".yml", ".urdf", ".xml")


def _load_file(path: Path, params: dict[str, Any]) -> Any:
    """The plant of a task file or a model file (see :func:`load_plant`)."""
    if not path.is_file():
        raise FileNotFoundError(f"no such task or model file: {path}")
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        if params:
            raise ValueError(f"load_plant({str(path)!r}): a task file takes no parameters "
                             f"(got {', '.join(sorted(params))}); edit the file instead")
        from .task_file import load_task_file

        return load_task_file(path).plant
    from .multibody import MultibodyPlant

    build = MultibodyPlant.from_mjcf if suffix == ".xml" else MultibodyPlant.from_urdf
    return build(path, **params)
