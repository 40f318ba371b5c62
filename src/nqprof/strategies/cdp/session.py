"""The session every CDP strategy runs in: the plan (:mod:`.plan`: limits and chunk size)
decided and the limits set before anything is built or launched, the host-launched
generation in its NVTX range timed with CUDA events (chunk by chunk, each in a nested range,
when the plan does not fit at once), and the device-side accounting decoded, summed over the
chunks and checked after each round (:mod:`.accounting`). With ``launch=record`` the
launches of generation 1 are recorded, then replayed from the host in an NVTX range of
their own (:mod:`.replay`)."""

from __future__ import annotations

from typing import Any

from ...cuda.nvtx import nvtx_range
from ...cuda.sources import KernelSource
from ...errors import DeviceFailureError, InputError
from ...result import Measurement
from ...subproblems import BOARD_UPLOAD_BYTES, expand
from ...textfmt import nbytes
from ..gpu_common import COUNTER_BYTES, GpuSession
from .accounting import WORDS, decode_accounting, raise_on_failures
from .chunks import ChunkBoards, merge_accounting
from .limits import MAX_PENDING
from .model import BOARD_BYTES, GenerationStats
from .params import launch_defines, measurement_build
from .plan import Reserve, make_plan
from .recursions import region_boards
from .replay import LaunchRecords, replay, summary
from .replay import capacity_for as records_for
from .replay import check as check_records
from .timeline import DeviceTimeline, capacity_for, timeline_defines


def root_and_child(stem: str) -> tuple[str, str, tuple[str, ...]]:
    """``source``, ``root_kernel`` and ``child_kernels`` of a session whose source
    ``<stem>.cu`` holds a host-launched ``<stem>_root`` and one device-launched
    ``<stem>_child`` (the names condensed.cuh's CONDENSED_KERNELS gives)."""
    return f"{stem}.cu", f"{stem}_root", (f"{stem}_child",)


class CdpSession(GpuSession):
    """Base of the CDP strategies' sessions.

    Preparation, in order: expand the host boards; make the plan from the strategy's
    ``recursion`` (limits and chunk size, before anything is built or launched; an
    InputError if not even one host board per chunk fits); set the limits (not with
    ``config=default``); build the kernels; upload the boards (or allocate one chunk's
    buffers); allocate the accounting. Each round: zero the accounting, launch the host grid
    inside ``generation(0)`` (NVTX range + CUDA events) -- chunk by chunk when the plan says
    so -- decode the accounting, fail on any device failure, and return the count with the
    per-generation statistics.

    With ``launch=record`` (not chunked, not with ``timeline=1``) each round then checks the
    records of generation 1's launches against the accounting and launches every recorded
    grid of the strategy's ``child_kernel`` from the host, inside ``generation(1, "replay
    of generation")``; the accounting read after it adds the children's own work.

    Subclasses set ``source``, ``root_kernel``, ``child_kernels`` (the strategy's kernel
    source is derived from them; :func:`root_and_child` where they follow one stem) and
    implement :meth:`launch_root` (over ``self.boards``: all host boards, or the current
    chunk; a thread a board: :meth:`launch_host_grid`). A session is opened by its strategy
    (:class:`~nqprof.strategies.cdp.strategy.CdpStrategy`), which it is handed.
    """

    source: str = ""
    root_kernel: str = ""
    child_kernels: tuple[str, ...] = ()
    #: Sources it loads beside its own (the strategy declares them after its own).
    extra_sources: tuple[KernelSource, ...] = ()
    #: The host grid's dynamic shared memory (:meth:`allow_root_shared` sets it).
    root_shared: int = 0

    def __init__(self, strategy, n: int, params: dict[str, Any]):
        super().__init__(strategy.name, n, params)
        self.strategy = strategy
        try:
            self._prepare_run(strategy.name, n, params)
        except BaseException:
            self.close()
            raise

    def _prepare_run(self, strategy_name: str, n: int, params: dict[str, Any]) -> None:
        self.label = f"{strategy_name} N={n}"
        self.recording = params.get("launch") == "record"
        if self.recording and params.get("timeline"):
            raise InputError(
                f"{self.label}: launch=record and timeline=1 do not go together (the replayed "
                "grids are host-launched, outside the device timeline): give one of them"
            )
        self.child_kernel = self.strategy.child_kernel
        self.host = expand(n, params["depth"])
        self._plan_and_set_limits(n, params)
        # Both follow the host grid's one launch; a chunked run has several (refused before the
        # build).
        for option, wanted, verb in (
            ("timeline=1", params.get("timeline"), "records"),
            ("launch=record", self.recording, "replays"),
        ):
            if wanted and self.plan.chunked:
                raise InputError(
                    f"{self.label}: {option} {verb} one launch of the host grid; this run is "
                    f"launched in {self.plan.chunks} chunks (give chunk= larger, or a smaller N)"
                )
        self._load(params)
        self.notes.append(f"{len(self.host)} host boards at depth {params['depth']}")
        self.notes.append(self.limits.describe())
        self.notes.append(self.plan.summary())
        self.notes.extend(self.plan.notes)
        self.prepare()

    def _plan_and_set_limits(self, n: int, params: dict[str, Any]) -> None:
        """The plan (Carneiro et al.): limits and chunk size from the whole recursion, before
        anything is built or launched (an InputError if not even one board per chunk fits);
        then the limits set, and planned again within what this device's runtime takes."""
        free, _ = self.drv.mem_get_info()
        recursion = self.recursion(n, params)

        def plan(max_pending: int = MAX_PENDING):
            return make_plan(
                recursion,
                free,
                params,
                label=self.label,
                board_bytes=BOARD_UPLOAD_BYTES,
                counter_bytes=WORDS * COUNTER_BYTES,
                reserve=Reserve(modules=1),
                free_source="measured on the device after the context was created",
                max_pending=max_pending,
            )

        self.plan = plan()
        self.limits = self.plan.limits
        if self.plan.config == "default":
            return
        self.gpu.set_limits(pending_launches=self.limits.pending, heap_bytes=self.limits.heap_bytes)
        taken = self.gpu.read_limits()["pending_launches"]
        if (
            taken < self.limits.pending
        ):  # this device's runtime takes less: plan within what it takes
            self.notes.append(
                f"the runtime took a pending-launch limit of {taken:,} for {self.limits.pending:,}"
            )
            self.plan = plan(max_pending=taken)
            self.limits = self.plan.limits
            self.gpu.set_limits(
                pending_launches=self.limits.pending, heap_bytes=self.limits.heap_bytes
            )

    def _load(self, params: dict[str, Any]) -> None:
        """Build and load the module, upload the boards (or allocate one chunk's buffers),
        allocate the accounting and, when asked for, the timeline's or the launch records'."""
        module = self.build(
            self.strategy.sources[0], {**launch_defines(params), **timeline_defines(params)}
        )
        self.reserve_measured = self._measure_reserve()
        self.root = module.function(self.root_kernel)
        self.children = {name: module.function(name) for name in self.child_kernels}
        self.module = module
        if self.plan.chunked:  # each chunk is copied in inside the timed generation
            with nvtx_range(f"{self.label} chunk buffers for {self.plan.chunk} boards"):
                self.boards = ChunkBoards(self.drv, self.host, self.plan.chunk)
        else:
            self.boards = self.upload(self.host)
        self.acct = self.counter(WORDS)
        self.timeline = None
        if params.get("timeline"):
            capacity = capacity_for(None, self.limits.pending)
            self.timeline = DeviceTimeline(self.drv, module.module, capacity, len(self.host))
            self.notes.append(f"device timeline: room for {capacity:,} grid records")
        self.records = None
        if self.recording:
            self.records = LaunchRecords(self.drv, module.module, records_for(self.plan))
            self.notes.append(
                f"launch=record: room for {self.records.capacity:,} launches of generation 1, "
                f"replayed from the host as {self.child_kernel} grids (their own launches not made)"
            )

    # -- what a strategy provides ------------------------------------------------------
    def recursion(self, n: int, params: dict[str, Any]):
        """What the plan needs: the strategy's recursion over this session's host boards."""
        return self.strategy.recursion(n, params, len(self.host))

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

    def allow_root_shared(self, dynamic_bytes: int) -> None:
        """The host grid's dynamic shared memory: kept as ``root_shared`` (what
        :meth:`launch_host_grid` launches it with) and allowed."""
        self.root_shared = dynamic_bytes
        self.allow_dynamic_shared(self.root_kernel, self.root_shared)

    def launch_host_grid(self, *args) -> None:
        """Launch the host grid over ``self.boards``, one thread per board in blocks of the
        ``block`` parameter, with ``root_shared`` bytes of dynamic shared memory: the kernel
        takes the boards' arrays and N, then ``args``."""
        import numpy as np

        block = self.params["block"]
        self.root(
            *self.boards.args(),
            np.int32(self.n),
            *args,
            block=(block, 1, 1),
            grid=self.grid_for(self.boards.count, block),
            shared=self.root_shared,
        )

    def preallocate_regions(self, row: int | None) -> None:
        """CDP-BP and CDP-DP3: generation 1's boards (those of row ``row``; None: the run has
        no generation 1) go into regions the host allocates, one per block of the largest
        chunk's host grid, each of the plan's bound (``region_boards``), so that generation 1
        needs no device malloc. Sets ``region`` (boards per region) and ``regions``."""
        p = self.params
        self.region = region_boards(self.n, p["depth"], row, p["block"]) if row is not None else 0
        blocks = -(-self.plan.chunk // p["block"])
        self.regions = self.drv.mem_alloc(max(1, blocks * self.region * BOARD_BYTES))
        self.gpu.ledger.mark("child boards")
        self.notes.append(
            f"generation 1's boards preallocated: {blocks} "
            f"blocks x {self.region:,} boards x {BOARD_BYTES} B"
        )

    def launch_into_regions(self, search: int, last: int) -> None:
        """CDP-BP's and CDP-DP3's host grid (block_launch.cuh's BLOCK_ROOT_PARAMS, then the
        kernel's own int ``last``): ``search`` rows below each board, generation 1's boards
        written into the regions :meth:`preallocate_regions` allocated."""
        import numpy as np

        self.launch_host_grid(
            np.int32(search),
            self.regions,
            np.uint32(self.region),
            np.int32(self.params["child_block"]),
            self.acct,
            np.int32(last),
        )

    # -- a round ---------------------------------------------------------------------------
    def run_once(self) -> Measurement:
        if self.timeline:
            self.timeline.reset()
        replayed = None
        if not self.plan.chunked:
            self.drv.memset_d32(self.acct, 0, 2 * WORDS)
            if self.records:
                self.records.reset()
            with self.generation(0) as timer:
                self.launch_root()
            words = self.read_u64(self.acct, WORDS)
            if self.records:
                replayed, words = self._replay(words)
        else:
            words = None
            ranges = self.plan.chunk_ranges()
            # each chunk's accounting is read before the next: the region waits for the GPU
            # inside itself, timed without the stream hold
            with self.generation(0, hold=False) as timer:
                for i, (lo, hi) in enumerate(ranges):
                    # one chunk: copy its boards in, launch its root grid, read its accounting
                    with nvtx_range(
                        f"{self.label} chunk {i + 1}/{len(ranges)} ({hi - lo} boards)", payload=i
                    ):
                        self.boards.load(lo, hi)
                        self.drv.memset_d32(self.acct, 0, 2 * WORDS)
                        self.launch_root()
                        chunk = self.read_u64(self.acct, WORDS)
                    words = merge_accounting(words, chunk)
                    failed = decode_accounting(chunk, host_boards=hi - lo)
                    if failed.failed:  # later chunks cannot make the count right
                        self._fail(failed, f"{self.label} chunk {i + 1}/{len(ranges)}")
        acct = decode_accounting(words, host_boards=len(self.host))
        if self.plan.chunked:
            per = self.plan.boards_per_chunk()
            acct.generations[0] = GenerationStats(0, len(per), sum(per), min(per), max(per))
        self.ran()
        self._fail(acct, self.label)
        count = acct.solutions * self.boards.multiplier
        stats = acct.stats()
        if self.timeline:
            stats["timeline"] = self.timeline.read()
        if replayed is not None:
            stats["replay"] = replayed
        return Measurement(count=count, wall_s=timer.wall_seconds, gpu_s=timer.seconds, stats=stats)

    def _replay(self, words):
        """launch=record: check the host grid's round and its records of generation 1, then
        launch every recorded grid from the host. Returns the replay's summary and the
        accounting read after it (the host grid's and the replayed children's)."""
        label = f"{self.label} launch=record"
        root = decode_accounting(words, host_boards=len(self.host))
        self._fail(root, f"{label} (host grid)")
        recorded = self.records.read()
        grids = next((g.grids for g in root.generations if g.generation == 1), 0)
        problem = check_records(recorded, grids, label)
        if problem:
            raise DeviceFailureError(problem)
        func = self.children[self.child_kernel]
        with self.generation(1, "replay of generation") as timer:
            count = replay(func, recorded["records"])
        return summary(recorded, count, self.child_kernel, timer.seconds), self.read_u64(
            self.acct, WORDS
        )

    def _measure_reserve(self) -> dict[str, int] | None:
        """What loading the module (linked with cudadevrt, under the limits just set) took
        from free device memory, beside what the plan assumed for it."""
        marks = getattr(self.gpu.ledger, "marks", [])
        if len(marks) < 2:
            return None
        took = int(marks[-2][1] - marks[-1][1])
        pending = self.limits.pending
        planned = self.plan.reserve.module_bytes + pending * self.plan.reserve.slot_bytes
        self.notes.append(
            f"runtime reserve: loading the module took {nbytes(took, 'MiB')} at a pending-launch "
            f"limit of {pending:,}; the plan assumed {nbytes(planned, 'MiB')}"
        )
        return {"module_load_bytes": took, "planned_bytes": planned, "pending_launches": pending}

    def _fail(self, acct, label: str) -> None:
        """Raise the DeviceFailureError of a round with a device failure (none otherwise)."""
        try:
            raise_on_failures(acct, self.limits, label)
        except DeviceFailureError as exc:
            if self.plan.config != "default":
                raise
            raise DeviceFailureError(
                f"{exc} (launched with config=default, the runtime's defaults: 2,048 pending "
                "launches and an 8 MiB heap, as Carneiro et al. without configuration; "
                "config=carneiro sizes them from the plan)"
            ) from None

    def info(self) -> dict[str, Any]:
        return {
            **super().info(),
            "plan": {**self.plan.as_dict(), "reserve_measured": self.reserve_measured},
            "measurement_build": measurement_build(self.params),
        }
