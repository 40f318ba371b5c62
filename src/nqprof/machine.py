"""What `nqprof env` reports: GPU, driver, toolkit, Python packages and profilers."""

from __future__ import annotations

import importlib.metadata
import platform
import shutil
from typing import Any


def _version(package: str) -> str:
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
