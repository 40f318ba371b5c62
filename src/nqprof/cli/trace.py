"""The ``nqprof trace`` and ``nqprof profile`` commands (Nsight Systems), and
:func:`profile_case` for the pytest plugin.

:func:`add_commands` adds them to the main parser's subparsers; each handler takes the parsed
arguments and returns the exit code.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Collection, Sequence
from pathlib import Path

from nqprof.analysis import trace as nsys_trace
from nqprof.errors import InputError

from ..textfmt import plural
from .output import add_output

SLUG_LENGTH = 60


def add_commands(subparsers) -> None:
    """Add ``trace load|chrome|breakdown`` and ``profile`` to an argparse subparsers object."""
    _add_trace(subparsers)
    _add_profile(subparsers)


def _add_trace(subparsers) -> None:
    parser = subparsers.add_parser("trace")
    actions = parser.add_subparsers(dest="trace_action", metavar="ACTION", required=True)

    load = actions.add_parser("load", help="print the trace's tables, or write them as CSV")
    load.add_argument("file", type=Path, metavar="FILE")
    add_output(
        load.add_argument,
        "--csv",
        type=Path,
        metavar="DIR",
        help="write one CSV per table into DIR",
    )
    from nqprof.analysis.trace.schema import TABLES

    load.add_argument("--table", choices=TABLES, help="only this table")
    load.set_defaults(func=cmd_trace_load)

    chrome = actions.add_parser("chrome", help="write Chrome trace-event JSON (opens in Perfetto)")
    chrome.add_argument("file", type=Path, metavar="FILE")
    add_output(
        chrome.add_argument,
        "-o",
        "--output",
        type=Path,
        metavar="JSON",
        help="output file (default: FILE with suffix .json, beside it)",
    )
    chrome.set_defaults(func=cmd_trace_chrome)

    breakdown = actions.add_parser("breakdown", help="per NVTX range: its time, kernels and copies")
    breakdown.add_argument("file", type=Path, metavar="FILE")
    breakdown.set_defaults(func=cmd_trace_breakdown)


def _add_profile(subparsers) -> None:
    parser = subparsers.add_parser(
        "profile",
        description="Run COMMAND under Nsight Systems (nsys profile -t cuda,nvtx). A COMMAND that "
        "starts with an nqprof subcommand (e.g. 'solve 16 --strategy feinbube') runs "
        "as 'python -m nqprof.cli ...'.",
    )
    add_output(
        parser.add_argument,
        "--output",
        type=Path,
        metavar="PREFIX",
        help="report prefix: writes PREFIX.nsys-rep and PREFIX.sqlite "
        "(default: nqprof-profile-<time>)",
    )
    parser.add_argument("--nsys", type=Path, metavar="PATH", help="the nsys executable to use")
    parser.add_argument("--trace", default="cuda,nvtx", metavar="APIS", help="nsys -t value")
    parser.add_argument("profiled_command", nargs=argparse.REMAINDER, metavar="COMMAND")
    parser.set_defaults(func=cmd_profile)


def command_argv(command: Sequence[str], nqprof_commands: Collection[str]) -> list[str]:
    """The argv to profile: ``command`` without a leading ``--``; one starting with an nqprof
    subcommand name runs through ``python -m nqprof.cli``."""
    argv = list(command[1:] if command and command[0] == "--" else command)
    if not argv:
        raise InputError(
            "profile: give a command to run, e.g. nqprof profile solve 16 --strategy feinbube"
        )
    if argv[0] in nqprof_commands:
        return [sys.executable, "-m", "nqprof.cli", *argv]
    return argv


def cmd_trace_load(args) -> int:
    if args.csv:
        from nqprof.analysis.trace.schema import TABLES
        from nqprof.files import check_output_dir

        names = [f"{name}.csv" for name in TABLES if args.table in (None, name)]
        check_output_dir(args.csv, "--csv", names)
    loaded = nsys_trace.load(args.file)
    tables = {name: frame for name, frame in loaded.tables().items() if args.table in (None, name)}
    if args.csv:
        args.csv.mkdir(parents=True, exist_ok=True)
        for name, frame in tables.items():
            path = args.csv / f"{name}.csv"
            frame.to_csv(path, index=False)
            print(path)
        return 0
    for name, frame in tables.items():
        print(f"== {name} ({plural(len(frame), 'row')})")
        print(frame.to_string(index=False) if len(frame) else "(none)")
        print()
    return 0


def cmd_trace_chrome(args) -> int:
    from nqprof.files import check_output

    output = args.output or args.file.with_suffix(".json")
    if output.resolve() == args.file.resolve():
        raise InputError(f"trace chrome: the output {output} is the input trace itself")
    check_output(output, "trace chrome output", (".json",))
    print(nsys_trace.to_chrome(nsys_trace.load(args.file), output))
    return 0


def cmd_trace_breakdown(args) -> int:
    print(nsys_trace.breakdown(nsys_trace.load(args.file)), end="")
    return 0


def cmd_profile(args) -> int:
    from nqprof.files import check_output

    from . import COMMANDS  # every command: only this group's parser was built

    argv = command_argv(args.profiled_command, COMMANDS)
    output = args.output or Path(f"nqprof-profile-{time.strftime('%Y%m%d-%H%M%S')}")
    for path in nsys_trace.report_files(output):
        check_output(path, "--output")
    sqlite = nsys_trace.profile(argv, output, trace=args.trace, nsys=args.nsys)
    print(f"trace: {sqlite}")
    print(nsys_trace.breakdown(nsys_trace.load(sqlite)), end="")
    return 0


def _slug(argv: Sequence[str]) -> str:
    """A file-name-safe name for a profiled command."""
    words = [Path(argv[0]).name, *argv[1:]] if argv else ["case"]
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", "_".join(words)).strip("_.")[:SLUG_LENGTH] or "case"


def profile_case(
    argv: Sequence[str],
    out_dir: str | Path,
    *,
    nsys: str | Path | None = None,
    trace: str = "cuda,nvtx",
) -> dict:
    """Profile one command (as given) quietly into ``out_dir``. Returns
    ``{"trace": sqlite path, "ranges": [per range group: domain, name, payload, count,
    duration_ns, kernels, memcpy]}``, JSON-serialisable."""
    sqlite = nsys_trace.profile(
        argv, Path(out_dir) / _slug(argv), trace=trace, nsys=nsys, echo=False
    )
    return {"trace": str(sqlite), "ranges": nsys_trace.summary_records(nsys_trace.load(sqlite))}
