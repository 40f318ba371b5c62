"""The ``nqprof`` command."""

from __future__ import annotations

import argparse
import importlib
import os
import json
import sys
from typing import Sequence

from . import __version__
from .errors import InputError, NqprofError

#: Modules that add their own subcommands through ``add_commands(subparsers)``.
COMMAND_MODULES = ("build_cli", "trace_cli", "history_cli", "report_cli", "queuebench_cli")


def parse_params(items: Sequence[str] | None) -> dict[str, str]:
    """``["depth=5", "block=64"]`` -> ``{"depth": "5", "block": "64"}``."""
    params: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"--param takes key=value, got {item!r}")
        params[key.strip()] = value.strip()
    return params


def cmd_solve(args) -> int:
    from .runner import solve

    progress = None if args.quiet or args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    record = solve(
        args.strategy,
        args.n,
        parse_params(args.param),
        repeats=args.repeats,
        warmup=args.warmup,
        timeout=args.timeout,
        progress=progress,
    )
    print(record.to_json() if args.json else record.summary())
    return 0


def cmd_strategies(args) -> int:
    from .strategies import all_strategies

    strategies = all_strategies()
    params = [p for s in strategies for p in s.params]
    rng = max((len(p.describe_range()) for p in params), default=0)
    dflt = max((len(p.describe_default()) for p in params), default=0)
    for s in strategies:
        tag = ("GPU, CDP" if s.cdp else "GPU") if s.needs_gpu else "CPU"
        print(f"{s.name:<11} [{tag}] {s.title}")
        if s.min_n > 1:
            print(f"{'':<13}N >= {s.min_n}")
        for p in s.params:
            print(f"{'':<13}{p.name:<12} {p.describe_range():<{rng}}  default {p.describe_default():<{dflt}}  {p.help}")
    return 0


def cmd_env(args) -> int:
    from .environment import describe_environment

    info = describe_environment()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        width = max(len(k) for k in info)
        for key, value in info.items():
            print(f"{key:<{width}}  {value}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nqprof", description="Benchmark and profile GPU work distribution on N-Queens."
    )
    parser.add_argument("--version", action="version", version=f"nqprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("solve", help="count the solutions for N queens with one strategy and report the run")
    p.add_argument("n", help="board size N")
    p.add_argument("--strategy", "-s", default="serial", help="strategy name (see `nqprof strategies`)")
    p.add_argument("--param", "-p", action="append", metavar="KEY=VALUE", help="strategy parameter (repeatable)")
    p.add_argument("--repeats", "-r", type=int, default=1, help="timed rounds (median reported)")
    p.add_argument("--warmup", "-w", type=int, default=0, help="untimed rounds before the timed ones")
    p.add_argument("--timeout", type=float, default=None, help="seconds a GPU step may take (default 600)")
    p.add_argument("--json", action="store_true", help="print the run record as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("strategies", help="list strategies and their parameters")
    p.set_defaults(func=cmd_strategies)

    p = sub.add_parser("env", help="report GPU, driver, toolkit and profiler availability")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_env)

    for name in COMMAND_MODULES:
        importlib.import_module(f"{__package__}.{name}").add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "timeout", "absent") is None:
        from .runner import DEFAULT_TIMEOUT

        args.timeout = DEFAULT_TIMEOUT
    try:
        return args.func(args)
    except NqprofError as exc:
        print(f"nqprof: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nqprof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into a reader that stopped (e.g. head)
        sys.stderr = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    sys.exit(main())
