"""What an Nsight Systems export holds and what nqprof reads of it: table, enum and column
names (looked up in the export, since the schema changes between nsys versions), the
frames' fields, and the :class:`Trace` that holds them."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

from nqprof.errors import InputError, NqprofError


class _Pandas:
    """pandas, imported on first use: loading this package (for `nqprof --help`, say) must
    not pay for it."""

    def __getattr__(self, name: str):
        import pandas

        return getattr(pandas, name)


#: pandas (lazily), or None where it is not installed (it comes with the "analysis" extra).
pd = _Pandas() if importlib.util.find_spec("pandas") else None


# --------------------------------------------------------------------------- constants

STRINGS_TABLE = "StringIds"
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
#: A CUDA graph's executions, each a row (nsys's default --cuda-graph-trace=graph): the
#: graph's kernels have no rows of their own, and a graph launched from the device (CDP2
#: device graph launch) is seen only here (an H200 host, Nsight Systems 2025.3.1).
GRAPH_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
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
PAYLOAD_COLUMNS = (
    "int64Value",
    "uint64Value",
    "doubleValue",
    "int32Value",
    "uint32Value",
    "floatValue",
)
UNSIGNED_PAYLOADS = {"uint64Value": 2**64, "uint32Value": 2**32}

# nsys serialises thread ids as globalTid = ... | pid << 24 | tid.
_ID_BITS = 2**24

KERNEL_COLUMNS = {
    "start": "start",
    "end": "end",
    "short_name_id": "shortName",
    "demangled_name_id": "demangledName",
    "grid_x": "gridX",
    "grid_y": "gridY",
    "grid_z": "gridZ",
    "block_x": "blockX",
    "block_y": "blockY",
    "block_z": "blockZ",
    "stream": "streamId",
    "device": "deviceId",
    "context": "contextId",
    "correlation_id": "correlationId",
    "global_pid": "globalPid",
    "registers": "registersPerThread",
    "static_shared_bytes": "staticSharedMemory",
    "dynamic_shared_bytes": "dynamicSharedMemory",
}
GRAPH_COLUMNS = {
    "start": "start",
    "end": "end",
    "graph_id": "graphId",
    "stream": "streamId",
    "device": "deviceId",
    "context": "contextId",
    "correlation_id": "correlationId",
    "global_pid": "globalPid",
}
#: The name of a graph execution's row among the kernels (``{graph_id}``), and what is added
#: where no host call launched it.
GRAPH_ROW = "graph {graph_id}"
GRAPH_PREFIX = GRAPH_ROW.format(graph_id="")
DEVICE_LAUNCHED = " (device launch)"
RUNTIME_COLUMNS = {
    "name_id": "nameId",
    "start": "start",
    "end": "end",
    "correlation_id": "correlationId",
    "global_tid": "globalTid",
}
MEMCPY_COLUMNS = {
    "start": "start",
    "end": "end",
    "bytes": "bytes",
    "kind_id": "copyKind",
    "stream": "streamId",
    "device": "deviceId",
    "context": "contextId",
    "correlation_id": "correlationId",
    "global_pid": "globalPid",
}
NVTX_COLUMNS = {
    "event_type": "eventType",
    "start": "start",
    "end": "end",
    "text": "text",
    "text_id": "textId",
    "domain_id": "domainId",
    "global_tid": "globalTid",
    **{c: c for c in PAYLOAD_COLUMNS},
}

KERNEL_FIELDS = [
    "name",
    "demangled_name",
    "start",
    "end",
    "duration_ns",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "stream",
    "device",
    "context",
    "correlation_id",
    "pid",
    "registers",
    "static_shared_bytes",
    "dynamic_shared_bytes",
]
RUNTIME_FIELDS = [
    "name",
    "start",
    "end",
    "duration_ns",
    "correlation_id",
    "global_tid",
    "pid",
    "tid",
]
MEMCPY_FIELDS = [
    "kind",
    "bytes",
    "start",
    "end",
    "duration_ns",
    "stream",
    "device",
    "context",
    "correlation_id",
    "pid",
]
RANGE_FIELDS = [
    "range_id",
    "name",
    "domain",
    "kind",
    "start",
    "end",
    "duration_ns",
    "payload",
    "global_tid",
    "pid",
    "tid",
    "level",
]
# Columns kernel_ranges adds to a kernel (or memcpy) row.
ATTRIBUTION_FIELDS = [
    "launch_global_tid",
    "launch_start",
    "range_id",
    "range_name",
    "range_domain",
    "range_payload",
    "range_level",
]
SUMMARY_FIELDS = [
    "domain",
    "range",
    "payload",
    "range_count",
    "range_ns",
    "kernel",
    "launches",
    "kernel_total_ns",
    "kernel_mean_ns",
    "grid",
    "block",
    "memcpy_count",
    "memcpy_bytes",
    "memcpy_ns",
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


def require_file(path: Path) -> None:
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: not readable")
