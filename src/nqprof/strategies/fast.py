"""fast: start constellations, a persistent grid and dynamic load balancing inside the GPU
(kernels/constellation.cu).

The host (``nqprof._cpu.cst_tasks``, the C generator the CPU strategy serial-d4 uses)
enumerates the frames of the board (the queens of the first and last row and column),
keeps one frame per D4 class with its orbit size as weight and places ``depth`` more
queens on free rows; each task is 4 words. A persistent grid works through the tasks,
each lane taking the next one from a global index with one atomic per warp; the per-task
search is the header function the CPU runs (kernels/cpu/constellations.h): a plain
bitmask DFS over the free rows, no symmetry test per node, the last free row counted by
popc. ``opt`` selects the kernel:

==================  ===========================================================================
``cst``             the constellation kernel (the default)
``tight-u4``        the previous default, Takaken's BOUND1/BOUND2 rules checked inside the DFS
                    (kernels/fast.cu, tasks from ``nqprof._cpu.d4_tasks``, depth 2..min(16,
                    N-2), N >= 4): the reference it is measured against
==================  ===========================================================================
"""

from __future__ import annotations

import time

import numpy as np

from ..cuda.sources import KernelSource
from ..errors import InputError
from ..result import Measurement
from .base import Param, Strategy, block_param
from .cpu_common import CST_TASK_WORDS, constellation_tasks, cpu_module
from ..cuda.nvtx import nvtx_range
from .gpu_common import GpuSession

#: opt -> kernel
KERNELS = {"cst": "constellation", "tight-u4": "fast_tight_u4"}
DEFAULT = "cst"
TASK_WORDS = CST_TASK_WORDS
D4_TASK_WORDS = 8  # uint32 words of a tight-u4 task (kernels/cpu/d4.h)
D4_MIN_N = 4
D4_MAX_DEPTH = 16
MAX_N = 27


def _default_depth(n: int) -> int:
    """5, 3 or 4 by N"""
    # The fastest of depth sweeps on an H200 (CUDA-event time, medians of 3 or 5), with the
    # host placing at most 5 queens beyond the frame (deeper, the host does the search: at
    # N=15 depth 9 the kernel takes 166 us and making its 1.8M tasks 0.45 s). Small N is
    # the length of the longest task (N=14: depth 3 136 us, 5 87 us); from N=16 the kernel
    # is throughput-bound and fewer tasks win (N=16: 3 1.14 ms, 4 1.40 ms, 5 1.71 ms; N=18:
    # 3 37.4 ms, 4 38.7 ms; with the skipping step N=19: 3 182.7 ms, 4 188.1 ms, 5 222.1 ms;
    # N=20: 3 1.521 s, 4 1.428 s, 5 1.547 s).
    if n >= 20:
        return 4
    return 3 if n >= 16 else max(0, min(5, n - 3))


def _max_depth(n: int) -> int:
    # constellations: 0..N-3; tight-u4: 2..min(16, N-2) (checked per opt)
    return max(0, n - 3, min(D4_MAX_DEPTH, n - 2))


def stack_levels(n: int, depth: int) -> int:
    """Levels tight-u4's per-thread storage holds: N-2-depth (at least one)."""
    return max(1, n - 2 - depth)


def shared_bytes(n: int, params: dict) -> int:
    """Dynamic shared memory per block: per thread, the constellation search's storage as
    the header sizes it (nqprof._cpu.cst_stack_words: 5 words a level, at least two levels,
    and the all-ones word after the last), or 3 words a level for tight-u4 (candidates,
    left, right)."""
    if params.get("opt", DEFAULT) == "tight-u4":
        words = 3 * stack_levels(n, params["depth"])
    else:
        words = cpu_module().cst_stack_words(n, params["depth"])
    return words * params["block"] * 4


class Fast(Strategy):
    name = "fast"
    order = 36
    title = "start constellations, persistent grid, warp-aggregated dynamic task fetching"
    reference = "Preusser's Q27 and NQueensFAF (start constellations); nqprof issues 14, 23"
    device = "gpu"
    sources = (
        KernelSource("constellation.cu", cdp=False, kernels=(KERNELS["cst"],),
                     check_defines={"NQ_BLOCK": 128}),
        KernelSource("fast.cu", cdp=False, kernels=(KERNELS["tight-u4"],), check_defines={"NQ_BLOCK": 128}),
    )
    bench_max_n = 18
    params = (
        Param("opt", "kernel", default=DEFAULT, choices=tuple(KERNELS), range_text=f"{len(KERNELS)} kernels"),
        Param("depth", "host queens: 3 at N>=16, 4 at 20+", default=_default_depth, lo=0, hi=_max_depth,
              range_text="0..N-3"),
        block_param(128, hi=1024),
    )

    def check(self, n, params):
        depth = params["depth"]
        if params["opt"] == "tight-u4":
            if n < D4_MIN_N:
                raise InputError(f"fast N={n}: tight-u4 needs N >= {D4_MIN_N} (Takaken's classes)")
            if not 2 <= depth <= min(D4_MAX_DEPTH, n - 2):
                raise InputError(f"fast tight-u4 N={n}: depth must be in 2..{min(D4_MAX_DEPTH, n - 2)}, got {depth}")
        else:
            if n > MAX_N:
                raise InputError(f"fast N={n}: the constellation tasks need N <= {MAX_N}")
            if depth > max(0, n - 3):
                raise InputError(f"fast N={n}: depth must be in 0..{max(0, n - 3)}, got {depth}")
        if params["block"] % 32:
            raise InputError(f"fast needs a block of whole warps (a multiple of 32), got {params['block']}")
        need = shared_bytes(n, params)
        if need > 227 * 1024:
            raise InputError(f"fast needs {need} B of shared memory per block at N={n}: use a smaller block")

    def open(self, n, params):
        return FastSession(self.name, n, params)

    def part_items(self, n, depth):
        """The constellation tasks (one row of TASK_WORDS words each, its weight inside): a
        cluster cuts these, not the mirror expansion."""
        return constellation_tasks(n, depth)

    def open_part(self, n, params):
        if params["opt"] != DEFAULT:
            raise InputError(f"fast opt={params['opt']}: a cluster cuts the constellation tasks; use opt={DEFAULT}")
        return FastPart(self.name, n, params)


def d4_tasks(n: int, depth: int) -> np.ndarray:
    """tight-u4's tasks: the host expansion of Takaken's two kinds to row ``depth``
    (nqprof._cpu.d4_tasks), one task a row."""
    raw = cpu_module().d4_tasks(n, depth)
    return np.frombuffer(raw, dtype=np.uint32).reshape(-1, D4_TASK_WORDS)


class FastSession(GpuSession):
    #: Upload the whole task array when opened (a part session is given its slices instead).
    whole = True

    def __init__(self, name, n, params):
        super().__init__(name, n, params)
        self.block = params["block"]
        self.opt = params["opt"]
        self.d4 = self.opt == "tight-u4"
        source = STRATEGY.sources[1 if self.d4 else 0]
        module = self.build(source, {"NQ_BLOCK": self.block})
        kernel = KERNELS[self.opt]
        self.func = module.function(kernel)
        self.words = D4_TASK_WORDS if self.d4 else TASK_WORDS
        made = ""
        if self.whole:
            t0 = time.perf_counter()
            tasks = (d4_tasks if self.d4 else constellation_tasks)(n, params["depth"])
            made = f" (made on the host in {(time.perf_counter() - t0) * 1e3:.1f} ms, outside the rounds)"
            self.upload_tasks(tasks)
        self.levels = stack_levels(n, params["depth"])
        self.dynamic = shared_bytes(n, params)
        module.kernels[kernel]["dynamic_shared_bytes"] = self.dynamic
        self.allow_shared(self.func, self.dynamic)
        sms = self.gpu.facts["sm_count"]
        per_sm = self.resident_blocks(self.func, self.block, self.dynamic)
        if per_sm < 1:
            raise InputError(f"fast N={n}: a block of {self.block} does not fit on a multiprocessor (use a smaller block)")
        self.resident = sms * per_sm  # blocks the device holds at once
        self.next = self.drv.mem_alloc(4)
        self.out = self.counter(2)
        blocks = self.grid[0] if self.whole else f"up to {self.resident}"
        self.notes.append(
            (f"{self.ntasks} tasks{made}" if self.whole else "slices of the tasks")
            + f" at depth {params['depth']}, persistent grid {blocks} x {self.block}"
            + f" ({per_sm} blocks per SM by occupancy, {self.func.num_regs} registers)"
        )

    @property
    def grid(self) -> tuple[int, int]:
        """Persistent: every lane refills itself, so the device's resident blocks, but no
        more blocks than the tasks fill (a small N runs few tasks)."""
        return (max(1, min(self.resident, -(-self.ntasks // self.block))), 1)

    def upload_tasks(self, tasks: np.ndarray) -> None:
        self.ntasks = len(tasks)
        with nvtx_range(f"{self.name} N={self.n} upload {self.ntasks} tasks"):
            self.tasks = self.drv.to_device(
                np.ascontiguousarray(tasks if len(tasks) else np.zeros((1, self.words), np.uint32)))

    def run_once(self) -> Measurement:
        self.drv.memset_d32(self.out, 0, 4)
        self.drv.memset_d32(self.next, 0, 1)
        if self.d4:
            args = (self.tasks, np.uint32(self.ntasks), np.int32(self.n), np.int32(self.levels), self.next, self.out)
        else:
            args = (self.tasks, np.uint32(self.ntasks), np.int32(self.n), self.next, self.out)
        with self.generation(0) as timer:
            self.func(*args, block=(self.block, 1, 1), grid=self.grid, shared=self.dynamic)
        count = int(self.read_u64(self.out, 2)[0])
        self.ran()
        return Measurement(count=count, wall_s=timer.wall_seconds, gpu_s=timer.seconds)


class FastPart(FastSession):
    """Counts slices of the constellation tasks (nqprof.cluster): built once; each slice is
    uploaded and counted in one generation (its count carries the tasks' weights)."""

    whole = False

    def count_part(self, tasks: np.ndarray) -> Measurement:
        self.upload_tasks(tasks)
        return self.run_once()


STRATEGY = Fast()
