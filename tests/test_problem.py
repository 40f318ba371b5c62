"""Known counts, N validation and the host expansion invariant."""

import pytest

from nqprof.errors import InputError
from nqprof.problem import KNOWN_COUNTS, MAX_N, known_count, validate_n
from nqprof.subproblems import count_subtree_py, expand


def test_known_counts_are_oeis_a000170():
    assert len(KNOWN_COUNTS) == 27
    assert [KNOWN_COUNTS[n] for n in range(1, 11)] == [1, 0, 0, 2, 10, 4, 40, 92, 352, 724]
    assert KNOWN_COUNTS[18] == 666090624
    assert KNOWN_COUNTS[23] == 24233937684440
    assert MAX_N == 27


@pytest.mark.parametrize("bad", [0, -3, 28, 40, "x", 3.5, None, "12a"])
def test_validate_n_rejects_with_range(bad):
    with pytest.raises(InputError, match=r"1\.\.27"):
        validate_n(bad)


@pytest.mark.parametrize("good,value", [(1, 1), ("14", 14), (27, 27), (12.0, 12)])
def test_validate_n_accepts(good, value):
    assert validate_n(good) == value


def test_known_count_validates():
    assert known_count(8) == 92
    with pytest.raises(InputError):
        known_count(30)


def _total(boards) -> int:
    return boards.multiplier * sum(
        count_subtree_py(boards.n, int(c), int(dl), int(dr), int(w))
        for c, dl, dr, w in zip(boards.cols, boards.ld, boards.rd, boards.row, strict=True)
    )


@pytest.mark.parametrize("n", range(1, 11))
def test_expansion_invariant_every_depth(n):
    """Subtree counts, times the mirror multiplier, sum to the known count at every depth."""
    for depth in range(1, n + 1):
        boards = expand(n, depth)
        assert _total(boards) == KNOWN_COUNTS[n], (n, depth)


def _all_partial_boards(n: int, depth: int) -> list[int]:
    """Column masks of every valid placement of the first ``depth`` rows, no symmetry."""
    full = (1 << n) - 1
    out = []

    def walk(cols, ld, rd, row):
        if row == depth:
            out.append(cols)
            return
        free = ~(cols | ld | rd) & full
        while free:
            bit = free & -free
            free ^= bit
            walk(cols | bit, ((ld | bit) << 1) & full, (rd | bit) >> 1, row + 1)

    walk(0, 0, 0, 0)
    return out


@pytest.mark.parametrize("n", [8, 9])
def test_expansion_layout_and_symmetry(n):
    boards = expand(n, 3)
    assert boards.cols.dtype.name == "uint32" and boards.row.dtype.name == "uint8"
    assert boards.cols.flags["C_CONTIGUOUS"]
    assert set(boards.row.tolist()) == {3}
    # Every board has exactly `row` queens, in distinct columns.
    assert all(bin(int(c)).count("1") == 3 for c in boards.cols)
    # Mirror symmetry: every board stands for itself and its mirror image (no board is
    # its own mirror once the first row is off-centre or the second is), so exactly half.
    assert len(boards) * 2 == len(_all_partial_boards(n, 3))


def test_odd_middle_column_is_expanded_on_the_host_at_depth_one():
    boards = expand(9, 1)
    # Left-half first-row boards stay at row 1; the middle-column ones go to row 2,
    # with their second queen in the left half.
    assert sorted(set(boards.row.tolist())) == [1, 2]
    middle = boards.cols[boards.row == 2]
    assert len(middle) > 0 and all(int(c) & (1 << 4) for c in middle)
    assert all((int(c) & ~(1 << 4)) < (1 << 4) for c in middle)


@pytest.mark.parametrize("n,depth", [(8, 0), (8, 9), (5, -1)])
def test_expansion_rejects_bad_depth(n, depth):
    with pytest.raises(InputError, match="depth must be in 1.."):
        expand(n, depth)
