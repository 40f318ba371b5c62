"""The counting grid's blocks, launched three ways: where a device-launched grid loses time.

fast's constellation counting grid (kernels/cst_count.cuh) runs in three strategies that
differ only in who launches it: ``fast`` (the host), ``graph-cst`` (a device graph: fast's
own cubin, or with ``count0=own`` the same source in the CDP module) and ``cdp-cst`` (a CDP2
launch from the last block of the split-write grid, into the tail or the fire-and-forget
stream; with ``mode=host`` the host launches that same kernel of the CDP module after the
chain instead). Each path runs twice: as built for the suite (its time) and as the records
build (``blocks=1``), in which every block of the counting grid records its SM, its start
and end by the global timer and by its SM's clock, the tasks it took, its warps' votes and
the clocks they spent taking tasks (nqprof.strategies.block_records). From the last
round's records: how many blocks each SM held at once, how long a block ran, the SM's
clock while it ran, the clocks a vote took (a vote: NQ_UNROLL steps of every lane) and
the share of a warp's clocks spent taking tasks. Every count is verified.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import InputError
from . import check_kind, check_listed, record_machine
from .residency import held_at_once

KIND = "nqprof-characterize-blocks"
#: The launch paths: name -> (strategy, parameters).
PATHS: dict[str, tuple[str, dict[str, Any]]] = {
    "host": ("fast", {}),
    "graph": ("graph-cst", {"count0": "fast"}),
    "graph-own": ("graph-cst", {"count0": "own"}),
    "cdp-tail": ("cdp-cst", {"mode": "tail"}),
    "cdp-ff": ("cdp-cst", {"mode": "fire-and-forget"}),
    "cdp-host": ("cdp-cst", {"mode": "host"}),
}
DEFAULT_NS = (17, 18, 19)


def check_paths(paths: Sequence[str]) -> list[str]:
    return check_listed(paths, tuple(PATHS))


def summarize(blocks: dict[str, Any], ntasks: int | None = None) -> dict[str, Any]:
    """The numbers of one round's records (nqprof.strategies.block_records.decode)."""
    b = blocks.get("blocks") or {}
    ran = [i for i, w in enumerate(b.get("warps", [])) if w]
    if not ran:
        raise InputError("the block records hold no block that ran (was it run with blocks=1?)")

    def col(name):
        return [b[name][i] for i in ran]

    start, end, c0, c1 = col("start"), col("end"), col("clock0"), col("clock1")
    warps, votes, fetch, tasks = col("warps"), col("votes"), col("fetch"), col("tasks")
    t0 = min(start)
    held = held_at_once(zip(col("sm"), start, end, strict=True))
    ns = [e - s for s, e in zip(start, end, strict=True)]
    clocks = [e - s for s, e in zip(c0, c1, strict=True)]
    mhz = [c / t * 1e3 for c, t in zip(clocks, ns, strict=True) if t > 0]
    per_vote = [c * w / v for c, w, v in zip(clocks, warps, votes, strict=True) if v]
    warp_clocks = sum(c * w for c, w in zip(clocks, warps, strict=True))
    out = {
        "blocks": len(ran),
        "dropped": int(blocks.get("dropped", 0)),
        "sms": len(held),
        "held_most": max(held.values()),
        "held_median": statistics.median(held.values()),
        "span_ms": (max(end) - t0) / 1e6,
        "last_start_us": (max(start) - t0) / 1e3,
        "block_ms_median": statistics.median(ns) / 1e6,
        "block_ms_max": max(ns) / 1e6,
        "sm_mhz_median": statistics.median(mhz) if mhz else None,
        "clocks_per_vote": statistics.median(per_vote) if per_vote else None,
        "fetch_share": sum(fetch) / warp_clocks if warp_clocks else None,
        "votes": sum(votes),
        "tasks": sum(tasks),
        "tasks_min": min(tasks),
        "tasks_max": max(tasks),
    }
    if ntasks is not None and out["tasks"] != ntasks:
        raise InputError(
            f"the block records say {out['tasks']:,} tasks were taken, the grid had "
            f"{ntasks:,}: the records are wrong"
        )
    return out


def path_params(paths: Sequence[str], extra: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each path's parameters: its own, and those of ``extra`` its strategy has (a key no
    path's strategy has is an InputError)."""
    from ..strategies import get

    out, used = {}, set()
    for path in check_paths(paths):
        strategy, own = PATHS[path]
        names = {p.name for p in get(strategy).params}
        given = {k: v for k, v in extra.items() if k in names}
        used |= set(given)
        out[path] = {**own, **given}
    unused = sorted(set(extra) - used)
    if unused:
        raise InputError(
            f"--param {', '.join(unused)}: no strategy of the paths {', '.join(paths)} has it"
        )
    return out


def measure(
    ns: Sequence[int] = DEFAULT_NS,
    paths: Sequence[str] = tuple(PATHS),
    repeats: int = 3,
    warmup: int = 1,
    timeout: float = 300,
    progress=None,
    solve: Callable | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every (N, path): the suite's build and the records build, each ``repeats`` rounds
    after ``warmup`` (counts verified), with ``extra`` parameters where a path's strategy
    has them; the document."""
    if solve is None:
        from ..runner import solve
    chosen = path_params(paths, extra or {})
    points, machine = [], {}
    for n in ns:
        for path in paths:
            strategy, params = PATHS[path][0], chosen[path]
            point: dict[str, Any] = {"path": path, "strategy": strategy, "n": int(n)}
            for on in (0, 1):
                if progress is not None:
                    progress.case(f"{path} N={n} blocks={on}")
                rec = solve(
                    strategy,
                    n,
                    {**params, "blocks": on},
                    repeats=repeats,
                    warmup=warmup,
                    timeout=timeout,
                )
                key = "records" if on else "plain"
                point[key] = {
                    "gpu_s": rec.gpu_s,
                    "gpu_times": rec.gpu_times,
                    "conditions": rec.conditions,
                }
                if on:
                    point["params"] = rec.params
                    point["ntasks"] = (rec.tasks or {}).get("tasks")
                    point["blocks"] = rec.blocks
                    point["summary"] = summarize(rec.blocks, point["ntasks"])
                    machine = record_machine(rec)
            points.append(point)
    return {"kind": KIND, "machine": machine, "points": points}


def load(doc: dict[str, Any]) -> list[dict[str, Any]]:
    check_kind(doc, KIND, "block records")
    points = doc.get("points")
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        raise InputError("the block records hold no points")
    for p in points:  # the summary is derived from the records, whatever a kept file says
        p["summary"] = summarize(p.get("blocks") or {}, p.get("ntasks"))
    return points


def table(points: Sequence[dict[str, Any]]) -> tuple[list[str], list[list], list[str]]:
    header = [
        "N",
        "path",
        "time (ms)",
        "vs host",
        "records (ms)",
        "blocks",
        "SMs",
        "held/SM",
        "last start (us)",
        "block (ms)",
        "SM MHz",
        "clocks/vote",
        "fetch",
    ]
    host = {p["n"]: p["plain"]["gpu_s"] for p in points if p["path"] == "host"}
    rows = []
    for p in points:
        s, t = p["summary"], p["plain"]["gpu_s"]
        ref = host.get(p["n"])
        rows.append(
            [
                p["n"],
                p["path"],
                f"{t * 1e3:,.2f}",
                f"{t / ref:.2f}x" if ref else "",
                f"{p['records']['gpu_s'] * 1e3:,.2f}",
                s["blocks"],
                s["sms"],
                s["held_most"],
                f"{s['last_start_us']:,.1f}",
                f"{s['block_ms_median']:,.2f}",
                f"{s['sm_mhz_median']:,.0f}" if s["sm_mhz_median"] else "",
                f"{s['clocks_per_vote']:,.0f}" if s["clocks_per_vote"] else "",
                f"{100 * s['fetch_share']:.1f}%" if s["fetch_share"] is not None else "",
            ]
        )
    notes = [
        "time: CUDA events, median of the rounds, the suite's build; records: the records "
        "build (blocks=1); the rest from the records build's last round",
        "paths: host = fast; graph = graph-cst (fast's cubin in a device graph); graph-own = "
        "the same source built into the CDP module; cdp-tail, cdp-ff = cdp-cst (CDP2 launch "
        "into the tail or fire-and-forget stream); cdp-host = cdp-cst's own kernel launched "
        "by the host after the chain",
        "held/SM: the most blocks an SM held at once; last start: the last block's start after "
        "the first's; block: the median block's run; SM MHz: its SM's clocks over the global "
        "timer; clocks/vote: a warp's clocks per vote (NQ_UNROLL steps of each lane); fetch: "
        "the share of the warps' clocks spent taking tasks",
    ]
    return header, rows, notes


def figure(points: Sequence[dict[str, Any]], path, n: int | None = None):
    """Blocks by SM against time, a panel per launch path, at N ``n`` (default the largest
    measured)."""
    from ..analysis.figures import block_timelines

    n = max(p["n"] for p in points) if n is None else n
    panels = {}
    for p in points:
        if p["n"] != n:
            continue
        b = p["blocks"]["blocks"]
        ran = [i for i, w in enumerate(b["warps"]) if w]
        t0 = min(b["start"][i] for i in ran)
        title = f"{p['path']} ({p['strategy']}): {p['plain']['gpu_s'] * 1e3:,.1f} ms"
        panels[title] = [
            (b["sm"][i], (b["start"][i] - t0) / 1e6, (b["end"][i] - t0) / 1e6) for i in ran
        ]
    if not panels:
        raise InputError(f"the block records have no point at N={n}")
    return block_timelines(panels, path, f"The counting grid's blocks at N={n}: SM against time")
