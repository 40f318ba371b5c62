"""Carneiro Pessoa et al. 2018, "GPU-accelerated backtracking using CUDA Dynamic
Parallelism": configuring the CDP runtime from a plan
computed on the host, CDP-BP and CDP-DP3, and their Table 2 (mean speedup over serial).
"""

from __future__ import annotations

from . import Artefact, Paper

#: Their Table 2: mean speedup over serial, N-Queens and ATSP together, K40m.
PAPER_TABLE2: dict[str, dict[str, float]] = {
    "DP2": {"10-12": 1.30, "13-15": 3.26, "16-19": 5.11, "all": 2.99},
    "DP3": {"10-12": 1.08, "13-15": 5.20, "16-19": 6.68, "all": 4.20},
    "CDP-DP3": {"10-12": 2.10, "13-15": 7.89, "16-19": 7.12, "all": 5.72},
    "CDP-BP": {"10-12": 5.24, "13-15": 8.38, "16-19": 7.72, "all": 7.10},
    "BP-DFS": {"10-12": 5.82, "13-15": 15.86, "16-19": 15.70, "all": 12.37},
    "multicore (20 cores)": {"10-12": 4.63, "13-15": 14.71, "16-19": 16.00, "all": 11.41},
}
#: Their best parameters (K40m).
PAPER_BEST = {
    "BP-DFS": {"block": 128, "depth": 7},
    "CDP-BP": {"block": 128, "child_block": 64, "depths": (5, 7)},
    "DP2": {"block": 128, "child_block": 32, "depths": (4, 7)},
    "DP3": {"block": 128, "child_block": 32},
    "CDP-DP3": {"block": 128, "child_block": 64},
}

PAPER = Paper(
    "carneiro",
    "Carneiro Pessoa et al.: GPU-accelerated backtracking using CUDA Dynamic Parallelism (2018)",
    (Artefact("table2", "mean speedup over serial per N range: DP2, DP3, CDP-DP3, CDP-BP, BP-DFS, multicore",
              planned="needs the strategies cdp-bp and cdp-dp3 and the runtime-configuration plan"),),
)
