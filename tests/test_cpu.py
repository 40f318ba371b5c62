"""The C CPU references (nqprof._cpu): counts against the known counts, argument checks."""

from __future__ import annotations

import numpy as np
import pytest

from nqprof import _cpu  # the extension is part of every install: missing means broken
from nqprof.problem import KNOWN_COUNTS
from nqprof.subproblems import count_subtree_py, expand

SMALL_N = range(1, 15)


def boards(n: int, depth: int):
    sub = expand(n, depth)
    return sub, (sub.cols, sub.ld, sub.rd, sub.row)


@pytest.mark.parametrize("n", SMALL_N)
def test_serial_matches_known_counts(n):
    assert _cpu.serial(n) == KNOWN_COUNTS[n]


def test_serial_n15():
    assert _cpu.serial(15) == KNOWN_COUNTS[15]


@pytest.mark.parametrize("n", SMALL_N)
def test_multicore_matches_known_counts(n):
    # Depth 2 for N >= 3 (1 otherwise): many boards of uneven size for the pool.
    sub, arrays = boards(n, min(n, 2))
    assert sub.multiplier * _cpu.count_boards(n, *arrays) == KNOWN_COUNTS[n]


@pytest.mark.parametrize("n", [1, 2, 5, 8, 9, 12, 13])
@pytest.mark.parametrize("depth", [1, 2, 3, 4, 6, 99])
def test_count_boards_over_expansions(n, depth):
    depth = min(depth, n)  # 99 -> depth N: complete solutions, one board each
    sub, arrays = boards(n, depth)
    for threads in (0, 1, 2):
        assert sub.multiplier * _cpu.count_boards(n, *arrays, threads=threads) == KNOWN_COUNTS[n]


@pytest.mark.parametrize("n,depth", [(11, 3), (12, 4), (13, 5)])
def test_threads_agree(n, depth):
    _, arrays = boards(n, depth)
    one = _cpu.count_boards(n, *arrays, threads=1)
    three = _cpu.count_boards(n, *arrays, threads=3)
    assert one == three
    # More workers than boards (n // 2 + 1 first-row boards at most) is fine too.
    sub, first = boards(n, 1)
    assert sub.multiplier * _cpu.count_boards(n, *first, threads=64) == KNOWN_COUNTS[n]


def test_per_board_counts_match_python_reference():
    n = 9
    sub = expand(n, 3)
    for i in range(0, len(sub), 7):
        one = tuple(a[i : i + 1] for a in (sub.cols, sub.ld, sub.rd, sub.row))
        expected = count_subtree_py(
            n, int(sub.cols[i]), int(sub.ld[i]), int(sub.rd[i]), int(sub.row[i])
        )
        assert _cpu.count_boards(n, *one, threads=1) == expected


def test_empty_and_complete_boards():
    empty32 = np.zeros(0, dtype=np.uint32)
    assert _cpu.count_boards(8, empty32, empty32, empty32, np.zeros(0, dtype=np.uint8)) == 0
    # The empty board at row 0 counts every solution; no symmetry is applied.
    zero32 = np.zeros(1, dtype=np.uint32)
    assert _cpu.count_boards(8, zero32, zero32, zero32, np.zeros(1, dtype=np.uint8)) == 92
    sub = expand(6, 6)
    assert len(sub) == KNOWN_COUNTS[6] // 2
    assert _cpu.count_boards(6, sub.cols, sub.ld, sub.rd, sub.row) == len(sub)


def test_other_buffer_types_are_accepted():
    import array

    sub = expand(8, 2)
    arrays = [array.array("I", a.tolist()) for a in (sub.cols, sub.ld, sub.rd)]
    row = bytes(sub.row.tolist())
    assert sub.multiplier * _cpu.count_boards(8, *arrays, row) == KNOWN_COUNTS[8]


def test_keywords_and_cpu_count():
    assert _cpu.cpu_count() >= 1
    assert _cpu.serial(n=6) == 4
    sub = expand(7, 2)
    got = _cpu.count_boards(n=7, cols=sub.cols, ld=sub.ld, rd=sub.rd, row=sub.row, threads=2)
    assert 2 * got == KNOWN_COUNTS[7]


@pytest.mark.parametrize("n", [0, 28, -1, 10**30])
def test_bad_n(n):
    with pytest.raises(ValueError, match="n must be in 1..27"):
        _cpu.serial(n)
    z32 = np.zeros(1, dtype=np.uint32)
    with pytest.raises(ValueError, match="n must be in 1..27"):
        _cpu.count_boards(n, z32, z32, z32, np.zeros(1, dtype=np.uint8))


def test_non_integer_n():
    with pytest.raises(TypeError):
        _cpu.serial(8.0)


def _good(n=8, depth=2):
    sub = expand(n, depth)
    return [sub.cols, sub.ld, sub.rd, sub.row]


@pytest.mark.parametrize("which", range(4))
def test_mismatched_lengths(which):
    arrays = _good()
    arrays[which] = arrays[which][:-1]
    with pytest.raises(ValueError, match="same length"):
        _cpu.count_boards(8, *arrays)


@pytest.mark.parametrize(
    "which,dtype",
    [
        (0, np.int64),
        (0, np.uint64),
        (1, np.uint16),
        (2, np.int32),
        (2, np.float32),
        (3, np.uint32),
        (3, np.int8),
    ],
)
def test_wrong_dtype(which, dtype):
    arrays = _good()
    arrays[which] = arrays[which].astype(dtype)
    with pytest.raises(ValueError, match="must be a buffer of"):
        _cpu.count_boards(8, *arrays)


def test_byte_swapped_and_strided_buffers_are_rejected():
    arrays = _good()
    arrays[0] = arrays[0].astype(">u4")
    with pytest.raises(ValueError, match="cols must be a buffer of uint32"):
        _cpu.count_boards(8, *arrays)
    arrays = _good()
    arrays[1] = np.repeat(arrays[1], 2)[::2]
    with pytest.raises(ValueError, match="ld must be a contiguous buffer"):
        _cpu.count_boards(8, *arrays)
    arrays = _good()
    arrays[2] = arrays[2].reshape(1, -1)
    with pytest.raises(ValueError, match="one-dimensional"):
        _cpu.count_boards(8, *arrays)


def test_bad_threads():
    with pytest.raises(ValueError, match="threads must be >= 0"):
        _cpu.count_boards(8, *_good(), threads=-1)


def test_boards_of_another_n_are_rejected():
    # Boards of N=9 have queens outside the 8 columns of N=8.
    with pytest.raises(ValueError, match="not a partial board of N=8"):
        _cpu.count_boards(8, *_good(9, 3))
    arrays = _good()
    arrays[3] = arrays[3] + np.uint8(1)  # row disagrees with the queens in cols
    with pytest.raises(ValueError, match="not a partial board"):
        _cpu.count_boards(8, *arrays)
