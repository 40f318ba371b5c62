"""Running a count on a Dask cluster: connect (or start a local cluster), submit one
Dask task per nqprof task with retries, follow them as they finish (checkpoint, progress),
sum and verify.

``cluster="local"`` starts a cluster on this machine: for a GPU strategy one worker per
GPU, each seeing only its GPU (``CUDA_VISIBLE_DEVICES`` in its environment; dask-cuda's
``LocalCUDACluster`` does it where installed); for a CPU strategy one single-threaded
worker process per core (one for multicore, which uses every core itself). Any other
value is a scheduler address (``tcp://host:8786``) of a cluster started elsewhere.

Faults: a task that raises is retried (``retries`` times, by Dask, on any worker); a
worker that dies has its tasks rescheduled by the scheduler (up to its
``distributed.scheduler.allowed-failures``). A task's result is only counted once it has
arrived, so nothing is lost or counted twice, and the total is verified in the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import CountMismatchError, InputError, NqprofError, UnavailableError, WatchdogError
from ..options import DEFAULT_TIMEOUT, describe
from ..problem import known_count
from ..progress import Progress
from ..strategies import Strategy, get
from ..textfmt import plural
from . import CONNECT_TIMEOUT_VARIABLE, connect_timeout, require_dask
from .checkpoint import open_checkpoint
from .record import ClusterRecord
from .tasks import TASKS_PER_WORKER, expansion, multiplier, plan, plan_hash, split_depth

#: Retries of a failed task (an exception in the task; worker deaths are counted by the
#: scheduler's allowed-failures).
DEFAULT_RETRIES = 3
#: Seconds to wait for the workers asked for with --workers on a remote cluster.
WORKER_WAIT_S = 60.0
#: Where a local cluster's dashboard listens (Dask picks another port if it is taken).
DASHBOARD = ":8787"


def supports_parts(strategy: Strategy) -> bool:
    return type(strategy).open_part is not Strategy.open_part


def visible_gpus() -> list[str]:
    """The GPUs local workers may use: CUDA_VISIBLE_DEVICES if set, else nvidia-smi's list."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip()]
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        return [
            str(i) for i, line in enumerate(ln for ln in out.splitlines() if ln.startswith("GPU "))
        ]
    return []


def local_cluster(strategy: Strategy, workers: int | None):
    """A cluster on this machine for ``strategy`` (see the module's docstring)."""
    if not strategy.needs_gpu:
        return local_cpu_cluster(
            workers or (1 if strategy.name == "multicore" else (os.cpu_count() or 1))
        )
    gpus = visible_gpus()
    if not gpus:
        raise UnavailableError(
            f"{strategy.name} needs a GPU and none is visible "
            "here (nvidia-smi -L, CUDA_VISIBLE_DEVICES)"
        )
    if workers and workers > len(gpus):
        raise InputError(
            f"--workers {workers}: only {plural(len(gpus), 'GPU')} "
            f"{'is' if len(gpus) == 1 else 'are'} visible here (one worker per GPU)"
        )
    return local_gpu_cluster(gpus[: workers or len(gpus)])


@contextlib.contextmanager
def sigint_ignored():
    """SIGINT ignored while a local cluster starts: its worker processes inherit that (and
    Python leaves an inherited ignore alone), so Ctrl-C reaches only this process, which
    shuts the cluster down, and no worker prints a traceback of its own."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def local_cpu_cluster(workers: int):
    """``workers`` single-threaded worker processes."""
    require_dask()
    from distributed import LocalCluster

    with sigint_ignored():
        return LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=DASHBOARD
        )


def local_gpu_cluster(gpus: list[str]):
    """One single-threaded worker per GPU, seeing only its GPU, with the resource GPU=1."""
    require_dask()
    import dask

    # GPU work runs in nqprof's watchdog process, which a daemonic worker may not start.
    with dask.config.set({"distributed.worker.daemon": False}), sigint_ignored():
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            LocalCUDACluster = None
        if LocalCUDACluster is not None:
            return LocalCUDACluster(
                CUDA_VISIBLE_DEVICES=",".join(gpus),
                threads_per_worker=1,
                resources={"GPU": 1},
                dashboard_address=DASHBOARD,
            )
        from distributed import Nanny, Scheduler, SpecCluster

        spec = {
            f"gpu{gpu}": {
                "cls": Nanny,
                "options": {
                    "nthreads": 1,
                    "resources": {"GPU": 1},
                    "env": {"CUDA_VISIBLE_DEVICES": gpu},
                },
            }
            for gpu in gpus
        }
        return SpecCluster(
            workers=spec, scheduler={"cls": Scheduler, "options": {"dashboard_address": DASHBOARD}}
        )


def client_at(address: str):
    """A Dask client on the scheduler at ``address``. The wait is said on stderr before it
    starts (Dask is imported after that line), and bounded: a scheduler that does not answer
    within :func:`~nqprof.cluster.connect_timeout` seconds is an :class:`UnavailableError`."""
    seconds = connect_timeout()
    print(
        f"nqprof: connecting to the Dask scheduler at {address}: up to {seconds:g} s "
        f"(${CONNECT_TIMEOUT_VARIABLE})",
        file=sys.stderr,
        flush=True,
    )
    require_dask()
    from distributed import Client

    try:
        return Client(address, timeout=seconds)
    except (OSError, TimeoutError) as exc:
        raise UnavailableError(f"cannot reach the Dask scheduler at {address} ({exc})") from None


@contextlib.contextmanager
def connect(address: str, strategy: Strategy, workers: int | None) -> Iterator[Any]:
    """A Dask client on ``address`` ("local": a cluster started here, closed afterwards;
    else :func:`client_at`)."""
    if address == "local":
        require_dask()
        from distributed import Client

        with local_cluster(strategy, workers) as cluster, Client(cluster) as client:
            yield client
        return
    client = client_at(address)
    with client:
        try:
            client.wait_for_workers(workers or 1, timeout=WORKER_WAIT_S)
        except TimeoutError:
            have = len(client.scheduler_info().get("workers", {}))
            raise UnavailableError(
                f"the Dask cluster at {address} has {plural(have, 'worker')} "
                f"after {WORKER_WAIT_S:g} s, "
                f"{workers or 1} wanted"
            ) from None
        yield client


def connect_bench(address: str):
    """(client, the local cluster or None) for the benchmark suite: ``local`` starts one
    worker per visible GPU, or one CPU worker where there is none."""
    if address == "local":
        require_dask()
        from distributed import Client

        gpus = visible_gpus()
        cluster = local_gpu_cluster(gpus) if gpus else local_cpu_cluster(1)
        return Client(cluster), cluster
    return client_at(address), None


def dashboard_of(client) -> str | None:
    """The dashboard's address, if the scheduler runs one."""
    try:
        if "dashboard" in client.scheduler_info().get("services", {}):
            return client.dashboard_link
    except (KeyError, AttributeError, OSError):
        pass
    return None


def solve_clustered(
    strategy: str,
    n: int,
    params: dict[str, Any] | None = None,
    *,
    cluster: str = "local",
    workers: int | None = None,
    tasks: int | None = None,
    depth: int | None = None,
    checkpoint: str | None = None,
    retries: int = DEFAULT_RETRIES,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None | bool = True,
    on_task: Callable[[dict[str, Any], int, int], None] | None = None,
) -> ClusterRecord:
    """Count ``n`` queens with ``strategy`` across the workers of a Dask cluster and
    return the verified record. ``on_task(result, done, total)`` is called after each
    finished task has been checkpointed (an exception from it stops the run there)."""
    strat = get(strategy)
    values = strat.resolve(n, params)
    n = int(n)
    _check_request(strat, workers, retries)
    depth = split_depth(strat, n, values, depth)
    boards = expansion(n, depth, strat.name)
    label = describe(strat.name, n, values)
    with connect(cluster, strat, workers) as client:
        address, dashboard, nworkers = _workers_of(client, strat)
        run = _Run(label, strat, n, values, depth, retries, timeout, on_task)
        run.plan(len(boards), tasks, nworkers, checkpoint)
        run.progress(progress, dashboard, address, nworkers, checkpoint)
        setup = run.open_sessions(client)
        t0 = time.perf_counter()
        run.submit_and_gather(client)
        wall = time.perf_counter() - t0
    total = multiplier(boards) * sum(r["count"] for r in run.results.values())
    expected = known_count(n)
    if total != expected:
        where = (
            f"; the checkpoint {checkpoint} may hold a wrong count"
            if run.results and run.ck and run.ck.done
            else ""
        )
        raise CountMismatchError(
            f"{label} on a cluster counted {total}, expected {expected}{where}"
        )
    return ClusterRecord.build(
        tasks=list(run.results.values()),
        wall_s=wall,
        setup_s=setup,
        strategy=strat.name,
        n=n,
        params=values,
        depth=depth,
        boards=len(boards),
        unit=strat.part_unit,
        count=total,
        expected=expected,
        verified=True,
        cluster=address,
        dashboard=dashboard,
        checkpoint=checkpoint,
    )


def _check_request(strat: Strategy, workers: int | None, retries: int) -> None:
    if not supports_parts(strat):
        able = ", ".join(s for s in _part_strategies())
        raise InputError(
            f"strategy {strat.name} cannot run on a cluster (strategies that can: {able})"
        )
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be >= 1, got {workers}")
    if retries < 0:
        raise InputError(f"--retries must be >= 0, got {retries}")


def _gpu_workers(client) -> list[str]:
    """The addresses of the cluster's workers with the resource GPU=1."""
    workers = client.scheduler_info().get("workers", {})
    return [a for a, w in workers.items() if w.get("resources", {}).get("GPU", 0) >= 1]


def _workers_of(client, strat: Strategy) -> tuple[str, str | None, int]:
    """The scheduler's address, its dashboard and the workers that can run ``strat``
    (for a GPU strategy: those with the resource GPU=1; UnavailableError if none)."""
    address = client.scheduler.address
    if strat.needs_gpu:
        workers = _gpu_workers(client)
        if not workers:
            raise UnavailableError(
                f"{strat.name} needs GPU workers: the cluster at {address} has no worker with the "
                "resource GPU=1 (start them with dask worker ... --resources GPU=1)"
            )
    else:
        workers = list(client.scheduler_info().get("workers", {}))
    return address, dashboard_of(client), len(workers) or 1


class _Run:
    """One clustered count: its task plan, the results arrived (and checkpointed) so far,
    its progress, and the submission of the tasks still to do."""

    def __init__(self, label, strat, n, values, depth, retries, timeout, on_task):
        self.label, self.strat, self.n, self.values, self.depth = label, strat, n, values, depth
        self.retries, self.timeout, self.on_task = retries, timeout, on_task
        self.results: dict[int, dict[str, Any]] = {}
        self.ck = None
        self.bar = None
        self.already = 0

    def plan(self, boards: int, tasks: int | None, nworkers: int, checkpoint: str | None) -> None:
        """The tasks (the checkpoint's plan when resuming one), and the results it holds."""
        if checkpoint and tasks is None and os.path.exists(checkpoint):
            from .checkpoint import load

            tasks = load(checkpoint).tasks  # resume with the checkpoint's plan
        self.task_list = plan(boards, tasks or TASKS_PER_WORKER * nworkers)
        self.key = plan_hash(self.n, self.depth, boards, self.task_list)
        if checkpoint:
            self.ck = open_checkpoint(
                checkpoint,
                self.n,
                self.strat.name,
                self.values,
                self.depth,
                len(self.task_list),
                self.key,
            )
        if self.ck:
            for index, entry in self.ck.done.items():
                self.results[index] = {**entry, "index": index, "resumed": True}
        self.already = len(self.results)

    def progress(
        self, progress, dashboard: str | None, address: str, nworkers: int, checkpoint: str | None
    ) -> None:
        self.bar = Progress(total=len(self.task_list)) if progress is True else (progress or None)
        if self.bar:
            if dashboard:
                self.bar.message(f"nqprof: Dask dashboard at {dashboard}")
            self.bar.message(
                f"nqprof: {self.label} on {address}: "
                f"{plural(len(self.task_list), 'task')} over {plural(nworkers, 'worker')}"
                + (
                    f", {len(self.results)} done before (checkpoint {checkpoint})"
                    if self.results
                    else ""
                )
            )

    def open_sessions(self, client) -> float | None:
        """Open the part session of every GPU worker at once, before the clock starts: a
        worker's process, context and module are its own start, paid once, not its first
        task's (kept from task to task after). The seconds that took (None: no GPU run, or
        nothing left to count). A worker that fails here fails its first task the same way."""
        from .work import open_session

        if not self.strat.needs_gpu or len(self.results) == len(self.task_list):
            return None
        t0 = time.perf_counter()
        try:
            client.run(
                open_session,
                self.strat.name,
                self.n,
                self.values,
                self.timeout,
                workers=_gpu_workers(client),
            )
        except Exception:  # its tasks meet the failure again and report it with retries
            pass
        return time.perf_counter() - t0

    def submit_and_gather(self, client) -> None:
        """Submit every task not done yet, take each result as it arrives; on any failure
        cancel the rest. The workers' part sessions are released in the end."""
        from distributed import as_completed

        from .work import count_task

        resources = {"GPU": 1} if self.strat.needs_gpu else None
        run_id = uuid.uuid4().hex[:8]  # a resumed or repeated run gets keys of its own
        futures = {
            client.submit(
                count_task,
                self.strat.name,
                self.n,
                self.values,
                self.depth,
                task,
                self.timeout,
                key=f"nqprof-{self.key}-{run_id}-{task.index}",
                retries=self.retries,
                resources=resources,
                pure=False,
            ): task
            for task in self.task_list
            if task.index not in self.results
        }
        try:
            for future in as_completed(futures):
                self._take(futures[future], future)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        finally:
            _release_workers(client)

    def _take(self, task, future) -> None:
        """One finished task: its result checked against the plan, kept, checkpointed."""
        from distributed.client import FutureCancelledError

        label = self.label
        try:
            result = future.result()
        except FutureCancelledError:
            raise
        except NqprofError as exc:
            raise type(exc)(
                f"{label}: task {task.index} failed after "
                f"{plural(self.retries, 'retry', 'retries')}: {exc}"
            ) from None
        except Exception as exc:  # KilledWorker and the like: no worker could finish it
            raise WatchdogError(
                f"{label}: task {task.index} failed ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''})"
            ) from None
        if result["boards"] != task.boards:
            raise NqprofError(
                f"{label}: task {task.index} counted {result['boards']} boards, the plan has "
                f"{task.boards} (does the worker run another nqprof version?)"
            )
        self.results[task.index] = result
        if self.ck:
            self.ck.record(task.index, {k: v for k, v in result.items() if k != "index"})
        if self.bar:
            self.bar.tasks(len(self.results), self.already)
        if self.on_task:
            self.on_task(result, len(self.results), len(self.task_list))


def _release_workers(client) -> None:
    """Close the workers' part sessions (a GPU session holds its context and memory)."""
    from .work import release_idle

    try:
        client.run(release_idle)
    except Exception:  # a worker that is gone holds nothing
        pass


def _part_strategies() -> list[str]:
    from ..strategies import all_strategies

    out = []
    for s in all_strategies():
        if supports_parts(s):
            out.append(s.name)
    return out
