"""Numbers a performance engineer can trust: the plugin costs nothing where unused, two
identical runs compare as the same, a real change of 25% is called with the moved default
named, run conditions are recorded and compared, xdist is said once.

No test here depends on how fast this machine is or how busy: the verdict logic is tested
on generated samples (and on a test double whose time is a parameter, the host's CPU speed
probe given), the CPU watch on scripted /proc readings, the plugin's start-up by what it
loads; real CPU runs are checked for what holds on any machine, busy or not."""

import json
import math
import os
import random
import re
import subprocess
import sys
import time
import types
from pathlib import Path

import pandas  # noqa: F401  (loaded before pytester's inner runs, which cannot load numpy twice)
import pytest
from fake_strategies import Scaled
from inner_pytest import inner_pytest

from nqprof import conditions, gpuconditions, machine, strategies
from nqprof.analysis import stats
from nqprof.analysis.comparing import compare
from nqprof.analysis.history import VERDICTS, load_history
from nqprof.cli import main
from nqprof.problem import known_count
from nqprof.result import Measurement, RunRecord
from nqprof.rounds import median
from nqprof.strategies.base import Param

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parent.parent
PLAIN_TEST = "def test_plain():\n    assert True\n"


def _pytest(args, cwd, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


# -- the plugin is free when unused -------------------------------------------------------------


#: What the plugin must not load where nqprof is not used: the heavy libraries, and nqprof's
#: modules that reach them (or that only a benchmark needs).
HEAVY_LIBRARIES = ("numpy", "pandas", "pycuda", "distributed", "matplotlib")
HEAVY_NQPROF = (
    "nqprof.strategies",
    "nqprof.runner",
    "nqprof.cuda",
    "nqprof.nqbench",
    "nqprof.analysis",
    "nqprof.cluster",
    "nqprof.papers",
    "nqprof.characterize",
    "nqprof.cli",
    "nqprof._cpu",
    "nqprof.conditions",
    "nqprof.benchtrace",
)


def _heavy(module: str) -> bool:
    if module.split(".")[0] in HEAVY_LIBRARIES:
        return True
    return any(module == h or module.startswith(h + ".") for h in HEAVY_NQPROF)


def test_loading_the_plugin_imports_nothing_heavy():
    code = "import json, sys, nqprof.plugin; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out)
    assert "nqprof.plugin" in loaded and [m for m in loaded if _heavy(m)] == []


#: Runs pytest in this interpreter and writes what the start cost, counted: the modules
#: loaded, the processes started and libraries loaded (audit events), the Python calls made.
START_PROBE = """
import json, sys
WATCHED = (
    "subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.system",
    "ctypes.dlopen",
)
events, calls = [], [0]
def audit(event, args):
    if event in WATCHED:
        events.append(f"{event} {args!r:.80}")
sys.addaudithook(audit)
def count(frame, event, arg):
    if event == "call":
        calls[0] += 1
sys.setprofile(count)
import pytest
code = pytest.main(sys.argv[2:])
sys.setprofile(None)
with open(sys.argv[1], "w") as fh:
    json.dump(
        {"code": int(code), "modules": sorted(sys.modules), "events": sorted(events),
         "calls": calls[0]},
        fh,
    )
"""


@pytest.mark.slow
def test_a_bare_pytest_start_with_nqprof_loads_only_its_light_modules(tmp_path):
    """Where no test uses nqprof, the plugin adds to a bare `pytest --collect-only` only
    nqprof's light modules (its options and what they need), starts no process, loads no
    library, and makes under 5% more Python calls: the start-up's cost counted, not timed."""
    (tmp_path / "test_one.py").write_text(PLAIN_TEST)
    (tmp_path / "start_probe.py").write_text(START_PROBE)

    def start(name, *extra):
        out = tmp_path / f"{name}.json"
        args = [str(out), "-p", "no:cacheprovider", "--collect-only", "-q", *extra, "test_one.py"]
        result = subprocess.run(
            [sys.executable, "start_probe.py", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        assert result.returncode == 0, result.stdout + result.stderr
        facts = json.loads(out.read_text())
        assert facts["code"] == 0
        return facts

    with_nqprof, without = start("with"), start("without", "-p", "no:nqprof")
    added = sorted(set(with_nqprof["modules"]) - set(without["modules"]))
    assert (
        "nqprof.plugin" in added and "nqprof.plugin" not in without["modules"]
    )  # its entry point loaded it
    assert [
        m for m in added if not (m == "nqprof" or m.startswith("nqprof.")) or _heavy(m)
    ] == [], added
    assert with_nqprof["events"] == without["events"]
    assert with_nqprof["calls"] - without["calls"] < 0.05 * without["calls"], (
        with_nqprof["calls"],
        without["calls"],
    )


@pytest.mark.slow
def test_a_run_without_nqprof_benchmarks_saves_no_nqprof_keys(tmp_path):
    (tmp_path / "test_b.py").write_text("def test_b(benchmark):\n    benchmark(sum, [1, 2])\n")
    out = tmp_path / "out.json"
    result = _pytest([f"--benchmark-json={out}", "test_b.py"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(out.read_text())
    assert "nqprof" not in data and "nqprof" not in data["machine_info"]
    # compared with such a run, a run with nqprof's facts gives no machine warning
    assert (
        machine.machine_differences(data["machine_info"], {"nqprof": {"gpu": "NVIDIA H200"}}) == []
    )


@pytest.mark.slow
def test_a_bad_nqprof_variable_only_stops_runs_that_use_nqprof(tmp_path):
    (tmp_path / "test_one.py").write_text(PLAIN_TEST)
    (tmp_path / "test_nq.py").write_text(
        "def test_nq(nqbench):\n    assert nqbench.run().verified\n"
    )
    env = {"NQPROF_TIMEOUT": "abc"}
    assert _pytest(["-q", "test_one.py"], tmp_path, env).returncode == 0
    result = _pytest(["-q", "test_nq.py", "--nq-strategy=serial", "--nq-n=8"], tmp_path, env)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert (
        "NQPROF_TIMEOUT: the timeout must be a positive number of seconds, got 'abc'"
        in result.stderr
    )
    assert "Traceback" not in result.stderr + result.stdout
    # without an --nq-* option, the variable is read when the cases are collected
    result = _pytest(["-q", "test_nq.py"], tmp_path, env)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR and "NQPROF_TIMEOUT" in result.stderr


# -- A/A: two identical runs are the same -------------------------------------------------------
#
# The verdicts are tested on saved runs generated, seeded, from a model of how a CPU case's
# rounds vary between processes and rounds (_rounds), so that no busy machine decides the
# outcome; a real suite run is tested after them for what holds on any machine.


#: The suite's CPU cases: strategy, N and a true time (seconds) to draw rounds around.
CPU_CASES = [
    ("serial", 10, 2.5e-4),
    ("serial", 11, 1.2e-3),
    ("serial", 12, 6e-3),
    ("serial-d4", 10, 1.2e-4),
    ("serial-d4", 11, 4e-4),
    ("serial-d4", 12, 1.6e-3),
    ("multicore", 10, 4e-4),
    ("multicore", 11, 9e-4),
    ("multicore", 12, 3e-3),
]
#: A test double's cases whose time is its parameter scale (the default moves below).
TIMED_CASES = [("timed", 8, 1e-3), ("timed", 9, 1e-3)]
QUIET = {"load_1min": 0.3, "probe_s": 5e-4, "other_busy_cores": 0.1}


def _rounds(rng, center, pool=False, rounds=30, processes=3):
    """One run's rounds of a case whose true time is ``center``, as a CPU case measures
    them: in ``processes`` worker processes in turn, each off by an offset of its own (the
    core and memory it got), 1% noise a round, now and then a round 1.5 to 4 times as long
    (it was preempted), and for a thread pool (``pool``) a second mode 40% above the first
    (its threads' start). Returns (times, the process of each round)."""
    offsets = [math.exp(max(-0.05, min(0.05, rng.gauss(0, 0.015)))) for _ in range(processes)]
    times, who = [], []
    for i in range(rounds):
        t = center * offsets[i % processes] * (1 + rng.gauss(0, 0.01))
        if pool and rng.random() < 0.3:
            t *= 1.4
        if rng.random() < 0.02:
            t *= rng.uniform(1.5, 4.0)
        times.append(t)
        who.append(i % processes)
    return times, who


def _saved_bench(rng, strategy, n, center, params, cpu):
    times, who = _rounds(rng, center, pool=strategy == "multicore")
    declared = strategies.get(strategy) if strategy != "timed" else None
    extra = {
        "strategy": strategy,
        "n": n,
        "params": dict(params),
        "count": known_count(n),
        "verified": True,
        "case": {"strategy": strategy, "n": n, "given": {}},
        "samples_compute": times,
        "samples_wall": [t * 1.1 for t in times],
        "samples_process": who,
        "device_kind": "cpu",
        "source_hash": "kernels-as-committed",
        "conditions": {"cpu": {"cpu": "AMD EPYC", "usable_cores": 2, **cpu}},
    }
    if declared is not None and declared.min_effect is not None:
        extra["min_effect"] = declared.min_effect
    return {
        "name": f"test_nqueens[{strategy}-{n}]",
        "group": f"N={n:02d}, compute time",
        "params": None,
        "options": {"timer": "nqprof.worker_clock"},
        "extra_info": extra,
        "stats": {
            "median": median(times),
            "rounds": len(times),
            "min": min(times),
            "max": max(times),
        },
    }


def _save_run(storage, index, seed, scale=100, slower=1.0, cpu=None):
    """Saves run ``index`` (0001_...json) drawn with ``seed``: the CPU cases and the timed
    cases at ``scale``, every time ``slower`` times the model's, ``cpu``: conditions."""
    rng = random.Random(seed)
    cpu = {**QUIET, **(cpu or {})}
    benches = [
        _saved_bench(rng, s, n, t * slower, {"depth": 3} if s == "multicore" else {}, cpu)
        for s, n, t in CPU_CASES
    ]
    benches += [
        _saved_bench(rng, s, n, t * slower * scale / 100, {"scale": scale}, cpu)
        for s, n, t in TIMED_CASES
    ]
    run = {
        "datetime": f"2026-01-01T12:{index:02d}:00+00:00",
        "benchmarks": benches,
        "machine_info": {"node": "host", "cpu": {"brand_raw": "AMD EPYC"}},
        "commit_info": {"id": "c0ffee", "dirty": False, "branch": "main"},
    }
    path = (
        storage / "Linux-CPython-3.11-64bit" / f"{index:04d}_c0ffee_20260101_12{index:02d}00.json"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run))
    return path


def _summary(out: str) -> str:
    """The line of compare's output that counts the verdicts."""
    one = rf"\d+ ({'|'.join(VERDICTS)})"
    return next(line for line in out.splitlines() if re.fullmatch(rf"{one}(, {one})*(; .*)?", line))


@pytest.mark.parametrize("seed", range(5))
def test_two_identical_runs_compare_as_the_same(tmp_path, capsys, seed):
    """Two runs of the same code on the same quiet host, every CPU case and the test double:
    process offsets, outliers and a thread pool's two modes are noise, not a change. The
    thread pool's cases (multicore, whose own floor is 20%) cannot tell a change of 10%, the
    CPU cases' change to catch: cannot-tell, never faster or slower."""
    storage = tmp_path / "storage"
    _save_run(storage, 1, seed=2 * seed)
    _save_run(storage, 2, seed=2 * seed + 1)
    result = compare(load_history(storage), "0001", "0002")
    assert len(result) == len(CPU_CASES) + len(TIMED_CASES)
    pool = result["strategy"] == "multicore"
    assert set(result.loc[~pool, "verdict"]) == {"same"}, result.to_string()
    assert set(result.loc[pool, "verdict"]) == {"cannot-tell"}, result.to_string()
    assert (result.loc[pool, "floor_pct"] >= 100 * strategies.get("multicore").min_effect).all()
    assert not result["changed"].astype(bool).any() and not result["conditions"].astype(bool).any()
    assert (result["floor_pct"] >= 100 * stats.MIN_EFFECT_CPU).all()
    assert (
        main(["compare", "0001", "0002", "--storage", str(storage), "--fail-on", "slower,faster"])
        == 0
    )
    assert _summary(capsys.readouterr().out) == f"{len(result) - 3} same, 3 cannot-tell"


@pytest.mark.parametrize("seed", range(5))
def test_a_moved_default_is_called_in_noisy_runs(tmp_path, capsys, seed):
    """The test double's default moved from 100 to 125 (25%, above the CPU floor of 10%)
    between two runs that are otherwise the same: its cases are slower, the parameter
    named; every other case is the same."""
    storage = tmp_path / "storage"
    _save_run(storage, 1, seed=2 * seed)
    _save_run(storage, 2, seed=2 * seed + 1, scale=125)
    result = compare(load_history(storage), "0001", "0002")
    moved, rest = result[result["strategy"] == "timed"], result[result["strategy"] != "timed"]
    assert (
        list(moved["verdict"]) == ["slower"] * 2
        and list(moved["changed"]) == ["scale 100 -> 125"] * 2
    )
    assert moved["change_pct"].between(20, 30).all() and (moved["p"] < stats.ALPHA).all()
    pool = rest["strategy"] == "multicore"  # its own floor of 20%: cannot-tell, as in A/A
    assert set(rest.loc[~pool, "verdict"]) == {"same"} and not rest["changed"].astype(bool).any()
    assert set(rest.loc[pool, "verdict"]) == {"cannot-tell"}
    assert main(["compare", "0001", "0002", "--storage", str(storage), "--fail-on", "slower"]) == 1
    assert (
        _summary(capsys.readouterr().out)
        == f"{len(rest) - 3} same, 2 slower, 3 cannot-tell; 2 changed-params"
    )


def test_a_verdict_that_the_host_explains_names_its_cause(tmp_path):
    """A host whose CPU got 30% slower (its speed probe saw it): no CPU case is called, each
    is cannot-tell (the floor of 60% could hide a change of 10%), the probe named. Other
    work that took the CPU during the rounds (the load average moved, the probe taken
    before it came) and made every CPU case 50% slower: no case is called slower either,
    the common move is named as the reason, and the load in each case's conditions."""
    storage = tmp_path / "storage"
    _save_run(storage, 1, seed=10)
    _save_run(storage, 2, seed=11, slower=1.3, cpu={"probe_s": 6.5e-4})
    _save_run(storage, 3, seed=12, slower=1.5, cpu={"load_1min": 1.9, "other_busy_cores": 1.2})
    df = load_history(storage)
    host = compare(df, "0001", "0002")
    assert set(host["verdict"]) == {"cannot-tell"} and (host["floor_pct"] >= 60 - 1e-9).all()
    assert host["conditions"].str.contains("CPU speed probe").all()
    assert host["why"].str.contains("the host's CPU speed moved +30% between", regex=False).all()
    loaded = compare(df, "0001", "0003")
    assert set(loaded["verdict"]) == {"cannot-tell"}
    assert loaded["why"].str.contains("CPU cases moved +51% together", regex=False).all()
    assert loaded["conditions"].str.contains("load average: 0.30 -> 1.90 on 2 cores").all()
    assert (
        loaded["conditions"]
        .str.contains("other work during the rounds: 0.10 -> 1.20 busy cores")
        .all()
    )


@pytest.mark.slow
def test_a_real_cpu_suite_saves_runs_that_compare_cleanly(tmp_path, capsys):
    """Every CPU strategy through `pytest bench/`, twice, then compare: what holds on any
    machine, busy or not. Each case verified, its rounds in three worker processes in
    turn, its conditions recorded; each verdict the one its change, floor and p give; the
    summary and --fail-on agree with the table. (Whether two real runs are the same
    depends on the machine's other work: that logic is tested on generated runs above.)"""
    storage = tmp_path / "storage"
    args = [
        "bench/",
        "--nq-strategy=serial,serial-d4,multicore",
        "--nq-n=10:12",
        "--nq-rounds=15",
        "--benchmark-autosave",
        f"--benchmark-storage={storage}",
        "-q",
    ]
    for _ in range(2):
        result = _pytest(args, ROOT, timeout=600)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    df = load_history(storage)
    runs = list(dict.fromkeys(df["run"]))
    assert len(runs) == 2 and len(df) == 18
    assert (df["extra.count"] == df["n"].map(known_count)).all() and df["extra.verified"].all()
    assert (df["compute.rounds"] == 15).all() and df["compute.samples"].map(
        lambda v: min(v) > 0
    ).all()
    assert df["processes"].map(lambda p: p == [0, 1, 2] * 5).all()
    cpu = df["extra.conditions"].map(lambda c: c["cpu"])
    assert cpu.map(
        lambda c: c["probe_s"] > 0 and c["other_busy_cores"] >= 0 and 0 <= c["steal_pct"] <= 100
    ).all()
    table = compare(df, *runs)
    assert len(table) == 9 and set(table["verdict"]) <= {"same", "faster", "slower", "cannot-tell"}
    for row in table.to_dict("records"):
        floor = (
            stats.MIN_EFFECT_CPU
            if row["strategy"] != "multicore"
            else strategies.get("multicore").min_effect
        )
        assert row["floor_pct"] >= 100 * floor - 1e-9
        assert row["change_pct"] == pytest.approx(100 * (row["median_b"] / row["median_a"] - 1))
        moved = row["p"] < stats.ALPHA and abs(row["change_pct"]) > row["floor_pct"] * (1 + 1e-9)
        unsure = row["floor_pct"] > 100 * stats.MIN_CHANGE_CPU * (1 + 1e-9)
        assert row["verdict"] == (
            ("cannot-tell" if unsure else "same")
            if not moved
            else "slower"
            if row["change_pct"] > 0
            else "faster"
        ), row
        assert row["min_change_pct"] == 100 * stats.MIN_CHANGE_CPU
    counts = table["verdict"].value_counts()
    called = int(counts.get("faster", 0) + counts.get("slower", 0))
    assert main(["compare", "--storage", str(storage)]) == 0
    expected = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if v in counts)
    assert _summary(capsys.readouterr().out) == expected
    assert main(["compare", "--storage", str(storage), "--fail-on", "slower,faster"]) == (
        1 if called else 0
    )


# -- a real change is called, the moved default named --------------------------------------------


@pytest.fixture
def timed(register_strategy):
    """Rounds of ``scale`` percent of 1 ms with 2% noise, as a CPU session measures them (the
    noise can never reach the CPU floor of 10%; a 25% move always passes it)."""
    strategy = Scaled("timed", noise=0.02)
    register_strategy(strategy)
    return strategy


@pytest.mark.slow
def test_a_moved_default_is_called_with_the_parameter_named(
    timed, pytester, request, monkeypatch, tmp_path, capsys
):
    """Through the plugin, the history and compare: a CPU case whose default moved by 25%
    (the CPU floor is 10%; a GPU case's 5% floor is tested in test_history): slower, the
    parameter named; the A/A pair before it: same. The double's rounds vary by 2% at most,
    so only the host's CPU speed probe could move these verdicts: it is given. A host whose
    probe moved by 30% leaves the same change undecided (cannot-tell), the probe named."""
    probe = [5e-4]
    monkeypatch.setattr(conditions, "cpu_probe_s", lambda: probe[0])
    storage = tmp_path / "storage"
    run = inner_pytest(
        pytester,
        request,
        "--nq-strategy=timed",
        "--nq-n=8:9",
        "--nq-rounds=30",
        "--benchmark-autosave",
        f"--benchmark-storage={storage}",
    )
    run().assert_outcomes(passed=2)
    run().assert_outcomes(passed=2)  # A/A
    monkeypatch.setattr(Scaled, "params", (Param("scale", "percent", default=125, lo=10, hi=1000),))
    run().assert_outcomes(passed=2)  # the default moved by 25%
    probe[0] = 6.5e-4
    run().assert_outcomes(passed=2)  # the same, on a host 30% slower
    df = load_history(storage)
    runs = list(dict.fromkeys(df["run"]))
    assert (
        df["extra.conditions"].map(lambda c: c["cpu"]["probe_s"]) == [5e-4] * 6 + [6.5e-4] * 2
    ).all()
    same = compare(df, runs[0], runs[1])
    assert list(same["verdict"]) == ["same", "same"] and not same["changed"].astype(bool).any()
    moved = compare(df, runs[1], runs[2])
    assert list(moved["verdict"]) == ["slower", "slower"]
    assert list(moved["changed"]) == ["scale 100 -> 125"] * 2
    assert (
        moved["change_pct"].between(20, 30).all()
        and (moved["floor_pct"] == 100 * stats.MIN_EFFECT_CPU).all()
    )
    host = compare(df, runs[1], runs[3])
    assert (
        list(host["verdict"]) == ["cannot-tell", "cannot-tell"]
        and list(host["changed"]) == ["scale 100 -> 125"] * 2
    )
    assert (
        host["floor_pct"].round(6).eq(60.0).all()
        and host["conditions"].str.contains("CPU speed probe").all()
    )
    # a CPU case's rounds went to three worker processes in turn
    processes = df["processes"].dropna()
    assert len(processes) == 8 and all(p == [0, 1, 2] * 10 for p in processes)
    assert (
        main(["compare", runs[1], runs[2], "--storage", str(storage), "--fail-on", "slower"]) == 1
    )
    assert "2 slower; 2 changed-params" in capsys.readouterr().out


# -- run conditions -----------------------------------------------------------------------------


class _FakeNvml(types.ModuleType):
    """Enough of pynvml for NvmlProbe: clocks, power, temperature, reasons in a script."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    class NVMLError(Exception):
        pass

    def __init__(self, reasons):
        super().__init__("pynvml")
        self.reasons = list(reasons)
        self.sm = 1980

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("gpu", i)

    def nvmlDeviceGetHandleByPciBusId(self, bus):
        return ("gpu", bus)

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200"

    def nvmlDeviceGetUUID(self, h):
        return b"GPU-5f1c"

    def nvmlDeviceGetClockInfo(self, h, kind):
        return self.sm if kind == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetMaxClockInfo(self, h, kind):
        return 1980

    def nvmlDeviceGetPowerUsage(self, h):
        return 312_000

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700_000

    def nvmlDeviceGetTemperature(self, h, kind):
        return 41

    def nvmlDeviceGetPersistenceMode(self, h):
        return 1

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self.reasons.pop(0) if self.reasons else 0

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [types.SimpleNamespace(pid=p) for p in (os.getpid(), 4242, 777)]


def test_a_throttled_round_is_flagged(monkeypatch):
    nvml = _FakeNvml([0x0, 0x4 | 0x1, 0x20, 0x1, 0x0])  # before, then after each of four rounds
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    watch = gpuconditions.GpuWatch("0000:19:00.0", own_pids=(777,))
    watch.start()
    for i in range(4):
        watch.round_done(i)
    result = watch.finish()
    assert result["source"] == "nvml" and result["throttled_rounds"] == [0, 1]
    assert result["reasons_seen"] == ["sw_power_cap", "sw_thermal_slowdown"]  # idle is no slowdown
    assert result["before"] == {
        "gpu": "NVIDIA H200",
        "uuid": "GPU-5f1c",
        "sm_clock_mhz": 1980,
        "memory_clock_mhz": 3201,
        "max_sm_clock_mhz": 1980,
        "power_w": 312.0,
        "power_limit_w": 700.0,
        "temperature_c": 41,
        "persistence_mode": "on",
        "clock_event_reasons": [],
    }
    assert result["sm_clock_mhz_median"] == 1980
    assert result["other_processes"] == 1  # 4242: neither this process nor the run's worker (777)


def test_conditions_without_nvml_or_nvidia_smi_say_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setenv("PATH", "/nonexistent")
    watch = gpuconditions.GpuWatch()
    watch.start()
    watch.round_done(0)
    result = watch.finish()
    assert (
        result["source"] is None
        and "nvml: ModuleNotFoundError" in result["why"]
        and "nvidia-smi" in result["why"]
    )


def test_nvidia_smi_is_the_fallback(monkeypatch, tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\necho 'NVIDIA H200, 1755, 3201, 1980, 402.50, "
        "700.00, 63, Enabled, 0x0000000000000020, GPU-77ab'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setenv("PATH", str(tmp_path))
    probe, why = gpuconditions.gpu_probe()
    assert why is None and probe.source == "nvidia-smi"
    snap = probe.snapshot()
    assert (snap["sm_clock_mhz"], snap["power_w"], snap["persistence_mode"], snap["uuid"]) == (
        1755,
        402.5,
        "on",
        "GPU-77ab",
    )
    assert snap["clock_event_reasons"] == ["sw_thermal_slowdown"] and gpuconditions.slowed(
        probe.reasons()
    )


def test_nvidia_smi_is_asked_once_per_round(monkeypatch, tmp_path):
    """Each round's reasons and SM clock come from one nvidia-smi process, not two."""
    calls = tmp_path / "calls"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        f"#!/bin/sh\necho x >> {calls}\n"
        "echo 'NVIDIA H200, 1755, 3201, 1980, 402.50, 700.00, 63, Enabled, 0x0000000000000004'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setenv("PATH", str(tmp_path))
    watch = gpuconditions.GpuWatch()
    before = len(calls.read_text().split())
    watch.round_done(0)
    assert len(calls.read_text().split()) == before + 1
    assert watch.round_clocks == [1755] and watch.throttled_rounds == [0]


def test_cpu_conditions_name_the_cpu():
    cpu = conditions.cpu_conditions()
    assert (
        cpu["cpu"]
        and cpu["cores"] >= 1
        and 1 <= cpu["usable_cores"] <= cpu["cores"]
        and cpu["governor"]
    )


class Machine:
    """A scripted machine for a CpuWatch: its /proc readings and its clock, moved on by
    :meth:`run` (``HZ`` ticks a second, ``CORES`` cores)."""

    HZ, CORES = 100, 2

    def __init__(self):
        self.busy = self.steal = self.total = 0
        self.ticks: dict[int, int] = {}  # per process
        self.now = 1000.0
        self.readable = True

    def system(self):
        return (self.busy, self.steal, self.total) if self.readable else None

    def processes(self, pids):
        return sum(self.ticks.get(p, 0) for p in pids)

    def clock(self):
        return self.now

    def run(self, seconds, others=0.0, stolen=0.0, **processes):
        """``seconds`` pass with these processes (``p<pid>=cores``) and ``others`` cores of
        other work busy, ``stolen`` cores taken by the hypervisor."""

        def ticks(cores):
            return round(cores * seconds * self.HZ)

        self.now += seconds
        for name, cores in processes.items():
            pid = int(name[1:])
            self.ticks[pid] = self.ticks.get(pid, 0) + ticks(cores)
            self.busy += ticks(cores)
        self.busy += ticks(others)
        self.steal += ticks(stolen)
        self.total += ticks(self.CORES)

    def watch(self, own_pids=()):
        return conditions.CpuWatch(
            own_pids,
            read_system=self.system,
            read_processes=self.processes,
            clock=self.clock,
            hz=self.HZ,
        )


ME = f"p{os.getpid()}"  # this process: always the watch's own


def test_other_work_is_the_busy_time_less_the_runs_own():
    """Over the rounds: all CPUs' busy time less the run's own processes' (its worker and
    this one), per second; the share of all CPU time the hypervisor stole."""
    machine = Machine()
    machine.run(5.0, others=0.5, stolen=0.5, p101=1.0)  # before the watch: not counted
    watch = machine.watch(own_pids=(101,))
    machine.run(2.0, others=0.4, stolen=0.1, p101=1.0, **{ME: 0.1})
    seen = watch.finish()
    assert (seen["other_busy_cores"], seen["steal_pct"]) == (0.4, 5.0)
    assert seen["cpu"] and seen["probe_s"] is not None  # the facts before the rounds
    # the same worker, not named as the run's own: its core is other work
    machine = Machine()
    watch = machine.watch()
    machine.run(2.0, others=0.4, p101=1.0, **{ME: 0.1})
    assert watch.finish()["other_busy_cores"] == 1.4


def test_a_paused_watch_leaves_out_the_work_between_its_spans():
    """Between two worker processes of a series the watch pauses: the next worker starting
    up is not other work, nor is the time it takes; unpaused, it is. The next worker's
    ticks count from when the watch resumes with it."""

    def series(pause):
        machine = Machine()
        watch = machine.watch(own_pids=(101,))
        machine.run(1.0, others=0.2, p101=1.0)
        if pause:
            watch.pause()
        machine.run(1.0, p102=1.0)  # the next worker starts (101 has gone)
        if pause:
            watch.resume((102,))
        machine.run(1.0, others=0.2, p102=1.0)
        return watch.finish()["other_busy_cores"]

    assert series(pause=True) == 0.2
    # unpaused over all three seconds, 102 unnamed: its start-up and its rounds are other work
    assert series(pause=False) == round((0.2 + 1.0 + 1.2) / 3, 2)


def test_a_watch_that_cannot_read_the_cpu_times_says_nothing_of_other_work():
    machine = Machine()
    watch = machine.watch()
    machine.run(1.0, others=1.0)
    watch.pause()
    machine.readable = False
    watch.resume()
    machine.run(1.0, others=1.0)
    watch.pause()
    watch.pause()  # a second pause is nothing
    seen = watch.finish()
    assert "other_busy_cores" not in seen and "steal_pct" not in seen and seen["cpu"]
    # own processes busier than the machine (ticks are counted coarsely): no other work, not less
    machine = Machine()
    watch = machine.watch((101,))
    machine.run(1.0, p101=1.0)
    machine.ticks[101] += 5
    assert watch.finish()["other_busy_cores"] == 0.0


def test_proc_texts_are_read_field_by_field():
    # /proc/stat: user nice system idle iowait irq softirq steal guest guest_nice
    stat = "cpu  1000 20 300 5000 40 6 7 80 9 10\ncpu0 500 10 150 2500 20 3 3 40 4 5\nintr 1 2\n"
    assert conditions.parse_cpu_ticks(stat) == (1000 + 20 + 300 + 6 + 7, 80, 6453)
    assert conditions.parse_cpu_ticks("cpu  1 2 3 4 5 6 7\n") == (
        1 + 2 + 3 + 6 + 7,
        0,
        28,
    )  # no steal column
    assert (
        conditions.parse_cpu_ticks("") is None
        and conditions.parse_cpu_ticks("intr 1 2 3 4 5 6 7 8") is None
    )
    # /proc/<pid>/stat: utime stime cutime cstime are fields 14 to 17; a name may hold ") "
    fields = list(range(4, 53))  # the numbers after the state (field 4 on)
    fields[14 - 4 : 18 - 4] = [11, 13, 17, 19]
    text = "4242 (py ) x) S " + " ".join(map(str, fields))
    assert conditions.parse_process_ticks(text) == 11 + 13 + 17 + 19
    assert conditions.parse_process_ticks("") == 0  # a process that is gone


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux's /proc")
def test_the_proc_readers_read_this_machine():
    """What holds on any Linux machine, busy or not: the ticks are consistent, this process's
    CPU time shows in its own ticks and in the machine's, a process that is gone has none."""
    busy, steal, total = conditions.system_ticks()
    assert 0 <= busy <= total and 0 <= steal <= total
    me = (os.getpid(),)
    hz = conditions.ticks_per_second()
    own0, (busy0, steal0, _), cpu0 = (
        conditions.process_ticks(me),
        conditions.system_ticks(),
        time.process_time(),
    )
    while time.process_time() - cpu0 < 0.3:  # CPU time, however long the machine makes it take
        pass
    own1, (busy1, steal1, _) = conditions.process_ticks(me), conditions.system_ticks()
    assert own1 - own0 >= 0.3 * hz - 2
    assert (busy1 + steal1) - (busy0 + steal0) >= (own1 - own0) / 2
    assert conditions.process_ticks((2**22 + 1,)) == 0  # above any pid_max
    seen = conditions.CpuWatch().finish()
    assert seen["other_busy_cores"] >= 0 and 0 <= seen["steal_pct"] <= 100


def test_condition_differences_name_what_moved():
    gpu = {
        "before": {"memory_clock_mhz": 3201, "power_limit_w": 700.0, "persistence_mode": "on"},
        "sm_clock_mhz_median": 1980,
        "throttled_rounds": [],
    }
    a = {"cpu": {"cpu": "EPYC 9654", "usable_cores": 16, "governor": "performance"}, "gpu": gpu}
    assert conditions.differences(a, a) == []
    slow = {
        **gpu,
        "sm_clock_mhz_median": 1755,
        "throttled_rounds": [3],
        "reasons_seen": ["hw_slowdown"],
        "before": {**gpu["before"], "power_limit_w": 500.0},
    }
    b = {"cpu": {"cpu": "EPYC 9654", "usable_cores": 8, "governor": "powersave"}, "gpu": slow}
    assert conditions.differences(a, b) == [
        "usable_cores: 16 -> 8",
        "governor: 'performance' -> 'powersave'",
        "run B throttled in 1 round (hw_slowdown)",
        "SM clock during the rounds: 1980 -> 1755 MHz",
        "power_limit_w: 700.0 -> 500.0",
    ]
    # a clock within 5% is the same clock
    near = {**a, "gpu": {**gpu, "sm_clock_mhz_median": 1900}}
    assert conditions.differences(a, near) == []
    # other work on the CPU and the GPU, and CPU time a hypervisor took
    busy = {"cpu": {"other_busy_cores": 0.1, "steal_pct": 0.0}, "gpu": {"other_processes": 0}}
    busier = {"cpu": {"other_busy_cores": 1.9, "steal_pct": 9.5}, "gpu": {"other_processes": 1}}
    assert conditions.differences(busy, busier) == [
        "other work during the rounds: 0.10 -> 1.90 busy cores",
        "CPU time stolen by the hypervisor: 0.0% -> 9.5%",
        "other processes on the GPU: 0 -> 1",
    ]
    # the load average, per usable core
    quiet, busy = ({"cpu": {"usable_cores": 2, "load_1min": x}} for x in (0.1, 1.9))
    assert conditions.differences(quiet, busy) == [
        "load average: 0.10 -> 1.90 on 2 cores (other work took CPU time)"
    ]
    assert conditions.differences(quiet, {"cpu": {"usable_cores": 2, "load_1min": 0.8}}) == []
    # the CPU speed probe is the host's: compared run to run (below), not case by case
    fast_host, slow_host = ({"cpu": {"probe_s": x}} for x in (5.2e-4, 8.4e-4))
    assert conditions.differences(fast_host, slow_host) == []
    # another physical GPU (its UUID), even of the same model
    one, other = (
        {"gpu": {"before": {"gpu": "NVIDIA H200", "uuid": u}}} for u in ("GPU-1", "GPU-2")
    )
    assert conditions.differences(one, one) == []
    assert conditions.differences(one, other) == [
        "another GPU: GPU-1 -> GPU-2 (two GPUs of one model can "
        "differ by a few %: on two H200 hosts queue N=15 moved 6%)"
    ]
    assert conditions.probe_change(fast_host, {"cpu": {}}) is None


def test_the_cpu_probe_differs_between_runs_only_beyond_its_own_noise():
    """Two runs' probes (one per CPU case): a move of 5% or more of their medians, and more
    than the probe moved within either run, is one phrase; less is nothing."""
    assert conditions.probe_difference([5.2e-4], [8.4e-4]) == (
        "CPU speed probe (serial N=11): 0.520 -> 0.840 ms, the median over 1 CPU case "
        "(+62%: another host, or the host's CPU speed moved)"
    )
    assert conditions.probe_difference([5.2e-4], [5.4e-4]) is None  # under 5%
    # a host 30% slower, the probe steady within each run
    assert conditions.probe_difference([5.0e-4, 5.2e-4, 5.1e-4], [6.6e-4, 6.5e-4, 6.7e-4]) == (
        "CPU speed probe (serial N=11): 0.510 -> 0.660 ms, the median over 3 CPU cases "
        "(+29%, beyond the 4% it moved within a run: another host, or the host's CPU speed "
        "moved)"
    )
    # one host 12 s apart: each case's two probes differ by up to 43%, the medians by 18%,
    # and the probe moved by 47% within run A: its own noise
    a, b = [4.0e-4, 4.5e-4, 5.9e-4], [6.0e-4, 5.3e-4, 5.0e-4]
    assert conditions.probe_difference(a, b) is None
    assert conditions.probe_difference(a, [9.0e-4, 9.1e-4]) == (
        "CPU speed probe (serial N=11): 0.450 -> 0.905 ms, the median over 3 and 2 CPU cases "
        "(+101%, beyond the 48% it moved within a run: another host, or the host's CPU speed "
        "moved)"
    )
    assert conditions.probe_difference([], b) is None
    assert conditions.probe_difference([None], b) is None  # a record without the probe


def _compare_with_probes(tmp_path, capsys, probes_a, probes_b) -> list[str]:
    """compare's warnings for two copies of the saved serial/multicore run (six CPU cases)
    whose cases carry these probes (seconds, in the cases' order)."""
    src = next((ROOT / "tests" / "data" / "benchmarks").rglob("0001_*.json"))
    for name, probes in (("0001_a.json", probes_a), ("0002_b.json", probes_b)):
        data = json.loads(src.read_text())
        for bench, probe in zip(data["benchmarks"], probes, strict=True):
            bench["extra_info"]["conditions"] = {"cpu": {"probe_s": probe}}
        (tmp_path / "m").mkdir(parents=True, exist_ok=True)
        (tmp_path / "m" / name).write_text(json.dumps(data))
    assert main(["compare", "--storage", str(tmp_path)]) == 0
    return [ln for ln in capsys.readouterr().err.splitlines() if "warning" in ln]


def test_compare_warns_of_the_cpu_probe_once_and_only_beyond_its_noise(tmp_path, capsys):
    """An A/A pair on one host 12 s apart (the probes this 2-core machine took, by case): no
    warning, where each case whose two probes differed by 5% or more was one before. A host
    whose CPU got 30% slower: one warning, naming one case (the probe's own search)."""
    a = [5.85e-4, 5.47e-4, 5.78e-4, 4.08e-4, 4.51e-4, 3.95e-4]
    b = [5.31e-4, 4.47e-4, 5.17e-4, 5.49e-4, 4.15e-4, 5.10e-4]
    assert _compare_with_probes(tmp_path / "aa", capsys, a, b) == []
    slower = [5.2e-4, 5.1e-4, 5.0e-4, 5.2e-4, 5.1e-4, 5.0e-4]
    assert _compare_with_probes(tmp_path / "host", capsys, slower, [p * 1.3 for p in slower]) == [
        "nqprof: warning: conditions differ: CPU speed probe (serial N=11): 0.510 -> 0.663 ms, "
        "the median over 6 CPU cases (+30%, beyond the 4% it moved within a run: another host, "
        "or the host's CPU speed moved)"
    ]


def test_the_cpu_probe_times_the_fixed_search(monkeypatch):
    """The probe is the median of PROBE_REPEATS calls of serial(PROBE_N), taken when a CPU
    watch starts."""
    from nqprof import _cpu

    calls = []
    monkeypatch.setattr(_cpu, "serial", lambda n: calls.append(n) or 0)
    probe = conditions.cpu_probe_s()
    assert (
        calls == [conditions.PROBE_N] * conditions.PROBE_REPEATS
        and probe is not None
        and probe >= 0
    )
    assert conditions.CpuWatch().finish()["probe_s"] is not None


def test_the_workers_probes_are_their_median_count_and_spread():
    facts = {"probe_s": 6.0e-4, "cores": 16}
    out = conditions.worker_probes(facts, [5.0e-4, None, 8.0e-4, 6.0e-4, 5.5e-4])
    assert out == {
        **facts,
        "worker_probe_s": 5.75e-4,
        "worker_probes": 4,
        "worker_probe_spread": 0.6,
    }
    assert conditions.worker_probes(facts, []) is facts
    assert conditions.worker_probes(facts, [None]) is facts


class _ProbedPool:
    """A CPU case's runner of ``size`` workers in turn (a RunnerPool without processes)
    that logs each round and each probe with the worker it went to."""

    phases = 1

    def __init__(self, size, needs_gpu=False):
        from types import SimpleNamespace

        self.strategy = SimpleNamespace(name="double", needs_gpu=needs_gpu)
        self.n, self.params, self.opened, self.size = 8, {}, {}, size
        self.last, self.log, self.pids = size - 1, [], ()

    def run_once(self):
        from nqprof.result import Measurement

        self.last = (self.last + 1) % self.size
        self.log.append(f"run {self.last}")
        return Measurement(count=92, wall_s=0.001)

    def probe(self):
        self.log.append(f"probe {self.last}")
        return 1e-3 * (1 + self.last)


@pytest.mark.parametrize("every,probes", [(1e9, 3), (0.0, 7)])
def test_a_cpu_case_probes_each_worker_after_its_first_round_then_every_so_often(
    monkeypatch, every, probes
):
    """Between timed rounds, never inside one: the worker that ran the round, once each
    after its first timed round, then every PROBE_EVERY_S; the record's CPU facts carry
    their median. A GPU case's rounds are not probed."""
    from nqprof.runner import RoundLoop

    monkeypatch.setattr(conditions, "PROBE_EVERY_S", every)
    pool = _ProbedPool(3)
    loop = RoundLoop(pool, rounds=7, warmup=0)
    loop.run()
    runs = [x for x in pool.log if x.startswith("run")]
    assert len(runs) == 7 and pool.log.count("run 0") == 3
    assert [x for x in pool.log if x.startswith("probe")][:3] == ["probe 0", "probe 1", "probe 2"]
    assert len(loop.probes) == probes
    for i, entry in enumerate(pool.log):  # each probe right after a round of its worker
        if entry.startswith("probe"):
            assert pool.log[i - 1] == "run " + entry.split()[1]
    cpu = loop.conditions["cpu"]
    assert cpu["worker_probes"] == probes and cpu["worker_probe_s"] == 2e-3
    assert cpu["probe_s"] is not None  # the pytest process's, as before
    gpu_pool = _ProbedPool(2, needs_gpu=True)
    monkeypatch.setattr("nqprof.gpuconditions.GpuWatch.start", lambda self: None)
    RoundLoop(gpu_pool, rounds=4, warmup=0).run()
    assert not any(x.startswith("probe") for x in gpu_pool.log)


def test_a_cpu_worker_answers_the_probe():
    from nqprof.runners import open_runner
    from nqprof.strategies import get

    with open_runner(get("serial"), 8, {}, timeout=60) as runner:
        runner.run_once()
        assert 0 < runner.probe() < 1


def test_compare_warns_when_conditions_differ(tmp_path, capsys):
    src = next((ROOT / "tests" / "data" / "benchmarks").rglob("0001_*.json"))
    for name, governor in (("0001_a.json", "performance"), ("0002_b.json", "powersave")):
        data = json.loads(src.read_text())
        for bench in data["benchmarks"]:
            bench["extra_info"]["conditions"] = {
                "cpu": {"cpu": "EPYC", "usable_cores": 2, "governor": governor}
            }
        (tmp_path / "m").mkdir(exist_ok=True)
        (tmp_path / "m" / name).write_text(json.dumps(data))
    assert main(["compare", "--storage", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert (
        "nqprof: warning: conditions differ: governor: 'performance' "
        "-> 'powersave' (serial N=8, serial N=9, serial N=10 and 3 more)" in err
    )


def test_the_record_shows_the_conditions():
    rec = RunRecord.from_measurements("feinbube", 8, {}, 92, [Measurement(92, 1e-3, 5e-4)], {})
    rec.conditions = {
        "cpu": {
            "cpu": "EPYC",
            "cores": 16,
            "usable_cores": 16,
            "governor": "performance",
            "frequency_mhz": 2400,
        },
        "gpu": {
            "source": "nvml",
            "sm_clock_mhz_median": 1980,
            "throttled_rounds": [2],
            "reasons_seen": ["hw_slowdown"],
            "before": {
                "max_sm_clock_mhz": 1980,
                "memory_clock_mhz": 3201,
                "temperature_c": 40,
                "power_limit_w": 700.0,
                "persistence_mode": "on",
            },
            "after": {"temperature_c": 44, "power_w": 350.0},
        },
    }
    text = rec.summary()
    assert (
        "clocks     SM 1980 MHz over the rounds (max 1980), memory 3201 MHz, 40 -> 44 C, 350 W of "
        "700 W, persistence on; THROTTLED in 1 round: hw_slowdown"
    ) in text
    assert "cpu        EPYC, 16 of 16 cores, governor performance, 2400 MHz" in text


# -- xdist ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("error::pytest_benchmark.logger.PytestBenchmarkWarning")
@pytest.mark.skipif(
    int(__import__("pytest_benchmark").__version__.split(".")[0]) < 5,
    reason="pytest-benchmark 4 turns itself off by xdist's --dist option, not by an xdist "
    "worker's environment, which is all this test can give without xdist",
)
def test_under_xdist_nqprof_says_once_that_nothing_is_timed(pytester, request, monkeypatch):
    """pytest-benchmark's own warning, which it gives as the inner session ends (after that
    session's warning capture, so into this test's), is caught here, not left to this suite's
    summary."""
    from pytest_benchmark.logger import PytestBenchmarkWarning

    pytester.makepyfile(test_suite="def test_nq(nqbench):\n    assert nqbench.run().verified\n")
    load = [] if request.config.pluginmanager.has_plugin("nqprof") else ["-p", "nqprof.plugin"]
    monkeypatch.setenv(
        "PYTEST_XDIST_WORKER", "gw0"
    )  # as in an xdist worker: pytest-benchmark disables itself
    with pytest.warns(PytestBenchmarkWarning) as caught:
        result = pytester.runpytest(
            *load, "-p", "no:cacheprovider", "--nq-strategy=serial", "--nq-n=8:9"
        )
    assert [str(w.message) for w in caught] == [
        "Benchmarks are automatically disabled because xdist plugin is active. Benchmarks "
        "cannot be performed reliably in a parallelized environment."
    ]
    result.assert_outcomes(passed=2)
    lines = [line for line in result.outlines if "pytest-xdist is active" in line]
    assert len(lines) == 1 and "recorded no times" in lines[0]
