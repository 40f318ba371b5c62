"""NVTX ranges in nqprof's own domain. Free, and silent, where the nvtx package is absent."""

from __future__ import annotations

import contextlib
from typing import Iterator

try:  # pragma: no cover - depends on the machine
    import nvtx as _nvtx
except ImportError:  # pragma: no cover
    _nvtx = None

DOMAIN = "nqprof"


def available() -> bool:
    return _nvtx is not None


@contextlib.contextmanager
def nvtx_range(name: str, payload: int | None = None) -> Iterator[None]:
    """Push/pop an NVTX range named ``name`` in domain ``nqprof`` (int payload optional)."""
    if _nvtx is None:
        yield
        return
    kwargs = {"domain": DOMAIN}
    if payload is not None:
        kwargs["payload"] = int(payload)
    with _nvtx.annotate(name, **kwargs):
        yield
