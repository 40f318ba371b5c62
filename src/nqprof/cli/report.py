"""``nqprof report``: re-measure Plauth et al.'s Table 2, Table 3 and the time-vs-N figure.

    nqprof report table2 [--n 8:15] [--z 1] [--timeout S] [-p KEY=VALUE] [-o table2.md]
    nqprof report table3 [--timeout S] [--model-only] [-o table3.md]
    nqprof report figure -o time.png [--strategies serial,feinbube,dp1,...] [--n 8:16] [--timeout S]

Runs go through the watchdog runner; on a machine without a GPU the command says so and
exits 2 (``table3 --model-only`` needs none).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ..papers import plauth as reproduce
from ..errors import InputError, UnavailableError
from ..problem import validate_n


def parse_ns(text: str) -> list[int]:
    """``8:15`` (inclusive) or ``8,10,12`` -> a sorted list of N."""
    try:
        if ":" in text:
            lo, hi = (validate_n(x) for x in text.split(":", 1))
            values = list(range(lo, hi + 1))
        else:
            values = sorted({validate_n(x) for x in text.split(",") if x.strip()})
    except InputError as exc:
        raise InputError(f"--n takes A:B or a comma list of N: {exc}") from None
    if not values:
        raise InputError(f"--n {text!r} selects no N")
    return values


def require_gpu(strategies) -> str:
    """The GPU's name; :class:`UnavailableError` if a GPU strategy cannot run here."""
    from ..cuda.device import gpu_available
    from ..strategies import get

    if not any(get(s).needs_gpu for s in strategies):
        return "CPU"
    ok, what = gpu_available()
    if not ok:
        raise UnavailableError(f"no GPU on this machine ({what}); `nqprof report` measures on a CUDA GPU")
    return what


def _progress(args):
    return None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))


def _runner(args):
    def run(strategy, n, params):
        return reproduce.measure(strategy, n, params, timeout=args.timeout, repeats=args.repeats)

    return run


def _emit(args, title: str, header, rows, notes, markdown_note: str) -> None:
    print(title)
    print(reproduce.render(header, rows))
    for line in notes:
        print(line)
    if getattr(args, "output", None):
        command = "nqprof " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        text = [f"# {title}", "", f"Command: `{command}`", "", markdown_note, "",
                reproduce.render(header, rows, markdown=True), ""]
        text += [f"{line}  " for line in notes]
        Path(args.output).write_text("\n".join(text) + "\n")
        print(f"written to {args.output}", file=sys.stderr)


def cmd_table2(args) -> int:
    from . import parse_params

    ns = parse_ns(args.n)
    device = require_gpu(["dp1"])
    runs = reproduce.table2_runs(ns, z=args.z, extra=parse_params(args.param))
    outcomes = reproduce.sweep(runs, _runner(args), _progress(args))
    header, rows, notes = reproduce.table2(outcomes, ns)
    _emit(
        args,
        f"Table 2 of Plauth et al.: DP-1 (z={args.z}), default stream vs own streams, ms",
        header, rows, notes,
        f"Paper: K20x. Here: {device}, GPU time (CUDA events around the host launch), median of {args.repeats}.",
    )
    return 0


def cmd_table3(args) -> int:
    from . import parse_params

    model = reproduce.table3_model()
    measured = {}
    device = "not measured (--model-only)"
    if not args.model_only:
        device = require_gpu(["dp2", "dp3"])
        runs = reproduce.table3_runs(parse_params(args.param))
        outcomes = reproduce.sweep(runs, _runner(args), _progress(args))
        measured = {row.key: o for row, o in zip(reproduce.PAPER_TABLE3, outcomes)}
    header, rows, notes = reproduce.table3(measured, model)
    _emit(
        args,
        f"Table 3 of Plauth et al.: boards per child grid, N={reproduce.TABLE3_N}, static (dp2) vs dynamic (dp3)",
        header, rows, notes,
        f"Paper: K20x. Model: nqprof.strategies.cdp.model. Measured: {device}, the device-side accounting of the first "
        "child generation.",
    )
    return 0


def cmd_figure(args) -> int:
    from ..strategies import get

    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    for s in strategies:
        get(s)  # an unknown name is an InputError listing the known ones
    ns = parse_ns(args.n)
    device = require_gpu(strategies)
    outcomes = reproduce.sweep(reproduce.figure_runs(strategies, ns), _runner(args), _progress(args))
    series = reproduce.figure_series(outcomes)
    reproduce.plot_figure(series, args.output, title=f"time vs N ({device})")
    for o in outcomes:
        if not o.ok:
            print(f"{o.strategy} N={o.n}: {o.error}: {o.detail}")
    print(f"written to {args.output}")
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("report", help="re-measure the papers' tables and figures (on the GPU)")
    reports = p.add_subparsers(dest="report", metavar="REPORT")
    reports.required = True

    def common(q, timeout_help="seconds a GPU step may take (default 600)"):
        q.add_argument("--timeout", type=float, default=None, help=timeout_help)
        q.add_argument("--repeats", "-r", type=int, default=1, help="timed rounds per run (median reported)")
        q.add_argument("--quiet", "-q", action="store_true", help="no progress lines")

    q = reports.add_parser("table2", help="DP-1: default stream vs own streams, beside the paper's Table 2")
    q.add_argument("--n", default="8:15", help="N values: A:B (inclusive) or a comma list (default 8:15)")
    q.add_argument("--z", type=int, default=1, help="DP-1 rows per grid (1: the paper's first version)")
    q.add_argument("--param", "-p", action="append", metavar="KEY=VALUE", help="extra dp1 parameter (repeatable)")
    q.add_argument("--output", "-o", help="also write the table as Markdown to this file")
    common(q)
    q.set_defaults(func=cmd_table2)

    q = reports.add_parser("table3", help="boards per child grid at N=12: paper, model and GPU accounting")
    q.add_argument("--model-only", action="store_true", help="no GPU runs: the paper's numbers beside the model's")
    q.add_argument("--param", "-p", action="append", metavar="KEY=VALUE", help="extra dp2/dp3 parameter (repeatable)")
    q.add_argument("--output", "-o", help="also write the table as Markdown to this file")
    common(q)
    q.set_defaults(func=cmd_table3)

    q = reports.add_parser("figure", help="time vs N for several strategies (log y), as a PNG")
    q.add_argument("--output", "-o", required=True, help="the PNG file to write")
    q.add_argument("--strategies", default=",".join(reproduce.FIGURE_STRATEGIES),
                   help="comma list (default: %(default)s)")
    q.add_argument("--n", default="8:16", help="N values: A:B (inclusive) or a comma list (default 8:16)")
    common(q)
    q.set_defaults(func=cmd_figure)
