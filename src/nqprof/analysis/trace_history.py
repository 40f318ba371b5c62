"""Nsight traces in the benchmark history: what ``pytest --nq-trace`` stored with each case,
read back from :func:`nqprof.analysis.history.load_history`'s frame and compared run to run.

A traced case's ``extra_info["trace"]`` (columns ``extra.trace.*``) holds ``file`` (the
SQLite export, relative to the saved JSON's folder or absolute), ``rounds`` (rounds of the
profiled child: a warm-up and one round) and ``ranges``: per NVTX range group, its count
and total duration, its kernels (launches, total and mean time) and memory copies, as
:func:`nqprof.analysis.trace.summary_records` gives them. A case without a trace has
``missing``: why. A CDP strategy that keeps a device timeline (dp2, dp3, dpswap) also has
``device``: its child grids per generation from a run with ``timeline=1``
(:func:`device_ranges`), compared the same way. Times are compared per round: a range's
mean duration, a kernel's time and launches per occurrence of its range.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from ..cuda.device import HOLD_KERNEL
from .history import CASE_COLUMNS, missing, resolve_run
from .stats import MIN_EFFECT

#: The "kernel" of a range's memory copies in :func:`per_round` (launches: how many copies).
MEMCPY = "(memcpy)"
#: The columns of :func:`trace_changes`.
CHANGE_COLUMNS = [
    *CASE_COLUMNS,
    "range",
    "kernel",
    "a_ns",
    "b_ns",
    "launches_a",
    "launches_b",
    "change_pct",
]


def _value(row: dict[str, Any], key: str):
    value = row.get(key)
    return None if missing(value) else value


def range_label(name: str, strategy: str | None, n) -> str:
    """``dp3 N=13 generation 1`` -> ``generation 1``: the case is named already."""
    prefix = f"{strategy} N={n} "
    return name[len(prefix) :] if strategy and name and name.startswith(prefix) else str(name)


#: The domain of the device-timeline groups (CDP grids that Nsight Systems does not see).
DEVICE_DOMAIN = "device timeline"
#: The "kernel" of a device-timeline group: its grids, their durations summed.
DEVICE_GRIDS = "grids (device)"


def device_ranges(timeline: dict[str, Any]) -> list[dict[str, Any]]:
    """A CDP run's device timeline (``timeline=1``; the run record's ``timeline``: one record
    per grid) in the form of the trace summary's range groups, one per generation: the
    generation's span (first grid's start to last grid's end) as its range, its grids as one
    "kernel" (how many, their durations summed and averaged), their boards."""
    grids = (timeline or {}).get("grids") or {}
    by_gen: dict[int, list[tuple[int, int, int]]] = {}
    for gen, start, end, boards in zip(
        grids.get("gen", []),
        grids.get("start", []),
        grids.get("end", []),
        grids.get("boards", []),
        strict=True,
    ):
        if end >= start:
            by_gen.setdefault(int(gen), []).append((int(start), int(end), int(boards)))
    out = []
    for gen in sorted(by_gen):
        rows = by_gen[gen]
        busy = sum(end - start for start, end, _ in rows)
        out.append(
            {
                "domain": DEVICE_DOMAIN,
                "name": f"device generation {gen}",
                "payload": gen,
                "count": 1,
                "duration_ns": max(end for _, end, _ in rows) - min(start for start, _, _ in rows),
                "kernels": [
                    {
                        "name": DEVICE_GRIDS,
                        "launches": len(rows),
                        "total_ns": busy,
                        "mean_ns": busy / len(rows),
                        "grid": None,
                        "block": None,
                    }
                ],
                "memcpy": {"count": 0, "bytes": 0, "duration_ns": 0},
                "boards": sum(b for _, _, b in rows),
            }
        )
    return out


def per_round(
    ranges: list[dict], strategy: str | None = None, n=None
) -> dict[tuple, dict[str, Any]]:
    """``{(range, kernel or None): {"ns": time per round, "launches": per round}}`` of a stored
    summary: a range's own mean duration, each kernel's total and launches divided by its
    range's count (kernels outside any range: as recorded), and the range's memory copies as
    the "kernel" :data:`MEMCPY`."""
    out: dict[tuple, dict[str, Any]] = {}
    for group in ranges or []:
        label = range_label(group.get("name"), strategy, n)
        count = group.get("count") or 1
        if group.get("duration_ns") is not None:
            out[(label, None)] = {"ns": group["duration_ns"] / count, "launches": None}
        for kernel in group.get("kernels") or []:
            out[(label, kernel["name"])] = {
                "ns": (kernel.get("total_ns") or 0) / count,
                "launches": (kernel.get("launches") or 0) / count,
            }
        copies = group.get("memcpy") or {}
        if copies.get("count"):
            out[(label, MEMCPY)] = {
                "ns": (copies.get("duration_ns") or 0) / count,
                "launches": copies["count"] / count,
            }
    return out


def case_traces(df, run: str) -> dict[tuple, dict[str, Any]]:
    """The trace records of one run's nqprof cases, by case (test, strategy, n, params):
    ``{"ranges", "file", "missing"}`` (None where absent)."""
    part = df[(df["run"] == run) & df["strategy"].notna()]
    out = {}
    for row in part.to_dict("records"):
        key = tuple(row[c] for c in CASE_COLUMNS)
        ranges = (_value(row, "extra.trace.ranges") or []) + (
            _value(row, "extra.trace.device") or []
        )
        out[key] = {
            "ranges": ranges or None,
            "file": _value(row, "extra.trace.file"),
            "missing": _value(row, "extra.trace.missing"),
        }
    return out


def trace_changes(df, run_a: str, run_b: str, cases: list[tuple] | None = None):
    """Per case traced in both runs (``cases``: only these), per range and per kernel inside
    it: the time per round in A and in B (ns), launches per round, and the change in percent.
    Ranges or kernels of one run only have the other side NA."""
    import pandas as pd

    a, b = case_traces(df, resolve_run(df, run_a)), case_traces(df, resolve_run(df, run_b))
    rows = []
    for key in a:
        if (
            key not in b
            or not a[key]["ranges"]
            or not b[key]["ranges"]
            or (cases is not None and key not in cases)
        ):
            continue
        strategy, n = key[1], key[2]
        ta, tb = per_round(a[key]["ranges"], strategy, n), per_round(b[key]["ranges"], strategy, n)
        for item in list(ta) + [k for k in tb if k not in ta]:
            ia, ib = ta.get(item), tb.get(item)
            a_ns, b_ns = (ia or {}).get("ns"), (ib or {}).get("ns")
            change = 100.0 * (b_ns - a_ns) / a_ns if a_ns and b_ns is not None else None
            rows.append(
                {
                    **dict(zip(CASE_COLUMNS, key, strict=True)),
                    "range": item[0],
                    "kernel": item[1],
                    "a_ns": a_ns,
                    "b_ns": b_ns,
                    "launches_a": (ia or {}).get("launches"),
                    "launches_b": (ib or {}).get("launches"),
                    "change_pct": change,
                }
            )
    return pd.DataFrame(rows, columns=CHANGE_COLUMNS)


def moved_most(changes, least: float = MIN_EFFECT) -> dict[str, Any] | None:
    """The row of one case's :func:`trace_changes` whose GPU time moved most (absolute): a
    kernel, device grids or a memory copy; not a range such as the build, nor the stream
    hold's kernel, whose times are the host's. A range only where no GPU row is in both
    runs. None if nothing is in both runs, or nothing moved by ``least`` (relative) or more."""
    both = changes[changes["a_ns"].notna() & changes["b_ns"].notna()]
    gpu = both[both["kernel"].notna() & (both["kernel"] != "") & (both["kernel"] != HOLD_KERNEL)]
    pick = gpu if not gpu.empty else both
    pick = pick[(pick["b_ns"] - pick["a_ns"]).abs() >= least * pick["a_ns"]]
    if pick.empty:
        return None
    moved = (pick["b_ns"] - pick["a_ns"]).abs()
    return pick.loc[moved.idxmax()].to_dict()


def run_traces(df) -> dict[str, dict[str, int]]:
    """Per run: how many of its cases carry a trace, and how many say why they have none."""
    out: dict[str, dict[str, int]] = {}
    for run, part in df.groupby("run", sort=False):
        traced = (
            int(part["extra.trace.file"].map(lambda v: not missing(v)).sum())
            if "extra.trace.file" in part
            else 0
        )
        lacking = (
            int(part["extra.trace.missing"].map(lambda v: not missing(v)).sum())
            if "extra.trace.missing" in part
            else 0
        )
        out[run] = {"traced": traced, "missing": lacking}
    return out


def trace_path(storage: str | Path, run: str, file: str) -> Path:
    """Where a stored trace is: ``file`` as recorded, relative to the folder of the run's JSON
    (``run`` is its path under ``storage``) unless absolute."""
    path = Path(file)
    if path.is_absolute():
        return path
    return Path(storage) / PurePosixPath(run).parent / path
