"""What runs in a watchdog worker process: its start, and the requests it answers.

A worker opens one session (``target.opener(n, params)`` of a strategy, a probe, any object
a module exposes) and answers "run", "info", "probe" (the CPU speed probe in this process),
"reopen", "close" and ("call", method, *args) until its parent closes it. The parent side
(timeouts, killing, verification) is :mod:`nqprof.runner`.

Its start is kept short, because every GPU case pays it:

- **CUDA beside the imports.** A GPU worker starts the CUDA driver (cuInit and the device's
  primary context, through ctypes) on a thread of its own before it imports numpy, PyCUDA
  and the strategy, so the driver's start and the imports run at once;
  :class:`nqprof.cuda.device.GpuContext` then takes that context.
- **Nothing else at import.** This module imports only the standard library; a spawned
  worker imports the strategy's module and what it needs, nothing of the parent's
  ``__main__`` (see :func:`nqprof.spare.spawn_context`).

And it ends with its parent: Ctrl-C goes to the parent alone (the worker ignores SIGINT, so
it prints no traceback of its own and the parent kills it), and on Linux the kernel kills
the worker when its parent dies (PR_SET_PDEATHSIG), so a killed ``nqprof`` or pytest leaves
no worker counting on the GPU.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: prctl's option that asks for a signal when the parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1

#: Variables a CUDA profiler or checker sets in the processes it watches, as seen on an H200
#: host with CUDA 13.0: Nsight Systems sets the two injection paths, compute-sanitizer the
#: NVTX one and its own transport, Nsight Compute its transport (docs/profiling.md).
INJECTION_VARIABLES = (
    "CUDA_INJECTION64_PATH",
    "NVTX_INJECTION64_PATH",
    "NV_NSIGHT_INJECTION_TRANSPORT_TYPE",
    "NV_SANITIZER_INJECTION_TRANSPORT_TYPE",
)


def under_profiler() -> bool:
    """Whether this process runs under a CUDA profiler or checker. Such a tool keeps what it
    saw of a process in buffers it writes out at the process's exit, so a worker under one
    leaves the way the tool needs: the session closed, then a normal exit that the parent
    waits for (a worker that left by ``os._exit``, or that its parent killed at its own exit,
    took its CUDA activity with it: its trace held NVTX ranges and no kernel).
    ``NQPROF_PROFILED=1`` or ``0`` says so where the variables do not tell."""
    forced = os.environ.get("NQPROF_PROFILED", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return any(os.environ.get(name) for name in INJECTION_VARIABLES)


#: The driver's state as the early start left it: the thread, and the primary context it
#: retained (released once PyCUDA holds it: :func:`cuda_started`).
_EARLY: dict[str, Any] = {}


@dataclass(frozen=True)
class Target:
    """What a spawned worker opens the session of: ``getattr(import_module(module),
    attribute)`` (a strategy's ``STRATEGY``, a probe's ``PROBE``)."""

    module: str
    attribute: str = "STRATEGY"

    def resolve(self):
        import importlib

        return getattr(importlib.import_module(self.module), self.attribute)


def die_with_parent(parent: int | None) -> None:
    """Ask the kernel for SIGKILL when the parent dies (Linux), and die now if it has died
    already (the request came too late to see it). ``parent`` None: the process that
    started this one is not the one that asked for it (a fork server's child: the server
    leaves when its own parent does, and this process with it)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            return
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def start_cuda_early(context: bool = True) -> None:
    """cuInit and (``context``) the primary context of device 0, on a thread, through the
    driver library (no PyCUDA, no numpy): it runs while the worker imports them. Any failure
    is left for PyCUDA to meet and report."""

    def start() -> None:
        t0 = time.perf_counter()
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            dev, ctx = ctypes.c_int(), ctypes.c_void_p()
            if lib.cuInit(0) or lib.cuDeviceGet(ctypes.byref(dev), 0):
                return
            if context and lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0:
                _EARLY.update(lib=lib, device=dev, seconds=time.perf_counter() - t0)
        except OSError:
            pass

    thread = threading.Thread(target=start, name="nqprof-cuda-start", daemon=True)
    _EARLY["thread"] = thread
    thread.start()


#: What a prepared worker starts of CUDA while it waits for its turn ($NQPROF_PREPARED_CUDA):
#: "init" (the default) the driver alone, its context only after "go"; "context" both;
#: "late" nothing. A context made while another worker of the run counts changed where the
#: queue strategy's allocations landed, and with them its times, by up to 10% between
#: processes (docs/results/e2e): "context" is kept to show that.
PREPARED_CUDA = ("init", "context", "late")


def prepared_cuda() -> str:
    mode = os.environ.get("NQPROF_PREPARED_CUDA", "init")
    return mode if mode in PREPARED_CUDA else "init"


def cuda_started() -> None:
    """Wait for the early start, if one ran (called before PyCUDA's init); afterwards
    :func:`release_early` hands its hold on the primary context back."""
    thread = _EARLY.get("thread")
    if thread is not None:
        thread.join()


def release_early() -> None:
    """Release the early start's hold on the primary context (once PyCUDA holds it too)."""
    lib, dev = _EARLY.pop("lib", None), _EARLY.pop("device", None)
    if lib is not None:
        lib.cuDevicePrimaryCtxRelease(dev)


def preload(target: Target | Any, gpu: bool) -> None:
    """What a prepared worker imports while it waits for its turn (beside CUDA's early
    start, for a GPU worker): the target's module and, for a GPU worker, numpy, PyCUDA and
    nqprof's CUDA side.
    What fails to import is left for the open to meet and report."""
    import importlib

    modules = ["numpy", "pycuda.driver", "nqprof.cuda.device", "nqprof.cuda.build"] if gpu else []
    modules += [target.module] if isinstance(target, Target) else []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # ImportError, OSError (no driver library): the open says why
            pass


def serve(
    conn,
    target: Target | Any,
    opener: str,
    n: int,
    params: dict[str, Any],
    parent: int,
    gpu: bool,
    started: float,
    prepared: bool = False,
    cuda: str | None = None,
    environ: dict[str, str] | None = None,
) -> None:
    """The worker process: set itself up (above), open the session ``opener(n, params)`` of
    ``target`` (a :class:`Target`, or in a forked worker the object itself), then answer
    requests until "close" or the end of the pipe; "close" is answered, then the session is
    closed (its GPU let go) and the process leaves at once (under a profiler, the session is
    closed first and the process leaves normally: :func:`under_profiler`). The answer to the
    open is the session's info, with ``worker``: what the start took (``start_s``: from the parent's
    start() to here, the interpreter's start included; ``open_s``: the session's open, imports
    included; ``cuda_start_s``: the early CUDA start, beside them).

    A ``prepared`` worker (the next of a case's series, or the next case's first, started
    while the one before counts) starts the CUDA driver (its context too, or nothing, as
    :data:`PREPARED_CUDA` says) and imports what it needs (:func:`preload`), then waits for
    "go" before it makes its context, if it has none yet, and opens its session. It is
    started only after the running worker's memory ledger is complete (after its first
    round), and "go" comes only once that worker has closed and its process has gone, so
    each session's ledger, taken between its own open and first round, sees no other
    session's allocations; its ``start_s`` is then from "go". A spare
    (:mod:`nqprof.spare`) is a prepared worker that learns its case with "go": its
    ``target`` is None until then, and "go" is ("go", target, opener, n, params).
    ``cuda``: what it starts of CUDA while it waits, where not :func:`prepared_cuda`. Told
    "ctx" while it waits (the worker before it has timed its last round), it makes its
    context then: that overlaps the record and the close of the worker before, and no
    round is timed meanwhile. ``environ``: the parent's environment, for a worker forked
    from a fork server (which holds the environment of its own start)."""
    serving = time.time()
    if environ is not None:  # forked from a fork server: the parent's environment as it is now
        os.environ.clear()
        os.environ.update(environ)
    die_with_parent(None if environ is not None else parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    mode = cuda or (prepared_cuda() if prepared else "context")
    if gpu and mode != "late":
        start_cuda_early(context=mode == "context")
    if prepared:
        preload(target, gpu)
        go = "ctx"
        while go == "ctx":  # "ctx": the worker before has timed its rounds: make the context
            try:
                go = conn.recv()
            except EOFError:
                go = None
            if go == "ctx" and gpu and mode != "context":
                cuda_started()  # the driver's start, if it ran, is done: only the context is left
                start_cuda_early()
                mode = "context"
        if isinstance(go, tuple) and len(go) == 5 and go[0] == "go":
            _, target, opener, n, params = go
        elif go != "go" or target is None:
            os._exit(0)
        serving = started = time.time()
        if gpu and mode != "context":
            cuda_started()
            start_cuda_early()

    from .errors import NqprofError

    def reply(call: Callable[[], Any]) -> bool:
        try:
            conn.send(("ok", call()))
            return True
        except BaseException as exc:  # report every failure to the parent
            kind = type(exc).__name__ if isinstance(exc, NqprofError) else "NqprofError"
            text = str(exc) if isinstance(exc, NqprofError) else f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, NqprofError):
                traceback.print_exc(file=sys.stderr)
            conn.send(("error", kind, text))
            return False

    session = None

    def open_session(reopened: bool = False):
        nonlocal session
        t0 = time.perf_counter()
        owner = target.resolve() if isinstance(target, Target) else target
        session = getattr(owner, opener)(n, params)
        info = session.info()
        timings = {
            "start_s": 0.0 if reopened else round(serving - started, 4),
            "open_s": round(time.perf_counter() - t0, 4),
        }
        if "seconds" in _EARLY and not reopened:
            timings["cuda_start_s"] = round(_EARLY["seconds"], 4)
        return {**info, "worker": timings}

    def reopen():
        """The next session of this process: the one open is closed (its context let go)
        and the case's session opened anew (a context of its own: its memory ledger is its
        own too)."""
        nonlocal session
        done, session = session, None
        done.close()
        return open_session(reopened=True)

    if reply(open_session):
        while True:
            try:
                cmd = conn.recv()
            except EOFError:
                break
            if cmd == "run":  # a strategy's session re-runs a round whose hold gave up
                reply(getattr(session, "run_round", session.run_once))
            elif cmd == "info":
                reply(session.info)
            elif cmd == "probe":  # the CPU speed probe in this process, between rounds
                from .cpuprobe import cpu_probe_s

                reply(cpu_probe_s)
            elif cmd == "reopen":
                if not reply(reopen):
                    break
            elif cmd == "close" and under_profiler():  # closed first, then a normal exit
                reply(session.close)
                break
            elif cmd == "close":  # answered first: the parent goes on while the GPU is let go
                conn.send(("ok", None))
                conn.close()
                try:
                    session.close()
                finally:
                    os._exit(0)  # nothing else to tear down: the interpreter's exit is the kernel's
            elif isinstance(cmd, tuple) and cmd[0] == "call":
                reply(lambda cmd=cmd: getattr(session, cmd[1])(*cmd[2:]))
    conn.close()
