"""Attributing GPU activity to NVTX ranges: each kernel or memcpy goes to the innermost
push/pop range open on the thread that launched it, at the moment of the launch call; GPU
work that no host call launched (a graph the device launched) goes to the innermost range
open in its process when it started, and its name says it was launched from the device."""

from __future__ import annotations

from .schema import ATTRIBUTION_FIELDS, DEVICE_LAUNCHED, GRAPH_PREFIX, PUSH_POP, pd

# --------------------------------------------------------------------------- attribution


def _sweep_thread(ranges: pd.DataFrame, times: pd.Series) -> tuple[dict[int, int], dict]:
    """Walk one thread's push/pop ranges in time order. Returns each range's nesting level
    (0 = outermost) and, for each entry of ``times``, the innermost range open at that time
    (bounds inclusive; a range without an end stays open)."""
    events = []
    for rid, start, end in zip(ranges["range_id"], ranges["start"], ranges["end"], strict=True):
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
        _, enclosing = _sweep_thread(
            push_pop[push_pop["global_tid"] == tid], thread_calls["launch_start"]
        )
        found[thread_calls.index] = pd.Series(enclosing, dtype=object).reindex(thread_calls.index)
    return found


def _launch_calls(activity: pd.DataFrame, runtime: pd.DataFrame) -> pd.DataFrame:
    """``activity`` plus the thread and start of the API call with its correlation id
    (in the same process where both sides know it)."""
    keys = ["correlation_id"]
    if activity["pid"].notna().all() and runtime["pid"].notna().all():
        keys.append("pid")
    # correlation id 0 is CUPTI's "none" (a graph the device launched): it matches no call
    activity = activity.assign(
        correlation_id=activity["correlation_id"].where(activity["correlation_id"].fillna(0) != 0)
    )
    calls = runtime[runtime["correlation_id"].fillna(0) != 0].dropna(subset=["correlation_id"])
    calls = calls.drop_duplicates(keys)
    calls = calls[keys + ["global_tid", "start"]].rename(
        columns={"global_tid": "launch_global_tid", "start": "launch_start"}
    )
    calls = calls.astype({key: "Int64" for key in keys})
    located = activity.dropna(subset=["correlation_id"])
    located = located.astype({key: "Int64" for key in keys}).merge(calls, on=keys, how="left")
    return pd.concat([located, activity[activity["correlation_id"].isna()]], ignore_index=True)


def _ranges_open_at(calls: pd.DataFrame, ranges: pd.DataFrame) -> pd.Series:
    """For each row of ``calls`` without a launch call but with a process: the innermost
    push/pop range of that process open when the row started (the deepest, then the
    latest to open), or NA."""
    found = pd.Series(pd.NA, index=calls.index, dtype="Int64")
    push_pop = ranges[ranges["kind"] == PUSH_POP]
    if not len(push_pop):
        return found
    stop = push_pop["end"].fillna(float("inf"))
    orphans = calls[calls["launch_global_tid"].isna() & calls["pid"].notna()]
    for key, row in orphans.iterrows():
        t = row["start"]
        open_then = push_pop[
            (push_pop["pid"] == row["pid"]) & (push_pop["start"] <= t) & (stop >= t)
        ]
        if len(open_then):
            best = open_then.sort_values(["level", "start"], kind="stable").iloc[-1]
            found[key] = best["range_id"]
    return found


def _device_launched_names(calls: pd.DataFrame) -> pd.Series:
    """A graph execution's name, marked where no host call launched it."""
    graph = calls["name"].astype(str).str.startswith(GRAPH_PREFIX)
    device = graph & calls["launch_global_tid"].isna()
    return calls["name"].where(~device, calls["name"].astype(str) + DEVICE_LAUNCHED)


def attribute(activity: pd.DataFrame, runtime: pd.DataFrame, ranges: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``activity`` (kernels or memcpys) joined, through the correlation id of the API
    call that launched them, to the innermost NVTX push/pop range on that call's thread
    enclosing the call's start. Adds :data:`ATTRIBUTION_FIELDS` (NA outside any range)."""
    calls = _launch_calls(activity, runtime)
    calls["range_id"] = _innermost_ranges(calls, ranges)
    if "name" in calls and len(calls):
        calls["range_id"] = calls["range_id"].fillna(_ranges_open_at(calls, ranges))
        calls["name"] = _device_launched_names(calls)
    info = ranges[["range_id", "name", "domain", "payload", "level"]].rename(
        columns={
            "name": "range_name",
            "domain": "range_domain",
            "payload": "range_payload",
            "level": "range_level",
        }
    )
    joined = (
        calls.merge(info, on="range_id", how="left")
        if len(info)
        else calls.assign(**{c: pd.NA for c in info.columns if c != "range_id"})
    )
    joined = joined.sort_values("start", kind="stable").reset_index(drop=True)
    return joined[list(activity.columns) + ATTRIBUTION_FIELDS]
