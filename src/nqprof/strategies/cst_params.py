"""The parameters cdp-cst and graph-cst share, and the counting kernels' launch bounds that
two of them set, as the defines the kernels are built with (kernels/cst_count.cuh)."""

from __future__ import annotations

from typing import Any

from . import block_records
from .base import Param, block_param
from .cst_layout import MAX_GEN, MODES


def default_depth(n: int) -> int:
    """3, N>=20: 4"""
    from .fast import _default_depth

    return _default_depth(n)


#: bounds: the counting kernels' __launch_bounds__ (kernels/cst_count.cuh's NQ_BOUNDS): fast's
#: (threads and min_blocks blocks an SM), threads only, none
BOUNDS = {"min": 2, "threads": 1, "none": 0}


def cst_params(bounds: str) -> tuple[Param, ...]:
    """The parameters cdp-cst and graph-cst share; ``bounds``: the default launch bounds."""
    return (
        Param(
            "depth",
            "queens past the frame: fast's",
            default=default_depth,
            lo=0,
            hi=lambda n: max(0, n - 3),
            range_text="0..N-3",
        ),
        block_param(128, help="threads per block, counting grids"),
        Param("budget", "steps, then spill (0: off)", default=0, lo=0, hi=1 << 30),
        Param("gens", "counting generations at most", default=8, lo=1, hi=MAX_GEN),
        Param(
            "mode",
            "device launches: stream",
            default="tail",
            choices=tuple(MODES),
            range_text=f"{len(MODES)} modes",
        ),
        Param("spill", "tasks per spill buffer (0: plan)", default=0, lo=0, hi=1 << 28),
        # the task buffer, in tasks: 0 is the exact count; a smaller one (a test) makes
        # the device's scan refuse the tasks, an error
        Param("task_buffer", "task buffer, tasks (0: exact)", default=0, lo=0, hi=(1 << 32) - 1),
        Param(
            "carveout",
            "shared carveout, % (-1: driver's)",
            default=-1,
            lo=-1,
            hi=100,
        ),
        Param(
            "bounds",
            "counting kernels' launch bounds",
            default=bounds,
            choices=tuple(BOUNDS),
            range_text=f"{len(BOUNDS)} kinds",
        ),
        Param("min_blocks", "bounds=min: blocks/SM at least", default=1, lo=1, hi=32),
        block_records.records_param(),
    )


def bounds_defines(params: dict[str, Any]) -> dict[str, int]:
    """The counting kernels' launch bounds as defines (none for bounds=min with min_blocks=1,
    the kernels' own default)."""
    out = {}
    if params.get("bounds", "min") != "min":
        out["NQ_BOUNDS"] = BOUNDS[params["bounds"]]
    if params.get("min_blocks", 1) != 1:
        out["NQ_MIN_BLOCKS"] = params["min_blocks"]
    return out
