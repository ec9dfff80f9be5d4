"""Optional packages: import one, or fail in one line that names the extra installing it."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, extra: str, owner: str) -> ModuleType:
    """``import module``, or an ``ImportError`` of one line: ``OWNER needs the optional EXTRA
    package: pip install 'evolax[EXTRA]'`` and why the import failed."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"{owner} needs the optional {extra} package: pip install 'evolax[{extra}]'; "
            f"importing {module} failed with: {' '.join(str(error).split()) or repr(error)}"
        ) from error
