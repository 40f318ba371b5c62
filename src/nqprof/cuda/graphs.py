"""CUDA graphs from Python: captured kernel graphs, device-launchable instantiation, upload,
and WHILE conditional nodes, through NVIDIA's ``cuda-bindings`` (the ``graphs`` extra).

Why ``cuda-bindings`` and not ctypes on ``libcuda.so.1``: PyCUDA (which builds and launches
every nqprof kernel) has no graph API, and the graph API is built from structures
(``CUgraphNodeParams`` and its conditional member, whose layout changed between CUDA 12 and
13) that ``cuda-bindings`` declares from the toolkit's own headers, per CUDA major version;
a ctypes layer would have to mirror them by hand and would break silently where they change.
``cuda-bindings`` is NVIDIA's, installs from PyPI without a driver (it loads ``libcuda`` on
the first call), and sits on the GPU hosts nqprof targets. It is imported lazily: nothing
here is imported by nqprof unless a graph strategy or measurement runs.

Kernels stay PyCUDA's: a graph's kernel nodes are made by **stream capture** of ordinary
PyCUDA launches (``func(..., stream=s)`` between begin and end capture), so PyCUDA's
modules (built with cudadevrt by :mod:`nqprof.cuda.build`) and argument packing are used as
they are, and no CUfunction handle has to cross from PyCUDA (which does not expose it).
Both libraries work in the current context (PyCUDA's); handles cross as integers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import DeviceFailureError, UnavailableError

INSTALL_HINT = (
    "pip install 'nqprof[graphs]' (NVIDIA's cuda-bindings, "
    "matching the driver's CUDA major version)"
)


def bindings():
    """The ``cuda.bindings.driver`` module, or :class:`UnavailableError` saying how to get it."""
    try:
        from cuda.bindings import driver  # type: ignore[import-not-found]
    except ImportError as exc:
        raise UnavailableError(f"CUDA graphs need cuda-bindings ({exc}): {INSTALL_HINT}") from None
    return driver


def available() -> tuple[bool, str]:
    """Whether the graph layer can be used here (import only; the driver is asked at first use)."""
    try:
        bindings()
        from cuda import bindings as pkg  # type: ignore[import-not-found]

        return True, f"cuda-bindings {getattr(pkg, '__version__', '?')}"
    except UnavailableError as exc:
        return False, str(exc)


def _check(result, what: str):
    """cuda-bindings returns (CUresult, values...): raise on an error, return the values."""
    cu = bindings()
    if not isinstance(result, tuple):
        result = (result,)
    err, rest = result[0], result[1:]
    if err != cu.CUresult.CUDA_SUCCESS:
        name = cu.cuGetErrorName(err)
        text = name[1].decode() if name[0] == cu.CUresult.CUDA_SUCCESS else str(err)
        raise DeviceFailureError(f"{what} failed: {text} ({int(err)})")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


class GraphLayer:
    """Graphs on one PyCUDA stream in the current context; destroys what it made on close."""

    def __init__(self, stream):
        self.cu = cu = bindings()
        self.pystream = stream
        self.stream = cu.CUstream(int(stream.handle))
        self._graphs: list[Any] = []
        self._execs: list[Any] = []

    # -- building ------------------------------------------------------------------------
    def capture(self, launch: Callable[[Any], None], into=None):
        """A graph of whatever ``launch(stream)`` launches on the PyCUDA stream (or those
        nodes added to the existing graph ``into``, e.g. a conditional node's body)."""
        cu = self.cu
        mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        if into is None:
            _check(cu.cuStreamBeginCapture(self.stream, mode), "cuStreamBeginCapture")
        else:
            _check(
                cu.cuStreamBeginCaptureToGraph(self.stream, into, None, None, 0, mode),
                "cuStreamBeginCaptureToGraph",
            )
        try:
            launch(self.pystream)
        finally:
            graph = _check(cu.cuStreamEndCapture(self.stream), "cuStreamEndCapture")
        if into is None:
            self._graphs.append(graph)
        return graph

    def while_graph(self, body: Callable[[Any, int], None]):
        """A graph of one WHILE conditional node (CUDA 12.3+) whose condition starts at 1 on
        every launch; ``body(stream, handle)`` launches the body's kernels, the last of which
        sets the condition from the device (``cudaGraphSetConditional(handle, ...)``)."""
        cu = self.cu
        ctx = _check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
        graph = _check(cu.cuGraphCreate(0), "cuGraphCreate")
        self._graphs.append(graph)
        flags = int(cu.CU_GRAPH_COND_ASSIGN_DEFAULT)
        handle = _check(
            cu.cuGraphConditionalHandleCreate(graph, ctx, 1, flags),
            "cuGraphConditionalHandleCreate",
        )
        params = cu.CUgraphNodeParams()
        params.type = cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
        params.conditional.handle = handle
        params.conditional.type = cu.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_WHILE
        params.conditional.size = 1
        params.conditional.ctx = ctx
        _check(cu.cuGraphAddNode(graph, None, None, 0, params), "cuGraphAddNode (WHILE)")
        inner = params.conditional.phGraph_out[0]
        self.capture(lambda stream: body(stream, int(handle)), into=inner)
        return graph

    def instantiate(self, graph, device_launch: bool = False, upload: bool = True):
        """An executable graph; ``device_launch``: launchable from device code (instantiated
        with the device-launch flag and uploaded, as device launch requires)."""
        cu = self.cu
        flags = (
            int(cu.CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)
            if device_launch
            else 0
        )
        exe = _check(
            cu.cuGraphInstantiate(graph, flags),
            "cuGraphInstantiate" + (" (device launch)" if device_launch else ""),
        )
        self._execs.append(exe)
        if upload:
            _check(cu.cuGraphUpload(exe, self.stream), "cuGraphUpload")
        return exe

    # -- running -------------------------------------------------------------------------
    def launch(self, exe) -> None:
        _check(self.cu.cuGraphLaunch(exe, self.stream), "cuGraphLaunch")

    @staticmethod
    def handle(exe) -> int:
        """The executable graph's handle as device code takes it (cudaGraphExec_t)."""
        return int(exe)

    def close(self) -> None:
        cu = self.cu
        for exe in reversed(self._execs):
            cu.cuGraphExecDestroy(exe)
        for graph in reversed(self._graphs):
            cu.cuGraphDestroy(graph)
        self._execs, self._graphs = [], []


def release(layer: GraphLayer | None) -> None:
    """Close a session's graph layer on the way out, quietly (a failed run's context may be
    gone already); None is nothing to close."""
    if layer is not None:
        try:
            layer.close()
        except Exception:
            pass
