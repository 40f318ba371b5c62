"""The small interface every strategy implements, and its validated parameters.

A strategy is a class with a name, a short description, its parameters and two steps:

* :meth:`Strategy.open` does everything that must stay out of the timed region (expand
  subproblems, build and load kernels, set device limits) and returns a :class:`Session`;
* :meth:`Session.run_once` executes the search once and returns a
  :class:`~nqprof.result.Measurement`.

Timing, verification, watchdog and reporting live outside the strategies (runner.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import InputError
from ..numeric import integer_text
from ..result import Measurement

if TYPE_CHECKING:
    from ..cuda.sources import KernelSource
    from .counters import CounterLayout

Bound = int | Callable[[int], int]
#: A default that depends on parameters listed before it: ``f(n, values_so_far)``.
Derived = Callable[[int, Mapping[str, Any]], int | str]


@dataclass(frozen=True)
class Param:
    """A tunable parameter: an integer in a range (which may depend on N) or a choice."""

    name: str
    help: str
    default: int | str | Callable[[int], int | str]
    lo: Bound | None = None
    hi: Bound | None = None
    choices: tuple[str, ...] | None = None
    #: Text describing the bounds when they depend on N, or naming a long list of choices
    #: (for `nqprof strategies`, which fits in 100 columns: tests/test_listing.py).
    range_text: str | None = None
    #: The default is a :data:`Derived` function of N and the parameters resolved before
    #: this one (given or defaulted), e.g. a search depth that follows the host depth.
    derived: bool = False

    def default_for(self, n: int, earlier: Mapping[str, Any] | None = None) -> int | str:
        if not callable(self.default):
            return self.default
        return self.default(n, earlier or {}) if self.derived else self.default(n)

    def bounds_for(self, n: int) -> tuple[int, int]:
        lo = self.lo(n) if callable(self.lo) else self.lo
        hi = self.hi(n) if callable(self.hi) else self.hi
        return int(lo), int(hi)

    def describe_range(self) -> str:
        if self.range_text:
            return self.range_text
        if self.choices:
            return "|".join(self.choices)
        return f"{self.lo}..{self.hi}"

    def describe_default(self) -> str:
        if callable(self.default):
            return getattr(self.default, "__doc__", None) or "depends on N"
        return str(self.default)

    def parse(self, raw: object, n: int) -> int | str:
        """Validate one value for this N; raise :class:`InputError` naming the allowed range."""
        if self.choices:
            value = str(raw)
            if value not in self.choices:
                raise InputError(
                    f"parameter {self.name} must be one of {', '.join(self.choices)}, got {raw!r}"
                )
            return value
        try:
            value = integer_text(raw) if not isinstance(raw, int) else raw
        except ValueError:
            raise InputError(f"parameter {self.name} must be an integer, got {raw!r}") from None
        lo, hi = self.bounds_for(n)
        if not lo <= value <= hi:
            raise InputError(f"parameter {self.name} must be in {lo}..{hi} for N={n}, got {value}")
        return value


#: How many times a round whose stream hold gave up is run again before its time is kept
#: (flagged: the record's holds say how many gave up and how many rounds were re-run).
RETIME_TRIES = 3


class Session:
    """A prepared strategy: run it as many times as wanted, then close it."""

    #: GPU sessions: their timed regions' stream holds (nqprof.strategies.gpu_common)
    holds: dict[str, int] | None = None

    def run_once(self) -> Measurement:
        raise NotImplementedError

    def run_round(self) -> Measurement:
        """One round, as runners ask for it: a round in which a stream hold gave up (its GPU
        time then holds the host's latency: a pause of the host while it queued the region)
        is run again, up to RETIME_TRIES times, each re-run counted in ``holds["retimed"]``;
        a round that gave up every time is kept, its hold counted as given up."""
        holds = self.holds
        for _ in range(RETIME_TRIES if holds is not None else 0):
            before = holds["gave_up"]
            m = self.run_once()
            if holds["gave_up"] == before:
                return m
            holds["retimed"] = holds.get("retimed", 0) + 1
        return self.run_once()

    def info(self) -> dict[str, Any]:
        """Static facts about the prepared run: kernels, memory ledger, device, toolkit."""
        return {}

    def close(self) -> None:
        pass


class Strategy:
    """Base class of all strategies. Subclasses set the class attributes and ``open``."""

    name: ClassVar[str]
    title: ClassVar[str]
    #: Position in `nqprof strategies` and error messages (nqprof's own: the literature's
    #: order, serial first); other packages' strategies come after, by name.
    order: ClassVar[float] = 1000
    reference: ClassVar[str] = ""
    #: "cpu" runs in-process; "gpu" runs in a watchdog child process and needs PyCUDA.
    device: ClassVar[str] = "cpu"
    #: Uses CUDA Dynamic Parallelism (device-side launches, linked with cudadevrt).
    cdp: ClassVar[bool] = False
    params: ClassVar[tuple[Param, ...]] = ()
    min_n: ClassVar[int] = 1
    #: The kernel sources (under kernels/) this strategy builds, declared once: the build
    #: catalog (nqprof.catalog.catalog) is the union over the registered strategies.
    sources: ClassVar[tuple[KernelSource, ...]] = ()
    #: The device-side counters its kernels keep, if any (mirrored from a kernel header).
    counters: ClassVar[CounterLayout | None] = None
    #: CDP: the kernel of generation 1's grids (those the host grid launches), one of its
    #: sources' kernels; ``launch=record`` replays it from the host (strategies.cdp.replay).
    child_kernel: ClassVar[str] = ""
    #: The largest N the benchmark suite runs by default: where a round still takes well
    #: under a second on an H200, so that `pytest bench/` finishes within minutes.
    bench_max_n: ClassVar[int] = 16
    #: The smallest N the benchmark suite runs by default (above the suite's own first N and
    #: the strategy's min_n): where small boards measure only what every N pays (a launch
    #: chain's fixed cost), fewer of them keep `pytest bench/` quick.
    bench_min_n: ClassVar[int] = 1
    #: The smallest relative change `nqprof compare` calls for this strategy's cases, where
    #: its times move between runs more than its kind's default (analysis.stats.MIN_EFFECT
    #: for GPU cases, MIN_EFFECT_CPU for CPU ones); saved with each benchmark.
    min_effect: ClassVar[float | None] = None

    @property
    def needs_gpu(self) -> bool:
        return self.device == "gpu"

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params) or "none"
        raise InputError(f"strategy {self.name} has no parameter {name!r} (parameters: {known})")

    def resolve(self, n: int, given: Mapping[str, object] | None = None) -> dict[str, Any]:
        """Validate N and the given parameters, fill in defaults, check combinations."""
        from ..problem import validate_n

        n = validate_n(n)
        if n < self.min_n:
            raise InputError(f"strategy {self.name} needs N >= {self.min_n}, got {n}")
        given = dict(given or {})
        for key in given:
            self.param(key)
        values: dict[str, Any] = {}
        for p in self.params:  # in order: a derived default sees the parameters before it
            # Defaults must be valid too (they may depend on N and on earlier parameters).
            values[p.name] = p.parse(
                given[p.name] if p.name in given else p.default_for(n, values), n
            )
        self.check(n, values)
        return values

    def check(self, n: int, params: dict[str, Any]) -> None:
        """Cross-parameter constraints; raise :class:`InputError`."""

    def measurement_build(self, params: Mapping[str, Any]) -> str | None:
        """Why a run with ``params`` counts something other than N's solutions (a CDP
        strategy's ``launch`` variants, :class:`~nqprof.strategies.cdp.strategy.CdpStrategy`),
        said in its record in place of a verified count; None for a run whose count is
        verified."""
        return None

    def open(self, n: int, params: dict[str, Any]) -> Session:
        raise NotImplementedError

    def open_rotated(self, n: int, params: dict[str, Any]) -> Session:
        """:meth:`open` for timed rounds: where a round is short, several sessions take the
        rounds in turn, each a draw of where its allocations land
        (:mod:`nqprof.strategies.rotation`)."""
        from .rotation import Rotation

        return Rotation(lambda: self.open(n, params), n)

    #: What a cluster's slices are slices of (:meth:`part_items`), in its record.
    part_unit: ClassVar[str] = "boards"

    def part_items(self, n: int, depth: int):
        """The work items a cluster cuts into tasks, if the strategy has its own (a numpy
        array, one row an item, each carrying its weight); None: the boards of
        ``subproblems.expand(n, depth)``, counted without their symmetry multiplier."""
        return None

    def open_part(self, n: int, params: dict[str, Any]) -> Session:
        """A session that counts given slices of the host expansion (for nqprof.cluster):
        its ``count_part(boards)`` returns a Measurement whose count is the completions of
        those boards, without the symmetry multiplier. Prepared once, used for many slices."""
        raise InputError(
            f"strategy {self.name} cannot count a slice of the boards (no cluster support)"
        )


def rows_default(most: int, below: int) -> Callable[[int], int]:
    """The default min(``most``, N-``below``), at least 1: a function of N whose docstring says
    so (what `nqprof strategies` lists)."""

    def default(n: int) -> int:
        return max(1, min(most, n - below))

    default.__doc__ = f"min({most}, N-{below})"
    return default


def depth_param(
    default: Callable[[int], int], help: str = "rows expanded on the host", lo: int = 1
) -> Param:
    """The host expansion depth: ``lo..N-1`` rows."""
    return Param(
        "depth",
        help,
        default=default,
        lo=lo,
        hi=lambda n: n - 1,
        range_text=f"{lo}..N-1",
    )


def choice_param(name: str, help: str, default: str, choices: Collection[str], unit: str) -> Param:
    """A parameter naming one of ``choices`` (its range: how many ``unit`` there are)."""
    return Param(
        name, help, default=default, choices=tuple(choices), range_text=f"{len(choices)} {unit}"
    )


def block_param(
    default: int = 128, name: str = "block", help: str = "threads per block", hi: int = 1024
) -> Param:
    return Param(name, help, default=default, lo=1, hi=hi)
