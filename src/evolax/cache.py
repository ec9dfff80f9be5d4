"""The folder evolax keeps what it downloads or measures in."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/evolax``, by default ``~/.cache/evolax``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base).expanduser() / "evolax"
