"""Saved pytest-benchmark runs as a pandas DataFrame, and run-to-run comparison.

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

from .. import conditions
from ..errors import InputError
from ..instructions import SECONDS_PER_INSTRUCTION
from ..machinediff import machine_differences
from . import stats as decide_stats
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


def given_params(bench: dict[str, Any]) -> dict[str, Any]:
    """The parameters the user gave for a saved benchmark: nqprof's ``case`` record, else
    the fixture's parametrization (runs saved before the case was recorded), else every
    parameter (a test that built its case itself)."""
    extra = bench.get("extra_info") or {}
    case = extra.get("case")
    if isinstance(case, dict) and isinstance(case.get("given"), dict):
        return case["given"]
    fixture = (bench.get("params") or {}).get("nqbench")
    if isinstance(fixture, dict) and isinstance(fixture.get("params"), dict):
        return fixture["params"]
    return extra.get("params") or {}


def samples(bench: dict[str, Any]) -> dict[str, list[float] | None]:
    """Each metric's per-round times of a saved benchmark (None where the run kept none)."""
    extra = bench.get("extra_info") or {}
    clock = str((bench.get("options") or {}).get("timer", ""))
    kept = bench.get("data") or bench.get("stats", {}).get("data")  # --benchmark-save-data
    compute = (
        extra.get("samples_compute") or extra.get("gpu_times") or extra.get("wall_times") or None
    )
    wall = extra.get("samples_wall") or None
    if wall is None and kept and NQPROF_CLOCKS.get(clock, "wall") == "wall":
        wall = list(kept)
    counted = (extra.get("instructions") or {}).get("count")
    instructions = [counted * SECONDS_PER_INSTRUCTION] if counted else compute
    return {"compute": compute, "wall": wall, "instructions": instructions}


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
            params=params_text(given_params(bench)),
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
        for metric, times in samples(bench).items():
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


# -- comparing -----------------------------------------------------------------------------


def cases_of_run(df, run: str, metric: str) -> dict[tuple, dict[str, Any]]:
    """The nqprof benchmarks of one run by case: samples, median, resolved parameters,
    source hash."""
    part = df[(df["run"] == run) & df["strategy"].notna()]
    out: dict[tuple, dict[str, Any]] = {}
    for row in part.to_dict("records"):
        key = tuple(row[c] for c in CASE_COLUMNS)
        out[key] = {
            "samples": row.get(f"{metric}.samples"),
            "processes": row.get("processes"),
            "kind": _or_none(row.get("extra.device_kind")),
            "min_effect": _or_none(row.get("extra.min_effect")),
            "median": row.get(f"{metric}.median"),
            "params": row.get("extra.params") or {},
            "source_hash": _or_none(row.get("extra.source_hash")),
            "instructions": _or_none(row.get("extra.instructions.count"))
            if metric == "instructions"
            else None,
            "toolkit": _or_none(row.get("machine.cuda_toolkit")),
            "gpu": _or_none(row.get("machine.gpu")),
            "conditions": row.get("extra.conditions")
            if isinstance(row.get("extra.conditions"), dict)
            else {},
        }
    return out


#: A CPU case's floor is at least this many times the CPU speed probe's move between two
#: runs: on two H200 hosts where serial N=11 (the probe's search) differed by 62%,
#: serial's times moved by 15% (N=16) to 66% (N=12), and serial-d4's and multicore's by -8%
#: to +48%: the host moves different work by different amounts.
HOST_FACTOR = 2.0


def min_effect_parts(ra: dict[str, Any], rb: dict[str, Any], cpu: bool) -> dict[str, float]:
    """What the minimum effect of a case is the largest of: ``kind``, its kind's (``cpu``:
    either run ran it on the CPU); ``declared``, the larger one its strategy declared when
    either run was saved (Strategy.min_effect), where one did; ``host``, for a CPU case,
    HOST_FACTOR times what the CPU speed probe moved between the runs
    (conditions.probe_change): what the host alone moved."""
    parts = {"kind": decide_stats.MIN_EFFECT_CPU if cpu else decide_stats.MIN_EFFECT}
    declared = [float(r["min_effect"]) for r in (ra, rb) if r.get("min_effect") is not None]
    if declared:
        parts["declared"] = max(declared)
    host = conditions.probe_change(ra["conditions"], rb["conditions"]) if cpu else None
    if host is not None:
        parts["host"] = HOST_FACTOR * abs(host)
    return parts


def min_effect_of(ra: dict[str, Any], rb: dict[str, Any], cpu: bool) -> float:
    """The minimum effect of a case: the largest of :func:`min_effect_parts`."""
    return max(min_effect_parts(ra, rb, cpu).values())


def default_min_change(cpu: bool) -> float:
    """The smallest change a comparison must catch where none is given: 5% for a GPU case,
    10% for a CPU case (``cpu``: either run ran it on the CPU)."""
    return decide_stats.MIN_CHANGE_CPU if cpu else decide_stats.MIN_CHANGE


def _pct_text(value: float) -> str:
    return f"{100 * value:.1f}%"


def cannot_tell_why(
    decision, parts: dict[str, float], cpu: bool, strategy: str, probe: float | None
) -> str:
    """Why a cannot-tell case's floor is wider than the smallest change to catch, and what
    would narrow it: ``floor ±37.9% > 10%: `` and each term of the floor that is wider than
    the change to catch, widest first (``decision``: its stats.Decision; ``parts``: its
    min_effect_parts; ``probe``: the CPU speed probe's move between the runs)."""
    wanted, terms = decision.min_change, dict(decision.terms or {})
    reasons: list[tuple[float, str]] = []
    minimum = terms.pop("minimum", 0.0)
    if decide_stats.wider_than(minimum, wanted):
        widest = max(parts, key=lambda k: parts[k])
        if widest == "host" and probe is not None:
            text = (
                f"the host's CPU speed moved {100 * probe:+.0f}% between the runs (the CPU speed "
                f"probe; ±{_pct_text(minimum)} is twice that): both runs on one quiet host"
            )
        elif widest == "declared":
            text = (
                f"{strategy}'s own floor ±{_pct_text(minimum)} (its times move between runs): "
                f"min-change {100 * minimum:g}% or more"
            )
        else:
            text = (
                f"nqprof calls no change under {100 * minimum:g}% for a "
                f"{'CPU' if cpu else 'GPU'} case: min-change {100 * minimum:g}% or more"
            )
        reasons.append((minimum, text))
    what = {
        "drift": "drift within a run {}: more rounds, or a host whose speed holds",
        "spread": "spread of the rounds {} (half the IQR): a quieter host",
        "processes": "worker processes disagree {}: more rounds, or "
        + ("a quieter host" if cpu else "a GPU to itself"),
    }
    for name, value in terms.items():
        if decide_stats.wider_than(value, wanted):
            reasons.append((value, what[name].format("±" + _pct_text(value))))
    reasons.sort(key=lambda r: -r[0])
    head = f"floor ±{_pct_text(decision.floor)} > {100 * wanted:g}%"
    return head + (": " + "; ".join(text for _, text in reasons) if reasons else "")


def param_changes(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """``["depth 5 -> 6"]``: parameters both runs had, with other values. Parameters only
    one run has (nqprof gained or lost a parameter) are not a change of the case."""
    return [f"{k} {a[k]} -> {b[k]}" for k in a if k in b and str(a[k]) != str(b[k])]


def gpu_model(name: str) -> str:
    """``"NVIDIA H100 80GB HBM3"`` -> ``"H100"``: the GPU's name without the vendor and the
    memory size and kind, as a comparison names it (``"H100 PCIe"`` stays itself)."""
    words = str(name).removeprefix("NVIDIA ").split()
    kept = [w for w in words if not re.fullmatch(r"\d+GB|HBM\w*", w)]
    return " ".join(kept or words)


def dimension_changes(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """``["toolkit 12.6 -> 13.0", "GPU H100 -> H200"]``: the CUDA toolkit and GPU model of two
    runs of a GPU case where both runs recorded them and they differ, named as a changed
    parameter is (the model's full names where the short ones are the same)."""
    out = []
    if a.get("toolkit") and b.get("toolkit") and str(a["toolkit"]) != str(b["toolkit"]):
        out.append(f"toolkit {a['toolkit']} -> {b['toolkit']}")
    if a.get("gpu") and b.get("gpu") and a["gpu"] != b["gpu"]:
        short = gpu_model(a["gpu"]), gpu_model(b["gpu"])
        ga, gb = short if short[0] != short[1] else (a["gpu"], b["gpu"])
        out.append(f"GPU {ga} -> {gb}")
    return out


def missing(value) -> bool:
    """None or NaN (pandas' missing value); a list or a dict (pandas' cells may hold either)
    is never missing."""
    return not isinstance(value, (list, dict)) and (value is None or value != value)


def _or_none(value):
    return None if missing(value) else value


def _list_or_none(value):
    return value if isinstance(value, list) else None


def compare(df, run_a: str, run_b: str, metric: str = "compute", min_change: float | None = None):
    """Per test, strategy, N and given parameters: both medians, the change in percent, the
    floor below which a change is never called one, the rank test's p-value, the verdict
    (same / faster / slower / cannot-tell / too-few-rounds, see
    :mod:`nqprof.analysis.stats`; only-a / only-b where a benchmark is in one run only), what
    changed besides the time (parameter values as run, kernel sources) and the conditions that
    differed (a case's own, and on every CPU case the host's CPU speed probe where it moved
    between the runs: that phrase, once, is also in ``attrs["run_conditions"]``).

    ``min_change``: the smallest relative change the comparison must be able to catch
    (default :func:`default_min_change`, by the case's kind): a case that is not faster or
    slower and whose floor is wider is cannot-tell, ``why`` naming what widened its floor
    and what would narrow it."""
    import pandas as pd

    metric = resolve_metric(metric)
    a, b = (
        cases_of_run(df, resolve_run(df, run_a), metric),
        cases_of_run(df, resolve_run(df, run_b), metric),
    )
    rows: list[dict[str, Any]] = []
    cpu_rows: list[dict[str, Any]] = []
    probes: dict[str, list] = {"a": [], "b": []}
    for key in list(a) + [k for k in b if k not in a]:
        row = dict(zip(CASE_COLUMNS, key, strict=True))
        ra, rb = a.get(key), b.get(key)
        row["median_a"] = _or_none(ra["median"]) if ra else None
        row["median_b"] = _or_none(rb["median"]) if rb else None
        row.update(
            change_pct=None,
            floor_pct=None,
            p=None,
            min_change_pct=None,
            changed="",
            conditions="",
            why="",
        )
        if ra and rb:
            cpu = "cpu" in (ra["kind"], rb["kind"])
            parts = min_effect_parts(ra, rb, cpu)
            wanted = default_min_change(cpu) if min_change is None else min_change
            if ra["instructions"] and rb["instructions"]:  # counts: exact
                parts = {"exact": 0.0}
                d = decide_stats.decide_exact(ra["instructions"], rb["instructions"], wanted)
            else:
                d = decide_stats.decide(
                    ra["samples"] or [],
                    rb["samples"] or [],
                    min_effect=max(parts.values()),
                    processes_a=_list_or_none(ra["processes"]),
                    processes_b=_list_or_none(rb["processes"]),
                    min_change=wanted,
                )
            changes = [] if cpu else dimension_changes(ra, rb)
            changes += param_changes(ra["params"], rb["params"])
            if ra["source_hash"] != rb["source_hash"]:
                changes.append("source")
            row.update(
                verdict=d.verdict,
                change_pct=None if d.change is None else 100.0 * d.change,
                floor_pct=None if d.floor is None else 100.0 * d.floor,
                p=d.p,
                min_change_pct=100.0 * d.min_change,
                changed="; ".join(changes),
                conditions="; ".join(conditions.differences(ra["conditions"], rb["conditions"])),
            )
            if cpu:
                cpu_rows.append(row)
                for side, r in (("a", ra), ("b", rb)):
                    probes[side].append((r["conditions"].get("cpu") or {}).get("probe_s"))
            if d.verdict == "cannot-tell":
                probe = conditions.probe_change(ra["conditions"], rb["conditions"])
                row["why"] = cannot_tell_why(d, parts, cpu, key[1], probe)
        else:
            row["verdict"] = "only-a" if ra else "only-b"
        rows.append(row)
    # the host's CPU speed probe, once for the runs: on every CPU case's row, named once
    probe = conditions.probe_difference(probes["a"], probes["b"])
    for row in cpu_rows if probe else ():
        row["conditions"] = "; ".join(filter(None, [row["conditions"], probe]))
    columns = [
        *CASE_COLUMNS,
        "median_a",
        "median_b",
        "change_pct",
        "floor_pct",
        "p",
        "verdict",
        "changed",
        "conditions",
        "min_change_pct",
        "why",
    ]
    result = pd.DataFrame(rows, columns=columns)
    #: conditions of the runs rather than of a case (each also in its cases' ``conditions``)
    result.attrs["run_conditions"] = [probe] if probe else []
    return result


#: The phrases of ``changed`` that name a dimension rather than a parameter, by change.
_DIMENSIONS = {"changed-toolkit": "toolkit ", "changed-gpu": "GPU "}


def change_counts(result) -> dict[str, int]:
    """How many benchmarks of a comparison changed parameters, sources, toolkit, GPU model."""
    phrases = result["changed"].fillna("").map(lambda t: [p for p in t.split("; ") if p])

    def param(p: str) -> bool:
        return p != "source" and not p.startswith(tuple(_DIMENSIONS.values()))

    return {
        "changed-params": int(phrases.map(lambda ps: any(param(p) for p in ps)).sum()),
        "changed-source": int(phrases.map(lambda ps: "source" in ps).sum()),
        **{
            change: int(phrases.map(lambda ps, s=start: any(p.startswith(s) for p in ps)).sum())
            for change, start in _DIMENSIONS.items()
        },
    }


def machine_warnings(df, run_a: str, run_b: str) -> list[str]:
    """The GPU / toolkit / driver / CPU differences between two runs (empty if none)."""

    def first(run: str):
        return df[df["run"] == resolve_run(df, run)].iloc[0]

    def machine(row) -> dict[str, Any]:
        return {
            "nqprof": {
                k.split(".", 1)[1]: _or_none(v) for k, v in row.items() if k.startswith("machine.")
            }
        }

    ra, rb = first(run_a), first(run_b)
    out = machine_differences(machine(ra), machine(rb))
    cpu_a, cpu_b = _or_none(ra.get("machine.cpu")), _or_none(rb.get("machine.cpu"))
    if cpu_a and cpu_b and cpu_a != cpu_b and not any(d.startswith("cpu:") for d in out):
        out.append(f"cpu: {cpu_a!r} -> {cpu_b!r}")
    return out


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
