"""Reproductions of Plauth et al.'s measurements with nqprof's strategies.

* Table 2: DP-1, each thread launching into the default stream vs its own non-blocking
  stream, N = 8..15, times beside the paper's (K20x).
* Table 3: boards per child grid for N=12, static (DP-2) vs dynamic (DP-3) search depth:
  the paper's four rows, measured on the GPU (the device-side accounting of the first child
  generation) and computed by nqprof's model (:mod:`nqprof.strategies.cdp.model`).
* A figure: time vs N for every strategy, serial and feinbube included.

The runs go through :func:`nqprof.runner.solve` (a watchdog per GPU run). The table and
series builders are pure functions of the measured numbers; a run that fails or times out
is a cell that says so, with the reason in a footnote.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..result import RunRecord
from . import Artefact, Paper
from .measure import Footnotes, Outcome

if (
    TYPE_CHECKING
):  # the model needs numpy: imported where it is used, so listing papers stays instant
    from ..strategies.cdp.model import GenerationStats

#: Plauth et al., Table 2: DP-1 times in ms on a K20x.
PAPER_TABLE2_MS: dict[str, dict[int, float]] = {
    "default": {8: 17, 9: 36, 10: 82, 11: 265, 12: 818, 13: 2974, 14: 10603, 15: 46111},
    "own": {8: 5, 9: 6, 10: 9, 11: 32, 12: 155, 13: 780, 14: 5232, 15: 39163},
}
TABLE2_STREAMS = ("default", "own")


@dataclass(frozen=True)
class Table3Row:
    approach: str  # "static" (DP-2) or "dynamic" (DP-3)
    initial_row: int  # host depth
    search: int
    min: int
    max: int
    mean: float

    @property
    def strategy(self) -> str:
        return "dp2" if self.approach == "static" else "dp3"

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.approach, self.initial_row, self.search)


#: Plauth et al., Table 3: child boards per child grid for N=12.
PAPER_TABLE3: tuple[Table3Row, ...] = (
    Table3Row("static", 1, 4, 1196, 1597, 1401.33),
    Table3Row("static", 5, 4, 1, 60, 7.97),
    Table3Row("dynamic", 1, 2, 59, 73, 63.00),
    Table3Row("dynamic", 3, 4, 65, 255, 145.22),
)
TABLE3_N = 12
#: The paper's 256 threads per block and 48 KiB of shared memory (their depth_max of 8).
TABLE3_PARAMS = {"block": 256, "child_block": 256}
TABLE3_SMEM_KIB = 48


def table3_params(row: Table3Row) -> dict[str, Any]:
    """The parameters of one of the paper's Table 3 rows."""
    params = {"depth": row.initial_row, "search": row.search, **TABLE3_PARAMS}
    if row.approach == "dynamic":
        params["smem_kib"] = TABLE3_SMEM_KIB
    return params


#: The figure's strategies, in legend order: the paper's, and `fast`, the bar every
#: comparison is measured against. A hand list on purpose: the paper's own selection for its
#: figure, not "every strategy of a kind" (those lists come from the registry).
FIGURE_STRATEGIES = ("serial", "feinbube", "fast", "dp1", "dp2", "dp3", "dpswap")


def table2_runs(ns: Sequence[int], z: int = 1, extra: Mapping[str, Any] | None = None):
    return [("dp1", n, {"z": z, "stream": s, **(extra or {})}) for s in TABLE2_STREAMS for n in ns]


def table3_runs(extra: Mapping[str, Any] | None = None):
    return [
        (row.strategy, TABLE3_N, {**table3_params(row), **(extra or {})}) for row in PAPER_TABLE3
    ]


# --- building the tables (pure) --------------------------------------------------------------


def table2(
    outcomes: Iterable[Outcome], ns: Sequence[int]
) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, footnotes): per N, the paper's and the measured time (ms) for the
    default stream and for own streams, and the measured ratio default/own."""
    by = {(o.params.get("stream"), o.n): o for o in outcomes if o.strategy == "dp1"}
    notes = Footnotes()
    header = ["N", "default: paper", "default: here", "own: paper", "own: here", "default/own here"]
    rows = []
    for n in ns:
        d, s = by.get(("default", n)), by.get(("own", n))
        ratio = f"{d.seconds / s.seconds:.2f}" if d and s and d.ok and s.ok and s.seconds else "-"
        rows.append(
            [
                str(n),
                _ms_paper(PAPER_TABLE2_MS["default"].get(n)),
                notes.cell(d),
                _ms_paper(PAPER_TABLE2_MS["own"].get(n)),
                notes.cell(s),
                ratio,
            ]
        )
    return header, rows, notes.lines


def _ms_paper(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:g}"


def table3_model(
    rows: Sequence[Table3Row] = PAPER_TABLE3, n: int = TABLE3_N
) -> dict[tuple, GenerationStats]:
    """Our model's first child generation for each of the paper's rows (DP-3's cap: the
    paper's 48 KiB over 256 threads of 16-byte states)."""
    from ..strategies.cdp.model import condensed_generations

    cap = TABLE3_SMEM_KIB * 1024 // (16 * TABLE3_PARAMS["child_block"]) - 1
    out = {}
    for row in rows:
        model = condensed_generations(
            n, row.initial_row, row.search, row.approach == "dynamic", cap
        )
        out[row.key] = model.generations[1]
    return out


def first_child_generation(record: RunRecord) -> GenerationStats | None:
    """Generation 1 of a run's device-side accounting (the grids the host grid launched)."""
    from ..strategies.cdp.model import GenerationStats

    for g in record.generations:
        if g.get("generation") == 1:
            return GenerationStats(1, g["grids"], g["boards"], g["min"], g["max"])
    return None


def table3(
    measured: Mapping[tuple, Outcome],
    model: Mapping[tuple, GenerationStats],
    rows: Sequence[Table3Row] = PAPER_TABLE3,
) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, footnotes): min/max/mean child boards per child grid, paper | model |
    measured, and whether the measurement equals the model (it must: both are exact)."""
    notes = Footnotes()
    header = [
        "approach",
        "initial row",
        "search depth",
        "paper min/max/mean",
        "model min/max/mean",
        "measured min/max/mean",
        "measured = model",
    ]
    out = []
    for row in rows:
        m = model.get(row.key)
        o = measured.get(row.key)
        got = (
            first_child_generation(o.record)
            if o is not None and o.ok and o.record is not None
            else None
        )
        if got is not None:
            cell = _triple(got.min, got.max, got.mean)
            same = (
                "yes"
                if m is not None
                and (got.grids, got.boards, got.min, got.max) == (m.grids, m.boards, m.min, m.max)
                else "NO"
            )
        else:
            cell = notes.cell(o) if o is not None and not o.ok else "-"
            same = "-"
        out.append(
            [
                row.approach,
                str(row.initial_row),
                str(row.search),
                _triple(row.min, row.max, row.mean),
                _triple(m.min, m.max, m.mean) if m else "-",
                cell,
                same,
            ]
        )
    return header, out, notes.lines


def _triple(lo: int, hi: int, mean: float) -> str:
    return f"{lo} / {hi} / {mean:.2f}"


PAPER = Paper(
    "plauth",
    "Plauth et al. 2015: CUDA Dynamic Parallelism on N-Queens (DP-1, DP-2, DP-3, DP-SWAP), K20x",
    (
        Artefact("table2", "DP-1: default stream vs own streams, N=8..15, ms"),
        Artefact(
            "table3", "boards per child grid at N=12: static (dp2) vs dynamic (dp3) search depth"
        ),
        Artefact(
            "figure", "time vs N for every strategy of the paper, serial and feinbube included"
        ),
    ),
)
