"""Run one strategy over N and parameter values and print a table of verified medians.

    python tools/sweep.py feinbube --n 16:18 --param opt=local,rows-left --repeats 5 [--json FILE]

Every run goes through nqprof.runner.solve (watchdog, count verified). A failing
combination prints its one-line error and the sweep goes on.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys

from nqprof.errors import NqprofError
from nqprof.runner import solve


def n_values(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition(":")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("strategy")
    ap.add_argument("--n", default="8:12")
    ap.add_argument("--param", action="append", default=[], help="key=v1,v2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--json")
    args = ap.parse_args()
    axes = {k: v.split(",") for k, _, v in (p.partition("=") for p in args.param)}
    rows = []
    print(f"{'N':>3} {'params':<40} {'count':>14} {'gpu_s':>10} {'wall_s':>10}", flush=True)
    for n in n_values(args.n):
        for combo in itertools.product(*axes.values()):
            params = dict(zip(axes, combo))
            label = ",".join(f"{k}={v}" for k, v in params.items())
            try:
                rec = solve(args.strategy, n, params, repeats=args.repeats, warmup=args.warmup, timeout=args.timeout)
            except NqprofError as exc:
                print(f"{n:>3} {label:<40} ERROR {exc}", flush=True)
                rows.append({"n": n, "params": params, "error": str(exc)})
                continue
            gpu = f"{rec.gpu_s:.4f}" if rec.gpu_s is not None else "-"
            print(f"{n:>3} {label:<40} {rec.count:>14} {gpu:>10} {rec.wall_s:>10.4f}", flush=True)
            rows.append(rec.to_dict())
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
