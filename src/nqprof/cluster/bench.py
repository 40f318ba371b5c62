"""``pytest bench/ --nq-cluster local|ADDRESS``: the benchmark cases spread over a cluster.

When collection is done, every selected case is submitted to the cluster as one Dask task
that runs the whole case on one worker: prepare, warm up, time the rounds (the host clock
around each round, as the plugin times it locally; GPU strategies in the watchdog process
on the worker's GPU), collect the run's facts. A GPU case asks for the worker resource
``GPU=1``, and each worker has one GPU and one thread, so a GPU runs one case at a time and
timings never share a GPU; the cases of several GPUs run at once. CPU cases run one at a
time per worker too.

Each test then waits for its case and hands the measured round times to pytest-benchmark
(its fixture's timer replays them, so statistics, saving and comparing work unchanged),
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
import time
import uuid
from dataclasses import asdict
from typing import Any

import pytest

from ..errors import CountMismatchError, InputError, NqprofError, UnavailableError
from ..problem import known_count
from ..result import Measurement, RunRecord

OPTION = "--nq-cluster"
DEST = "nq_cluster"
_STATE = pytest.StashKey["ClusterBench | None"]()


def add_option(group) -> None:
    group.addoption(
        OPTION, dest=DEST, default=None, metavar="local|ADDRESS",
        help="run the cases on a Dask cluster, one case per GPU at a time: local (one worker per GPU "
             "here) or a scheduler address such as tcp://host:8786; needs nqprof[cluster]",
    )


def start(session) -> None:
    """After collection: connect and submit the selected cases (``--nq-cluster`` only)."""
    address = session.config.getoption(DEST, None)
    if not address or session.config.getoption("collectonly", False):
        return
    from .. import plugin

    settings = plugin.settings_of(session.config)
    bench = ClusterBench(address, settings)
    session.config.stash[_STATE] = bench
    cases = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or plugin.FIXTURE not in callspec.params or item.get_closest_marker("skip"):
            continue
        cases.append(plugin.Case.from_param(callspec.params[plugin.FIXTURE]))
    bench.submit(cases)


def of(config) -> "ClusterBench | None":
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


class ReplayTimer:
    """A clock for pytest-benchmark whose consecutive (start, end) readings are the given
    round durations: the fixture then records the times taken on the worker."""

    def __init__(self, durations: list[float], where: str):
        self._durations, self._where = list(durations), where
        self._now, self._started = 0.0, False

    def __call__(self) -> float:
        if self._started:
            self._now += self._durations.pop(0)
        self._started = not self._started
        return self._now

    def __repr__(self) -> str:
        return f"nqprof.cluster: round times taken on {self._where}"


def run_case(strategy: str, n: int, given: dict[str, Any], warmup: int, rounds: int | None,
             timeout: float) -> dict[str, Any]:
    """One whole case on this worker; the round times are the host clock around each round."""
    from ..runner import RoundLoop, open_runner
    from ..strategies import get

    strat = get(strategy)
    params = strat.resolve(n, given)
    if strat.needs_gpu and multiprocessing.current_process().daemon:
        from .work import DAEMON_HINT

        raise UnavailableError(DAEMON_HINT)
    with open_runner(strat, n, params, timeout) as runner:
        loop = RoundLoop(runner, rounds, warmup)
        loop.warm_up()  # verified
        times = []
        for _ in range(loop.rounds):
            t0 = time.perf_counter()
            loop.one_round()
            times.append(time.perf_counter() - t0)
        measurements = [asdict(m) for m in loop.measurements]
        info = runner.info()
    return {"measurements": measurements, "times": times, "info": info, "params": params, **where()}


def where() -> dict[str, Any]:
    """This worker: its address, host and GPU."""
    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = None
    return {"worker": worker, "host": socket.gethostname(), "gpu": os.environ.get("CUDA_VISIBLE_DEVICES")}


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
            "workers": [{"worker": a, "host": w.get("host"), "resources": w.get("resources", {})}
                        for a, w in sorted(workers.items())],
        }

    def gpu_skip_reason(self, strategy) -> str | None:
        if strategy.needs_gpu and not self.gpu_workers:
            return f"{strategy.name} needs a GPU: the cluster at {self.address} has no worker with the resource GPU=1"
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
                run_case, case.strategy, case.n, dict(case.given), self.settings.warmup, self.settings.rounds,
                self.settings.timeout, key=f"nqprof-case-{self.run_id}-{case.id}", pure=False,
                resources={"GPU": 1} if strategy.needs_gpu else None,
            )

    def run(self, bench) -> RunRecord:
        """The case of ``bench`` (an :class:`~nqprof.plugin.NQBench`): wait, replay, record."""
        from ..plugin import extra_info

        case, benchmark = bench.case, bench.benchmark
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
        measurements = [Measurement(**m) for m in result["measurements"]]
        place = f"{result['worker']} ({result['host']}" + (f", GPU {result['gpu']}" if result["gpu"] else "") + ")"
        if benchmark.group is None:
            benchmark.group = f"N={case.n:02d}"
        if not getattr(benchmark, "disabled", False):
            if not hasattr(benchmark, "_timer"):
                raise InputError(f"{OPTION} needs pytest-benchmark's fixture timer (pytest-benchmark >= 4)")
            benchmark._timer = ReplayTimer(result["times"], place)
        benchmark.pedantic(lambda: None, rounds=len(result["times"]), warmup_rounds=0, iterations=1)
        record = RunRecord.from_measurements(
            case.strategy, case.n, result["params"], known_count(case.n), measurements, result["info"]
        )
        bench.record = record
        benchmark.extra_info.update(extra_info(record, bench.strategy, self.settings.warmup))
        benchmark.extra_info["cluster"] = {
            "scheduler": self.address, "worker": result["worker"], "host": result["host"], "gpu": result["gpu"],
        }
        return record

    def close(self) -> None:
        for future in self.futures.values():
            future.cancel()
        self.futures.clear()
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()
