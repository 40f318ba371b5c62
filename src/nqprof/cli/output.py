"""The files a command writes: the options that name them (:func:`add_output`, each with the
command's ``--force``), and what ``nqprof report`` and ``nqprof characterize`` print and
write: a titled table with its notes, on the terminal and as Markdown (with the command that
made it).

An output is checked before the work (``nqprof.files.check_output``): among other things, a
file that exists is an error unless the command line has ``--force``
(``nqprof.cli.main`` runs the command inside ``nqprof.files.replacing``)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import Any

#: The option that lets a command replace output files that exist.
FORCE = "--force"
FORCE_HELP = "replace output files that exist (without it, an existing one is an error)"


def add_output(add: Callable[..., Any], *flags: str, **kwargs: Any) -> Any:
    """Register an option naming a file (or a folder of files) the command writes, with an
    ``add_argument`` callable, and mark it: every command with such an option gets
    :data:`FORCE` (:func:`add_force`)."""
    action = add(*flags, **kwargs)
    action.writes = True
    return action


def add_force(parser: argparse.ArgumentParser) -> None:
    """:data:`FORCE` on ``parser`` if one of its options names an output (:func:`add_output`)."""
    if FORCE not in parser._option_string_actions and any(
        getattr(action, "writes", False) for action in parser._actions
    ):
        parser.add_argument(FORCE, action="store_true", help=FORCE_HELP)


def outputs(args) -> list[str]:
    """The -o/--output files (a list in `characterize`, one file in `report`)."""
    out = getattr(args, "output", None)
    return [] if not out else list(out) if isinstance(out, list) else [out]


def emit(args, title: str, header, rows, notes, note: str | None = None) -> None:
    """Print the title, the table and its notes (not with --json); write them as Markdown to
    every ``.md`` file of -o/--output, with the command line and ``note`` (what was measured
    where) above the table."""
    from ..files import write_text
    from ..textfmt import table

    if not getattr(args, "json", False):
        print(title)
        print(table(header, rows))
        for line in notes:
            print(line)
    for path in outputs(args):
        if not path.lower().endswith(".md"):
            continue
        command = "nqprof " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        text = [f"# {title}", "", f"Command: `{command}`", ""]
        text += [note, ""] if note else []
        text += [table(header, rows, markdown=True), ""]
        text += [f"{line}  " for line in notes]
        write_text(path, "\n".join(text) + "\n")
        print(f"written to {path}", file=sys.stderr)
