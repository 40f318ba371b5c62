#!/usr/bin/env python3
"""Start constellations on the CPU against the mirror-symmetry searches they replace.

    python bench/cst_cpu.py --twin 16 --pool 17 --repeats 3

``--twin N``: ``serial`` (Somers' search, mirror symmetry, one thread) against
``serial-d4``'s round (``cst_count`` over the constellation tasks of depth 0, one thread).
``--pool N``: the mirror pool multicore ran before (``count_boards`` over ``expand(N, 4)``,
every online CPU) against multicore's round now (``cst_count`` over the tasks of its
default depth, every online CPU). Tasks and boards are made once, outside the timing;
the runs alternate; medians of ``--repeats``; every count is checked against the known
count (a mismatch exits with 1).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from cpu_reference import (
    positive_n,
)  # this folder's: N as an argparse type (a bad N is a usage error)

from nqprof import _cpu
from nqprof.problem import known_count
from nqprof.strategies.multicore import _default_depth
from nqprof.subproblems import expand


def timed(name: str, n: int, call) -> float:
    t0 = time.perf_counter()
    count = call()
    seconds = time.perf_counter() - t0
    if count != known_count(n):
        raise SystemExit(f"error: {name} N={n} counted {count}, expected {known_count(n)}")
    return seconds


def pair(title: str, n: int, repeats: int, before, after, names: tuple[str, str]) -> None:
    a, b = [], []
    for _ in range(repeats):
        a.append(timed(names[0], n, before))
        b.append(timed(names[1], n, after))
    ma, mb = statistics.median(a), statistics.median(b)
    print(
        f"{title} N={n}: {names[0]} {ma:.3f} s, {names[1]} {mb:.3f} s "
        f"(medians of {repeats}): {names[1]} / {names[0]} = {mb / ma:.3f}, {ma / mb:.2f}x faster",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--twin", type=positive_n, nargs="*", default=[], metavar="N")
    ap.add_argument("--pool", type=positive_n, nargs="*", default=[], metavar="N")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    print(f"{_cpu.cpu_count()} online CPUs")
    for n in args.twin:
        tasks = _cpu.cst_tasks(n, 0)
        pair(
            "twin",
            n,
            args.repeats,
            lambda n=n: _cpu.serial(n),
            lambda n=n, tasks=tasks: _cpu.cst_count(n, tasks)[0],
            ("serial", "serial-d4"),
        )
    for n in args.pool:
        boards, tasks = expand(n, 4), _cpu.cst_tasks(n, _default_depth(n))
        pair(
            "pool",
            n,
            args.repeats,
            lambda n=n, boards=boards: (
                boards.multiplier
                * _cpu.count_boards(n, boards.cols, boards.ld, boards.rd, boards.row, 0)
            ),
            lambda n=n, tasks=tasks: _cpu.cst_count(n, tasks, 0)[0],
            ("mirror pool (multicore before)", "multicore"),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
