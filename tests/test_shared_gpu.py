"""A GPU shared with other processes is seen: the compute processes NVML lists besides the
run's own, and the GPU's utilization, after each round are recorded in the run's conditions,
and the record, `nqprof solve`, `nqprof sweep`, `nqprof compare` and pytest's summary say so.
NVML is test_trust's fake with a process list and utilization; the GPU strategy is a test
double counted on the CPU (tests/fake_shared_gpu.py), so all of it runs without a GPU."""

import importlib
import json
import os
import sys
import types

import fake_shared_gpu
import pandas  # noqa: F401 - loaded before the in-process inner sessions (numpy imports once)
import pytest
from inner_pytest import inner_pytest
from test_trust import _FakeNvml

from nqprof import gpuconditions, machine
from nqprof.cli import main
from nqprof.result import RunRecord

pytest_plugins = ["pytester"]
STRATEGY = fake_shared_gpu.STRATEGY.name


class _SharedNvml(_FakeNvml):
    """NVML whose GPU also runs the processes ``others`` (this process is listed too, as a
    run's own) and reports ``busy`` percent utilization."""

    def __init__(self, others=(), busy=87):
        super().__init__([])
        self.others, self.busy = list(others), busy

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [types.SimpleNamespace(pid=p) for p in (os.getpid(), *self.others)]

    def nvmlDeviceGetUtilizationRates(self, h):
        return types.SimpleNamespace(gpu=self.busy, memory=12)


def fake_nvml(monkeypatch, others=(), busy=87) -> _SharedNvml:
    nvml = _SharedNvml(others, busy)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    return nvml


@pytest.fixture
def gpu_double(monkeypatch, register_strategy):
    """The GPU test double registered, and GPU runs possible here as far as nqprof asks."""
    device = importlib.import_module(
        "nqprof.cuda.device"
    )  # as the commands import it (pytester may drop it)

    register_strategy(fake_shared_gpu.STRATEGY)
    monkeypatch.setattr(device, "gpu_available", lambda: (True, "a test double"))
    monkeypatch.setattr(
        machine, "machine_facts", lambda: {"gpu": "a test double", "cuda_toolkit": None}
    )


# -- the record ------------------------------------------------------------------------------


def test_the_watch_counts_other_processes_and_utilization_during_the_rounds(monkeypatch):
    """After a round, where LOOK_EVERY has passed since its last look (a clock the test
    moves): other processes that came and went are seen; rounds in between are not looked at."""
    nvml = fake_nvml(monkeypatch)
    now = [0.0]
    watch = gpuconditions.GpuWatch("0000:19:00.0", own_pids=(777,), clock=lambda: now[0])
    watch.start()
    watch.round_done(0)
    nvml.others = [4242]  # came and went during the rounds: before and after alone miss it
    now[0] += watch.LOOK_EVERY
    watch.round_done(1)
    nvml.others, nvml.busy = [], 40
    now[0] += watch.LOOK_EVERY / 2
    watch.round_done(2)  # too soon: not looked at
    now[0] += watch.LOOK_EVERY / 2
    watch.round_done(3)
    result = watch.finish()
    assert result["other_processes"] == 1 and result["utilization_pct"] == [87, 87, 40]
    assert len(watch.round_clocks) == 4  # the clocks and slowdowns of every round


def test_a_watch_without_utilization_records_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml([]))
    watch = gpuconditions.GpuWatch(own_pids=(777,))
    watch.start()
    watch.round_done(0)
    assert watch.finish()["utilization_pct"] == []


def test_pids_of_another_namespace_count_all_but_the_runs_worker(monkeypatch):
    """In a container NVML lists the host's pids: none is the run's own, one is its worker."""
    nvml = fake_nvml(monkeypatch)
    nvml.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        types.SimpleNamespace(pid=p) for p in (91, 92, 93)
    ]
    watch = gpuconditions.GpuWatch(own_pids=(777,))
    watch.start()
    watch.round_done(0)
    assert watch.finish()["other_processes"] == 2


def test_the_record_says_its_gpu_was_shared():
    def record(others):
        return RunRecord(
            strategy="fast",
            n=18,
            params={},
            count=666090624,
            expected=666090624,
            verified=True,
            wall_s=0.09,
            gpu_s=0.083,
            rounds=2,
            wall_times=[0.09] * 2,
            gpu_times=[0.083] * 2,
            conditions={
                "gpu": {"source": "nvml", "before": {}, "after": {}, "other_processes": others}
            },
        )

    assert record(2).shared_gpu() == (
        "the GPU was shared with 2 other processes during the rounds: its times may be "
        "slower than on a GPU of its own"
    )
    assert f"\nwarning    {record(2).shared_gpu()}" in record(2).summary()
    assert record(0).shared_gpu() is None and "warning" not in record(0).summary()
    assert (
        gpuconditions.shared_gpu(record(1).conditions)
        == "the GPU was shared with 1 other process during the rounds"
    )


# -- solve, sweep ----------------------------------------------------------------------------


SHARED = (
    "the GPU was shared with 1 other process during the "
    "rounds: its times may be slower than on a GPU of its own"
)


def test_solve_warns_of_a_shared_gpu(gpu_double, monkeypatch, capsys, tmp_path):
    fake_nvml(monkeypatch, others=[4242])
    out = tmp_path / "record.json"
    assert main(["solve", "8", "-s", STRATEGY, "--rounds", "2", "-q", "-o", str(out)]) == 0
    printed = capsys.readouterr()
    assert f"\nwarning    {SHARED}\n" in printed.out
    assert f"nqprof: warning: {STRATEGY} N=8: {SHARED}" in printed.err.splitlines()
    gpu = json.loads(out.read_text())["conditions"]["gpu"]
    # NVML looked at least once (its looks are LOOK_EVERY seconds apart at the most often)
    assert gpu["other_processes"] == 1 and set(gpu["utilization_pct"]) == {87}
    fake_nvml(monkeypatch)
    assert main(["solve", "8", "-s", STRATEGY, "--rounds", "2", "-q"]) == 0
    printed = capsys.readouterr()
    assert "shared" not in printed.out + printed.err


def test_sweep_warns_of_a_shared_gpu(gpu_double, monkeypatch, capsys):
    fake_nvml(monkeypatch, others=[4242, 4243])
    assert main(["sweep", "-s", STRATEGY, "--n", "8", "--rounds", "2", "-q"]) == 0
    printed = capsys.readouterr()
    assert "median of 2, GPU shared with 2 other processes" in printed.out
    two = SHARED.replace("1 other process", "2 other processes")
    assert printed.err.splitlines() == [f"nqprof: warning: {STRATEGY} N=8: {two}"]


# -- pytest and compare ----------------------------------------------------------------------


def run_suite(pytester, request, *args):
    """A suite of the GPU test double's cases, run by pytest in this process."""
    return inner_pytest(pytester, request, f"--nq-strategy={STRATEGY}")(*args)


@pytest.mark.slow
def test_pytest_summary_and_compare_say_the_gpu_was_shared(
    gpu_double, pytester, request, monkeypatch, capsys
):
    def run(*others):
        fake_nvml(monkeypatch, others=others)
        result = run_suite(
            pytester,
            request,
            "--nq-n=8",
            "--nq-rounds=6",
            "--benchmark-storage=storage",
            "--benchmark-autosave",
        )
        result.assert_outcomes(passed=1)
        return result.stdout.str()

    summary = (
        "nqprof: warning: other processes used the GPU during the rounds of 1 case: "
        f"{STRATEGY}-N8 (1) (other processes in parentheses): "
        "their times may be slower than on a GPU of their own"
    )
    assert "other processes used the GPU" not in run()
    assert summary in run(4242).splitlines()
    assert summary.replace("(1)", "(2)") in run(4242, 4243).splitlines()
    capsys.readouterr()
    assert main(["compare", "--storage", "storage", "0001", "0002"]) == 0
    assert (
        f"nqprof: warning: conditions differ: other processes on the GPU: 0 -> 1 ({STRATEGY} N=8)"
        in capsys.readouterr().err.splitlines()
    )
    assert main(["compare", "--storage", "storage", "0002", "0003"]) == 0
    assert (
        f"nqprof: warning: conditions differ: other processes on the GPU: 1 -> 2 ({STRATEGY} N=8)"
        in capsys.readouterr().err.splitlines()
    )
    assert (
        main(["compare", "--storage", "storage", "0002", "0002"]) == 0
    )  # shared in both: still said
    assert (
        "nqprof: warning: conditions differ: other processes "
        f"on the GPU in both runs: 1 ({STRATEGY} N=8)" in capsys.readouterr().err.splitlines()
    )


def test_in_another_namespace_each_of_the_runs_workers_now_is_its_own(monkeypatch):
    """A run's worker and the one prepared to follow it (its context made already) are
    both listed under the host's pids: two of those listed are the run's, not one."""
    nvml = fake_nvml(monkeypatch)
    nvml.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        types.SimpleNamespace(pid=p) for p in (91, 92, 93)
    ]
    watch = gpuconditions.GpuWatch(own_pids=(777, 778))
    watch.start()
    watch.round_done(0)
    assert watch.unmatched == 1
    watch.also_own((779,))  # the series moved on: one worker now, three listed
    watch.round_done(1)
    assert watch.finish()["other_processes"] == 2


@pytest.mark.slow
def test_a_gpu_case_starts_a_spare_for_the_next_gpu_case(
    gpu_double, pytester, request, monkeypatch
):
    """pytest's cases run one after another: a GPU case followed by a GPU case starts a
    spare worker while it counts, and that case's first worker is the spare."""
    from nqprof import spare as spare_module

    events = []
    start, take = spare_module.Spare.start, spare_module.Spare.take

    def logged_start(self, context=False, depth=1):
        before = self.pids
        start(self, context, depth)
        events.append(("start", tuple(pid for pid in self.pids if pid not in before)))

    def logged_take(self):
        held = take(self)
        events.append(("take", held[0].pid if held else None))
        return held

    monkeypatch.setattr(spare_module.Spare, "start", logged_start)
    monkeypatch.setattr(spare_module.Spare, "take", logged_take)
    fake_nvml(monkeypatch)
    result = run_suite(pytester, request, "--nq-n=8:10", "--nq-rounds=4")
    result.assert_outcomes(passed=3)
    # each case's two workers ask for a spare; during N=8 and N=9 (a GPU case follows) the
    # next case's two start, after the first worker's first round (the second worker's first
    # round finds them waiting); N=10 starts none
    kinds = ["take", "take", "start", "start"] * 2 + ["take", "take"]
    assert [kind for kind, _ in events] == kinds
    started = [pids for kind, pids in events if kind == "start"]
    taken = [pid for kind, pid in events if kind == "take"]
    assert [len(pids) for pids in started] == [2, 0, 2, 0]
    assert taken == [None, None, *started[0], *started[2]]
