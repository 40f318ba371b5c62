"""Wang and Yalamanchili 2014, "Characterization and analysis of dynamic parallelism in
unstructured GPU applications": what CDP costs in launch time and reserved memory, SIMD
lane efficiency, and the ideal CDP time without launch overhead (Kepler: K20c, Titan, K40).
"""

from __future__ import annotations

from . import Artefact, Paper

#: Fig. 5: child-launch time (ms) at 256K launches; about 1 ms from 32 to 512 launches.
PAPER_LAUNCH_MS_256K = {"K20c": 143.0, "Titan": 115.5, "K40": 98.6}
PAPER_LAUNCH_MS_SMALL = 1.0
#: Fig. 6(a): memory reserved for linking the device runtime at a pending-launch limit <= 32.
PAPER_RESERVE_MB = (172, 202)
#: Fig. 6(b): memory per synchronization level (CDP1 only; no sync depth on CDP2).
PAPER_PER_SYNC_LEVEL_MB = (95, 109)
#: Their conclusion: CDP could give 1.13-2.73x, but launch overhead made every benchmark slower.
PAPER_IDEAL_SPEEDUP = (1.13, 2.73)
PAPER_MEASURED_SLOWDOWN = 1.21

_PLANNED = "the characterization suite (nqprof characterize) is not written yet"
PAPER = Paper(
    "wang",
    "Wang, Yalamanchili: Characterization and analysis of dynamic parallelism in unstructured GPU applications (2014)",
    (
        Artefact("fig4", "speedup over the non-CDP code: measured and ideal CDP", planned=_PLANNED),
        Artefact("fig5", "child-launch time vs launch count", planned=_PLANNED),
        Artefact("fig6", "memory the device runtime reserves vs the pending-launch limit", planned=_PLANNED),
    ),
)
