"""The CUDA device side of a run: PyCUDA import, context, device facts, the memory
ledger (cudaMemGetInfo at each step), runtime limits and CUDA-event timing.

Only worker processes create a context (see runner.py); :func:`gpu_available` may be
called anywhere and creates none.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from ..errors import InputError, UnavailableError
from ..textfmt import MIB
from .sources import KernelSource


def driver():
    """``pycuda.driver``, initialised; :class:`UnavailableError` with the reason otherwise."""
    try:
        import pycuda.driver as drv
    except ImportError as exc:
        raise UnavailableError(f"PyCUDA is not installed ({exc}); install nqprof[cuda]") from None
    except OSError as exc:  # libcuda missing
        raise UnavailableError(f"PyCUDA cannot load the CUDA driver ({exc})") from None
    try:
        drv.init()
        if drv.Device.count() < 1:
            raise UnavailableError("no CUDA device found")
    except drv.Error as exc:
        raise UnavailableError(f"CUDA driver initialisation failed ({exc})") from None
    return drv


@functools.lru_cache(maxsize=1)
def gpu_available() -> tuple[bool, str]:
    """(True, device name) where a GPU run can happen here, else (False, the reason)."""
    try:
        drv = driver()
        return True, drv.Device(0).name()
    except UnavailableError as exc:
        return False, str(exc)


def require_gpu(hint: str) -> str:
    """The GPU's name where a GPU run can happen here (:func:`gpu_available`), else
    :class:`UnavailableError`: ``no GPU on this machine (why); hint``."""
    ok, what = gpu_available()
    if not ok:
        raise UnavailableError(f"no GPU on this machine ({what}); {hint}")
    return what


def sm_limits(drv, dev) -> dict[str, int]:
    """What one multiprocessor holds, as the device reports it: the limits the occupancy
    rules of ``strategies.gpu_common.blocks_per_sm`` apply."""
    attr = drv.device_attribute
    return {
        "threads": dev.get_attribute(attr.MAX_THREADS_PER_MULTIPROCESSOR),
        "blocks": dev.get_attribute(attr.MAX_BLOCKS_PER_MULTIPROCESSOR),
        "registers": dev.get_attribute(attr.MAX_REGISTERS_PER_MULTIPROCESSOR),
        "shared": dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        "reserved_shared": dev.get_attribute(attr.RESERVED_SHARED_MEMORY_PER_BLOCK),
    }


def device_facts(drv, dev) -> dict[str, Any]:
    attr = drv.device_attribute
    major, minor = dev.compute_capability()
    driver_version = drv.get_driver_version()
    return {
        "name": dev.name(),
        "cc": f"{major}{minor}",
        "arch": f"sm_{major}{minor}",
        "sm_count": dev.get_attribute(attr.MULTIPROCESSOR_COUNT),
        "clock_mhz": dev.get_attribute(attr.CLOCK_RATE) // 1000,
        "memory_clock_mhz": dev.get_attribute(attr.MEMORY_CLOCK_RATE) // 1000,
        "total_memory_mib": dev.total_memory() // MIB,
        "max_shared_per_block_optin": dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        "sm_limits": sm_limits(drv, dev),
        "driver": f"{driver_version // 1000}.{driver_version % 1000 // 10}",
        "pci_bus_id": dev.pci_bus_id(),
    }


@dataclass
class MemoryLedger:
    """Free device memory (cudaMemGetInfo) after each step of a run."""

    marks: list[tuple[str, int]] = field(default_factory=list)
    total: int = 0

    def mark(self, label: str) -> int:
        import pycuda.driver as drv

        free, self.total = drv.mem_get_info()
        self.marks.append((label, free))
        return free

    def as_dict(self) -> dict[str, Any]:
        deltas = {}
        for (_, before), (label, after) in pairwise(self.marks):
            deltas[label] = round((after - before) / MIB, 3)
        return {
            "total_mib": round(self.total / MIB, 1),
            "free_mib": {label: round(free / MIB, 1) for label, free in self.marks},
            # Change of free memory at each step (negative: memory taken by that step).
            "deltas_mib": deltas,
        }


class GpuContext:
    """The device's primary CUDA context (device 0: the worker's GPU) for the life of one
    worker, with its memory ledger. A worker that started the driver early
    (:mod:`nqprof.worker`) finds the context made already."""

    def __init__(self, device: int = 0):
        from .. import worker

        worker.cuda_started()
        self.drv = drv = driver()
        self.device = drv.Device(device)
        self.context = self.device.retain_primary_context()
        self.context.push()
        worker.release_early()
        self.ledger = MemoryLedger()
        self.ledger.mark("context")
        self.facts = device_facts(drv, self.device)
        self.limits: dict[str, int] = {}

    def set_limits(
        self, pending_launches: int | None = None, heap_bytes: int | None = None
    ) -> dict[str, int]:
        """Set the CDP pending-launch limit and the device malloc heap (before the first
        launch that needs them) and record what the runtime took for them."""
        from .nvtx import nvtx_range

        drv = self.drv
        wanted = {
            "pending_launches": (drv.limit.DEV_RUNTIME_PENDING_LAUNCH_COUNT, pending_launches),
            "heap_bytes": (drv.limit.MALLOC_HEAP_SIZE, heap_bytes),
        }
        with nvtx_range("limits"):
            for key, (limit, value) in wanted.items():
                if value is None:
                    continue
                try:
                    drv.Context.set_limit(limit, int(value))
                except drv.Error as exc:
                    # a context that holds another session of the case (rotation) has them
                    # already: the device runtime refuses to set a heap in use, even to its size
                    if drv.Context.get_limit(limit) != int(value):
                        raise InputError(f"the device refused {key}={value}: {exc}") from None
                self.limits[key] = drv.Context.get_limit(limit)
        self.ledger.mark("limits")
        return dict(self.limits)

    def read_limits(self) -> dict[str, int]:
        drv = self.drv
        return {
            "pending_launches": drv.Context.get_limit(drv.limit.DEV_RUNTIME_PENDING_LAUNCH_COUNT),
            "heap_bytes": drv.Context.get_limit(drv.limit.MALLOC_HEAP_SIZE),
            "stack_bytes": drv.Context.get_limit(drv.limit.STACK_SIZE),
        }

    def close(self) -> None:
        if self.context is not None:
            # its stream hold goes with it (freed while the context is current): a context
            # made later in this process may get the same handle
            _HOLDS.pop(_context_key(self.context), None)
            self.context.pop()
            self.context.detach()
            self.context = None


#: The hold kernel (kernels/hold.cu), declared for the kernel catalog and `nqprof build`.
#: The stream hold's kernel: its time in a trace is the host's queuing, not the case's work.
HOLD_KERNEL = "nq_hold"
HOLD_SOURCE = KernelSource("hold.cu", cdp=False, kernels=(HOLD_KERNEL,))
#: The kernels this module builds, for the kernel catalog (nqprof.catalog).
SOURCES = (HOLD_SOURCE,)
#: The longest a hold waits for the host to queue its region. Only a region that waits for
#: the GPU inside itself should reach it (such regions are timed without a hold): a host
#: pause while queuing (a garbage collection, a slow launch path) stays far below it.
HOLD_MAX_NS = 20_000_000


class StreamHold:
    """NVBench's blocking kernel: :meth:`hold` launches a one-thread kernel that spins until
    :meth:`release` sets a flag in mapped host memory (or HOLD_MAX_NS passes), so the work
    queued behind it (a start event, the timed launches, a stop event) runs back to back on
    the GPU and the events measure the GPU, not the host's launch latency. One per context."""

    def __init__(self, drv):
        import numpy as np

        from .build import build

        self._np = np
        mapped = drv.host_alloc_flags.DEVICEMAP
        self.flag = drv.pagelocked_zeros((1,), np.int32, mem_flags=mapped)
        self._flag_ptr = np.intp(self.flag.base.get_device_pointer())
        # how many holds gave up, in mapped host memory: read after a region's stop event
        # has completed, with no copy
        self._gave_up = drv.pagelocked_zeros((1,), np.uint32, mem_flags=mapped)
        self.timed_out = np.intp(self._gave_up.base.get_device_pointer())
        self._kernel = build(HOLD_SOURCE).function(HOLD_KERNEL)
        self._drv = drv

    def hold(self, stream=None) -> None:
        """Hold ``stream`` (default: the default stream) until :meth:`release`."""
        self.flag[0] = 0
        self._kernel(
            self._flag_ptr,
            self._np.uint64(HOLD_MAX_NS),
            self.timed_out,
            block=(1, 1, 1),
            grid=(1, 1),
            stream=stream,
        )

    def release(self) -> None:
        self.flag[0] = 1

    def timeouts(self) -> int:
        """How many holds gave up waiting (their region synchronised inside itself), as of the
        last completed work."""
        return int(self._gave_up[0])


_HOLDS: dict[int, StreamHold] = {}


def _context_key(ctx) -> int:
    return int(getattr(ctx, "handle", 0) or 0)


def stream_hold(drv) -> StreamHold:
    """The current context's :class:`StreamHold` (built on first use; dropped as its
    :class:`GpuContext` closes)."""
    key = _context_key(drv.Context.get_current())
    if key not in _HOLDS:
        _HOLDS[key] = StreamHold(drv)
    return _HOLDS[key]


class EventTimer:
    """CUDA events around device work: ``with timer: launch()`` then ``timer.seconds``;
    ``timer.wall_seconds`` is the host clock over the same region, synchronisation included.
    With ``hold`` (the default) a :class:`StreamHold` keeps the stream waiting until the whole
    region is queued: ``seconds`` is the GPU's time from the first launch to the last
    kernel's end, without the host's launch latency before or between the launches.
    ``stream``: the stream the region's work goes to (held, and its events recorded there;
    default: the default stream)."""

    def __init__(self, drv, hold: bool = True, stream=None):
        self.start, self.stop = drv.Event(), drv.Event()
        self._stream = stream
        self.seconds = 0.0
        self.wall_seconds = 0.0
        self._hold = stream_hold(drv) if hold else None
        #: whether this region's hold gave up waiting (its time then holds host latency);
        #: None without a hold
        self.hold_gave_up: bool | None = None

    def __enter__(self):
        self._t0 = time.perf_counter()
        if self._hold is not None:
            self._before = self._hold.timeouts()
            self._hold.hold(self._stream)
        self.start.record(self._stream)
        return self

    def __exit__(self, *exc):
        self.stop.record(self._stream)
        if self._hold is not None:
            self._hold.release()
        self.stop.synchronize()
        self.wall_seconds = time.perf_counter() - self._t0
        self.seconds = self.stop.time_since(self.start) / 1e3
        if self._hold is not None:
            self.hold_gave_up = self._hold.timeouts() > self._before
