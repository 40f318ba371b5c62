"""Kernel time and whole-process time of one `nqprof solve` per case, for docs/cdp-on-hopper.md.

    python3 tools/cdp_cst_table.py --n 16:21 --case fast --case cdp-cst --case graph-cst \
        --case cdp-bp --max-n cdp-bp=19 --out $OUT/cdp-cst

Each case is `STRATEGY` or `STRATEGY:KEY=VALUE,...`; each (case, N) runs
`nqprof solve N -s STRATEGY [-p KEY=VALUE ...] -r 1 -w 0 -o FILE.json` once (--repeats: that
many times, interleaved, the table giving medians), timed from the
process's start to its exit (the whole process: Python, CUDA context, build cache, tasks,
the round), under `timeout`. The kernel time is the record's CUDA-event time (gpu_s). Prints
a Markdown table (and writes it and every record to --out); exits 1 if any count was not
verified or any run failed. Needs no `bc` or `/usr/bin/time`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def parse_ns(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition(":")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", required=True, help="N list, e.g. 16:21 or 22")
    ap.add_argument("--case", action="append", required=True, help="STRATEGY[:K=V,...]")
    ap.add_argument("--max-n", action="append", default=[], help="STRATEGY=N: skip larger N")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run")
    ap.add_argument("--budget-s", type=float, default=1e9, help="skip runs after this many seconds")
    ap.add_argument("--out", default=os.environ.get("OUT", "out") + "/cdp-cst")
    ap.add_argument(
        "--repeats", type=int, default=1, help="runs of each (case, N), interleaved: medians"
    )
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    max_n = {k: int(v) for k, _, v in (m.rpartition("=") for m in args.max_n)}
    start, runs, bad = time.monotonic(), {}, 0
    for rep in range(args.repeats):
        for n in parse_ns(args.n):
            for case in args.case:
                name = case.partition(":")[0]
                if n > max_n.get(name, 99) or n > max_n.get(case, 99):
                    continue
                if time.monotonic() - start > args.budget_s:
                    runs.setdefault((case, n), []).append({"status": "skipped (stage budget)"})
                    continue
                run = run_one(case, n, rep if args.repeats > 1 else None, args)
                bad += run["status"] != "verified"
                runs.setdefault((case, n), []).append(run)
                print((case, n, rep, run), flush=True)
    lines = [
        "| case | N | count | whole process (s) | kernel, CUDA events (ms) | module load took "
        "(MiB) | refinement |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [row(case, n, done) for (case, n), done in runs.items()]
    table = "\n".join(lines)
    print(table)
    with open(f"{args.out}/table-{args.n.replace(':', '-').replace(',', '_')}.md", "w") as f:
        f.write(table + "\n")
    return 1 if bad else 0


def run_one(case: str, n: int, rep: int | None, args) -> dict:
    """One `nqprof solve` of ``case`` at N, timed whole; its record's readings."""
    name, _, given = case.partition(":")
    tag = case.replace(":", "_").replace(",", "_").replace("=", "")
    path = f"{args.out}/{tag}-{n}{'' if rep is None else f'-{rep}'}.json"
    cmd = ["nqprof", "solve", str(n), "-s", name, "-r", "1", "-w", "0"]
    cmd += ["--timeout", str(int(args.timeout)), "-q", "-o", path, "--force"]
    for p in (p for p in given.split(",") if p):
        cmd += ["-p", p]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            ["timeout", str(int(args.timeout) + 30), *cmd], capture_output=True, text=True
        )
        rc = proc.returncode
        err = (proc.stderr or proc.stdout).strip().splitlines()[-1:] if rc else []
    except OSError as exc:
        rc, err = 127, [str(exc)]
    whole = time.monotonic() - t0
    if rc != 0:
        return {"status": f"FAILED rc={rc}: {' '.join(err)[:160]}", "whole": whole}
    rec = json.load(open(path))
    tasks = rec.get("tasks") or {}
    reserve = ((rec.get("plan") or {}).get("reserve_measured") or {}).get("module_load_bytes")
    graphs = (rec.get("memory") or {}).get("graph_upload_bytes")
    held = "-" if reserve is None else f"{reserve / 2**20:.0f}"
    if graphs:
        held += f" + graphs {graphs / 2**20:.1f}"
    extra = ""
    if "generations" in tasks:
        extra = (
            f"gens {tasks['generations']}, spilled {tasks.get('spilled')}, refused "
            f"{tasks.get('refused')}"
        )
    return {
        "status": "verified" if rec.get("verified") else f"WRONG {rec.get('count')}",
        "whole": whole,
        "kernel_ms": rec["gpu_s"] * 1e3 if rec.get("gpu_s") else None,
        "held": held,
        "extra": extra,
    }


def row(case: str, n: int, done: list[dict]) -> str:
    """A table row: the medians of the runs (each run's whole time listed when several)."""
    ok = [d for d in done if d["status"] == "verified"]
    status = "verified" if len(ok) == len(done) else "; ".join(d["status"] for d in done)
    if not ok:
        return f"| {case} | {n} | {status} |  |  |  |  |"
    whole = statistics.median(d["whole"] for d in ok)
    kernels = [d["kernel_ms"] for d in ok if d["kernel_ms"] is not None]
    kernel = f"{statistics.median(kernels):.1f}" if kernels else "-"
    each = ", ".join(f"{d['whole']:.2f}" for d in ok)
    each = f" ({each})" if len(ok) > 1 else ""
    cells = (case, n, status, f"{whole:.2f}{each}", kernel, ok[0]["held"], ok[0]["extra"])
    return "| " + " | ".join(str(c) for c in cells) + " |"


if __name__ == "__main__":
    sys.exit(main())
