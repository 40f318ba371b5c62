"""``nqprof build`` (compile every kernel with nvcc, no GPU needed, and report resources)
and ``nqprof matrix`` (compare the resource tables of several toolkits, as the tox CUDA
environments write them)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..errors import InputError, UnavailableError

#: File names the tox CUDA environments write: resources-<tag>.json, e.g. resources-cuda13.0.json
MATRIX_GLOB = "resources-*.json"


def cmd_build(args) -> int:
    from ..catalog import compile_all
    from ..cuda.nvcc import parse_archs, resource_table, resources_json, write_json
    from ..cuda.toolkit import find_toolkit

    archs = parse_archs(args.arch)
    env = os.environ if args.cuda_home is None else {**os.environ, "NQPROF_CUDA_HOME": args.cuda_home}
    try:
        toolkit = find_toolkit(env)
    except UnavailableError as exc:
        if not args.skip_missing:
            raise
        if args.json:  # a table from an earlier run must not pass for this one
            Path(args.json).unlink(missing_ok=True)
        print(f"skipped: {exc}")
        return 0
    print(f"{toolkit.describe()}; archs {', '.join(archs)}", flush=True)
    t0 = time.perf_counter()
    rows = compile_all(archs, toolkit)
    print(resource_table(rows))
    sources = len({r.source for r in rows})
    print(f"{len(rows)} kernel builds from {sources} sources in {time.perf_counter() - t0:.1f} s")
    if args.json:
        write_json(args.json, resources_json(rows, toolkit, archs))
        print(f"wrote {args.json}")
    return 0


def _tag(path: Path) -> str:
    return path.stem.removeprefix("resources-")


def cmd_matrix(args) -> int:
    from ..cuda.nvcc import load_json, matrix_table

    folder = Path(args.dir)
    files = sorted(folder.glob(MATRIX_GLOB))
    if not files:
        raise InputError(f"no {MATRIX_GLOB} in {folder}: run the CUDA tox environments (or nqprof build --json) first")
    tables = {}
    for path in files:
        info, rows = load_json(path)
        tag, version = _tag(path), str(info.get("version", "?"))
        tables[tag if version in tag else f"{tag} ({version})"] = rows
    text = matrix_table(tables)
    print(text)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text + "\n")
    return 0


def add_commands(subparsers) -> None:
    p = subparsers.add_parser("build", help="compile (and device-link) every kernel with nvcc and report resources; no GPU needed")
    p.add_argument("--arch", default="sm_90", help="GPU architectures, comma-separated (default sm_90)")
    p.add_argument("--json", metavar="FILE", help="also write the resource table as JSON")
    p.add_argument("--cuda-home", metavar="DIR", help="toolkit root (default: NQPROF_CUDA_HOME, CUDA_HOME, CUDA_PATH, nvcc on PATH)")
    p.add_argument(
        "--skip-missing", action="store_true", help="no toolkit: print a 'skipped: ...' line and exit 0 instead of failing"
    )
    p.set_defaults(func=cmd_build)

    p = subparsers.add_parser("matrix", help=f"compare the {MATRIX_GLOB} tables of several toolkits")
    p.add_argument("dir", nargs="?", default=".tox", help="folder holding the tables (default .tox)")
    p.add_argument("-o", "--output", metavar="FILE", help="also write the combined table to FILE")
    p.set_defaults(func=cmd_matrix)
