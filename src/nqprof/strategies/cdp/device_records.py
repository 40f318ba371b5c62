"""A device buffer of fixed-size records that CDP kernels append to (the device timeline,
``CDP_TIMELINE``, and the recorded launches of ``launch=record``): a 16-byte header
(next, capacity, dropped, unused; kernels/cdp.cuh) and ``capacity`` records. The host
allocates it after the build, puts its address in the module's ``__device__`` pointer,
writes the header before each round and reads header and records back after it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def record_layout(fields: Sequence[tuple], nbytes: int | None = None) -> Callable[[], np.dtype]:
    """The function that gives a record's ``fields`` as a numpy dtype, made on its first call
    (importing a module that declares a layout needs no numpy); ``nbytes``: the size of the
    kernels' struct, checked then."""

    @cache
    def dtype() -> np.dtype:
        import numpy as np

        made = np.dtype(list(fields))
        assert nbytes is None or made.itemsize == nbytes
        return made

    return dtype


#: The header's fields, as numpy dtype fields (:func:`header_dtype`).
HEADER_FIELDS = [("next", "<u4"), ("capacity", "<u4"), ("dropped", "<u4"), ("unused", "<u4")]
HEADER_BYTES = 16  # CDP_TL_HEADER_BYTES, CDP_REC_HEADER_BYTES
header_dtype = record_layout(HEADER_FIELDS, HEADER_BYTES)


def header_bytes(capacity: int) -> bytes:
    """An empty buffer's header: nothing recorded or dropped yet."""
    import numpy as np

    return np.array([(0, capacity, 0, 0)], dtype=header_dtype()).tobytes()


class DeviceRecords:
    """The buffer behind the ``__device__`` pointer ``symbol`` of ``module``."""

    def __init__(self, drv, module, symbol: str, record_dtype: np.dtype, capacity: int):
        import numpy as np

        self.drv, self.capacity, self.record_dtype = drv, capacity, record_dtype
        self.buf = drv.mem_alloc(HEADER_BYTES + record_dtype.itemsize * capacity)
        ptr, _ = module.get_global(symbol)
        drv.memcpy_htod(ptr, np.array([int(self.buf)], dtype=np.uint64))

    def write_start(self, data: bytes) -> None:
        """The buffer's first bytes (the header, and records a round starts with)."""
        import numpy as np

        self.drv.memcpy_htod(self.buf, np.frombuffer(data, dtype=np.uint8).copy())  # plain bytes

    def read_bytes(self) -> tuple[bytes, bytes]:
        """The header, and the records written (at most ``capacity``)."""
        import numpy as np

        header = np.empty(HEADER_BYTES, dtype=np.uint8)
        self.drv.memcpy_dtoh(header, self.buf)
        n = min(
            int(np.frombuffer(header.tobytes(), dtype=header_dtype())[0]["next"]), self.capacity
        )
        records = np.empty(n * self.record_dtype.itemsize, dtype=np.uint8)
        if n:
            self.drv.memcpy_dtoh(records, int(self.buf) + HEADER_BYTES)
        return header.tobytes(), records.tobytes()
