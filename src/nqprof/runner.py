"""Running a strategy: sessions in a watchdog worker process (or in-process where asked),
verification of every count, the one round loop and the one-call :func:`solve`.

Every session lives in a child process for its whole life (build, module load, limits,
every round), so that a hung CDP kernel, a crashed context or a CPU search far too large
for its timeout costs only that process: the parent waits for each reply at most
``timeout`` seconds, then kills the worker and raises :class:`WatchdogError` naming
strategy, N and parameters. A GPU worker is spawned (a fresh CUDA context, so its memory
ledger shows what this strategy alone reserves; what it does as it starts is
:mod:`nqprof.worker`'s); a CPU worker is forked where the platform can (fast to start), from
a fork server (:func:`nqprof.spare.forkserver_context`: never from this process, which may
run threads) that is handed the strategy itself. Ctrl-C, or any error, in the parent
kills its workers at once rather than waiting for a round to end, and a worker dies with
its parent.

The round loop times rounds by the one rule of :mod:`nqprof.rounds`; each round's statistic
is the GPU's CUDA-event time for GPU runs and the compute time measured in the worker for
CPU runs (``timer="compute"``), or the host round trip around the round (``timer="wall"``).
The loop also records the run's conditions (:mod:`nqprof.conditions`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Any

from . import conditions, errors
from .cuda.nvtx import nvtx_range
from .errors import CountMismatchError, NqprofError, WatchdogError
from .options import TIMERS, default_timeout, describe
from .problem import known_count
from .progress import Progress
from .result import Measurement, RunRecord
from .rounds import RoundRule
from .spare import SPARE, start_worker, warm
from .strategies import Strategy, get
from .textfmt import plural
from .worker import Target, under_profiler


def compute_statistic(m: Measurement) -> float:
    """A round's statistic under the compute timer: the CUDA-event time of a GPU round, the
    worker's clock around the computation of a CPU round."""
    return m.gpu_s if m.gpu_s is not None else m.wall_s


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
            self._session.run_once(),
            self.strategy.measurement_build(self.params),
        )

    def info(self) -> dict[str, Any]:
        return self._session.info()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    kill = close

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


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
        named = Target(
            type(self.strategy).__module__,
            getattr(self.strategy, "worker_attribute", "STRATEGY"),
        )
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


#: Whether every round loop keeps a spare GPU worker for the worker request that follows
#: (:func:`keep_spares`): for a run of many GPU cases one after another, such as the GPU tests.
KEEP_SPARES = False


def keep_spares(on: bool, context: bool = False, depth: int | None = None) -> None:
    """From now on, start a spare GPU worker during each case for the next (``on``), or stop
    doing so and end the spare that waits. ``context``: the spares make their CUDA context
    at once, while the case before counts (where no time is compared: tests), one at a time;
    else ``depth`` of them (default: a case's GPU_PROCESSES) import and start the driver
    ahead, and the oldest makes its context once the case before has timed its rounds."""
    global KEEP_SPARES
    KEEP_SPARES = bool(on)
    SPARE.context = bool(on and context)
    SPARE.depth = depth or GPU_PROCESSES
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


class RunnerPool:
    """Several worker runners of one case that take the rounds in turn; ``last`` is the
    index of the one that ran the latest round."""

    phases = 1

    def __init__(self, runners: list[WorkerRunner]):
        self.runners = runners
        first = runners[0]
        self.strategy, self.n, self.params = first.strategy, first.n, first.params
        self.last, self._next = 0, 0

    @property
    def size(self) -> int:
        return len(self.runners)

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(pid for r in self.runners for pid in r.pids)

    @property
    def opened(self) -> dict[str, Any]:
        return self.runners[0].opened

    def start(self) -> RunnerPool:
        try:
            for r in self.runners:
                r.start()
        except BaseException:
            self.kill()
            raise
        return self

    def run_once(self) -> Measurement:
        self.last, self._next = self._next, (self._next + 1) % len(self.runners)
        return self.runners[self.last].run_once()

    def info(self) -> dict[str, Any]:
        return self.runners[0].info()

    def close(self) -> None:
        for r in self.runners:
            r.close()

    def kill(self) -> None:
        for r in self.runners:
            r.kill()

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, *exc):
        self.kill() if exc_type is not None else self.close()


class ProcessSeries:
    """Worker runners of one case that take its rounds one after another: the first opens,
    runs its share and closes when :meth:`advance` opens the next. ``last`` is the index of
    the one running now; ``opened`` is what the first said when it opened."""

    size = 1

    def __init__(self, runners: list[WorkerRunner]):
        self.runners = runners
        first = runners[0]
        self.strategy, self.n, self.params = first.strategy, first.n, first.params
        self.last = 0
        self.opened: dict[str, Any] = {}

    @property
    def phases(self) -> int:
        return len(self.runners)

    @property
    def current(self) -> WorkerRunner:
        return self.runners[self.last]

    @property
    def pids(self) -> tuple[int, ...]:
        """The running worker's, and the next one's where it is prepared (its start is the
        run's own work, not other work on the machine)."""
        following = self.runners[self.last + 1].pids if self.last + 1 < len(self.runners) else ()
        return self.current.pids + following

    def start(self) -> ProcessSeries:
        self.current.start()
        self.opened = self.current.opened
        return self

    def prepare_next(self) -> None:
        """Start the next worker's process while this one counts (:meth:`WorkerRunner.prepare`)."""
        if self.last + 1 < len(self.runners) and self.runners[self.last + 1].pid is None:
            self.runners[self.last + 1].prepare()

    def warm_next(self) -> None:
        """The next worker makes its context now (this one has timed its rounds)."""
        if self.last + 1 < len(self.runners):
            self.runners[self.last + 1].warm()

    def advance(self) -> None:
        """Close the running process and open the next."""
        if self.last + 1 >= len(self.runners):
            raise errors.NqprofError("no further worker process in this series")
        self.current.close()
        self.last += 1
        self.current.start()

    def run_once(self) -> Measurement:
        return self.current.run_once()

    def info(self) -> dict[str, Any]:
        return self.current.info()

    def close(self) -> None:
        self.current.close()
        for r in self.runners[self.last + 1 :]:  # a prepared worker that was not needed
            r.kill()

    def kill(self) -> None:
        for r in self.runners[self.last :]:
            r.kill()

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, *exc):
        self.kill() if exc_type is not None else self.close()


def open_runner(
    strategy: Strategy,
    n: int,
    params: dict[str, Any],
    timeout: float | None = None,
    isolate: bool = True,
    processes: int | None = None,
):
    """The runner for a strategy: watchdog worker processes (``processes``, default
    GPU_PROCESSES one after another for a GPU strategy and CPU_PROCESSES in turn for a CPU
    one), or (``isolate=False``) this process, without a timeout. A daemonic process (a
    Dask worker's) may start no child, so a CPU session runs there in-process; the cluster
    bounds its time."""
    if isolate and (strategy.needs_gpu or not mp.current_process().daemon):
        count = processes or (GPU_PROCESSES if strategy.needs_gpu else CPU_PROCESSES)
        if count == 1:
            return WorkerRunner(strategy, n, params, timeout)
        runners = [WorkerRunner(strategy, n, params, timeout) for _ in range(count)]
        return ProcessSeries(runners) if strategy.needs_gpu else RunnerPool(runners)
    return LocalRunner(strategy, n, params)


def check_rounds(rounds: int | None, warmup: int) -> None:
    """Rounds >= 1 (or None: auto) and warm-up >= 0, else an :class:`InputError`."""
    if (rounds is not None and rounds < 1) or warmup < 0:
        raise errors.InputError(f"rounds must be >= 1 and warmup >= 0, got {rounds} and {warmup}")


class RoundLoop:
    """The one round loop of nqprof (`nqprof solve`, `nqprof sweep` and the pytest plugin):
    untimed but verified warm-up rounds, then timed rounds until the :class:`RoundRule`
    of ``rounds`` (None: auto) is met, then the run record with each round's statistic
    (``timer``: compute or wall, see the module) and the run's conditions."""

    def __init__(
        self,
        runner,
        rounds: int | None,
        warmup: int,
        progress: Progress | None = None,
        timer: str = "compute",
    ):
        check_rounds(rounds, warmup)
        if timer not in TIMERS:
            raise errors.InputError(f"unknown timer {timer!r} (known: {', '.join(TIMERS)})")
        self.runner, self.warmup, self.timer = runner, warmup, timer
        self.rule = RoundRule.of(rounds)
        self.progress = progress or Progress(enabled=False)
        self.warm_seconds: list[float] = []
        self.measurements: list[Measurement] = []
        #: Host seconds around each timed round (the worker round trip included).
        self.round_trips: list[float] = []
        #: Each timed round's statistic, in seconds, and the worker process that ran it.
        self.samples: list[float] = []
        self.round_process: list[int] = []
        self.conditions: dict[str, Any] = {}
        #: Whether another GPU worker request follows this case (the next case of a pytest
        #: run or a sweep): a spare worker (:mod:`nqprof.spare`) is then started once the
        #: last worker of the case has run its first round.
        self.keep_spare = KEEP_SPARES
        self._due = False  # a worker is to be prepared after the next round
        self._phase, self._last_phase = 0, 0
        self._watches: tuple = ()

    def _run_once(self) -> Measurement:
        m = self.runner.run_once()
        if self._due:
            self._due = False
            self._prepare()
        return m

    def _prepare(self) -> None:
        """Start the next worker while this one counts: the next of the series, or after
        the last a spare for the next case (:attr:`keep_spare`). Only now, after the running
        worker's first round: its memory ledger is complete (its last mark is after that
        round), and a worker that starts may make a context on the GPU."""
        r = self.runner
        if self._phase < self._last_phase:
            r.prepare_next()
        if self.keep_spare:
            # both workers of the next case, started a whole phase ahead (their imports
            # take longer than a phase's rounds); spares that make their context at once
            # (tests) are kept to one
            SPARE.start(depth=1 if SPARE.context else SPARE.depth)
        for watch in self._watches:
            watch.also_own(self.pids)

    def _warm_next(self) -> None:
        """This worker's rounds are timed: the worker to follow makes its context while this
        one's record and close go on."""
        if self._phase < self._last_phase:
            getattr(self.runner, "warm_next", lambda: None)()
        elif self.keep_spare:
            SPARE.warm()

    @property
    def pids(self) -> tuple[int, ...]:
        """The case's worker processes now, with any started to follow them."""
        return self.runner.pids + (SPARE.pids if self.keep_spare else ())

    def warm_up(self) -> None:
        """``warmup`` untimed rounds for each worker process."""
        total = self.warmup * self.runner.size
        for i in range(total):
            t0 = time.perf_counter()
            self._run_once()
            self.warm_seconds.append(time.perf_counter() - t0)
            self.progress.update(f"warm-up {i + 1}/{total} {self.warm_seconds[-1]:.3f} s")

    def statistic(self, m: Measurement, round_trip: float) -> float:
        if self.timer == "wall":
            return round_trip
        return compute_statistic(m)

    def one_round(self) -> Measurement:
        t0 = time.perf_counter()
        m = self._run_once()
        trip = time.perf_counter() - t0
        self.measurements.append(m)
        self.round_trips.append(trip)
        self.samples.append(self.statistic(m, trip))
        self.round_process.append(self.runner.last)
        total = f"/{self.rule.fixed}" if self.rule.fixed else ""
        self.progress.update(f"round {len(self.measurements)}{total} {trip:.3f} s")
        return m

    def timed_rounds(self, rule: RoundRule, gpu: conditions.GpuWatch | None) -> None:
        """Timed rounds in the running process until ``rule`` is met."""
        first, t0 = len(self.samples), time.perf_counter()
        while not rule.done(self.samples[first:], time.perf_counter() - t0):
            self.one_round()
            if gpu:
                gpu.round_done(len(self.measurements) - 1)

    def run(self) -> list[Measurement]:
        """For each worker process of the runner in turn (``phases``): its warm-up, then its
        share of the rounds (RoundRule.split), with the conditions around the timed rounds."""
        r = self.runner
        gpu = cpu = None
        rules = self.phase_rules()
        self._last_phase = len(rules) - 1
        for phase, rule in enumerate(rules):
            self._phase = phase
            if phase:
                r.advance()
            # the next worker (of the series, or the next case's) starts after this one's
            # first round, while it counts (_prepare)
            self._due = phase < self._last_phase or self.keep_spare
            self.warm_up()
            if cpu is None:
                bus = r.opened.get("device", {}).get("pci_bus_id")
                gpu = conditions.GpuWatch(bus, self.pids) if r.strategy.needs_gpu else None
                cpu = conditions.CpuWatch(self.pids)
                self._watches = tuple(w for w in (gpu, cpu) if w is not None)
                if gpu:
                    gpu.start()
            else:
                cpu.resume(self.pids)
                if gpu:
                    gpu.also_own(self.pids)
            self.timed_rounds(rule, gpu)
            self._warm_next()
            cpu.pause()
        self.conditions = {"cpu": cpu.finish()}
        if gpu:
            self.conditions["gpu"] = gpu.finish()
        return self.measurements

    def phase_rules(self) -> list[RoundRule]:
        """The rule of each worker process that takes the rounds one after another (the
        runner's phases that the rule uses: ``--rounds 1`` opens one)."""
        return self.rule.split(self.runner.phases)

    def describe(self) -> str:
        """The round rule this loop followed."""
        text = self.rule.describe()
        used = len(self.phase_rules())
        return text if used == 1 else f"{text}; shared by {used} worker processes one after another"

    def record(self, info: dict[str, Any]) -> RunRecord:
        r = self.runner
        rec = RunRecord.from_measurements(
            r.strategy.name, r.n, r.params, known_count(r.n), self.measurements, info
        )
        rec.timer, rec.samples, rec.round_trips = (
            self.timer,
            list(self.samples),
            list(self.round_trips),
        )
        rec.round_process = list(self.round_process)
        rec.conditions = dict(self.conditions)
        rec.process = {
            "workers": len(self.phase_rules()) * r.size,
            **({"worker": r.opened["worker"]} if "worker" in r.opened else {}),
        }
        throttled = (self.conditions.get("gpu") or {}).get("throttled_rounds")
        if throttled:
            rec.notes.append(
                f"the GPU reported a slowdown after {len(throttled)} of "
                f"{plural(len(self.samples), 'round')} "
                f"({', '.join(self.conditions['gpu'].get('reasons_seen') or [])})"
            )
        return rec


def solve(
    strategy: str,
    n: int,
    params: dict[str, Any] | None = None,
    repeats: int | None = None,
    warmup: int = 1,
    timeout: float | None = None,
    isolate: bool = True,
    progress: Progress | None = None,
    timer: str = "compute",
    keep_spare: bool = False,
) -> RunRecord:
    """Run ``strategy`` on ``n`` queens for ``repeats`` timed rounds (None: the auto rule of
    :mod:`nqprof.rounds`) after ``warmup`` rounds, and return the verified record. Raises an
    :class:`NqprofError` on bad input, a wrong count, device failures or a hang.
    ``keep_spare``: a GPU worker request follows (the next case of a sweep), so a spare
    worker is started for it during the rounds (:mod:`nqprof.spare`)."""
    strat = get(strategy)
    values = strat.resolve(n, params)
    n = int(n)
    check_rounds(repeats, warmup)  # before a worker starts
    if strat.needs_gpu:
        conditions.start_nvml()  # beside the worker's start: the watch needs it after the warm-up
    marks = [("start", time.perf_counter())]
    with open_runner(strat, n, values, timeout, isolate) as runner:
        marks.append(("open", time.perf_counter()))
        loop = RoundLoop(runner, repeats, warmup, progress, timer)
        loop.keep_spare = loop.keep_spare or (keep_spare and strat.needs_gpu and isolate)
        loop.run()
        marks.append(("rounds", time.perf_counter()))
        record = loop.record(runner.info())
        marks.append(("info", time.perf_counter()))
    marks.append(("close", time.perf_counter()))
    # the parent's side of the fixed cost: waiting for the first worker to open, the rounds
    # (with the warm-up, the watches and any further worker's start), the record, the close
    record.process["parent"] = {
        f"{label}_s": round(t - t0, 4)
        for (_, t0), (label, t) in zip(marks, marks[1:], strict=False)
    }
    return record
