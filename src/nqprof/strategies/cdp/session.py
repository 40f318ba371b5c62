"""The session every CDP strategy runs in: limits sized and set before anything is built
or launched (:mod:`.limits`), the host-launched generation in its NVTX range timed with
CUDA events, and the device-side accounting decoded and checked after each round
(:mod:`.accounting`)."""

from __future__ import annotations

from typing import Any

from ...result import Measurement
from ...subproblems import BOARD_UPLOAD_BYTES, expand
from ..gpu_common import COUNTER_BYTES, GpuSession
from .accounting import WORDS, decode_accounting, raise_on_failures
from .limits import configure_runtime
from .model import Demand
from .params import launch_defines
from .timeline import DeviceTimeline, capacity_for, timeline_defines

class CdpSession(GpuSession):
    """Base of the CDP strategies' sessions.

    Preparation, in order: expand the host boards; size the limits (before anything is
    built or launched; an InputError if the run does not fit); set them; build the kernels;
    upload the boards; allocate the accounting. Each round: zero the accounting, launch the
    host grid inside ``generation(0)`` (NVTX range + CUDA events), decode the accounting,
    fail on any device failure, and return the count with the per-generation statistics.

    Subclasses set ``source``, ``root_kernel``, ``child_kernels`` and implement
    :meth:`demand` (the estimate) and :meth:`launch_root`.
    """

    source: str = ""
    root_kernel: str = ""
    child_kernels: tuple[str, ...] = ()

    def __init__(self, strategy_name: str, n: int, params: dict[str, Any]):
        super().__init__(strategy_name, n, params)
        try:
            self._prepare_run(strategy_name, n, params)
        except BaseException:
            self.close()
            raise

    def _prepare_run(self, strategy_name: str, n: int, params: dict[str, Any]) -> None:
        self.label = f"{strategy_name} N={n}"
        self.host = expand(n, params["depth"])
        free, _ = self.drv.mem_get_info()
        board_bytes = len(self.host) * BOARD_UPLOAD_BYTES + WORDS * COUNTER_BYTES
        demand = self.demand()
        self.limits = configure_runtime(
            self.label,
            demand,
            free,
            pending=params.get("pending", 0),
            heap_mib=params.get("heap_mib", 0) if "heap_mib" in params else None,
            extra_bytes=board_bytes,
        )
        self.gpu.set_limits(pending_launches=self.limits.pending, heap_bytes=self.limits.heap_bytes)
        module = self.build(self.source, {**launch_defines(params), **timeline_defines(params)})
        self.root = module.function(self.root_kernel)
        self.children = {name: module.function(name) for name in self.child_kernels}
        self.module = module
        self.boards = self.upload(self.host)
        self.acct = self.counter(WORDS)
        self.timeline = None
        if params.get("timeline"):
            capacity = capacity_for(demand.launches if demand else None, self.limits.pending)
            self.timeline = DeviceTimeline(self.drv, module.module, capacity, self.boards.count)
            self.notes.append(f"device timeline: room for {capacity:,} grid records")
        self.notes.append(f"{self.boards.count} host boards at depth {params['depth']}")
        self.notes.append(self.limits.describe())
        self.prepare()

    # -- what a strategy provides ------------------------------------------------------
    def demand(self) -> Demand | None:
        """The estimate of what the run needs (None where there is none)."""
        raise NotImplementedError

    def prepare(self) -> None:
        """Anything after the build: shared-memory attributes, grid shapes."""

    def launch_root(self) -> None:
        """Launch the host grid (generation 0) over ``self.boards``."""
        raise NotImplementedError

    # -- helpers ---------------------------------------------------------------------------
    def allow_dynamic_shared(self, name: str, dynamic_bytes: int) -> None:
        """Record and allow ``dynamic_bytes`` of dynamic shared memory for kernel ``name``."""
        func = self.root if name == self.root_kernel else self.children[name]
        self.module.kernels[name]["dynamic_shared_bytes"] = int(dynamic_bytes)
        self.allow_shared(func, int(dynamic_bytes))

    # -- a round ---------------------------------------------------------------------------
    def run_once(self) -> Measurement:
        self.drv.memset_d32(self.acct, 0, 2 * WORDS)
        if self.timeline:
            self.timeline.reset()
        with self.generation(0) as timer:
            self.launch_root()
        acct = decode_accounting(self.read_u64(self.acct, WORDS), host_boards=self.boards.count)
        self.ran()
        raise_on_failures(acct, self.limits, self.label)
        count = acct.solutions * self.boards.multiplier
        stats = acct.stats()
        if self.timeline:
            stats["timeline"] = self.timeline.read()
        return Measurement(count=count, wall_s=timer.wall_seconds, gpu_s=timer.seconds, stats=stats)
