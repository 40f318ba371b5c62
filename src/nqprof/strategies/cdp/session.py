"""What the CDP strategies (dp1, dp2, dp3, dpswap) share on the host, written once.

* **Limits before the first launch.** On CDP2 a device launch past the pending-launch limit
  fails, and a device malloc past the heap returns NULL; both must be sized before the first
  launch, and every pending-launch slot reserves device memory (about 9 KiB). Each strategy
  estimates what its run needs (:mod:`nqprof.strategies.cdp.model`); :func:`configure_runtime` turns
  the estimate (or the ``pending`` / ``heap_mib`` parameters) into limits and refuses, before
  anything is launched, a run that does not fit in free device memory. It is the one place
  where Carneiro et al.'s runtime-configuration algorithm will plug in.
* **Accounting.** Every CDP kernel keeps its accounting in global memory (kernels/cdp.cuh):
  solutions, device launches attempted and failed, device mallocs that returned NULL,
  device stream creations that failed, the deepest generation, and per generation the grids
  launched and the boards handed to them. :func:`decode_accounting` reads it (a pure
  function of the words); :func:`raise_on_failures` turns any failure into a
  :class:`DeviceFailureError` that names the limit to raise -- a run with a failure never
  yields a count.
* :class:`CdpSession`: a GPU session that does the above around the strategy's host-launched
  generation (in its own NVTX range, timed with CUDA events).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .model import MAX_NESTING, MAX_TABLE_N, Demand, GenerationStats
from ...textfmt import nbytes
from ...errors import DeviceFailureError, InputError
from ...result import Measurement
from ...subproblems import expand
from ..base import Param
from ..gpu_common import GpuSession

MIB = 1024 * 1024
GIB = 1024 * MIB

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

#: The kernels' `stream` argument (CDP_STREAM_* in kernels/cdp.cuh).
STREAM_KINDS = {"default": 0, "own": 1, "fire-and-forget": 2}

#: CDP runtime defaults (design notes: measured on the H200 host).
DEFAULT_PENDING = 2048
DEFAULT_HEAP = 8 * MIB
#: Device memory the runtime reserves per pending-launch slot (measured: about 9 KiB).
PENDING_SLOT_BYTES = 9 * 1024 + 512
#: Kept free besides the estimate: the device runtime itself, modules, thread stacks.
HEADROOM = 1 * GIB
PENDING_MARGIN = 1.25
HEAP_MARGIN = 1.5

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


# --- parameters shared by the CDP strategies ------------------------------------------------


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
        return bool(self.launch_failures or self.malloc_failures or self.stream_failures or self.overflows)


def decode_accounting(words: np.ndarray, host_boards: int) -> Accounting:
    """Decode the accounting words of one round. Generation 0 is the host's launch (one
    grid over ``host_boards`` boards); the device records the others."""
    w = np.asarray(words, dtype=np.uint64)
    if w.shape != (WORDS,):
        raise ValueError(f"accounting must be {WORDS} 64-bit words, got shape {w.shape}")
    v = [int(x) for x in w]
    gens = [GenerationStats(0, 1, host_boards, host_boards, host_boards)]
    for g in range(1, MAX_GEN):
        base = GEN_BASE + GEN_WORDS * g
        grids = v[base + GEN_GRIDS]
        if grids == 0:
            continue
        minimum = ~v[base + GEN_MIN_COMPLEMENT] & 0xFFFF_FFFF_FFFF_FFFF
        gens.append(GenerationStats(g, grids, v[base + GEN_BOARDS], minimum, v[base + GEN_MAX]))
    return Accounting(
        solutions=v[SOLUTIONS],
        launches=v[LAUNCHES],
        launch_failures=v[LAUNCH_FAILURES],
        malloc_failures=v[MALLOC_FAILURES],
        stream_failures=v[STREAM_FAILURES],
        max_generation=v[MAX_GENERATION],
        first_error=v[FIRST_ERROR],
        untracked=v[UNTRACKED],
        overflows=v[OVERFLOWS],
        generations=gens,
    )


def failure_message(acct: Accounting, limits: "RuntimeLimits") -> str | None:
    """What went wrong on the device and which limit to raise; None if nothing did."""
    parts = []
    if acct.launch_failures:
        what = f"{acct.launch_failures:,} of {acct.launches:,} device launches failed (first: {error_name(acct.first_error)})"
        if acct.first_error == 65:
            parts.append(
                f"{what}: the grids nest deeper than the CDP runtime allows (generation {acct.max_generation + 1}); "
                "choose parameters with fewer generations (a larger search depth or buffer)"
            )
        elif acct.first_error in PENDING_ERRORS and limits.pending >= acct.launches:
            # Seen on an H200: DP-1 with a stream per thread at N=13 lost the same ~363,000
            # launches with the limit at 2.9M and at 5.8M, both above the 1.56M launches.
            parts.append(
                f"{what}, although the pending-launch limit ({limits.pending:,}) already exceeds the launches "
                "attempted: another device-runtime resource binds, so raising the limit may not help; fewer "
                "launches in flight (default stream, a larger z or host depth) do"
            )
        elif acct.first_error in PENDING_ERRORS:
            parts.append(f"{what}: raise the pending-launch limit (param pending={suggest(limits.pending)}, was {limits.pending:,})")
        else:
            parts.append(
                f"{what}: the runtime refused the launch configuration (block size or shared memory of the child "
                f"grids?); if that is not it, raise the pending-launch limit (param pending={suggest(limits.pending)}, "
                f"was {limits.pending:,})"
            )
    if acct.stream_failures:
        parts.append(
            f"{acct.stream_failures:,} device stream creations failed: the device runtime ran out of resources; "
            f"raise the pending-launch limit (param pending={suggest(limits.pending)}, was {limits.pending:,})"
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


def raise_on_failures(acct: Accounting, limits: "RuntimeLimits", label: str) -> None:
    message = failure_message(acct, limits)
    if message:
        raise DeviceFailureError(f"{label}: {message}")


# --- sizing the CDP runtime: the seam for Carneiro et al.'s configuration ------------------


@dataclass(frozen=True)
class RuntimeLimits:
    """The limits a run is launched under and the memory they are expected to take."""

    pending: int
    #: Device malloc heap; None leaves the runtime's default (the strategy does not malloc).
    heap_bytes: int | None
    reserve_bytes: int  # what the pending-launch slots reserve (estimated)
    need_bytes: int  # all the run needs at once (estimated)
    free_bytes: int
    how: str  # where the numbers came from

    def describe(self) -> str:
        heap = "default heap" if self.heap_bytes is None else f"heap {nbytes(self.heap_bytes, 'MiB')}"
        return (
            f"limits: pending-launch {self.pending:,} (~{nbytes(self.reserve_bytes, 'MiB')} reserved), {heap}; "
            f"needs ~{nbytes(self.need_bytes, 'MiB')} of {nbytes(self.free_bytes, 'MiB')} free ({self.how})"
        )


def configure_runtime(
    label: str,
    demand: Demand | None,
    free_bytes: int,
    pending: int = 0,
    heap_mib: int | None = 0,
    extra_bytes: int = 0,
) -> RuntimeLimits:
    """The CDP runtime limits for a run, decided before anything is launched.

    ``pending`` and ``heap_mib`` are the strategy's parameters (0: size it from ``demand``;
    ``heap_mib=None``: the strategy does not malloc on the device, leave the heap alone).
    ``extra_bytes``: device memory the run allocates from the host (boards, accounting).
    Raises :class:`InputError` when the run would not fit in ``free_bytes``, or when a
    limit must be estimated but there is no estimate.

    This is the seam where Carneiro et al.'s runtime configuration goes (a later issue):
    it decides the limits (and, there, the chunk of host boards per launch) from the
    strategy's recursion and the device's free memory.
    """
    uses_heap = heap_mib is not None
    given = []
    if pending:
        given.append(f"pending={pending}")
    if uses_heap and heap_mib:
        given.append(f"heap_mib={heap_mib}")
    need_estimate = not pending or (uses_heap and not heap_mib)
    if need_estimate and demand is None:
        raise InputError(
            f"{label}: nqprof has no estimate of what the run needs for N > {MAX_TABLE_N}; give the limits "
            "explicitly (params pending=... and heap_mib=...)"
        )
    limit = int(pending) if pending else max(DEFAULT_PENDING, math.ceil(demand.pending * PENDING_MARGIN))
    heap: int | None = None
    if uses_heap:
        if heap_mib:
            heap = int(heap_mib) * MIB
        else:
            estimate = demand.heap_bytes or 0
            heap = max(DEFAULT_HEAP, math.ceil(estimate * HEAP_MARGIN / MIB) * MIB)
    how = ", ".join(given) if given else "estimated"
    if need_estimate:
        how = (how + "; " if given else "") + "estimated from " + demand.basis
    reserve = limit * PENDING_SLOT_BYTES
    need = reserve + (heap if heap is not None else DEFAULT_HEAP) + extra_bytes + HEADROOM
    if need > free_bytes:
        advice = f"{demand.advice}, or set" if need_estimate else "Set"
        raise InputError(
            f"{label}: does not fit in device memory: pending-launch limit {limit:,} (~{nbytes(reserve, 'MiB')} reserved at "
            f"~{PENDING_SLOT_BYTES / 1024:.1f} KiB per slot) + heap {nbytes(heap if heap is not None else DEFAULT_HEAP, 'MiB')}"
            f" + {nbytes(extra_bytes + HEADROOM, 'MiB')} for boards and the runtime = {nbytes(need, 'MiB')}, but only "
            f"{nbytes(free_bytes, 'MiB')} is free ({how}). {advice[:1].upper() + advice[1:]} smaller limits explicitly "
            "(params pending= and heap_mib=): launches and mallocs past them fail and are reported, never counted"
        )
    return RuntimeLimits(
        pending=limit, heap_bytes=heap, reserve_bytes=reserve, need_bytes=need, free_bytes=free_bytes, how=how
    )


def check_nesting(run: str, deepest: int, advice: str) -> None:
    """Refuse a run whose grids would nest deeper than the CDP runtime allows."""
    if deepest > MAX_NESTING:
        raise InputError(
            f"{run} nests {deepest} generations of grids; the CDP runtime allows {MAX_NESTING}: {advice}"
        )


# --- the session ----------------------------------------------------------------------------


class CdpSession(GpuSession):
    """Base of the CDP strategies' sessions.

    Preparation, in order: expand the host boards; size the limits (before anything is
    built or launched; an InputError if the run does not fit); set them; build the kernels;
    upload the boards; allocate the accounting. Each round: zero the accounting, launch the
    host grid inside ``generation(0)`` (NVTX range + CUDA events), decode the accounting,
    fail on any device failure, and return the count with the per-generation statistics.

    Subclasses set ``source``, ``root_kernel``, ``child_kernels`` and implement
    :meth:`demand` (the estimate) and :meth:`launch_root`.
    """

    source: str = ""
    root_kernel: str = ""
    child_kernels: tuple[str, ...] = ()

    def __init__(self, strategy_name: str, n: int, params: dict[str, Any]):
        super().__init__(strategy_name, n, params)
        try:
            self._prepare_run(strategy_name, n, params)
        except BaseException:
            self.close()
            raise

    def _prepare_run(self, strategy_name: str, n: int, params: dict[str, Any]) -> None:
        self.label = f"{strategy_name} N={n}"
        self.host = expand(n, params["depth"])
        free, _ = self.drv.mem_get_info()
        board_bytes = len(self.host) * 13 + WORDS * 8
        self.limits = configure_runtime(
            self.label,
            self.demand(),
            free,
            pending=params.get("pending", 0),
            heap_mib=params.get("heap_mib", 0) if "heap_mib" in params else None,
            extra_bytes=board_bytes,
        )
        self.gpu.set_limits(pending_launches=self.limits.pending, heap_bytes=self.limits.heap_bytes)
        module = self.build(self.source)
        self.root = module.function(self.root_kernel)
        self.children = {name: module.function(name) for name in self.child_kernels}
        self.module = module
        self.boards = self.upload(self.host)
        self.acct = self.counter(WORDS)
        self.notes.append(f"{self.boards.count} host boards at depth {params['depth']}")
        self.notes.append(self.limits.describe())
        self.prepare()

    # -- what a strategy provides ------------------------------------------------------
    def demand(self) -> Demand | None:
        """The estimate of what the run needs (None where there is none)."""
        raise NotImplementedError

    def prepare(self) -> None:
        """Anything after the build: shared-memory attributes, grid shapes."""

    def launch_root(self) -> None:
        """Launch the host grid (generation 0) over ``self.boards``."""
        raise NotImplementedError

    # -- helpers ---------------------------------------------------------------------------
    def allow_dynamic_shared(self, name: str, dynamic_bytes: int) -> None:
        """Record and allow ``dynamic_bytes`` of dynamic shared memory for kernel ``name``."""
        func = self.root if name == self.root_kernel else self.children[name]
        self.module.kernels[name]["dynamic_shared_bytes"] = int(dynamic_bytes)
        self.allow_shared(func, int(dynamic_bytes))

    # -- a round ---------------------------------------------------------------------------
    def run_once(self) -> Measurement:
        self.drv.memset_d32(self.acct, 0, 2 * WORDS)
        with self.generation(0) as timer:
            self.launch_root()
        acct = decode_accounting(self.read_u64(self.acct, WORDS), host_boards=self.boards.count)
        self.ran()
        raise_on_failures(acct, self.limits, self.label)
        count = acct.solutions * self.boards.multiplier
        return Measurement(count=count, wall_s=timer.wall_seconds, gpu_s=timer.seconds, stats=acct.stats())
