"""The device-side accounting of the CDP kernels (kernels/cdp.cuh), decoded on the host.

Every CDP kernel keeps its accounting in global memory: solutions, device launches
attempted and failed, device mallocs that returned NULL, device stream creations that
failed, the deepest generation, and per generation the grids launched and the boards
handed to them. :func:`decode_accounting` reads it (a pure function of the words);
:func:`raise_on_failures` turns any failure into a :class:`DeviceFailureError` that names
the limit to raise: a run with a failure never yields a count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import DeviceFailureError
from ...textfmt import MIB
from ..counters import CounterLayout
from .limits import DEFAULT_HEAP, RuntimeLimits
from .model import GenerationStats

if TYPE_CHECKING:
    import numpy as np


# --- the accounting layout: the same numbers as kernels/cdp.cuh (a test compares them) ---
SOLUTIONS = 0
LAUNCHES = 1
LAUNCH_FAILURES = 2
MALLOC_FAILURES = 3
STREAM_FAILURES = 4
MAX_GENERATION = 5
FIRST_ERROR = 6
UNTRACKED = 7
OVERFLOWS = 8
GEN_BASE = 16
GEN_WORDS = 4
GEN_GRIDS, GEN_BOARDS, GEN_MIN_COMPLEMENT, GEN_MAX = range(GEN_WORDS)
MAX_GEN = 32
WORDS = GEN_BASE + GEN_WORDS * MAX_GEN

#: The layout as kernels/cdp.cuh defines it (a test compares every number with the header).
LAYOUT = CounterLayout(
    "cdp.cuh",
    "CDP_",
    {
        "SOLUTIONS": SOLUTIONS,
        "LAUNCHES": LAUNCHES,
        "LAUNCH_FAILURES": LAUNCH_FAILURES,
        "MALLOC_FAILURES": MALLOC_FAILURES,
        "STREAM_FAILURES": STREAM_FAILURES,
        "MAX_GENERATION": MAX_GENERATION,
        "FIRST_ERROR": FIRST_ERROR,
        "UNTRACKED": UNTRACKED,
        "OVERFLOWS": OVERFLOWS,
    },
    WORDS,
    {
        "GEN_BASE": GEN_BASE,
        "GEN_WORDS": GEN_WORDS,
        "GEN_GRIDS": GEN_GRIDS,
        "GEN_BOARDS": GEN_BOARDS,
        "GEN_MIN_COMPLEMENT": GEN_MIN_COMPLEMENT,
        "GEN_MAX": GEN_MAX,
        "MAX_GEN": MAX_GEN,
    },
)

#: The kernels' `stream` argument (CDP_STREAM_* in kernels/cdp.cuh).
STREAM_KINDS = {"default": 0, "own": 1, "fire-and-forget": 2}

#: Names of the CUDA errors a device launch can return (driver_types.h).
CUDA_ERRORS = {
    1: "cudaErrorInvalidValue",
    2: "cudaErrorMemoryAllocation",
    9: "cudaErrorInvalidConfiguration",
    65: "cudaErrorLaunchMaxDepthExceeded",
    69: "cudaErrorLaunchPendingCountExceeded",
    701: "cudaErrorLaunchOutOfResources",
    719: "cudaErrorLaunchFailure",
}
#: Launch errors that mean "out of launch slots".
PENDING_ERRORS = {2, 69, 701}


def error_name(code: int) -> str:
    return f"{CUDA_ERRORS.get(code, 'cudaError')} ({code})"


# --- accounting ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Accounting:
    """One round's device-side accounting, decoded."""

    solutions: int
    launches: int
    launch_failures: int
    malloc_failures: int
    stream_failures: int
    max_generation: int
    first_error: int
    untracked: int
    overflows: int
    generations: list[GenerationStats] = field(default_factory=list)

    def failures(self) -> dict[str, int]:
        return {
            "launches": self.launches,
            "launch_failures": self.launch_failures,
            "malloc_failures": self.malloc_failures,
            "stream_failures": self.stream_failures,
            "max_generation": self.max_generation,
            "first_error": self.first_error,
            "untracked_grids": self.untracked,
            "buffer_overflows": self.overflows,
        }

    def stats(self) -> dict[str, Any]:
        """What :class:`~nqprof.result.Measurement` carries (RunRecord reads both keys)."""
        return {"generations": [g.as_dict() for g in self.generations], "failures": self.failures()}

    @property
    def failed(self) -> bool:
        return bool(
            self.launch_failures or self.malloc_failures or self.stream_failures or self.overflows
        )


def decode_accounting(words: np.ndarray, host_boards: int) -> Accounting:
    """Decode the accounting words of one round. Generation 0 is the host's launch (one
    grid over ``host_boards`` boards); the device records the others."""
    import numpy as np

    counters = LAYOUT.read(words)
    v = [int(x) for x in np.asarray(words, dtype=np.uint64)]
    gens = [GenerationStats(0, 1, host_boards, host_boards, host_boards)]
    for g in range(1, MAX_GEN):
        base = GEN_BASE + GEN_WORDS * g
        grids = v[base + GEN_GRIDS]
        if grids == 0:
            continue
        minimum = ~v[base + GEN_MIN_COMPLEMENT] & 0xFFFF_FFFF_FFFF_FFFF
        gens.append(GenerationStats(g, grids, v[base + GEN_BOARDS], minimum, v[base + GEN_MAX]))
    return Accounting(**counters, generations=gens)


def failure_message(acct: Accounting, limits: RuntimeLimits) -> str | None:
    """What went wrong on the device and which limit to raise; None if nothing did."""
    parts = []
    if acct.launch_failures:
        what = (
            f"{acct.launch_failures:,} of {acct.launches:,} device "
            f"launches failed (first: {error_name(acct.first_error)})"
        )
        if acct.first_error == 65:
            parts.append(
                f"{what}: the grids nest deeper than the CDP runtime allows (generation "
                f"{acct.max_generation + 1}); choose parameters with "
                "fewer generations (a larger search depth or buffer)"
            )
        elif acct.first_error in PENDING_ERRORS and limits.pending >= acct.launches:
            # Seen on an H200: DP-1 with a stream per thread at N=13 lost the same ~363,000
            # launches with the limit at 2.9M and at 5.8M, both above the 1.56M launches.
            parts.append(
                f"{what}, although the pending-launch limit ({limits.pending:,}) already exceeds "
                "the launches attempted: another device-runtime resource binds, so raising the "
                "limit may not help; fewer launches in flight "
                "(default stream, a larger z or host depth) do"
            )
        elif acct.first_error in PENDING_ERRORS:
            parts.append(
                f"{what}: raise the pending-launch limit (param "
                f"pending={suggest(limits.pending)}, was {limits.pending:,})"
            )
        else:
            parts.append(
                f"{what}: the runtime refused the launch configuration (block size or shared "
                "memory of the child grids?); if that is not it, raise the pending-launch limit "
                f"(param pending={suggest(limits.pending)}, was {limits.pending:,})"
            )
    if acct.stream_failures:
        parts.append(
            f"{acct.stream_failures:,} device stream creations failed: the device runtime ran out "
            "of resources; raise the pending-launch limit (param "
            f"pending={suggest(limits.pending)}, was {limits.pending:,})"
        )
    if acct.malloc_failures:
        heap_mib = (limits.heap_bytes or DEFAULT_HEAP) / MIB
        parts.append(
            f"{acct.malloc_failures:,} device mallocs returned NULL: raise the heap "
            f"(param heap_mib={suggest(math.ceil(heap_mib))}, was {heap_mib:g})"
        )
    if acct.overflows:
        parts.append(f"{acct.overflows:,} block-buffer overflows (an nqprof bug)")
    if not parts:
        return None
    return "; ".join(parts) + "; the count is discarded"


def suggest(value: int) -> str:
    """A value to try next: at least twice ``value``."""
    return f"{max(2 * int(value), 1)}"


def raise_on_failures(acct: Accounting, limits: RuntimeLimits, label: str) -> None:
    message = failure_message(acct, limits)
    if message:
        raise DeviceFailureError(f"{label}: {message}")
