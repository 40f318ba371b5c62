"""The CPU speed probe: one fixed single-thread search (``nqprof._cpu.serial(PROBE_N)``,
PROBE_REPEATS times, the median; under a millisecond a call: docs/results/defaults-h200.md)
that no change to nqprof's strategies touches, so two runs' probes tell how much the host
alone moved a CPU time between them. Taken when a case's CPU watch starts
(:mod:`nqprof.conditions`) and, for a CPU case, in its worker processes between its timed
rounds (:mod:`nqprof.worker`'s "probe"). The median of short calls leaves out time shared
with other work, which the CPU watch's ``other_busy_cores`` shows."""

from __future__ import annotations

import time

PROBE_N = 11
PROBE_REPEATS = 5


def cpu_probe_s() -> float | None:
    """The probe's time in seconds (None without the C extension)."""
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
