#!/usr/bin/env python3
"""nqprof's timer beside NVBench's, on the same launches (run on a GPU host).

For each case (strategy x N, default feinbube, fast, cdp-bp at N=10..16):

* nqprof: ``nqprof.runner.solve`` in its watchdog worker, CUDA events around the round's
  launches behind nqprof's stream hold; the median GPU time of ``--rounds`` rounds;
* NVBench (the ``cuda-bench`` wheel): the same strategy session, opened in a child process,
  whose rounds run inside an NVBench state's ``exec`` with NVBench's own timer
  (``timer=True``): the session's timed region (``GpuSession.generation``) starts and stops
  NVBench's timer, which flushes L2, synchronizes, and queues NVBench's blocking kernel before
  its start event (the job nqprof's stream hold does on nqprof's side; the hold is not used
  here: NVBench's synchronization would wait for it to time out), on the stream both use (the
  legacy default stream, handed to NVBench with ``State.set_stream``). Not ``sync=True``: that
  tag turns NVBench's blocking kernel off, and its events then time the host's launch latency
  too (``--sync`` measures that way); the round reads its counters back only after the timed
  region, once NVBench's stop() has released the stream. NVBench decides how many samples (its
  stdrel criterion: min time, max noise), drops throttled ones; its median
  (``nv/cold/time/gpu/median``; the mean where that summary is missing).
* child warm and child cold: nqprof's own timer in the NVBench child's sessions, as nqprof
  times and after NVBench's L2 flush (``--cold-rounds`` each): whether a difference is the
  timers', the cache's state or the process's.

Every round NVBench ran is counted and its count verified against the known count; a wrong
count or a missing case fails the run (exit 1). Prints one row per case with the ratio
NVBench / nqprof and writes both measurements as JSON.

    NQPROF_WHEELHOUSE=.matrix/carry-nvbench/wheels tools/gpuhost.sh \
      python3 tools/nvbench_compare.py --json out/nvbench-compare.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD_TIMEOUT_S = 400


def parse_cases(strategies: str, ns: str) -> list[tuple[str, int]]:
    from nqprof.problem import parse_n_list

    return [(s, n) for s in strategies.split(",") if s for n in parse_n_list(ns)]


class _NullStream:
    """The legacy default stream (handle 0), for ``State.set_stream``."""

    def __cuda_stream__(self):
        return (0, 0)


def nvbench_child(args) -> int:
    """Time every case with NVBench in this process; write what it measured to args.out."""
    from cuda import bench

    from nqprof import strategies
    from nqprof.problem import known_count

    cases = parse_cases(args.strategies, args.n)
    sessions: dict[str, object] = {}
    calls: dict[str, dict] = {}

    class _Untimed:  # what run_once's Measurement reads of nqprof's timer
        seconds = 0.0
        wall_seconds = 0.0

    def bench_case(state):
        key = state.get_string("case")
        name, n = key.split("/")[0], int(key.split("/")[1])
        strategy = strategies.get(name)
        if key not in sessions:
            sessions[key] = strategy.open(n, strategy.resolve(n, {}))
        session = sessions[key]
        record = calls.setdefault(key, {"calls": 0, "wrong": [], "regions": 0, "stream": None})
        try:  # nqprof launches on the legacy default stream: NVBench's events go there too
            state.set_stream(_NullStream())
            record["stream"] = "legacy default"
        except Exception as exc:  # noqa: BLE001 - its own (blocking) stream orders the same
            record["stream"] = f"NVBench's own ({type(exc).__name__}: {exc})"
        current = {}

        @contextlib.contextmanager
        def generation(index, label="generation"):
            # NVBench's timer.start() flushes L2 and synchronizes the stream, then queues its
            # own blocking kernel: nqprof's stream hold must not be queued before it (the
            # synchronization would wait for the hold to time out, every sample).
            record["regions"] += 1
            current["timer"].start()
            try:
                yield _Untimed()
            finally:
                current["timer"].stop()

        session.generation = generation  # the session's timed region, timed by NVBench

        def launch(_launch, timer):
            current["timer"] = timer
            measured = session.run_once()
            record["calls"] += 1
            if measured.count != known_count(n):
                record["wrong"].append(measured.count)

        state.exec(launch, timer=True, sync=args.sync)

    b = bench.register(bench_case)
    b.set_name("nqprof_case")
    b.add_string_axis("case", [f"{s}/{n}" for s, n in cases])
    nvbench_json = str(args.out.with_suffix(".nvbench.json"))
    argv = [
        "nvbench_compare",
        "--devices",
        "0",
        "--json",
        nvbench_json,
        "--min-time",
        str(args.min_time),
        "--max-noise",
        str(args.max_noise),
        "--timeout",
        str(args.case_timeout),
        "--no-batch",  # cold samples only: the batch would time launches with their syncs
    ]
    try:
        bench.run_all_benchmarks(argv)
        cold_rounds(sessions, calls, args.cold_rounds, known_count)
    finally:
        for session in sessions.values():
            with contextlib.suppress(Exception):
                session.close()
    args.out.write_text(json.dumps({"calls": calls, "nvbench_json": nvbench_json}))
    return 0


def cold_rounds(sessions: dict, calls: dict, rounds: int, known_count) -> None:
    """nqprof's own timer (its stream hold and CUDA events, the session's own timed region) in
    the NVBench child's sessions: ``rounds`` rounds as nqprof times them (medians in
    ``calls[key]["warm"]``), then ``rounds`` with what NVBench does before each sample done
    first, L2 flushed by a memset of an L2-sized buffer and the stream synchronized
    (``calls[key]["cold"]``). Beside NVBench's cold median they show whether a difference is
    the timers', the cache's state or the process's."""
    import statistics

    import pycuda.driver as drv

    if not sessions or rounds <= 0:
        return
    l2 = drv.Context.get_device().get_attribute(drv.device_attribute.L2_CACHE_SIZE)
    flush = drv.mem_alloc(max(4, l2))
    try:
        for key, session in sessions.items():
            session.__dict__.pop("generation", None)  # the session's own timed region again
            n = int(key.split("/")[1])
            for name, flushed in (("warm", False), ("cold", True)):
                times, wrong = [], []
                for _ in range(rounds):
                    if flushed:
                        drv.memset_d32(flush, 0, max(1, l2 // 4))
                        drv.Context.synchronize()
                    measured = session.run_once()
                    times.append(measured.gpu_s)
                    if measured.count != known_count(n):
                        wrong.append(measured.count)
                calls[key][name] = {
                    "seconds": statistics.median(times),
                    "rounds": rounds,
                    "wrong": wrong,
                }
    finally:
        flush.free()


def _summaries(state: dict) -> dict[str, float]:
    out = {}
    for summary in state.get("summaries") or []:
        for item in summary.get("data") or []:
            if item.get("name") == "value":
                with contextlib.suppress(TypeError, ValueError):
                    out[summary["tag"]] = float(item["value"])
    return out


def read_nvbench(path: Path) -> dict[str, dict]:
    """Per case key: NVBench's median (or mean), sample count, noise, skip reason."""
    doc = json.loads(path.read_text())
    out = {}
    for benchmark in doc.get("benchmarks", []):
        for state in benchmark.get("states", []):
            axes = {a["name"]: a.get("value") for a in state.get("axis_values") or []}
            key = str(axes.get("case"))
            s = _summaries(state)
            median = s.get("nv/cold/time/gpu/median")
            out[key] = {
                "seconds": median if median is not None else s.get("nv/cold/time/gpu/mean"),
                "statistic": "median" if median is not None else "mean",
                "samples": s.get("nv/cold/sample_size"),
                "noise": s.get("nv/cold/time/gpu/stdev/relative"),
                "sm_clock_hz": s.get("nv/cold/sm_clock_rate/mean"),
                "skipped": state.get("is_skipped", False),
                "skip_reason": state.get("skip_reason"),
            }
    return out


def combine(cases, results: dict, calls: dict, nvbench: dict, failed: list) -> list[list]:
    """Each case's nqprof result (``results``, updated in place) beside NVBench's (``nvbench``
    as :func:`read_nvbench` gives it, ``calls`` as the child counted them) and their ratio; a
    table row per case, and what is wrong with a case appended to ``failed``."""
    from nqprof.textfmt import seconds

    rows = []
    for strategy, n in cases:
        key = f"{strategy}/{n}"
        entry = results.setdefault(key, {"strategy": strategy, "n": n})
        theirs_all = entry["nvbench"] = {**nvbench.get(key, {}), **calls.get(key, {})}
        mine, theirs = (entry.get("nqprof") or {}).get("seconds"), theirs_all.get("seconds")
        if theirs_all.get("regions") != theirs_all.get("calls"):
            failed.append(
                f"{key}: NVBench ran {theirs_all.get('calls')} rounds, the timed region "
                f"{theirs_all.get('regions')} times (one each expected)"
            )
        wrong = theirs_all.get("wrong") or []
        if wrong:
            failed.append(
                f"{key}: NVBench's rounds counted {sorted(set(wrong))} (expected the known count)"
            )
        if theirs is None:
            failed.append(f"{key}: no NVBench time ({theirs_all.get('skip_reason') or 'missing'})")
        ratio = theirs / mine if mine and theirs else None
        entry["ratio"] = ratio
        for name in ("warm", "cold"):
            bad = (theirs_all.get(name) or {}).get("wrong")
            if bad:
                failed.append(
                    f"{key}: nqprof's {name} rounds in the NVBench child counted "
                    f"{sorted(set(bad))} (expected the known count)"
                )
        child_warm = (theirs_all.get("warm") or {}).get("seconds")
        mine_cold = (theirs_all.get("cold") or {}).get("seconds")
        cold_ratio = theirs / mine_cold if mine_cold and theirs else None
        entry["cold_ratio"] = cold_ratio
        rows.append(
            [
                strategy,
                n,
                "-" if mine is None else seconds(mine),
                (entry.get("nqprof") or {}).get("rounds", "-"),
                "-" if theirs is None else seconds(theirs),
                "-" if theirs_all.get("samples") is None else int(theirs_all["samples"]),
                theirs_all.get("calls", "-"),
                "-" if theirs_all.get("noise") is None else f"{100 * theirs_all['noise']:.2f}%",
                "-" if ratio is None else f"{ratio:.3f}",
                "-" if child_warm is None else seconds(child_warm),
                "-" if mine_cold is None else seconds(mine_cold),
                "-" if cold_ratio is None else f"{cold_ratio:.3f}",
            ]
        )
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--strategies", default="feinbube,fast,cdp-bp")
    p.add_argument("--n", default="10:16", help="N list (nqprof's grammar, default 10:16)")
    p.add_argument("--rounds", type=int, default=20, help="nqprof's timed rounds (default 20)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--min-time", type=float, default=0.5, help="NVBench --min-time (s)")
    p.add_argument("--max-noise", type=float, default=0.5, help="NVBench --max-noise (%%)")
    p.add_argument(
        "--sync",
        action="store_true",
        help="NVBench's sync tag (its blocking kernel off: host launch latency timed too)",
    )
    p.add_argument(
        "--cold-rounds",
        type=int,
        default=50,
        help="nqprof's timer in the NVBench child, rounds per case as it times and after an L2 "
        "flush (0: none)",
    )
    p.add_argument("--case-timeout", type=float, default=15, help="NVBench --timeout per case")
    p.add_argument(
        "--json", type=Path, default=Path(os.environ.get("OUT", "out")) / "nvbench-compare.json"
    )
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return nvbench_child(args)

    from nqprof.runner import solve
    from nqprof.textfmt import seconds, table

    cases = parse_cases(args.strategies, args.n)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    failed: list[str] = []
    for strategy, n in cases:
        key = f"{strategy}/{n}"
        t0 = time.monotonic()
        try:
            rec = solve(strategy, n, repeats=args.rounds, warmup=args.warmup, timeout=60)
        except Exception as exc:  # noqa: BLE001 - one failed case is reported, the rest go on
            failed.append(f"{key}: nqprof: {type(exc).__name__}: {exc}")
            continue
        results[key] = {
            "strategy": strategy,
            "n": n,
            "params": rec.params,
            "count": rec.count,
            "verified": rec.verified,
            "nqprof": {"seconds": rec.gpu_s, "rounds": len(rec.gpu_times), "times": rec.gpu_times},
        }
        if not rec.verified:
            failed.append(f"{key}: nqprof counted {rec.count}, expected {rec.expected}")
        print(f"nqprof {key}: {seconds(rec.gpu_s)} ({time.monotonic() - t0:.1f} s)", flush=True)

    child_out = args.json.with_name(args.json.stem + "-child.json")
    cmd = [sys.executable, __file__, "--child", "--out", str(child_out), "--strategies",
           args.strategies, "--n", args.n, "--min-time", str(args.min_time), "--max-noise",
           str(args.max_noise), "--case-timeout", str(args.case_timeout),
           "--cold-rounds", str(args.cold_rounds), *(["--sync"] if args.sync else [])]  # fmt: skip
    print("+", " ".join(cmd), flush=True)
    try:
        proc = subprocess.run(cmd, timeout=CHILD_TIMEOUT_S, check=False)
        if proc.returncode != 0:
            failed.append(f"the NVBench child exited {proc.returncode}")
    except subprocess.TimeoutExpired:
        failed.append(f"the NVBench child ran past {CHILD_TIMEOUT_S} s")
    calls, nvb = {}, {}
    if child_out.exists():
        child = json.loads(child_out.read_text())
        calls = child["calls"]
        if Path(child["nvbench_json"]).exists():
            nvb = read_nvbench(Path(child["nvbench_json"]))
    rows = combine(cases, results, calls, nvb, failed)
    header = ["strategy", "N", "nqprof", "rounds", "NVBench", "samples", "calls", "noise", "ratio",
              "child warm", "child cold", "ratio cold"]  # fmt: skip
    print(table(header, rows, right_align_numbers=True))
    print(
        "nqprof: median of CUDA-event rounds; NVBench: cold median (stdrel); ratio NVBench / "
        f"nqprof; child warm, child cold: nqprof's timer in the NVBench child's sessions, "
        f"medians of {args.cold_rounds} rounds, cold after NVBench's L2 flush; ratio cold: "
        "NVBench / child cold"
    )
    args.json.write_text(json.dumps({"cases": results, "failed": failed}, indent=2, default=str))
    print(f"wrote {args.json}")
    for line in failed:
        print(f"FAILED {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
