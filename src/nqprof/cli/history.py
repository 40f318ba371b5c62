"""``nqprof history``, ``nqprof compare``, ``nqprof plot``: the saved benchmark runs."""

from __future__ import annotations

import json
import sys
import warnings

from ..analysis.comparing import RATES as COMPARED_RATES
from ..analysis.comparing import change_counts, compare, machine_warnings
from ..analysis.figures import HISTORY_FIGURES
from ..analysis.history import (
    CASE_COLUMNS,
    DEFAULT_STORAGE,
    METRIC_ALIASES,
    METRICS,
    HistoryWarning,
    history_frame,
    last_runs,
    load_history,
    missing,
    resolve_metric,
    resolve_run,
    run_label,
    run_summary,
)
from ..analysis.stats import ALPHA, MIN_CHANGE, MIN_CHANGE_CPU, MIN_EFFECT
from ..analysis.verdicts import CHANGES, FAILING, VERDICTS, min_change_number, parse_failing
from ..errors import InputError
from ..numeric import add_number
from ..textfmt import plural, table
from ..textfmt import seconds as fmt_s
from .output import add_output


def _load(args):
    """The history, each unreadable file reported on stderr (or an error with --strict)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HistoryWarning)
        df = load_history(args.storage, strict=args.strict)
    for w in caught:
        if issubclass(w.category, HistoryWarning):
            print(f"nqprof: warning: skipped {w.message}", file=sys.stderr)
    return df


def _time(value) -> str:
    return "-" if missing(value) else fmt_s(float(value))


#: ``--rate``: the saved record's column of each rate (analysis.comparing.RATES) and its
#: heading.
RATES = {what: (f"extra.work.{what}_per_s", f"{what}/s") for what in COMPARED_RATES}


def _rate(value) -> str:
    from ..result import rate_text

    return "-" if missing(value) else rate_text(float(value))


def _pct(value, sign: str = "+") -> str:
    return "-" if missing(value) else f"{value:{sign}.1f}%"


def _table_text(frame, formatters: dict) -> str:
    """``frame`` as a text table, each column in ``formatters`` turned into text by its
    function."""
    frame = frame.assign(**{c: frame[c].map(f) for c, f in formatters.items() if c in frame})
    rows = [["-" if missing(v) else v for v in row] for row in frame.itertuples(index=False)]
    return table(list(frame.columns), rows, right_align_numbers=True)


def _print_table(frame, formatters: dict) -> None:
    print(_table_text(frame, formatters))


def cmd_history(args) -> int:
    from ..files import check_output, write_text

    if args.csv:
        check_output(args.csv, "--csv", (".csv",))
    df = _load(args)
    if args.csv:
        out = df.copy()
        for column in out.columns:
            if out[column].map(lambda v: isinstance(v, (list, dict))).any():
                out[column] = out[column].map(json.dumps)
        write_text(args.csv, out.to_csv(index=False), "--csv")
        print(f"wrote {plural(len(df), 'row')} x {plural(len(df.columns), 'column')} to {args.csv}")
        return 0
    summary = run_summary(df)
    from ..analysis.trace_history import run_traces

    traces = run_traces(df)
    print(f"{plural(len(summary), 'run')}, {plural(len(df), 'benchmark')} in {args.storage}")
    for run in summary.to_dict("records"):
        gpu = run.get("machine.gpu")
        gpu = "CPU only" if missing(gpu) else f"{gpu}, CUDA {run.get('machine.cuda_toolkit')}"
        print(
            f"  {run_label(run['run']):<6} {run['run']}  {run['datetime']:%Y-%m-%d %H:%M}  commit "
            f"{run['commit']}  {gpu}  "
            f"{plural(run['benchmarks'], 'benchmark')}{_traces_note(traces.get(run['run']))}"
        )
    print()
    table = df.assign(run=df["run"].map(run_label))
    columns = [
        "run",
        "test",
        "strategy",
        "n",
        "params",
        "median",
        "compute.median",
        "wall.median",
        "compute.rounds",
        "extra.count",
        "extra.verified",
    ]
    rate_column, rate_heading = RATES[args.rate] if args.rate else (None, None)
    if rate_column:
        if rate_column not in table:
            table[rate_column] = None  # runs saved before records stated their work
        columns.insert(columns.index("compute.rounds"), rate_column)
    table = table[[c for c in columns if c in table]].rename(
        columns={
            "n": "N",
            "median": "kept",
            "compute.median": "compute",
            "wall.median": "wall",
            "compute.rounds": "rounds",
            "extra.count": "count",
            "extra.verified": "verified",
            **({rate_column: rate_heading} if rate_column else {}),
        }
    )
    if table["test"].nunique() == 1:
        table = table.drop(columns="test")
    formatters = {"kept": _time, "compute": _time, "wall": _time}
    _print_table(table, {**formatters, **({rate_heading: _rate} if rate_heading else {})})
    print(
        "\nmedians. kept: what pytest-benchmark saved; compute: "
        + METRICS["compute"]
        + "; wall: "
        + METRICS["wall"]
        + (
            f"; {rate_heading}: over the compute median, as the run recorded it "
            "(nodes: the queens its search places, where the strategy states them)"
            if rate_heading
            else ""
        )
    )
    return 0


def _traces_note(counts) -> str:
    if not counts or not (counts["traced"] or counts["missing"]):
        return ""
    lacking = f", {counts['missing']} without a trace" if counts["missing"] else ""
    return f"  {counts['traced']} traced{lacking}"


def cmd_export(args) -> int:
    from pathlib import Path

    from ..analysis import nvbench
    from ..files import check_output, check_output_dir

    out = check_output(args.output, "--output", (".json",))
    folder = out.with_name(f"{out.stem}-samples")
    old = [p.name for p in folder.glob("*.bin")] if folder.is_dir() else []
    check_output_dir(folder, "--output's samples folder", old)
    df = _load(args)
    run = resolve_run(df, args.run, args.storage) if args.run else last_runs(df, 1)[0]
    saved = json.loads((Path(args.storage) / f"{run}.json").read_text(encoding="utf-8"))
    doc = nvbench.export(saved, out)
    states = sum(len(b["states"]) for b in doc["benchmarks"])
    print(f"wrote {run} as an NVBench result: {plural(states, 'case')} to {out}")
    return 0


def _nvbench_runs(refs: list[str]):
    """Where both runs given are NVBench result files: their rows as a history and the two
    runs' names; else None. One NVBench file beside a saved run is an error."""
    from ..analysis import nvbench

    found = [nvbench.result_at(r) for r in refs]
    if all(doc is None for doc in found):
        return None
    if len(refs) != 2 or any(doc is None for doc in found):
        raise InputError(
            "compare takes two NVBench result files (or two saved runs), not one beside a run"
        )
    names = tuple(refs) if refs[0] != refs[1] else (f"{refs[0]} (A)", f"{refs[1]} (B)")
    rows = [
        row
        for ref, name, doc in zip(refs, names, found, strict=True)
        for row in nvbench.read_rows(ref, name, doc)
    ]
    return history_frame(rows), names


def cmd_compare(args) -> int:
    if len(args.runs) not in (0, 2):
        raise InputError(f"compare takes two runs or none (the last two), got {len(args.runs)}")
    nvbench = _nvbench_runs(args.runs)
    df = nvbench[0] if nvbench else _load(args)
    metric = resolve_metric(args.metric)
    if nvbench:
        run_a, run_b = nvbench[1]
    else:
        run_a, run_b = (
            (resolve_run(df, r, args.storage) for r in args.runs) if args.runs else last_runs(df, 2)
        )
    print(f"A: {run_a}\nB: {run_b}\nmetric: {metric} ({METRICS[metric]})")
    for line in [] if nvbench else machine_warnings(df, run_a, run_b):
        print(
            f"nqprof: warning: the runs differ in {line}: "
            "timings may differ because of the machine",
            file=sys.stderr,
        )
    min_change = None if args.min_change is None else args.min_change / 100
    result = compare(df, run_a, run_b, metric, min_change)
    if result.empty:
        print("no nqprof benchmarks to compare")
        return 0
    _warn_conditions(result)
    print("\n".join(compare_lines(result, min_change, rate=args.rate)))
    if not nvbench:
        _print_traces(df, run_a, run_b, result, args.traces)
    message = failed_message(result, args.fail_on, "--fail-on")
    if message:
        print(f"nqprof: compare failed: {message}", file=sys.stderr)
        return 1
    return 0


def compare_lines(
    result, min_change: float | None, option: str = "--min-change", rate: str | None = None
) -> list[str]:
    """The lines compare prints for a comparison (:func:`nqprof.analysis.comparing.compare`'s
    table): the table, the count of each verdict and change, what faster and slower mean,
    and, where cases are cannot-tell, why each is (``min_change``: the one given, else
    None; ``option``: the option that sets it). ``rate``: "solutions" or "nodes" adds both
    runs' work a second beside their medians."""
    columns = [c for c in CASE_COLUMNS if c != "test" or result["test"].nunique() > 1]
    rated = [f"rate_{rate}_a", f"rate_{rate}_b"] if rate else []
    heading = RATES[rate][1] if rate else ""
    shown = result[
        columns
        + ["median_a", "median_b", *rated, "change_pct", "floor_pct", "p", "verdict", "changed"]
    ].rename(
        columns={
            "n": "N",
            "median_a": "A",
            "median_b": "B",
            "change_pct": "change",
            "floor_pct": "floor",
            **({rated[0]: f"A {heading}", rated[1]: f"B {heading}"} if rate else {}),
        }
    )
    if not shown["changed"].astype(bool).any():
        shown = shown.drop(columns="changed")
    floor = lambda v: "-" if missing(v) else "±" + _pct(v, "")  # noqa: E731
    formats = {"A": _time, "B": _time, "change": _pct, "floor": floor, "p": _p}
    if rate:
        formats.update({f"A {heading}": _rate, f"B {heading}": _rate})
    lines = [_table_text(shown, formats)]
    counts = result["verdict"].value_counts()
    changes = change_counts(result)
    summary = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if v in counts)
    extra = ", ".join(f"{changes[c]} {c}" for c in CHANGES if changes[c])
    lines += [
        "",
        summary + (f"; {extra}" if extra else ""),
        f"(faster/slower: the rank test's p < {ALPHA:g} "
        "and the median moved by more than the floor)",
    ]
    unsure = result[result["verdict"] == "cannot-tell"]
    if not unsure.empty:
        wanted = (
            f"{option} {100 * min_change:g}%"
            if min_change is not None
            else f"{option}: {100 * MIN_CHANGE:g}% for GPU cases, {100 * MIN_CHANGE_CPU:g}% "
            "for CPU cases"
        )
        lines.append(
            "cannot-tell: the floor is wider than the smallest change to catch "
            f"({wanted}), so a change that size could hide under it:"
        )
        several = result["test"].nunique() > 1
        for row in unsure.to_dict("records"):
            lines.append(f"  {_case_label(row, several)}: {row['why']}")
        lines.append(
            "  (two variants of a case: `nqprof ab` takes their rounds in turn in one session, "
            "where the host's drift between runs cancels)"
        )
    return lines


def _case_label(row, with_test: bool = False) -> str:
    """``fast N=14 (block=64)``: a compared case as the text names it."""
    params = f" ({row['params']})" if row.get("params") else ""
    test = f"{row['test']} " if with_test else ""
    return f"{test}{row['strategy']} N={row['n']}{params}"


def failed_message(result, failing: list[str], option: str) -> str | None:
    """``1 slower, 2 cannot-tell (--fail-on slower,cannot-tell)``: the verdicts and changes
    of ``failing`` that cases of a comparison got, with their counts; None where none did."""
    counts = result["verdict"].value_counts()
    found = {
        **{v: int(counts[v]) for v in VERDICTS if v in counts},
        **{c: n for c, n in change_counts(result).items() if n},
    }
    hit = [v for v in failing if v in found]
    if not hit:
        return None
    return f"{', '.join(f'{found[v]} {v}' for v in hit)} ({option} {','.join(failing)})"


def _print_traces(df, run_a: str, run_b: str, result, every: bool) -> None:
    """Per case that changed (``every``: per case), the traces' per-range and per-kernel
    times of both runs side by side, and what moved most."""
    from ..analysis.trace_history import case_traces, moved_most, trace_changes
    from ..textfmt import nanoseconds

    a, b = case_traces(df, run_a), case_traces(df, run_b)
    if not any(t["ranges"] or t["missing"] for t in (*a.values(), *b.values())):
        return
    rows = result.to_dict("records")
    chosen = [r for r in rows if every or r["verdict"] in ("faster", "slower") or r.get("changed")]
    print("\ntraces (one profiled round per run, times per round, A -> B):")
    if not chosen:
        print("  no case changed (--traces shows every case)")
        return
    keys = [tuple(r[c] for c in CASE_COLUMNS) for r in chosen]
    changes = trace_changes(df, run_a, run_b, keys)
    ns = lambda v: "-" if missing(v) else nanoseconds(v)  # noqa: E731
    for row, key in zip(chosen, keys, strict=True):
        what = [row["verdict"]] + (
            [_pct(row["change_pct"])] if not missing(row["change_pct"]) else []
        )
        params = f" ({row['params']})" if row["params"] else ""
        changed = f"; {row['changed']}" if row.get("changed") else ""
        print(f"{row['strategy']} N={row['n']}{params}: {' '.join(what)}{changed}")
        part = changes[[tuple(c) == key for c in changes[CASE_COLUMNS].itertuples(index=False)]]
        if part.empty:
            for side, traces in (("A", a), ("B", b)):
                trace = traces.get(key) or {}
                if not trace.get("ranges"):
                    print(
                        f"  no trace in {side}: {trace.get('missing') or 'run without --nq-trace'}"
                    )
            continue
        width = max(
            len(str(r["range"])) if missing(r["kernel"]) else 2 + len(str(r["kernel"]))
            for r in part.to_dict("records")
        )
        for item in part.to_dict("records"):
            launches = ""
            if not missing(item["launches_a"]) or not missing(item["launches_b"]):
                la, lb = (
                    ("-" if missing(v) else f"{v:g}")
                    for v in (item["launches_a"], item["launches_b"])
                )
                launches = f"  launches {la}" + ("" if la == lb else f" -> {lb}")
            label = item["range"] if missing(item["kernel"]) else f"  {item['kernel']}"
            print(
                f"  {label:<{width}}  {ns(item['a_ns']):>9} -> {ns(item['b_ns']):>9}  "
                f"{_pct(item['change_pct']):>7}{launches}"
            )
        top = moved_most(part)
        if top is None:
            print(f"  moved most: nothing on the GPU by {MIN_EFFECT:.0%} or more")
        else:
            where = top["range"] + ("" if missing(top["kernel"]) else f", kernel {top['kernel']}")
            delta = top["b_ns"] - top["a_ns"]
            print(
                f"  moved most: {where} {'+' if delta >= 0 else '-'}{nanoseconds(abs(delta))} "
                f"({_pct(top['change_pct'])})"
            )


def _p(value) -> str:
    return "-" if missing(value) else (f"{value:.2g}" if value >= 1e-4 else "<1e-4")


def _warn_conditions(result) -> None:
    for line in condition_lines(result):
        print(line, file=sys.stderr)


def condition_lines(result) -> list[str]:
    """One warning per different condition: a condition of the runs (the host's CPU speed
    probe) once as it is, a case's condition naming the cases it touches."""
    runs = result.attrs.get("run_conditions") or []
    lines = [f"nqprof: warning: conditions differ: {phrase}" for phrase in runs]
    seen: dict[str, list[str]] = {}
    for row in result.to_dict("records"):
        for phrase in filter(None, (row.get("conditions") or "").split("; ")):
            if phrase not in runs:
                seen.setdefault(phrase, []).append(f"{row['strategy']} N={row['n']}")
    for phrase, cases in seen.items():
        more = f" and {len(cases) - 3} more" if len(cases) > 3 else ""
        lines.append(f"nqprof: warning: conditions differ: {phrase} ({', '.join(cases[:3])}{more})")
    return lines


#: The verdicts and changes --fail-on accepts.
FAILING_VERDICTS = FAILING


def _fail_on(text: str) -> list[str]:
    import argparse

    try:
        return parse_failing(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_plot(args) -> int:
    from ..files import check_output_dir

    check_output_dir(args.output, "--output", HISTORY_FIGURES)
    df = _load(args)
    from ..analysis.figures import history_figures

    chosen = [resolve_run(df, r, args.storage) for r in args.run] if args.run else None
    for path in history_figures(df, args.output, chosen, args.metric):
        print(f"wrote {path}")
    return 0


def _storage_options(p, positional: bool = False) -> None:
    if positional:
        p.add_argument(
            "storage",
            nargs="?",
            default=DEFAULT_STORAGE,
            metavar="DIR",
            help=f"pytest-benchmark storage folder (default {DEFAULT_STORAGE})",
        )
    else:
        p.add_argument(
            "--storage",
            default=DEFAULT_STORAGE,
            metavar="DIR",
            help=f"pytest-benchmark storage folder (default {DEFAULT_STORAGE})",
        )
    p.add_argument(
        "--strict",
        action="store_true",
        help="an unreadable file is an error (default: skip it, warn)",
    )


def _rate_option(p, help: str) -> None:
    p.add_argument("--rate", choices=sorted(RATES), default=None, help=help)


def _metric_option(p) -> None:
    p.add_argument(
        "--metric",
        choices=(*METRICS, *METRIC_ALIASES),
        default="compute",
        help="compute: "
        + METRICS["compute"]
        + " (default); wall: "
        + METRICS["wall"]
        + "; instructions: "
        + METRICS["instructions"]
        + "; gpu and median are the older names of compute and wall",
    )


def add_commands(sub) -> None:
    p = sub.add_parser("history")
    _storage_options(p, positional=True)
    add_output(
        p.add_argument,
        "--csv",
        metavar="FILE",
        help="write the whole table (every column) as CSV instead",
    )
    _rate_option(
        p,
        "add a column of solutions or nodes (queens placed) a second beside the times, "
        "as each run recorded it ('-' where it did not)",
    )
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("compare")
    p.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="two runs: a number such as 0003, a file name, a path under the storage folder or "
        "the file's path as pytest-benchmark list prints it (default: the last two runs); or two "
        "NVBench JSON result files (nqprof export writes them)",
    )
    _storage_options(p)
    _metric_option(p)
    p.add_argument(
        "--fail-on",
        type=_fail_on,
        default=[],
        metavar="VERDICTS",
        help="exit 1 if any benchmark gets one of these verdicts (comma list of "
        f"{', '.join(FAILING_VERDICTS)}), e.g. --fail-on slower for a CI gate",
    )
    add_number(
        p.add_argument,
        "--min-change",
        number=min_change_number(),
        default=None,
        metavar="PCT",
        help="the smallest change of a median, in percent, the comparison must be able to catch: "
        "a case whose floor is wider and that is not faster or slower is cannot-tell, not same "
        f"(default: {100 * MIN_CHANGE:g} for GPU cases, {100 * MIN_CHANGE_CPU:g} for CPU cases)",
    )
    _rate_option(
        p,
        "add both runs' solutions or nodes (queens placed) a second beside their medians "
        "(the work each run recorded over its median; '-' where it recorded none)",
    )
    p.add_argument(
        "--traces",
        action="store_true",
        help="for runs saved with pytest --nq-trace: the per-range and per-kernel trace times of "
        "every case (default: of the cases that got faster or slower or changed parameters)",
    )
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("export")
    p.add_argument(
        "run",
        nargs="?",
        metavar="RUN",
        help="the run, as compare takes it (default: the last run)",
    )
    _storage_options(p)
    add_output(
        p.add_argument,
        "-o",
        "--output",
        required=True,
        metavar="FILE.json",
        help="the NVBench JSON file; each case's rounds go to float32 files in the folder "
        "FILE-samples beside it",
    )
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("plot")
    _storage_options(p)
    _metric_option(p)
    add_output(
        p.add_argument,
        "-o",
        "--output",
        default=".",
        metavar="DIR",
        help=f"folder for the figures ({' and '.join(HISTORY_FIGURES)}; default: .)",
    )
    p.add_argument(
        "--run",
        action="append",
        metavar="RUN",
        help="run to plot (repeatable; the newest measurement "
        "of each case wins; default: the last run)",
    )
    p.set_defaults(func=cmd_plot)
