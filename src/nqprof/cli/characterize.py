"""``nqprof characterize``: what CUDA Dynamic Parallelism costs on this GPU and toolkit,
measured the way Wang and Yalamanchili (2014) measured it (nqprof.characterize).

    nqprof characterize launch [--counts 32,1K,256K]
        [--modes default,own,fire-and-forget,tail,graph-ff,graph-tail]
    nqprof characterize reserve [--pending 0,32,4096] [--heap-mib 8,512]
    nqprof characterize ideal [--strategies dp2,dp3,dpswap] [--n 14,16]
    nqprof characterize efficiency [--strategies feinbube,dp2,dp3,dpswap] [--n 14]
        [--child-launches 200]
    nqprof characterize timeline 13 [--strategy dp3] [--chrome grids.json [--nsys trace.sqlite]]
    nqprof characterize residency [--shared 0,36352,65536] [--paths host,tail]
    nqprof characterize blocks [--n 17:19] [--paths host,graph,cdp-tail,cdp-host]
    nqprof characterize latency [--paths host,cdp-tail,graph-ff,while] [--trials 50]

Each prints its table beside the paper's numbers (``--json``: the measurement as JSON
instead); ``-o FILE.json`` keeps the measurement, ``-o FILE.md`` writes the table as Markdown,
``--figure`` draws it, and ``--from FILE`` renders a kept measurement without a GPU.
"""

from __future__ import annotations

import sys

from ..errors import InputError
from ..numeric import Integer, add_number
from ..problem import validate_n
from .characterize_common import (
    MAX_CHILD_LAUNCHES,
    MAX_HEAP_MIB,
    MAX_PENDING,
    MAX_SHARED,
    add_block,
    add_common,
    add_int_list,
    add_loop,
    chosen_paths,
    emit_table,
    figure_written,
    loop_keywords,
    machine_text,
    measure_or_load,
    measured_table,
    read_loop,
    reading_kept,
    require_cdp,
    strategy_names,
)
from .output import add_output
from .run import add_param_option, parse_ns

# -- launch -----------------------------------------------------------------------------------


def cmd_launch(args) -> int:
    read_loop(args, "launch")
    from ..characterize import launch
    from ..papers.wang import paper_lines

    counts = args.counts or list(launch.DEFAULT_COUNTS)
    modes = launch.parse_modes(args.modes) if args.modes else list(launch.MODES)
    doc, points = measured_table(
        args,
        launch,
        lambda progress: launch.measure(
            counts,
            modes,
            block=args.block,
            **loop_keywords(args, progress),
            beyond_limits=args.beyond_limits,
        ),
        "Device launch time vs launch count",
        "t1 - t2, medians",
        paper_lines("fig5"),
    )
    if args.figure:
        from ..analysis.figures import launch_figure
        from ..papers import wang

        figure_written(
            launch_figure(
                launch.series(points),
                args.figure,
                where=machine_text(doc),
                paper_small_ms=wang.PAPER_LAUNCH_MS_SMALL,
                paper_small_range=wang.PAPER_LAUNCH_SMALL_RANGE,
                paper_large=wang.PAPER_LAUNCH_MS_256K,
                paper_large_count=wang.PAPER_LAUNCH_COUNT_LARGE,
            )
        )
    return 0


def add_launch(q) -> None:
    add_number(
        q.add_argument,
        "--counts",
        number=_counts,
        help="launch counts, a comma list (1K, 256K, 1M "
        "allowed; default 32..256K in powers of 2, and 1M)",
    )
    # launch.MODES (not imported here: it needs numpy); a test checks that the help names every mode
    q.add_argument(
        "--modes",
        help="launch modes, a comma list of default, own, fire-and-forget, tail, graph-ff, "
        "graph-tail (the graph modes need nqprof[graphs]; default: all)",
    )
    q.add_argument(
        "--beyond-limits",
        action="store_true",
        help="run the graph modes past device graph launch's limits too (120 fire-and-forget "
        "launches per graph execution; one tail launch: two never completed on an H200), to "
        "see where they bite; past the tail limit a run may never end (the watchdog's "
        "--timeout ends it)",
    )
    add_block(q, "threads per block of the parent grid")


def _counts(text: str) -> list[int]:
    from ..characterize.launch import parse_counts

    return parse_counts(text)


# -- reserve ----------------------------------------------------------------------------------


def cmd_reserve(args) -> int:
    read_loop(args, "reserve")
    from ..characterize import reserve
    from ..papers.wang import paper_lines

    pending = args.pending or list(reserve.DEFAULT_PENDING)
    heap = args.heap_mib or list(reserve.DEFAULT_HEAP_MIB)
    doc, points = measured_table(
        args,
        reserve,
        lambda progress: reserve.measure(pending, heap, timeout=args.timeout, progress=progress),
        "Device memory reserved by the CDP runtime",
        "free memory before and after",
        paper_lines("fig6"),
    )
    if args.figure:
        from ..analysis.figures import reserve_figure
        from ..papers import wang

        fit = reserve.fit_slot_bytes(points)
        figure_written(
            reserve_figure(
                reserve.series(points, "pending"),
                args.figure,
                where=machine_text(doc),
                paper_band_mb=wang.PAPER_RESERVE_MB,
                paper_band_limit=wang.PAPER_RESERVE_LIMIT,
                fit=fit[:2] if fit else None,
            )
        )
    return 0


def add_reserve(q) -> None:
    add_int_list(
        q,
        "--pending",
        MAX_PENDING,
        "pending-launch limits, a comma list (default: 0 and powers of 4 up to 16M); the "
        "largest that fits the free memory is added",
    )
    add_int_list(
        q,
        "--heap-mib",
        MAX_HEAP_MIB,
        "malloc heap limits in MiB, a comma list (default: 1,8,64,512,4096,16384)",
    )


# -- ideal ------------------------------------------------------------------------------------


def cmd_ideal(args) -> int:
    read_loop(args, "ideal")
    from ..characterize import ideal
    from ..options import parse_params
    from ..papers.wang import paper_lines

    strategies = strategy_names(args.strategies, "--strategies", ideal.default_strategies)
    baselines = strategy_names(args.baselines, "--baselines")
    require_cdp(strategies, "--strategies")
    ns = args.n
    params = parse_params(args.param)
    doc, results = measured_table(
        args,
        ideal,
        lambda progress: ideal.measure(
            strategies,
            ns,
            params,
            baselines,
            **loop_keywords(args, progress),
        ),
        "Ideal CDP time without launch overhead, and speedups",
        "GPU time, medians",
        paper_lines("fig4"),
    )
    if args.figure:
        from ..analysis.figures import speedup_figure
        from ..papers import wang

        names = sorted({r.baseline[0] for r in results if r.baseline})
        figure_written(
            speedup_figure(
                ideal.series(results),
                args.figure,
                where=machine_text(doc),
                baseline=" / ".join(names) if names else "the best non-CDP strategy",
                paper_ideal=wang.PAPER_IDEAL_SPEEDUP,
                paper_measured=wang.PAPER_MEASURED_SLOWDOWN,
            )
        )
    return 0


def add_ideal(q) -> None:
    q.add_argument(
        "--strategies",
        help="CDP strategies (default: every CDP strategy that records its grids on the device)",
    )
    add_number(
        q.add_argument,
        "--n",
        number=parse_ns,
        default="14,16",
        help="N values: A:B or a comma list (default 14,16)",
    )
    q.add_argument(
        "--baselines",
        default="feinbube",
        help="non-CDP strategies the speedups are over; the "
        "fastest at each N counts (default: %(default)s)",
    )
    add_param_option(q, "parameter for every CDP strategy (repeatable; not launch)")


# -- efficiency -------------------------------------------------------------------------------


def cmd_efficiency(args) -> int:
    read_loop(args, "efficiency")
    from ..characterize import efficiency

    strategies = strategy_names(args.strategies, "--strategies", efficiency.default_strategies)
    n = args.n
    if not args.from_file:
        from ..files import check_output_dir

        check_output_dir(args.out_dir, "--out-dir", efficiency.written(strategies, n))
    doc, loaded = measure_or_load(
        args,
        lambda progress: efficiency.measure(
            strategies,
            n,
            args.out_dir,
            ncu=args.ncu,
            timeout=args.timeout,
            progress=progress,
            child_launches=args.child_launches,
        ),
        efficiency.load,
    )
    with reading_kept(args):
        table = efficiency.table(loaded)
    emit_table(
        args,
        table,
        "SIMD lane efficiency, memory irregularity and "
        f"L2 hit rate (Nsight Compute; N={doc.get('n')})",
    )
    return 0


def add_efficiency(q) -> None:
    q.add_argument(
        "--strategies",
        help="strategies (default: feinbube and every CDP strategy that records its grids on the "
        "device)",
    )
    add_number(q.add_argument, "--n", number=validate_n, default="14", help="N (default 14)")
    add_output(
        q.add_argument,
        "--out-dir",
        default="nqprof-ncu",
        help="where the ncu reports and CSVs go (default nqprof-ncu)",
    )
    q.add_argument(
        "--ncu", help="the ncu executable (default: $NQPROF_NCU, PATH, the toolkit's bin/)"
    )
    from ..characterize.efficiency import DEFAULT_CHILD_LAUNCHES

    add_number(
        q.add_argument,
        "--child-launches",
        number=Integer(0, MAX_CHILD_LAUNCHES),
        default=str(DEFAULT_CHILD_LAUNCHES),
        metavar="K",
        help="a CDP strategy's children: profile the first K of the launches of generation 1 "
        "replayed from the host (launch=record; ncu --launch-count), their instructions scaled to "
        "all by boards (0: all; default %(default)s)",
    )


# -- timeline ---------------------------------------------------------------------------------


def cmd_timeline(args) -> int:
    read_loop(args, "timeline")
    from ..characterize import timeline
    from ..options import parse_params

    params = parse_params(args.param)
    if args.from_file:
        doc, _ = measure_or_load(args, None, timeline.load)
        doc = timeline.load(doc)
    else:
        if args.n is None:
            raise InputError("characterize timeline: give N (or --from FILE)")
        n = args.n
        strategy_names(args.strategy, "--strategy")
        doc, _ = measure_or_load(
            args,
            lambda progress: timeline.measure(
                args.strategy,
                n,
                params,
                **loop_keywords(args, progress),
            ),
        )
    with reading_kept(args):
        table = timeline.table(doc)
    emit_table(
        args,
        table,
        f"Device timeline of {doc['strategy']} N={doc['n']}: "
        f"grids per generation ({machine_text(doc)})",
    )
    if args.chrome:
        trace = None
        if args.nsys:
            from ..analysis import trace as nsys_trace

            trace = nsys_trace.load(args.nsys)
        with reading_kept(args):
            written = timeline.to_chrome(doc, args.chrome, trace)
        print(f"trace events written to {written}", file=sys.stderr)
    return 0


def add_timeline(q) -> None:
    add_number(
        q.add_argument, "n", number=validate_n, nargs="?", metavar="N", help="N (not with --from)"
    )
    q.add_argument(
        "--strategy",
        "-s",
        default="dp3",
        help="a CDP strategy with a device timeline (default dp3)",
    )
    add_param_option(q, "strategy parameter (repeatable)")
    add_output(
        q.add_argument,
        "--chrome",
        metavar="JSON",
        help="write the grids as Chrome/Perfetto trace events",
    )
    q.add_argument(
        "--nsys",
        metavar="TRACE",
        help="with --chrome: merge into this Nsight Systems trace "
        "(.sqlite or .nsys-rep of the same run, e.g. from nqprof profile)",
    )


# -- residency --------------------------------------------------------------------------------


def cmd_residency(args) -> int:
    read_loop(args, "residency")
    from ..characterize import residency

    shared = args.shared or list(residency.DEFAULT_SHARED)
    paths = chosen_paths(args, residency)
    measured_table(
        args,
        residency,
        lambda progress: residency.measure(
            shared, paths, args.block, timeout=args.timeout, progress=progress
        ),
        "Blocks an SM holds at once, launched from the host and from the device",
    )
    return 0


def add_residency(q) -> None:
    add_int_list(
        q,
        "--shared",
        MAX_SHARED,
        "dynamic shared memory per block, bytes, a comma list (default "
        "0,16384,36352,38912,49152,65536)",
    )
    q.add_argument(
        "--paths", help="launch paths, a comma list of host, tail, fire-and-forget (default: all)"
    )
    add_block(q, "threads per block")


# -- blocks -----------------------------------------------------------------------------------


def cmd_blocks(args) -> int:
    read_loop(args, "blocks")
    from ..characterize import blocks
    from ..options import parse_params

    ns = parse_ns(args.n) if args.n else list(blocks.DEFAULT_NS)
    paths = chosen_paths(args, blocks)
    extra = parse_params(args.param)
    blocks.path_params(paths, extra)  # a parameter no path has: before any work
    _, points = measured_table(
        args,
        blocks,
        lambda progress: blocks.measure(
            ns,
            paths,
            **loop_keywords(args, progress),
            extra=extra,
        ),
        "The counting grid's blocks, launched from the host, a device graph and CDP2",
    )
    if args.figure:
        figure_written(blocks.figure(points, args.figure))
    return 0


def add_blocks(q) -> None:
    q.add_argument("--n", help="N values, a comma list or a range A:B (default 17:19)")
    q.add_argument(
        "--paths",
        help="launch paths, a comma list of host, graph, graph-own, cdp-tail, cdp-ff, cdp-host "
        "(default: all)",
    )
    add_param_option(q, "a strategy parameter for the paths whose strategy has it (repeatable)")


# -- latency ----------------------------------------------------------------------------------


def cmd_latency(args) -> int:
    read_loop(args, "latency")
    from ..characterize import latency

    paths = chosen_paths(args, latency)
    measured_table(
        args,
        latency,
        lambda progress: latency.measure(
            paths, args.trials, args.grid, timeout=args.timeout, progress=progress
        ),
        "Launch latency: to the child grid's first start and last end, by launch path",
    )
    return 0


def add_latency(q) -> None:
    from ..characterize.latency import DEFAULT_TRIALS, MAX_TRIALS

    q.add_argument(
        "--paths",
        help="launch paths, a comma list of host, cdp-tail, cdp-ff, graph-tail, graph-ff, while "
        "(default: all)",
    )
    add_number(
        q.add_argument,
        "--trials",
        number=Integer(1, MAX_TRIALS),
        default=str(DEFAULT_TRIALS),
        help=f"launches per path (default {DEFAULT_TRIALS})",
    )
    add_number(
        q.add_argument,
        "--grid",
        number=Integer(1, 1 << 16),
        default="1",
        help="blocks of the child grid, 32 threads each (default 1)",
    )


#: `nqprof characterize`'s subcommands: name -> (add its options, run it, one-line help).
#: (`nqprof`'s own commands are cli.COMMANDS.)
MEASUREMENTS = {
    "launch": (
        add_launch,
        cmd_launch,
        "device launch time vs launch count, per launch mode (their Fig. 5)",
    ),
    "reserve": (
        add_reserve,
        cmd_reserve,
        "device memory reserved vs the pending-launch and heap limits (Fig. 6)",
    ),
    "ideal": (
        add_ideal,
        cmd_ideal,
        "each CDP strategy's time without launch overhead, speedups (their Fig. 4)",
    ),
    "efficiency": (
        add_efficiency,
        cmd_efficiency,
        "warp execution efficiency, irregularity, L2 hit rate (ncu)",
    ),
    "timeline": (
        add_timeline,
        cmd_timeline,
        "every CDP grid's generation, boards, start and end, from the device",
    ),
    "residency": (
        add_residency,
        cmd_residency,
        "blocks an SM holds at once, host- and device-launched, by shared memory",
    ),
    "blocks": (
        add_blocks,
        cmd_blocks,
        "the counting grid's blocks (SM, run, clocks, task fetch), launched three ways",
    ),
    "latency": (
        add_latency,
        cmd_latency,
        "launch to a child grid's first start and last end: host, CDP2, device graph, WHILE",
    ),
}


#: The paper's artefacts (nqprof report wang ...) and the measurement each one is.
ARTEFACTS = {"fig4": "ideal", "fig5": "launch", "fig6": "reserve"}


def report_command(artefact: str):
    """(add options, run) for ``nqprof report wang ARTEFACT``: the characterize command
    (report adds the shared loop options and -o)."""
    add, cmd, _ = MEASUREMENTS[ARTEFACTS[artefact]]

    def add_report(q) -> None:
        add(q)
        add_common(q, with_output=False)

    return add_report, cmd


def add_commands(sub) -> None:
    p = sub.add_parser(
        "characterize",
        description="What CUDA Dynamic Parallelism costs on this GPU and toolkit, measured the way "
        "Wang and Yalamanchili (2014) measured it on Kepler.",
    )
    actions = p.add_subparsers(dest="characterize", metavar="MEASUREMENT", required=True)
    for name, (add, cmd, help_text) in MEASUREMENTS.items():
        q = actions.add_parser(name, help=help_text, description=help_text)
        add(q)
        add_common(q, with_figure=name not in ("efficiency", "timeline", "residency", "latency"))
        add_loop(q, name)
        q.set_defaults(func=cmd)
