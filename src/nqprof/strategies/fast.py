"""fast: full D4 symmetry and dynamic load balancing inside the GPU (kernels/fast.cu).

The host expands the boards of Takaken's two kinds (corner queen or not) to row ``depth``
with the C routine the CPU strategy serial-d4 uses (``nqprof._cpu.d4_tasks``); a
persistent grid works through the tasks, each lane taking the next one from a global
index with one atomic per warp. ``opt`` selects the kernel (the measured ladder,
docs/results/fast-ladder.md):

==============  ===========================================================================
``static``      each thread takes tasks i, i + threads, ... (no atomics)
``dynamic``     warp-aggregated task fetching, one push or pop per loop step
``dynamic-pop`` the same, a step pops once if needed, then places
``tight-u1``    the tight loop: one stack index, lookahead, last two rows in place, vote
                on refills every step
``tight``       the tight loop, vote every 2 steps
``tight-u4``    the tight loop, vote every 4 steps (the fastest measured)
``tight-nola``  ``tight`` without the lookahead
``plain``       one thread, plain enumeration without symmetry: the default below N=4, where
                Takaken's classes do not exist (serial-d4 counts those boards so too); at
                larger N only a check of that kernel
==============  ===========================================================================
"""

from __future__ import annotations

import numpy as np

from ..cuda.sources import KernelSource
from ..errors import InputError
from ..result import Measurement
from .base import Param, Strategy, block_param
from .cpu_common import cpu_module
from ..cuda.nvtx import nvtx_range
from .gpu_common import GpuSession, blocks_per_sm

KERNELS = {
    "static": "fast_static",
    "dynamic": "fast_dynamic",
    "dynamic-pop": "fast_dynamic_pop",
    "tight-u1": "fast_tight_u1",
    "tight": "fast_tight",
    "tight-u4": "fast_tight_u4",
    "tight-nola": "fast_tight_nola",
}
#: One thread, plain enumeration: N < D4_MIN_N, where the D4 kernels do not apply.
PLAIN = "plain"
PLAIN_KERNEL = "fast_plain"
D4_MIN_N = 4
TASK_WORDS = 8  # uint32 words of a task (kernels/cpu/d4.h)
MAX_DEPTH = 16


def _default_opt(n: int) -> str:
    """tight-u4"""
    # the fastest measured; below N=4 only plain counts
    return "tight-u4" if n >= D4_MIN_N else PLAIN


def _default_depth(n: int) -> int:
    """N-11, in 2..7"""
    # clamp(N-11, 2, min(7, N-2))
    return max(2, min(7, n - 11, n - 2))


def _max_depth(n: int) -> int:
    return max(2, min(MAX_DEPTH, n - 2))


def stack_levels(n: int, depth: int) -> int:
    """Rows the per-thread stack holds: N-2-depth (at least one)."""
    return max(1, n - 2 - depth)


def shared_bytes(n: int, params: dict) -> int:
    """Dynamic shared memory per block: candidates, left, right per level and thread."""
    return 3 * stack_levels(n, params["depth"]) * params["block"] * 4


class Fast(Strategy):
    name = "fast"
    order = 36
    title = "full D4 symmetry, persistent grid, warp-aggregated dynamic task fetching, tight DFS"
    reference = "Takaken's symmetry algorithm; nqprof issue 14"
    device = "gpu"
    sources = (
        KernelSource("fast.cu", cdp=False, kernels=(*KERNELS.values(), PLAIN_KERNEL),
                     check_defines={"NQ_BLOCK": 128}),
    )
    bench_max_n = 18
    params = (
        Param("opt", "ladder step; below N=4: plain", default=_default_opt,
              choices=(*KERNELS, PLAIN), range_text=f"{len(KERNELS) + 1} kernels"),
        Param("depth", "rows expanded on the host", default=_default_depth, lo=2, hi=_max_depth,
              range_text="2..min(16, N-2)"),
        block_param(128, hi=1024),
    )

    def check(self, n, params):
        if n < D4_MIN_N and params["opt"] != PLAIN:
            raise InputError(f"fast N={n}: the D4 kernels need N >= {D4_MIN_N} (Takaken's classes); "
                             f"opt=plain counts smaller boards")
        if params["block"] % 32:
            raise InputError(f"fast needs a block of whole warps (a multiple of 32), got {params['block']}")
        need = shared_bytes(n, params)
        if need > 227 * 1024:
            raise InputError(f"fast needs {need} B of shared memory per block at N={n}: use a smaller block")

    def open(self, n, params):
        return FastSession(self.name, n, params)

    def part_items(self, n, depth):
        """The D4 tasks (one row of TASK_WORDS words each, its weight inside): a cluster
        cuts these, not the mirror expansion."""
        return d4_tasks(n, depth)

    def open_part(self, n, params):
        if params["opt"] == PLAIN:
            raise InputError("fast opt=plain counts the whole board on one thread: it has no tasks to spread")
        return FastPart(self.name, n, params)


def d4_tasks(n: int, depth: int) -> np.ndarray:
    """The host expansion of both of Takaken's kinds to row ``depth`` (nqprof._cpu.d4_tasks),
    one task a row."""
    raw = cpu_module().d4_tasks(n, depth)
    return np.frombuffer(raw, dtype=np.uint32).reshape(-1, TASK_WORDS)


class FastSession(GpuSession):
    #: Upload the whole expansion when opened (a part session is given its slices instead).
    whole = True

    def __init__(self, name, n, params):
        super().__init__(name, n, params)
        import pycuda.driver as drv

        self.block = params["block"]
        module = self.build(STRATEGY.sources[0], {"NQ_BLOCK": self.block})
        self.plain = params["opt"] == PLAIN
        if self.plain:
            self.func = module.function(PLAIN_KERNEL)
            self.out = self.counter(2)
            self.notes.append("plain enumeration on one GPU thread, no symmetry"
                              + (f" (N < {D4_MIN_N}: no D4 classes)" if n < D4_MIN_N else ""))
            return
        kernel = KERNELS[params["opt"]]
        self.func = module.function(kernel)
        if self.whole:
            self.upload_tasks(d4_tasks(n, params["depth"]))
        self.levels = stack_levels(n, params["depth"])
        self.dynamic = shared_bytes(n, params)
        module.kernels[kernel]["dynamic_shared_bytes"] = self.dynamic
        self.allow_shared(self.func, self.dynamic)
        dev = drv.Context.get_device()
        sms = dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        per_sm = blocks_per_sm(self.block, self.func.num_regs, self.dynamic, self.func.shared_size_bytes)
        if per_sm < 1:
            raise InputError(f"fast N={n}: a block of {self.block} does not fit on a multiprocessor (use a smaller block)")
        self.grid = (sms * per_sm, 1)  # persistent: every lane refills itself
        self.next = self.drv.mem_alloc(4)
        self.out = self.counter(2)
        self.notes.append(
            (f"{self.ntasks} tasks" if self.whole else "slices of the tasks")
            + f" at depth {params['depth']}, persistent grid {self.grid[0]} x {self.block}"
        )

    def upload_tasks(self, tasks: np.ndarray) -> None:
        self.ntasks = len(tasks)
        with nvtx_range(f"{self.name} N={self.n} upload {self.ntasks} tasks"):
            self.tasks = self.drv.to_device(np.ascontiguousarray(tasks if len(tasks) else np.zeros((1, TASK_WORDS), np.uint32)))

    def run_once(self) -> Measurement:
        self.drv.memset_d32(self.out, 0, 4)
        if self.plain:
            with self.generation(0) as timer:
                self.func(np.int32(self.n), self.out, block=(1, 1, 1), grid=(1, 1))
            return self._measured(timer)
        self.drv.memset_d32(self.next, 0, 1)
        with self.generation(0) as timer:
            self.func(
                self.tasks, np.uint32(self.ntasks), np.int32(self.n), np.int32(self.levels), self.next, self.out,
                block=(self.block, 1, 1), grid=self.grid, shared=self.dynamic,
            )
        return self._measured(timer)

    def _measured(self, timer) -> Measurement:
        count = int(self.read_u64(self.out, 2)[0])
        self.ran()
        return Measurement(count=count, wall_s=timer.wall_seconds, gpu_s=timer.seconds)


class FastPart(FastSession):
    """Counts slices of the D4 tasks (nqprof.cluster): built once; each slice is uploaded and
    counted in one generation (its count carries the tasks' weights)."""

    whole = False

    def count_part(self, tasks: np.ndarray) -> Measurement:
        self.upload_tasks(tasks)
        return self.run_once()


STRATEGY = Fast()
