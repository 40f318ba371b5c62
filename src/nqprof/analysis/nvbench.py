"""NVBench's JSON result format, both ways: a saved nqprof run written as an NVBench result
(so NVBench's own scripts and ``cuda.bench.results.BenchmarkResult`` read it), and an NVBench
result read as a run that ``nqprof compare`` compares.

The format, as NVBench writes it (``--json``, with ``--jsonbin`` for the samples): a root
with ``devices`` and ``benchmarks``; a benchmark has ``axes`` (each with its ``values``) and
``states``, one per point of the axes; a state has ``axis_values`` and ``summaries``, each a
``tag`` with ``name``, ``hint``, ``description`` and typed ``data`` entries (``value`` as a
string). Every round's time is in a binary file of little-endian float32 seconds beside the
JSON, named by the summary ``nv/json/bin:nv/cold/sample_times`` (its ``filename``, relative to
the JSON's folder, and ``size``).

An exported nqprof run is one NVBench benchmark per pytest test (``test_nqueens``), with the
axes ``strategy``, ``N`` and ``params`` (the parameters given). A GPU case's rounds are
NVBench's cold GPU times (``nv/cold/...``); a CPU case's, its CPU-only times
(``nv/cpu_only/...``). nqprof's own facts ride along under ``nqprof/`` tags: the count, and
the worker process of each round (compare's floor needs them). Read back, the run compares
with the same verdicts as the saved run it came from.

Any other NVBench result reads as cases named by benchmark (``strategy``) and state (the
axis values, as ``params``), with N 0 where no axis is called N; its cold GPU samples are
compared as a GPU case's, its CPU-only samples as a CPU case's.
"""

from __future__ import annotations

import array
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..files import write_bytes, write_text
from .history import given_params, params_text, record_samples, spread, upgraded

#: Where the samples are, per kind of case: (the binary file's summary tag, the statistics'
#: tag prefix, its time's name).
SAMPLE_TAGS = {
    "gpu": ("nv/json/bin:nv/cold/sample_times", "nv/cold", "gpu"),
    "cpu": ("nv/json/bin:nv/cpu_only/sample_times", "nv/cpu_only", "cpu"),
}
#: nqprof's own summaries: the count, each round's worker process (a JSON list), and what
#: compare reads of the record besides the rounds (a JSON object: RECORD_FIELDS).
COUNT_TAG, PROCESSES_TAG, RECORD_TAG = "nqprof/count", "nqprof/sample_processes", "nqprof/record"
#: The record's fields compare reads (nqprof.analysis.comparing.cases_of_run): the resolved
#: parameters, the kernels' source hash, the strategy's minimum effect, the run conditions
#: and, where counted, one round's instructions.
RECORD_FIELDS = ("params", "source_hash", "min_effect", "conditions", "instructions")


def is_nvbench(doc: Any) -> bool:
    """Whether a parsed JSON document is an NVBench result (benchmarks with states)."""
    benches = doc.get("benchmarks") if isinstance(doc, dict) else None
    return isinstance(benches, list) and all(
        isinstance(b, dict) and isinstance(b.get("states"), list) for b in benches
    )


def _value(name: str, kind: str, value: Any) -> dict[str, str]:
    return {"name": name, "type": kind, "value": str(value)}


def _summary(tag: str, name: str, hint: str, description: str, *data) -> dict[str, Any]:
    return {"tag": tag, "name": name, "hint": hint, "description": description, "data": list(data)}


def _statistics(kind: str, times: list[float]) -> list[dict[str, Any]]:
    """The summaries NVBench's compare reads: sample count, mean (its center), relative
    standard deviation (its noise), min and max; and the median nqprof compares."""
    _, prefix, clock = SAMPLE_TAGS[kind]
    got = spread(times)
    n = len(times)
    mean = sum(times) / n
    rel = (sum((t - mean) ** 2 for t in times) / (n - 1)) ** 0.5 / mean if n > 1 and mean else 0.0
    label = clock.upper()
    return [
        _summary(
            f"{prefix}/sample_size", "Samples", "sample_size", "Rounds timed",
            _value("value", "int64", n),
        ),
        _summary(
            f"{prefix}/time/{clock}/mean", f"{label} Time", "duration",
            f"Mean {label} time of a round", _value("value", "float64", mean),
        ),
        _summary(
            f"{prefix}/time/{clock}/stdev/relative", "Noise", "percentage",
            "Relative standard deviation of the rounds", _value("value", "float64", rel),
        ),
        _summary(
            f"{prefix}/time/{clock}/min", f"Min {label}", "duration", "Fastest round",
            _value("value", "float64", min(times)),
        ),
        _summary(
            f"{prefix}/time/{clock}/max", f"Max {label}", "duration", "Slowest round",
            _value("value", "float64", max(times)),
        ),
        _summary(
            f"nqprof/time/{clock}/median", f"Median {label}", "duration",
            "Median round (what nqprof compares)", _value("value", "float64", got["median"]),
        ),
    ]  # fmt: skip


def export(run: dict[str, Any], json_path: str | Path) -> dict[str, Any]:
    """Write a saved nqprof run (a pytest-benchmark JSON document) as an NVBench result:
    ``json_path`` and, in the folder ``<stem>-samples`` beside it, one float32 file of each
    case's rounds. Returns the document written. Cases without rounds are left out; a run
    with none is an :class:`InputError`."""
    json_path = Path(json_path)
    folder = json_path.with_name(f"{json_path.stem}-samples")
    machine = (run.get("machine_info") or {}).get("nqprof") or {}
    benches: dict[str, dict[str, Any]] = {}
    files: dict[str, array.array] = {}
    for bench in run.get("benchmarks") or []:
        extra = upgraded(bench)
        times = record_samples(extra)["compute"]
        if not extra.get("strategy") or not times:
            continue
        kind = "gpu" if extra.get("device_kind") == "gpu" else "cpu"
        test = bench["name"].split("[", 1)[0]
        out = benches.setdefault(test, {"name": test, "states": [], "points": []})
        point = {
            "strategy": str(extra["strategy"]),
            "N": int(extra["n"]),
            "params": params_text(given_params(extra)) or "-",
        }
        out["points"].append(point)
        index = len(files)
        filename = f"{folder.name}/{index}.bin"
        files[filename] = array.array("f", times)
        summaries = _statistics(kind, times) + [
            _summary(
                SAMPLE_TAGS[kind][0], "Samples Times File", "file/sample_times",
                "Binary file of every round's time, float32 seconds",
                _value("filename", "string", filename), _value("size", "int64", len(times)),
            ),
            _summary(COUNT_TAG, "Count", "", "Solutions counted, verified",
                     _value("value", "int64", extra.get("count", 0))),
        ]  # fmt: skip
        record = {k: extra[k] for k in RECORD_FIELDS if extra.get(k) is not None}
        record["toolkit"] = machine.get("cuda_toolkit")
        summaries.append(
            _summary(
                RECORD_TAG, "nqprof record", "", "What nqprof's compare reads of the run record",
                _value("value", "string", json.dumps(record, sort_keys=True)),
            )
        )  # fmt: skip
        if extra.get("samples_process"):
            summaries.append(
                _summary(
                    PROCESSES_TAG, "Processes", "", "The worker process of each round",
                    _value("value", "string", json.dumps(list(extra["samples_process"]))),
                )
            )  # fmt: skip
        device = 0 if kind == "gpu" else None
        shown = " ".join(f"{k}={v}" for k, v in point.items())
        out["states"].append(
            {
                "name": f"Device={device} {shown}" if device is not None else shown,
                "device": device,
                "type_config_index": 0,
                "axis_values": [
                    {"name": "strategy", "type": "string", "value": point["strategy"]},
                    {"name": "N", "type": "int64", "value": str(point["N"])},
                    {"name": "params", "type": "string", "value": point["params"]},
                ],
                "summaries": summaries,
                "is_skipped": False,
            }
        )
    if not files:
        raise InputError("the run holds no nqprof benchmark with rounds to export")
    doc = {
        "meta": {"nqprof": {"datetime": run.get("datetime"), "commit": run.get("commit_info")}},
        "devices": [{"id": 0, "name": machine.get("gpu") or "unknown GPU"}],
        "benchmarks": [_benchmark(i, b) for i, b in enumerate(benches.values())],
    }
    folder.mkdir(parents=True, exist_ok=True)
    for filename, values in files.items():
        if sys.byteorder != "little":
            values.byteswap()
        write_bytes(json_path.parent / filename, values.tobytes(), "an NVBench samples file")
    write_text(json_path, json.dumps(doc, indent=1) + "\n", "an NVBench result")
    return doc


def _benchmark(index: int, bench: dict[str, Any]) -> dict[str, Any]:
    def axis(name: str, kind: str) -> dict[str, Any]:
        seen = dict.fromkeys(str(p[name]) for p in bench["points"])
        values = [
            {"input_string": v, "description": "", **({"value": int(v)} if kind == "int64" else {})}
            for v in seen
        ]
        return {"name": name, "type": kind, "flags": "", "values": values}

    return {
        "name": bench["name"],
        "index": index,
        "min_samples": 0,
        "devices": [0],
        "axes": [axis("strategy", "string"), axis("N", "int64"), axis("params", "string")],
        "states": bench["states"],
    }


# --------------------------------------------------------------------------- reading


def _summaries(state: dict[str, Any]) -> dict[str, dict[str, str]]:
    """A state's summaries: tag -> {data name: value text}."""
    return {
        s["tag"]: {d["name"]: d.get("value") for d in s.get("data") or []}
        for s in state.get("summaries") or []
        if isinstance(s, dict) and "tag" in s
    }


def _read_samples(folder: Path, entry: dict[str, str]) -> list[float]:
    path = Path(entry["filename"])
    path = path if path.is_absolute() else folder / path
    try:
        values = array.array("f")
        values.frombytes(path.read_bytes())
    except OSError as exc:
        raise InputError(f"{path}: the samples file of an NVBench result: {exc}") from None
    if sys.byteorder != "little":
        values.byteswap()
    if len(values) != int(entry.get("size", len(values))):
        raise InputError(f"{path}: {len(values)} samples, the result says {entry['size']}")
    return [float(v) for v in values]


def result_at(path: str | Path) -> dict[str, Any] | None:
    """The NVBench result in the ``.json`` file ``path``; None where ``path`` is no such file
    (another name, unreadable, not JSON, another kind of document)."""
    path = Path(path)
    if path.suffix != ".json" or not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if is_nvbench(doc) else None


def read_rows(
    path: str | Path, run: str, doc: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """An NVBench result file as history rows (the shape of
    :func:`nqprof.analysis.history.saved_run_rows`), its run named ``run``; ``doc``: the
    file's document where it was read already (:func:`result_at`)."""
    path = Path(path)
    if doc is None:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not a readable JSON file ({exc})") from None
    if not is_nvbench(doc):
        raise InputError(f"{path}: not an NVBench result (no benchmarks with states)")
    devices = {d.get("id"): d.get("name") for d in doc.get("devices") or []}
    rows = []
    for bench in doc["benchmarks"]:
        for state in bench["states"]:
            if state.get("is_skipped"):
                continue
            rows.append(_state_row(path, run, bench["name"], state, devices))
    if not rows:
        raise InputError(f"{path}: no state of any benchmark ran")
    return rows


def _state_row(path, run, bench_name, state, devices) -> dict[str, Any]:
    point = {a["name"]: a.get("value") for a in state.get("axis_values") or []}
    found = _summaries(state)
    kind = next((k for k, (tag, _, _) in SAMPLE_TAGS.items() if tag in found), None)
    times = _read_samples(path.parent, found[SAMPLE_TAGS[kind][0]]) if kind else None
    ours = "strategy" in point and "N" in point
    rest = {k: v for k, v in point.items() if k not in ("strategy", "N", "params")}
    params = point.get("params", "-") if ours else " ".join(f"{k}={v}" for k, v in rest.items())
    processes = found.get(PROCESSES_TAG, {}).get("value")
    row = {
        "run": run,
        "datetime": "1970-01-01T00:00:00+00:00",
        "machine.gpu": devices.get(state.get("device")),
        "name": f"{bench_name}[{state.get('name', '')}]",
        "test": bench_name,
        "strategy": str(point["strategy"]) if ours else bench_name,
        "n": int(point["N"]) if ours else 0,
        "params": "" if params == "-" else params,
        "extra.device_kind": kind,
        "processes": json.loads(processes) if processes else None,
    }
    count = found.get(COUNT_TAG, {}).get("value")
    if count is not None:
        row["extra.count"] = int(count)
    record = json.loads(found.get(RECORD_TAG, {}).get("value") or "{}")
    row.update(
        {
            "extra.params": record.get("params") or {},
            "extra.conditions": record.get("conditions") or {},
            "extra.source_hash": record.get("source_hash"),
            "extra.min_effect": record.get("min_effect"),
            "extra.instructions.count": (record.get("instructions") or {}).get("count"),
            "machine.cuda_toolkit": record.get("toolkit"),
        }
    )
    for metric in ("compute", "wall", "instructions"):
        got = times if metric != "wall" else None
        row[f"{metric}.samples"] = got
        row.update({f"{metric}.{k}": v for k, v in spread(got or []).items()})
    return row
