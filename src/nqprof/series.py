"""Several worker runners of one case: :class:`RunnerPool` takes the rounds in turn (a CPU
case's processes), :class:`ProcessSeries` one after another, each process in sessions one
after another (a GPU case's units; under $NQPROF_GPU_SESSIONS=auto it may add processes as
the round loop asks). :func:`nqprof.runners.open_runner` picks one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import errors

if TYPE_CHECKING:
    from .result import Measurement

#: A :class:`nqprof.runners.WorkerRunner` (not imported: runners imports this module).
WorkerRunner = Any


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

    def probe(self) -> float | None:
        """The CPU speed probe in the worker that ran the latest round."""
        return self.runners[self.last].probe()

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
    """Worker runners of one case that take its rounds one after another, each in
    ``sessions`` sessions one after another: the first opens, runs its share, reopens its
    session (:meth:`WorkerRunner.reopen`) and runs the next share, and so on, and closes
    when :meth:`advance` opens the next process. ``last`` is the index of the unit (a
    session of a process) running now, ``phases`` how many there are; ``opened`` is what
    the first said when it opened. ``grow``: units that :meth:`add_unit` may add after the
    planned ones, each a fresh worker process that ``make`` returns (see
    :func:`gpu_units_auto`): a process's sessions share its level, so only a new process is
    a new draw of the case's offset (docs/results/verdicts-h200)."""

    size = 1

    def __init__(
        self,
        runners: list[WorkerRunner],
        sessions: int = 1,
        grow: int = 0,
        make: Callable[[], WorkerRunner] | None = None,
    ):
        if sessions < 1:
            raise errors.InputError(f"a worker process opens at least one session, not {sessions}")
        if grow and make is None:
            raise errors.InputError("a series that may grow needs a way to make a worker")
        self.runners, self.grow, self.make = runners, grow, make
        #: the worker process of each unit, in the order they run
        self.plan = [p for p in range(len(runners)) for _ in range(sessions)]
        first = runners[0]
        self.strategy, self.n, self.params = first.strategy, first.n, first.params
        self.last = 0
        self.opened: dict[str, Any] = {}

    @property
    def phases(self) -> int:
        return len(self.plan)

    def units(self, used: int) -> tuple[int, int]:
        """(worker processes, sessions) of the first ``used`` units."""
        return len(set(self.plan[:used])), used

    def add_unit(self) -> bool:
        """One more worker process (one session) after the units planned so far, where
        ``grow`` allows one: whether it was added."""
        if self.grow <= 0:  # a series that may grow has its make (__init__)
            return False
        self.grow -= 1
        self.runners.append(self.make())
        self.plan.append(len(self.runners) - 1)
        return True

    @property
    def _process(self) -> int:
        return self.plan[self.last]

    @property
    def _last_session(self) -> bool:
        """Whether the running unit is the last session of its process (the next unit, if
        any, is the next process)."""
        nxt = self.last + 1
        return nxt >= len(self.plan) or self.plan[nxt] != self.plan[self.last]

    @property
    def current(self) -> WorkerRunner:
        return self.runners[self._process]

    @property
    def _following(self) -> WorkerRunner | None:
        nxt = self._process + 1
        return self.runners[nxt] if nxt < len(self.runners) else None

    @property
    def pids(self) -> tuple[int, ...]:
        """The running worker's, and the next one's where it is prepared (its start is the
        run's own work, not other work on the machine)."""
        following = self._following
        return self.current.pids + (following.pids if following else ())

    def start(self) -> ProcessSeries:
        self.current.start()
        self.opened = self.current.opened
        return self

    def prepare_next(self) -> None:
        """Start the next worker's process while this one counts (:meth:`WorkerRunner.prepare`)."""
        following = self._following
        if following is not None and following.pid is None:
            following.prepare()

    def warm_next(self) -> None:
        """The next worker makes its context now (this one has timed the rounds of its last
        session; before that, its next session's context must be the only new one)."""
        following = self._following
        if following is not None and self._last_session:
            following.warm()

    def advance(self) -> None:
        """Open the next unit: the running process's next session, or (after its last) the
        next process, the running one closed first."""
        if self.last + 1 >= self.phases:
            raise errors.NqprofError("no further worker process in this series")
        if not self._last_session:
            self.last += 1
            self.current.reopen()
            return
        self.current.close()
        self.last += 1
        self.current.start()

    def run_once(self) -> Measurement:
        return self.current.run_once()

    def info(self) -> dict[str, Any]:
        return self.current.info()

    def close(self) -> None:
        self.current.close()
        for r in self.runners[self._process + 1 :]:  # a prepared worker that was not needed
            r.kill()

    def kill(self) -> None:
        for r in self.runners[self._process :]:
            r.kill()

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, *exc):
        self.kill() if exc_type is not None else self.close()
