"""Saved pytest-benchmark runs as a pandas DataFrame (compared by :mod:`.comparing`).

A run is one JSON file that ``pytest bench/ --benchmark-autosave`` (or ``--benchmark-save``,
``--benchmark-json``) wrote under the storage folder (default ``.benchmarks``, one subfolder
per machine id). :func:`load_history` gives one row per benchmark per run:

* the run: ``run`` (the file's path under the storage folder, without ``.json``),
  ``datetime``, ``commit``, ``dirty``, ``branch``, ``machine.*`` (the fields nqprof adds to
  machine_info: ``machine.gpu``, ``machine.cuda_toolkit``, ``machine.driver`` ..., and
  ``machine.node``, ``machine.cpu``);
* the benchmark: ``test`` (the test function), ``strategy``, ``n``, ``params`` (the
  parameters the user gave, ``k=v,...``: with test, strategy and N the case's identity,
  which stays the same as nqprof adds parameters), ``resolved`` (every parameter as run),
  ``param.<k>`` (resolved), and the statistics pytest-benchmark kept: ``median``, ``iqr``,
  ``stddev``, ``min``, ``max``, ``mean``, ``rounds`` (since nqprof 0.2 the round statistic
  nqprof measured; before, the host clock around each round);
* the run record: ``extra.<key>`` (dicts flattened with dots: ``extra.count``,
  ``extra.gpu_s``, ``extra.memory.deltas_mib.module`` ...);
* per metric (:data:`METRICS`): ``<metric>.samples`` (every round, in seconds),
  ``<metric>.median``, ``<metric>.iqr``, ``<metric>.stddev``, ``<metric>.rounds``.
  ``compute`` is the CUDA-event time of a GPU case and the worker's compute time of a CPU
  case; ``wall`` the host round trip around each round (older runs: pytest-benchmark's
  host-clock statistics, its samples where saved with ``--benchmark-save-data``). ``gpu``
  and ``median``, the metric names of older nqprof versions, read as ``compute`` and
  ``wall``.

pandas is imported when needed; the figures are drawn by :mod:`nqprof.analysis.figures`.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..instructions import SECONDS_PER_INSTRUCTION
from ..result import SCHEMA_VERSION
from .verdicts import CHANGES, VERDICTS  # noqa: F401  (compare's names, kept importable here)

DEFAULT_STORAGE = ".benchmarks"

#: The metrics compare and plot can use: what each round's time is.
METRICS = {
    "compute": "CUDA events for GPU cases, the worker's compute time for CPU cases",
    "wall": "host round trip around each round",
    "instructions": "one round's instructions for CPU cases that counted them "
    "(--nq-cpu-metric=instructions: compared exactly, no floor), compute for the others",
}
#: Metric names of older nqprof versions.
METRIC_ALIASES = {"gpu": "compute", "median": "wall"}
#: The clocks nqprof hands pytest-benchmark (nqprof.nqbench.clock_name) and their metric.
NQPROF_CLOCKS = {
    "nqprof.cuda_events": "compute",
    "nqprof.worker_clock": "compute",
    "nqprof.host_round_trip": "wall",
}
#: The columns identifying one benchmark across runs.
CASE_COLUMNS = ["test", "strategy", "n", "params"]
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
    them."""
    from pytest_benchmark.stats import Stats

    stats = Stats()
    for t in times:
        stats.update(t)
    if not times:
        return {"median": math.nan, "iqr": math.nan, "stddev": math.nan, "rounds": 0}
    return {
        "median": stats.median,
        "iqr": stats.iqr,
        "stddev": stats.stddev,
        "rounds": stats.rounds,
    }


def resolve_metric(metric: str) -> str:
    metric = METRIC_ALIASES.get(metric, metric)
    if metric not in METRICS:
        raise InputError(
            f"unknown metric {metric!r} (known: {', '.join(METRICS)}; "
            f"{', '.join(f'{k} = {v}' for k, v in METRIC_ALIASES.items())})"
        )
    return metric


def upgraded(bench: dict[str, Any]) -> dict[str, Any]:
    """A saved benchmark's record (its ``extra_info``) in the current schema
    (nqprof.result.SCHEMA_VERSION), each older version taken one step up; an
    :class:`InputError` for a record newer than this nqprof reads. Every reader of saved
    records goes through here, so an old history reads as a new one does."""
    extra = dict(bench.get("extra_info") or {})
    version = extra.get("schema", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise InputError(
            f"record schema {version!r} of {bench.get('name')!r}: this nqprof reads up to "
            f"{SCHEMA_VERSION} (a newer nqprof wrote it)"
        )
    if version < 2:
        extra = _schema_1_to_2(bench, extra)
    return extra


def _schema_1_to_2(bench: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 (no version written): the rounds may be only ``gpu_times`` (GPU) or
    ``wall_times``; the host round trip only pytest-benchmark's kept data, where its clock
    was the host's (a benchmark that is not nqprof's gets only that); the parameters given
    only the pytest fixture's or the resolved ones."""
    clock = str((bench.get("options") or {}).get("timer", ""))
    kept = bench.get("data") or bench.get("stats", {}).get("data")  # --benchmark-save-data
    if not extra.get("samples_wall") and kept and NQPROF_CLOCKS.get(clock, "wall") == "wall":
        extra["samples_wall"] = list(kept)
    if not extra or set(extra) == {"samples_wall"}:  # no record of nqprof's
        return extra
    extra["samples_compute"] = (
        extra.get("samples_compute") or extra.get("gpu_times") or extra.get("wall_times") or None
    )
    case = extra.get("case")
    if not (isinstance(case, dict) and isinstance(case.get("given"), dict)):
        fixture = (bench.get("params") or {}).get("nqbench")
        given = fixture.get("params") if isinstance(fixture, dict) else None
        given = given if isinstance(given, dict) else extra.get("params") or {}
        extra["case"] = {**(case if isinstance(case, dict) else {}), "given": given}
    extra["schema"] = 2
    return extra


def given_params(extra: dict[str, Any]) -> dict[str, Any]:
    """The parameters the user gave, of an :func:`upgraded` record (the case's identity)."""
    return (extra.get("case") or {}).get("given") or {}


def record_samples(extra: dict[str, Any]) -> dict[str, list[float] | None]:
    """Each metric's per-round times of an :func:`upgraded` record (None where the run kept
    none)."""
    counted = (extra.get("instructions") or {}).get("count")
    compute = extra.get("samples_compute") or None
    instructions = [counted * SECONDS_PER_INSTRUCTION] if counted else compute
    return {"compute": compute, "wall": extra.get("samples_wall") or None,
            "instructions": instructions}  # fmt: skip


def samples(bench: dict[str, Any]) -> dict[str, list[float] | None]:
    """Each metric's per-round times of a saved benchmark (:func:`record_samples`)."""
    return record_samples(upgraded(bench))


def saved_run_rows(data: dict[str, Any], run: str) -> list[dict[str, Any]]:
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
        extra = upgraded(bench)
        stats = bench["stats"]
        row = dict(common)
        row.update(
            name=bench["name"],
            test=bench["name"].split("[", 1)[0],
            fullname=bench.get("fullname"),
            group=bench.get("group"),
            strategy=extra.get("strategy"),
            n=extra.get("n"),
            params=params_text(given_params(extra)),
            resolved=params_text(extra.get("params")),
        )
        row.update({f"param.{k}": v for k, v in (extra.get("params") or {}).items()})
        row.update({key: stats[key] for key in STAT_FIELDS if key in stats})
        promoted = ("strategy", "n", "params", "samples_compute", "samples_wall", "samples_process")
        row.update(flatten({k: v for k, v in extra.items() if k not in promoted}, "extra"))
        row["extra.params"] = extra.get("params") or {}
        row["extra.conditions"] = extra.get("conditions") or {}
        row["processes"] = extra.get("samples_process") or None
        clock = str((bench.get("options") or {}).get("timer", ""))
        for metric, times in record_samples(extra).items():
            row[f"{metric}.samples"] = times
            row.update({f"{metric}.{k}": v for k, v in spread(times or []).items()})
            if not times and metric == "wall" and extra and clock not in NQPROF_CLOCKS:
                # an older run: pytest-benchmark's statistics are the host clock's
                row.update(
                    {
                        f"wall.{k}": stats.get(k, math.nan)
                        for k in ("median", "iqr", "stddev", "rounds")
                    }
                )
        rows.append(row)
    return rows


#: The folder beside a machine's runs where ``pytest --nq-trace`` stores its traces (and the
#: device timelines, JSON that is not a run).
TRACE_FOLDER = "traces"


def history_files(storage: str | Path) -> list[Path]:
    """The saved runs under ``storage``: every JSON file but those under a TRACE_FOLDER."""
    root = Path(storage)
    if not root.is_dir():
        raise InputError(
            f"no benchmark storage folder {str(root)!r} "
            "(pytest bench/ --benchmark-autosave writes one)"
        )
    runs = [p for p in root.rglob("*.json") if TRACE_FOLDER not in p.relative_to(root).parts[:-1]]
    return sorted(runs, key=lambda p: (p.name, str(p.parent)))


def load_history(storage: str | Path = DEFAULT_STORAGE, strict: bool = False):
    """Every saved run under ``storage`` as one DataFrame, oldest run first. A file that is
    not a pytest-benchmark run is skipped with a :class:`HistoryWarning` naming it
    (``strict``: an :class:`InputError` naming it)."""
    root = Path(storage)
    rows: list[dict[str, Any]] = []
    for path in history_files(root):
        run = path.relative_to(root).with_suffix("").as_posix()
        try:
            rows.extend(saved_run_rows(json.loads(path.read_text(encoding="utf-8")), run))
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            why = (
                f"{type(exc).__name__}: {exc}"
                if not isinstance(exc, KeyError)
                else f"missing key {exc}"
            )
            message = f"{path}: not a readable pytest-benchmark run ({why})"
            if strict:
                raise InputError(message) from None
            warnings.warn(message, HistoryWarning, stacklevel=2)
    if not rows:
        raise InputError(
            f"no saved benchmarks under {str(root)!r} (run "
            "pytest bench/ --benchmark-autosave first)"
        )
    return history_frame(rows)


def history_frame(rows: list[dict[str, Any]]):
    """The rows of saved runs (:func:`saved_run_rows`) as a history DataFrame, oldest run
    first, as :func:`load_history` gives it."""
    import pandas as pd

    df = pd.DataFrame(rows)
    df["datetime"] = pd.to_datetime(df["datetime"], utc=True, format="ISO8601")
    params = [c for c in df.columns if c.startswith("param.")]
    df[params] = df[params].convert_dtypes()  # integers stay integers beside missing values
    return df.sort_values(["datetime", "run"], kind="stable").reset_index(drop=True)


def run_summary(df):
    """One row per run, oldest first: run, datetime, commit, GPU, toolkit, benchmarks."""
    columns = [
        c for c in ("run", "datetime", "commit", "machine.gpu", "machine.cuda_toolkit") if c in df
    ]
    return (
        df.groupby("run", sort=False)
        .agg(**{c: (c, "first") for c in columns[1:]}, benchmarks=("name", "size"))
        .reset_index()
    )


def run_label(run: str) -> str:
    """``Linux-CPython-3.11-64bit/0003_abc_20260101_120000`` -> ``0003``."""
    name = run.rsplit("/", 1)[-1]
    head = name.split("_", 1)[0]
    return head if head.isdigit() else name


def resolve_run(df, ref: str, storage: str | Path | None = None) -> str:
    """The run ``ref`` names: its name (its file's path under the storage folder, with or
    without ``.json``), its file name, a unique prefix of the file name such as ``0003``, a
    glob as pytest-benchmark takes one (``0003_*``, ``Linux-*/0003``: a prefix), or, given
    the ``storage`` folder, its file's path, absolute or from the working folder, as
    ``pytest-benchmark list`` prints it."""
    from fnmatch import fnmatchcase

    names = list(dict.fromkeys(df["run"]))
    ref = str(ref)
    if storage is not None:
        ref = _path_under(ref, storage)
    stem = ref[: -len(".json")] if ref.endswith(".json") else ref
    if stem in names:
        return stem
    if any(c in stem for c in "*?["):
        pattern = stem.rstrip("*") + "*"
        matches = [
            r
            for r in names
            if fnmatchcase(r, pattern) or fnmatchcase(r.rsplit("/", 1)[-1], pattern)
        ]
    else:
        matches = [r for r in names if r.rsplit("/", 1)[-1].startswith(stem) or r.startswith(stem)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise InputError(f"no saved run {ref!r} (runs: {', '.join(names)})")
    raise InputError(f"{ref!r} names several runs: {', '.join(matches)}")


def _path_under(ref: str, storage: str | Path) -> str:
    """``ref`` as a path under ``storage`` where it is a file (absolute, or from the working
    folder); else ``ref`` itself (a name under the storage folder)."""
    path = Path(ref)
    try:
        is_file = path.is_file()
    except OSError:  # a name too long for a path
        is_file = False
    if not is_file:
        return ref
    try:
        return path.resolve().relative_to(Path(storage).resolve()).as_posix()
    except ValueError:
        raise InputError(
            f"{ref} is not a run under the storage folder {str(storage)!r} (give its folder: "
            "--storage DIR)"
        ) from None


def last_runs(df, count: int = 2) -> list[str]:
    names = list(dict.fromkeys(df["run"]))
    if len(names) < count:
        raise InputError(f"need {count} saved runs, found {len(names)}")
    return names[-count:]


def gpu_model(name: str) -> str:
    """``"NVIDIA H100 80GB HBM3"`` -> ``"H100"``: the GPU's name without the vendor and the
    memory size and kind, as a comparison names it (``"H100 PCIe"`` stays itself)."""
    words = str(name).removeprefix("NVIDIA ").split()
    kept = [w for w in words if not re.fullmatch(r"\d+GB|HBM\w*", w)]
    return " ".join(kept or words)


def missing(value) -> bool:
    """None or NaN (pandas' missing value); a list or a dict (pandas' cells may hold either)
    is never missing."""
    return not isinstance(value, (list, dict)) and (value is None or value != value)


def or_none(value):
    return None if missing(value) else value


def list_or_none(value):
    return value if isinstance(value, list) else None


# -- figures -------------------------------------------------------------------------------


def latest_cases(df, run_refs: Iterable[str] | None = None, metric: str = "compute"):
    """The rows of the given runs (default: the last run) that carry a strategy, one per
    strategy, N and parameters (the newest run's; within a run the first test's), with
    the metric's median as ``time``."""
    chosen = [resolve_run(df, r) for r in run_refs] if run_refs else last_runs(df, 1)
    metric = resolve_metric(metric)
    column = f"{metric}.median"
    part = df[df["run"].isin(chosen) & df["strategy"].notna() & df[column].notna()]
    if part.empty:
        raise InputError(f"no nqprof benchmarks with a {metric} time in run(s) {', '.join(chosen)}")
    part = part.drop_duplicates(["run", "strategy", "n", "params"])  # the run's first test
    part = part.drop_duplicates(["strategy", "n", "params"], keep="last")  # the newest run
    return part.assign(time=part[column])
