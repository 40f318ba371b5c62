"""The parameters the CDP strategies share."""

from __future__ import annotations

from ..base import Param

def pending_param() -> Param:
    return Param(
        "pending",
        "pending-launch limit of the CDP runtime (0: sized from an estimate of the run)",
        default=0,
        lo=0,
        hi=100_000_000,
    )


def heap_param() -> Param:
    return Param(
        "heap_mib",
        "device malloc heap in MiB (0: sized from an estimate of the run)",
        default=0,
        lo=0,
        hi=1_048_576,
    )


def search_param(
    default, help: str = "rows each thread searches below its board before handing over", derived: bool = False
) -> Param:
    """``default``: a number, a function of N, or (``derived``) of N and the host depth."""
    return Param("search", help, default=default, lo=1, hi=lambda n: n - 1, range_text="1..N-1", derived=derived)


def child_block_param(default, derived: bool = False) -> Param:
    """``default``: a number, or (``derived``) a function of N and the parameters before it."""
    return Param(
        "child_block", "threads per block of the device-launched grids", default=default, lo=1, hi=1024,
        derived=derived,
    )


