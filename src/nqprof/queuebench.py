"""`nqprof queue-bench`: the GPU queue microbenchmark of Kerbl et al. (their Fig. 1).

Each thread does ``iters`` (10) enqueue/dequeue pairs (``balanced``, the paper's setup), or
(``unbalanced``) even warps only enqueue and odd warps only dequeue, so that a small queue
really runs full and empty. Thread counts go from 1K up to several times what the GPU holds
at once. Every queue of kernels/queue_bench.cu (bq, bwd, gottlieb, ring) at every element
size (4, 8, 16 bytes). A configuration is timed with CUDA events around the kernel (the
queue's reset is outside), the median of ``repeats`` runs after one warm-up.

The results are :class:`BenchRow` records: rendered as a plain-text table, drawn as a
figure like the paper's Fig. 1 (time against threads, one line per queue), saved to and
loaded from JSON (tests/data/queue-bench-h200.json is one, measured on an H200 host), so
that tables and figures are tested without a GPU.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .cuda.sources import KernelSource
from .errors import InputError
from .rounds import median
from .textfmt import plural

QUEUES = ("bq", "bwd", "gottlieb", "ring")
QUEUE_TITLES = {
    "bq": "Broker Queue",
    "bwd": "Broker Work Distributor",
    "gottlieb": "Gottlieb FAA queue",
    "ring": "CAS ring buffer",
}
ELEMENT_BYTES = (4, 8, 16)
VARIANTS = ("balanced", "unbalanced")
ITERATIONS = 10

#: The microbenchmark's kernels (nqprof.catalog lists them with the strategies' kernels).
SOURCES = (
    KernelSource(
        "queue_bench.cu",
        cdp=False,
        kernels=tuple(
            f"qb_{kind}_{queue}_{size}"
            for queue in QUEUES
            for size in ELEMENT_BYTES
            for kind in ("init", "balanced", "unbalanced", "enqueue_only", "dequeue_only")
        ),
    ),
)

# --- the statistics words: the same numbers as kernels/queue_bench.cu (a test compares them) ---
ENQ_OK, DEQ_OK, FULL, EMPTY, STUCK, CORRUPT, ID_SUM, GAVE_UP = range(8)
WORDS = 8

#: Capacity of the balanced runs (holds every element of 2M threads) and of the unbalanced ones.
BALANCED_CAPACITY = 1 << 21
UNBALANCED_CAPACITY = 1024


@dataclass(frozen=True)
class BenchRow:
    variant: str
    queue: str
    bytes: int
    threads: int
    capacity: int
    ms: float  # median kernel time
    full: int = 0  # FULL reports of the last timed run
    empty: int = 0
    iters: int = ITERATIONS
    #: The conditions of its rounds (nqprof.conditions: CPU, and the GPU's clocks and
    #: throttling) and the rule that stopped them; empty in results saved before.
    conditions: dict[str, Any] = field(default_factory=dict)
    criterion: str = ""

    @property
    def operations(self) -> int:
        """Queue operations done (an enqueue or a dequeue each)."""
        return self.threads * self.iters * (2 if self.variant == "balanced" else 1)

    @property
    def ns_per_op(self) -> float:
        return self.ms * 1e6 / self.operations


@dataclass
class BenchResult:
    rows: list[BenchRow]
    device: dict[str, Any] = field(default_factory=dict)
    toolkit: dict[str, Any] = field(default_factory=dict)
    method: str = ""

    def to_json(self) -> str:
        return json.dumps(
            {
                "device": self.device,
                "toolkit": self.toolkit,
                "method": self.method,
                "rows": [asdict(r) for r in self.rows],
            },
            indent=1,
        )

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")


def load(path: str | Path) -> BenchResult:
    """A saved benchmark (JSON); :class:`InputError` if it is not one."""
    from .files import read_json, reading

    try:
        data = read_json(path, "queue-bench run")
    except InputError as exc:
        why = str(exc).removeprefix(f"queue-bench run {path} ")
        raise InputError(f"{path}: not an nqprof queue-bench result ({why})") from None
    try:
        rows = [BenchRow(**r) for r in data["rows"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not an nqprof queue-bench result ({exc})") from None
    with reading(path, "queue-bench run"):
        for r in rows:
            check_choice(r.queue, QUEUES, "queue")
            check_choice(r.variant, VARIANTS, "variant")
            for name in ("threads", "bytes"):
                if type(getattr(r, name)) is not int or getattr(r, name) < 1:
                    raise InputError(f"row {name} {getattr(r, name)!r} is not a positive integer")
            if not isinstance(r.ms, (int, float)) or isinstance(r.ms, bool) or not r.ms >= 0:
                raise InputError(f"row ms {r.ms!r} is not a time")
        device, toolkit = data.get("device", {}), data.get("toolkit", {})
        if not isinstance(device, dict) or not isinstance(toolkit, dict):
            raise InputError("device and toolkit must be JSON objects")
        return BenchResult(rows, device, toolkit, str(data.get("method", "")))


def check_choice(value: str, allowed: Sequence[str], what: str) -> str:
    if value not in allowed:
        raise InputError(f"unknown {what} {value!r} (known: {', '.join(allowed)})")
    return value


def thread_counts(resident: int, fill: int = 4, start: int = 1024) -> list[int]:
    """1K, 2K, 4K, ... up to the first power of two at least ``fill`` times ``resident``."""
    if resident < 1 or fill < 1:
        raise InputError(f"thread_counts needs resident >= 1 and fill >= 1, got {resident}, {fill}")
    counts = [start]
    while counts[-1] < fill * resident:
        counts.append(counts[-1] * 2)
    return counts


def select(
    rows: Iterable[BenchRow],
    variant: str | None = None,
    bytes: int | None = None,
    queue: str | None = None,
):
    return [
        r
        for r in rows
        if (variant is None or r.variant == variant)
        and (bytes is None or r.bytes == bytes)
        and (queue is None or r.queue == queue)
    ]


# --- output ------------------------------------------------------------------------------------


def table(rows: Sequence[BenchRow], variant: str = "balanced", bytes: int = 16) -> str:
    """Time (ms) and ns per operation, a row per thread count and a column pair per queue."""
    from .textfmt import table as render

    rows = select(rows, variant, bytes)
    if not rows:
        return f"(no {variant} rows for {bytes}-byte elements)"
    queues = [q for q in QUEUES if any(r.queue == q for r in rows)]
    by = {(r.queue, r.threads): r for r in rows}
    header = ["threads"] + [f"{q} ms" for q in queues] + [f"{q} ns/op" for q in queues]
    body = []
    for t in sorted({r.threads for r in rows}):
        cells = [f"{t:,}"]
        cells += [f"{by[q, t].ms:.3f}" if (q, t) in by else "-" for q in queues]
        cells += [f"{by[q, t].ns_per_op:.3f}" if (q, t) in by else "-" for q in queues]
        body.append(cells)
    title = f"{variant}, {bytes}-byte elements, {ITERATIONS} operations per thread and direction"
    return title + "\n" + render(header, body, right_align_numbers=True)


def speedups(
    rows: Sequence[BenchRow], over: str, of: str = "bq", variant: str = "balanced", bytes: int = 16
):
    """(threads, time(over) / time(of)) where both were measured."""
    a = {r.threads: r.ms for r in select(rows, variant, bytes, of)}
    b = {r.threads: r.ms for r in select(rows, variant, bytes, over)}
    return [(t, b[t] / a[t]) for t in sorted(a) if t in b and a[t] > 0]


def figure(
    rows: Sequence[BenchRow], path: str | Path, variant: str = "balanced", title: str | None = None
):
    """Like the paper's Fig. 1: kernel time against threads (log-log), one line per queue, a
    panel per element size. Writes ``path`` and returns it."""
    from .analysis.figures import log_panels

    sizes = [b for b in ELEMENT_BYTES if select(rows, variant, b)]
    if not sizes:
        raise InputError(f"no {variant} rows to draw")
    panels = {
        f"{b}-byte elements": {
            QUEUE_TITLES[q]: sorted((r.threads, r.ms) for r in select(rows, variant, b, q))
            for q in QUEUES
        }
        for b in sizes
    }
    if title is None:
        title = (
            f"{variant}: {ITERATIONS} enqueue/dequeue pairs per thread"
            if variant == "balanced"
            else f"{variant}: producers and consumers, capacity {UNBALANCED_CAPACITY}"
        )
    return log_panels(panels, path, title, xlabel="threads", ylabel="time (ms)", logx=2)


# --- running on the GPU ------------------------------------------------------------------------


class QueueBench:
    """The microbenchmark kernels, built and loaded (needs PyCUDA and a GPU)."""

    def __init__(self):
        from .cuda.build import build
        from .cuda.device import GpuContext

        self.gpu = GpuContext()
        self.drv = self.gpu.drv
        self.module = build(SOURCES[0])
        self.stats = self.drv.mem_alloc(8 * WORDS)
        self._mem = None
        self._mem_bytes = 0
        self._seen = None
        self._seen_n = 0

    def close(self):
        self.gpu.close()

    def kernel(self, kind: str, queue: str, bytes: int):
        return self.module.module.get_function(f"qb_{kind}_{queue}_{bytes}")

    def resident(self, kind: str, queue: str, bytes: int, block: int = 128) -> int:
        from .strategies.gpu_common import blocks_per_sm

        func = self.kernel(kind, queue, bytes)
        limits = self.gpu.facts["sm_limits"]
        return (
            blocks_per_sm(block, func.num_regs, 0, func.shared_size_bytes, limits)
            * block
            * self.gpu.facts["sm_count"]
        )

    def _buffers(self, capacity: int, bytes: int, ids: int):
        from .strategies.queue import QUEUE_HEADER_BYTES

        need = ((QUEUE_HEADER_BYTES + 4 * capacity + 15) // 16) * 16 + bytes * capacity
        if need > self._mem_bytes:
            self._mem = self.drv.mem_alloc(need)
            self._mem_bytes = need
        if ids > self._seen_n:
            self._seen = self.drv.mem_alloc(4 * ids)
            self._seen_n = ids
        return need

    def reset(self, queue: str, bytes: int, capacity: int, ids: int = 1):
        import numpy as np

        need = self._buffers(capacity, bytes, ids)
        self.drv.memset_d8(self._mem, 0, need)
        self.drv.memset_d32(self.stats, 0, 2 * WORDS)
        self.kernel("init", queue, bytes)(
            self._mem,
            np.uint32(capacity),
            block=(256, 1, 1),
            grid=(max(1, min(1024, -(-capacity // 256))), 1),
        )

    def read_stats(self):
        import numpy as np

        host = np.empty(WORDS, dtype=np.uint64)
        self.drv.memcpy_dtoh(host, self.stats)
        return [int(x) for x in host]

    def read_seen(self, n: int):
        import numpy as np

        host = np.empty(n, dtype=np.uint32)
        self.drv.memcpy_dtoh(host, self._seen)
        return host

    def run(
        self,
        variant: str,
        queue: str,
        bytes: int,
        threads: int,
        capacity: int,
        iters: int = ITERATIONS,
        check: bool = False,
    ) -> float:
        """One launch; returns its CUDA-event time in ms (the queue reset before it, untimed)."""
        import numpy as np

        from .cuda.device import EventTimer

        ids = threads * iters if check else 1
        self.reset(queue, bytes, capacity, ids)
        if check:
            self.drv.memset_d32(self._seen, 0, ids)
        func = self.kernel(variant, queue, bytes)
        timer = EventTimer(self.drv)
        with timer:
            func(
                self._mem,
                np.uint32(capacity),
                np.uint32(threads),
                np.uint32(iters),
                self.stats,
                self._seen,
                np.int32(1 if check else 0),
                block=(128, 1, 1),
                grid=(-(-threads // 128), 1),
            )
        return timer.seconds * 1e3

    def fill(self, queue: str, bytes: int, capacity: int, threads: int) -> list[int]:
        """Reset the queue, then ``threads`` threads enqueue their id once each; the stats."""
        import numpy as np

        self.reset(queue, bytes, capacity, threads)
        self.kernel("enqueue_only", queue, bytes)(
            self._mem,
            np.uint32(capacity),
            np.uint32(threads),
            self.stats,
            block=(128, 1, 1),
            grid=(-(-threads // 128), 1),
        )
        return self.read_stats()

    def drain(self, queue: str, bytes: int, capacity: int, threads: int, limit: int):
        """``threads`` threads dequeue once each from the queue as it is; (stats, seen[:limit])."""
        import numpy as np

        self._buffers(capacity, bytes, limit)
        self.drv.memset_d32(self.stats, 0, 2 * WORDS)
        self.drv.memset_d32(self._seen, 0, limit)
        self.kernel("dequeue_only", queue, bytes)(
            self._mem,
            np.uint32(capacity),
            np.uint32(threads),
            np.uint32(limit),
            self.stats,
            self._seen,
            block=(128, 1, 1),
            grid=(-(-threads // 128), 1),
        )
        return self.read_stats(), self.read_seen(limit)

    def measure(self, variant, queue, bytes, threads, capacity, repeats=3) -> BenchRow:
        """The median of ``repeats`` launches after one warm-up, through nqprof's round loop
        (its conditions and criterion in the row); a launch with an operation stuck or a
        thread that gave up fails the row (DeviceFailureError)."""
        from .errors import DeviceFailureError
        from .runner import RoundLoop
        from .runners import InProcessRunner

        def one_round():
            ms = self.run(variant, queue, bytes, threads, capacity)
            s = self.read_stats()
            if s[STUCK] or s[GAVE_UP]:
                raise DeviceFailureError(
                    f"queue-bench {variant} {queue} {bytes} B at {plural(threads, 'thread')}: "
                    f"{plural(s[STUCK], 'operation')} stuck, {plural(s[GAVE_UP], 'thread')} gave "
                    "up; the timing is discarded"
                )
            return ms, s

        runner = InProcessRunner("queue-bench", one_round, self.gpu.facts)
        loop = RoundLoop(runner, repeats, 1, statistic=lambda reading: reading[0] / 1e3)
        loop.keep_spare = False  # no spare worker's context beside this process's kernels
        readings = loop.run()
        s = readings[-1][1]
        return BenchRow(
            variant,
            queue,
            bytes,
            threads,
            capacity,
            median([ms for ms, _ in readings]),
            s[FULL],
            s[EMPTY],
            conditions=loop.conditions,
            criterion=loop.describe(),
        )


def run_benchmark(
    queues=QUEUES,
    sizes=ELEMENT_BYTES,
    variants=VARIANTS,
    fill: int = 4,
    repeats: int = 3,
    slow_ms: float = 400.0,
    progress=None,
) -> BenchResult:
    """The whole sweep. A queue's larger thread counts are skipped once one takes over
    ``slow_ms`` (the CAS ring slows by orders of magnitude under contention:
    docs/results/queue-h200.md)."""
    for q in queues:
        check_choice(q, QUEUES, "queue")
    for v in variants:
        check_choice(v, VARIANTS, "variant")
    bench = QueueBench()
    rows: list[BenchRow] = []
    try:
        for variant in variants:
            for q in queues:
                for b in sizes:
                    resident = bench.resident(variant, q, b)
                    if variant == "balanced":
                        counts, cap = thread_counts(resident, fill), BALANCED_CAPACITY
                    else:  # every thread resident: a consumer waits for producers that must run
                        top = resident // 64 * 64
                        counts = [t for t in thread_counts(resident, 1) if t < top] + [top]
                        cap = UNBALANCED_CAPACITY
                    for t in counts:
                        row = bench.measure(variant, q, b, t, cap, repeats)
                        rows.append(row)
                        if progress:
                            progress(row)
                        if row.ms > slow_ms:
                            break
        facts = bench.gpu.facts
        toolkit = {"version": bench.module.toolkit_version, "arch": bench.module.arch}
    finally:
        bench.close()
    method = (
        f"CUDA events around one kernel, median of {repeats} after a warm-up; block 128; balanced "
        f"capacity {BALANCED_CAPACITY}, unbalanced capacity {UNBALANCED_CAPACITY}"
    )
    return BenchResult(rows, facts, toolkit, method)
