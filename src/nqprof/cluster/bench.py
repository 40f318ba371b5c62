"""``pytest bench/ --nq-cluster local|ADDRESS``: the benchmark cases spread over a cluster.

When collection is done, every selected case is submitted to the cluster as one Dask task
that runs the whole case on one worker: prepare, warm up, time the rounds (the host clock
around each round, as the plugin times it locally; GPU strategies in the watchdog process
on the worker's GPU), collect the run's facts. A GPU case asks for the worker resource
``GPU=1``, and each worker has one GPU and one thread, so a GPU runs one case at a time and
timings never share a GPU; the cases of several GPUs run at once. CPU cases run one at a
time per worker too.

Each test then waits for its case and hands the measured rounds' statistic to
pytest-benchmark as a local case does (nqprof.nqbench: the fixture's timer replays them),
and the history records where the case ran: ``extra_info["cluster"]`` (scheduler, worker,
host, the GPU as the worker saw it in CUDA_VISIBLE_DEVICES, the device facts in
``extra_info["device"]``), and the cluster's workers in machine_info.

``local`` starts a cluster on this machine: one worker per visible GPU, or one CPU worker
where there is none. Dask is imported only when the option is given.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import uuid
from typing import Any

import pytest

from ..errors import CountMismatchError, InputError, NqprofError, UnavailableError
from ..options import CLUSTER_DEST as DEST
from ..options import CLUSTER_OPTION as OPTION
from ..options import FIXTURE, Case, settings_of
from ..result import RunRecord

_STATE = pytest.StashKey["ClusterBench | None"]()


def start(session) -> None:
    """After collection: connect and submit the selected cases (``--nq-cluster`` only)."""
    address = session.config.getoption(DEST, None)
    if not address or session.config.getoption("collectonly", False):
        return
    try:
        settings = settings_of(session.config)
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    bench = ClusterBench(address, settings)
    session.config.stash[_STATE] = bench
    cases = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or FIXTURE not in callspec.params or item.get_closest_marker("skip"):
            continue
        cases.append(Case.from_param(callspec.params[FIXTURE]))
    bench.submit(cases)


def of(config) -> ClusterBench | None:
    """The session's cluster bench, or None without ``--nq-cluster``."""
    return config.stash.get(_STATE, None)


def stop(config) -> None:
    bench = of(config)
    if bench is not None:
        config.stash[_STATE] = None
        bench.close()


def update_machine_info(config, facts: dict[str, Any]) -> None:
    bench = of(config)
    if bench is not None:
        facts["cluster"] = bench.describe()


def run_case(
    strategy: str,
    n: int,
    given: dict[str, Any],
    warmup: int,
    rounds: int | None,
    timeout: float,
    timer: str = "compute",
) -> dict[str, Any]:
    """One whole case on this worker, by the one round loop: its record, and where it ran."""
    from ..runner import RoundLoop
    from ..runners import open_runner
    from ..strategies import get

    strat = get(strategy)
    params = strat.resolve(n, given)
    if strat.needs_gpu and multiprocessing.current_process().daemon:
        from .work import DAEMON_HINT

        raise UnavailableError(DAEMON_HINT)
    with open_runner(strat, n, params, timeout, rounds=rounds) as runner:
        loop = RoundLoop(runner, rounds, warmup, timer=timer)
        loop.run()
        record = loop.record(runner.info())
    return {"record": record.to_dict(), "rule": loop.describe(), **where()}


def where() -> dict[str, Any]:
    """This worker: its address, host and GPU."""
    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = None
    return {
        "worker": worker,
        "host": socket.gethostname(),
        "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


class ClusterBench:
    def __init__(self, address: str, settings):
        from . import require_dask
        from .engine import connect_bench

        try:
            require_dask()
            self.client, self._cluster = connect_bench(address)
        except NqprofError as exc:
            raise pytest.UsageError(f"{OPTION}: {exc}") from None
        self.settings = settings
        self.address = self.client.scheduler.address
        self.futures: dict[str, Any] = {}
        self.run_id = uuid.uuid4().hex[:8]
        workers = self.client.scheduler_info().get("workers", {}).values()
        self.gpu_workers = sum(1 for w in workers if w.get("resources", {}).get("GPU", 0) >= 1)

    def describe(self) -> dict[str, Any]:
        workers = self.client.scheduler_info().get("workers", {})
        return {
            "scheduler": self.address,
            "workers": [
                {"worker": a, "host": w.get("host"), "resources": w.get("resources", {})}
                for a, w in sorted(workers.items())
            ],
        }

    def gpu_skip_reason(self, strategy) -> str | None:
        if strategy.needs_gpu and not self.gpu_workers:
            return (
                f"{strategy.name} needs a GPU: the cluster at "
                f"{self.address} has no worker with the resource GPU=1"
            )
        return None

    def submit(self, cases) -> None:
        from ..strategies import get

        for case in cases:
            if case.id in self.futures:
                continue
            try:
                strategy = get(case.strategy)
            except ImportError:
                continue
            if self.gpu_skip_reason(strategy):
                continue
            self.futures[case.id] = self.client.submit(
                run_case,
                case.strategy,
                case.n,
                dict(case.given),
                self.settings.warmup,
                self.settings.rounds,
                self.settings.timeout,
                self.settings.timer,
                key=f"nqprof-case-{self.run_id}-{case.id}",
                pure=False,
                resources={"GPU": 1} if strategy.needs_gpu else None,
            )

    def run(self, bench) -> RunRecord:
        """The case of ``bench`` (an :class:`~nqprof.nqbench.NQBench`): wait, then record it
        as a local case is recorded, with where it ran."""
        case = bench.case
        reason = self.gpu_skip_reason(bench.strategy)
        if reason:
            pytest.skip(reason)
        if case.id not in self.futures:
            self.submit([case])
        try:
            result = self.futures.pop(case.id).result()
        except CountMismatchError as exc:
            pytest.fail(str(exc), pytrace=False)
        except UnavailableError as exc:
            pytest.skip(f"{bench.label}: {exc}")
        record = RunRecord(**result["record"])
        cluster = {
            "scheduler": self.address,
            "worker": result["worker"],
            "host": result["host"],
            "gpu": result["gpu"],
        }
        return bench.finish(record, result["rule"], cluster=cluster)

    def close(self) -> None:
        for future in self.futures.values():
            future.cancel()
        self.futures.clear()
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()
