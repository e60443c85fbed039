"""Sphinx configuration of the c3mpc documentation (``make docs``)."""

from __future__ import annotations

import sys
from importlib.metadata import version as _version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

project = "c3mpc"
author = "c3mpc developers"
release = _version("c3mpc")
version = release

extensions = [
    "myst_parser",              # the math docs are Markdown
    "sphinx.ext.autodoc",       # the API reference from the docstrings
    "sphinx.ext.napoleon",      # Google-style docstrings
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 4           # links like BENCHMARKS.md#camera-estimators-... resolve
suppress_warnings = [
    "myst.header",   # documents whose sections start at ## under a one-line intro
    "ref.python",    # a field named like another class's (n_x, B) resolves to the first one
]

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_mock_imports: list[str] = []
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True

html_theme = "furo"
html_title = f"c3mpc {release}"
