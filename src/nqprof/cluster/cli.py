"""``nqprof solve N -s S --cluster local|ADDRESS``: the options and the command.

This module imports no Dask: ``nqprof --help`` stays light, and without Dask installed
``--cluster`` fails with one line naming the extra.
"""

from __future__ import annotations

import os
import sys

from ..errors import InputError


def add_cluster_arguments(parser) -> None:
    """Add the cluster options to the ``solve`` parser."""
    g = parser.add_argument_group("cluster (Dask; pip install 'nqprof[cluster]')")
    g.add_argument("--cluster", metavar="local|ADDRESS", default=None,
                   help="spread the count over a Dask cluster: local (started here: one worker per GPU, or per "
                        "core for CPU strategies) or a scheduler address such as tcp://host:8786")
    g.add_argument("--workers", type=int, default=None, metavar="K",
                   help="local: workers to start (default: every GPU, or every core); ADDRESS: workers to wait for")
    g.add_argument("--tasks", type=int, default=None, metavar="T",
                   help="tasks to cut the host expansion into (default: the checkpoint's, else 4 per worker)")
    g.add_argument("--split-depth", type=int, default=None, metavar="D",
                   help="rows expanded on the host, for strategies without a depth parameter (default: min(4, N-1))")
    g.add_argument("--checkpoint", metavar="FILE", default=None,
                   help="record finished tasks' counts in FILE; a run with the same FILE resumes where it stopped")
    g.add_argument("--retries", type=int, default=None, metavar="R",
                   help="times a failed task is retried (default: 3)")


def cluster_options_without_cluster(args) -> list[str]:
    """The cluster options given without --cluster (they would be silently ignored)."""
    flags = {"workers": "--workers", "tasks": "--tasks", "split_depth": "--split-depth",
             "checkpoint": "--checkpoint", "retries": "--retries"}
    return [flag for dest, flag in flags.items() if getattr(args, dest, None) is not None]


def run_clustered(args) -> int:
    """``nqprof solve`` with ``--cluster``: count, print the record (or its JSON)."""
    from ..options import TIMEOUT, parse_params
    from .engine import DEFAULT_RETRIES, solve_clustered

    if args.nq_rounds is not None or args.nq_warmup is not None:
        raise InputError("--rounds and --warmup do not apply with --cluster (one counted run)")
    done = [0, 0]

    def on_task(result, finished, total):
        done[:] = [finished, total]

    try:
        record = solve_clustered(
            args.strategy, args.n, parse_params(args.param), cluster=args.cluster, workers=args.workers,
            tasks=args.tasks, depth=args.split_depth, checkpoint=args.checkpoint,
            retries=DEFAULT_RETRIES if args.retries is None else args.retries, timeout=TIMEOUT.value(args.nq_timeout, "--"),
            progress=not (args.quiet or args.json), on_task=on_task,
        )
    except KeyboardInterrupt:
        if args.checkpoint and os.path.exists(args.checkpoint) and done[1]:
            print(f"nqprof: {done[0]} of {done[1]} tasks are saved in {args.checkpoint}; "
                  "the same command resumes the run", file=sys.stderr)
        raise
    print(record.to_json() if args.json else record.summary())
    return 0
