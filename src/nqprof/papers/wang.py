"""Wang and Yalamanchili 2014, "Characterization and analysis of dynamic parallelism in
unstructured GPU applications": what CDP costs in launch time and reserved memory, SIMD
lane efficiency, and the ideal CDP time without launch overhead (Kepler: K20c, Titan, K40).
"""

from __future__ import annotations

from . import Artefact, Paper

#: Fig. 5: child-launch time (ms) at 256K launches; about 1 ms from 32 to 512 launches.
PAPER_LAUNCH_MS_256K = {"K20c": 143.0, "Titan": 115.5, "K40": 98.6}
PAPER_LAUNCH_COUNT_LARGE = 256 * 1024
PAPER_LAUNCH_MS_SMALL = 1.0
PAPER_LAUNCH_SMALL_RANGE = (32, 512)
#: Fig. 6(a): memory reserved for linking the device runtime at a pending-launch limit <= 32.
PAPER_RESERVE_MB = (172, 202)
PAPER_RESERVE_LIMIT = 32
#: Fig. 6(b): memory per synchronization level (CDP1 only; no sync depth on CDP2).
PAPER_PER_SYNC_LEVEL_MB = (95, 109)
#: Their conclusion: CDP could give 1.13-2.73x, but launch overhead made every benchmark slower.
PAPER_IDEAL_SPEEDUP = (1.13, 2.73)
PAPER_MEASURED_SLOWDOWN = 1.21

PAPER = Paper(
    "wang",
    "Wang, Yalamanchili: Characterization and analysis of "
    "dynamic parallelism in unstructured GPU applications (2014)",
    (
        Artefact(
            "fig4",
            "speedup over the non-CDP code: measured and ideal CDP (nqprof characterize ideal)",
        ),
        Artefact("fig5", "child-launch time vs launch count (nqprof characterize launch)"),
        Artefact(
            "fig6",
            "memory the device runtime reserves vs the "
            "pending-launch limit (nqprof characterize reserve)",
        ),
    ),
)


def paper_lines(artefact: str | None = None) -> list[str]:
    """Their published numbers, as the reports print them beside ours: one artefact's
    (fig4, fig5, fig6) or all."""
    large = ", ".join(f"{gpu} {ms:g} ms" for gpu, ms in PAPER_LAUNCH_MS_256K.items())
    lo, hi = PAPER_LAUNCH_SMALL_RANGE
    lines = {
        "fig5": f"Paper (Kepler) Fig. 5: about {PAPER_LAUNCH_MS_SMALL:g} "
        f"ms for {lo}-{hi} launches; at 256K launches {large}.",
        "fig6": f"Paper (Kepler) Fig. 6(a): {PAPER_RESERVE_MB[0]}-{PAPER_RESERVE_MB[1]} MB "
        f"reserved at pending-launch limits <= {PAPER_RESERVE_LIMIT}; Fig. 6(b): "
        f"{PAPER_PER_SYNC_LEVEL_MB[0]}-{PAPER_PER_SYNC_LEVEL_MB[1]} MB per sync level.",
        "fig4": "Paper (Kepler) Fig. 4: ideal CDP "
        f"{PAPER_IDEAL_SPEEDUP[0]}-{PAPER_IDEAL_SPEEDUP[1]}x over the non-CDP code; measured CDP "
        f"{PAPER_MEASURED_SLOWDOWN}x slower on average.",
    }
    return [lines[artefact]] if artefact else list(lines.values())
