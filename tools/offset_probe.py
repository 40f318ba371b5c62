"""Per-process medians of GPU cases: where does a case's time depend on its worker process?

    python3 tools/offset_probe.py RUN.json [RUN.json ...]      # pytest-benchmark runs
    python3 tools/offset_probe.py --solve S:N [-k 4] [-r 100]  # K fresh `nqprof solve`s
    python3 tools/offset_probe.py --reopen S:N [-k 4] [-r 100] # K sessions in one process
    ... --reopen S:N --keep-context     # the same, the CUDA context kept between sessions

For each case: each run's process medians (us), each process's offset from the run's first
process (%), and the spread of all process medians (standard deviation of their logs, %)."""

from __future__ import annotations

import argparse
import collections
import json
import math
import statistics
import subprocess
import sys


def by_process(samples, processes):
    groups = collections.defaultdict(list)
    for x, p in zip(samples, processes, strict=True):
        groups[p].append(x)
    return {p: statistics.median(xs) for p, xs in sorted(groups.items())}


def report(cases: dict[str, list[dict[int, float]]]) -> None:
    for name, runs in cases.items():
        meds = [m for run in runs for m in run.values()]
        sd = statistics.stdev(math.log(m) for m in meds) * 100 if len(meds) > 1 else 0.0
        offsets = [
            " ".join(f"{(m / run[0] - 1) * 100:+5.1f}" for p, m in run.items() if p) for run in runs
        ]
        firsts = " ".join(f"{run[0] * 1e6:.2f}" for run in runs)
        print(
            f"{name:28s} sd {sd:5.2f}%  first-process us: {firsts}  others vs first %: "
            + " | ".join(offsets)
        )


def from_runs(paths: list[str]) -> dict[str, list[dict[int, float]]]:
    cases = collections.defaultdict(list)
    for path in paths:
        for b in json.load(open(path))["benchmarks"]:
            ei = b.get("extra_info", {})
            if ei.get("gpu_s") and ei.get("samples_process"):
                cases[b["name"]].append(by_process(ei["samples_compute"], ei["samples_process"]))
    return cases


def from_solves(specs: list[str], k: int, rounds: int) -> dict[str, list[dict[int, float]]]:
    cases = collections.defaultdict(list)
    for _ in range(k):
        for spec in specs:
            strategy, n = spec.split(":")
            out = subprocess.run(
                [
                    "timeout",
                    "120",
                    "nqprof",
                    "solve",
                    n,
                    "-s",
                    strategy,
                    "-r",
                    str(rounds),
                    "-w",
                    "3",
                    "--json",
                    "-q",
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            rec = json.loads(out)
            cases[f"solve {spec}"].append(by_process(rec["samples"], rec["round_process"]))
    return cases


def from_reopens(
    specs: list[str], k: int, rounds: int, keep_context: bool = False
) -> dict[str, list[dict[int, float]]]:
    """K sessions of each case opened and closed one after another in this process (each its
    own CUDA context; with ``keep_context`` one context for all, held between them: only
    the sessions' modules and buffers are made anew), their rounds' CUDA-event times, counts
    verified; the seconds each open and close took are printed."""
    import time

    from nqprof.problem import known_count
    from nqprof.strategies import get

    held = None
    if keep_context:
        from nqprof.cuda.device import driver

        held = driver().Device(0).retain_primary_context()
    cases = collections.defaultdict(list)
    for spec in specs:
        strategy, n = spec.split(":")
        s, n = get(strategy), int(n)
        params = s.resolve(n, {})
        medians, opens, closes = {}, [], []
        for j in range(k):
            t0 = time.perf_counter()
            session = s.open(n, params)
            opens.append(time.perf_counter() - t0)
            times = []
            for i in range(rounds + 3):
                m = session.run_once()
                if m.count != known_count(n):
                    raise SystemExit(f"{spec}: counted {m.count}")
                if i >= 3:
                    times.append(m.gpu_s)
            t0 = time.perf_counter()
            session.close()
            closes.append(time.perf_counter() - t0)
            medians[j] = statistics.median(times)
        label = f"{'keep' if keep_context else 'reopen'} {spec}"
        print(
            f"{label}: opens took "
            + " ".join(f"{t:.3f}" for t in opens)
            + " s, closes "
            + " ".join(f"{t:.3f}" for t in closes)
            + " s"
        )
        cases[label].append(medians)
    if held is not None:
        held.detach()
    return cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--solve", action="append", default=[])
    ap.add_argument("--reopen", action="append", default=[])
    ap.add_argument("--keep-context", action="store_true")
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("-r", type=int, default=100)
    args = ap.parse_args()
    if args.runs:
        report(from_runs(args.runs))
    if args.solve:
        report(from_solves(args.solve, args.k, args.r))
    if args.reopen:
        report(from_reopens(args.reopen, args.k, args.r, args.keep_context))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
