"""Carneiro Pessoa et al. 2018, "GPU-accelerated backtracking using CUDA Dynamic
Parallelism": configuring the CDP runtime from a plan computed on the host
(:mod:`nqprof.strategies.cdp.plan`), CDP-BP and CDP-DP3, and their Table 2 (mean speedup
over serial).

Table 2 here: per N range, the mean over N of ``serial time / time`` for DP2, DP3, CDP-DP3,
CDP-BP, BP-DFS and the multicore CPU pool, measured with nqprof's strategies, beside the
paper's figures. Theirs are N-Queens and ATSP together on a K40m; ours are N-Queens only.
Serial at large N takes minutes, so its times may come from a benchmark history
(:func:`serial_from_history`); every serial time says where it came from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from . import Artefact, Paper
from .measure import Footnotes, Outcome

#: Their Table 2: mean speedup over serial, N-Queens and ATSP together, K40m.
PAPER_TABLE2: dict[str, dict[str, float]] = {
    "DP2": {"10-12": 1.30, "13-15": 3.26, "16-19": 5.11, "all": 2.99},
    "DP3": {"10-12": 1.08, "13-15": 5.20, "16-19": 6.68, "all": 4.20},
    "CDP-DP3": {"10-12": 2.10, "13-15": 7.89, "16-19": 7.12, "all": 5.72},
    "CDP-BP": {"10-12": 5.24, "13-15": 8.38, "16-19": 7.72, "all": 7.10},
    "BP-DFS": {"10-12": 5.82, "13-15": 15.86, "16-19": 15.70, "all": 12.37},
    "multicore (20 cores)": {"10-12": 4.63, "13-15": 14.71, "16-19": 16.00, "all": 11.41},
}
PAPER_RANGES = ("10-12", "13-15", "16-19")
#: Their best parameters (K40m).
PAPER_BEST = {
    "BP-DFS": {"block": 128, "depth": 7},
    "CDP-BP": {"block": 128, "child_block": 64, "depths": (5, 7)},
    "DP2": {"block": 128, "child_block": 32, "depths": (4, 7)},
    "DP3": {"block": 128, "child_block": 32},
    "CDP-DP3": {"block": 128, "child_block": 64},
}
#: Their implementations as nqprof's strategies, in the table's order.
TABLE2_STRATEGIES: dict[str, str] = {
    "DP2": "dp2",
    "DP3": "dp3",
    "CDP-DP3": "cdp-dp3",
    "CDP-BP": "cdp-bp",
    "BP-DFS": "bp-dfs",
    "multicore (20 cores)": "multicore",
}
DEFAULT_RANGES = "10-12,13-15,16-18"


@dataclass(frozen=True)
class NRange:
    lo: int
    hi: int

    @property
    def label(self) -> str:
        return f"{self.lo}-{self.hi}"

    def ns(self) -> list[int]:
        return list(range(self.lo, self.hi + 1))


def parse_ranges(text: str) -> list[NRange]:
    """``10-12,13-15,16-18`` -> the N ranges of the table (each A-B with A <= B)."""
    from ..problem import validate_n

    out = []
    for part in (p.strip() for p in text.split(",")):
        lo, sep, hi = part.partition("-")
        try:
            r = NRange(validate_n(lo.strip()), validate_n((hi if sep else lo).strip()))
        except InputError as exc:
            raise InputError(f"--ranges takes A-B,C-D,...: {exc}") from None
        if r.lo > r.hi:
            raise InputError(f"--ranges: {part} is empty (A-B needs A <= B)")
        out.append(r)
    if not out:
        raise InputError("--ranges takes A-B,C-D,...")
    return out


@dataclass(frozen=True)
class SerialTime:
    seconds: float
    source: str  # "measured here" or the history run it came from


def serial_from_history(path: str | Path, ns: Iterable[int]) -> dict[int, SerialTime]:
    """Serial times (the run records' median wall time) from a pytest-benchmark history: a
    saved JSON file or a storage folder; per N the newest run that has it. No pandas."""
    root = Path(path)
    files = sorted(root.rglob("*.json")) if root.is_dir() else [root]
    if not files or not all(f.is_file() for f in files):
        raise InputError(
            f"--history: no benchmark history at {str(root)!r} "
            "(a saved JSON file or a storage folder)"
        )
    wanted = set(ns)
    found: dict[int, tuple[str, SerialTime]] = {}
    for f in files:
        try:
            data = json.loads(f.read_text())
            when = str(data["datetime"])
            node = (data.get("machine_info") or {}).get("node", "?")
            benches = data["benchmarks"]
        except (OSError, ValueError, KeyError, TypeError):
            raise InputError(f"--history: {f} is not a pytest-benchmark JSON file") from None
        for b in benches:
            extra = b.get("extra_info") or {}
            n = extra.get("n")
            if (
                extra.get("strategy") != "serial"
                or n not in wanted
                or not extra.get("verified", True)
            ):
                continue
            seconds = extra.get("wall_s") or (b.get("stats") or {}).get("median")
            if seconds and (n not in found or when > found[n][0]):
                found[n] = (
                    when,
                    SerialTime(float(seconds), f"history {f.name} ({when[:19]}, {node})"),
                )
    return {n: t for n, (_, t) in found.items()}


def table2_runs(ranges: Sequence[NRange], serial_known: Iterable[int] = ()):
    """The runs of the table: every strategy at every N, and serial where no time is known."""
    ns = sorted({n for r in ranges for n in r.ns()})
    known = set(serial_known)
    runs = [("serial", n, {}) for n in ns if n not in known]
    runs += [(s, n, {}) for s in TABLE2_STRATEGIES.values() for n in ns]
    return runs


def serial_times(
    outcomes: Iterable[Outcome], history: Mapping[int, SerialTime]
) -> dict[int, SerialTime]:
    """Serial per N: measured here where it ran, else the history's."""
    out = dict(history)
    for o in outcomes:
        if o.strategy == "serial" and o.ok and o.seconds:
            out[o.n] = SerialTime(o.seconds, "measured here")
    return out


def speedups(
    outcomes: Iterable[Outcome], serial: Mapping[int, SerialTime]
) -> dict[str, dict[int, float]]:
    """Strategy -> {N: serial time / its time} where both are known."""
    out: dict[str, dict[int, float]] = {}
    for o in outcomes:
        if o.strategy != "serial" and o.ok and o.seconds and o.n in serial:
            out.setdefault(o.strategy, {})[o.n] = serial[o.n].seconds / o.seconds
    return out


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "-"


def table2(
    outcomes: Sequence[Outcome],
    ranges: Sequence[NRange],
    history: Mapping[int, SerialTime] | None = None,
) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, notes): per implementation and N range, the paper's mean speedup over
    serial and ours (the mean over the range's N of serial time / time), then the notes:
    where every serial time came from, and why a cell holds no number."""
    serial = serial_times(outcomes, history or {})
    sp = speedups(outcomes, serial)
    header = ["implementation", "strategy"]
    for i, r in enumerate(ranges):
        paper = PAPER_RANGES[i] if i < len(PAPER_RANGES) else None
        header += [f"paper {paper}" if paper else "paper -", f"here {r.label}"]
    header += ["paper all", "here all"]
    notes = Footnotes()
    failed = {(o.strategy, o.n): o for o in outcomes if not o.ok}
    rows = []
    for label, strategy in TABLE2_STRATEGIES.items():
        row = [label, strategy]
        mine = sp.get(strategy, {})
        for i, r in enumerate(ranges):
            paper = PAPER_RANGES[i] if i < len(PAPER_RANGES) else None
            values = [mine[n] for n in r.ns() if n in mine]
            cell = _mean(values)
            missing = [failed[(strategy, n)] for n in r.ns() if (strategy, n) in failed]
            if missing:
                cell += " " + " ".join(f"[{_note(notes, o)}]" for o in missing)
            row += [f"{PAPER_TABLE2[label][paper]:.2f}" if paper else "-", cell]
        row += [f"{PAPER_TABLE2[label]['all']:.2f}", _mean(list(mine.values()))]
        rows.append(row)
    lines = [
        "Speedup = serial time / time at the same N (GPU strategies: CUDA-event time; CPU: wall "
        "time), averaged over the N of each range.",
        "Paper: N-Queens and ATSP together, K40m, their "
        "multicore on 20 cores; here: N-Queens only.",
    ]
    by_source: dict[str, list[int]] = {}
    for n in sorted(serial):
        if any(n in r.ns() for r in ranges):
            by_source.setdefault(serial[n].source, []).append(n)
    for source, ns in by_source.items():
        lines.append(f"serial N={','.join(map(str, ns))}: {source}")
    no_serial = sorted({n for r in ranges for n in r.ns()} - set(serial))
    if no_serial:
        lines.append(
            f"serial N={','.join(map(str, no_serial))}: no time (not "
            "measured, not in the history): no speedup at these N"
        )
    return header, rows, lines + notes.lines


def _note(notes: Footnotes, o: Outcome) -> int:
    notes.lines.append(f"[{len(notes.lines) + 1}] {o.strategy} N={o.n}: {o.error}: {o.detail}")
    return len(notes.lines)


def speedup_series(outcomes: Sequence[Outcome], history: Mapping[int, SerialTime] | None = None):
    """Strategy -> [(N, speedup over serial)] for the figure."""
    sp = speedups(outcomes, serial_times(outcomes, history or {}))
    return {s: sorted(v.items()) for s, v in sp.items()}


PAPER = Paper(
    "carneiro",
    "Carneiro Pessoa et al.: GPU-accelerated backtracking using CUDA Dynamic Parallelism (2018)",
    (
        Artefact(
            "table2",
            "mean speedup over serial per N range: DP2, DP3, CDP-DP3, CDP-BP, BP-DFS, multicore",
        ),
    ),
)
