"""How many blocks of one grid an SM holds at once, launched from the host and from the device.

A persistent grid (fast's counting kernel, cdp-cst's and graph-cst's) is sized to the blocks
the device holds at once, by the occupancy calculator, for a host launch. If a grid launched
from the device (CDP2) were held fewer blocks per SM, its blocks beyond those would wait,
and the first ones would count every task. This measures it directly: ``char_resident``
(kernels/characterize.cu), whose thread 0 of each block records its SM and the interval it
stayed resident (with the block's dynamic shared memory in use), launched

* from the host (``host``);
* from the device by one thread of a host-launched grid, with CDP2, into
  ``cudaStreamTailLaunch`` (``tail``) or ``cudaStreamFireAndForget`` (``fire-and-forget``),

for each dynamic shared memory size. From the records: the most blocks any SM held at once,
and the median over the SMs, beside the occupancy calculator's blocks per SM.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..strategies.gpu_common import GpuSession
from . import SOURCES, check_listed, load_points, machine_of, split_machine
from .probe import SessionProbe, run_probe

KIND = "nqprof-characterize-residency"
#: Launch paths: the host, and CDP2 device launches into these streams (CHAR_STREAM_TAIL is
#: kernels/characterize.cu's, fire-and-forget cdp.cuh's CDP_STREAM_FIRE_AND_FORGET).
PATHS = {"host": None, "tail": 3, "fire-and-forget": 2}
#: Dynamic shared memory per block, bytes: none, then around cdp-cst's counting blocks
#: (36,352 B at N=19 and 20, 38,912 B at N=21) and past the 48 KiB a block has by default.
DEFAULT_SHARED = (0, 16384, 36352, 38912, 49152, 65536)
DEFAULT_BLOCK = 128
#: Blocks launched per SM (more than any SM can hold at these sizes: the extra ones wait).
BLOCKS_PER_SM = 8
#: How long each block stays resident, microseconds.
SPIN_US = 200


@dataclass
class ResidencyPoint:
    path: str
    shared: int
    block: int
    grid: int = 0
    #: the occupancy calculator's blocks per SM (for a host launch)
    occupancy: int | None = None
    #: the most blocks any SM held at once, and the median over the SMs that ran blocks
    most: int | None = None
    median: float | None = None
    sms: int | None = None
    span_us: float | None = None
    error: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ResidencyPoint:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def held_at_once(records: Iterable[tuple[int, int, int]]) -> dict[int, int]:
    """Per SM, the most (sm, start, end) intervals open at one moment (an end at the same
    instant as a start does not overlap it)."""
    events: dict[int, list[tuple[int, int]]] = {}
    for sm, start, end in records:
        if end < start:
            raise ValueError(f"a block ended before it started (SM {sm}: {start} > {end})")
        events.setdefault(int(sm), []).extend(((int(start), 1), (int(end), -1)))
    out = {}
    for sm, evs in events.items():
        now = most = 0
        for _, step in sorted(evs):  # -1 sorts before +1 at the same time
            now += step
            most = max(most, now)
        out[sm] = most
    return out


def summarize(path: str, shared: int, block: int, records, occupancy: int | None):
    """A point from one launch's block records (sm, start ns, end ns)."""
    rows = [tuple(int(x) for x in r) for r in records]
    held = held_at_once(rows)
    span = (max(r[2] for r in rows) - min(r[1] for r in rows)) / 1e3 if rows else None
    return ResidencyPoint(
        path,
        shared,
        block,
        grid=len(rows),
        occupancy=occupancy,
        most=max(held.values()) if held else None,
        median=statistics.median(held.values()) if held else None,
        sms=len(held),
        span_us=span,
    )


class ResidencySession(GpuSession):
    """Every (path, shared) of the parameters in one context."""

    def __init__(self, p):
        super().__init__("characterize residency", 0, p)
        module = self.build(SOURCES[0])
        self.child = module.function("char_resident")
        self.launcher = module.function("char_resident_launch")

    def run_once(self) -> list[dict[str, Any]]:
        import numpy as np

        from ..strategies.cdp.accounting import WORDS, decode_accounting, error_name

        p, drv = self.params, self.drv
        block, sms = int(p["block"]), self.gpu.facts["sm_count"]
        grid = sms * int(p["blocks_per_sm"])
        spin = np.uint64(int(p["spin_us"]) * 1000)
        rec = drv.mem_alloc(3 * 8 * grid)
        acct = self.counter(WORDS)
        out = []
        for shared in p["shared"]:
            try:
                self.allow_shared(self.child, int(shared))
                occupancy = self.resident_blocks(self.child, block, int(shared))
            except drv.Error as exc:
                for path in p["paths"]:
                    out.append(asdict(ResidencyPoint(path, shared, block, error=str(exc))))
                continue
            for path in p["paths"]:
                drv.memset_d32(rec, 0, 6 * grid)
                drv.memset_d32(acct, 0, 2 * WORDS)
                try:
                    if PATHS[path] is None:
                        self.child(
                            rec, spin, block=(block, 1, 1), grid=(grid, 1), shared=int(shared)
                        )
                    else:
                        self.launcher(
                            rec,
                            spin,
                            np.uint32(grid),
                            np.uint32(block),
                            np.uint32(shared),
                            np.int32(PATHS[path]),
                            acct,
                            block=(1, 1, 1),
                            grid=(1, 1),
                        )
                    drv.Context.synchronize()
                except drv.Error as exc:
                    out.append(asdict(ResidencyPoint(path, shared, block, error=str(exc))))
                    continue
                a = decode_accounting(self.read_u64(acct, WORDS), host_boards=1)
                if a.launch_failures:
                    error = f"the device launch failed ({error_name(a.first_error)})"
                    out.append(asdict(ResidencyPoint(path, shared, block, error=error)))
                    continue
                host = np.empty(3 * grid, np.uint64)
                drv.memcpy_dtoh(host, rec)
                point = summarize(path, shared, block, host.reshape(-1, 3), occupancy)
                out.append(asdict(point))
        self.ran()
        machine = machine_of(self)
        return [{**pt, **machine} for pt in out]


PROBE = SessionProbe("characterize-residency", ResidencySession)


def check_paths(paths: Sequence[str]) -> list[str]:
    return check_listed(paths, tuple(PATHS))


def measure(
    shared: Sequence[int] = DEFAULT_SHARED,
    paths: Sequence[str] = tuple(PATHS),
    block: int = DEFAULT_BLOCK,
    timeout: float = 120,
    progress=None,
    probe=run_probe,
) -> dict[str, Any]:
    """Every (path, shared) in one fresh worker; the JSON document."""
    if progress is not None:
        progress.case(f"residency of {len(shared)} shared sizes x {len(paths)} paths")
    params = {
        "shared": [int(s) for s in shared],
        "paths": check_paths(paths),
        "block": int(block),
        "blocks_per_sm": BLOCKS_PER_SM,
        "spin_us": SPIN_US,
    }
    reading, conditions = probe(PROBE, params, timeout)
    machine, readings = split_machine(reading)
    return {
        "kind": KIND,
        "machine": machine,
        "settings": {k: params[k] for k in ("block", "blocks_per_sm", "spin_us")},
        "conditions": conditions,
        "points": [asdict(ResidencyPoint.from_dict(r)) for r in readings],
    }


def load(doc: dict[str, Any]) -> list[ResidencyPoint]:
    return load_points(doc, KIND, "residency characterization", ResidencyPoint.from_dict)


def table(points: Sequence[ResidencyPoint]) -> tuple[list[str], list[list], list[str]]:
    header = [
        "shared (B)",
        "path",
        "occupancy (blocks/SM)",
        "held at once: most",
        "median",
        "SMs",
        "span (us)",
    ]
    rows = []
    for p in points:
        if p.error:
            rows.append([f"{p.shared:,}", p.path, "", p.error, "", "", ""])
            continue
        rows.append(
            [
                f"{p.shared:,}",
                p.path,
                p.occupancy,
                p.most,
                f"{p.median:g}",
                p.sms,
                f"{p.span_us:,.0f}",
            ]
        )
    notes = [
        "occupancy: the calculator's blocks per SM at that shared memory (what a persistent "
        "grid is sized to); held at once: counted from each block's SM and resident interval",
        "a device-launched grid held fewer blocks than a host-launched one runs its extra "
        "blocks after the first ones: a persistent grid's first blocks then count every task",
    ]
    return header, rows, notes
