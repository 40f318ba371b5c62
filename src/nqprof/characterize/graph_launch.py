"""The graph modes of the launch-cost measurement (``nqprof characterize launch --modes
graph-ff,graph-tail``): device graph launch measured as Wang and Yalamanchili measured CDP.

A parent kernel (``dg_char_launch``, kernels/devgraph.cu), itself the node of a
device-launchable graph launched from the host, whose first ``count`` threads each launch a
device-launchable graph of one empty kernel (``dg_char_empty``), fire-and-forget
(``graph-ff``) or as a tail launch (``graph-tail``): t1. The same parent with the launch
removed (its mode ``none``, the same graph shape): t2. t1 - t2 is what the graph launches
cost. The threads launch ``copies`` different graphs in turn (a graph's executable instance
runs one launch at a time), each instantiated with the device-launch flag and uploaded; the
free device memory before and after instantiating and uploading them is the point's
``upload_bytes``. Every launch's return code is counted: the counts past what the runtime
takes show the failures and the first error, which is how the limits on pending graph
launches are measured.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..strategies.gpu_common import GpuSession
from .probe import Probe, paired_round

#: mode -> the kernel's `mode` argument (DG_CHAR_* of kernels/devgraph.cu)
GRAPH_MODES = {"graph-ff": 1, "graph-tail": 2}
NONE = 0
#: Different device graphs a parent launches in turn (each costs an upload): at most this many,
#: one more than the most tail launches that may be pending (launch.GRAPH_LIMITS), so that no
#: count a graph mode measures launches one graph twice.
MAX_COPIES = 256
WORDS = 16
LAUNCHES, LAUNCH_FAILURES, FIRST_ERROR = 8, 9, 10


class GraphLaunchProbe(Probe):
    name = "characterize-launch-graph"

    def open(self, n, params):
        return GraphLaunchSession(params)


PROBE = GraphLaunchProbe()


def copies_for(count: int, copies: int | None = None) -> int:
    return max(1, min(count, copies or MAX_COPIES))


class GraphLaunchSession(GpuSession):
    def __init__(self, p):
        super().__init__("characterize launch graph", 0, p)
        self.graphs = None
        try:
            from ..cuda.graphs import GraphLayer

            self.mode, self.count, self.block = p["mode"], int(p["count"]), int(p["block"])
            self.copies = copies_for(self.count, p.get("copies"))
            from ..strategies.devgraph import STRATEGY as devgraph

            module = self.build(
                devgraph.sources[0]
            )  # the characterization kernels live beside the strategy's
            empty, parent = module.function("dg_char_empty"), module.function("dg_char_launch")
            self.stream = self.drv.Stream()
            self.graphs = g = GraphLayer(self.stream)
            self.acct = self.counter(WORDS)
            before, _ = self.drv.mem_get_info()
            execs = []
            for _ in range(self.copies):
                graph = g.capture(lambda s: empty(block=(1, 1, 1), grid=(1, 1), stream=s))
                execs.append(g.instantiate(graph, device_launch=True))
            self.stream.synchronize()
            after, _ = self.drv.mem_get_info()
            self.gpu.ledger.mark("graphs")
            self.upload_bytes = int(before - after)
            self.table = self.drv.to_device(np.array([g.handle(e) for e in execs], dtype=np.uint64))
            grid = self.grid_for(self.count, self.block)

            def parent_graph(mode):
                graph = g.capture(
                    lambda s: parent(
                        np.uint32(self.count),
                        np.int32(mode),
                        self.table,
                        np.int32(self.copies),
                        self.acct,
                        block=(self.block, 1, 1),
                        grid=grid,
                        stream=s,
                    )
                )
                return g.instantiate(graph, device_launch=True)

            self.with_launch = parent_graph(GRAPH_MODES[self.mode])
            self.without = parent_graph(NONE)
            self.stream.synchronize()
        except BaseException:
            self.close()
            raise

    def _time(self, exe, label: str):
        self.drv.memset_d32(self.acct, 0, 2 * WORDS)
        self.drv.Context.synchronize()
        # the region waits for its graph inside itself: timed without the stream hold, which
        # would wait for the region to be queued (and give up)
        with self.generation(self.count, label, hold=False) as timer:
            self.graphs.launch(exe)
            self.stream.synchronize()
        return timer.seconds, self.read_u64(self.acct, WORDS)

    def run_once(self) -> dict[str, Any]:
        def timed(exe, label):
            seconds, words = self._time(exe, label)
            return (
                seconds,
                int(words[LAUNCHES]),
                int(words[LAUNCH_FAILURES]),
                int(words[FIRST_ERROR]),
                0,
            )

        return paired_round(
            self,
            self.with_launch,
            self.without,
            timed,
            copies=self.copies,
            upload_bytes=self.upload_bytes,
        )
