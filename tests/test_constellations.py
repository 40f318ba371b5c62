"""Start constellations in C (nqprof._cpu: cst_serial, cst_tasks, cst_count; the header
kernels/cpu/constellations.h that the GPU kernel runs too): counts N=1..17 at several
depths, the frame classes against a brute-force enumeration, the task layout, argument
checks and the fast strategy's parameters (no GPU needed)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from nqprof import _cpu
from nqprof.errors import InputError
from nqprof.problem import KNOWN_COUNTS
from nqprof.strategies import get
from nqprof.strategies.fast import TASK_WORDS, shared_bytes


def tasks(n, depth):
    return np.frombuffer(_cpu.cst_tasks(n, depth), dtype=np.uint32).reshape(-1, TASK_WORDS)


def fields(words):
    info = words[:, 3]
    return {
        name: (info >> shift) & 31
        for name, shift in (("start", 0), ("a", 5), ("b", 10), ("c", 15), ("d", 20))
    } | {"weight": (info >> 25) & 15}


@pytest.mark.parametrize("n", range(1, 15))
def test_serial_counts(n):
    assert _cpu.cst_serial(n) == KNOWN_COUNTS[n]


@pytest.mark.parametrize("n", [*range(1, 14), pytest.param(14, marks=pytest.mark.slow)])
def test_every_depth_gives_the_count(n):
    """Both per-task searches: the host's breadth-first one (nq_cst_search) and the steps the GPU
    kernel runs (nq_cst_solve, with nodes=True)."""
    for depth in range(0, max(0, n - 3) + 1):
        tasks = _cpu.cst_tasks(n, depth)
        assert _cpu.cst_count(n, tasks) == (KNOWN_COUNTS[n], None), (n, depth)
        count, nodes = _cpu.cst_count(n, tasks, nodes=True)
        assert count == KNOWN_COUNTS[n], (n, depth)
        if n >= 5:  # (a frame alone is the whole of N=1's and N=4's solutions: no queen placed)
            assert 8 * nodes >= count  # a task's completions are queens it placed; weights <= 8


@pytest.mark.slow
@pytest.mark.parametrize("n,depths", [(15, (0, 2)), (16, (1, 3)), (17, (2,))])
def test_n15_to_n17(n, depths):
    for depth in depths:
        assert _cpu.cst_count(n, _cpu.cst_tasks(n, depth), 0)[0] == KNOWN_COUNTS[n], depth
    if n == 15:  # the GPU's step search too, on two threads
        assert _cpu.cst_count(n, _cpu.cst_tasks(n, depths[-1]), 2, nodes=True)[0] == KNOWN_COUNTS[n]


def solutions(n):
    """Every solution of N-Queens by plain recursion: the column of each row's queen."""
    out, cols = [], [0] * n

    def place(r, used, d1, d2):
        if r == n:
            out.append(tuple(cols))
            return
        for c in range(n):
            if not (used >> c) & 1 and not (d1 >> (r + c)) & 1 and not (d2 >> (r - c + n)) & 1:
                cols[r] = c
                place(r + 1, used | 1 << c, d1 | 1 << (r + c), d2 | 1 << (r - c + n))

    place(0, 0, 0, 0)
    return out


def frame(sol):
    n = len(sol)
    return sol[0], sol[n - 1], sol.index(0), sol.index(n - 1)


def images(sol):
    """The 8 D4 images of a solution (rows -> columns)."""
    n = len(sol)
    sq = [(r, c) for r, c in enumerate(sol)]
    m = n - 1
    maps = [
        lambda r, c: (r, c),
        lambda r, c: (c, m - r),
        lambda r, c: (m - r, m - c),
        lambda r, c: (m - c, r),
        lambda r, c: (r, m - c),
        lambda r, c: (m - r, c),
        lambda r, c: (c, r),
        lambda r, c: (m - c, m - r),
    ]
    out = []
    for f in maps:
        cols = [0] * n
        for r, c in sq:
            y, x = f(r, c)
            cols[y] = x
        out.append(tuple(cols))
    return out


@pytest.mark.parametrize("n", [1, 4, 5, 6, 7, 8, 9, 10])
def test_frame_classes_cover_every_solution_once(n):
    """Brute force: every solution's frame. The task frames (depth 0) are one per class:
    weight x (solutions with that frame) summed is the count, each frame of a solution is
    the image of exactly one task frame, the weight is its class's size, and the C search
    of each frame finds exactly the solutions with that frame."""
    sols = solutions(n)
    by_frame = Counter(frame(s) for s in sols)
    words = tasks(n, 0)
    f = fields(words)
    reps = {}
    for i in range(len(words)):
        key = (int(f["a"][i]), int(f["b"][i]), int(f["c"][i]), int(f["d"][i]))
        reps.setdefault(key, []).append(i)
    # the search of each task frame counts the solutions with that frame
    for key, rows in reps.items():
        count = sum(_cpu.cst_count(n, words[i].tobytes())[0] for i in rows)
        weight = int(f["weight"][rows[0]])
        assert count == weight * by_frame.get(key, 0), key
    # the classes of the solutions' frames: each holds one task frame, its size the weight
    classes = {}
    for s in sols:
        cls = frozenset(frame(t) for t in images(s))
        classes.setdefault(cls, set()).add(frame(s))
    for cls in classes:
        inside = [k for k in reps if k in cls]
        assert len(inside) == 1, cls
        assert int(f["weight"][reps[inside[0]][0]]) == len(cls)
    assert sum(int(f["weight"][rows[0]]) * by_frame.get(k, 0) for k, rows in reps.items()) == len(
        sols
    )


def test_layout_and_invariants():
    n, depth = 12, 2
    words = tasks(n, depth)
    f = fields(words)
    mask = (1 << n) - 1
    assert (words[:, 2] & ~np.uint32(mask) == 0).all()
    for i in range(0, len(words), 53):
        a, b, c, d, start = (int(f[k][i]) for k in ("a", "b", "c", "d", "start"))
        col = int(words[i, 2])
        frame_cols = 1 << a | 1 << b | 1 | 1 << (n - 1)
        assert col & frame_cols == frame_cols
        placed = bin(col & ~frame_cols).count("1")
        free_rows = [r for r in range(1, n - 1) if r not in (c, d)]
        assert placed == min(depth, len(free_rows) - 1) and start == free_rows[placed]
        assert int(f["weight"][i]) in (2, 4, 8)
    # tasks are independent: the weighted counts of any split add up
    half = len(words) // 2
    raw = words.tobytes()
    assert (
        _cpu.cst_count(n, raw[: half * 16])[0] + _cpu.cst_count(n, raw[half * 16 :])[0]
        == KNOWN_COUNTS[n]
    )
    assert _cpu.cst_count(n, raw, 2) == _cpu.cst_count(n, raw)  # threads: same count and nodes


@pytest.mark.parametrize("n", [*range(1, 14), pytest.param(16, marks=pytest.mark.slow)])
def test_frames_split_deeper_are_the_tasks_of_that_depth(n):
    """What the GPU's generator runs per frame (nq_cst_split, through cst_split): the frames
    (depth 0) split d deeper are exactly cst_tasks(n, d), task for task and in order, and
    tasks of depth d split once more are those of d + 1."""
    frames = _cpu.cst_tasks(n, 0)
    for depth in range(0, min(max(0, n - 3), 4) + 1):
        assert _cpu.cst_split(n, depth, frames) == _cpu.cst_tasks(n, depth), depth
        if 1 <= depth < min(n - 3, 4):
            assert _cpu.cst_split(n, 1, _cpu.cst_tasks(n, depth)) == _cpu.cst_tasks(n, depth + 1), (
                depth
            )
    # a slice of the frames (as a cluster cuts them) gives its own frames' tasks
    rows = tasks(n, 0)
    if len(rows) > 2:
        odd = rows[1::2].tobytes()
        split = np.frombuffer(_cpu.cst_split(n, 1, odd), np.uint32).reshape(-1, TASK_WORDS)
        assert split.shape[0] == sum(
            len(_cpu.cst_split(n, 1, r.tobytes())) // 16 for r in rows[1::2]
        )
        assert _cpu.cst_count(n, split.tobytes())[0] == _cpu.cst_count(n, odd)[0]


def test_split_rejects_what_is_not_a_task():
    with pytest.raises(ValueError, match="whole number of 16-byte tasks"):
        _cpu.cst_split(12, 1, b"\0" * 15)
    with pytest.raises(ValueError, match="task 0 is not a constellation task of N=12"):
        _cpu.cst_split(12, 1, b"\0" * 16)
    with pytest.raises(ValueError, match="depth must be in 0..9"):
        _cpu.cst_split(12, 10, _cpu.cst_tasks(12, 0))
    assert _cpu.cst_split(12, 2, b"") == b""


def test_task_counts_grow_with_depth():
    counts = [len(tasks(14, d)) for d in range(4)]
    assert counts == sorted(counts) and counts[0] > 100


def test_bad_arguments():
    with pytest.raises(ValueError):
        _cpu.cst_serial(0)
    with pytest.raises(ValueError):
        _cpu.cst_serial(28)
    with pytest.raises(ValueError):
        _cpu.cst_tasks(12, 10)
    with pytest.raises(ValueError):
        _cpu.cst_tasks(12, -1)
    with pytest.raises(ValueError):
        _cpu.cst_count(12, b"\0" * 15)
    with pytest.raises(ValueError):
        _cpu.cst_count(12, b"\0" * 16)  # frame (0, 0, 0, 0): not a frame of N=12
    good = tasks(12, 1)[0].copy()
    bad = good.copy()
    bad[3] ^= 1 << 25  # another weight
    with pytest.raises(ValueError):
        _cpu.cst_count(12, bad.tobytes())


def test_serial_d4_strategy_counts_through_constellations():
    strategy = get("serial-d4")
    assert strategy.device == "cpu"
    assert strategy.open(10, {}).run_once().count == 724


def test_fast_parameters():
    fast = get("fast")
    assert fast.resolve(20) == {"opt": "cst", "depth": 4, "block": 128, "blocks": 0}
    assert [fast.resolve(n)["depth"] for n in (3, 5, 6, 10, 15, 16, 18, 19, 20, 22)] == [
        0,
        2,
        3,
        5,
        5,
        3,
        3,
        3,
        4,
        4,
    ]
    with pytest.raises(InputError):
        fast.resolve(12, {"depth": 10})
    assert fast.resolve(12, {"depth": 9})["depth"] == 9
    with pytest.raises(InputError):
        fast.resolve(12, {"block": 100})
    with pytest.raises(InputError):
        fast.resolve(12, {"opt": "nope"})
    with pytest.raises(InputError, match="tight-u4 needs N >= 4"):
        fast.resolve(3, {"opt": "tight-u4", "depth": 1})
    with pytest.raises(InputError, match="depth must be in 2"):
        fast.resolve(12, {"opt": "tight-u4", "depth": 1})
    assert fast.resolve(12, {"opt": "tight-u4", "depth": 10})["depth"] == 10
    with pytest.raises(InputError, match="cluster cuts the constellation tasks"):
        fast.open_part(12, fast.resolve(12, {"opt": "tight-u4", "depth": 4}))
    assert shared_bytes(19, {"depth": 2, "block": 128}) == (5 * 15 + 1) * 128 * 4
    assert (
        shared_bytes(6, {"depth": 3, "block": 64}) == (5 * 2 + 1) * 64 * 4
    )  # 1 free row, 2 levels kept
    assert shared_bytes(19, {"opt": "tight-u4", "depth": 7, "block": 128}) == 3 * 10 * 128 * 4


def test_shared_memory_is_the_header_s_storage():
    """fast's shared memory per block is the C search's storage (nq_cst_stack_words) at a
    stride of the block size, at every N and depth (at least two levels, and the word
    after the last)."""
    for n in range(1, 28):
        for depth in range(0, max(0, n - 3) + 1):
            words = _cpu.cst_stack_words(n, depth)
            assert shared_bytes(n, {"depth": depth, "block": 96}) == words * 96 * 4, (n, depth)
    with pytest.raises(ValueError, match="depth must be in"):
        _cpu.cst_stack_words(10, 8)
    with pytest.raises(ValueError, match="n must be in"):
        _cpu.cst_stack_words(28, 0)


def test_stack_words_follow_the_header_s_layout():
    """The C storage size (nq_cst_stack_words, what fast's shared memory is) is the header's
    NQ_CST_LEVEL_WORDS words a level, at least two levels, and one word more."""
    import re

    from nqprof.cuda.sources import kernels_dir

    header = (kernels_dir() / "cpu" / "constellations.h").read_text()
    level_words = int(re.search(r"#define NQ_CST_LEVEL_WORDS (\d+)", header).group(1))
    assert level_words == 5
    for n in range(1, 28):
        for depth in range(0, max(0, n - 3) + 1):
            assert _cpu.cst_stack_words(n, depth) == level_words * max(2, n - 2 - depth) + 1, (
                n,
                depth,
            )
