"""Where a short round's buffers lie: placed once, where the round runs fastest.

A round of a few microseconds takes a different time depending on where its atomically
updated counters and its task list lie in device memory: each fresh allocation is a level
that every round at it keeps, while where the kernel's code and the stream hold lie moves
nothing (docs/results/placement-h200, tools/placement_probe.py). Each session therefore drew
its case's time anew, and two runs' sessions disagreed. A session whose rounds are that
short tries its buffers at many fresh allocations when it opens and keeps the one its round
is fastest at, so nearly every session finds the fastest level (one placement in eight at
that level is missed by 32 tries with a chance of 1.4%). The record keeps every placement's
median, so the spread stays visible. A round over :data:`LONGEST_PLACED_S` is not placed:
the levels lie a fraction of a microsecond apart, a small part of a round that long, and
the eight sessions a short round rotates over (:mod:`nqprof.strategies.rotation`) average
them, while 32 placements of three rounds each would cost every session a hundred rounds
(docs/results/core-h200/same-baseline).

Every GPU session also draws where its buffers land at all: a layout pad of a random number
of pages, allocated first (:func:`pad_layout`), so that its placement is a draw of its own
and not the one the session before it left."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

# a board larger than LARGEST_N is not placed, not even timed once to find out: the limit
# rotation keeps too (nqprof.strategies.rotation)
from .rotation import LARGEST_N

#: A round longer than this (seconds, the first round timed at the session's own placement)
#: is not placed.
LONGEST_PLACED_S = 15e-6
#: Placements tried (the session's own first, then fresh allocations).
TRIALS = 32
#: Rounds timed at each placement; their median is compared.
ROUNDS = 3


def place(
    first: Any,
    make: Callable[[], Any],
    use: Callable[[Any], None],
    measure: Callable[[], float],
    free: Callable[[Any], None],
    trials: int | None = None,
    rounds: int | None = None,
    longest: float | None = None,
) -> dict[str, Any]:
    """Time one round (``measure``: one round's seconds) at the placement in use
    (``first``): one over ``longest`` leaves it there, timed no more. Otherwise time
    ``rounds`` rounds there, the first among them, then at ``trials - 1`` fresh ones
    (``make``), each installed by ``use``; keep the fastest by median (the first of
    equals), ``free`` the others. The summary:
    placements tried, the index kept and every placement's median (us). Unset: TRIALS,
    ROUNDS and LONGEST_PLACED_S as the module holds them now."""
    trials = TRIALS if trials is None else trials
    rounds = ROUNDS if rounds is None else rounds
    longest = LONGEST_PLACED_S if longest is None else longest
    if trials < 1 or rounds < 1:
        raise ValueError(f"placement needs trials and rounds >= 1, got {trials} and {rounds}")

    def median(timed: list[float]) -> float:
        """The median of ``timed`` and as many more rounds as make ``rounds``."""
        return statistics.median(timed + [measure() for _ in range(rounds - len(timed))])

    # One round decides whether the round is short enough to place: a round of seconds
    # timed ROUNDS times before it is refused would add those rounds to the session's
    # opening (docs/results/verdicts-h200).
    probe = measure()
    placements, medians = [first], [probe]
    if probe <= longest:
        medians[0] = median([probe])
        for _ in range(trials - 1):
            placements.append(make())
            use(placements[-1])
            medians.append(median([]))
    kept = min(range(len(medians)), key=medians.__getitem__)
    use(placements[kept])
    for i, p in enumerate(placements):
        if i != kept:
            free(p)
    return {
        "tried": len(placements),
        "kept": kept,
        "medians_us": [round(m * 1e6, 3) for m in medians],
    }


def note(summary: dict[str, Any], what: str) -> str:
    """The record's line on where ``what`` was placed."""
    meds = summary["medians_us"]
    if summary["tried"] == 1:
        return f"{what} not placed: a round of {meds[0]:.1f} us is longer than placement matters"
    return (
        f"{what} placed where the round ran fastest of {summary['tried']} fresh allocations "
        f"(medians {min(meds):.2f}-{max(meds):.2f} us)"
    )


def note_too_large(n: int, what: str) -> str:
    """The record's line on buffers not placed because the board is past LARGEST_N."""
    return (
        f"{what} not placed: N={n} counts for far longer than placement matters "
        f"(placed up to N={LARGEST_N})"
    )


#: Device memory is handed out in pages of this size (the driver's large-page granule).
GRANULE_BYTES = 2 << 20
#: A session's layout pad is 0 to PAD_GRANULES - 1 granules, drawn at random.
PAD_GRANULES = 64


def pad_granules(draw: Callable[[int], int] | None = None) -> int:
    """The granules of a session's layout pad: ``draw(PAD_GRANULES)`` (default: the
    system's random source, so that nothing a run repeats fixes it)."""
    if draw is None:
        import secrets

        draw = secrets.randbelow
    k = int(draw(PAD_GRANULES))
    if not 0 <= k < PAD_GRANULES:
        raise ValueError(f"a layout pad of {k} granules is outside 0..{PAD_GRANULES - 1}")
    return k


def pad_layout(drv, granules: int):
    """Allocate the layout pad (None for 0 granules): held for the session's life, ahead of
    its buffers, it moves where they land in physical memory. A fresh context given the same
    allocations in the same order gets its buffers where the last one had them, so the
    sessions of one run (two processes one after another) drew the same offset while another
    run drew another, and their agreement made a floor narrower than the runs' difference
    (docs/results/placement-h200). With a pad drawn at random, each session draws its
    placement anew, as the floor's statistics assume."""
    return drv.mem_alloc(granules * GRANULE_BYTES) if granules else None
