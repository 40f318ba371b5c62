"""The pytest plugin: N-Queens strategies x N x parameters as pytest-benchmark benchmarks.

Registered through the ``pytest11`` entry point ``nqprof``. A test that asks for the
``nqbench`` fixture is parametrized over the cases the ``--nq-*`` options select and runs
one case per test::

    def test_nqueens(nqbench):
        assert nqbench.run().verified

Each case is resolved at collection (an invalid parameter combination becomes a skipped
test whose reason is the validation message), prepared outside the timed rounds (worker
process, build, module load, limits), warmed up, then timed by nqprof's round rule and
handed to pytest-benchmark (:mod:`nqprof.nqbench`): the statistic pytest-benchmark keeps is
the GPU's CUDA-event time (the worker's compute time for CPU cases), not the harness. A
wrong count fails the test. GPU strategies are skipped, with the reason, where there is no
GPU or no PyCUDA.

With ``--nq-trace`` (or ``--nq-trace-dir=DIR``) each GPU case is run once more after its
timed rounds, in a child process under Nsight Systems (:mod:`nqprof.benchtrace`): the trace
is stored beside the saved history and its per-range summary in the case's extra_info.

With ``--benchmark-compare`` and ``--nq-compare-fail=VERDICTS``, nqprof's verdicts of the
session's cases against the run compared with are printed in the summary, and the session
fails where a case got one of them (:mod:`nqprof.benchgate`).

The plugin costs nothing where it is not used: at import it loads only pytest and
:mod:`nqprof.options`; the options are parsed (and NQPROF_TIMEOUT read) when a test uses
the fixture or an ``--nq-*`` option is given; machine_info and the saved JSON gain nqprof's
keys only in runs that benchmarked an nqprof case.
"""

from __future__ import annotations

import os

import pytest

from .errors import InputError
from .machine import MACHINE_KEY
from .options import (
    CLUSTER_DEST,
    CLUSTER_OPTION,
    COMPARE_FAIL_DEST,
    COMPARE_FAIL_OPTION,
    CPU_METRIC,
    FIXTURE,
    MIN_CHANGE_DEST,
    MIN_CHANGE_OPTION,
    OPTIONS,
    Case,
    case_grid,
    given_explicitly,
    parse_cluster_address,
    settings_of,
)
from .spread import UnitLedger
from .textfmt import plural

_USED = pytest.StashKey[bool]()
_BAD_SETTINGS = pytest.StashKey[str]()
_TRACER = pytest.StashKey[object]()
#: (case id, other processes) of the cases whose GPU other processes used during the rounds.
_SHARED = pytest.StashKey[list]()
#: The test item pytest runs after the running one.
_NEXT = pytest.StashKey[object]()
#: The units of the cases this session ran (spread.UnitLedger): a prior for auto units.
_UNITS = pytest.StashKey[object]()
TRACE_OPTION, TRACE_DEST = "--nq-trace", "nq_trace"
TRACE_DIR_OPTION, TRACE_DIR_DEST = "--nq-trace-dir", "nq_trace_dir"
#: The gate --nq-compare-fail asks for (nqprof.benchgate.Gate).
_GATE = pytest.StashKey[object]()
#: The saved runs --benchmark-compare picked, as pytest-benchmark handed them to its hook.
_COMPARED = pytest.StashKey[list]()
#: pytest-benchmark's statistics (Metadata) of this session's nqprof cases, for the gate.
_TIMED = pytest.StashKey[list]()
#: The gate's comparisons (nqprof.benchgate.Outcome), made when the session finishes.
_OUTCOMES = pytest.StashKey[list]()


def _settings(config):
    try:
        return settings_of(config)
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None


def build_cases(settings) -> list:
    """``pytest.param`` per case; cases the strategy rejects carry a skip mark with the
    reason, GPU cases the ``gpu`` mark."""
    params = []
    try:
        grid = case_grid(settings)
    except InputError as exc:
        raise pytest.UsageError(f"--nq-param: {exc}") from None
    for case, strategy, why in grid:
        if strategy is None:
            params.append(
                pytest.param(case.to_param(), id=case.strategy, marks=pytest.mark.skip(reason=why))
            )
            continue
        marks = [pytest.mark.gpu] if strategy.needs_gpu else []
        if why:
            marks.append(pytest.mark.skip(reason=why))
        params.append(pytest.param(case.to_param(), id=case.id, marks=marks))
    return params


_CLUSTER_BENCH = None


def cluster_bench():
    """:mod:`nqprof.cluster.bench`, imported on first use and kept: one module object, so
    that the stash key it keeps the session's cluster under is one too (pytester's
    in-process runs restore sys.modules, and a fresh import would make a second key)."""
    global _CLUSTER_BENCH
    if _CLUSTER_BENCH is None:
        from .cluster import bench

        _CLUSTER_BENCH = bench
    return _CLUSTER_BENCH


def _xdist_active(config) -> bool:
    return config.getoption("dist", "no") not in ("no", None) or bool(
        os.environ.get("PYTEST_XDIST_WORKER")
    )


# -- pytest hooks and fixture --------------------------------------------------------------


def pytest_addoption(parser) -> None:
    group = parser.getgroup("nqprof", "nqprof: N-Queens strategies as benchmarks")
    for opt in (*OPTIONS, CPU_METRIC):
        opt.add_to(group.addoption)
    group.addoption(
        CLUSTER_OPTION,
        dest=CLUSTER_DEST,
        default=None,
        metavar="local|ADDRESS",
        help="run the cases on a Dask cluster, one case per GPU at a time: local (one worker per "
        "GPU here) or a scheduler address such as tcp://host:8786; needs nqprof[cluster]",
    )
    group.addoption(
        TRACE_OPTION,
        dest=TRACE_DEST,
        action="store_true",
        default=False,
        help="after each GPU case's timed rounds, run it once more under Nsight Systems (nsys) in "
        "a child process: its trace goes beside the saved history "
        "(<storage>/<machine>/traces/<run>/), its per-range "
        "and per-kernel summary into the case's extra_info",
    )
    group.addoption(
        TRACE_DIR_OPTION,
        dest=TRACE_DIR_DEST,
        default=None,
        metavar="DIR",
        help=f"{TRACE_OPTION}, with the traces in DIR/<run>/ (default: beside the saved history; a "
        "temporary folder when the run is not saved)",
    )
    group.addoption(
        COMPARE_FAIL_OPTION,
        dest=COMPARE_FAIL_DEST,
        default=None,
        metavar="VERDICTS",
        help="with --benchmark-compare: nqprof compare's verdicts of this session's cases against "
        "the saved run it picked, its table in the summary, and the session fails (exit code 1) "
        "if a case gets one of these: a comma list of slower, faster, cannot-tell, "
        "too-few-rounds, only-a, only-b, changed-params, changed-source, changed-toolkit, "
        "changed-gpu (e.g. slower,cannot-tell)",
    )
    from .benchab import add_options as add_ab_options

    add_ab_options(group)
    group.addoption(
        MIN_CHANGE_OPTION,
        dest=MIN_CHANGE_DEST,
        default=None,
        metavar="PCT",
        help="the smallest change of a median, in percent, that the compare gate's verdicts must "
        "be able to catch: a case whose floor is wider and that is not faster or slower is "
        "cannot-tell (default: 5 for GPU cases, 10 for CPU cases, as nqprof compare --min-change)",
    )


class _Reports:
    """Notes from the test reports that nqprof cases ran (under pytest-xdist the controller
    runs no test itself)."""

    def __init__(self, config):
        self.config = config

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" and any(name == "nqprof" for name, _ in report.user_properties):
            self.config.stash[_USED] = True


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "gpu: needs a CUDA GPU and PyCUDA (skipped with the reason otherwise)"
    )
    config.pluginmanager.register(_Reports(config), "nqprof-reports")
    from .benchadapter import check_version

    untested = check_version()
    if untested:
        config.issue_config_time_warning(pytest.PytestConfigWarning(untested), stacklevel=2)
    if given_explicitly(config):  # a bad --nq-* option is a usage error at once
        settings = _settings(config)
        if settings.axes:  # and so is an axis value no case accepts
            build_cases(settings)
    _check_options(config)
    if config.getoption("nq_vs", None) or config.getoption("nq_vs_fail", None):
        from .benchab import check
        from .strategies import get

        check(config, [get(name) for name in _settings(config).strategies])
    if config.getoption(CPU_METRIC.dest, None) is not None:  # nqprof.benchinstr
        from .benchinstr import configure

        configure(config)
    if config.getoption(TRACE_DEST, False) or config.getoption(TRACE_DIR_DEST, None):
        config.stash[_TRACER] = _tracer(config)
    if (
        config.getoption(COMPARE_FAIL_DEST, None) is not None
        or config.getoption(MIN_CHANGE_DEST, None) is not None
    ):
        from .benchgate import gate_of

        gate = gate_of(config)
        if gate is not None:
            config.stash[_GATE] = gate
            config.pluginmanager.register(_GateSummary(), "nqprof-gate-summary")


#: pytest-benchmark's --benchmark-histogram without pygal: said at the start, in one line,
#: not after the whole run in chained tracebacks (pygaljs only adds tooltips; its extra
#: installs both).
HISTOGRAM_MISSING = (
    "--benchmark-histogram needs pygal, which is not installed: "
    "pip install 'pytest-benchmark[histogram]'"
)


def _check_options(config) -> None:
    """--nq-cluster and --nq-trace-dir as the command line checks them: a usage error before
    anything connects or is written (an empty value is no value left out); and what
    --benchmark-histogram needs, before anything runs."""
    if config.getoption("benchmark_histogram", None):
        try:
            import pygal  # noqa: F401
        except ImportError:
            raise pytest.UsageError(HISTOGRAM_MISSING) from None
    address, folder = config.getoption(CLUSTER_DEST, None), config.getoption(TRACE_DIR_DEST, None)
    try:
        if address is not None:
            parse_cluster_address(address)
    except InputError as exc:
        raise pytest.UsageError(f"{CLUSTER_OPTION} {exc}") from None
    if folder is not None:
        from .files import check_output_dir

        try:
            check_output_dir(folder, TRACE_DIR_OPTION)
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None


def _tracer(config):
    """The session's :class:`~nqprof.benchtrace.Tracer`; a usage error without nsys."""
    from .analysis.history import TRACE_FOLDER
    from .analysis.trace.nsys import find_nsys
    from .benchtrace import Tracer, storage_folder
    from .errors import UnavailableError

    try:
        nsys = find_nsys()
    except UnavailableError as exc:
        raise pytest.UsageError(f"{TRACE_OPTION}: {exc}") from None
    from pathlib import Path

    given = config.getoption(TRACE_DIR_DEST, None)
    if given:
        return Tracer(nsys, Path(given).absolute())
    saving = config.getoption("benchmark_autosave", False) or config.getoption(
        "benchmark_save", None
    )
    if not saving:  # a temporary folder, never the source tree
        return Tracer(nsys, None)
    storage = storage_folder(
        str(config.getoption("benchmark_storage", None) or "file://./.benchmarks")
    )
    if storage is None:
        raise pytest.UsageError(
            f"{TRACE_OPTION}: the benchmark storage is not a folder: give the traces "
            f"one ({TRACE_DIR_OPTION}=DIR)"
        )
    from pytest_benchmark.utils import get_machine_id

    machine_folder = Path(storage).absolute() / get_machine_id()
    return Tracer(nsys, machine_folder / TRACE_FOLDER, relative_to=machine_folder)


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
        try:
            settings = settings_of(metafunc.config)
        except InputError as exc:  # reported as a usage error once collection is done
            metafunc.config.stash[_BAD_SETTINGS] = str(exc)
            metafunc.parametrize(FIXTURE, [], indirect=True)
            return
        metafunc.parametrize(FIXTURE, build_cases(settings), indirect=True)


def pytest_collection_modifyitems(config, items) -> None:
    """A bad NQPROF_* variable is a usage error, in a run that collected nqprof cases only;
    so is a pytest-benchmark timing option that does not apply to them
    (:func:`nqprof.benchopts.check`)."""
    if config.stash.get(_BAD_SETTINGS, None):
        raise pytest.UsageError(config.stash[_BAD_SETTINGS])
    if any(FIXTURE in getattr(item, "fixturenames", ()) for item in items):
        from .benchopts import check

        check(config, items)


@pytest.fixture(name=FIXTURE)
def nqbench_fixture(request, benchmark):
    """An :class:`~nqprof.nqbench.NQBench` for this test's case; call ``.run()`` to benchmark it.

    It asks for pytest-benchmark's ``benchmark`` fixture by name, so that pytest-benchmark
    counts its tests as benchmarks (``--benchmark-only`` runs them, ``--benchmark-skip``
    skips them)."""
    from .benchinstr import counter_of
    from .benchopts import rule_for
    from .nqbench import NQBench, skip_unless_runnable
    from .strategies import get

    try:
        if not hasattr(request, "param"):
            pytest.fail(
                f"the {FIXTURE} fixture needs a case: parametrize it indirectly with "
                "{'strategy': ..., 'n': ..., 'params': {...}}",
                pytrace=False,
            )
        case = Case.from_param(request.param)
        request.config.stash[_USED] = True
        request.node.user_properties.append(("nqprof", case.id))
        remote = cluster_bench().of(request.config)
        if remote is None:
            skip_unless_runnable(get(case.strategy))
        elif remote.gpu_skip_reason(get(case.strategy)):
            pytest.skip(remote.gpu_skip_reason(get(case.strategy)))
    except (pytest.skip.Exception, pytest.fail.Exception):
        benchmark.skipped = True  # not "unused": pytest-benchmark would warn of that
        raise
    with NQBench(benchmark, _settings(request.config), case) as bench:
        bench.remote = remote
        bench.tracer = request.config.stash.get(_TRACER, None)
        bench.rule = rule_for(request.config, request.node)
        bench.next_case = _next_case(request.config)
        bench.instructions = counter_of(request.config)  # --nq-cpu-metric=instructions
        bench.units = request.config.stash.setdefault(_UNITS, UnitLedger())
        if request.config.getoption("nq_vs", None):  # --nq-vs: an interleaved A/B
            from .benchab import overrides_for

            bench.vs, bench.config = overrides_for(request.config, bench.strategy), request.config
        yield bench
    if _GATE in request.config.stash and getattr(benchmark, "stats", None) is not None:
        request.config.stash.setdefault(_TIMED, []).append(benchmark.stats)
    if bench.record is not None and bench.record.shared_gpu():
        others = bench.record.conditions["gpu"]["other_processes"]
        request.config.stash.setdefault(_SHARED, []).append((case.id, others))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.config.stash[_NEXT] = nextitem
    yield


def _next_case(config):
    """The case of the test pytest runs next, if it is an nqprof case."""
    callspec = getattr(config.stash.get(_NEXT, None), "callspec", None)
    param = callspec.params.get(FIXTURE) if callspec is not None else None
    try:
        return Case.from_param(param) if param is not None else None
    except Exception:  # not a case of ours: that test's own fixture says what is wrong
        return None


def used(config) -> bool:
    """Whether this session ran an nqprof case."""
    return config.stash.get(_USED, False)


def pytest_collection_finish(session) -> None:
    if session.config.getoption(CLUSTER_DEST, None):
        cluster_bench().start(session)


def pytest_sessionfinish(session, exitstatus) -> None:
    """The gate's comparisons (after pytest-benchmark's own finish, a hook wrapper around
    this): a session whose tests passed fails (exit code 1) where a case got a verdict
    --nq-compare-fail lists."""
    config = session.config
    if config.getoption("nq_vs_fail", None):
        from .benchab import failed

        if failed(config) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    gate = config.stash.get(_GATE, None)
    if gate is None:
        return
    from . import machine
    from .benchgate import outcomes
    from .benchinstr import counter_of

    timed = config.stash.get(_TIMED, [])
    # what pytest-benchmark compares is what the gate compares: CPU cases' instructions
    # where they report them
    metric = "instructions" if counter_of(config) is not None else _settings(config).timer
    done = outcomes(
        config,
        gate,
        config.stash.get(_COMPARED, []),
        timed,
        metric,
        machine.machine_facts() if timed else {},
    )
    config.stash[_OUTCOMES] = done
    if any(o.failed for o in done) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _write_gate(terminalreporter, config) -> None:
    done = config.stash.get(_OUTCOMES, None)
    if done is None:
        return
    terminalreporter.write_sep("-", "nqprof compare")
    for outcome in done:
        for line in outcome.lines:
            terminalreporter.write_line(line)
        if outcome.failed:
            terminalreporter.write_line(f"nqprof: compare failed: {outcome.failed}", red=True)


class _GateSummary:
    """nqprof's gate table after every other summary, and also where one of them raised:
    pytest-benchmark's --benchmark-compare-fail raises PerformanceRegression from its
    summary, which would otherwise end the session before the table."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_terminal_summary(self, terminalreporter, config):
        try:
            yield
        finally:
            _write_gate(terminalreporter, config)


def pytest_terminal_summary(terminalreporter, config) -> None:
    if not used(config):
        return
    if _xdist_active(config):
        terminalreporter.write_line(
            "nqprof: pytest-xdist is active, and pytest-benchmark disables benchmarking under "
            "xdist: the nqprof cases ran one verified round each and recorded "
            "no times. Benchmark without xdist (-p no:xdist, or -n 0).",
            yellow=True,
        )
        return
    timer = _settings(config).timer
    what = (
        "compute time: CUDA events for GPU cases, the "
        "worker's clock around the computation for CPU cases"
        if timer == "compute"
        else "host round trip around each round (--nq-timer=wall)"
    )
    from .benchinstr import summary_line

    terminalreporter.write_line(
        summary_line(config, timer) or f"nqprof: benchmark times are {what}"
    )
    shared = config.stash.get(_SHARED, [])
    if shared:
        cases = ", ".join(f"{case} ({count})" for case, count in shared)
        terminalreporter.write_line(
            "nqprof: warning: other processes used the GPU during the rounds of "
            f"{plural(len(shared), 'case')}: {cases} (other processes in parentheses): "
            "their times may be slower than on a GPU of their own",
            yellow=True,
        )
    tracer = config.stash.get(_TRACER, None)
    for line in tracer.summary_lines() if tracer is not None else ():
        terminalreporter.write_line(line)
    from .benchab import failed, summary_lines

    for line in summary_lines(config):
        terminalreporter.write_line(line)
    for case in failed(config):
        terminalreporter.write_line(f"nqprof ab: failed: {case} (--nq-vs-fail)", red=True)


def pytest_unconfigure(config) -> None:
    if used(config):  # a spare worker started for a case that did not run
        from .spare import SPARE

        SPARE.kill()
    if config.getoption(CLUSTER_DEST, None):
        cluster_bench().stop(config)


def pytest_benchmark_update_machine_info(config, machine_info) -> None:
    if not used(config):
        return
    from . import machine

    machine_info[MACHINE_KEY] = dict(machine.machine_facts())
    cluster_bench().update_machine_info(config, machine_info[MACHINE_KEY])


def pytest_benchmark_update_json(config, benchmarks, output_json) -> None:
    if not used(config):
        return
    from . import __version__

    output_json[MACHINE_KEY] = {"version": __version__, "settings": _settings(config).as_dict()}
    tracer = config.stash.get(_TRACER, None)
    if tracer is not None:
        output_json[MACHINE_KEY]["traces"] = tracer.json_info()


@pytest.hookimpl(hookwrapper=True)
def pytest_benchmark_compare_machine_info(
    config, benchmarksession, machine_info, compared_benchmark
):
    """nqprof's comparison of machine_info, in place of pytest-benchmark's, for a saved run
    that has nqprof's facts (any other is left to pytest-benchmark).

    pytest-benchmark compares at configure time, before any case ran, so this run's
    machine_info lacks nqprof's facts yet: they are read here, without initialising CUDA
    where NVML can tell (:func:`nqprof.machine.compare_facts`). What differs is said in one
    readable warning (:func:`nqprof.machine.machine_info_differences`). pytest-benchmark's
    own comparison, which this wraps, is shown the saved machine_info as this run's for its
    duration, so that it neither repeats the difference as one line holding both whole
    machine_infos nor fails on a storage folder outside the working folder (its message
    names the folder relative to it)."""
    if _GATE in config.stash:
        config.stash.setdefault(_COMPARED, []).append(compared_benchmark)
    saved = compared_benchmark.get("machine_info") or {}
    if not saved.get(MACHINE_KEY):
        yield
        return
    import json

    from . import machine

    current = dict(machine_info)
    current.setdefault(MACHINE_KEY, machine.compare_facts())
    diffs = machine.machine_info_differences(saved, current)
    own = dict(machine_info)
    machine_info.clear()
    machine_info.update(json.loads(json.dumps(saved)))
    try:
        yield
    finally:
        machine_info.clear()
        machine_info.update(own)
    if diffs:
        benchmarksession.logger.warning(
            "nqprof: the compared run (saved "
            f"{compared_benchmark.get('datetime', '?')}) ran on another machine: "
            + "; ".join(diffs)
            + " (saved -> this run): differences in time may come from the machine, not the code"
        )
