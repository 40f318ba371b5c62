"""What ``nqprof report`` and ``nqprof characterize`` print and write: a titled table with its
notes, on the terminal and as Markdown (with the command that made it)."""

from __future__ import annotations

import shlex
import sys


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
