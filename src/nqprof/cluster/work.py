"""What runs on a Dask worker: one task, counted by a part session kept for the run.

A worker prepares its part session once per run (strategy, N, parameters) and reuses it
for every task it gets: CPU strategies in the worker process, GPU strategies in nqprof's
watchdog process (:class:`~nqprof.runners.WorkerRunner`: build, module load and every
count there, each step under the timeout; a hang kills that process, not the worker, and
the task fails and is retried). The GPU is the one the worker was given
(``CUDA_VISIBLE_DEVICES`` in its environment): device 0 of the watchdog process.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import threading
import time
from typing import Any

from ..errors import UnavailableError
from ..runners import WorkerRunner
from ..strategies import get
from .tasks import Task, expansion, take

DAEMON_HINT = (
    "this Dask worker is a daemonic process and cannot start nqprof's watchdog process for GPU "
    "work: start workers with DASK_DISTRIBUTED__WORKER__DAEMON=False"
)

_lock = threading.Lock()
_part: dict[str, Any] = {"key": None, "session": None}


class _InProcess:
    """A CPU part session run in the worker process."""

    def __init__(self, strategy, n, params):
        self.session = strategy.open_part(n, params)

    def count_part(self, boards):
        return self.session.count_part(boards)

    def close(self):
        self.session.close()


class _Watched:
    """A GPU part session in a watchdog process."""

    def __init__(self, strategy, n, params, timeout):
        if multiprocessing.current_process().daemon:
            raise UnavailableError(DAEMON_HINT)
        self.runner = WorkerRunner(strategy, n, params, timeout, opener="open_part").start()

    def count_part(self, boards):
        return self.runner.call("count_part", boards)

    def close(self):
        self.runner.close()


def _session(strategy_name: str, n: int, params: dict[str, Any], timeout: float):
    """This run's part session on this worker (the previous run's is closed first)."""
    key = repr((strategy_name, n, sorted(params.items()), timeout))
    if _part["key"] != key:
        close_session()
        strategy = get(strategy_name)
        if strategy.needs_gpu:
            _part["session"] = _Watched(strategy, n, params, timeout)
        else:
            _part["session"] = _InProcess(strategy, n, params)
        _part["key"] = key
    return _part["session"]


def open_session(strategy: str, n: int, params: dict[str, Any], timeout: float) -> float:
    """Open this run's part session on this worker now (its process, CUDA context and
    module), before the run's tasks come: the seconds it took (0 if it was open)."""
    t0 = time.perf_counter()
    with _lock:
        try:
            _session(strategy, n, params, timeout)
        except BaseException:
            close_session()
            raise
    return time.perf_counter() - t0


def close_session() -> None:
    session, _part["session"], _part["key"] = _part["session"], None, None
    if session is not None:
        session.close()


def release_idle() -> bool:
    """Close this worker's part session unless a task is using it (run by the client at
    the end of a run: a GPU session holds its context and device memory)."""
    if not _lock.acquire(blocking=False):
        return False
    try:
        close_session()
        return True
    finally:
        _lock.release()


def count_task(
    strategy: str, n: int, params: dict[str, Any], depth: int, task: Task, timeout: float
) -> dict[str, Any]:
    """Count one task's boards; the result names the worker, its host and GPU, and times."""
    t0 = time.perf_counter()
    with _lock:  # one task at a time per worker process, whatever its thread count
        try:
            session = _session(strategy, n, params, timeout)
            boards = take(expansion(n, depth, strategy), task)
            t1 = time.perf_counter()
            m = session.count_part(boards)
        except BaseException:
            close_session()  # a failed session is not reused
            raise
    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = f"pid {os.getpid()}"
    return {
        "index": task.index,
        "boards": len(boards),
        "count": int(m.count),
        "seconds": time.perf_counter() - t0,
        "count_s": m.wall_s,
        "prepare_s": t1 - t0,
        "gpu_s": m.gpu_s,
        "made": (m.stats.get("tasks") or {}).get("tasks"),
        "worker": worker,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "gpu": os.environ.get("CUDA_VISIBLE_DEVICES") if get(strategy).needs_gpu else None,
    }
