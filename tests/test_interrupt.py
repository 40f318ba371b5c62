"""Ctrl-C and a killed parent: a run ends at once with one line and no traceback, a sweep
keeps its finished rows, and no worker outlives its parent (CPU searches in forked workers,
a GPU-like case in a spawned one). Each run is a real ``nqprof`` process in a session of its
own; Ctrl-C is SIGINT to its whole process group, as a terminal sends it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Each test starts real nqprof or pytest processes, interrupts or kills them and waits for
#: their workers to go: seconds each.
pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc"),
    pytest.mark.slow,
]

TESTS = Path(__file__).resolve().parent
#: Far above the second or so an interrupted run takes, far below the searches' own time: a
#: run that waited for its search would miss it (a busy machine only moves the first).
PATIENCE = 20.0
#: A script that runs the CLI with the test's GPU-like strategy registered.
WITH_GPU_HANG = (
    "import sys; from nqprof import strategies; from nqprof.cli import main; import "
    "fake_gpu_hang; strategies._table()['gpu-hang'] = 'fake_gpu_hang:STRATEGY'; "
    "strategies._cache['gpu-hang'] = fake_gpu_hang.STRATEGY; sys.exit(main(sys.argv[1:]))"
)


#: The CLI on what it takes for a GPU machine: `solve` starts a spare GPU worker first
#: (nqprof.spare), which a CPU strategy's run leaves waiting beside its own workers.
WITH_SPARE = (
    "import sys; from nqprof import spare; spare.gpu_machine = lambda: True; "
    "from nqprof.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_process_left():
    """Whatever a test leaves (a failed test's run and its workers) is killed."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def _as_from_a_terminal() -> None:
    """In the child before it runs nqprof: SIGINT as a terminal's program gets it. A test run
    started as a shell's background job has SIGINT ignored, which every child inherits (and
    nqprof, as any program, keeps: an ignored Ctrl-C is the caller's choice)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], script: str | None = None) -> subprocess.Popen:
    cmd = (
        [sys.executable, "-c", script, *args] if script else [sys.executable, "-m", "nqprof", *args]
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
        cwd=TESTS,
        preexec_fn=_as_from_a_terminal,
    )
    _STARTED.append(proc)
    return proc


def _workers(proc: subprocess.Popen, count: int) -> set[int]:
    """The run's worker processes, once ``count`` of them run (the resource tracker of a
    spawning parent is no worker; CPU workers are the fork server's children, and the
    server is returned with them: it too must be gone)."""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        kids, servers = set(), set()
        for pid in _children(proc.pid):
            cmd = _cmdline(pid)
            if "forkserver" in cmd:
                servers.add(pid)
                kids |= _children(pid)
            elif "resource_tracker" not in cmd:
                kids.add(pid)
        if len(kids) >= count:
            time.sleep(0.5)  # inside its round
            return kids | servers
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"no {count} workers within {PATIENCE} s")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def _gone(pids: set[int]) -> bool:
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def _interrupt(proc: subprocess.Popen) -> tuple[int, str, str, float]:
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=PATIENCE)
    return proc.returncode, out, err, time.monotonic() - t0


@pytest.mark.parametrize(
    "args,workers",
    [
        (["solve", "17", "-s", "serial", "--timeout", "600"], 3),
        (["solve", "17", "-s", "multicore", "--timeout", "600"], 3),
    ],
)
def test_ctrl_c_ends_a_cpu_run_at_once(args, workers):
    proc = _start(args)
    pids = _workers(proc, workers)
    code, out, err, took = _interrupt(proc)
    assert (code, out, err) == (130, "", "nqprof: interrupted\n"), (took, err)
    assert took < PATIENCE and _gone(pids)


def test_ctrl_c_ends_a_run_and_its_spare_worker():
    proc = _start(["solve", "17", "-s", "serial", "--timeout", "600"], WITH_SPARE)
    pids = _workers(proc, 4)  # three forked workers and the spare
    code, out, err, _ = _interrupt(proc)
    assert (code, out, err) == (130, "", "nqprof: interrupted\n")
    assert _gone(pids), [p for p in pids if _alive(p)]


def test_ctrl_c_ends_a_gpu_run_at_once():
    proc = _start(["solve", "8", "-s", "gpu-hang", "--timeout", "600"], WITH_GPU_HANG)
    pids = _workers(proc, 1)
    code, out, err, _ = _interrupt(proc)
    assert (code, out, err) == (130, "", "nqprof: interrupted\n")
    assert _gone(pids)


def test_ctrl_c_in_a_sweep_keeps_the_finished_rows(tmp_path):
    out_file = tmp_path / "sweep.json"
    proc = _start(
        [
            "sweep",
            "-s",
            "serial",
            "--n",
            "8,9,17",
            "--rounds",
            "1",
            "--warmup",
            "0",
            "--timeout",
            "600",
            "-q",
            "-o",
            str(out_file),
        ]
    )
    _workers(proc, 3)
    time.sleep(1.5)  # N=8 and 9 take milliseconds: N=17 is running
    code, out, err, _ = _interrupt(proc)
    assert code == 130 and "Traceback" not in err
    assert err.splitlines()[-1] == (
        "nqprof: interrupted after 2 of 3 cases: the records before this are the finished ones"
    )
    rows = [line.split()[:2] for line in out.splitlines()[2:]]
    assert rows == [["serial", "8"], ["serial", "9"]]
    records = json.loads(out_file.read_text())
    assert [r.get("n") for r in records[:-1]] == [8, 9] and all(r["verified"] for r in records[:-1])
    assert records[-1] == {
        "partial": "interrupted after 2 of 3 cases: the records before this are the finished ones"
    }


@pytest.mark.parametrize(
    "args,script,workers",
    [
        (["solve", "17", "-s", "serial", "--timeout", "600"], None, 3),
        (["solve", "8", "-s", "gpu-hang", "--timeout", "600"], WITH_GPU_HANG, 1),
        (["solve", "17", "-s", "serial", "--timeout", "600"], WITH_SPARE, 4),
    ],
)
def test_a_killed_parent_leaves_no_worker(args, script, workers):
    proc = _start(args, script)
    pids = _workers(proc, workers)
    proc.kill()
    proc.communicate()
    assert _gone(pids), [p for p in pids if _alive(p)]


# -- Ctrl-C in pytest ---------------------------------------------------------------------------

#: pytest in a child that gets Ctrl-C as from a terminal.
RUN_PYTEST = "import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))"
UNUSED = "Benchmark fixture was not used at all"


def _interrupted_pytest(args: list[str], started) -> tuple[int, str]:
    """A pytest run's exit code and output after Ctrl-C, once ``started()`` is true."""
    proc = _start(["-p", "no:cacheprovider", "-p", "no:randomly", *args], RUN_PYTEST)
    started(proc)
    code, out, err, _ = _interrupt(proc)
    return code, out + err


def test_ctrl_c_in_a_benchmark_case_ends_pytest_as_in_a_plain_benchmark(tmp_path):
    """Ctrl-C during a case of `pytest bench/` ends pytest as it ends a plain pytest-benchmark
    test: KeyboardInterrupt, exit code 2, and no warning that the benchmark fixture was not
    used (nqprof calls it after the rounds, a plain test at once)."""
    marker = tmp_path / "started"
    plain = tmp_path / "test_plain.py"
    plain.write_text(
        "import pathlib, time\n\n\n"
        "def test_plain(benchmark):\n"
        "    def work():\n"
        f"        pathlib.Path({str(marker)!r}).touch()\n"
        "        time.sleep(60)\n\n"
        "    benchmark(work)\n"
    )

    def marked(proc):
        deadline = time.monotonic() + PATIENCE
        while not marker.exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.05)

    code, out = _interrupted_pytest([str(plain)], marked)
    assert code == pytest.ExitCode.INTERRUPTED and "KeyboardInterrupt" in out, out
    assert UNUSED not in out, out

    pids: set[int] = set()
    code, out = _interrupted_pytest(
        [
            str(TESTS.parent / "bench" / "test_nqueens.py"),
            "--nq-strategy=serial",
            "--nq-n=17",
            "--nq-rounds=1",
            f"--benchmark-storage={tmp_path / 'storage'}",
        ],
        lambda proc: pids.update(_workers(proc, 3)),
    )
    assert code == pytest.ExitCode.INTERRUPTED and "KeyboardInterrupt" in out, out
    assert UNUSED not in out, out
    assert _gone(pids)
