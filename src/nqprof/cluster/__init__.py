"""Counting and benchmarking across GPUs and hosts on Dask distributed.

nqprof does not schedule work across machines itself: it runs on Dask. The host expands
the first rows into boards and cuts them into tasks (:mod:`.tasks`); each task runs the
strategy's part session (:meth:`~nqprof.strategies.base.Strategy.open_part`) on one Dask
worker, one worker per GPU, GPU work in nqprof's watchdog process (:mod:`.work`); the
engine (:mod:`.engine`) submits the tasks with retries, shows progress, records finished
tasks in a checkpoint (:mod:`.checkpoint`) and sums and verifies the partial counts into
a :class:`~.record.ClusterRecord`. The pytest plugin's ``--nq-cluster`` lives in
:mod:`.bench`, the ``nqprof solve --cluster`` options in :mod:`.cli`.

Dask is an optional extra (``nqprof[cluster]``) and is imported only when a cluster is
asked for.

A scheduler given by address is waited for at most :func:`connect_timeout` seconds
(``NQPROF_CLUSTER_CONNECT_TIMEOUT``, default 5), and the wait is said on stderr as it starts.
"""

from __future__ import annotations

import os

from ..errors import UnavailableError
from ..numeric import Real

EXTRA_HINT = "pip install 'nqprof[cluster]'"
#: Seconds to wait for a scheduler given by address, unless the variable says otherwise.
DEFAULT_CONNECT_TIMEOUT = 5.0
CONNECT_TIMEOUT_VARIABLE = "NQPROF_CLUSTER_CONNECT_TIMEOUT"
CONNECT_SECONDS = Real(
    0, 3600.0, CONNECT_TIMEOUT_VARIABLE, unit="seconds", why="an hour: no scheduler is that slow"
)


def connect_timeout() -> float:
    """$NQPROF_CLUSTER_CONNECT_TIMEOUT, else DEFAULT_CONNECT_TIMEOUT; an InputError naming
    the variable if it is not a number of seconds in 0 < t <= 3600."""
    text = os.environ.get(CONNECT_TIMEOUT_VARIABLE)
    return DEFAULT_CONNECT_TIMEOUT if text is None else CONNECT_SECONDS(text)


def require_dask():
    """``distributed``, or :class:`UnavailableError` naming the extra to install."""
    try:
        import dask  # noqa: F401
        import distributed
    except ImportError as exc:
        raise UnavailableError(
            f"running on a cluster needs Dask distributed ({exc}): {EXTRA_HINT}"
        ) from None
    return distributed
