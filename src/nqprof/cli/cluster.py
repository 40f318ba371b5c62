"""``nqprof solve N -s S --cluster local|ADDRESS``: the options and the command (the
counting is nqprof.cluster's, which works without it).

This module imports no Dask: ``nqprof --help`` stays light, and without Dask installed
``--cluster`` fails with one line naming the extra.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings

from ..errors import InputError
from ..numeric import Integer, add_number
from ..options import parse_cluster_address
from ..problem import MAX_N
from ..textfmt import plural

#: The most workers --workers starts (local) or waits for (an address).
MAX_WORKERS = 1024
#: The most tasks --tasks cuts a run into (never more than the host expansion has boards).
MAX_TASKS = 1_000_000
#: The most times --retries retries a failed task.
MAX_RETRIES = 100


def add_cluster_arguments(parser) -> None:
    """Add the cluster options to the ``solve`` parser."""
    g = parser.add_argument_group("cluster (Dask; pip install 'nqprof[cluster]')")
    g.add_argument(
        "--cluster",
        metavar="local|ADDRESS",
        default=None,
        help="spread the count over a Dask cluster: local (started here: one worker per GPU, or "
        "per core for CPU strategies) or a scheduler address such as tcp://host:8786 (waited "
        "for up to $NQPROF_CLUSTER_CONNECT_TIMEOUT seconds, default 5)",
    )

    def count(flag: str, number: Integer, metavar: str, help: str) -> None:
        """A count with no default of its own (none given: the one its help names)."""
        add_number(g.add_argument, flag, number=number, default=None, metavar=metavar, help=help)

    count(
        "--workers",
        Integer(1, MAX_WORKERS),
        "K",
        "local: workers to start (default: every GPU, or every "
        f"core); ADDRESS: workers to wait for (at most {MAX_WORKERS})",
    )
    count(
        "--tasks",
        Integer(1, MAX_TASKS),
        "T",
        "tasks to cut the host expansion into (default: the checkpoint's, else 4 per worker)",
    )
    count(
        "--split-depth",
        Integer(1, MAX_N),
        "D",
        "rows expanded on the host, for strategies without a depth parameter "
        "(default: min(4, N-1))",
    )
    g.add_argument(
        "--checkpoint",
        metavar="FILE",
        default=None,
        help="record finished tasks' counts in FILE; a run "
        "with the same FILE resumes where it stopped",
    )
    count("--retries", Integer(0, MAX_RETRIES), "R", "times a failed task is retried (default: 3)")


def cluster_options_without_cluster(args) -> list[str]:
    """The cluster options given without --cluster (they would be silently ignored)."""
    flags = {
        "workers": "--workers",
        "tasks": "--tasks",
        "split_depth": "--split-depth",
        "checkpoint": "--checkpoint",
        "retries": "--retries",
    }
    return [flag for dest, flag in flags.items() if getattr(args, dest, None) is not None]


def check_address(text: str) -> str:
    """``local`` or a scheduler address ``[PROTOCOL://]HOST:PORT``; one line otherwise."""
    try:
        return parse_cluster_address(text)
    except InputError as exc:
        raise InputError(f"--cluster {exc}") from None


def check_cluster_options(args) -> None:
    """The cluster options' values, before anything starts (the counts are checked as the
    command line reads them: a count of 0 is not "the default")."""
    args.cluster = check_address(args.cluster)
    if args.cluster != "local":
        from ..cluster import connect_timeout

        connect_timeout()  # a bad NQPROF_CLUSTER_CONNECT_TIMEOUT: one line before the work
    if args.checkpoint is not None:
        from ..files import check_output

        check_output(args.checkpoint, "--checkpoint", resumed=True)


@contextlib.contextmanager
def quiet_dask(quiet: bool):
    """Dask's own noise condensed: its log lines (here and in the worker processes it starts)
    only from errors up, "port in use" warnings hidden under -q, and nothing at all while a
    cluster shuts down after a failure or Ctrl-C (heartbeats to a closed scheduler)."""
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
    loggers = [logging.getLogger(name) for name in ("distributed", "dask")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    with warnings.catch_warnings():
        if quiet:
            warnings.filterwarnings("ignore", message=r".*[Pp]ort .* is already in use.*")
        try:
            yield
        except BaseException:
            for lg in loggers:
                lg.setLevel(logging.CRITICAL + 1)
            raise
        finally:
            for lg, level in zip(loggers, levels, strict=True):
                lg.setLevel(level)


def run_clustered(args) -> int:
    """``nqprof solve`` with ``--cluster``: count, print the record (or its JSON)."""
    from ..cluster.engine import DEFAULT_RETRIES, solve_clustered
    from ..files import check_json_output, write_text
    from ..options import TIMEOUT, solve_params

    if args.nq_rounds is not None or args.nq_warmup is not None:
        raise InputError("--rounds and --warmup do not apply with --cluster (one counted run)")
    check_cluster_options(args)
    params = solve_params(args.param, args.strategy)
    timeout = TIMEOUT.value(args.nq_timeout, "--")
    output = check_json_output(getattr(args, "output", None))
    done = [0, 0]

    def on_task(result, finished, total):
        done[:] = [finished, total]

    try:
        with quiet_dask(args.quiet or args.json):
            record = solve_clustered(
                args.strategy,
                args.n,
                params,
                cluster=args.cluster,
                workers=args.workers,
                tasks=args.tasks,
                depth=args.split_depth,
                checkpoint=args.checkpoint,
                retries=DEFAULT_RETRIES if args.retries is None else args.retries,
                timeout=timeout,
                progress=not (args.quiet or args.json),
                on_task=on_task,
            )
    except KeyboardInterrupt:
        if args.checkpoint and os.path.exists(args.checkpoint) and done[1]:
            print(
                f"nqprof: {done[0]} of {plural(done[1], 'task')} are saved in {args.checkpoint}; "
                "the same command resumes the run",
                file=sys.stderr,
            )
        raise
    print(record.to_json() if args.json else record.summary())
    if output:
        write_text(output, record.to_json() + "\n")
        print(f"run record written to {output}", file=sys.stderr)
    return 0
