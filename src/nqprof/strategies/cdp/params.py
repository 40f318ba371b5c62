"""The parameters the CDP strategies share."""

from __future__ import annotations

from ..base import Param, choice_param


def pending_param() -> Param:
    return Param(
        "pending",
        "pending-launch limit (0: planned)",
        default=0,
        lo=0,
        hi=100_000_000,
    )


def heap_param() -> Param:
    return Param(
        "heap_mib",
        "device heap in MiB (0: planned)",
        default=0,
        lo=0,
        hi=1_048_576,
    )


def search_param(
    default, help: str = "rows searched before handing over", derived: bool = False
) -> Param:
    """``default``: a number, a function of N, or (``derived``) of N and the host depth."""
    return Param(
        "search",
        help,
        default=default,
        lo=1,
        hi=lambda n: n - 1,
        range_text="1..N-1",
        derived=derived,
    )


def child_block_param(default, derived: bool = False) -> Param:
    """``default``: a number, or (``derived``) a function of N and the parameters before it."""
    return Param(
        "child_block",
        "threads per block, child grids",
        default=default,
        lo=1,
        hi=1024,
        derived=derived,
    )


#: The build variants of every CDP kernel (CDP_LAUNCH_MODE in kernels/cdp.cuh): the real
#: child grids, an empty grid of the same shape in their place (t1), no launch (t2), or
#: generation 1's launches recorded and replayed from the host (:mod:`.replay`).
LAUNCH_MODES = {"real": 0, "empty": 1, "none": 2, "record": 3}

#: What each measurement build does instead of the real launches (why its count is not N's).
MEASUREMENT_BUILDS = {
    "empty": "every child launch replaced by an empty grid of the same shape",
    "none": "no child launch made",
    "record": "generation 1's launches recorded, not made, and "
    "replayed from the host without their own children",
}


def launch_param() -> Param:
    # real: the child grids; empty: an empty grid in their place; none: no launch; record:
    # generation 1's launches recorded and replayed from the host, without their own
    # children. All but real are measurement builds (`nqprof characterize ideal` and
    # `efficiency`) whose count is not N's and is never verified (MEASUREMENT_BUILDS).
    return choice_param(
        "launch", "real, or empty/none/record builds", "real", LAUNCH_MODES, "builds"
    )


def launch_defines(params) -> dict[str, int]:
    """The -D defines of a CDP strategy's build for its ``launch`` parameter (none for the
    real build, so that it stays the build every other run uses)."""
    mode = LAUNCH_MODES[params.get("launch", "real")]
    return {"CDP_LAUNCH_MODE": mode} if mode else {}


def measurement_build(params) -> str | None:
    """For a measurement build (``launch`` other than real), the sentence the run record
    carries in place of a verified count; None for the real build."""
    launch = params.get("launch", "real")
    if launch == "real":
        return None
    return f"measurement build launch={launch} ({MEASUREMENT_BUILDS[launch]}): the count is not N's"
