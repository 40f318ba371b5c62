"""Device memory the CDP runtime reserves (Wang and Yalamanchili's Fig. 6).

Each point is a fresh context in its own worker: free device memory (cudaMemGetInfo)
right after the context is created, after setting one limit (the pending-launch limit or
the malloc heap), and, for the points "with module", after loading a module linked with
cudadevrt (kernels/characterize.cu) and after its first launch (the runtime may allocate
lazily). What is gone at the end is what the limit and the device runtime reserve.

Their Fig. 6(b) (memory per sync level) has no counterpart on CDP2: the sync-depth limit
is refused; the reading records the runtime's refusal verbatim.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..strategies.cdp.limits import HEADROOM, PENDING_SLOT_BYTES
from ..strategies.gpu_common import GpuSession
from ..textfmt import MIB, nbytes
from . import MACHINE_KEYS, SOURCES, load_points
from .probe import Probe, run_probe

KIND = "nqprof-characterize-reserve"
#: Pending-launch limits: 0, then powers of 4 (the largest that fits is added after the first
#: reading).
DEFAULT_PENDING = (
    0,
    1,
    4,
    16,
    32,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1 << 20,
    1 << 22,
    1 << 24,
)
#: Heap limits in MiB (the runtime's default is 8).
DEFAULT_HEAP_MIB = (1, 8, 64, 512, 4096, 16384)
#: The fit of bytes per pending-launch slot uses the points with at least this limit
#: (below it the runtime's fixed reserve dominates).
FIT_FROM = 1024
SYNC_DEPTH = 2  # the value the sync-depth reading asks for (their Fig. 6(b) varies it)


class ReserveProbe(Probe):
    name = "characterize-reserve"

    def open(self, n, params):
        return ReserveSession(params)


PROBE = ReserveProbe()


def _limit_enum(drv, kind: str):
    names = {
        "pending": "DEV_RUNTIME_PENDING_LAUNCH_COUNT",
        "heap": "MALLOC_HEAP_SIZE",
        "sync-depth": "DEV_RUNTIME_SYNC_DEPTH",
    }
    return getattr(drv.limit, names[kind], None)


class ReserveSession(GpuSession):
    """One reading: a limit set in a fresh context, then optionally a cudadevrt module."""

    def __init__(self, p):
        super().__init__("characterize reserve", 0, p)

    def run_once(self):
        p, drv = self.params, self.drv
        kind, value, module = p["kind"], int(p["value"]), bool(p["module"])
        out: dict[str, Any] = {"kind": kind, "value": value, "module": module, "error": None}
        out["free_context"], out["total"] = drv.mem_get_info()
        raw = value * MIB if kind == "heap" else value
        if kind == "pending" and raw * PENDING_SLOT_BYTES + HEADROOM > out["free_context"]:
            out["error"] = (
                f"does not fit: about {nbytes(raw * PENDING_SLOT_BYTES)} "
                f"of slots, {nbytes(out['free_context'])} free"
            )
            return out
        if kind == "heap" and raw + HEADROOM > out["free_context"]:
            out["error"] = (
                f"does not fit: {nbytes(raw)} of heap, {nbytes(out['free_context'])} free"
            )
            return out
        limit = _limit_enum(drv, kind)
        if limit is None:
            out["error"] = f"not measured: this PyCUDA has no {kind} limit"
            return out
        try:
            drv.Context.set_limit(limit, raw)
        except drv.Error as exc:  # CDP2 refuses the sync depth: that refusal is the reading
            out["error"] = f"refused: {exc}"
            return out
        out["limit_read"] = drv.Context.get_limit(limit)
        out["free_limit"] = drv.mem_get_info()[0]
        if module:
            func = self.build(SOURCES[0]).function("char_empty")
            out["free_module"] = drv.mem_get_info()[0]
            func(block=(1, 1, 1), grid=(1, 1))
            drv.Context.synchronize()
            out["free_launch"] = drv.mem_get_info()[0]
        info = self.gpu.facts
        out.update(
            device=info["name"],
            driver=info["driver"],
            toolkit=self.modules[0].toolkit_version if self.modules else None,
        )
        return out


# --- results ------------------------------------------------------------------------------


@dataclass
class ReservePoint:
    kind: str  # "pending", "heap" (value in MiB) or "sync-depth"
    value: int
    module: bool
    free_context: int | None = None
    free_limit: int | None = None
    free_module: int | None = None
    free_launch: int | None = None
    limit_read: int | None = None
    total: int | None = None
    error: str | None = None
    #: the reading's conditions (nqprof.conditions: CPU, and the GPU's clocks and throttling)
    conditions: dict[str, Any] = field(default_factory=dict)

    @property
    def reserved(self) -> int | None:
        """Bytes gone since the context was created (after the last step taken)."""
        last = next(
            (f for f in (self.free_launch, self.free_module, self.free_limit) if f is not None),
            None,
        )
        if self.error or self.free_context is None or last is None:
            return None
        return self.free_context - last

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReservePoint:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def largest_pending(free_bytes: int) -> int:
    """The largest pending-launch limit whose slots fit beside the headroom."""
    return max(0, (free_bytes - HEADROOM) // PENDING_SLOT_BYTES)


def measure(
    pending: Sequence[int] = DEFAULT_PENDING,
    heap_mib: Sequence[int] = DEFAULT_HEAP_MIB,
    timeout: float = 120,
    progress=None,
    probe: Callable[..., tuple[dict, dict]] = run_probe,
) -> dict[str, Any]:
    """Every limit with and without the module, each in a fresh worker; a kind's larger
    values are skipped after one that does not fit. The pending limits end with the
    largest that fits the free memory of the first reading. Returns the JSON document."""
    from ..errors import NqprofError

    points: list[ReservePoint] = []
    machine: dict[str, Any] = {}

    def one(kind: str, value: int, module: bool) -> ReservePoint:
        if progress is not None:
            progress.case(f"reserve {kind}={value:,}{' + module' if module else ''}")
        try:
            r, conditions = probe(PROBE, {"kind": kind, "value": value, "module": module}, timeout)
        except NqprofError as exc:
            return ReservePoint(kind, value, module, error=str(exc))
        machine.update({k: r[k] for k in MACHINE_KEYS if r.get(k)})
        return ReservePoint.from_dict({**r, "conditions": conditions})

    for kind, values in (("pending", pending), ("heap", heap_mib)):
        for module in (False, True):
            todo, topped = sorted(set(values)), False
            while todo:
                value = todo.pop(0)
                pt = one(kind, value, module)
                points.append(pt)
                if pt.error and pt.error.startswith("does not fit"):
                    break
                if kind == "pending" and not topped and pt.free_context:
                    topped, top = True, largest_pending(pt.free_context)
                    todo = sorted({v for v in todo if v < top} | {top})
    points.append(one("sync-depth", SYNC_DEPTH, True))
    return {"kind": KIND, "machine": machine, "points": [asdict(p) for p in points]}


def load(doc: dict[str, Any]) -> list[ReservePoint]:
    return load_points(doc, KIND, "reserve characterization", ReservePoint.from_dict)


def fit_slot_bytes(
    points: Iterable[ReservePoint], fit_from: int = FIT_FROM
) -> tuple[float, float, int] | None:
    """(bytes per pending-launch slot, fixed bytes, points used): a least-squares line
    through the reserve with the module loaded over the limits >= ``fit_from``, leaving out a
    plateau where the reserve stops growing (measured on an H200: 5,442 MiB at 1M, 4M and 15M
    slots alike); None with fewer than two such points."""
    pts = sorted(
        (p.value, p.reserved)
        for p in points
        if p.kind == "pending" and p.module and p.reserved is not None and p.value >= fit_from
    )
    cap = max((r for _, r in pts), default=None)
    if sum(r == cap for _, r in pts) > 1:  # a plateau: the limits there reserved no more
        pts = [(v, r) for v, r in pts if r != cap]
    if len(pts) < 2 or len({v for v, _ in pts}) < 2:
        return None
    x = np.array([v for v, _ in pts], dtype=float)
    y = np.array([r for _, r in pts], dtype=float)
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept), len(pts)


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / MIB:.1f}"


def table(points: Sequence[ReservePoint]) -> tuple[list[str], list[list], list[str]]:
    """One row per limit value (pending, then heap): reserve without and with the module."""
    header = [
        "limit",
        "value",
        "reserved, limit only (MiB)",
        "reserved, + cudadevrt module (MiB)",
        "note",
    ]
    by_key: dict[tuple[str, int], dict[bool, ReservePoint]] = {}
    for p in points:
        if p.kind != "sync-depth":
            by_key.setdefault((p.kind, p.value), {})[p.module] = p
    rows, notes = [], []
    for (kind, value), pair in by_key.items():
        cells, why = [], []
        for module in (False, True):
            p = pair.get(module)
            cells.append("-" if p is None else _mib(p.reserved))
            if p is not None and p.error:
                why.append(("with module: " if module else "") + p.error)
        label = "pending launches" if kind == "pending" else "malloc heap"
        shown = f"{value:,}" if kind == "pending" else f"{value:,} MiB"
        rows.append([label, shown, *cells, "; ".join(why)])
    fit = fit_slot_bytes(points)
    if fit:
        slope, intercept, used = fit
        notes.append(
            f"bytes per pending-launch slot (fit over {used} limits >= {FIT_FROM:,}, module "
            f"loaded): {slope:,.0f} B ({slope / 1024:.2f} "
            f"KiB); fixed reserve {intercept / MIB:.1f} MiB"
        )
    for p in points:
        if p.kind == "sync-depth":
            notes.append(sync_depth_note(p))
    return header, rows, notes


def sync_depth_note(p: ReservePoint) -> str:
    """What the sync-depth reading says about their Fig. 6(b)."""
    if p.error and p.error.startswith("refused"):
        return (
            "Fig. 6(b) (memory per sync level) does not exist on "
            f"CDP2: setting the sync depth to {p.value} was {p.error}"
        )
    if p.error:
        return f"sync depth {p.value}: {p.error}"
    return f"sync depth {p.value} was accepted (CDP1?): {_mib(p.reserved)} MiB reserved"


def series(
    points: Iterable[ReservePoint], kind: str = "pending"
) -> dict[str, list[tuple[int, float]]]:
    """ "limit only" / "with module" -> [(value, reserved MiB)] of one kind's readings."""
    out: dict[str, list[tuple[int, float]]] = {}
    for p in points:
        if p.kind == kind and p.reserved is not None:
            out.setdefault("+ cudadevrt module" if p.module else "limit only", []).append(
                (p.value, p.reserved / MIB)
            )
    return {k: sorted(v) for k, v in out.items()}
