"""pytest --nq-trace: the profiled round after the timed ones, its trace stored beside the
history, and history/compare reading it back. nsys is a stand-in script that copies the
committed Nsight SQLite export (tests/data/nsys/cdp-sample.sqlite) where nsys would write."""

import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas  # noqa: F401 - loaded before the in-process inner sessions (numpy imports once)
import pytest
import test_plugin

import nqprof.analysis.trace.aggregate  # noqa: F401
import nqprof.analysis.trace.reader  # noqa: F401
from nqprof import machine, runners
from nqprof.analysis import history, trace_history
from nqprof.benchtrace import CPU_NOTE, solve_argv, storage_folder
from nqprof.cli import main
from nqprof.cuda import device
from nqprof.options import Case

pytest_plugins = ["pytester"]
#: test_plugin's fixtures, used here by their names.
fakes, nqpytest = test_plugin.fakes, test_plugin.nqpytest
SAMPLE = Path(__file__).parent / "data" / "nsys" / "cdp-sample.sqlite"


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch):
    """An ``nsys`` that writes the sample trace to ``-o PREFIX``.sqlite (and notes the command
    it was to profile in PREFIX.argv), or fails when FAKE_NSYS_FAIL is set."""
    script = tmp_path / "bin" / "nsys"
    script.parent.mkdir()
    script.write_text(
        textwrap.dedent(f"""\
        #!{sys.executable}
        import os, shutil, sys
        argv = sys.argv[1:]
        if os.environ.get("FAKE_NSYS_FAIL"):
            print("fake nsys: no CUDA device"); sys.exit(1)
        prefix = argv[argv.index("-o") + 1]
        shutil.copy({str(SAMPLE)!r}, prefix + ".sqlite")
        open(prefix + ".argv", "w").write(" ".join(argv))
        """)
    )
    script.chmod(0o755)
    monkeypatch.setenv("NQPROF_NSYS", str(script))
    return script


@pytest.fixture
def gpu_here(fakes, monkeypatch):
    """fakegpu runs: the machine has a GPU as far as the plugin knows, and the case runs in
    this process (a spawned worker would not know the test double)."""
    monkeypatch.setattr(device, "gpu_available", lambda: (True, "test GPU"))
    monkeypatch.setattr(
        machine, "machine_facts", lambda: {"gpu": "test GPU", "cuda_toolkit": "13.0"}
    )
    monkeypatch.setattr(
        runners, "open_runner", lambda s, n, p, timeout=None, **kw: runners.LocalRunner(s, n, p)
    )
    monkeypatch.setattr(runners.SPARE, "start", lambda *args, **kw: None)  # no worker either


def _saved(storage: Path) -> list[Path]:
    return sorted(storage.rglob("*.json"))


# -- the plugin --------------------------------------------------------------------------------


def test_without_nsys_the_option_is_a_usage_error_naming_the_search(
    nqpytest, monkeypatch, tmp_path
):
    monkeypatch.delenv("NQPROF_NSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(
        "nqprof.analysis.trace.schema.NSYS_GLOBS", (str(tmp_path / "none" / "nsys"),)
    )
    monkeypatch.setattr("nqprof.analysis.trace.nsys.NSYS_GLOBS", (str(tmp_path / "none" / "nsys"),))
    result = nqpytest("--nq-trace", "--nq-strategy=serial")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--nq-trace: nsys (Nsight Systems) not found: searched $NQPROF_NSYS, PATH and *"]
    )


@pytest.mark.slow
def test_traces_are_stored_beside_the_saved_run_and_summarised(
    gpu_here, fake_nsys, nqpytest, tmp_path
):
    storage = tmp_path / "store"
    result = nqpytest(
        "--nq-trace",
        "--nq-strategy=fakegpu,fakecpu",
        "--nq-n=8",
        "--nq-rounds=3",
        "--benchmark-autosave",
        f"--benchmark-storage={storage}",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*nqprof: Nsight Systems traces of 1 case in *traces*",
            f"*1 CPU case without a trace ({CPU_NOTE})*",
        ]
    )
    (path,) = _saved(storage)
    saved = json.loads(path.read_text())
    gpu, cpu = sorted(saved["benchmarks"], key=lambda b: b["name"] != "test_nq[fakegpu-N8]")
    trace = gpu["extra_info"]["trace"]
    # the timed rounds are the session's own; the profiled round is not among them
    assert gpu["stats"]["rounds"] == 3 and gpu["extra_info"]["samples_compute"] == [5e-5] * 3
    assert trace["file"].startswith("traces/") and trace["file"].endswith(
        "test_nq_fakegpu-N8.sqlite"
    )
    stored = path.parent / trace["file"]
    assert stored.is_file() and trace["run"] in str(stored.parent)
    assert [r["name"] for r in trace["ranges"]] == [
        "plain-generation-1",
        "cdp-generation-1",
        "plain-after-cdp",
    ]
    assert trace["ranges"][1]["kernels"][0] == {
        "name": "parent",
        "launches": 1,
        "total_ns": 20672,
        "mean_ns": 20672.0,
        "grid": "4x1x1",
        "block": "32x1x1",
    }
    command = stored.with_suffix(".argv").read_text()
    assert (
        "profile -t cuda,nvtx" in command
        and "-m nqprof.cli solve 8 -s fakegpu --rounds 1 --warmup 1" in command
    )
    assert cpu["extra_info"]["trace"] == {"missing": CPU_NOTE}
    assert (
        saved["nqprof"]["traces"]["run"] == trace["run"]
        and saved["nqprof"]["traces"]["traced"] == 1
    )
    # pytest-benchmark's own compare still reads the file
    own = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pytest_benchmark.cli import main; main()",
            "compare",
            "--columns=median,rounds",
            str(path),
        ],
        capture_output=True,
        text=True,
    )
    assert own.returncode == 0, own.stderr
    assert "test_nq[fakegpu-N8]" in own.stdout


def test_a_failed_profiled_round_keeps_the_timing_and_says_why(
    gpu_here, fake_nsys, nqpytest, tmp_path, monkeypatch
):
    monkeypatch.setenv("FAKE_NSYS_FAIL", "1")
    out = tmp_path / "run.json"
    result = nqpytest(
        "--nq-trace-dir",
        str(tmp_path / "traces"),
        "--nq-strategy=fakegpu",
        "--nq-n=8",
        "--nq-rounds=2",
        f"--benchmark-json={out}",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*nqprof: no trace for test_nq?fakegpu-N8?: the profiled round failed: *"
            "exit status 1*no CUDA device*"
        ]
    )
    (bench,) = json.loads(out.read_text())["benchmarks"]
    assert bench["stats"]["rounds"] == 2
    assert "no CUDA device" in bench["extra_info"]["trace"]["missing"]


def test_unsaved_runs_trace_into_a_temporary_folder(
    gpu_here, fake_nsys, nqpytest, tmp_path, pytester
):
    result = nqpytest("--nq-trace", "--nq-strategy=fakegpu", "--nq-n=8", "--nq-rounds=1")
    result.assert_outcomes(passed=1)
    assert not list(Path(pytester.path).rglob("*.sqlite"))  # nothing in the tree the tests ran in
    line = next(ln for ln in result.outlines if "Nsight Systems traces" in ln)
    assert "nqprof-traces-" in line


def test_without_the_option_nothing_is_profiled(gpu_here, fake_nsys, nqpytest, tmp_path):
    out = tmp_path / "run.json"
    nqpytest(
        "--nq-strategy=fakegpu", "--nq-n=8", "--nq-rounds=1", f"--benchmark-json={out}"
    ).assert_outcomes(passed=1)
    (bench,) = json.loads(out.read_text())["benchmarks"]
    assert (
        "trace" not in bench["extra_info"] and "traces" not in json.loads(out.read_text())["nqprof"]
    )


def test_pieces():
    assert storage_folder("file://./.benchmarks") == Path("./.benchmarks")
    assert (
        storage_folder("/x/y") == Path("/x/y")
        and storage_folder("elasticsearch+https://h/i") is None
    )
    argv = solve_argv(Case("dp3", 12, (("depth", "3"),)), timeout=60)
    assert argv[1:] == [
        "-m",
        "nqprof.cli",
        "solve",
        "12",
        "-s",
        "dp3",
        "-p",
        "depth=3",
        "--rounds",
        "1",
        "--warmup",
        "1",
        "-q",
        "--timeout",
        "60",
    ]


# -- history and compare ---------------------------------------------------------------------


def _ranges():
    from nqprof.analysis import trace

    return trace.summary_records(trace.load(SAMPLE))


def _bench(strategy, n, median, ranges=None, missing=None, params=None):
    samples = [median * f for f in (0.99, 1.0, 1.01, 1.0, 0.995, 1.005, 1.0, 0.998)]
    extra = {
        "strategy": strategy,
        "n": n,
        "params": params or {"depth": 3},
        "count": 1,
        "verified": True,
        "samples_compute": samples,
        "case": {"strategy": strategy, "n": n, "given": {}},
    }
    if ranges is not None:
        extra["trace"] = {
            "kind": "nsys",
            "file": f"traces/r/test_nq_{strategy}-N{n}.sqlite",
            "rounds": 2,
            "ranges": ranges,
        }
    if missing is not None:
        extra["trace"] = {"missing": missing}
    stats = {
        "min": median,
        "max": median,
        "mean": median,
        "stddev": 0,
        "median": median,
        "iqr": 0,
        "q1": median,
        "q3": median,
        "rounds": len(samples),
        "ops": 1 / median,
    }
    return {
        "name": f"test_nq[{strategy}-N{n}]",
        "fullname": f"t.py::test_nq[{strategy}-N{n}]",
        "group": None,
        "params": {},
        "options": {"timer": "nqprof.cuda_events"},
        "stats": stats,
        "extra_info": extra,
    }


def _history(tmp_path, slower_parent=1.2):
    root = tmp_path / "store" / "Linux-CPython-3.11-64bit"
    root.mkdir(parents=True)
    a, b = _ranges(), copy.deepcopy(_ranges())
    b[1]["duration_ns"] = int(b[1]["duration_ns"] * slower_parent)
    b[1]["kernels"][0]["total_ns"] = int(b[1]["kernels"][0]["total_ns"] * slower_parent)
    runs = {
        "0001_a_20261124_010000": [
            _bench("dp3", 12, 1e-3, a),
            _bench("serial", 12, 2e-3, missing=CPU_NOTE),
        ],
        "0002_b_20261124_020000": [
            _bench("dp3", 12, 1.2e-3, b, params={"depth": 4}),
            _bench("serial", 12, 2e-3, missing=CPU_NOTE),
        ],
    }
    for i, (name, benches) in enumerate(runs.items()):
        data = {
            "datetime": f"2026-11-24T0{i + 1}:00:00+00:00",
            "commit_info": {"id": "abc"},
            "machine_info": {},
            "benchmarks": benches,
        }
        (root / f"{name}.json").write_text(json.dumps(data))
    return tmp_path / "store"


def test_trace_changes_side_by_side_per_range_and_kernel(tmp_path):
    df = history.load_history(_history(tmp_path))
    run_a, run_b = history.last_runs(df, 2)
    changes = trace_history.trace_changes(df, run_a, run_b)
    assert set(changes["strategy"]) == {"dp3"}  # serial has no trace
    parent = changes[changes["kernel"] == "parent"].iloc[0]
    assert (
        parent["range"] == "cdp-generation-1"
        and parent["a_ns"] == 20672
        and parent["launches_a"] == 1
    )
    assert parent["b_ns"] == int(20672 * 1.2) and round(parent["change_pct"]) == 20
    top = trace_history.moved_most(changes)
    # what moved on the GPU: the range moved 20.9 us, but its time is the host's; its kernel 4.1 us
    assert (top["range"], top["kernel"]) == ("cdp-generation-1", "parent")
    assert trace_history.run_traces(df) == {
        run_a: {"traced": 1, "missing": 1},
        run_b: {"traced": 1, "missing": 1},
    }
    assert trace_history.trace_path(tmp_path / "store", run_a, "traces/r/x.sqlite") == (
        tmp_path / "store" / "Linux-CPython-3.11-64bit" / "traces" / "r" / "x.sqlite"
    )


def test_per_round_times_and_range_labels():
    ranges = [
        {
            "name": "dp3 N=12 generation 1",
            "count": 2,
            "duration_ns": 4000,
            "kernels": [{"name": "dp3_root", "launches": 2, "total_ns": 1000}],
            "memcpy": {"count": 4, "bytes": 64, "duration_ns": 80},
        },
        {
            "name": "(outside any NVTX range)",
            "count": None,
            "duration_ns": None,
            "kernels": [{"name": "k", "launches": 1, "total_ns": 10}],
        },
    ]
    assert trace_history.per_round(ranges, "dp3", 12) == {
        ("generation 1", None): {"ns": 2000, "launches": None},
        ("generation 1", "dp3_root"): {"ns": 500, "launches": 1},
        ("generation 1", trace_history.MEMCPY): {"ns": 40, "launches": 2},
        ("(outside any NVTX range)", "k"): {"ns": 10, "launches": 1},
    }


def test_compare_prints_the_traces_of_changed_cases(tmp_path, capsys):
    storage = _history(tmp_path)
    assert main(["compare", "--storage", str(storage)]) == 0
    out = capsys.readouterr().out
    block = out[out.index("traces (one profiled round per run") :]
    assert "dp3 N=12: slower +20.0%; depth 3 -> 4" in block
    assert "  cdp-generation-1     104.7 us ->  125.6 us   +20.0%\n" in block
    assert "    parent              20.7 us ->   24.8 us   +20.0%  launches 1\n" in block
    assert "moved most: cdp-generation-1, kernel parent +4.1 us (+20.0%)" in block
    assert "serial" not in block  # unchanged: shown with --traces
    assert main(["compare", "--storage", str(storage), "--traces"]) == 0
    block = capsys.readouterr().out.split("traces (one profiled round per run")[1]
    assert (
        f"serial N=12: same +0.0%\n  no trace in A: {CPU_NOTE}\n  no trace in B: {CPU_NOTE}"
        in block
    )


def test_history_marks_runs_with_traces(tmp_path, capsys):
    assert main(["history", str(_history(tmp_path))]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "Linux-CPython" in ln]
    assert len(lines) == 2 and all(
        ln.endswith("2 benchmarks  1 traced, 1 without a trace") for ln in lines
    )


def test_runs_without_traces_compare_as_before(tmp_path, capsys):
    storage = _history(tmp_path)
    for path in storage.rglob("*.json"):
        data = json.loads(path.read_text())
        for bench in data["benchmarks"]:
            bench["extra_info"].pop("trace")
        path.write_text(json.dumps(data))
    assert main(["compare", "--storage", str(storage)]) == 0
    assert "traces" not in capsys.readouterr().out


# -- CDP: the device timeline beside the trace -----------------------------------------------


TIMELINE = {
    "recorded": 4,
    "capacity": 2000,
    "dropped": 0,
    "not_started": 0,
    "grids": {
        "id": [0, 1, 2, 3],
        "launched": [0, 100, 120, 130],
        "start": [10, 200, 210, 900],
        "end": [150, 700, 800, 1000],
        "gen": [0, 1, 1, 2],
        "parent": [4294967295, 0, 0, 1],
        "parent_block": [0, 0, 1, 0],
        "boards": [9, 4, 5, 1],
    },
}


def test_device_timeline_per_generation():
    gens = trace_history.device_ranges(TIMELINE)
    assert [(g["name"], g["payload"], g["duration_ns"], g["boards"]) for g in gens] == [
        ("device generation 0", 0, 140, 9),
        ("device generation 1", 1, 600, 9),
        ("device generation 2", 2, 100, 1),
    ]
    assert gens[1]["kernels"] == [
        {
            "name": trace_history.DEVICE_GRIDS,
            "launches": 2,
            "total_ns": 1090,
            "mean_ns": 545.0,
            "grid": None,
            "block": None,
        }
    ]
    assert trace_history.device_ranges({}) == []


def test_which_cases_get_a_device_timeline():
    from nqprof.benchtrace import keeps_device_timeline
    from nqprof.strategies import get

    assert keeps_device_timeline(get("dp3"), Case("dp3", 12))
    assert not keeps_device_timeline(get("dp3"), Case("dp3", 12, (("launch", "record"),)))
    assert not keeps_device_timeline(get("dp1"), Case("dp1", 12))  # keeps no timeline
    assert not keeps_device_timeline(get("feinbube"), Case("feinbube", 12))


def test_device_generations_compare_beside_the_nsys_ranges(tmp_path, capsys):
    storage = _history(tmp_path)
    slower = copy.deepcopy(TIMELINE)
    slower["grids"]["end"] = [150, 900, 800, 1000]  # generation 1: one grid 200 ns longer
    for path, timeline in zip(sorted(storage.rglob("*.json")), (TIMELINE, slower), strict=True):
        data = json.loads(path.read_text())
        data["benchmarks"][0]["extra_info"]["trace"]["device"] = trace_history.device_ranges(
            timeline
        )
        path.write_text(json.dumps(data))
    assert main(["compare", "--storage", str(storage)]) == 0
    out = capsys.readouterr().out
    assert "  device generation 1     600 ns ->    700 ns   +16.7%\n" in out
    assert "    grids (device)        1.1 us ->    1.3 us   +18.3%  launches 2\n" in out


def test_what_moved_most_is_gpu_work_not_the_hosts():
    """The build and the stream hold move with the host (compile cache, queuing): the
    kernel that moved names the change; a range only where no GPU row is in both runs."""
    import pandas as pd

    def row(rng, kernel, a, b):
        return {
            "range": rng,
            "kernel": kernel,
            "a_ns": a,
            "b_ns": b,
            "change_pct": 100.0 * (b - a) / a,
        }

    changes = pd.DataFrame(
        [
            row("build", None, 300e6, 380e6),
            row("generation 0", "nq_hold", 80e3, 200e3),
            row("generation 0", None, 4.0e6, 4.3e6),
            row("generation 0", "fast_x", 3.6e6, 3.8e6),
            row("upload", trace_history.MEMCPY, 1e3, 2e3),
        ]
    )
    top = trace_history.moved_most(changes)
    assert (top["range"], top["kernel"]) == ("generation 0", "fast_x")
    hosts = changes[changes["kernel"].isna()]
    assert trace_history.moved_most(hosts)["range"] == "build"
    # under 5% nothing is named: the kernel moved 1%, the hold (the host's) 150%
    still = pd.DataFrame(
        [row("generation 0", "fast_x", 3.6e6, 3.636e6), row("generation 0", "nq_hold", 80e3, 200e3)]
    )
    assert trace_history.moved_most(still) is None


def test_device_timelines_beside_the_traces_are_not_runs(tmp_path):
    """--nq-trace stores device timelines (JSON) under the machine's traces folder: history
    does not take them for runs, nor warn about them."""
    import warnings

    storage = _history(tmp_path)
    machine = next(p for p in storage.iterdir() if p.is_dir())
    timeline = (
        machine / history.TRACE_FOLDER / "20261124-031125-1" / "test_nqueens_dp3-N12.timeline.json"
    )
    timeline.parent.mkdir(parents=True, exist_ok=True)
    timeline.write_text('{"grids": []}')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        files = history.history_files(storage)
    assert timeline not in files and len(files) == 2
