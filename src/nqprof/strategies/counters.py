"""Device-side counters, for any GPU strategy: named 64-bit words a kernel keeps in global
memory (solutions, launches, failures, queue events, ...), laid out by ``#define``s in a
kernel header and mirrored here. A test compares every registered strategy's layout with
its header, so the two cannot drift apart.

A session allocates the words with :meth:`GpuSession.counter(layout.words)
<nqprof.strategies.gpu_common.GpuSession.counter>` and reads them with :meth:`CounterLayout.read`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class CounterLayout:
    """Where each counter lives: ``fields`` maps a name to its word index, and the header
    ``kernels/<header>`` defines the same number as ``<prefix><NAME>``. ``constants`` are
    other numbers of the layout the header defines too (table bases, sizes)."""

    header: str
    prefix: str
    fields: Mapping[str, int]
    words: int
    constants: Mapping[str, int] = None  # type: ignore[assignment]

    def mirrored(self) -> dict[str, int]:
        """Every ``#define`` name -> the value the host expects."""
        out = {f"{self.prefix}{name}": index for name, index in self.fields.items()}
        out.update(
            {f"{self.prefix}{name}": value for name, value in (self.constants or {}).items()}
        )
        out[f"{self.prefix}WORDS"] = self.words
        return out

    def read(self, words: np.ndarray) -> dict[str, int]:
        """The named counters of ``words`` (``self.words`` 64-bit words read back)."""
        import numpy as np

        w = np.asarray(words, dtype=np.uint64)
        if w.shape != (self.words,):
            raise ValueError(
                f"{self.prefix}counters must be {self.words} 64-bit words, got shape {w.shape}"
            )
        return {name.lower(): int(w[index]) for name, index in self.fields.items()}
