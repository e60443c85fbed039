"""YAML loading that remembers where every value came from (1-based line numbers).

``load_located(text)`` returns the document as plain Python values plus a map from each value's
path (a tuple of mapping keys and sequence indices) to the line it starts on, so that schema
errors can name the line of the study file. Built on ``yaml.compose`` node marks.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["load_located", "Lines"]

#: path (tuple of keys / indices) -> 1-based line number of the value (or key) at that path.
Lines = dict[tuple[Any, ...], int]


class _Constructor(yaml.SafeLoader):
    """SafeLoader whose scalars are built exactly as ``yaml.safe_load`` would build them."""


def load_located(text: str) -> tuple[Any, Lines, Lines]:
    """Parse one YAML document.

    Returns:
        ``(data, value_lines, key_lines)``: the plain data (dicts, lists, scalars); for each path
        the line of its value, and for each mapping-entry path the line of its key.

    Raises:
        yaml.YAMLError: malformed YAML (its message names line and column).
    """
    loader = _Constructor(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}, {}
        value_lines: Lines = {}
        key_lines: Lines = {}
        _walk(node, (), value_lines, key_lines)
        data = loader.construct_document(node)
    finally:
        loader.dispose()
    return data, value_lines, key_lines


def _walk(node: yaml.Node, path: tuple[Any, ...], value_lines: Lines, key_lines: Lines) -> None:
    value_lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            key_lines[path + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, path + (key,), value_lines, key_lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, path + (i,), value_lines, key_lines)
