"""A run's checkpoint: the plan it belongs to and the counts of its finished tasks.

A JSON file, rewritten atomically (a temporary file in the same folder, then
``os.replace``) after every finished task, so an interrupted run, or one whose host went
down, resumes with the tasks it had not finished. It names N, the strategy, its
parameters, the host depth and the hash of the task list; a checkpoint for another run,
or one that cannot be read, is an :class:`InputError` with one line, never silently
ignored or overwritten.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError

FORMAT = "nqprof-cluster-checkpoint"
VERSION = 1


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
        return {"n": self.n, "strategy": self.strategy, "params": self.params, "depth": self.depth,
                "tasks": self.tasks, "plan": self.plan}

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, **self.identity(),
                "done": {str(i): self.done[i] for i in sorted(self.done)}}

    def record(self, index: int, result: dict[str, Any]) -> None:
        """Add a finished task and write the file."""
        self.done[index] = result
        self.save()

    def save(self) -> None:
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".nqprof-checkpoint-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.to_dict(), f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


def open_checkpoint(path: str, n: int, strategy: str, params: dict[str, Any], depth: int,
                    tasks: int, plan: str) -> Checkpoint:
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
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"checkpoint {path} cannot be read ({_first_line(exc)}): remove it to start over") from None
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
        for key, entry in _dict(data, "done").items():
            index = int(key)
            if not 0 <= index < ck.tasks:
                raise ValueError(f"task {index} is outside 0..{ck.tasks - 1}")
            if not isinstance(entry, dict) or type(entry.get("count")) is not int or entry["count"] < 0:
                raise ValueError(f"task {index} has no valid count")
            ck.done[index] = entry
    except (ValueError, TypeError) as exc:
        raise InputError(f"checkpoint {path} is corrupt ({_first_line(exc)}): remove it to start over") from None
    return ck


def _describe(ident: dict[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in ident["params"].items())
    return (f"{ident['strategy']} N={ident['n']}" + (f" ({params})" if params else "")
            + f", depth {ident['depth']}, {ident['tasks']} tasks, plan {ident['plan']}")


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
