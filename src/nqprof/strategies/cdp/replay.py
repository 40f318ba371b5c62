"""Record and replay of generation 1's launches (``launch=record``; CDP_LAUNCH_RECORD in
kernels/cdp.cuh): what the host side needs to launch a CDP strategy's children itself.

On CDP2 Nsight Compute profiles only host-launched grids. In the record build a launch of
generation 1 (a grid the host grid launches) is not made: the launching thread appends a
record of it -- grid, block, dynamic shared memory, the boards handed over, and the kernel's
arguments packed as CUDA's kernel parameter buffer lays them out -- to a device buffer. The
session then launches every recorded grid from the host, with PyCUDA, over the same inputs
(:func:`replay`), where ncu sees them. The parents keep the boards they handed over alive;
a replayed child frees them as in a real run. The replayed children's own launches
(generation 2 on) are not made (as with ``launch=none``): the replay runs each child's own
work, without its descendants, so the count is not N's and is never verified.

The buffer holds as many records as the plan's bound on generation 1's grids, at most
:data:`MAX_RECORDS`. A launch past it is counted as dropped (never written; its parent frees
its boards) and the run fails with an error that says so.
"""

from __future__ import annotations

from typing import Any

from .device_records import DeviceRecords, header_bytes, header_dtype, record_layout

#: Bytes of a record's argument area (CDP_REC_ARG_BYTES).
ARG_BYTES = 88
#: One record's fields (struct cdp_rec_launch; a test compares it with the kernels).
RECORD_FIELDS = [
    ("grid", "<u4", (3,)),
    ("block", "<u4", (3,)),
    ("shared", "<u4"),
    ("arg_bytes", "<u4"),
    ("boards", "<u4"),
    ("unused", "<u4"),
    ("args", "u1", (ARG_BYTES,)),
]
record_dtype = record_layout(RECORD_FIELDS)
#: The most launches a record build keeps (16 MiB of records; a replay of that many
#: launches from Python takes seconds).
MAX_RECORDS = 131_072


def capacity_for(plan) -> int:
    """Records to allocate: the plan's bound on generation 1's grids, at most MAX_RECORDS
    (at least 1)."""
    bound = next((g.bound_grids for g in plan.generations if g.generation == 1), 0)
    return max(1, min(int(bound), MAX_RECORDS))


def decode(header: bytes, records: bytes) -> dict[str, Any]:
    """The header read back and the records written (a structured array)."""
    import numpy as np

    h = np.frombuffer(header, dtype=header_dtype())[0]
    rec = np.frombuffer(records, dtype=record_dtype())
    return {
        "recorded": int(min(h["next"], h["capacity"])),
        "attempted": int(h["next"]),
        "capacity": int(h["capacity"]),
        "dropped": int(h["dropped"]),
        "records": rec,
    }


def check(recorded: dict[str, Any], gen1_grids: int, label: str) -> str | None:
    """Why these records cannot stand for generation 1 (None if they can): launches dropped
    past the capacity, records that disagree with the accounting's count of generation 1's
    grids, or a record with no arguments or more than fit."""
    if recorded["dropped"]:
        return (
            f"{label}: launch=record kept {recorded['capacity']:,} launches of generation 1 and "
            f"dropped {recorded['dropped']:,} more (room "
            f"for at most {MAX_RECORDS:,}); use a smaller N"
        )
    if recorded["recorded"] != gen1_grids:
        return (
            f"{label}: launch=record recorded {recorded['recorded']:,} launches, the accounting "
            f"counted {gen1_grids:,} grids of generation 1"
        )
    sizes = recorded["records"]["arg_bytes"]
    if len(sizes) and (int(sizes.min()) == 0 or int(sizes.max()) > ARG_BYTES):
        return (
            f"{label}: launch=record wrote a record with "
            f"{int(sizes.min())}..{int(sizes.max())} argument bytes"
        )
    return None


def launch_args(record) -> tuple[tuple[int, int, int], tuple[int, int, int], bytes, int]:
    """(grid, block, parameter buffer, dynamic shared bytes) of one record."""
    grid = tuple(int(v) for v in record["grid"])
    block = tuple(int(v) for v in record["block"])
    return grid, block, record["args"][: int(record["arg_bytes"])].tobytes(), int(record["shared"])


def replay(func, records) -> int:
    """Launch ``func`` (a PyCUDA Function: the strategy's child kernel) once per record, in
    record order, on the default stream, with the record's raw parameter buffer
    (``Function._launch_kernel``: cuLaunchKernel with CU_LAUNCH_PARAM_BUFFER_POINTER).
    Returns the launches made."""
    for r in records:
        grid, block, buf, shared = launch_args(r)
        func._launch_kernel(grid, block, buf, shared, None)
    return len(records)


def summary(
    recorded: dict[str, Any], replayed: int, kernel: str, seconds: float | None
) -> dict[str, Any]:
    """What the run record keeps of a replay (picklable, JSON-able): the counts, the kernel,
    and each replayed launch's boards and blocks, in replay order (the order ncu profiles
    them in)."""
    import numpy as np

    rec = recorded["records"]
    return {
        "kernel": kernel,
        "recorded": recorded["recorded"],
        "capacity": recorded["capacity"],
        "dropped": recorded["dropped"],
        "replayed": replayed,
        "gpu_s": seconds,
        "boards": rec["boards"].astype(np.int64).tolist(),
        "blocks": (rec["grid"].astype(np.int64).prod(axis=1)).tolist(),
    }


class LaunchRecords(DeviceRecords):
    """The record buffer of one session: allocated after the build (its address put in the
    module's ``cdp_rec``), reset before each round, read after the host grid."""

    def __init__(self, drv, module, capacity: int):
        super().__init__(drv, module, "cdp_rec", record_dtype(), capacity)

    def reset(self) -> None:
        self.write_start(header_bytes(self.capacity))

    def read(self) -> dict[str, Any]:
        return decode(*self.read_bytes())
