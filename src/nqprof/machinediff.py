"""Which machine facts make two runs' timings incomparable, and how two runs differ in them.

Light on purpose (no imports): the plugin reads it as pytest starts, :mod:`nqprof.machine`
records the facts on this machine and :mod:`nqprof.analysis.history` compares saved runs.
"""

from __future__ import annotations

from typing import Any

#: machine_info key under which nqprof records its facts (nqprof.machine reads them).
MACHINE_KEY = "nqprof"
#: machine_info fields whose difference makes timings of two runs incomparable.
COMPARED_MACHINE_FIELDS = ("gpu", "cuda_toolkit", "driver")


def machine_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``["gpu: 'NVIDIA H100' -> 'NVIDIA H200'", ...]`` for the nqprof machine_info fields
    that differ between two runs' machine_info."""
    a, b = saved.get(MACHINE_KEY) or {}, current.get(MACHINE_KEY) or {}
    if not a or not b:  # a run saved without nqprof benchmarks has nothing to compare
        return []
    return [
        f"{key}: {a.get(key)!r} -> {b.get(key)!r}"
        for key in COMPARED_MACHINE_FIELDS
        if a.get(key) != b.get(key)
    ]
