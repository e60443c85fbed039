"""Typed access to the fields of a frozen options dataclass, for command lines and config files.

A command line that grows one hand-written flag per option goes stale as options are added.
This module gives generic access instead, driven by the dataclass' own field types:

* :func:`parse_value` turns a string into a field's type (``float``, ``int``, ``bool``,
  ``str``, ``X | None``, ``tuple[...]``, ``Literal[...]``), with an error naming the field,
  the expected type and what was given;
* :func:`parse_assignment` splits ``NAME=VALUE`` (``NAME`` may be dotted, ``gait.phase2_back``,
  to reach a field of a nested options dataclass);
* :func:`read_mapping` reads a YAML/TOML file into a dict and :func:`flatten_mapping` turns
  its nested tables into dotted names;
* :func:`resolve_options` builds the options from layers of overrides (e.g. config file, then
  flags), later layers winning, every value checked against its field's type first and then by
  the dataclass' ``__post_init__``;
* :func:`describe_fields` lists each field's dotted name, type, default and one-line doc (from
  the class docstring's ``Attributes:`` section or the attribute docstrings under the fields).

Fields typed ``Any`` can be given a concrete options dataclass through ``nested``, with a
factory for its default when the field's default is None (e.g. the impedance gains of
:class:`c3mpc.tasks.franka_ball.FrankaBallOptions`).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import numbers
import re
import textwrap
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .errors import C3ValueError

__all__ = ["OptionValueError", "FieldInfo", "parse_value", "coerce_value", "check_value",
           "check_field_types", "parse_assignment",
           "read_mapping", "read_mapping_located", "flatten_mapping", "resolve_options",
           "describe_fields",
           "field_docs", "type_name", "NestedField"]

T = TypeVar("T")

_NONE_WORDS = ("none", "null")
_TRUE_WORDS = ("true", "yes", "on", "1")
_FALSE_WORDS = ("false", "no", "off", "0")


class OptionValueError(C3ValueError):
    """An option name or value was rejected.

    Attributes:
        field: the (dotted) field name, or None when the problem is not one field's.
        expected: the expected type as text (e.g. ``"float | None"``), or None.
        valid_fields: the field names that would have been accepted (for unknown names).
    """

    def __init__(self, message: str, field: str | None = None, expected: str | None = None,
                 valid_fields: Sequence[str] = ()):
        super().__init__(message)
        self.field = field
        self.expected = expected
        self.valid_fields = tuple(valid_fields)


@dataclass(frozen=True)
class NestedField:
    """A field typed ``Any`` (or holding None by default) that takes an options dataclass.

    Attributes:
        cls: the dataclass the field holds.
        default: builds the value used as the base for overrides when the field is None,
            from the options resolved so far (its other fields already final).
    """

    cls: type
    default: Callable[[Any], Any]


@dataclass(frozen=True)
class FieldInfo:
    """One settable field, as :func:`describe_fields` lists it."""

    name: str
    """Dotted name (``gait.phase2_back``)."""
    type: str
    """Type as text (``float | None``)."""
    default: Any
    """Value in the default options."""
    doc: str
    """First sentence of the field's documentation ("" if there is none)."""


# --------------------------------------------------------------------------- types
def _optional(tp: Any) -> tuple[Any, bool]:
    """(inner type, True) for ``X | None``; (tp, False) otherwise."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return rest[0], True
    return tp, False


def _union(tp: Any) -> tuple[list[Any], bool] | None:
    """(members other than None, whether None is one) for a union of more than one non-None
    type (``float | str | None``); None for any other type (``X | None`` is :func:`_optional`'s)."""
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return None
    args = typing.get_args(tp)
    rest = [a for a in args if a is not type(None)]
    if len(rest) < 2:
        return None
    return rest, len(rest) < len(args)


def _first_member(convert: Callable[..., Any], value: Any, shown: Any, tp: Any,
                  members: Sequence[Any], where: str, field: str | None) -> Any:
    """``convert(value, member, ...)`` for the first member of a union that accepts it."""
    for member in members:
        try:
            return convert(value, member, where, field)
        except OptionValueError:
            pass
    raise _fail(where, tp, shown, field)


def type_name(tp: Any) -> str:
    """``float | None``, ``tuple[float, float]``, ``Literal['a', 'b']``, ``GaitOptions``."""
    inner, opt = _optional(tp)
    if opt:
        return f"{type_name(inner)} | None"
    u = _union(tp)
    if u is not None:
        return " | ".join([type_name(a) for a in u[0]] + (["None"] if u[1] else []))
    origin = typing.get_origin(tp)
    if origin is tuple:
        return "tuple[" + ", ".join("..." if a is Ellipsis else type_name(a)
                                    for a in typing.get_args(tp)) + "]"
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in typing.get_args(tp)) + "]"
    if tp is Any:
        return "Any"
    return getattr(tp, "__name__", str(tp))


def _bool_from_text(s: str) -> bool:
    if s.lower() in _TRUE_WORDS:
        return True
    if s.lower() in _FALSE_WORDS:
        return False
    raise ValueError(s)


_FROM_TEXT: dict[type, Callable[[str], Any]] = {bool: _bool_from_text, int: int, float: float,
                                                str: str}
"""Parsers of the scalar field types from (stripped) text; ValueError for a bad text."""


def _element_types(tp: Any, n: int, where: str, field: str | None, got: Any) -> list[Any]:
    """The element types of the tuple type ``tp`` for ``n`` values (a fixed length checked)."""
    args = typing.get_args(tp)
    if len(args) == 2 and args[1] is Ellipsis:
        return [args[0]] * n
    if n != len(args):
        raise OptionValueError(f"{where}: {field or 'value'} must be {type_name(tp)} "
                               f"({len(args)} values), got {got!r}", field=field,
                               expected=type_name(tp))
    return list(args)


def _fail(where: str, expected: Any, got: Any, field: str | None = None) -> OptionValueError:
    exp = type_name(expected)
    what = f"{field} must be" if field else "expected"
    return OptionValueError(f"{where}: {what} {exp}, got {got!r}", field=field, expected=exp)


def parse_value(text: str, tp: Any, where: str = "value", field: str | None = None) -> Any:
    """Parse ``text`` as a value of type ``tp``.

    Accepted spellings: ``none``/``null`` for None (``X | None`` only); ``true/false``,
    ``yes/no``, ``on/off``, ``1/0`` for bool (any case); Python ``int``/``float`` literals;
    tuples as ``a,b``, ``(a, b)`` or ``[a, b]``; strings as they are (surrounding white space
    removed).

    Args:
        text: the value as typed.
        tp: the field's type (from ``typing.get_type_hints``).
        where: what to call the value in the error message (e.g. ``"--set radius=abc"``).
        field: the field name carried by the error.

    Raises:
        OptionValueError: ``text`` is not a value of that type (the message names ``where``, the
            expected type and the text).
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_value: text must be a str, got {type(text).__name__}")
    s = text.strip()
    inner, opt = _optional(tp)
    if opt:
        if s.lower() in _NONE_WORDS:
            return None
        try:
            return parse_value(s, inner, where, field)
        except OptionValueError:
            if dataclasses.is_dataclass(inner):  # "a group of options": say so
                raise
            raise _fail(where, tp, text, field) from None
    u = _union(tp)
    if u is not None:  # the first member that parses (so "0.004" is a float, "auto" a str)
        if u[1] and s.lower() in _NONE_WORDS:
            return None
        return _first_member(parse_value, s, text, tp, u[0], where, field)
    origin = typing.get_origin(tp)
    if tp in _FROM_TEXT:
        try:
            return _FROM_TEXT[tp](s)
        except ValueError:
            raise _fail(where, tp, text, field) from None
    if origin is typing.Literal:
        for choice in typing.get_args(tp):
            if str(choice) == s:
                return choice
        raise _fail(where, tp, text, field)
    if origin is tuple:
        body = s
        if len(body) >= 2 and body[0] + body[-1] in ("()", "[]"):
            body = body[1:-1]
        parts = [p for p in (x.strip() for x in body.split(","))]
        if parts and parts[-1] == "":  # trailing comma: "(1.0,)"
            parts.pop()
        if parts == [""]:
            parts = []
        elem = _element_types(tp, len(parts), where, field, text)
        try:
            return tuple(parse_value(p, t, where, field) for p, t in zip(parts, elem))
        except OptionValueError:
            raise _fail(where, tp, text, field) from None
    if dataclasses.is_dataclass(tp):
        raise OptionValueError(f"{where}: {type_name(tp)} is a group of options; set its fields "
                               f"one by one (NAME.FIELD=VALUE)", field=field,
                               expected=type_name(tp))
    raise OptionValueError(f"{where}: fields of type {type_name(tp)} cannot be set from text",
                           field=field, expected=type_name(tp))


def coerce_value(value: Any, tp: Any, where: str = "value", field: str | None = None) -> Any:
    """Check a value read from YAML/TOML (or given in Python) against type ``tp``.

    Strings are parsed by :func:`parse_value` unless the type is ``str`` (so a TOML file can
    write ``min_command_delay = "none"``: TOML has no null; for ``str | None`` too, "none" is
    None); ints are accepted for floats; lists for tuples. A bool is never accepted as a
    number.

    Raises:
        OptionValueError: the value does not fit the type.
    """
    inner, opt = _optional(tp)
    if value is None:
        u = _union(tp)
        if opt or (u is not None and u[1]):
            return None
        raise _fail(where, tp, value, field)
    if isinstance(value, str) and (inner is not str or opt):
        return parse_value(value, tp, where, field)  # "none" is None for every X | None
    if opt:
        try:
            return coerce_value(value, inner, where, field)
        except OptionValueError:
            raise _fail(where, tp, value, field) from None
    u = _union(tp)
    if u is not None:
        return _first_member(coerce_value, value, value, tp, u[0], where, field)
    origin = typing.get_origin(tp)
    if tp in _FROM_TEXT:
        accepted = (int, float) if tp is float else tp  # an int is a fine float
        if isinstance(value, accepted) and (tp is bool or not isinstance(value, bool)):
            if tp is float:
                try:
                    return float(value)
                except OverflowError:  # an int like 10**400
                    raise OptionValueError(f"{where}: {field or 'value'} is outside float64 "
                                           f"range", field=field, expected="float") from None
            return value
        raise _fail(where, tp, value, field)
    if origin is typing.Literal:
        if value in typing.get_args(tp):
            return value
        raise _fail(where, tp, value, field)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise _fail(where, tp, value, field)
        elem = _element_types(tp, len(value), where, field, value)
        try:
            return tuple(coerce_value(v, t, where, field) for v, t in zip(value, elem))
        except OptionValueError:
            raise _fail(where, tp, value, field) from None
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        raise _fail(where, tp, value, field)
    if tp is Any:
        return value
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise _fail(where, tp, value, field)


def check_value(value: Any, tp: Any, name: str) -> Any:
    """``value`` if it has type ``tp`` exactly as given in Python (no text parsing): the rules of
    :mod:`lcs._validation` (a bool is not a number, a number is not a bool, NaN and complex
    are refused, ints beyond float64 are errors); ints are accepted (and returned as floats)
    for ``float``; lists, tuples and 1-D arrays for ``tuple[...]``.

    Raises:
        OptionValueError: the value does not have the type (the message names ``name``, the
            expected type and the value).
    """
    from lcs import _validation as _v

    def fail() -> OptionValueError:
        return OptionValueError(f"{name} must be {type_name(tp)}, got {_v.describe(value)}",
                                field=name, expected=type_name(tp))

    if tp is Any:
        return value
    inner, opt = _optional(tp)
    if value is None:
        u = _union(tp)
        if opt or (u is not None and u[1]):
            return None
        raise fail()
    if opt:
        try:
            return check_value(value, inner, name)
        except OptionValueError:
            raise fail() from None
    u = _union(tp)
    if u is not None:
        for member in u[0]:
            try:
                return check_value(value, member, name)
            except OptionValueError:
                pass
        raise fail()
    errors = (OptionValueError, OptionValueError)
    if tp is bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise fail()
    if tp is int or tp is float:
        try:
            return _v.check_number(name, value, integer=tp is int, finite=False, errors=errors)
        except OptionValueError as e:
            if isinstance(value, (bool, np.bool_, str, bytes)) or not isinstance(
                    value, numbers.Real):
                raise fail() from None
            e.field = name
            raise
    if tp is str:
        if isinstance(value, str):
            return value
        raise fail()
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        for choice in typing.get_args(tp):
            if type(value) is type(choice) and value == choice:
                return value
        raise fail()
    if origin is tuple:
        if isinstance(value, np.ndarray) and value.ndim == 1:
            value = value.tolist()
        if not isinstance(value, (list, tuple)):
            raise fail()
        elem = _element_types(tp, len(value), name, name, value)
        return tuple(check_value(v, t, name) for v, t in zip(value, elem))
    if isinstance(tp, type):  # a dataclass or another class
        if isinstance(value, tp):
            return value
        raise fail()
    return value


def check_field_types(obj: Any, skip: Sequence[str] = ()) -> None:
    """Check (and normalise: ints to floats, lists to tuples) every field of the dataclass
    instance ``obj`` against its type hint with :func:`check_value`; for ``__post_init__``.

    Raises:
        OptionValueError: the first field whose value does not have its type.
    """
    cls = type(obj)
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        value = getattr(obj, f.name)
        checked = check_value(value, hints[f.name], f"{cls.__name__}.{f.name}")
        if checked is not value:
            object.__setattr__(obj, f.name, checked)


# --------------------------------------------------------------------------- text and files
def parse_assignment(text: str) -> tuple[str, str]:
    """Split ``"NAME=VALUE"`` into ``("NAME", "VALUE")`` (the value may contain ``=``).

    Raises:
        OptionValueError: there is no ``=`` or the name is empty or not a dotted identifier.
    """
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
        raise OptionValueError(f"expected FIELD=VALUE (e.g. radius=0.1 or gait.phase2_back="
                               f"0.05), got {text!r}")
    return name, value


def read_mapping(path: str | Path) -> dict[str, Any]:
    """Read a YAML (``.yaml``/``.yml``) or TOML (``.toml``) file into a dict.

    YAML goes through the guarded loader of :mod:`c3mpc._yaml` (size and alias limits).

    Raises:
        C3ValueError: another suffix, a file that does not exist or does not parse (the message
            names the file and, for YAML, the line), a document beyond the loader's limits, or
            a top level that is not a mapping.
    """
    return read_mapping_located(path)[0]


def read_mapping_located(path: str | Path) -> tuple[dict[str, Any], dict[tuple[Any, ...], int]]:
    """:func:`read_mapping` plus the 1-based line of each key path (YAML; {} for TOML)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise C3ValueError(f"config file must be .yaml/.yml/.toml, got {str(path)!r}")
    key_lines: dict[tuple[Any, ...], int] = {}
    if suffix == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            data: Any = tomllib.loads(p.read_text())
        except (OSError, UnicodeDecodeError) as e:
            raise C3ValueError(f"cannot read config file {str(path)!r}: {e}") from None
        except tomllib.TOMLDecodeError as e:
            raise C3ValueError(f"config file {str(path)!r} is not valid TOML: {e}") from None
    else:
        from ._yaml import read_yaml_file

        data, key_lines = read_yaml_file(p, C3ValueError, "config file ")
        data = {} if data is None else data
    if not isinstance(data, dict):
        raise C3ValueError(f"config file {str(path)!r} must hold a mapping at top level, got "
                           f"{type(data).__name__}")
    return data, key_lines


def flatten_mapping(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"gait": {"phase2_back": 0.05}}`` -> ``{"gait.phase2_back": 0.05}``."""
    out: dict[str, Any] = {}
    for k, v in data.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten_mapping(v, name + "."))
        else:
            out[name] = v
    return out


# --------------------------------------------------------------------------- building
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _group_type(cls: type, name: str, nested: Mapping[str, NestedField]) -> type | None:
    """The options dataclass held by field ``name`` of ``cls`` (None for a plain field)."""
    if name in nested:
        return nested[name].cls
    inner, _ = _optional(_hints(cls)[name])
    return inner if dataclasses.is_dataclass(inner) and isinstance(inner, type) else None


def _check_names(cls: type, names: Sequence[str], where: Mapping[str, str],
                 nested: Mapping[str, NestedField], prefix: str = "") -> None:
    top = [f.name for f in dataclasses.fields(cls)]
    for name in names:
        head, _, rest = name.partition(".")
        if head not in top:
            valid = [prefix + n for n in top]
            close = difflib.get_close_matches(head, top, n=1)
            hint = f" (did you mean {prefix + close[0]!r}?)" if close else ""
            raise OptionValueError(f"{where[name]}: unknown {cls.__name__} field "
                                   f"{prefix + head!r}{hint}; valid fields: {', '.join(valid)}",
                                   field=prefix + name, valid_fields=valid)
        if rest:
            sub = _group_type(cls, head, nested)
            if sub is None:
                tname = type_name(_hints(cls)[head])
                raise OptionValueError(f"{where[name]}: {prefix + head} is a {tname}, it has "
                                       f"no field {rest!r}", field=prefix + name,
                                       expected=tname)
            _check_names(sub, [rest], {rest: where[name]}, {}, f"{prefix}{head}.")


def _value_for(cls: type, name: str, raw: Any, where: str, full: str,
               nested: Mapping[str, NestedField]) -> Any:
    tp = _hints(cls)[name]
    if name in nested:
        tp = nested[name].cls | None
    if isinstance(raw, str):
        return parse_value(raw, tp, where, full)
    return coerce_value(raw, tp, where, full)


def _build(cls: type, base: Any, overrides: Mapping[str, Any], where: Mapping[str, str],
           nested: Mapping[str, NestedField], prefix: str) -> Any:
    """``base`` (an instance of ``cls``, or None for the defaults) with ``overrides`` applied."""
    plain: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for name, raw in overrides.items():
        head, _, rest = name.partition(".")
        if rest:
            groups.setdefault(head, {})[rest] = raw
        else:
            plain[name] = _value_for(cls, name, raw, where[name], prefix + name, nested)
    for head in groups:
        if head in plain:
            parts = ", ".join(f"{prefix}{head}.{k}" for k in groups[head])
            raise OptionValueError(f"{where[head]}: {prefix}{head} is set as a whole and field by "
                                   f"field ({parts}); give one or the other", field=prefix + head)
    obj = _construct(cls, base, plain, [where[k] for k in plain])
    if groups:
        parts = {}
        for head, sub in groups.items():
            sub_base = getattr(obj, head)
            if sub_base is None and head in nested:
                sub_base = nested[head].default(obj)
            sub_cls = _group_type(cls, head, nested)
            parts[head] = _build(sub_cls, sub_base, sub,
                                 {k: where[f"{head}.{k}"] for k in sub}, {},
                                 f"{prefix}{head}.")
        obj = _construct(cls, obj, parts, [where[f"{h}.{k}"] for h in groups for k in groups[h]])
    return obj


def _construct(cls: type, base: Any, values: Mapping[str, Any], given: Sequence[str]) -> Any:
    """``cls(**values)`` or ``replace(base, **values)``; a rejection names what was given."""
    try:
        return cls(**values) if base is None else dataclasses.replace(base, **values)
    except OptionValueError:
        raise
    except (ValueError, TypeError) as e:
        raise OptionValueError(f"{cls.__name__} rejected {'; '.join(given)}: {e}") from e


def resolve_options(cls: type[T], layers: Sequence[tuple[str, Mapping[str, Any]]],
                    nested: Mapping[str, NestedField] | None = None) -> T:
    """The options ``cls`` with layers of overrides applied, later layers winning.

    Args:
        cls: a (frozen) dataclass whose fields all have defaults.
        layers: ``(source, overrides)`` pairs, lowest precedence first, e.g.
            ``[("config.toml", flatten_mapping(file)), ("--set", {"radius": "0.12"})]``.
            Names may be dotted (``gait.phase2_back``) to reach a field of a nested options
            dataclass; values may be strings (parsed by :func:`parse_value`) or values already
            typed (checked by :func:`coerce_value`). ``source`` names the layer in errors.
        nested: dataclasses held by fields typed ``Any`` (see :class:`NestedField`).

    Returns:
        The validated options (``cls.__post_init__`` has run on the result).

    Raises:
        OptionValueError: an unknown field (the message lists the valid ones), a value that does
            not fit its field's type (the message names the field and the expected type), or a
            combination the dataclass rejects.
    """
    nested = dict(nested or {})
    merged: dict[str, Any] = {}
    where: dict[str, str] = {}
    for source, overrides in layers:
        for name, raw in overrides.items():
            merged.pop(name, None)  # insertion order = order of the last assignment
            merged[name] = raw
            where[name] = f"{source} {name}={raw}" if isinstance(raw, str) else \
                f"{source} {name}={raw!r}"
    _check_names(cls, list(merged), where, nested)
    # a later whole-group value replaces earlier field-by-field ones, and vice versa
    order = list(merged)
    for name in order:
        if name not in merged:
            continue
        head, _, rest = name.partition(".")
        later = order[order.index(name) + 1:]
        if not rest and any(n.startswith(head + ".") for n in later):
            del merged[name]
        elif rest and head in later:
            del merged[name]
    return _build(cls, None, merged, where, nested, "")


# --------------------------------------------------------------------------- documentation
def _attribute_docstrings(cls: type) -> dict[str, str]:
    """Docstrings written under field declarations (``x: float = 1.0`` then ``\"\"\"...\"\"\"``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    out = {}
    for a, b in zip(body, body[1:]):
        if (isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name)
                and isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)
                and isinstance(b.value.value, str)):
            out[a.target.id] = " ".join(b.value.value.split())
    return out


def _attributes_section(cls: type, names: Sequence[str]) -> dict[str, str]:
    """Entries of the Google-style ``Attributes:`` section of the class docstring.

    An entry may name several fields (``center, radius: ...``) or several entries may share a
    line (``a: ...; b: ...``).
    """
    doc = inspect.getdoc(cls) or ""
    m = re.search(r"^Attributes:\s*$", doc, re.M)
    if not m:
        return {}
    lines = doc[m.end():].splitlines()
    entries: list[tuple[str, str]] = []
    indent = None
    for line in lines:
        if not line.strip():
            continue
        ind = len(line) - len(line.lstrip())
        if indent is None:
            indent = ind
        if ind < indent:
            break
        head = re.match(r"\s*([A-Za-z_][\w, ]*?):\s(.*)$", line)
        if ind == indent and head:
            entries.append((head.group(1), head.group(2).strip()))
        elif entries:
            entries[-1] = (entries[-1][0], entries[-1][1] + " " + line.strip())
    field_names = set(names)
    out: dict[str, str] = {}
    for keys, text in entries:
        # "a: ...; b: ..." -> two entries when b is a field name
        pieces = re.split(r";\s+(?=(?:" + "|".join(map(re.escape, field_names)) + r"):\s)", text) \
            if field_names else [text]
        first = pieces[0]
        for k in (k.strip() for k in keys.split(",")):
            out.setdefault(k, first)
        for piece in pieces[1:]:
            k, _, rest = piece.partition(":")
            out.setdefault(k.strip(), rest.strip())
    return out


def field_docs(cls: type) -> dict[str, str]:
    """Each field's documentation as one line.

    The attribute docstring if there is one, else the class docstring's ``Attributes:`` entry
    ("" when neither documents it).
    """
    names = [f.name for f in dataclasses.fields(cls)]
    section = _attributes_section(cls, names)
    attrs = _attribute_docstrings(cls)
    return {n: attrs.get(n) or section.get(n, "") for n in names}


def _first_sentence(text: str) -> str:
    """Up to the first full stop followed by a capital ("eq. (25)" does not end a sentence)."""
    m = re.search(r"(?<!e\.g)(?<!i\.e)\.\s+(?=[A-Z])", text)
    return text[:m.start() + 1] if m else text


def describe_fields(cls: type, defaults: Any = None,
                    nested: Mapping[str, NestedField] | None = None) -> list[FieldInfo]:
    """Every settable field of ``cls``, nested options dataclasses expanded to dotted names.

    Args:
        cls: the options dataclass.
        defaults: the instance whose values are listed as defaults (default: ``cls()``).
        nested: as in :func:`resolve_options`; their fields are listed with the defaults of
            ``NestedField.default(defaults)``.
    """
    nested = dict(nested or {})
    defaults = cls() if defaults is None else defaults
    docs = field_docs(cls)
    hints = _hints(cls)
    out: list[FieldInfo] = []
    for f in dataclasses.fields(cls):
        value = getattr(defaults, f.name)
        tp = hints[f.name]
        sub = _group_type(cls, f.name, nested)
        if sub is None:
            out.append(FieldInfo(f.name, type_name(tp), value, _first_sentence(docs[f.name])))
            continue
        if f.name in nested:
            out.append(FieldInfo(f.name, f"{type_name(sub)} | None", value,
                                 _first_sentence(docs[f.name])))
            if value is None:
                value = nested[f.name].default(defaults)
        for info in describe_fields(sub, value):
            out.append(dataclasses.replace(info, name=f"{f.name}.{info.name}"))
    return out
