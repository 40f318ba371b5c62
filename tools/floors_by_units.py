"""How wide are a pair of runs' GPU floors with fewer units? Re-decide every GPU case of two
saved runs (pytest-benchmark JSON) with the rounds' units as recorded, then with every
MERGE consecutive units taken as one (a run of 2 processes x 2 sessions read as 2 processes):
the same rounds, only the noise model changed.

    python3 tools/floors_by_units.py A.json B.json [--merge 2] [--min-change 0.05]
"""

from __future__ import annotations

import argparse
import json

from nqprof.analysis import stats

CPU = ("serial", "serial-d4", "multicore")


def cases(path: str) -> dict[str, dict]:
    return {b["name"]: b["extra_info"] for b in json.load(open(path))["benchmarks"]}


def decide(a: dict, b: dict, merge: int, min_change: float) -> stats.Decision:
    def units(info: dict) -> list[int]:
        return [u // merge for u in info["samples_process"]]

    return stats.decide(
        a["samples_compute"],
        b["samples_compute"],
        min_effect=min_change,
        processes_a=units(a),
        processes_b=units(b),
        min_change=min_change,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--merge", type=int, default=2)
    ap.add_argument("--min-change", type=float, default=0.05)
    args = ap.parse_args()
    a, b = cases(args.a), cases(args.b)
    names = [k for k in a if k in b and a[k].get("strategy") not in CPU and a[k].get("gpu_s")]
    for merge in (1, args.merge):
        verdicts = [decide(a[k], b[k], merge, args.min_change) for k in names]
        wide = sum(stats.wider_than(d.floor, args.min_change) for d in verdicts)
        called = [
            f"{k} {d.verdict}"
            for k, d in zip(names, verdicts, strict=True)
            if d.verdict in ("faster", "slower")
        ]
        print(
            f"units as recorded{'' if merge == 1 else f', every {merge} merged'}: "
            f"{len(names)} GPU cases, {wide} floors wider than {args.min_change:.0%}, "
            f"faster/slower: {', '.join(called) or 'none'}"
        )


if __name__ == "__main__":
    main()
