"""A run's checkpoint: the plan it belongs to and the counts of its finished tasks.

A JSON file, rewritten atomically (a temporary file in the same folder, then
``os.replace``) after every finished task, so an interrupted run, or one whose host went
down, resumes with the tasks it had not finished. It names N, the strategy, its
parameters, the host depth and the hash of the task list; a checkpoint for another run,
or one that cannot be read, is an :class:`InputError` with one line, never silently
ignored or overwritten.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..textfmt import plural

FORMAT = "nqprof-cluster-checkpoint"
VERSION = 1
#: The fields that name the run a checkpoint belongs to: all but its path and its tasks done.
IDENTITY = ("n", "strategy", "params", "depth", "tasks", "plan")


@dataclass
class Checkpoint:
    path: str
    n: int
    strategy: str
    params: dict[str, Any]
    depth: int
    tasks: int
    plan: str
    #: task index -> {"count": partial count (no multiplier), "seconds": ..., "worker": ...}
    done: dict[int, dict[str, Any]] = field(default_factory=dict)

    def identity(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in IDENTITY}

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            **self.identity(),
            "done": {str(i): self.done[i] for i in sorted(self.done)},
        }

    def record(self, index: int, result: dict[str, Any]) -> None:
        """Add a finished task and write the file."""
        self.done[index] = result
        self.save()

    def save(self) -> None:
        """Write the file atomically; :class:`InputError` naming it if that fails."""
        from ..files import write_json

        write_json(self.path, self.to_dict(), "checkpoint")


def open_checkpoint(
    path: str, n: int, strategy: str, params: dict[str, Any], depth: int, tasks: int, plan: str
) -> Checkpoint:
    """The checkpoint at ``path`` for this run: resumed if the file exists (it must be for
    the same run), created otherwise."""
    wanted = Checkpoint(path, n, strategy, dict(params), depth, tasks, plan)
    if not os.path.exists(path):
        wanted.save()
        return wanted
    found = load(path)
    mine, theirs = _describe(wanted.identity()), _describe(found.identity())
    if wanted.identity() != found.identity():
        raise InputError(
            f"checkpoint {path} belongs to another run ({theirs}), not this one ({mine}): "
            "use another file or remove it"
        )
    return found


def load(path: str) -> Checkpoint:
    """Read and check a checkpoint; :class:`InputError` naming what is wrong."""
    from ..files import read_json

    try:
        data = read_json(path, "checkpoint", expect=None)
    except InputError as exc:
        why = str(exc).removeprefix(f"checkpoint {path} ")
        raise InputError(
            f"checkpoint {path} cannot be read ({why}): remove it to start over"
        ) from None
    try:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not an nqprof cluster checkpoint")
        if data.get("version") != VERSION:
            raise ValueError(f"version {data.get('version')!r}, this nqprof reads {VERSION}")
        ck = Checkpoint(
            path=path,
            n=_int(data, "n"),
            strategy=_str(data, "strategy"),
            params=_dict(data, "params"),
            depth=_int(data, "depth"),
            tasks=_int(data, "tasks"),
            plan=_str(data, "plan"),
        )
        if not 1 <= ck.n <= 64:
            raise ValueError(f"n {ck.n} is not a board size")
        if ck.tasks < 1:
            raise ValueError(f"tasks is {ck.tasks}, not a count of tasks >= 1")
        if ck.depth < 0:
            raise ValueError(f"depth is {ck.depth}, not >= 0")
        for key, entry in _dict(data, "done").items():
            if not (key.isascii() and key.isdigit()) or str(int(key)) != key:
                raise ValueError(f"task index {key!r} is not a plain integer")
            index = int(key)
            if not 0 <= index < ck.tasks:
                raise ValueError(f"task {index} is outside 0..{ck.tasks - 1}")
            if (
                not isinstance(entry, dict)
                or type(entry.get("count")) is not int
                or entry["count"] < 0
            ):
                raise ValueError(f"task {index} has no valid count")
            ck.done[index] = entry
    except (ValueError, TypeError) as exc:
        raise InputError(
            f"checkpoint {path} is corrupt ({_first_line(exc)}): remove it to start over"
        ) from None
    return ck


def _describe(ident: dict[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in ident["params"].items())
    return (
        f"{ident['strategy']} N={ident['n']}"
        + (f" ({params})" if params else "")
        + f", depth {ident['depth']}, {plural(ident['tasks'], 'task')}, plan {ident['plan']}"
    )


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _int(data, key) -> int:
    value = data.get(key)
    if type(value) is not int:
        raise ValueError(f"{key} is not an integer")
    return value


def _str(data, key) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{key} is not a string")
    return value


def _dict(data, key) -> dict:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ValueError(f"{key} is not an object")
    return value
