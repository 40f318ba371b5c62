"""The machinery every GPU strategy shares, written once: context and memory ledger,
builds, board upload, NVTX-marked and event-timed generations, launch-error handling,
and the static facts of the run record. Strategy modules only say what to launch."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..cuda.nvtx import nvtx_range
from ..cuda.sources import KernelSource
from ..errors import DeviceFailureError
from . import placement
from .base import Session

if TYPE_CHECKING:
    from ..subproblems import Subproblems

#: Static shared memory a block may declare; beyond it, only dynamic shared memory with
#: the opt-in attribute (up to the device's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN).
STATIC_SHARED_LIMIT = 48 * 1024
#: Bytes of one device counter word (count_t, unsigned long long, in kernels/common.cuh).
COUNTER_BYTES = 8
#: The opt-in maximum of sm_90 (H100/H200); the device's own value is checked at launch.
DYNAMIC_SHARED_LIMIT_SM90 = 227 * 1024


#: Scheduler sub-partitions per SM from compute capability 7.0 on: each holds a quarter of
#: the SM's registers, and a warp's registers come from one of them.
SUB_PARTITIONS = 4


def blocks_per_sm(
    block: int, registers: int, dynamic_shared: int, static_shared: int, limits: dict[str, int]
) -> int:
    """Resident blocks per SM by the occupancy rules of compute capability 7.0 and later
    (registers allocated per warp in units of 256, from one sub-partition's quarter of the
    SM's registers; ``limits``: threads, blocks, registers and shared memory per SM and the
    shared memory reserved per block, as ``cuda.device.sm_limits`` reads them from the
    device). The same answers as the driver's cuOccupancyMaxActiveBlocksPerMultiprocessor
    (a GPU test checks them against it)."""
    warps = -(-block // 32)
    per_warp_regs = -(-max(registers, 1) * 32 // 256) * 256
    by_threads = limits["threads"] // (warps * 32)
    warps_by_regs = SUB_PARTITIONS * (limits["registers"] // SUB_PARTITIONS // per_warp_regs)
    by_regs = warps_by_regs // warps
    shared = dynamic_shared + static_shared + limits["reserved_shared"]
    by_shared = limits["shared"] // shared
    return max(0, min(limits["blocks"], by_threads, by_regs, by_shared))


class DeviceBoards:
    """Subproblems copied to the device as four arrays (structure of arrays)."""

    def __init__(self, drv, boards: Subproblems):
        self.count = len(boards)
        self.multiplier = boards.multiplier
        self.min_row = boards.min_row
        self.cols = drv.to_device(boards.cols)
        self.ld = drv.to_device(boards.ld)
        self.rd = drv.to_device(boards.rd)
        self.row = drv.to_device(boards.row)

    def args(self) -> tuple:
        import numpy as np

        return (self.cols, self.ld, self.rd, self.row, np.uint32(self.count))


class GpuSession(Session):
    """Base of every GPU session (runs inside a worker process)."""

    def __init__(self, strategy_name: str, n: int, params: dict[str, Any]):
        from ..cuda.device import GpuContext

        self.name, self.n, self.params = strategy_name, n, params
        self.gpu = GpuContext()
        self.drv = self.gpu.drv
        # where this session's buffers land, drawn anew (strategies.placement)
        granules = placement.pad_granules()
        self._pad = placement.pad_layout(self.drv, granules)
        self.layout = {"pad_mib": granules * placement.GRANULE_BYTES // 2**20}
        self.gpu.ledger.mark("layout")
        self.modules = []
        self.notes: list[str] = []
        self._ran = False
        #: the timed regions' stream holds: run with one, gave up (their region waited for
        #: the GPU inside itself, or the host paused longer than the hold waits), run without
        self.holds = {"held": 0, "gave_up": 0, "none": 0, "retimed": 0}

    # -- preparation (outside the timed region) ---------------------------------------
    def build(
        self, source: KernelSource, defines: dict[str, int] | None = None, mark: str = "module"
    ):
        """Build one of the sources the strategy declared (``Strategy.sources``); the memory
        ledger's mark after it is ``mark`` (a session that loads two modules names them
        apart)."""
        from ..cuda.build import build

        with nvtx_range(f"{self.name} N={self.n} build"):
            module = build(source, defines)
        self.modules.append(module)
        self.notes.extend(module.notes)
        self.gpu.ledger.mark(mark)
        return module

    def upload(self, boards: Subproblems) -> DeviceBoards:
        """Copy the host-expanded boards to the device, in an NVTX range of their own."""
        with nvtx_range(f"{self.name} N={self.n} upload {len(boards)} boards"):
            return DeviceBoards(self.drv, boards)

    def counter(self, words: int = 1):
        """A zeroed device array of ``words`` 64-bit counters."""
        buf = self.drv.mem_alloc(COUNTER_BYTES * words)
        self.drv.memset_d32(buf, 0, 2 * words)
        return buf

    def read_u64(self, buf, words: int = 1):
        import numpy as np

        host = np.empty(words, dtype=np.uint64)
        self.drv.memcpy_dtoh(host, buf)
        return host

    def resident_blocks(self, func, block: int, dynamic_shared: int) -> int:
        """Blocks of ``func`` one SM of this device holds at once (``block`` threads,
        ``dynamic_shared`` bytes each): the occupancy rules on the device's own limits."""
        return blocks_per_sm(
            block,
            func.num_regs,
            dynamic_shared,
            func.shared_size_bytes,
            self.gpu.facts["sm_limits"],
        )

    @staticmethod
    def grid_for(count: int, block: int) -> tuple[int, int]:
        """A 1-D grid of ``block``-thread blocks covering ``count`` threads (at least one)."""
        return (max(1, -(-count // block)), 1)

    @staticmethod
    def allow_shared(func, dynamic_bytes: int) -> None:
        """Let ``func`` use more than 48 KiB of dynamic shared memory."""
        if dynamic_bytes > STATIC_SHARED_LIMIT - func.shared_size_bytes:
            import pycuda.driver as drv

            func.set_attribute(
                drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, int(dynamic_bytes)
            )

    # -- timed work --------------------------------------------------------------------
    @contextlib.contextmanager
    def generation(
        self, index: int, label: str = "generation", hold: bool = True, stream=None
    ) -> Iterator[Any]:
        """One host-launched generation: an NVTX range (payload: the index) around
        CUDA events; a failed launch becomes a :class:`DeviceFailureError`. ``hold=False``
        for a region that synchronises inside itself (the stream hold would wait for it);
        ``stream``: where the region's work goes (held and timed there; default: the
        default stream)."""
        from ..cuda.device import EventTimer

        timer = EventTimer(self.drv, hold=hold, stream=stream)
        try:
            with nvtx_range(f"{self.name} N={self.n} {label} {index}", payload=index), timer:
                yield timer
            key = {None: "none", False: "held", True: "gave_up"}[timer.hold_gave_up]
            self.holds[key] += 1
        except self.drv.Error as exc:
            raise DeviceFailureError(
                f"{self.name} N={self.n}: {label} {index} failed on the device: {exc}"
            ) from None

    def ran(self) -> None:
        """Call after each round: the first one records free memory after the run."""
        if not self._ran:
            self.gpu.ledger.mark("run")
            self._ran = True

    # -- record ------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        import pycuda

        kernels = [k for m in self.modules for k in m.kernels.values()]
        hashes = sorted({m.source_hash for m in self.modules})
        return {
            "device": self.gpu.facts,
            "toolkit": {
                "version": self.modules[0].toolkit_version if self.modules else None,
                "arch": self.modules[0].arch if self.modules else None,
                "pycuda": pycuda.VERSION_TEXT,
                "build_s": round(sum(m.build_s for m in self.modules), 3),
            },
            "kernels": kernels,
            "memory": {**self.gpu.ledger.as_dict(), "limits": self.gpu.read_limits()},
            "holds": dict(self.holds),
            "placement": dict(self.layout),
            "source_hash": "+".join(hashes) if hashes else None,
            "notes": list(self.notes),
        }

    def close(self) -> None:
        from ..cuda.graphs import release

        # a session's CUDA graphs (devgraph's, graph-cst's, characterize's) go before its
        # context
        release(getattr(self, "graphs", None))
        self.graphs = None
        self.gpu.close()
