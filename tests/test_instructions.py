"""Instruction counts of CPU cases (nqprof.instructions, nqprof.benchinstr): callgrind's
output parsed (two files of real runs, committed, and made-up ones), the errors (no
Valgrind, a GPU strategy, a timeout, a process that dies), real counts that two
measurements agree on to the instruction, ``nqprof solve --instructions``, and
``pytest --nq-cpu-metric=instructions`` (a stand-in count, and real ones: a saved run whose
CPU cases' stats are their counts, the same in two sessions). Nothing here reads a clock."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from inner_pytest import BENCH_SUITE, inner_pytest

from nqprof import instructions
from nqprof.cli import main as nqprof_main
from nqprof.errors import InputError, UnavailableError, WatchdogError
from nqprof.instructions import (
    SECONDS_PER_INSTRUCTION,
    Counter,
    counting_functions,
    find_valgrind,
    is_interpreter,
    parse_callgrind,
)
from nqprof.result import RunRecord, instructions_text
from nqprof.strategies import get

pytest_plugins = ["pytester"]

DATA = Path(__file__).resolve().parent / "data" / "callgrind"
needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="Valgrind is not installed (apt install valgrind)"
)


# -- callgrind's output ------------------------------------------------------------------


def test_a_real_serial_round_is_parsed():
    """serial N=6 under callgrind (toggled in nq_py_serial): 3244 instructions, 2535 of them
    the extension's own, 709 in the Python C API calls it makes (481 in libpython and the
    228 of the C library's that those call)."""
    profile = parse_callgrind((DATA / "serial-N6.out").read_text())
    assert profile.events == ("Ir",)
    assert (profile.pid, profile.thread, profile.total()) == (9608, 1, 3244)
    assert profile.by_object() == {
        "_cpu.cpython-311-x86_64-linux-gnu.so": 2535,
        "libpython3.11.so.1.0": 481,
        "libc.so.6": 228,
    }
    (extension,) = profile.objects_of(("nq_py_serial",))
    assert extension.endswith("_cpu.cpython-311-x86_64-linux-gnu.so")
    assert profile.calls_into(is_interpreter, {extension}) == 709
    own = profile.functions[(extension, "nq_py_serial")]["Ir"]
    assert 0 < own < 2535  # the search itself is in nq_subtree, a callee
    # the calls into nq_py_serial from the interpreter carry its whole collected cost
    assert any(
        callee == "nq_py_serial" and cost["Ir"] == 3244
        for (_, _, _, callee), cost in profile.calls.items()
    )


def test_a_real_worker_thread_is_parsed():
    """multicore N=7 on two threads: the thread that took the tasks, nq_cst_count's calls
    only (no interpreter)."""
    profile = parse_callgrind((DATA / "multicore-N7-thread2.out").read_text())
    assert (profile.pid, profile.thread, profile.total()) == (9609, 2, 5098)
    assert set(profile.by_object()) == {"_cpu.cpython-311-x86_64-linux-gnu.so"}
    assert profile.calls_into(is_interpreter, profile.objects_of(("nq_cst_count",))) == 0


MADE_UP = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 42
thread: 3
positions: instr line
events: Ir Dr

ob=(1) /lib/ext.so
fl=(1) ext.c
fn=(1) count
0x10 5 7 2
+4 +1 3
* -1 1 1
cob=(2) /usr/lib/libpython3.11.so.1.0
cfn=(2) PyLong_FromLong
calls=1 0x99 3
0x14 6 20 4
cfn=(3) helper
calls=2 0x20 9
0x18 7 30
fn=(3)
0x20 9 30

ob=(2)
fn=(2)
0x99 3 20 4

totals: 61 7
"""


def test_made_up_output_with_two_events_and_compressed_names():
    """Two events, instruction and line positions with relative (+N, -N) and repeated (*)
    ones, names defined once and used by number, a call into another object (cob=, for
    the next call only) and one into the caller's own."""
    p = parse_callgrind(MADE_UP)
    assert p.events == ("Ir", "Dr") and p.totals == {"Ir": 61, "Dr": 7}
    assert (p.pid, p.thread) == (42, 3)
    assert p.functions[("/lib/ext.so", "count")] == {"Ir": 11, "Dr": 3}
    assert p.functions[("/lib/ext.so", "helper")] == {"Ir": 30}
    assert p.functions[("/usr/lib/libpython3.11.so.1.0", "PyLong_FromLong")] == {"Ir": 20, "Dr": 4}
    assert p.calls[("/lib/ext.so", "count", "/usr/lib/libpython3.11.so.1.0", "PyLong_FromLong")]
    assert ("/lib/ext.so", "count", "/lib/ext.so", "helper") in p.calls  # cob= was reset
    assert p.calls_into(is_interpreter, {"/lib/ext.so"}) == 20
    assert p.total("Dr") == 7 and p.by_object("Dr") == {"libpython3.11.so.1.0": 4, "ext.so": 3}


@pytest.mark.parametrize(
    "text, message",
    [
        ("fn=x\n1 2\n", "before the events"),
        ("events: Ir\nfn=x\n1 2\n", "no totals"),
        ("events: Ir\nfn=x\n1 2\ntotals: 3\n", "do not add up"),
        ("events: Ir\nfn=(7)\n1 2\ntotals: 2\n", "line 2: name (7) used before"),
        ("events: Ir\nfn=x\n1 2 3\ntotals: 2\n", "line 3: 2 costs for 1 events"),
        ("events: Ir\nfn=x\nhello world\n", "line 3: not callgrind's format"),
        ("events: Ir\nfn=x\ncalls=1 2\ncalls=1 2\n", "calls= without its cost line"),
        ("", "no events"),
    ],
)
def test_what_is_not_callgrind_output_is_refused(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_callgrind(text)


def test_the_record_line():
    record = {
        "count": 11504156,
        "tool": "callgrind",
        "version": "valgrind-3.19.0",
        "functions": ["nq_cst_count"],
        "threads": [5966551, 5537605],
        "python_api": 0,
        "seconds": 0.5,
        "start_s": 7.25,
    }
    assert instructions_text(record) == (
        "11,504,156 in nq_cst_count over 2 threads (5,966,551 + 5,537,605); callgrind of "
        "valgrind-3.19.0, 0.50 s under it after a start of 7.25 s"
    )
    serial = {**record, "functions": ["nq_py_serial"], "threads": [36173], "python_api": 709}
    assert "36,173 in nq_py_serial (and 709 in Python's C API, not counted);" in (
        instructions_text({**serial, "count": 36173})
    )
    rec = RunRecord("serial", 8, {}, 92, 92, True, 1.0, None, 1, [1.0], [])
    assert "instructions" not in rec.summary()
    rec.instructions = {**serial, "count": 36173}
    assert "\ninstructions 36,173 in nq_py_serial" in rec.summary()


# -- the errors --------------------------------------------------------------------------


def test_no_valgrind_is_one_line(monkeypatch):
    monkeypatch.setenv("NQPROF_VALGRIND", "/nonexistent/valgrind")
    with pytest.raises(UnavailableError, match=r"need Valgrind \(NQPROF_VALGRIND="):
        find_valgrind()
    monkeypatch.setenv("NQPROF_VALGRIND", "true")  # a program, but not Valgrind
    with pytest.raises(UnavailableError, match="is not Valgrind"):
        Counter()


def test_gpu_strategies_and_unknown_cpu_ones_are_refused():
    with pytest.raises(InputError, match="^instructions are for CPU cases: dp3 runs on the GPU"):
        counting_functions(get("dp3"))
    assert counting_functions(get("serial")) == ("nq_py_serial",)
    assert counting_functions(get("multicore")) == ("nq_cst_count",)

    class Other:
        name, needs_gpu = "other", False

    with pytest.raises(UnavailableError, match="names no C function"):
        counting_functions(Other())
    Other.instruction_functions = ("my_count",)
    assert counting_functions(Other()) == ("my_count",)


def test_solve_refuses_before_it_runs(monkeypatch, capsys):
    assert nqprof_main(["solve", "8", "-s", "dp3", "--instructions"]) == 2
    assert capsys.readouterr().err.strip() == (
        "nqprof: error: instructions are for CPU cases: dp3 runs on the GPU (its times are "
        "CUDA-event times, which a host's clock speed does not move)"
    )
    assert nqprof_main(["solve", "8", "--instructions", "--cluster", "local"]) == 2
    assert "--instructions does not apply with --cluster" in capsys.readouterr().err
    monkeypatch.setenv("NQPROF_VALGRIND", "/nonexistent/valgrind")
    assert nqprof_main(["solve", "8", "--instructions", "-q"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("nqprof: error: instruction counts need Valgrind") and err.count("\n") == 1
    )


@pytest.fixture
def fake_valgrind(tmp_path, monkeypatch):
    """A "valgrind" that runs its program natively (no callgrind output), or, given
    ``die``, says one line and exits 1."""

    def make(die: bool = False) -> Path:
        script = tmp_path / "valgrind"
        body = (
            "print('valgrind: cannot start here', file=sys.stderr); sys.exit(1)"
            if die
            else "os.execv(args[0], args)"
        )
        script.write_text(
            f"#!{sys.executable}\nimport os, sys\nargs = sys.argv[1:]\n"
            "if args == ['--version']:\n    print('valgrind-3.19.0'); sys.exit(0)\n"
            "while args and args[0].startswith('-'):\n    args.pop(0)\n" + body + "\n"
        )
        script.chmod(0o755)
        monkeypatch.setenv("NQPROF_VALGRIND", str(script))
        return script

    return make


def _running_in_group(group: int) -> list[int]:
    """The processes of a process group that are not dead (zombies are), waiting up to a
    minute for a killed one to end."""
    import time

    deadline = time.monotonic() + 60
    while True:
        alive = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] not in "ZX":
                alive.append(int(stat.parent.name))
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_case_past_the_timeout_is_killed_with_its_process(fake_valgrind):
    """serial N=20 (minutes natively) against a 3 s timeout: one line naming the case, and
    the process group (the server and its forked case) is gone."""
    fake_valgrind()
    counter = Counter(timeout=3)
    strategy = get("serial")
    with pytest.raises(WatchdogError, match=r"^serial N=20 took more than 3 s under Valgrind"):
        counter.measure(strategy, 20, {})
    (server,) = counter._servers.values()
    assert _running_in_group(server.proc.pid) == []
    assert not server.folder.exists()
    counter.close()


def test_a_case_without_callgrind_output_and_a_dead_valgrind(fake_valgrind):
    fake_valgrind()
    with Counter(timeout=120) as counter, pytest.raises(UnavailableError, match="no output"):
        counter.measure(get("serial"), 5, {})
    fake_valgrind(die=True)
    with Counter(timeout=120) as counter, pytest.raises(UnavailableError) as err:
        counter.measure(get("serial"), 5, {})
    assert str(err.value) == (
        "Valgrind's start (for serial N=5): the process under Valgrind ended (exit code 1): "
        "valgrind: cannot start here"
    )


# -- real counts ---------------------------------------------------------------------------


@needs_valgrind
@pytest.mark.slow  # Valgrind's start: seconds
def test_two_measurements_agree_to_the_instruction():
    """serial N=6..8 twice each, multicore N=8 on one thread and on two (twice): equal
    counts; multicore's split over its threads may differ, its sum may not."""
    with Counter(timeout=300) as counter:
        serial = get("serial")
        counts = {n: [counter.measure(serial, n, {}) for _ in range(2)] for n in (6, 7, 8)}
        multicore = get("multicore")
        one = counter.measure(multicore, 8, multicore.resolve(8, {"threads": 1}))
        two = [counter.measure(multicore, 8, multicore.resolve(8, {"threads": 2})) for _ in "ab"]
    for a, b in counts.values():
        assert a["count"] == b["count"] and a["python_api"] == b["python_api"]
    assert counts[6][0]["count"] < counts[7][0]["count"] < counts[8][0]["count"]
    first = counts[6][0]
    assert first["tool"] == "callgrind" and first["version"].startswith("valgrind-")
    assert first["functions"] == ["nq_py_serial"] and first["threads"] == [first["count"]]
    assert first["python_api"] > 0 and len(first["extension"]) == 16
    assert one["count"] == two[0]["count"] == two[1]["count"] > 0
    assert one["python_api"] == 0 and sum(two[0]["threads"]) == two[0]["count"]


@needs_valgrind
@pytest.mark.slow
def test_solve_records_the_instructions(capsys):
    assert (
        nqprof_main(["solve", "7", "-s", "serial-d4", "--instructions", "-r", "1", "--json"]) == 0
    )
    record = json.loads(capsys.readouterr().out)
    counted = record["instructions"]
    assert record["verified"] and counted["count"] > 0 and counted["functions"] == ["nq_cst_count"]
    assert counted["tool"] == "callgrind" and counted["python_api"] == 0
    assert nqprof_main(["solve", "7", "-s", "serial-d4", "--instructions", "-r", "1"]) == 0
    assert f"instructions {counted['count']:,} in nq_cst_count; callgrind of" in (
        capsys.readouterr().out
    )


# -- pytest --nq-cpu-metric=instructions --------------------------------------------------


@pytest.fixture
def inner(pytester, request):
    """An inner pytest over a copy of bench/test_nqueens.py."""
    return inner_pytest(pytester, request, suite=BENCH_SUITE, name="test_nqueens")


def _saved(path: Path) -> dict[str, dict]:
    return {b["name"]: b for b in json.loads(path.read_text())["benchmarks"]}


def test_cpu_cases_hand_pytest_benchmark_their_count(inner, pytester, fake_valgrind, monkeypatch):
    """A stand-in count (12,345): every round of a CPU case is 12.345 us, its group says
    instructions, its clock nqprof.instructions, the terminal says what CPU cases report;
    without the option nothing is counted."""
    fake_valgrind()
    asked = []

    def measure(self, strategy, n, params):
        asked.append((strategy.name, n))
        return {"count": 12345 + n, "tool": "callgrind", "version": "valgrind-3.19.0"}

    monkeypatch.setattr(instructions.Counter, "measure", measure)
    case = ("--nq-strategy=serial,multicore", "--nq-n=6", "--nq-rounds=3")
    result = inner(*case, "--nq-cpu-metric=instructions", "--benchmark-json=out.json")
    result.assert_outcomes(passed=2)
    assert asked == [("serial", 6), ("multicore", 6)]
    # (each line on its own: pytest-benchmark 4 writes its table after nqprof's line, 5 before)
    result.stdout.fnmatch_lines(
        [
            "nqprof: CPU cases report instructions (--nq-cpu-metric=instructions): one round's, "
            "counted under Valgrind's callgrind, as every round's time at 1 ns per instruction *"
        ]
    )
    result.stdout.fnmatch_lines(["*benchmark 'N=06, instructions': 2 tests*"])
    saved = json.loads((pytester.path / "out.json").read_text())
    for bench in saved["benchmarks"]:
        assert bench["group"] == "N=06, instructions"
        assert bench["options"]["timer"] == "nqprof.instructions"
        assert bench["stats"]["rounds"] == 3
        expected = 12351 * SECONDS_PER_INSTRUCTION
        assert (
            bench["stats"]["min"] == bench["stats"]["max"] == bench["stats"]["median"] == expected
        )
        info = bench["extra_info"]
        assert info["metric"] == "instructions" and info["instructions"]["count"] == 12351
        assert len(info["samples_compute"]) == 3  # the times stay beside it

    asked.clear()
    result = inner(*case, "--benchmark-json=time.json")
    result.assert_outcomes(passed=2)
    assert asked == []
    result.stdout.fnmatch_lines(["nqprof: benchmark times are compute time*"])
    for bench in json.loads((pytester.path / "time.json").read_text())["benchmarks"]:
        assert bench["group"] == "N=06, compute time" and "metric" not in bench["extra_info"]


def test_the_gate_compares_instructions_exactly(inner, pytester, fake_valgrind, monkeypatch):
    """With --nq-cpu-metric=instructions, nqprof's gate compares what pytest-benchmark does:
    each CPU case's count, exactly (no floor): the same count is same at ±0.0%, whatever the
    times did; 3% more is same (below the 10% a CPU case must catch), 12% more slower; and
    nqprof compare --metric instructions says so of the saved runs."""
    pytest.importorskip("pandas")  # imported here first: the inner sessions cannot again
    fake_valgrind()
    count = {"serial": 100_000, "multicore": 200_000}
    scale = [1.0]

    def measure(self, strategy, n, params):
        return {"count": int(count[strategy.name] * scale[0]), "tool": "callgrind"}

    monkeypatch.setattr(instructions.Counter, "measure", measure)
    case = ("--nq-strategy=serial,multicore", "--nq-n=6", "--nq-rounds=3")
    storage = f"--benchmark-storage={pytester.path / 'storage'}"
    metric = "--nq-cpu-metric=instructions"
    inner(*case, metric, "--benchmark-autosave", storage).assert_outcomes(passed=2)
    gate = (storage, "--benchmark-compare", "--nq-compare-fail=slower,faster,cannot-tell")

    same = inner(*case, metric, *gate)
    assert same.ret == pytest.ExitCode.OK, same.outlines
    same.stdout.fnmatch_lines(
        [
            "nqprof: this session against the run saved *, metric instructions:",
            "serial*6*100.0 us*100.0 us*+0.0%*±0.0%*same",
            "multicore*6*200.0 us*200.0 us*+0.0%*±0.0%*same",
            "2 same",
        ]
    )
    scale[0] = 1.03
    inner(*case, metric, *gate).stdout.fnmatch_lines(
        ["serial*6*100.0 us*103.0 us*+3.0%*±0.0%*same"]
    )
    scale[0] = 1.12
    slower = inner(*case, metric, *gate, "--benchmark-autosave")
    assert slower.ret == pytest.ExitCode.TESTS_FAILED
    slower.stdout.fnmatch_lines(
        ["serial*6*100.0 us*112.0 us*+12.0%*±0.0%*slower", "*compare failed: 2 slower*"]
    )
    from nqprof.analysis.comparing import compare
    from nqprof.analysis.history import load_history

    df = load_history(pytester.path / "storage")
    runs = sorted(df["run"].unique())
    verdicts = compare(df, runs[0], runs[1], "instructions")
    assert list(verdicts["verdict"]) == ["slower", "slower"]
    assert list(verdicts["floor_pct"]) == [0.0, 0.0]
    assert [round(c, 6) for c in verdicts["change_pct"]] == [12.0, 12.0]


def test_a_failed_count_fails_the_case_in_one_line(inner, fake_valgrind, monkeypatch):
    fake_valgrind()

    def measure(self, strategy, n, params):
        raise WatchdogError(f"{strategy.name} N={n} took more than 1 s under Valgrind")

    monkeypatch.setattr(instructions.Counter, "measure", measure)
    result = inner(
        "--nq-strategy=serial", "--nq-n=6", "--nq-rounds=1", "--nq-cpu-metric=instructions"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*serial N=6: instructions: serial N=6 took more than 1 s under Valgrind*"]
    )


@needs_valgrind
@pytest.mark.slow  # two sessions, each with Valgrind's start
def test_an_aa_comparison_of_instructions_is_exactly_nothing(inner, pytester):
    """Two sessions of serial and multicore at N=7 saved: each CPU case's stats are its
    count * 1 ns in both, the same, and --benchmark-compare-fail=median:0 (fail on any
    increase) passes."""
    case = ("--nq-strategy=serial,multicore", "--nq-n=7", "--nq-rounds=2")
    storage = "--benchmark-storage=file://./storage"
    first = inner(*case, "--nq-cpu-metric=instructions", "--benchmark-autosave", storage)
    first.assert_outcomes(passed=2)
    second = inner(
        *case,
        "--nq-cpu-metric=instructions",
        "--benchmark-autosave",
        storage,
        "--benchmark-compare",
        "--benchmark-compare-fail=median:0",
    )
    second.assert_outcomes(passed=2)
    runs = sorted((pytester.path / "storage").glob("*/*.json"))
    assert len(runs) == 2
    a, b = (_saved(run) for run in runs)
    assert set(a) == set(b) == {"test_nqueens[serial-N7]", "test_nqueens[multicore-N7]"}
    for name in a:
        count = a[name]["extra_info"]["instructions"]["count"]
        assert count == b[name]["extra_info"]["instructions"]["count"] > 0
        for run in (a, b):
            stats = run[name]["stats"]
            assert stats["min"] == stats["max"] == stats["median"] == count * 1e-9
