"""The folder where nqprof keeps what it builds for the GPU, so that a later process reuses
it: built cubins (:mod:`.build`) and the toolkit lookup's answer (:mod:`.toolkit`).

``NQPROF_CACHE_DIR`` names it, else ``$XDG_CACHE_HOME/nqprof``, else ``~/.cache/nqprof``.
Everything in it is derived: deleting it only costs the next run the work again. Files are
written under a temporary name and renamed, so processes writing at once never read half
a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

#: The variable naming the folder.
CACHE_VARIABLE = "NQPROF_CACHE_DIR"


def cache_dir() -> Path:
    """Where derived files are kept (see the module's docstring)."""
    given = os.environ.get(CACHE_VARIABLE, "").strip()
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return Path(base) / "nqprof"


def read_memo(name: str) -> dict[str, Any] | None:
    """The JSON object stored under ``name``, or None (missing or unreadable: recompute)."""
    try:
        data = json.loads((cache_dir() / name).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_memo(name: str, data: dict[str, Any]) -> None:
    """Store ``data`` under ``name``; a folder that cannot be written is no error (the next
    process computes it again)."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".memo-", dir=folder)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, folder / name)
    except OSError:
        pass
