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
import subprocess
from typing import Any, Callable

#: NVML's clock event reasons that mean the GPU ran slower than asked (nvmlClocksEventReason*).
SLOWDOWN_REASONS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
}
#: Reasons that are reported but are no slowdown of a busy GPU.
OTHER_REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x10: "sync_boost", 0x100: "display_clock_setting"}
#: Two runs' SM clocks (median over the rounds) further apart than this are a warning.
CLOCK_TOLERANCE = 0.05


def reason_names(mask: int) -> list[str]:
    names = {**SLOWDOWN_REASONS, **OTHER_REASONS}
    return [name for bit, name in sorted(names.items()) if mask & bit]


def slowed(mask: int) -> bool:
    return any(mask & bit for bit in SLOWDOWN_REASONS)


# -- GPU ------------------------------------------------------------------------------------


class NvmlProbe:
    """One GPU's state through pynvml. ``pci_bus_id`` picks the GPU the run uses (NVML
    ignores CUDA_VISIBLE_DEVICES); without it, the first visible one."""

    source = "nvml"

    def __init__(self, pci_bus_id: str | None = None):
        import pynvml

        self._nv = pynvml
        pynvml.nvmlInit()
        if pci_bus_id:
            self._h = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode() if isinstance(pci_bus_id, str) else pci_bus_id)
        else:
            self._h = pynvml.nvmlDeviceGetHandleByIndex(_first_visible_index())

    def _try(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except self._nv.NVMLError:
            return None

    def reasons(self) -> int | None:
        nv, h = self._nv, self._h
        get = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
        return self._try(lambda: int(get(h)))

    def sm_clock(self) -> int | None:
        return self._try(lambda: self._nv.nvmlDeviceGetClockInfo(self._h, self._nv.NVML_CLOCK_SM))

    def snapshot(self) -> dict[str, Any]:
        nv, h = self._nv, self._h
        power = self._try(lambda: nv.nvmlDeviceGetPowerUsage(h))
        limit = self._try(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
        reasons = self.reasons()
        name = self._try(lambda: nv.nvmlDeviceGetName(h))
        return {
            "gpu": name.decode() if isinstance(name, bytes) else name,
            "sm_clock_mhz": self.sm_clock(),
            "memory_clock_mhz": self._try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
            "max_sm_clock_mhz": self._try(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
            "power_w": None if power is None else power / 1000,
            "power_limit_w": None if limit is None else limit / 1000,
            "temperature_c": self._try(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
            "persistence_mode": _on_off(self._try(lambda: nv.nvmlDeviceGetPersistenceMode(h))),
            "clock_event_reasons": None if reasons is None else reason_names(reasons),
        }

    def close(self) -> None:
        try:
            self._nv.nvmlShutdown()
        except self._nv.NVMLError:
            pass


class SmiProbe:
    """The same facts from ``nvidia-smi --query-gpu`` (slower: a process per reading)."""

    source = "nvidia-smi"
    _FIELDS = ("name", "clocks.sm", "clocks.mem", "clocks.max.sm", "power.draw", "power.limit", "temperature.gpu",
               "persistence_mode", "clocks_event_reasons.active")

    def __init__(self, pci_bus_id: str | None = None):
        self._smi = shutil.which("nvidia-smi")
        if not self._smi:
            raise FileNotFoundError("nvidia-smi not found")
        self._id = pci_bus_id or str(_first_visible_index())
        self._query()

    def _query(self) -> list[str]:
        out = subprocess.run([self._smi, f"--id={self._id}", "--query-gpu=" + ",".join(self._FIELDS),
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10, check=True)
        return [v.strip() for v in out.stdout.strip().splitlines()[0].split(",")]

    def reasons(self) -> int | None:
        try:
            return int(self._query()[-1], 16)
        except (ValueError, OSError, subprocess.SubprocessError, IndexError):
            return None

    def sm_clock(self) -> int | None:
        try:
            return _number(self._query()[1], int)
        except (OSError, subprocess.SubprocessError, IndexError):
            return None

    def snapshot(self) -> dict[str, Any]:
        v = self._query()
        reasons = _number(v[8], lambda t: int(t, 16))
        return {
            "gpu": v[0], "sm_clock_mhz": _number(v[1], int), "memory_clock_mhz": _number(v[2], int),
            "max_sm_clock_mhz": _number(v[3], int), "power_w": _number(v[4], float),
            "power_limit_w": _number(v[5], float), "temperature_c": _number(v[6], int),
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
        except Exception as exc:  # ImportError, NVMLError, FileNotFoundError, CalledProcessError ...
            errors.append(f"{kind.source}: {type(exc).__name__}: {exc}".strip())
    return None, "; ".join(errors)


class GpuWatch:
    """The conditions of one GPU run: a snapshot before the timed rounds, the SM clock and
    reasons after each round, a snapshot after."""

    def __init__(self, pci_bus_id: str | None = None):
        self.probe, self.why = gpu_probe(pci_bus_id)
        self.before: dict[str, Any] | None = None
        self.after: dict[str, Any] | None = None
        self.round_clocks: list[int | None] = []
        self.throttled_rounds: list[int] = []
        self.reasons_seen: set[str] = set()

    def start(self) -> None:
        if self.probe:
            self.before = self.probe.snapshot()

    def round_done(self, index: int) -> None:
        if not self.probe:
            return
        mask = self.probe.reasons()
        self.round_clocks.append(self.probe.sm_clock())
        if mask is not None:
            self.reasons_seen.update(n for n in reason_names(mask) if n not in ("gpu_idle",))
            if slowed(mask):
                self.throttled_rounds.append(index)

    def finish(self) -> dict[str, Any]:
        if not self.probe:
            return {"source": None, "why": self.why}
        self.after = self.probe.snapshot()
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
        }


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
    """CPU model, usable cores, frequency governor and current frequency of CPU 0."""
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


# -- comparing two runs' conditions -----------------------------------------------------------


def differences(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    """What differs between two records' conditions, each as one phrase; throttling in
    either run counts too."""
    a, b = a or {}, b or {}
    out: list[str] = []
    ca, cb = a.get("cpu") or {}, b.get("cpu") or {}
    for key in ("cpu", "usable_cores", "governor"):
        if ca.get(key) is not None and cb.get(key) is not None and ca.get(key) != cb.get(key):
            out.append(f"{key}: {ca.get(key)!r} -> {cb.get(key)!r}")
    ga, gb = a.get("gpu") or {}, b.get("gpu") or {}
    for side, g in (("A", ga), ("B", gb)):
        if g.get("throttled_rounds"):
            out.append(f"run {side} throttled in {len(g['throttled_rounds'])} round(s) ({', '.join(g.get('reasons_seen') or [])})")
    sa, sb = ga.get("sm_clock_mhz_median"), gb.get("sm_clock_mhz_median")
    if sa and sb and abs(sb - sa) / max(sa, sb) > CLOCK_TOLERANCE:
        out.append(f"SM clock during the rounds: {sa} -> {sb} MHz")
    fa, fb = (ga.get("before") or {}), (gb.get("before") or {})
    for key in ("memory_clock_mhz", "power_limit_w", "persistence_mode"):
        if fa.get(key) is not None and fb.get(key) is not None and fa.get(key) != fb.get(key):
            out.append(f"{key}: {fa.get(key)!r} -> {fb.get(key)!r}")
    return out
