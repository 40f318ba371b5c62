#!/usr/bin/env python3
"""Time nqprof's C CPU references against a classic recursive solver.

    python bench/cpu_reference.py 15 16 --repeats 5
    python bench/cpu_reference.py --multicore 17 --repeats 5

The comparison: ``kernels/cpu/recursive_reference.c`` (recursive bitmask search with
mirror symmetry) is compiled with ``gcc -O3`` into a temporary folder, and it and
``nqprof._cpu.serial`` run ``--repeats`` times each for every N, alternating, so that a
change in machine load hits both. The table gives the medians and the ratio
reference / nqprof (above 1: nqprof is faster). The reference times only its count (its
own monotonic clock); nqprof is timed around the ``serial`` call.

``--multicore N...`` times ``nqprof._cpu.count_boards`` over ``expand(N, --depth)`` on
``--threads`` workers (default: all online CPUs) against ``serial(N)`` and prints the
speedup. Every count is checked against the known count; a mismatch exits with 1.

nqprof._cpu must be built first: ``python setup.py build_ext --inplace``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REFERENCE_SOURCE = REPO / "kernels" / "cpu" / "recursive_reference.c"

try:
    import nqprof  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(REPO / "src"))

from nqprof.problem import KNOWN_COUNTS, validate_n  # noqa: E402
from nqprof.subproblems import expand  # noqa: E402

try:
    from nqprof import _cpu  # noqa: E402
except ImportError as exc:  # pragma: no cover - depends on the build
    sys.exit(f"nqprof._cpu is not built ({exc}); run: python setup.py build_ext --inplace")

REFERENCE_FLAGS = ["-O3"]


class CountError(Exception):
    pass


def build_reference(cc: str, workdir: Path) -> tuple[Path, list[str]]:
    exe = workdir / "recursive_reference"
    cmd = [cc, *REFERENCE_FLAGS, "-o", str(exe), str(REFERENCE_SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"building the reference failed: {' '.join(cmd)}\n{proc.stderr.strip()}")
    return exe, cmd


def check(what: str, n: int, got: int) -> None:
    if got != KNOWN_COUNTS[n]:
        raise CountError(f"{what} N={n}: got {got}, expected {KNOWN_COUNTS[n]}")


def run_reference(exe: Path, n: int) -> float:
    out = subprocess.run([str(exe), str(n)], capture_output=True, text=True, check=True).stdout
    count, seconds = out.split()
    check("reference", n, int(count))
    return float(seconds)


def run_serial(n: int) -> float:
    t0 = time.perf_counter()
    count = _cpu.serial(n)
    seconds = time.perf_counter() - t0
    check("nqprof serial", n, count)
    return seconds


def run_boards(n: int, sub, threads: int) -> tuple[float, float]:
    """Wall seconds and process CPU seconds (all threads) of one count_boards call."""
    c0, t0 = time.process_time(), time.perf_counter()
    count = _cpu.count_boards(n, sub.cols, sub.ld, sub.rd, sub.row, threads=threads)
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    check(f"nqprof count_boards(threads={threads})", n, sub.multiplier * count)
    return seconds, cpu_seconds


def fmt(seconds: float) -> str:
    return f"{seconds:.4f}"


def table_line(widths: Sequence[int], cells: Sequence[object]) -> str:
    """A line of a table: each cell right-aligned in its column's width, two spaces apart."""
    return "  ".join(f"{cell:>{width}}" for width, cell in zip(widths, cells, strict=True))


def print_header(columns: dict[str, int]) -> list[int]:
    """Print the column titles (title -> width) and a rule under them; the widths."""
    widths = list(columns.values())
    header = table_line(widths, list(columns))
    print(header)
    print("-" * len(header))
    return widths


def compare(ns: list[int], repeats: int, cc: str) -> None:
    with tempfile.TemporaryDirectory(prefix="nqprof-cpuref-") as tmp:
        exe, cmd = build_reference(cc, Path(tmp))
        print(f"reference: {' '.join(cmd[:-3] + [REFERENCE_SOURCE.relative_to(REPO).as_posix()])}")
        print(
            "nqprof._cpu: "
            f"{Path(_cpu.__file__).name} (setup.py: -O3 -std=c11 -pthread; "
            f"Python CFLAGS: {sysconfig.get_config_var('CFLAGS') or '-'})"
        )
        print(f"medians of {repeats} runs each, runs alternating\n")
        widths = print_header(
            {
                "N": 3,
                "reference s": 12,
                "nqprof s": 12,
                "ref/nqprof": 10,
                "min ref": 9,
                "min nqprof": 10,
            }
        )
        for n in ns:
            ref_times, our_times = [], []
            for _ in range(repeats):
                ref_times.append(run_reference(exe, n))
                our_times.append(run_serial(n))
            ref_med, our_med = statistics.median(ref_times), statistics.median(our_times)
            ratio = ref_med / our_med if our_med > 0 else float("nan")
            mins = fmt(min(ref_times)), fmt(min(our_times))
            print(
                table_line(widths, (n, fmt(ref_med), fmt(our_med), f"{ratio:.3f}", *mins)),
                flush=True,
            )


def multicore(ns: list[int], repeats: int, threads: int, depth: int) -> None:
    cores = _cpu.cpu_count()
    workers = threads or cores
    print(
        f"\nmulticore: count_boards over expand(N, {depth}), {workers} threads, {cores} online "
        f"CPUs; medians of {repeats} runs each, runs alternating\n"
    )
    widths = print_header(
        {
            "N": 3,
            "boards": 7,
            "serial s": 10,
            "multicore s": 11,
            "speedup": 7,
            "per thread": 10,
            "cpu/wall": 8,
        }
    )
    for n in ns:
        sub = expand(n, min(depth, n))
        serial_times, multi_times, busy = [], [], []
        for _ in range(repeats):
            serial_times.append(run_serial(n))
            wall, cpu = run_boards(n, sub, threads)
            multi_times.append(wall)
            busy.append(cpu / wall if wall > 0 else float("nan"))
        s_med, m_med = statistics.median(serial_times), statistics.median(multi_times)
        speedup = s_med / m_med if m_med > 0 else float("nan")
        cells = [n, len(sub), fmt(s_med), fmt(m_med)]
        cells += [f"{x:.2f}" for x in (speedup, speedup / workers, statistics.median(busy))]
        print(table_line(widths, cells), flush=True)
    print(
        "\ncpu/wall: CPU seconds of all threads per wall second during count_boards, i.e. the "
        "cores it actually got (below the thread count when other processes compete)."
    )


def positive_n(text: str) -> int:
    try:
        return validate_n(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "n", nargs="*", type=positive_n, help="board sizes for the serial comparison"
    )
    parser.add_argument("--repeats", type=int, default=5, help="runs per N and program (default 5)")
    parser.add_argument(
        "--multicore",
        nargs="+",
        type=positive_n,
        default=[],
        metavar="N",
        help="also time count_boards on all workers against serial at these N",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="workers for --multicore (default 0: one per online CPU)",
    )
    parser.add_argument(
        "--depth", type=int, default=3, help="rows expanded into boards for --multicore (default 3)"
    )
    parser.add_argument(
        "--cc",
        default=os.environ.get("CC", "gcc"),
        help="C compiler for the reference (default $CC or gcc)",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.threads < 0:
        parser.error("--threads must be >= 0")
    if args.depth < 1:
        parser.error("--depth must be >= 1")
    if not args.n and not args.multicore:
        parser.error("give at least one N, or --multicore N")
    if args.n and shutil.which(args.cc) is None:
        parser.error(f"C compiler {args.cc!r} not found (use --cc)")
    try:
        if args.n:
            compare(args.n, args.repeats, args.cc)
        if args.multicore:
            multicore(args.multicore, args.repeats, args.threads, args.depth)
    except CountError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
