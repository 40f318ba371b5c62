"""Sizing the CDP runtime before the first launch: the seam for Carneiro et al.'s
configuration.

On CDP2 a device launch past the pending-launch limit fails, and a device malloc past the
heap returns NULL; both must be sized before the first launch, and every pending-launch slot
reserves device memory (about 9 KiB). Each strategy estimates what its run needs
(:mod:`nqprof.strategies.cdp.model`); :func:`configure_runtime` turns the estimate (or the
``pending`` / ``heap_mib`` parameters) into limits and refuses, before anything is launched,
a run that does not fit in free device memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import InputError
from ...textfmt import MIB, nbytes
from .model import MAX_NESTING, MAX_TABLE_N, Demand

GIB = 1024 * MIB

#: CDP runtime defaults (design notes: measured on the H200 host).
DEFAULT_PENDING = 2048
DEFAULT_HEAP = 8 * MIB
#: Device memory the runtime reserves per pending-launch slot (measured: about 9 KiB).
PENDING_SLOT_BYTES = 9 * 1024 + 512
#: Kept free besides the estimate: the device runtime itself, modules, thread stacks.
HEADROOM = 1 * GIB
PENDING_MARGIN = 1.25
#: The largest pending-launch limit the runtime takes: asked for more, it sets this and
#: reserves no more memory (read back on an H200, CUDA 13.0, driver 580: 655,360 asked ->
#: 599,186 set; the reserve stops growing there). A session reads the real maximum back from
#: its device and plans again with it; this is the default where there is no device.
MAX_PENDING = 599_186
HEAP_MARGIN = 1.5

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
        heap = (
            "default heap" if self.heap_bytes is None else f"heap {nbytes(self.heap_bytes, 'MiB')}"
        )
        return (
            f"limits: pending-launch {self.pending:,} (~{nbytes(self.reserve_bytes, 'MiB')} "
            f"reserved), {heap}; needs ~{nbytes(self.need_bytes, 'MiB')} of "
            f"{nbytes(self.free_bytes, 'MiB')} free ({self.how})"
        )


class DoesNotFitError(InputError):
    """The run, with these limits, does not fit in free device memory or in the device
    runtime's largest pending-launch limit: the outcome the plan's chunk search looks for
    (a smaller chunk may fit), told apart from every other refusal."""


def configure_runtime(
    label: str,
    demand: Demand | None,
    free_bytes: int,
    pending: int = 0,
    heap_mib: int | None = 0,
    extra_bytes: int = 0,
    max_pending: int = MAX_PENDING,
) -> RuntimeLimits:
    """The CDP runtime limits for a run, decided before anything is launched.

    ``pending`` and ``heap_mib`` are the strategy's parameters (0: size it from ``demand``;
    ``heap_mib=None``: the strategy does not malloc on the device, leave the heap alone).
    ``extra_bytes``: device memory the run allocates from the host (boards, accounting).
    Raises :class:`DoesNotFitError` when the run would not fit in ``free_bytes`` or in
    ``max_pending``, :class:`InputError` when a limit must be estimated but there is no
    estimate.

    This is the seam where Carneiro et al.'s runtime configuration goes: it decides the
    limits (and, there, the chunk of host boards per launch) from the strategy's recursion
    and the device's free memory.
    """
    uses_heap = heap_mib is not None
    estimated = not pending or (uses_heap and not heap_mib)
    if estimated and demand is None:
        raise InputError(
            f"{label}: nqprof has no estimate of what the run needs for N > {MAX_TABLE_N}; give "
            "the limits explicitly (params pending=... and heap_mib=...)"
        )
    limit = (
        int(pending)
        if pending
        else max(DEFAULT_PENDING, math.ceil(demand.pending * PENDING_MARGIN))
    )
    heap = _heap_limit(demand, heap_mib)
    how = _how(pending, heap_mib, demand if estimated else None)
    reserve = limit * PENDING_SLOT_BYTES
    need = reserve + (heap if heap is not None else DEFAULT_HEAP) + extra_bytes + HEADROOM
    advice = demand.advice if estimated else None
    if need > free_bytes:
        raise DoesNotFitError(
            _memory_refusal(label, limit, reserve, heap, extra_bytes, need, free_bytes, how, advice)
        )
    if limit > max_pending:
        raise DoesNotFitError(
            f"{label}: does not fit in the device runtime: it needs a pending-launch limit of "
            f"{limit:,} ({how}), but the runtime takes at most {max_pending:,} (launches past it "
            f"fail). {_sentence(advice, 'or', 'Or')} launch fewer grids at once"
        )
    return RuntimeLimits(
        pending=limit,
        heap_bytes=heap,
        reserve_bytes=reserve,
        need_bytes=need,
        free_bytes=free_bytes,
        how=how,
    )


def _heap_limit(demand: Demand | None, heap_mib: int | None) -> int | None:
    """The heap to set: the given one, else the estimate with its margin (at least the
    default); None for a strategy that does not malloc on the device."""
    if heap_mib is None:
        return None
    if heap_mib:
        return int(heap_mib) * MIB
    return max(DEFAULT_HEAP, math.ceil((demand.heap_bytes or 0) * HEAP_MARGIN / MIB) * MIB)


def _how(pending: int, heap_mib: int | None, estimate: Demand | None) -> str:
    """Where the limits came from: the given parameters, and the estimate's basis."""
    given = [f"pending={pending}"] if pending else []
    if heap_mib:
        given.append(f"heap_mib={heap_mib}")
    how = ", ".join(given) if given else "estimated"
    if estimate is not None:
        how = (how + "; " if given else "") + "estimated from " + estimate.basis
    return how


def _sentence(advice: str | None, after_advice: str, alone: str) -> str:
    """The estimate's advice (if the limits were estimated) leading into the fixed advice."""
    text = f"{advice}, {after_advice}" if advice else alone
    return text[:1].upper() + text[1:]


def _memory_refusal(label, limit, reserve, heap, extra_bytes, need, free_bytes, how, advice) -> str:
    return (
        f"{label}: does not fit in device memory: pending-launch limit {limit:,} "
        f"(~{nbytes(reserve, 'MiB')} reserved at ~{PENDING_SLOT_BYTES / 1024:.1f} KiB per slot) + "
        f"heap {nbytes(heap if heap is not None else DEFAULT_HEAP, 'MiB')} + "
        f"{nbytes(extra_bytes + HEADROOM, 'MiB')} for boards and the runtime = "
        f"{nbytes(need, 'MiB')}, but only {nbytes(free_bytes, 'MiB')} is free ({how}). "
        f"{_sentence(advice, 'or set', 'Set')} smaller limits explicitly (params pending= and "
        "heap_mib=): launches and mallocs past them fail and are reported, never counted"
    )


def check_nesting(run: str, deepest: int, advice: str) -> None:
    """Refuse a run whose grids would nest deeper than the CDP runtime allows."""
    if deepest > MAX_NESTING:
        raise InputError(
            f"{run} nests {deepest} generations of grids; "
            f"the CDP runtime allows {MAX_NESTING}: {advice}"
        )
