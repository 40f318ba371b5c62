"""Running a strategy: the one round loop and the one-call :func:`solve`.

The round loop times rounds by the one rule of :mod:`nqprof.rounds` in the runner
:mod:`nqprof.runners` opens for the case (watchdog worker processes, or this process where
asked); each round's statistic is the GPU's CUDA-event time for GPU runs and the compute time
measured in the worker for CPU runs (``timer="compute"``), or the host round trip around the
round (``timer="wall"``). The loop also records the run's conditions
(:mod:`nqprof.conditions`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from . import conditions, errors, gpuconditions
from .options import TIMERS
from .problem import known_count
from .progress import Progress
from .result import Measurement, RunRecord
from .rounds import RoundRule, median
from .runners import GPU_PROCESSES, open_runner
from .spare import SPARE
from .spread import between_process_floor
from .strategies import get
from .textfmt import plural

#: The widest floor a run's units may leave before the loop adds a unit (where the runner
#: may): the change compare catches in a GPU case (analysis.stats.MIN_CHANGE; a test
#: checks that they agree).
UNIT_FLOOR = 0.05


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
        statistic=None,
    ):
        check_rounds(rounds, warmup)
        if timer not in TIMERS:
            raise errors.InputError(f"unknown timer {timer!r} (known: {', '.join(TIMERS)})")
        self.runner, self.warmup, self.timer = runner, warmup, timer
        #: A round's statistic from what the runner answered, where it is not a strategy's
        #: Measurement (a probe's reading: characterize launch's t1 - t2); None: the timer's.
        self._statistic = statistic
        self.rule = RoundRule.of(rounds)
        self.progress = progress or Progress(enabled=False)
        self.warm_seconds: list[float] = []
        self.measurements: list[Measurement] = []
        #: Host seconds around each timed round (the worker round trip included).
        self.round_trips: list[float] = []
        #: Each timed round's statistic, in seconds, and the unit that ran it (the worker
        #: process; of a GPU case, the session of a worker process).
        self.samples: list[float] = []
        self.round_process: list[int] = []
        #: Each timed round's session within its unit, where the unit's worker took the
        #: rounds in turn over several (:mod:`nqprof.strategies.rotation`); 0 otherwise.
        self.round_session: list[int] = []
        self.conditions: dict[str, Any] = {}
        #: The CPU speed probe's times in a CPU case's worker processes, taken between its
        #: timed rounds (:meth:`_probe`), and when the latest was taken.
        self.probes: list[float] = []
        self._probed, self._asked = 0.0, 0
        #: Whether another GPU worker request follows this case (the next case of a pytest
        #: run or a sweep): a spare worker (:mod:`nqprof.spare`) is then started once the
        #: last worker of the case has run its first round.
        self.keep_spare = SPARE.keep
        self._due = False  # a worker is to be prepared after the next round
        self._phase, self._last_phase = 0, 0
        self._watches: tuple = ()
        #: units the runner added after the planned ones (wants_unit)
        self.added_units = 0
        #: The prior for this case's units' variance at a median (seconds), from like cases
        #: run before it (:class:`nqprof.spread.UnitLedger`), that wants_unit reads; None:
        #: its own units alone.
        self.unit_prior: Callable[[float], tuple[float, int] | None] | None = None

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
            SPARE.start(depth=1 if SPARE.context else SPARE.depth or GPU_PROCESSES)
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
        if self._statistic is not None:
            return self._statistic(m)
        if self.timer == "wall":
            return round_trip
        return m.compute_s

    def one_round(self) -> Measurement:
        t0 = time.perf_counter()
        m = self._run_once()
        trip = time.perf_counter() - t0
        self.measurements.append(m)
        self.round_trips.append(trip)
        self.samples.append(self.statistic(m, trip))
        self.round_process.append(self.runner.last)
        self.round_session.append(getattr(m, "unit", 0))
        total = f"/{self.rule.fixed}" if self.rule.fixed else ""
        self.progress.update(f"round {len(self.measurements)}{total} {trip:.3f} s")
        return m

    def timed_rounds(self, rule: RoundRule, gpu: gpuconditions.GpuWatch | None) -> None:
        """Timed rounds in the running process until ``rule`` is met."""
        first, t0 = len(self.samples), time.perf_counter()
        while not rule.done(self.samples[first:], time.perf_counter() - t0):
            self.one_round()
            if gpu:
                gpu.round_done(len(self.measurements) - 1)
            else:
                self._probe()

    def _probe(self) -> None:
        """The CPU speed probe, untimed, in the worker that ran the latest round of a CPU
        case (:meth:`timed_rounds` asks only where no GPU is watched): after each worker's
        first round, then every conditions.PROBE_EVERY_S."""
        probe = getattr(self.runner, "probe", None)
        if probe is None:
            return
        first = self._asked < self.runner.size
        if first or time.perf_counter() - self._probed >= conditions.PROBE_EVERY_S:
            value = probe()
            self._probed, self._asked = time.perf_counter(), self._asked + 1
            if value:
                self.probes.append(value)

    def run(self) -> list[Measurement]:
        """For each worker process of the runner in turn (``phases``): its warm-up, then its
        share of the rounds (RoundRule.split), with the conditions around the timed rounds;
        after the last, more units where the runner may add them and :meth:`wants_unit`."""
        r = self.runner
        gpu = cpu = None
        rules = self.phase_rules()
        self._last_phase = len(rules) - 1
        phase = 0
        while True:
            self._phase = phase
            if phase:
                r.advance()
            # the next worker (of the series, or the next case's) starts after this one's
            # first round, while it counts (_prepare)
            self._due = phase < self._last_phase or self.keep_spare
            self.warm_up()
            if cpu is None:
                bus = r.opened.get("device", {}).get("pci_bus_id")
                gpu = gpuconditions.GpuWatch(bus, self.pids) if r.strategy.needs_gpu else None
                cpu = conditions.CpuWatch(self.pids)
                self._watches = tuple(w for w in (gpu, cpu) if w is not None)
                if gpu:
                    gpu.start()
            else:
                cpu.resume(self.pids)
                if gpu:
                    gpu.also_own(self.pids)
            self.timed_rounds(rules[min(phase, len(rules) - 1)], gpu)
            if phase == self._last_phase and self.wants_unit() and r.add_unit():
                self._last_phase += 1
                self.added_units += 1
            self._warm_next()
            cpu.pause()
            if phase == self._last_phase:
                break
            phase += 1
        self.conditions = {"cpu": conditions.worker_probes(cpu.finish(), self.probes)}
        if gpu:
            self.conditions["gpu"] = gpu.finish()
        return self.measurements

    def unit_floor(self) -> float:
        """The floor an A/A pair of runs like this one would get from its units alone:
        :func:`nqprof.spread.between_process_floor` with this run's units on both sides,
        moderated by :attr:`unit_prior` where set, as compare moderates it (0 with fewer
        than two units)."""
        if len(set(self.round_process)) < 2:
            return 0.0
        prior = self.unit_prior(median(self.samples)) if self.unit_prior is not None else None
        return between_process_floor(
            self.samples, self.samples, self.round_process, self.round_process, prior=prior
        )

    def wants_unit(self) -> bool:
        """Whether another unit should take rounds: the runner may add one (``grow``, a
        :class:`~nqprof.series.ProcessSeries` under $NQPROF_GPU_SESSIONS=auto), and this
        run's units would make a floor wider than :data:`UNIT_FLOOR`."""
        if not getattr(self.runner, "grow", 0):
            return False
        return self.unit_floor() > UNIT_FLOOR

    def phase_rules(self) -> list[RoundRule]:
        """The rule of each worker process that takes the rounds one after another (the
        runner's phases that the rule uses: ``--rounds 1`` opens one)."""
        return self.rule.split(self.runner.phases - self.added_units)

    def units(self) -> tuple[int, int]:
        """(worker processes, sessions) that take the rounds one after another: the
        runner's phases that the rule uses (a :class:`~nqprof.runners.ProcessSeries` opens
        ``sessions`` in each process), with any unit added."""
        used = len(self.phase_rules()) + self.added_units
        of = getattr(self.runner, "units", None)
        return of(used) if of is not None else (used, used)

    def describe(self) -> str:
        """The round rule this loop followed."""
        text = self.rule.describe()
        processes, sessions = self.units()
        if sessions == 1:
            return text
        if sessions == processes:
            return f"{text}; shared by {processes} worker processes one after another"
        workers = plural(processes, "worker process", "worker processes")
        return f"{text}; shared by {sessions} sessions in {workers} one after another"

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
        rec.round_session = list(self.round_session)
        rec.conditions = dict(self.conditions)
        processes, sessions = self.units()
        rec.process = {
            "workers": processes * r.size,
            **({"sessions": sessions} if sessions != processes else {}),
            **({"worker": r.opened["worker"]} if "worker" in r.opened else {}),
        }
        if self.added_units:
            rec.notes.append(
                f"{plural(self.added_units, 'worker process', 'worker processes')} added "
                "after the planned units (their "
                f"spread would have made a floor over ±{UNIT_FLOOR * 100:.0f}%); with them, "
                f"±{self.unit_floor() * 100:.1f}%"
            )
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
        # beside the worker's start: the watch needs it after the warm-up
        gpuconditions.start_nvml()
    marks = [("start", time.perf_counter())]
    with open_runner(strat, n, values, timeout, isolate, rounds=repeats) as runner:
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
