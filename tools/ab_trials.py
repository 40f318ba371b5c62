"""Trials of the interleaved A/B (``nqprof ab``) on a real CPU case: does a change that makes a
case 5% slower get caught, and does an A/A stay quiet, on this machine as it is?

The case: serial's count at N (default 11) done ``reps`` times a round, timed by the worker's
own clock; B does it ``reps * 1.05`` times, so B is 5% slower by construction (more of the
same work, nothing else moved). Each trial is one ``interleave()`` session of ``--pairs``
pairs; ``--busy K`` keeps K cores busy meanwhile with spinning processes (a shared CI runner).

    python tools/ab_trials.py --trials 10 --busy 1
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

try:  # an installed nqprof (a GPU host's site) first; else this tree's sources
    import nqprof  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from nqprof.interleave import Arm, interleave  # noqa: E402
from nqprof.result import Measurement  # noqa: E402
from nqprof.strategies import get  # noqa: E402
from nqprof.strategies.base import Param, Session, Strategy  # noqa: E402


class _Repeated(Session):
    def __init__(self, n, params):
        self.inner = get("serial").open(n, get("serial").resolve(n, {}))
        self.reps = params["reps"]

    def run_once(self):
        t0 = time.perf_counter()
        for _ in range(self.reps):
            m = self.inner.run_once()
        return Measurement(count=m.count, wall_s=time.perf_counter() - t0)

    def close(self):
        self.inner.close()


class Repeated(Strategy):
    name = "serial-repeated"
    title = "trial double: serial's count done reps times a round"
    params = (Param("reps", "counts a round", default=20, lo=1, hi=10_000),)

    def open(self, n, params):
        return _Repeated(n, params)


def _spin() -> None:
    while True:
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=11)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument(
        "--pairs", type=int, default=None, help="pairs a trial (default: auto, as nqprof ab)"
    )
    ap.add_argument("--busy", type=int, default=1, help="cores kept busy meanwhile")
    ap.add_argument("--min-change", type=float, default=5.0, help="percent")
    args = ap.parse_args()
    # the double from this file imported as a module: a worker cannot import the classes of
    # a script's __main__ (nqprof hides it from the processes it starts)
    import ab_trials

    strategy = ab_trials.Repeated()
    slower = max(args.reps + 1, round(args.reps * 1.05))
    spinners = [mp.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for s in spinners:
        s.start()
    print(
        f"serial N={args.n} x{args.reps} (A) against x{slower} (B, +{slower / args.reps - 1:.1%}), "
        f"{args.pairs or 'auto'} pairs a trial, {args.busy} core(s) kept busy, "
        f"{os.cpu_count()} cores"
    )
    tally = {}
    try:
        for kind, b_reps in (("A/B", slower), ("A/A", args.reps)):
            verdicts = []
            for trial in range(args.trials):
                r = interleave(
                    args.n,
                    Arm(strategy, {"reps": args.reps}),
                    Arm(strategy, {"reps": b_reps}),
                    pairs=args.pairs,
                    warmup=1,
                    min_change=args.min_change / 100,
                )
                verdicts.append(r.decision.verdict)
                print(f"{kind} trial {trial + 1}: {r.decision.text()} [{r.stopped}]", flush=True)
            tally[kind] = verdicts
    finally:
        for s in spinners:
            s.kill()
    caught = tally["A/B"].count("slower")
    quiet = sum(v not in ("slower", "faster") for v in tally["A/A"])
    print(
        f"A/B: {caught} of {args.trials} caught as slower; A/A: {quiet} of {args.trials} "
        "gave no faster or slower verdict"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
