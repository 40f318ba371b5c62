"""Chrome trace-event JSON of a trace (opens in Perfetto and chrome://tracing): NVTX
ranges on their threads, kernels and memcpys on GPU tracks, CUDA API calls."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .aggregate import _dims, _plain
from .schema import START_END, Trace, pd

# --------------------------------------------------------------------------- Chrome trace

GPU_PID_BASE = 0x7F000000  # above any Linux pid: GPU tracks never collide with processes


def _us(ns, origin: int) -> float:
    return (ns - origin) / 1000.0


def _complete(name, category, start, end, pid, tid, origin, args) -> dict:
    return {
        "name": name,
        "cat": category,
        "ph": "X",
        "ts": _us(start, origin),
        "dur": (end - start) / 1000.0,
        "pid": int(pid),
        "tid": int(tid),
        "args": {k: _plain(v) for k, v in args.items()},
    }


def _trace_bounds(trace: Trace) -> tuple[int, int]:
    frames = [f for f in (trace.kernels, trace.ranges, trace.runtime, trace.memcpy) if len(f)]
    starts = [f["start"].min() for f in frames]
    ends = [f["end"].max() for f in frames]
    return (int(min(starts)) if starts else 0), int(
        max([e for e in ends if not pd.isna(e)], default=0)
    )


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
    frame = kernel_ranges.assign(
        grid=_dims(kernel_ranges, "grid"), block=_dims(kernel_ranges, "block")
    )
    return [
        _complete(
            k.name,
            "kernel",
            k.start,
            k.end,
            GPU_PID_BASE + k.device,
            k.stream,
            origin,
            {
                "grid": k.grid,
                "block": k.block,
                "correlation_id": k.correlation_id,
                "registers": k.registers,
                "nvtx_range": k.range_name,
                "payload": k.range_payload,
            },
        )
        for k in frame.itertuples()
    ]


def _memcpy_events(memcpy: pd.DataFrame, origin: int) -> list[dict]:
    return [
        _complete(
            f"memcpy {m.kind}",
            "memcpy",
            m.start,
            m.end,
            GPU_PID_BASE + m.device,
            m.stream,
            origin,
            {"bytes": m.bytes, "kind": m.kind, "correlation_id": m.correlation_id},
        )
        for m in memcpy.itertuples()
    ]


def _api_events(runtime: pd.DataFrame, origin: int) -> list[dict]:
    return [
        _complete(
            c.name,
            "cuda_api",
            c.start,
            c.end,
            c.pid,
            c.tid,
            origin,
            {"correlation_id": c.correlation_id},
        )
        for c in runtime.itertuples()
    ]


def _track_names(trace: Trace) -> list[dict]:
    """Metadata events naming the GPU processes and stream threads."""
    gpu = pd.concat(
        [trace.kernels[["device", "stream"]], trace.memcpy[["device", "stream"]]]
    ).dropna()
    events = []
    for device in sorted(set(gpu["device"])):
        events.append(
            {
                "name": "process_name",
                "ph": "M",
                "pid": GPU_PID_BASE + int(device),
                "args": {"name": f"GPU {device}"},
            }
        )
    for device, stream in sorted(set(zip(gpu["device"], gpu["stream"], strict=True))):
        events.append(
            {
                "name": "thread_name",
                "ph": "M",
                "pid": GPU_PID_BASE + int(device),
                "tid": int(stream),
                "args": {"name": f"stream {stream}"},
            }
        )
    return events


def to_chrome(trace: Trace, path: str | os.PathLike) -> Path:
    """Write ``trace`` as Chrome trace-event JSON (Perfetto, chrome://tracing): NVTX ranges
    and CUDA API calls on their host thread, kernels and memcpys on one track per CUDA
    stream; times in microseconds from the trace's first event."""
    origin, last = _trace_bounds(trace)
    events = [
        *_track_names(trace),
        *_range_events(trace.ranges, origin, last),
        *_api_events(trace.runtime, origin),
        *_kernel_events(trace.kernel_ranges, origin),
        *_memcpy_events(trace.memcpy, origin),
    ]
    document = {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"source": str(trace.path), "origin_ns": origin},
    }
    from ...files import write_text

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, json.dumps(document, allow_nan=False), "trace events")
