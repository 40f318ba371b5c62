"""The CUDA kernel sources shipped with nqprof (kernels/*.cu) and how to find them.

Every strategy declares its sources (``Strategy.sources``, :class:`KernelSource`); the
catalog of all of them (:mod:`nqprof.catalog`) is assembled above both this package and the
strategies. Builds here take the :class:`KernelSource` they are handed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True)
class KernelSource:
    """One .cu file: whether it uses dynamic parallelism (needs -rdc and cudadevrt), the
    kernels it defines (extern "C" names), and the -D defines a compile check uses."""

    file: str
    cdp: bool
    kernels: tuple[str, ...]
    check_defines: dict[str, int] = field(default_factory=dict)


#: Options every build uses (both paths).
COMMON_OPTIONS: tuple[str, ...] = ("-lineinfo", "-std=c++17")


@lru_cache(maxsize=1)
def kernels_dir() -> Path:
    """The folder holding the .cu/.cuh files: the source tree's kernels/ when this package
    runs from a checkout (it wins, as the checkout's strategy table does, over an
    ``nqprof.kernels`` that another installed tree may provide), else the installed
    ``nqprof.kernels`` package."""
    tree = Path(__file__).resolve().parents[3] / "kernels"
    if (tree / "common.cuh").exists():
        return tree
    try:
        import nqprof.kernels as pkg

        here = Path(pkg.__file__).parent
        if (here / "common.cuh").exists():
            return here
    except ImportError:
        pass
    raise FileNotFoundError("nqprof's CUDA kernel sources (kernels/*.cu) are not installed")


def read_source(file: str) -> str:
    return (kernels_dir() / file).read_text()


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def source_closure(file: str) -> list[Path]:
    """The file and every local header it includes, recursively, in a stable order."""
    seen: dict[str, Path] = {}
    todo = [file]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = kernels_dir() / name
        seen[name] = path
        todo.extend(_INCLUDE.findall(path.read_text()))
    return [seen[k] for k in sorted(seen)]


def define_options(defines: dict[str, int | str]) -> list[str]:
    return [f"-D{k}={v}" for k, v in sorted(defines.items())]


def source_hash(file: str, options: list[str] | tuple[str, ...] = (), toolkit: str = "") -> str:
    """A short hash of a source (with its headers), its build options and the toolkit
    version: results from edited kernels or other builds never compare as unchanged."""
    h = hashlib.sha256()
    for path in source_closure(file):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update("\0".join(options).encode())
    h.update(toolkit.encode())
    return h.hexdigest()[:16]
