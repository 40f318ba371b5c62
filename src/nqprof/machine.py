"""Facts about this machine, in one place: whether GPU strategies can run here, what
pytest-benchmark's machine_info records (and which of its fields make two runs'
timings incomparable), and what `nqprof env` reports."""

from __future__ import annotations

import functools
import platform
import shutil
from typing import Any

from . import __version__
from .errors import NqprofError

#: machine_info key under which nqprof records its facts.
MACHINE_KEY = "nqprof"
#: machine_info fields whose difference makes timings of two runs incomparable.
COMPARED_MACHINE_FIELDS = ("gpu", "cuda_toolkit", "driver")


def gpu_status() -> tuple[bool, str]:
    """(True, GPU name) or (False, why GPU strategies cannot run here); cached by
    :func:`~nqprof.cuda.device.gpu_available`."""
    try:
        from .cuda.device import gpu_available

        return gpu_available()
    except (ImportError, AttributeError):
        return False, "nqprof.cuda.device not available"


@functools.lru_cache(maxsize=1)
def machine_facts() -> dict[str, Any]:
    """What pytest-benchmark's machine_info gets under ``nqprof``: GPU name, SM count,
    clocks, CUDA driver, toolkit and PyCUDA versions; ``gpu: None`` and the reason on a
    machine without a usable GPU."""
    facts: dict[str, Any] = {"version": __version__}
    ok, why = gpu_status()
    if ok:
        import pycuda

        from .cuda.device import device_facts, driver

        drv = driver()
        dev = device_facts(drv, drv.Device(0))
        facts.update(
            gpu=dev["name"],
            gpu_count=drv.Device.count(),
            arch=dev["arch"],
            sm_count=dev["sm_count"],
            clock_mhz=dev["clock_mhz"],
            memory_clock_mhz=dev["memory_clock_mhz"],
            total_memory_mib=dev["total_memory_mib"],
            driver=dev["driver"],
            pycuda=pycuda.VERSION_TEXT,
        )
    else:
        facts.update(gpu=None, gpu_status=f"CPU only: {why}")
    try:
        from .cuda.toolkit import find_toolkit

        facts["cuda_toolkit"] = find_toolkit().version
    except (ImportError, NqprofError):
        facts["cuda_toolkit"] = None
    return facts


def machine_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``["gpu: 'NVIDIA H100' -> 'NVIDIA H200'", ...]`` for the nqprof machine_info fields
    that differ between two runs' machine_info."""
    a, b = saved.get(MACHINE_KEY) or {}, current.get(MACHINE_KEY) or {}
    if not a or not b:  # a run saved without nqprof benchmarks has nothing to compare
        return []
    return [f"{key}: {a.get(key)!r} -> {b.get(key)!r}" for key in COMPARED_MACHINE_FIELDS if a.get(key) != b.get(key)]


def _version(package: str) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _gpu() -> dict[str, Any]:
    from .cuda.device import device_facts, driver
    from .errors import UnavailableError

    try:
        drv = driver()
    except UnavailableError as exc:
        return {"gpu": f"none ({exc})"}
    facts = device_facts(drv, drv.Device(0))
    return {
        "gpu": f"{facts['name']} ({facts['arch']}, {facts['sm_count']} SMs, {facts['total_memory_mib']} MiB)",
        "driver": f"CUDA {facts['driver']}",
        "gpu count": drv.Device.count(),
    }


def _toolkit() -> str:
    from .errors import NqprofError

    try:
        from .cuda.toolkit import find_toolkit

        return find_toolkit().describe()
    except NqprofError as exc:
        return f"not found ({exc})"


def _nsys() -> str:
    from .errors import NqprofError

    try:
        from .analysis.trace import find_nsys

        return str(find_nsys())
    except (NqprofError, ImportError) as exc:
        return f"not found ({exc})"


def describe_environment() -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    info.update(_gpu())
    info["toolkit"] = _toolkit()
    for package in ("nqprof", "pycuda", "nvtx", "numpy", "pytest-benchmark", "pandas", "matplotlib"):
        info[package] = _version(package)
    info["nsys"] = _nsys()
    for tool in ("ncu", "compute-sanitizer"):
        info[tool] = shutil.which(tool) or "not found"
    return info
