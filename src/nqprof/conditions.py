"""The conditions a run was measured under, recorded with every run and compared between runs.

GPU runs: what :mod:`nqprof.gpuconditions` watches (clocks, power, temperature, throttle
reasons, other processes on the GPU). CPU runs: the CPU model, the cores this process may
use, the frequency governor and the current frequency, the load, other work and stolen time
during the rounds (:class:`CpuWatch`) and a CPU speed probe. :func:`differences` says which
of a case's conditions differ between two runs.

Nothing here needs a GPU: where NVML and nvidia-smi are missing the GPU part says why.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

from .cpuprobe import PROBE_N, PROBE_REPEATS, cpu_probe_s  # noqa: F401 (conditions' api too)
from .gpuconditions import CLOCK_TOLERANCE
from .textfmt import plural

#: Two runs' load averages further apart than this many per usable core are a warning.
LOAD_TOLERANCE = 0.4
#: Cores kept busy by other work during the rounds: a difference of this many is a warning.
OTHER_CORES_TOLERANCE = 0.5
#: Percentage points of CPU time stolen by a hypervisor: a difference of this many is a warning.
STEAL_TOLERANCE = 2.0
#: The CPU speed probe (:mod:`nqprof.cpuprobe`) is taken when a case's CPU watch starts.
#: Two runs whose probes (the median over their CPU cases) are further apart than
#: PROBE_TOLERANCE, and further than the probe moved within either run, are a warning
#: (another host, or its CPU changed speed): :func:`probe_difference`.
PROBE_TOLERANCE = 0.05
#: A CPU case's worker processes take the probe too, between its timed rounds: after each
#: worker's first round, then every PROBE_EVERY_S seconds of rounds (:func:`worker_probes`).
#: The probe in the pytest process, as the case starts, runs on another core at another
#: moment: on an H200 host one case's workers ran 25% faster than in any other run while
#: that probe moved -6% (docs/results/core-h200/pad-baseline). The workers' probe is
#: recorded beside it; compare's floors still read the pytest process's (``probe_s``) until
#: runs on a GPU host show which of the two follows the cases.
PROBE_EVERY_S = 0.25


# -- CPU ------------------------------------------------------------------------------------


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return None


def cpu_model() -> str:
    info = _read("/proc/cpuinfo") or ""
    for line in info.splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def cpu_conditions() -> dict[str, Any]:
    """CPU model, usable cores, frequency governor and current frequency of CPU 0, load."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
    freq = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq")
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") or "unknown",
        "frequency_mhz": int(freq) // 1000 if freq and freq.isdigit() else None,
        "load_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


def worker_probes(facts: dict[str, Any], probes: list[float]) -> dict[str, Any]:
    """A CPU case's CPU facts with the probes its worker processes took between its timed
    rounds (seconds each, :func:`~nqprof.cpuprobe.cpu_probe_s` in the worker):
    ``worker_probe_s``, their median (how fast the cores that ran the rounds were while
    they ran them; the median of short calls leaves out time shared with other work, which
    ``other_busy_cores`` shows); ``worker_probes``, how many; ``worker_probe_spread``, how
    far apart they were (largest over smallest, minus one). Without probes, ``facts``."""
    probes = sorted(p for p in probes if p)
    if not probes:
        return facts
    return {
        **facts,
        "worker_probe_s": float(f"{statistics.median(probes):.6g}"),
        "worker_probes": len(probes),
        "worker_probe_spread": round(probes[-1] / probes[0] - 1, 4),
    }


def probe_change(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
    """The relative change of the CPU speed probe from conditions a to b (None if either
    lacks it)."""
    pa, pb = ((c or {}).get("cpu", {}).get("probe_s") for c in (a, b))
    if not pa or not pb:
        return None
    return pb / pa - 1


def probe_difference(a: list[float], b: list[float]) -> str | None:
    """The CPU speed probe between two runs, from the probe times each took (seconds, one per
    CPU case, as the case started), as one phrase; None where either run has none, or where
    the runs' medians are less than PROBE_TOLERANCE apart, or no further apart than the probe
    moved within one of the runs (its own noise: the largest over the smallest of a run's
    probes)."""
    a, b = sorted(p for p in a if p), sorted(p for p in b if p)
    if not a or not b:
        return None
    ma, mb = (float(statistics.median(p)) for p in (a, b))
    moved = mb / ma - 1
    noise = max(p[-1] / p[0] - 1 for p in (a, b))
    if abs(moved) < PROBE_TOLERANCE or abs(moved) <= noise:
        return None
    within = f", beyond the {100 * noise:.0f}% it moved within a run" if noise else ""
    counts = f"{len(a)} CPU case" + ("" if len(a) == 1 else "s")
    if len(b) != len(a):
        counts = f"{len(a)} and {len(b)} CPU cases"
    return (
        f"CPU speed probe (serial N={PROBE_N}): {1e3 * ma:.3f} -> {1e3 * mb:.3f} ms, the median "
        f"over {counts} ({100 * moved:+.0f}%{within}: another host, or the host's CPU speed "
        "moved)"
    )


def parse_cpu_ticks(stat: str) -> tuple[int, int, int] | None:
    """(busy, steal, total) clock ticks of all CPUs since boot from the text of /proc/stat
    (None where its first line is not the all-CPUs line)."""
    line = stat.split("\n", 1)[0].split()
    if len(line) < 8 or line[0] != "cpu":
        return None
    v = [int(x) for x in line[1:]]
    idle = v[3] + v[4]  # idle + iowait
    steal = v[7] if len(v) > 7 else 0
    total = sum(v[:8])
    return total - idle - steal, steal, total


def parse_process_ticks(stat: str) -> int:
    """utime + stime + cutime + cstime clock ticks from the text of /proc/<pid>/stat (0
    where it is not one: the process is gone)."""
    fields = stat.rsplit(")", 1)[-1].split()  # the name, in parentheses, may hold spaces
    return sum(int(x) for x in fields[11:15]) if len(fields) > 14 else 0


def system_ticks() -> tuple[int, int, int] | None:
    """(busy, steal, total) clock ticks of all CPUs since boot, from /proc/stat (None
    without it)."""
    return parse_cpu_ticks(_read("/proc/stat") or "")


def process_ticks(pids: tuple[int, ...]) -> int:
    """utime + stime clock ticks of these processes (and their waited-for children)."""
    return sum(parse_process_ticks(_read(f"/proc/{pid}/stat") or "") for pid in pids)


def ticks_per_second() -> int:
    """The clock ticks per second that /proc counts in."""
    return os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class CpuWatch:
    """The CPU conditions of one run: model, cores, governor before the rounds, and over the
    rounds how many cores other work kept busy (all CPUs' busy time less this run's own
    processes', ``own_pids`` and this one) and the share of time stolen by the hypervisor.

    A run whose rounds go to worker processes one after another is watched in spans:
    :meth:`pause` between two processes (a worker starting up is not other work),
    :meth:`resume` with the next one's pids.

    What it reads is given, for tests to script: ``read_system`` (as :func:`system_ticks`),
    ``read_processes`` (as :func:`process_ticks`), ``clock`` (seconds, monotonic) and
    ``hz`` (clock ticks per second); by default /proc, time.monotonic and SC_CLK_TCK."""

    def __init__(
        self,
        own_pids: tuple[int, ...] = (),
        *,
        read_system: Callable[[], tuple[int, int, int] | None] | None = None,
        read_processes: Callable[[tuple[int, ...]], int] | None = None,
        clock: Callable[[], float] | None = None,
        hz: int | None = None,
    ):
        self._read_system = read_system or system_ticks
        self._read_processes = read_processes or process_ticks
        self._clock = clock or time.monotonic
        self._hz = hz or ticks_per_second()
        self.facts = cpu_conditions()
        self.facts["probe_s"] = cpu_probe_s()
        self._busy = self._own = self._steal = self._total = 0
        self._elapsed = 0.0
        self._ticked = True  # every span could read /proc/stat
        self._span: tuple[Any, int, float] | None = None
        self.resume(own_pids)

    def resume(self, own_pids: tuple[int, ...] = ()) -> None:
        """Start a span watching these own processes (beside this one)."""
        self.pids = (os.getpid(), *own_pids)
        self._span = self._read_system(), self._read_processes(self.pids), self._clock()

    def also_own(self, own_pids: tuple[int, ...]) -> None:
        """Watch these own processes from now on (a worker started during the span: its
        CPU time from its start is the run's own)."""
        if self._span is not None:
            self.pause()
            self.resume(own_pids)

    def pause(self) -> None:
        """End the current span (its own processes still alive)."""
        if self._span is None:
            return
        (ticks0, own0, t0), ticks1 = self._span, self._read_system()
        self._own += self._read_processes(self.pids) - own0
        self._elapsed += self._clock() - t0
        if ticks0 and ticks1:
            self._busy += ticks1[0] - ticks0[0]
            self._steal += ticks1[1] - ticks0[1]
            self._total += ticks1[2] - ticks0[2]
        else:
            self._ticked = False
        self._span = None

    def finish(self) -> dict[str, Any]:
        self.pause()
        out = dict(self.facts)
        if self._ticked and self._elapsed > 0:
            out["other_busy_cores"] = round(
                max(0.0, (self._busy - self._own) / self._hz) / self._elapsed, 2
            )
            out["steal_pct"] = (
                round(100.0 * self._steal / self._total, 1) if self._total > 0 else 0.0
            )
        return out


# -- comparing two runs' conditions -----------------------------------------------------------


def differences(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    """What differs between two records' conditions, each as one phrase; throttling in
    either run counts too. The CPU speed probe is the host's, compared run to run over every
    CPU case (:func:`probe_difference`), not case by case: one case's two probes differ by
    what the probe moves within a run."""
    a, b = a or {}, b or {}
    out: list[str] = []
    ca, cb = a.get("cpu") or {}, b.get("cpu") or {}
    for key in ("cpu", "usable_cores", "governor"):
        if ca.get(key) is not None and cb.get(key) is not None and ca.get(key) != cb.get(key):
            out.append(f"{key}: {ca.get(key)!r} -> {cb.get(key)!r}")
    la, lb, cores = (
        ca.get("load_1min"),
        cb.get("load_1min"),
        cb.get("usable_cores") or ca.get("usable_cores"),
    )
    if la is not None and lb is not None and cores and abs(lb - la) >= LOAD_TOLERANCE * cores:
        out.append(
            f"load average: {la:.2f} -> {lb:.2f} on {plural(cores, 'core')} "
            "(other work took CPU time)"
        )
    oa, ob = ca.get("other_busy_cores"), cb.get("other_busy_cores")
    if oa is not None and ob is not None and abs(ob - oa) >= OTHER_CORES_TOLERANCE:
        out.append(f"other work during the rounds: {oa:.2f} -> {ob:.2f} busy cores")
    sa, sb = ca.get("steal_pct"), cb.get("steal_pct")
    if sa is not None and sb is not None and abs(sb - sa) >= STEAL_TOLERANCE:
        out.append(f"CPU time stolen by the hypervisor: {sa:.1f}% -> {sb:.1f}%")
    ga, gb = a.get("gpu") or {}, b.get("gpu") or {}
    for side, g in (("A", ga), ("B", gb)):
        if g.get("throttled_rounds"):
            out.append(
                f"run {side} throttled in {plural(len(g['throttled_rounds']), 'round')} "
                f"({', '.join(g.get('reasons_seen') or [])})"
            )
    sa, sb = ga.get("sm_clock_mhz_median"), gb.get("sm_clock_mhz_median")
    if sa and sb and abs(sb - sa) / max(sa, sb) > CLOCK_TOLERANCE:
        out.append(f"SM clock during the rounds: {sa} -> {sb} MHz")
    pa, pb = ga.get("other_processes"), gb.get("other_processes")
    if pa is not None and pb is not None and pa != pb:
        out.append(f"other processes on the GPU: {pa} -> {pb}")
    elif pa and pa == pb:  # both runs shared the GPU
        out.append(f"other processes on the GPU in both runs: {pa}")
    fa, fb = (ga.get("before") or {}), (gb.get("before") or {})
    if fa.get("uuid") and fb.get("uuid") and fa["uuid"] != fb["uuid"]:
        out.append(
            f"another GPU: {fa['uuid']} -> {fb['uuid']} (two GPUs of one model can differ by a few "
            "%: on two H200 hosts queue N=15 moved 6%)"
        )
    for key in ("memory_clock_mhz", "power_limit_w", "persistence_mode"):
        if fa.get(key) is not None and fb.get(key) is not None and fa.get(key) != fb.get(key):
            out.append(f"{key}: {fa.get(key)!r} -> {fb.get(key)!r}")
    return out
