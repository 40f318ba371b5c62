"""A pytest plugin for probing where a GPU case's per-process offsets come from: loaded with
``-p offset_variants`` (``tools/`` on PYTHONPATH), it changes one thing of the suite's
machinery, named by $OFFSET_VARIANT:

* ``default``: nothing;
* ``nospare``: no spare worker is started for the next case;
* ``nowatch``: no NVML look after each round;
* ``four``: four worker processes one after another per GPU case instead of two.

Used by ``tools/gpu_check.sh offsets``; the histories it leaves are read by
``tools/offset_probe.py``."""

from __future__ import annotations

import os


def pytest_configure(config):
    variant = os.environ.get("OFFSET_VARIANT", "default")
    if variant == "nospare":
        from nqprof import nqbench

        for cls in vars(nqbench).values():
            if isinstance(cls, type) and "gpu_follows" in vars(cls):
                cls.gpu_follows = lambda self: False
    elif variant == "nowatch":
        from nqprof import gpuconditions

        gpuconditions.GpuWatch.round_done = lambda self, index: None
    elif variant == "four":
        from nqprof import runners

        runners.GPU_PROCESSES = 4
    elif variant != "default":
        raise ValueError(f"unknown OFFSET_VARIANT {variant!r}")
