"""Strategy x toolkit x GPU: the saved runs of several CUDA toolkits and GPU models side by side
(``nqprof matrix --history DIR``).

The histories are the storage folders that ``pytest bench/ --benchmark-save`` wrote per
toolkit (``tox -e cuda12.4`` saves under ``.benchmarks/cuda12.4``, ``tools/matrix_gpu.sh``
under ``history-<toolkit>``), gathered under one folder: :func:`~.history.load_history` reads
every run below it. A column is one (GPU model, toolkit) pair as the runs' machine_info
recorded them; a cell, the median of the newest run of that pair that has the case.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError
from .history import gpu_model, missing, resolve_metric


def _release_key(version: Any) -> tuple:
    try:
        return tuple(int(x) for x in str(version).split("."))
    except ValueError:
        return (999, str(version))


def column_label(gpu: Any, toolkit: Any) -> str:
    """``"H200 CUDA 13.0"``; a run without a GPU is ``"CPU"`` (its toolkit, if any, after)."""
    where = "CPU" if missing(gpu) or not gpu else gpu_model(gpu)
    return where if missing(toolkit) or not toolkit else f"{where} CUDA {toolkit}"


def matrix_times(df, metric: str = "compute"):
    """``(table, columns)``: one row per strategy, N and given parameters, one column per
    (GPU model, toolkit) pair in the history, the metric's median of the newest run of that
    pair; ``columns`` maps each column to its GPU model, toolkit and the runs it read, in
    order (GPU model, then toolkit release)."""
    metric = resolve_metric(metric)
    median = f"{metric}.median"
    if median not in df:
        raise InputError(f"no {metric} times in this history")
    part = df[df["strategy"].notna() & df[median].notna()].copy()
    if part.empty:
        raise InputError(f"no nqprof benchmarks with a {metric} time in this history")
    for column in ("machine.gpu", "machine.cuda_toolkit"):
        if column not in part:
            part[column] = None
    part["column"] = [
        column_label(g, t)
        for g, t in zip(part["machine.gpu"], part["machine.cuda_toolkit"], strict=True)
    ]
    # the newest run of each pair wins (the history is sorted oldest first); within a run,
    # its first test's row
    part = part.drop_duplicates(["run", "column", "strategy", "n", "params"])
    part = part.drop_duplicates(["column", "strategy", "n", "params"], keep="last")
    info: dict[str, dict[str, Any]] = {}
    for row in part.to_dict("records"):
        entry = info.setdefault(
            row["column"],
            {"gpu": row["machine.gpu"], "toolkit": row["machine.cuda_toolkit"], "runs": []},
        )
        if row["run"] not in entry["runs"]:
            entry["runs"].append(row["run"])
    order = sorted(
        info,
        key=lambda c: (
            "" if missing(info[c]["gpu"]) else gpu_model(info[c]["gpu"]),
            _release_key(info[c]["toolkit"]),
        ),
    )
    table = part.pivot_table(
        index=["strategy", "n", "params"], columns="column", values=median, aggfunc="first"
    )
    table = table.reindex(columns=order)
    strategies = list(dict.fromkeys(part["strategy"]))
    table = table.reset_index()
    table["_order"] = table["strategy"].map(strategies.index)
    table = table.sort_values(["_order", "n", "params"]).drop(columns="_order")
    return table.reset_index(drop=True), {c: info[c] for c in order}


def matrix_text(table, columns: dict[str, dict[str, Any]], metric: str = "compute") -> str:
    """The matrix as text: a column per (GPU, toolkit) pair, the slowest over the fastest
    (``spread``), then which runs each column read."""
    from ..textfmt import seconds
    from ..textfmt import table as text_table

    header = ["strategy", "N", "params", *columns, "spread"]
    rows = []
    for row in table.to_dict("records"):
        values = [row[c] for c in columns if not missing(row[c])]
        spread = f"{max(values) / min(values):.2f}x" if len(values) > 1 else "-"
        rows.append(
            [
                row["strategy"],
                row["n"],
                row["params"] or "-",
                *("-" if missing(row[c]) else seconds(float(row[c])) for c in columns),
                spread,
            ]
        )
    lines = [text_table(header, rows, right_align_numbers=True), ""]
    lines.append(f"medians ({metric}); spread: the slowest column over the fastest")
    for name, entry in columns.items():
        lines.append(f"  {name}: {entry['gpu'] or 'no GPU'}, runs {', '.join(entry['runs'])}")
    return "\n".join(lines)


def matrix_figure(table, columns: dict[str, dict[str, Any]], path: str | Path, metric: str) -> Path:
    """One figure: a panel per strategy, time vs N, a line per (GPU, toolkit) pair."""
    from .figures import log_panels

    panels: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for strategy, rows in table.groupby("strategy", sort=False):
        for params, part in rows.groupby("params", sort=False):
            title = f"{strategy} ({params})" if params else strategy
            panels[title] = {
                c: [
                    (n, float(t)) for n, t in zip(part["n"], part[c], strict=True) if not missing(t)
                ]
                for c in columns
            }
    return log_panels(
        panels,
        path,
        f"strategy x toolkit x GPU ({metric} time, medians)",
        xlabel="N",
        ylabel="time (s)",
    )
