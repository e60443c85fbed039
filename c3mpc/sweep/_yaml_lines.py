"""YAML loading that remembers where every value came from (see :mod:`c3mpc._yaml`).

Kept for the study parser's imports; the guarded loader (size and alias-expansion limits) lives
in :mod:`c3mpc._yaml`, shared with the option and ``--config`` loaders.
"""

from __future__ import annotations

from .._yaml import Lines, YAMLLimitError, load_located

__all__ = ["load_located", "Lines", "YAMLLimitError"]
