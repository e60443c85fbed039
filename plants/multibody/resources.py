"""Locating robot descriptions shipped by pip packages (example-robot-data via cmeel).

Never hard-code a venv path: the share folder is found from the installed distribution's file
list, then from ``sys.path`` entries of the cmeel prefix.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Sequence

__all__ = ["example_robot_data_dir", "example_robot_data_path", "default_package_dirs"]


@lru_cache(maxsize=1)
def example_robot_data_dir() -> Path:
    """The ``share/example-robot-data`` folder of the installed ``example-robot-data`` package.

    Raises:
        FileNotFoundError: the package is not installed (``pip install example-robot-data``).
    """
    try:
        dist = metadata.distribution("example-robot-data")
        for f in dist.files or ():
            parts = Path(str(f)).parts
            if "example-robot-data" in parts and "share" in parts:
                i = parts.index("example-robot-data")
                p = Path(str(dist.locate_file(Path(*parts[: i + 1])))).resolve()
                if p.is_dir():
                    return p
    except metadata.PackageNotFoundError:
        pass
    for entry in sys.path:  # cmeel prefix: .../cmeel.prefix/lib/pythonX.Y/site-packages
        p = Path(entry)
        for parent in [p, *p.parents]:
            cand = parent / "share" / "example-robot-data"
            if cand.is_dir():
                return cand
    raise FileNotFoundError("example-robot-data is not installed: pip install example-robot-data")


def example_robot_data_path(relative: str) -> Path:
    """Absolute path of a file in example-robot-data.

    Example: ``example_robot_data_path("robots/panda_description/urdf/panda.urdf")``.

    Raises:
        FileNotFoundError: the package or the file is missing.
    """
    p = example_robot_data_dir() / relative
    if not p.exists():
        raise FileNotFoundError(f"{relative} not found in {example_robot_data_dir()}")
    return p


def default_package_dirs(urdf: Path) -> Sequence[str]:
    """Folders where ``package://`` URIs of ``urdf`` are resolved.

    The URDF's ancestors, plus the ``share`` folder of example-robot-data when installed.
    """
    dirs = [str(p) for p in Path(urdf).resolve().parents]
    try:
        dirs.append(str(example_robot_data_dir().parent))
    except FileNotFoundError:
        pass
    return dirs
