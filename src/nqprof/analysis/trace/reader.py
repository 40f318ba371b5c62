"""Reading an nsys SQLite export (or a ``.nsys-rep`` report, exported on the fly) into
pandas frames: kernels, CUDA runtime calls, memcpys and NVTX ranges; :func:`load`."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

from nqprof.errors import InputError, UnavailableError
from nqprof.textfmt import plural

from .attribution import _nesting_levels, attribute
from .nsys import export_sqlite
from .schema import (
    _ID_BITS,
    DEFAULT_DOMAIN,
    DOMAIN_CREATE_EVENTS,
    EVENT_TYPE_ENUM,
    GRAPH_COLUMNS,
    GRAPH_ROW,
    GRAPH_TABLE,
    KERNEL_COLUMNS,
    KERNEL_FIELDS,
    KERNEL_TABLE,
    MEMCPY_COLUMNS,
    MEMCPY_FIELDS,
    MEMCPY_KIND_ENUM,
    MEMCPY_TABLE,
    NVTX_COLUMNS,
    NVTX_TABLE,
    PAYLOAD_COLUMNS,
    PUSH_POP,
    PUSH_POP_EVENTS,
    RANGE_FIELDS,
    RUNTIME_COLUMNS,
    RUNTIME_FIELDS,
    RUNTIME_TABLE,
    START_END,
    START_END_EVENTS,
    STRINGS_TABLE,
    UNSIGNED_PAYLOADS,
    Trace,
    pd,
    require_file,
)

# --------------------------------------------------------------------------- reading the export


class _Export:
    """Schema-aware reads from one open nsys SQLite export."""

    def __init__(self, con: sqlite3.Connection, shown: Path):
        self.con = con
        self.shown = shown
        self.tables = {
            row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        self._strings: dict[int, str] | None = None

    def check(self) -> None:
        if STRINGS_TABLE not in self.tables:
            raise InputError(
                f"{self.shown}: not an Nsight Systems SQLite export (no {STRINGS_TABLE} table)"
            )

    def column_types(self, table: str) -> dict[str, str]:
        return {
            row[1]: (row[2] or "").upper()
            for row in self.con.execute(f'PRAGMA table_info("{table}")')
        }

    def select(
        self, table: str, spec: Mapping[str, str], required: Iterable[str] = ()
    ) -> pd.DataFrame:
        """Columns ``spec`` (output name -> source column) of ``table``; absent ones read as NA,
        an absent table as an empty frame. A missing ``required`` column is an InputError."""
        types = self.column_types(table) if table in self.tables else {}
        missing = [spec[out] for out in required if types and spec[out] not in types]
        if missing:
            raise InputError(
                f"{self.shown}: table {table} lacks {plural(len(missing), 'column')}: "
                f"{', '.join(missing)}"
            )
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
        return [
            row[0]
            for row in self.con.execute(f'SELECT id FROM "{table}" WHERE name IN ({marks})', wanted)
        ]

    def enum_labels(self, table: str) -> dict[int, str]:
        if table not in self.tables:
            return {}
        columns = self.column_types(table)
        label = "label" if "label" in columns else "name"
        return dict(self.con.execute(f'SELECT id, "{label}" FROM "{table}"'))


def _typed_frame(rows: list[tuple], names: list[str], sql_types: list[str]) -> pd.DataFrame:
    """A frame from SQLite rows: INTEGER columns as nullable Int64 (exact, NA-aware),
    REAL as float64, anything else as objects."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(names)
    data = {}
    for name, values, sql_type in zip(names, columns, sql_types, strict=True):
        if "INT" in sql_type:
            data[name] = pd.array(values, dtype="Int64")
        elif sql_type in ("REAL", "FLOAT", "DOUBLE"):
            data[name] = pd.array(
                [float("nan") if v is None else v for v in values], dtype="float64"
            )
        else:
            data[name] = pd.array(values, dtype=object)
    return pd.DataFrame(data, index=pd.RangeIndex(len(rows)))


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


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
    frame = raw.assign(
        name=short.where(short.notna(), demangled),
        demangled_name=demangled,
        pid=_pid(raw["global_pid"]),
    )
    return _by_start(_with_duration(frame), KERNEL_FIELDS)


def _read_graphs(db: _Export) -> pd.DataFrame:
    """Each CUDA graph execution as a row in the kernels' shape (``name`` "graph <id>", no
    grid or block): what a graph ran, its kernels having no rows of their own."""
    raw = db.select(GRAPH_TABLE, GRAPH_COLUMNS, required=("start", "end"))
    names = raw["graph_id"].map(lambda g: GRAPH_ROW.format(graph_id=g))
    frame = raw.assign(name=names, demangled_name=names, pid=_pid(raw["global_pid"]))
    for field in KERNEL_FIELDS:
        if field not in frame:
            frame[field] = pd.Series(pd.NA, index=frame.index, dtype=object)
    return _by_start(_with_duration(frame), KERNEL_FIELDS)


def _read_runtime(db: _Export) -> pd.DataFrame:
    raw = db.select(RUNTIME_TABLE, RUNTIME_COLUMNS, required=("start", "end", "correlation_id"))
    frame = raw.assign(
        name=raw["name_id"].map(db.strings(), na_action="ignore"),
        pid=_pid(raw["global_tid"]),
        tid=_tid(raw["global_tid"]),
    )
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
            values = values.map(lambda v, wrap=wrap: v + wrap if v < 0 else v, na_action="ignore")
        fill = payload.isna() & values.notna()
        payload[fill] = values[fill]
    return payload


def _domain_names(raw: pd.DataFrame, text: pd.Series, create_ids: list[int]) -> pd.Series:
    """Each event's domain name, resolved through the domain-registration rows of its process."""
    created = raw["event_type"].isin(create_ids) & raw["domain_id"].notna()
    pids = _pid(raw["global_tid"])
    by_process = {
        (p, d): t
        for p, d, t in zip(pids[created], raw["domain_id"][created], text[created], strict=True)
    }
    by_id = {d: t for (_, d), t in by_process.items()}

    def name(pid, domain_id):
        if pd.isna(domain_id) or domain_id == 0:
            return DEFAULT_DOMAIN
        return by_process.get((pid, domain_id), by_id.get(domain_id, f"domain {domain_id}"))

    return pd.Series(
        [name(p, d) for p, d in zip(pids, raw["domain_id"], strict=True)],
        index=raw.index,
        dtype=object,
    )


def _read_ranges(db: _Export) -> pd.DataFrame:
    if NVTX_TABLE in db.tables and EVENT_TYPE_ENUM not in db.tables:
        warnings.warn(f"{db.shown}: no {EVENT_TYPE_ENUM} table, NVTX ranges left out", stacklevel=3)
    push_pop = db.enum_ids(EVENT_TYPE_ENUM, PUSH_POP_EVENTS)
    start_end = db.enum_ids(EVENT_TYPE_ENUM, START_END_EVENTS)
    creates = db.enum_ids(EVENT_TYPE_ENUM, DOMAIN_CREATE_EVENTS)
    raw = db.select(NVTX_TABLE, NVTX_COLUMNS, required=("start", "event_type"))
    text = _nvtx_text(raw, db.strings())
    frame = raw.assign(
        name=text,
        domain=_domain_names(raw, text, creates),
        payload=_payloads(raw),
        pid=_pid(raw["global_tid"]),
        tid=_tid(raw["global_tid"]),
    )
    frame = frame[frame["event_type"].isin(push_pop + start_end)]
    frame = frame.assign(
        kind=frame["event_type"].map(lambda t: PUSH_POP if t in push_pop else START_END)
    )
    frame = _by_start(
        _with_duration(frame), [f for f in RANGE_FIELDS if f not in ("range_id", "level")]
    )
    frame.insert(0, "range_id", pd.array(range(len(frame)), dtype="Int64"))
    return frame.assign(level=_nesting_levels(frame))[RANGE_FIELDS]


# --------------------------------------------------------------------------- load


def _read_sqlite(sqlite: Path, shown: Path) -> Trace:
    try:
        with contextlib.closing(_connect(sqlite)) as con:
            db = _Export(con, shown)
            db.check()
            kernels, runtime = _read_kernels(db), _read_runtime(db)
            graphs = _read_graphs(db)
            if len(graphs):
                both = [f for f in (kernels, graphs) if len(f)]
                kernels = _by_start(pd.concat(both, ignore_index=True), KERNEL_FIELDS)
            ranges, memcpy = _read_ranges(db), _read_memcpy(db)
    except sqlite3.Error as exc:
        raise InputError(f"{shown}: not a readable Nsight Systems SQLite export ({exc})") from exc
    return Trace(
        path=shown,
        kernels=kernels,
        ranges=ranges,
        runtime=runtime,
        memcpy=memcpy,
        kernel_ranges=attribute(kernels, runtime, ranges),
    )


def load(path: str | os.PathLike) -> Trace:
    """Load an nsys ``.sqlite`` export, or a ``.nsys-rep`` report (exported with
    ``nsys export --type sqlite`` into a temporary folder)."""
    if pd is None:
        raise UnavailableError("reading Nsight Systems traces needs pandas (pip install pandas)")
    path = Path(path)
    require_file(path)
    if path.suffix != ".nsys-rep":
        return _read_sqlite(path, path)
    with tempfile.TemporaryDirectory(prefix="nqprof-trace-") as tmp:
        sqlite = export_sqlite(path, Path(tmp) / f"{path.stem}.sqlite")
        return _read_sqlite(sqlite, path)
