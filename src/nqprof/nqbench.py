"""One benchmark case run through pytest-benchmark: what the ``nqbench`` fixture gives.

nqprof runs the case's rounds itself (the one round loop of :mod:`nqprof.runner`, the one
round rule of :mod:`nqprof.rounds`), then hands pytest-benchmark each round's statistic
through :class:`ReplayClock`, a clock whose consecutive readings differ by exactly those
times. So what pytest-benchmark records, prints, saves, compares and draws is the statistic
nqprof measured: by default the CUDA-event time of a GPU case and the worker's own clock
around the computation of a CPU case (``--nq-timer=wall``: the host round trip), never the
harness around it. The run record, both sample lists, the case's identity and the run's
conditions go into ``extra_info``. With ``--nq-cpu-metric=instructions``
(:mod:`nqprof.benchinstr`) a CPU case's rounds are handed its instructions instead, one
nanosecond each, the same in every round.
"""

from __future__ import annotations

from typing import Any

from . import __version__
from .benchadapter import replay, used
from .errors import CountMismatchError, UnavailableError
from .instructions import CLOCK_NAME as INSTRUCTIONS_CLOCK
from .instructions import samples as instruction_samples
from .options import Case, Settings, describe
from .result import RunRecord
from .strategies import Strategy, get

#: What the table calls each timer, and the clock name pytest-benchmark saves.
TIMER_LABELS = {"compute": "compute time", "wall": "host round trip"}
#: Record fields left out of extra_info: the samples below carry the same numbers.
_LEFT_OUT = ("wall_times", "gpu_times", "samples", "round_trips", "round_process")


def clock_name(timer: str, strategy: Strategy) -> str:
    if timer == "wall":
        return "nqprof.host_round_trip"
    return "nqprof.cuda_events" if strategy.needs_gpu else "nqprof.worker_clock"


def extra_info(
    record: RunRecord,
    strategy: Strategy,
    warmup: int,
    case: Case | None = None,
    rule: str | None = None,
) -> dict[str, Any]:
    """What a saved benchmark carries: the run record (its sample lists once, as
    ``samples_compute`` and ``samples_wall``), the case as the user gave it, and how the
    rounds were taken (``rule``: :meth:`nqprof.rounds.RoundRule.describe`)."""
    info = {k: v for k, v in record.to_dict().items() if k not in _LEFT_OUT}
    compute = record.gpu_times if record.gpu_times else record.wall_times
    info.update(
        samples_compute=[float(f"{t:.9g}") for t in compute],
        samples_wall=[float(f"{t:.9g}") for t in record.round_trips],
        samples_process=list(record.round_process),
        device_kind=strategy.device,
        cdp=strategy.cdp,
        warmup=warmup,
        nqprof=__version__,
    )
    if strategy.min_effect is not None:
        info["min_effect"] = strategy.min_effect
    if case is not None:
        info["case"] = {"strategy": case.strategy, "n": case.n, "given": dict(case.given)}
    if rule is not None:
        info["round_rule"] = rule
    return info


def skip_unless_runnable(strategy: Strategy) -> None:
    """Skip the test, with the reason, if ``strategy`` needs a GPU this machine lacks."""
    if strategy.needs_gpu:
        import pytest

        from .cuda.device import gpu_available

        ok, why = gpu_available()
        if not ok:
            pytest.skip(f"{strategy.name} needs a GPU: {why}")


def group_name(n: int, timer: str) -> str:
    return f"N={n:02d}, {TIMER_LABELS[timer]}"


class NQBench:
    """One case run through pytest-benchmark. The ``nqbench`` fixture gives one per
    parametrized case; tests that pick their case at run time build one themselves."""

    def __init__(self, benchmark, settings: Settings, case: Case):
        self.benchmark, self.settings, self.case = benchmark, settings, case
        self.strategy = get(case.strategy)
        self.params = self.strategy.resolve(case.n, dict(case.given))
        self.record: RunRecord | None = None
        self._runner = None
        #: The session's --nq-cluster bench: the case then runs on a cluster worker.
        self.remote = None
        #: The session's --nq-trace :class:`~nqprof.benchtrace.Tracer`: one profiled round
        #: after the timed ones.
        self.tracer = None
        #: The round rule bounded by pytest-benchmark's options (:mod:`nqprof.benchopts`);
        #: None: the rule of ``settings.rounds``.
        self.rule = None
        #: The case pytest runs next: a GPU case followed by a GPU case starts a spare worker
        #: for it while it counts (:mod:`nqprof.spare`).
        self.next_case: Case | None = None
        #: The session's :class:`~nqprof.instructions.Counter` (--nq-cpu-metric=instructions,
        #: :mod:`nqprof.benchinstr`): a CPU case then reports one round's instructions.
        self.instructions = None
        #: --nq-vs (:mod:`nqprof.benchab`): the parameters variant B changes; empty: the
        #: case runs as usual.
        self.vs: dict[str, str] = {}
        #: The units of the cases this session ran before (:class:`nqprof.spread.UnitLedger`):
        #: a case that may add units reads its strategy's as a prior. None: none kept.
        self.units = None

    @property
    def label(self) -> str:
        return describe(self.case.strategy, self.case.n, self.params)

    def run(self) -> RunRecord:
        """Prepare (untimed), warm up (untimed, verified), time the rounds, record."""
        try:
            return self._run()
        except KeyboardInterrupt:  # the workers are stopped now, not asked to finish first
            used(self.benchmark)
            self.kill()
            raise
        except BaseException:
            used(self.benchmark)
            raise

    def _run(self) -> RunRecord:
        import pytest

        from .runner import RoundLoop
        from .runners import open_runner

        if self.remote is not None:
            return self.remote.run(self)
        skip_unless_runnable(self.strategy)
        if self.vs:
            from .benchab import run as run_ab

            try:
                return run_ab(self)
            except CountMismatchError as exc:
                pytest.fail(str(exc), pytrace=False)
        disabled = getattr(self.benchmark, "disabled", False)
        rounds, warmup = (1, 0) if disabled else (self.settings.rounds, self.settings.warmup)
        try:
            try:
                self._runner = open_runner(
                    self.strategy, self.case.n, self.params, self.settings.timeout, rounds=rounds
                ).start()
            except UnavailableError as exc:
                pytest.skip(f"{self.label}: {exc}")
            loop = RoundLoop(self._runner, rounds, warmup, timer=self.settings.timer)
            if self.rule is not None and not disabled:
                loop.rule = self.rule
            loop.keep_spare = not disabled and self.gpu_follows()
            name, ledger = self.strategy.name, self.units
            if ledger is not None:
                loop.unit_prior = lambda median_s: ledger.prior(name, median_s)
            loop.run()
            if ledger is not None and not disabled:
                ledger.add(name, loop.samples, loop.round_process)
        except CountMismatchError as exc:
            pytest.fail(str(exc), pytrace=False)
        record = self.finish(loop.record(self._runner.info()), loop.describe())
        if self.tracer is not None and not disabled:
            self.close()  # the profiled child gets the GPU to itself
            self.benchmark.extra_info[self.tracer.key] = self.tracer.profile(self)
        return record

    def gpu_follows(self) -> bool:
        """Whether the case pytest runs next is a GPU case that runs here after this GPU
        case (not a profiled one: that wants the GPU to itself)."""
        nxt = self.next_case
        if nxt is None or self.tracer is not None or not self.strategy.needs_gpu:
            return False
        import pytest

        try:
            strategy = get(nxt.strategy)
            skip_unless_runnable(strategy)
        except (Exception, pytest.skip.Exception):  # that case's own run says why
            return False
        return strategy.needs_gpu

    def finish(self, record: RunRecord, rule: str | None = None, **more: Any) -> RunRecord:
        """Record a measured run: its statistic into pytest-benchmark, the rest into
        extra_info (the round rule's description ``rule``, and ``more``)."""
        benchmark = self.benchmark
        samples, clock, group = (
            record.samples,
            clock_name(record.timer, self.strategy),
            group_name(self.case.n, record.timer),
        )
        if self.counts_instructions():
            if not record.instructions:
                record.instructions = self.count_instructions(record)
            samples = instruction_samples(record.instructions, len(record.samples))
            clock, group = INSTRUCTIONS_CLOCK, f"N={self.case.n:02d}, instructions"
            more = {"metric": "instructions", **more}
        if benchmark.group is None:
            benchmark.group = group
        replay(benchmark, samples, clock)
        self.record = record
        benchmark.extra_info.update(
            extra_info(record, self.strategy, self.settings.warmup, self.case, rule), **more
        )
        return record

    def counts_instructions(self) -> bool:
        """Whether this case reports instructions: a CPU case, benchmarked, with
        --nq-cpu-metric=instructions."""
        return (
            self.instructions is not None
            and not self.strategy.needs_gpu
            and not getattr(self.benchmark, "disabled", False)
        )

    def count_instructions(self, record: RunRecord) -> dict[str, Any]:
        """One round's instructions under Valgrind (nqprof.instructions); a failure fails
        the test with its one line."""
        import pytest

        from .errors import NqprofError

        try:
            return self.instructions.measure(self.strategy, self.case.n, record.params)
        except NqprofError as exc:
            pytest.fail(f"{self.label}: instructions: {exc}", pytrace=False)

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    def kill(self) -> None:
        if self._runner is not None:
            self._runner.kill()
            self._runner = None

    def __enter__(self) -> NQBench:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
