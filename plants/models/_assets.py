"""Where this package's model files live (``plants/models/assets``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["asset_path", "ASSETS_DIR"]

ASSETS_DIR = Path(__file__).resolve().parent / "assets"


def asset_path(name: str) -> Path:
    """Absolute path of a model file shipped in ``plants/models/assets``.

    Raises:
        FileNotFoundError: no such asset (the message lists the available ones).
    """
    path = ASSETS_DIR / name
    if not path.is_file():
        have = sorted(p.name for p in ASSETS_DIR.iterdir())
        raise FileNotFoundError(f"no model asset {name!r}; assets: {', '.join(have)}")
    return path
