"""Whether the CUDA driver can load what the toolkit builds.

A toolkit may be newer than the driver (a 13.5 toolkit on a driver that supports CUDA
13.0). What nqprof's builds then need from the driver:

* plain sources are SASS-only cubins for the device's arch. Within one major release, a
  driver loads cubins from newer minor toolkits (minor-version compatibility); a toolkit
  of a newer major release needs a driver of that major release.
* dynamic-parallelism sources are compiled to relocatable PTX and linked by the driver's
  JIT linker with the toolkit's ``libcudadevrt.a`` (PyCUDA's ``DynamicSourceModule``).
  A driver cannot JIT-compile PTX newer than its own CUDA release
  (``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``), so these need a driver at least as new as the
  toolkit.

:func:`check_toolkit_against_driver` says so in one line; :func:`driver_can_load` says
whether the build can load at all (build.py refuses those that cannot, as unavailable).
"""

from __future__ import annotations

import re

from ..errors import InputError


def parse_release(version: str | int) -> tuple[int, int]:
    """ "13.0", "cuda13.5", "12.8.1" -> (major, minor); a driver code such as 13000 (from
    ``cuDriverGetVersion``) -> (13, 0)."""
    if isinstance(version, int):
        return version // 1000, version % 1000 // 10
    m = re.fullmatch(r"(?:cuda)?\s*(\d+)\.(\d+)(?:\.\d+)*", str(version).strip())
    if not m:
        raise InputError(f"{version!r} names no CUDA release (expected e.g. 13.0)")
    return int(m.group(1)), int(m.group(2))


def format_release(release: tuple[int, int]) -> str:
    return f"{release[0]}.{release[1]}"


def driver_cuda_version(drv=None) -> str:
    """The newest CUDA release the installed driver supports, e.g. "13.0" (driver 580)."""
    if drv is None:
        import pycuda.driver as drv
    return format_release(parse_release(int(drv.get_driver_version())))


def driver_can_load(toolkit_version: str, driver_version: str, cdp: bool) -> bool:
    """Whether a driver of ``driver_version`` can load nqprof's build of a source with
    ``toolkit_version``: always when the toolkit is not newer; a plain source (cubin) also
    from a newer minor release of the same major release; a CDP source (PTX JIT-linked by
    the driver) never from a newer toolkit."""
    toolkit, driver = parse_release(toolkit_version), parse_release(driver_version)
    if toolkit <= driver:
        return True
    return not cdp and toolkit[0] == driver[0]


def check_toolkit_against_driver(toolkit_version: str, driver_version: str, cdp: bool) -> str | None:
    """None if the driver supports the toolkit's release; otherwise one line saying what a
    build of a source (``cdp``: one using dynamic parallelism) with this toolkit needs
    from the driver. See :func:`driver_can_load` for whether the build can still load."""
    toolkit, driver = parse_release(toolkit_version), parse_release(driver_version)
    if toolkit <= driver:
        return None
    tk, dv = format_release(toolkit), format_release(driver)
    newer = f"the CUDA {tk} toolkit is newer than the driver, which supports CUDA {dv}"
    if toolkit[0] > driver[0]:
        return (
            f"{newer}: code from a CUDA {toolkit[0]} toolkit needs a CUDA {toolkit[0]}.x driver "
            f"(minor-version compatibility stops at the major release); update the driver or use a "
            f"CUDA {driver[0]} toolkit"
        )
    if cdp:
        return (
            f"{newer}: dynamic-parallelism kernels are linked by the driver from PTX and libcudadevrt.a, "
            f"and a CUDA {dv} driver cannot JIT-compile CUDA {tk} PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION); "
            f"use a toolkit no newer than {dv} or a driver for CUDA {tk}"
        )
    return (
        f"{newer}: plain kernels are built as SASS-only cubins, which load through minor-version "
        f"compatibility (PTX from this toolkit would not JIT-compile)"
    )
