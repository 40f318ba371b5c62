"""Device launch time vs launch count, Wang and Yalamanchili's method (their Fig. 5).

A parent grid in which each of ``count`` threads launches one empty child (time t1), and
the same parent built with the launch removed (t2, ``-DCDP_LAUNCH_MODE=2``); t1 - t2 is
the time the launches cost. Both are CUDA-event times of the host launch (on CDP2 the
parent's work in the stream completes when its children have), medians over the timed
rounds after ``warmup`` ones, t1 and t2 alternating. The rounds go through nqprof's round
loop (nqprof.runner.RoundLoop, :func:`nqprof.characterize.probe.run_paired`): ``repeats``
of them, or (None: ``--rounds auto``) the relative-standard-error rule on each round's
t1 - t2; each point records the rule that stopped it and the conditions of its rounds.
Kernels: kernels/characterize.cu.

Every point runs in a fresh worker process (a fresh context) whose pending-launch limit
is sized to its launch count before the module is loaded; the kernel accounts for every
launch's return code, and a point with failed launches shows the failures, not a time.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError, LimitError
from ..numeric import integer_text, shown
from ..rounds import RoundRule
from ..strategies.cdp.accounting import WORDS, decode_accounting, error_name
from ..strategies.cdp.limits import HEADROOM, PENDING_SLOT_BYTES
from ..strategies.gpu_common import GpuSession
from ..textfmt import nbytes, plural
from . import SOURCES, load_points
from .probe import Probe, paired_round, run_paired

#: The launch modes nqprof's strategies use, as the kernel's `stream` argument
#: (CDP_STREAM_* of kernels/cdp.cuh, and CHAR_STREAM_TAIL of kernels/characterize.cu).
MODES = {"default": 0, "own": 1, "fire-and-forget": 2, "tail": 3}
#: Device graph launch (CUDA 12.0+; nqprof.characterize.graph_launch): fire-and-forget and tail
#: launches of a device-launchable graph, made from a kernel that runs in a graph.
GRAPH_MODES = ("graph-ff", "graph-tail")
MODES.update({m: -1 for m in GRAPH_MODES})
#: What one launching graph may make of device graph launches, as measured on an H200 (CUDA
#: 13.0, driver 580; docs/characterize.md): 120 fire-and-forget launches over one execution
#: (the CUDA programming guide's limit: the 121st fails with cudaErrorInvalidValue), and one
#: tail launch of another graph (with two, each from its own thread, the launching graph
#: never completed; the guide allows 255 pending). A graph mode measures counts up to its
#: limit, the limit itself included, and states the limit for larger counts.
GRAPH_LIMITS = {"graph-ff": 120, "graph-tail": 1}
GRAPH_LIMIT_TEXT = {
    "graph-ff": "a graph makes at most 120 fire-and-forget launches over one execution "
    "(CUDA's limit; the 121st fails)",
    "graph-tail": "a graph whose threads make 2 or more tail launches of other graphs never "
    "completed here (measured on an H200, CUDA 13.0); 1 is measured",
}
#: Pending-launch slots a launch takes: a thread's own stream takes a second one (measured on
#: an H200 with DP-1: launches failed with the limit at the launch count).
SLOTS = {"own": 2}
#: 32 to 256K launches in powers of two, and 1M.
DEFAULT_COUNTS = tuple(32 << k for k in range(14)) + (1 << 20,)
#: The most launches a point may make (--counts): 16 times the largest default point.
MAX_COUNT = 1 << 24
#: A pending limit is never set below this (the runtime's own default is 2048).
MIN_PENDING = 32
PENDING_MARGIN = 1.25
KIND = "nqprof-characterize-launch"


def parse_modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise InputError(f"--modes takes a comma list of {', '.join(MODES)}, got {text!r}")
    return modes


def parse_counts(text: str) -> list[int]:
    """Launch counts: a comma list of integers (``32,1024,262144``; ``256K`` and ``1M`` too),
    each in 1..MAX_COUNT."""
    out = []
    for raw in str(text).split(","):
        raw = raw.strip().upper()
        scale = {"K": 1024, "M": 1 << 20}.get(raw[-1:], 1)
        try:
            count = integer_text(raw[:-1] if scale > 1 else raw) * scale
        except ValueError:
            count = 0
        if not 1 <= count <= MAX_COUNT:
            raise InputError(
                "--counts takes a comma list of launch counts in "
                f"1..{MAX_COUNT} (e.g. 32,1K,256K,1M), got {shown(text)}"
            )
        out.append(count)
    return sorted(set(out))


def pending_for(count: int, mode: str) -> int:
    """The pending-launch limit a point sets: its launches' slots with a margin."""
    return max(MIN_PENDING, math.ceil(count * SLOTS.get(mode, 1) * PENDING_MARGIN))


# --- the GPU part (in a worker) -----------------------------------------------------------


class LaunchProbe(Probe):
    name = "characterize-launch"

    def open(self, n, params):
        return LaunchSession(params)


#: The worker imports this module and opens ``PROBE`` (nqprof.characterize.probe).
PROBE = LaunchProbe()


class LaunchSession(GpuSession):
    """One (mode, count) in a worker: the limit, both builds, alternating t1/t2 rounds."""

    def __init__(self, p):
        super().__init__("characterize launch", 0, p)
        try:
            self.mode, self.count, self.block = p["mode"], int(p["count"]), int(p["block"])
            self.pending = pending_for(self.count, self.mode)
            free, _ = self.drv.mem_get_info()
            need = self.pending * PENDING_SLOT_BYTES + HEADROOM
            if need > free:
                raise InputError(
                    f"{self.count:,} launches ({self.mode}) do not fit: a pending-launch limit of "
                    f"{self.pending:,} needs about {nbytes(need)} "
                    f"with headroom, {nbytes(free)} free"
                )
            took = self.gpu.set_limits(pending_launches=self.pending)["pending_launches"]
            slots = self.count * SLOTS.get(self.mode, 1)
            if took < slots:
                raise LimitError(
                    f"limit: the device runtime takes at most {took:,} pending launches here "
                    f"(asked {self.pending:,}), fewer than {self.mode} launches need from "
                    f"{self.count:,} on"
                )
            self.with_launch = self.build(SOURCES[0]).function("char_launch")
            self.without = self.build(SOURCES[0], {"CDP_LAUNCH_MODE": 2}).function("char_launch")
            self.acct = self.counter(WORDS)
        except BaseException:
            self.close()
            raise

    def _time(self, func, label: str):
        self.drv.memset_d32(self.acct, 0, 2 * WORDS)
        with self.generation(self.count, label) as timer:
            func(
                np.uint32(self.count),
                np.int32(MODES[self.mode]),
                self.acct,
                block=(self.block, 1, 1),
                grid=self.grid_for(self.count, self.block),
            )
        return timer.seconds, decode_accounting(
            self.read_u64(self.acct, WORDS), host_boards=self.count
        )

    def run_once(self):
        def timed(func, label):
            seconds, acct = self._time(func, label)
            return (
                seconds,
                acct.launches,
                acct.launch_failures,
                acct.first_error,
                acct.stream_failures,
            )

        return paired_round(self, self.with_launch, self.without, timed)


# --- results ------------------------------------------------------------------------------


@dataclass
class LaunchPoint:
    """One (mode, count): the medians, or why there are none."""

    mode: str
    count: int
    t1_s: list[float] = field(default_factory=list)
    t2_s: list[float] = field(default_factory=list)
    pending: int | None = None
    rounds: int = 0  # rounds run (warm-up included): launches and failures are over all of them
    launches: int = 0
    launch_failures: int = 0
    stream_failures: int = 0
    first_error: int = 0
    error: str | None = None
    #: graph modes: the different device graphs launched in turn, and what instantiating and
    #: uploading them took from free device memory
    copies: int | None = None
    upload_bytes: int | None = None
    #: set where the mode cannot make ``count`` launches at all (a graph mode past its limit):
    #: what it cannot do, stated instead of a measurement
    limit: str | None = None
    #: the rule that stopped the timed rounds (nqprof.rounds.RoundRule.describe), and the
    #: conditions of the rounds (nqprof.conditions: CPU, and the GPU's clocks and throttling)
    criterion: str | None = None
    conditions: dict[str, Any] = field(default_factory=dict)

    @property
    def t1(self) -> float | None:
        return statistics.median(self.t1_s) if self.t1_s else None

    @property
    def t2(self) -> float | None:
        return statistics.median(self.t2_s) if self.t2_s else None

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and self.limit is None
            and not self.launch_failures
            and not self.stream_failures
            and bool(self.t1_s)
        )

    @property
    def cost(self) -> float | None:
        """t1 - t2 in seconds: what the ``count`` launches cost."""
        return self.t1 - self.t2 if self.ok and self.t2 is not None else None

    @property
    def per_launch(self) -> float | None:
        return self.cost / self.count if self.cost is not None else None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LaunchPoint:
        keys = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in keys})


def graph_limit_text(mode: str) -> str:
    return f"limit: {GRAPH_LIMIT_TEXT[mode]}"


def counts_for(mode: str, counts: Sequence[int]) -> list[int]:
    """The counts a mode is asked for: as given, and for a graph mode with counts past its
    limit, the limit itself too (the most that mode can launch)."""
    out = sorted(set(counts))
    limit = GRAPH_LIMITS.get(mode)
    if limit is not None and out and out[-1] > limit and limit not in out:
        out = sorted([*out, limit])
    return out


def measure(
    counts: Sequence[int],
    modes: Sequence[str],
    block: int = 128,
    repeats: int | None = 5,
    warmup: int = 1,
    timeout: float = 120,
    progress=None,
    probe: Callable[..., dict] = run_paired,
    beyond_limits: bool = False,
) -> dict[str, Any]:
    """Every (mode, count) in its own worker; after a point that does not fit or times out,
    the larger counts of that mode are skipped. A graph mode's counts past its limit
    (:data:`GRAPH_LIMITS`) are stated as the limit, not run, unless ``beyond_limits`` (to
    measure where the limit bites). Returns the JSON document."""
    from ..errors import NqprofError

    points, machine = [], {}
    for mode in modes:
        stop = None
        for count in counts_for(mode, counts):
            if count > GRAPH_LIMITS.get(mode, count) and not beyond_limits:
                points.append(LaunchPoint(mode, count, limit=graph_limit_text(mode)))
                continue
            if progress is not None:
                progress.case(f"launch {mode} x{count:,}")
            if stop and stop.startswith("limit:"):
                points.append(LaunchPoint(mode, count, limit=stop))
                continue
            if stop:
                points.append(LaunchPoint(mode, count, error=f"skipped ({stop})"))
                continue
            params = {
                "mode": mode,
                "count": count,
                "block": block,
                "repeats": repeats,
                "warmup": warmup,
            }
            try:
                r = probe(_probe_for(mode), params, timeout)
            except LimitError as exc:  # what the device cannot do: stated, and so for more
                points.append(LaunchPoint(mode, count, limit=str(exc)))
                stop = str(exc)
                continue
            except NqprofError as exc:
                message = str(exc)
                points.append(LaunchPoint(mode, count, error=message))
                if "do not fit" in message or "within" in message:
                    stop = f"{count:,} did not fit or timed out"
                continue
            machine = {k: r[k] for k in ("device", "toolkit", "driver")}
            points.append(LaunchPoint.from_dict(r))
            if mode in GRAPH_MODES and points[-1].launch_failures:
                # the runtime's limit on pending graph launches is reached: larger counts only
                # fail more
                stop = (
                    f"launches failed at {count:,}: the runtime's limit on pending graph launches"
                )
            if progress is not None:
                pt = points[-1]
                progress.finish_case(f"{pt.cost * 1e3:.3f} ms" if pt.ok else "failed launches")
    rule = RoundRule.of(repeats).describe()
    return document(points, machine, block=block, repeats=repeats, warmup=warmup, rounds=rule)


def _probe_for(mode: str):
    if mode in GRAPH_MODES:
        from .graph_launch import PROBE as graph_probe

        return graph_probe
    return PROBE


def document(points: Iterable[LaunchPoint], machine: dict, **settings) -> dict[str, Any]:
    return {
        "kind": KIND,
        "machine": machine,
        "settings": settings,
        "points": [asdict(p) for p in points],
    }


def load(doc: dict[str, Any]) -> list[LaunchPoint]:
    return load_points(doc, KIND, "launch characterization", LaunchPoint.from_dict)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f}"


def table(points: Sequence[LaunchPoint]) -> tuple[list[str], list[list], list[str]]:
    """Header, rows and footnotes: per mode and count, t1, t2, the launch time and the cost
    of one launch."""
    header = [
        "mode",
        "launches",
        "pending limit",
        "t1 (ms)",
        "t2 (ms)",
        "launch time (ms)",
        "per launch (us)",
        "note",
    ]
    rows, notes = [], []
    for p in points:
        note = ""
        if p.limit:
            note = p.limit
        elif p.error:
            notes.append(f"[{len(notes) + 1}] {p.mode} x{p.count:,}: {p.error}")
            note = f"no measurement [{len(notes)}]"
        elif p.launch_failures or p.stream_failures:
            note = (
                f"{p.launch_failures:,} of {plural(p.launches, 'launch', 'launches', ',')} failed"
                + (f" over {plural(p.rounds, 'round')}" if p.rounds else "")
            )
            if p.first_error:
                note += f" (first: {error_name(p.first_error)})"
            if p.stream_failures:
                note += f", {p.stream_failures:,} stream creations failed"
        if p.upload_bytes is not None:
            note += (
                "; " if note else ""
            ) + f"{plural(p.copies, 'graph')} uploaded: {nbytes(p.upload_bytes)}"
        rows.append(
            [
                p.mode,
                f"{p.count:,}",
                "-" if p.pending is None else f"{p.pending:,}",
                _ms(p.t1),
                _ms(p.t2),
                _ms(p.cost),
                "-" if p.per_launch is None else f"{p.per_launch * 1e6:.3f}",
                note,
            ]
        )
    for criterion in dict.fromkeys(p.criterion for p in points if p.criterion):
        used = [p for p in points if p.criterion == criterion]
        rounds = sorted(len(p.t1_s) for p in used)
        notes.append(
            f"rounds: {criterion} ({rounds[0]} to {rounds[-1]} timed per point)"
            if rounds[0] != rounds[-1]
            else f"rounds: {criterion}"
        )
    return header, rows, notes


def series(points: Iterable[LaunchPoint]) -> dict[str, list[tuple[int, float, float]]]:
    """mode -> [(count, launch time s, per launch s)] of the good points."""
    out: dict[str, list[tuple[int, float, float]]] = {}
    for p in points:
        if p.cost is not None:
            out.setdefault(p.mode, []).append((p.count, p.cost, p.per_launch))
    return {k: sorted(v) for k, v in out.items()}
