"""Nsight Systems traces of nqprof runs.

:func:`load` reads an ``nsys`` SQLite export (or a ``.nsys-rep`` report, exported on the fly)
into pandas tables and attributes every kernel to the innermost NVTX push/pop range of the
thread that launched it. :func:`summary` and :func:`breakdown` aggregate that per range,
:func:`to_chrome` writes Chrome trace-event JSON (opens in Perfetto), and :func:`profile`
runs a command under ``nsys profile``.

The export schema changes between Nsight Systems versions, so table names come from
``sqlite_master``, columns from ``PRAGMA table_info`` and event-type numbers from the
``ENUM_*`` tables; an optional table or column that is absent reads as empty or NA.

Device-launched (CDP) child grids have no rows. The parent kernel's row covers the parent
grid only (on CDP2 it ends before its children do); the whole tree's time is inside the
NVTX range of its generation, which ends with a CUDA event that waits for every child.
"""

import importlib

#: Public name -> the module of this package that defines it. Imported on first use, so
#: that `nqprof --help` (which names the trace tables) does not load the readers.
_WHERE = {
    "attribute": "attribution",
    "to_chrome": "chrome",
    "NSYS_ENV": "nsys",
    "export_sqlite": "nsys",
    "find_nsys": "nsys",
    "profile": "nsys",
    "report_files": "nsys",
    "load": "reader",
    "DEFAULT_DOMAIN": "schema",
    "OUTSIDE": "schema",
    "PUSH_POP": "schema",
    "START_END": "schema",
    "SUMMARY_FIELDS": "schema",
    "TABLES": "schema",
    "ProfileError": "schema",
    "Trace": "schema",
    "breakdown": "aggregate",
    "contents": "aggregate",
    "NO_CUDA_WARNING": "aggregate",
    "summary": "aggregate",
    "summary_records": "aggregate",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


__all__ = sorted(_WHERE)
