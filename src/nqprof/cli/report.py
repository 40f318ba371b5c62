"""``nqprof report``: list the papers' artefacts, and re-measure one beside the paper.

    nqprof report                                  every paper's artefacts, and which exist yet
    nqprof report PAPER                            one paper's artefacts
    nqprof report PAPER ARTEFACT [options]         measure it (e.g. nqprof report plauth table3)
    nqprof report table2|table3|figure [options]   the same as `nqprof report plauth ...`

Each artefact's measurement and table live in its paper's module (nqprof.papers); this
module only turns options into calls. Runs go through the watchdog runner; on a machine
without a GPU a GPU artefact says so and exits 2 (``table3 --model-only`` needs none).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..numeric import Integer, add_number
from ..options import parse_params
from ..problem import MAX_N
from .output import add_output, emit
from .run import add_param_option, loop_settings, parse_ns, run_options


def require_gpu(strategies) -> str:
    """The GPU's name ("CPU" if no strategy needs one); :class:`UnavailableError` if a GPU
    strategy cannot run here."""
    from ..cuda.device import require_gpu as gpu_or_error
    from ..strategies import get

    if not any(get(s).needs_gpu for s in strategies):
        return "CPU"
    return gpu_or_error("`nqprof report` measures on a CUDA GPU")


def _sweep(args, runs):
    """Measure ``runs`` with the command's rounds, timeout and progress."""
    from ..papers import measure
    from ..progress import Progress

    rounds, _, timeout = loop_settings(args)

    def run(strategy, n, params):
        return measure.measure(strategy, n, params, timeout=timeout, repeats=rounds or 1)

    with Progress.for_command(args.quiet) as progress:
        return measure.sweep(runs, run, progress)


def _rounds_note(args) -> str:
    return f"median of {loop_settings(args)[0] or 1}"


# -- Feinbube et al. ------------------------------------------------------------------------


def cmd_feinbube_steps(args) -> int:
    from ..papers import feinbube

    ns = args.n
    device = require_gpu(["feinbube"])
    outcomes = _sweep(args, feinbube.steps_runs(ns, parse_params(args.param)))
    header, rows, notes = feinbube.steps_table(outcomes, ns)
    emit(
        args,
        "Feinbube et al.: the optimisation steps of the host-seeded kernel, GPU time in ms",
        header,
        rows,
        notes,
        f"Paper: {feinbube.PAPER_GPU}. Here: {device}, "
        f"GPU time (CUDA events), {_rounds_note(args)}.",
    )
    return 0


def add_feinbube_steps(q) -> None:
    add_number(
        q.add_argument, "--n", number=parse_ns, default="16:18", help="N values (default 16:18)"
    )
    add_param_option(q, "extra feinbube parameter (repeatable)")


# -- Plauth et al. --------------------------------------------------------------------------


def cmd_table2(args) -> int:
    from ..papers import plauth

    ns = args.n
    device = require_gpu(["dp1"])
    outcomes = _sweep(args, plauth.table2_runs(ns, z=args.z, extra=parse_params(args.param)))
    header, rows, notes = plauth.table2(outcomes, ns)
    emit(
        args,
        f"Table 2 of Plauth et al.: DP-1 (z={args.z}), default stream vs own streams, ms",
        header,
        rows,
        notes,
        f"Paper: K20x. Here: {device}, GPU time (CUDA events "
        f"around the host launch), {_rounds_note(args)}.",
    )
    return 0


def add_table2(q) -> None:
    add_number(
        q.add_argument,
        "--n",
        number=parse_ns,
        default="8:15",
        help="N values: A:B (inclusive) or a comma list (default 8:15)",
    )
    add_number(
        q.add_argument,
        "--z",
        number=_z,
        default="1",
        help="DP-1 rows per grid (1: the paper's first version)",
    )
    add_param_option(q, "extra dp1 parameter (repeatable)")


def _z(text: str) -> int:
    """--z in dp1's own range of z."""
    from ..strategies import get

    lo, hi = get("dp1").param("z").bounds_for(MAX_N)
    return Integer(lo, hi, "--z")(text)


def cmd_table3(args) -> int:
    from ..papers import plauth

    model = plauth.table3_model()
    measured = {}
    device = "not measured (--model-only)"
    if not args.model_only:
        device = require_gpu(["dp2", "dp3"])
        outcomes = _sweep(args, plauth.table3_runs(parse_params(args.param)))
        measured = {row.key: o for row, o in zip(plauth.PAPER_TABLE3, outcomes, strict=True)}
    header, rows, notes = plauth.table3(measured, model)
    emit(
        args,
        "Table 3 of Plauth et al.: boards per child grid, "
        f"N={plauth.TABLE3_N}, static (dp2) vs dynamic (dp3)",
        header,
        rows,
        notes,
        f"Paper: K20x. Model: nqprof.strategies.cdp.model. Measured: {device}, the device-side "
        "accounting of the first child generation.",
    )
    return 0


def add_table3(q) -> None:
    q.add_argument(
        "--model-only",
        action="store_true",
        help="no GPU runs: the paper's numbers beside the model's",
    )
    add_param_option(q, "extra dp2/dp3 parameter (repeatable)")


def cmd_figure(args) -> int:
    from ..analysis.figures import time_vs_n
    from ..papers import measure
    from ..strategies import get

    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    for s in strategies:
        get(s)  # an unknown name is an InputError listing the known ones
    ns = args.n
    device = require_gpu(strategies)
    outcomes = _sweep(args, measure.figure_runs(strategies, ns))
    time_vs_n(measure.figure_series(outcomes), args.output, title=f"time vs N ({device})")
    for o in outcomes:
        if not o.ok:
            print(f"{o.strategy} N={o.n}: {o.error}: {o.detail}")
    print(f"written to {args.output}")
    return 0


def add_figure(q) -> None:
    from ..papers.plauth import FIGURE_STRATEGIES

    q.add_argument(
        "--strategies",
        default=",".join(FIGURE_STRATEGIES),
        help="comma list (default: %(default)s)",
    )
    add_number(
        q.add_argument,
        "--n",
        number=parse_ns,
        default="8:16",
        help="N values: A:B (inclusive) or a comma list (default 8:16)",
    )


# -- Carneiro et al. ------------------------------------------------------------------------


def cmd_carneiro_table2(args) -> int:
    from ..papers import carneiro

    ranges = args.ranges
    ns = sorted({n for r in ranges for n in r.ns()})
    history = carneiro.serial_from_history(args.history, ns) if args.history else {}
    device = require_gpu(list(carneiro.TABLE2_STRATEGIES.values()))
    outcomes = _sweep(args, carneiro.table2_runs(ranges, serial_known=history))
    header, rows, notes = carneiro.table2(outcomes, ranges, history)
    emit(
        args,
        "Table 2 of Carneiro et al.: mean speedup over serial "
        "per N range (paper: N-Queens+ATSP; here: N-Queens only)",
        header,
        rows,
        notes,
        f"Paper: K40m, N-Queens and ATSP. Here: {device}, N-Queens only, {_rounds_note(args)}.",
    )
    if args.figure:
        from ..analysis.figures import speedup_vs_n
        from ..errors import UnavailableError

        try:
            speedup_vs_n(
                carneiro.speedup_series(outcomes, history),
                args.figure,
                title=f"N-Queens: speedup over serial ({device})",
            )
            print(f"figure written to {args.figure}", file=sys.stderr)
        except UnavailableError as exc:
            print(f"no figure: {exc}", file=sys.stderr)
    return 0


def add_carneiro_table2(q) -> None:
    from ..papers.carneiro import DEFAULT_RANGES

    add_number(
        q.add_argument,
        "--ranges",
        number=_ranges,
        default=DEFAULT_RANGES,
        help="N ranges A-B, comma-separated (default %(default)s)",
    )
    q.add_argument(
        "--history",
        metavar="PATH",
        help="take serial times from this benchmark history (a saved JSON "
        "file or a storage folder) instead of measuring them; the table says which came from where",
    )
    add_output(
        q.add_argument,
        "--figure",
        metavar="PNG",
        help="also draw the figure of speedup over serial vs N per strategy into PNG",
    )


def _ranges(text: str):
    from ..papers.carneiro import parse_ranges

    return parse_ranges(text)


def _measured(add: Callable, figure: bool = False, rounds: str = "1") -> Callable:
    """The options of an artefact measured through nqprof.papers.measure: its own, the
    rounds/warm-up/timeout/-q of every run, and --output (a PNG for a figure, else an
    optional Markdown copy of the table)."""

    def add_all(q) -> None:
        add(q)
        add_output(
            q.add_argument,
            "--output",
            "-o",
            required=figure,
            help="the PNG file to write"
            if figure
            else "also write the table as Markdown to this file",
        )
        run_options(q, rounds_default=rounds)

    return add_all


def _kerbl_fig1():
    from .queue_bench import add_kerbl_fig1, cmd_kerbl

    return add_kerbl_fig1, cmd_kerbl


def _characterize(artefact: str):
    """Wang and Yalamanchili's figures are `nqprof characterize` measurements (cli.characterize)."""
    from .characterize import report_command

    add, cmd = report_command(artefact)
    return _measured(add, rounds="auto"), cmd


#: (paper, artefact) -> (add its options, run it). An artefact a paper lists without an
#: entry here is planned, not reproduced yet. (`nqprof`'s own commands are cli.COMMANDS.)
REPORTS: dict[tuple[str, str], tuple[Callable, Callable[..., int]]] = {
    ("feinbube", "steps"): (_measured(add_feinbube_steps), cmd_feinbube_steps),
    ("plauth", "table2"): (_measured(add_table2), cmd_table2),
    ("plauth", "table3"): (_measured(add_table3), cmd_table3),
    ("plauth", "figure"): (_measured(add_figure, figure=True), cmd_figure),
    ("kerbl", "fig1"): _kerbl_fig1(),
    **{("wang", a): _characterize(a) for a in ("fig4", "fig5", "fig6")},
    ("carneiro", "table2"): (_measured(add_carneiro_table2), cmd_carneiro_table2),
}
#: `nqprof report NAME` for the artefacts that existed before the papers were split.
ALIASES = {"table2": "plauth", "table3": "plauth", "figure": "plauth"}


def cmd_list(args) -> int:
    """Every artefact of every paper (or of one), and whether nqprof reproduces it yet."""
    from ..papers import all_papers, paper

    papers = [paper(args.paper)] if getattr(args, "paper", None) else all_papers()
    for p in papers:
        print(f"{p.key}: {p.citation}")
        for a in p.artefacts:
            state = (
                f"available: nqprof report {p.key} {a.name}"
                if (p.key, a.name) in REPORTS
                else f"planned: {a.planned}"
            )
            print(f"  {a.name:<8} {a.title}\n  {'':<8} {state}")
    return 0


def _checked(cmd: Callable[..., int], figure: bool, own_checks: bool = False) -> Callable[..., int]:
    """``cmd`` with every file it will write checked first (-o, --figure, --outdir), and the
    rounds, warm-up and timeout before any GPU is looked for."""

    def run(args) -> int:
        from ..files import check_output, check_output_dir
        from ..options import TIMEOUT

        if hasattr(args, TIMEOUT.dest):
            loop_settings(args)
        images = (".png", ".pdf", ".svg")
        out = getattr(args, "output", None)
        if isinstance(out, str) and not own_checks:
            check_output(out, "--output", images if figure else (".md",))
        if getattr(args, "figure", None):
            check_output(args.figure, "--figure", images)
        if getattr(args, "outdir", None):
            check_output_dir(args.outdir, "--outdir")
        return cmd(args)

    return run


def _artefact_parser(
    sub, name: str, paper_key: str, artefact, help_text: str | None = None
) -> None:
    add, cmd = REPORTS[(paper_key, artefact.name)]
    q = sub.add_parser(name, help=help_text or artefact.title)
    add(q)
    q.set_defaults(
        func=_checked(
            cmd,
            figure=(paper_key, artefact.name) == ("plauth", "figure"),
            own_checks=paper_key == "kerbl",
        )
    )


def add_commands(sub) -> None:
    from ..papers import PAPERS, paper

    p = sub.add_parser("report")
    p.set_defaults(func=cmd_list, paper=None)
    reports = p.add_subparsers(dest="report", metavar="PAPER")
    for key in PAPERS:
        info = paper(key)
        q = reports.add_parser(key, help=info.citation)
        q.set_defaults(func=cmd_list, paper=key)
        arts = q.add_subparsers(dest="artefact", metavar="ARTEFACT")
        for artefact in info.artefacts:
            if (key, artefact.name) in REPORTS:
                _artefact_parser(arts, artefact.name, key, artefact)
    for name, key in ALIASES.items():
        artefact = paper(key).artefact(name)
        _artefact_parser(
            reports, name, key, artefact, help_text=f"the same as `report {key} {name}`"
        )
