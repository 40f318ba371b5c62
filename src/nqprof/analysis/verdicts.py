"""The names of compare's verdicts, and the options that choose them: ``nqprof compare``'s
``--fail-on`` and ``--min-change``, pytest's ``--nq-compare-fail`` and ``--nq-min-change``.

Light on purpose (no pandas, no statistics): the pytest plugin checks its options with it
before any case runs."""

from __future__ import annotations

import math

from ..errors import InputError

#: What compare may say of a benchmark's time, in the order summaries list them.
VERDICTS = ("same", "faster", "slower", "cannot-tell", "too-few-rounds", "only-a", "only-b")
#: What compare notes besides the verdict: the case was run with other parameter values,
#: from other kernel sources / build, with another CUDA toolkit, on another GPU model.
CHANGES = ("changed-params", "changed-source", "changed-toolkit", "changed-gpu")
#: The verdicts and changes a gate (--fail-on, --nq-compare-fail) may fail on.
FAILING = (
    "slower",
    "faster",
    "cannot-tell",
    "too-few-rounds",
    "only-a",
    "only-b",
    *CHANGES,
)
#: The largest --min-change, in percent: a change of the median by more than this is no
#: smaller change to catch.
MAX_MIN_CHANGE_PCT = 1000.0


def parse_failing(text: str) -> list[str]:
    """``"slower, cannot-tell"`` -> ``["slower", "cannot-tell"]``; an :class:`InputError`
    for an empty list or a name not in FAILING."""
    items = [v.strip() for v in str(text).split(",") if v.strip()]
    if not items or any(v not in FAILING for v in items):
        raise InputError(f"takes a comma list of {', '.join(FAILING)}, got {text!r}")
    return list(dict.fromkeys(items))


def parse_min_change(text: str) -> float:
    """``"10"`` or ``"10%"`` -> 0.1: the smallest relative change to catch; an
    :class:`InputError` unless a number above 0 and at most MAX_MIN_CHANGE_PCT percent."""
    raw = str(text).strip().removesuffix("%").strip()
    try:
        pct = float(raw)
    except ValueError:
        pct = math.nan
    if not (0 < pct <= MAX_MIN_CHANGE_PCT):  # nan and inf fail too
        raise InputError(
            f"takes a percentage above 0 and at most {MAX_MIN_CHANGE_PCT:g}, such as 10 "
            f"(10%), got {text!r}"
        )
    return pct / 100
