"""bp-dfs: BP-DFS of Carneiro et al., by its name: the host-seeded kernel of Feinbube et al.
(nqprof's ``feinbube``, its last optimisation step) with Carneiro et al.'s parameters (block
128, host depth 7), so that their Table 2 reads with their names. Same kernel, same session:
no second copy."""

from __future__ import annotations

from .base import Strategy, block_param, depth_param, rows_default
from .feinbube import STRATEGY as FEINBUBE
from .feinbube import FeinbubeSession

#: The feinbube step BP-DFS is: shared-memory stacks sized for the rows left.
OPT = "rows-left"


class BpDfs(Strategy):
    name = "bp-dfs"
    order = 35
    title = "BP-DFS (Carneiro et al.): the feinbube kernel, rows-left, block 128, depth 7"
    reference = "Carneiro et al. (BP-DFS); Feinbube et al. 2010"
    device = "gpu"
    min_n = 2
    sources = FEINBUBE.sources
    params = (
        depth_param(rows_default(7, 1), "host rows, a thread per board"),
        block_param(128),
    )

    def check(self, n, params):
        FEINBUBE.check(n, {"opt": OPT, **params})

    def open(self, n, params):
        return FeinbubeSession(self.name, n, {"opt": OPT, **params})


STRATEGY = BpDfs()
