"""Launching a CDP run chunk by chunk (Carneiro et al.): the device buffers one chunk of host
boards is copied into, and the sum of the chunks' accounting words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...subproblems import Subproblems
from .accounting import (
    FIRST_ERROR,
    GEN_BASE,
    GEN_MAX,
    GEN_MIN_COMPLEMENT,
    GEN_WORDS,
    MAX_GEN,
    MAX_GENERATION,
    WORDS,
)

if TYPE_CHECKING:
    import numpy as np

#: Accounting words combined by max (the rest add up), besides FIRST_ERROR (the first).
_MAX_WORDS = [MAX_GENERATION] + [
    GEN_BASE + GEN_WORDS * g + k for g in range(MAX_GEN) for k in (GEN_MIN_COMPLEMENT, GEN_MAX)
]


def merge_accounting(total: np.ndarray | None, chunk: np.ndarray) -> np.ndarray:
    """The accounting of two chunks run one after the other: counts add up, the deepest
    generation and the per-generation maximum and minimum (kept as its complement) are the
    larger, the first error is the earlier chunk's (when it had one)."""
    import numpy as np

    chunk = np.asarray(chunk, dtype=np.uint64)
    if chunk.shape != (WORDS,):
        raise ValueError(f"accounting must be {WORDS} 64-bit words, got shape {chunk.shape}")
    if total is None:
        return chunk.copy()
    out = total + chunk
    out[_MAX_WORDS] = np.maximum(total[_MAX_WORDS], chunk[_MAX_WORDS])
    out[FIRST_ERROR] = total[FIRST_ERROR] if total[FIRST_ERROR] else chunk[FIRST_ERROR]
    return out


class ChunkBoards:
    """Device arrays for one chunk of host boards (structure of arrays), refilled per chunk:
    :meth:`load` copies boards ``lo:hi`` in; ``args()`` and ``count`` are the current chunk's,
    as :class:`~nqprof.strategies.gpu_common.DeviceBoards` gives them for all boards."""

    def __init__(self, drv, boards: Subproblems, chunk: int):
        self.drv, self.host = drv, boards
        self.multiplier = boards.multiplier
        self.min_row = boards.min_row
        self.capacity = chunk
        self.arrays = [drv.mem_alloc(max(1, chunk * a.dtype.itemsize)) for a in self._host_arrays()]
        self.count = 0

    def _host_arrays(self):
        return (self.host.cols, self.host.ld, self.host.rd, self.host.row)

    def load(self, lo: int, hi: int) -> None:
        import numpy as np

        if hi - lo > self.capacity:
            raise ValueError(f"chunk of {hi - lo} boards over the capacity {self.capacity}")
        for dev, host in zip(self.arrays, self._host_arrays(), strict=True):
            self.drv.memcpy_htod(dev, np.ascontiguousarray(host[lo:hi]))
        self.count = hi - lo

    def args(self) -> tuple:
        import numpy as np

        return (*self.arrays, np.uint32(self.count))
