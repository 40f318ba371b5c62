"""A spare GPU worker: a worker process started ahead of need, whose case is not known yet.

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

from .worker import serve


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


def start_worker(method: str, *args, **kwargs) -> tuple:
    """A worker process (:func:`nqprof.worker.serve` with ``args`` after its end of the pipe),
    started by multiprocessing's ``method`` ("spawn" hides the parent's ``__main__``):
    the process and the parent's end of the pipe."""
    ctx = mp.get_context(method)
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=serve, daemon=True, args=(child, *args), kwargs=kwargs)
    with spawn_context() if method == "spawn" else contextlib.nullcontext():
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
    """At most one spare GPU worker: :meth:`start` one, :meth:`take` it (process and pipe)."""

    def __init__(self):
        self._held: tuple | None = None

    @property
    def pid(self) -> int | None:
        return self._held[0].pid if self._held is not None else None

    #: Spares make their context at once (where no round of ours is timed meanwhile: the
    #: GPU tests, :func:`nqprof.runner.keep_spares`).
    context = False

    def start(self, context: bool = False) -> None:
        """Start a spare unless one is waiting. ``context``: it makes its CUDA context while
        it waits too (only where no worker of ours is counting meanwhile: see
        :data:`nqprof.worker.PREPARED_CUDA`); by default it starts the driver alone, and
        makes its context when told (:meth:`warm`)."""
        context = context or self.context
        if self._held is not None and self._held[0].is_alive():
            return
        self._held = start_worker(
            "spawn",
            *(None, None, None, None, os.getpid(), True, time.time(), True),
            cuda="context" if context else None,
        )

    def warm(self) -> None:
        """Have the spare make its CUDA context now (no worker of ours is timing rounds)."""
        if self._held is not None:
            warm(self._held[1])

    def take(self) -> tuple | None:
        """The waiting spare's process and pipe (None if there is none alive)."""
        held, self._held = self._held, None
        if held is not None and not held[0].is_alive():
            held[1].close()
            return None
        return held

    def kill(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            proc, conn = held
            if proc.is_alive():
                proc.kill()
                proc.join(5)
            conn.close()


#: The spare of this process.
SPARE = Spare()
