"""Building kernels through PyCUDA on the GPU machine.

Plain sources load through ``SourceModule``; sources that launch kernels from the device
through ``DynamicSourceModule``, which compiles relocatable code and links it with the
toolkit's ``libcudadevrt.a``. The target arch comes from the device; every build uses
``-lineinfo``. PyCUDA caches the compiled code by a hash of source, options and nvcc
version; :func:`~nqprof.cuda.sources.source_hash` gives the same identity to the results.

A toolkit newer than the driver is checked before compiling (see :mod:`.compat`): a
dynamic-parallelism source is then unavailable (the driver cannot link its PTX), a plain
one is built with a note in :attr:`BuiltModule.notes`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import BuildError, UnavailableError
from .sources import COMMON_OPTIONS, KernelSource, define_options, kernels_dir, read_source, source_hash


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


def build(src: KernelSource, defines: dict[str, int] | None = None, arch: str | None = None) -> BuiltModule:
    """Compile and load ``kernels/<src.file>`` for the current context's device (with
    cudadevrt when ``src.cdp``)."""
    import pycuda.compiler as compiler
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
        arch = "sm_%d%d" % drv.Context.get_device().compute_capability()
    options = list(COMMON_OPTIONS) + define_options(defines or {})
    common = dict(
        nvcc=str(toolkit.nvcc),
        options=options,
        no_extern_c=True,
        arch=arch,
        include_dirs=[str(kernels_dir())],
    )
    t0 = time.perf_counter()
    try:
        if src.cdp:
            module = compiler.DynamicSourceModule(read_source(file), cuda_libdir=str(toolkit.lib_dir), **common)
        else:
            module = compiler.SourceModule(read_source(file), **common)
    except (drv.CompileError, drv.Error) as exc:
        first = str(exc).strip().splitlines()
        raise BuildError(f"building {file} ({' '.join(options)}) failed: {' | '.join(first[:6])}") from None
    return BuiltModule(
        file=file,
        module=module,
        options=options,
        arch=arch,
        toolkit_version=toolkit.version,
        source_hash=source_hash(file, options, toolkit.version),
        build_s=time.perf_counter() - t0,
        notes=[problem] if problem else [],
    )
