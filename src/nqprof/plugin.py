"""The pytest plugin: N-Queens strategies x N x parameters as pytest-benchmark benchmarks.

Registered through the ``pytest11`` entry point ``nqprof``. A test that asks for the
:func:`nqbench` fixture is parametrized over the cases the ``--nq-*`` options select and
runs one case per test::

    def test_nqueens(nqbench):
        assert nqbench.run().verified

Each case is resolved at collection (an invalid parameter combination becomes a skipped
test whose reason is the validation message), prepared outside the timed region (worker
process, build, module load, limits), warmed up, then timed by
``benchmark.pedantic(..., iterations=1)``. A wrong count fails the test. GPU strategies are
skipped, with the reason, where there is no GPU or no PyCUDA. The run record goes into
``benchmark.extra_info``; the machine's GPU, driver, toolkit and PyCUDA into machine_info.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import pytest

from . import __version__
from .cluster import bench as cluster_bench
from .errors import CountMismatchError, InputError, NqprofError, UnavailableError
from .problem import known_count, validate_n
from .result import Measurement, RunRecord
from .runner import DEFAULT_TIMEOUT, describe, open_runner
from .strategies import Strategy, get, names

FIXTURE = "nqbench"

#: N values benchmarked when --nq-n is not given (inclusive), for every strategy, so that
#: the speedup over serial covers every N: serial needs about 3 s at N=16 (a GPU strategy
#: milliseconds), and the whole default suite finishes in minutes.
DEFAULT_N: tuple[int, int] = (8, 16)

#: --nq-rounds auto: enough rounds to fill AUTO_ROUNDS_SECONDS after the warm-up,
#: within AUTO_ROUNDS_RANGE.
AUTO_ROUNDS_SECONDS = 1.0
AUTO_ROUNDS_RANGE = (5, 100)

#: machine_info fields whose difference makes timings of two runs incomparable.
MACHINE_KEY = "nqprof"
COMPARED_MACHINE_FIELDS = ("gpu", "cuda_toolkit", "driver")


# -- option parsing (pure functions; InputError on bad values) ---------------------------


def _items(text: str, what: str) -> list[str]:
    items = [item.strip() for item in str(text).split(",")]
    if not all(items):
        raise InputError(f"{what} takes a comma-separated list without empty items, got {text!r}")
    return items


def _unique(values):
    return list(dict.fromkeys(values))


def parse_strategies(text: str) -> list[str]:
    """``all`` or a comma list of registered strategy names."""
    items = _items(text, "the strategy list")
    if items == ["all"]:
        return names()
    unknown = [item for item in items if item not in names()]
    if unknown:
        raise InputError(f"unknown strategy {', '.join(unknown)} (known: all, {', '.join(names())})")
    return _unique(items)


def parse_n_values(text: str) -> list[int]:
    """``8:12,14`` -> ``[8, 9, 10, 11, 12, 14]`` (ranges are inclusive)."""
    values: list[int] = []
    for item in _items(text, "the N list"):
        lo, sep, hi = item.partition(":")
        if not sep:
            values.append(validate_n(item))
            continue
        lo, hi = validate_n(lo), validate_n(hi)
        if lo > hi:
            raise InputError(f"the N range {item!r} is empty (write it low:high)")
        values.extend(range(lo, hi + 1))
    return _unique(values)


def parse_param_axis(text: str) -> tuple[str, str, list[str]]:
    """``feinbube.depth=4,5`` -> ``("feinbube", "depth", ["4", "5"])``."""
    target, sep, values = str(text).partition("=")
    strategy, dot, key = target.strip().partition(".")
    if not sep or not dot or not strategy or not key:
        raise InputError(f"a parameter axis is written strategy.key=value[,value...], got {text!r}")
    if strategy not in names():
        raise InputError(f"unknown strategy {strategy!r} in {text!r} (known: {', '.join(names())})")
    return strategy, key.strip(), _unique(_items(values, f"the values of {target.strip()}"))


def parse_timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise InputError(f"the timeout must be a positive number of seconds, got {text!r}")
    return value


def _parse_count(text: str, lo: int, what: str) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        value = lo - 1
    if value < lo:
        raise InputError(f"{what} must be an integer >= {lo}, got {text!r}")
    return value


def parse_rounds(text: str) -> int | None:
    """``auto`` (None) or a number of timed rounds >= 1."""
    return None if str(text).strip() == "auto" else _parse_count(text, 1, "the number of rounds (or auto)")


def parse_warmup(text: str) -> int:
    return _parse_count(text, 0, "the number of warm-up rounds")


@dataclass(frozen=True)
class Option:
    """One ``--nq-*`` option: its flag, the function turning its text into a value, its
    default text (None: no default, see the help) and help."""

    flag: str
    parse: Callable[[str], Any]
    default: str | None
    metavar: str
    help: str
    repeatable: bool = False

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option("--nq-strategy", parse_strategies, "all", "LIST",
           "strategies to benchmark: a comma list of names, or all (default: all)"),
    Option("--nq-n", parse_n_values, None, "LIST",
           "board sizes: a comma list of N and inclusive ranges low:high, e.g. 8:12,14 "
           f"(default: {DEFAULT_N[0]}:{DEFAULT_N[1]}, from each strategy's smallest N up to its bench_max_n)"),
    Option("--nq-param", parse_param_axis, None, "STRATEGY.KEY=V1[,V2...]",
           "a parameter axis of one strategy (repeatable); the cases are the cartesian product "
           "of its axes, combinations the strategy rejects are skipped with the reason",
           repeatable=True),
    Option("--nq-timeout", parse_timeout, str(DEFAULT_TIMEOUT), "SECONDS",
           f"seconds one step of a GPU run (prepare, or one round) may take before its worker "
           f"is killed (default: {DEFAULT_TIMEOUT:g})"),
    Option("--nq-rounds", parse_rounds, "auto", "N|auto",
           f"timed rounds per case; auto: enough to fill {AUTO_ROUNDS_SECONDS:g} s after the "
           f"warm-up, {AUTO_ROUNDS_RANGE[0]} to {AUTO_ROUNDS_RANGE[1]} (default: auto)"),
    Option("--nq-warmup", parse_warmup, "1", "N",
           "untimed (but verified) rounds before the timed ones; the first GPU launch pays for "
           "lazy loading (default: 1)"),
)


@dataclass(frozen=True)
class Settings:
    """The parsed ``--nq-*`` options of a session."""

    strategies: tuple[str, ...]
    #: None: DEFAULT_N
    n_values: tuple[int, ...] | None
    #: strategy -> parameter -> values to try
    axes: dict[str, dict[str, tuple[str, ...]]]
    timeout: float
    #: None: auto
    rounds: int | None
    warmup: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategies": list(self.strategies),
            "n": list(self.n_values) if self.n_values else "default",
            "axes": {s: {k: list(v) for k, v in keys.items()} for s, keys in self.axes.items()},
            "timeout": self.timeout,
            "rounds": self.rounds or "auto",
            "warmup": self.warmup,
        }


def _check_axis_key(strategy: str, key: str) -> None:
    """A misspelt parameter is a usage error; a strategy that cannot be loaded here is
    left to collection, which skips its cases with the reason."""
    try:
        strat = get(strategy)
    except ImportError:
        return
    strat.param(key)


def parse_settings(raw: dict[str, Any]) -> Settings:
    """Settings from the options' raw texts (``dest -> text``, a list for repeatable
    options); :class:`InputError` naming the option on a bad value."""
    values: dict[str, Any] = {}
    for opt in OPTIONS:
        text = raw.get(opt.dest)
        if text is None:
            text = opt.default
        try:
            if opt.repeatable:
                values[opt.dest] = [opt.parse(item) for item in text or ()]
            else:
                values[opt.dest] = None if text is None else opt.parse(text)
        except InputError as exc:
            raise InputError(f"{opt.flag}: {exc}") from None
    axes: dict[str, dict[str, tuple[str, ...]]] = {}
    for strategy, key, choices in values["nq_param"]:
        try:
            _check_axis_key(strategy, key)
        except InputError as exc:
            raise InputError(f"--nq-param: {exc}") from None
        if key in axes.setdefault(strategy, {}):
            raise InputError(f"--nq-param: {strategy}.{key} is given twice")
        axes[strategy][key] = tuple(choices)
    n_values = values["nq_n"]
    return Settings(
        strategies=tuple(values["nq_strategy"]),
        n_values=tuple(n_values) if n_values else None,
        axes=axes,
        timeout=values["nq_timeout"],
        rounds=values["nq_rounds"],
        warmup=values["nq_warmup"],
    )


# -- cases -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One benchmark: a strategy, N and the parameters given on the command line (the
    strategy's defaults fill in the rest)."""

    strategy: str
    n: int
    given: tuple[tuple[str, str], ...] = ()

    @property
    def id(self) -> str:
        """``serial-N12``, ``feinbube-N16-depth=5-block=128``."""
        return "-".join([self.strategy, f"N{self.n}", *(f"{k}={v}" for k, v in self.given)])

    def to_param(self) -> dict[str, Any]:
        """The parametrization value: plain JSON, as pytest-benchmark saves it."""
        return {"strategy": self.strategy, "n": self.n, "params": dict(self.given)}

    @classmethod
    def from_param(cls, value: dict[str, Any]) -> "Case":
        return cls(value["strategy"], int(value["n"]), tuple(value.get("params", {}).items()))


def default_n_values(strategy: Strategy) -> list[int]:
    lo, hi = DEFAULT_N
    return list(range(max(lo, strategy.min_n), min(hi, strategy.bench_max_n) + 1))


def build_cases(settings: Settings) -> list[Any]:
    """``pytest.param`` per case; cases the strategy rejects carry a skip mark with the
    reason, GPU cases the ``gpu`` mark."""
    params = []
    for name in settings.strategies:
        try:
            strategy = get(name)
        except ImportError as exc:
            reason = f"strategy {name} cannot be loaded here: {exc}"
            params.append(pytest.param(Case(name, 0).to_param(), id=name, marks=pytest.mark.skip(reason=reason)))
            continue
        axes = settings.axes.get(name, {})
        for n in settings.n_values or default_n_values(strategy):
            for combo in itertools.product(*axes.values()):
                case = Case(name, n, tuple(zip(axes, combo)))
                marks = [pytest.mark.gpu] if strategy.needs_gpu else []
                try:
                    strategy.resolve(n, dict(case.given))
                except InputError as exc:
                    marks.append(pytest.mark.skip(reason=f"{describe(name, n, dict(case.given))}: {exc}"))
                params.append(pytest.param(case.to_param(), id=case.id, marks=marks))
    return params


# -- GPU and machine facts -----------------------------------------------------------------


def gpu_status() -> tuple[bool, str]:
    """(True, GPU name) or (False, why GPU strategies cannot run here); cached by
    :func:`~nqprof.cuda.device.gpu_available`."""
    try:
        from .cuda.device import gpu_available

        return gpu_available()
    except (ImportError, AttributeError):
        return False, "nqprof.cuda.device not available"


def skip_unless_runnable(strategy: Strategy) -> None:
    """Skip the test, with the reason, if ``strategy`` needs a GPU this machine lacks."""
    if strategy.needs_gpu:
        ok, why = gpu_status()
        if not ok:
            pytest.skip(f"{strategy.name} needs a GPU: {why}")


@functools.lru_cache(maxsize=1)
def machine_facts() -> dict[str, Any]:
    """What pytest-benchmark's machine_info gets under ``nqprof``: GPU name, SM count,
    clocks, CUDA driver, toolkit and PyCUDA versions; ``gpu: None`` and the reason on a
    machine without a usable GPU."""
    facts: dict[str, Any] = {"version": __version__}
    ok, why = gpu_status()
    if ok:
        import pycuda

        from .cuda.device import device_facts, driver

        drv = driver()
        dev = device_facts(drv, drv.Device(0))
        facts.update(
            gpu=dev["name"],
            gpu_count=drv.Device.count(),
            arch=dev["arch"],
            sm_count=dev["sm_count"],
            clock_mhz=dev["clock_mhz"],
            memory_clock_mhz=dev["memory_clock_mhz"],
            total_memory_mib=dev["total_memory_mib"],
            driver=dev["driver"],
            pycuda=pycuda.VERSION_TEXT,
        )
    else:
        facts.update(gpu=None, gpu_status=f"CPU only: {why}")
    try:
        from .cuda.toolkit import find_toolkit

        facts["cuda_toolkit"] = find_toolkit().version
    except (ImportError, NqprofError):
        facts["cuda_toolkit"] = None
    return facts


def machine_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``["gpu: 'NVIDIA H100' -> 'NVIDIA H200'", ...]`` for the nqprof machine_info fields
    that differ between two runs' machine_info."""
    a, b = saved.get(MACHINE_KEY) or {}, current.get(MACHINE_KEY) or {}
    return [f"{key}: {a.get(key)!r} -> {b.get(key)!r}" for key in COMPARED_MACHINE_FIELDS if a.get(key) != b.get(key)]


# -- running a case ----------------------------------------------------------------------


def auto_rounds(warmup_seconds: list[float]) -> int:
    """Rounds that fill AUTO_ROUNDS_SECONDS at the warm-up's pace, within AUTO_ROUNDS_RANGE."""
    lo, hi = AUTO_ROUNDS_RANGE
    if not warmup_seconds:
        return lo
    pace = max(min(warmup_seconds), 1e-9)
    return int(min(hi, max(lo, math.ceil(AUTO_ROUNDS_SECONDS / pace))))


def extra_info(record: RunRecord, strategy: Strategy, warmup: int) -> dict[str, Any]:
    """What a saved benchmark carries: the whole run record, and how it was taken."""
    info = record.to_dict()
    info.update(device_kind=strategy.device, cdp=strategy.cdp, warmup=warmup, nqprof=__version__)
    return info


class NQBench:
    """One case run through pytest-benchmark. The :func:`nqbench` fixture gives one per
    parametrized case; tests that pick their case at run time build one themselves."""

    def __init__(self, benchmark, settings: Settings, case: Case):
        self.benchmark, self.settings, self.case = benchmark, settings, case
        self.strategy = get(case.strategy)
        self.params = self.strategy.resolve(case.n, dict(case.given))
        self.record: RunRecord | None = None
        self._runner = None
        #: The session's --nq-cluster bench: the case then runs on a cluster worker.
        self.remote = None

    @property
    def label(self) -> str:
        return describe(self.case.strategy, self.case.n, self.params)

    def run(self) -> RunRecord:
        """Prepare (untimed), warm up (untimed, verified), time the rounds, record."""
        if self.remote is not None:
            return self.remote.run(self)
        skip_unless_runnable(self.strategy)
        measurements: list[Measurement] = []

        def one_round() -> Measurement:
            m = self._runner.run_once()
            measurements.append(m)
            return m

        try:
            try:
                self._runner = open_runner(self.strategy, self.case.n, self.params, self.settings.timeout).start()
            except UnavailableError as exc:
                pytest.skip(f"{self.label}: {exc}")
            warm = []
            for _ in range(self.settings.warmup):
                t0 = time.perf_counter()
                one_round()
                warm.append(time.perf_counter() - t0)
            measurements.clear()
            rounds = self.settings.rounds or auto_rounds(warm)
            if self.benchmark.group is None:
                self.benchmark.group = f"N={self.case.n:02d}"
            self.benchmark.pedantic(one_round, rounds=rounds, warmup_rounds=0, iterations=1)
        except CountMismatchError as exc:
            pytest.fail(str(exc), pytrace=False)
        info = self._runner.info()
        self.record = RunRecord.from_measurements(
            self.case.strategy, self.case.n, self.params, known_count(self.case.n), measurements, info
        )
        self.benchmark.extra_info.update(extra_info(self.record, self.strategy, self.settings.warmup))
        return self.record

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    def __enter__(self) -> "NQBench":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- pytest hooks and fixture --------------------------------------------------------------

_SETTINGS = pytest.StashKey[Settings]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("nqprof", "nqprof: N-Queens strategies as benchmarks")
    for opt in OPTIONS:
        group.addoption(
            opt.flag,
            dest=opt.dest,
            action="append" if opt.repeatable else "store",
            default=None,
            metavar=opt.metavar,
            help=opt.help,
        )
    cluster_bench.add_option(group)


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and PyCUDA (skipped with the reason otherwise)")
    try:
        config.stash[_SETTINGS] = parse_settings({opt.dest: config.getoption(opt.dest) for opt in OPTIONS})
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None


def settings_of(config) -> Settings:
    """The parsed ``--nq-*`` options of this pytest session."""
    return config.stash[_SETTINGS]


def _parametrized_by_test(metafunc) -> bool:
    """A test that parametrizes ``nqbench`` itself (indirectly) keeps its own cases."""
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(argnames, str):
            argnames = [a.strip() for a in argnames.split(",")]
        if FIXTURE in argnames:
            return True
    return False


def pytest_generate_tests(metafunc) -> None:
    if FIXTURE in metafunc.fixturenames and not _parametrized_by_test(metafunc):
        metafunc.parametrize(FIXTURE, build_cases(settings_of(metafunc.config)), indirect=True)


@pytest.fixture(name=FIXTURE)
def nqbench_fixture(request):
    """An :class:`NQBench` for this test's case; call ``.run()`` to benchmark it."""
    if not hasattr(request, "param"):
        pytest.fail(f"the {FIXTURE} fixture needs a case: parametrize it indirectly with "
                    "{'strategy': ..., 'n': ..., 'params': {...}}", pytrace=False)
    case = Case.from_param(request.param)
    remote = cluster_bench.of(request.config)
    if remote is None:
        skip_unless_runnable(get(case.strategy))
    elif remote.gpu_skip_reason(get(case.strategy)):
        pytest.skip(remote.gpu_skip_reason(get(case.strategy)))
    # requested only now: a benchmark fixture left unused by a skip warns
    benchmark = request.getfixturevalue("benchmark")
    with NQBench(benchmark, settings_of(request.config), case) as bench:
        bench.remote = remote
        yield bench


def pytest_collection_finish(session) -> None:
    cluster_bench.start(session)


def pytest_unconfigure(config) -> None:
    cluster_bench.stop(config)


def pytest_benchmark_update_machine_info(config, machine_info) -> None:
    machine_info[MACHINE_KEY] = dict(machine_facts())
    cluster_bench.update_machine_info(config, machine_info[MACHINE_KEY])


def pytest_benchmark_update_json(config, benchmarks, output_json) -> None:
    output_json[MACHINE_KEY] = {"version": __version__, "settings": settings_of(config).as_dict()}


def pytest_benchmark_compare_machine_info(config, benchmarksession, machine_info, compared_benchmark) -> None:
    diffs = machine_differences(compared_benchmark.get("machine_info", {}), machine_info)
    if diffs:
        benchmarksession.logger.warning(
            "nqprof: the compared run was measured with a different GPU, toolkit or driver ("
            + "; ".join(diffs) + "): differences in time may come from the machine, not the code"
        )
