"""Guarded YAML loading that remembers where every value came from (1-based line numbers).

Every YAML file the toolkit reads (option files, ``--config`` files, sweep study files) goes
through :func:`load_located`, which enforces limits *before* anything walks or validates the
document:

* the text may hold at most :data:`MAX_YAML_CHARS` characters;
* the document, with every alias expanded, may hold at most :data:`MAX_YAML_NODES` nodes (an
  "alias bomb" (billion laughs) of 1 KB expands to billions of nodes: PyYAML builds it cheaply
  as shared objects, but any walk over it, or a ``repr``, runs out of memory); the expanded
  size is counted on the composed node graph, in time linear in its *unexpanded* size;
* recursive aliases (an anchor used inside itself) and nesting deeper than the parser's
  recursion allows are refused.

It returns the plain data plus a map from each value's path (a tuple of mapping keys and
sequence indices) to its line, so that schema errors can name the line of the file.
"""

from __future__ import annotations

from typing import Any

import yaml

from .errors import C3ValueError

__all__ = ["load_located", "read_yaml_file", "Lines", "YAMLLimitError", "MAX_YAML_CHARS", "MAX_YAML_NODES",
           "yaml_error_line"]

#: path (tuple of keys / indices) -> 1-based line number of the value (or key) at that path.
Lines = dict[tuple[Any, ...], int]

MAX_YAML_CHARS = 4 * 2**20
"""Largest YAML text accepted (4 Mi characters; option and study files are a few KB)."""

MAX_YAML_NODES = 200_000
"""Largest number of nodes of a document with its aliases expanded."""


class YAMLLimitError(yaml.YAMLError, C3ValueError):
    """A YAML document exceeds a size limit or uses a recursive alias.

    Attributes:
        problem: what is wrong (one line).
        problem_mark: where (a ``yaml.Mark`` with 0-based ``line``), or None.
    """

    def __init__(self, problem: str, mark: Any = None):
        where = f" (line {mark.line + 1})" if mark is not None else ""
        super().__init__(problem + where)
        self.problem = problem
        self.problem_mark = mark


class _Constructor(yaml.SafeLoader):
    """SafeLoader whose scalars are built exactly as ``yaml.safe_load`` would build them."""


def read_yaml_file(path: Any, errors: type[Exception] = C3ValueError,
                   what: str = "") -> tuple[Any, Lines]:
    """``(data, key_lines)`` of a YAML file through :func:`load_located`.

    An unreadable file, malformed YAML or a document beyond the limits raises ``errors`` with
    one line naming the file (prefixed by ``what``, e.g. "config file ") and, where known, the
    line: ``c3.yaml, line 3: not valid YAML: ...``.
    """
    from pathlib import Path

    name = f"{what}{str(path)!r}" if what else str(path)
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise errors(f"cannot read {name}: {e}") from None
    try:
        data, _, key_lines = load_located(text)
    except yaml.YAMLError as e:
        line = yaml_error_line(e)
        at = f", line {line}" if line else ""
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise errors(f"{name}{at}: not valid YAML: {problem}") from None
    return data, key_lines


def yaml_error_line(e: BaseException) -> int | None:
    """The 1-based line of a YAML error (parser or limit), or None."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    return mark.line + 1 if mark is not None else None


def _expanded_size(root: yaml.Node) -> int:
    """Number of nodes with aliases expanded (memoised on node identity; iterative)."""
    size: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_stack.discard(key)
            children = _children(node)
            total = 1 + sum(size[id(c)] for c in children)
            size[key] = total
            if total > MAX_YAML_NODES:
                raise YAMLLimitError(f"the YAML document expands to more than {MAX_YAML_NODES} "
                                     f"values (aliases/anchors expanded); refusing to load it "
                                     f"(an alias bomb?)", node.start_mark)
            continue
        if key in size:
            continue
        if key in on_stack:
            raise YAMLLimitError("recursive YAML alias (an anchor used inside itself)",
                                 node.start_mark)
        on_stack.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_stack:
                raise YAMLLimitError("recursive YAML alias (an anchor used inside itself)",
                                     child.start_mark)
            if id(child) not in size:
                stack.append((child, False))
    return size[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load_located(text: str) -> tuple[Any, Lines, Lines]:
    """Parse one YAML document, within the limits of the module docstring.

    Returns:
        ``(data, value_lines, key_lines)``: the plain data (dicts, lists, scalars); for each path
        the line of its value, and for each mapping-entry path the line of its key.

    Raises:
        yaml.YAMLError: malformed YAML (its message names line and column), or
            :class:`YAMLLimitError` (also a :class:`c3mpc.errors.C3ValueError`) for a document
            beyond the limits.
    """
    if len(text) > MAX_YAML_CHARS:
        raise YAMLLimitError(f"the YAML text has {len(text)} characters, more than the limit "
                             f"of {MAX_YAML_CHARS}")
    loader = _Constructor(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YAMLLimitError("the YAML document is nested too deeply") from None
        if node is None:
            return None, {}, {}
        _expanded_size(node)
        value_lines: Lines = {}
        key_lines: Lines = {}
        _walk(node, (), value_lines, key_lines)
        try:
            data = loader.construct_document(node)
        except RecursionError:
            raise YAMLLimitError("the YAML document is nested too deeply") from None
    finally:
        loader.dispose()
    return data, value_lines, key_lines


def _walk(root: yaml.Node, path: tuple[Any, ...], value_lines: Lines, key_lines: Lines) -> None:
    stack = [(root, path)]
    while stack:
        node, p = stack.pop()
        value_lines[p] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            entries = []
            for key_node, value_node in node.value:  # in order: a repeated key's last wins
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
                key_lines[p + (key,)] = key_node.start_mark.line + 1
                entries.append((value_node, p + (key,)))
            stack.extend(reversed(entries))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([(item, p + (i,)) for i, item in enumerate(node.value)]))
