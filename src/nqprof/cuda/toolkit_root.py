"""A CUDA toolkit root of nqprof's making: the folders nvcc and the toolkit lookup read,
as links into installed wheels (:func:`make_root`) or as unpacked files, and the links every
such root has (:func:`finish_root`)."""

from __future__ import annotations

import platform
import shutil
from pathlib import Path

_TARGET_DIRS = {"x86_64": "x86_64-linux", "aarch64": "sbsa-linux"}


def link(dest: Path, target: Path | str) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.symlink_to(target)


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def make_root(wheels: Path, dest: Path) -> Path:
    """Replace ``dest`` by a toolkit root of symlinks into ``wheels`` (nvidia/cuNN)."""
    remove(dest)
    for entry in sorted((wheels / "bin").iterdir()):
        link(dest / "bin" / entry.name, entry)
    for name in ("include", "lib", "nvvm"):
        if (wheels / name).exists():
            link(dest / name, wheels / name)
    finish_root(dest)
    return dest


def finish_root(dest: Path) -> None:
    """The links every root has: ``lib64`` -> ``lib`` and ``targets/<arch>-linux/``."""
    if not (dest / "lib64").exists():
        link(dest / "lib64", "lib")
    target = dest / "targets" / _TARGET_DIRS.get(platform.machine(), f"{platform.machine()}-linux")
    for name in ("include", "lib"):
        if not (target / name).exists():
            link(target / name, Path("..", "..", name))
