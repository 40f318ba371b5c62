"""Building kernels on the GPU machine: nvcc once, a cubin loaded ever after.

A source is compiled by nqprof's nvcc path (:func:`nqprof.cuda.nvcc.compile_source`: a cubin
for the device's arch with ``-lineinfo``, and for a source that launches kernels from the
device a relocatable cubin fully linked with the toolkit's ``libcudadevrt.a``, as PyCUDA's
``DynamicSourceModule`` does) and kept in nqprof's cache folder (:mod:`.cache`) under its
:func:`~nqprof.cuda.sources.source_hash` (the .cu file with every header it includes, the
build options, the toolkit release) and the arch. Every later build of the same source in
any process loads that cubin (cuModuleLoad): no nvcc, no preprocessor run, so a worker
process loads its kernels in milliseconds; a cubin is written under a temporary name and
renamed, so processes building at once never read half a file.

A toolkit newer than the driver is checked before compiling (see :mod:`.compat`): a
dynamic-parallelism source is then unavailable (the driver cannot link its code), a plain
one is built with a note in :attr:`BuiltModule.notes`.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BuildError, UnavailableError
from .cache import CACHE_VARIABLE, cache_dir
from .sources import COMMON_OPTIONS, KernelSource, define_options, source_hash

#: A file to which every build request of every process is appended, one JSON line each
#: (``{"file": ..., "defines": {...}}``): what a run asked nvcc for, so that a later run on
#: a fresh host can build it all at once beforehand (:func:`prebuild`; the GPU tests do).
BUILD_LOG_VARIABLE = "NQPROF_BUILD_LOG"


def build_request(src: KernelSource, defines: dict[str, int] | None) -> dict[str, Any]:
    """One build as :data:`BUILD_LOG_VARIABLE`'s lines and :func:`prebuild` name it."""
    return {"file": src.file, "defines": dict(sorted((defines or {}).items()))}


def _log_request(src: KernelSource, defines: dict[str, int] | None) -> None:
    path = os.environ.get(BUILD_LOG_VARIABLE, "").strip()
    if not path:
        return
    try:  # one short append: lines of processes writing at once stay whole
        with open(path, "a") as f:
            f.write(json.dumps(build_request(src, defines), sort_keys=True) + "\n")
    except OSError:
        pass


@dataclass
class BuiltModule:
    file: str
    module: Any
    options: list[str]
    arch: str
    toolkit_version: str
    source_hash: str
    build_s: float
    kernels: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. a toolkit newer than the driver
    #: Whether the cubin came from the cache (no compiler ran in this build).
    cached: bool = False

    def function(self, name: str):
        """The kernel ``name``; its resource usage is recorded for the run record."""
        func = self.module.get_function(name)
        self.kernels[name] = {
            "name": name,
            "source": self.file,
            "registers": func.num_regs,
            "shared_bytes": func.shared_size_bytes,
            "local_bytes": func.local_size_bytes,
            "const_bytes": func.const_size_bytes,
            "max_threads_per_block": func.max_threads_per_block,
        }
        return func


def cubin(
    src: KernelSource, defines: dict[str, int] | None, arch: str, toolkit
) -> tuple[Path, str, bool]:
    """(the cached cubin of ``src`` for ``arch``, its source hash, whether it was there
    already): compiled and stored on a miss."""
    from .nvcc import compile_source

    options = list(COMMON_OPTIONS) + define_options(defines or {})
    digest = source_hash(src.file, options, toolkit.version)
    folder = cache_dir() / "kernels"
    path = folder / f"{Path(src.file).stem}-{arch}-{digest}.cubin"
    if path.is_file():
        return path, digest, True
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="build-", dir=folder) as work:
            compile_source(src, arch, defines or {}, toolkit, work, every_kernel=False)
            stem = f"{Path(src.file).stem}.{arch}"
            built = Path(work) / (f"{stem}.linked.cubin" if src.cdp else f"{stem}.cubin")
            os.replace(built, path)
    except OSError as exc:
        raise BuildError(
            f"building {src.file}: cannot write the kernel "
            f"cache {folder} ({exc}; set {CACHE_VARIABLE})"
        ) from None
    return path, digest, False


def prebuild(
    builds: Iterable[tuple[KernelSource, dict[str, int]]], arch: str, toolkit=None
) -> tuple[int, int]:
    """Compile the cubins of ``builds`` (source, defines) for ``arch`` into the cache, in
    parallel, as a later :func:`build` of each would; (compiled now, cached already)."""
    from .toolkit import find_toolkit

    toolkit = toolkit or find_toolkit()
    jobs = list(builds)
    if not jobs:
        return 0, 0
    with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        hits = [
            cached
            for _, _, cached in pool.map(lambda job: cubin(job[0], job[1], arch, toolkit), jobs)
        ]
    return hits.count(False), hits.count(True)


def build(
    src: KernelSource, defines: dict[str, int] | None = None, arch: str | None = None
) -> BuiltModule:
    """Load ``kernels/<src.file>`` (built with ``defines``) into the current context, for its
    device's arch (with cudadevrt when ``src.cdp``), compiling it first if no process has."""
    import pycuda.driver as drv

    from .compat import check_toolkit_against_driver, driver_can_load, driver_cuda_version
    from .toolkit import find_toolkit

    file = src.file
    toolkit = find_toolkit()
    driver = driver_cuda_version(drv)
    problem = check_toolkit_against_driver(toolkit.version, driver, src.cdp)
    if problem and not driver_can_load(toolkit.version, driver, src.cdp):
        raise UnavailableError(f"{file}: {problem}")
    if arch is None:
        major, minor = drv.Context.get_device().compute_capability()
        arch = f"sm_{major}{minor}"
    t0 = time.perf_counter()
    _log_request(src, defines)
    path, digest, cached = cubin(src, defines, arch, toolkit)
    try:
        module = drv.module_from_file(str(path))
    except drv.Error as exc:
        raise BuildError(f"loading {file} ({path}) failed: {exc}") from None
    return BuiltModule(
        file=file,
        module=module,
        options=list(COMMON_OPTIONS) + define_options(defines or {}),
        arch=arch,
        toolkit_version=toolkit.version,
        source_hash=digest,
        build_s=time.perf_counter() - t0,
        notes=[problem] if problem else [],
        cached=cached,
    )
