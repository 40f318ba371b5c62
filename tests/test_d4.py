"""Takaken's D4 symmetry search in C (nqprof._cpu: serial_d4, d4_tasks, d4_count), the
tasks of fast's reference kernel tight-u4: counts N=1..16, expansion invariants, argument
checks (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_checks import HOPPER_SM

from nqprof import _cpu
from nqprof.problem import KNOWN_COUNTS
from nqprof.strategies.fast import shared_bytes
from nqprof.strategies.gpu_common import blocks_per_sm


@pytest.mark.parametrize("n", range(1, 15))
def test_serial_d4_matches_known_counts(n):
    assert _cpu.serial_d4(n) == KNOWN_COUNTS[n]


@pytest.mark.slow
@pytest.mark.parametrize("n", [15, 16])
def test_serial_d4_n15_n16(n):
    assert _cpu.serial_d4(n) == KNOWN_COUNTS[n]


def _queens_placed(n: int, raw: bytes) -> int:
    """The queens the D4 search places from each task's row on, by the rules d4.c states
    (a recursive model of its iterative loop): every candidate of rows depth..N-3 is placed,
    a child is entered only if the row after it still has a free square, every free square of
    row N-2 is placed and row N-1 is not."""
    words = np.frombuffer(raw, dtype=np.uint32).reshape(-1, 8)
    return sum(_task_queens_placed(n, *(int(x) for x in w[:4])) for w in words)


def _task_queens_placed(n: int, left: int, down: int, right: int, info: int) -> int:
    mask, side = (1 << n) - 1, (1 << (n - 1)) | 1
    y0, b1, corner = info & 31, (info >> 5) & 31, (info >> 15) & 1
    b2 = -1 if corner else (info >> 10) & 31
    excl = 2 if corner else side

    def row(y, ld, dn, rd):
        free = ~(ld | dn | rd) & mask
        if y < b1:
            free &= ~excl
        elif y == b2:
            s = dn & side
            free = 0 if s == 0 else free if s == side else free & side
        return free

    def search(y, ld, dn, rd, free):
        if y == n - 2:
            return free.bit_count()
        placed = 0
        while free:
            bit = free & -free
            free ^= bit
            placed += 1
            nl, nd, nr = (ld | bit) << 1, dn | bit, (rd | bit) >> 1
            child = row(y + 1, nl, nd, nr)
            if y + 1 == n - 2:
                placed += child.bit_count()
            elif child and ~((nl << 1) | nd | (nr >> 1)) & mask:
                placed += search(y + 1, nl, nd, nr, child)
        return placed

    return search(y0, left, down, right, row(y0, left, down, right))


@pytest.mark.parametrize("n", [4, 5, 8, 9, 12, 13])
def test_every_depth_gives_the_count(n):
    placed = []
    for depth in range(2, min(16, n - 2) + 1):
        raw = _cpu.d4_tasks(n, depth)
        count, nodes = _cpu.d4_count(n, raw)
        assert count == KNOWN_COUNTS[n], depth
        # the node count is the queens placed (fast's kernel counts the same): the model's
        # wherever it is quick (N <= 9 at every depth, N = 12 and 13 at the deepest)
        if n <= 9 or depth == n - 2:
            assert nodes == _queens_placed(n, raw), depth
        half = len(raw) // 64 * 32
        assert _cpu.d4_count(n, raw[:half])[1] + _cpu.d4_count(n, raw[half:])[1] == nodes
        placed.append(nodes)
    # each row expanded on the host is a row fewer for the search
    assert all(a > b for a, b in zip(placed, placed[1:], strict=False)), placed


def test_tasks_layout_and_invariants():
    n, depth = 12, 5
    raw = _cpu.d4_tasks(n, depth)
    words = np.frombuffer(raw, dtype=np.uint32).reshape(-1, 8)
    info = words[:, 3]
    assert (info & 31 == depth).all()
    corner = (info >> 15) & 1 == 1
    b1, b2 = (info >> 5) & 31, (info >> 10) & 31
    assert (b2[corner] == 31).all() and ((b1[corner] >= 2) & (b1[corner] <= n - 2)).all()
    assert ((b1[~corner] + b2[~corner]) == n - 1).all() and (b1[~corner] < b2[~corner]).all()
    # down holds exactly the prefix columns, one queen per expanded row
    for w in words[::37]:
        cols = [(int(w[4 + i // 4]) >> (8 * (i % 4))) & 255 for i in range(depth)]
        assert len(set(cols)) == depth and sum(1 << c for c in cols) == int(w[1])
    # tasks are independent: the weighted counts of any split add up
    half = len(words) // 2 * 32
    assert _cpu.d4_count(n, raw[:half])[0] + _cpu.d4_count(n, raw[half:])[0] == KNOWN_COUNTS[n]


def test_weights_are_2_4_or_8():
    # N=10: 724 solutions in 92 classes (3 of them symmetric under 180 degrees, weight 4)
    raw = _cpu.d4_tasks(10, 8)
    weights = [_cpu.d4_count(10, raw[i : i + 32])[0] for i in range(0, len(raw), 32)]
    assert sum(weights) == 724
    assert set(weights) <= {0, 2, 4, 8, 16, 24}


def test_bad_arguments():
    with pytest.raises(ValueError):
        _cpu.serial_d4(0)
    with pytest.raises(ValueError):
        _cpu.d4_tasks(3, 2)
    with pytest.raises(ValueError):
        _cpu.d4_tasks(12, 11)
    with pytest.raises(ValueError):
        _cpu.d4_count(12, b"\0" * 31)
    with pytest.raises(ValueError):
        _cpu.d4_count(12, b"\0" * 32)  # row 0, no bounds: not a task


def test_tight_u4_shared_memory_and_occupancy():
    params = {"opt": "tight-u4", "depth": 7, "block": 128}
    assert shared_bytes(19, params) == 3 * 10 * 128 * 4
    assert blocks_per_sm(128, 48, shared_bytes(19, params), 0, HOPPER_SM) == 10
