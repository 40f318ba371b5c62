"""Files nqprof writes and reads, checked the same way by every command.

Outputs: :func:`check_output` before the work (the folder exists, is a folder and takes a
new file; the name is not a folder; the suffix is one the command writes; no file of that
name exists, unless inside :func:`replacing`, the command line's ``--force``), then
:func:`write_text` / :func:`write_json`, which write atomically (a temporary file in the
same folder, then ``os.replace``), so that a failed write never leaves half a file and an
hour's measurement is never lost to a typo in a path found after it.

Inputs: :func:`read_text` / :func:`read_json` and :func:`reading`, which turn every way a
file can be wrong (missing, a folder, unreadable, empty, binary, truncated, not JSON, JSON
of another kind) into one :class:`~nqprof.errors.InputError` line naming the file.

Everything here raises :class:`InputError` (exit code 2 on the command line), nothing else.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import InputError, NqprofError


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


#: Whether an output file that exists may be replaced: off unless the user asked for it
#: (the command line's ``--force``; :func:`replacing`).
_REPLACE: contextvars.ContextVar[bool] = contextvars.ContextVar("nqprof_replace", default=False)


@contextlib.contextmanager
def replacing(allowed: bool = True) -> Iterator[None]:
    """Inside this block, :func:`check_output` lets an existing file be replaced if
    ``allowed`` (``nqprof.cli.main`` runs a command inside it with its ``--force``)."""
    token = _REPLACE.set(bool(allowed))
    try:
        yield
    finally:
        _REPLACE.reset(token)


def _not_replaced(path: Path, what: str) -> None:
    """The one rule: an existing file is replaced only when the user asked for it."""
    if path.exists() and not _REPLACE.get():
        raise InputError(f"{what} {path} exists: pass --force to replace it")


def check_output(
    path: str | os.PathLike,
    what: str = "output",
    suffixes: Sequence[str] = (),
    *,
    resumed: bool = False,
) -> Path:
    """``path`` as a :class:`Path` once it is known that a file of that name can be written:
    its folder exists and takes a new file, it is not a folder, (if ``suffixes`` is given)
    it ends with one of them, and no such file exists unless replacing is allowed
    (:func:`replacing`) or the command carries on from it (``resumed``: a checkpoint).
    Creates nothing that stays."""
    text = os.fspath(path)
    if not text.strip():
        raise InputError(f"{what}: an empty file name")
    path = Path(text)
    if path.is_dir():
        raise InputError(f"{what} {text} is a folder, not a file")
    if suffixes and path.suffix.lower() not in suffixes:
        raise InputError(f"{what} {text}: the file name must end with {' or '.join(suffixes)}")
    folder = path.parent
    if not folder.exists():
        raise InputError(f"{what} {text}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise InputError(f"{what} {text}: {folder} is not a folder")
    if not resumed:
        _not_replaced(path, what)
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"{what} {text}: the file is not writable")
    _can_create_in(folder, what, text)
    return path


def _can_create_in(folder: Path, what: str, text: str) -> None:
    """The one true test that a folder takes new files: create one, and remove it."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".nqprof-", suffix=".probe", dir=folder)
    except OSError as exc:
        raise InputError(f"{what} {text}: cannot write in {folder} ({_reason(exc)})") from None
    os.close(fd)
    os.unlink(probe)


def check_output_dir(
    path: str | os.PathLike, what: str = "output folder", names: Sequence[str] = ()
) -> Path:
    """A folder files will be written into: it exists (or its parent does, and it is created
    when written to) and takes new files, and none of ``names`` (the files the command may
    write there) exists in it unless replacing is allowed (:func:`replacing`)."""
    text = os.fspath(path)
    if not text.strip():
        raise InputError(f"{what}: an empty folder name")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise InputError(f"{what} {text} is a file, not a folder")
    probe_in = path if path.exists() else path.parent
    if not probe_in.is_dir():
        raise InputError(f"{what} {text}: the folder {probe_in} does not exist")
    for name in names:
        _not_replaced(path / name, what)
    _can_create_in(probe_in, what, text)
    return path


def write_bytes(path: str | os.PathLike, data: bytes, what: str = "output") -> Path:
    """Write ``data`` to ``path`` atomically; :class:`InputError` naming the file if it fails."""
    path = Path(path)
    folder = path.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot write in {folder} ({_reason(exc)})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            with contextlib.suppress(OSError):
                os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise InputError(f"{what} {path}: cannot be written ({_reason(exc)})") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def write_text(path: str | os.PathLike, text: str, what: str = "output") -> Path:
    return write_bytes(path, text.encode(), what)


def write_json(
    path: str | os.PathLike, data: Any, what: str = "output", indent: int | None = 1
) -> Path:
    return write_text(path, json.dumps(data, indent=indent) + "\n", what)


# -- inputs ------------------------------------------------------------------------------


def read_bytes(path: str | os.PathLike, what: str = "input") -> bytes:
    text = os.fspath(path)
    path = Path(text)
    try:
        if path.is_dir():
            raise InputError(f"{what} {text} is a folder, not a file")
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} {text} does not exist") from None
    except OSError as exc:
        raise InputError(f"{what} {text} cannot be read ({_reason(exc)})") from None
    if not data.strip():
        raise InputError(f"{what} {text} is empty")
    return data


def read_text(path: str | os.PathLike, what: str = "input") -> str:
    """The text of ``path`` (UTF-8); one line naming the file if it is missing, empty or binary."""
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{what} {os.fspath(path)} is not a text file (binary content)") from None


def read_json(path: str | os.PathLike, what: str = "input", expect: type | None = dict) -> Any:
    """The JSON document in ``path``; one line naming the file if it is not JSON (or truncated)
    or not of type ``expect``."""
    text = read_text(path, what)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{what} {os.fspath(path)} is not JSON (or is "
            f"truncated): {exc.msg} at line {exc.lineno}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{what} {os.fspath(path)} is not JSON ({type(exc).__name__})") from None
    if expect is not None and not isinstance(doc, expect):
        kind = {dict: "a JSON object", list: "a JSON list"}.get(expect, expect.__name__)
        raise InputError(f"{what} {os.fspath(path)} is not {kind}")
    return doc


@contextlib.contextmanager
def reading(path: str | os.PathLike, what: str = "input") -> Iterator[None]:
    """Interpret a file's content inside this block: an :class:`InputError` that does not name
    the file gets its name, and the errors malformed content raises from plain code
    (KeyError, TypeError, ValueError, AttributeError, IndexError) become one line naming it."""
    name = os.fspath(path)
    try:
        yield
    except NqprofError as exc:
        if name in str(exc):
            raise
        raise type(exc)(f"{what} {name}: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
        detail = (
            f"missing {exc}"
            if isinstance(exc, KeyError)
            else (str(exc).splitlines() or [type(exc).__name__])[0]
        )
        raise InputError(f"{what} {name} is not a valid nqprof file ({detail})") from None


def load_with(
    path: str | os.PathLike,
    load: Callable[[Any], Any],
    what: str = "input",
    expect: type | None = dict,
):
    """``load(read_json(path))`` with every failure one line naming ``path``."""
    doc = read_json(path, what, expect)
    with reading(path, what):
        return load(doc)


#: What a JSON output file may be called.
JSON_SUFFIXES = (".json",)


def check_json_output(path: str | None):
    """The -o/--output file of a command writing JSON, checked before the work (None: none)."""
    return None if path is None else check_output(path, "--output", JSON_SUFFIXES)
