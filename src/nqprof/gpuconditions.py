"""The GPU's conditions during a run, recorded with every GPU run (:mod:`nqprof.conditions`
compares them): the SM and memory clocks, power, temperature, the clock event (throttle)
reasons and persistence mode, and other processes on the GPU, read through NVML
(``nvidia-ml-py``'s ``pynvml``; ``nvidia-smi`` as a fallback) before the timed rounds, after
each round and after the last (:class:`GpuWatch`). A round after which NVML reports a slowdown
reason (power cap, thermal, hardware slowdown, power brake) is flagged as throttled.

Nothing here needs a GPU: where NVML and nvidia-smi are missing the watch says why.
"""

from __future__ import annotations

import os
import shutil
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


def reason_names(mask: int) -> list[str]:
    names = {**SLOWDOWN_REASONS, **OTHER_REASONS}
    return [name for bit, name in sorted(names.items()) if mask & bit]


def slowed(mask: int) -> bool:
    return any(mask & bit for bit in SLOWDOWN_REASONS)


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
