"""How long a launch takes to start its grid and to finish it, by who launches it.

Each trial launches a child grid (``lat_child``: thread 0 of each block marks the grid's
first start and last end by the GPU's global timer; kernels/latency.cuh) and reads, on the
same clock, when the launch was made:

* ``host``: the host launches the child into a stream right behind a one-thread grid that
  spins first (so the child is queued before it ends); the launch is that grid's end, the
  moment the stream lets the child run;
* ``cdp-tail``, ``cdp-ff``: one thread launches it with CDP2 into the tail or the
  fire-and-forget stream (``lat_cdp_parent``, kernels/characterize.cu); the launch is the
  thread's timer before the call;
* ``graph-tail``, ``graph-ff``: one thread of a graph launches a device-launchable graph
  of the child (``dg_lat_launch``, kernels/devgraph.cu) as a tail launch or fire-and-forget;
* ``while``: a host-launched graph whose WHILE conditional node runs a one-thread body
  (``dg_lat_while``) that sets the condition again; the launch is one iteration's end,
  the start the next one's (its "grid": the next body).

From the trials: the medians and the 10th-90th percentiles of launch to the first block's
first instruction, launch to the last block's last, and (device launches) how long the
launch call itself took. Every device launch's return code is read: a failed one is the
path's error, never a time.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from ..errors import DeviceFailureError, InputError
from ..strategies.gpu_common import GpuSession
from . import SOURCES, check_kind, check_listed, machine_of, split_machine
from .probe import SessionProbe, run_probe

KIND = "nqprof-characterize-latency"
PATHS = ("host", "cdp-tail", "cdp-ff", "graph-tail", "graph-ff", "while")
#: kernels/latency.cuh's words
LAUNCH, RETURN, FIRST, END, ERROR, ITER, ITERS = 0, 1, 2, 3, 4, 5, 8
ALL_ONES = (1 << 64) - 1
#: CDP2 streams of lat_cdp_parent (characterize.cu's CHAR_STREAM_TAIL, cdp.cuh's
#: CDP_STREAM_FIRE_AND_FORGET) and graph modes of dg_lat_launch (devgraph.cu's DG_CHAR_*)
CDP_STREAMS = {"cdp-tail": 3, "cdp-ff": 2}
GRAPH_MODES = {"graph-tail": 2, "graph-ff": 1}
DEFAULT_TRIALS = 50
MAX_TRIALS = 10_000
#: threads of each block of the child grid
CHILD_THREADS = 32
#: how long the host path's first grid spins before its end (the child is queued by then)
HOST_SPIN_NS = 50_000


def check_paths(paths: Sequence[str]) -> list[str]:
    return check_listed(paths, tuple(PATHS))


class LatencySession(GpuSession):
    """Every path of the parameters in one context: the characterize module (host and CDP2
    paths) and devgraph's (graphs), the graphs instantiated once."""

    def __init__(self, p):
        super().__init__("characterize latency", 0, p)
        self.graphs = None
        try:
            self._open(p)
        except BaseException:
            self.close()
            raise

    def _open(self, p) -> None:
        from ..strategies.cdp.accounting import WORDS

        self.trials, self.grid = int(p["trials"]), int(p["grid"])
        self.paths = list(p["paths"])
        cm = self.build(SOURCES[0])
        self.child = cm.function("lat_child")
        self.host_parent = cm.function("lat_host_parent")
        self.cdp_parent = cm.function("lat_cdp_parent")
        self.acct = self.counter(WORDS)
        self.rec = self.drv.mem_alloc(8 * (ITERS + 2 * (self.trials + 1)))
        self.errors: dict[str, str] = {}
        if any(path.startswith("graph") or path == "while" for path in self.paths):
            self._graphs()

    def _graphs(self) -> None:
        import numpy as np

        from ..cuda.graphs import GraphLayer
        from ..strategies.devgraph import STRATEGY as devgraph

        dm = self.build(devgraph.sources[0])  # beside the strategy's kernels, as launch's
        child, launch = dm.function("dg_lat_child"), dm.function("dg_lat_launch")
        self.stream = self.drv.Stream()
        self.graphs = g = GraphLayer(self.stream)
        grid = (self.grid, 1)
        child_exe = g.instantiate(
            g.capture(lambda s: child(self.rec, block=(CHILD_THREADS, 1, 1), grid=grid, stream=s)),
            device_launch=True,
        )
        self.graph_parents = {}
        for path, mode in GRAPH_MODES.items():
            graph = g.capture(
                lambda s, mode=mode: launch(
                    self.rec,
                    np.uint64(g.handle(child_exe)),
                    np.int32(mode),
                    block=(1, 1, 1),
                    grid=(1, 1),
                    stream=s,
                )
            )
            self.graph_parents[path] = g.instantiate(graph, device_launch=True)
        if "while" in self.paths:
            try:
                body = dm.function("dg_lat_while")
            except Exception:  # pycuda's LogicError: not built (devgraph.cu's CUDART_VERSION)
                self.errors["while"] = f"CUDA {dm.toolkit_version} builds no WHILE node (12.3+)"
                return

            def loop(stream, handle):
                body(
                    self.rec,
                    np.uint32(self.trials + 1),
                    np.uint64(handle),
                    block=(1, 1, 1),
                    grid=(1, 1),
                    stream=stream,
                )

            self.while_exe = g.instantiate(g.while_graph(loop))
        self.stream.synchronize()

    def _reset(self) -> None:
        import numpy as np

        words = np.zeros(ITERS, np.uint64)
        words[FIRST] = ALL_ONES
        self.drv.memcpy_htod(self.rec, words)

    def _words(self, count: int):
        import numpy as np

        out = np.empty(count, np.uint64)
        self.drv.memcpy_dtoh(out, self.rec)
        return [int(x) for x in out]

    def _trial(self, path: str) -> list[int]:
        import numpy as np

        self._reset()
        block = (CHILD_THREADS, 1, 1)
        if path == "host":
            self.host_parent(self.rec, np.uint64(HOST_SPIN_NS), block=(1, 1, 1), grid=(1, 1))
            self.child(self.rec, block=block, grid=(self.grid, 1))
        elif path in CDP_STREAMS:
            self.cdp_parent(
                self.rec,
                np.uint32(self.grid),
                np.uint32(CHILD_THREADS),
                np.int32(CDP_STREAMS[path]),
                self.acct,
                block=(1, 1, 1),
                grid=(1, 1),
            )
        else:
            self.graphs.launch(self.graph_parents[path])
            self.stream.synchronize()
        self.drv.Context.synchronize()
        return self._words(ITERS)

    def _while(self) -> dict[str, list[int]]:
        self._reset()
        self.graphs.launch(self.while_exe)
        self.stream.synchronize()
        words = self._words(ITERS + 2 * (self.trials + 1))
        if words[ITER] != self.trials + 1:
            raise DeviceFailureError(
                f"the WHILE node ran {words[ITER]} times, not {self.trials + 1}"
            )
        starts, ends = words[ITERS::2], words[ITERS + 1 :: 2]
        return {
            "first_ns": [starts[i + 1] - ends[i] for i in range(self.trials)],
            "end_ns": [ends[i + 1] - ends[i] for i in range(self.trials)],
            "call_ns": [],
        }

    def run_once(self) -> list[dict[str, Any]]:
        from ..strategies.cdp.accounting import WORDS, decode_accounting, error_name

        out = []
        for path in self.paths:
            point: dict[str, Any] = {"path": path, "grid": self.grid, "trials": self.trials}
            if path in self.errors:
                out.append({**point, "error": self.errors[path]})
                continue
            self.drv.memset_d32(self.acct, 0, 2 * WORDS)
            if path == "while":
                out.append({**point, **self._while()})
                continue
            first, end, call, error = [], [], [], None
            for _ in range(self.trials + 1):  # the first is a warm-up
                w = self._trial(path)
                if w[ERROR]:
                    error = f"the device graph launch failed ({w[ERROR]})"
                    break
                first.append(w[FIRST] - w[LAUNCH])
                end.append(w[END] - w[LAUNCH])
                call.append(w[RETURN] - w[LAUNCH])
            a = decode_accounting(self.read_u64(self.acct, WORDS), host_boards=1)
            if a.launch_failures:
                error = f"the device launch failed ({error_name(a.first_error)})"
            if error:
                out.append({**point, "error": error})
                continue
            calls = call[1:] if path != "host" else []  # the host's call is not on this clock
            out.append({**point, "first_ns": first[1:], "end_ns": end[1:], "call_ns": calls})
        self.ran()
        machine = machine_of(self)
        return [{**pt, **machine} for pt in out]


PROBE = SessionProbe("characterize-latency", LatencySession)


def measure(
    paths: Sequence[str] = PATHS,
    trials: int = DEFAULT_TRIALS,
    grid: int = 1,
    timeout: float = 120,
    progress=None,
    probe=run_probe,
) -> dict[str, Any]:
    """Every path, ``trials`` launches each (after one warm-up), in one fresh worker."""
    if not 1 <= trials <= MAX_TRIALS:
        raise InputError(f"--trials takes 1..{MAX_TRIALS}, got {trials}")
    if progress is not None:
        progress.case(f"launch latency of {len(paths)} paths x {trials} trials")
    params = {"paths": check_paths(paths), "trials": int(trials), "grid": int(grid)}
    reading, conditions = probe(PROBE, params, timeout)
    machine, points = split_machine(reading)
    return {
        "kind": KIND,
        "machine": machine,
        "settings": params,
        "conditions": conditions,
        "points": points,
    }


def load(doc: dict[str, Any]) -> list[dict[str, Any]]:
    check_kind(doc, KIND, "launch latency characterization")
    points = doc.get("points")
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        raise InputError("the launch latency characterization holds no points")
    return points


def spread(samples: Sequence[int]) -> str:
    """``median (p10-p90)`` in microseconds."""
    if not samples:
        return ""
    one = len(samples) == 1
    qs = [samples[0]] * 9 if one else statistics.quantiles(samples, n=10, method="inclusive")
    return f"{statistics.median(samples) / 1e3:,.2f} ({qs[0] / 1e3:,.2f}-{qs[-1] / 1e3:,.2f})"


def table(points: Sequence[dict[str, Any]]) -> tuple[list[str], list[list], list[str]]:
    header = ["path", "grid", "trials", "to first start (us)", "to last end (us)", "call (us)"]
    rows = []
    for p in points:
        if p.get("error"):
            rows.append([p["path"], p["grid"], p["trials"], p["error"], "", ""])
            continue
        rows.append(
            [
                p["path"],
                p["grid"],
                len(p["first_ns"]),
                spread(p["first_ns"]),
                spread(p["end_ns"]),
                spread(p["call_ns"]),
            ]
        )
    notes = [
        "median (10th-90th percentile) of the trials, by the GPU's global timer; the launch: "
        "host, the end of the grid the child follows in its stream; cdp-*, graph-*, the "
        "launching thread before its call; while, the end of the previous iteration's body",
        "to first start: to the child grid's first block's first instruction; to last end: to "
        "its last block's last; call: how long the device launch call took",
        "a tail launch starts when the launching grid has ended (here one thread, ending right "
        "after its call)",
    ]
    return header, rows, notes
