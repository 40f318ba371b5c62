"""devgraph: N-Queens generations launched as CUDA graphs, from the host or from the device.

The host expands the first ``depth`` rows; then each generation takes every board of the
current frontier and places ``step`` more rows (a breadth-first step into the other frontier
buffer), until the frontier reaches row ``final``; the last generation finishes every board
with the bitmask DFS of ``kernels/common.cuh``. The generations are the same kernel
(``dg_step``, kernels/devgraph.cu) under every ``driver``, so that the drivers differ only in
how generations are launched:

==========  ===============================================================================
``host``    the host loop: per generation the host reads the frontier's size back, launches
            ``dg_step`` with a grid sized for it (at most ``grid`` blocks) and ``dg_advance``
``while``   one host-launched graph with a WHILE conditional node (CUDA 12.3+) whose body is
            ``dg_step`` (``grid`` blocks, grid-stride) and ``dg_advance_while``, which sets
            the condition from the device
``device``  device graph launch (CUDA 12.0+): a one-thread scheduler graph reads the
            frontier's size, launches the pre-instantiated device-launchable graph of
            ``dg_step`` whose grid (1, 2, 4, ... up to ``grid`` blocks) covers it,
            fire-and-forget, and tail-launches its own graph, until no generation is left
==========  ===============================================================================

The frontier buffers are sized by nqprof's exact host model (boards per row of the search
tree, :data:`~nqprof.strategies.cdp.model.ROW_BOARDS`), and the device's count of boards in
each generation is checked against it. Every device graph launch's return code is counted: a
failed one is an error naming the error, never a count. The graph layer is
:mod:`nqprof.cuda.graphs` (cuda-bindings, the ``graphs`` extra); ``driver=host`` needs only
PyCUDA. docs/devgraph.md has the measurements.

A toolkit older than CUDA 12.3 has no conditional nodes: it builds ``devgraph.cu`` without
``dg_advance_while`` (the source's ``since``), the ``host`` and ``device`` drivers run as
ever, and ``driver=while`` is refused as unavailable (:func:`driver_unavailable`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..cuda.nvtx import nvtx_range
from ..cuda.sources import KernelSource
from ..errors import DeviceFailureError, InputError, UnavailableError
from ..result import Measurement
from ..subproblems import expand
from ..textfmt import plural
from .base import Param, Strategy, block_param
from .counters import CounterLayout
from .gpu_common import COUNTER_BYTES, GpuSession

if TYPE_CHECKING:
    import numpy as np

# The state words of kernels/devgraph.cu (DG_*); tests/test_devgraph.py compares them.
SOLUTIONS, COUNT0, COUNT1, PARITY, ROW, GEN, DONE, OVERFLOW = 0, 1, 2, 3, 4, 5, 6, 7
LAUNCHES, LAUNCH_FAILURES, FIRST_ERROR, SCHED_RUNS = 8, 9, 10, 11
GEN_BASE, GEN_WORDS, MAX_GEN = 16, 2, 48
WORDS = GEN_BASE + GEN_WORDS * MAX_GEN
MAX_STEP = 8
#: Bytes of one frontier board on the device (cols, ld, rd; the row is the generation's).
FRONTIER_BOARD_BYTES = 12
DRIVERS = ("host", "while", "device")
MASK_BYTES = 4

#: The kernels each driver launches (a session fetches only these from the module).
DRIVER_KERNELS = {
    "host": ("dg_step", "dg_advance"),
    "while": ("dg_step", "dg_advance_while"),
    "device": ("dg_step", "dg_schedule"),
}

#: kernels/devgraph.cu. ``dg_advance_while`` sets a WHILE conditional node's condition
#: (``cudaGraphSetConditional``), an API CUDA's headers have from 12.3 on (12.2's lack it);
#: the source guards it with ``#if CUDART_VERSION >= 12030``.
SOURCE = KernelSource(
    "devgraph.cu",
    cdp=True,
    kernels=(
        "dg_step",
        "dg_advance",
        "dg_advance_while",
        "dg_schedule",
        "dg_char_empty",
        "dg_char_launch",
        "dg_lat_child",
        "dg_lat_launch",
        "dg_lat_while",
    ),
    since={"dg_advance_while": "12.3", "dg_lat_while": "12.3"},
)

LAYOUT = CounterLayout(
    "devgraph.cu",
    "DG_",
    {
        "SOLUTIONS": SOLUTIONS,
        "COUNT0": COUNT0,
        "COUNT1": COUNT1,
        "PARITY": PARITY,
        "ROW": ROW,
        "GEN": GEN,
        "DONE": DONE,
        "OVERFLOW": OVERFLOW,
        "LAUNCHES": LAUNCHES,
        "LAUNCH_FAILURES": LAUNCH_FAILURES,
        "FIRST_ERROR": FIRST_ERROR,
        "SCHED_RUNS": SCHED_RUNS,
    },
    WORDS,
    constants={
        "GEN_BASE": GEN_BASE,
        "GEN_WORDS": GEN_WORDS,
        "MAX_GEN": MAX_GEN,
        "MAX_STEP": MAX_STEP,
    },
)


def _default_final(n: int, earlier) -> int:
    """min(7, N-1)"""
    return min(n, max(earlier["depth"], min(7, n - 1)))


def schedule(n: int, depth: int, step: int, final: int) -> list[tuple[int, int]]:
    """(row, rows placed) per generation: expansions by ``step`` rows from ``depth`` up to
    ``final``, then the DFS generation (rows placed: the rest, N - final)."""
    out, row = [], depth
    while row < final:
        k = min(step, final - row)
        out.append((row, k))
        row += k
    out.append((final, n - final))
    return out


def frontier_rows(n: int, depth: int, step: int, final: int) -> list[int]:
    """The row of each generation's frontier (the host boards' first)."""
    return [row for row, _ in schedule(n, depth, step, final)]


def boards_at(n: int, row: int) -> int:
    """Boards at ``row`` of the mirror-reduced tree: the model's table, or the host expansion."""
    from .cdp.model import MAX_TABLE_N, ROW_BOARDS

    if n <= MAX_TABLE_N:
        return ROW_BOARDS[n][row - 1] if row >= 1 else 1
    return len(expand(n, row))


def capacity(n: int, depth: int, step: int, final: int) -> int:
    """Boards a frontier buffer must hold: the largest frontier after the host's."""
    rows = frontier_rows(n, depth, step, final)[1:]
    return max([boards_at(n, r) for r in rows if r < n] + [1])


def buckets(grid: int) -> list[int]:
    """The grids (blocks) of the device driver's pre-instantiated graphs: 1, 2, 4, ... and
    ``grid``."""
    out, b = [], 1
    while b < grid:
        out.append(b)
        b *= 2
    return out + [grid]


def grid_for_driver(driver: str, boards: int, block: int, grid: int) -> int:
    """The blocks a generation over ``boards`` boards gets under ``driver``."""
    need = max(1, -(-boards // block))
    if driver == "host":
        return min(need, grid)
    if driver == "while":
        return grid
    return next((b for b in buckets(grid) if b >= need), grid)


class DevGraph(Strategy):
    name = "devgraph"
    order = 80
    # the generations launched by a host loop, a WHILE conditional node, or device graph launch
    title = "generations launched as CUDA graphs"
    reference = "CUDA device graph launch (12.0) and conditional nodes (12.3); nqprof issue 25"
    device = "gpu"
    # Not a CDP strategy (no kernel launches from the device; none of CDP's launch= variants);
    # its module still links cudadevrt (device graph launch is the device runtime's), and it
    # has a plan (``recursion``), which `nqprof plan` prints.
    cdp = False
    min_n = 4
    sources = (SOURCE,)
    counters = LAYOUT
    params = (
        Param(
            "driver",
            "host loop, WHILE node, device",
            default="device",
            choices=DRIVERS,
            range_text="3 drivers",
        ),
        Param(
            "depth",
            "rows expanded on the host",
            default=2,
            lo=2,
            hi=lambda n: n - 1,
            range_text="2..N-1",
        ),
        Param("step", "rows placed per generation", default=1, lo=1, hi=MAX_STEP),
        Param(
            "final",
            "row where the DFS takes over",
            default=_default_final,
            derived=True,
            lo=2,
            hi=lambda n: n,
            range_text="depth..N",
        ),
        block_param(128),
        Param("grid", "largest grid, then strided", default=4096, lo=1, hi=1 << 20),
    )

    def check(self, n, params):
        if params["final"] < params["depth"]:
            raise InputError(
                f"devgraph: final ({params['final']}) must be >= depth ({params['depth']})"
            )
        gens = len(schedule(n, params["depth"], params["step"], params["final"]))
        if gens >= MAX_GEN:
            raise InputError(
                f"devgraph: {gens} generations, over the "
                f"kernel's table of {MAX_GEN - 1}: raise step"
            )

    def recursion(self, n: int, params: dict, host_boards: int):
        """What the run needs, for the plan (``nqprof plan N -s devgraph``)."""
        from .cdp.model import Demand
        from .cdp.plan import Generation, Recursion, growth_bound

        depth, step, final = params["depth"], params["step"], params["final"]
        gens = []
        for g, (row, k) in enumerate(schedule(n, depth, step, final)):
            dfs = row >= final
            gens.append(
                Generation(
                    g,
                    row,
                    k,
                    host_boards * growth_bound(n, depth, row) if row > depth else host_boards,
                    1,
                    boards_at(n, row) if row > depth else host_boards,
                    1,
                    "DFS to the last row"
                    if dfs
                    else f"expand {plural(k, 'row')} into the other buffer",
                )
            )
        cap = capacity(n, depth, step, final)
        launches = 2 * len(gens)

        def demand(c: int) -> Demand:
            return Demand(
                pending=2,
                heap_bytes=None,
                launches=launches,
                basis=f"driver={params['driver']}: one generation's graph (fire-and-forget) and "
                "the scheduler's tail launch pending at once; no device malloc",
                advice="lower final or step (the frontier buffers are what grows)",
            )

        def host_bytes(c: int) -> int:
            return (
                2 * FRONTIER_BOARD_BYTES * cap
                + FRONTIER_BOARD_BYTES * host_boards
                + COUNTER_BYTES * WORDS
            )

        return Recursion(
            self.name,
            n,
            host_boards,
            gens,
            demand,
            host_bytes,
            uses_heap=False,
            notes=(
                f"two frontier buffers of {cap:,} boards ({FRONTIER_BOARD_BYTES} "
                f"B each), from the exact model; driver={params['driver']}",
            ),
        )

    def open(self, n, params):
        return DevGraphSession(self.name, n, params)


def driver_unavailable(driver: str, toolkit: str) -> str | None:
    """Why a module built by CUDA ``toolkit`` cannot run ``driver`` (a kernel it launches
    is one that toolkit leaves out, :attr:`KernelSource.since`), or None."""
    for kernel in DRIVER_KERNELS[driver]:
        if not SOURCE.available(kernel, toolkit):
            since = SOURCE.since[kernel]
            return f"devgraph driver={driver} needs CUDA {since}+ (this build: {toolkit})"
    return None


def driver_functions(module, driver: str) -> dict[str, Any]:
    """The kernels ``driver`` launches, by name, from ``module`` (a
    :class:`~nqprof.cuda.build.BuiltModule`). UnavailableError where the module's toolkit
    left one of them out; the others are not asked for, since a module built by an older
    toolkit lacks them and every kernel asked for goes into the run record."""
    reason = driver_unavailable(driver, module.toolkit_version)
    if reason:
        raise UnavailableError(reason)
    return {kernel: module.function(kernel) for kernel in DRIVER_KERNELS[driver]}


def first_error_name(code: int) -> str:
    from .cdp.accounting import error_name

    return error_name(code)


class DevGraphSession(GpuSession):
    def __init__(self, name, n, params):
        super().__init__(name, n, params)
        try:
            self._open(n, params)
        except BaseException:
            self.close()
            raise

    def _open(self, n, params):
        import numpy as np

        from ..subproblems import BOARD_UPLOAD_BYTES
        from .cdp.plan import make_plan

        self.driver = params["driver"]
        self.depth, self.step, self.final = params["depth"], params["step"], params["final"]
        self.block, self.max_grid = params["block"], params["grid"]
        self.label = f"{self.name} N={n} driver={self.driver}"
        host = expand(n, self.depth)
        if int(host.row.min()) != int(host.row.max()):
            raise InputError(
                f"{self.label}: host boards at mixed rows (depth {self.depth}); use depth >= 2"
            )
        self.multiplier = host.multiplier
        self.host_count = len(host)
        self.sched = schedule(n, self.depth, self.step, self.final)
        self.cap = capacity(n, self.depth, self.step, self.final)
        free, _ = self.drv.mem_get_info()
        self.plan = make_plan(
            STRATEGY.recursion(n, params, self.host_count),
            free,
            params,
            label=self.label,
            board_bytes=BOARD_UPLOAD_BYTES,
            counter_bytes=WORDS * COUNTER_BYTES,
        )
        if self.plan.chunked:
            raise InputError(
                f"{self.label}: the frontier buffers ({self.cap:,} "
                "boards) do not fit in device memory: lower final"
            )
        self.notes.append(self.plan.summary())
        module = self.build(SOURCE)
        self.functions = driver_functions(module, self.driver)
        self.f_step = self.functions["dg_step"]
        self.levels = max(1, n - self.final)
        self.shared = 4 * self.levels * self.block * MASK_BYTES
        module.kernels["dg_step"]["dynamic_shared_bytes"] = self.shared
        self.allow_shared(self.f_step, self.shared)
        cap = max(self.cap, self.host_count)
        self.cap = cap
        self.frontier = self.drv.mem_alloc(6 * cap * MASK_BYTES)
        self.host_boards = self.drv.to_device(
            np.concatenate([host.cols, host.ld, host.rd]).astype(np.uint32)
        )
        self.state = self.counter(WORDS)
        self.gpu.ledger.mark("buffers")
        self.stream = self.drv.Stream()
        self.graphs = None
        self.step_args = (
            self.state,
            self.frontier,
            np.uint32(cap),
            np.int32(n),
            np.int32(self.step),
            np.int32(self.final),
            np.int32(self.levels),
        )
        self.adv_args = (self.state, np.uint32(cap), np.int32(self.step), np.int32(self.final))
        if self.driver != "host":
            self._make_graphs()
        self.notes.append(
            f"{self.host_count:,} host boards at depth {self.depth}; "
            f"{plural(len(self.sched), 'generation')} "
            f"(rows {', '.join(str(r) for r, _ in self.sched)}); frontier buffers of {cap:,} "
            f"boards; grid <= {self.max_grid} x {self.block}"
        )

    def _make_graphs(self) -> None:
        import numpy as np

        from ..cuda.graphs import GraphLayer

        self.graphs = g = GraphLayer(self.stream)
        before, _ = self.drv.mem_get_info()
        block = (self.block, 1, 1)
        if self.driver == "while":

            def body(stream, handle):
                self.f_step(
                    *self.step_args,
                    block=block,
                    grid=(self.max_grid, 1),
                    shared=self.shared,
                    stream=stream,
                )
                self.functions["dg_advance_while"](
                    *self.adv_args, np.uint64(handle), block=(1, 1, 1), grid=(1, 1), stream=stream
                )

            self.exe = g.instantiate(g.while_graph(body))
            self.stream.synchronize()
            self.notes.append(
                "one graph: WHILE node over [dg_step "
                f"{self.max_grid} x {self.block}, dg_advance_while]"
            )
        else:
            sizes = buckets(self.max_grid)
            execs = []
            for b in sizes:
                graph = g.capture(
                    lambda s, b=b: self.f_step(
                        *self.step_args, block=block, grid=(b, 1), shared=self.shared, stream=s
                    )
                )
                execs.append(g.instantiate(graph, device_launch=True))
            self.table = self.drv.to_device(np.array([g.handle(e) for e in execs], dtype=np.uint64))
            sched = g.capture(
                lambda s: self.functions["dg_schedule"](
                    self.state,
                    self.table,
                    np.int32(len(execs)),
                    np.uint32(self.block),
                    np.uint32(self.cap),
                    np.int32(self.step),
                    np.int32(self.final),
                    block=(1, 1, 1),
                    grid=(1, 1),
                    stream=s,
                )
            )
            self.exe = g.instantiate(sched, device_launch=True)
            self.stream.synchronize()
            self.notes.append(
                f"{len(execs)} device-launchable graphs of dg_step (grids "
                f"{sizes[0]}..{sizes[-1]} blocks) and the scheduler's"
            )
        after, _ = self.drv.mem_get_info()
        self.gpu.ledger.mark("graphs")
        self.graph_bytes = int(before - after)
        self.notes.append(
            "instantiating and uploading the graphs took "
            f"{self.graph_bytes / 2**20:.1f} MiB of free memory"
        )

    # -- a round ---------------------------------------------------------------------------
    def _reset(self) -> None:
        import numpy as np

        cap, h = self.cap, self.host_count
        for a in range(3):  # the host boards into buffer 0 (the generations overwrite it)
            self.drv.memcpy_dtod(
                int(self.frontier) + a * cap * MASK_BYTES,
                int(self.host_boards) + a * h * MASK_BYTES,
                h * MASK_BYTES,
            )
        words = np.zeros(WORDS, dtype=np.uint64)
        words[COUNT0], words[ROW], words[GEN_BASE] = h, self.depth, h
        self.drv.memcpy_htod(self.state, words)
        self.drv.Context.synchronize()

    def run_once(self) -> Measurement:
        self._reset()
        host_launches = 0
        # The host driver reads each generation's frontier inside the region: timed without
        # the stream hold. The graph drivers' one host launch is held on their stream, so the
        # time is the GPU's from the graph's start, not the host's launch call (whose cost
        # moved with the process: 3 to 7% between processes at N=8..11 on an H200).
        device = self.driver != "host"
        label = f"driver={self.driver} generations"
        with self.generation(
            0, label, hold=device, stream=self.stream if device else None
        ) as timer:
            if device:
                with nvtx_range(f"{self.label} graph launch", payload=len(self.sched)):
                    self.graphs.launch(self.exe)
                host_launches = 1
            else:
                host_launches = self._host_loop()
                self.stream.synchronize()
        words = self.read_u64(self.state, WORDS)
        self.ran()
        stats = self._check(words, host_launches)
        count = int(words[SOLUTIONS]) * self.multiplier
        return Measurement(count=count, wall_s=timer.wall_seconds, gpu_s=timer.seconds, stats=stats)

    def _host_loop(self) -> int:
        import numpy as np

        launches = 0
        words = np.zeros(GEN_BASE, dtype=np.uint64)
        for g in range(MAX_GEN):
            self.drv.memcpy_dtoh(
                words, self.state
            )  # synchronises: the frontier's size sizes the grid
            if words[DONE]:
                break
            boards = int(words[COUNT0 + int(words[PARITY])])
            grid = grid_for_driver("host", boards, self.block, self.max_grid)
            with nvtx_range(f"{self.label} generation {g}", payload=g):
                self.f_step(
                    *self.step_args,
                    block=(self.block, 1, 1),
                    grid=(grid, 1),
                    shared=self.shared,
                    stream=self.stream,
                )
                self.functions["dg_advance"](
                    *self.adv_args, block=(1, 1, 1), grid=(1, 1), stream=self.stream
                )
            launches += 2
        return launches

    def _check(self, words: np.ndarray, host_launches: int) -> dict[str, Any]:
        v = [int(x) for x in words]
        gens = []
        for g, (row, k) in enumerate(self.sched):
            boards = v[GEN_BASE + GEN_WORDS * g]
            gens.append(
                {
                    "generation": g,
                    "row": row,
                    "rows": k,
                    "grids": 1,
                    "boards": boards,
                    "min": boards,
                    "max": boards,
                    "mean": float(boards),
                    "blocks": v[GEN_BASE + GEN_WORDS * g + 1],
                }
            )
        failures = {
            "host_launches": host_launches,
            "device_graph_launches": v[LAUNCHES],
            "launch_failures": v[LAUNCH_FAILURES],
            "first_error": v[FIRST_ERROR],
            "overflows": v[OVERFLOW],
            "generations_run": v[GEN],
        }
        stats = {"generations": gens, "failures": failures}
        if v[LAUNCH_FAILURES]:
            raise DeviceFailureError(
                f"{self.label}: {v[LAUNCH_FAILURES]:,} of {v[LAUNCHES]:,} device graph launches "
                f"failed (first: {first_error_name(v[FIRST_ERROR])}): the device runtime refused a "
                "graph launch (pending graph launches: one fire-and-forget "
                "and one tail launch at a time here); the count is discarded"
            )
        if v[OVERFLOW]:
            raise DeviceFailureError(
                f"{self.label}: {v[OVERFLOW]:,} boards did not fit in the frontier buffers of "
                f"{self.cap:,} boards (a bug in the model); the count is discarded"
            )
        if not v[DONE] or v[GEN] != len(self.sched):
            raise DeviceFailureError(
                f"{self.label}: the run stopped after {v[GEN]} of "
                f"{plural(len(self.sched), 'generation')} "
                f"(done={v[DONE]}); the count is discarded"
            )
        for gen in gens[1:]:
            want = boards_at(self.n, gen["row"])
            if gen["boards"] != want:
                raise DeviceFailureError(
                    f"{self.label}: generation {gen['generation']} had {gen['boards']:,} boards, "
                    f"the model {want:,}; the count is discarded"
                )
        return stats

    def info(self) -> dict[str, Any]:
        out = super().info()
        out["plan"] = self.plan.as_dict()
        out["memory"]["graph_upload_bytes"] = getattr(self, "graph_bytes", 0)
        return out


STRATEGY = DevGraph()
