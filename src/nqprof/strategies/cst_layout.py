"""The layout cdp-cst and graph-cst share with their kernels (kernels/cst_launch.cuh): the
control words (CC_*), the launch modes' codes, the limits and block sizes the kernels are built
with, and struct cc_params; LAYOUT checks them against the header (tests/test_cdp_cst.py)."""

from __future__ import annotations

from .counters import CounterLayout
from .cpu_common import CST_TASK_WORDS

# The control words of kernels/cst_launch.cuh (CC_*; tests/test_cdp_cst.py compares them).
OVERFLOW, REFUSED, SPILLS, GENS, SPLIT_TICKET, WRITE_TICKET = 0, 1, 2, 3, 4, 5
TASKS, NEXT, TICKET, TL = 8, 32, 56, 80
MAX_GEN = 20
WORDS = 104
FIRST_COUNT = 3  # the global generation of counting generation 0
SCAN_BLOCK = 1024
SPLIT_BLOCK = 128
NO_BUDGET = 0xFFFF_FFFF
TL_NONE = 0xFFFF_FFFF
TASK_BYTES = 4 * CST_TASK_WORDS
#: cc_params.mode: the stream of the device launches; host (cdp-cst without refinement, a
#: measurement of the launch path): counting generation 0 launched by the host after the
#: chain (whose own launches go fire-and-forget), the same kernel over the same tasks
MODES = {"fire-and-forget": 0, "tail": 1, "host": 2}
#: Spill buffer (tasks, each of its two) when ``spill=0``: a quarter of the tasks, at least
#: 1M and at most 64M (1 GiB).
SPILL_MIN, SPILL_MAX = 1 << 20, 1 << 26

LAYOUT = CounterLayout(
    "cst_launch.cuh",
    "CC_",
    {
        "OVERFLOW": OVERFLOW,
        "REFUSED": REFUSED,
        "SPILLS": SPILLS,
        "GENS": GENS,
        "SPLIT_TICKET": SPLIT_TICKET,
        "WRITE_TICKET": WRITE_TICKET,
        "TASKS": TASKS,
        "NEXT": NEXT,
        "TICKET": TICKET,
        "TL": TL,
    },
    WORDS,
    constants={
        "MAX_GEN": MAX_GEN,
        "FIRST_COUNT": FIRST_COUNT,
        "SCAN_BLOCK": SCAN_BLOCK,
        "SPLIT_BLOCK": SPLIT_BLOCK,
        **{f"MODE_{m.upper().replace('-', '_')}": code for m, code in MODES.items()},
    },
)

#: struct cc_params (kernels/cst_launch.cuh), field: offset.
PARAMS_FIELDS = (
    ("frames", "<u8", 0),
    ("counts", "<u8", 8),
    ("offsets", "<u8", 16),
    ("tasks", "<u8", 24),
    ("spill", "<u8", 32),
    ("ctl", "<u8", 40),
    ("acct", "<u8", 48),
    ("execs", "<u8", 56),
    ("nframes", "<u4", 64),
    ("task_cap", "<u4", 68),
    ("spill_cap", "<u4", 72),
    ("budget", "<u4", 76),
    ("n", "<i4", 80),
    ("depth", "<i4", 84),
    ("gens", "<i4", 88),
    ("mode", "<i4", 92),
    ("resident", "<u4", 96),
    ("count_shared", "<u4", 100),
    ("resident0", "<u4", 104),
    ("unused", "<u4", 108),
)
PARAMS_BYTES = 112


def params_dtype():
    import numpy as np

    return np.dtype(
        {
            "names": [f[0] for f in PARAMS_FIELDS],
            "formats": [f[1] for f in PARAMS_FIELDS],
            "offsets": [f[2] for f in PARAMS_FIELDS],
            "itemsize": PARAMS_BYTES,
        }
    )
