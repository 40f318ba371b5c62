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

The options are defined in :mod:`nqprof.options` (shared with `nqprof sweep`), the round
loop in :mod:`nqprof.runner` (shared with `nqprof solve`), the machine facts in
:mod:`nqprof.machine`.
"""

from __future__ import annotations

from typing import Any

import pytest

from . import __version__, machine
from .cluster import bench as cluster_bench
from .errors import CountMismatchError, InputError, UnavailableError
from .options import (  # noqa: F401  (re-exported: the plugin's public names)
    AUTO_ROUNDS_RANGE,
    AUTO_ROUNDS_SECONDS,
    DEFAULT_N,
    OPTIONS,
    Case,
    Settings,
    case_grid,
    default_n_values,
    parse_n_values,
    parse_param_axis,
    parse_rounds,
    parse_settings,
    parse_strategies,
    parse_timeout,
    parse_warmup,
)
from .result import RunRecord
from .runner import RoundLoop, auto_rounds, describe, open_runner  # noqa: F401
from .strategies import Strategy, get

FIXTURE = "nqbench"


def build_cases(settings: Settings) -> list[Any]:
    """``pytest.param`` per case; cases the strategy rejects carry a skip mark with the
    reason, GPU cases the ``gpu`` mark."""
    params = []
    for case, strategy, why in case_grid(settings):
        if strategy is None:
            params.append(pytest.param(case.to_param(), id=case.strategy, marks=pytest.mark.skip(reason=why)))
            continue
        marks = [pytest.mark.gpu] if strategy.needs_gpu else []
        if why:
            marks.append(pytest.mark.skip(reason=why))
        params.append(pytest.param(case.to_param(), id=case.id, marks=marks))
    return params


def skip_unless_runnable(strategy: Strategy) -> None:
    """Skip the test, with the reason, if ``strategy`` needs a GPU this machine lacks."""
    if strategy.needs_gpu:
        ok, why = machine.gpu_status()
        if not ok:
            pytest.skip(f"{strategy.name} needs a GPU: {why}")


# -- running a case ----------------------------------------------------------------------


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
        try:
            try:
                self._runner = open_runner(self.strategy, self.case.n, self.params, self.settings.timeout).start()
            except UnavailableError as exc:
                pytest.skip(f"{self.label}: {exc}")
            loop = RoundLoop(self._runner, self.settings.rounds, self.settings.warmup)
            loop.warm_up()
            if self.benchmark.group is None:
                self.benchmark.group = f"N={self.case.n:02d}"
            self.benchmark.pedantic(loop.one_round, rounds=loop.rounds, warmup_rounds=0, iterations=1)
        except CountMismatchError as exc:
            pytest.fail(str(exc), pytrace=False)
        self.record = loop.record(self._runner.info())
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
        opt.add_to(group.addoption)
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
    machine_info[machine.MACHINE_KEY] = dict(machine.machine_facts())
    cluster_bench.update_machine_info(config, machine_info[machine.MACHINE_KEY])


def pytest_benchmark_update_json(config, benchmarks, output_json) -> None:
    output_json[machine.MACHINE_KEY] = {"version": __version__, "settings": settings_of(config).as_dict()}


def pytest_benchmark_compare_machine_info(config, benchmarksession, machine_info, compared_benchmark) -> None:
    diffs = machine.machine_differences(compared_benchmark.get("machine_info", {}), machine_info)
    if diffs:
        benchmarksession.logger.warning(
            "nqprof: the compared run was measured with a different GPU, toolkit or driver ("
            + "; ".join(diffs) + "): differences in time may come from the machine, not the code"
        )
