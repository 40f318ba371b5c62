"""Running a strategy: sessions in-process (CPU) or in a watchdog worker process (GPU),
verification of every count, and the one-call :func:`solve`.

A GPU session lives in a child process for its whole life (build, module load, limits,
every round), so that a hung CDP kernel or a crashed context costs only that process: the
parent waits for each reply at most ``timeout`` seconds, then kills the worker and raises
:class:`WatchdogError` naming strategy, N and parameters. Each worker creates a fresh CUDA
context, so its memory ledger shows what this strategy alone reserves.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import sys
import time
import traceback
from typing import Any, Callable

from . import errors
from .cuda.nvtx import nvtx_range
from .progress import Progress
from .errors import CountMismatchError, NqprofError, WatchdogError
from .options import AUTO_ROUNDS_RANGE, AUTO_ROUNDS_SECONDS, DEFAULT_TIMEOUT
from .problem import known_count
from .result import Measurement, RunRecord
from .strategies import Strategy, get



def describe(strategy: str, n: int, params: dict[str, Any]) -> str:
    """``dp3 N=17 (block=128, depth=4)``: how errors name a run."""
    ps = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"{strategy} N={n}" + (f" ({ps})" if ps else "")


def verify(strategy: str, n: int, params: dict[str, Any], m: Measurement, measurement_build: str | None = None
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
    """A session run in this process (CPU strategies)."""

    def __init__(self, strategy: Strategy, n: int, params: dict[str, Any]):
        self.strategy, self.n, self.params = strategy, n, params
        self._session = None

    def start(self) -> "LocalRunner":
        self._session = self.strategy.open(self.n, self.params)
        return self

    def run_once(self) -> Measurement:
        return verify(self.strategy.name, self.n, self.params, self._session.run_once(),
                      self.strategy.measurement_build(self.params))

    def info(self) -> dict[str, Any]:
        return self._session.info()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


def _worker_main(conn, module: str, n: int, params: dict[str, Any], opener: str = "open") -> None:
    """The worker process: open the session of ``module``'s STRATEGY (its method
    ``opener``), then answer run/info/close requests and ("call", method, *args)."""

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

    def open_session():
        nonlocal session
        import importlib

        session = getattr(importlib.import_module(module).STRATEGY, opener)(n, params)
        return session.info()

    if reply(open_session):
        while True:
            try:
                cmd = conn.recv()
            except EOFError:
                break
            if cmd == "run":
                reply(session.run_once)
            elif cmd == "info":
                reply(session.info)
            elif cmd == "close":
                reply(session.close)
                break
            elif isinstance(cmd, tuple) and cmd[0] == "call":
                reply(lambda: getattr(session, cmd[1])(*cmd[2:]))
    conn.close()


class WorkerRunner:
    """A session run in a child process, each request guarded by a timeout."""

    def __init__(self, strategy: Strategy, n: int, params: dict[str, Any], timeout: float = DEFAULT_TIMEOUT,
                 opener: str = "open"):
        self.strategy, self.n, self.params, self.timeout = strategy, n, params, timeout
        self.opener = opener
        self._proc = None
        self._conn = None

    @property
    def label(self) -> str:
        return describe(self.strategy.name, self.n, self.params)

    def start(self) -> "WorkerRunner":
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=_worker_main,
            args=(child, type(self.strategy).__module__, self.n, self.params, self.opener),
            daemon=True,
        )
        self._proc.start()
        child.close()
        self._conn = parent
        self._receive("open")
        return self

    def _receive(self, step: str) -> Any:
        if not self._conn.poll(self.timeout):
            self._kill()
            raise WatchdogError(
                f"{self.label}: no answer to '{step}' within {self.timeout:g} s; worker killed "
                "(a CDP kernel may hang when device launches fail; raise the timeout if the run is just long)"
            )
        try:
            answer = self._conn.recv()
        except (EOFError, ConnectionError):
            self._proc.join(5)
            code = self._proc.exitcode
            self._kill()
            raise WatchdogError(f"{self.label}: worker process died during '{step}' (exit code {code})") from None
        if answer[0] == "error":
            _, kind, text = answer
            self.close()
            raise getattr(errors, kind, NqprofError)(text)
        return answer[1]

    def run_once(self) -> Measurement:
        self._conn.send("run")
        return verify(self.strategy.name, self.n, self.params, self._receive("run"),
                      self.strategy.measurement_build(self.params))

    def call(self, method: str, *args) -> Any:
        """``session.method(*args)`` in the worker, under the same timeout."""
        self._conn.send(("call", method, *args))
        return self._receive(method)

    def info(self) -> dict[str, Any]:
        self._conn.send("info")
        return self._receive("info")

    def close(self) -> None:
        if self._proc is None:
            return
        try:
            if self._proc.is_alive():
                self._conn.send("close")
                if self._conn.poll(min(self.timeout, 30)):
                    self._conn.recv()
                self._proc.join(10)
        except (OSError, EOFError):
            pass
        self._kill()

    def _kill(self) -> None:
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

    def __exit__(self, *exc):
        self.close()


def open_runner(strategy: Strategy, n: int, params: dict[str, Any], timeout: float = DEFAULT_TIMEOUT,
                isolate: bool | None = None):
    """The runner for a strategy: a worker process for GPU strategies (or ``isolate=True``)."""
    if isolate is None:
        isolate = strategy.needs_gpu
    if isolate:
        return WorkerRunner(strategy, n, params, timeout)
    return LocalRunner(strategy, n, params)


def auto_rounds(warmup_seconds: list[float]) -> int:
    """Rounds that fill AUTO_ROUNDS_SECONDS at the warm-up's pace, within AUTO_ROUNDS_RANGE."""
    lo, hi = AUTO_ROUNDS_RANGE
    if not warmup_seconds:
        return lo
    pace = max(min(warmup_seconds), 1e-9)
    return int(min(hi, max(lo, math.ceil(AUTO_ROUNDS_SECONDS / pace))))


def check_rounds(rounds: int | None, warmup: int) -> None:
    """Rounds >= 1 (or None: auto) and warm-up >= 0, else an :class:`InputError`."""
    if (rounds is not None and rounds < 1) or warmup < 0:
        raise errors.InputError(f"rounds must be >= 1 and warmup >= 0, got {rounds} and {warmup}")


class RoundLoop:
    """The one round loop of nqprof (`nqprof solve`, `nqprof sweep` and the pytest plugin):
    untimed but verified warm-up rounds, then ``rounds`` timed ones (None: :func:`auto_rounds`
    from the warm-up's pace), then the run record. The plugin lets pytest-benchmark call
    :meth:`one_round`; the others call :meth:`run`."""

    def __init__(self, runner, rounds: int | None, warmup: int, progress: Progress | None = None):
        check_rounds(rounds, warmup)
        self.runner, self.warmup, self._rounds = runner, warmup, rounds
        self.progress = progress or Progress(enabled=False)
        self.warm_seconds: list[float] = []
        self.measurements: list[Measurement] = []

    @property
    def rounds(self) -> int:
        return self._rounds or auto_rounds(self.warm_seconds)

    def warm_up(self) -> None:
        for i in range(self.warmup):
            t0 = time.perf_counter()
            self.runner.run_once()
            self.warm_seconds.append(time.perf_counter() - t0)
            self.progress.update(f"warm-up {i + 1}/{self.warmup} {self.warm_seconds[-1]:.3f} s")

    def one_round(self) -> Measurement:
        t0 = time.perf_counter()
        m = self.runner.run_once()
        self.measurements.append(m)
        self.progress.update(f"round {len(self.measurements)}/{self.rounds} {time.perf_counter() - t0:.3f} s")
        return m

    def run(self) -> list[Measurement]:
        self.warm_up()
        for _ in range(self.rounds):
            self.one_round()
        return self.measurements

    def record(self, info: dict[str, Any]) -> RunRecord:
        r = self.runner
        return RunRecord.from_measurements(r.strategy.name, r.n, r.params, known_count(r.n), self.measurements, info)


def solve(
    strategy: str,
    n: int,
    params: dict[str, Any] | None = None,
    repeats: int | None = 1,
    warmup: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
    isolate: bool | None = None,
    progress: Progress | None = None,
) -> RunRecord:
    """Run ``strategy`` on ``n`` queens ``repeats`` times (None: auto) after ``warmup``
    rounds, and return the verified record. Raises an :class:`NqprofError` on bad input, a
    wrong count, device failures or a hang."""
    strat = get(strategy)
    values = strat.resolve(n, params)
    n = int(n)
    check_rounds(repeats, warmup)  # before a worker starts
    with open_runner(strat, n, values, timeout, isolate) as runner:
        loop = RoundLoop(runner, repeats, warmup, progress)
        loop.run()
        return loop.record(runner.info())
