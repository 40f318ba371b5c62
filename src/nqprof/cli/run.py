"""``nqprof solve``, ``nqprof sweep``, ``nqprof strategies``, ``nqprof env``: running strategies
and describing what can run here."""

from __future__ import annotations

import json
import sys

from .. import options
from ..errors import InputError
from ..files import check_json_output, write_json, write_text
from ..numeric import add_number
from ..options import ROUNDS, TIMEOUT, TIMER, WARMUP
from ..problem import validate_n
from ..textfmt import plural, table
from .cluster import add_cluster_arguments
from .output import add_output


def parse_ns(text: str) -> list[int]:
    """``--n``: an N list in nqprof's one grammar (``8:15``, ``8,10,12``, ``8:12,14``)."""
    try:
        return options.parse_n_values(text)
    except InputError as exc:
        raise InputError(f"--n takes A:B or a comma list of N: {exc}") from None


def add_param_option(p, help: str, prefixed: bool = False) -> None:
    """-p/--param, repeatable: a strategy's KEY=VALUE (``prefixed``: [STRATEGY.]KEY=VALUE)."""
    p.add_argument(
        "--param",
        "-p",
        action="append",
        metavar="[STRATEGY.]KEY=VALUE" if prefixed else "KEY=VALUE",
        help=help,
    )


def run_options(
    p,
    timer: bool = False,
    rounds_default: str | None = None,
    warmup_default: str | None = None,
    timeout_default: str | None = None,
    rounds: bool = True,
    rounds_help: str | None = None,
) -> None:
    """--rounds/--warmup/--timeout(/--timer) and -q, defined once in nqprof.options with the
    plugin's --nq-* twins and the same defaults (solve and sweep keep them; a paper's
    measurement may set its own, and its help then says so); read them back with
    :func:`loop_settings`. ``rounds=False``: a command that counts its rounds otherwise
    (`nqprof ab --pairs`) takes no --rounds; ``rounds_help``: what --rounds means where it
    is not the round rule of solve and sweep."""
    if rounds:
        ROUNDS.add_to(
            p.add_argument, "--", "--repeats", "-r", default=rounds_default, help=rounds_help
        )
    WARMUP.add_to(p.add_argument, "--", "-w", default=warmup_default)
    TIMEOUT.add_to(p.add_argument, "--", default=timeout_default)
    if timer:
        TIMER.add_to(p.add_argument, "--")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on the terminal")


def loop_settings(args) -> tuple[int | None, int, float]:
    """(rounds or None for auto, warm-up rounds, timeout) from :func:`run_options`' flags
    (rounds None where the command has no --rounds)."""
    return tuple(
        opt.value(getattr(args, opt.dest), "--") if hasattr(args, opt.dest) else None
        for opt in (ROUNDS, WARMUP, TIMEOUT)
    )


def cmd_solve(args) -> int:
    from ..options import describe
    from ..progress import Progress
    from ..runner import solve
    from ..strategies import get
    from .cluster import cluster_options_without_cluster, run_clustered

    if args.cluster:
        if args.instructions:
            raise InputError("--instructions does not apply with --cluster (it counts here)")
        return run_clustered(args)
    if cluster_options_without_cluster(args):
        raise InputError(f"{', '.join(cluster_options_without_cluster(args))} need --cluster")
    rounds, warmup, timeout = loop_settings(args)
    params = options.solve_params(args.param, args.strategy)
    get(args.strategy).resolve(args.n, params)  # a bad value is one line before anything starts
    counter = _instruction_counter(args, timeout)
    output = check_json_output(args.output)
    with Progress.for_command(args.quiet or args.json) as progress:
        progress.case(describe(args.strategy, args.n, params))
        record = solve(
            args.strategy,
            args.n,
            params,
            repeats=rounds,
            warmup=warmup,
            timeout=timeout,
            progress=progress,
            timer=TIMER.value(getattr(args, TIMER.dest), "--"),
        )
        if counter is not None:
            progress.update("instructions of one round under Valgrind")
            with counter:
                record.instructions = counter.measure(get(args.strategy), args.n, record.params)
    print(record.to_json() if args.json else record.summary())
    _warn_shared(record)
    if output:
        write_text(output, record.to_json() + "\n")
        print(f"run record written to {output}", file=sys.stderr)
    return 0


def _instruction_counter(args, timeout):
    """solve --instructions: a Counter (nqprof.instructions), its errors (a GPU strategy, no
    Valgrind) said before the run starts; None without the flag."""
    if not args.instructions:
        return None
    from ..instructions import Counter, counting_functions
    from ..strategies import get

    counting_functions(get(args.strategy))
    return Counter(timeout)


def cmd_sweep(args) -> int:
    """Every case of the grid (strategies x N x parameter axes), one verified record each; a
    failing case prints its one-line error and the sweep goes on (exit 1 at the end). Ctrl-C
    ends the case in progress at once: the finished rows are printed and written (``-o``),
    marked partial, and the exit code is 130."""
    from ..options import describe
    from ..progress import Progress

    settings = options.parse_settings(
        {opt.dest: getattr(args, opt.dest) for opt in options.OPTIONS}, prefix="--"
    )
    output = check_json_output(args.output)
    cases = list(options.case_grid(settings))
    gpu_why = _gpu_missing(strategy for _, strategy, _ in cases)
    rows, records, ran = [], [], []
    interrupted = None
    with Progress.for_command(args.quiet, total=len(cases)) as progress:
        try:
            for index, (case, strategy, why) in enumerate(cases):
                progress.case(describe(case.strategy, case.n, dict(case.given)))
                _sweep_case(
                    case,
                    strategy,
                    why or (gpu_why if strategy is not None and strategy.needs_gpu else None),
                    settings,
                    progress,
                    rows,
                    records,
                    ran,
                    gpu_follows=not gpu_why
                    and any(s is not None and s.needs_gpu for _, s, _ in cases[index + 1 :]),
                )
        except KeyboardInterrupt:
            interrupted = (
                f"interrupted after {len(records)} of {len(cases)} "
                "cases: the records before this are the finished ones"
            )
    for rec in ran:  # after the progress lines
        _warn_shared(rec)
    if args.json:
        print(json.dumps(records, indent=1))
    else:
        print(table(["strategy", "N", "params", "count", "GPU time", "wall time", "note"], rows))
    if output:
        write_json(output, records + ([{"partial": interrupted}] if interrupted else []))
        print(
            f"{plural(len(records), 'record')} written to {output}"
            + (" (partial)" if interrupted else ""),
            file=sys.stderr,
        )
    if interrupted:
        print(f"nqprof: {interrupted}", file=sys.stderr)
        return 130
    return 0 if all("error" not in r for r in records) else 1


def _sweep_case(
    case, strategy, why, settings, progress, rows, records, ran, gpu_follows=False
) -> None:
    """One case of a sweep: its row and record (skipped, an error, or the run, also kept in
    ``ran``); ``gpu_follows``: a GPU case comes later (a spare worker is started for it)."""
    from ..errors import NqprofError
    from ..runner import solve
    from ..textfmt import seconds

    head = {"strategy": case.strategy, "n": case.n, "params": dict(case.given)}
    if why:
        rows.append([case.strategy, case.n, _given(case), "skipped", "-", "-", why])
        records.append({**head, "skipped": why})
        return
    try:
        rec = solve(
            case.strategy,
            case.n,
            dict(case.given),
            repeats=settings.rounds,
            warmup=settings.warmup,
            timeout=settings.timeout,
            progress=progress,
            timer=settings.timer,
            keep_spare=gpu_follows,
        )
    except NqprofError as exc:
        rows.append([case.strategy, case.n, _given(case), "ERROR", "-", "-", str(exc)])
        records.append({**head, "error": str(exc)})
        return
    rows.append(
        [
            case.strategy,
            case.n,
            _given(case),
            f"{rec.count} verified",
            seconds(rec.gpu_s),
            seconds(rec.wall_s),
            f"median of {rec.rounds}" + _throttled(rec) + _shared(rec),
        ]
    )
    ran.append(rec)
    records.append(rec.to_dict())


def _gpu_missing(strategies) -> str | None:
    """Why GPU strategies cannot run here (None: they can, or none is selected); asked once."""
    if not any(s is not None and s.needs_gpu for s in strategies):
        return None
    from ..cuda.device import gpu_available

    ok, why = gpu_available()
    return None if ok else f"needs a GPU: {why}"


def _throttled(rec) -> str:
    rounds = (rec.conditions.get("gpu") or {}).get("throttled_rounds")
    return f", GPU throttled in {len(rounds)}" if rounds else ""


def _shared(rec) -> str:
    count = (rec.conditions.get("gpu") or {}).get("other_processes")
    return f", GPU shared with {plural(count, 'other process', 'other processes')}" if count else ""


def _warn_shared(rec) -> None:
    """``nqprof: warning: ...`` on stderr where other processes used the run's GPU."""
    if rec.shared_gpu():
        from ..options import describe

        print(
            f"nqprof: warning: {describe(rec.strategy, rec.n, rec.params)}: {rec.shared_gpu()}",
            file=sys.stderr,
        )


def _given(case) -> str:
    return ",".join(f"{k}={v}" for k, v in case.given) or "-"


def cmd_strategies(args) -> int:
    """Each strategy on a line (name, [CPU|GPU], title), and under its tag its parameters as
    columns (name, range, default, help), each column as wide as its widest cell."""
    from ..strategies import all_strategies

    strategies = all_strategies()
    params = [p for s in strategies for p in s.params]
    name = max((len(p.name) for p in params), default=0)
    rng = max((len(p.describe_range()) for p in params), default=0)
    dflt = max((len(p.describe_default()) for p in params), default=0)
    width = max(len(s.name) for s in strategies) + 1
    for s in strategies:
        tag = ("GPU, CDP" if s.cdp else "GPU") if s.needs_gpu else "CPU"
        print(f"{s.name:<{width}} [{tag}] {s.title}")
        if s.min_n > 1:
            print(f"{'':<{width + 1}}N >= {s.min_n}")
        for p in s.params:
            print(
                f"{'':<{width + 1}}{p.name:<{name}} {p.describe_range():<{rng}}  default "
                f"{p.describe_default():<{dflt}}  {p.help}"
            )
    return 0


def cmd_env(args) -> int:
    from ..machine import describe_environment

    info = describe_environment()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        width = max(len(k) for k in info)
        for key, value in info.items():
            print(f"{key:<{width}}  {value}")
    return 0


def add_json_output(p, what: str) -> None:
    """``--json`` (print it as JSON on stdout) and ``-o/--output FILE.json`` (write it), the
    same in every command."""
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON instead of the text")
    add_output(
        p.add_argument,
        "--output",
        "-o",
        metavar="FILE.json",
        help=f"also write {what} as JSON to FILE.json",
    )


def add_commands(sub) -> None:
    p = sub.add_parser("solve")
    add_number(p.add_argument, "n", number=validate_n, metavar="N", help="board size N")
    p.add_argument(
        "--strategy",
        "-s",
        default="serial",
        help="strategy name (see `nqprof strategies`; default: %(default)s)",
    )
    add_param_option(
        p,
        "strategy parameter (repeatable; a STRATEGY prefix must name the -s strategy)",
        prefixed=True,
    )
    run_options(p, timer=True)
    p.add_argument(
        "--instructions",
        action="store_true",
        help="CPU strategies: also count the instructions one round executes, under Valgrind's "
        "callgrind (a metric the host's clock speed does not move; about 50x slower than a "
        "round, after a start of seconds), into the record's instructions",
    )
    add_json_output(p, "the run record")
    add_cluster_arguments(p)
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser(
        "sweep",
        description="The same cases `pytest bench/` would run with the same --nq-* options, "
        "without pytest: e.g. nqprof sweep --strategy feinbube --n 16:18 "
        "--param feinbube.depth=5,6",
    )
    options.STRATEGY.add_to(p.add_argument, "--", "-s")
    options.N_VALUES.add_to(p.add_argument, "--")
    options.PARAM_AXIS.add_to(p.add_argument, "--", "-p")
    options.TIMER.add_to(p.add_argument, "--")
    run_options(p)  # --timer is one of the shared OPTIONS above
    add_json_output(p, "every case's record (run, error or skip)")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("strategies")
    p.set_defaults(func=cmd_strategies)

    p = sub.add_parser("env")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_env)
