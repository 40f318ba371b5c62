"""Kerbl et al. 2018, "The Broker Queue: A Fast, Linearizable FIFO Queue for Fine-Granular
Work Distribution on the GPU" (ICS '18): what the paper reports, as data, and `nqprof report
kerbl`, which re-runs its Fig. 1 with :mod:`nqprof.queuebench` and sets ours beside it.

The paper's Fig. 1 gives no table of numbers; what it shows is kept here qualitatively, as
claims a run of ours can be checked against (:func:`check_claims`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..queuebench import BenchResult, BenchRow, figure, select, speedups, table
from . import Artefact, Paper

CITATION = (
    "B. Kerbl, M. Kenzel, J. H. Mueller, D. Schmalstieg, M. Steinberger. The Broker Queue: A Fast, "
    "Linearizable FIFO Queue for Fine-Granular Work Distribution on the GPU. ICS 2018, pp. 76-85."
)

PAPER = Paper(
    "kerbl",
    "Kerbl et al. 2018: The Broker Queue, a fast, linearizable "
    "FIFO queue for fine-granular work distribution on the GPU",
    (
        Artefact(
            "fig1",
            "queue microbenchmark: time vs threads, one line per queue, the paper's claims checked",
        ),
    ),
)

#: The setup of Fig. 1.
FIG1_SETUP = {
    "operations": "each thread enqueues then dequeues one element, 10 times",
    "x": "number of threads",
    "y": "time for all operations",
    "lines": [
        "Broker Queue (BQ)",
        "Broker Work Distributor (BWD)",
        "lock-free ring buffer",
        "Gottlieb queue",
    ],
}


@dataclass(frozen=True)
class Claim:
    text: str
    faster: str  # the queue the paper finds faster
    slower: str
    at_least: float  # the smallest time ratio slower/faster we take as agreeing


#: What Fig. 1 shows, as ratios our balanced 16-byte runs can be checked against.
FIG1_CLAIMS = (
    Claim(
        "BQ beats the lock-free (CAS) ring buffer by up to an order of magnitude",
        "bq",
        "ring",
        10.0,
    ),
    Claim("BQ beats the Gottlieb queue", "bq", "gottlieb", 1.0),
    Claim("BWD, without linearizability, is at least as fast as BQ", "bwd", "bq", 1.0),
)


@dataclass(frozen=True)
class ClaimCheck:
    claim: Claim
    variant: str
    #: (threads, time(slower) / time(faster)) at every thread count measured for both queues
    ratios: tuple[tuple[int, float], ...]

    @property
    def at_most_threads(self) -> tuple[int, float] | None:
        return self.ratios[-1] if self.ratios else None

    @property
    def holds(self) -> bool | None:
        """Judged at the largest thread count both queues ran (None: not measured)."""
        last = self.at_most_threads
        return None if last is None else last[1] >= self.claim.at_least

    def line(self) -> str:
        if not self.ratios:
            return f"  ?   {self.claim.text}: not measured ({self.variant})"
        threads, ratio = self.at_most_threads
        lo, hi = min(r for _, r in self.ratios), max(r for _, r in self.ratios)
        mark = "yes" if self.holds else "NO "
        return (
            f"  {mark} {self.claim.text} ({self.variant}): {ratio:.2f}x at {threads:,} threads "
            f"({lo:.2f}x to {hi:.2f}x over {len(self.ratios)} thread counts)"
        )


def check_claims(
    rows: Sequence[BenchRow], bytes: int = 16, variant: str = "balanced"
) -> list[ClaimCheck]:
    """Each claim of Fig. 1 against our rows: the time ratio of the slower queue over the
    faster one at every thread count both ran; a claim holds if the ratio at the largest
    such thread count reaches the claim's bound."""
    return [
        ClaimCheck(
            c,
            variant,
            tuple(speedups(rows, over=c.slower, of=c.faster, variant=variant, bytes=bytes)),
        )
        for c in FIG1_CLAIMS
    ]


#: The figures :func:`report` writes into its folder, per variant.
FIGURES = {variant: f"kerbl_fig1_{variant}.png" for variant in ("balanced", "unbalanced")}


def report(result: BenchResult, outdir: str | Path | None = None, bytes: int = 16) -> str:
    """The text of `nqprof report kerbl`: our Fig. 1 tables, the paper's claims checked, and
    (with ``outdir``) the figures for both variants."""
    rows = result.rows
    parts = [f"Kerbl et al. 2018, Fig. 1 re-run: {FIG1_SETUP['operations']}"]
    if result.device:
        parts.append(f"device: {result.device.get('name', '?')}; {result.method}")
    parts.append("")
    parts.append(table(rows, "balanced", bytes))
    if select(rows, "unbalanced", bytes):
        parts.append("")
        parts.append(table(rows, "unbalanced", bytes))
    parts.append("")
    parts.append(
        f"The paper's claims, {bytes}-byte elements (Fig. 1 is the balanced setup; unbalanced is"
        " ours):"
    )
    for variant in ("balanced", "unbalanced"):
        if select(rows, variant, bytes):
            parts.extend(c.line() for c in check_claims(rows, bytes, variant))
    if outdir is not None:
        out = Path(outdir)
        out.mkdir(parents=True, exist_ok=True)
        for variant, name in FIGURES.items():
            if select(rows, variant):
                path = figure(rows, out / name, variant)
                parts.append(f"figure: {path}")
    return "\n".join(parts)
