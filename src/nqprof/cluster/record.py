"""What a clustered run returns: the verified count, and where the time went.

Per task: its slice, partial count, time on its worker (``seconds``: the task as the
worker ran it, preparation of the worker's session included on its first task;
``count_s``: the count alone; ``gpu_s``: CUDA-event time; ``made``: the tasks its GPU
made from its slice, where the strategy makes them), the worker, host and GPU. Per
worker: tasks, busy time, the GPU's counting time and its share of the busy time (how
much of the worker's time its GPU spent counting), the tasks its GPU made. Over the run:

* load balance = the busiest worker's busy time / the mean busy time (1.0: even);
* speedup over one worker = the sum of the task times / the wall time, i.e. how long one
  such worker would have taken over how long the cluster took.

Tasks resumed from a checkpoint count towards the total but not towards times.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..textfmt import plural
from ..textfmt import seconds as _fmt_s


@dataclass
class ClusterRecord:
    strategy: str
    n: int
    params: dict[str, Any]
    depth: int
    boards: int
    count: int
    expected: int
    verified: bool
    wall_s: float
    cluster: str
    dashboard: str | None
    tasks: list[dict[str, Any]]
    workers: list[dict[str, Any]] = field(default_factory=list)
    load_balance: float | None = None
    speedup: float | None = None
    resumed: int = 0
    checkpoint: str | None = None
    notes: list[str] = field(default_factory=list)
    #: What the slices are slices of (Strategy.part_unit): boards, frames, ...
    unit: str = "boards"
    #: Seconds to open the GPU workers' sessions (process, context, module) before the
    #: tasks were submitted, outside ``wall_s``; None where none was opened.
    setup_s: float | None = None

    @classmethod
    def build(cls, *, tasks: list[dict[str, Any]], wall_s: float, **fields) -> ClusterRecord:
        ran = [t for t in tasks if not t.get("resumed")]
        by_worker: dict[str, dict[str, Any]] = {}
        for t in ran:
            w = by_worker.setdefault(
                t["worker"],
                {
                    "worker": t["worker"],
                    "host": t.get("host"),
                    "gpu": t.get("gpu"),
                    "tasks": 0,
                    "busy_s": 0.0,
                    "gpu_s": None,
                    "made": None,
                },
            )
            w["tasks"] += 1
            w["busy_s"] += t["seconds"]
            if t.get("gpu_s") is not None:
                w["gpu_s"] = (w["gpu_s"] or 0.0) + t["gpu_s"]
            if t.get("made") is not None:
                w["made"] = (w["made"] or 0) + t["made"]
        for w in by_worker.values():
            w["counting_share"] = (
                w["gpu_s"] / w["busy_s"] if w["gpu_s"] is not None and w["busy_s"] > 0 else None
            )
        workers = sorted(by_worker.values(), key=lambda w: w["worker"])
        busy = [w["busy_s"] for w in workers]
        balance = max(busy) / (sum(busy) / len(busy)) if busy and sum(busy) > 0 else None
        speedup = sum(t["seconds"] for t in ran) / wall_s if ran and wall_s > 0 else None
        return cls(
            tasks=sorted(tasks, key=lambda t: t["index"]),
            wall_s=wall_s,
            workers=workers,
            load_balance=balance,
            speedup=speedup,
            resumed=len(tasks) - len(ran),
            **fields,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def summary(self) -> str:
        ok = "verified" if self.verified else f"MISMATCH (expected {self.expected})"
        params = ", ".join(f"{k}={v}" for k, v in self.params.items()) or "-"
        ran = [t for t in self.tasks if not t.get("resumed")]
        lines = [
            f"strategy   {self.strategy}",
            f"N          {self.n}",
            f"params     {params}",
            f"count      {self.count}  {ok}",
            f"cluster    {self.cluster}, {plural(len(self.workers), 'worker')} ran tasks",
            f"tasks      {plural(len(self.tasks), 'interleaved slice')} "
            f"of {self.boards} {self.unit} at depth {self.depth}"
            + (f", {self.resumed} resumed from {self.checkpoint}" if self.resumed else ""),
            f"wall time  {_fmt_s(self.wall_s)}"
            + (
                f" (the workers' sessions opened before, in {_fmt_s(self.setup_s)})"
                if self.setup_s is not None
                else ""
            ),
        ]
        if ran:
            secs = sorted(t["seconds"] for t in ran)
            lines.append(
                f"task time  min {_fmt_s(secs[0])}, median {_fmt_s(secs[len(secs) // 2])}, max "
                f"{_fmt_s(secs[-1])}, sum {_fmt_s(sum(secs))}"
            )
        if self.load_balance is not None:
            lines.append(f"balance    {self.load_balance:.3f} (busiest worker / mean busy time)")
        if self.speedup is not None:
            lines.append(
                f"speedup    {self.speedup:.2f}x over one worker (sum of task times / wall time)"
            )
        for w in self.workers:
            where = f"{w['host']}" + (f", GPU {w['gpu']}" if w.get("gpu") is not None else "")
            counting = (
                f", the GPU counting {_fmt_s(w['gpu_s'])} ({w['counting_share']:.1%} of it)"
                if w.get("counting_share") is not None
                else ""
            )
            made = (
                f", {plural(w['made'], 'task', fmt=',')} made on its GPU"
                if w.get("made") is not None
                else ""
            )
            lines.append(
                f"worker     {w['worker']} ({where}): {plural(w['tasks'], 'task')}, "
                f"busy {_fmt_s(w['busy_s'])}{counting}{made}"
            )
        if self.dashboard:
            lines.append(f"dashboard  {self.dashboard}")
        if self.checkpoint:
            lines.append(f"checkpoint {self.checkpoint}")
        for note in self.notes:
            lines.append(f"note       {note}")
        return "\n".join(lines)
