"""How heavy the tails of CPU cases' moves between runs are: for every pair of runs of one
storage folder (8 or more CPU cases timed in both, by time), each case's log change about
the common move (the median of all, or of its strategy's where four or more and larger, as
``nqprof compare`` takes it), over the pair's robust spread (1.4826 x the median absolute
deviation); then how often that ratio passes 3, 4, 6 and 8 beside a normal distribution and
Student's t with 2 degrees of freedom at the same robust spread
(:data:`nqprof.analysis.comparing.SCATTER_DF`).

    python tools/cpu_scatter_tails.py [FOLDER ...]   (default: docs/results and tests/data)

A folder's runs are its pytest-benchmark JSON files (``.json``, ``.json.gz``) anywhere below
it, paired within the folder that holds them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
from pathlib import Path

from nqprof.spread import t_cdf

LEVELS = (3.0, 4.0, 6.0, 8.0)
#: One robust spread (1.4826 x MAD, MAD / 0.6745) in units of the scale of t with 2 degrees
#: of freedom at the same MAD (MAD / sqrt(2/3): sqrt(2/3) is the median of its |t|).
T2_PER_SPREAD = math.sqrt(2 / 3) / 0.6745


def cpu_medians(path: Path) -> dict[tuple, float] | None:
    """The median time of each CPU case a run timed by time (None: not a run)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt") as f:
            run = json.load(f)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(run, dict) or "benchmarks" not in run:
        return None
    out = {}
    for b in run["benchmarks"]:
        e = b.get("extra_info") or {}
        if e.get("device_kind") != "cpu" or not e.get("samples_compute"):
            continue
        if (e.get("instructions") or {}).get("count"):
            continue
        key = (e["strategy"], e["n"], json.dumps(e.get("params"), sort_keys=True))
        out[key] = statistics.median(e["samples_compute"])
    return out


def ratios(a: dict[tuple, float], b: dict[tuple, float]) -> list[float]:
    """Each case's |log change - common move| over the pair's robust spread."""
    keys = [k for k in a if k in b and a[k] > 0 and b[k] > 0]
    if len(keys) < 8:
        return []
    moves = {k: math.log(b[k] / a[k]) for k in keys}
    everything = statistics.median(moves.values())
    by: dict[str, list[float]] = {}
    for k in keys:
        by.setdefault(k[0], []).append(moves[k])
    centre = {
        k: max(everything, statistics.median(by[k[0]]) if len(by[k[0]]) >= 4 else 0.0, key=abs)
        for k in keys
    }
    deviations = [abs(moves[k] - centre[k]) for k in keys]
    spread = 1.4826 * statistics.median(deviations)
    return [d / spread for d in deviations] if spread > 0 else []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", default=["docs/results", "tests/data"])
    args = ap.parse_args(argv)
    groups: dict[Path, list[tuple[Path, dict]]] = {}
    for folder in args.folders:
        for path in sorted(Path(folder).rglob("*.json*")):
            medians = cpu_medians(path)
            if medians and len(medians) >= 8:
                groups.setdefault(path.parent, []).append((path, medians))
    seen, pairs = [], 0
    for runs in groups.values():
        for i in range(len(runs)):
            for j in range(i + 1, len(runs)):
                r = ratios(runs[i][1], runs[j][1])
                if r:
                    seen += r
                    pairs += 1
    if not seen:
        ap.error("no pair of runs with 8 or more CPU cases")
    print(f"{pairs} pairs of runs, {len(seen)} CPU cases")
    for q in LEVELS:
        past = sum(1 for x in seen if x > q) / len(seen)
        normal = 2 * (1 - statistics.NormalDist().cdf(q))
        t2 = 2 * (1 - t_cdf(q * T2_PER_SPREAD, 2))
        print(
            f"past {q:g} robust spreads: {100 * past:.2f}% of cases "
            f"(normal {100 * normal:.3f}%, t with 2 degrees of freedom {100 * t2:.2f}%)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
