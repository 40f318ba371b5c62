"""Per-block records of a constellation counting grid (``blocks=1``: fast, graph-cst,
cdp-cst): the measurement build ``NQ_BLOCK_RECORDS=1`` of kernels/cst_count.cuh has every
block of the counting grid write one record to the buffer behind the module's
``nq_blocks`` pointer: its SM, its start and end by the GPU's global timer and by its SM's
clock, the tasks its lanes took, its warps' votes and the clocks they spent taking tasks.
nqprof characterize blocks sets the same grid launched three ways side by side."""

from __future__ import annotations

from typing import Any

from .base import Param
from .cdp.device_records import DeviceRecords, header_bytes, header_dtype, record_layout

#: kernels/cst_count.cuh's nq_block_record, in order (64 bytes).
RECORD_FIELDS = [
    ("block", "<u4"),
    ("sm", "<u4"),
    ("tasks", "<u4"),
    ("warps", "<u4"),
    ("start", "<u8"),
    ("end", "<u8"),
    ("clock0", "<u8"),
    ("clock1", "<u8"),
    ("fetch", "<u8"),
    ("votes", "<u8"),
]
RECORD_BYTES = 64
record_dtype = record_layout(RECORD_FIELDS, RECORD_BYTES)
#: The build's define.
DEFINES = {"NQ_BLOCK_RECORDS": 1}
SYMBOL = "nq_blocks"


def defines(params: dict[str, Any]) -> dict[str, int]:
    """The build's defines for ``params`` (``blocks=1``: the records build)."""
    return dict(DEFINES) if params.get("blocks") else {}


def decode(header: bytes, records: bytes) -> dict[str, Any]:
    """The records as columns (JSON-ready), with the header's capacity and dropped blocks."""
    import numpy as np

    h = np.frombuffer(header, dtype=header_dtype())[0]
    rows = np.frombuffer(records, dtype=record_dtype())
    return {
        "capacity": int(h["capacity"]),
        "dropped": int(h["dropped"]),
        "blocks": {name: [int(v) for v in rows[name]] for name, _ in RECORD_FIELDS},
    }


class BlockRecords(DeviceRecords):
    """One session's buffer for ``capacity`` blocks (the counting grid's at most): zeroed
    before each round, read after it."""

    def __init__(self, drv, module, capacity: int):
        super().__init__(drv, module, SYMBOL, record_dtype(), capacity)

    def reset(self) -> None:
        self.write_start(header_bytes(self.capacity) + bytes(RECORD_BYTES * self.capacity))

    def read(self) -> dict[str, Any]:
        return decode(*self.read_bytes())


def records_param() -> Param:
    """The parameter that turns the records build on."""
    return Param("blocks", "per-block records (1: on)", default=0, lo=0, hi=1)
