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

from .attribution import attribute
from .chrome import to_chrome
from .nsys import NSYS_ENV, export_sqlite, find_nsys, profile
from .reader import load
from .schema import (
    DEFAULT_DOMAIN,
    OUTSIDE,
    PUSH_POP,
    START_END,
    SUMMARY_FIELDS,
    TABLES,
    ProfileError,
    Trace,
)
from .summary import breakdown, summary, summary_records

__all__ = [
    "DEFAULT_DOMAIN", "NSYS_ENV", "OUTSIDE", "PUSH_POP", "START_END", "SUMMARY_FIELDS", "TABLES",
    "ProfileError", "Trace", "attribute", "breakdown", "export_sqlite", "find_nsys", "load", "profile",
    "summary", "summary_records", "to_chrome",
]
