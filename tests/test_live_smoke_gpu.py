"""A live smoke of every command that touches the GPU: each run once, at a small size, as a
user runs it (a process of its own), checked for its exit status, a verified count or a sane
table, and the time it took; and the traces that Nsight Systems writes of nqprof runs checked
for their kernel rows, through ``pytest bench/ --nq-trace``, ``nqprof profile`` and ``nsys``
run by hand around ``nqprof solve``; one case under Nsight Compute, which must find the
kernel it names.

What only a live run shows: traces that held NVTX ranges and no kernel (a worker that left
before its profiler wrote out what it saw), and graph launch modes that hung, both went
unnoticed by tests that read stored files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent

#: The GPU strategies (every one the suite has), counted once each at this N.
SMOKE_N = 10


def argv_of(args: list[str]) -> list[str]:
    """``args`` as a command line: an nqprof command unless it starts with an executable."""
    if args[0] == sys.executable or "/" in args[0]:
        return args
    return [sys.executable, "-m", "nqprof.cli", *args]


class Jobs:
    """The smoke's commands, started together when the module's first test asks (the GPU
    tests stay short): those that measure memory or time (``alone``) one after another on a
    thread, every other one in a process of its own at once. :meth:`result` waits for one
    and checks its exit status and its time."""

    def __init__(self):
        self.procs: dict[str, tuple] = {}
        self.alone: dict[str, tuple] = {}
        self._thread = None

    def start(self, specs: dict[str, tuple[list[str], float, bool]]) -> None:
        import threading

        for name, (args, timeout, alone) in specs.items():
            if not alone:
                proc = subprocess.Popen(
                    argv_of(args),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    errors="replace",
                    cwd=ROOT,
                )
                self.procs[name] = (proc, time.perf_counter(), timeout)

        def one_by_one():
            for name, (args, timeout, alone) in specs.items():
                if alone:
                    self.alone[name] = run(args, timeout, check=False)

        self._thread = threading.Thread(target=one_by_one, daemon=True)
        self._thread.start()

    def result(self, name: str) -> tuple[str, float]:
        if name in self.procs:
            proc, t0, timeout = self.procs[name]
            try:
                out, _ = proc.communicate(timeout=max(1.0, timeout - (time.perf_counter() - t0)))
            except subprocess.TimeoutExpired:
                proc.kill()
                pytest.fail(f"{name}: no end within {timeout:g} s")
            seconds = time.perf_counter() - t0
            assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{out[-3000:]}"
            return out, seconds
        while name not in self.alone and self._thread.is_alive():
            self._thread.join(0.5)
        out, seconds, code = self.alone[name]
        assert code == 0, f"{name}: exit {code}\n{out[-3000:]}"
        return out, seconds


def run(args: list[str], timeout: float, check: bool = True, **kw):
    """Run ``args`` (:func:`argv_of`); with ``check``, assert exit 0 and return its output and
    seconds, else return output, seconds and exit status."""
    argv = argv_of(args)
    t0 = time.perf_counter()
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, errors="replace", timeout=timeout, cwd=ROOT, **kw
        )
    except subprocess.TimeoutExpired:
        return (f"{' '.join(argv)}: no end within {timeout:g} s", timeout, -1)
    seconds = time.perf_counter() - t0
    out = done.stdout + done.stderr
    if not check:
        return out, seconds, done.returncode
    assert done.returncode == 0, f"{' '.join(argv)}: exit {done.returncode}\n{out[-3000:]}"
    return out, seconds


def gpu_strategies() -> list[str]:
    from nqprof.strategies import all_strategies

    return [s.name for s in all_strategies() if s.needs_gpu]


#: The sweeps the GPU strategies are split over, run at once (the smoke's longest job).
SWEEPS = 3


def sweep_parts() -> list[list[str]]:
    """The GPU strategies dealt round over SWEEPS sweeps."""
    names = gpu_strategies()
    return [names[i::SWEEPS] for i in range(SWEEPS)]


def nsys_path() -> str | None:
    from nqprof.analysis.trace import find_nsys
    from nqprof.errors import UnavailableError

    try:
        return str(find_nsys())
    except UnavailableError:
        if os.environ.get("NQPROF_REQUIRE_NSYS"):
            raise
        return None


def ncu_path() -> str | None:
    return os.environ.get("NQPROF_NCU") or shutil.which("ncu")


#: A host-launched strategy, a CDP strategy (its parent grid has a row; its children do not),
#: graph-cst (host launches of device-launchable graphs) and devgraph (graphs the device
#: launches, seen as graph executions), with a kernel or graph row each must show.
TRACED = {
    "feinbube": "feinbube",
    "dp3": "dp3_root",
    "graph-cst": "cst_",
    "devgraph": "(device launch)",
}

#: What ``characterize launch`` is asked for: every mode at 32 and 256 launches.
LAUNCH_COUNTS = (32, 256)

#: The commands of the smoke that need no profiler: (arguments, timeout s, run alone).
COMMANDS = {
    "env": (["env"], 60, False),
    "characterize-launch": (
        ["characterize", "launch", "--counts", ",".join(map(str, LAUNCH_COUNTS))]
        + ["-r", "1", "-w", "0", "-q", "--json"],
        240,
        True,
    ),
    "characterize-launch-auto": (
        ["characterize", "launch", "--modes", "default,graph-ff", "--counts", "32"]
        + ["--rounds", "auto", "-w", "1", "-q", "--json"],
        120,
        True,
    ),
    "characterize-reserve": (
        ["characterize", "reserve", "--pending", "0,4096", "--heap-mib", "8", "-q"],
        180,
        True,
    ),
    "characterize-residency": (["characterize", "residency", "--shared", "0,16384", "-q"], 120, 0),
    "characterize-blocks": (
        ["characterize", "blocks", "--n", "12", "--paths", "host,graph,cdp-tail,cdp-host"]
        + ["-r", "1", "-w", "0", "-q"],
        120,
        False,
    ),
    "characterize-latency": (["characterize", "latency", "--trials", "5", "-q"], 120, True),
    "characterize-ideal": (
        ["characterize", "ideal", "--strategies", "dp3", "--n", "10", "-r", "1", "-w", "0", "-q"],
        120,
        False,
    ),
    "characterize-timeline": (
        ["characterize", "timeline", "11", "-s", "dp3", "-r", "1", "-w", "0", "-q"],
        120,
        False,
    ),
    "queue-bench": (
        ["queue-bench", "--sizes", "16", "--variants", "balanced", "--fill", "1", "-r", "1", "-q"],
        120,
        False,
    ),
    "report-plauth-table3": (["report", "plauth", "table3", "-r", "1", "-w", "0", "-q"], 120, 0),
}


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """Every command of the smoke, started at once (see :class:`Jobs`)."""
    folder = tmp_path_factory.mktemp("smoke")
    specs = dict(COMMANDS)
    for part, names in enumerate(sweep_parts()):
        specs[f"sweep-{part}"] = (
            ["sweep", "-s", ",".join(names), "--n", str(SMOKE_N), "-r", "1", "-w", "0"]
            + ["-q", "-o", str(folder / f"sweep-{part}.json")],
            300,
            False,
        )
    nsys = nsys_path()
    if nsys:
        for strategy in TRACED:
            prefix = folder / f"profile-{strategy}"
            specs[f"profile-{strategy}"] = (
                ["profile", "--output", str(prefix), "solve", "12", "-s", strategy, "-r", "1"]
                + ["-w", "0", "-q"],
                180,
                False,
            )
        specs["nsys-by-hand"] = (
            [nsys, "profile", "-t", "cuda,nvtx", "-o", str(folder / "by-hand"), "-f", "true"]
            + ["--export", "sqlite", sys.executable, "-m", "nqprof.cli", "solve", "12", "-s"]
            + ["feinbube", "-q"],
            180,
            False,
        )
        for strategy in TRACED:  # one pytest session each, at once
            specs[f"nq-trace-{strategy}"] = (
                [sys.executable, "-m", "pytest", "bench/", "-q", "-p", "no:cacheprovider"]
                + [f"--nq-strategy={strategy}", "--nq-n=12", "--nq-trace", "--benchmark-autosave"]
                + [f"--benchmark-storage={folder / f'bench-{strategy}'}"],
                300,
                False,
            )
    ncu = ncu_path()
    if ncu:
        specs["ncu"] = (
            [ncu, "--clock-control", "none", "--kernel-name", "regex:feinbube"]
            + ["--launch-count", "1", "--metrics", "gpu__time_duration.sum", sys.executable]
            + ["-m", "nqprof.cli", "solve", "10", "-s", "feinbube", "-r", "1", "-w", "0", "-q"],
            180,
            False,
        )
    started = Jobs()
    started.start(specs)
    started.folder = folder
    yield started
    for proc, _, _ in started.procs.values():
        if proc.poll() is None:
            proc.kill()


def test_env_names_the_gpu(jobs):
    out, _ = jobs.result("env")
    assert re.search(r"NVIDIA|H100|H200", out), out


def test_every_gpu_strategy_counts_verified(jobs):
    names = gpu_strategies()
    assert len(names) >= 13, names
    seen, seconds = {}, 0.0
    for part in range(len(sweep_parts())):
        _, took = jobs.result(f"sweep-{part}")
        seconds = max(seconds, took)
        seen.update(
            (r["strategy"], r) for r in json.loads((jobs.folder / f"sweep-{part}.json").read_text())
        )
    assert set(seen) == set(names), (sorted(seen), names)
    for name, r in seen.items():
        assert r.get("verified") is True, (name, r.get("count"), r.get("error"))
        holds = r["holds"]  # every timed region: behind a hold that held, or without one
        # a hold that gave up (the host paused while queuing: the smoke runs many commands
        # at once) had its round run again; none was kept
        kept = holds["gave_up"] - holds["retimed"]
        assert kept == 0 and holds["held"] + holds["none"] >= 1, (name, holds)
    assert seconds < 20 * len(names)


def test_characterize_launch_ends_with_every_row_a_time_or_a_limit(jobs):
    """Every mode at 32 and 256 launches: the CDP modes measure both; graph-ff measures 32
    and 120 (its limit) and states its limit at 256; graph-tail measures 1 (its limit) and
    states it at 32 and 256. No row is a failure, none hangs (the watchdog would show)."""
    from nqprof.characterize.launch import GRAPH_LIMITS

    out, seconds = jobs.result("characterize-launch")
    doc = json.loads(out[out.index("{") :])
    points = {(p["mode"], p["count"]): p for p in doc["points"]}
    for mode in ("default", "own", "fire-and-forget", "tail", "graph-ff", "graph-tail"):
        for count in LAUNCH_COUNTS:
            assert (mode, count) in points, (mode, count, sorted(points))
    for key, p in points.items():
        assert p["error"] is None, (key, p["error"])
        assert not p["launch_failures"], (key, p)
        past = key[1] > GRAPH_LIMITS.get(key[0], key[1])
        assert bool(p["limit"]) is past, key
        if not past:
            assert p["t1_s"] and p["t2_s"], (key, p)
    for mode, limit in GRAPH_LIMITS.items():
        assert (mode, limit) in points and not points[(mode, limit)]["limit"]
    assert seconds < 180


def test_characterize_launch_auto_follows_the_relative_standard_error_rule(jobs):
    """`--rounds auto`: each point's rounds went through the round loop's rule (at least 5
    and 0.5 s), the point names that rule and carries the conditions of its rounds."""
    out, _ = jobs.result("characterize-launch-auto")
    doc = json.loads(out[out.index("{") :])
    assert {p["mode"] for p in doc["points"]} == {"default", "graph-ff"}
    for p in doc["points"]:
        assert p["error"] is None and not p["launch_failures"], p
        assert p["criterion"].startswith("auto: at least 5 rounds"), p["criterion"]
        assert 5 <= len(p["t1_s"]) == len(p["t2_s"]) <= 200, p
        assert p["conditions"]["gpu"]["source"], p["conditions"]


@pytest.mark.parametrize(
    "name",
    [n for n in COMMANDS if n not in ("env", "characterize-launch", "characterize-launch-auto")],
)
def test_command_runs_live(jobs, name):
    out, seconds = jobs.result(name)
    assert "nqprof: error" not in out and "Traceback" not in out, out[-2000:]
    assert len(out.strip().splitlines()) >= 3, out
    assert seconds < 120


# --- traces -----------------------------------------------------------------------------------


def needs(jobs, name: str, what: str) -> None:
    if name not in {**jobs.procs, **jobs.alone}:
        pytest.skip(f"{what} not found")


def kernel_names(sqlite: Path) -> list[str]:
    from nqprof.analysis import trace as nsys_trace

    loaded = nsys_trace.load(sqlite)
    assert len(loaded.kernels) and len(loaded.memcpy), (
        f"{sqlite}: {len(loaded.kernels)} kernels, {len(loaded.memcpy)} copies, "
        f"{len(loaded.ranges)} NVTX ranges"
    )
    # attributed rows: a graph the device launched is named so only once attributed
    return [str(k) for k in loaded.kernel_ranges["name"]]


@pytest.mark.parametrize("strategy", sorted(TRACED))
def test_nqprof_profile_shows_the_kernels(jobs, strategy):
    needs(jobs, f"profile-{strategy}", "nsys (Nsight Systems)")
    out, _ = jobs.result(f"profile-{strategy}")
    assert "WARNING" not in out, out[-2000:]
    names = kernel_names(jobs.folder / f"profile-{strategy}.sqlite")
    assert any(TRACED[strategy] in n for n in names), (strategy, sorted(set(names)))


def test_nsys_by_hand_around_solve_shows_the_kernels(jobs):
    needs(jobs, "nsys-by-hand", "nsys (Nsight Systems)")
    jobs.result("nsys-by-hand")
    names = kernel_names(jobs.folder / "by-hand.sqlite")
    assert any("feinbube" in n for n in names), sorted(set(names))


def test_pytest_nq_trace_stores_traces_with_kernels(jobs):
    benches = []
    for strategy in TRACED:
        needs(jobs, f"nq-trace-{strategy}", "nsys (Nsight Systems)")
        out, _ = jobs.result(f"nq-trace-{strategy}")
        assert "likely broken" not in out, out[-3000:]
        # pytest-benchmark's file (the traces lie deeper)
        (saved,) = (jobs.folder / f"bench-{strategy}").glob("*/*.json")
        benches += json.loads(saved.read_text())["benchmarks"]
    assert sorted(b["extra_info"]["case"]["strategy"] for b in benches) == sorted(TRACED)
    for bench in benches:
        trace = bench["extra_info"]["trace"]
        strategy = bench["extra_info"]["case"]["strategy"]
        names = [k["name"] for r in trace.get("ranges", ()) for k in r["kernels"]]
        assert any(TRACED[strategy] in n for n in names), (bench["name"], names, trace)
        launched = trace["kernels"] + trace.get("graphs", 0)
        assert launched > 0 and trace["memcpys"] > 0 and trace["nvtx_ranges"] > 0, trace
        assert "warning" not in trace, trace


def test_ncu_finds_the_kernel_it_names(jobs):
    needs(jobs, "ncu", "ncu (Nsight Compute)")
    out, _ = jobs.result("ncu")
    assert re.search(r"feinbube\w*", out) and "gpu__time_duration.sum" in out, out[-3000:]
    assert "verified" in out
