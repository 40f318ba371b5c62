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


def run(args: list[str], timeout: float, **kw) -> tuple[str, float]:
    """Run ``args`` (an nqprof command when it starts with no executable), check exit 0 and
    the time bound, and return its output and seconds."""
    argv = args if args[0] in (sys.executable, "nsys") or "/" in args[0] else None
    if argv is None:
        argv = [sys.executable, "-m", "nqprof.cli", *args]
    t0 = time.perf_counter()
    done = subprocess.run(
        argv, capture_output=True, text=True, errors="replace", timeout=timeout, cwd=ROOT, **kw
    )
    seconds = time.perf_counter() - t0
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(argv)}: exit {done.returncode}\n{out[-3000:]}"
    assert seconds < timeout
    return out, seconds


def gpu_strategies() -> list[str]:
    from nqprof.strategies import all_strategies

    return [s.name for s in all_strategies() if s.needs_gpu]


def test_env_names_the_gpu():
    out, _ = run(["env"], 60)
    assert re.search(r"NVIDIA|H100|H200", out), out


def test_every_gpu_strategy_counts_verified(tmp_path):
    names = gpu_strategies()
    assert len(names) >= 13, names
    target = tmp_path / "sweep.json"
    out, seconds = run(
        ["sweep", "-s", ",".join(names), "--n", str(SMOKE_N), "-r", "1", "-w", "0", "-q"]
        + ["-o", str(target)],
        300,
    )
    records = json.loads(target.read_text())
    seen = {r["strategy"]: r for r in records}
    assert set(seen) == set(names), (sorted(seen), names)
    for name, r in seen.items():
        assert r.get("verified") is True, (name, r.get("count"), r.get("error"))
        holds = r["holds"]  # every timed region: behind a hold that held, or without one
        assert holds["gave_up"] == 0 and holds["held"] + holds["none"] >= 1, (name, holds)
    assert seconds < 20 * len(names)


def test_characterize_launch_ends_with_every_row_a_time_or_a_limit():
    """Every mode at 32 and 256 launches: the CDP modes measure both; graph-ff measures 32
    and 120 (its limit) and states its limit at 256; graph-tail measures 32 and 255 and states
    its limit at 256. No row is a failure, none hangs (the watchdog's timeout would show)."""
    out, seconds = run(
        ["characterize", "launch", "--counts", "32,256", "-r", "1", "-w", "0", "-q", "--json"],
        240,
    )
    doc = json.loads(out[out.index("{") :])
    points = {(p["mode"], p["count"]): p for p in doc["points"]}
    for mode in ("default", "own", "fire-and-forget", "tail", "graph-ff", "graph-tail"):
        for count in (32, 256):
            assert (mode, count) in points, (mode, count, sorted(points))
    for key, p in points.items():
        assert p["error"] is None, (key, p["error"])
        assert not p["launch_failures"], (key, p)
        if p["limit"]:
            assert key in {("graph-ff", 256), ("graph-tail", 256)}, key
        else:
            assert p["t1_s"] and p["t2_s"], (key, p)
    assert not points[("graph-ff", 120)]["limit"]
    assert not points[("graph-tail", 255)]["limit"]
    assert seconds < 180


@pytest.mark.parametrize(
    "args",
    [
        ["characterize", "reserve", "--pending", "0,4096", "--heap-mib", "8", "-q"],
        ["characterize", "residency", "--shared", "0,16384", "-q"],
        ["characterize", "ideal", "--strategies", "dp3", "--n", "10", "-r", "1", "-w", "0", "-q"],
        ["characterize", "timeline", "11", "-s", "dp3", "-r", "1", "-w", "0", "-q"],
        ["queue-bench", "--sizes", "16", "--variants", "balanced", "--fill", "1", "-r", "1", "-q"],
        ["report", "plauth", "table3", "-r", "1", "-w", "0", "-q"],
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_command_runs_live(args):
    out, seconds = run(args, 180)
    assert "nqprof: error" not in out and "Traceback" not in out, out[-2000:]
    assert len(out.strip().splitlines()) >= 3, out
    assert seconds < 120


# --- traces -----------------------------------------------------------------------------------


def nsys_or_skip() -> str:
    from nqprof.analysis.trace import find_nsys
    from nqprof.errors import UnavailableError

    try:
        return str(find_nsys())
    except UnavailableError as exc:
        if os.environ.get("NQPROF_REQUIRE_NSYS"):
            raise
        pytest.skip(str(exc))


#: A host-launched strategy, a CDP strategy (its parent grid has a row; its children do not)
#: and graph-cst (host launches of device-launchable graphs), with a kernel each must show.
TRACED = {"feinbube": "feinbube", "dp3": "dp3_root", "graph-cst": "cst_"}


def kernel_names(sqlite: Path) -> list[str]:
    from nqprof.analysis import trace as nsys_trace

    loaded = nsys_trace.load(sqlite)
    assert len(loaded.kernels) and len(loaded.memcpy), (
        f"{sqlite}: {len(loaded.kernels)} kernels, {len(loaded.memcpy)} copies, "
        f"{len(loaded.ranges)} NVTX ranges"
    )
    return [str(k) for k in loaded.kernels["name"]]


@pytest.mark.parametrize("strategy", sorted(TRACED))
def test_nqprof_profile_shows_the_kernels(strategy, tmp_path):
    nsys_or_skip()
    prefix = tmp_path / strategy
    out, _ = run(
        ["profile", "--output", str(prefix), "solve", "12", "-s", strategy, "-r", "1", "-w", "0"]
        + ["-q"],
        180,
    )
    assert "WARNING" not in out, out[-2000:]
    names = kernel_names(prefix.with_name(prefix.name + ".sqlite"))
    assert any(TRACED[strategy] in n for n in names), (strategy, sorted(set(names)))


def test_nsys_by_hand_around_solve_shows_the_kernels(tmp_path):
    nsys = nsys_or_skip()
    prefix = tmp_path / "by-hand"
    run(
        [nsys, "profile", "-t", "cuda,nvtx", "-o", str(prefix), "-f", "true", "--export"]
        + ["sqlite", sys.executable, "-m", "nqprof.cli", "solve", "12", "-s", "feinbube", "-q"],
        180,
    )
    names = kernel_names(prefix.with_name(prefix.name + ".sqlite"))
    assert any("feinbube" in n for n in names), sorted(set(names))


def test_pytest_nq_trace_stores_traces_with_kernels(tmp_path):
    nsys_or_skip()
    storage = tmp_path / "bench"
    out, _ = run(
        [sys.executable, "-m", "pytest", "bench/", "-q", "-p", "no:cacheprovider"]
        + ["--nq-strategy=" + ",".join(sorted(TRACED)), "--nq-n=12", "--nq-trace"]
        + ["--benchmark-autosave", f"--benchmark-storage={storage}"],
        300,
    )
    assert "likely broken" not in out, out[-3000:]
    (saved,) = storage.glob("*/*.json")  # the run pytest-benchmark saved (traces lie deeper)
    benches = json.loads(saved.read_text())["benchmarks"]
    assert len(benches) == len(TRACED), [b["name"] for b in benches]
    for bench in benches:
        trace = bench["extra_info"]["trace"]
        strategy = bench["extra_info"]["case"]["strategy"]
        names = [k["name"] for r in trace.get("ranges", ()) for k in r["kernels"]]
        assert any(TRACED[strategy] in n for n in names), (bench["name"], names, trace)
        assert trace["kernels"] > 0 and trace["memcpys"] > 0 and trace["nvtx_ranges"] > 0, trace
        assert "warning" not in trace, trace


def test_ncu_finds_the_kernel_it_names(tmp_path):
    ncu = shutil.which("ncu") or os.environ.get("NQPROF_NCU")
    if not ncu:
        pytest.skip("ncu (Nsight Compute) not found")
    out, _ = run(
        [ncu, "--clock-control", "none", "--kernel-name", "regex:feinbube", "--launch-count", "1"]
        + ["--metrics", "gpu__time_duration.sum", sys.executable, "-m", "nqprof.cli", "solve"]
        + ["10", "-s", "feinbube", "-r", "1", "-w", "0", "-q"],
        180,
    )
    assert re.search(r"feinbube\w*", out) and "gpu__time_duration.sum" in out, out[-3000:]
    assert "verified" in out
