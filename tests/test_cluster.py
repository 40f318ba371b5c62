"""Counting on a Dask cluster (nqprof.cluster): the plan, the checkpoint, a local cluster of
CPU workers counting verified, a worker killed mid-run, an interrupted run resumed, the
GPU-per-worker set-up (without a GPU), and the one-line error without Dask."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from inner_pytest import ONE_CASE, plugin_args

from nqprof import _cpu
from nqprof.cli import main
from nqprof.cluster import checkpoint as ckpt
from nqprof.cluster.tasks import expansion, plan, plan_hash, split_depth, take
from nqprof.errors import CountMismatchError, InputError, UnavailableError
from nqprof.problem import KNOWN_COUNTS
from nqprof.runners import WorkerRunner
from nqprof.strategies import get

# -- without Dask ----------------------------------------------------------------------------


@pytest.mark.parametrize("n,depth,tasks", [(8, 2, 3), (9, 1, 4), (12, 4, 7), (13, 3, 1000)])
def test_interleaved_tasks_cover_every_board_once(n, depth, tasks):
    boards = expansion(n, depth)
    task_list = plan(len(boards), tasks)
    assert len(task_list) == min(tasks, len(boards))
    assert sum(t.boards for t in task_list) == len(boards) and all(t.boards for t in task_list)
    parts = [take(boards, t) for t in task_list]
    assert sorted(c for p in parts for c in zip(p.cols, p.ld, p.rd, p.row, strict=True)) == sorted(
        zip(boards.cols, boards.ld, boards.rd, boards.row, strict=True)
    )
    total = sum(_cpu.count_boards(n, p.cols, p.ld, p.rd, p.row, 1) for p in parts)
    assert boards.multiplier * total == KNOWN_COUNTS[n]


def test_plan_hash_names_the_plan():
    a = plan_hash(12, 4, 100, plan(100, 8))
    assert a == plan_hash(12, 4, 100, plan(100, 8))
    assert len({a, plan_hash(12, 4, 100, plan(100, 9)), plan_hash(12, 3, 100, plan(100, 8))}) == 3


def test_split_depth():
    serial, multicore = get("serial"), get("multicore")
    assert split_depth(serial, 14, {}) == 4 and split_depth(serial, 3, {}) == 2
    assert split_depth(serial, 14, {}, 6) == 6
    assert split_depth(multicore, 14, {"depth": 5, "threads": 0}) == 5
    with pytest.raises(InputError, match="set it with -p depth=3"):
        split_depth(multicore, 14, {"depth": 5, "threads": 0}, 3)
    with pytest.raises(InputError, match="--split-depth must be in 1..14"):
        split_depth(serial, 14, {}, 15)


def test_part_session_in_a_watchdog_process():
    """The GPU path of a worker (open_part in WorkerRunner, count_part by call), run with a
    CPU strategy."""
    boards = expansion(11, 3)
    parts = [take(boards, t) for t in plan(len(boards), 3)]
    runner = WorkerRunner(get("serial"), 11, {}, timeout=60, opener="open_part").start()
    try:
        total = sum(runner.call("count_part", p).count for p in parts)
    finally:
        runner.close()
    assert 2 * total == KNOWN_COUNTS[11]


def _checkpoint(path, **changes):
    fields = dict(n=12, strategy="serial", params={}, depth=4, tasks=8, plan="abc")
    fields.update(changes)
    return ckpt.open_checkpoint(str(path), **fields)


def test_a_worker_opens_its_session_once_for_every_task_of_a_run():
    from nqprof.cluster import work

    try:
        work.open_session("serial", 11, {}, 60)
        session = work._part["session"]
        assert session is not None
        work.open_session("serial", 11, {}, 60)  # open already: kept
        assert work._part["session"] is session
        work.open_session("serial", 12, {}, 60)  # another run: the one before is closed
        assert work._part["session"] is not session
    finally:
        work.close_session()
    assert work._part["session"] is None


def test_checkpoint_round_trip_and_atomic_write(tmp_path):
    path = tmp_path / "run.json"
    ck = _checkpoint(path)
    ck.record(3, {"count": 17, "seconds": 0.5, "worker": "w"})
    assert _checkpoint(path).done == {3: {"count": 17, "seconds": 0.5, "worker": "w"}}
    assert os.listdir(tmp_path) == ["run.json"]  # no temporary file left behind


@pytest.mark.parametrize(
    "change",
    [
        {"n": 13},
        {"strategy": "multicore"},
        {"params": {"threads": 2}},
        {"depth": 5},
        {"tasks": 9},
        {"plan": "abd"},
    ],
)
def test_checkpoint_of_another_run_is_refused(tmp_path, change):
    _checkpoint(tmp_path / "run.json")
    with pytest.raises(
        InputError, match=r"belongs to another run \(serial N=12, depth 4, 8 tasks, plan abc\)"
    ):
        _checkpoint(tmp_path / "run.json", **change)


@pytest.mark.parametrize(
    "text,message",
    [
        ("{not json", "cannot be read"),
        ("", "cannot be read"),
        ('{"format": "other"}', "is corrupt \\(not an nqprof cluster checkpoint\\)"),
        (None, "is corrupt \\(task 9 is outside 0..7\\)"),
        (None, "is corrupt \\(task 2 has no valid count\\)"),
    ],
)
def test_corrupt_checkpoint_is_one_line_error(tmp_path, text, message):
    path = tmp_path / "run.json"
    if text is None:
        data = _checkpoint(path).to_dict()
        data["done"] = {"9": {"count": 1}} if "9" in message else {"2": {"count": "12"}}
        text = json.dumps(data)
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        _checkpoint(path)
    assert "\n" not in str(info.value)


def test_cluster_without_dask_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    assert main(["solve", "12", "--cluster", "local"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(
        "nqprof: error: running on a cluster needs Dask distributed"
    )
    assert "pip install 'nqprof[cluster]'" in err


@pytest.mark.parametrize("value", ["inf", "0", "1e9", "soon"])
def test_a_bad_connect_timeout_is_one_line_before_connecting(value, monkeypatch, capsys):
    monkeypatch.setenv("NQPROF_CLUSTER_CONNECT_TIMEOUT", value)
    assert main(["solve", "12", "-s", "serial", "--cluster", "tcp://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nqprof: error: NQPROF_CLUSTER_CONNECT_TIMEOUT must be ")
    assert err.count("\n") == 1 and "connecting" not in err, err


def test_cluster_options_need_cluster(capsys):
    assert main(["solve", "8", "--checkpoint", "x.json"]) == 2
    assert "--checkpoint need --cluster" in capsys.readouterr().err


def test_help_does_not_import_dask():
    code = (
        "import sys; from nqprof.cli import build_parser; build_parser(); "
        "print('distributed' in sys.modules, 'dask' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr


# -- on a local Dask cluster -----------------------------------------------------------------

distributed = pytest.importorskip(
    "distributed", reason="Dask distributed is not installed (pip install 'nqprof[cluster]')"
)

from nqprof.cluster.engine import solve_clustered  # noqa: E402

# Functions of this module that run on workers travel by value (workers need not import it).
pytest.importorskip("cloudpickle").register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster():
    """Two single-threaded CPU worker processes."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as c:
        yield c


@pytest.mark.slow
def test_local_cluster_counts_n14_serial_verified(capsys):
    assert main(["solve", "14", "-s", "serial", "--cluster", "local", "--workers", "2"]) == 0
    out, err = capsys.readouterr()
    assert "count      365596  verified" in out
    assert "tasks      8 interleaved slices of 4816 boards at depth 4" in out
    assert "2 workers ran tasks" in out and "speedup    " in out and "balance    " in out
    assert (
        "nqprof: serial N=14 on tcp://" in err and "8 tasks over 2 workers" in err
    )  # progress itself: a terminal only


def test_record_json(cluster):
    record = solve_clustered(
        "multicore",
        12,
        {"threads": 1, "depth": 3},
        cluster=cluster.scheduler_address,
        tasks=5,
        progress=None,
    )
    assert record.verified and record.count == KNOWN_COUNTS[12] and record.depth == 3
    data = json.loads(record.to_json())
    assert [t["index"] for t in data["tasks"]] == list(range(5))
    assert sum(t["boards"] for t in data["tasks"]) == data["boards"]
    assert sum(w["tasks"] for w in data["workers"]) == 5 and data["load_balance"] >= 1.0


def _session_key():
    from nqprof.cluster import work

    return work._part["key"]


def test_workers_release_their_sessions_after_a_run(cluster):
    solve_clustered("serial", 11, cluster=cluster.scheduler_address, tasks=4, progress=None)
    with distributed.Client(cluster.scheduler_address) as client:
        assert set(client.run(_session_key).values()) == {None}


@pytest.mark.parametrize(
    "strategy, error, message",
    [
        (
            "dp1",
            InputError,
            "strategy dp1 cannot run on a cluster "
            "\\(strategies that can: serial, multicore, feinbube",
        ),
        (
            "feinbube",
            UnavailableError,
            "feinbube needs GPU workers: the cluster at "
            "tcp://.* has no worker with the resource GPU=1",
        ),
    ],
    ids=["unsupported-strategy", "gpu-strategy-without-gpu-workers"],
)
def test_a_strategy_this_cluster_cannot_run_is_refused(cluster, strategy, error, message):
    """A strategy without parts, or a GPU one on CPU-only workers, fails with its reason."""
    with pytest.raises(error, match=message):
        solve_clustered(strategy, 10, cluster=cluster.scheduler_address, progress=None)


def test_interrupted_run_resumes_from_its_checkpoint(cluster, tmp_path):
    path = str(tmp_path / "n13.json")

    def stop_after_three(result, done, total):
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        solve_clustered(
            "serial",
            13,
            cluster=cluster.scheduler_address,
            tasks=12,
            checkpoint=path,
            progress=None,
            on_task=stop_after_three,
        )
    saved = json.loads(open(path).read())
    assert saved["tasks"] == 12 and len(saved["done"]) == 3

    ran = []
    record = solve_clustered(
        "serial",
        13,
        cluster=cluster.scheduler_address,
        checkpoint=path,
        progress=None,
        on_task=lambda result, done, total: ran.append(result["index"]),
    )
    assert record.verified and record.count == KNOWN_COUNTS[13]
    assert record.resumed == 3 and len(ran) == 9 and not set(ran) & {int(i) for i in saved["done"]}
    assert len(json.loads(open(path).read())["done"]) == 12


def test_wrong_count_in_checkpoint_is_a_mismatch(cluster, tmp_path):
    path = str(tmp_path / "n10.json")
    solve_clustered(
        "serial", 10, cluster=cluster.scheduler_address, tasks=4, checkpoint=path, progress=None
    )
    data = json.loads(open(path).read())
    data["done"]["0"]["count"] += 1
    open(path, "w").write(json.dumps(data))
    with pytest.raises(
        CountMismatchError,
        match=f"counted 726, expected 724; the checkpoint {path} may hold a wrong count",
    ):
        solve_clustered(
            "serial", 10, cluster=cluster.scheduler_address, checkpoint=path, progress=None
        )


@pytest.mark.slow
def test_killed_worker_loses_nothing():
    """A worker is killed (SIGKILL) while it holds tasks: the scheduler gives them to
    another worker, the nanny restarts the dead one, and the count is still right."""
    killed = []

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as c,
        distributed.Client(c) as client,
    ):

        def kill_a_busy_worker(result, done, total):
            if killed:
                return
            busy = [w for w, keys in client.processing().items() if keys and w != result["worker"]]
            victim = busy[0] if busy else result["worker"]
            pid = client.run(os.getpid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            killed.append(victim)

        record = solve_clustered(
            "serial",
            15,
            cluster=c.scheduler_address,
            tasks=24,
            progress=None,
            on_task=kill_a_busy_worker,
        )
    assert killed and record.verified and record.count == KNOWN_COUNTS[15]
    finished_by_victim = [t for t in record.tasks if t["worker"] == killed[0]]
    assert len(finished_by_victim) <= 1  # at most the task that triggered the kill


def _worker_facts():
    import multiprocessing

    from nqprof.cluster.work import _Watched

    watched = _Watched(get("serial"), 8, {}, timeout=60)  # the watchdog process starts here
    try:
        boards = expansion(8, 2)
        count = watched.count_part(boards).count
    finally:
        watched.close()
    return (
        os.environ.get("CUDA_VISIBLE_DEVICES"),
        multiprocessing.current_process().daemon,
        2 * count,
    )


@pytest.mark.slow
def test_local_gpu_cluster_pins_one_gpu_per_worker(monkeypatch):
    """Without a GPU: the local cluster for a GPU strategy starts one worker per visible GPU,
    each seeing only its own, able to start the watchdog process GPU work runs in."""
    from nqprof.cluster.engine import local_cluster

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    with local_cluster(get("feinbube"), None) as c, distributed.Client(c) as client:
        client.wait_for_workers(2, timeout=60)
        workers = client.scheduler_info()["workers"]
        assert sorted(w["resources"].get("GPU") for w in workers.values()) == [1, 1]
        facts = sorted(client.run(_worker_facts).values())
    assert facts == [("3", False, 92), ("5", False, 92)]
    with pytest.raises(InputError, match="--workers 3: only 2 GPUs are visible here"):
        local_cluster(get("feinbube"), 3)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(UnavailableError, match="feinbube needs a GPU and none is visible here"):
        local_cluster(get("feinbube"), None)


# -- pytest bench/ --nq-cluster --------------------------------------------------------------

pytest_plugins = ["pytester"]


def _inner_suite(pytester, request):
    pytester.makepyfile(test_suite=ONE_CASE)
    return plugin_args(request)


@pytest.mark.slow
def test_bench_cases_run_on_the_cluster(pytester, request, tmp_path):
    out = tmp_path / "bench.json"
    result = pytester.runpytest(
        *_inner_suite(pytester, request),
        "--nq-cluster",
        "local",
        "--nq-strategy",
        "serial,multicore,feinbube",
        "--nq-n",
        "8,10",
        "--nq-rounds",
        "4",
        f"--benchmark-json={out}",
        "-rs",
    )
    result.assert_outcomes(passed=4, skipped=2)
    result.stdout.fnmatch_lines(
        ["*feinbube needs a GPU: the cluster at tcp://* has no worker with the resource GPU=1*"]
    )
    data = json.loads(out.read_text())
    cluster = data["machine_info"]["nqprof"]["cluster"]
    assert cluster["scheduler"].startswith("tcp://") and len(cluster["workers"]) == 1
    for bench in data["benchmarks"]:
        assert bench["stats"]["rounds"] == 4 and bench["extra_info"]["verified"]
        assert bench["extra_info"]["round_rule"] == "4 rounds"  # the rule the worker followed
        where = bench["extra_info"]["cluster"]
        assert (
            where["worker"] == cluster["workers"][0]["worker"]
            and where["scheduler"] == cluster["scheduler"]
        )
        # the statistic is the worker's own clock around the computation, as for a local case
        assert bench["options"]["timer"] == "nqprof.worker_clock"
        times = sorted(bench["extra_info"]["samples_compute"])
        assert bench["stats"]["median"] == pytest.approx((times[1] + times[2]) / 2, rel=1e-6)


def test_bench_cluster_without_dask_is_a_usage_error(pytester, request, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    result = pytester.runpytest(
        *_inner_suite(pytester, request),
        "--nq-cluster",
        "local",
        "--nq-strategy",
        "serial",
        "--nq-n",
        "8",
    )
    result.stderr.fnmatch_lines(
        ["*--nq-cluster: running on a cluster needs Dask distributed*nqprof?cluster?*"]
    )
    assert result.ret != 0


def test_replay_clock():
    from nqprof.benchadapter import ReplayClock

    clock = ReplayClock([0.5, 0.25, 1e-7], "w")
    readings = [clock() for _ in range(6)]
    # each round's end minus its start is exactly the time given, with no float drift
    assert [readings[1] - readings[0], readings[3] - readings[2], readings[5] - readings[4]] == [
        0.5,
        0.25,
        1e-7,
    ]


def test_progress_lines():
    import io

    from nqprof.progress import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    bar = Progress(total=20, stream=stream)
    bar.message("nqprof: Dask dashboard at http://127.0.0.1:8787/status")
    for done in range(5, 21):
        bar.tasks(done, already=4)
    text = stream.getvalue()
    assert text.startswith("nqprof: Dask dashboard at http://127.0.0.1:8787/status\n")
    lines = text.split("\r\x1b[K")[1:]
    assert lines[0].endswith("5/20 tasks, ETA 0 s") and "ETA" not in lines[-1]
    assert lines[-1].rstrip().endswith("20/20 tasks") and text.endswith("\n")
    quiet = Tty()
    Progress(total=3, stream=quiet, enabled=False).message("x")
    assert quiet.getvalue() == ""


@pytest.mark.slow
def test_gpu_tasks_run_in_watchdog_processes_and_a_hang_is_retried(monkeypatch, tmp_path):
    """The GPU path without a GPU: one worker per GPU, each task counted in the worker's
    watchdog process; a count that hangs is killed after --timeout and its task retried."""
    import fake_gpu_parts

    from nqprof import strategies
    from nqprof.cluster.engine import local_gpu_cluster

    marker = tmp_path / "hung"
    monkeypatch.setenv(fake_gpu_parts.MARKER_ENV, str(marker))
    monkeypatch.setitem(strategies._table(), "fakegpuparts", "unused")
    monkeypatch.setitem(strategies._cache, "fakegpuparts", fake_gpu_parts.STRATEGY)
    with local_gpu_cluster(["0", "1"]) as c, distributed.Client(c) as client:
        client.wait_for_workers(2, timeout=60)
        client.run(fake_gpu_parts.register)
        record = solve_clustered(
            "fakegpuparts",
            12,
            {"fault": "hang-once"},
            cluster=c.scheduler_address,
            tasks=6,
            timeout=10,
            progress=None,
        )
    assert marker.exists()  # one count hung, its watchdog process was killed, the task retried
    assert record.verified and record.count == KNOWN_COUNTS[12]
    # each worker's session was opened before the tasks came, outside the wall time
    assert record.setup_s is not None and "the workers' sessions opened before" in record.summary()
    assert {w["gpu"] for w in record.workers} <= {"0", "1"} and all(
        t["gpu_s"] is not None for t in record.tasks
    )
    assert (
        len({t["pid"] for t in record.tasks}) <= 2
    )  # the Dask workers' processes, not the watchdogs'


def test_a_strategys_own_items_are_cut_and_carry_their_weights():
    """fast's cluster tasks are slices of its frames (one task per D4 class, weights inside,
    multiplier 1), each split deeper by the worker's GPU: the slices' counts (the C oracle
    cst_count, over each slice split as the GPU splits it) sum to the known count."""
    from nqprof.cluster.tasks import expansion, multiplier, plan, take
    from nqprof.strategies.cpu_common import cpu_module

    cpu = cpu_module()
    items = expansion(12, 4, "fast")
    assert items.tobytes() == cpu.cst_tasks(12, 0)  # the frames, whatever the depth
    assert items.ndim == 2 and multiplier(items) == 1 and multiplier(expansion(12, 4)) == 2
    parts = [take(items, t) for t in plan(len(items), 5)]
    assert sum(len(p) for p in parts) == len(items) and all(p.flags["C_CONTIGUOUS"] for p in parts)
    assert (
        sum(cpu.cst_count(12, cpu.cst_split(12, 4, p.tobytes()))[0] for p in parts)
        == KNOWN_COUNTS[12]
    )


def test_the_record_says_how_much_of_each_worker_s_time_its_gpu_counted():
    from nqprof.cluster.record import ClusterRecord

    def task(i, worker, seconds, gpu_s, made):
        return {
            "index": i,
            "worker": worker,
            "host": "h",
            "gpu": worker[-1],
            "seconds": seconds,
            "count": 1,
            "gpu_s": gpu_s,
            "made": made,
        }

    tasks = [
        task(0, "w0", 4.0, 3.0, 10),
        task(1, "w1", 2.0, 1.9, 5),
        task(2, "w0", 2.0, 2.0, 7),
        task(3, "w1", 3.0, None, None),
    ]
    rec = ClusterRecord.build(
        tasks=tasks,
        wall_s=6.0,
        strategy="fast",
        n=12,
        params={},
        depth=4,
        boards=730,
        unit="frames",
        count=4,
        expected=4,
        verified=True,
        cluster="c",
        dashboard=None,
    )
    w0, w1 = rec.workers
    assert (w0["busy_s"], w0["gpu_s"], w0["counting_share"], w0["made"]) == (
        6.0,
        5.0,
        5.0 / 6.0,
        17,
    )
    assert (w1["busy_s"], w1["gpu_s"], w1["made"]) == (5.0, 1.9, 5)
    text = rec.summary()
    assert "tasks      4 interleaved slices of 730 frames at depth 4" in text
    assert (
        "worker     w0 (h, GPU 0): 2 tasks, busy 6.000 s, "
        "the GPU counting 5.000 s (83.3% of it), 17 tasks made" in text
    )


@pytest.mark.parametrize(
    "change,message",
    [
        ({"done": {"8": {"count": 1}}}, r"task 8 is outside 0..7"),  # index == task count
        ({"done": {"-1": {"count": 1}}}, r"not a plain integer"),
        ({"done": {"03": {"count": 1}}}, r"not a plain integer"),
        ({"done": {"2": {"count": -1}}}, r"task 2 has no valid count"),  # a negative count
        ({"done": {"2": {"count": True}}}, r"task 2 has no valid count"),
        ({"tasks": -3}, r"tasks is -3"),
        ({"tasks": 0}, r"tasks is 0"),
        ({"n": 0}, r"n 0 is not a board size"),
        ({"depth": -1}, r"depth is -1"),
    ],
)
def test_checkpoint_entries_out_of_range_are_refused(tmp_path, change, message):
    path = tmp_path / "run.json"
    data = _checkpoint(path).to_dict()
    data.update(change)
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=message):
        ckpt.load(str(path))


def test_checkpoint_last_task_index_is_accepted(tmp_path):
    path = tmp_path / "run.json"
    data = _checkpoint(path).to_dict()
    data["done"] = {"0": {"count": 0}, "7": {"count": 5}}
    path.write_text(json.dumps(data))
    assert set(ckpt.load(str(path)).done) == {0, 7}


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _solve_on(address: str, env: dict[str, str]):
    """(stderr lines, exit code, seconds to the first line, seconds to the end, whether it was
    still running at its first line) of ``nqprof solve 12 -s serial --cluster ADDRESS -q``."""
    import time

    env = {k: v for k, v in os.environ.items() if k != "NQPROF_CLUSTER_CONNECT_TIMEOUT"} | env
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nqprof.cli", "solve", "12", "-s", "serial", "--cluster", address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        first = proc.stderr.readline()
        t_first, running = time.monotonic() - t0, proc.poll() is None
        rest = proc.communicate(timeout=60)[1]
        t_end = time.monotonic() - t0
    finally:
        proc.kill()
    lines = [first.rstrip("\n"), *rest.splitlines()]
    return lines, proc.returncode, t_first, t_end, running


def test_an_unreachable_scheduler_is_said_at_once_and_given_up_in_seconds():
    """The wait is said as it starts, even under -q, and ends after the default 5 s (Dask's
    own wait was 30 s, in silence) in one line, exit code 2."""
    address = f"tcp://127.0.0.1:{_closed_port()}"
    lines, code, t_first, t_end, running = _solve_on(address, {})
    assert code == 2 and running, lines
    assert lines == [
        f"nqprof: connecting to the Dask scheduler at {address}: up to 5 s "
        "($NQPROF_CLUSTER_CONNECT_TIMEOUT)",
        f"nqprof: error: cannot reach the Dask scheduler at {address} (Timed out trying to "
        f"connect to {address} after 5 s)",
    ]
    assert t_end < 10 and t_end - t_first >= 4.5, (t_first, t_end)


def test_the_connect_timeout_is_the_variable_s():
    address = f"tcp://127.0.0.1:{_closed_port()}"
    lines, code, _, _, _ = _solve_on(address, {"NQPROF_CLUSTER_CONNECT_TIMEOUT": "1.5"})
    assert code == 2 and lines[0].endswith(": up to 1.5 s ($NQPROF_CLUSTER_CONNECT_TIMEOUT)")
    assert lines[1:] == [
        f"nqprof: error: cannot reach the Dask scheduler at {address} (Timed out trying to "
        f"connect to {address} after 1.5 s)"
    ]


def test_cluster_bad_address_is_one_line(capsys):
    for address in ("foo", "tcp://host", "http://host:1", "host:99999", "tcp://:8786"):
        assert main(["solve", "8", "--cluster", address]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "--cluster takes local or a scheduler address" in err, err


@pytest.mark.parametrize("flag", ["--workers", "--tasks", "--split-depth"])
def test_cluster_count_zero_is_not_the_default(flag, capsys):
    assert main(["solve", "8", "--cluster", "local", flag, "0"]) == 2
    err = capsys.readouterr().err
    assert f"{flag} must be an integer in 1.." in err and "got '0'" in err, err


def test_unwritable_checkpoint_fails_before_the_work(tmp_path, capsys):
    assert (
        main(["solve", "8", "--cluster", "local", "--checkpoint", str(tmp_path / "no" / "ck.json")])
        == 2
    )
    assert "the folder" in capsys.readouterr().err and not (tmp_path / "no").exists()


def test_local_clusters_start_with_sigint_ignored():
    """Worker processes inherit an ignored SIGINT: Ctrl-C reaches only the client."""
    import signal

    from nqprof.cluster.engine import sigint_ignored

    before = signal.getsignal(signal.SIGINT)
    with sigint_ignored():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) is before
