"""NVTX ranges in nqprof's own domain. Free, and silent, where no tool records them.

NVTX does nothing unless a tool (Nsight Systems, Nsight Compute) has injected itself into
the process, through ``NVTX_INJECTION64_PATH`` or the CUDA driver. The ``nvtx`` package's
import loads numpy (a fifth of a second), so a process imports it where a tool set that
variable or numpy is loaded anyway (a GPU worker: PyCUDA needs it): a run under a profiler
gets every range, and a parent process that needs no numpy (``nqprof solve``'s, waiting for
its GPU worker) does not load it for ranges nobody records.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

DOMAIN = "nqprof"
#: The variable through which a tool injects itself into NVTX (NVTX's own contract).
INJECTION_VARIABLE = "NVTX_INJECTION64_PATH"

_loaded: list = []


def _module():
    """The nvtx package where ranges may be recorded (see the module's docstring) and it is
    installed, else None (asked again later: numpy may be loaded by then)."""
    if not _loaded and (os.environ.get(INJECTION_VARIABLE) or "numpy" in sys.modules):
        try:  # pragma: no cover - depends on the machine
            import nvtx
        except ImportError:  # pragma: no cover
            nvtx = None
        _loaded.append(nvtx)
    return _loaded[0] if _loaded else None


def available() -> bool:
    """Whether ranges can be recorded here (the nvtx package is installed and loaded)."""
    return _module() is not None


@contextlib.contextmanager
def nvtx_range(name: str, payload: int | None = None) -> Iterator[None]:
    """Push/pop an NVTX range named ``name`` in domain ``nqprof`` (int payload optional)."""
    nvtx = _module()
    if nvtx is None:
        yield
        return
    kwargs = {"domain": DOMAIN}
    if payload is not None:
        kwargs["payload"] = int(payload)
    with nvtx.annotate(name, **kwargs):
        yield
