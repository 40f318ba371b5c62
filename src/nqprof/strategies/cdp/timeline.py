"""The device-side timeline of the CDP grids (kernels/cdp.cuh, built with -DCDP_TIMELINE):
its record layout on the host, and the device buffer a session fills and reads each round.

Opt-in with the parameter ``timeline=1`` (dp2, dp3, dpswap). Each grid of the run gets one
record: generation, the grid and block that launched it, its boards, the launch time and its
first block's start and last block's end from the GPU's global timer (ns). Record 0 is the
host grid. The buffer holds as many records as the run's estimate of launches (with a margin);
launches past it are counted as dropped.
"""

from __future__ import annotations

import math
from typing import Any

from ..base import Param
from .device_records import DeviceRecords, header_dtype, record_layout

#: One record's fields (struct cdp_tl_grid; a test compares it with the kernels).
RECORD_FIELDS = [
    ("launched", "<u8"),
    ("start", "<u8"),
    ("end", "<u8"),
    ("gen", "<u4"),
    ("parent", "<u4"),
    ("parent_block", "<u4"),
    ("boards", "<u4"),
]
record_dtype = record_layout(RECORD_FIELDS)
NONE = 0xFFFF_FFFF  # CDP_TL_NONE
NOT_STARTED = 0xFFFF_FFFF_FFFF_FFFF
MARGIN = 1.25
EXTRA = 1024


def timeline_param() -> Param:
    # 1: every grid's generation, boards and start/end recorded on the device (`nqprof
    # characterize timeline`)
    return Param("timeline", "device-side grid records (1: on)", default=0, lo=0, hi=1)


def timeline_defines(params) -> dict[str, int]:
    return {"CDP_TIMELINE": 1} if params.get("timeline") else {}


def capacity_for(launches: int | None, pending: int) -> int:
    """Records to allocate: the estimated launches with a margin, the host grid, and spare;
    without an estimate, the pending-launch limit."""
    base = launches if launches is not None else pending
    return int(math.ceil(base * MARGIN)) + 1 + EXTRA


def initial_bytes(capacity: int, host_boards: int) -> bytes:
    """The header (next = 1) and record 0 (the host grid, not started)."""
    import numpy as np

    header = np.array([(1, capacity, 0, 0)], dtype=header_dtype())
    host = np.array([(0, NOT_STARTED, 0, 0, NONE, 0, host_boards)], dtype=record_dtype())
    return header.tobytes() + host.tobytes()


def decode(header: bytes, records: bytes) -> dict[str, Any]:
    """The header and the records read back, as column lists (picklable, JSON-able): only
    grids that ran (a record whose launch failed never started)."""
    import numpy as np

    h = np.frombuffer(header, dtype=header_dtype())[0]
    rec = np.frombuffer(records, dtype=record_dtype())
    ids = np.arange(len(rec), dtype=np.int64)
    ran = rec["start"] != NOT_STARTED
    columns = {"id": ids[ran].tolist()}
    for name in record_dtype().names:
        columns[name] = rec[name][ran].tolist()
    return {
        "recorded": int(min(h["next"], h["capacity"])),
        "capacity": int(h["capacity"]),
        "dropped": int(h["dropped"]),
        "not_started": int((~ran).sum()),
        "grids": columns,
    }


class DeviceTimeline(DeviceRecords):
    """The buffer of one session (``cdp_tl``): allocated after the build, reset before each
    round (record 0 is the host grid), read after it."""

    def __init__(self, drv, module, capacity: int, host_boards: int):
        super().__init__(drv, module, "cdp_tl", record_dtype(), capacity)
        self.host_boards = host_boards

    def reset(self) -> None:
        self.write_start(initial_bytes(self.capacity, self.host_boards))

    def read(self) -> dict[str, Any]:
        return decode(*self.read_bytes())
