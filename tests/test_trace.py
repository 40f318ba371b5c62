"""Nsight Systems trace ingestion, from the committed export tests/data/nsys/cdp-sample.sqlite
(see tests/data/nsys/README.md). No GPU and no nsys needed: profiling runs a fake nsys."""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import stat
import sys
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

from nqprof.analysis import trace as nsys_trace  # noqa: E402
from nqprof.analysis.trace import nsys as trace_nsys  # noqa: E402
from nqprof.analysis.trace import reader as trace_reader  # noqa: E402
from nqprof.cli import main as nqprof_main  # noqa: E402
from nqprof.cli import trace as trace_cli  # noqa: E402
from nqprof.errors import InputError, UnavailableError  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "nsys" / "cdp-sample.sqlite"
RANGES = ["plain-generation-1", "cdp-generation-1", "plain-after-cdp"]


@pytest.fixture(scope="module")
def sample():
    return nsys_trace.load(FIXTURE)


@pytest.fixture
def db_copy(tmp_path):
    """A writable copy of the fixture and a function running SQL on it."""
    path = tmp_path / "copy.sqlite"
    shutil.copyfile(FIXTURE, path)
    path.chmod(0o644)

    def execute(sql: str, params=()):
        with sqlite3.connect(path) as con:
            return con.execute(sql, params).fetchall()

    return path, execute


def _event_type(execute, name: str) -> int:
    return execute("SELECT id FROM ENUM_NSYS_EVENT_TYPE WHERE name = ?", (name,))[0][0]


# --------------------------------------------------------------------------- load


def test_kernels(sample):
    assert list(sample.kernels["name"]) == ["k", "parent", "k"]
    parent = sample.kernels.iloc[1]
    assert (parent.grid_x, parent.grid_y, parent.grid_z) == (4, 1, 1)
    assert (parent.block_x, parent.block_y, parent.block_z) == (32, 1, 1)
    assert parent.duration_ns == parent.end - parent.start > 0
    assert parent.stream == 7 and parent.device == 0 and parent.correlation_id == 25
    assert parent.registers == 32 and parent.static_shared_bytes == 0


def test_ranges(sample):
    ranges = sample.ranges
    assert list(ranges["name"]) == RANGES
    assert set(ranges["domain"]) == {"nqprof"}
    assert set(ranges["kind"]) == {nsys_trace.PUSH_POP}
    assert [None if pd.isna(p) else p for p in ranges["payload"]] == [None, 7, None]
    assert list(ranges["level"]) == [0, 0, 0]
    assert (ranges["duration_ns"] > 0).all()
    assert ranges["global_tid"].nunique() == 1


def test_runtime_and_memcpy(sample):
    assert (sample.runtime["name"] == "cuLaunchKernel").sum() == 3
    assert set(sample.kernels["correlation_id"]) <= set(sample.runtime["correlation_id"])
    assert (
        sample.memcpy.empty and "bytes" in sample.memcpy.columns
    )  # no memcpy table in the fixture


def test_kernels_attributed_to_their_range(sample):
    attributed = sample.kernel_ranges
    assert list(zip(attributed["name"], attributed["range_name"], strict=True)) == list(
        zip(["k", "parent", "k"], RANGES, strict=True)
    )
    assert set(attributed["range_domain"]) == {"nqprof"}
    assert attributed.iloc[1]["range_payload"] == 7
    launches = sample.runtime.set_index("correlation_id").loc[
        list(attributed["correlation_id"]), "start"
    ]
    assert list(attributed["launch_start"]) == list(launches)


def test_missing_file(tmp_path):
    missing = tmp_path / "nothere.sqlite"
    with pytest.raises(InputError, match="nothere.sqlite"):
        nsys_trace.load(missing)


def test_corrupt_file(tmp_path):
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"this is not an SQLite database\n" * 100)
    with pytest.raises(InputError, match="corrupt.sqlite"):
        nsys_trace.load(corrupt)


def test_sqlite_that_is_not_an_nsys_export(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    with pytest.raises(InputError, match="other.sqlite.*not an Nsight Systems"):
        nsys_trace.load(other)


def test_optional_columns_and_tables_may_be_absent(db_copy):
    path, execute = db_copy
    if sqlite3.sqlite_version_info < (3, 35):
        pytest.skip("this SQLite cannot drop columns")
    execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN registersPerThread")
    execute("ALTER TABLE NVTX_EVENTS DROP COLUMN int64Value")
    loaded = nsys_trace.load(path)
    assert loaded.kernels["registers"].isna().all()
    assert loaded.ranges["payload"].isna().all()
    assert list(loaded.kernel_ranges["range_name"]) == RANGES


def test_without_nvtx_every_kernel_is_outside(db_copy):
    path, execute = db_copy
    execute("DROP TABLE NVTX_EVENTS")
    loaded = nsys_trace.load(path)
    assert loaded.ranges.empty
    assert loaded.kernel_ranges["range_id"].isna().all()
    text = nsys_trace.breakdown(loaded)
    assert nsys_trace.OUTSIDE in text and "parent" in text


def test_nested_and_start_end_ranges(db_copy):
    """A push/pop range nested inside cdp-generation-1 around the parent launch takes the
    kernel (innermost wins); a start/end range is a range but never takes kernels."""
    path, execute = db_copy
    push_pop = _event_type(execute, "NvtxPushPopRange")
    start_end = _event_type(execute, "NvtxStartEndRange")
    tid, domain = execute(
        f"SELECT globalTid, domainId FROM NVTX_EVENTS WHERE eventType = {push_pop} LIMIT 1"
    )[0]
    launch = execute("SELECT start FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 25")[0][0]
    insert = (
        "INSERT INTO NVTX_EVENTS (start, end, eventType, "
        "text, globalTid, domainId) VALUES (?,?,?,?,?,?)"
    )
    execute(insert, (launch - 10, launch + 10, push_pop, "inner", tid, domain))
    execute(insert, (launch - 20, launch + 20, start_end, "async", tid, None))
    loaded = nsys_trace.load(path)
    ranges = loaded.ranges.set_index("name")
    assert ranges.loc["inner", "level"] == 1 and ranges.loc["cdp-generation-1", "level"] == 0
    assert ranges.loc["async", "kind"] == nsys_trace.START_END
    assert ranges.loc["async", "domain"] == nsys_trace.DEFAULT_DOMAIN
    assert list(loaded.kernel_ranges["range_name"]) == [
        "plain-generation-1",
        "inner",
        "plain-after-cdp",
    ]


def _add_memcpy(execute, correlation_id: int, launch: int, nbytes: int) -> None:
    """A runtime call at ``launch`` (inside cdp-generation-1) and the copy it made."""
    tid, name_id = execute("SELECT globalTid, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1")[0]
    pid = tid - tid % 2**24
    execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, "
        "correlationId, nameId, returnValue) VALUES (?, ?, 1, ?, ?, ?, 0)",
        (launch, launch + 100, tid, correlation_id, name_id),
    )
    execute(
        "CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end "
        "INTEGER NOT NULL, deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId "
        "INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL)"
    )
    execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 7, ?, ?, ?, 1)",
        (launch + 50, launch + 550, correlation_id, pid, nbytes),
    )


def test_memcpy_per_range(db_copy, tmp_path):
    path, execute = db_copy
    cdp_start = execute(
        "SELECT start FROM NVTX_EVENTS WHERE textId IN "
        "(SELECT id FROM StringIds WHERE value = 'cdp-generation-1')"
    )[0][0]
    _add_memcpy(execute, 1001, cdp_start + 100, 4096)
    _add_memcpy(execute, 1002, cdp_start + 1000, 1024)
    loaded = nsys_trace.load(path)
    assert list(loaded.memcpy["kind"]) == ["Host-to-Device"] * 2
    cdp = next(r for r in nsys_trace.summary_records(loaded) if r["name"] == "cdp-generation-1")
    assert cdp["memcpy"] == {"count": 2, "bytes": 5120, "duration_ns": 1000}
    assert "memcpy 2x" in nsys_trace.breakdown(loaded)
    document = json.loads(nsys_trace.to_chrome(loaded, tmp_path / "m.json").read_text())
    assert sum(e.get("cat") == "memcpy" for e in document["traceEvents"]) == 2


# -- summary, breakdown, chrome ----------------------------------------------------------------


def test_summary(sample):
    table = nsys_trace.summary(sample)
    assert list(table.columns) == nsys_trace.SUMMARY_FIELDS
    assert list(table["range"]) == RANGES and list(table["kernel"]) == ["k", "parent", "k"]
    cdp = table[table["range"] == "cdp-generation-1"].iloc[0]
    assert (
        cdp["payload"] == 7
        and cdp["launches"] == 1
        and cdp["grid"] == "4x1x1"
        and cdp["block"] == "32x1x1"
    )
    parent = sample.kernels.iloc[1]
    assert cdp["kernel_total_ns"] == parent.duration_ns
    assert cdp["range_ns"] == sample.ranges.iloc[1].duration_ns
    assert (table["memcpy_count"] == 0).all()


def test_breakdown_mentions_each_range(sample):
    text = nsys_trace.breakdown(sample)
    for name in RANGES:
        assert f"nqprof / {name}" in text
    assert "payload=7" in text and "parent" in text
    assert nsys_trace.OUTSIDE not in text


def test_breakdown_flags_a_trace_with_ranges_and_no_cuda_activity(sample, db_copy):
    held = nsys_trace.contents(sample)
    assert held == {"kernels": 3, "graphs": 0, "memcpys": 0, "nvtx_ranges": 3, "warning": None}
    assert "WARNING" not in nsys_trace.breakdown(sample)
    path, execute = db_copy
    execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL")
    emptied = nsys_trace.load(path)
    held = nsys_trace.contents(emptied)
    assert held["kernels"] == 0 and held["nvtx_ranges"] == 3
    assert held["warning"] == nsys_trace.NO_CUDA_WARNING
    text = nsys_trace.breakdown(emptied)
    assert "0 kernels, 0 graph executions, 3 NVTX ranges" in text
    assert f"WARNING: copy.sqlite: {nsys_trace.NO_CUDA_WARNING}" in text


def test_graph_executions_are_rows_host_launched_by_their_call_device_launched_by_time(
    sample, db_copy
):
    """nsys's graph-level trace (its default) gives each graph execution a row and its kernels
    none; a graph the device launched has no host call. Both become rows among the kernels:
    a host-launched one in the range of the call that launched it, a device-launched one
    (marked so) in the innermost range open in its process when it started."""
    path, execute = db_copy
    pid_of = sample.kernels.iloc[1]  # the parent kernel: its process and its launch call
    global_pid = execute("SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1")[0][0]
    by_name = sample.ranges.set_index("name")
    cdp, after = by_name.loc["cdp-generation-1"], by_name.loc["plain-after-cdp"]
    execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INT, end INT, deviceId INT, "
        "contextId INT, streamId INT, correlationId INT, globalPid INT, graphId INT)"
    )
    host_start = int(pid_of.end) + 10  # after the parent, launched by the parent's call
    device_start = int(after.start) + (int(after.end) - int(after.start)) // 2
    execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (?, ?, 0, 1, 7, ?, ?, 3), "
        "(?, ?, 0, 1, 7, 0, ?, 4)",
        (host_start, host_start + 50, int(pid_of.correlation_id), global_pid)
        + (device_start, device_start + 20, global_pid),
    )
    # an API call that carries no correlation (0, as a device-launched graph) launched nothing
    execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (nameId, start, end, correlationId, globalTid, "
        "eventClass, returnValue) SELECT nameId, ?, ?, 0, globalTid, eventClass, 0 "
        "FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1",
        (int(cdp.start) + 1, int(cdp.start) + 2),
    )
    trace = nsys_trace.load(path)
    held = nsys_trace.contents(trace)
    assert (held["kernels"], held["graphs"], held["warning"]) == (3, 2, None)
    rows = trace.kernel_ranges.set_index("name")
    assert rows.loc["graph 3", "range_name"] == "cdp-generation-1" == cdp.name
    assert rows.loc["graph 4 (device launch)", "range_name"] == "plain-after-cdp"
    assert rows.loc["graph 4 (device launch)", "duration_ns"] == 20
    text = nsys_trace.breakdown(trace)
    assert "3 kernels, 2 graph executions, 3 NVTX ranges" in text
    assert "graph 4 (device launch)" in text
    execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL")
    held = nsys_trace.contents(nsys_trace.load(path))
    assert (held["kernels"], held["graphs"], held["warning"]) == (0, 2, None)


def test_chrome_export(sample, tmp_path):
    path = nsys_trace.to_chrome(sample, tmp_path / "out" / "trace.json")
    document = json.loads(path.read_text())
    events = document["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    ranges = [e for e in events if e.get("cat") == "nqprof"]
    assert [e["name"] for e in kernels] == ["k", "parent", "k"]
    assert [e["name"] for e in ranges] == RANGES
    assert all(e["ph"] == "X" and e["dur"] > 0 for e in kernels + ranges)
    assert kernels[1]["args"]["grid"] == "4x1x1" and kernels[1]["args"]["correlation_id"] == 25
    assert ranges[1]["args"]["payload"] == 7
    assert kernels[1]["dur"] == pytest.approx(sample.kernels.iloc[1].duration_ns / 1000)
    # the launch range encloses the kernel's launch on the host thread track
    assert ranges[1]["ts"] <= kernels[1]["ts"] and {e["tid"] for e in kernels} == {7}
    assert any(e["ph"] == "M" and e["args"]["name"] == "stream 7" for e in events)


# --------------------------------------------------------------------------- find_nsys


def _executable(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def no_nsys(monkeypatch, tmp_path):
    """Nothing on PATH, no $NQPROF_NSYS, install locations under tmp_path."""
    monkeypatch.delenv(nsys_trace.NSYS_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setattr(
        trace_nsys, "NSYS_GLOBS", (str(tmp_path / "opt" / "nsight-systems" / "*" / "bin" / "nsys"),)
    )
    return tmp_path


def test_find_nsys_honours_env(no_nsys, monkeypatch):
    fake = _executable(no_nsys / "custom" / "nsys")
    monkeypatch.setenv(nsys_trace.NSYS_ENV, str(fake))
    assert nsys_trace.find_nsys() == fake


def test_find_nsys_env_not_executable(no_nsys, monkeypatch):
    monkeypatch.setenv(nsys_trace.NSYS_ENV, str(no_nsys / "missing" / "nsys"))
    with pytest.raises(UnavailableError, match=nsys_trace.NSYS_ENV):
        nsys_trace.find_nsys()


def test_find_nsys_on_path(no_nsys, monkeypatch):
    fake = _executable(no_nsys / "bin" / "nsys")
    monkeypatch.setenv("PATH", str(fake.parent))
    assert nsys_trace.find_nsys() == fake


def test_find_nsys_newest_install(no_nsys):
    for version in ("2025.3.2", "2025.10.1", "2024.6.1"):
        _executable(no_nsys / "opt" / "nsight-systems" / version / "bin" / "nsys")
    assert nsys_trace.find_nsys().parts[-3] == "2025.10.1"


def test_find_nsys_unavailable(no_nsys):
    with pytest.raises(
        UnavailableError, match="nsys.*not found.*NQPROF_NSYS.*PATH.*nsight-systems"
    ):
        nsys_trace.find_nsys()


# -- profiling with a fake nsys ----------------------------------------------------------------

FAKE_NSYS = """\
#!{python}
# A stand-in for nsys: records its argv, prints a few lines, and for `profile -o PREFIX`
# writes PREFIX.nsys-rep and (unless FAKE_NSYS_NO_SQLITE) PREFIX.sqlite copied from the
# fixture; for `export -o OUT REPORT` copies the fixture to OUT. FAKE_NSYS_STATUS: exit status.
import json, os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
out = args[args.index("-o") + 1]
print("Collecting data...")
status = int(os.environ.get("FAKE_NSYS_STATUS", "0"))
if status:
    print("fake nsys: the application failed", file=sys.stderr)
    sys.exit(status)
if args[0] == "profile":
    open(out + ".nsys-rep", "w").write("report")
    if not os.environ.get("FAKE_NSYS_NO_SQLITE"):
        shutil.copyfile({fixture!r}, out + ".sqlite")
    print("Generated:", out + ".nsys-rep")
elif args[0] == "export":
    shutil.copyfile({fixture!r}, out)
"""


@pytest.fixture
def fake_nsys(no_nsys, monkeypatch):
    """A fake nsys as $NQPROF_NSYS; returns a function reading the argvs it was called with."""
    script = _executable(
        no_nsys / "fake" / "nsys", FAKE_NSYS.format(python=sys.executable, fixture=str(FIXTURE))
    )
    log = no_nsys / "fake-nsys.log"
    monkeypatch.setenv(nsys_trace.NSYS_ENV, str(script))
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    return lambda: [json.loads(line) for line in log.read_text().splitlines()]


def test_profile_writes_and_returns_sqlite(fake_nsys, tmp_path, capsys):
    sqlite = nsys_trace.profile(["python3", "run.py"], tmp_path / "out" / "run")
    assert sqlite == tmp_path / "out" / "run.sqlite" and sqlite.is_file()
    (call,) = fake_nsys()
    assert call[:2] == ["profile", "-t"] and call[2] == "cuda,nvtx"
    assert call[call.index("-o") + 1] == str(tmp_path / "out" / "run")
    assert "--export" in call and call[-2:] == ["python3", "run.py"]
    assert "Collecting data" in capsys.readouterr().err  # echoed
    assert list(nsys_trace.load(sqlite).kernels["name"]) == ["k", "parent", "k"]


def test_profile_exports_when_nsys_wrote_no_sqlite(fake_nsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_NO_SQLITE", "1")
    sqlite = nsys_trace.profile(["app"], tmp_path / "run.nsys-rep", echo=False)
    assert sqlite == tmp_path / "run.sqlite" and sqlite.is_file()
    assert [call[0] for call in fake_nsys()] == ["profile", "export"]


def test_profile_failure_carries_nsys_output(fake_nsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_STATUS", "3")
    with pytest.raises(
        nsys_trace.ProfileError, match="exit status 3.*the application failed"
    ) as caught:
        nsys_trace.profile(["app"], tmp_path / "run", echo=False)
    assert "\n" not in str(caught.value)
    assert "fake nsys: the application failed" in caught.value.output


def test_profile_without_nsys(no_nsys, tmp_path):
    with pytest.raises(UnavailableError):
        nsys_trace.profile(["app"], tmp_path / "run")


def test_load_nsys_rep_exports_on_the_fly(fake_nsys, tmp_path):
    report = tmp_path / "run.nsys-rep"
    report.write_text("report")
    loaded = nsys_trace.load(report)
    assert loaded.path == report and len(loaded.kernels) == 3
    (call,) = fake_nsys()
    assert call[:3] == ["export", "--type", "sqlite"] and call[-1] == str(report)
    assert not (tmp_path / "run.sqlite").exists()  # exported into a temporary folder


# --------------------------------------------------------------------------- CLI glue


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="nqprof")
    subparsers = parser.add_subparsers(dest="command", required=True)
    subparsers.add_parser("solve")  # stands for the main parser's own subcommands
    trace_cli.add_commands(subparsers)
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_trace_load_prints_tables(capsys):
    assert _cli("trace", "load", str(FIXTURE)) == 0
    out = capsys.readouterr().out
    for table in nsys_trace.TABLES:
        assert f"== {table} (" in out
    assert "cdp-generation-1" in out


def test_cli_trace_load_csv(tmp_path):
    assert (
        _cli(
            "trace",
            "load",
            str(FIXTURE),
            "--csv",
            str(tmp_path / "csv"),
            "--table",
            "kernel_ranges",
        )
        == 0
    )
    assert [p.name for p in (tmp_path / "csv").iterdir()] == ["kernel_ranges.csv"]
    table = pd.read_csv(tmp_path / "csv" / "kernel_ranges.csv")
    assert list(table["range_name"]) == RANGES


def test_cli_trace_chrome(tmp_path, capsys):
    output = tmp_path / "out.json"
    assert _cli("trace", "chrome", str(FIXTURE), "-o", str(output)) == 0
    assert capsys.readouterr().out.strip() == str(output)
    assert len(json.loads(output.read_text())["traceEvents"]) > 6


def test_cli_profile_nqprof_subcommand(fake_nsys, tmp_path, capsys):
    prefix = tmp_path / "p"
    assert _cli("profile", "--output", str(prefix), "--", "solve", "17", "--strategy", "dp3") == 0
    (call,) = fake_nsys()
    assert (
        call[-6:] == [sys.executable, "-m", "nqprof.cli", "solve", "17", "--strategy", "dp3"][-6:]
    )
    assert call[-7] == sys.executable
    out = capsys.readouterr().out
    assert f"trace: {prefix}.sqlite" in out and "nqprof / cdp-generation-1" in out


def test_cli_profile_plain_command(fake_nsys, tmp_path):
    assert _cli("profile", "--output", str(tmp_path / "p"), "python3", "-c", "pass") == 0
    (call,) = fake_nsys()
    assert call[-3:] == ["python3", "-c", "pass"] and "nqprof.cli" not in call


def test_cli_profile_needs_a_command():
    with pytest.raises(InputError, match="give a command"):
        _cli("profile", "--")


def test_cli_profile_explicit_nsys(no_nsys, tmp_path):
    with pytest.raises(InputError, match="not an executable nsys"):
        _cli("profile", "--nsys", str(tmp_path / "nope"), "--", "app")


def test_profile_case(fake_nsys, tmp_path):
    result = trace_cli.profile_case(["python3", "bench.py", "--n", "12"], tmp_path / "cases")
    assert json.loads(json.dumps(result)) == result
    assert Path(result["trace"]).parent == tmp_path / "cases"
    assert [r["name"] for r in result["ranges"]] == RANGES
    cdp = result["ranges"][1]
    assert cdp["domain"] == "nqprof" and cdp["payload"] == 7 and cdp["count"] == 1
    assert [k["name"] for k in cdp["kernels"]] == ["parent"] and cdp["kernels"][0][
        "grid"
    ] == "4x1x1"


def test_module_entry_point(capsys):
    assert nqprof_main(["trace", "breakdown", str(FIXTURE)]) == 0
    assert "nqprof / plain-after-cdp" in capsys.readouterr().out
    assert nqprof_main(["trace", "load", "/nonexistent/x.sqlite"]) == 2
    assert "/nonexistent/x.sqlite" in capsys.readouterr().err


def test_load_without_pandas(monkeypatch):
    monkeypatch.setattr(trace_reader, "pd", None)
    with pytest.raises(UnavailableError, match="pandas"):
        nsys_trace.load(FIXTURE)
