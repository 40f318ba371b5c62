"""Are a worker's rotated sessions independent draws, as its processes are?

    python3 tools/units_by_worker.py RUN.json [RUN.json ...]

For the GPU cases whose workers took the rounds in turn over K sessions
(nqprof.strategies.rotation): each round's worker (``samples_process``) and its session
there (``round_session``). If a session's level is all there is, a worker's mean log session
median varies as the sessions do, divided by K; a share of the level fixed by the process
shows as more. Per strategy (cases pooled, every run): the sessions' standard deviation
within a worker, that of the workers' means against what the sessions alone would give,
and the variance ratio F with its degrees of freedom and p (one-way analysis of
variance, workers the groups)."""

from __future__ import annotations

import argparse
import collections
import json
import math
import statistics
import sys


def f_sf(f: float, d1: int, d2: int) -> float:
    """P(F > f) for F(d1, d2), by the regularized incomplete beta function."""
    sys.path.insert(0, "src")
    from nqprof.spread import _beta_inc

    x = d2 / (d2 + d1 * f)
    return _beta_inc(d2 / 2, d1 / 2, x)


def case_groups(extra: dict) -> list[list[float]] | None:
    """The log session medians of each worker of one case's run, or None."""
    samples, units = extra.get("samples_compute"), extra.get("samples_process")
    sessions = extra.get("round_session")
    if not samples or not units or not sessions or max(sessions) < 1:
        return None
    by = collections.defaultdict(list)
    for t, u, s in zip(samples, units, sessions, strict=True):
        by[int(u), int(s)].append(t)
    workers = collections.defaultdict(list)
    for (u, _), ts in sorted(by.items()):
        if len(ts) >= 2:
            workers[u].append(math.log(statistics.median(ts)))
    groups = [g for g in workers.values() if len(g) >= 2]
    return groups if len(groups) >= 2 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    args = ap.parse_args()
    by_strategy = collections.defaultdict(list)
    for path in args.runs:
        for b in json.load(open(path))["benchmarks"]:
            extra = b.get("extra_info", {})
            groups = case_groups(extra)
            if groups:
                by_strategy[extra["strategy"]].append(groups)
    print(
        f"{'strategy':10s} {'cases':>5s} {'sd sessions':>11s} {'sd workers':>10s} "
        f"{'expected':>8s} {'F':>6s} {'df':>8s} {'p':>7s}"
    )
    for strategy, cases in sorted(by_strategy.items()):
        ss_within = df_within = ss_between = df_between = 0.0
        for groups in cases:
            means = [statistics.fmean(g) for g in groups]
            grand = statistics.fmean(x for g in groups for x in g)
            ss_within += sum((x - m) ** 2 for g, m in zip(groups, means, strict=True) for x in g)
            df_within += sum(len(g) - 1 for g in groups)
            ss_between += sum(len(g) * (m - grand) ** 2 for g, m in zip(groups, means, strict=True))
            df_between += len(groups) - 1
        within = ss_within / df_within
        between = ss_between / df_between
        f = between / within if within > 0 else float("inf")
        k = statistics.fmean(len(g) for groups in cases for g in groups)
        worker_sd = math.sqrt(between / k)
        expected = math.sqrt(within / k)
        p = f_sf(f, int(df_between), int(df_within)) if within > 0 else 0.0
        print(
            f"{strategy:10s} {len(cases):5d} {math.sqrt(within) * 100:10.2f}% "
            f"{worker_sd * 100:9.2f}% {expected * 100:7.2f}% {f:6.2f} "
            f"{int(df_between):>3d},{int(df_within):<4d} {p:7.4f}"
        )


if __name__ == "__main__":
    main()
