"""Progress of long runs on a terminal: which case, i of n, elapsed time.

Shown only on a terminal (stderr is a TTY) and not with ``-q``; silent otherwise, so that
logs and pipes get results only. On a terminal the status line is rewritten in place and
each finished case leaves one line behind."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .textfmt import plural


class Progress:
    """``[3/12 0:42] dp3 N=14: round 2/5 0.021 s``."""

    def __init__(
        self, total: int | None = None, enabled: bool | None = None, stream: TextIO | None = None
    ):
        self.stream = stream or sys.stderr
        #: -q: not even messages
        self.quiet = enabled is False
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled, self.total = enabled, total
        self.index, self.case_label = 0, ""
        self.t0 = time.monotonic()
        self._open = False

    @classmethod
    def for_command(cls, quiet: bool, total: int | None = None) -> Progress:
        """Shown on a terminal unless ``quiet`` (the commands' ``-q``)."""
        return cls(total, enabled=False if quiet else None)

    def elapsed(self) -> str:
        s = int(time.monotonic() - self.t0)
        return (
            f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
            if s >= 3600
            else f"{s // 60}:{s % 60:02d}"
        )

    def _prefix(self) -> str:
        count = f"{self.index}/{self.total} " if self.total and self.index else ""
        return f"[{count}{self.elapsed()}]"

    def case(self, label: str) -> None:
        """The next case starts."""
        self.finish_case()
        self.index += 1
        self.case_label = label
        self.update("starting")

    def update(self, text: str) -> None:
        """Status of the current case (or of the run, with no case)."""
        if not self.enabled:
            return
        label = f" {self.case_label}:" if self.case_label else ""
        self.stream.write(f"\r\x1b[K{self._prefix()}{label} {text}")
        self.stream.flush()
        self._open = True

    def tasks(self, done: int, already: int = 0) -> None:
        """Status of a run of ``total`` tasks: ``done`` of them finished, ``already`` of those
        before this run started (a resumed checkpoint), with the time left at this pace."""
        elapsed = time.monotonic() - self.t0
        text = f"{done}/{plural(self.total, 'task')}"
        ran = done - already
        if 0 < ran and self.total and done < self.total:
            text += f", ETA {elapsed / ran * (self.total - done):.0f} s"
        self.update(text)
        if self.total and done >= self.total:
            self.finish_case()

    def message(self, text: str) -> None:
        """A line worth keeping (a dashboard address, a plan), on a terminal or not; not with -q."""
        if self.quiet:
            return
        self.stream.write(("\r\x1b[K" if self._open else "") + text + "\n")
        self.stream.flush()
        self._open = False

    def finish_case(self, text: str | None = None) -> None:
        """Leave the current case's last status (or ``text``) on its own line."""
        if text is not None:
            self.update(text)
        if self.enabled and self._open:
            self.stream.write("\n")
            self.stream.flush()
        self._open = False

    def close(self) -> None:
        self.finish_case()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
