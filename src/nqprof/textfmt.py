"""Text output written once: aligned or Markdown tables, human-readable times and sizes, and
counts with the word that agrees with them.

Every command and report formats through these, so a time, a size or a count reads the same
everywhere (``12.345 ms``, ``1.5 GiB``, ``1 round``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_NUMBER = re.compile(r"[\d.,/+ -]+")


def table(
    header: Sequence[object],
    rows: Iterable[Sequence[object]],
    *,
    markdown: bool = False,
    right_align_numbers: bool = False,
) -> str:
    """An aligned text table (a dashed rule under the header), or a Markdown one.

    With ``right_align_numbers``, columns whose every cell is a number are right-aligned."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    if markdown:
        lines = [
            "| " + " | ".join(cells[0]) + " |",
            "| " + " | ".join("---" for _ in cells[0]) + " |",
        ]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells[1:]])
    width = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    numeric = [
        right_align_numbers and len(cells) > 1 and all(_NUMBER.fullmatch(r[i]) for r in cells[1:])
        for i in range(len(width))
    ]

    def line(row: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, width, numeric, strict=True)
        ).rstrip()

    return "\n".join(
        [line(cells[0]), line(["-" * w for w in width])] + [line(r) for r in cells[1:]]
    )


def seconds(value: float | None) -> str:
    """``1.234 s``, ``12.345 ms``, ``12.3 us``; ``-`` for None."""
    if value is None:
        return "-"
    if value >= 1:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3f} ms"
    return f"{value * 1e6:.1f} us"


def nanoseconds(value: float | None) -> str:
    """A duration given in ns, one decimal in the largest fitting unit: ``1.5 ms``."""
    if value is None or value != value:  # None or NaN
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} ns"


#: Bytes in a MiB: nqprof's one name for it.
MIB = 2**20
_BYTE_UNITS = (("GiB", 2**30), ("MiB", MIB), ("KiB", 2**10), ("B", 1))


def nbytes(value: float, smallest: str = "B") -> str:
    """``1.5 GiB``, ``19.0 MiB``; nothing below the ``smallest`` unit (``0.0 MiB`` for a few bytes
    with ``smallest="MiB"``)."""
    units = _BYTE_UNITS[: [u for u, _ in _BYTE_UNITS].index(smallest) + 1]
    for unit, scale in units:
        if value >= scale or unit == smallest:
            return f"{value:.0f} B" if unit == "B" else f"{value / scale:.1f} {unit}"
    raise AssertionError("unreachable")


def plural(count: float | None, word: str, words: str | None = None, fmt: str = "") -> str:
    """``1 round``, ``2 rounds``, ``1,632 D4 classes``: ``count`` (formatted with ``fmt``, e.g.
    ``","``) and the word that agrees with it: ``word`` for 1, else ``words`` (default
    ``word`` + "s"). In "k of n rounds" the word agrees with n: ``f"{k} of {plural(n, ...)}"``."""
    return f"{count:{fmt}} {word if count == 1 else words or word + 's'}"
