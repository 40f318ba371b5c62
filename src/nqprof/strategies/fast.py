"""fast: start constellations, a persistent grid and dynamic load balancing inside the GPU
(kernels/constellation.cu).

The host (``nqprof._cpu.cst_tasks(n, 0)``, the C generator the CPU strategy serial-d4
uses) enumerates the frames of the board (the queens of the first and last row and
column) and keeps one frame per D4 class with its orbit size as weight: a few thousand
frames, one task each. The GPU splits each frame ``depth`` queens deeper into the tasks it
counts (``cst_split_count`` and ``cst_split_write``, one thread a frame: the header's
``nq_cst_split``, the same function the host's generator runs, so the tasks are the
host's, in its order), so the tasks are made where they are counted and never cross the
bus. A persistent grid works through the tasks, each lane taking the next one from a
global index with one atomic per warp; the per-task search is the header function the
CPU runs (kernels/cpu/constellations.h): a plain bitmask DFS over the free rows, no
symmetry test per node, the last free row counted by popc. ``opt`` selects the kernel:

==================  ===========================================================================
``cst``             the constellation kernel (the default)
``tight-u4``        the previous default, Takaken's BOUND1/BOUND2 rules checked inside the DFS
                    (kernels/fast.cu, tasks made on the host by ``nqprof._cpu.d4_tasks``, depth
                    2..min(16, N-2), N >= 4): the reference it is measured against
==================  ===========================================================================
"""

from __future__ import annotations

import time

from ..cuda.nvtx import nvtx_range
from ..cuda.sources import KernelSource
from ..errors import DeviceFailureError, InputError
from ..problem import known_count
from ..result import Measurement
from . import block_records, placement
from .base import Param, Strategy, block_param
from .cpu_common import CST_TASK_WORDS, constellation_nodes, constellation_tasks, cpu_module
from .gpu_common import DYNAMIC_SHARED_LIMIT_SM90, GpuSession

#: opt -> kernel
KERNELS = {"cst": "constellation", "tight-u4": "fast_tight_u4"}
#: The GPU's task generator (kernels/constellation.cu): task counts per frame, then tasks.
SPLIT_KERNELS = ("cst_split_count", "cst_split_write")
#: Threads per block of the generator's kernels (one thread a frame).
SPLIT_BLOCK = 128
#: What a short round's session places (strategies.placement), as its notes name it.
PLACED = "task index, result counters and task list"
DEFAULT = "cst"
TASK_WORDS = CST_TASK_WORDS
D4_TASK_WORDS = 8  # uint32 words of a tight-u4 task (kernels/cpu/d4.h)
D4_MIN_N = 4
D4_MAX_DEPTH = 16
MAX_N = 27


def check_counting(name: str, n: int, params: dict, shared_of) -> None:
    """The limits of the constellation counting kernel, for fast and the strategies that
    count with it: N, the depth of the tasks, whole warps, the shared memory a block takes
    (``shared_of(n, params)`` bytes, asked once N and the depth are known to be good)."""
    if n > MAX_N:
        raise InputError(f"{name} N={n}: the constellation tasks need N <= {MAX_N}")
    if params["depth"] > max(0, n - 3):
        raise InputError(
            f"{name} N={n}: depth must be in 0..{max(0, n - 3)}, got {params['depth']}"
        )
    check_block(name, n, params["block"], shared_of(n, params))


def check_block(name: str, n: int, block: int, shared: int) -> None:
    if block % 32:
        raise InputError(f"{name} needs a block of whole warps (a multiple of 32), got {block}")
    if shared > DYNAMIC_SHARED_LIMIT_SM90:
        raise InputError(
            f"{name} needs {shared} B of shared memory per block at N={n}: use a smaller block"
        )


def split_counts(drv, func, frames_dev, count: int, n: int, depth: int):
    """Each of ``count`` frames' tasks ``depth`` queens deeper, counted on the GPU by
    ``func`` (``cst_split_count``, one thread a frame): a host array of uint32."""
    import numpy as np

    counts = drv.mem_alloc(4 * max(1, count))
    func(
        frames_dev,
        np.uint32(count),
        np.int32(n),
        np.int32(depth),
        counts,
        block=(SPLIT_BLOCK, 1, 1),
        grid=GpuSession.grid_for(count, SPLIT_BLOCK),
    )
    per_frame = np.empty(count, np.uint32)
    drv.memcpy_dtoh(per_frame, counts)
    counts.free()
    return per_frame


def _default_depth(n: int) -> int:
    """5, 3 or 4 by N"""
    # The fastest of the depth sweeps in docs/results/fast-ladder.md (numbers in
    # docs/results/defaults-h200.md), with the host placing at most 5 queens beyond the frame
    # (deeper, the host does the search). Small N is the length of the longest task; from
    # N=16 the kernel is throughput-bound and fewer tasks win.
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


#: The largest N whose nodes fast's record states: the CPU twin counts them on the host,
#: whose time grows about sixfold an N.
FAST_TWIN_MAX_N = 17


class Fast(Strategy):
    name = "fast"
    order = 36
    title = "start constellations, persistent grid, warp-aggregated dynamic task fetching"
    reference = "Preusser's Q27 and NQueensFAF (start constellations); nqprof issues 14, 23"
    device = "gpu"
    sources = (
        KernelSource(
            "constellation.cu",
            cdp=False,
            kernels=(KERNELS["cst"], *SPLIT_KERNELS),
            check_defines={"NQ_BLOCK": 128},
        ),
        KernelSource(
            "fast.cu", cdp=False, kernels=(KERNELS["tight-u4"],), check_defines={"NQ_BLOCK": 128}
        ),
    )
    bench_max_n = 18
    params = (
        Param(
            "opt",
            "kernel",
            default=DEFAULT,
            choices=tuple(KERNELS),
            range_text=f"{len(KERNELS)} kernels",
        ),
        Param(
            "depth",
            "host queens: 3 at N>=16, 4 at 20+",
            default=_default_depth,
            lo=0,
            hi=_max_depth,
            range_text="0..N-3",
        ),
        block_param(128, hi=1024),
        block_records.records_param(),
    )

    def check(self, n, params):
        depth = params["depth"]
        if params["opt"] == "tight-u4":
            if params["blocks"]:
                raise InputError("fast: blocks=1 needs the constellation kernel (opt=cst)")
            if n < D4_MIN_N:
                raise InputError(f"fast N={n}: tight-u4 needs N >= {D4_MIN_N} (Takaken's classes)")
            if not 2 <= depth <= min(D4_MAX_DEPTH, n - 2):
                raise InputError(
                    f"fast tight-u4 N={n}: depth must be in "
                    f"2..{min(D4_MAX_DEPTH, n - 2)}, got {depth}"
                )
            check_block("fast", n, params["block"], shared_bytes(n, params))
        else:
            check_counting("fast", n, params, shared_bytes)

    def open(self, n, params):
        return FastSession(self.name, n, params)

    part_unit = "frames"

    def part_items(self, n, depth):
        """The frames (one task of TASK_WORDS words each, its weight inside; the tasks of
        depth 0): a cluster cuts these, and each worker's GPU splits its frames ``depth``
        deeper itself."""
        return constellation_tasks(n, 0)

    def open_part(self, n, params):
        if params["opt"] != DEFAULT:
            raise InputError(
                f"fast opt={params['opt']}: a cluster cuts "
                f"the constellation tasks; use opt={DEFAULT}"
            )
        return FastPart(self.name, n, params)


def d4_tasks(n: int, depth: int):
    """tight-u4's tasks: the host expansion of Takaken's two kinds to row ``depth``
    (nqprof._cpu.d4_tasks), one task a row."""
    import numpy as np

    raw = cpu_module().d4_tasks(n, depth)
    return np.frombuffer(raw, dtype=np.uint32).reshape(-1, D4_TASK_WORDS)


class FastSession(GpuSession):
    #: Make the whole task list when opened (a part session is given its frames instead).
    whole = True

    def __init__(self, name, n, params):
        super().__init__(name, n, params)
        self.block = params["block"]
        self.opt = params["opt"]
        self.depth = params["depth"]
        self.d4 = self.opt == "tight-u4"
        source = STRATEGY.sources[1 if self.d4 else 0]
        module = self.build(source, {"NQ_BLOCK": self.block, **block_records.defines(params)})
        kernel = KERNELS[self.opt]
        self.func = module.function(kernel)
        if not self.d4:
            self.split_count, self.split_write = (module.function(k) for k in SPLIT_KERNELS)
        self.words = D4_TASK_WORDS if self.d4 else TASK_WORDS
        self.tasks, self.ntasks, self.making = None, 0, {}
        if self.whole:
            if self.d4:
                self.host_tasks(n, params["depth"])
            else:
                t0 = time.perf_counter()
                frames = constellation_tasks(n, 0)
                self.make_tasks(frames, frames_s=time.perf_counter() - t0)
        self.levels = stack_levels(n, params["depth"])
        self.dynamic = shared_bytes(n, params)
        module.kernels[kernel]["dynamic_shared_bytes"] = self.dynamic
        self.allow_shared(self.func, self.dynamic)
        sms = self.gpu.facts["sm_count"]
        per_sm = self.resident_blocks(self.func, self.block, self.dynamic)
        if per_sm < 1:
            raise InputError(
                f"fast N={n}: a block of {self.block} does not "
                "fit on a multiprocessor (use a smaller block)"
            )
        self.resident = sms * per_sm  # blocks the device holds at once
        self.records = (
            block_records.BlockRecords(self.drv, module.module, self.resident)
            if params.get("blocks")
            else None
        )
        self.next = self.drv.mem_alloc(4)
        self.out = self.counter(2)
        blocks = self.grid[0] if self.whole else f"up to {self.resident}"
        self.notes.append(
            (self.making_note() if self.whole else "frames in slices, split on the GPU")
            + f" at depth {params['depth']}, persistent grid {blocks} x {self.block}"
            + f" ({per_sm} blocks per SM by occupancy, {self.func.num_regs} registers)"
        )
        self.placement = None
        if self.whole and self.tasks is not None and not self.records:
            if n <= placement.LARGEST_N:
                self.placement = self.place_counters()
            else:  # not even the one round that decides: at N=20 it would cost seconds
                self.notes.append(placement.note_too_large(n, PLACED))

    def place_counters(self) -> dict:
        """The task index, the result counters and the task list where the round runs
        fastest (:mod:`nqprof.strategies.placement`); the placing rounds are verified and
        are not among the record's holds."""
        holds = dict(self.holds)
        size = self.words * 4 * max(1, self.ntasks)

        def make() -> tuple:
            tasks = self.drv.mem_alloc(size)
            self.drv.memcpy_dtod(tasks, self.tasks, size)
            return self.drv.mem_alloc(4), self.counter(2), tasks

        def use(buffers) -> None:
            self.next, self.out, self.tasks = buffers

        def measure() -> float:
            m = self.run_once()
            if m.count != known_count(self.n):
                raise DeviceFailureError(
                    f"{self.name} N={self.n}: counted {m.count} while placing its counters"
                )
            return m.gpu_s

        summary = placement.place(
            (self.next, self.out, self.tasks),
            make,
            use,
            measure,
            lambda buffers: [b.free() for b in buffers],
        )
        self.holds = holds
        self.notes.append(placement.note(summary, PLACED))
        return summary

    @property
    def grid(self) -> tuple[int, int]:
        """Persistent: every lane refills itself, so the device's resident blocks, but no
        more blocks than the tasks fill (a small N runs few tasks)."""
        return (max(1, min(self.resident, -(-self.ntasks // self.block))), 1)

    def host_tasks(self, n: int, depth: int) -> None:
        """tight-u4's tasks, made on the host and uploaded."""
        t0 = time.perf_counter()
        tasks = d4_tasks(n, depth)
        made = time.perf_counter() - t0
        self.upload_tasks(tasks)
        self.making = {
            "where": "host",
            "tasks": self.ntasks,
            "make_s": made,
            "upload_bytes": int(tasks.nbytes),
            "upload_s": time.perf_counter() - t0 - made,
            "device_bytes": int(tasks.nbytes),
        }

    def upload_tasks(self, tasks) -> None:
        import numpy as np

        self.ntasks = len(tasks)
        with nvtx_range(f"{self.name} N={self.n} upload {self.ntasks} tasks"):
            self.tasks = self.drv.to_device(
                np.ascontiguousarray(tasks if len(tasks) else np.zeros((1, self.words), np.uint32))
            )

    def make_tasks(self, frames, frames_s: float = 0.0) -> None:
        """The tasks of ``frames`` (depth-0 tasks, made on the host in ``frames_s``), split
        ``depth`` deeper on the GPU: the kernels count each frame's tasks, the host sums
        the counts into offsets, the kernels write the tasks. What it took goes to
        ``making``."""
        import numpy as np

        drv, count = self.drv, len(frames)
        t0 = time.perf_counter()
        self.tasks = None  # the previous slice's tasks are freed before the next are made
        with nvtx_range(f"{self.name} N={self.n} make tasks from {count} frames", payload=count):
            if self.depth == 0 or count == 0:
                self.upload_tasks(frames)
                offsets_bytes = 0
            else:
                frames_dev = drv.to_device(np.ascontiguousarray(frames))
                per_frame = split_counts(
                    drv, self.split_count, frames_dev, count, self.n, self.depth
                )
                offsets = np.zeros(count + 1, np.uint64)
                np.cumsum(per_frame, out=offsets[1:])
                self.ntasks = int(offsets[-1])
                if self.ntasks >= 2**32:
                    raise InputError(
                        f"fast N={self.n} depth {self.depth}: {self.ntasks} tasks are more than "
                        "the kernel's 32-bit index takes (use a smaller depth)"
                    )
                self.tasks = drv.mem_alloc(TASK_WORDS * 4 * max(1, self.ntasks))
                offsets_dev = drv.to_device(offsets)  # kept until the kernel is done with it
                self.split_write(
                    frames_dev,
                    np.uint32(count),
                    np.int32(self.n),
                    np.int32(self.depth),
                    offsets_dev,
                    self.tasks,
                    block=(SPLIT_BLOCK, 1, 1),
                    grid=self.grid_for(count, SPLIT_BLOCK),
                )
                drv.Context.synchronize()
                offsets_bytes = int(offsets.nbytes)
        self.making = {
            "where": "gpu",
            "frames": count,
            "tasks": self.ntasks,
            "frames_s": frames_s,
            "make_s": time.perf_counter() - t0,
            "upload_bytes": int(frames.nbytes) + offsets_bytes,
            "device_bytes": TASK_WORDS * 4 * self.ntasks,
        }

    def task_bytes(self) -> bytes:
        """The tasks on the device, as the host's generator writes them (for checking)."""
        import numpy as np

        host = np.empty(self.ntasks * self.words, np.uint32)
        if self.ntasks:
            self.drv.memcpy_dtoh(host, self.tasks)
        return host.tobytes()

    def making_note(self) -> str:
        m = self.making
        mib = m["device_bytes"] / 2**20
        if m["where"] == "host":
            return (
                f"{m['tasks']} tasks (made on the host in {m['make_s'] * 1e3:.1f} ms, {mib:.1f} "
                f"MiB uploaded in {m['upload_s'] * 1e3:.1f} ms, outside the rounds)"
            )
        return (
            f"{m['tasks']} tasks (split on the GPU in {m['make_s'] * 1e3:.1f} ms from "
            f"{m['frames']} frames made on the host in {m['frames_s'] * 1e3:.1f} ms, {mib:.1f} MiB "
            f"on the device, {m['upload_bytes'] / 1024:.1f} KiB uploaded, outside the rounds)"
        )

    def _round_args(self) -> tuple:
        """A round's kernel arguments, its counters (out, next) zeroed first: outside the
        timed region, whose stream hold a synchronous memset would wait behind."""
        import numpy as np

        self.drv.memset_d32(self.out, 0, 4)
        self.drv.memset_d32(self.next, 0, 1)
        tasks = self.tasks if self.tasks is not None else self.drv.mem_alloc(TASK_WORDS * 4)
        if self.d4:
            return (
                tasks,
                np.uint32(self.ntasks),
                np.int32(self.n),
                np.int32(self.levels),
                self.next,
                self.out,
            )
        return (tasks, np.uint32(self.ntasks), np.int32(self.n), self.next, self.out)

    def _launch(self, func, args: tuple) -> None:
        func(*args, block=(self.block, 1, 1), grid=self.grid, shared=self.dynamic)

    def run_once(self) -> Measurement:
        args = self._round_args()
        if self.records:
            self.records.reset()
        with self.generation(0) as timer:
            self._launch(self.func, args)
        count = int(self.read_u64(self.out, 2)[0])
        self.ran()
        stats = {"blocks": self.records.read()} if self.records else {}
        return Measurement(count=count, wall_s=timer.wall_seconds, gpu_s=timer.seconds, stats=stats)

    def count_nodes(self) -> tuple[int, int]:
        """(count, nodes): one untimed round of the counting build of the kernel
        (NQ_COUNT_NODES=1), which also adds up on the GPU the queens its lanes place below
        the tasks (out[1]); the check of the CPU twin's node count
        (tests/test_gpu_fast.py)."""
        if self.d4 or not self.whole:
            raise InputError("fast: only the constellation kernel of a whole run counts nodes")
        module = self.build(STRATEGY.sources[0], {"NQ_BLOCK": self.block, "NQ_COUNT_NODES": 1})
        func = module.function(KERNELS[self.opt])
        self.allow_shared(func, self.dynamic)
        self._launch(func, self._round_args())
        self.drv.Context.synchronize()
        count, nodes = (int(v) for v in self.read_u64(self.out, 2))
        return count, nodes

    def info(self):
        info = {**super().info(), "tasks": dict(self.making)}
        if self.placement:
            info["placement"].update(self.placement)
        if self._ran and self.whole and not self.d4:
            info["work"] = self.work()
        return info

    def work(self) -> dict:
        """The nodes (queens placed) the kernel's search visits below its tasks, as the CPU
        twin's step search counts them (it walks the same tree: tests/test_constellations.py),
        once per machine; past FAST_TWIN_MAX_N the twin would take minutes on the host, so a
        note says so instead."""
        if self.n > FAST_TWIN_MAX_N:
            return {
                "nodes_note": f"nodes not counted: the CPU twin takes minutes past "
                f"N={FAST_TWIN_MAX_N}"
            }
        return constellation_nodes(self.n, self.depth, cpu_module().cpu_count())


class FastPart(FastSession):
    """Counts slices of the frames (nqprof.cluster): built once, its context and module
    kept from slice to slice; each slice's frames are split on the GPU and counted in one
    generation (its count carries the tasks' weights)."""

    whole = False

    def count_part(self, frames) -> Measurement:
        self.make_tasks(frames)
        m = self.run_once()
        m.stats = {"tasks": dict(self.making)}
        return m


STRATEGY = Fast()
