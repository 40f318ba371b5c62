"""What the CPU strategies share: the C extension and a timed session."""

from __future__ import annotations

import time
from typing import Any, Callable

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
        raise UnavailableError(f"nqprof's C extension is not built ({exc}); reinstall nqprof") from None
    return _cpu


class TimedCall(Session):
    """A session whose round is one call returning the count, timed on the host clock."""

    def __init__(self, count: Callable[[], int], info: dict[str, Any]):
        self._count = count
        self._info = info

    def run_once(self) -> Measurement:
        t0 = time.perf_counter()
        count = self._count()
        return Measurement(count=int(count), wall_s=time.perf_counter() - t0)

    def info(self) -> dict[str, Any]:
        from ..cuda.sources import source_hash

        return {"source_hash": source_hash(CPU_SOURCE), **self._info}


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
