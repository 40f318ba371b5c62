"""cdp-cst: fast's constellation tasks made and counted on the device, every grid after the
host's first launched from the device with CDP2; device-side refinement of heavy tasks.

The host makes the frames (one task of depth 0 per D4 class of outer-line queens, as
strategy fast: a few thousand, uploaded once) and launches one grid. From there the device
does the rest (kernels/cst_launch.cuh, kernels/cdp_cst.cu), each grid's last block to finish
launching the next: split-count (tasks per frame, ``depth`` queens deeper), scan (one block:
offsets), split-write (the tasks, exactly fast's, in its order) and counting generation 0,
fast's persistent counting loop (kernels/cst_count.cuh) over them: without refinement the
kernel ``cc_count0``, fast's constellation kernel (its code, arguments, registers and grid:
the device's resident blocks, no more than the tasks fill). With a ``budget`` (the kernel
``cc_count``, the same loop with the budget's hook) a lane
whose task has taken more steps than the budget hands the rest of its subtree over as new
tasks (one per candidate left on its stack: nq_cst_spill in kernels/cpu/constellations.h,
whose host model ``nqprof._cpu.cst_budget_count`` the CPU tests check), and the counting
grid's last block launches generation 1 over them, and so on up to ``gens`` generations
(the last without a budget). Every device launch goes into the stream ``mode`` names; its
return code is read and accounted (a failed launch is an error, never a count).

graph-cst (:mod:`.graph_cst`) runs the same generations with device graph launch.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

from ..cuda.nvtx import nvtx_range
from ..errors import DeviceFailureError, InputError
from ..result import Measurement
from . import block_records
from .cdp.accounting import WORDS as ACCT_WORDS
from .cdp.accounting import decode_accounting
from .cdp.limits import check_nesting
from .cdp.model import Demand
from .cdp.session import CdpSession
from .cdp.strategy import CdpStrategy
from .cdp.timeline import DeviceTimeline, capacity_for, timeline_defines
from .cpu_common import cpu_module
from .cst_layout import (
    FIRST_COUNT,
    GENS,
    MAX_GEN,
    MODES,
    NEXT,
    NO_BUDGET,
    OVERFLOW,
    PARAMS_BYTES,
    REFUSED,
    SPILL_MAX,
    SPILL_MIN,
    SPILLS,
    SPLIT_BLOCK,
    TASK_BYTES,
    TASKS,
    TL,
    TL_NONE,
    WORDS,
    params_dtype,
)
from .cst_params import bounds_defines, cst_params
from .fast import SPLIT_KERNELS, split_counts
from .fast import STRATEGY as FAST


@lru_cache(maxsize=64)
def task_count(n: int, depth: int) -> int:
    """The tasks of (n, depth), counted on the host (nqprof._cpu.cst_task_count), for the
    plan without a GPU (`nqprof plan`); a session counts them on the GPU instead."""
    return int(cpu_module().cst_task_count(n, depth))


def spill_capacity(params: dict[str, Any], tasks: int) -> int:
    """Tasks per spill buffer: the ``spill`` parameter, else a quarter of the tasks within
    [SPILL_MIN, SPILL_MAX]; none without a budget or with one generation."""
    if not params["budget"] or params["gens"] < 2:
        return 0
    if params["spill"]:
        return int(params["spill"])
    return max(SPILL_MIN, min(SPILL_MAX, tasks // 4))


def count_shared(n: int, params: dict[str, Any]) -> int:
    """Dynamic shared memory of a counting block: fast's (the search's levels at ``depth``;
    spilled tasks start deeper and need fewer)."""
    from .fast import shared_bytes

    return shared_bytes(n, {"opt": "cst", "depth": params["depth"], "block": params["block"]})


class CstSession(CdpSession):
    """The session of cdp-cst (and, with ``graphs``, of graph-cst): the frames are the host
    boards; the plan, the limits, the reserve, the accounting and the timeline are CDP's.

    The task buffer is sized from the GPU: when opened, fast's own split-count kernel
    (constellation.cu, loaded beside this module) counts each frame's tasks, as fast does
    before it writes them; every round checks that the device made exactly that many."""

    source = "cdp_cst.cu"
    root_kernel = "cc_split_count"
    child_kernels = ("cc_scan", "cc_split_write", "cc_count", "cc_count0")  # generation 1's first
    #: counting generations with a budget (refinement on)
    count_kernel = "cc_count"
    #: counting generation 0 without refinement: fast's constellation kernel
    count0_kernel = "cc_count0"
    uses_graphs = False
    #: fast's constellation.cu: its split-count kernel counts the tasks when the session opens
    extra_sources = (FAST.sources[0],)

    def _prepare_run(self, strategy_name: str, n: int, params: dict[str, Any]) -> None:
        from .cpu_common import constellation_tasks

        self.label = f"{strategy_name} N={n}"
        self.recording = False
        self.child_kernel = self.strategy.child_kernel
        self.host = constellation_tasks(n, 0)  # the frames: the host grid's items
        self.nframes = len(self.host)
        self.ntasks = self.count_tasks(n, params)
        self.task_cap = params["task_buffer"] or self.ntasks
        self.spill_cap = spill_capacity(params, self.ntasks)
        self._plan_and_set_limits(n, params)
        if self.plan.chunked:
            raise InputError(
                f"{self.label}: the tasks ({self.ntasks:,}) and spill buffers do not fit in "
                "device memory "
                "(lower depth or spill)"
            )
        self._load(params)
        counting = self.count_func if self.spill_cap else self.count0_func
        self.notes.append(
            f"{self.nframes:,} frames made on the host; {self.ntasks:,} tasks at depth "
            f"{params['depth']} made on the device each round; counting grids "
            f"({self.counting_kernel}) of up to {self.counting_resident} x {params['block']} "
            f"({counting.num_regs} registers)"
        )
        budget = params["budget"]
        self.notes.append(
            f"refinement: a task past {budget:,} steps hands its rest over, up to "
            f"{params['gens']} counting "
            f"generations, spill buffers of {self.spill_cap:,} tasks; launches into "
            f"{params['mode']}"
            if self.spill_cap
            else (
                f"no refinement (budget={budget}, gens={params['gens']}); launches into "
                f"{params['mode']}"
            )
        )
        self.notes.append(self.limits.describe())
        self.notes.append(self.plan.summary())
        self.notes.extend(self.plan.notes)

    def count_tasks(self, n: int, params: dict[str, Any]) -> int:
        """Upload the frames and count their tasks at ``depth`` on the GPU with fast's
        split-count kernel (fast's module stays loaded: graph-cst may count with its
        constellation kernel)."""
        import numpy as np

        records = block_records.defines(params) if self.count0_in_fast(params) else {}
        self.fast_module = self.build(
            FAST.sources[0],
            {"NQ_BLOCK": params["block"], **records},
            mark="module (fast's, counts tasks)",
        )
        with nvtx_range(f"{self.label} count the tasks of {self.nframes:,} frames"):
            self.frames = self.drv.to_device(np.ascontiguousarray(self.host))
            if not params["depth"] or not self.nframes:
                tasks = self.nframes
            else:
                func = self.fast_module.function(SPLIT_KERNELS[0])
                per_frame = split_counts(
                    self.drv, func, self.frames, self.nframes, n, params["depth"]
                )
                tasks = int(per_frame.sum(dtype=np.uint64))
        self.gpu.ledger.mark("frames, tasks counted")
        if tasks >= 2**32:
            raise InputError(
                f"{self.label} depth {params['depth']}: {tasks:,} tasks are more than the "
                "counting kernel's 32-bit index takes (use a smaller depth)"
            )
        return tasks

    def count0_in_fast(self, params: dict[str, Any]) -> bool:
        """Whether counting generation 0 is fast's module's kernel (blocks=1 then builds
        fast's module with the records)."""
        return False

    def recursion(self, n: int, params: dict[str, Any]):
        return cst_recursion(
            self.strategy.name, n, params, self.nframes, self.uses_graphs, tasks=self.ntasks
        )

    def _load(self, params: dict[str, Any]) -> None:

        p = params
        records = {} if self.count0_in_fast(p) else block_records.defines(p)
        module = self.build(
            self.strategy.sources[0],
            {"NQ_BLOCK": p["block"], **bounds_defines(p), **timeline_defines(p), **records},
        )
        self.reserve_measured = self._measure_reserve()
        self.module = module
        self.root = module.function(self.root_kernel)
        self.children = {name: module.function(name) for name in self.child_kernels}
        self.count_func = self.children[self.count_kernel]
        self.count0_func = self.children[self.count0_kernel]
        self.shared = count_shared(self.n, p)
        # every kernel of the chain: a device-launched grid may run in the shared-memory
        # configuration its launcher's SMs are in
        for func in (self.root, *self.children.values()):
            set_carveout(func, p["carveout"])
        # the device's resident blocks of each counting kernel (fast's persistent grid)
        self.resident = self.counting_grid(module, self.count_kernel, self.count_func)
        self.resident0 = self.counting_grid(module, self.count0_kernel, self.count0_func)
        refined = bool(self.spill_cap)
        self.counting_kernel = self.count_kernel if refined else self.count0_kernel
        self.counting_resident = self.resident if refined else self.resident0
        drv = self.drv
        with nvtx_range(f"{self.label} buffers for {self.ntasks:,} tasks"):
            self.counts = drv.mem_alloc(4 * max(1, self.nframes))
            self.offsets = drv.mem_alloc(8 * (self.nframes + 1))
            self.tasks = drv.mem_alloc(TASK_BYTES * max(1, self.task_cap))
            self.spill = drv.mem_alloc(TASK_BYTES * max(1, 2 * self.spill_cap))
            self.ctl = drv.mem_alloc(4 * WORDS)
            self.acct = self.counter(ACCT_WORDS)
            self.param_block = drv.mem_alloc(PARAMS_BYTES)
        self.gpu.ledger.mark("tasks and spill buffers")
        self.timeline = None
        if p.get("timeline"):
            capacity = capacity_for(FIRST_COUNT + p["gens"] + 1, self.limits.pending)
            self.timeline = DeviceTimeline(drv, module.module, capacity, self.nframes)
            self.notes.append(f"device timeline: room for {capacity:,} grid records")
        self.records = None  # launch=record's
        self.blocks = None
        if p["blocks"]:
            # room for every block the device could hold at once (at most 32 an SM)
            where = self.fast_module if self.count0_in_fast(p) else module
            capacity = 32 * self.gpu.facts["sm_count"]
            self.blocks = block_records.BlockRecords(drv, where.module, capacity)
        self.execs = 0
        self.prepare()
        self.write_params()

    def counting_grid(self, module, name: str, func) -> int:
        """Let ``func``, counting kernel ``name`` of ``module``, have the counting blocks'
        dynamic shared memory (recorded in the module's kernel table) and return the blocks
        the device holds at once; an InputError if not even one fits on a multiprocessor."""
        module.kernels[name]["dynamic_shared_bytes"] = int(self.shared)
        self.allow_shared(func, self.shared)
        per_sm = self.resident_blocks(func, self.params["block"], self.shared)
        if per_sm < 1:
            raise InputError(
                f"{self.label}: a counting block of {self.params['block']} ({name}) does not fit "
                "on a multiprocessor (use a smaller block)"
            )
        return self.gpu.facts["sm_count"] * per_sm

    def write_params(self) -> None:
        import numpy as np

        p = self.params
        block = np.zeros(1, dtype=params_dtype())
        b = block[0]
        for name, buf in (
            ("frames", self.frames),
            ("counts", self.counts),
            ("offsets", self.offsets),
            ("tasks", self.tasks),
            ("spill", self.spill),
            ("ctl", self.ctl),
            ("acct", self.acct),
        ):
            b[name] = int(buf)
        b["execs"] = int(self.execs)
        b["nframes"], b["task_cap"], b["spill_cap"] = self.nframes, self.task_cap, self.spill_cap
        b["budget"] = p["budget"] if self.spill_cap else NO_BUDGET
        b["n"], b["depth"] = self.n, p["depth"]
        b["gens"] = p["gens"] if self.spill_cap else 1
        b["mode"] = MODES[p["mode"]]
        b["resident"], b["count_shared"] = self.resident, self.shared
        b["resident0"] = self.resident0
        self.drv.memcpy_htod(self.param_block, block)

    # -- a round ---------------------------------------------------------------------------
    def control_start(self):
        import numpy as np

        ctl = np.zeros(WORDS, dtype=np.uint32)
        ctl[TL : TL + FIRST_COUNT + MAX_GEN] = TL_NONE
        ctl[TL] = 0  # the host grid is the timeline's record 0
        return ctl

    def launch_root(self) -> None:
        import numpy as np

        self.root(
            self.param_block,
            np.int32(0),
            block=(SPLIT_BLOCK, 1, 1),
            grid=self.grid_for(self.nframes, SPLIT_BLOCK),
        )

    def launch_count0(self, func, resident: int, extra: tuple = (), stream=None) -> None:
        """Counting generation 0 without refinement from the host: ``func`` (fast's kernel or
        this module's) with fast's arguments (the session's tasks and their count, N, the task
        index, the count: acct[CDP_SOLUTIONS]) and ``extra`` after them, over fast's grid (the
        ``resident`` blocks, no more than the tasks fill). cdp-cst's mode=host launches
        cc_count0 so, on the chain's stream after it; graph-cst captures it into its work graph."""
        import numpy as np

        block = self.params["block"]
        func(
            self.tasks,
            np.uint32(self.ntasks),
            np.int32(self.n),
            np.uint64(int(self.ctl) + 4 * NEXT),
            np.uint64(int(self.acct)),  # acct[CDP_SOLUTIONS], word 0
            *extra,
            block=(block, 1, 1),
            grid=(max(1, min(resident, -(-self.ntasks // block))), 1),
            shared=self.shared,
            stream=stream,
        )

    def run_once(self) -> Measurement:
        import numpy as np

        if self.timeline:
            self.timeline.reset()
        if self.blocks:
            self.blocks.reset()
        self.drv.memset_d32(self.acct, 0, 2 * ACCT_WORDS)
        self.drv.memcpy_htod(self.ctl, self.control_start())
        with self.generation(0, "device-made tasks, generation") as timer:
            if self.nframes:
                self.launch_root()
                if self.params["mode"] == "host" and self.ntasks:
                    self.launch_count0(self.count0_func, self.resident0, (self.param_block,))
        words = self.read_u64(self.acct, ACCT_WORDS)
        ctl = np.empty(WORDS, dtype=np.uint32)
        self.drv.memcpy_dtoh(ctl, self.ctl)
        self.ran()
        acct = decode_accounting(words, host_boards=self.nframes)
        # a task buffer too small (a parameter) first: the run stops at the scan, and the
        # message says what to set
        self.check_task_buffer(ctl)
        self._fail(acct, self.label)
        refinement = self.check_control(ctl) if self.params.get("launch", "real") == "real" else {}
        stats = acct.stats()
        self.refinement = refinement
        if self.timeline:
            stats["timeline"] = self.timeline.read()
        if self.blocks:
            stats["blocks"] = self.blocks.read()
        return Measurement(
            count=acct.solutions, wall_s=timer.wall_seconds, gpu_s=timer.seconds, stats=stats
        )

    def check_task_buffer(self, ctl) -> None:
        """The device's scan refused the tasks: more than the task buffer holds."""
        if int(ctl[OVERFLOW]):
            raise DeviceFailureError(
                f"{self.label}: the device made more tasks than the task buffer of "
                f"{self.task_cap:,} holds ({self.ntasks:,} counted when the session opened): set "
                f"task_buffer=0 (the default, that exact count) or at least {self.ntasks:,}; the "
                "count is discarded"
            )

    def check_control(self, ctl) -> dict[str, Any]:
        """The control words after a round: the device's tasks against the host's count, and
        every spilled task counted by a later generation; any other outcome is an error."""
        v = [int(x) for x in ctl]
        self.check_task_buffer(ctl)
        if self.nframes and v[TASKS] != self.ntasks:
            raise DeviceFailureError(
                f"{self.label}: the device made {v[TASKS]:,} tasks, fast's split count gave "
                f"{self.ntasks:,} when the session opened; the count is discarded"
            )
        gens = v[GENS]
        if self.ntasks and gens == 0:
            raise DeviceFailureError(
                f"{self.label}: no counting generation ran; the count is discarded"
            )
        if v[TASKS + gens]:
            raise DeviceFailureError(
                f"{self.label}: generation {gens - 1} spilled {v[TASKS + gens]:,} tasks that no "
                "generation "
                "counted; the count is discarded"
            )
        return {
            "tasks": v[TASKS],
            "generations": gens,
            "spilled": [v[TASKS + g] for g in range(1, gens)],
            "spills": v[SPILLS],
            "refused": v[REFUSED],
            "spill_capacity": self.spill_cap,
            "budget": self.params["budget"],
        }

    def info(self) -> dict[str, Any]:
        out = super().info()
        out["tasks"] = {
            "where": "device",
            "frames": self.nframes,
            "tasks": self.ntasks,
            "task_buffer": self.task_cap,
            **getattr(self, "refinement", {}),
        }
        return out


def _check_common(name: str, n: int, params: dict[str, Any]) -> None:
    from .fast import check_counting

    check_counting(name, n, params, count_shared)
    for what, on in (("blocks=1", params["blocks"]), ("mode=host", params["mode"] == "host")):
        if on and params["budget"]:
            raise InputError(
                f"{name}: {what} measures counting generation 0 without refinement: use budget=0"
            )
    check_nesting(
        f"{name} with gens={params['gens']}",
        FIRST_COUNT + params["gens"] - 1,
        "lower gens",
    )


def set_carveout(func, percent: int) -> None:
    """The preferred shared-memory carveout of ``func`` (percent of the unified L1/shared
    storage; -1 leaves the driver's choice)."""
    if percent >= 0:
        import pycuda.driver as drv

        func.set_attribute(drv.function_attribute.PREFERRED_SHARED_MEMORY_CARVEOUT, int(percent))


def cst_recursion(
    name: str,
    n: int,
    params: dict[str, Any],
    host_boards: int,
    graphs: bool,
    tasks: int | None = None,
):
    """What the run needs, for the plan: the generations (frames, tasks, spills), one
    device launch pending at a time, the buffers the host allocates. ``tasks``: counted
    already (on the GPU), else counted on the host."""
    from .cdp.plan import Generation, Recursion

    depth, gens = params["depth"], params["gens"]
    tasks = task_count(n, depth) if tasks is None else tasks
    spill = spill_capacity(params, tasks)
    held = params.get("task_buffer") or tasks
    count_gens = gens if spill else 1
    rows = [
        Generation(0, 0, depth, host_boards, 1, host_boards, 1, "split-count: tasks per frame"),
        Generation(1, 0, None, host_boards, 1, host_boards, 1, "scan: one block, offsets"),
        Generation(2, 0, depth, host_boards, 1, host_boards, 1, "split-write: the tasks"),
        Generation(3, depth, None, tasks, 1, tasks, 1, "counting generation 0"),
    ]
    for g in range(1, count_gens):
        rows.append(
            Generation(
                FIRST_COUNT + g,
                depth + 1,
                None,
                spill,
                1,
                None,
                None,
                f"counting generation {g}: tasks spilled past {params['budget']:,} steps",
            )
        )
    launches = len(rows) - 1
    how = "device graph launches" if graphs else "device launches"

    def demand(c: int) -> Demand:
        return Demand(
            pending=2,
            heap_bytes=None,
            launches=launches,
            basis=(
                f"a chain of {how}: each grid's last block launches the next (one pending at a "
                "time)"
            ),
            advice="lower depth or spill",
        )

    buffers = (
        TASK_BYTES * (host_boards + held + 2 * spill)
        + 12 * (host_boards + 1)
        + 4 * WORDS
        + PARAMS_BYTES
    )
    return Recursion(
        name,
        n,
        host_boards,
        rows,
        demand=demand,
        host_bytes=lambda c: buffers,
        uses_heap=False,
        notes=(
            f"{tasks:,} tasks ({tasks * TASK_BYTES / 2**20:,.1f} MiB), two spill buffers of "
            f"{spill:,} tasks; the "
            "spilled tasks' rows are the least they can start at",
        ),
    )


class CstStrategy(CdpStrategy):
    """What cdp-cst and graph-cst share: fast's counting limits, the frames as the host grid's
    items (`nqprof plan`), the generations of cst_recursion. Subclasses set the rest, and
    ``refused``: the parameter value their own launches cannot take."""

    # the suite's cases: N=12..16 (below, every N measures the launch chain's fixed cost)
    bench_min_n = 12
    bench_max_n = 16
    #: (parameter, value, why): the value an InputError refuses, saying "NAME: KEY=VALUE WHY".
    refused: ClassVar[tuple[str, str, str]]

    def check(self, n, params):
        _check_common(self.name, n, params)
        key, value, why = self.refused
        if params[key] == value:
            raise InputError(f"{self.name}: {key}={value} {why}")

    def host_boards(self, n: int, params: dict[str, Any]) -> int:
        """The host grid's items: the frames (`nqprof plan`)."""
        return len(cpu_module().cst_tasks(n, 0)) // TASK_BYTES

    def recursion(self, n, params, host_boards):
        return cst_recursion(self.name, n, params, host_boards, graphs=self.session.uses_graphs)


class CdpCst(CstStrategy):
    name = "cdp-cst"
    order = 74
    title = "fast's tasks made and counted on the device (CDP2), heavy tasks refined"
    reference = "nqprof issue 35 (fast's constellation kernel, CDP2 launches)"
    session = CstSession
    # no launch bounds: a CDP2-launched grid of a kernel with them is held one block an SM at
    # a time (docs/cdp-on-hopper.md)
    paper_params = cst_params(bounds="none")
    # no device malloc, no chunks (one host launch)
    runtime = ("pending", "launch", "timeline", "config")
    refused = (
        "launch",
        "record",
        "is not supported (its generation 1 is the one-block scan); use launch=empty or none",
    )


STRATEGY = CdpCst()
