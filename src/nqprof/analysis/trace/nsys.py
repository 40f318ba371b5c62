"""Running Nsight Systems: finding ``nsys``, ``nsys profile`` around a command, and
``nsys export --type sqlite``."""

from __future__ import annotations

import collections
import glob
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from nqprof.errors import InputError, UnavailableError

from .schema import (
    MESSAGE_TAIL_LINES,
    NSYS_ENV,
    NSYS_GLOBS,
    OUTPUT_TAIL_LINES,
    ProfileError,
    require_file,
)

# --------------------------------------------------------------------------- running nsys


def _version_key(path: str) -> list:
    """Natural sort key, so that 2025.10 sorts after 2025.3."""
    return [(int(part), "") if part.isdigit() else (-1, part) for part in re.split(r"(\d+)", path)]


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_nsys() -> Path:
    """The ``nsys`` executable: ``$NQPROF_NSYS``, else ``nsys`` on PATH, else the newest one in
    the usual install locations (:data:`NSYS_GLOBS`)."""
    configured = os.environ.get(NSYS_ENV)
    if configured:
        path = Path(configured).expanduser()
        if not _is_executable(path):
            raise UnavailableError(f"{NSYS_ENV}={configured} is not an executable file")
        return path
    on_path = shutil.which("nsys")
    if on_path:
        return Path(on_path)
    for pattern in NSYS_GLOBS:
        for candidate in sorted(glob.glob(pattern), key=_version_key, reverse=True):
            if _is_executable(Path(candidate)):
                return Path(candidate)
    raise UnavailableError(
        f"nsys (Nsight Systems) not found: searched ${NSYS_ENV}, PATH and {', '.join(NSYS_GLOBS)}"
    )


def _nsys(nsys: str | os.PathLike | None) -> Path:
    if nsys is None:
        return find_nsys()
    path = Path(nsys).expanduser()
    if not _is_executable(path):
        raise InputError(f"{path}: not an executable nsys")
    return path


def _run(command: list[str], echo: bool) -> tuple[int, list[str]]:
    """Run ``command``, stdout and stderr merged; echo them to our stderr if asked.
    Returns the exit status and the last :data:`OUTPUT_TAIL_LINES` lines."""
    tail: collections.deque[str] = collections.deque(maxlen=OUTPUT_TAIL_LINES)
    try:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
    except OSError as exc:
        raise UnavailableError(f"cannot run {command[0]}: {exc.strerror or exc}") from exc
    with process:
        for line in process.stdout:
            tail.append(line.rstrip("\n"))
            if echo:
                sys.stderr.write(line)
    return process.returncode, list(tail)


def _failure(what: str, status: int, tail: list[str]) -> ProfileError:
    shown = (
        " | ".join(line.strip() for line in tail[-MESSAGE_TAIL_LINES:] if line.strip())
        or "no output"
    )
    return ProfileError(f"{what} failed (exit status {status}): {shown}", tail)


def export_sqlite(
    report: str | os.PathLike, output: str | os.PathLike, nsys: str | os.PathLike | None = None
) -> Path:
    """``nsys export --type sqlite`` of ``report`` to ``output``; returns ``output``."""
    report, output = Path(report), Path(output)
    require_file(report)
    command = [
        str(_nsys(nsys)),
        "export",
        "--type",
        "sqlite",
        "--force-overwrite",
        "true",
        "-o",
        str(output),
        str(report),
    ]
    status, tail = _run(command, echo=False)
    if status != 0 or not output.is_file():
        raise _failure(f"nsys export of {report}", status, tail)
    return output


def _prefix(output: str | os.PathLike) -> Path:
    """The report prefix nsys is given: ``output`` without a .nsys-rep/.sqlite suffix."""
    output = Path(output)
    return output.with_suffix("") if output.suffix in (".nsys-rep", ".sqlite") else output


def _sibling(prefix: Path, suffix: str) -> Path:
    return prefix.with_name(prefix.name + suffix)


def report_files(output: str | os.PathLike) -> tuple[Path, Path]:
    """The files :func:`profile` writes for ``output``: the report and its SQLite export."""
    prefix = _prefix(output)
    return _sibling(prefix, ".nsys-rep"), _sibling(prefix, ".sqlite")


def profile(
    argv: Sequence[str],
    output: str | os.PathLike,
    trace: str = "cuda,nvtx",
    *,
    nsys: str | os.PathLike | None = None,
    echo: bool = True,
) -> Path:
    """Run ``argv`` under ``nsys profile -t <trace>``, writing ``<output>.nsys-rep`` and its
    SQLite export ``<output>.sqlite`` (returned). The command's output is echoed to stderr
    when ``echo``; a failure raises :class:`ProfileError` carrying nsys's last lines."""
    if not argv:
        raise InputError("nothing to profile: give a command")
    executable = _nsys(nsys)
    prefix = _prefix(output)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    command = [
        str(executable),
        "profile",
        "-t",
        trace,
        "-o",
        str(prefix),
        "-f",
        "true",
        "--export",
        "sqlite",
        *argv,
    ]
    status, tail = _run(command, echo)
    if status != 0:
        raise _failure(f"nsys profile of {' '.join(argv)}", status, tail)
    report, sqlite = report_files(prefix)
    if not sqlite.is_file():
        if not report.is_file():
            raise _failure(f"nsys profile of {' '.join(argv)} wrote no report", status, tail)
        export_sqlite(report, sqlite, executable)
    return sqlite
