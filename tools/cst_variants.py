"""Time the constellation kernel's build and launch choices on one GPU, every count verified.

The compile-time switches of kernels/constellation.cu (NQ_UNROLL, and any -D define a
trial build of the kernel reads: --variants 'A=1;A=0,B=2' builds each list of defines),
the block size and the host depth, each built and timed with CUDA events in a process of
its own (fast's own session: the same tasks, grid sizing and timer as
`nqprof solve -s fast`):

    python3 tools/cst_variants.py --n 16,18,19 --rounds 3 [--blocks 128] [--unroll 4]
        [--depth 3,4] [--variants DEFINES;...] [-o FILE.json]

Prints one line per (N, variant, block, unroll, depth): the median GPU time of the
rounds, the grid, registers, blocks per SM and the count check.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys


def measure(
    n: int, block: int, unroll: int, rounds: int, depth: int | None, variant: str = ""
) -> dict:
    from nqprof.problem import known_count
    from nqprof.strategies import fast

    extra = {"NQ_UNROLL": unroll}
    for item in filter(None, variant.split(",")):
        name, _, value = item.partition("=")
        extra[name] = int(value)
    build = fast.FastSession.build

    def build_with(self, source, defines=None):
        return build(self, source, {**(defines or {}), **extra})

    params = {
        "opt": "cst",
        "depth": fast._default_depth(n) if depth is None else depth,
        "block": block,
    }
    fast.FastSession.build = build_with
    try:
        session = fast.FastSession("fast", n, params)
        try:
            session.run_once()  # warm-up
            runs = [session.run_once() for _ in range(rounds)]
            notes = list(session.notes)
        finally:
            session.close()
    finally:
        fast.FastSession.build = build
    want = known_count(n)
    bad = [m.count for m in runs if m.count != want]
    return {
        "variant": variant,
        "n": n,
        "block": block,
        "unroll": unroll,
        "depth": params["depth"],
        "gpu_s": [m.gpu_s for m in runs],
        "median_s": statistics.median(m.gpu_s for m in runs),
        "count": runs[0].count,
        "verified": not bad,
        "notes": [x for x in notes if "persistent" in x],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="16,18,19", help="comma-separated N")
    ap.add_argument("--blocks", default="128")
    ap.add_argument("--unroll", default="4")
    ap.add_argument(
        "--depth", default=None, help="comma-separated depths (fast's default if not given)"
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--variants", default="", help="';'-separated builds, each NAME=VALUE,... (-D defines)"
    )
    ap.add_argument("-o", "--output", help="write the rows as JSON")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # N,block,unroll: measure here, print JSON
    args = ap.parse_args(argv)
    if args.one:
        n, block, unroll = args.one.split(",")
        depth = None if args.depth is None else int(args.depth)
        print(
            json.dumps(measure(int(n), int(block), int(unroll), args.rounds, depth, args.variants))
        )
        return 0
    depths = [None] if args.depth is None else [int(x) for x in args.depth.split(",")]
    rows, failed = [], False

    def ints(text: str) -> list[int]:
        return [int(x) for x in text.split(",")]

    variants = args.variants.split(";")
    for variant in variants:
        for item in filter(None, variant.split(",")):
            name, eq, value = item.partition("=")
            if not (name.isidentifier() and eq and value.lstrip("-").isdigit()):
                ap.error(f"--variants: {item!r} is not NAME=INTEGER")
    for n, variant, block, unroll, depth in itertools.product(
        ints(args.n), variants, ints(args.blocks), ints(args.unroll), depths
    ):
        if depth is not None and not 0 <= depth <= max(0, n - 3):
            continue
        # a process each: one CUDA context per process, a crash costs one row
        cmd = [
            sys.executable,
            __file__,
            "--one",
            f"{n},{block},{unroll}",
            "--rounds",
            str(args.rounds),
            "--variants",
            variant,
        ] + ([] if depth is None else ["--depth", str(depth)])
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            print(
                f"{variant} N={n:2d} block {block} unroll {unroll} "
                f"depth {depth}: failed ({done.returncode})\n" + done.stderr[-2000:],
                flush=True,
            )
            failed = True
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        failed |= not row["verified"]
        print(
            f"{variant:16s} N={n:2d} block {block:4d} unroll {unroll} depth {row['depth']}: "
            f"{row['median_s'] * 1e3:10.3f} ms (median of {args.rounds}) "
            f"count {row['count']} {'verified' if row['verified'] else 'WRONG'}; "
            + "; ".join(row["notes"]),
            flush=True,
        )
    if args.output:
        with open(args.output, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
