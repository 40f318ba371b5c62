"""Does a small GPU case's time depend on where its buffers lie? One session of fast at N,
K placements of a buffer group made in it (each a fresh allocation, the earlier ones kept so
the addresses differ), the rounds interleaved over the placements (round i uses placement
i mod K, so the host's and the GPU's drift falls on every placement alike), counts verified.

    python3 tools/placement_probe.py --n 8 --n 9 -k 8 -r 80

For each group (counters: the task index and the result; tasks: the task list; both; module:
the kernel's code loaded anew; hold: the stream hold's kernel and mapped flags made anew) it
prints each placement's median (us) in the first and the second half of the rounds and the
spread of the placement medians (standard deviation of their logs, %): a placement effect
shows as medians that differ between placements and agree between the halves."""

from __future__ import annotations

import argparse
import math
import statistics


def spread(values: list[float]) -> float:
    return statistics.stdev(math.log(v) for v in values) * 100 if len(values) > 1 else 0.0


def placements(session, group: str, k: int) -> list[dict]:
    """K sets of the group's buffers, the first the session's own."""
    import numpy as np

    from nqprof.cuda import device
    from nqprof.strategies import block_records
    from nqprof.strategies.fast import KERNELS, STRATEGY

    key = device._context_key(session.drv.Context.get_current())
    sets = [
        {
            "next": session.next,
            "out": session.out,
            "tasks": session.tasks,
            "func": session.func,
            "hold": device.stream_hold(session.drv),
        }
    ]
    host = np.empty(session.ntasks * session.words, np.uint32)
    session.drv.memcpy_dtoh(host, session.tasks)
    for _ in range(k - 1):
        s = dict(sets[0])
        if group in ("counters", "both"):
            s["next"], s["out"] = session.drv.mem_alloc(4), session.counter(2)
        if group in ("tasks", "both"):
            s["tasks"] = session.drv.to_device(host)
        if group == "module":  # the kernel's code loaded anew (its own module)
            module = session.build(
                STRATEGY.sources[0],
                {"NQ_BLOCK": session.block, **block_records.defines(session.params)},
            )
            s["func"] = module.function(KERNELS[session.opt])
            session.allow_shared(s["func"], session.dynamic)
        if group == "hold":  # the stream hold's kernel, flag and counter made anew
            s["hold"] = device.StreamHold(session.drv)
        sets.append(s)
    for s in sets:
        s["key"] = key
    return sets


def install(session, s: dict) -> None:
    from nqprof.cuda import device

    session.next, session.out, session.tasks, session.func = (
        s["next"],
        s["out"],
        s["tasks"],
        s["func"],
    )
    device._HOLDS[s["key"]] = s["hold"]


def probe(n: int, group: str, k: int, rounds: int) -> None:
    from nqprof.problem import known_count
    from nqprof.strategies import get, placement

    s = get("fast")
    placement.TRIALS = 1  # the session's own counters: the groups below are the probe
    session = s.open(n, s.resolve(n, {}))
    try:
        sets = placements(session, group, k)
        times: list[list[float]] = [[] for _ in sets]
        for i in range(k * (rounds + 2)):
            j = i % k
            install(session, sets[j])
            m = session.run_once()
            if m.count != known_count(n):
                raise SystemExit(f"fast N={n} placement {j}: counted {m.count}")
            if i >= 2 * k:
                times[j].append(m.gpu_s)
        half = rounds // 2
        first = [statistics.median(t[:half]) for t in times]
        second = [statistics.median(t[half:]) for t in times]
        whole = [statistics.median(t) for t in times]
        print(
            f"fast N={n} {group:8s} sd {spread(whole):5.2f}% (halves {spread(first):.2f}%, "
            f"{spread(second):.2f}%); us first/second half: "
            + " ".join(f"{a * 1e6:.2f}/{b * 1e6:.2f}" for a, b in zip(first, second, strict=True))
        )
    finally:
        session.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, action="append", default=[])
    ap.add_argument("-k", type=int, default=8)
    ap.add_argument("-r", type=int, default=80)
    ap.add_argument("--group", action="append", default=[])
    args = ap.parse_args()
    for n in args.n or [8, 9]:
        for group in args.group or ["counters", "tasks", "both", "module", "hold"]:
            probe(n, group, args.k, args.r)


if __name__ == "__main__":
    main()
