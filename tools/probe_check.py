"""Whether the CPU speed probe sees what moved a CPU case's rounds: each case run twice with
``nqprof.runner.solve``, once as the host is and once with every core kept busy from
``--after`` seconds on (after the case's start and the probe the pytest process takes then,
while its rounds run). For each case: the change of its median, of the probe its worker
processes took between the rounds (conditions.worker_probes), of the probe taken in this
process as it started, and the other work the CPU watch saw (other_busy_cores).

The load here shares the cores' time. The probe is a median of short repeats, each shorter
than a scheduler's slice, so it leaves that out by design: the other work column shows it.
What the workers' probe is for is a core whose speed moved (its clock, a busy sibling
thread), which a probe on that core at that moment sees and one taken elsewhere does not.

    python tools/probe_check.py [--after 0.3] [--cases serial:12,serial:13,serial-d4:13]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import threading


def burn(stop) -> None:
    while not stop.is_set():
        pass


def run(strategy: str, n: int, after: float | None) -> dict:
    from nqprof.runner import solve

    stop, procs = mp.Event(), []

    def load() -> None:
        for _ in range(os.cpu_count() or 1):
            p = mp.Process(target=burn, args=(stop,), daemon=True)
            p.start()
            procs.append(p)

    timer = threading.Timer(after, load) if after is not None else None
    if timer:
        timer.start()
    try:
        record = solve(strategy, n, {}, repeats=None, warmup=1)
    finally:
        if timer:
            timer.cancel()
        stop.set()
        for p in procs:
            p.join(5)
    assert record.verified, record
    cpu = record.conditions["cpu"]
    return {"median": record.wall_s if record.gpu_s is None else record.gpu_s, **cpu}


def cases(text: str) -> list[tuple[str, int]]:
    """``STRATEGY:N,...`` as (strategy, N) pairs (argparse's one-line error otherwise)."""
    out = []
    for case in text.split(","):
        strategy, _, n = case.partition(":")
        if not strategy or not n.isdigit():
            raise argparse.ArgumentTypeError(f"{case!r}: not STRATEGY:N")
        out.append((strategy, int(n)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--after", type=float, default=0.3)
    parser.add_argument(
        "--cases", type=cases, default="serial:12,serial:13,serial-d4:13,multicore:12"
    )
    args = parser.parse_args()
    print(f"{'case':16} {'median':>8} {'worker probe':>13} {'start probe':>12} {'other work':>11}")
    for strategy, n in args.cases:
        quiet, loaded = run(strategy, n, None), run(strategy, n, args.after)

        def change(key: str, quiet=quiet, loaded=loaded) -> str:
            return f"{100 * (loaded[key] / quiet[key] - 1):+.1f}%"

        busy = f"{quiet['other_busy_cores']} -> {loaded['other_busy_cores']}"
        print(
            f"{strategy + ' N=' + str(n):16} {change('median'):>8} {change('worker_probe_s'):>13} "
            f"{change('probe_s'):>12} {busy:>11}"
        )


if __name__ == "__main__":
    import sys

    from nqprof.errors import NqprofError

    try:
        main()
    except NqprofError as exc:
        print(f"probe_check.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
