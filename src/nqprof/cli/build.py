"""``nqprof build`` (compile every kernel with nvcc, no GPU needed, and report resources)
and ``nqprof matrix`` (compare the resource tables of several toolkits, as the tox CUDA
environments write them; with ``--history``, the benchmark times of several toolkits and
GPUs: strategy x toolkit x GPU)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from ..errors import InputError, UnavailableError
from .output import add_output

#: File names the tox CUDA environments write: resources-<tag>.json, e.g. resources-cuda13.0.json
MATRIX_GLOB = "resources-*.json"


def cmd_build(args) -> int:
    from ..catalog import catalog, compile_all
    from ..cuda.nvcc import left_out, left_out_notes, parse_archs, resource_table, resources_json
    from ..cuda.toolkit import find_toolkit
    from ..files import check_output
    from ..files import write_json as write_file

    archs = parse_archs(args.arch)
    if args.output:
        check_output(args.output, "--output", (".json",))
    env = (
        os.environ if args.cuda_home is None else {**os.environ, "NQPROF_CUDA_HOME": args.cuda_home}
    )
    try:
        toolkit = find_toolkit(env)
    except UnavailableError as exc:
        if not args.skip_missing:
            raise
        if args.output:  # a table from an earlier run must not pass for this one
            Path(args.output).unlink(missing_ok=True)
        print(f"skipped: {exc}")
        return 0
    log = sys.stderr if args.json else sys.stdout
    print(f"{toolkit.describe()}; archs {', '.join(archs)}", flush=True, file=log)
    t0 = time.perf_counter()
    rows = compile_all(archs, toolkit)
    older = left_out(catalog(), toolkit.version)
    doc = resources_json(rows, toolkit, archs, older)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(resource_table(rows))
    for note in left_out_notes(older, toolkit.version):
        print(note, file=log)
    sources = len({r.source for r in rows})
    print(
        f"{len(rows)} kernel builds from {sources} sources in {time.perf_counter() - t0:.1f} s",
        file=log,
    )
    if args.output:
        write_file(args.output, doc, "--output", indent=2)
        print(f"wrote {args.output}", file=log)
    return 0


def _tag(path: Path) -> str:
    return path.stem.removeprefix("resources-")


def cmd_matrix(args) -> int:
    from ..files import check_output

    if args.output:
        check_output(args.output, "--output")
    if args.figure:
        if args.history is None:
            raise InputError("--figure draws the times of --history DIR")
        check_output(args.figure, "--figure", (".png",))
    texts = []
    if args.history is None or args.dir is not None:
        texts.append(_resource_matrix(Path(args.dir or ".tox")))
    if args.history is not None:
        texts.append(_time_matrix(args))
    text = "\n\n".join(texts)
    print(text)
    if args.output:
        from ..files import write_text

        write_text(args.output, text + "\n")
    return 0


def _time_matrix(args) -> str:
    """Strategy x toolkit x GPU from the runs saved under --history."""
    import warnings

    from ..analysis.history import HistoryWarning, load_history
    from ..analysis.matrix import matrix_figure, matrix_text, matrix_times

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HistoryWarning)
        df = load_history(args.history)
    for w in caught:
        if issubclass(w.category, HistoryWarning):
            print(f"nqprof: warning: skipped {w.message}", file=sys.stderr)
    table, columns = matrix_times(df, args.metric)
    if args.figure:
        matrix_figure(table, columns, args.figure, args.metric)
        print(f"wrote {args.figure}", file=sys.stderr)
    return matrix_text(table, columns, args.metric)


def _resource_matrix(folder: Path) -> str:
    from ..cuda.nvcc import load_json, load_left_out, matrix_table
    from ..files import read_json

    if not folder.is_dir():
        raise InputError(
            f"{folder} is not a folder (give the folder holding the {MATRIX_GLOB} tables)"
        )
    files = sorted(folder.glob(MATRIX_GLOB))
    if not files:
        raise InputError(
            f"no {MATRIX_GLOB} in {folder}: run the CUDA tox "
            "environments (or nqprof build -o FILE) first"
        )
    tables, older = {}, {}
    for path in files:
        read_json(path, "resource table")  # missing, empty, binary or not JSON: one line naming it
        info, rows = load_json(path)
        tag, version = _tag(path), str(info.get("version", "?"))
        label = tag if version in tag else f"{tag} ({version})"
        tables[label], older[label] = rows, load_left_out(path)
    return matrix_table(tables, older)


def add_commands(subparsers) -> None:
    p = subparsers.add_parser("build")
    p.add_argument(
        "--arch", default="sm_90", help="GPU architectures, comma-separated (default sm_90)"
    )
    p.add_argument(
        "--json", action="store_true", help="print the resource table as JSON instead of the text"
    )
    add_output(
        p.add_argument,
        "--output",
        "-o",
        metavar="FILE.json",
        help="also write the resource table as JSON to FILE.json (nqprof matrix reads them)",
    )
    p.add_argument(
        "--cuda-home",
        metavar="DIR",
        help="toolkit root (default: NQPROF_CUDA_HOME, CUDA_HOME, CUDA_PATH, nvcc on PATH)",
    )
    p.add_argument(
        "--skip-missing",
        action="store_true",
        help="no toolkit: print a 'skipped: ...' line and exit 0 instead of failing",
    )
    p.set_defaults(func=cmd_build)

    p = subparsers.add_parser("matrix")
    p.add_argument(
        "dir",
        nargs="?",
        help="folder holding the resource tables (default .tox; with --history: only if given)",
    )
    p.add_argument(
        "--history",
        metavar="DIR",
        help="benchmark storage holding the runs of several toolkits and GPUs (e.g. .benchmarks, "
        "whose cuda12.4/, cuda13.0/ ... the tox CUDA environments write): one table of strategy "
        "x toolkit x GPU, the newest run of each pair",
    )
    p.add_argument(
        "--metric",
        choices=("compute", "wall", "gpu", "median"),
        default="compute",
        help="with --history: compute (CUDA events; default) or wall (host round trip)",
    )
    add_output(
        p.add_argument,
        "--figure",
        metavar="FILE.png",
        help="with --history: also draw the times, a panel per strategy",
    )
    add_output(
        p.add_argument,
        "-o",
        "--output",
        metavar="FILE",
        help="also write the combined table to FILE",
    )
    p.set_defaults(func=cmd_matrix)
