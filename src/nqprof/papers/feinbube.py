"""Feinbube et al. 2010: the host-seeded kernel and its four optimisation steps (nqprof
strategy ``feinbube``, parameter ``opt``).

Their point: each step's effect differed between GPU generations. The figure nqprof sets
ours beside: N=16 in 2.9 s before the optimisations and 1.1 s after, on a GTX 275.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from . import Artefact, Paper
from .measure import Footnotes, Outcome

#: The optimisation steps in the paper's order (values of feinbube's ``opt``).
STEPS = ("local", "shared-stack", "shared-all", "extern", "rows-left")
#: Their GTX 275 figures, seconds at N=16: the first version and the optimised one.
PAPER_N16_S = {"local": 2.9, "rows-left": 1.1}
PAPER_GPU = "GTX 275"

PAPER = Paper(
    "feinbube",
    "Feinbube et al. 2010: the host-seeded N-Queens kernel and its optimisation steps, GTX 275",
    (
        Artefact(
            "steps", "the optimisation steps: GPU time of each step vs N, beside the paper's N=16"
        ),
    ),
)


def steps_runs(ns: Sequence[int], extra: dict | None = None):
    return [("feinbube", n, {"opt": step, **(extra or {})}) for step in STEPS for n in ns]


def steps_table(
    outcomes: Iterable[Outcome], ns: Sequence[int]
) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, footnotes): ms per step and N, the paper's N=16 figures in the last
    column, and each step's speedup over the first version."""
    by = {(o.params.get("opt"), o.n): o for o in outcomes if o.strategy == "feinbube"}
    notes = Footnotes()
    header = [
        "step",
        *(f"N={n} ms" for n in ns),
        f"paper N=16 ({PAPER_GPU}) ms",
        f"x over local (N={max(ns)})",
    ]
    rows = []
    base = by.get(("local", max(ns)))
    for step in STEPS:
        last = by.get((step, max(ns)))
        speedup = (
            f"{base.seconds / last.seconds:.2f}"
            if base and last and base.ok and last.ok and last.seconds
            else "-"
        )
        paper_ms = PAPER_N16_S.get(step)
        rows.append(
            [
                step,
                *(notes.cell(by.get((step, n))) for n in ns),
                "-" if paper_ms is None else f"{paper_ms * 1e3:g}",
                speedup,
            ]
        )
    return header, rows, notes.lines
