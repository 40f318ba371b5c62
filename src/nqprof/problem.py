"""The N-Queens problem: known counts, board masks and input validation."""

from __future__ import annotations

from .errors import InputError

#: Number of solutions of the N-Queens problem, OEIS A000170, N = 1..27.
KNOWN_COUNTS: dict[int, int] = {
    1: 1,
    2: 0,
    3: 0,
    4: 2,
    5: 10,
    6: 4,
    7: 40,
    8: 92,
    9: 352,
    10: 724,
    11: 2680,
    12: 14200,
    13: 73712,
    14: 365596,
    15: 2279184,
    16: 14772512,
    17: 95815104,
    18: 666090624,
    19: 4968057848,
    20: 39029188884,
    21: 314666222712,
    22: 2691008701644,
    23: 24233937684440,
    24: 227514171973736,
    25: 2207893435808352,
    26: 22317699616364044,
    27: 234907967154122528,
}

#: Board masks are 32-bit words and every count must be verifiable, so N stops at the
#: largest N whose count is known.
MIN_N = 1
MAX_N = max(KNOWN_COUNTS)


def validate_n(n: object, lo: int = MIN_N, hi: int = MAX_N) -> int:
    """Return ``n`` as an int, or raise :class:`InputError` naming the allowed range."""
    try:
        value = int(n)  # type: ignore[call-overload]
        if isinstance(n, float) and n != value:
            raise ValueError
        if isinstance(n, str) and n.strip() != str(value):
            raise ValueError
    except (TypeError, ValueError):
        raise InputError(f"N must be an integer in {lo}..{hi}, got {n!r}") from None
    if not lo <= value <= hi:
        raise InputError(f"N must be in {lo}..{hi}, got {value}")
    return value


def known_count(n: int) -> int:
    """The number of solutions for ``n`` queens."""
    return KNOWN_COUNTS[validate_n(n)]


def full_mask(n: int) -> int:
    """The bit mask of the ``n`` columns of a row."""
    return (1 << n) - 1


def split_list(text: str, what: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``; an empty item is an :class:`InputError` naming ``what``."""
    items = [item.strip() for item in str(text).split(",")]
    if not all(items):
        raise InputError(f"{what} takes a comma-separated list without empty items, got {text!r}")
    return items


def parse_n_list(text: str) -> list[int]:
    """The one N-list grammar of nqprof: ``8:12,14`` -> ``[8, 9, 10, 11, 12, 14]`` (ranges
    inclusive, order kept, repeats dropped)."""
    values: list[int] = []
    for item in split_list(text, "the N list"):
        lo, sep, hi = item.partition(":")
        if not sep:
            values.append(validate_n(item))
            continue
        lo, hi = validate_n(lo), validate_n(hi)
        if lo > hi:
            raise InputError(f"the N range {item!r} is empty (write it low:high)")
        values.extend(range(lo, hi + 1))
    return list(dict.fromkeys(values))
