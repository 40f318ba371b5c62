"""What a run returns: one record for every strategy, CPU or GPU."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from . import gpuconditions
from .rounds import median
from .textfmt import plural
from .textfmt import seconds as seconds_text

#: The version of the record's schema (:class:`RunRecord` as JSON, and as pytest-benchmark's
#: ``extra_info``). 1: records before the version was written (nqprof 0.1: the rounds only as
#: ``gpu_times``/``wall_times``; later ones added ``samples_compute``, ``case`` and the
#: rest without a version). 2: the version written. A reader takes an older record through
#: :func:`nqprof.analysis.history.upgraded`, one step a version (asv's api_version idiom).
SCHEMA_VERSION = 2


@dataclass
class Measurement:
    """One execution of a prepared strategy (one benchmark round)."""

    count: int
    wall_s: float
    gpu_s: float | None = None
    #: Device-side accounting of the round (generations, launches, failures), if any.
    stats: dict[str, Any] = field(default_factory=dict)
    #: Which of its worker's sessions ran it, where a worker takes the rounds in turn over
    #: several (nqprof.strategies.rotation); 0 otherwise.
    unit: int = 0

    @property
    def compute_s(self) -> float:
        """The round's statistic under the compute timer: the CUDA-event time of a GPU
        round, the worker's clock around the computation of a CPU round."""
        return self.gpu_s if self.gpu_s is not None else self.wall_s


@dataclass
class RunRecord:
    """Everything nqprof knows about a (possibly repeated) run of one strategy."""

    strategy: str
    n: int
    params: dict[str, Any]
    count: int
    expected: int
    verified: bool
    wall_s: float
    gpu_s: float | None
    rounds: int
    wall_times: list[float]
    gpu_times: list[float]
    device: dict[str, Any] = field(default_factory=dict)
    toolkit: dict[str, Any] = field(default_factory=dict)
    kernels: list[dict[str, Any]] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    generations: list[dict[str, Any]] = field(default_factory=list)
    device_failures: dict[str, int] = field(default_factory=dict)
    #: The device-side timeline of the last round's grids (CDP strategies with timeline=1).
    timeline: dict[str, Any] = field(default_factory=dict)
    #: The last round's per-block records of its counting grid (fast, graph-cst and cdp-cst
    #: with blocks=1; nqprof.strategies.block_records).
    blocks: dict[str, Any] = field(default_factory=dict)
    source_hash: str | None = None
    notes: list[str] = field(default_factory=list)
    #: A CDP run's plan (nqprof.strategies.cdp.plan: generations, limits, reserve, chunks).
    plan: dict[str, Any] = field(default_factory=dict)
    #: A measurement build's sentence (a CDP strategy's launch=empty/none/record): its count
    #: is not N's and the record is never verified. None for every other run.
    measurement_build: str | None = None
    #: launch=record: the replay of generation 1's launches from the host (strategies.cdp.replay).
    replay: dict[str, Any] = field(default_factory=dict)
    #: What each round's statistic is: compute (CUDA events for GPU runs, the worker's own
    #: clock around the computation for CPU runs) or wall (the host round trip).
    timer: str = "compute"
    #: Each timed round's statistic in seconds: what benchmarks record and compare.
    samples: list[float] = field(default_factory=list)
    #: Host seconds around each timed round, the worker round trip included.
    round_trips: list[float] = field(default_factory=list)
    #: The unit (0, 1, ...) that ran each timed round: its worker process (CPU cases use
    #: several), or for a GPU case the session of its worker processes
    #: (nqprof.runners.GPU_SESSIONS per process, each with its own modules and buffers).
    round_process: list[int] = field(default_factory=list)
    #: The session within its unit that ran each timed round, where the unit's worker took
    #: a short round's rounds in turn over several (nqprof.strategies.rotation): they share
    #: the worker's context, so the unit, not the session, is the run's independent draw.
    round_session: list[int] = field(default_factory=list)
    #: The run's conditions (nqprof.conditions): CPU, and for GPU runs clocks, power,
    #: temperature, throttling before, during and after the rounds.
    conditions: dict[str, Any] = field(default_factory=dict)
    #: What kind of measurement this is: a strategy's run (probes say their own kind).
    measurement: str = "strategy"
    #: The work items' making where the strategy makes them apart from its rounds (fast's
    #: tasks: where, how many, the seconds and the bytes uploaded and kept on the device).
    tasks: dict[str, Any] = field(default_factory=dict)
    #: GPU runs: the timed regions' stream holds over every round, warm-up included (held,
    #: gave_up, none: a region timed without one; retimed: rounds run again because a hold
    #: gave up, Session.run_round); a hold that gave up let host latency into its round's
    #: GPU time (nqprof.cuda.device.StreamHold).
    holds: dict[str, int] = field(default_factory=dict)
    #: The run's processes: how many worker processes took its rounds, and what the first
    #: one's start took (nqprof.worker: start_s, open_s, cuda_start_s).
    process: dict[str, Any] = field(default_factory=dict)
    #: CPU runs measured so (solve --instructions, pytest --nq-cpu-metric=instructions): the
    #: instructions one round executes under Valgrind (nqprof.instructions: count, tool,
    #: version, seconds, ...), which a host's clock speed does not move.
    instructions: dict[str, Any] = field(default_factory=dict)
    #: How much work a second the run did: ``solutions_per_s`` (the count over the median
    #: round's statistic, every verified run), and where the session states the nodes its
    #: search visits (queens placed: ``nodes``, with ``nodes_source``) ``nodes_per_s``.
    work: dict[str, Any] = field(default_factory=dict)
    #: Where the last session's buffers lie (nqprof.strategies.placement): its layout pad
    #: (``pad_mib``, drawn at random), and where a short round's buffers were placed (fast):
    #: placements tried, the one kept and each one's median round (us).
    placement: dict[str, Any] = field(default_factory=dict)
    #: The record's schema version (SCHEMA_VERSION).
    schema: int = SCHEMA_VERSION

    @classmethod
    def from_measurements(
        cls, strategy: str, n: int, params: dict, expected: int, ms: list[Measurement], info: dict
    ) -> RunRecord:
        gpu_times = [m.gpu_s for m in ms if m.gpu_s is not None]
        last = ms[-1]
        stats = last.stats or {}
        build = info.get("measurement_build")
        return cls(
            strategy=strategy,
            n=n,
            params=dict(params),
            count=last.count,
            expected=expected,
            verified=build is None and all(m.count == expected for m in ms),
            wall_s=median(m.wall_s for m in ms),
            gpu_s=median(gpu_times) if gpu_times else None,
            rounds=len(ms),
            wall_times=[m.wall_s for m in ms],
            gpu_times=gpu_times,
            device=info.get("device", {}),
            toolkit=info.get("toolkit", {}),
            kernels=info.get("kernels", []),
            memory=info.get("memory", {}),
            generations=stats.get("generations", []),
            device_failures=stats.get("failures", {}),
            timeline=stats.get("timeline", {}),
            blocks=stats.get("blocks", {}),
            source_hash=info.get("source_hash"),
            notes=list(info.get("notes", [])),
            plan=dict(info.get("plan", {})),
            measurement_build=build,
            replay=dict(stats.get("replay", {})),
            tasks=dict(info.get("tasks", {})),
            holds=dict(info.get("holds", {})),
            placement=dict(info.get("placement", {})),
            work=work_rates(
                last.count if build is None else None,
                median(gpu_times) if gpu_times else median(m.wall_s for m in ms),
                info.get("work") or {},
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    def shared_gpu(self) -> str | None:
        """A warning where other processes used the run's GPU during its rounds (its times
        may then be slower than on a GPU of its own); None otherwise."""
        shared = gpuconditions.shared_gpu(self.conditions)
        return f"{shared}: its times may be slower than on a GPU of its own" if shared else None

    def summary(self) -> str:
        """A human-readable report, as ``nqprof solve`` prints it."""
        ok = "verified" if self.verified else f"MISMATCH (expected {self.expected})"
        if self.measurement_build:
            ok = f"not verified: {self.measurement_build}"
        params = ", ".join(f"{k}={v}" for k, v in self.params.items()) or "-"
        lines = [
            f"strategy   {self.strategy}",
            f"N          {self.n}",
            f"params     {params}",
            f"count      {self.count}  {ok}",
            f"wall time  {seconds_text(self.wall_s)} (median of {self.rounds})",
        ]
        if self.gpu_s is not None:
            lines.append(
                f"GPU time   {seconds_text(self.gpu_s)} (CUDA "
                f"events, median of {len(self.gpu_times)})"
            )
        if self.work:
            lines.append(f"work       {work_text(self.work)}")
        if self.instructions:
            lines.append(f"instructions {instructions_text(self.instructions)}")
        if self.holds:
            lines.append(f"holds      {hold_text(self.holds)}")
        lines += _condition_lines(self.conditions)
        if self.shared_gpu():
            lines.append(f"warning    {self.shared_gpu()}")
        if self.device:
            d = self.device
            lines.append(
                f"device     {d.get('name', '?')} (sm_{d.get('cc', '?')}, "
                f"{d.get('sm_count', '?')} SMs, driver {d.get('driver', '?')})"
            )
        if self.toolkit:
            lines.append(
                f"toolkit    CUDA {self.toolkit.get('version', '?')}, "
                f"pycuda {self.toolkit.get('pycuda', '?')}"
            )
        for k in self.kernels:
            lines.append(
                f"kernel     {k.get('name')}: {k.get('registers')} regs, {k.get('shared_bytes')} B "
                f"static shared, {k.get('dynamic_shared_bytes', 0)} "
                f"B dynamic shared, {k.get('local_bytes')} B local"
            )
        if self.memory:
            deltas = self.memory.get("deltas_mib", {})
            if deltas:
                lines.append(
                    "memory     " + ", ".join(f"{k} {v:+.1f} MiB" for k, v in deltas.items())
                )
        for g in self.generations:
            lines.append("generation " + ", ".join(f"{k}={v}" for k, v in g.items()))
        if self.device_failures:
            lines.append(
                "failures   " + ", ".join(f"{k}={v}" for k, v in self.device_failures.items())
            )
        if self.replay:
            r = self.replay
            lines.append(
                f"replay     {r.get('replayed', 0):,} of {r.get('recorded', 0):,} recorded "
                f"launches of generation 1 launched from the host as {r.get('kernel')} grids "
                f"({sum(r.get('boards', [])):,} boards; their own launches not made)"
            )
        if self.plan:
            lines += _plan_lines(self.plan)
        worker, parent = self.process.get("worker") or {}, self.process.get("parent") or {}
        if self.device and worker:
            cuda = (
                f" (CUDA {worker['cuda_start_s']:.2f} s beside the imports)"
                if "cuda_start_s" in worker
                else ""
            )
            rest = (
                f"; rounds {parent['rounds_s']:.2f} s, close {parent['close_s']:.2f} s"
                if parent
                else ""
            )
            lines.append(
                f"process    worker started in {worker['start_s']:.2f} "
                f"s, opened in {worker['open_s']:.2f} s{cuda}{rest}"
            )
        for note in self.notes:
            lines.append(f"note       {note}")
        return "\n".join(lines)


def instructions_text(record: dict[str, Any]) -> str:
    """A record's instructions (:attr:`RunRecord.instructions`) in one line."""
    threads = record.get("threads") or []
    split = f" over {len(threads)} threads ({' + '.join(f'{t:,}' for t in threads)})"
    api = record.get("python_api")
    return (
        f"{record['count']:,} in {', '.join(record['functions'])}"
        + (split if len(threads) > 1 else "")
        + (f" (and {api:,} in Python's C API, not counted)" if api else "")
        + f"; {record['tool']} of {record['version']}, {record['seconds']:.2f} s under it "
        f"after a start of {record['start_s']:.2f} s"
    )


def work_rates(count: int | None, seconds: float | None, stated: dict[str, Any]) -> dict[str, Any]:
    """A run's work a second: solutions (``count``, None for an unverified build) and, where
    the session ``stated`` its nodes, nodes, over ``seconds`` (the median round's statistic:
    CUDA events on the GPU, the worker's clock on the CPU); {} without a time."""
    if not seconds or seconds <= 0:
        return {}
    out: dict[str, Any] = {}
    if count is not None:
        out["solutions_per_s"] = count / seconds
    out.update(stated)
    nodes = stated.get("nodes")
    if nodes is not None:
        out["nodes_per_s"] = nodes / seconds
    return out


def rate_text(value: float) -> str:
    """A rate with an SI prefix: ``11.8 M``, ``920 k``, ``92``."""
    for scale, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g}"


def work_text(work: dict[str, Any]) -> str:
    """The work line of ``nqprof solve``: solutions and nodes a second, the nodes and where
    their count comes from."""
    parts = []
    if "solutions_per_s" in work:
        parts.append(f"{rate_text(work['solutions_per_s'])} solutions/s")
    if "nodes" in work:
        parts.append(
            f"{rate_text(work['nodes_per_s'])} nodes/s ({work['nodes']:,} nodes: queens placed, "
            f"{work.get('nodes_source', 'as the session states')})"
        )
    if "nodes_note" in work:
        parts.append(work["nodes_note"])
    return ", ".join(parts)


def hold_text(holds: dict[str, int]) -> str:
    """What a GPU record's stream holds did, in words (:attr:`RunRecord.holds`)."""
    held, gave_up, none, retimed = (holds.get(k, 0) for k in ("held", "gave_up", "none", "retimed"))
    parts = []
    if held or gave_up:
        parts.append(f"{gave_up} of {held + gave_up} gave up")
        if retimed:
            parts[-1] += f" ({retimed} of those rounds run again)"
        if gave_up > retimed:
            parts[-1] += (
                f" ({gave_up - retimed} kept: their GPU time includes the host's launch latency)"
            )
    if none:
        parts.append(f"{none} region(s) timed without one (they wait for the GPU inside)")
    return "; ".join(parts) or "-"


def _condition_lines(cond: dict[str, Any]) -> list[str]:
    """The conditions as ``nqprof solve`` prints them: one line for the GPU, one for the CPU."""
    lines = []
    gpu = cond.get("gpu") or {}
    if gpu.get("source"):
        before, after = gpu.get("before") or {}, gpu.get("after") or {}
        throttled = gpu.get("throttled_rounds") or []
        lines.append(
            f"clocks     SM {gpu.get('sm_clock_mhz_median')} MHz over the rounds (max "
            f"{before.get('max_sm_clock_mhz')}), memory {before.get('memory_clock_mhz')} MHz, "
            f"{before.get('temperature_c')} -> {after.get('temperature_c')} C, "
            f"{_watts(after.get('power_w'))} of {_watts(before.get('power_limit_w'))}, "
            f"persistence {before.get('persistence_mode')}; "
            + (
                f"THROTTLED in {plural(len(throttled), 'round')}: "
                f"{', '.join(gpu.get('reasons_seen') or [])}"
                if throttled
                else "no throttling"
            )
        )
    elif gpu:
        lines.append(f"clocks     not read ({gpu.get('why')})")
    cpu = cond.get("cpu") or {}
    if cpu:
        freq = f", {cpu['frequency_mhz']} MHz" if cpu.get("frequency_mhz") else ""
        lines.append(
            f"cpu        {cpu.get('cpu')}, {cpu.get('usable_cores')} of "
            f"{plural(cpu.get('cores'), 'core')}, "
            f"governor {cpu.get('governor')}{freq}"
        )
    return lines


def _watts(value) -> str:
    return "? W" if value is None else f"{value:.0f} W"


def _plan_lines(plan: dict[str, Any]) -> list[str]:
    """A CDP run's plan as ``nqprof solve`` prints it (``nqprof plan`` prints it in full)."""
    per = plan.get("boards_per_chunk") or {}
    lines = [
        f"plan       config={plan.get('config')}, {plural(plan.get('chunks'), 'chunk')} of "
        f"{per.get('min')}..{per.get('max')} of "
        f"{plan.get('host_boards')} host boards" + (" (forced)" if plan.get("chunk_forced") else "")
    ]
    for g in plan.get("generations", []):
        lines.append(
            f"plan gen   {g['generation']}: row {g['row']}, boards <= {g['bound_boards']} (bound) "
            f"/ {g['model_boards'] if g['model_boards'] is not None else '-'} (model), grids <= "
            f"{g['bound_grids']} / {g['model_grids'] if g['model_grids'] is not None else '-'}"
        )
    return lines
