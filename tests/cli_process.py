"""``nqprof`` commands run in a fresh interpreter: what they print, and what they import (read
from ``-X importtime``)."""

import subprocess
import sys

#: Packages a command that only parses, plans or lists must not import.
HEAVY = frozenset({"pandas", "pytest", "matplotlib", "pycuda", "_pytest"})


def nqprof(*args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """``python -m nqprof.cli ARGS``, its output captured as text (``kwargs``: env, cwd, ...)."""
    return subprocess.run(
        [sys.executable, "-m", "nqprof.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def command_imports(argv: list[str]) -> set[str]:
    """The top-level packages ``nqprof ARGV`` imports (its exit included, --help's too); the
    command must succeed."""
    code = f"from nqprof.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return {
        line.split("|")[-1].strip().split(".")[0]
        for line in result.stderr.splitlines()
        if "|" in line
    }
