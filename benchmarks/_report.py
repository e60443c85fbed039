"""What every benchmark script shares: where it ran, and its section of docs/BENCHMARKS.md.

Each script owns one section delimited by ``<!-- KEY:start -->`` / ``<!-- KEY:end -->`` and
rewrites only that, so scripts can be re-run independently.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MD_PATH = ROOT / "docs" / "BENCHMARKS.md"
if str(ROOT) not in sys.path:  # `python benchmarks/bench_x.py` without an installed package
    sys.path.insert(0, str(ROOT))

from plants.progress import ProgressLine  # noqa: E402

__all__ = ["ROOT", "MD_PATH", "markers", "cpu_model", "machine_info", "load_average",
           "utc_timestamp", "argument_parser", "progress", "track", "show", "say",
           "replace_section", "publish"]

T = TypeVar("T")


def markers(key: str) -> tuple[str, str]:
    """The start and end comments delimiting section ``key``."""
    return f"<!-- {key}:start -->", f"<!-- {key}:end -->"


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where available)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info(**versions: Any) -> dict[str, Any]:
    """Platform, CPU, core count, Python/numpy versions, load average, plus ``versions``."""
    return {"platform": platform.platform(), "processor": cpu_model(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "load_avg": list(os.getloadavg()), **versions}


def load_average(machine: Mapping[str, Any]) -> list[float]:
    """The 1/5/15-minute load average of a saved ``machine`` record.

    :func:`machine_info` writes it as ``load_avg``; results saved before the scripts shared
    :func:`machine_info` (bench_sim, bench_contact_solvers, bench_estimators) call it
    ``load_average`` (bench_estimators' old records hold the 1-minute value alone: a one-element
    list is returned then). Both are read, so old JSON still renders.
    """
    for key in ("load_avg", "load_average"):
        if key in machine:
            v = machine[key]
            return [float(x) for x in v] if isinstance(v, (list, tuple)) else [float(v)]
    raise KeyError(f"no load average in the machine record (keys: {sorted(machine)})")


def utc_timestamp() -> str:
    """Now in UTC, as saved in the results' ``timestamp``/``date`` (``2026-11-23T16:40:00Z``)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def argument_parser(doc: str | None, quick_help: str) -> argparse.ArgumentParser:
    """A benchmark's command line: its docstring as description, ``--quick`` and ``--quiet``.

    The description keeps its line breaks; ``quick_help`` says what the short smoke run
    leaves out. ``--quiet`` turns the progress lines off (results are still printed). The
    script adds its other arguments.
    """
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    add_quiet(parser)
    return parser


def add_quiet(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``--quiet`` flag to a script's own ``parser`` (:func:`argument_parser` has it)."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines (results are still printed)")
    return parser


class _NoProgress:
    """What :func:`progress` gives with ``quiet``: takes the same calls, writes nothing."""

    tty = False
    closed = True

    def __init__(self, total: int, label: str, unit: str) -> None:
        self.total, self.label, self.unit, self.done = total, label, unit, 0

    def update(self, done: int) -> None:
        self.done = done

    def close(self) -> None:
        pass


def progress(total: int, label: str, quiet: bool, unit: str = "cases") -> ProgressLine | _NoProgress:
    """A :class:`plants.progress.ProgressLine` over ``total`` units on stderr, or (``quiet``)
    an object taking the same calls that writes nothing.

    Advance it with ``bar.update(bar.done + 1)`` after each unit, or :func:`show` to say what
    runs now; close it when the part ends early.
    """
    global _current
    if quiet:
        return _NoProgress(total, label, unit)
    _current = ProgressLine(total, label, unit)
    return _current


_current: ProgressLine | None = None  # the last progress line made, which say() wipes


def track(items: Iterable[T], label: str, quiet: bool, unit: str = "cases") -> Iterator[T]:
    """Yield ``items`` (any finite iterable: it is listed first, to count it), advancing a
    progress line after each one.

    ``for case in track(cases, "lcp", args.quiet): ...``; the line is closed when the loop
    ends, early ones included.
    """
    items = list(items)
    bar = progress(len(items), label, quiet, unit)
    try:
        for i, item in enumerate(items):
            yield item
            bar.update(i + 1)
    finally:
        bar.close()


def show(bar: ProgressLine | _NoProgress, label: str) -> None:
    """Say on the progress line what runs now (its label): redrawn at once on a terminal, in a
    log with the next line it prints (the first call prints the ``0/total`` line)."""
    bar.label = label
    if not _redraw(bar):
        bar.update(bar.done)


def say(text: str, bar: ProgressLine | _NoProgress | None = None) -> None:
    """Print a result line (stdout); on a terminal, the progress line ``bar`` (default: the
    last one :func:`progress` made) is wiped first and drawn again below the result."""
    bar = _current if bar is None else bar
    live = bar is not None and bar.tty and not bar.closed
    if live:
        bar.stream.write("\r\x1b[K")
        bar.stream.flush()
    print(text, flush=True)
    if live:
        _redraw(bar)


def _redraw(bar: ProgressLine | _NoProgress) -> bool:
    """Draw a terminal's progress line now, whatever its redraw interval; False elsewhere."""
    if not (bar.tty and not bar.closed and bar.total):
        return False
    bar.stream.write("\r" + bar.text() + "\x1b[K")  # as ProgressLine.update draws it
    bar.stream.flush()
    return True


def replace_section(section: str, key: str, path: Path = MD_PATH) -> None:
    """Insert or replace section ``key`` of ``path`` (``section`` includes its markers)."""
    start, end = markers(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def publish(result: Mapping[str, Any], section: str, key: str, json_path: Path,
            indent: int = 2, quiet: bool = False) -> None:
    """Save a benchmark's ``result`` as JSON and its Markdown ``section`` under ``key``.

    The JSON is written to a temporary file next to ``json_path`` and renamed over it, so an
    interrupted run never leaves a truncated results file; then section ``key`` of
    docs/BENCHMARKS.md is replaced (:func:`replace_section`). Prints where both went unless
    ``quiet`` (a long run saving after every case).
    """
    json_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = json_path.with_name(json_path.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=indent) + "\n")
    tmp.replace(json_path)
    replace_section(section, key)
    if not quiet:
        print(f"wrote {_relative(json_path)} and {_relative(MD_PATH)}")


def render_saved(markdown: Any, key: str, json_path: Path) -> int:
    """A benchmark's ``--render``: rewrite section ``key`` of docs/BENCHMARKS.md from the saved
    ``json_path`` with ``markdown(result) -> str`` (no run), and print it. Returns 0 (an exit
    status for ``main``)."""
    md = markdown(json.loads(json_path.read_text()))
    print(md)
    replace_section(md, key)
    return 0


def _relative(path: Path) -> Path:
    """``path`` relative to the repository when it lies inside it."""
    try:
        return path.resolve().relative_to(ROOT)
    except ValueError:
        return path
