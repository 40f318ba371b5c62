"""What the CPU strategies share: the C extension and a timed session."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..errors import UnavailableError
from ..result import Measurement
from .base import Session

#: The C source of the CPU references, relative to kernels/.
CPU_SOURCE = "cpu/nqueens_cpu.c"
#: uint32 words of a start-constellation task (kernels/cpu/constellations.h): what
#: nqprof._cpu.cst_tasks returns, serial-d4 counts and fast uploads.
CST_TASK_WORDS = 4


def cpu_module():
    """The compiled C references (``nqprof._cpu``)."""
    try:
        from .. import _cpu
    except ImportError as exc:  # pragma: no cover - only on a broken install
        raise UnavailableError(
            f"nqprof's C extension is not built ({exc}); reinstall nqprof"
        ) from None
    return _cpu


class TimedCall(Session):
    """A session whose round is one call returning the count, timed on the host clock.
    ``work(round_s)``: what states the nodes its search visits (:func:`constellation_nodes`;
    ``round_s``, the last round's seconds), asked when the record asks the session's
    ``info``."""

    def __init__(
        self,
        count: Callable[[], int],
        info: dict[str, Any],
        work: Callable[[float | None], dict[str, Any]] | None = None,
    ):
        self._count = count
        self._info = info
        self._work = work
        self.round_s: float | None = None  # the last round's seconds

    def run_once(self) -> Measurement:
        t0 = time.perf_counter()
        count = self._count()
        self.round_s = time.perf_counter() - t0
        return Measurement(count=int(count), wall_s=self.round_s)

    def info(self) -> dict[str, Any]:
        from ..cuda.sources import source_hash

        info = {"source_hash": source_hash(CPU_SOURCE), **self._info}
        if self._work is not None:
            info["work"] = self._work(self.round_s)
        return info


def constellation_tasks(n: int, depth: int):
    """The start constellations of (n, depth) (nqprof._cpu.cst_tasks) as a numpy array, one
    task a row of CST_TASK_WORDS words (its weight inside)."""
    import numpy as np

    raw = cpu_module().cst_tasks(n, depth)
    return np.frombuffer(raw, dtype=np.uint32).reshape(-1, CST_TASK_WORDS)


#: Where a constellation search's node count comes from.
CST_NODES_SOURCE = "counted by the CPU twin's step search (nq_cst_solve), fast's tree"


#: The longest the node count may take where no earlier run counted it: the step search
#: takes about twice a round's time, so a run whose round takes longer than half of this
#: states no nodes, and says why, rather than run that long after its rounds.
NODES_BUDGET_S = 20.0


def constellation_nodes(
    n: int,
    depth: int,
    threads: int,
    round_s: float | None = None,
    tasks: bytes | None = None,
) -> dict[str, Any]:
    """The nodes (queens placed) a search of the start constellations of (n, depth) visits
    below its tasks: the CPU twin's step search counts them (``nqprof._cpu.cst_count(...,
    nodes=True)``: the tree every constellation strategy walks, whatever its order), once
    per machine and C source (kept in nqprof's cache folder); not where that would take
    over NODES_BUDGET_S (about twice a round of ``round_s`` seconds): a note says so.
    ``tasks``: the tasks of (n, depth) where the caller has them (else made here, and only
    where the count is not kept already)."""
    from ..cuda.cache import read_memo, write_memo
    from ..cuda.sources import source_hash

    name = f"nodes-cst-{n}-{depth}-{source_hash(CPU_SOURCE)}.json"
    memo = read_memo(name)
    if memo is None or not isinstance(memo.get("nodes"), int):
        if round_s is not None and 2 * round_s > NODES_BUDGET_S:
            return {
                "nodes_note": f"nodes not counted: the CPU twin would take about "
                f"{2 * round_s:.0f} s (over {NODES_BUDGET_S:g} s)"
            }
        cpu = cpu_module()
        if tasks is None:
            tasks = cpu.cst_tasks(n, depth)
        count, nodes = cpu.cst_count(n, tasks, threads, True)
        memo = {"nodes": int(nodes), "count": int(count)}
        write_memo(name, memo)
    return {"nodes": memo["nodes"], "nodes_source": CST_NODES_SOURCE}


def constellation_call(n: int, depth: int, threads: int, head: Callable[[int], str]) -> TimedCall:
    """A session whose round is the weighted count of the start constellations of (n,
    depth) on ``threads`` CPU threads. The tasks are made once, here; the note is
    ``head(task count)`` and the time they took, outside the rounds."""
    cpu = cpu_module()
    t0 = time.perf_counter()
    tasks = cpu.cst_tasks(n, depth)
    made = time.perf_counter() - t0
    count = len(tasks) // (4 * CST_TASK_WORDS)
    note = f"{head(count)} (made once in {made * 1e3:.2f} ms, outside the rounds)"
    return TimedCall(
        lambda: cpu.cst_count(n, tasks, threads)[0],
        {"notes": [note], "tasks": {"where": "host", "tasks": count, "make_s": made}},
        work=lambda round_s: constellation_nodes(n, depth, threads, round_s, tasks),
    )


class PartCall(TimedCall):
    """A part session (see :meth:`Strategy.open_part`): ``count(items)`` counts the work
    items a cluster hands it (boards, or constellation tasks), timed on the host clock."""

    def __init__(self, count: Callable[[Any], int], info: dict[str, Any]):
        super().__init__(self._no_whole_count, info)
        self._count_items = count

    @staticmethod
    def _no_whole_count() -> int:
        raise NotImplementedError("a part session counts the items it is given: count_part(items)")

    def count_part(self, items) -> Measurement:
        t0 = time.perf_counter()
        count = self._count_items(items)
        return Measurement(count=int(count), wall_s=time.perf_counter() - t0)


class BoardsCall(PartCall):
    """The serial search over given boards on ``threads`` CPU threads (the C extension's
    pool), no symmetry multiplier."""

    def __init__(self, n: int, threads: int, info: dict[str, Any]):
        cpu = cpu_module()
        super().__init__(lambda b: cpu.count_boards(n, b.cols, b.ld, b.rd, b.row, threads), info)


class TasksCall(PartCall):
    """The weighted count of given constellation tasks (rows of CST_TASK_WORDS words) on
    ``threads`` CPU threads."""

    def __init__(self, n: int, threads: int, info: dict[str, Any]):
        cpu = cpu_module()
        super().__init__(lambda tasks: cpu.cst_count(n, tasks.tobytes(), threads)[0], info)
