"""Aggregating an attributed trace per NVTX range group: :func:`summary` (a frame),
:func:`summary_records` and the text :func:`breakdown`."""

from __future__ import annotations

import itertools

from nqprof.textfmt import nanoseconds, nbytes

from .attribution import attribute
from .schema import GRAPH_PREFIX, OUTSIDE, SUMMARY_FIELDS, Trace, pd

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
    keys = list(
        zip(ranges["domain"], ranges["name"], [_plain(p) for p in ranges["payload"]], strict=True)
    )
    numbers: dict[tuple, int] = {}
    group = pd.Series(
        [numbers.setdefault(k, len(numbers)) for k in keys], index=ranges.index, dtype="Int64"
    )
    groups = pd.DataFrame(
        {
            field: pd.Series([key[i] for key in numbers], dtype=object)
            for i, field in enumerate(["domain", "range", "payload"])
        }
    )
    by_group = ranges["duration_ns"].groupby(group)
    groups["range_count"] = by_group.size().reindex(groups.index).astype("Int64")
    groups["range_ns"] = by_group.sum(min_count=1).reindex(groups.index).astype("Int64")
    return groups, pd.Series(group.values, index=ranges["range_id"].values)


def _group_of(attributed: pd.DataFrame, group_by_range: pd.Series) -> pd.Series:
    """The range group of attributed rows; -1 for rows outside any range."""
    return attributed["range_id"].map(group_by_range).fillna(-1).astype(int)


def _kernel_stats(kernel_ranges: pd.DataFrame, group: pd.Series) -> pd.DataFrame:
    frame = kernel_ranges.assign(
        group=group, grid=_dims(kernel_ranges, "grid"), block=_dims(kernel_ranges, "block")
    )
    stats = frame.groupby(["group", "name"], sort=False, dropna=False).agg(
        launches=("duration_ns", "size"),
        kernel_total_ns=("duration_ns", "sum"),
        kernel_mean_ns=("duration_ns", "mean"),
        grid=("grid", _distinct),
        block=("block", _distinct),
    )
    return stats.reset_index().rename(columns={"name": "kernel"})


def _memcpy_stats(memcpy_ranges: pd.DataFrame, group: pd.Series) -> pd.DataFrame:
    stats = (
        memcpy_ranges.assign(group=group)
        .groupby("group")
        .agg(
            memcpy_count=("duration_ns", "size"),
            memcpy_bytes=("bytes", "sum"),
            memcpy_ns=("duration_ns", "sum"),
        )
    )
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
        rows, key=lambda r: (r["domain"], r["range"], r["payload"])
    ):
        group = list(group)
        first = group[0]
        records.append(
            {
                "domain": domain,
                "name": name,
                "payload": payload,
                "count": first["range_count"],
                "duration_ns": first["range_ns"],
                "kernels": [
                    {
                        "name": r["kernel"],
                        "launches": r["launches"],
                        "total_ns": r["kernel_total_ns"],
                        "mean_ns": r["kernel_mean_ns"],
                        "grid": r["grid"],
                        "block": r["block"],
                    }
                    for r in group
                    if r["kernel"] is not None
                ],
                "memcpy": {
                    "count": first["memcpy_count"],
                    "bytes": first["memcpy_bytes"],
                    "duration_ns": first["memcpy_ns"],
                },
            }
        )
    return records


def _group_title(record: dict) -> str:
    if record["domain"] is None:
        return record["name"]
    payload = "" if record["payload"] is None else f" payload={record['payload']}"
    count = record["count"]
    total = record["duration_ns"]
    times = (
        f"{count} ranges, {nanoseconds(total)} total, mean {nanoseconds(total / count)}"
        if count > 1
        else nanoseconds(total)
    )
    return f"{record['domain']} / {record['name']}{payload}: {times}"


def _kernel_lines(kernels: list[dict], width: int) -> list[str]:
    if not kernels:
        return ["    (no kernels)"]
    return [
        f"    {k['name']:<{width}} {k['launches']:>7}x  total {nanoseconds(k['total_ns']):>10}"
        f"  mean {nanoseconds(k['mean_ns']):>10}"
        + ("" if "<NA>" in str(k["grid"]) else f"  grid {k['grid']}  block {k['block']}")
        for k in kernels
    ]


def _memcpy_line(memcpy: dict) -> list[str]:
    if not memcpy["count"]:
        return []
    return [
        f"    memcpy {memcpy['count']}x  {nbytes(memcpy['bytes'])}  "
        f"{nanoseconds(memcpy['duration_ns'])}"
    ]


#: What a trace with NVTX ranges and no CUDA activity says of itself.
NO_CUDA_WARNING = (
    "likely broken: NVTX ranges but no CUDA kernels, graph executions or copies (the profiler "
    "did not write out "
    "the CUDA activity of the process that ran them)"
)


def contents(trace: Trace) -> dict:
    """How many kernels, copies and NVTX ranges ``trace`` holds, and ``warning`` where that
    looks broken (ranges, so something ran, but no CUDA activity at all)."""
    graphs = int(trace.kernels["name"].astype(str).str.startswith(GRAPH_PREFIX).sum())
    counts = {
        "kernels": len(trace.kernels) - graphs,
        "graphs": graphs,
        "memcpys": len(trace.memcpy),
        "nvtx_ranges": len(trace.ranges),
    }
    cuda = counts["kernels"] or counts["graphs"] or counts["memcpys"]
    broken = counts["nvtx_ranges"] and not cuda
    return {**counts, "warning": NO_CUDA_WARNING if broken else None}


def breakdown(trace: Trace) -> str:
    """A text report of :func:`summary`: one block per NVTX range group."""
    records = summary_records(trace)
    width = max([len(str(k["name"])) for r in records for k in r["kernels"]] + [6])
    held = contents(trace)
    lines = [
        f"{trace.path.name}: {held['kernels']} kernels, {held['graphs']} graph executions, "
        f"{held['nvtx_ranges']} NVTX ranges, {held['memcpys']} memcpys (device-launched child "
        "grids are not traced: a parent kernel's row ends before its children do; the "
        "generation's range holds the whole tree; a graph's kernels are its row)"
    ]
    if held["warning"]:
        lines.append(f"WARNING: {trace.path.name}: {held['warning']}")
    for record in records:
        lines += [
            "",
            _group_title(record),
            *_kernel_lines(record["kernels"], width),
            *_memcpy_line(record["memcpy"]),
        ]
    return "\n".join(lines) + "\n"
