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

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..strategies.cdp.model import GenerationStats, condensed_generations
from ..errors import (
    CountMismatchError,
    DeviceFailureError,
    InputError,
    NqprofError,
    UnavailableError,
    WatchdogError,
)
from ..result import RunRecord

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


def table3_params(row: "Table3Row") -> dict[str, Any]:
    """The parameters of one of the paper's Table 3 rows."""
    params = {"depth": row.initial_row, "search": row.search, **TABLE3_PARAMS}
    if row.approach == "dynamic":
        params["smem_kib"] = TABLE3_SMEM_KIB
    return params

#: The figure's strategies, in legend order.
FIGURE_STRATEGIES = ("serial", "feinbube", "dp1", "dp2", "dp3", "dpswap")


# --- running -----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One measured run, or why there is none."""

    strategy: str
    n: int
    params: dict[str, Any] = field(default_factory=dict)
    seconds: float | None = None  # GPU event time where there is one, else wall time
    error: str | None = None  # a short reason ("timeout", "does not fit", ...)
    detail: str | None = None  # the full message
    record: RunRecord | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def reason(exc: NqprofError) -> str:
    """A short label for a failed run."""
    if isinstance(exc, WatchdogError):
        return "timeout" if "within" in str(exc) else "worker died"
    if isinstance(exc, DeviceFailureError):
        return "device failure"
    if isinstance(exc, CountMismatchError):
        return "wrong count"
    if isinstance(exc, InputError):
        return "does not fit" if "does not fit" in str(exc) else "invalid"
    return "failed"


def measure(
    strategy: str,
    n: int,
    params: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    repeats: int = 1,
    solve: Callable[..., RunRecord] | None = None,
) -> Outcome:
    """Run once (``repeats`` rounds) through the runner; failures become the outcome's
    error. A machine without what the strategy needs raises :class:`UnavailableError`."""
    if solve is None:
        from ..runner import DEFAULT_TIMEOUT
        from ..runner import solve as solve_run

        solve, timeout = solve_run, DEFAULT_TIMEOUT if timeout is None else timeout
    params = dict(params or {})
    try:
        record = solve(strategy, n, params, repeats=repeats, timeout=timeout)
    except UnavailableError:
        raise
    except NqprofError as exc:
        return Outcome(strategy, n, params, error=reason(exc), detail=str(exc))
    seconds = record.gpu_s if record.gpu_s is not None else record.wall_s
    return Outcome(strategy, n, params, seconds=seconds, record=record)


def sweep(
    runs: Iterable[tuple[str, int, dict[str, Any]]],
    run: Callable[[str, int, dict[str, Any]], Outcome],
    progress: Callable[[str], None] | None = None,
) -> list[Outcome]:
    """Run each (strategy, N, params) in order (ascending N per strategy). After a timeout
    the larger N of the same strategy and parameters are skipped: they would take longer."""
    out: list[Outcome] = []
    stopped: dict[tuple, int] = {}
    for strategy, n, params in runs:
        key = (strategy, tuple(sorted(params.items())))
        if key in stopped:
            out.append(Outcome(strategy, n, params, error="skipped", detail=f"N={stopped[key]} timed out"))
            continue
        o = run(strategy, n, params)
        if o.error == "timeout":
            stopped[key] = n
        if progress:
            state = f"{o.seconds:.4f} s" if o.ok else f"{o.error}: {o.detail}"
            progress(f"{strategy} N={n} {params or ''}: {state}")
        out.append(o)
    return out


def table2_runs(ns: Sequence[int], z: int = 1, extra: Mapping[str, Any] | None = None):
    return [("dp1", n, {"z": z, "stream": s, **(extra or {})}) for s in TABLE2_STREAMS for n in ns]


def table3_runs(extra: Mapping[str, Any] | None = None):
    return [(row.strategy, TABLE3_N, {**table3_params(row), **(extra or {})}) for row in PAPER_TABLE3]


def figure_runs(strategies: Sequence[str], ns: Sequence[int]):
    return [(s, n, {}) for s in strategies for n in ns]


# --- building the tables (pure) --------------------------------------------------------------


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}"


class Footnotes:
    """Numbered reasons for the cells that hold no measurement."""

    def __init__(self):
        self.lines: list[str] = []

    def cell(self, o: Outcome | None) -> str:
        if o is None:
            return "-"
        if o.ok:
            return _ms(o.seconds)
        self.lines.append(f"[{len(self.lines) + 1}] {o.strategy} N={o.n} {o.params}: {o.error}: {o.detail}")
        return f"{o.error} [{len(self.lines)}]"


def table2(outcomes: Iterable[Outcome], ns: Sequence[int]) -> tuple[list[str], list[list[str]], list[str]]:
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


def table3_model(rows: Sequence[Table3Row] = PAPER_TABLE3, n: int = TABLE3_N) -> dict[tuple, GenerationStats]:
    """Our model's first child generation for each of the paper's rows (DP-3's cap: the
    paper's 48 KiB over 256 threads of 16-byte states)."""
    cap = TABLE3_SMEM_KIB * 1024 // (16 * TABLE3_PARAMS["child_block"]) - 1
    out = {}
    for row in rows:
        model = condensed_generations(n, row.initial_row, row.search, row.approach == "dynamic", cap)
        out[row.key] = model.generations[1]
    return out


def first_child_generation(record: RunRecord) -> GenerationStats | None:
    """Generation 1 of a run's device-side accounting (the grids the host grid launched)."""
    for g in record.generations:
        if g.get("generation") == 1:
            return GenerationStats(1, g["grids"], g["boards"], g["min"], g["max"])
    return None


def table3(
    measured: Mapping[tuple, Outcome], model: Mapping[tuple, GenerationStats], rows: Sequence[Table3Row] = PAPER_TABLE3
) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, footnotes): min/max/mean child boards per child grid, paper | model |
    measured, and whether the measurement equals the model (it must: both are exact)."""
    notes = Footnotes()
    header = ["approach", "initial row", "search depth", "paper min/max/mean", "model min/max/mean",
              "measured min/max/mean", "measured = model"]
    out = []
    for row in rows:
        m = model.get(row.key)
        o = measured.get(row.key)
        got = first_child_generation(o.record) if o is not None and o.ok and o.record is not None else None
        if got is not None:
            cell = _triple(got.min, got.max, got.mean)
            same = "yes" if m is not None and (got.grids, got.boards, got.min, got.max) == (m.grids, m.boards, m.min, m.max) else "NO"
        else:
            cell = notes.cell(o) if o is not None and not o.ok else "-"
            same = "-"
        out.append(
            [row.approach, str(row.initial_row), str(row.search), _triple(row.min, row.max, row.mean),
             _triple(m.min, m.max, m.mean) if m else "-", cell, same]
        )
    return header, out, notes.lines


def _triple(lo: int, hi: int, mean: float) -> str:
    return f"{lo} / {hi} / {mean:.2f}"


def figure_series(outcomes: Iterable[Outcome]) -> dict[str, list[tuple[int, float]]]:
    """Strategy -> [(N, seconds)] of the successful runs, ascending N."""
    series: dict[str, list[tuple[int, float]]] = {}
    for o in outcomes:
        if o.ok and o.seconds is not None:
            series.setdefault(o.strategy, []).append((o.n, o.seconds))
    return {k: sorted(v) for k, v in series.items()}


def render(header: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool = False) -> str:
    """An aligned text table, or a Markdown one."""
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)])


def plot_figure(series: Mapping[str, Sequence[tuple[int, float]]], path: str, title: str = "") -> str:
    """Time vs N, one line per strategy, log y, written to ``path`` (PNG, matplotlib Agg)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise UnavailableError(f"the figure needs matplotlib ({exc}); install nqprof[analysis]") from None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in [s for s in FIGURE_STRATEGIES if s in series] + [s for s in series if s not in FIGURE_STRATEGIES]:
        pts = series[name]
        if pts:
            ax.plot([n for n, _ in pts], [t for _, t in pts], marker="o", label=name)
    ax.set_yscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel("time (s)")
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if series:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
