"""The ``nqprof`` command: the top-level parser and error handling, written once.

Each command group lives in its own module of this package and registers its subcommands
through ``add_commands(subparsers)``; the modules import nothing heavy (pandas, pytest,
matplotlib, PyCUDA, numpy) at import time, only inside the commands that need it, so that
``nqprof --help`` and ``nqprof strategies`` start instantly. A command builds only its own
group's parser, and ``nqprof --help`` lists the commands from :data:`COMMANDS` without
importing any group.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from ..errors import InputError, NqprofError
from ..files import replacing

#: Every command: the group (a module of this package) that registers it and its one-line
#: help (its parser's, :class:`_Commands`), in the order `nqprof --help` lists them. A
#: command's parser is built from its group alone, and `nqprof --help` lists this table
#: without importing any group (a test checks the table against what the groups register).
COMMANDS: dict[str, tuple[str, str]] = {
    "solve": ("run", "count the solutions for N queens with one strategy and report the run"),
    "sweep": (
        "run",
        "run a grid of cases (strategies x N x parameter axes), one verified row each",
    ),
    "strategies": ("run", "list strategies and their parameters"),
    "env": ("run", "report GPU, driver, toolkit and profiler availability"),
    "ab": (
        "ab",
        "interleave two variants of one case round by round and decide on the pairs",
    ),
    "plan": (
        "plan",
        "print the plan of a CDP run (generations, "
        "bounds, limits, reserve, chunks); launches nothing",
    ),
    "build": (
        "build",
        "compile (and device-link) every kernel with nvcc and report resources; no GPU needed",
    ),
    "matrix": (
        "build",
        "compare the resources-*.json tables of several toolkits, or (--history) the benchmark "
        "times of several toolkits and GPUs",
    ),
    "history": ("history", "list every saved benchmark run, one row per benchmark per run"),
    "compare": (
        "history",
        "compare two saved runs: change and a noise-aware verdict per benchmark",
    ),
    "export": (
        "history",
        "write a saved run as an NVBench JSON result (NVBench's scripts read it)",
    ),
    "plot": ("history", "write PNG figures: time vs N, speedup over serial"),
    "trace": ("trace", "read Nsight Systems traces (.sqlite or .nsys-rep)"),
    "profile": ("trace", "run a command under nsys profile and print the per-range breakdown"),
    "report": ("report", "list the papers' tables and figures, or re-measure one beside the paper"),
    "characterize": (
        "characterize",
        "what CDP costs here: launch time, reserved memory, ideal time, efficiency",
    ),
    "queue-bench": (
        "queue_bench",
        "GPU queue microbenchmark (Kerbl et al., Fig. 1): table and figure",
    ),
}
#: The command groups, in the order `nqprof --help` lists them.
GROUPS = tuple(dict.fromkeys(group for group, _ in COMMANDS.values()))


def __getattr__(name: str):
    if (
        name == "parse_params"
    ):  # the CLI's --param grammar, imported on use: `nqprof --help` needs none of it
        from ..options import parse_params

        return parse_params
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Parser(argparse.ArgumentParser):
    """nqprof's argument parser: a usage error (no command, an unknown one, a missing or
    unknown argument, a bad choice) is one line and a pointer to the command's help, exit
    code 2, not the usage block. Every (sub)command's parser is one: :func:`_top_parser`
    builds the top level with it, and argparse makes each subparser of the parent's class."""

    def error(self, message: str) -> NoReturn:
        message = message.replace("\r", " ").replace("\n", " ")
        self.exit(2, f"nqprof: error: {message}\nTry '{self.prog} --help'.\n")


class _Commands(argparse._SubParsersAction):
    """The top level's subparsers: a command's one-line help is its entry in :data:`COMMANDS`
    (its group's ``add_parser`` gives the rest of its parser)."""

    def add_parser(self, name, **kwargs):
        kwargs.setdefault("help", COMMANDS[name][1])
        return super().add_parser(name, **kwargs)


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = Parser(
        prog="nqprof", description="Benchmark and profile GPU work distribution on N-Queens."
    )
    parser.add_argument("--version", action="version", version=f"nqprof {__version__}")
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=Parser, action=_Commands
    )
    sub.required = True
    return parser, sub


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of ``command``'s group. Each command that writes
    a file gets ``--force`` (:func:`nqprof.cli.output.add_force`), and each (sub)command's
    parser records itself in the namespace (``_parser``), so that an unknown argument is
    reported with that command's usage, not the top level's."""
    from .output import add_force

    parser, sub = _top_parser()
    for name in [COMMANDS[command][0]] if command in COMMANDS else GROUPS:
        importlib.import_module(f"{__name__}.{name}").add_commands(sub)
    for each in _parsers(parser):
        add_force(each)
        each.set_defaults(_parser=each)
    return parser


def listing_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command listed from :data:`COMMANDS` and none built:
    what `nqprof --help`, a missing command and an unknown one need."""
    parser, sub = _top_parser()
    for command in COMMANDS:
        sub.add_parser(command, add_help=False)
    return parser


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every (sub)command's parser under it, once each (an alias is the same
    parser)."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += _parsers(child)
    return found


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
            name = (
                action.option_strings[0] if action.option_strings else action.metavar or action.dest
            )
            raise InputError(str(exc) if str(exc).startswith(name) else f"{name}: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    if (
        command is None
    ):  # --help, --version, no command or an unknown one (these exit), or options before it
        command = listing_parser().parse_known_args(argv)[0].command
    if command in ("solve", "sweep") and not any(
        a in ("-h", "--help") or a.startswith("--cluster") for a in argv
    ):
        from ..spare import SPARE, gpu_machine

        if gpu_machine():  # its worker starts while the rest of nqprof loads
            SPARE.start(context=True)
    parser = build_parser(command)
    args, extras = parser.parse_known_args(argv)
    if extras:
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(extras)}")
    try:
        _numbers(args, getattr(args, "_parser", parser))
        with replacing(getattr(args, "force", False)):
            return args.func(args)
    except NqprofError as exc:
        message = (
            str(exc).replace("\r", "\\r").replace("\n", "\\n")
        )  # one line, whatever was quoted
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
