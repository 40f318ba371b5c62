"""The pytest plugin: option parsing, parametrization and skips, the fixture's runs,
extra_info and machine_info, the compare warning. Inner pytest sessions run in-process
(pytester), with test-double strategies registered for their duration."""

import json
import sys
import types
import warnings

import pandas  # noqa: F401  (loaded before pytester's inner runs, which cannot load numpy twice)
import pytest
from fake_strategies import Scaled
from inner_pytest import inner_pytest

from nqprof import machine, options, rounds, strategies
from nqprof.cuda import device
from nqprof.errors import InputError
from nqprof.problem import known_count
from nqprof.result import Measurement
from nqprof.strategies.base import Param, Session, Strategy

pytest_plugins = ["pytester"]


# -- test doubles ----------------------------------------------------------------------------


class _FakeSession(Session):
    def __init__(self, n, params):
        self.n, self.params = n, params

    def run_once(self):
        return Measurement(
            count=known_count(self.n) + self.params["wrong"],
            wall_s=1e-4,
            gpu_s=5e-5,
            stats={"generations": [{"index": 0, "grids": 3}], "failures": {"launch": 0}},
        )

    def info(self):
        return {
            "kernels": [
                {"name": "fake_kernel", "registers": 32, "shared_bytes": 0, "local_bytes": 0}
            ],
            "memory": {"deltas_mib": {"module": -2.0, "run": -0.5}},
            "toolkit": {"version": "13.0", "pycuda": "test"},
            "source_hash": "0123456789abcdef",
            "notes": ["fake"],
        }


class FakeCpu(Strategy):
    name = "fakecpu"
    title = "test double (CPU)"
    min_n = 4
    params = (
        Param("depth", "rows expanded", default=2, lo=1, hi=lambda n: n - 1, range_text="1..N-1"),
        Param("wrong", "added to the count", default=0, lo=0, hi=1),
    )

    def open(self, n, params):
        return _FakeSession(n, params)


class FakeGpu(FakeCpu):
    name = "fakegpu"
    title = "test double (GPU)"
    device = "gpu"


@pytest.fixture
def fakes(monkeypatch, register_strategy):
    """fakecpu and fakegpu registered; this machine has no GPU as far as the plugin knows."""
    register_strategy(FakeCpu(), FakeGpu())
    monkeypatch.setattr(device, "gpu_available", lambda: (False, "test: no GPU here"))


@pytest.fixture
def nqpytest(pytester, request):
    """Run an inner pytest over a one-test suite that uses the nqbench fixture."""
    return inner_pytest(pytester, request)


# -- option parsing -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [("8", [8]), ("8:10", [8, 9, 10]), ("8, 10:11, 8", [8, 10, 11]), ("12:12,3", [12, 3])],
)
def test_n_lists_and_inclusive_ranges(text, expected):
    assert options.parse_n_values(text) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("10:8", "range '10:8' is empty"),
        ("x", "N must be an integer"),
        ("0", "N must be in 1..27, got 0"),
        ("8:28", "N must be in 1..27, got 28"),
        ("8:", "N must be an integer"),
        ("8,,9", "without empty items"),
    ],
)
def test_bad_n_values(text, message):
    with pytest.raises(InputError, match=message):
        options.parse_n_values(text)


def test_strategy_lists():
    assert options.parse_strategies("all") == strategies.names()
    assert options.parse_strategies("multicore, serial,multicore") == ["multicore", "serial"]
    with pytest.raises(InputError, match=r"unknown strategy 'nope' \(known: all, serial"):
        options.parse_strategies("serial,nope")


def test_param_axes():
    assert options.parse_param_axis("feinbube.depth=4, 5") == ("feinbube", "depth", ["4", "5"])
    for bad in (
        "depth=4",
        "feinbube.depth",
        "feinbube.depth=",
        ".depth=4",
        "feinbube.=4",
        "feinbube.depth=4,,5",
    ):
        with pytest.raises(InputError):
            options.parse_param_axis(bad)
    with pytest.raises(InputError, match="unknown strategy 'nope'"):
        options.parse_param_axis("nope.depth=4")


def test_settings_defaults_come_from_the_option_table():
    s = options.parse_settings({})
    assert s.strategies == tuple(strategies.names())
    assert s.n_values is None and s.axes == {}
    assert (s.rounds, s.warmup) == (None, 1)
    assert s.timeout == options.default_timeout() == options.DEFAULT_TIMEOUT


def test_settings_errors_name_the_option():
    cases = {
        "nq_rounds": ("0", "--nq-rounds: the number of rounds"),
        "nq_warmup": ("-1", "--nq-warmup: "),
        "nq_timeout": ("soon", "--nq-timeout: "),
        "nq_param": (
            ["multicore.dpth=3"],
            "--nq-param: strategy multicore has no parameter 'dpth'",
        ),
    }
    for dest, (value, message) in cases.items():
        with pytest.raises(InputError, match=message):
            options.parse_settings({dest: value})
    with pytest.raises(InputError, match="multicore.depth is given twice"):
        options.parse_settings({"nq_param": ["multicore.depth=2", "multicore.depth=3"]})
    s = options.parse_settings(
        {"nq_param": ["multicore.depth=2,3", "multicore.threads=1"], "nq_rounds": "7"}
    )
    assert s.axes == {"multicore": {"depth": ("2", "3"), "threads": ("1",)}} and s.rounds == 7


def test_bad_option_is_a_usage_error(nqpytest):
    result = nqpytest("--nq-n=10:8")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--nq-n: the N range '10:8' is empty*"])


@pytest.mark.parametrize(
    "args, env, message",
    [
        (
            ["--nq-timeout=inf"],
            {},
            "--nq-timeout: the timeout must be at most 604800 seconds (a week), got 'inf'",
        ),
        (["--nq-timeout=1e10"], {}, "--nq-timeout: the timeout must be at most 604800 seconds"),
        (
            ["--nq-timeout=nan"],
            {},
            "--nq-timeout: the timeout must be a positive number of seconds, got 'nan'",
        ),
        (
            [],
            {"NQPROF_TIMEOUT": "inf"},
            "NQPROF_TIMEOUT: the timeout must be at most 604800 seconds",
        ),
        (
            ["--nq-rounds=" + str(10**30)],
            {},
            "--nq-rounds: the number of rounds (or auto) must be an integer in 1..100000",
        ),
        (
            ["--nq-warmup=1_000"],
            {},
            "--nq-warmup: the number of warm-up rounds must be an integer in 0..100000",
        ),
        (["--nq-n=1e3"], {}, "--nq-n: N must be an integer in 1..27, got '1e3'"),
        (
            ["--nq-param=multicore.depth=inf"],
            {},
            "--nq-param 'multicore.depth=inf': multicore is not a selected strategy",
        ),
        (
            ["--nq-param=depth=1"],
            {},
            "--nq-param 'depth=1': no selected strategy (serial) has a parameter 'depth'",
        ),
        (
            ["--nq-strategy=multicore", "--nq-param=multicore.depth=0x10"],
            {},
            "--nq-param: multicore.depth=0x10 is rejected by every "
            "case it is in: parameter depth must be an integer",
        ),
        (["--nq-cluster=foo"], {}, "--nq-cluster takes local or a scheduler address"),
        (["--nq-cluster="], {}, "--nq-cluster takes local or a scheduler address"),
        (["--nq-trace-dir="], {}, "--nq-trace-dir: an empty folder name"),
    ],
)
def test_every_nq_option_answers_bad_values_as_the_command_line_does(
    nqpytest, monkeypatch, args, env, message
):
    """A usage error naming the option, never an INTERNALERROR or a traceback (inf timeouts
    overflowed the watchdog's waits; an axis of a strategy not selected was ignored)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = nqpytest("--nq-strategy=serial", "--nq-n=8", *args)
    out = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert any(
        line == f"ERROR: {message}" or line.startswith(f"ERROR: {message}")
        for line in result.errlines
    ), out


def test_an_axis_without_a_strategy_applies_to_the_selected_ones_that_have_it():
    s = options.parse_settings({"nq_strategy": "serial,multicore", "nq_param": ["depth=2,3"]})
    assert s.axes == {"multicore": {"depth": ("2", "3")}}


def test_the_auto_round_rule():
    rule = rounds.RoundRule()
    steady = [1e-3] * 1000
    # at least MIN_ROUNDS rounds, whatever the time
    assert not rule.done(steady[: rounds.MIN_ROUNDS - 1], elapsed=100.0)
    # after MIN_TIME a steady median is enough; before it, not
    assert rule.done(steady[:50], elapsed=rounds.MIN_TIME) and not rule.done(
        steady[:50], elapsed=rounds.MIN_TIME * 0.99
    )
    # a noisy median goes on until MAX_TIME or MAX_ROUNDS
    noisy = [1e-3 * (1 + (i % 7) / 3) for i in range(1000)]
    assert rounds.median_noise(noisy[:20]) > rounds.TARGET_NOISE
    assert not rule.done(noisy[:20], elapsed=rounds.MAX_TIME * 0.99) and rule.done(
        noisy[:20], elapsed=rounds.MAX_TIME
    )
    assert rule.done(noisy[: rounds.MAX_ROUNDS], elapsed=1.0) and not rule.done(
        noisy[: rounds.MAX_ROUNDS - 1], 1.0
    )
    # the noise falls with the rounds, so auto ends
    assert rounds.median_noise(noisy[:400]) < rounds.median_noise(noisy[:100]) / 1.9
    # a fixed count is exactly that
    assert rounds.RoundRule.of(3).done([1.0] * 3, 0.0) and not rounds.RoundRule.of(3).done(
        [1.0] * 2, 1e9
    )
    assert rounds.median_noise([1.0]) == float("inf")


def test_one_round_rule_everywhere():
    """solve, sweep and the plugin default to the same rule, and their help says which."""
    from nqprof.cli import build_parser

    s = options.parse_settings({})
    assert (s.rounds, s.warmup, s.timer) == (None, rounds.DEFAULT_WARMUP, "compute")
    parser = build_parser()
    for command in ("solve", "sweep"):
        sub = next(
            a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == command
        )[1]
        text = sub.format_help().replace("\n", " ")
        assert "(default: auto)" in " ".join(text.split()) and "0.5%" in text
        defaults = {a.dest: a.default for a in sub._actions}
        assert (
            defaults["nq_rounds"] is None and defaults["nq_warmup"] is None
        )  # the option's own default
    assert (
        options.ROUNDS.value(None) is None and options.WARMUP.value(None) == rounds.DEFAULT_WARMUP
    )


# -- parametrization and skips --------------------------------------------------------------


def test_cases_are_the_product_of_n_and_axes(fakes, nqpytest):
    result = nqpytest(
        "--collect-only",
        "-q",
        "--nq-strategy=fakecpu",
        "--nq-n=6:7",
        "--nq-param",
        "fakecpu.depth=1,6",
        "--nq-param",
        "fakecpu.wrong=0",
    )
    result.stdout.fnmatch_lines(
        [
            "test_suite.py::test_nq[[]fakecpu-N6-depth=1-wrong=0[]]",
            "test_suite.py::test_nq[[]fakecpu-N6-depth=6-wrong=0[]]",
            "test_suite.py::test_nq[[]fakecpu-N7-depth=1-wrong=0[]]",
            "test_suite.py::test_nq[[]fakecpu-N7-depth=6-wrong=0[]]",
            "4 tests collected*",
        ]
    )


def test_default_n_range_starts_at_the_smallest_n_a_strategy_takes(fakes, nqpytest, monkeypatch):
    lo, hi = options.DEFAULT_N
    monkeypatch.setattr(FakeGpu, "min_n", lo + 2)
    result = nqpytest("--collect-only", "-q", "--nq-strategy=fakecpu,fakegpu")
    ids = [line.split("[", 1)[1].rstrip("]") for line in result.outlines if "::test_nq[" in line]
    assert ids == [f"fakecpu-N{n}" for n in range(lo, hi + 1)] + [
        f"fakegpu-N{n}" for n in range(lo + 2, hi + 1)
    ]


def test_invalid_combination_and_missing_gpu_are_skips_with_reasons(fakes, nqpytest):
    result = nqpytest(
        "-rs",
        "-W",
        "error::pytest_benchmark.logger.PytestBenchmarkWarning",
        "--nq-strategy=fakecpu,fakegpu",
        "--nq-n=6,7",
        "--nq-param",
        "fakecpu.depth=2,6",
    )
    result.assert_outcomes(passed=3, skipped=3)
    result.stdout.fnmatch_lines_random(
        [
            "SKIPPED*fakecpu N=6 (depth=6): parameter depth must be in 1..5 for N=6, got 6",
            "SKIPPED*fakegpu needs a GPU: test: no GPU here",
        ]
    )


def test_histogram_without_pygal_is_a_usage_error_at_the_start(fakes, nqpytest, monkeypatch):
    monkeypatch.setitem(sys.modules, "pygal", None)  # import pygal fails, as where it is missing
    result = nqpytest("--benchmark-histogram", "--nq-strategy=fakecpu", "--nq-n=6")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[:1] == [
        "ERROR: --benchmark-histogram needs pygal, which is not installed: "
        "pip install 'pytest-benchmark[histogram]'"
    ]
    assert "Traceback" not in result.stderr.str() and "passed" not in result.stdout.str()


def test_histogram_with_pygal_starts(fakes, nqpytest, monkeypatch):
    monkeypatch.setitem(sys.modules, "pygal", types.ModuleType("pygal"))
    result = nqpytest("--benchmark-histogram", "--nq-strategy=fakecpu", "--nq-n=6", "--co")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()


def test_an_axis_value_no_case_accepts_is_a_usage_error(fakes, nqpytest):
    """A typo runs nothing: a usage error naming the value, not a suite of skips."""
    result = nqpytest("--nq-strategy=fakecpu", "--nq-n=6", "--nq-param", "fakecpu.depth=2,6")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*fakecpu.depth=6 is rejected by every case it is in: parameter depth must be in 1..5*"]
    )
    result = nqpytest("--nq-strategy=fakecpu", "--nq-n=6", "--nq-param", "fakecpu.depth=x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_gpu_cases_carry_the_gpu_mark(fakes, nqpytest):
    result = nqpytest("-q", "-m", "not gpu", "--nq-strategy=fakecpu,fakegpu", "--nq-n=8")
    result.assert_outcomes(passed=1, deselected=1)


def test_a_test_may_parametrize_nqbench_itself(fakes, pytester, nqpytest):
    pytester.makepyfile(
        test_suite="""
        import pytest

        @pytest.mark.parametrize(
            "nqbench", [{"strategy": "fakecpu", "n": 9, "params": {"depth": "3"}}], indirect=True
        )
        def test_one(nqbench):
            assert nqbench.run().params == {"depth": 3, "wrong": 0}
    """
    )
    result = nqpytest("-v", "--nq-strategy=fakecpu")
    result.assert_outcomes(passed=1)


def test_the_session_keeps_each_case_s_units_for_the_cases_after_it(fakes, pytester, nqpytest):
    """Each case's units go into the session's UnitLedger, by strategy, once its rounds
    are done: the prior a later case's auto units read (RoundLoop.unit_prior)."""
    pytester.makepyfile(
        test_suite="""
        import pytest

        CASES = [{"strategy": "fakecpu", "n": 8}, {"strategy": "fakecpu", "n": 9}]

        @pytest.mark.parametrize("nqbench", CASES, indirect=True)
        def test_one(nqbench, request):
            from nqprof.plugin import _UNITS

            before = len(nqbench.units.cases)
            assert nqbench.units is request.config.stash[_UNITS]
            nqbench.run()
            assert len(nqbench.units.cases) == before + 1
            group, median, squares, df = nqbench.units.cases[-1]
            assert (group, df) == ("fakecpu", 2) and median == 5e-5
    """
    )
    result = nqpytest("-v", "--nq-strategy=fakecpu", "--nq-rounds=6")
    result.assert_outcomes(passed=2)


# -- running: counts, extra_info, machine_info ------------------------------------------------


def test_wrong_count_fails_the_test_and_is_not_saved(fakes, nqpytest, tmp_path):
    """A failed case fails its test, without pytest-benchmark's warning that the fixture
    was not used (nqprof hands it the rounds only after a run that worked)."""
    out = tmp_path / "run.json"
    result = nqpytest(
        "--nq-strategy=fakecpu",
        "--nq-n=8",
        "--nq-param",
        "fakecpu.wrong=0,1",
        f"--benchmark-json={out}",
    )
    result.assert_outcomes(passed=1, failed=1, warnings=0)
    result.stdout.fnmatch_lines(["*fakecpu N=8 (depth=2, wrong=1) counted 93, expected 92*"])
    saved = json.loads(out.read_text())
    assert [b["param"] for b in saved["benchmarks"]] == ["fakecpu-N8-wrong=0"]


def test_saved_benchmark_carries_the_run_record(fakes, nqpytest, tmp_path):
    out = tmp_path / "run.json"
    result = nqpytest(
        "--nq-strategy=fakecpu",
        "--nq-n=8",
        "--nq-rounds=3",
        "--nq-warmup=2",
        "--nq-param",
        "fakecpu.depth=3",
        f"--benchmark-json={out}",
    )
    result.assert_outcomes(passed=1)
    saved = json.loads(out.read_text())
    (bench,) = saved["benchmarks"]
    extra = bench["extra_info"]
    assert bench["stats"]["rounds"] == 3 and extra["rounds"] == 3 and extra["warmup"] == 2
    assert bench["group"] == "N=08, compute time"
    assert bench["params"] == {"nqbench": {"strategy": "fakecpu", "n": 8, "params": {"depth": "3"}}}
    assert (extra["strategy"], extra["n"], extra["params"]) == (
        "fakecpu",
        8,
        {"depth": 3, "wrong": 0},
    )
    assert (extra["count"], extra["expected"], extra["verified"]) == (92, 92, True)
    # the statistic pytest-benchmark keeps is the session's own time of each round
    assert (
        extra["gpu_s"] == 5e-5
        and extra["samples_compute"] == [5e-5] * 3
        and bench["stats"]["median"] == 5e-5
    )
    assert bench["options"]["timer"] == "nqprof.worker_clock" and len(extra["samples_wall"]) == 3
    assert extra["case"] == {"strategy": "fakecpu", "n": 8, "given": {"depth": "3"}}
    assert extra["conditions"]["cpu"]["cores"] >= 1 and "auto" not in extra["round_rule"]
    assert extra["generations"] == [{"index": 0, "grids": 3}] and extra["device_failures"] == {
        "launch": 0
    }
    assert extra["memory"]["deltas_mib"] == {"module": -2.0, "run": -0.5}
    assert extra["kernels"][0]["registers"] == 32
    assert extra["source_hash"] == "0123456789abcdef" and extra["toolkit"]["version"] == "13.0"
    assert (extra["device_kind"], extra["cdp"]) == ("cpu", False)
    assert saved["machine_info"]["nqprof"] == json.loads(json.dumps(machine.machine_facts()))
    assert saved["nqprof"]["settings"]["strategies"] == ["fakecpu"]
    assert saved["nqprof"]["settings"]["axes"] == {"fakecpu": {"depth": ["3"]}}


def test_machine_facts_on_a_machine_without_gpu(monkeypatch):
    machine.machine_facts.cache_clear()
    monkeypatch.setattr(device, "gpu_available", lambda: (False, "no CUDA device"))
    try:
        facts = machine.machine_facts()
    finally:
        machine.machine_facts.cache_clear()
    assert facts["gpu"] is None and facts["gpu_status"] == "CPU only: no CUDA device"
    assert "cuda_toolkit" in facts and facts["version"]


def test_machine_differences():
    a = {"nqprof": {"gpu": "NVIDIA H100", "cuda_toolkit": "13.0", "driver": "13.0", "clock_mhz": 1}}
    b = {"nqprof": {"gpu": "NVIDIA H200", "cuda_toolkit": "13.0", "driver": "13.0", "clock_mhz": 2}}
    assert machine.machine_differences(a, a) == []
    assert machine.machine_differences(a, b) == ["gpu: 'NVIDIA H100' -> 'NVIDIA H200'"]
    # a run saved without nqprof benchmarks has no facts to differ in
    assert (
        machine.machine_differences({}, a) == []
        and machine.machine_differences(a, {"nqprof": {}}) == []
    )
    c = {"nqprof": {"gpu": None, "cuda_toolkit": None, "driver": None}}
    assert machine.machine_differences(c, a) == [
        "gpu: None -> 'NVIDIA H100'",
        "cuda_toolkit: None -> '13.0'",
        "driver: None -> '13.0'",
    ]


@pytest.mark.slow
def test_comparing_against_another_gpu_warns(fakes, nqpytest, monkeypatch, tmp_path):
    """The facts of this machine are read at compare time (before any case ran) and
    compared with the saved run's; the storage may be anywhere."""
    args = (
        "--nq-strategy=fakecpu",
        "--nq-n=8",
        "--nq-rounds=2",
        f"--benchmark-storage={tmp_path / 'storage'}",
    )

    def compare_warnings():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            nqpytest(*args, "--benchmark-compare").assert_outcomes(passed=1)
        return [str(w.message) for w in caught if "machine" in str(w.message)]

    monkeypatch.setattr(
        machine, "machine_facts", lambda: {"gpu": "NVIDIA H100", "cuda_toolkit": "12.8"}
    )
    nqpytest(*args, "--benchmark-autosave").assert_outcomes(passed=1)
    monkeypatch.setattr(
        machine, "compare_facts", lambda: {"gpu": "NVIDIA H100", "cuda_toolkit": "12.8"}
    )
    assert compare_warnings() == []
    monkeypatch.setattr(
        machine, "compare_facts", lambda: {"gpu": "NVIDIA H200", "cuda_toolkit": "13.0"}
    )
    (said,) = compare_warnings()
    assert said.startswith("nqprof: the compared run (saved ")
    assert said.endswith(
        " ran on another machine: nqprof.gpu: 'NVIDIA H100' -> 'NVIDIA H200'; "
        "nqprof.cuda_toolkit: '12.8' -> '13.0' (saved -> this run): "
        "differences in time may come from the machine, not the code"
    )


# -- the statistical gate: --nq-compare-fail ---------------------------------------------------
#
# A test double whose every round takes exactly its parameter scale (percent of 1 ms), and a
# CPU speed probe that reads what the test says: the verdicts are decided by the samples the
# test chose, never by this machine's clock.


@pytest.fixture
def scaled(fakes, monkeypatch, register_strategy):
    """The ``scaled`` double registered, and the CPU speed probe reading ``probe[0]``."""
    from nqprof import conditions

    register_strategy(Scaled("scaled", gpu=True))
    probe = [5e-4]
    monkeypatch.setattr(conditions, "cpu_probe_s", lambda: probe[0])
    return probe


def _gate_args(tmp_path, *more):
    return (
        "--nq-strategy=scaled",
        "--nq-n=8:9",
        "--nq-rounds=10",
        f"--benchmark-storage={tmp_path / 'storage'}",
        *more,
    )


def test_the_compare_gate_passes_an_a_a_session_and_fails_a_slowdown(
    scaled, nqpytest, monkeypatch, tmp_path, pytester
):
    """An A/A session against the saved run: every case the same, the gate passes (exit 0)
    and pytest's summary shows nqprof's compare table. The double's default then moves from
    100 to 300 (three times slower): the gate fails the session (exit 1), its table naming
    each case slower and the moved parameter, though every test passed."""
    nqpytest(*_gate_args(tmp_path, "--benchmark-autosave")).assert_outcomes(passed=2)
    gate = ("--benchmark-compare", "--nq-compare-fail=slower,cannot-tell")
    same = nqpytest(*_gate_args(tmp_path, *gate))
    same.assert_outcomes(passed=2)
    assert same.ret == pytest.ExitCode.OK, same.outlines
    same.stdout.fnmatch_lines(
        [
            "*- nqprof compare -*",
            "nqprof: this session against the run saved *, metric compute:",
            "strategy*N*params*A*B*change*floor*p*verdict",
            "scaled*8*1.000 ms*1.000 ms*+0.0%*±10.0%*same",
            "scaled*9*1.000 ms*1.000 ms*+0.0%*±10.0%*same",
            "2 same",
        ]
    )
    assert "compare failed" not in same.stdout.str()

    monkeypatch.setattr(Scaled, "params", (Param("scale", "percent", default=300, lo=10, hi=1000),))
    slower = nqpytest(*_gate_args(tmp_path, *gate))
    slower.assert_outcomes(passed=2)
    assert slower.ret == pytest.ExitCode.TESTS_FAILED
    slower.stdout.fnmatch_lines(
        [
            "strategy*N*params*A*B*change*floor*p*verdict*changed",
            "scaled*8*1.000 ms*3.000 ms*+200.0%*±10.0%*<1e-4*slower*scale 100 -> 300",
            "scaled*9*1.000 ms*3.000 ms*+200.0%*±10.0%*<1e-4*slower*scale 100 -> 300",
            "2 slower; 2 changed-params",
            "*nqprof: compare failed: 2 slower (--nq-compare-fail slower,cannot-tell)",
        ]
    )
    # a verdict the gate does not list leaves the session as its tests left it
    faster_only = nqpytest(*_gate_args(tmp_path, "--benchmark-compare", "--nq-compare-fail=faster"))
    assert faster_only.ret == pytest.ExitCode.OK and "2 slower" in faster_only.stdout.str()
    # pytest-benchmark's own gate failing too (it raises from its summary): nqprof's table
    # is still printed, and the session still fails
    both = nqpytest(*_gate_args(tmp_path, *gate, "--benchmark-compare-fail=median:5%"))
    assert both.ret != pytest.ExitCode.OK
    assert "Performance has regressed" in both.stdout.str() + both.stderr.str()
    table = [
        "*- nqprof compare -*",
        "scaled*8*1.000 ms*3.000 ms*+200.0%*±10.0%*<1e-4*slower*scale 100 -> 300",
        "*nqprof: compare failed: 2 slower (--nq-compare-fail slower,cannot-tell)",
    ]
    both.stdout.fnmatch_lines(table)
    # whichever plugin's summary runs first (pluggy's order differs between versions: on an
    # H200 host pytest-benchmark's ran first and its raise left no table), and raises
    pytester.makeconftest(
        "import pytest\n\n\n@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_terminal_summary(terminalreporter):\n"
        "    raise RuntimeError('a summary that raises')\n"
    )
    first = nqpytest(*_gate_args(tmp_path, *gate))
    assert first.ret != pytest.ExitCode.OK and "a summary that raises" in first.stderr.str()
    first.stdout.fnmatch_lines(table)


def test_the_compare_gate_fails_what_it_cannot_tell(scaled, nqpytest, tmp_path):
    """The same times on a host whose CPU speed probe moved by 30%: the floor is 60%, wider
    than the 10% a CPU case must catch, so the cases are cannot-tell, with why; with
    --nq-min-change=60 the floor is on the change to catch: the same."""
    nqpytest(*_gate_args(tmp_path, "--benchmark-autosave")).assert_outcomes(passed=2)
    scaled[0] = 6.5e-4
    gate = ("--benchmark-compare", "--nq-compare-fail=cannot-tell")
    unsure = nqpytest(*_gate_args(tmp_path, *gate))
    assert unsure.ret == pytest.ExitCode.TESTS_FAILED
    unsure.stdout.fnmatch_lines(
        [
            "scaled*8*1.000 ms*1.000 ms*+0.0%*±60.0%*cannot-tell",
            "2 cannot-tell",
            "cannot-tell: the floor is wider than the smallest change to catch (--nq-min-change: "
            "5% for GPU cases, 10% for CPU cases)*",
            "  scaled N=8: floor ±60.0% > 10%: the host's CPU speed moved +30% between the runs*",
            "  scaled N=9: floor ±60.0% > 10%: *",
            "*nqprof: compare failed: 2 cannot-tell (--nq-compare-fail cannot-tell)",
        ]
    )
    wide = nqpytest(*_gate_args(tmp_path, *gate, "--nq-min-change=60"))
    assert wide.ret == pytest.ExitCode.OK
    wide.stdout.fnmatch_lines(["scaled*8*±60.0%*same", "2 same"])


@pytest.mark.filterwarnings("ignore:Can't compare")
def test_the_compare_gate_without_a_saved_run_says_so(scaled, nqpytest, tmp_path):
    result = nqpytest(*_gate_args(tmp_path, "--benchmark-compare", "--nq-compare-fail=slower"))
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "nqprof: --nq-compare-fail: --benchmark-compare found no saved run to compare with: "
            "nothing compared"
        ]
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--benchmark-compare", "--nq-compare-fail=worse"],
            "--nq-compare-fail takes a comma list of slower, faster, cannot-tell, too-few-rounds, "
            "only-a, only-b, changed-params, changed-source, changed-toolkit, changed-gpu, got "
            "'worse'",
        ),
        (["--benchmark-compare", "--nq-compare-fail="], "--nq-compare-fail takes a comma list"),
        (
            ["--nq-compare-fail=slower"],
            "--nq-compare-fail compares with the run --benchmark-compare picks: give "
            "--benchmark-compare too",
        ),
        *(
            (
                ["--benchmark-compare", "--nq-compare-fail=slower", f"--nq-min-change={bad}"],
                f"--nq-min-change must be a positive number, got '{bad}'",
            )
            for bad in ("0", "-5", "nan", "ten", "10%")
        ),
        *(
            (
                ["--benchmark-compare", "--nq-compare-fail=slower", f"--nq-min-change={bad}"],
                "--nq-min-change must be at most 1000 (a change of ten times the median), "
                f"got '{bad}'",
            )
            for bad in ("inf", "1001")
        ),
        (
            ["--nq-min-change=10"],
            "--nq-min-change sets what --nq-compare-fail's verdicts must catch: give "
            "--nq-compare-fail too",
        ),
    ],
)
def test_the_gate_options_answer_bad_values_in_one_line(nqpytest, args, message):
    result = nqpytest("--nq-strategy=serial", "--nq-n=8", *args)
    out = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    (error,) = [line for line in result.errlines if line.startswith("ERROR:")]
    assert error.startswith(f"ERROR: {message}"), out


# -- the one adapter to pytest-benchmark's private parts ------------------------------------


def test_only_the_adapter_touches_pytest_benchmark_s_private_parts():
    """The fixture's timer and mode and the session object are reached in one module,
    nqprof.benchadapter, and nowhere else in the package."""
    import re
    from pathlib import Path

    import nqprof

    root = Path(nqprof.__file__).parent
    private = re.compile(r"\._timer\b|\._mode\b|_benchmarksession")
    found = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if private.search(path.read_text(encoding="utf-8"))
    )
    assert found == ["benchadapter.py"]


@pytest.mark.parametrize(
    "installed, untested", [("5.2.3", False), ("4.0.0", False), ("6.0.0", True), ("3.4.1", True)]
)
def test_an_untested_pytest_benchmark_is_named(monkeypatch, installed, untested):
    import pytest_benchmark

    from nqprof.benchadapter import check_version

    monkeypatch.setattr(pytest_benchmark, "__version__", installed)
    line = check_version()
    assert (line is not None) == untested
    if untested:
        assert f"not {installed}" in line and "tested with pytest-benchmark 4 and 5.x" in line
