"""``nqprof queue-bench`` (and ``nqprof report kerbl fig1``): the GPU queue microbenchmark of
Kerbl et al. (their Fig. 1), as a table and a figure.

    nqprof queue-bench [--queues bq,bwd,gottlieb,ring] [--sizes 4,8,16]
                       [--variants balanced,unbalanced] [--fill 4] [--repeats 3] [-o out.json]
                       [--figure fig.png] [--bytes 16] [--json]
    nqprof queue-bench --from out.json [--figure fig.png] [--bytes 16]     (no GPU: a saved run)
    nqprof report kerbl fig1 [--from out.json] [--outdir DIR] [...the same run options]

A run measures on the GPU (PyCUDA); ``--from`` renders a saved run anywhere.
"""

from __future__ import annotations

from .. import queuebench
from ..errors import InputError
from ..numeric import Integer, add_number, integer_text
from ..problem import split_list
from .output import add_output

#: The largest --fill: thread counts up to this many times what the GPU holds at once.
MAX_FILL = 64
#: The most timed runs per point --repeats takes.
MAX_REPEATS = 1000


def _list(text: str, allowed, what: str, cast=str):
    try:
        values = [cast(x) for x in split_list(text, f"--{what}")]
    except ValueError:
        raise InputError(
            f"--{what} takes a comma list of {', '.join(map(str, allowed))}, got {text!r}"
        ) from None
    for v in values:
        if v not in allowed:
            raise InputError(f"unknown {what[:-1]} {v!r} (known: {', '.join(map(str, allowed))})")
    if not values:
        raise InputError(f"--{what} {text!r} selects nothing")
    return values


def check_args(args) -> None:
    """Values and output files, before the work."""
    from ..files import check_output, check_output_dir

    if args.output:
        check_output(args.output, "--output", (".json",))
    if getattr(args, "figure", None):
        check_output(args.figure, "--figure", (".png", ".pdf", ".svg"))
    if getattr(args, "outdir", None):
        from ..papers.kerbl import FIGURES

        check_output_dir(args.outdir, "--outdir", tuple(FIGURES.values()))


def obtain(args) -> queuebench.BenchResult:
    """The saved run (``--from``) or a new one on the GPU."""
    check_args(args)
    if args.source:
        result = queuebench.load(args.source)
        _keep(args, result)
        return result
    from ..cuda.device import require_gpu

    require_gpu("render a saved run with --from FILE")
    from ..progress import Progress

    bar = Progress.for_command(args.quiet)

    def progress(row):
        bar.update(
            f"{row.variant} {row.queue} {row.bytes} B {row.threads:,} threads: {row.ms:.3f} ms"
        )

    result = queuebench.run_benchmark(
        queues=_list(args.queues, queuebench.QUEUES, "queues"),
        sizes=args.sizes,
        variants=_list(args.variants, queuebench.VARIANTS, "variants"),
        fill=args.fill,
        repeats=args.repeats,
        progress=progress,
    )
    bar.close()
    _keep(args, result)
    return result


def _keep(args, result) -> None:
    if args.output:
        from ..files import write_text

        write_text(args.output, result.to_json() + "\n")
        print(f"run written to {args.output}", file=__import__("sys").stderr)


def cmd_queue_bench(args) -> int:
    result = obtain(args)
    if args.json:
        print(result.to_json())
        return 0
    for variant in queuebench.VARIANTS:
        if queuebench.select(result.rows, variant, args.bytes):
            print(queuebench.table(result.rows, variant, args.bytes))
            print()
    if args.figure:
        queuebench.figure(result.rows, args.figure, args.figure_variant)
        print(f"figure: {args.figure}")
    return 0


def cmd_kerbl(args) -> int:
    from ..papers import kerbl

    print(kerbl.report(obtain(args), args.outdir, args.bytes))
    return 0


def _sizes(text: str) -> list[int]:
    return _list(text, queuebench.ELEMENT_BYTES, "sizes", integer_text)


def add_run_options(p) -> None:
    p.add_argument(
        "--from", dest="source", metavar="JSON", help="render a saved run instead of measuring"
    )
    p.add_argument(
        "--queues", default=",".join(queuebench.QUEUES), help="comma list (default: %(default)s)"
    )
    add_number(
        p.add_argument,
        "--sizes",
        number=_sizes,
        default="4,8,16",
        help="element sizes in bytes (default: %(default)s)",
    )
    p.add_argument(
        "--variants",
        default=",".join(queuebench.VARIANTS),
        help="comma list (default: %(default)s)",
    )
    add_number(
        p.add_argument,
        "--fill",
        number=Integer(1, MAX_FILL),
        default="4",
        help=f"largest thread count: this many times what the GPU holds (at most {MAX_FILL})",
    )
    add_number(
        p.add_argument,
        "--repeats",
        "-r",
        number=Integer(1, MAX_REPEATS),
        default="3",
        help="timed runs per point (median)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the run as JSON instead of the tables"
    )
    add_output(
        p.add_argument,
        "--output",
        "-o",
        metavar="FILE.json",
        help="also save the run to FILE.json (render it with --from)",
    )
    add_number(
        p.add_argument,
        "--bytes",
        number=Integer(
            min(queuebench.ELEMENT_BYTES),
            max(queuebench.ELEMENT_BYTES),
            choices=queuebench.ELEMENT_BYTES,
        ),
        default="16",
        help="element size the tables show (default 16)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on the terminal")


def add_commands(sub) -> None:
    p = sub.add_parser("queue-bench")
    add_run_options(p)
    add_output(
        p.add_argument,
        "--figure",
        help="write the figure (time vs threads, a line per queue) to this PNG",
    )
    p.add_argument("--figure-variant", default="balanced", choices=queuebench.VARIANTS)
    p.set_defaults(func=cmd_queue_bench)


def add_kerbl_fig1(q) -> None:
    """The options of ``nqprof report kerbl fig1``."""
    add_run_options(q)
    add_output(
        q.add_argument, "--outdir", help="write the figures (balanced, unbalanced) into this folder"
    )
