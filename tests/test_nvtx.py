"""nqprof's NVTX ranges: recorded where a tool can record them, and free (no nvtx, hence
no numpy, imported) in a process that has no tool attached and no numpy loaded."""

from __future__ import annotations

import subprocess
import sys

# A stand-in nvtx package that logs what it is asked (the real one needs a GPU stack).
FAKE = """
import sys, types, contextlib
calls = []
fake = types.ModuleType("nvtx")
fake.annotate = lambda name, **kw: (calls.append((name, kw)), contextlib.nullcontext())[1]
sys.modules["nvtx"] = fake
"""
USE = (
    "from nqprof.cuda.nvtx import nvtx_range, available\nwith nvtx_range('case', payload=3): pass\n"
)


def _run(code: str, **env) -> str:
    import os

    environ = {k: v for k, v in os.environ.items() if k != "NVTX_INJECTION64_PATH"} | env
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environ
    ).stdout.strip()


def test_no_tool_and_no_numpy_loads_nothing():
    out = _run(FAKE + USE + "print(calls, available(), 'numpy' in sys.modules)")
    assert out == "[] False False"


def test_a_tool_gets_every_range():
    out = _run(
        FAKE + USE + "print(calls, available())", NVTX_INJECTION64_PATH="/opt/tool/libinject.so"
    )
    assert out == "[('case', {'domain': 'nqprof', 'payload': 3})] True"


def test_a_process_with_numpy_records_its_ranges():
    """A GPU worker has numpy loaded (PyCUDA): a tool the CUDA driver injects sees its ranges."""
    out = _run("import numpy\n" + FAKE + USE + "print(calls)")
    assert out == "[('case', {'domain': 'nqprof', 'payload': 3})]"
