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

from .compat import parse_release


@dataclass(frozen=True)
class KernelSource:
    """One .cu file: whether it uses dynamic parallelism (needs -rdc and cudadevrt), the
    kernels it defines (extern "C" names), the -D defines a compile check uses, and the
    kernels that need a newer toolkit than the rest (``since``).

    ``since`` maps a kernel to the first CUDA release whose headers have what it uses, e.g.
    ``{"dg_advance_while": "12.3"}`` (conditional graph nodes). The source guards such a
    kernel with ``#if CUDART_VERSION >= 12030``, so that an older toolkit still builds the
    rest of the file; every check of a build expects the kernel only from that release on
    (:meth:`kernels_for`), and says which were left out and why (:meth:`left_out`)."""

    file: str
    cdp: bool
    kernels: tuple[str, ...]
    check_defines: dict[str, int] = field(default_factory=dict)
    since: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.since) - set(self.kernels))
        if unknown:
            raise ValueError(f"{self.file}: since names no kernel of the source: {unknown}")
        for release in self.since.values():
            parse_release(release)  # a malformed release fails here, not in a build

    def available(self, kernel: str, toolkit: str) -> bool:
        """Whether a build by CUDA ``toolkit`` (e.g. "12.0") holds ``kernel``."""
        needed = self.since.get(kernel)
        return needed is None or parse_release(toolkit) >= parse_release(needed)

    def kernels_for(self, toolkit: str) -> tuple[str, ...]:
        """The kernels a build by CUDA ``toolkit`` holds, in catalogue order."""
        return tuple(k for k in self.kernels if self.available(k, toolkit))

    def left_out(self, toolkit: str) -> dict[str, str]:
        """Kernel -> the release it needs, for each kernel a build by ``toolkit`` lacks."""
        return {k: self.since[k] for k in self.kernels if not self.available(k, toolkit)}


def left_out_note(file: str, kernel: str, since: str, toolkit: str) -> str:
    """The one line that says a kernel is not in a build, and why."""
    return (
        f"{file}: {kernel} left out: it needs CUDA {since}+, "
        f"this toolkit is {toolkit} (KernelSource.since)"
    )


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
