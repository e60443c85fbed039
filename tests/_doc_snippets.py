"""Collect and run the Python code blocks of README.md and docs/*.md as a user would.

Every ```` ```python ```` block is written to a file and run as a script (``python
snippet.py``, ``__name__ == "__main__"``) in an empty folder, so a snippet that only works
from the repository root, inside a test process or without an ``if __name__ ==
"__main__":`` guard fails here as it would for a user. The folders whose data the docs name
(``examples/``, ``tests/data/``) are linked into that folder.

Printed output is checked where the text shows it: a ``print(...)`` line whose comment starts
with ``# ->`` states what that call prints::

    print(sol.status.name, sol.z)   # -> SOLVED [1. 0.]  (two spaces start a remark)

Words must match exactly; numbers match to the digits shown (``6.67`` matches 6.665 ≤ v <
6.675, ``0`` matches |v| < 0.5, ``2.5`` matches 2.45 ≤ v < 2.55). A block preceded by an HTML
comment ``<!-- snippet: skip REASON -->`` is not run (the reason is required), and one
preceded by ``<!-- snippet: slow -->`` runs only under ``-m slow``.

Why not a plugin: pytest-markdown-docs and phmdoctest exec blocks inside the test process
(multiprocessing in a snippet then behaves differently from a user's script) and have no
"digits shown" comparison for numeric output; the collector is small.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
_DIRECTIVE = re.compile(r"<!--\s*snippet:\s*(skip|slow)\b\s*(.*?)\s*-->")
_EXPECT = re.compile(r"^(?P<code>\s*print\(.*\))\s*#\s*->\s*(?P<expected>.*)$")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")

# Records every print() made from the snippet file itself: (line number, text). Installed
# through a sitecustomize module so the snippet runs unmodified (its line numbers are the
# document's) and child processes that import it stay quiet.
_SITECUSTOMIZE = '''
import builtins, io, json, os, sys
_log, _snippet = os.environ.get("SNIPPET_PRINT_LOG"), os.environ.get("SNIPPET_FILE")
if _log and _snippet:
    _print = builtins.print
    def _recording_print(*args, **kwargs):
        frame = sys._getframe(1)
        if frame.f_code.co_filename == _snippet and kwargs.get("file") in (None, sys.stdout):
            buf = io.StringIO()
            _print(*args, **{**kwargs, "file": buf})
            with open(_log, "a") as f:
                f.write(json.dumps([frame.f_lineno, buf.getvalue()]) + "\\n")
        _print(*args, **kwargs)
    builtins.print = _recording_print
'''


@dataclass(frozen=True)
class Snippet:
    """One ```python block: where it is, its code, and how it is to be run."""

    path: Path
    line: int  # line of the first code line in the document (1-based)
    code: str
    mode: str  # "run", "slow" or "skip"
    reason: str = ""

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def expectations(self) -> dict[int, str]:
        """Document line -> expected printed text, from ``# ->`` comments."""
        out = {}
        for k, text in enumerate(self.code.splitlines()):
            m = _EXPECT.match(text)
            if m:
                out[self.line + k] = m["expected"].split("  ")[0].strip()
        return out


def collect(paths: tuple[Path, ...] = DOC_FILES) -> list[Snippet]:
    """Every ```python block of the given markdown files, in document order."""
    snippets = []
    for path in paths:
        lines = path.read_text().splitlines()
        k = 0
        while k < len(lines):
            if lines[k].strip() == "```python":
                start, mode, reason = k + 1, "run", ""
                prev = k - 1
                while prev >= 0 and not lines[prev].strip():
                    prev -= 1
                if prev >= 0 and (m := _DIRECTIVE.search(lines[prev])):
                    mode, reason = m.group(1), m.group(2)
                    if mode == "skip" and not reason:
                        raise ValueError(f"{path}:{prev + 1}: 'snippet: skip' needs a reason")
                end = start
                while end < len(lines) and lines[end].strip() != "```":
                    end += 1
                code = textwrap.dedent("\n".join(lines[start:end]))  # blocks inside lists
                snippets.append(Snippet(path, start + 1, code + "\n", mode, reason))
                k = end
            k += 1
    return snippets


def run(snippet: Snippet, workdir: Path, timeout: float = 600.0) -> list[tuple[int, str]]:
    """Run ``snippet`` as a script in ``workdir``; return its prints (document line, text).

    The file is padded with blank lines so that its line numbers are the document's.
    Raises ``AssertionError`` with the output when the script fails.
    """
    for name in ("examples", "tests"):  # the data files the docs name
        link = workdir / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    script = workdir / "snippet.py"
    script.write_text("\n" * (snippet.line - 1) + snippet.code)
    site = workdir / "_site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    log = workdir / "prints.jsonl"
    env = {**_base_env(), "PYTHONPATH": f"{site}:{ROOT}", "SNIPPET_PRINT_LOG": str(log),
           "SNIPPET_FILE": str(script), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, str(script)], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{snippet.id} exited {proc.returncode}\n--- stdout\n"
                             f"{proc.stdout}\n--- stderr\n{proc.stderr[-4000:]}")
    if not log.exists():
        return []
    return [tuple(json.loads(row)) for row in log.read_text().splitlines()]


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}


def matches(expected: str, actual: str) -> bool:
    """True when ``actual`` shows ``expected``: same words, numbers to the digits shown."""
    exp_tokens, act_tokens = _tokens(expected), _tokens(actual)
    if len(exp_tokens) != len(act_tokens):
        return False
    for e, a in zip(exp_tokens, act_tokens):
        if isinstance(e, Decimal):
            if not isinstance(a, Decimal):
                return False
            exponent = e.as_tuple().exponent
            half_ulp = Decimal(5).scaleb(exponent - 1)  # half a unit of the last digit shown
            if not (e - half_ulp <= a < e + half_ulp):
                return False
        elif e != a:
            return False
    return True


def _tokens(text: str) -> list[object]:
    out: list[object] = []
    pos = 0
    text = text.replace("[", " [ ").replace("]", " ] ").replace(",", " , ")
    for m in _NUMBER.finditer(text):
        out.extend(text[pos:m.start()].split())
        try:
            out.append(Decimal(m.group()))
        except InvalidOperation:  # pragma: no cover - the regex only matches numbers
            out.append(m.group())
        pos = m.end()
    out.extend(text[pos:].split())
    return out
