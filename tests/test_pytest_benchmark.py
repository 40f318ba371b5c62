"""pytest-benchmark as its users use it on nqprof's cases: real pytest sessions of the
benchmark suite (serial, N=8 and 9, three rounds a case) saved and compared with
``--benchmark-compare``, ``--benchmark-compare-fail`` and ``pytest-benchmark compare``, the
storage inside and outside the working folder; ``--benchmark-only``; pytest-benchmark's
timing options; ``nqprof compare`` on the names ``pytest-benchmark list`` prints. Inner
sessions run in-process (pytester), one end to end as a subprocess."""

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pandas  # noqa: F401 - loaded before the in-process inner sessions (numpy imports once)
import pytest
from inner_pytest import BENCH_SUITE, inner_pytest
from test_trust import _FakeNvml

from nqprof import machine
from nqprof.cli import main as nqprof_main
from nqprof.cuda import device
from nqprof.rounds import RoundRule

pytest_plugins = ["pytester"]

SELECT = ("--nq-strategy=serial", "--nq-n=8:9")
CASES = (*SELECT, "--nq-rounds=3")
#: Any warning of pytest-benchmark's (machine_info above all) fails the inner session.
NO_WARNING = ("-W", "error::pytest_benchmark.logger.PytestBenchmarkWarning")


@pytest.fixture
def bench(pytester, request):
    """Run an inner pytest over a copy of bench/test_nqueens.py (give the case options)."""
    return inner_pytest(pytester, request, suite=BENCH_SUITE, name="test_nqueens")


@pytest.fixture(params=["inside", "outside"])
def storage(request, pytester, tmp_path_factory) -> Path:
    """A storage folder under the inner session's working folder, or elsewhere."""
    if request.param == "inside":
        return Path("storage")
    return tmp_path_factory.mktemp("elsewhere") / "storage"


def saved_runs(storage: Path) -> list[Path]:
    return sorted(storage.glob("*/*.json"))


def edit_run(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def pb_warnings(run, *args) -> tuple[object, list[str]]:
    """An inner session, and the PytestBenchmarkWarnings it gave (pytest-benchmark compares
    machine_info at configure time, before pytest records warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run(*args)
    return result, [
        str(w.message) for w in caught if type(w.message).__name__ == "PytestBenchmarkWarning"
    ]


# -- --benchmark-compare, --benchmark-compare-fail: machine_info, the storage -----------------


@pytest.mark.slow
def test_two_runs_on_one_machine_compare_without_a_machine_warning(bench, storage):
    where = f"--benchmark-storage={storage}"
    bench(*CASES, where, "--benchmark-autosave").assert_outcomes(passed=2)
    (saved,) = saved_runs(storage)
    assert (
        json.loads(saved.read_text())["machine_info"][machine.MACHINE_KEY]["cuda_toolkit"]
        == machine.compare_facts()["cuda_toolkit"]
    )
    result = bench(*CASES, where, "--benchmark-compare", *NO_WARNING)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        ["test_nqueens[[]serial-N8[]] (NOW)*", "test_nqueens[[]serial-N8[]] (0001_*"]
    )


@pytest.mark.slow
def test_a_run_saved_on_another_machine_is_warned_in_one_readable_line(bench, storage):
    where = f"--benchmark-storage={storage}"
    bench(*CASES, where, "--benchmark-autosave").assert_outcomes(passed=2)
    here = machine.compare_facts()

    def elsewhere(data):
        info = data["machine_info"]
        info["node"] = "another-host"
        info["cpu"]["hz_actual"] = [1, 0]  # moves on one machine: never a difference
        info[machine.MACHINE_KEY].update(gpu="NVIDIA Z900", driver="99.9")

    edit_run(saved_runs(storage)[0], elsewhere)
    result, said = pb_warnings(bench, *CASES, where, "--benchmark-compare")
    result.assert_outcomes(passed=2)  # no INTERNALERROR, wherever the storage is
    (line,) = said
    assert (
        line.startswith("nqprof: the compared run (saved ") and "\n" not in line and len(line) < 400
    )
    assert f"nqprof.gpu: 'NVIDIA Z900' -> {here['gpu']!r}" in line
    assert f"nqprof.driver: '99.9' -> {here.get('driver')!r}" in line
    assert "node: 'another-host' -> " in line and "hz_actual" not in line


@pytest.mark.slow
def test_a_run_saved_without_nqprof_is_left_to_pytest_benchmark(bench, pytester):
    """A saved run that is not nqprof's keeps pytest-benchmark's own comparison."""
    bench(*CASES, "--benchmark-storage=storage", "--benchmark-autosave").assert_outcomes(passed=2)

    def not_nqprofs(data):
        data["machine_info"].pop(machine.MACHINE_KEY)
        data["machine_info"]["node"] = "another-host"

    edit_run(saved_runs(Path("storage"))[0], not_nqprofs)
    _, said = pb_warnings(bench, *CASES, "--benchmark-storage=storage", "--benchmark-compare")
    assert len(said) == 1 and said[0].startswith("Benchmark machine_info is different")


def test_compare_facts_without_pycuda_ask_nothing_of_cuda(monkeypatch):
    """Without PyCUDA no GPU run can happen: the facts say so without asking CUDA."""
    import importlib.util

    machine.machine_facts.cache_clear()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pycuda" else real(name, *a)
    )
    monkeypatch.setattr(device, "gpu_available", lambda: pytest.fail("CUDA was asked"))
    facts = machine.compare_facts()
    assert facts["gpu"] is None and "cuda_toolkit" in facts


class _Nvml(_FakeNvml):
    def nvmlSystemGetCudaDriverVersion(self):
        return 12080


def test_compare_facts_come_from_nvml_without_initialising_cuda(monkeypatch):
    """With PyCUDA installed, NVML names the GPU and the driver's CUDA version as CUDA
    would; without NVML only CUDA can tell (machine_facts)."""
    import importlib.util

    machine.machine_facts.cache_clear()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "pycuda" else real(name, *a),
    )
    monkeypatch.setitem(sys.modules, "pynvml", _Nvml([]))
    monkeypatch.setattr(device, "gpu_available", lambda: pytest.fail("CUDA was asked"))
    facts = machine.compare_facts()
    assert (facts["gpu"], facts["driver"]) == ("NVIDIA H200", "12.8") and "cuda_toolkit" in facts
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setattr(device, "gpu_available", lambda: (False, "asked CUDA"))
    try:
        assert machine.compare_facts()["gpu_status"] == "CPU only: asked CUDA"
    finally:
        machine.machine_facts.cache_clear()


def test_machine_info_differences():
    saved = {
        "node": "a",
        "python_build": ["main", "May 9"],
        "cpu": {"brand_raw": "EPYC", "hz_actual": [1, 0]},
        "nqprof": {
            "gpu": "NVIDIA H100",
            "cuda_toolkit": "13.0",
            "version": "0.1.0",
            "sm_count": 132,
        },
    }
    now = {
        "node": "a",
        "python_build": ("main", "May 9"),
        "cpu": {"brand_raw": "EPYC", "hz_actual": (2, 0)},
        "nqprof": {"gpu": "NVIDIA H100", "cuda_toolkit": "13.0", "version": "0.2.0"},
    }
    assert (
        machine.machine_info_differences(saved, now) == []
    )  # tuples as saved, the clock, nqprof's version
    other = {
        **now,
        "node": "b",
        "cpu": {"brand_raw": "Xeon " + "x" * 80},
        "nqprof": {"gpu": "NVIDIA H200"},
    }
    diffs = machine.machine_info_differences(saved, other)
    assert diffs[:2] == [
        "nqprof.gpu: 'NVIDIA H100' -> 'NVIDIA H200'",
        "nqprof.cuda_toolkit: '13.0' -> None",
    ]
    assert diffs[2] == "node: 'a' -> 'b'" and diffs[3].startswith(
        "cpu.brand_raw: 'EPYC' -> 'Xeon xxx"
    )
    assert len(diffs) == 4 and diffs[3].endswith("...")


@pytest.mark.slow
@pytest.mark.parametrize("saved_min, fails", [(1e-12, True), (10.0, False)])
def test_benchmark_compare_fail(bench, storage, saved_min, fails, capsys):
    """The saved run's min moved far below or above any time of this run: a regression, or
    none, decided by pytest-benchmark on nqprof's times."""
    where = f"--benchmark-storage={storage}"
    bench(*CASES, where, "--benchmark-autosave").assert_outcomes(passed=2)

    def move(data):
        for b in data["benchmarks"]:
            b["stats"]["min"] = saved_min

    edit_run(saved_runs(storage)[0], move)
    result = bench(*CASES, where, "--benchmark-compare", "--benchmark-compare-fail=min:5%")
    assert (
        result.ret != pytest.ExitCode.OK
    ) == fails  # 1 from the command line (in-process, pytest says 3)
    text = result.stdout.str() + result.stderr.str()
    assert ("Performance has regressed" in text) == fails and "test_nqueens.py .." in text
    said = capsys.readouterr().err  # pytest-benchmark's logger writes to the stderr it found
    for n in (8, 9):
        assert (
            bool(
                re.search(
                    rf"test_nqueens\[serial-N{n}\] \(0001_\w*\) - Field 'min' has failed", said
                )
            )
            == fails
        )


@pytest.mark.slow
def test_the_suite_end_to_end_in_a_subprocess(pytester, tmp_path_factory):
    """The two runs of the report, as a user types them: no machine_info warning, and the
    storage outside the working folder works."""
    pytester.mkdir("bench")
    (pytester.path / "bench" / "test_nqueens.py").write_text(BENCH_SUITE)
    where = f"--benchmark-storage={tmp_path_factory.mktemp('runs')}"
    first = pytester.runpytest_subprocess(
        "bench/", *CASES, where, "--benchmark-autosave", "-p", "no:cacheprovider"
    )
    first.assert_outcomes(passed=2)
    second = pytester.runpytest_subprocess(
        "bench/", *CASES, where, "--benchmark-compare", "-p", "no:cacheprovider"
    )
    second.assert_outcomes(passed=2)
    text = second.stdout.str() + second.stderr.str()
    assert "machine_info" not in text and "INTERNALERROR" not in text and "Warning" not in text
    second.stdout.fnmatch_lines_random(
        ["test_nqueens[[]serial-N9[]] (NOW)*", "test_nqueens[[]serial-N9[]] (0001_*"]
    )


# -- --benchmark-only, --benchmark-skip -------------------------------------------------------


def test_benchmark_only_runs_nqprof_cases(bench, pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = bench(*CASES, "--benchmark-only", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED*test_plain.py*Skipping non-benchmark (--benchmark-only active)."]
    )
    result = bench(*CASES, "--benchmark-skip", *NO_WARNING)
    result.assert_outcomes(passed=1, skipped=2)


# -- pytest-benchmark list and compare, nqprof compare ----------------------------------------


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:No artists with labels")  # the speedup figure of serial alone
def test_pytest_benchmark_list_and_compare_and_nqprof_compare(bench, storage, capsys):
    where = f"--benchmark-storage={storage}"
    for _ in range(2):
        bench(*CASES, where, "--benchmark-autosave").assert_outcomes(passed=2)

    def pytest_benchmark(*args):
        return subprocess.run(
            [sys.executable, "-m", "pytest_benchmark", "--storage", str(storage), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    listed = pytest_benchmark("list")
    assert listed.returncode == 0, listed.stderr
    paths = listed.stdout.split()
    assert [Path(p).resolve() for p in paths] == [p.resolve() for p in saved_runs(storage)]
    compared = pytest_benchmark("compare", "0001", "0002")
    assert compared.returncode == 0, compared.stderr
    assert (
        "test_nqueens[serial-N8]" in compared.stdout
        and "test_nqueens[serial-N9]" in compared.stdout
    )
    # every name list prints, and the names under the storage folder, are runs nqprof compare takes
    first = Path(paths[0])
    names = [
        paths[0],
        os.path.relpath(paths[0]),
        f"{first.parent.name}/{first.name}",
        first.name,
        first.stem,
        "0001*",
    ]
    capsys.readouterr()
    for name in names:
        assert nqprof_main(["compare", "--storage", str(storage), name, paths[1]]) == 0
        out = capsys.readouterr().out
        assert (
            out.startswith(f"A: {first.parent.name}/{first.stem}\nB: ")
            and "\n2 too-few-rounds\n" in out
        )
    assert nqprof_main(["plot", "--storage", str(storage), "--run", paths[0], "-o", "figures"]) == 0
    assert "wrote figures/time_vs_n.png" in capsys.readouterr().out.splitlines()


def test_nqprof_compare_refuses_a_file_outside_the_storage(bench, tmp_path, capsys):
    bench(*CASES, "--benchmark-storage=storage", "--benchmark-autosave").assert_outcomes(passed=2)
    stray = tmp_path / "0001_stray.json"
    stray.write_text(saved_runs(Path("storage"))[0].read_text())
    capsys.readouterr()
    assert nqprof_main(["compare", "--storage", "storage", str(stray), "0001"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"nqprof: error: {stray} is not a run under the storage folder 'storage' (give its folder: "
        "--storage DIR)"
    )


# -- pytest-benchmark's timing options --------------------------------------------------------


def test_round_rule_bounds():
    rule = RoundRule().bounded(min_rounds=3, max_time=0.1)
    assert (rule.min_rounds, rule.max_time, rule.min_time, rule.max_rounds) == (3, 0.1, 0.1, 200)
    assert (
        rule.describe().startswith("auto: at least 3 rounds and 0.1 s")
        and "at most 0.1 s" in rule.describe()
    )
    assert RoundRule().bounded(max_time=20.0).min_time == RoundRule().min_time
    # the median's margin of error at 99% under 2%: its standard error under 2% / 2.576
    assert RoundRule().bounded(precision=0.02).target_noise == pytest.approx(
        0.02 / 2.5758, rel=1e-4
    )
    assert RoundRule().bounded(precision=0.02, confidence=0.95).target_noise == pytest.approx(
        0.02 / 1.96, rel=1e-3
    )
    assert RoundRule().bounded() == RoundRule()


def marked(keywords: str) -> str:
    """The suite with its test under ``@pytest.mark.benchmark(keywords)``."""
    suite = BENCH_SUITE.replace("import math", "import math\n\nimport pytest")
    return suite.replace(
        "def test_nqueens(", f"@pytest.mark.benchmark({keywords})\ndef test_nqueens("
    )


@pytest.mark.slow
def test_min_rounds_and_max_time_bound_the_round_rule(bench, pytester):
    out = pytester.path / "run.json"
    result = bench(
        *SELECT, "--benchmark-min-rounds=4", "--benchmark-max-time=0.05", f"--benchmark-json={out}"
    )
    result.assert_outcomes(passed=2)
    rule = RoundRule().bounded(min_rounds=4, max_time=0.05).describe()
    for b in json.loads(out.read_text())["benchmarks"]:
        assert b["extra_info"]["round_rule"] == rule and b["stats"]["rounds"] >= 4
    result = bench(
        "--nq-strategy=serial",
        "--nq-n=8",
        "--benchmark-precision=0.05",
        "--benchmark-confidence=0.95",
        "--benchmark-max-time=0.05",
        f"--benchmark-json={out}",
    )
    result.assert_outcomes(passed=1)
    (b,) = json.loads(out.read_text())["benchmarks"]
    bounded = RoundRule().bounded(precision=0.05, confidence=0.95, max_time=0.05)
    assert b["extra_info"]["round_rule"] == bounded.describe()
    assert "under 2.6%" in b["extra_info"]["round_rule"]  # 5% / 1.96


def test_the_benchmark_mark_bounds_its_case(bench, pytester):
    pytester.makepyfile(test_nqueens=marked("min_rounds=6"))
    out = pytester.path / "run.json"
    bench(
        "--nq-strategy=serial", "--nq-n=8", f"--benchmark-json={out}", "--benchmark-max-time=0.05"
    ).assert_outcomes(passed=1)
    (b,) = json.loads(out.read_text())["benchmarks"]
    assert (
        b["extra_info"]["round_rule"] == RoundRule().bounded(min_rounds=6, max_time=0.05).describe()
    )


@pytest.mark.parametrize(
    "option, rules",
    [
        ("--benchmark-min-time=0.001", "--nq-rounds sets their rounds"),
        ("--benchmark-calibration-precision=3", "--nq-rounds sets their rounds"),
        ("--benchmark-timer=time.process_time", "--nq-timer chooses it"),
        ("--benchmark-warmup=on", "--nq-warmup sets nqprof's untimed rounds"),
        ("--benchmark-warmup-iterations=3", "--nq-warmup sets nqprof's untimed rounds"),
        ("--benchmark-disable-gc", "nothing to disable"),
    ],
)
def test_timing_options_that_cannot_apply_are_refused_once(bench, option, rules):
    result = bench(*CASES, option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    flag = option.split("=")[0]
    result.stderr.fnmatch_lines([f"ERROR: nqprof's cases do not take {flag}: *{rules}*"])
    assert result.stderr.str().count(flag) == 1


def test_refused_options_count_from_addopts_and_the_mark(bench, pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_ADDOPTS", "--benchmark-warmup-iterations 5")
    result = bench(*CASES)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--benchmark-warmup-iterations: --nq-warmup*"])
    monkeypatch.delenv("PYTEST_ADDOPTS")
    pytester.makepyfile(test_nqueens=marked("min_time=0.1"))
    result = bench(*CASES)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*@pytest.mark.benchmark(min_time=...) of test_nqueens.py::test_nqueens[[]serial-N8[]]"
            ": nqprof takes one call per round*"
        ]
    )


@pytest.mark.slow
def test_bounds_beside_a_fixed_round_count_or_a_cluster_are_a_usage_error(
    bench, pytester, monkeypatch
):
    result = bench(*CASES, "--benchmark-max-time=0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --benchmark-max-time bounds nqprof's auto round rule, but --nq-rounds=3 "
            "times exactly that many rounds: give one of them"
        ]
    )
    # (a subprocess: Dask and its imports do not come back into an in-process session)
    result = pytester.runpytest_subprocess(
        *SELECT, "--nq-cluster=local", "--benchmark-min-rounds=3"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --benchmark-min-rounds: the cases of --nq-cluster take nqprof's round rule "
            "(--nq-rounds sets their rounds)"
        ]
    )
    # a confidence alone bounds nothing (pytest-benchmark's precision is off)
    bench(*CASES, "--benchmark-confidence=0.95").assert_outcomes(passed=2)
    # a bad NQPROF_TIMEOUT read for the check is a usage error too, in a suite that picks its own
    # case
    pytester.makepyfile(
        test_nqueens="""
        import pytest

        @pytest.mark.parametrize("nqbench", [{"strategy": "serial", "n": 8}], indirect=True)
        def test_one(nqbench):
            nqbench.run()
    """
    )
    monkeypatch.setenv("NQPROF_TIMEOUT", "soon")
    result = bench("--benchmark-min-rounds=3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: NQPROF_TIMEOUT: the timeout must be a positive number of seconds*"]
    )


def test_timing_options_are_left_alone_without_nqprof_cases_or_timing(bench, pytester):
    pytester.makepyfile(test_nqueens="def test_other(benchmark):\n    benchmark(sum, [1, 2])\n")
    bench(
        "--benchmark-min-time=0.0001", "--benchmark-disable-gc", "--benchmark-max-time=0.01"
    ).assert_outcomes(passed=1)
    pytester.makepyfile(test_nqueens=BENCH_SUITE)
    bench(*CASES, "--benchmark-disable", "--benchmark-min-time=0.001").assert_outcomes(passed=2)
