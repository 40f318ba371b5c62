"""The strategy registry. One module per strategy; each defines one :class:`Strategy`."""

from __future__ import annotations

import importlib

from ..errors import InputError
from .base import Param, Session, Strategy

#: Strategy name -> module (under nqprof.strategies) that defines it, in display order.
_MODULES: dict[str, str] = {
    "serial": "serial",
    "multicore": "multicore",
    "serial-d4": "serial_d4",
    "feinbube": "feinbube",
    "fast": "fast",
    "dp1": "dp1",
    "dp2": "dp2",
    "dp3": "dp3",
    "dpswap": "dpswap",
}

_cache: dict[str, Strategy] = {}


def names() -> list[str]:
    return list(_MODULES)


def get(name: str) -> Strategy:
    """The strategy called ``name``; :class:`InputError` listing the known ones otherwise."""
    if name not in _MODULES:
        raise InputError(f"unknown strategy {name!r} (known: {', '.join(_MODULES)})")
    if name not in _cache:
        module = importlib.import_module(f"{__name__}.{_MODULES[name]}")
        _cache[name] = module.STRATEGY
    return _cache[name]


def all_strategies() -> list[Strategy]:
    return [get(name) for name in _MODULES]


__all__ = ["Param", "Session", "Strategy", "get", "names", "all_strategies"]
