"""queue: N-Queens load-balanced through a Broker Queue (Kerbl et al. 2018).

The non-CDP answer to the load imbalance of the host-seeded kernel. A grid of persistent
threads, sized from the SM count and the kernel's occupancy, shares one GPU queue of
boards. The host expands the first ``depth`` rows; a seeding kernel puts those boards into
the queue. A thread dequeues a board and searches its subtree with the iterative bitmask
DFS. When the queue runs low (its Count below ``threshold``) a busy thread hands out the
untried squares of its shallowest level whose subtrees still have ``split_rows`` rows, one
board each, instead of searching them alone. The run ends when the queue is empty and no
thread holds a board (a device counter of outstanding boards reaches zero).

``queue=bq`` uses the linearizable Broker Queue, ``queue=bwd`` the lighter Broker Work
Distributor (kernels/broker_queue.cuh). Device-side accounting (kernels/queue.cu): boards
seeded, dequeued and handed out, split events, FULL and EMPTY reports, BUSY retries (the
Broker Queue's broker refused a dequeue while another one was in flight), and stuck queue
operations. A stuck operation (a bounded spin that hit its cap), boards left outstanding, or
dequeues that do not match the boards put in make the run a :class:`DeviceFailureError`,
never a count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cuda.sources import KernelSource
from ..errors import DeviceFailureError, InputError
from ..result import Measurement
from ..subproblems import expand
from .base import Param, Strategy, block_param, depth_param, rows_default
from .counters import CounterLayout
from .gpu_common import DYNAMIC_SHARED_LIMIT_SM90, GpuSession

QUEUES = {"bq": "queue_search_bq", "bwd": "queue_search_bwd"}

# --- the accounting layout: the same numbers as kernels/queue.cu (a test compares them) ---
SOLUTIONS, SEEDED, DEQUEUED, ENQUEUED, SPLITS, FULL, EMPTY, STUCK, PENDING, ABORT, BUSY = range(11)
WORDS = 16
#: The layout as kernels/queue.cu defines it (QA_*).
ACCOUNTING = CounterLayout(
    "queue.cu",
    "QA_",
    {
        name: index
        for index, name in enumerate(
            (
                "SOLUTIONS",
                "SEEDED",
                "DEQUEUED",
                "ENQUEUED",
                "SPLITS",
                "FULL",
                "EMPTY",
                "STUCK",
                "PENDING",
                "ABORT",
                "BUSY",
            )
        )
    },
    WORDS,
)

#: Bytes of one board in the queue (cols, ld, rd, row as four 32-bit words).
BOARD_BYTES = 16
#: Bytes before the tickets (kernels/queue_common.cuh HEADER_BYTES).
QUEUE_HEADER_BYTES = 512
#: Shared memory of the DFS stacks per thread and level: free squares, columns, two diagonals.
STACK_BYTES_PER_LEVEL = 16
MIN_AUTO_CAPACITY = 1 << 16
MAX_CAPACITY = 1 << 28


def queue_bytes(capacity: int) -> int:
    """Device bytes of a queue of ``capacity`` boards (queue_common.cuh queue_bytes)."""
    return ((QUEUE_HEADER_BYTES + 4 * capacity + 15) // 16) * 16 + BOARD_BYTES * capacity


def auto_capacity(boards: int) -> int:
    """The smallest power of two holding twice the seeded boards (at least 64K)."""
    need = max(MIN_AUTO_CAPACITY, 2 * boards)
    return 1 << (need - 1).bit_length()


def stack_bytes(levels: int, block: int) -> int:
    return STACK_BYTES_PER_LEVEL * levels * block


class Queue(Strategy):
    name = "queue"
    order = 80
    title = "persistent threads fed by a GPU queue (Broker Queue or Broker Work Distributor)"
    reference = "Kerbl et al. 2018 (the Broker Queue)"
    device = "gpu"
    min_n = 2
    sources = (
        KernelSource(
            "queue.cu", cdp=False, kernels=("queue_seed", "queue_search_bq", "queue_search_bwd")
        ),
    )
    counters = ACCOUNTING
    bench_max_n = 17
    params = (
        # bwd by default: at N=19 on an H200 it was faster than bq (docs/results/queue-h200.md).
        Param("queue", "Broker Queue or Work Distributor", default="bwd", choices=tuple(QUEUES)),
        # 6 was the fastest host depth at N=19 on an H200, ahead of 5 and 4 (docs/results/
        # queue-h200.md). Threshold, split_rows and block barely moved the time there.
        depth_param(rows_default(6, 2), "host rows seeded into the queue"),
        block_param(128),
        Param("blocks_per_sm", "blocks per SM (0: by occupancy)", default=0, lo=0, hi=32),
        Param("threshold", "hand out below this many boards", default=4096, lo=0, hi=1 << 30),
        Param(
            "split_rows",
            "fewest rows left in a hand-out",
            default=rows_default(6, 4),
            lo=1,
            hi=lambda n: max(1, n - 1),
            range_text="1..N-1",
        ),
        Param("capacity", "queue slots, 2^k (0: 2x seeded)", default=0, lo=0, hi=MAX_CAPACITY),
    )

    def check(self, n, params):
        cap = params["capacity"]
        if cap and cap & (cap - 1):
            raise InputError(f"queue: capacity must be a power of two (or 0), got {cap}")
        levels = max(1, n - params["depth"])
        need = stack_bytes(levels, params["block"])
        if need > DYNAMIC_SHARED_LIMIT_SM90:
            raise InputError(
                f"queue: block={params['block']} needs {need} B of shared memory for its DFS "
                f"stacks at N={n}, depth={params['depth']}, over {DYNAMIC_SHARED_LIMIT_SM90} B: "
                f"use block <= {DYNAMIC_SHARED_LIMIT_SM90 // (STACK_BYTES_PER_LEVEL * levels)}"
            )
        if params["capacity"]:
            check_fits(len(expand(n, params["depth"])), params["capacity"], f"queue N={n}")

    def open(self, n, params):
        return QueueSession(self.name, n, params)


def check_fits(boards: int, capacity: int, label: str) -> None:
    """The host's boards must fit the queue they are seeded into."""
    if boards > capacity:
        raise InputError(
            f"{label}: {boards:,} seeded boards do not fit a queue of {capacity:,} slots: use "
            f"capacity={auto_capacity(boards)} (or 0) or a smaller depth"
        )


# --- accounting --------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueAccounting:
    """One round's device-side accounting, decoded."""

    solutions: int
    seeded: int
    dequeued: int
    enqueued: int
    splits: int
    full: int
    empty: int
    busy: int
    stuck: int
    pending: int
    aborted: bool

    @classmethod
    def decode(cls, words) -> QueueAccounting:
        import numpy as np

        w = np.asarray(words, dtype=np.uint64)
        if w.shape != (WORDS,):
            raise ValueError(f"queue accounting must be {WORDS} 64-bit words, got shape {w.shape}")
        v = [int(x) for x in w]
        return cls(
            v[SOLUTIONS],
            v[SEEDED],
            v[DEQUEUED],
            v[ENQUEUED],
            v[SPLITS],
            v[FULL],
            v[EMPTY],
            v[BUSY],
            v[STUCK],
            v[PENDING],
            bool(v[ABORT]),
        )

    def failure(self) -> str | None:
        """What went wrong on the device; None if the run is sound."""
        parts = []
        if self.stuck or self.aborted:
            parts.append(
                f"{self.stuck:,} queue operations hit their "
                "spin cap (stuck) and the search was aborted"
            )
        if self.pending:
            parts.append(f"{self.pending:,} boards were still outstanding at the end")
        if not parts and self.dequeued != self.seeded + self.enqueued:
            parts.append(
                f"{self.dequeued:,} boards dequeued, but {self.seeded:,} seeded + "
                f"{self.enqueued:,} handed out: a board was lost or taken twice"
            )
        return "; ".join(parts) + "; the count is discarded" if parts else None

    def stats(self) -> dict[str, Any]:
        return {
            "generations": [],
            "failures": {
                "seeded": self.seeded,
                "dequeued": self.dequeued,
                "enqueued": self.enqueued,
                "split_events": self.splits,
                "full": self.full,
                "empty": self.empty,
                "busy": self.busy,
                "stuck": self.stuck,
                "outstanding": self.pending,
            },
        }


def raise_on_failure(acct: QueueAccounting, label: str) -> None:
    message = acct.failure()
    if message:
        raise DeviceFailureError(f"{label}: {message}")


# --- the session -------------------------------------------------------------------------------


class QueueSession(GpuSession):
    def __init__(self, name, n, params):
        super().__init__(name, n, params)
        try:
            self._prepare(name, n, params)
        except BaseException:
            self.close()
            raise

    def _prepare(self, name, n, params):
        self.label = f"{name} N={n} queue={params['queue']}"
        host = expand(n, params["depth"])
        self.multiplier = host.multiplier
        self.capacity = params["capacity"] or auto_capacity(len(host))
        check_fits(len(host), self.capacity, self.label)
        module = self.build(STRATEGY.sources[0])
        kernel = QUEUES[params["queue"]]
        self.search = module.function(kernel)
        self.seed = module.function("queue_seed")
        self.boards = self.upload(host)
        self.levels = max(1, n - self.boards.min_row)
        self.block = params["block"]
        self.dynamic = stack_bytes(self.levels, self.block)
        module.kernels[kernel]["dynamic_shared_bytes"] = self.dynamic
        self.allow_shared(self.search, self.dynamic)
        fit = self.resident_blocks(self.search, self.block, self.dynamic)
        if fit < 1:
            raise InputError(
                f"{self.label}: no block of {self.block} threads "
                f"fits on an SM ({self.dynamic} B of stacks)"
            )
        per_sm = min(params["blocks_per_sm"], fit) if params["blocks_per_sm"] else fit
        self.grid = (per_sm * self.gpu.facts["sm_count"], 1)
        self.qmem = self.drv.mem_alloc(queue_bytes(self.capacity))
        self.qbytes = queue_bytes(self.capacity)
        self.acct = self.counter(WORDS)
        self.notes.append(
            f"{self.boards.count} boards seeded at depth {params['depth']}; queue "
            f"{params['queue']} of {self.capacity} slots; {self.grid[0]} persistent blocks x "
            f"{self.block} ({per_sm} per SM, {fit} fit)"
        )

    def run_once(self) -> Measurement:
        import numpy as np

        self.drv.memset_d32(self.qmem, 0, self.qbytes // 4)
        self.drv.memset_d32(self.acct, 0, 2 * WORDS)
        seed_grid = (max(1, min(4096, -(-self.boards.count // 256))), 1)
        with self.generation(0) as timer:
            self.seed(
                self.qmem,
                np.uint32(self.capacity),
                *self.boards.args(),
                self.acct,
                block=(256, 1, 1),
                grid=seed_grid,
            )
            self.search(
                self.qmem,
                np.uint32(self.capacity),
                np.int32(self.n),
                np.int32(self.levels),
                np.int32(self.params["threshold"]),
                np.int32(self.params["split_rows"]),
                self.acct,
                block=(self.block, 1, 1),
                grid=self.grid,
                shared=self.dynamic,
            )
        acct = QueueAccounting.decode(self.read_u64(self.acct, WORDS))
        raise_on_failure(acct, self.label)
        self.ran()
        return Measurement(
            count=acct.solutions * self.multiplier,
            wall_s=timer.wall_seconds,
            gpu_s=timer.seconds,
            stats=acct.stats(),
        )


STRATEGY = Queue()
