"""Strict loading of frozen option dataclasses from dicts, YAML and TOML files.

Every options class in :mod:`hardware` is a frozen dataclass whose defaults live in the field
declarations. :func:`options_from_dict` builds one from a mapping, rejecting unknown keys (and
listing the valid ones), recursing into fields whose type is itself an options dataclass and
turning lists into tuples so the result stays hashable and immutable. The options classes
inherit :class:`LoadableOptions` for their ``from_dict`` / ``from_file`` constructors.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any, Mapping, TypeVar

from .errors import HardwareValueError

__all__ = ["options_from_dict", "options_from_file", "options_to_dict", "read_mapping",
           "LoadableOptions"]

T = TypeVar("T")


def read_mapping(path: str | Path) -> dict[str, Any]:
    """Read a YAML (.yaml/.yml) or TOML (.toml) file into a dict.

    YAML goes through the guarded loader of :mod:`c3mpc._yaml` (size and alias limits).

    Raises:
        HardwareValueError: for another suffix, an unreadable or malformed file (one line with
            the file and the line), or a file whose top level is not a mapping.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        from c3mpc._yaml import read_yaml_file  # size and alias limits, errors with the line

        data = read_yaml_file(p, HardwareValueError)[0] or {}
    elif suffix == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            data = tomllib.loads(p.read_text())
        except (OSError, UnicodeDecodeError) as e:
            raise HardwareValueError(f"cannot read config file {str(path)!r}: {e}") from None
        except tomllib.TOMLDecodeError as e:
            raise HardwareValueError(f"{path}: not valid TOML: {e}") from None
    else:
        raise HardwareValueError(f"config file must be .yaml/.yml/.toml, got {str(path)!r}")
    if not isinstance(data, dict):
        raise HardwareValueError(f"config file {str(path)!r} must hold a mapping at top level")
    return data


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def options_from_dict(cls: type[T], data: Mapping[str, Any] | None) -> T:
    """Build the frozen dataclass ``cls`` from ``data``; unknown keys raise.

    Args:
        cls: A dataclass type.
        data: Field values by name (missing fields keep their defaults). Nested mappings fill
            fields whose type is itself a dataclass.

    Raises:
        HardwareValueError: for an unknown key (the message lists the valid ones) or a value
            the dataclass' ``__post_init__`` rejects.
    """
    if data is None:
        return cls()
    if not isinstance(data, Mapping):
        raise HardwareValueError(f"{cls.__name__} options must be a mapping, got "
                                 f"{type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise HardwareValueError(f"unknown {cls.__name__} option(s) {unknown}; valid: "
                                 f"{sorted(fields)}")
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        ftype = hints.get(name)
        if dataclasses.is_dataclass(ftype) and isinstance(value, Mapping):
            kwargs[name] = options_from_dict(ftype, value)  # type: ignore[arg-type]
        else:
            kwargs[name] = _freeze(value)
    try:
        return cls(**kwargs)
    except TypeError as e:  # a wrong type reaching __post_init__ arithmetic
        raise HardwareValueError(f"{cls.__name__}: {e}") from e


def options_from_file(cls: type[T], path: str | Path, section: str | None = None) -> T:
    """Load ``cls`` from a YAML/TOML file, optionally from one top-level ``section``."""
    data = read_mapping(path)
    if section is not None:
        data = data.get(section) or {}
    return options_from_dict(cls, data)


def options_to_dict(options: Any) -> dict[str, Any]:
    """The options as plain data (tuples become lists), e.g. for ``summary.json``."""

    def plain(v: Any) -> Any:
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return {k: plain(v) for k, v in dataclasses.asdict(options).items()}


class LoadableOptions:
    """Mixin of the hardware options dataclasses: ``from_dict`` and ``from_file`` constructors.

    Nested mappings fill fields whose type is itself an options dataclass (e.g. the
    ``impedance``/``franka``/``camera`` sections of the twin's and the simulated robot's
    options); unknown keys raise :class:`HardwareValueError` listing the valid ones.
    """

    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, Any] | None) -> T:
        """Build from a mapping (None: the defaults); unknown keys raise HardwareValueError."""
        return options_from_dict(cls, data)

    @classmethod
    def from_file(cls: type[T], path: str | Path, section: str | None = None) -> T:
        """Load from YAML/TOML (optionally one top-level ``section``)."""
        return options_from_file(cls, path, section)
