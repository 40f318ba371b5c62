"""Whether the CUDA driver can load what the toolkit builds.

A toolkit may be newer than the driver (a 13.5 toolkit on a driver that supports CUDA
13.0). What nqprof's builds then need from the driver:

* every source is built into a SASS-only cubin for the device's arch (:mod:`.build`), a
  dynamic-parallelism one fully linked ahead of time by the toolkit's nvlink with its
  ``libcudadevrt.a``. Within one major release, a driver loads cubins from newer minor
  toolkits (minor-version compatibility; measured on an H200 host with a 13.0 driver: a
  13.5 cubin of either kind loads and runs, docs/results/newer-toolkit-probe-h200.log); a
  toolkit of a newer major release needs a driver of that major release.
* what the driver cannot do is JIT-compile PTX newer than its own CUDA release
  (``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``): builds that handed dynamic-parallelism PTX to
  the driver's linker (PyCUDA's ``DynamicSourceModule``, which nqprof used before) needed a
  driver at least as new as the toolkit; nqprof's builds hand it no PTX.

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
    ``toolkit_version``: always when the toolkit is not newer, and from a newer minor
    release of the same major release (a cubin, linked ahead of time where ``cdp``)."""
    toolkit, driver = parse_release(toolkit_version), parse_release(driver_version)
    return toolkit <= driver or toolkit[0] == driver[0]


def check_toolkit_against_driver(
    toolkit_version: str, driver_version: str, cdp: bool
) -> str | None:
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
    kind = (
        "dynamic-parallelism kernels are fully linked ahead of time (nvlink, with this toolkit's "
        "libcudadevrt.a) into SASS-only cubins"
        if cdp
        else "plain kernels are built as SASS-only cubins"
    )
    return (
        f"{newer}: {kind}, which load through minor-version "
        "compatibility (PTX from this toolkit would not JIT-compile)"
    )
