"""nqprof's figures, drawn one way: time vs N (log y) for a run's strategies, and the
speedup over serial, from a benchmark history or from a report's measurements."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..errors import UnavailableError
from .history import latest_cases, run_label

#: Strategies drawn first, in this order (the rest follow as they come).
LEGEND_ORDER = ("serial", "multicore", "feinbube", "dp1", "dp2", "dp3", "dpswap")


def _lines(part) -> dict:
    """One line per strategy and parameter axis, sorted by N, keyed by its label.

    An axis is a parameter with several values at the same N (a swept parameter). A
    parameter whose value changes only with N is a default that depends on N: it does not
    split the strategy's line."""
    lines = {}
    for strategy, rows in part.groupby("strategy", sort=False):
        params = [c for c in rows.columns if c.startswith("param.")]
        axes = [c for c in params if rows.groupby("n")[c].nunique(dropna=False).max() > 1]
        groups = rows.groupby(axes, sort=False, dropna=False) if axes else [((), rows)]
        for values, line in groups:
            values = values if isinstance(values, tuple) else (values,)
            detail = ", ".join(f"{c[len('param.'):]}={v}" for c, v in zip(axes, values))
            lines[f"{strategy} ({detail})" if detail else strategy] = line.sort_values("n")
    return lines


def _machine_text(part) -> str:
    first = part.iloc[0]
    gpu = first.get("machine.gpu")
    if isinstance(gpu, str):
        return f"{gpu}, CUDA {first.get('machine.cuda_toolkit')}"
    return f"CPU: {first.get('machine.cpu') or first.get('machine.node')}"


def _figure(title: str, ylabel: str):
    """A figure with one log-y axes over N (matplotlib's object API: no pyplot, no backend)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise UnavailableError(f"figures need matplotlib ({exc}); install nqprof[analysis]") from None
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(8, 5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel("N")
    ax.set_ylabel(ylabel)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, which="both", alpha=0.3)
    return fig, ax


def history_figures(df, out_dir: str | Path, run_refs: Iterable[str] | None = None, metric: str = "median") -> list[Path]:
    """Write ``time_vs_n.png`` (log time over N, a line per strategy and parameters) and,
    where ``serial`` was measured, ``speedup_over_serial.png`` (serial time / time at the
    same N). Returns the files written."""
    part = latest_cases(df, run_refs, metric)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    what = "CUDA-event median" if metric == "gpu" else "median"
    where = f"run {', '.join(run_label(r) for r in dict.fromkeys(part['run']))}, {_machine_text(part)}"
    lines = _lines(part)

    fig, ax = _figure(f"N-Queens: time vs N\n{where}", f"{what} time per solve [s]")
    for label, g in lines.items():
        ax.plot(g["n"], g["time"], marker="o", label=label)
    ax.legend(fontsize="small")
    written = [out / "time_vs_n.png"]
    fig.savefig(written[0], dpi=120)

    serial = part[part["strategy"] == "serial"].groupby("n")["time"].min()
    if not serial.empty:
        fig, ax = _figure(f"N-Queens: speedup over serial (same N)\n{where}", "serial time / time")
        ax.axhline(1.0, color="grey", linewidth=1)
        for label, g in lines.items():
            g = g[g["n"].isin(serial.index) & (g["strategy"] != "serial")]
            if not g.empty:
                ax.plot(g["n"], serial[g["n"]].to_numpy() / g["time"].to_numpy(), marker="o", label=label)
        ax.legend(fontsize="small")
        written.append(out / "speedup_over_serial.png")
        fig.savefig(written[-1], dpi=120)
    return written


def time_vs_n(series: Mapping[str, Sequence[tuple[int, float]]], path: str, title: str = "") -> str:
    """Time vs N, one line per strategy (``strategy -> [(N, seconds)]``), log y, written to
    ``path`` (PNG)."""
    fig, ax = _figure(title or "N-Queens: time vs N", "time (s)")
    for name in [s for s in LEGEND_ORDER if s in series] + [s for s in series if s not in LEGEND_ORDER]:
        pts = series[name]
        if pts:
            ax.plot([n for n, _ in pts], [t for _, t in pts], marker="o", label=name)
    if series:
        ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)
    return path


def speedup_vs_n(series: Mapping[str, Sequence[tuple[int, float]]], path: str, title: str = "") -> str:
    """Speedup over serial vs N, one line per strategy (``strategy -> [(N, speedup)]``), log
    y with the line 1 (as fast as serial), written to ``path`` (PNG)."""
    fig, ax = _figure(title or "N-Queens: speedup over serial", "serial time / time")
    ax.axhline(1.0, color="grey", linewidth=1)
    for name, pts in series.items():
        if pts:
            ax.plot([n for n, _ in pts], [v for _, v in pts], marker="o", label=name)
    if series:
        ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)
    return path
