"""The conditions a run was measured under, recorded with every run and compared between runs.

GPU runs: the SM and memory clocks, power, temperature, the clock event (throttle) reasons
and persistence mode, read through NVML (``nvidia-ml-py``'s ``pynvml``; ``nvidia-smi`` as
a fallback) before the timed rounds, after each round and after the last. A round after
which NVML reports a slowdown reason (power cap, thermal, hardware slowdown, power brake)
is flagged as throttled. CPU runs: the CPU model, the cores this process may use, the
frequency governor and the current frequency.

Nothing here needs a GPU: where NVML and nvidia-smi are missing the GPU part says why.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any

from .textfmt import plural

#: NVML's clock event reasons that mean the GPU ran slower than asked (nvmlClocksEventReason*).
SLOWDOWN_REASONS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
}
#: Reasons that are reported but are no slowdown of a busy GPU.
OTHER_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x10: "sync_boost",
    0x100: "display_clock_setting",
}
#: Two runs' SM clocks (median over the rounds) further apart than this are a warning.
CLOCK_TOLERANCE = 0.05
#: Two runs' load averages further apart than this many per usable core are a warning.
LOAD_TOLERANCE = 0.4
#: Cores kept busy by other work during the rounds: a difference of this many is a warning.
OTHER_CORES_TOLERANCE = 0.5
#: Percentage points of CPU time stolen by a hypervisor: a difference of this many is a warning.
STEAL_TOLERANCE = 2.0
#: The CPU speed probe: nqprof._cpu.serial(PROBE_N), PROBE_REPEATS times, the median (under a
#: millisecond a call: docs/results/defaults-h200.md), taken when a case's CPU watch starts.
#: Two runs whose probes (the median over their CPU cases) are further apart than
#: PROBE_TOLERANCE, and further than the probe moved within either run, are a warning
#: (another host, or its CPU changed speed): :func:`probe_difference`.
PROBE_N = 11
PROBE_REPEATS = 5
PROBE_TOLERANCE = 0.05


def reason_names(mask: int) -> list[str]:
    names = {**SLOWDOWN_REASONS, **OTHER_REASONS}
    return [name for bit, name in sorted(names.items()) if mask & bit]


def slowed(mask: int) -> bool:
    return any(mask & bit for bit in SLOWDOWN_REASONS)


# -- GPU ------------------------------------------------------------------------------------


#: The NVML modules initialised in this process (by id): NVML starts once per process and
#: stays (a start costs tens of milliseconds, and every case of a suite watches its GPU).
_NVML_STARTED: set[int] = set()
#: A start of NVML begun early on a thread (start_nvml), joined by the first probe.
_NVML_THREAD: list[Any] = []


def start_nvml() -> None:
    """Start NVML on a thread now (a GPU run starts its worker meanwhile); the first
    :class:`NvmlProbe` waits for it. Any failure is left for the probe to meet."""
    import threading

    def start() -> None:
        try:
            import pynvml

            if id(pynvml) not in _NVML_STARTED:
                pynvml.nvmlInit()
                _NVML_STARTED.add(id(pynvml))
        except Exception:  # ImportError, NVMLError: the probe says why
            pass

    if not _NVML_THREAD:
        _NVML_THREAD.append(threading.Thread(target=start, name="nqprof-nvml-start", daemon=True))
        _NVML_THREAD[0].start()


class NvmlProbe:
    """One GPU's state through pynvml. ``pci_bus_id`` picks the GPU the run uses (NVML
    ignores CUDA_VISIBLE_DEVICES); without it, the first visible one."""

    source = "nvml"

    def __init__(self, pci_bus_id: str | None = None):
        import pynvml

        self._nv = pynvml
        if _NVML_THREAD:
            _NVML_THREAD[0].join()
        if id(pynvml) not in _NVML_STARTED:
            pynvml.nvmlInit()
            _NVML_STARTED.add(id(pynvml))
        if pci_bus_id:
            self._h = pynvml.nvmlDeviceGetHandleByPciBusId(
                pci_bus_id.encode() if isinstance(pci_bus_id, str) else pci_bus_id
            )
        else:
            self._h = pynvml.nvmlDeviceGetHandleByIndex(_first_visible_index())

    def _try(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except self._nv.NVMLError:
            return None

    def reasons(self) -> int | None:
        nv, h = self._nv, self._h
        get = (
            getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
            or nv.nvmlDeviceGetCurrentClocksThrottleReasons
        )
        return self._try(lambda: int(get(h)))

    def sm_clock(self) -> int | None:
        return self._try(lambda: self._nv.nvmlDeviceGetClockInfo(self._h, self._nv.NVML_CLOCK_SM))

    def sample(self) -> tuple[int | None, int | None]:
        """(clock event reasons, SM clock) now: what is read after each round."""
        return self.reasons(), self.sm_clock()

    def name(self) -> str | None:
        name = self._try(lambda: self._nv.nvmlDeviceGetName(self._h))
        return name.decode() if isinstance(name, bytes) else name

    def cuda_driver(self) -> str | None:
        """The CUDA version of the driver, ``12.8``, as cuDriverGetVersion gives it."""
        get = getattr(self._nv, "nvmlSystemGetCudaDriverVersion", None)
        version = self._try(get) if get else None
        return None if version is None else f"{version // 1000}.{version % 1000 // 10}"

    def utilization(self) -> int | None:
        """The percentage of NVML's last sample period in which a kernel ran on the GPU
        (this run's, or another process's)."""
        get = getattr(self._nv, "nvmlDeviceGetUtilizationRates", None)
        rates = self._try(lambda: get(self._h)) if get else None
        return None if rates is None else int(rates.gpu)

    def processes(self) -> list[int] | None:
        """PIDs of the compute processes on this GPU."""
        get = getattr(self._nv, "nvmlDeviceGetComputeRunningProcesses", None)
        procs = self._try(lambda: get(self._h)) if get else None
        return None if procs is None else [int(p.pid) for p in procs]

    def snapshot(self) -> dict[str, Any]:
        nv, h = self._nv, self._h
        power = self._try(lambda: nv.nvmlDeviceGetPowerUsage(h))
        limit = self._try(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
        reasons = self.reasons()
        get_uuid = getattr(nv, "nvmlDeviceGetUUID", None)
        uuid = self._try(lambda: get_uuid(h)) if get_uuid else None
        return {
            "gpu": self.name(),
            "uuid": uuid.decode() if isinstance(uuid, bytes) else uuid,
            "sm_clock_mhz": self.sm_clock(),
            "memory_clock_mhz": self._try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
            "max_sm_clock_mhz": self._try(
                lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)
            ),
            "power_w": None if power is None else power / 1000,
            "power_limit_w": None if limit is None else limit / 1000,
            "temperature_c": self._try(
                lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
            ),
            "persistence_mode": _on_off(self._try(lambda: nv.nvmlDeviceGetPersistenceMode(h))),
            "clock_event_reasons": None if reasons is None else reason_names(reasons),
        }

    def close(self) -> None:
        """Nothing to end: NVML stays started for the next watch of this process."""


class SmiProbe:
    """The same facts from ``nvidia-smi --query-gpu`` (slower: a process per reading)."""

    source = "nvidia-smi"
    _FIELDS = (
        "name",
        "clocks.sm",
        "clocks.mem",
        "clocks.max.sm",
        "power.draw",
        "power.limit",
        "temperature.gpu",
        "persistence_mode",
        "clocks_event_reasons.active",
        "uuid",
    )

    def __init__(self, pci_bus_id: str | None = None):
        self._smi = shutil.which("nvidia-smi")
        if not self._smi:
            raise FileNotFoundError("nvidia-smi not found")
        self._id = pci_bus_id or str(_first_visible_index())
        self._query()

    def _query(self) -> list[str]:
        out = subprocess.run(
            [
                self._smi,
                f"--id={self._id}",
                "--query-gpu=" + ",".join(self._FIELDS),
                "--format=csv,noheader,nounits",
            ],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return [v.strip() for v in out.stdout.strip().splitlines()[0].split(",")]

    def processes(self) -> list[int] | None:
        try:
            out = subprocess.run(
                [
                    self._smi,
                    f"--id={self._id}",
                    "--query-compute-apps=pid",
                    "--format=csv,noheader",
                ],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout
            return [int(line) for line in out.split() if line.strip().isdigit()]
        except (OSError, subprocess.SubprocessError, ValueError):
            return None

    def sample(self) -> tuple[int | None, int | None]:
        """(clock event reasons, SM clock) from one query (a process per reading)."""
        try:
            v = self._query()
        except (OSError, subprocess.SubprocessError, IndexError):
            return None, None
        return _number(v[8], lambda t: int(t, 16)), _number(v[1], int)

    def reasons(self) -> int | None:
        return self.sample()[0]

    def snapshot(self) -> dict[str, Any]:
        v = self._query()
        reasons = _number(v[8], lambda t: int(t, 16))
        return {
            "gpu": v[0],
            "uuid": v[9] if len(v) > 9 else None,
            "sm_clock_mhz": _number(v[1], int),
            "memory_clock_mhz": _number(v[2], int),
            "max_sm_clock_mhz": _number(v[3], int),
            "power_w": _number(v[4], float),
            "power_limit_w": _number(v[5], float),
            "temperature_c": _number(v[6], int),
            "persistence_mode": {"Enabled": "on", "Disabled": "off"}.get(v[7], v[7]),
            "clock_event_reasons": None if reasons is None else reason_names(reasons),
        }

    def close(self) -> None:
        pass


def _number(text: str, kind: Callable[[str], Any]):
    try:
        return kind(text)
    except (TypeError, ValueError):
        return None


def _on_off(value) -> str | None:
    return None if value is None else ("on" if value else "off")


def _first_visible_index() -> int:
    """The NVML index of CUDA device 0 where CUDA_VISIBLE_DEVICES names it by index."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def gpu_probe(pci_bus_id: str | None = None):
    """An :class:`NvmlProbe`, else an :class:`SmiProbe`; (None, why) where neither works."""
    errors = []
    for kind in (NvmlProbe, SmiProbe):
        try:
            return kind(pci_bus_id), None
        except (
            Exception
        ) as exc:  # ImportError, NVMLError, FileNotFoundError, CalledProcessError ...
            errors.append(f"{kind.source}: {type(exc).__name__}: {exc}".strip())
    return None, "; ".join(errors)


class GpuWatch:
    """The conditions of one GPU run: a snapshot before the timed rounds, the SM clock and
    reasons after each round, a snapshot after, and the compute processes on the GPU that
    are not the run's own (``own_pids``) before and after (through NVML: after each round
    too, with the GPU's utilization).

    Where NVML lists none of the run's own processes although its workers hold contexts on
    the GPU, NVML names processes of another pid namespace (a container's host): as many of
    those listed as the run has workers now (:meth:`also_own`: the running one and one
    prepared to follow it) are the run's, and the others are counted."""

    #: Seconds between two looks at the GPU's other processes and utilization during the
    #: rounds: a suite's cases run up to a thousand rounds of microseconds each, and a look
    #: is a few NVML calls, so the rounds are sampled, not each one.
    LOOK_EVERY = 0.025

    def __init__(
        self,
        pci_bus_id: str | None = None,
        own_pids: tuple[int, ...] = (),
        clock: Callable[[], float] = time.monotonic,
    ):
        self.probe, self.why = gpu_probe(pci_bus_id)
        self._clock, self._looked = clock, None
        self.own = set(own_pids) | {os.getpid()}
        #: The run's worker processes now (each may hold a context on the GPU).
        self.now = tuple(own_pids)
        self.others: set[int] = set()
        #: Other processes where NVML's pids are not this namespace's (the most at once).
        self.unmatched = 0
        self.before: dict[str, Any] | None = None
        self.after: dict[str, Any] | None = None
        self.round_clocks: list[int | None] = []
        self.utilization: list[int] = []
        self.throttled_rounds: list[int] = []
        self.reasons_seen: set[str] = set()

    def start(self) -> None:
        if self.probe:
            self.before = self.probe.snapshot()
            self._note_others()

    def also_own(self, pids: tuple[int, ...]) -> None:
        """The run's worker processes are now these (the next worker of a series, one
        prepared to follow): theirs is no other work."""
        self.own.update(pids)
        self.now = tuple(pids)

    def _note_others(self) -> None:
        pids = self.probe.processes()
        if not pids:
            return
        others = [p for p in pids if p not in self.own]
        if len(others) == len(pids):
            self.unmatched = max(self.unmatched, len(pids) - max(1, len(self.now)))
        else:
            self.others.update(others)

    def round_done(self, index: int) -> None:
        if not self.probe:
            return
        mask, clock = self.probe.sample()
        self.round_clocks.append(clock)
        if mask is not None:
            self.reasons_seen.update(n for n in reason_names(mask) if n not in ("gpu_idle",))
            if slowed(mask):
                self.throttled_rounds.append(index)
        now = self._clock()
        if self.probe.source == "nvml" and (
            self._looked is None or now - self._looked >= self.LOOK_EVERY
        ):
            self._looked = now  # nvidia-smi would be two more processes a look
            self._note_others()
            busy = self.probe.utilization()
            if busy is not None:
                self.utilization.append(busy)

    def finish(self) -> dict[str, Any]:
        if not self.probe:
            return {"source": None, "why": self.why}
        self.after = self.probe.snapshot()
        self._note_others()
        self.probe.close()
        clocks = sorted(c for c in self.round_clocks if c)
        return {
            "source": self.probe.source,
            "before": self.before,
            "after": self.after,
            "sm_clock_mhz_median": clocks[len(clocks) // 2] if clocks else None,
            "sm_clock_mhz_min": clocks[0] if clocks else None,
            "throttled_rounds": list(self.throttled_rounds),
            "reasons_seen": sorted(self.reasons_seen),
            "other_processes": max(len(self.others), self.unmatched),
            "utilization_pct": list(self.utilization),
        }


def shared_gpu(cond: dict[str, Any] | None) -> str | None:
    """What a run's conditions say of other work on its GPU during the rounds (other
    processes that NVML or nvidia-smi listed), as a phrase; None where there was none."""
    count = ((cond or {}).get("gpu") or {}).get("other_processes")
    if not count:
        return None
    return (
        f"the GPU was shared with {plural(count, 'other process', 'other processes')} "
        "during the rounds"
    )


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


def cpu_probe_s() -> float | None:
    """The CPU speed probe's time in seconds (None without the C extension): one fixed
    single-thread search that no change to nqprof's strategies touches, so two runs'
    probes tell how much the host alone moved a CPU time between them."""
    try:
        from . import _cpu
    except ImportError:  # pragma: no cover - only on a broken install
        return None
    times = []
    for _ in range(PROBE_REPEATS):
        t0 = time.perf_counter()
        _cpu.serial(PROBE_N)
        times.append(time.perf_counter() - t0)
    return float(f"{sorted(times)[len(times) // 2]:.6g}")


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
