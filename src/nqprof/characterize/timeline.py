"""The device-side timeline of a CDP run's grids, beside the Nsight rows.

On CDP2 Nsight Systems shows the host-launched parent's row but no rows for the grids it
launches from the device. With ``timeline=1`` a CDP strategy's kernels record every grid
(nqprof.strategies.cdp.timeline, kernels/cdp.cuh): generation, the grid and block that
launched it, its boards, and its launch, start and end from the GPU's global timer. This
module measures a run with and without recording (the overhead), turns the records into a
pandas frame and a per-generation table, and writes them as Chrome/Perfetto trace events,
one track per generation, alone or merged into an Nsight trace's export: the clocks are
aligned by putting the host grid's first block start at the start of the root kernel's
Nsight row (the last one, since the records are the last round's).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..files import write_text
from ..textfmt import plural
from . import check_kind, record_machine

KIND = "nqprof-characterize-timeline"
#: The Chrome-trace process of the device timeline (beside nqprof's GPU_PID_BASE + device).
TIMELINE_PID = 0x7E000000
NONE = 0xFFFF_FFFF


def measure(
    strategy: str,
    n: int,
    params: dict[str, Any] | None = None,
    repeats: int = 3,
    warmup: int = 1,
    timeout: float = 300,
    progress=None,
    solve: Callable | None = None,
) -> dict[str, Any]:
    """The run without and with recording (counts verified, medians of ``repeats``); the
    records are those of the last round with recording."""
    from ..strategies import get

    if solve is None:
        from ..runner import solve
    strat = get(strategy)
    if "timeline" not in {p.name for p in strat.params}:
        raise InputError(
            f"strategy {strategy} keeps no device timeline (those that do: dp2, dp3, dpswap)"
        )
    params = dict(params or {})
    runs = {}
    for on in (0, 1):
        if progress is not None:
            progress.case(f"{strategy} N={n} timeline={on}")
        runs[on] = solve(
            strategy, n, {**params, "timeline": on}, repeats=repeats, warmup=warmup, timeout=timeout
        )
    rec = runs[1]
    return {
        "kind": KIND,
        "strategy": strategy,
        "n": n,
        "params": rec.params,
        "machine": record_machine(rec),
        "off": {"gpu_s": runs[0].gpu_s, "gpu_times": runs[0].gpu_times},
        "on": {"gpu_s": rec.gpu_s, "gpu_times": rec.gpu_times},
        "launches": rec.device_failures.get("launches"),
        "generations": rec.generations,
        "root_kernel": next(
            (k["name"] for k in rec.kernels if k.get("name", "").endswith("_root")), None
        ),
        "timeline": rec.timeline,
    }


def load(doc: dict[str, Any]) -> dict[str, Any]:
    check_kind(doc, KIND, "device timeline")
    grids = (doc.get("timeline") or {}).get("grids")
    if not isinstance(grids, dict) or "id" not in grids:
        raise InputError(
            "the device timeline holds no grid records (was the run made with timeline=1?)"
        )
    return doc


def frame(doc: dict[str, Any]):
    """One row per grid that ran: id, generation, parent (grid id; -1 for the host grid),
    parent_block, boards, launched_ns, start_ns, end_ns, duration_ns and wait_ns (launch to
    first block; NaN for the host grid, which the host launched)."""
    import pandas as pd

    g = load(doc)["timeline"]["grids"]
    df = pd.DataFrame(
        {
            "id": g["id"],
            "generation": g["gen"],
            "parent": [-1 if p == NONE else p for p in g["parent"]],
            "parent_block": g["parent_block"],
            "boards": g["boards"],
            "launched_ns": g["launched"],
            "start_ns": g["start"],
            "end_ns": g["end"],
        }
    )
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    df["wait_ns"] = (df["start_ns"] - df["launched_ns"]).where(df["generation"] > 0)
    return df.sort_values(["generation", "start_ns"]).reset_index(drop=True)


def check(doc: dict[str, Any], df) -> list[str]:
    """Problems with the records: dropped or unstarted grids, or fewer device grids than
    the run's accounting counted launches."""
    t = doc["timeline"]
    problems = []
    if t.get("dropped"):
        problems.append(
            f"{plural(t['dropped'], 'grid', fmt=',')} not recorded: "
            f"the buffer held {t['capacity']:,}"
        )
    if t.get("not_started"):
        problems.append(
            f"{plural(t['not_started'], 'record', fmt=',')} of grids that never started "
            "(failed launches)"
        )
    launches = doc.get("launches")
    device_grids = int((df["generation"] > 0).sum())
    if launches is not None and device_grids != launches:
        problems.append(
            f"{device_grids:,} device grids recorded, the accounting counted {launches:,} launches"
        )
    return problems


def overhead(doc: dict[str, Any]) -> float | None:
    """(time with recording - time without) / time without."""
    on, off = doc["on"].get("gpu_s"), doc["off"].get("gpu_s")
    return None if not on or not off else (on - off) / off


def table(doc: dict[str, Any]) -> tuple[list[str], list[list], list[str]]:
    """Per generation: grids, boards, first start and last end after the host grid's start,
    median grid duration and median wait from launch to start."""
    from ..textfmt import nanoseconds

    df = frame(doc)
    origin = (
        int(df.loc[df["generation"] == 0, "start_ns"].min())
        if (df["generation"] == 0).any()
        else int(df["start_ns"].min())
    )
    header = [
        "generation",
        "grids",
        "boards",
        "first start",
        "last end",
        "median grid time",
        "median launch-to-start",
    ]
    rows = []
    for gen, g in df.groupby("generation"):
        wait = g["wait_ns"].dropna()
        rows.append(
            [
                gen,
                f"{len(g):,}",
                f"{int(g['boards'].sum()):,}",
                nanoseconds(g["start_ns"].min() - origin),
                nanoseconds(g["end_ns"].max() - origin),
                nanoseconds(float(g["duration_ns"].median())),
                nanoseconds(float(wait.median())) if len(wait) else "-",
            ]
        )
    launches = doc.get("launches")
    notes = [
        f"{len(df):,} grids recorded ({int((df['generation'] > 0).sum()):,} launched from the "
        "device; the run's accounting counted "
        f"{'?' if launches is None else format(launches, ',')} device launches)"
    ]
    notes += check(doc, df)
    ov = overhead(doc)
    if ov is not None:
        notes.append(
            f"recording overhead: {doc['on']['gpu_s'] * 1e3:.3f} ms with, "
            f"{doc['off']['gpu_s'] * 1e3:.3f} ms without (GPU time, medians of "
            f"{len(doc['on'].get('gpu_times') or [])}): {ov * 100:+.1f}%"
        )
    notes.append(
        "times from the GPU's global timer (%globaltimer), "
        "whose resolution depends on the GPU and driver"
    )
    return header, rows, notes


def chrome_events(
    df, origin_ns: int, offset_ns: int = 0, pid: int = TIMELINE_PID, label: str = ""
) -> list[dict]:
    """Trace events: a process for the device timeline, a thread per generation, a complete
    event per grid (args: id, parent grid and block, boards, launch-to-start wait)."""
    events = [
        {
            "name": "process_name",
            "ph": "M",
            "pid": pid,
            "args": {"name": f"CDP grids, device timeline{f' ({label})' if label else ''}"},
        }
    ]
    for gen in sorted(set(df["generation"])):
        events.append(
            {
                "name": "thread_name",
                "ph": "M",
                "pid": pid,
                "tid": int(gen),
                "args": {"name": "host grid" if gen == 0 else f"generation {gen}"},
            }
        )
    for r in df.itertuples():
        wait = None if r.wait_ns != r.wait_ns else int(r.wait_ns)
        events.append(
            {
                "name": f"gen {r.generation} grid {r.id}",
                "cat": "cdp_grid",
                "ph": "X",
                "ts": (int(r.start_ns) + offset_ns - origin_ns) / 1000.0,
                "dur": int(r.duration_ns) / 1000.0,
                "pid": pid,
                "tid": int(r.generation),
                "args": {
                    "id": int(r.id),
                    "parent_grid": int(r.parent),
                    "parent_block": int(r.parent_block),
                    "boards": int(r.boards),
                    "launch_to_start_ns": wait,
                },
            }
        )
    return events


def nsys_offset(df, kernels, root_kernel: str) -> int:
    """Device-timer ns -> Nsight ns: the last row of ``root_kernel`` starts where the host
    grid's first block did."""
    rows = kernels[kernels["name"] == root_kernel] if len(kernels) else kernels
    if not len(rows):
        raise InputError(
            f"the Nsight trace has no row for {root_kernel}: cannot align the device timeline"
        )
    host = df[df["generation"] == 0]
    if not len(host):
        raise InputError("the device timeline has no record of the host grid: cannot align it")
    return int(rows["start"].max()) - int(host["start_ns"].min())


def to_chrome(doc: dict[str, Any], path: str | Path, trace=None) -> Path:
    """Write the timeline as Chrome trace-event JSON; with ``trace`` (an nqprof Nsight trace),
    into that trace's export, on the same clock."""
    df = frame(doc)
    label = f"{doc.get('strategy')} N={doc.get('n')}"
    path = Path(path)
    if trace is None:
        origin = int(df["start_ns"].min())
        document = {
            "traceEvents": chrome_events(df, origin, label=label),
            "displayTimeUnit": "ns",
            "otherData": {"source": label, "origin_ns": origin, "clock": "GPU global timer"},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_text(path, json.dumps(document, allow_nan=False), "--chrome")
    from ..analysis.trace import to_chrome as trace_to_chrome

    root = doc.get("root_kernel") or f"{doc.get('strategy')}_root"
    offset = nsys_offset(df, trace.kernels, root)
    trace_to_chrome(trace, path)
    document = json.loads(path.read_text())  # what trace_to_chrome just wrote
    origin = int(document.get("otherData", {}).get("origin_ns", 0))
    document["traceEvents"] += chrome_events(df, origin, offset, label=label)
    document["otherData"]["device_timeline"] = {"aligned_to": root, "offset_ns": offset}
    return write_text(path, json.dumps(document, allow_nan=False), "--chrome")
