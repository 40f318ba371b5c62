"""The strategy registry: every strategy is an entry point of the group ``nqprof.strategies``
(``name = "module:STRATEGY"``), so a new strategy is a kernel file, a module and a test, and
a third-party package can add one by declaring an entry point of its own.

nqprof's own strategies are declared in its pyproject.toml. Run from a source checkout (the
package not installed), that table is read directly, so the checkout's declarations always
win over stale installed metadata. `nqprof strategies` lists them by ``Strategy.order``
(installed entry points come back in no particular order).
"""

from __future__ import annotations

import importlib
import os
import sys
from functools import lru_cache
from pathlib import Path

from ..errors import InputError
from .base import Param, Session, Strategy

GROUP = "nqprof.strategies"

_cache: dict[str, Strategy] = {}


def _checkout_table() -> dict[str, str] | None:
    """``name -> "module:attr"`` from the source checkout's pyproject.toml, if this package
    runs from one (src/nqprof/strategies/ under the checkout root)."""
    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    if not pyproject.is_file():
        return None
    import tomllib

    data = tomllib.loads(pyproject.read_text())
    if data.get("project", {}).get("name") != "nqprof":
        return None
    return dict(data["project"].get("entry-points", {}).get(GROUP, {}))


def _installed_entry_points(group: str) -> list[tuple[str, str, str]]:
    """(name, value, distribution) of every installed entry point of ``group``, read from each
    distribution's entry_points.txt on sys.path (the first of a distribution wins, as with
    importlib.metadata, whose import alone costs a start-up that should be instant)."""
    found: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for base in sys.path:
        try:
            entries = sorted(os.scandir(base or "."), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith((".dist-info", ".egg-info")):
                continue
            dist = entry.name.split("-")[0].removesuffix(".egg-info").replace("_", "-").lower()
            if dist in seen:
                continue
            seen.add(dist)
            try:
                text = Path(entry.path, "entry_points.txt").read_text()
            except OSError:
                continue
            section = None
            for line in text.splitlines():
                line = line.strip()
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif section == group and "=" in line and not line.startswith(("#", ";")):
                    name, _, value = line.partition("=")
                    found.append((name.strip(), value.strip(), dist))
    return found


@lru_cache(maxsize=1)
def _table() -> dict[str, str]:
    """Every registered strategy: nqprof's own, then other packages'."""
    own = _checkout_table()
    table: dict[str, str] = dict(own or {})
    for name, value, dist in _installed_entry_points(GROUP):
        if own is not None and dist == "nqprof":
            continue  # the checkout's declarations win
        table.setdefault(name, value)
    return table


def _order(name: str) -> tuple[float, str]:
    try:
        return (get(name).order, name)
    except Exception:  # a strategy that cannot be loaded here still has a name: list it last
        return (float("inf"), name)


def names() -> list[str]:
    """Every registered strategy's name, in display order (``Strategy.order``)."""
    return sorted(_table(), key=_order)


def get(name: str) -> Strategy:
    """The strategy called ``name``; :class:`InputError` listing the known ones otherwise."""
    table = _table()
    if name not in table:
        raise InputError(f"unknown strategy {name!r} (known: {', '.join(names())})")
    if name not in _cache:
        module, _, attr = table[name].partition(":")
        strategy = getattr(importlib.import_module(module), attr or "STRATEGY")
        if strategy.name != name:
            raise InputError(f"entry point {name!r} of {GROUP} names strategy {strategy.name!r}")
        _cache[name] = strategy
    return _cache[name]


def all_strategies() -> list[Strategy]:
    return [get(name) for name in names()]


def timeline_cdp() -> list[str]:
    """The CDP strategies that record their grids on the device (a ``timeline`` parameter):
    the ones the characterizations of nqprof.characterize measure by default."""
    return [
        s.name for s in all_strategies() if s.cdp and any(p.name == "timeline" for p in s.params)
    ]


__all__ = [
    "GROUP",
    "Param",
    "Session",
    "Strategy",
    "get",
    "names",
    "all_strategies",
    "timeline_cdp",
]
