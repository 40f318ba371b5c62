"""feinbube: the host-seeded GPU kernel of Feinbube et al. (2010) ("BP-DFS" in Carneiro et al.).

The host expands the first ``depth`` rows into partial boards; the GPU runs one thread
per board, each finishing its subtree with the iterative bitmask DFS, and the partial
counts are summed on the GPU. ``opt`` selects the paper's optimisation step:

====================  ==============================================================
``local``             the DFS arrays in local memory (the first version)
``shared-stack``      (1) the stack of free squares moved to shared memory
``shared-all``        (2) the column/diagonal arrays moved to shared memory too
``extern``            (3) shared memory sized at launch instead of at compile time
``rows-left``         (4) arrays sized for the rows left (N - depth), not N
====================  ==============================================================
"""

from __future__ import annotations

from dataclasses import replace

from ..cuda.sources import KernelSource
from ..errors import InputError
from ..result import Measurement
from ..subproblems import expand
from .base import Strategy, block_param, choice_param, depth_param, rows_default
from .gpu_common import DYNAMIC_SHARED_LIMIT_SM90, STATIC_SHARED_LIMIT, GpuSession

#: opt -> (kernel, number of per-level arrays in shared memory, shared memory static?)
STEPS = {
    "local": ("feinbube_local", 0, True),
    "shared-stack": ("feinbube_shared_stack", 1, True),
    "shared-all": ("feinbube_shared_all", 4, True),
    "extern": ("feinbube_dynamic", 4, False),
    "rows-left": ("feinbube_dynamic", 4, False),
}
WORD = 4  # bytes per mask


def shared_bytes(n: int, params: dict) -> int:
    """Shared memory the step needs per block for its DFS arrays."""
    _, arrays, _ = STEPS[params["opt"]]
    levels = n - params["depth"] if params["opt"] == "rows-left" else n
    return arrays * levels * params["block"] * WORD


class Feinbube(Strategy):
    name = "feinbube"
    order = 30
    title = "host-seeded kernel: one thread per host-expanded subtree, iterative bitmask DFS"
    reference = "Feinbube et al. 2010; BP-DFS in Carneiro et al."
    device = "gpu"
    min_n = 2
    sources = (
        KernelSource(
            "feinbube.cu",
            cdp=False,
            kernels=(
                "feinbube_local",
                "feinbube_shared_stack",
                "feinbube_shared_all",
                "feinbube_dynamic",
            ),
            check_defines={"NQ_N": 18, "NQ_BLOCK": 128},
        ),
    )
    params = (
        choice_param("opt", "paper's step: local..rows-left", "rows-left", STEPS, "steps"),
        depth_param(rows_default(6, 1), "host rows, a thread per board"),
        block_param(64),
    )

    def check(self, n, params):
        need = shared_bytes(n, params)
        static = STEPS[params["opt"]][2]
        limit = STATIC_SHARED_LIMIT - 256 if static else DYNAMIC_SHARED_LIMIT_SM90
        if need > limit:
            per_thread = need // params["block"]
            raise InputError(
                f"feinbube opt={params['opt']} needs {need} B of "
                f"{'static' if static else 'dynamic'} shared memory per block at N={n}, over the "
                f"{limit} B limit: use block <= {limit // per_thread}"
            )

    def open(self, n, params):
        return FeinbubeSession(self.name, n, params)

    def open_part(self, n, params):
        return FeinbubePart(self.name, n, params)


class FeinbubeSession(GpuSession):
    def __init__(self, name, n, params):
        super().__init__(name, n, params)
        kernel, _, _ = STEPS[params["opt"]]
        self.block = params["block"]
        module = self.build(STRATEGY.sources[0], {"NQ_N": n, "NQ_BLOCK": self.block})
        self.func = module.function(kernel)
        boards = expand(n, params["depth"])
        self.boards = self.upload(boards)
        self.levels = n - self.boards.min_row if params["opt"] == "rows-left" else n
        self.dynamic = shared_bytes(n, params) if kernel == "feinbube_dynamic" else 0
        module.kernels[kernel]["dynamic_shared_bytes"] = self.dynamic
        self.allow_shared(self.func, self.dynamic)
        self.grid = self.grid_for(self.boards.count, self.block)
        self.total = self.counter()
        self.notes.append(
            f"{self.boards.count} boards at depth "
            f"{params['depth']}, grid {self.grid[0]} x {self.block}"
        )

    def run_once(self) -> Measurement:
        import numpy as np

        self.drv.memset_d32(self.total, 0, 2)
        with self.generation(0) as timer:
            self.func(
                *self.boards.args(),
                np.int32(self.n),
                np.int32(self.levels),
                self.total,
                block=(self.block, 1, 1),
                grid=self.grid,
                shared=self.dynamic,
            )
        count = int(self.read_u64(self.total)[0]) * self.boards.multiplier
        self.ran()
        return Measurement(count=count, wall_s=timer.wall_seconds, gpu_s=timer.seconds)


class FeinbubePart(FeinbubeSession):
    """Counts slices of the same expansion (nqprof.cluster): built and sized once, for the
    whole expansion; each slice is uploaded and counted in one generation."""

    def count_part(self, boards) -> Measurement:
        # The slice's boards are at rows >= depth: self.levels and the shared memory suffice.
        # Its count is the completions of its boards, without the symmetry factor.
        self.boards = self.upload(replace(boards, multiplier=1))
        self.grid = self.grid_for(self.boards.count, self.block)
        return self.run_once()


STRATEGY = Feinbube()
