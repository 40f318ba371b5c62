"""graph-cst: cdp-cst's generations driven by device graph launch instead of CDP2 launches.

The same kernels' bodies (kernels/cst_launch.cuh, kernels/graph_cst.cu) in graphs the host
instantiates for device launch and uploads once: ``make`` [split-count -> scan], launched by
the host each round; ``work`` [split-write -> counting generation 0], launched by the scan's
thread 0; ``count g`` [counting generation g], launched by the last block of generation g-1
when it spilled tasks past the budget. A graph's kernel nodes keep the arguments they were
captured with, so the kernels read the parameter block and their task counts from device
memory, but for generation 0 without refinement: fast's constellation kernel with fast's
arguments and grid and the task count the session opened with (which the host checks against
the device's after the round). ``count0`` picks its code: ``fast``, fast's own cubin (built
without relocatable device code: a graph's kernel node may come from any module), or ``own``,
``cg_count0``, the same source compiled into this module with ``-rdc`` (the device timeline
needs it: ``timeline=1`` takes ``own``). Each counting grid is the device's resident blocks
(persistent, as fast's), no more than the tasks fill. One graph per counting generation (a
graph may not be launched while it runs). Every device graph launch's return code is accounted as
cdp-cst's launches are (a failed one is an error, never a count).

As devgraph's, these kernels use no CDP2 call (no kernel launch, no cudaGetLastError): a
graph instantiated for device launch may not hold a kernel that uses dynamic parallelism
(kernels/graph_cst.cu says more). Needs cuda-bindings (the ``graphs`` extra), as devgraph's
graph drivers.
"""

from __future__ import annotations

from typing import Any

from ..cuda.nvtx import nvtx_range
from ..textfmt import plural
from .base import Param
from .cdp_cst import CstSession, CstStrategy, set_carveout
from .cst_layout import FIRST_COUNT, SCAN_BLOCK, SPLIT_BLOCK
from .cst_params import cst_params
from .fast import KERNELS as FAST_KERNELS

#: count0: generation 0's counting kernel without refinement
COUNT0 = ("fast", "own")


class GraphCstSession(CstSession):
    source = "graph_cst.cu"
    root_kernel = "cg_split_count"
    child_kernels = ("cg_scan", "cg_split_write", "cg_count", "cg_count0")
    count_kernel = "cg_count"
    count0_kernel = "cg_count0"
    uses_graphs = True

    def prepare(self) -> None:
        """The graphs, instantiated for device launch and uploaded, their handles in the
        parameter block (written after this)."""
        import numpy as np

        from ..cuda.graphs import GraphLayer

        p = self.params
        self.stream = self.drv.Stream()
        self.graphs = g = GraphLayer(self.stream)
        before, _ = self.drv.mem_get_info()
        k = self.children
        pb = self.param_block
        block = (p["block"], 1, 1)
        count_grid = (self.resident, 1)  # cg_count: persistent, any task count
        split_grid = self.grid_for(self.nframes, SPLIT_BLOCK)
        gens = p["gens"] if self.spill_cap else 1

        def count(stream, gen):
            k["cg_count"](
                pb, np.int32(gen), block=block, grid=count_grid, shared=self.shared, stream=stream
            )

        func0, resident0, extra = self.count0_kernel_of(p)

        def count0(stream):  # fast's kernel, arguments and grid
            self.launch_count0(func0, resident0, extra, stream)

        def make(stream):
            self.root(pb, np.int32(0), block=(SPLIT_BLOCK, 1, 1), grid=split_grid, stream=stream)
            k["cg_scan"](pb, np.int32(1), block=(SCAN_BLOCK, 1, 1), grid=(1, 1), stream=stream)

        def work(stream):
            k["cg_split_write"](
                pb, np.int32(2), block=(SPLIT_BLOCK, 1, 1), grid=split_grid, stream=stream
            )
            if gens > 1:
                count(stream, 0)
            else:
                count0(stream)

        with nvtx_range(f"{self.label} instantiate {gens + 1} graphs", payload=gens + 1):
            self.exe = g.instantiate(g.capture(make), device_launch=True)
            execs = [g.instantiate(g.capture(work), device_launch=True)]
            for gen in range(1, gens):
                execs.append(
                    g.instantiate(g.capture(lambda s, gen=gen: count(s, gen)), device_launch=True)
                )
            self.stream.synchronize()
        self.exec_table = self.drv.to_device(
            np.array([g.handle(e) for e in execs], dtype=np.uint64)
        )
        self.execs = int(self.exec_table)
        after, _ = self.drv.mem_get_info()
        self.gpu.ledger.mark("graphs")
        self.graph_bytes = int(before - after)
        self.notes.append(
            f"graphs: make [split-count, scan] from the host; work [split-write, count 0 "
            f"({self.count0_name})] and "
            f"{plural(gens - 1, 'count graph')} launched from the device; instantiating and "
            "uploading them took "
            f"{self.graph_bytes / 2**20:.1f} MiB of free memory"
        )

    def count0_in_fast(self, params: dict[str, Any]) -> bool:
        # count0=fast, unless the device timeline takes this module's own kernel
        return params["count0"] == "fast" and not params.get("timeline")

    def count0_kernel_of(self, p: dict[str, Any]):
        """Generation 0's counting kernel without refinement (``count0``), its resident
        blocks and the arguments it takes after fast's."""
        if not self.count0_in_fast(p):
            self.count0_name = "cg_count0, this module's (-rdc)"
            return self.children["cg_count0"], self.resident0, (self.param_block,)
        kernel = FAST_KERNELS["cst"]
        func = self.fast_module.function(kernel)
        set_carveout(func, p["carveout"])
        resident = self.counting_grid(self.fast_module, kernel, func)
        self.count0_name = f"{kernel}, fast's cubin ({func.num_regs} registers)"
        return func, resident, ()

    def launch_root(self) -> None:
        # no wait here: the region's stop event, on the legacy default stream, waits for this
        # blocking stream's graph and every graph it launched, so the stream hold keeps the
        # host's launch latency out (a wait here kept the hold waiting until it gave up)
        with nvtx_range(f"{self.label} graph launch", payload=FIRST_COUNT):
            self.graphs.launch(self.exe)

    def info(self) -> dict[str, Any]:
        out = super().info()
        out["memory"]["graph_upload_bytes"] = getattr(self, "graph_bytes", 0)
        return out


class GraphCst(CstStrategy):
    name = "graph-cst"
    order = 79.5  # before devgraph and queue
    title = "cdp-cst's generations launched as device graphs"
    reference = "nqprof issue 35 (device graph launch, CUDA 12.0)"
    session = GraphCstSession
    paper_params = (
        *cst_params(bounds="min"),
        Param(
            "count0",
            "gen 0 kernel: fast's cubin, own",
            default="fast",
            choices=COUNT0,
            range_text="2 kernels",
        ),
    )
    # no measurement builds (launch=): its device launches are graph launches, not cdp_launch
    runtime = ("pending", "timeline", "config")
    refused = (
        "mode",
        "host",
        "is cdp-cst's (its counting grid launched by the host); a graph's launches go tail or "
        "fire-and-forget",
    )


STRATEGY = GraphCst()
