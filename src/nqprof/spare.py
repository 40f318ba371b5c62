"""Spare GPU workers: worker processes started ahead of need, whose case is not known yet.

A GPU worker's start (the interpreter, numpy and PyCUDA, the CUDA driver's start) costs more
than many of nqprof's cases count. Where another worker request is sure to follow (the next
case of a pytest run or a sweep, the worker of `nqprof solve` while the parent reads its
options), a spare is started meanwhile: it imports what every GPU worker needs and starts the
CUDA driver, then waits. The next GPU worker request takes it and tells it its case with
"go" (:func:`nqprof.worker.serve`); a spare nobody takes is ended.

This module stays light (the standard library and :mod:`nqprof.worker`), so that the command
line can start a spare before it imports the rest of nqprof.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import sys
import time
import types

from .worker import serve, under_profiler


@contextlib.contextmanager
def spawn_context():
    """A spawned child runs the parent's ``__main__`` module again before its target (for
    pytest that is all of pytest). The target lives in :mod:`nqprof.worker`, which needs
    nothing of it, so ``__main__`` is hidden while the child starts (multiprocessing's spawn
    reads the module's name and file at that moment only)."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


#: What the fork server of CPU workers imports once, before it forks any: the worker and the
#: strategy registry with its base (most of a CPU worker's imports); each worker imports its
#: strategy's own module, a light one, and the C extension on first use.
FORKSERVER_PRELOAD = ("nqprof.worker", "nqprof.strategies")


def forkserver_context():
    """multiprocessing's fork server, which CPU workers are forked from: a process of its
    own, started once (with :data:`FORKSERVER_PRELOAD` imported) and single-threaded, so a
    fork never copies a parent that runs threads (numpy's BLAS pool, NVML, pytest's own),
    which Python 3.12 warns of and which can deadlock the child (where the platform has
    one: :mod:`nqprof.runners` asks)."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(FORKSERVER_PRELOAD))
    return ctx


def start_worker(method: str, *args, **kwargs) -> tuple:
    """A worker process (:func:`nqprof.worker.serve` with ``args`` after its end of the pipe),
    started by multiprocessing's ``method`` ("spawn" hides the parent's ``__main__``;
    "forkserver" forks it from :func:`forkserver_context`'s server, handing it this process's
    environment as it is now): the process and the parent's end of the pipe."""
    ctx = forkserver_context() if method == "forkserver" else mp.get_context(method)
    if method == "forkserver":
        kwargs = {**kwargs, "environ": dict(os.environ)}
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=serve, daemon=True, args=(child, *args), kwargs=kwargs)
    with spawn_context() if method in ("spawn", "forkserver") else contextlib.nullcontext():
        proc.start()
    child.close()
    return proc, parent


def warm(conn) -> None:
    """Tell a waiting (prepared or spare) worker to make its CUDA context now: no worker of
    ours is timing rounds."""
    try:
        conn.send("ctx")
    except OSError:
        pass


def gpu_machine() -> bool:
    """Whether this machine looks as if it has an NVIDIA GPU (a driver's device files): a
    spare is started only there."""
    return os.path.exists("/dev/nvidiactl")


class Spare:
    """Spare GPU workers, oldest first: :meth:`start` them, :meth:`take` the oldest (process
    and pipe)."""

    def __init__(self):
        self._held: list[tuple] = []

    @property
    def pid(self) -> int | None:
        """The process id of the spare to be taken next."""
        return self._held[0][0].pid if self._held else None

    @property
    def pids(self) -> tuple[int, ...]:
        """Every waiting spare's process id."""
        return tuple(proc.pid for proc, _ in self._held)

    #: Whether every round loop keeps a spare for the GPU worker request that follows
    #: (:func:`nqprof.runners.keep_spares`): for a run of many GPU cases one after another,
    #: such as the GPU tests.
    keep = False
    #: Spares make their context at once (where no round of ours is timed meanwhile: the
    #: GPU tests, :func:`nqprof.runners.keep_spares`).
    context = False
    #: How many spares wait at once where they do not make their context at once (None: as
    #: many as a GPU case has worker processes, nqprof.runners.GPU_PROCESSES).
    depth: int | None = None

    def start(self, context: bool = False, depth: int = 1) -> None:
        """Start spares until ``depth`` wait (a case of two worker processes takes two).
        ``context``: they make their CUDA context while they wait too (only where no worker
        of ours is counting meanwhile: see :data:`nqprof.worker.PREPARED_CUDA`); by default
        they start the driver alone, and the oldest makes its context when told
        (:meth:`warm`)."""
        if under_profiler():  # a profiled run starts each worker when it needs it, and no other
            return
        context = context or self.context
        self._held = [held for held in self._held if _alive(held)]
        while len(self._held) < max(1, depth):
            self._held.append(
                start_worker(
                    "spawn",
                    *(None, None, None, None, os.getpid(), True, time.time(), True),
                    cuda="context" if context else None,
                )
            )

    def warm(self) -> None:
        """Have the oldest spare make its CUDA context now (no worker of ours is timing
        rounds)."""
        if self._held:
            warm(self._held[0][1])

    def take(self) -> tuple | None:
        """The oldest waiting spare's process and pipe (None if none is alive)."""
        while self._held:
            held = self._held.pop(0)
            if _alive(held):
                return held
        return None

    def kill(self) -> None:
        held, self._held = self._held, []
        for proc, conn in held:
            if proc.is_alive():
                proc.kill()
                proc.join(5)
            conn.close()


def _alive(held: tuple) -> bool:
    """Whether a spare's process lives (its pipe closed if not)."""
    if held[0].is_alive():
        return True
    held[1].close()
    return False


#: The spare of this process.
SPARE = Spare()
