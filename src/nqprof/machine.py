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
from .machinediff import MACHINE_KEY, machine_differences


@functools.lru_cache(maxsize=1)
def machine_facts() -> dict[str, Any]:
    """What pytest-benchmark's machine_info gets under ``nqprof``: GPU name, SM count,
    clocks, CUDA driver, toolkit and PyCUDA versions; ``gpu: None`` and the reason on a
    machine without a usable GPU."""
    facts: dict[str, Any] = {"version": __version__}
    from .cuda.device import gpu_available

    ok, why = gpu_available()
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


def compare_facts() -> dict[str, Any]:
    """The facts :func:`machine_differences` compares (``gpu``, ``cuda_toolkit``,
    ``driver``), as :func:`machine_facts` would record them, read without initialising CUDA
    in this process where it can be: :func:`machine_facts` where it was read already, else
    NVML (the GPU's name, the CUDA version of the driver). Only with PyCUDA installed and
    NVML missing does it fall back to :func:`machine_facts`, which initialises CUDA."""
    import importlib.util

    cached = getattr(machine_facts, "cache_info", None)
    if cached is None or cached().currsize:  # read already (or stood in for)
        return machine_facts()
    facts: dict[str, Any] = {"gpu": None, "cuda_toolkit": _toolkit_version()}
    if importlib.util.find_spec("pycuda") is None:  # as gpu_available says: no GPU run here
        return facts
    from .gpuconditions import NvmlProbe

    try:
        probe = NvmlProbe()
    except Exception:  # ImportError, NVMLError: only CUDA can tell
        return machine_facts()
    try:
        facts.update(gpu=probe.name(), driver=probe.cuda_driver())
    finally:
        probe.close()
    return facts


def _toolkit_version() -> str | None:
    try:
        from .cuda.toolkit import find_toolkit

        return find_toolkit().version
    except (ImportError, NqprofError):
        return None


#: pytest-benchmark's machine_info fields never compared between two runs: py-cpuinfo's
#: current CPU clock, which moves on one machine.
UNCOMPARED_FIELDS = ("cpu.hz_actual", "cpu.hz_actual_friendly")


def _flat(info: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in info.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def machine_info_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What differs between two runs' whole machine_info, one ``key: saved -> current``
    phrase each: nqprof's facts as :func:`machine_differences` compares them (GPU, toolkit,
    driver: not nqprof's version, which is the code a comparison is about, nor a cluster,
    started after pytest-benchmark compares), and every other field that both runs recorded
    (``node``, ``cpu.brand_raw``, ``python_version`` ...) but :data:`UNCOMPARED_FIELDS`. A
    field only one run has (another version of py-cpuinfo) is no difference of the machine."""
    import json

    out = [f"{MACHINE_KEY}.{d}" for d in machine_differences(saved, current)]
    # as saved: tuples become lists
    a, b = (
        _flat(
            json.loads(json.dumps({k: v for k, v in info.items() if k != MACHINE_KEY}, default=str))
        )
        for info in (saved, current)
    )
    for key in a:
        if key in b and key not in UNCOMPARED_FIELDS and a[key] != b[key]:
            out.append(f"{key}: {_short(a[key])} -> {_short(b[key])}")
    return out


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
        "gpu": f"{facts['name']} ({facts['arch']}, {facts['sm_count']} "
        f"SMs, {facts['total_memory_mib']} MiB)",
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
    for package in (
        "nqprof",
        "pycuda",
        "nvtx",
        "numpy",
        "pytest-benchmark",
        "pandas",
        "matplotlib",
    ):
        info[package] = _version(package)
    info["nsys"] = _nsys()
    for tool in ("ncu", "compute-sanitizer"):
        info[tool] = shutil.which(tool) or "not found"
    return info
