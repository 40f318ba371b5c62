"""nqprof's figures, drawn one way: time vs N (log y) for a run's strategies, and the
speedup over serial, from a benchmark history or from a report's measurements."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..errors import UnavailableError
from . import history
from .history import latest_cases, run_label

#: The files :func:`history_figures` writes (the second where serial was measured).
HISTORY_FIGURES = ("time_vs_n.png", "speedup_over_serial.png")


#: Strategies drawn first, in this order (the rest follow as they come).
def legend_order() -> list[str]:
    """The strategies in `nqprof strategies`' order (Strategy.order): the figures' legends."""
    from ..strategies import names

    return names()


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
            detail = ", ".join(
                f"{c[len('param.') :]}={v}" for c, v in zip(axes, values, strict=True)
            )
            lines[f"{strategy} ({detail})" if detail else strategy] = line.sort_values("n")
    return lines


def _machine_text(part) -> str:
    first = part.iloc[0]
    gpu = first.get("machine.gpu")
    if isinstance(gpu, str):
        return f"{gpu}, CUDA {first.get('machine.cuda_toolkit')}"
    return f"CPU: {first.get('machine.cpu') or first.get('machine.node')}"


def _new_figure(figsize: tuple[float, float]):
    """A figure of ``figsize`` inches, laid out by matplotlib (its object API: no pyplot, no
    backend); one line naming the extra where matplotlib is missing."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise UnavailableError(
            f"figures need matplotlib ({exc}); install nqprof[analysis]"
        ) from None
    return Figure(figsize=figsize, layout="constrained")


def _figure(title: str, ylabel: str):
    """A figure with one log-y axes over N."""
    fig = _new_figure((8, 5))
    from matplotlib.ticker import MaxNLocator

    ax = fig.add_subplot()
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel("N")
    ax.set_ylabel(ylabel)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, which="both", alpha=0.3)
    return fig, ax


def history_figures(
    df, out_dir: str | Path, run_refs: Iterable[str] | None = None, metric: str = "compute"
) -> list[Path]:
    """Write ``time_vs_n.png`` (log time over N, a line per strategy and parameters) and,
    where ``serial`` was measured, ``speedup_over_serial.png`` (serial time / time at the
    same N). Returns the files written."""
    part = latest_cases(df, run_refs, metric)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    what = (
        "compute-time median"
        if history.resolve_metric(metric) == "compute"
        else "round-trip median"
    )
    where = (
        f"run {', '.join(run_label(r) for r in dict.fromkeys(part['run']))}, {_machine_text(part)}"
    )
    lines = _lines(part)

    fig, ax = _figure(f"N-Queens: time vs N\n{where}", f"{what} time per solve [s]")
    for label, g in lines.items():
        ax.plot(g["n"], g["time"], marker="o", label=label)
    ax.legend(fontsize="small")
    written = [out / HISTORY_FIGURES[0]]
    fig.savefig(written[0], dpi=120)

    serial = part[part["strategy"] == "serial"].groupby("n")["time"].min()
    if not serial.empty:
        fig, ax = _figure(f"N-Queens: speedup over serial (same N)\n{where}", "serial time / time")
        ax.axhline(1.0, color="grey", linewidth=1)
        for label, g in lines.items():
            g = g[g["n"].isin(serial.index) & (g["strategy"] != "serial")]
            if not g.empty:
                ax.plot(
                    g["n"],
                    serial[g["n"]].to_numpy() / g["time"].to_numpy(),
                    marker="o",
                    label=label,
                )
        ax.legend(fontsize="small")
        written.append(out / HISTORY_FIGURES[1])
        fig.savefig(written[-1], dpi=120)
    return written


def time_vs_n(series: Mapping[str, Sequence[tuple[int, float]]], path: str, title: str = "") -> str:
    """Time vs N, one line per strategy (``strategy -> [(N, seconds)]``), log y, written to
    ``path`` (PNG)."""
    return _lines_vs_n(series, path, title or "N-Queens: time vs N", "time (s)")


def speedup_vs_n(
    series: Mapping[str, Sequence[tuple[int, float]]], path: str, title: str = ""
) -> str:
    """Speedup over serial vs N, one line per strategy (``strategy -> [(N, speedup)]``), log
    y with the line 1 (as fast as serial), written to ``path`` (PNG)."""
    return _lines_vs_n(
        series, path, title or "N-Queens: speedup over serial", "serial time / time", at_one=True
    )


def _lines_vs_n(
    series: Mapping[str, Sequence[tuple[int, float]]],
    path: str,
    title: str,
    ylabel: str,
    at_one: bool = False,
) -> str:
    """One line per strategy over N (registered ones first, in their order), log y,
    optionally a grey line at 1."""
    fig, ax = _figure(title, ylabel)
    if at_one:
        ax.axhline(1.0, color="grey", linewidth=1)
    order = legend_order()
    for name in [s for s in order if s in series] + [s for s in series if s not in order]:
        pts = series[name]
        if pts:
            ax.plot([n for n, _ in pts], [v for _, v in pts], marker="o", label=name)
    if series:
        ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)
    return path


def log_panels(
    panels: Mapping[str, Mapping[str, Sequence[tuple[float, float]]]],
    path,
    title: str,
    *,
    xlabel: str,
    ylabel: str,
    logx: int | None = None,
) -> Path:
    """Side-by-side log-y panels sharing y (``panel title -> line label -> [(x, y)]``), x on a
    log scale of base ``logx`` if given; written to ``path`` (PNG)."""
    fig = _new_figure((4.2 * len(panels), 3.6))
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, (panel, lines) in zip(axes, panels.items(), strict=True):
        for label, pts in lines.items():
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
        if logx:
            ax.set_xscale("log", base=logx)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_title(panel, fontsize="medium")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(ylabel)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.savefig(path, dpi=120)
    return Path(path)


# --- Wang and Yalamanchili's characterization (nqprof characterize, report wang) ------------


def _loglog(title: str, xlabel: str, ylabel: str, ax=None, fig=None):
    """Log-log axes (a new figure unless ``ax`` is given)."""
    if ax is None:
        fig = _new_figure((8, 5))
        ax = fig.add_subplot()
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    return fig, ax


def launch_figure(
    series: Mapping[str, Sequence[tuple[int, float, float]]],
    path: str | Path,
    where: str = "",
    paper_small_ms: float | None = None,
    paper_small_range: tuple[int, int] | None = None,
    paper_large: Mapping[str, float] | None = None,
    paper_large_count: int | None = None,
) -> Path:
    """Their Fig. 5: launch time (t1 - t2) vs launch count, log-log, a line per launch mode
    (``mode -> [(count, seconds, seconds per launch)]``), with the paper's Kepler points;
    beside it, the cost of one launch vs the count."""
    fig = _new_figure((12, 5))
    left, right = fig.subplots(1, 2)
    if where:
        fig.suptitle(where, fontsize="medium")
    _loglog(
        "child-launch time vs launch count (their Fig. 5)",
        "device launches",
        "launch time t1 - t2 (ms)",
        ax=left,
    )
    _loglog("time per launch", "device launches", "per launch (us)", ax=right)
    for mode, pts in series.items():
        counts = [c for c, _, _ in pts]
        left.plot(counts, [s * 1e3 for _, s, _ in pts], marker="o", label=mode)
        right.plot(counts, [p * 1e6 for _, _, p in pts], marker="o", label=mode)
    if paper_small_ms and paper_small_range:
        lo, hi = paper_small_range
        left.plot(
            [lo, hi],
            [paper_small_ms, paper_small_ms],
            color="grey",
            linewidth=3,
            alpha=0.6,
            label=f"paper (Kepler): ~{paper_small_ms:g} ms, {lo}-{hi} launches",
        )
        right.plot(
            [lo, hi],
            [paper_small_ms * 1e3 / lo, paper_small_ms * 1e3 / hi],
            color="grey",
            linewidth=3,
            alpha=0.6,
            label=f"paper (Kepler): ~{paper_small_ms:g} ms / launches",
        )
    for (gpu, ms), marker in zip((paper_large or {}).items(), "s^D", strict=False):
        left.plot(
            [paper_large_count],
            [ms],
            marker=marker,
            linestyle="none",
            color="grey",
            label=f"paper {gpu}: {ms:g} ms at {paper_large_count:,}",
        )
        right.plot(
            [paper_large_count],
            [ms * 1e3 / paper_large_count],
            marker=marker,
            linestyle="none",
            color="grey",
            label=f"paper {gpu}",
        )
    left.legend(fontsize="small")
    right.legend(fontsize="small")
    fig.savefig(path, dpi=120)
    return Path(path)


def reserve_figure(
    series: Mapping[str, Sequence[tuple[int, float]]],
    path: str | Path,
    where: str = "",
    paper_band_mb: tuple[float, float] | None = None,
    paper_band_limit: int | None = None,
    fit: tuple[float, float] | None = None,
) -> Path:
    """Their Fig. 6(a): device memory reserved vs the pending-launch limit (log-log; a limit
    of 0 is drawn at 1/2), a line for the limit alone and one with a cudadevrt module loaded,
    the paper's band, and the fitted line (``(bytes per slot, fixed bytes)``)."""
    fig, ax = _loglog(
        "memory reserved vs pending-launch limit (their "
        f"Fig. 6(a)){f' ({where})' if where else ''}",
        "pending-launch limit (0 drawn at 1/2)",
        "reserved (MiB; linear below 1)",
    )
    ax.set_yscale("symlog", linthresh=1.0)  # nothing reserved is a reading too
    for label, pts in series.items():
        pts = [(max(v, 0.5), mib) for v, mib in pts]
        ax.plot([v for v, _ in pts], [m for _, m in pts], marker="o", label=label)
    if paper_band_mb:
        lo, hi = paper_band_mb
        ax.fill_between(
            [0.5, paper_band_limit or 32],
            [lo * 1e6 / 2**20] * 2,
            [hi * 1e6 / 2**20] * 2,
            color="grey",
            alpha=0.3,
            label=f"paper (Kepler): {lo:g}-{hi:g} MB at limits <= {paper_band_limit}",
        )
    if fit:
        slope, intercept = fit
        xs = sorted({v for pts in series.values() for v, _ in pts if v >= 1})
        if xs:
            ax.plot(
                xs,
                [(intercept + slope * x) / 2**20 for x in xs],
                linestyle="--",
                color="black",
                label=f"fit: {slope / 1024:.2f} KiB per slot + {intercept / 2**20:.0f} MiB",
            )
    ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)
    return Path(path)


def speedup_figure(
    bars: Sequence[tuple[str, float | None, float | None]],
    path: str | Path,
    where: str = "",
    baseline: str = "the best non-CDP strategy",
    paper_ideal: tuple[float, float] | None = None,
    paper_measured: float | None = None,
) -> Path:
    """Their Fig. 4: per run, the speedup over ``baseline`` measured and ideal (without
    launch overhead), with the paper's range of ideal speedups and its mean slowdown."""
    fig = _new_figure((max(6, 1.2 * len(bars) + 2), 5))
    ax = fig.add_subplot()
    ax.set_title(f"speedup over {baseline}{f' ({where})' if where else ''}", fontsize="medium")
    ax.set_ylabel(f"{baseline} time / time")
    ax.set_yscale("log")
    xs = range(len(bars))
    ax.bar([x - 0.2 for x in xs], [m or 0 for _, m, _ in bars], width=0.4, label="CDP measured")
    ax.bar(
        [x + 0.2 for x in xs],
        [i or 0 for _, _, i in bars],
        width=0.4,
        label="CDP ideal (no launch overhead)",
    )
    ax.set_xticks(list(xs), [label for label, _, _ in bars], rotation=30, ha="right")
    ax.axhline(1.0, color="grey", linewidth=1)
    if paper_ideal:
        ax.axhspan(
            *paper_ideal,
            color="green",
            alpha=0.15,
            label=f"paper ideal: {paper_ideal[0]}-{paper_ideal[1]}x",
        )
    if paper_measured:
        ax.axhline(
            1 / paper_measured,
            color="red",
            linestyle="--",
            linewidth=1,
            label=f"paper measured: {paper_measured}x slower on average",
        )
    ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)
    return Path(path)


def block_timelines(
    panels: Mapping[str, Sequence[tuple[int, float, float]]], path, title: str
) -> Path:
    """Blocks by SM against time, a panel per launch (``panel title -> [(SM, start ms, end
    ms)]``, sharing the time axis): a block is a line at its SM's row, the blocks an SM held
    one above another; written to ``path``."""
    fig = _new_figure((9, 2.4 * len(panels) + 0.6))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (panel, blocks) in zip(axes, panels.items(), strict=True):
        stacked: dict[int, int] = {}
        for sm, start, end in blocks:
            k = stacked.get(sm, 0)
            stacked[sm] = k + 1
            ax.plot([start, end], [sm + 0.12 * k] * 2, linewidth=0.6)
        ax.set_ylabel("SM")
        ax.set_title(panel, fontsize="medium")
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("ms after the first block's start")
    fig.suptitle(title)
    fig.savefig(path, dpi=120)
    return Path(path)
