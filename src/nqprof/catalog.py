"""The kernel catalog: every CUDA source nqprof builds, assembled above both ``cuda/`` and
``strategies/``.

Each strategy declares its sources (``Strategy.sources``,
:class:`~nqprof.cuda.sources.KernelSource`) and each measurement module its ``SOURCES``; the
catalog is their union, so that the
nvcc-only build path (``nqprof build``, CI, `tox`) compiles and device-links every kernel
without a GPU, with the options the PyCUDA path uses on a GPU. ``cuda/`` builds what it is
handed and never looks the catalog up.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from .cuda.sources import KernelSource

#: Modules that build kernels besides the strategies (microbenchmarks); each declares its
#: own, once, as ``SOURCES`` (a tuple of :class:`KernelSource`).
MEASUREMENT_MODULES = ("nqprof.cuda.device", "nqprof.queuebench", "nqprof.characterize")


def catalog() -> dict[str, KernelSource]:
    """Every kernel source, by file name: the union of the registered strategies' ``sources``
    and the measurement modules' ``SOURCES`` (each declared once, where it is used)."""
    from .strategies import all_strategies

    declared = [src for strategy in all_strategies() for src in strategy.sources]
    declared += [
        src for module in MEASUREMENT_MODULES for src in importlib.import_module(module).SOURCES
    ]
    out: dict[str, KernelSource] = {}
    for src in declared:
        if out.setdefault(src.file, src) != src:
            raise ValueError(f"kernel source {src.file} is declared differently in two places")
    return out


def compile_all(archs: Sequence[str] = ("sm_90",), toolkit=None, workdir=None):
    """:func:`nqprof.cuda.nvcc.compile_all` over the whole catalog (``nqprof build``)."""
    from .cuda.nvcc import compile_all as compile_sources

    return compile_sources(archs, toolkit, catalog(), workdir=workdir)
