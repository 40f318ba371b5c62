"""Host-side expansion of the first rows into independent subtrees.

A board is three bit masks and the index of the next row to fill:

* ``cols``: occupied columns;
* ``ld``: squares attacked along the diagonals that move one column left-to-right per
  row (the mask is shifted left by one at each row);
* ``rd``: the other diagonals (shifted right by one at each row);
* ``row``: rows already holding a queen.

Mirror symmetry: only boards whose first queen lies in the left half are generated; for
odd N, boards whose first queen sits in the middle column get their second queen
restricted to the left half. Every such board stands for itself and its mirror image, so
the total count is ``multiplier * sum(subtree counts)`` with ``multiplier == 2`` (1 for N=1,
whose only board is its own mirror).

Boards come out as a structure of arrays (numpy ``uint32`` masks and ``uint8`` rows), the
layout GPU kernels read coalesced. All boards are at row ``depth`` except, for odd N and
``depth == 1``, the middle-column boards, which are expanded to row 2 so that the
second-row restriction is applied on the host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import InputError
from .problem import full_mask, validate_n

if TYPE_CHECKING:  # numpy is imported where boards are made, so importing a strategy stays light
    import numpy as np


#: The host arrays' element types (numpy dtype names), one per board; the kernels read them
#: as mask_t (32-bit masks) and unsigned char (the row). A test compares the sizes with the
#: kernels'.
MASK_DTYPE = "uint32"
ROW_DTYPE = "uint8"
#: Device bytes per uploaded board: three masks and the row (a test compares it with the
#: dtypes' sizes and the kernels').
BOARD_UPLOAD_BYTES = 3 * 4 + 1


@dataclass(frozen=True)
class Subproblems:
    """Partial boards in structure-of-arrays form."""

    n: int
    depth: int
    cols: np.ndarray
    ld: np.ndarray
    rd: np.ndarray
    row: np.ndarray
    multiplier: int

    def __len__(self) -> int:
        return int(self.cols.shape[0])

    @property
    def min_row(self) -> int:
        return int(self.row.min()) if len(self) else self.depth


def place_row(n: int, cols, ld, rd, row, *carried, allowed=None):
    """Expand every board by one row (``allowed`` masks the columns the new queen may use).

    ``carried`` arrays, one value per board, follow each board to its children. Boards with
    no free square in the next row have no children. Returns (cols, ld, rd, row, *carried)."""
    import numpy as np

    full = np.uint32(full_mask(n))
    free = ~(cols | ld | rd) & full
    if allowed is not None:
        free &= allowed
    parts: list[list[np.ndarray]] = [[] for _ in range(4 + len(carried))]
    for c in range(n):
        bit = np.uint32(1 << c)
        sel = (free & bit) != 0
        if not sel.any():
            continue
        children = (
            cols[sel] | bit,
            ((ld[sel] | bit) << np.uint32(1)) & full,
            (rd[sel] | bit) >> np.uint32(1),
            row[sel] + row.dtype.type(1),
            *(values[sel] for values in carried),
        )
        for part, child in zip(parts, children, strict=True):
            part.append(child)
    if not parts[0]:
        return tuple(values[:0] for values in (cols, ld, rd, row, *carried))
    return tuple(np.concatenate(part) for part in parts)


def _first_row(n: int, columns: list[int]):
    import numpy as np

    bits = np.array([1 << c for c in columns], dtype=np.uint32)
    full = np.uint32(full_mask(n))
    return (
        bits.copy(),
        (bits << np.uint32(1)) & full,
        bits >> np.uint32(1),
        np.ones(len(columns), dtype=np.uint8),
    )


#: Host bytes the expansion needs per board at its peak (the boards of two rows, with their
#: masks as int64 while a row is placed): generous, and applied to a lower bound of boards.
EXPAND_BYTES_PER_BOARD = 64


def boards_lower_bound(n: int, depth: int) -> int:
    """At least this many boards have the first ``depth`` rows filled (mirror symmetry
    applied): each queen placed takes at most 3 columns from every later row, so row ``i``
    has at least ``N - 3i`` free columns; mirror symmetry keeps half of the boards."""
    full = 1
    for i in range(depth):
        full *= max(0, n - 3 * i)
    return full // 2


def boards_estimate(n: int, depth: int, paths: int = 2048, seed: int = 12345) -> float:
    """Knuth's estimate of the boards with ``depth`` rows filled (mirror symmetry applied):
    the mean, over random root-to-depth paths, of the product of the choices met on the way
    (unbiased; milliseconds, deterministic for a seed). 0 where no path reaches ``depth``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    full = (1 << n) - 1
    cols = np.zeros(paths, np.int64)
    ld = np.zeros(paths, np.int64)
    rd = np.zeros(paths, np.int64)
    weight = np.full(paths, 0.5)  # mirror symmetry keeps half of the boards
    bits = np.int64(1) << np.arange(n, dtype=np.int64)
    for _ in range(depth):
        free = ~(cols | ld | rd) & full
        avail = (free[:, None] & bits[None, :]) != 0
        choices = avail.sum(axis=1)
        weight = weight * choices
        alive = choices > 0
        if not alive.any():
            return 0.0
        pick = (rng.random(paths) * np.maximum(choices, 1)).astype(np.int64)
        column = np.argmax(np.cumsum(avail, axis=1) > pick[:, None], axis=1)
        bit = np.where(alive, bits[column], 0)
        cols, ld, rd = cols | bit, ((ld | bit) << 1) & full, (rd | bit) >> 1
    return float(weight.mean())


def available_memory() -> int | None:
    """Bytes of host memory available now (MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_expansion(n: int, depth: int, available: int | None = None) -> None:
    """:class:`InputError`, before any work, where expanding ``depth`` rows at ``n`` cannot
    fit this machine's memory (on the larger of a lower bound of the boards and half of
    Knuth's estimate, so that a run that fits is not refused)."""
    boards = max(boards_lower_bound(n, depth), int(boards_estimate(n, depth) / 2))
    need = boards * EXPAND_BYTES_PER_BOARD
    available = available_memory() if available is None else available
    if available is not None and need > available:
        raise InputError(
            f"N={n}: expanding {depth} rows on the host makes about {boards:,} boards or more "
            f"(~{need / 2**30:,.1f} GiB), more than the {available / 2**30:,.1f} "
            "GiB of memory available here: use a smaller depth"
        )


def expand(n: int, depth: int) -> Subproblems:
    """All partial boards with the first ``depth`` rows filled, mirror symmetry applied.

    ``depth`` may be 1..N (depth N gives the complete solutions, one board each). An
    expansion that cannot fit the host's memory is refused before it starts.
    """
    import numpy as np

    n = validate_n(n)
    try:
        depth_value = int(depth)
    except (TypeError, ValueError):
        raise InputError(f"depth must be an integer in 1..{n} for N={n}, got {depth!r}") from None
    if not 1 <= depth_value <= n:
        raise InputError(f"depth must be in 1..{n} for N={n}, got {depth}")
    depth = depth_value
    check_expansion(n, depth)
    half = n // 2

    groups = [_first_row(n, list(range(half)))]
    if n % 2 == 1:
        middle = _first_row(n, [half])
        if n > 1:
            # The middle-column boards' second queen goes to the left half only.
            middle = place_row(n, *middle, allowed=np.uint32((1 << half) - 1))
        groups.append(middle)

    expanded = []
    for cols, ld, rd, row in groups:
        while len(cols) and int(row.min()) < depth:
            cols, ld, rd, row = place_row(n, cols, ld, rd, row)
        expanded.append((cols, ld, rd, row))

    cols, ld, rd, row = (
        np.ascontiguousarray(np.concatenate(p)) for p in zip(*expanded, strict=True)
    )
    return Subproblems(
        n=n,
        depth=depth,
        cols=cols.astype(MASK_DTYPE),
        ld=ld.astype(MASK_DTYPE),
        rd=rd.astype(MASK_DTYPE),
        row=row.astype(ROW_DTYPE),
        multiplier=1 if n == 1 else 2,
    )


def count_subtree_py(n: int, cols: int, ld: int, rd: int, row: int) -> int:
    """Reference count of one subtree in pure Python (recursive; for tests, small N)."""
    if row == n:
        return 1
    full = full_mask(n)
    free = ~(cols | ld | rd) & full
    total = 0
    while free:
        bit = free & -free
        free ^= bit
        total += count_subtree_py(n, cols | bit, ((ld | bit) << 1) & full, (rd | bit) >> 1, row + 1)
    return total
