"""Nsight Systems traces of nqprof runs.

:func:`load` reads an ``nsys`` SQLite export (or a ``.nsys-rep`` report, exported on the fly)
into pandas tables and attributes every kernel to the innermost NVTX push/pop range of the
thread that launched it. :func:`summary` and :func:`breakdown` aggregate that per range,
:func:`to_chrome` writes Chrome trace-event JSON (opens in Perfetto), and :func:`profile`
runs a command under ``nsys profile``.

The export schema changes between Nsight Systems versions, so table names come from
``sqlite_master``, columns from ``PRAGMA table_info`` and event-type numbers from the
``ENUM_*`` tables; an optional table or column that is absent reads as empty or NA.

Device-launched (CDP) child grids have no rows. The parent kernel's row covers the parent
grid only (on CDP2 it ends before its children do); the whole tree's time is inside the
NVTX range of its generation, which ends with a CUDA event that waits for every child.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import glob
import itertools
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from nqprof.errors import InputError, NqprofError, UnavailableError

try:
    import pandas as pd
except ImportError:  # pragma: no cover - pandas comes with the "analysis" extra
    pd = None

# --------------------------------------------------------------------------- constants

STRINGS_TABLE = "StringIds"
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
NVTX_TABLE = "NVTX_EVENTS"
EVENT_TYPE_ENUM = "ENUM_NSYS_EVENT_TYPE"
MEMCPY_KIND_ENUM = "ENUM_CUDA_MEMCPY_OPER"

# ENUM_NSYS_EVENT_TYPE symbol names (their numbers are looked up in the export).
PUSH_POP_EVENTS = ("NvtxPushPopRange", "NvtxtPushPopRange")
START_END_EVENTS = ("NvtxStartEndRange", "NvtxtStartEndRange")
DOMAIN_CREATE_EVENTS = ("NvtxDomainCreate",)

PUSH_POP = "push/pop"
START_END = "start/end"
DEFAULT_DOMAIN = "(default)"
OUTSIDE = "(outside any NVTX range)"

# NVTX payload union members, in the order they are tried.
PAYLOAD_COLUMNS = ("int64Value", "uint64Value", "doubleValue", "int32Value", "uint32Value", "floatValue")
UNSIGNED_PAYLOADS = {"uint64Value": 2**64, "uint32Value": 2**32}

# nsys serialises thread ids as globalTid = ... | pid << 24 | tid.
_ID_BITS = 2**24

KERNEL_COLUMNS = {
    "start": "start", "end": "end", "short_name_id": "shortName", "demangled_name_id": "demangledName",
    "grid_x": "gridX", "grid_y": "gridY", "grid_z": "gridZ",
    "block_x": "blockX", "block_y": "blockY", "block_z": "blockZ",
    "stream": "streamId", "device": "deviceId", "context": "contextId",
    "correlation_id": "correlationId", "global_pid": "globalPid", "registers": "registersPerThread",
    "static_shared_bytes": "staticSharedMemory", "dynamic_shared_bytes": "dynamicSharedMemory",
}
RUNTIME_COLUMNS = {
    "name_id": "nameId", "start": "start", "end": "end",
    "correlation_id": "correlationId", "global_tid": "globalTid",
}
MEMCPY_COLUMNS = {
    "start": "start", "end": "end", "bytes": "bytes", "kind_id": "copyKind",
    "stream": "streamId", "device": "deviceId", "context": "contextId",
    "correlation_id": "correlationId", "global_pid": "globalPid",
}
NVTX_COLUMNS = {
    "event_type": "eventType", "start": "start", "end": "end", "text": "text", "text_id": "textId",
    "domain_id": "domainId", "global_tid": "globalTid", **{c: c for c in PAYLOAD_COLUMNS},
}

KERNEL_FIELDS = [
    "name", "demangled_name", "start", "end", "duration_ns", "grid_x", "grid_y", "grid_z",
    "block_x", "block_y", "block_z", "stream", "device", "context", "correlation_id", "pid",
    "registers", "static_shared_bytes", "dynamic_shared_bytes",
]
RUNTIME_FIELDS = ["name", "start", "end", "duration_ns", "correlation_id", "global_tid", "pid", "tid"]
MEMCPY_FIELDS = [
    "kind", "bytes", "start", "end", "duration_ns", "stream", "device", "context", "correlation_id", "pid",
]
RANGE_FIELDS = [
    "range_id", "name", "domain", "kind", "start", "end", "duration_ns", "payload",
    "global_tid", "pid", "tid", "level",
]
# Columns kernel_ranges adds to a kernel (or memcpy) row.
ATTRIBUTION_FIELDS = [
    "launch_global_tid", "launch_start", "range_id", "range_name", "range_domain", "range_payload",
    "range_level",
]
SUMMARY_FIELDS = [
    "domain", "range", "payload", "range_count", "range_ns", "kernel", "launches",
    "kernel_total_ns", "kernel_mean_ns", "grid", "block", "memcpy_count", "memcpy_bytes", "memcpy_ns",
]

TABLES = ("kernels", "ranges", "kernel_ranges", "runtime", "memcpy")  # Trace's frames

NSYS_ENV = "NQPROF_NSYS"
NSYS_GLOBS = (
    "/opt/nvidia/nsight-systems/*/bin/nsys",
    "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
    "/opt/nvidia/nsight-systems*/*/target-linux-x64/nsys",
    "/usr/local/cuda/bin/nsys",
    "/usr/local/cuda*/bin/nsys",
    "/usr/local/cuda*/nsight-systems*/bin/nsys",
    "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
    "/usr/lib/nsight-systems*/bin/nsys",
)
OUTPUT_TAIL_LINES = 20
MESSAGE_TAIL_LINES = 5


class ProfileError(NqprofError):
    """``nsys`` or the profiled command failed; ``output`` holds the last lines they printed."""

    def __init__(self, message: str, output: Sequence[str] = ()):
        super().__init__(message)
        self.output = list(output)


@dataclasses.dataclass
class Trace:
    """One nsys export as pandas tables (times in ns, on the export's clock)."""

    path: Path
    kernels: pd.DataFrame
    ranges: pd.DataFrame
    runtime: pd.DataFrame
    memcpy: pd.DataFrame
    kernel_ranges: pd.DataFrame

    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}


# --------------------------------------------------------------------------- reading the export

class _Export:
    """Schema-aware reads from one open nsys SQLite export."""

    def __init__(self, con: sqlite3.Connection, shown: Path):
        self.con = con
        self.shown = shown
        self.tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        self._strings: dict[int, str] | None = None

    def check(self) -> None:
        if STRINGS_TABLE not in self.tables:
            raise InputError(f"{self.shown}: not an Nsight Systems SQLite export (no {STRINGS_TABLE} table)")

    def column_types(self, table: str) -> dict[str, str]:
        return {row[1]: (row[2] or "").upper() for row in self.con.execute(f'PRAGMA table_info("{table}")')}

    def select(self, table: str, spec: Mapping[str, str], required: Iterable[str] = ()) -> pd.DataFrame:
        """Columns ``spec`` (output name -> source column) of ``table``; absent ones read as NA,
        an absent table as an empty frame. A missing ``required`` column is an InputError."""
        types = self.column_types(table) if table in self.tables else {}
        missing = [spec[out] for out in required if types and spec[out] not in types]
        if missing:
            raise InputError(f"{self.shown}: table {table} lacks column(s) {', '.join(missing)}")
        present = [out for out in spec if spec[out] in types]
        rows = []
        if present:
            sources = ", ".join(f'"{spec[out]}"' for out in present)
            rows = self.con.execute(f'SELECT {sources} FROM "{table}"').fetchall()
        frame = _typed_frame(rows, present, [types[spec[out]] for out in present])
        for out in spec:
            if out not in frame:
                frame[out] = pd.Series(pd.NA, index=frame.index, dtype=object)
        return frame[list(spec)]

    def strings(self) -> dict[int, str]:
        if self._strings is None:
            self._strings = dict(self.con.execute(f'SELECT id, value FROM "{STRINGS_TABLE}"'))
        return self._strings

    def enum_ids(self, table: str, names: Iterable[str]) -> list[int]:
        """The numbers of the enum symbols ``names`` in ``table`` (those it defines)."""
        if table not in self.tables:
            return []
        wanted = list(names)
        marks = ", ".join("?" * len(wanted))
        return [row[0] for row in self.con.execute(f'SELECT id FROM "{table}" WHERE name IN ({marks})', wanted)]

    def enum_labels(self, table: str) -> dict[int, str]:
        if table not in self.tables:
            return {}
        columns = self.column_types(table)
        label = "label" if "label" in columns else "name"
        return dict(self.con.execute(f'SELECT id, "{label}" FROM "{table}"'))


def _typed_frame(rows: list[tuple], names: list[str], sql_types: list[str]) -> pd.DataFrame:
    """A frame from SQLite rows: INTEGER columns as nullable Int64 (exact, NA-aware),
    REAL as float64, anything else as objects."""
    columns = list(zip(*rows)) if rows else [()] * len(names)
    data = {}
    for name, values, sql_type in zip(names, columns, sql_types):
        if "INT" in sql_type:
            data[name] = pd.array(values, dtype="Int64")
        elif sql_type in ("REAL", "FLOAT", "DOUBLE"):
            data[name] = pd.array([float("nan") if v is None else v for v in values], dtype="float64")
        else:
            data[name] = pd.array(values, dtype=object)
    return pd.DataFrame(data, index=pd.RangeIndex(len(rows)))


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def _require_file(path: Path) -> None:
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: not readable")


def _pid(global_id: pd.Series) -> pd.Series:
    return global_id // _ID_BITS % _ID_BITS


def _tid(global_id: pd.Series) -> pd.Series:
    return global_id % _ID_BITS


def _with_duration(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(duration_ns=frame["end"] - frame["start"])


def _by_start(frame: pd.DataFrame, fields: list[str]) -> pd.DataFrame:
    return frame.sort_values("start", kind="stable").reset_index(drop=True)[fields]


def _read_kernels(db: _Export) -> pd.DataFrame:
    raw = db.select(KERNEL_TABLE, KERNEL_COLUMNS, required=("start", "end"))
    strings = db.strings()
    demangled = raw["demangled_name_id"].map(strings, na_action="ignore")
    short = raw["short_name_id"].map(strings, na_action="ignore")
    frame = raw.assign(name=short.where(short.notna(), demangled), demangled_name=demangled,
                       pid=_pid(raw["global_pid"]))
    return _by_start(_with_duration(frame), KERNEL_FIELDS)


def _read_runtime(db: _Export) -> pd.DataFrame:
    raw = db.select(RUNTIME_TABLE, RUNTIME_COLUMNS, required=("start", "end", "correlation_id"))
    frame = raw.assign(name=raw["name_id"].map(db.strings(), na_action="ignore"),
                       pid=_pid(raw["global_tid"]), tid=_tid(raw["global_tid"]))
    return _by_start(_with_duration(frame), RUNTIME_FIELDS)


def _read_memcpy(db: _Export) -> pd.DataFrame:
    raw = db.select(MEMCPY_TABLE, MEMCPY_COLUMNS, required=("start", "end"))
    labels = db.enum_labels(MEMCPY_KIND_ENUM)
    kind = raw["kind_id"].map(lambda k: labels.get(k, str(k)), na_action="ignore")
    frame = raw.assign(kind=kind, pid=_pid(raw["global_pid"]))
    return _by_start(_with_duration(frame), MEMCPY_FIELDS)


def _nvtx_text(raw: pd.DataFrame, strings: Mapping[int, str]) -> pd.Series:
    """An NVTX event's string: its ``text``, else its registered string ``textId``."""
    registered = raw["text_id"].map(strings, na_action="ignore")
    return raw["text"].where(raw["text"].notna(), registered)


def _payloads(raw: pd.DataFrame) -> pd.Series:
    """Each event's payload: the first non-null union member (unsigned ones made unsigned)."""
    payload = pd.Series(pd.NA, index=raw.index, dtype=object)
    for column in PAYLOAD_COLUMNS:
        values = raw[column].astype(object)
        wrap = UNSIGNED_PAYLOADS.get(column)
        if wrap:
            values = values.map(lambda v: v + wrap if v < 0 else v, na_action="ignore")
        fill = payload.isna() & values.notna()
        payload[fill] = values[fill]
    return payload


def _domain_names(raw: pd.DataFrame, text: pd.Series, create_ids: list[int]) -> pd.Series:
    """Each event's domain name, resolved through the domain-registration rows of its process."""
    created = raw["event_type"].isin(create_ids) & raw["domain_id"].notna()
    pids = _pid(raw["global_tid"])
    by_process = {(p, d): t for p, d, t in zip(pids[created], raw["domain_id"][created], text[created])}
    by_id = {d: t for (_, d), t in by_process.items()}

    def name(pid, domain_id):
        if pd.isna(domain_id) or domain_id == 0:
            return DEFAULT_DOMAIN
        return by_process.get((pid, domain_id), by_id.get(domain_id, f"domain {domain_id}"))

    return pd.Series([name(p, d) for p, d in zip(pids, raw["domain_id"])], index=raw.index, dtype=object)


def _read_ranges(db: _Export) -> pd.DataFrame:
    if NVTX_TABLE in db.tables and EVENT_TYPE_ENUM not in db.tables:
        warnings.warn(f"{db.shown}: no {EVENT_TYPE_ENUM} table, NVTX ranges left out", stacklevel=3)
    push_pop = db.enum_ids(EVENT_TYPE_ENUM, PUSH_POP_EVENTS)
    start_end = db.enum_ids(EVENT_TYPE_ENUM, START_END_EVENTS)
    creates = db.enum_ids(EVENT_TYPE_ENUM, DOMAIN_CREATE_EVENTS)
    raw = db.select(NVTX_TABLE, NVTX_COLUMNS, required=("start", "event_type"))
    text = _nvtx_text(raw, db.strings())
    frame = raw.assign(name=text, domain=_domain_names(raw, text, creates), payload=_payloads(raw),
                       pid=_pid(raw["global_tid"]), tid=_tid(raw["global_tid"]))
    frame = frame[frame["event_type"].isin(push_pop + start_end)]
    frame = frame.assign(kind=frame["event_type"].map(lambda t: PUSH_POP if t in push_pop else START_END))
    frame = _by_start(_with_duration(frame), [f for f in RANGE_FIELDS if f not in ("range_id", "level")])
    frame.insert(0, "range_id", pd.array(range(len(frame)), dtype="Int64"))
    return frame.assign(level=_nesting_levels(frame))[RANGE_FIELDS]


# --------------------------------------------------------------------------- attribution

def _sweep_thread(ranges: pd.DataFrame, times: pd.Series) -> tuple[dict[int, int], dict]:
    """Walk one thread's push/pop ranges in time order. Returns each range's nesting level
    (0 = outermost) and, for each entry of ``times``, the innermost range open at that time
    (bounds inclusive; a range without an end stays open)."""
    events = []
    for rid, start, end in zip(ranges["range_id"], ranges["start"], ranges["end"]):
        stop = float("inf") if pd.isna(end) else end
        events.append((start, 0, -stop, rid))  # outer (longer) ranges open first
        events.append((stop, 2, -start, rid))  # inner (later) ranges close first
    events.extend((t, 1, 0, key) for key, t in times.items())
    levels, enclosing, stack = {}, {}, []
    for _, phase, _, ident in sorted(events, key=lambda e: e[:3]):
        if phase == 0:
            levels[ident] = len(stack)
            stack.append(ident)
        elif phase == 2:
            stack.remove(ident)  # range ids are unique
        else:
            enclosing[ident] = stack[-1] if stack else pd.NA
    return levels, enclosing


def _nesting_levels(ranges: pd.DataFrame) -> pd.Series:
    levels = pd.Series(pd.NA, index=ranges.index, dtype="Int64")
    push_pop = ranges[ranges["kind"] == PUSH_POP]
    for _, thread in push_pop.groupby("global_tid"):
        found, _ = _sweep_thread(thread, pd.Series(dtype="Int64"))
        levels[thread.index] = thread["range_id"].map(found)
    return levels


def _innermost_ranges(calls: pd.DataFrame, ranges: pd.DataFrame) -> pd.Series:
    """For each call (``launch_global_tid``, ``launch_start``) the id of the innermost push/pop
    range on that thread enclosing its start, or NA."""
    found = pd.Series(pd.NA, index=calls.index, dtype="Int64")
    push_pop = ranges[ranges["kind"] == PUSH_POP]
    located = calls.dropna(subset=["launch_global_tid", "launch_start"])
    for tid, thread_calls in located.groupby("launch_global_tid"):
        _, enclosing = _sweep_thread(push_pop[push_pop["global_tid"] == tid], thread_calls["launch_start"])
        found[thread_calls.index] = pd.Series(enclosing, dtype=object).reindex(thread_calls.index)
    return found


def _launch_calls(activity: pd.DataFrame, runtime: pd.DataFrame) -> pd.DataFrame:
    """``activity`` plus the thread and start of the API call with its correlation id
    (in the same process where both sides know it)."""
    keys = ["correlation_id"]
    if activity["pid"].notna().all() and runtime["pid"].notna().all():
        keys.append("pid")
    calls = runtime.dropna(subset=["correlation_id"]).drop_duplicates(keys)
    calls = calls[keys + ["global_tid", "start"]].rename(
        columns={"global_tid": "launch_global_tid", "start": "launch_start"})
    calls = calls.astype({key: "Int64" for key in keys})
    located = activity.dropna(subset=["correlation_id"])
    located = located.astype({key: "Int64" for key in keys}).merge(calls, on=keys, how="left")
    return pd.concat([located, activity[activity["correlation_id"].isna()]], ignore_index=True)


def attribute(activity: pd.DataFrame, runtime: pd.DataFrame, ranges: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``activity`` (kernels or memcpys) joined, through the correlation id of the API
    call that launched them, to the innermost NVTX push/pop range on that call's thread
    enclosing the call's start. Adds :data:`ATTRIBUTION_FIELDS` (NA outside any range)."""
    calls = _launch_calls(activity, runtime)
    calls["range_id"] = _innermost_ranges(calls, ranges)
    info = ranges[["range_id", "name", "domain", "payload", "level"]].rename(
        columns={"name": "range_name", "domain": "range_domain", "payload": "range_payload",
                 "level": "range_level"})
    joined = calls.merge(info, on="range_id", how="left") if len(info) else calls.assign(
        **{c: pd.NA for c in info.columns if c != "range_id"})
    joined = joined.sort_values("start", kind="stable").reset_index(drop=True)
    return joined[list(activity.columns) + ATTRIBUTION_FIELDS]


# --------------------------------------------------------------------------- load

def _read_sqlite(sqlite: Path, shown: Path) -> Trace:
    try:
        with contextlib.closing(_connect(sqlite)) as con:
            db = _Export(con, shown)
            db.check()
            kernels, runtime = _read_kernels(db), _read_runtime(db)
            ranges, memcpy = _read_ranges(db), _read_memcpy(db)
    except sqlite3.Error as exc:
        raise InputError(f"{shown}: not a readable Nsight Systems SQLite export ({exc})") from exc
    return Trace(path=shown, kernels=kernels, ranges=ranges, runtime=runtime, memcpy=memcpy,
                 kernel_ranges=attribute(kernels, runtime, ranges))


def load(path: str | os.PathLike) -> Trace:
    """Load an nsys ``.sqlite`` export, or a ``.nsys-rep`` report (exported with
    ``nsys export --type sqlite`` into a temporary folder)."""
    if pd is None:
        raise UnavailableError("reading Nsight Systems traces needs pandas (pip install pandas)")
    path = Path(path)
    _require_file(path)
    if path.suffix != ".nsys-rep":
        return _read_sqlite(path, path)
    with tempfile.TemporaryDirectory(prefix="nqprof-trace-") as tmp:
        sqlite = export_sqlite(path, Path(tmp) / f"{path.stem}.sqlite")
        return _read_sqlite(sqlite, path)


# --------------------------------------------------------------------------- summary

def _dims(frame: pd.DataFrame, prefix: str) -> pd.Series:
    parts = [frame[f"{prefix}_{axis}"].astype(object).map(str) for axis in "xyz"]
    return parts[0] + "x" + parts[1] + "x" + parts[2]


def _distinct(values: pd.Series) -> str:
    return " ".join(dict.fromkeys(values))


def _plain(value):
    """A JSON-ready scalar: NA -> None, numpy scalars -> Python ones."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _range_groups(ranges: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """Ranges grouped by (domain, name, payload) in order of first start: the groups
    (count, total duration) and each range id's group number."""
    keys = list(zip(ranges["domain"], ranges["name"], [_plain(p) for p in ranges["payload"]]))
    numbers: dict[tuple, int] = {}
    group = pd.Series([numbers.setdefault(k, len(numbers)) for k in keys], index=ranges.index, dtype="Int64")
    groups = pd.DataFrame({field: pd.Series([key[i] for key in numbers], dtype=object)
                           for i, field in enumerate(["domain", "range", "payload"])})
    by_group = ranges["duration_ns"].groupby(group)
    groups["range_count"] = by_group.size().reindex(groups.index).astype("Int64")
    groups["range_ns"] = by_group.sum(min_count=1).reindex(groups.index).astype("Int64")
    return groups, pd.Series(group.values, index=ranges["range_id"].values)


def _group_of(attributed: pd.DataFrame, group_by_range: pd.Series) -> pd.Series:
    """The range group of attributed rows; -1 for rows outside any range."""
    return attributed["range_id"].map(group_by_range).fillna(-1).astype(int)


def _kernel_stats(kernel_ranges: pd.DataFrame, group: pd.Series) -> pd.DataFrame:
    frame = kernel_ranges.assign(group=group, grid=_dims(kernel_ranges, "grid"),
                                 block=_dims(kernel_ranges, "block"))
    stats = frame.groupby(["group", "name"], sort=False, dropna=False).agg(
        launches=("duration_ns", "size"), kernel_total_ns=("duration_ns", "sum"),
        kernel_mean_ns=("duration_ns", "mean"), grid=("grid", _distinct), block=("block", _distinct))
    return stats.reset_index().rename(columns={"name": "kernel"})


def _memcpy_stats(memcpy_ranges: pd.DataFrame, group: pd.Series) -> pd.DataFrame:
    stats = memcpy_ranges.assign(group=group).groupby("group").agg(
        memcpy_count=("duration_ns", "size"), memcpy_bytes=("bytes", "sum"), memcpy_ns=("duration_ns", "sum"))
    return stats.reset_index()


def summary(trace: Trace) -> pd.DataFrame:
    """One row per (NVTX range group, kernel name): ranges grouped by (domain, name, payload)
    with their count and total own duration, then per kernel launched inside (innermost range)
    its launches, total and mean time, grids and blocks; the group's memcpys (count, bytes,
    time) repeat on each of its rows. A group without kernels has one row with kernel NA;
    kernels and copies outside any range form a last group whose range is
    :data:`OUTSIDE`. Columns: :data:`SUMMARY_FIELDS`."""
    groups, group_by_range = _range_groups(trace.ranges)
    memcpy_ranges = attribute(trace.memcpy, trace.runtime, trace.ranges)
    kernels = _kernel_stats(trace.kernel_ranges, _group_of(trace.kernel_ranges, group_by_range))
    copies = _memcpy_stats(memcpy_ranges, _group_of(memcpy_ranges, group_by_range))
    if (kernels["group"] == -1).any() or (copies["group"] == -1).any():
        outside = pd.DataFrame([{"domain": None, "range": OUTSIDE, "payload": None}], index=[-1])
        groups = pd.concat([groups, outside])
    groups = groups.rename_axis("group").reset_index()
    table = groups.merge(kernels, on="group", how="left").merge(copies, on="group", how="left")
    table["memcpy_count"] = table["memcpy_count"].fillna(0).astype("Int64")
    table["memcpy_bytes"] = table["memcpy_bytes"].fillna(0).astype("Int64")
    table["memcpy_ns"] = table["memcpy_ns"].fillna(0).astype("Int64")
    for column in ("launches", "kernel_total_ns", "range_count", "range_ns"):
        table[column] = table[column].astype("Int64")
    return table[SUMMARY_FIELDS]


def summary_records(trace: Trace) -> list[dict]:
    """:func:`summary` as JSON-ready dicts, one per range group, its kernels nested."""
    rows = [{k: _plain(v) for k, v in row.items()} for row in summary(trace).to_dict("records")]
    records: list[dict] = []
    for (domain, name, payload), group in itertools.groupby(
            rows, key=lambda r: (r["domain"], r["range"], r["payload"])):
        group = list(group)
        first = group[0]
        records.append({
            "domain": domain, "name": name, "payload": payload,
            "count": first["range_count"], "duration_ns": first["range_ns"],
            "kernels": [{"name": r["kernel"], "launches": r["launches"], "total_ns": r["kernel_total_ns"],
                         "mean_ns": r["kernel_mean_ns"], "grid": r["grid"], "block": r["block"]}
                        for r in group if r["kernel"] is not None],
            "memcpy": {"count": first["memcpy_count"], "bytes": first["memcpy_bytes"],
                       "duration_ns": first["memcpy_ns"]},
        })
    return records


def _fmt_ns(ns) -> str:
    if ns is None or pd.isna(ns):
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.1f} {unit}"
    return f"{ns:.0f} ns"


def _fmt_bytes(count) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def _group_title(record: dict) -> str:
    if record["domain"] is None:
        return record["name"]
    payload = "" if record["payload"] is None else f" payload={record['payload']}"
    count = record["count"]
    total = record["duration_ns"]
    times = f"{count} ranges, {_fmt_ns(total)} total, mean {_fmt_ns(total / count)}" if count > 1 else _fmt_ns(
        total)
    return f"{record['domain']} / {record['name']}{payload}: {times}"


def _kernel_lines(kernels: list[dict], width: int) -> list[str]:
    if not kernels:
        return ["    (no kernels)"]
    return [f"    {k['name']:<{width}} {k['launches']:>7}x  total {_fmt_ns(k['total_ns']):>10}"
            f"  mean {_fmt_ns(k['mean_ns']):>10}  grid {k['grid']}  block {k['block']}" for k in kernels]


def _memcpy_line(memcpy: dict) -> list[str]:
    if not memcpy["count"]:
        return []
    return [f"    memcpy {memcpy['count']}x  {_fmt_bytes(memcpy['bytes'])}  {_fmt_ns(memcpy['duration_ns'])}"]


def breakdown(trace: Trace) -> str:
    """A text report of :func:`summary`: one block per NVTX range group."""
    records = summary_records(trace)
    width = max([len(str(k["name"])) for r in records for k in r["kernels"]] + [6])
    lines = [f"{trace.path.name}: {len(trace.kernels)} kernels, {len(trace.ranges)} NVTX ranges, "
             f"{len(trace.memcpy)} memcpys (device-launched child grids are not traced: a parent kernel's "
             f"row ends before its children do; the generation's range holds the whole tree)"]
    for record in records:
        lines += ["", _group_title(record), *_kernel_lines(record["kernels"], width),
                  *_memcpy_line(record["memcpy"])]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- Chrome trace

GPU_PID_BASE = 0x7F000000  # above any Linux pid: GPU tracks never collide with processes


def _us(ns, origin: int) -> float:
    return (ns - origin) / 1000.0


def _complete(name, category, start, end, pid, tid, origin, args) -> dict:
    return {"name": name, "cat": category, "ph": "X", "ts": _us(start, origin),
            "dur": (end - start) / 1000.0, "pid": int(pid), "tid": int(tid),
            "args": {k: _plain(v) for k, v in args.items()}}


def _trace_bounds(trace: Trace) -> tuple[int, int]:
    frames = [f for f in (trace.kernels, trace.ranges, trace.runtime, trace.memcpy) if len(f)]
    starts = [f["start"].min() for f in frames]
    ends = [f["end"].max() for f in frames]
    return (int(min(starts)) if starts else 0), int(max([e for e in ends if not pd.isna(e)], default=0))


def _range_events(ranges: pd.DataFrame, origin: int, last: int) -> list[dict]:
    """Push/pop ranges as complete events on their thread; start/end ranges (which need not
    nest) as async begin/end pairs. A range never closed runs to the end of the trace."""
    events = []
    for r in ranges.itertuples():
        end = last if pd.isna(r.end) else r.end
        args = {"domain": r.domain, "payload": r.payload, "level": r.level, "open": pd.isna(r.end)}
        event = _complete(r.name, r.domain, r.start, end, r.pid, r.tid, origin, args)
        if r.kind == START_END:
            event.update(ph="b", id=int(r.range_id))
            del event["dur"]
            events += [event, {**event, "ph": "e", "ts": _us(end, origin), "args": {}}]
        else:
            events.append(event)
    return events


def _kernel_events(kernel_ranges: pd.DataFrame, origin: int) -> list[dict]:
    frame = kernel_ranges.assign(grid=_dims(kernel_ranges, "grid"), block=_dims(kernel_ranges, "block"))
    return [_complete(k.name, "kernel", k.start, k.end, GPU_PID_BASE + k.device, k.stream, origin,
                      {"grid": k.grid, "block": k.block, "correlation_id": k.correlation_id,
                       "registers": k.registers, "nvtx_range": k.range_name, "payload": k.range_payload})
            for k in frame.itertuples()]


def _memcpy_events(memcpy: pd.DataFrame, origin: int) -> list[dict]:
    return [_complete(f"memcpy {m.kind}", "memcpy", m.start, m.end, GPU_PID_BASE + m.device, m.stream,
                      origin, {"bytes": m.bytes, "kind": m.kind, "correlation_id": m.correlation_id})
            for m in memcpy.itertuples()]


def _api_events(runtime: pd.DataFrame, origin: int) -> list[dict]:
    return [_complete(c.name, "cuda_api", c.start, c.end, c.pid, c.tid, origin,
                      {"correlation_id": c.correlation_id}) for c in runtime.itertuples()]


def _track_names(trace: Trace) -> list[dict]:
    """Metadata events naming the GPU processes and stream threads."""
    gpu = pd.concat([trace.kernels[["device", "stream"]], trace.memcpy[["device", "stream"]]]).dropna()
    events = []
    for device in sorted(set(gpu["device"])):
        events.append({"name": "process_name", "ph": "M", "pid": GPU_PID_BASE + int(device),
                       "args": {"name": f"GPU {device}"}})
    for device, stream in sorted(set(zip(gpu["device"], gpu["stream"]))):
        events.append({"name": "thread_name", "ph": "M", "pid": GPU_PID_BASE + int(device),
                       "tid": int(stream), "args": {"name": f"stream {stream}"}})
    return events


def to_chrome(trace: Trace, path: str | os.PathLike) -> Path:
    """Write ``trace`` as Chrome trace-event JSON (Perfetto, chrome://tracing): NVTX ranges
    and CUDA API calls on their host thread, kernels and memcpys on one track per CUDA
    stream; times in microseconds from the trace's first event."""
    origin, last = _trace_bounds(trace)
    events = [*_track_names(trace), *_range_events(trace.ranges, origin, last),
              *_api_events(trace.runtime, origin), *_kernel_events(trace.kernel_ranges, origin),
              *_memcpy_events(trace.memcpy, origin)]
    document = {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"source": str(trace.path), "origin_ns": origin}}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, allow_nan=False))
    return path


# --------------------------------------------------------------------------- running nsys

def _version_key(path: str) -> list:
    """Natural sort key, so that 2025.10 sorts after 2025.3."""
    return [(int(part), "") if part.isdigit() else (-1, part) for part in re.split(r"(\d+)", path)]


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_nsys() -> Path:
    """The ``nsys`` executable: ``$NQPROF_NSYS``, else ``nsys`` on PATH, else the newest one in
    the usual install locations (:data:`NSYS_GLOBS`)."""
    configured = os.environ.get(NSYS_ENV)
    if configured:
        path = Path(configured).expanduser()
        if not _is_executable(path):
            raise UnavailableError(f"{NSYS_ENV}={configured} is not an executable file")
        return path
    on_path = shutil.which("nsys")
    if on_path:
        return Path(on_path)
    for pattern in NSYS_GLOBS:
        for candidate in sorted(glob.glob(pattern), key=_version_key, reverse=True):
            if _is_executable(Path(candidate)):
                return Path(candidate)
    raise UnavailableError(f"nsys (Nsight Systems) not found: searched ${NSYS_ENV}, PATH and "
                           f"{', '.join(NSYS_GLOBS)}")


def _nsys(nsys: str | os.PathLike | None) -> Path:
    if nsys is None:
        return find_nsys()
    path = Path(nsys).expanduser()
    if not _is_executable(path):
        raise InputError(f"{path}: not an executable nsys")
    return path


def _run(command: list[str], echo: bool) -> tuple[int, list[str]]:
    """Run ``command``, stdout and stderr merged; echo them to our stderr if asked.
    Returns the exit status and the last :data:`OUTPUT_TAIL_LINES` lines."""
    tail: collections.deque[str] = collections.deque(maxlen=OUTPUT_TAIL_LINES)
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace")
    except OSError as exc:
        raise UnavailableError(f"cannot run {command[0]}: {exc.strerror or exc}") from exc
    with process:
        for line in process.stdout:
            tail.append(line.rstrip("\n"))
            if echo:
                sys.stderr.write(line)
    return process.returncode, list(tail)


def _failure(what: str, status: int, tail: list[str]) -> ProfileError:
    shown = " | ".join(line.strip() for line in tail[-MESSAGE_TAIL_LINES:] if line.strip()) or "no output"
    return ProfileError(f"{what} failed (exit status {status}): {shown}", tail)


def export_sqlite(report: str | os.PathLike, output: str | os.PathLike,
                  nsys: str | os.PathLike | None = None) -> Path:
    """``nsys export --type sqlite`` of ``report`` to ``output``; returns ``output``."""
    report, output = Path(report), Path(output)
    _require_file(report)
    command = [str(_nsys(nsys)), "export", "--type", "sqlite", "--force-overwrite", "true",
               "-o", str(output), str(report)]
    status, tail = _run(command, echo=False)
    if status != 0 or not output.is_file():
        raise _failure(f"nsys export of {report}", status, tail)
    return output


def _prefix(output: str | os.PathLike) -> Path:
    """The report prefix nsys is given: ``output`` without a .nsys-rep/.sqlite suffix."""
    output = Path(output)
    return output.with_suffix("") if output.suffix in (".nsys-rep", ".sqlite") else output


def _sibling(prefix: Path, suffix: str) -> Path:
    return prefix.with_name(prefix.name + suffix)


def profile(argv: Sequence[str], output: str | os.PathLike, trace: str = "cuda,nvtx", *,
            nsys: str | os.PathLike | None = None, echo: bool = True) -> Path:
    """Run ``argv`` under ``nsys profile -t <trace>``, writing ``<output>.nsys-rep`` and its
    SQLite export ``<output>.sqlite`` (returned). The command's output is echoed to stderr
    when ``echo``; a failure raises :class:`ProfileError` carrying nsys's last lines."""
    if not argv:
        raise InputError("nothing to profile: give a command")
    executable = _nsys(nsys)
    prefix = _prefix(output)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    command = [str(executable), "profile", "-t", trace, "-o", str(prefix), "-f", "true",
               "--export", "sqlite", *argv]
    status, tail = _run(command, echo)
    if status != 0:
        raise _failure(f"nsys profile of {' '.join(argv)}", status, tail)
    sqlite = _sibling(prefix, ".sqlite")
    if not sqlite.is_file():
        report = _sibling(prefix, ".nsys-rep")
        if not report.is_file():
            raise _failure(f"nsys profile of {' '.join(argv)} wrote no report", status, tail)
        export_sqlite(report, sqlite, executable)
    return sqlite
