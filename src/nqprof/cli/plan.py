"""``nqprof plan``: the plan of a CDP run (Carneiro et al.), computed on the host, launching
nothing: the generations with the paper's bound and nqprof's model side by side, the limits
the run would set, the device runtime's reserve, the chunk size and the number of chunks.

    nqprof plan 16 --strategy dp1 --param z=3 --param depth=4
    nqprof plan 18 -s cdp-bp --free-gib 40 --json

Works on a machine without a GPU: the free device memory is ``--free-gib`` (default: an
H200's, documented in nqprof.strategies.cdp.plan). A run on a GPU makes the same plan from
the memory it measures, and its record carries it.
"""

from __future__ import annotations

import json

from ..numeric import Real, add_number
from ..problem import validate_n

#: The most free device memory --free-gib takes, in GiB: more than any GPU has.
MAX_FREE_GIB = 4096.0


def cmd_plan(args) -> int:
    from ..errors import InputError
    from ..options import solve_params
    from ..strategies import get, names
    from ..strategies.cdp.accounting import WORDS
    from ..strategies.cdp.plan import DEFAULT_FREE_BYTES, GIB, make_plan, render
    from ..strategies.gpu_common import COUNTER_BYTES
    from ..subproblems import BOARD_UPLOAD_BYTES, expand

    strategy = get(args.strategy)
    if not hasattr(strategy, "recursion"):  # the CDP strategies, and devgraph
        planned = ", ".join(name for name in names() if hasattr(get(name), "recursion"))
        raise InputError(
            f"strategy {args.strategy} launches nothing from the "
            f"device: plans are for the strategies that do ({planned})"
        )
    free_gib = args.free_gib
    params = strategy.resolve(args.n, solve_params(args.param, args.strategy))
    n = args.n
    if free_gib is None:
        free, source = DEFAULT_FREE_BYTES, "default: an H200's free memory; set --free-gib"
    else:
        free, source = int(free_gib * GIB), "--free-gib"
    # the host grid's items: the host boards, or what the strategy says (the frames of cdp-cst)
    counted = getattr(strategy, "host_boards", None)
    host = counted(n, params) if counted else len(expand(n, params["depth"]))
    plan = make_plan(
        strategy.recursion(n, params, host),
        free,
        params,
        board_bytes=BOARD_UPLOAD_BYTES,
        counter_bytes=WORDS * COUNTER_BYTES,
        free_source=source,
    )
    if args.json:
        print(json.dumps({"params": params, **plan.as_dict()}, indent=2))
    else:
        print(render(plan))
        print("params       " + ", ".join(f"{k}={v}" for k, v in params.items()))
    return 0


def add_commands(sub) -> None:
    from .run import add_param_option

    p = sub.add_parser(
        "plan",
        description="The plan of a CDP run as Carneiro et al. compute it before the first launch, "
        "beside nqprof's exact host model. Needs no GPU.",
    )
    add_number(p.add_argument, "n", number=validate_n, metavar="N", help="board size N")
    p.add_argument(
        "--strategy", "-s", required=True, help="a CDP strategy (see `nqprof strategies`)"
    )
    add_param_option(
        p,
        "strategy parameter (repeatable, once each; a STRATEGY prefix must name the -s strategy)",
        prefixed=True,
    )
    add_number(
        p.add_argument,
        "--free-gib",
        number=Real(0, MAX_FREE_GIB, unit="GiB"),
        metavar="X",
        help=f"free device memory in GiB, at most {MAX_FREE_GIB:g} "
        "(default: 139, an H200's after its context is created)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the plan as JSON (as the run record carries it)"
    )
    p.set_defaults(func=cmd_plan)
