"""``nqprof ab``: two variants of one case, interleaved round by round in one session, and the
verdict on the pairs (:mod:`nqprof.interleave`, :mod:`nqprof.analysis.paired`).

    nqprof ab 13 -s multicore -p depth=2 --vs depth=3
    nqprof ab 14 -s serial --vs-strategy serial-d4 --pairs 30 --min-change 5
"""

from __future__ import annotations

import json
import sys

from ..numeric import Integer, Real, add_number
from ..options import AB_FAILING, parse_ab_failing
from ..problem import validate_n

#: The most pairs --pairs takes.
MAX_PAIRS = 10_000


def cmd_ab(args) -> int:
    from ..errors import InputError
    from ..interleave import Arm, interleave
    from ..options import solve_params
    from ..progress import Progress
    from .run import loop_settings

    _, warmup, timeout = loop_settings(args)
    a = Arm(args.strategy, solve_params(args.param, args.strategy))
    b_strategy = args.vs_strategy or args.strategy
    vs = solve_params(args.vs, b_strategy)
    if not vs and not args.vs_strategy:
        raise InputError(
            "ab needs a second variant: --vs KEY=VALUE, or --vs-strategy STRATEGY (the same "
            "strategy for an A/A)"
        )
    b = Arm(b_strategy, vs if args.vs_strategy else {**a.params, **vs})
    with Progress.for_command(args.quiet or args.json) as progress:
        progress.case(f"{a.label(args.n)} vs {b.label(args.n)}")
        result = interleave(
            args.n,
            a,
            b,
            pairs=args.pairs,
            warmup=warmup,
            timeout=timeout,
            min_change=None if args.min_change is None else args.min_change / 100,
            progress=progress,
        )
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.summary())
    if args.fail_on and result.decision.verdict in args.fail_on:
        print(f"nqprof: {result.decision.verdict} (--fail-on)", file=sys.stderr)
        return 1
    return 0


def _pairs(text: str) -> int | None:
    if str(text).strip() == "auto":
        return None
    return Integer(8, MAX_PAIRS, what="--pairs")(text)


def _verdicts(text: str) -> list[str]:
    return parse_ab_failing(text, "--fail-on")


def add_commands(sub) -> None:
    from .run import add_param_option, run_options

    p = sub.add_parser(
        "ab",
        description="Run variant A (-s, -p) and variant B (A with --vs parameters, or "
        "--vs-strategy) in one worker process, their rounds in turn (A B, B A, ...), so the "
        "host's drift moves both alike; every count verified. The verdict "
        "(slower, faster, same, cannot-tell) weighs the median pair's ratio and its 99% "
        "interval against the smallest change to catch.",
    )
    add_number(p.add_argument, "n", number=validate_n, metavar="N", help="board size N")
    p.add_argument("--strategy", "-s", required=True, help="variant A's strategy")
    add_param_option(p, "variant A's parameter")
    p.add_argument(
        "--vs",
        action="append",
        metavar="KEY=VALUE",
        help="variant B: A's parameters with this one changed (repeatable)",
    )
    p.add_argument(
        "--vs-strategy", metavar="STRATEGY", help="variant B's strategy (its parameters: --vs)"
    )
    add_number(
        p.add_argument,
        "--pairs",
        number=_pairs,
        default="auto",
        metavar="K|auto",
        help="pairs of rounds, at least 8 (a 99%% interval needs them); auto (the default): "
        "20, then 10 more at a time while the verdict is cannot-tell, up to 200 pairs or 120 s",
    )
    add_number(
        p.add_argument,
        "--min-change",
        number=Real(0, 100, unit="percent"),
        metavar="PCT",
        help="the smallest change to catch, in percent (default 5)",
    )
    add_number(
        p.add_argument,
        "--fail-on",
        number=_verdicts,
        default=[],
        metavar="VERDICTS",
        help=f"exit 1 on these verdicts (a comma list of {', '.join(AB_FAILING)})",
    )
    p.add_argument("--json", action="store_true", help="print the pairs and verdict as JSON")
    run_options(p, rounds=False, warmup_default="1")  # --pairs counts its rounds
    p.set_defaults(func=cmd_ab)
