"""What every ``nqprof characterize`` measurement shares: its options (the loop, --json,
--from, --figure, -o) and the keywords the loop gives it, reading a kept measurement, its table
printed, outputs checked before the work, and the lists its options take and their bounds
(:mod:`nqprof.cli.characterize` holds the measurements)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import InputError
from ..numeric import Integer, add_number, integer_text, shown
from ..options import MAX_FIXED_ROUNDS
from ..textfmt import plural
from .output import add_output, emit, outputs
from .run import loop_settings, run_options

#: Threads per block a CUDA grid can have (--block).
MAX_BLOCK = 1024
#: The largest pending-launch limit --pending sets: 4 times the largest default point.
MAX_PENDING = 1 << 26
#: The largest malloc heap --heap-mib sets, in MiB (1 TiB).
MAX_HEAP_MIB = 1 << 20
#: The most child launches --child-launches profiles.
MAX_CHILD_LAUNCHES = 1_000_000
#: The most dynamic shared memory --shared asks for, bytes (more than any SM has).
MAX_SHARED = 1 << 20


def require_gpu() -> str:
    from ..cuda.device import require_gpu as gpu_or_error

    return gpu_or_error(
        "`nqprof characterize` measures on a CUDA GPU (--from FILE renders a kept measurement)"
    )


def read_doc(path: str | Path) -> dict:
    """A measurement kept with -o FILE.json; one line naming the file if it is not one."""
    from ..files import read_json

    doc = read_json(path, "--from")
    if "kind" not in doc:
        raise InputError(f"--from {path} is not an nqprof characterization (no kind)")
    return doc


def check_outputs(args) -> None:
    """Every file the command will write, checked before the work."""
    from ..files import check_output

    for path in outputs(args):
        check_output(
            path, "--output", (".json", ".md") if isinstance(args.output, list) else (".md",)
        )
    if getattr(args, "figure", None):
        check_output(args.figure, "--figure", (".png", ".pdf", ".svg"))
    if getattr(args, "chrome", None):
        check_output(args.chrome, "--chrome", (".json",))


def machine_text(doc: dict) -> str:
    m = doc.get("machine") or {}
    if not m.get("device"):
        return "device unknown"
    return f"{m['device']}, CUDA {m.get('toolkit', '?')}, driver {m.get('driver', '?')}"


def measure_or_load(args, measure, load=None):
    """(the document, ``load(document)``): read from --from, or measured on this GPU (then
    kept in every -o FILE.json, printed with --json)."""
    from ..files import reading, write_json

    if args.from_file:
        doc = read_doc(args.from_file)
        with reading(args.from_file, "--from"):
            loaded = load(doc) if load else None
    else:
        require_gpu()
        from ..progress import Progress

        with Progress.for_command(args.quiet or args.json) as progress:
            doc = measure(progress)
        loaded = load(doc) if load else None
    for path in outputs(args):
        if path.lower().endswith(".json"):
            write_json(path, doc)
            print(f"measurement kept in {path}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps(doc, indent=1))
    return doc, loaded


def emit_table(args, table, title: str, paper: Sequence[str] = ()) -> None:
    """The measurement's table (header, rows, notes: what its module's ``table`` returns)
    under ``title``, the paper's lines after its notes, printed and written to every -o
    FILE.md (:func:`nqprof.cli.output.emit`)."""
    header, rows, notes = table
    emit(args, title, header, rows, [*notes, *paper])


def measured_table(args, module, measure, title: str, aside: str = "", paper: Sequence[str] = ()):
    """Measure with ``measure`` (or read --from) through ``module.load``, and emit
    ``module.table`` of it under ``title`` with, in parentheses, ``aside`` and the machine
    (:func:`emit_table`). Returns (the document, what ``module.load`` made of it)."""
    doc, loaded = measure_or_load(args, measure, module.load)
    where = f"{aside}; {machine_text(doc)}" if aside else machine_text(doc)
    emit_table(args, module.table(loaded), f"{title} ({where})", paper)
    return doc, loaded


def figure_written(path) -> None:
    print(f"figure written to {path}", file=sys.stderr)


def strategy_names(
    text: str | None, flag: str, default: Callable[[], list[str]] | None = None
) -> list[str]:
    """The strategies of the comma list ``text`` (one line for an unknown name), or where
    ``flag`` was not given (``text`` None) those of ``default()``."""
    from ..strategies import get

    if text is None and default is not None:
        return default()
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise InputError(f"{flag} takes a comma list of strategy names, got {text!r}")
    for s in names:
        get(s)  # an unknown name is an InputError listing the known ones
    return names


def cdp_names() -> list[str]:
    from ..strategies import all_strategies

    return [s.name for s in all_strategies() if s.cdp]


def require_cdp(names: list[str], flag: str) -> None:
    """Every strategy of ``names`` launches from the device: one line naming the CDP
    strategies for the first that does not (given with ``flag``)."""
    from ..strategies import get

    for s in names:
        if not get(s).cdp:
            raise InputError(
                f"{flag}: {s} launches nothing from the device (CDP strategies: "
                f"{', '.join(cdp_names())})"
            )


def chosen_paths(args, probe) -> list[str]:
    """The launch paths ``--paths`` names (checked by ``probe.check_paths``), else all of the
    probe module's ``PATHS``."""
    return probe.check_paths(args.paths.split(",")) if args.paths else list(probe.PATHS)


def add_block(q, what: str) -> None:
    """--block, threads per block (default 128)."""
    add_number(
        q.add_argument,
        "--block",
        number=Integer(1, MAX_BLOCK),
        default="128",
        help=f"{what} (default 128)",
    )


def add_int_list(q, flag: str, hi: int, help_text: str) -> None:
    """``flag``, a comma list of integers in 0..``hi`` (:func:`_int_list`)."""
    add_number(q.add_argument, flag, number=lambda text: _int_list(text, flag, hi), help=help_text)


def _int_list(text: str, flag: str, hi: int) -> list[int]:
    """A comma list of integers in 0..hi (empty items skipped, not all of them)."""
    try:
        values = [integer_text(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or not 0 <= min(values) <= max(values) <= hi:
        raise InputError(f"{flag} takes a comma list of integers in 0..{hi}, got {shown(text)}")
    return values


#: Timed rounds of each measurement where --rounds is auto (the default), and the seconds a
#: point, reading or run may take before its worker is killed.
DEFAULT_ROUNDS = {
    "launch": 5,
    "reserve": 1,
    "ideal": 3,
    "efficiency": 1,
    "timeline": 3,
    "residency": 1,
    "blocks": 3,
    "latency": 1,
}
TIMEOUTS = {
    "launch": 120,
    "reserve": 120,
    "ideal": 300,
    "efficiency": 600,
    "timeline": 300,
    "residency": 120,
    "blocks": 300,
    "latency": 120,
}


#: The measurements whose rounds go through nqprof's round loop: their --rounds auto is the
#: relative-standard-error rule of solve and sweep, and their default is DEFAULT_ROUNDS.
ROUND_LOOP = frozenset({"launch"})


def add_loop(q, name: str) -> None:
    """--rounds/--warmup/--timeout/-q, the options every nqprof run shares (nqprof.options);
    --rounds auto is the relative-standard-error rule where the measurement runs through
    the round loop (ROUND_LOOP), else the measurement's own fixed count, and its help says
    which."""
    from ..rounds import AUTO_TEXT

    if name in ROUND_LOOP:
        default = str(DEFAULT_ROUNDS[name])
        auto = f"{AUTO_TEXT}, on each round's t1 - t2"
    else:
        default = "auto"
        auto = (
            f"auto: {plural(DEFAULT_ROUNDS[name], 'round')} for this measurement (a fixed "
            "count, not the relative-standard-error rule of solve and sweep)"
        )
    run_options(
        q,
        rounds_default=default,
        warmup_default="1",
        timeout_default=str(TIMEOUTS[name]),
        rounds_help=f"timed rounds per point, a number up to {MAX_FIXED_ROUNDS} or {auto} "
        f"(default: {default})",
    )


def reading_kept(args):
    """Rendering a kept measurement: malformed content is one line naming the file."""
    from ..files import reading

    return reading(args.from_file, "--from") if args.from_file else contextlib.nullcontext()


def read_loop(args, name: str) -> None:
    """``args.repeats``, ``args.warmup``, ``args.timeout`` from the shared options, and every
    output file checked before the work."""
    check_outputs(args)
    rounds, warmup, timeout = loop_settings(args)
    args.repeats = rounds if name in ROUND_LOOP else rounds or DEFAULT_ROUNDS[name]
    args.warmup, args.timeout = warmup, timeout


def loop_keywords(args, progress) -> dict:
    """The keywords of a measurement that runs the shared loop: ``repeats``, ``warmup`` and
    ``timeout`` as :func:`read_loop` set them, and ``progress``."""
    return {
        "repeats": args.repeats,
        "warmup": args.warmup,
        "timeout": args.timeout,
        "progress": progress,
    }


def add_common(q, with_figure: bool = True, with_output: bool = True) -> None:
    q.add_argument(
        "--json", action="store_true", help="print the measurement as JSON instead of the table"
    )
    q.add_argument(
        "--from", dest="from_file", metavar="FILE", help="render a kept measurement (no GPU needed)"
    )
    if with_figure:
        add_output(
            q.add_argument,
            "--figure",
            metavar="PNG",
            help="also draw the figure (.png, .pdf or .svg)",
        )
    if with_output:
        add_output(
            q.add_argument,
            "--output",
            "-o",
            metavar="FILE.json|FILE.md",
            action="append",
            help="also write the measurement (FILE.json, rendered later "
            "with --from) or the table as Markdown (FILE.md); repeatable",
        )
