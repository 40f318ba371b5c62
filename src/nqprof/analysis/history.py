"""Saved pytest-benchmark runs as a pandas DataFrame, and run-to-run comparison.

A run is one JSON file that ``pytest bench/ --benchmark-autosave`` (or ``--benchmark-save``,
``--benchmark-json``) wrote under the storage folder (default ``.benchmarks``, one subfolder
per machine id). :func:`load_history` gives one row per benchmark per run:

* the run: ``run`` (the file's path under the storage folder, without ``.json``),
  ``datetime``, ``commit``, ``dirty``, ``branch``, ``machine.*`` (the fields nqprof adds to
  machine_info: ``machine.gpu``, ``machine.cuda_toolkit``, ``machine.driver`` ..., and
  ``machine.node``, ``machine.cpu``);
* the benchmark: ``test`` (the test function), ``strategy``, ``n``, ``params`` (``k=v,...``),
  ``param.<k>``, and pytest-benchmark's host-clock statistics ``median``, ``iqr``,
  ``stddev``, ``min``, ``max``, ``mean``, ``rounds``;
* the run record: ``extra.<key>`` (dicts flattened with dots: ``extra.count``,
  ``extra.gpu_s``, ``extra.memory.deltas_mib.module`` ...), and the CUDA-event statistics
  ``gpu.median``, ``gpu.iqr``, ``gpu.stddev``, ``gpu.rounds`` from ``extra.gpu_times``.

pandas is imported when needed; the figures are drawn by :mod:`nqprof.analysis.figures`.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any, Iterable

from ..errors import InputError
from ..machine import machine_differences

DEFAULT_STORAGE = ".benchmarks"

#: metric -> (median column, IQR column, stddev column, rounds column)
METRICS: dict[str, tuple[str, str, str, str]] = {
    "median": ("median", "iqr", "stddev", "rounds"),
    "gpu": ("gpu.median", "gpu.iqr", "gpu.stddev", "gpu.rounds"),
}
#: A difference below this fraction of the median is "same", whatever the spread says:
#: run-to-run variation (clocks, placement) that one run's rounds cannot show.
NOISE_FLOOR = 0.02
#: Fewer rounds than this: the spread is the standard deviation, not the IQR.
MIN_ROUNDS_FOR_IQR = 4
#: The columns identifying one benchmark across runs.
CASE_COLUMNS = ["test", "strategy", "n", "params"]
#: What compare may say of a benchmark, in the order summaries list them.
VERDICTS = ("same", "faster", "slower", "changed-source", "only-a", "only-b")
STAT_FIELDS = ("min", "max", "mean", "stddev", "median", "iqr", "q1", "q3", "rounds", "ops")


class HistoryWarning(UserWarning):
    """A saved file that could not be read (the other files still load)."""


# -- loading -------------------------------------------------------------------------------


def flatten(value: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``{"a": {"b": 1}, "c": [2]}`` -> ``{"<prefix>.a.b": 1, "<prefix>.c": [2]}``."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}.{key}"
        if isinstance(item, dict) and item:
            out.update(flatten(item, name))
        else:
            out[name] = item
    return out


def params_text(params: dict[str, Any] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in (params or {}).items())


def spread(times: list[float]) -> dict[str, Any]:
    """Median, IQR, stddev and rounds of ``times``, computed as pytest-benchmark computes
    them for the host-clock times."""
    from pytest_benchmark.stats import Stats

    stats = Stats()
    for t in times:
        stats.update(t)
    if not times:
        return {"median": math.nan, "iqr": math.nan, "stddev": math.nan, "rounds": 0}
    return {"median": stats.median, "iqr": stats.iqr, "stddev": stats.stddev, "rounds": stats.rounds}


def run_rows(data: dict[str, Any], run: str) -> list[dict[str, Any]]:
    """The rows of one saved run; KeyError/TypeError/ValueError where it is not one."""
    commit = data.get("commit_info") or {}
    machine = data.get("machine_info") or {}
    common: dict[str, Any] = {
        "run": run,
        "datetime": data["datetime"],
        "commit": commit.get("id"),
        "dirty": commit.get("dirty"),
        "branch": commit.get("branch"),
        "machine.node": machine.get("node"),
        "machine.cpu": (machine.get("cpu") or {}).get("brand_raw"),
    }
    common.update(flatten(machine.get("nqprof") or {}, "machine"))
    rows = []
    for bench in data["benchmarks"]:
        extra = bench.get("extra_info") or {}
        stats = bench["stats"]
        row = dict(common)
        row.update(
            name=bench["name"],
            test=bench["name"].split("[", 1)[0],
            fullname=bench.get("fullname"),
            group=bench.get("group"),
            strategy=extra.get("strategy"),
            n=extra.get("n"),
            params=params_text(extra.get("params")),
        )
        row.update({f"param.{k}": v for k, v in (extra.get("params") or {}).items()})
        row.update({key: stats[key] for key in STAT_FIELDS if key in stats})
        promoted = ("strategy", "n", "params")  # columns of their own, above
        row.update(flatten({k: v for k, v in extra.items() if k not in promoted}, "extra"))
        row.update({f"gpu.{k}": v for k, v in spread(extra.get("gpu_times") or []).items()})
        rows.append(row)
    return rows


def history_files(storage: str | Path) -> list[Path]:
    root = Path(storage)
    if not root.is_dir():
        raise InputError(f"no benchmark storage folder {str(root)!r} (pytest bench/ --benchmark-autosave writes one)")
    return sorted(root.rglob("*.json"), key=lambda p: (p.name, str(p.parent)))


def load_history(storage: str | Path = DEFAULT_STORAGE, strict: bool = False):
    """Every saved run under ``storage`` as one DataFrame, oldest run first. A file that is
    not a pytest-benchmark run is skipped with a :class:`HistoryWarning` naming it
    (``strict``: an :class:`InputError` naming it)."""
    import pandas as pd

    root = Path(storage)
    rows: list[dict[str, Any]] = []
    for path in history_files(root):
        run = path.relative_to(root).with_suffix("").as_posix()
        try:
            rows.extend(run_rows(json.loads(path.read_text(encoding="utf-8")), run))
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            why = f"{type(exc).__name__}: {exc}" if not isinstance(exc, KeyError) else f"missing key {exc}"
            message = f"{path}: not a readable pytest-benchmark run ({why})"
            if strict:
                raise InputError(message) from None
            warnings.warn(message, HistoryWarning, stacklevel=2)
    if not rows:
        raise InputError(f"no saved benchmarks under {str(root)!r} (run pytest bench/ --benchmark-autosave first)")
    df = pd.DataFrame(rows)
    df["datetime"] = pd.to_datetime(df["datetime"], utc=True, format="ISO8601")
    params = [c for c in df.columns if c.startswith("param.")]
    df[params] = df[params].convert_dtypes()  # integers stay integers beside missing values
    return df.sort_values(["datetime", "run"], kind="stable").reset_index(drop=True)


def runs(df):
    """One row per run, oldest first: run, datetime, commit, GPU, toolkit, benchmarks."""
    columns = [c for c in ("run", "datetime", "commit", "machine.gpu", "machine.cuda_toolkit") if c in df]
    return df.groupby("run", sort=False).agg(**{c: (c, "first") for c in columns[1:]}, benchmarks=("name", "size")).reset_index()


def run_label(run: str) -> str:
    """``Linux-CPython-3.11-64bit/0003_abc_20260101_120000`` -> ``0003``."""
    name = run.rsplit("/", 1)[-1]
    head = name.split("_", 1)[0]
    return head if head.isdigit() else name


def resolve_run(df, ref: str) -> str:
    """The run ``ref`` names: its full name, its file name, or a unique prefix of the file
    name such as ``0003``."""
    names = list(dict.fromkeys(df["run"]))
    if ref in names:
        return ref
    matches = [r for r in names if r.rsplit("/", 1)[-1].startswith(ref) or r.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise InputError(f"no saved run {ref!r} (runs: {', '.join(names)})")
    raise InputError(f"{ref!r} names several runs: {', '.join(matches)}")


def last_runs(df, count: int = 2) -> list[str]:
    names = list(dict.fromkeys(df["run"]))
    if len(names) < count:
        raise InputError(f"need {count} saved runs, found {len(names)}")
    return names[-count:]


# -- comparing -----------------------------------------------------------------------------


def _run_rows(df, run: str, metric: str):
    median, iqr, stddev, rounds = METRICS[metric]
    part = df[(df["run"] == run) & df["strategy"].notna() & df[median].notna()]
    if "extra.source_hash" not in part:
        part = part.assign(**{"extra.source_hash": None})
    part = part.drop_duplicates(CASE_COLUMNS, keep="last")
    return part.set_index(CASE_COLUMNS)[[median, iqr, stddev, rounds, "extra.source_hash"]].set_axis(
        ["median", "iqr", "stddev", "rounds", "source_hash"], axis=1
    )


def noise(iqr: float, stddev: float, rounds: float) -> float:
    """The spread of one benchmark's rounds: the IQR, or the standard deviation where
    there are too few rounds for quartiles."""
    return iqr if rounds >= MIN_ROUNDS_FOR_IQR else stddev


def verdict(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, float]:
    """(verdict, threshold in seconds) for benchmark ``a`` -> ``b``: ``changed-source`` if
    the kernel sources or build differ; ``same`` if the medians differ by no more than the
    larger of both runs' spreads (and NOISE_FLOOR of A's median); else faster/slower."""
    threshold = max(
        noise(a["iqr"], a["stddev"], a["rounds"]),
        noise(b["iqr"], b["stddev"], b["rounds"]),
        NOISE_FLOOR * a["median"],
    )
    if _or_none(a["source_hash"]) != _or_none(b["source_hash"]):
        return "changed-source", threshold
    diff = b["median"] - a["median"]
    if abs(diff) <= threshold:
        return "same", threshold
    return ("slower" if diff > 0 else "faster"), threshold


def missing(value) -> bool:
    """None or NaN (pandas' missing value)."""
    return value is None or value != value


def _or_none(value):
    return None if missing(value) else value


def compare(df, run_a: str, run_b: str, metric: str = "median"):
    """Per test, strategy, N and parameters: both medians, the change in percent, the
    noise threshold in percent of A's median and the verdict (same / faster / slower /
    changed-source; only-a / only-b where a benchmark is in one run only)."""
    import pandas as pd

    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r} (known: {', '.join(METRICS)})")
    a, b = _run_rows(df, resolve_run(df, run_a), metric), _run_rows(df, resolve_run(df, run_b), metric)
    rows = []
    for key in list(a.index) + [k for k in b.index if k not in a.index]:
        row = dict(zip(CASE_COLUMNS, key))
        in_a, in_b = key in a.index, key in b.index
        row["median_a"] = a.loc[key, "median"] if in_a else None
        row["median_b"] = b.loc[key, "median"] if in_b else None
        if in_a and in_b:
            result, threshold = verdict(a.loc[key].to_dict(), b.loc[key].to_dict())
            row["change_pct"] = 100.0 * (row["median_b"] / row["median_a"] - 1)
            row["noise_pct"] = 100.0 * threshold / row["median_a"]
            row["verdict"] = result
        else:
            row.update(change_pct=None, noise_pct=None, verdict="only-a" if in_a else "only-b")
        rows.append(row)
    return pd.DataFrame(rows, columns=[*CASE_COLUMNS, "median_a", "median_b", "change_pct", "noise_pct", "verdict"])


def machine_warnings(df, run_a: str, run_b: str) -> list[str]:
    """The GPU / toolkit / driver differences between two runs (empty if none)."""

    def machine(run: str) -> dict[str, Any]:
        first = df[df["run"] == resolve_run(df, run)].iloc[0]
        return {"nqprof": {k.split(".", 1)[1]: _or_none(v) for k, v in first.items() if k.startswith("machine.")}}

    return machine_differences(machine(run_a), machine(run_b))


# -- figures -------------------------------------------------------------------------------


def latest_cases(df, run_refs: Iterable[str] | None = None, metric: str = "median"):
    """The rows of the given runs (default: the last run) that carry a strategy, one per
    strategy, N and parameters (the newest run's; within a run the first test's), with
    the metric as ``time``."""
    chosen = [resolve_run(df, r) for r in run_refs] if run_refs else last_runs(df, 1)
    column = METRICS[metric][0]
    part = df[df["run"].isin(chosen) & df["strategy"].notna() & df[column].notna()]
    if part.empty:
        raise InputError(f"no nqprof benchmarks with a {metric} time in run(s) {', '.join(chosen)}")
    part = part.drop_duplicates(["run", "strategy", "n", "params"])  # the run's first test
    part = part.drop_duplicates(["strategy", "n", "params"], keep="last")  # the newest run
    return part.assign(time=part[column])
