"""The CUDA kernel sources shipped with nqprof (kernels/*.cu) and how to find them.

Every strategy names its sources here, so that the nvcc-only build path (CI, `tox`) can
compile and device-link every kernel without a GPU, with the same options the PyCUDA path
uses on a GPU.
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


#: Every kernel source. Strategies refer to these by file name.
CATALOG: dict[str, KernelSource] = {
    "feinbube.cu": KernelSource(
        "feinbube.cu",
        cdp=False,
        kernels=(
            "feinbube_local",
            "feinbube_shared_stack",
            "feinbube_shared_all",
            "feinbube_dynamic",
        ),
        check_defines={"NQ_N": 18, "NQ_BLOCK": 128},
    ),
    # Full D4 symmetry, dynamic task fetching (host expansion: cpu/d4.c).
    "fast.cu": KernelSource(
        "fast.cu",
        cdp=False,
        kernels=(
            "fast_static",
            "fast_dynamic",
            "fast_dynamic_pop",
            "fast_tight",
            "fast_tight_u1",
            "fast_tight_u4",
            "fast_tight_nola",
        ),
        check_defines={"NQ_BLOCK": 128},
    ),
    # The CDP strategies of Plauth et al. (shared device code: cdp.cuh, condensed.cuh).
    "dp1.cu": KernelSource("dp1.cu", cdp=True, kernels=("dp1_root", "dp1_swarm")),
    "dp2.cu": KernelSource("dp2.cu", cdp=True, kernels=("dp2_root", "dp2_child")),
    "dp3.cu": KernelSource("dp3.cu", cdp=True, kernels=("dp3_root", "dp3_child")),
    "dpswap.cu": KernelSource("dpswap.cu", cdp=True, kernels=("dpswap_root", "dpswap_child")),
}

#: Options every build uses (both paths).
COMMON_OPTIONS: tuple[str, ...] = ("-lineinfo", "-std=c++17")


@lru_cache(maxsize=1)
def kernels_dir() -> Path:
    """The folder holding the .cu/.cuh files: the installed ``nqprof.kernels`` package, or
    the source tree's kernels/ when running from a checkout."""
    try:
        import nqprof.kernels as pkg

        here = Path(pkg.__file__).parent
        if (here / "common.cuh").exists():
            return here
    except ImportError:
        pass
    tree = Path(__file__).resolve().parents[3] / "kernels"
    if (tree / "common.cuh").exists():
        return tree
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
