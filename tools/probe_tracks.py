"""Whether the CPU speed probes track what moved the CPU cases between runs of one storage:
for each pair of consecutive runs, each CPU case's change of median beside the change of
the probe the pytest process took as the case started (``probe_s``) and of the probe its
worker processes took between the rounds (``worker_probe_s``), then how well each probe
predicts the cases' changes: the correlation, and how much of the cases' spread is left
once the probe's change is taken out.

    python tools/probe_tracks.py STORAGE [--quiet]

STORAGE is a pytest-benchmark storage folder (``--benchmark-storage``) of two or more runs
of the same CPU cases.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import statistics


def cpu_cases(path: str) -> dict[tuple[str, int], dict]:
    with open(path) as f:
        run = json.load(f)
    out = {}
    for b in run["benchmarks"]:
        e = b.get("extra_info") or {}
        if e.get("device_kind") == "cpu" and e.get("samples_compute"):
            out[(e["strategy"], int(e["n"]))] = e
    return out


def log_change(a: float | None, b: float | None) -> float | None:
    return math.log(b / a) if a and b else None


def pair_rows(a: dict, b: dict) -> list[tuple[tuple[str, int], float, float | None, float | None]]:
    """(case, its change, the pytest process's probe change, the workers' probe change) of
    every CPU case both runs timed, as log ratios."""
    rows = []
    for key in sorted(k for k in a if k in b):
        ea, eb = a[key], b[key]
        ca, cb = ea["conditions"]["cpu"], eb["conditions"]["cpu"]
        change = log_change(
            statistics.median(ea["samples_compute"]), statistics.median(eb["samples_compute"])
        )
        rows.append(
            (
                key,
                change,
                log_change(ca.get("probe_s"), cb.get("probe_s")),
                log_change(ca.get("worker_probe_s"), cb.get("worker_probe_s")),
            )
        )
    return rows


def tracking(rows: list, column: int) -> str:
    """How well the probe of ``column`` (2: the pytest process's, 3: the workers') tracks
    the cases' changes: correlation, sd of the changes, sd once the probe's is subtracted."""
    pairs = [(r[1], r[column]) for r in rows if r[column] is not None]
    if len(pairs) < 3:
        return "too few cases"
    xs, ys = zip(*pairs, strict=True)
    try:
        corr = f"{statistics.correlation(xs, ys):+.2f}"
    except statistics.StatisticsError:
        corr = "n/a"
    left = statistics.pstdev([x - y for x, y in pairs])
    return (
        f"correlation {corr}, cases' spread {100 * statistics.pstdev(xs):.1f}%, "
        f"{100 * left:.1f}% with the probe's change taken out ({len(pairs)} cases)"
    )


def pct(v: float | None) -> str:
    return "     -" if v is None else f"{100 * math.expm1(v):+6.1f}%"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("storage")
    ap.add_argument("--quiet", action="store_true", help="only the summary of each pair")
    args = ap.parse_args(argv)
    files = sorted(glob.glob(os.path.join(args.storage, "*", "*.json")))
    if len(files) < 2:
        ap.error(f"{args.storage}: fewer than two runs")
    runs = [cpu_cases(f) for f in files]
    for i in range(len(runs) - 1):
        rows = pair_rows(runs[i], runs[i + 1])
        names = " -> ".join(os.path.basename(f) for f in files[i : i + 2])
        print(f"{names}: {len(rows)} CPU cases")
        if not args.quiet:
            for key, change, probe, worker in rows:
                print(
                    f"  {key[0]:10s} N={key[1]:<3d} case {pct(change)}  probe {pct(probe)}"
                    f"  workers' probe {pct(worker)}"
                )
        print(f"  the pytest process's probe: {tracking(rows, 2)}")
        print(f"  the workers' probe:         {tracking(rows, 3)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
