"""The plan of a CDP run, computed on the host before the first launch (Carneiro et al.).

Before anything is launched the host works out what the whole recursion will need and
configures the runtime from it; when that does not fit in device memory it shrinks the
chunk of host boards launched at once, and launches chunk by chunk. A :class:`Plan` holds:

* the generations, from the strategy's next-depth function: per generation the row its
  threads start from, the rows they search, and the most boards and grids, both as the
  paper's bound (``maxnodes(d) = (N-1)!/(N-d)!``: a board with ``d`` queens has at most
  ``maxnodes(d')/maxnodes(d)`` descendants ``d' - d`` rows below) and as nqprof's exact host
  model (:mod:`.model`: boards per row of the search tree, N <= 18);
* the limits set before the first launch (:func:`~.limits.configure_runtime`, for one
  chunk), the device runtime's reserve they imply, and the memory the host allocates;
* the chunk size ``c`` and the number of chunks.

Pure: it takes the strategy's :class:`Recursion` and the free device memory (measured in a
session, given with ``nqprof plan --free-gib`` elsewhere) and launches nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from ...errors import InputError
from ...textfmt import nbytes, plural, table
from .limits import (
    DEFAULT_HEAP,
    DEFAULT_PENDING,
    GIB,
    HEADROOM,
    MAX_PENDING,
    MIB,
    PENDING_SLOT_BYTES,
    DoesNotFitError,
    RuntimeLimits,
    configure_runtime,
)
from .model import MAX_TABLE_N, ROW_BOARDS, ROW_LIVE, Demand

#: Device memory assumed free where there is no device to ask (`nqprof plan` without
#: --free-gib): an H200 after its context is created (about 139.3 GiB of 140 GiB).
DEFAULT_FREE_BYTES = 139 * GIB
#: What loading one module linked with cudadevrt takes from free memory at the runtime's
#: default pending-launch limit (measured on an H200: 100 MiB; 160 MiB kept for other
#: drivers and toolkits, see the design notes).
MODULE_RESERVE_BYTES = 160 * MIB
#: The two runtime configurations a strategy can be launched under (``config=``).
CONFIGS = ("carneiro", "default")
#: A run that must be chunked gets chunks sized for this share of the free memory: the
#: reserve per slot and the chunk's share of the run are estimates (a chunk that only fits
#: in all of it is still taken when no smaller one fits this share).
CHUNK_FILL = 0.9
#: Boards the chunk-share probe expands at most (see :func:`chunk_share`).
PROBE_BOARDS = 2_000_000


# --- the paper's bound ---------------------------------------------------------------------


def maxnodes(n: int, d: int) -> int:
    """Carneiro et al.'s bound on the nodes at depth ``d`` (``d`` queens placed) below one
    first-row placement: ``(N-1)! / (N-d)!``."""
    if not 1 <= d <= n:
        raise ValueError(f"depth must be in 1..{n}, got {d}")
    return math.factorial(n - 1) // math.factorial(n - d)


def growth_bound(n: int, d: int, d2: int) -> int:
    """The most descendants ``d2 - d`` rows below a board at depth ``d``:
    ``maxnodes(d2) / maxnodes(d)`` (an integer: the product ``(N-d) ... (N-d2+1)``)."""
    return maxnodes(n, d2) // maxnodes(n, d)


# --- what a strategy tells the plan --------------------------------------------------------


@dataclass(frozen=True)
class Generation:
    """One generation of grids: the row its threads start from, the rows they search
    (None: DP-1's grids cover ``z`` rows with N^z threads), and the most boards and grids,
    as the paper's bound and as nqprof's model (None where the model has no numbers)."""

    generation: int
    row: int
    search: int | None
    bound_boards: int
    bound_grids: int
    model_boards: int | None
    model_grids: int | None
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Recursion:
    """What a CDP strategy's run needs, for the plan: its generations (for all host boards)
    and, for a chunk of ``c`` host boards, the estimate of what the runtime must hold
    (``demand(c)``, None where there is none) and the bytes the host allocates on the device
    for it besides the boards (``host_bytes(c)``: e.g. CDP-BP's preallocated child boards).
    ``uses_heap``: whether its kernels malloc on the device."""

    strategy: str
    n: int
    host_boards: int
    generations: list[Generation]
    demand: Callable[[int], Demand | None]
    host_bytes: Callable[[int], int] = lambda c: 0
    uses_heap: bool = True
    notes: tuple[str, ...] = ()


# --- building the generations --------------------------------------------------------------


def _live(n: int, row: int) -> int | None:
    """Boards at ``row`` whose next row has a free square (the model's table), if known."""
    if n > MAX_TABLE_N or not 1 <= row <= n:
        return None
    return ROW_LIVE[n][row - 1]


def _boards(n: int, row: int) -> int | None:
    if n > MAX_TABLE_N or not 1 <= row <= n:
        return None
    return ROW_BOARDS[n][row - 1]


def _min(*values):
    known = [v for v in values if v is not None]
    return min(known) if known else None


def thread_generations(
    n: int, host_boards: int, schedule: list[tuple[int, int]], note: str = ""
) -> list[Generation]:
    """Generations of a strategy whose threads each launch one child grid over the boards they
    reached (DP-2, DP-3, DP-SWAP's nominal schedule): ``schedule`` is (row, search) per
    generation, generation 0 the host grid. A child generation holds the boards with a free
    next row at its row, in at most one grid per thread of the generation before."""
    row0 = schedule[0][0]
    gens = [Generation(0, row0, schedule[0][1], host_boards, 1, host_boards, 1)]
    prev_bound, prev_model = host_boards, host_boards
    for g, (row, search) in enumerate(schedule[1:], start=1):
        bound = host_boards * growth_bound(n, row0, row)
        model = _live(n, row)
        gens.append(
            Generation(
                g, row, search, bound, min(prev_bound, bound), model, _min(prev_model, model), note
            )
        )
        prev_bound, prev_model = bound, model
    return gens


def block_generations(
    n: int, host_boards: int, block: int, child_block: int, schedule: list[tuple[int, int]]
) -> list[Generation]:
    """Generations of a strategy whose blocks each launch ONE child grid over every board the
    block reached (CDP-BP, CDP-DP3): generation 1 has at most one grid per block of the host
    grid; a later one at most one per block of the generation before."""
    row0 = schedule[0][0]
    gens = [Generation(0, row0, schedule[0][1], host_boards, 1, host_boards, 1)]
    blocks_bound = blocks_model = -(-host_boards // block)
    for g, (row, search) in enumerate(schedule[1:], start=1):
        bound = host_boards * growth_bound(n, row0, row)
        model = _live(n, row)
        gens.append(
            Generation(
                g, row, search, bound, min(blocks_bound, bound), model, _min(blocks_model, model)
            )
        )
        # the blocks of this generation's grids: one per child_block boards, plus a partial one
        # per grid
        blocks_bound = -(-bound // child_block) + gens[-1].bound_grids
        if model is not None and gens[-1].model_grids is not None:
            blocks_model = -(-model // child_block) + gens[-1].model_grids
    return gens


def dp1_generations(n: int, host_boards: int, depth: int, z: int) -> list[Generation]:
    """DP-1: the host grid (one thread per host board) launches one swarm grid per board;
    a swarm grid at row r covers rows r..r+z-1 and launches one grid per valid board at
    r + z. A grid is handed one board (by value)."""
    gens = [Generation(0, depth, None, host_boards, 1, host_boards, 1)]
    row, g = depth, 1
    while row < n:
        bound = host_boards * growth_bound(n, depth, row)
        model = host_boards if row == depth else _boards(n, row)
        gens.append(
            Generation(
                g,
                row,
                min(z, n - row),
                bound,
                bound,
                model,
                model,
                "one board per grid, N^z threads",
            )
        )
        row, g = row + z, g + 1
    return gens


# --- sharing a run out in chunks -----------------------------------------------------------


@lru_cache(maxsize=32)
def _descendants(n: int, depth: int) -> tuple[list[int], int]:
    """Per host board (largest first), its descendants a few rows below the host depth (the
    deepest row whose boards stay under :data:`PROBE_BOARDS`), and that row."""
    import numpy as np

    from ...subproblems import expand, place_row

    host = expand(n, depth)
    cols, ld, rd, row = host.cols, host.ld, host.rd, host.row
    parent = np.arange(len(host), dtype=np.int64)
    counts = np.ones(len(host), dtype=np.int64)
    reached = depth
    while len(cols) and int(row.min()) < n - 1:
        # the next row holds at most (N - row) children per board
        if len(cols) * (n - int(row.min())) > PROBE_BOARDS and reached > depth:
            break
        cols, ld, rd, row, parent = place_row(n, cols, ld, rd, row, parent)
        if not len(cols):
            break
        counts = np.bincount(parent, minlength=len(host))
        reached += 1
        if len(cols) > PROBE_BOARDS:
            break
    return sorted((int(c) for c in counts), reverse=True), reached


def chunk_share(n: int, depth: int, host_boards: int, chunk: int) -> float:
    """The largest share of the run's work (boards, launches, heap) a chunk of ``chunk``
    host boards may carry: at least ``chunk / host_boards``, and the share of the ``chunk``
    largest host subtrees a few rows below the host depth (where the expansion is cheap).
    An estimate: subtrees diverge further below; the limits' margins cover some of that, and
    a run past them fails loudly."""
    if chunk >= host_boards:
        return 1.0
    uniform = chunk / host_boards
    counts, _ = _descendants(n, depth)
    total = sum(counts)
    if not total or len(counts) != host_boards:
        return uniform
    return max(uniform, min(1.0, sum(counts[:chunk]) / total))


def scaled(demand: Demand | None, share: float, fixed_pending: int = 0) -> Demand | None:
    """``demand`` for a part of the run carrying ``share`` of it (plus ``fixed_pending``
    launches known exactly)."""
    if demand is None:
        return None
    if share >= 1.0 and not fixed_pending:
        return demand
    heap = None if demand.heap_bytes is None else math.ceil(demand.heap_bytes * share)
    return Demand(
        pending=fixed_pending + math.ceil(demand.pending * share),
        heap_bytes=heap,
        launches=fixed_pending + math.ceil(demand.launches * share),
        basis=demand.basis + (f"; x {share:.3g} for a chunk" if share < 1.0 else ""),
        advice=demand.advice,
    )


# --- the plan ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reserve:
    """What the device runtime reserves: bytes per pending-launch slot, per loaded module
    (linked with cudadevrt), and where the numbers come from."""

    slot_bytes: int = PENDING_SLOT_BYTES
    module_bytes: int = MODULE_RESERVE_BYTES
    modules: int = 1
    source: str = "defaults, measured on an H200; a run records what its module load took"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Plan:
    """Everything decided before the first launch of a CDP run."""

    strategy: str
    n: int
    config: str
    host_boards: int
    generations: list[Generation]
    limits: RuntimeLimits
    reserve: Reserve
    chunk: int
    chunks: int
    chunk_forced: bool
    host_bytes: int  # allocated from the host for one chunk (boards, accounting, buffers)
    free_bytes: int
    free_source: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def chunked(self) -> bool:
        return self.chunks > 1

    def chunk_ranges(self) -> list[tuple[int, int]]:
        """[lo, hi) of each chunk's host boards."""
        return [
            (lo, min(lo + self.chunk, self.host_boards))
            for lo in range(0, max(self.host_boards, 1), self.chunk)
        ]

    def boards_per_chunk(self) -> list[int]:
        return [hi - lo for lo, hi in self.chunk_ranges()]

    def as_dict(self) -> dict[str, Any]:
        """The plan as the run record carries it."""
        per = self.boards_per_chunk()
        lim = self.limits
        return {
            "strategy": self.strategy,
            "n": self.n,
            "config": self.config,
            "host_boards": self.host_boards,
            "generations": [g.as_dict() for g in self.generations],
            "limits": {
                "pending_launches": lim.pending,
                "heap_bytes": lim.heap_bytes,
                "reserve_bytes": lim.reserve_bytes,
                "need_bytes": lim.need_bytes,
                "how": lim.how,
            },
            "reserve": self.reserve.as_dict(),
            "free_bytes": self.free_bytes,
            "free_source": self.free_source,
            "host_bytes": self.host_bytes,
            "chunk": self.chunk,
            "chunks": self.chunks,
            "chunk_forced": self.chunk_forced,
            "boards_per_chunk": {"min": min(per), "max": max(per)} if per else {},
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        """One line for the run's notes."""
        how = (
            "forced (chunk=)"
            if self.chunk_forced
            else ("to fit" if self.chunked else "the whole run fits")
        )
        return (
            f"plan: config={self.config}, {plural(self.chunks, 'chunk')} of up to "
            f"{self.chunk:,} of {self.host_boards:,} host boards ({how}); "
            f"{plural(len(self.generations), 'generation')}"
        )


def render(plan: Plan) -> str:
    """The plan as `nqprof plan` prints it."""
    lim, res = plan.limits, plan.reserve
    lines = [
        f"plan for {plan.strategy} N={plan.n} (config={plan.config}): nothing is launched",
        f"host boards  {plan.host_boards:,}",
        "",
        "generations (bound: Carneiro et al.'s maxnodes(d) = (N-1)!/(N-d)!; "
        "model: nqprof's exact host model, for all host boards)",
    ]
    rows = []
    for g in plan.generations:
        rows.append(
            [
                g.generation,
                g.row,
                "-" if g.search is None else g.search,
                f"{g.bound_boards:,}",
                "-" if g.model_boards is None else f"{g.model_boards:,}",
                f"{g.bound_grids:,}",
                "-" if g.model_grids is None else f"{g.model_grids:,}",
                g.note,
            ]
        )
    lines.append(
        table(
            [
                "gen",
                "row",
                "search",
                "boards: bound",
                "boards: model",
                "grids: bound",
                "grids: model",
                "note",
            ],
            rows,
        )
    )
    heap = "runtime default (8.0 MiB)" if lim.heap_bytes is None else nbytes(lim.heap_bytes, "MiB")
    lines += [
        "",
        f"limits       pending-launch {lim.pending:,}, heap {heap} ({lim.how})",
        f"reserve      {res.slot_bytes / 1024:.1f} KiB per pending-launch slot = "
        f"{nbytes(lim.reserve_bytes, 'MiB')}; {nbytes(res.module_bytes, 'MiB')} "
        f"per module x {res.modules} ({res.source})",
        f"host allocs  {nbytes(plan.host_bytes, 'MiB')} per "
        "chunk (boards, accounting, preallocated child boards)",
        f"memory       needs ~{nbytes(lim.need_bytes, 'MiB')} of "
        f"{nbytes(plan.free_bytes, 'MiB')} free ({plan.free_source})",
        f"chunks       c = {plan.chunk:,} host boards per launch, "
        f"{plural(plan.chunks, 'chunk', fmt=',')}"
        + (" (forced with chunk=)" if plan.chunk_forced else ""),
    ]
    lines += [f"note         {note}" for note in plan.notes]
    return "\n".join(lines)


def make_plan(
    rec: Recursion,
    free_bytes: int,
    params: dict[str, Any],
    label: str | None = None,
    board_bytes: int = 13,
    counter_bytes: int = 0,
    reserve: Reserve | None = None,
    free_source: str = "measured on the device",
    max_pending: int = MAX_PENDING,
) -> Plan:
    """Decide the limits and the chunk size of a run (``params``: the strategy's resolved
    parameters: ``pending``, ``heap_mib``, ``chunk``, ``config`` where it has them).

    ``config=default`` leaves the runtime's defaults (no limits set, one chunk unless
    ``chunk=`` is given) so that a run that needs more fails on the device, as in the paper.
    Otherwise the largest chunk that fits in ``free_bytes`` is chosen (or ``chunk=`` is
    taken); :class:`InputError` if not even one board per chunk fits, with the reason."""
    sizing = _Sizing(
        rec,
        params,
        label or f"{rec.strategy} N={rec.n}",
        reserve or Reserve(),
        board_bytes,
        counter_bytes,
        max_pending,
    )
    config = params.get("config", "carneiro")
    forced = int(params.get("chunk", 0) or 0)
    notes = list(rec.notes)
    if config == "default":
        c, limits = _runtime_defaults(sizing, free_bytes, forced, notes)
    elif forced:
        c = min(forced, sizing.host)
        limits = sizing.limits_for(c, free_bytes)  # a DoesNotFitError says why it does not fit
    else:
        c, limits = _largest_chunk(sizing, free_bytes)
    return Plan(
        rec.strategy,
        rec.n,
        config,
        rec.host_boards,
        rec.generations,
        limits,
        sizing.reserve,
        c,
        -(-sizing.host // c),
        bool(forced),
        sizing.allocated(c),
        free_bytes,
        free_source,
        tuple(notes),
    )


@dataclass(frozen=True)
class _Sizing:
    """What sizing a chunk of a run needs: the recursion, the parameters and the memory the
    host allocates beside the runtime's limits."""

    rec: Recursion
    params: dict[str, Any]
    label: str
    reserve: Reserve
    board_bytes: int
    counter_bytes: int
    max_pending: int

    @property
    def host(self) -> int:
        return max(self.rec.host_boards, 1)

    def allocated(self, c: int) -> int:
        """What the host allocates for a chunk of ``c`` boards: boards, counters, buffers."""
        return c * self.board_bytes + self.counter_bytes + self.rec.host_bytes(c)

    def extra(self, c: int) -> int:
        """Device memory besides the limits' own: the host's allocations and the modules."""
        return self.allocated(c) + self.reserve.module_bytes * self.reserve.modules

    def limits_for(self, c: int, free: int) -> RuntimeLimits:
        label = (
            self.label if c >= self.host or c == 1 else f"{self.label} (chunk of {c:,} host boards)"
        )
        return configure_runtime(
            label,
            self.rec.demand(c),
            free,
            pending=self.params.get("pending", 0),
            heap_mib=self.params.get("heap_mib", 0) if self.rec.uses_heap else None,
            extra_bytes=self.extra(c),
            max_pending=self.max_pending,
        )


def _runtime_defaults(
    sizing: _Sizing, free_bytes: int, forced: int, notes: list[str]
) -> tuple[int, RuntimeLimits]:
    """``config=default``: the runtime's default limits, not sized; one chunk unless
    ``chunk=`` is given; a note when the run needs more than the defaults."""
    params, reserve = sizing.params, sizing.reserve
    given = [f"{k}={params[k]}" for k in ("pending", "heap_mib") if params.get(k)]
    if given:
        raise InputError(
            f"{sizing.label}: config=default launches with the runtime's default limits, so "
            f"{' and '.join(given)} would be ignored: drop it, or use config=carneiro"
        )
    c = min(forced, sizing.host) if forced else sizing.host
    demand = sizing.rec.demand(c)
    limits = RuntimeLimits(
        pending=DEFAULT_PENDING,
        heap_bytes=None,
        reserve_bytes=DEFAULT_PENDING * reserve.slot_bytes,
        need_bytes=DEFAULT_PENDING * reserve.slot_bytes + DEFAULT_HEAP + sizing.extra(c) + HEADROOM,
        free_bytes=free_bytes,
        how="config=default: the runtime's defaults, not sized",
    )
    if demand is not None and (
        demand.pending > DEFAULT_PENDING or (demand.heap_bytes or 0) > DEFAULT_HEAP
    ):
        notes.append(
            f"config=default: the run needs about {demand.pending:,} pending launches and "
            f"{nbytes(demand.heap_bytes or 0, 'MiB')} of heap per chunk; past the defaults "
            "launches and mallocs fail on the device (reported, never counted)"
        )
    return c, limits


def _largest_chunk(sizing: _Sizing, free_bytes: int) -> tuple[int, RuntimeLimits]:
    """All host boards at once if they fit; else the largest chunk that fits in
    :data:`CHUNK_FILL` of the free memory (bisection; one board always, or an InputError)."""
    host = sizing.host
    try:
        return host, sizing.limits_for(host, free_bytes)
    except DoesNotFitError:
        pass
    try:
        smallest = sizing.limits_for(1, free_bytes)
    except DoesNotFitError as exc:
        raise InputError(
            f"{exc}. That is with one host board per chunk (of {host:,}): the smallest chunk "
            "does not fit either"
        ) from None
    lo, hi = 1, host  # lo fits, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            sizing.limits_for(mid, int(free_bytes * CHUNK_FILL))
            lo = mid
        except DoesNotFitError:
            hi = mid
    return lo, (smallest if lo == 1 else sizing.limits_for(lo, free_bytes))


def config_param():
    from ..base import Param

    return Param(
        # carneiro: limits and chunks from the plan; default: the runtime's defaults (8 MiB
        # heap, 2048 pending launches)
        "config",
        "plan's limits or runtime defaults",
        default="carneiro",
        choices=CONFIGS,
    )


def chunk_param():
    from ..base import Param

    # 0: the largest chunk of host boards that fits, from the plan
    return Param("chunk", "boards per root launch (0: plan)", default=0, lo=0, hi=1_000_000_000)
