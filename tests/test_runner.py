"""The watchdog worker: hangs, crashes, wrong counts and exceptions become clear errors."""

import os
import signal
import types

import pytest
from fake_strategies import STRATEGY as misbehaving

from nqprof.errors import CountMismatchError, InputError, NqprofError, WatchdogError
from nqprof.options import describe
from nqprof.runners import WorkerRunner


def _run(how, timeout=20.0):
    params = misbehaving.resolve(8, {"how": how})
    with WorkerRunner(misbehaving, 8, params, timeout=timeout) as runner:
        return runner.run_once()


def test_hang_is_killed_and_named():
    """A round that never answers: the parent waits for it once, for the timeout, then kills
    the worker and names the case, the step and the timeout. The wait is recorded, not
    timed (the worker opens under a generous timeout, however busy the machine)."""
    params = misbehaving.resolve(8, {"how": "hang"})
    runner = WorkerRunner(misbehaving, 8, params, timeout=600).start()
    worker, conn = runner._proc, runner._conn
    waits = []
    poll = conn.poll
    conn.poll = lambda timeout: waits.append(timeout) or poll(timeout)
    runner.timeout = 0.5
    with pytest.raises(
        WatchdogError,
        match=r"^misbehaving N=8 \(how=hang\): no answer to 'run' within 0.5 s; worker "
        r"killed \(raise the timeout",
    ):
        runner.run_once()
    assert waits == [0.5]
    assert worker.exitcode == -signal.SIGKILL and runner.pid is None and conn.closed
    runner.close()  # nothing left to close


def test_crash_is_reported_with_exit_code():
    with pytest.raises(
        WatchdogError, match=r"misbehaving N=8 \(how=die\): worker process died.*exit code 3"
    ):
        _run("die")


def test_wrong_count_is_an_error_not_a_timing():
    with pytest.raises(CountMismatchError, match="counted 12345, expected 92"):
        _run("wrong")


def test_unexpected_exception_becomes_one_line_error():
    with pytest.raises(NqprofError, match="RuntimeError: boom"):
        _run("raise")


def test_describe():
    assert describe("dp3", 17, {"block": 128, "depth": 4}) == "dp3 N=17 (block=128, depth=4)"
    assert describe("serial", 14, {}) == "serial N=14"


# -- a GPU case's rounds in worker processes one after another ---------------------------------


@pytest.fixture(autouse=True)
def _one_session_a_worker(monkeypatch):
    """These tests count a series' workers and sessions: each worker holds one session
    (tests/test_rotation.py runs the several a short round's worker holds)."""
    monkeypatch.setenv("NQPROF_ROTATE", "1")


def _series_run(tmp_path, rounds, warmup=1, unit_prior=None):
    import os

    from fake_process_bound import STRATEGY as bound

    from nqprof.runner import RoundLoop
    from nqprof.runners import open_runner

    log = tmp_path / "pids"
    os.environ["NQPROF_TEST_PID_LOG"] = str(log)  # the workers inherit it
    with open_runner(bound, 8, {}, timeout=60) as runner:
        loop = RoundLoop(runner, rounds, warmup)
        loop.unit_prior = unit_prior
        loop.run()
        info = runner.info()
    return loop, info, _opens(log)


def _opens(log) -> list[tuple[int, bool]]:
    """The sessions fake_process_bound opened, in order: (pid, whether the process of the
    session before was alive)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [(int(pid), alive == "1") for pid, alive in (line.split() for line in lines)]


def _scripted_cpu_watch(monkeypatch) -> list[tuple[int, ...]]:
    """The runner's CPU watch on scripted readings: every reading of /proc/stat one second
    and 100 busy ticks (of 200) later than the one before, every reading of the run's own
    processes 50 ticks later, at 100 ticks a second: a span from one reading to the next is
    1 s with one core busy, half of it the run's own. Returns the pids each reading of the
    own processes was given."""
    from nqprof import conditions

    readings = {"system": 0, "own": 0, "clock": 0}
    watched: list[tuple[int, ...]] = []

    def system():
        readings["system"] += 1
        return 100 * readings["system"], 0, 200 * readings["system"]

    def own(pids):
        watched.append(pids)
        readings["own"] += 1
        return 50 * readings["own"]

    def clock():
        readings["clock"] += 1
        return float(readings["clock"])

    class ScriptedWatch(conditions.CpuWatch):
        def __init__(self, own_pids=()):
            super().__init__(own_pids, read_system=system, read_processes=own, clock=clock, hz=100)

    monkeypatch.setattr(conditions, "CpuWatch", ScriptedWatch)
    return watched


def test_gpu_rounds_go_to_four_sessions_in_each_of_two_processes_one_after_another(
    tmp_path, monkeypatch
):
    from fake_process_bound import STRATEGY as bound

    from nqprof.analysis import stats
    from nqprof.runners import ProcessSeries, open_runner

    monkeypatch.setenv("NQPROF_GPU_SESSIONS", "4")
    runner = open_runner(bound, 8, {})
    assert isinstance(runner, ProcessSeries) and runner.phases == 8
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", "")
    watched = _scripted_cpu_watch(monkeypatch)
    loop, info, opens = _series_run(tmp_path, None)
    # four sessions in each of two processes; the second process opened after the first had
    # gone (one context at a time); a session reopened in its own process
    pids = [pid for pid, _ in opens]
    p1, p2 = pids[0], pids[4]
    assert pids == [p1] * 4 + [p2] * 4 and p1 != p2
    assert [alive for _, alive in opens] == [False, True, True, True] * 2
    assert info["index"] == 7
    units = loop.round_process
    counts = [units.count(k) for k in range(8)]
    assert units == [k for k in range(8) for _ in range(counts[k])]  # one after the other
    assert min(counts) >= 2  # two rounds each at the least: a median of its own
    for k in range(8):  # each unit's own time (a real session's: its buffers' placement)
        mine = [s for s, u in zip(loop.samples, units, strict=True) if u == k]
        assert mine == pytest.approx([0.001 * (1 + 0.15 * k)] * len(mine))
    assert len(loop.warm_seconds) == 8  # each session warms up
    assert loop.describe().endswith(
        "; shared by 8 sessions in 2 worker processes one after another"
    )
    record = loop.record(info)
    assert record.process["workers"] == 2 and record.process["sessions"] == 8
    # the CPU watch, on scripted readings (each span: 1 s, 1 core busy, half of it the run's
    # own): one span per session, its own processes read as it starts and ends: those of
    # the first process with both workers (the second started during the first's first
    # session), those of the second with its own worker (the first is gone)
    assert loop.conditions["cpu"]["other_busy_cores"] == 0.5
    assert loop.conditions["cpu"]["steal_pct"] == 0.0
    me = os.getpid()
    assert watched == [(me, p1, p2)] * 8 + [(me, p2)] * 8
    # compare counts the units' spread as noise: another run whose units fell the other way
    # round is not faster; its floor is that wide, so it cannot tell
    swapped = [0.001 * (1 + 0.15 * (7 - u)) for u in units]
    assert stats.process_spread(loop.samples, units) == pytest.approx(1.05)
    both = stats.decide(loop.samples, swapped, processes_a=units, processes_b=units)
    assert both.verdict == "cannot-tell" and both.floor > 0.15
    first = counts[0]
    whole = stats.decide(loop.samples[:first] * 3, swapped[:first] * 3)
    assert whole.verdict == "slower"  # what one session per run would have called


def test_fixed_rounds_are_divided_and_one_round_opens_one_session(tmp_path, monkeypatch):
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", "")
    monkeypatch.setenv("NQPROF_GPU_SESSIONS", "4")
    loop, info, opens = _series_run(_dir(tmp_path, "a"), 6, warmup=0)
    assert loop.round_process == [0, 1, 2, 3, 4, 5] and len(opens) == 6
    assert len({pid for pid, _ in opens}) == 2 and info["index"] == 5
    assert loop.describe().endswith(
        "; shared by 6 sessions in 2 worker processes one after another"
    )
    loop, info, opens = _series_run(_dir(tmp_path, "c"), 2, warmup=0)
    assert loop.round_process == [0, 1] and len({pid for pid, _ in opens}) == 1
    assert loop.describe().endswith("; shared by 2 sessions in 1 worker process one after another")
    assert loop.record(info).process == {"workers": 1, "sessions": 2, **_worker(loop, info)}
    loop, info, opens = _series_run(_dir(tmp_path, "b"), 1, warmup=0)
    assert loop.round_process == [0] and len(opens) == 1 and info["index"] == 0
    assert "shared" not in loop.describe()


def _worker(loop, info) -> dict:
    return {"worker": loop.runner.opened["worker"]} if "worker" in loop.runner.opened else {}


def test_a_series_of_one_session_per_process_is_a_series_of_processes():
    from fake_process_bound import STRATEGY as bound

    from nqprof.errors import InputError
    from nqprof.runners import ProcessSeries, WorkerRunner

    runners = [WorkerRunner(bound, 8, {}) for _ in range(3)]
    assert ProcessSeries(runners, sessions=1).phases == 3
    assert ProcessSeries(runners, sessions=3).phases == 9
    with pytest.raises(InputError, match="at least one session"):
        ProcessSeries(runners, sessions=0)


def test_by_default_gpu_rounds_go_to_two_processes_of_one_session_each(tmp_path, monkeypatch):
    from fake_process_bound import STRATEGY as bound

    from nqprof.runners import GPU_PROCESSES, GPU_SESSIONS, ProcessSeries, open_runner

    monkeypatch.delenv("NQPROF_GPU_SESSIONS", raising=False)
    assert (GPU_PROCESSES, GPU_SESSIONS) == (2, 1)
    runner = open_runner(bound, 8, {})
    assert isinstance(runner, ProcessSeries) and runner.phases == 2
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", "")
    loop, info, opens = _series_run(tmp_path, None)
    assert [alive for _, alive in opens] == [False, False] and len({p for p, _ in opens}) == 2
    units = loop.round_process
    first = units.count(0)
    assert units == [0] * first + [1] * (len(units) - first) and min(first, len(units) - first) >= 3
    assert loop.describe().endswith("; shared by 2 worker processes one after another")
    assert loop.record(info).process["workers"] == 2 and "sessions" not in loop.record(info).process


@pytest.mark.parametrize("text", ["0", "17", "two", "-1", "1.5", "1_6"])
def test_a_bad_sessions_variable_is_an_input_error(monkeypatch, text):
    from fake_process_bound import STRATEGY as bound

    from nqprof.errors import InputError
    from nqprof.runners import gpu_sessions, open_runner

    monkeypatch.setenv("NQPROF_GPU_SESSIONS", text)
    with pytest.raises(InputError, match=f"bad NQPROF_GPU_SESSIONS='{text}'"):
        open_runner(bound, 8, {})
    monkeypatch.setenv("NQPROF_GPU_SESSIONS", " 16 ")
    assert gpu_sessions() == 16


def test_round_rule_split():
    from nqprof.rounds import RoundRule

    auto = RoundRule()
    assert auto.split(1) == [auto]
    share = auto.split(2)
    assert len(share) == 2 and share[0] == share[1]
    assert (share[0].min_rounds, share[0].min_time, share[0].max_time, share[0].max_rounds) == (
        3,
        0.25,
        1.5,
        100,
    )
    assert share[0].target_noise == auto.target_noise
    eight = auto.split(8)  # two rounds each at the least: a median of its own
    assert len(eight) == 8 and (eight[0].min_rounds, eight[0].max_rounds) == (2, 25)
    assert RoundRule(min_rounds=1, max_rounds=3).split(4)[0].min_rounds == 2
    assert [r.fixed for r in RoundRule(fixed=7).split(3)] == [3, 2, 2]
    assert [r.fixed for r in RoundRule(fixed=2).split(3)] == [1, 1]


def _dir(base, name):
    path = base / name
    path.mkdir()
    return path


def test_the_next_worker_of_a_series_starts_while_the_first_counts(tmp_path, monkeypatch):
    """The second worker's process starts during the first one's rounds, but opens its
    session (a GPU context, in a real GPU worker) only once the first has closed."""
    from fake_process_bound import STRATEGY as bound

    from nqprof.runners import open_runner

    log = tmp_path / "pids"
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", str(log))
    runner = open_runner(bound, 8, {}, timeout=60)
    with runner:
        runner.prepare_next()
        prepared = runner.runners[1].pid
        assert prepared is not None and prepared in runner.pids and len(_opens(log)) == 1
        runner.run_once()
        runner.advance()
        assert runner.current.pid == prepared and _opens(log)[1] == (prepared, False)
        assert runner.info()["previous_alive"] is False
    assert runner.runners[1].pid is None  # closed


def test_a_prepared_worker_that_is_not_needed_is_ended(tmp_path, monkeypatch):
    from fake_process_bound import STRATEGY as bound

    from nqprof.runners import open_runner

    monkeypatch.setenv("NQPROF_TEST_PID_LOG", str(tmp_path / "pids"))
    with open_runner(bound, 8, {}, timeout=60) as runner:
        runner.prepare_next()
        spare = runner.runners[1]._proc
    spare.join(5)
    assert not spare.is_alive() and runner.runners[1].pid is None


@pytest.mark.slow
def test_a_closing_worker_is_waited_for_by_the_next_one_only(tmp_path, monkeypatch):
    """close() returns once the worker has answered; the worker then lets its session (its
    context) go and leaves, and the next worker's session opens only after it has gone."""
    from fake_slow_close import STRATEGY as slow

    from nqprof import runners as runner_module
    from nqprof.runners import WorkerRunner

    monkeypatch.setenv("NQPROF_TEST_PID_LOG", str(tmp_path / "pids"))
    first = WorkerRunner(slow, 8, {}, timeout=60).start()
    proc = first._proc
    first.close()
    assert (
        runner_module._EXITING == [proc] and proc.is_alive()
    )  # still closing its session (a second)
    with WorkerRunner(slow, 8, {}, timeout=60) as second:
        assert second.opened["previous_alive"] is False and runner_module._EXITING == []


@pytest.mark.slow
@pytest.mark.parametrize("profiled", ["1", "0"])
def test_under_a_profiler_close_waits_for_a_normal_exit(tmp_path, monkeypatch, profiled):
    """Under a profiler (NQPROF_PROFILED=1 here; the profilers' injection variables
    otherwise) the worker closes its session before it answers and leaves by the
    interpreter's exit, which close() waits for: the profiler writes out what it saw of the
    process at that exit. Otherwise the worker answers first and leaves by os._exit."""
    from fake_slow_close import STRATEGY as slow

    from nqprof import runners as runner_module
    from nqprof.runners import WorkerRunner

    mark = tmp_path / "exit-mark"
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", str(tmp_path / "pids"))
    monkeypatch.setenv("NQPROF_TEST_EXIT_MARK", str(mark))
    monkeypatch.setenv("NQPROF_PROFILED", profiled)
    worker = WorkerRunner(slow, 8, {}, timeout=60).start()
    proc = worker._proc
    worker.close()
    if profiled == "1":
        assert not proc.is_alive() and proc.exitcode == 0 and runner_module._EXITING == []
        assert mark.read_text() == "exited normally"
    else:
        assert runner_module._EXITING == [proc]
        runner_module._await_exits()
        assert proc.exitcode == 0 and not mark.exists()


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, False),
        ({"CUDA_INJECTION64_PATH": "/opt/nsys/libToolsInjection64.so"}, True),
        ({"NVTX_INJECTION64_PATH": "/x.so"}, True),
        ({"CUDA_INJECTION64_PATH": "/x.so", "NQPROF_PROFILED": "0"}, False),
        ({"NQPROF_PROFILED": "1"}, True),
        ({"CUDA_INJECTION64_PATH": ""}, False),
    ],
)
def test_under_profiler_reads_the_injection_variables(monkeypatch, env, expected):
    from nqprof.worker import INJECTION_VARIABLES, under_profiler

    for name in (*INJECTION_VARIABLES, "NQPROF_PROFILED"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert under_profiler() is expected


class _Series:
    """A two-phase runner that logs, in order, its rounds and the workers it is asked to
    start (a :class:`~nqprof.runners.ProcessSeries` without processes)."""

    size, phases, last = 1, 2, 0

    def __init__(self, log):
        from fake_process_bound import STRATEGY as bound

        self.strategy, self.n, self.params = bound, 8, {}
        self.opened, self.log = {}, log

    @property
    def pids(self):
        return (1000 + self.last,)

    def run_once(self):
        from nqprof.result import Measurement

        self.log.append(f"run {self.last}")
        return Measurement(count=92, wall_s=0.001, gpu_s=0.001)

    def prepare_next(self):
        self.log.append("prepare next")

    def warm_next(self):
        self.log.append("warm next")

    def advance(self):
        self.last += 1
        self.log.append("advance")


@pytest.mark.parametrize("warmup", [0, 1])
def test_a_worker_to_follow_starts_after_the_running_one_s_first_round(warmup, monkeypatch):
    """Its context must not land in the running worker's memory ledger, whose last mark is
    taken after its first round, warm-up or timed: the next of the series starts after the
    first round of the first worker, a spare for the next case after the first round of the
    last."""
    from nqprof import gpuconditions, runner
    from nqprof.runner import RoundLoop

    monkeypatch.setattr(gpuconditions.GpuWatch, "start", lambda self: None)
    log = []
    spare = types.SimpleNamespace(pids=(), context=False, depth=2, keep=False)

    def start(context=False, depth=1):
        log.append(f"spares {depth}")
        spare.pids = (4242, 4243)[:depth]

    spare.start = start
    spare.warm = lambda: log.append("spare warm")
    monkeypatch.setattr(runner, "SPARE", spare)
    loop = RoundLoop(_Series(log), rounds=4, warmup=warmup)
    loop.keep_spare = True
    loop.run()
    # the next case's two workers start during this case's first worker (a whole phase
    # ahead), and each worker to follow makes its context once the rounds before it are timed
    first = ["run 0", "prepare next", "spares 2", *["run 0"] * (1 + warmup), "warm next"]
    second = ["run 1", "spares 2", *["run 1"] * (1 + warmup), "spare warm"]
    assert log == [*first, "advance", *second]
    assert loop.pids == (1001, 4242, 4243)  # the spares are the run's own work too
    spare.context = True  # spares that make their context at once: one at a time
    log.clear()
    loop2 = RoundLoop(_Series(log), rounds=4, warmup=warmup)
    loop2.keep_spare = True
    loop2.run()
    assert log.count("spares 1") == 2 and "spares 2" not in log
    spare.context, spare.depth = False, 3  # keep_spares(True, depth=3): three ahead
    log.clear()
    loop3 = RoundLoop(_Series(log), rounds=4, warmup=warmup)
    loop3.keep_spare = True
    loop3.run()
    assert log.count("spares 3") == 2 and "spares 2" not in log


@pytest.mark.slow
def test_a_spare_worker_is_taken_by_the_next_gpu_worker_and_told_its_case(tmp_path, monkeypatch):
    """A spare starts without a case; the next GPU worker takes it (no new process) and
    opens the case it is told; a CPU worker never takes it."""
    from fake_process_bound import STRATEGY as bound

    from nqprof.runners import WorkerRunner
    from nqprof.spare import SPARE
    from nqprof.strategies import get

    monkeypatch.setenv("NQPROF_TEST_PID_LOG", str(tmp_path / "pids"))
    try:
        SPARE.start()
        spare = SPARE.pid
        assert spare is not None
        with WorkerRunner(get("serial"), 8, {}, timeout=60) as cpu:
            assert cpu.pid != spare and SPARE.pid == spare  # a CPU worker forks its own
        with WorkerRunner(bound, 9, {}, timeout=60) as gpu:
            assert gpu.pid == spare and SPARE.pid is None
            assert gpu.info()["pid"] == spare and gpu.run_once().count == 352
        SPARE.start()
        SPARE.warm()  # told to make its context while it waits: it waits on
        SPARE.warm()
        with WorkerRunner(bound, 10, {}, timeout=60) as again:
            assert again.run_once().count == 724
        prepared = WorkerRunner(bound, 11, {}, timeout=60).prepare()
        prepared.warm()
        with prepared:
            assert prepared.run_once().count == 2680
        SPARE.start(depth=2)  # a case's two workers, ahead: taken oldest first
        first, second = SPARE.pids
        SPARE.start(depth=2)  # two wait already
        assert SPARE.pids == (first, second) and SPARE.pid == first
        with WorkerRunner(bound, 8, {}, timeout=60) as one:
            assert one.pid == first and SPARE.pids == (second,)
            assert one.run_once().count == 92
        SPARE.start()
        proc = SPARE._held[0][0]
        assert SPARE.pids == (second,) and proc.pid == second
        SPARE.kill()
        assert not proc.is_alive() and SPARE.take() is None and SPARE.pids == ()
    finally:
        SPARE.kill()


def test_a_prepared_worker_starts_the_driver_alone_unless_told_otherwise(monkeypatch):
    from nqprof import worker

    monkeypatch.delenv("NQPROF_PREPARED_CUDA", raising=False)
    assert worker.prepared_cuda() == "init"
    for mode in ("context", "late", "init"):
        monkeypatch.setenv("NQPROF_PREPARED_CUDA", mode)
        assert worker.prepared_cuda() == mode
    monkeypatch.setenv("NQPROF_PREPARED_CUDA", "sometimes")
    assert worker.prepared_cuda() == "init"


def test_warmup_is_per_worker_process_as_its_help_says():
    """--warmup 1 of a CPU case with one timed round: each of its three worker processes
    warms up, three untimed rounds before the one timed (the help says so in words)."""
    from nqprof import options
    from nqprof.runner import RoundLoop
    from nqprof.runners import CPU_PROCESSES, open_runner
    from nqprof.strategies import get

    assert CPU_PROCESSES == 3
    said = (
        "a CPU case's three processes take the rounds in turn, so 1 is three untimed rounds "
        "before the first timed one"
    )
    assert said in " ".join(options.WARMUP.help.split())
    with open_runner(get("serial"), 8, {}, timeout=60) as runner:
        loop = RoundLoop(runner, 1, 1)
        loop.run()
    assert len(loop.warm_seconds) == 3 and loop.round_process == [0]


def test_a_cpu_worker_is_forked_from_the_fork_server_with_the_environment_of_now(monkeypatch):
    """A CPU worker is never forked from this process (which may run threads: numpy's BLAS
    pool, NVML; Python 3.12 warns that such a fork may deadlock), but from the fork server,
    and it sees this process's environment as it is when the worker starts, not as it was
    when the server started."""
    from fake_cpu_environ import STRATEGY as environ

    from nqprof.runners import WorkerRunner

    monkeypatch.setenv("NQPROF_TEST_SEEN", "before")
    with WorkerRunner(environ, 8, {}, timeout=60) as first:
        assert first.run_once().count == 92
        assert first.info()["seen"] == "before"
    monkeypatch.setenv("NQPROF_TEST_SEEN", "after")  # the server runs on, started before this
    with WorkerRunner(environ, 9, {}, timeout=60) as worker:
        info = worker.info()
    assert info["pid"] != os.getpid() and info["ppid"] != os.getpid()
    assert info["seen"] == "after"


@pytest.mark.parametrize(
    "module",
    [
        "nqprof.characterize.launch",
        "nqprof.characterize.graph_launch",
        "nqprof.characterize.reserve",
        "nqprof.characterize.residency",
        "nqprof.characterize.latency",
        "nqprof.strategies.fast",
    ],
)
def test_a_spawned_worker_imports_the_probe_or_strategy_it_was_given(module):
    """A GPU worker is spawned with a Target it imports (no pickled object): the target of
    each probe and strategy must name that very object, also where the probe's class lives
    in another module (SessionProbe)."""
    import importlib

    from nqprof.runners import _named_by, worker_target

    mod = importlib.import_module(module)
    obj = getattr(mod, "PROBE", None) or mod.STRATEGY
    target = worker_target(obj)
    assert target.resolve() is obj
    assert _named_by(target, obj)


# -- units added as a case needs them ($NQPROF_GPU_SESSIONS=auto) -----------------------------


def test_auto_adds_sessions_while_the_units_disagree_and_names_them(tmp_path, monkeypatch):
    """Units 15% apart (fake_process_bound) make a floor far over 5%: under auto the loop
    adds worker processes until the run's units reach AUTO_UNITS_MAX, each a process of its
    own (a process's sessions share its level: docs/results/verdicts-h200), each with its
    own warm-up and rounds; the record says so."""
    from nqprof.runners import AUTO_UNITS_MAX, GPU_PROCESSES

    monkeypatch.setenv("NQPROF_GPU_SESSIONS", "auto")
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", "")
    loop, info, opens = _series_run(tmp_path, None)
    assert loop.added_units == AUTO_UNITS_MAX - GPU_PROCESSES
    units = loop.round_process
    assert sorted(set(units)) == list(range(AUTO_UNITS_MAX))
    assert all(units.count(k) >= 2 for k in range(AUTO_UNITS_MAX))
    pids = [pid for pid, _ in opens]
    assert len(opens) == AUTO_UNITS_MAX and len(set(pids)) == AUTO_UNITS_MAX
    assert len(loop.warm_seconds) == AUTO_UNITS_MAX
    assert loop.units() == (AUTO_UNITS_MAX, AUTO_UNITS_MAX) and GPU_PROCESSES == 2
    record = loop.record(info)
    assert record.process["workers"] == AUTO_UNITS_MAX and "sessions" not in record.process
    assert any("6 worker processes added after the planned units" in n for n in record.notes)


def test_auto_adds_nothing_where_the_units_agree(tmp_path, monkeypatch):
    """The same two processes, their units timed alike: their floor is within 5%, so the
    planned units are all the run takes."""
    import fake_process_bound

    monkeypatch.setenv("NQPROF_GPU_SESSIONS", "auto")
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", "")
    monkeypatch.setenv("NQPROF_TEST_UNIT_STEP", "0.001")
    assert fake_process_bound.unit_step() == 0.001
    loop, info, opens = _series_run(tmp_path, None)
    assert loop.added_units == 0 and len(opens) == 2 and loop.unit_floor() <= 0.05
    assert not any("added after" in n for n in loop.record(info).notes)


def test_auto_adds_processes_where_like_cases_units_disagree(tmp_path, monkeypatch):
    """Two units that agree (0.1% apart) read alone as a floor within 5%; where the cases of
    the strategy run before them had units 3% apart (the session's UnitLedger), the
    moderated floor is over 5% and auto adds processes until it is not, as compare would
    judge the run: fewer than AUTO_UNITS_MAX, and the floor left within 5%."""
    import fake_process_bound

    from nqprof.runners import AUTO_UNITS_MAX
    from nqprof.spread import UnitLedger

    monkeypatch.setenv("NQPROF_GPU_SESSIONS", "auto")
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", "")
    monkeypatch.setenv("NQPROF_TEST_UNIT_STEP", "0.001")
    ledger = UnitLedger()
    for k in range(4):  # four earlier cases whose two units were 3% apart, at about 1 ms
        ledger.add("bound", [1e-3] * 3 + [1.03e-3 + k * 1e-6] * 3, [0] * 3 + [1] * 3)
    assert ledger.prior("bound", 1e-3)[1] == 4 and ledger.prior("other", 1e-3) is None
    step = fake_process_bound.unit_step()
    prior_at = []

    def prior(median_s):
        prior_at.append(median_s)
        return ledger.prior("bound", 1e-3)

    loop, _, opens = _series_run(tmp_path, None, unit_prior=prior)
    assert step == 0.001 and prior_at
    assert 0 < loop.added_units < AUTO_UNITS_MAX - 2 and len(opens) == 2 + loop.added_units
    assert loop.unit_floor() <= 0.05


def test_without_auto_no_unit_is_added(tmp_path, monkeypatch):
    monkeypatch.delenv("NQPROF_GPU_SESSIONS", raising=False)
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", "")
    loop, _, opens = _series_run(tmp_path, None)
    assert loop.added_units == 0 and len(opens) == 2
    assert loop.unit_floor() > 0.05  # it would have wanted one
    assert not loop.wants_unit()


def test_auto_with_fixed_rounds_keeps_its_count_per_added_unit(tmp_path, monkeypatch):
    """--rounds 4 under auto: two rounds a planned unit, and an added unit takes the last
    planned unit's share (two), so the rounds grow with the units."""
    monkeypatch.setenv("NQPROF_GPU_SESSIONS", "auto")
    monkeypatch.setenv("NQPROF_TEST_PID_LOG", "")
    loop, _, _ = _series_run(tmp_path, 4, warmup=0)
    units = loop.round_process
    assert [units.count(k) for k in sorted(set(units))] == [2] * len(set(units))
    assert loop.added_units == len(set(units)) - 2 > 0


def test_the_unit_floor_is_the_change_compare_catches_in_a_gpu_case():
    from nqprof.analysis import stats
    from nqprof.runner import UNIT_FLOOR

    assert UNIT_FLOOR == stats.MIN_CHANGE


def test_a_series_adds_worker_processes_only_where_it_may():
    from nqprof.series import ProcessSeries

    class Worker:
        strategy, n, params = None, 8, {}

        def __init__(self, name, log):
            self.name, self.log, self.pids, self.opened = name, log, (), {}

        def start(self):
            self.log.append(f"start {self.name}")

        def reopen(self):
            self.log.append(f"reopen {self.name}")

        def close(self):
            self.log.append(f"close {self.name}")

        def kill(self):
            self.log.append(f"kill {self.name}")

    log: list[str] = []
    made = iter("cd")
    series = ProcessSeries(
        [Worker("a", log), Worker("b", log)],
        sessions=1,
        grow=2,
        make=lambda: Worker(next(made), log),
    )
    series.start()
    series.advance()
    assert series.add_unit() and series.add_unit() and not series.add_unit()
    assert series.phases == 4 and series.units(4) == (4, 4) and series.units(1) == (1, 1)
    series.advance()
    series.advance()
    series.close()
    assert log == [
        "start a",
        "close a",
        "start b",
        "close b",
        "start c",
        "close c",
        "start d",
        "close d",
    ]
    fixed = ProcessSeries([Worker("a", []), Worker("b", [])], sessions=2)
    assert not fixed.add_unit() and fixed.phases == 4
    with pytest.raises(InputError, match="needs a way to make a worker"):
        ProcessSeries([Worker("a", [])], grow=1)
