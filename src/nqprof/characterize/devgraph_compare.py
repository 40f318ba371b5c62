"""The same generations under three launch mechanisms, beside the best CDP strategy: a table
and a figure from ``nqprof solve N -s devgraph -p driver=... --json`` records (and the CDP
strategy's), as tools/devgraph_gpu.sh's ``compare`` stage writes them.

    python -m nqprof.characterize.devgraph_compare RECORD.json... [-o table.md] [--figure fig.png]

Pure functions of the records; no GPU needed.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: The other strategies the comparison runs: the best CDP one, and the host-seeded kernel.
OTHER_LABELS = {"cdp-bp": "best CDP", "feinbube": "host-seeded, no CDP"}
DRIVER_LABELS = {
    "host": "host loop",
    "while": "host graph (WHILE)",
    "device": "device graph launch",
}


def case_name(record: Mapping[str, Any]) -> str:
    """``devgraph/host`` etc. for the devgraph drivers, the strategy's name otherwise."""
    if record["strategy"] == "devgraph":
        return f"devgraph/{record['params']['driver']}"
    return record["strategy"]


def label(case: str) -> str:
    if case.startswith("devgraph/"):
        return DRIVER_LABELS.get(case.split("/", 1)[1], case)
    return f"{case} ({OTHER_LABELS[case]})" if case in OTHER_LABELS else case


def load(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    out = []
    for path in paths:
        text = Path(path).read_text().strip()
        if text:
            out.append(json.loads(text))
    return out


def gpu_ms(record: Mapping[str, Any]) -> float | None:
    times = record.get("gpu_times") or ([record["gpu_s"]] if record.get("gpu_s") else [])
    return statistics.median(times) * 1e3 if times else None


def table(records: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]], list[str]]:
    """Rows per N: the GPU time (median, ms) of each case; a case whose count was not verified
    shows as such, never as a time. Notes: generations, launches, rounds."""
    cases = sorted(
        {case_name(r) for r in records},
        key=lambda c: (
            not c.startswith("devgraph/"),
            list(DRIVER_LABELS).index(c.split("/")[1]) if c.startswith("devgraph/") else 0,
            c,
        ),
    )
    by = {(r["n"], case_name(r)): r for r in records}
    ns = sorted({r["n"] for r in records})
    header = ["N"] + [f"{label(c)} (ms)" for c in cases] + ["device / host loop", "device / WHILE"]
    rows, notes = [], []
    for n in ns:
        row = [str(n)]
        times = {}
        for c in cases:
            r = by.get((n, c))
            if r is None:
                row.append("-")
            elif not r.get("verified"):
                row.append("NOT VERIFIED")
            else:
                times[c] = gpu_ms(r)
                row.append(f"{times[c]:.3f}")
        dev = times.get("devgraph/device")
        for other in ("devgraph/host", "devgraph/while"):
            row.append(f"{dev / times[other]:.2f}" if dev and times.get(other) else "-")
        rows.append(row)
    some = next((r for r in records if r["strategy"] == "devgraph"), None)
    if some:
        gens = some.get("generations") or []
        notes.append(
            f"devgraph: {len(gens)} generations (rows {', '.join(str(g['row']) for g in gens)}), "
            "params " + ", ".join(f"{k}={v}" for k, v in some["params"].items() if k != "driver")
        )
    for r in records:
        if (
            r["strategy"] == "devgraph"
            and r["params"]["driver"] == "device"
            and r.get("device_failures")
        ):
            f = r["device_failures"]
            notes.append(
                f"N={r['n']} device: {f.get('device_graph_launches')} device graph launches per "
                f"round, {f.get('launch_failures')} failed"
            )
            break
    rounds = sorted({r.get("rounds") for r in records})
    notes.append(
        "GPU time: CUDA events around the whole run, "
        f"median of {', '.join(map(str, rounds))} rounds"
    )
    return header, rows, notes


def series(records: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for r in records:
        if r.get("verified") and gpu_ms(r) is not None:
            out.setdefault(label(case_name(r)), []).append((r["n"], gpu_ms(r) / 1e3))
    return {k: sorted(v) for k, v in out.items()}


def markdown(header, rows, notes, title: str = "") -> str:
    lines = [f"### {title}", ""] if title else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += [""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def figure(records: Sequence[Mapping[str, Any]], path: str | Path, where: str = "") -> Path:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 5), layout="constrained")
    ax = fig.subplots()
    for name, pts in series(records).items():
        ax.plot([n for n, _ in pts], [s * 1e3 for _, s in pts], marker="o", label=name)
    ax.set_yscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel("GPU time (ms, CUDA events)")
    ax.set_title(
        "the same generations: host loop, host graph (WHILE), device graph launch"
        + (f"\n{where}" if where else ""),
        fontsize="medium",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)
    return Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m nqprof.characterize.devgraph_compare", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("records", nargs="+")
    p.add_argument("-o", "--output", help="write the table as Markdown")
    p.add_argument("--figure", help="draw the figure (PNG)")
    args = p.parse_args(argv)
    records = load(args.records)
    header, rows, notes = table(records)
    dev = next((r.get("device", {}) for r in records if r.get("device")), {})
    where = (
        f"{dev.get('name', '?')}, CUDA "
        f"{next((r['toolkit'].get('version') for r in records if r.get('toolkit')), '?')}"
    )
    text = markdown(header, rows, notes, title=f"GPU time vs N ({where})")
    print(text)
    if args.output:
        Path(args.output).write_text(text)
    if args.figure:
        figure(records, args.figure, where)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
