"""Where a case's sessions run, and every count verified: in this process
(:class:`LocalRunner`), in a watchdog worker process (:class:`WorkerRunner`), in several in
turn (:class:`RunnerPool`, a CPU case) or one after another (:class:`ProcessSeries`, a GPU
case); :func:`open_runner` picks.

Every session lives in a child process for its whole life (build, module load, limits,
every round), so that a hung CDP kernel, a crashed context or a CPU search far too large
for its timeout costs only that process: the parent waits for each reply at most
``timeout`` seconds, then kills the worker and raises :class:`WatchdogError` naming
strategy, N and parameters. A GPU worker is spawned (a fresh CUDA context, so its memory
ledger shows what this strategy alone reserves; what it does as it starts is
:mod:`nqprof.worker`'s); a CPU worker is forked where the platform can (fast to start), from
a fork server (:func:`nqprof.spare.forkserver_context`: never from this process, which may
run threads) that imports the strategy by name, or is handed it where no module names it.
Ctrl-C, or any error, in the parent kills its workers at once rather than waiting for a
round to end, and a worker dies with its parent.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Any

from . import errors
from .cpuprobe import cpu_probe_s
from .cuda.nvtx import nvtx_range
from .errors import CountMismatchError, NqprofError, WatchdogError
from .numeric import integer_text
from .options import default_timeout, describe
from .problem import known_count
from .result import Measurement
from .series import ProcessSeries, RunnerPool
from .spare import SPARE, start_worker, warm
from .strategies import Strategy, rotation
from .worker import Target, under_profiler


def verify(
    strategy: str,
    n: int,
    params: dict[str, Any],
    m: Measurement,
    measurement_build: str | None = None,
) -> Measurement:
    """Raise :class:`CountMismatchError` unless the count is the known one. A measurement
    build (``measurement_build``: why its count is not N's, Strategy.measurement_build) is
    not checked: its record says so and is never verified (RunRecord.measurement_build)."""
    if measurement_build:
        return m
    expected = known_count(n)
    with nvtx_range(f"{strategy} N={n} verify"):
        ok = m.count == expected
    if not ok:
        raise CountMismatchError(
            f"{describe(strategy, n, params)} counted {m.count}, expected {expected}"
        )
    return m


class LocalRunner:
    """A session run in this process (CPU strategies). Like every runner it says how many
    processes take its rounds at once (``size``), which ran the latest (``last``), their
    process ids beside this one (``pids``: none), what the session said when it opened
    (``opened``) and how many processes take the rounds one after another (``phases``; a
    :class:`ProcessSeries` moves to the next with ``advance()``)."""

    size, last, pids, phases = 1, 0, (), 1

    def __init__(self, strategy: Strategy, n: int, params: dict[str, Any]):
        self.strategy, self.n, self.params = strategy, n, params
        self._session = None
        self.opened: dict[str, Any] = {}

    def start(self) -> LocalRunner:
        self._session = self.strategy.open(self.n, self.params)
        return self

    def run_once(self) -> Measurement:
        return verify(
            self.strategy.name,
            self.n,
            self.params,
            getattr(self._session, "run_round", self._session.run_once)(),
            self.strategy.measurement_build(self.params),
        )

    def info(self) -> dict[str, Any]:
        return self._session.info()

    def probe(self) -> float | None:
        return cpu_probe_s()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    kill = close

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


class InProcessRunner:
    """nqprof's round loop (:class:`nqprof.runner.RoundLoop`) over a callable of this
    process: a microbenchmark whose kernels run in this process's own context (queue-bench).
    ``run_once`` returns what the callable returns, unverified (the loop's ``statistic``
    reads it); ``device``: the device facts, for the GPU watch (its PCI bus id)."""

    size, last, phases = 1, 0, 1

    def __init__(self, name: str, call, device: dict[str, Any] | None = None, gpu: bool = True):
        from types import SimpleNamespace

        self.strategy = SimpleNamespace(name=name, needs_gpu=gpu)
        self.n, self.params = 0, {}
        self.opened: dict[str, Any] = {"device": dict(device or {})}
        self._call = call

    @property
    def pids(self) -> tuple[int, ...]:
        return (os.getpid(),)  # its GPU work is this process's own, not other work

    def run_once(self) -> Any:
        return self._call()

    def info(self) -> dict[str, Any]:
        return dict(self.opened)


#: Workers whose session closed, still letting their context go as they leave.
_EXITING: list = []


def _await_exits(timeout: float = 10.0) -> None:
    """Wait for closed workers to be gone (killed past ``timeout``): before a worker opens a
    session, no other context of ours is on the GPU."""
    while _EXITING:
        proc = _EXITING.pop()
        proc.join(timeout)
        if proc.is_alive():
            proc.kill()
            proc.join(5)


def worker_target(strategy) -> Target:
    """What a spawned worker imports to open ``strategy``'s session: its module's
    ``STRATEGY`` (a probe: ``worker_module``'s ``worker_attribute``, where the probe's class
    is defined elsewhere)."""
    return Target(
        getattr(strategy, "worker_module", None) or type(strategy).__module__,
        getattr(strategy, "worker_attribute", "STRATEGY"),
    )


def _named_by(target: Target, strategy) -> bool:
    """Whether ``target`` names ``strategy`` (its module holds a strategy of that name under
    that attribute): a worker can then import it rather than be handed the object (which a
    module imported again, as an in-process pytest does, makes unpicklable)."""
    import importlib

    try:
        held = getattr(importlib.import_module(target.module), target.attribute, None)
    except Exception:  # a module that is no module (__main__ of a script, a test's own)
        held = None
    name = getattr(strategy, "name", None)
    return held is not None and name is not None and getattr(held, "name", None) == name


class WorkerRunner:
    """A session run in a child process, each request guarded by a timeout."""

    size, last, phases = 1, 0, 1

    def __init__(
        self,
        strategy: Strategy,
        n: int,
        params: dict[str, Any],
        timeout: float | None = None,
        opener: str = "open",
    ):
        self.strategy, self.n, self.params = strategy, n, params
        self.timeout = default_timeout() if timeout is None else timeout
        self.opener = opener
        self._proc = None
        self._conn = None
        self._prepared = False  # started by prepare(), its session not yet opened
        self._go = "go"  # what opens it: a spare is told its case too
        #: What the session said of itself when it opened (device facts ...).
        self.opened: dict[str, Any] = {}

    @property
    def label(self) -> str:
        return describe(self.strategy.name, self.n, self.params)

    @property
    def pid(self) -> int | None:
        """The worker's process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    @property
    def pids(self) -> tuple[int, ...]:
        return (self.pid,) if self.pid else ()

    def _spawn(self, prepared: bool) -> None:
        gpu = self.strategy.needs_gpu
        fork = not gpu and "forkserver" in mp.get_all_start_methods()
        named = worker_target(self.strategy)
        # a forked worker gets the strategy itself (pickled) unless its module names it
        target = self.strategy if fork and not _named_by(named, self.strategy) else named
        held = SPARE.take() if gpu else None
        if held is not None:  # a spare started ahead: it learns its case with "go"
            self._proc, self._conn = held
            self._go = ("go", target, self.opener, self.n, self.params)
            self._prepared = True
            return
        if not prepared:
            _await_exits()
        self._proc, self._conn = start_worker(
            "forkserver" if fork else "spawn",
            *(target, self.opener, self.n, self.params, os.getpid(), gpu, time.time(), prepared),
        )
        self._go = "go"
        self._prepared = prepared

    def prepare(self) -> WorkerRunner:
        """Start the worker process now, to open its session later (:meth:`start`): it
        imports what it needs and starts CUDA meanwhile, and opens nothing until then. A
        spare (:mod:`nqprof.spare`), where one waits, is taken instead."""
        self._spawn(prepared=True)
        return self

    def start(self) -> WorkerRunner:
        if self._proc is None:
            self._spawn(prepared=False)
        if self._prepared:
            self._prepared = False
            _await_exits()
            self._conn.send(self._go)
        try:
            self.opened = self._receive("open") or {}
        except BaseException:
            self.kill()
            raise
        return self

    def _receive(self, step: str) -> Any:
        if not self._conn.poll(self.timeout):
            self.kill()
            hint = (
                "a CDP kernel may hang when device launches fail; "
                if self.strategy.needs_gpu
                else ""
            )
            raise WatchdogError(
                f"{self.label}: no answer to '{step}' within {self.timeout:g} s; worker killed "
                f"({hint}raise the timeout, --timeout or NQPROF_TIMEOUT, if the run is just long)"
            )
        try:
            answer = self._conn.recv()
        except (EOFError, ConnectionError):
            self._proc.join(5)
            code = self._proc.exitcode
            self.kill()
            raise WatchdogError(
                f"{self.label}: worker process died during '{step}' (exit code {code})"
            ) from None
        if answer[0] == "error":
            _, kind, text = answer
            self.close()
            raise getattr(errors, kind, NqprofError)(text)
        return answer[1]

    def ask(self, request: str) -> Any:
        """The session's answer to ``request`` ("run", "info"), under the timeout."""
        self._conn.send(request)
        return self._receive(request)

    def run_once(self) -> Measurement:
        return verify(
            self.strategy.name,
            self.n,
            self.params,
            self.ask("run"),
            self.strategy.measurement_build(self.params),
        )

    def reopen(self) -> None:
        """Close the worker's session and open the case's session anew in the same process
        (a context of its own): the next unit of a :class:`ProcessSeries`."""
        self._conn.send("reopen")
        self.opened = self._receive("reopen") or {}

    def warm(self) -> None:
        """A prepared worker makes its CUDA context now (the one before has timed its rounds)."""
        if self._proc is not None and self._prepared:
            warm(self._conn)

    def call(self, method: str, *args) -> Any:
        """``session.method(*args)`` in the worker, under the same timeout."""
        self._conn.send(("call", method, *args))
        return self._receive(method)

    def info(self) -> dict[str, Any]:
        return self.ask("info")

    def probe(self) -> float | None:
        """The CPU speed probe in the worker process (nqprof.cpuprobe.cpu_probe_s)."""
        return self.ask("probe")

    def close(self) -> None:
        """Close the session. The worker answers before it lets its context go and leaves:
        the parent goes on meanwhile, and the next worker waits for it to be gone
        (:func:`_await_exits`), so only one context at a time is on the GPU."""
        if self._proc is None:
            return
        try:
            if self._proc.is_alive():
                self._conn.send("close")
                if self._conn.poll(min(self.timeout, 30)):
                    self._conn.recv()
                    if under_profiler():  # its profiler writes out what it saw as it exits
                        self._proc.join(min(self.timeout, 60))
                    else:
                        _EXITING.append(self._proc)
                        self._proc = None
        except (OSError, EOFError):
            pass
        self.kill()

    def kill(self) -> None:
        """End the worker now, whatever it is doing (Ctrl-C, an error in the parent)."""
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(5)
            self._proc = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, *exc):
        self.kill() if exc_type is not None else self.close()


class UnverifiedRunner(WorkerRunner):
    """A watchdog worker whose rounds return the session's answer as it is (a probe's
    readings, an unverified build variant's measurement, an A/B pair), where
    :class:`WorkerRunner` verifies a strategy's count."""

    def run_once(self) -> Any:
        return self.ask("run")


def keep_spares(on: bool, context: bool = False, depth: int | None = None) -> None:
    """From now on, start a spare GPU worker during each case for the next (``on``), or stop
    doing so and end the spare that waits. ``context``: the spares make their CUDA context
    at once, while the case before counts (where no time is compared: tests), one at a time;
    else ``depth`` of them (default: a case's GPU_PROCESSES) import and start the driver
    ahead, and the oldest makes its context once the case before has timed its rounds."""
    SPARE.keep = bool(on)
    SPARE.context = bool(on and context)
    SPARE.depth = depth
    if not on:
        SPARE.kill()


#: Worker processes a CPU case's rounds go to in turn. A CPU time depends on the process
#: (the core it lands on, where its memory is), so compare counts the spread between the
#: processes' medians as noise, as asv does; forked workers cost milliseconds.
CPU_PROCESSES = 3
#: Worker processes a GPU case's rounds go to one after another (:class:`ProcessSeries`).
#: A GPU time can depend on the process too (where its context's allocations land: one
#: device-graph case, docs/results/defaults-h200.md), so compare counts their spread as
#: noise; one at a time, so the memory ledger sees one context.
GPU_PROCESSES = 2
#: Sessions each GPU worker process opens one after another, each with a context of its
#: own, where $NQPROF_GPU_SESSIONS does not say otherwise (:func:`gpu_sessions`). A session
#: reopened in its process draws the case's time offset anew as a new process does, so a
#: run of K sessions a process has GPU_PROCESSES x K units whose medians compare counts as
#: noise: more units, narrower floors for the small cases whose offsets dominate, at the
#: cost of a context a reopen (docs/results/sessions-h200/README.md). One keeps the
#: default suite's time.
GPU_SESSIONS = 1
#: The variable that sets the sessions of each GPU worker process.
SESSIONS_VARIABLE = "NQPROF_GPU_SESSIONS"


#: With $NQPROF_GPU_SESSIONS=auto: the units a GPU case's run may take at most. It starts
#: with one session in each of GPU_PROCESSES processes and adds processes while its units'
#: spread would make a floor wider than the GPU cases' change to catch
#: (:meth:`nqprof.runner.RoundLoop.wants_unit`): the units only the cases whose time
#: depends on their placement need.
AUTO_UNITS_MAX = 8


def gpu_units_auto() -> bool:
    """Whether $NQPROF_GPU_SESSIONS asks for units added as a case needs them (``auto``)."""
    return os.environ.get(SESSIONS_VARIABLE, "").strip().lower() == "auto"


def gpu_sessions() -> int:
    """The sessions each GPU worker process opens: $NQPROF_GPU_SESSIONS, else GPU_SESSIONS
    (``auto``: one to start with, :func:`gpu_units_auto`); InputError for anything but a
    whole number from 1 to 16 or auto."""
    text = os.environ.get(SESSIONS_VARIABLE, "").strip()
    if not text or gpu_units_auto():
        return GPU_SESSIONS
    try:
        value = integer_text(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 16:
        raise errors.InputError(
            f"bad {SESSIONS_VARIABLE}={text!r}: the sessions of each GPU worker process, "
            "a whole number from 1 to 16, or auto"
        )
    return value


def open_runner(
    strategy: Strategy,
    n: int,
    params: dict[str, Any],
    timeout: float | None = None,
    isolate: bool = True,
    processes: int | None = None,
    sessions: int | None = None,
    rounds: int | None = None,
):
    """The runner for a strategy: watchdog worker processes (``processes``, default
    GPU_PROCESSES one after another for a GPU strategy, each opening ``sessions``, default
    :func:`gpu_sessions`, one after another; CPU_PROCESSES in turn for a CPU one), or
    (``isolate=False``) this process, without a timeout. A daemonic process (a Dask
    worker's) may start no child, so a CPU session runs there in-process; the cluster
    bounds its time. ``rounds``: the timed rounds the run will take (None: the auto rule);
    where they go round a short GPU round's sessions (:func:`rotation.worth`), each GPU
    worker takes them in turn over several (:mod:`nqprof.strategies.rotation`)."""
    if isolate and (strategy.needs_gpu or not mp.current_process().daemon):
        count = processes or (GPU_PROCESSES if strategy.needs_gpu else CPU_PROCESSES)
        opener = "open"
        # a bad $NQPROF_ROTATE is refused here, before a worker starts
        if strategy.needs_gpu and rotation.worth(rounds, count):
            opener = "open_rotated"

        def make() -> WorkerRunner:
            return WorkerRunner(strategy, n, params, timeout, opener=opener)

        if count == 1:
            return make()
        runners = [make() for _ in range(count)]
        if strategy.needs_gpu:
            per = gpu_sessions() if sessions is None else sessions
            grow = AUTO_UNITS_MAX - count * per if sessions is None and gpu_units_auto() else 0
            return ProcessSeries(runners, per, grow=max(0, grow), make=make)
        return RunnerPool(runners)
    return LocalRunner(strategy, n, params)
