"""The progress line of a long clustered run: tasks done / total, elapsed time, ETA.

On a terminal the line is rewritten in place at most every half second; otherwise
(a log file) a line is written when another tenth of the tasks is done, or after 30 s.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, total: int, already: int = 0, stream: TextIO | None = None):
        self.total, self.already = total, already
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()
        self._last_time = self.t0
        self._last_done = already
        self._open_line = False  # a terminal line being rewritten in place

    def line(self, done: int) -> str:
        elapsed = time.perf_counter() - self.t0
        ran = done - self.already
        text = f"nqprof: {done}/{self.total} tasks, {elapsed:.1f} s"
        if 0 < ran and done < self.total:
            text += f", ETA {elapsed / ran * (self.total - done):.1f} s"
        return text

    def update(self, done: int) -> None:
        now = time.perf_counter()
        final = done >= self.total
        if self.tty:
            if final or now - self._last_time >= 0.5:
                self.stream.write("\r" + self.line(done) + ("\n" if final else ""))
                self.stream.flush()
                self._last_time, self._open_line = now, not final
        elif final or done - self._last_done >= max(1, self.total // 10) or now - self._last_time >= 30:
            self.stream.write(self.line(done) + "\n")
            self.stream.flush()
            self._last_time, self._last_done = now, done

    def message(self, text: str) -> None:
        self.stream.write(("\n" if self._open_line else "") + text + "\n")
        self._open_line = False
        self.stream.flush()
