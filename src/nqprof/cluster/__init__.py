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
"""

from __future__ import annotations

from ..errors import UnavailableError

EXTRA_HINT = "pip install 'nqprof[cluster]'"


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
