"""The ``nqprof`` command: the top-level parser and error handling, written once.

Each command group lives in its own module of this package and registers its subcommands
through ``add_commands(subparsers)``; the modules import nothing heavy (pandas, pytest,
matplotlib, PyCUDA) at import time, only inside the commands that need it, so that
``nqprof --help`` and ``nqprof strategies`` start instantly.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

from .. import __version__
from ..errors import InputError, NqprofError
from ..options import parse_params  # noqa: F401  (the CLI's --param grammar)

#: The command groups, in the order `nqprof --help` lists them (modules of this package).
GROUPS = ("run", "plan", "build", "history", "trace", "report", "characterize", "queue_bench")
#: Each command and the group that registers it: a command's parser is built from its group
#: alone, so that `nqprof strategies` does not import every group (a test checks the table).
COMMANDS = {
    "solve": "run", "sweep": "run", "strategies": "run", "env": "run", "plan": "plan", "build": "build",
    "matrix": "build", "history": "history", "compare": "history", "plot": "history", "trace": "trace",
    "profile": "trace", "report": "report", "characterize": "characterize", "queue-bench": "queue_bench",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of ``command``'s group."""
    parser = argparse.ArgumentParser(
        prog="nqprof", description="Benchmark and profile GPU work distribution on N-Queens."
    )
    parser.add_argument("--version", action="version", version=f"nqprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in [COMMANDS[command]] if command in COMMANDS else GROUPS:
        importlib.import_module(f"{__name__}.{name}").add_commands(sub)
    _mark_leaves(parser)
    return parser


def _mark_leaves(parser: argparse.ArgumentParser) -> None:
    """Each (sub)command's parser records itself in the namespace, so that an unknown
    argument is reported with that command's usage, not the top level's."""
    parser.set_defaults(_parser=parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                _mark_leaves(child)


def _numbers(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Every number option of the command (``nqprof.numeric.add_number``) from its text to its
    value before the command starts: a bad one is an InputError naming it (its flag, or a
    positional's metavar), whatever the command would have done first."""
    for action in parser._actions:
        number = getattr(action, "number", None)
        value = getattr(args, action.dest, None)
        if number is None or not isinstance(value, str):
            continue
        try:
            setattr(args, action.dest, number(value))
        except InputError as exc:
            name = action.option_strings[0] if action.option_strings else action.metavar or action.dest
            raise InputError(str(exc) if str(exc).startswith(name) else f"{name}: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args, extras = parser.parse_known_args(argv)
    if extras:
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(extras)}")
    try:
        _numbers(args, getattr(args, "_parser", parser))
        return args.func(args)
    except NqprofError as exc:
        message = str(exc).replace("\r", "\\r").replace("\n", "\\n")  # one line, whatever was quoted
        print(f"nqprof: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nqprof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into a reader that stopped (e.g. head)
        sys.stderr = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    sys.exit(main())
