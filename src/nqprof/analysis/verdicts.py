"""The names of compare's verdicts, and the options that choose them: ``nqprof compare``'s
``--fail-on`` and ``--min-change``, pytest's ``--nq-compare-fail`` and ``--nq-min-change``.

Light on purpose (no pandas, no statistics): the pytest plugin checks its options with it
before any case runs."""

from __future__ import annotations

from ..errors import InputError
from ..numeric import Real

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
#: The largest --min-change, in percent: a change of the median by more than ten times is no
#: smaller change to catch.
MAX_MIN_CHANGE_PCT = 1000.0


def parse_failing(text: str) -> list[str]:
    """``"slower, cannot-tell"`` -> ``["slower", "cannot-tell"]``; an :class:`InputError`
    for an empty list or a name not in FAILING."""
    items = [v.strip() for v in str(text).split(",") if v.strip()]
    if not items or any(v not in FAILING for v in items):
        raise InputError(f"takes a comma list of {', '.join(FAILING)}, got {text!r}")
    return list(dict.fromkeys(items))


def min_change_number(what: str | None = None) -> Real:
    """The number a --min-change takes: a percentage above 0, at most MAX_MIN_CHANGE_PCT, in
    nqprof's number grammar (``10``, ``7.5``; no ``%``, ``inf`` or ``nan``)."""
    return Real(0, MAX_MIN_CHANGE_PCT, what=what, why="a change of ten times the median")


def parse_min_change(text: str, what: str = "the smallest change to catch") -> float:
    """``"10"`` -> 0.1: the smallest relative change to catch, from a percentage; an
    :class:`InputError` naming ``what`` for anything but a number above 0 and at most
    MAX_MIN_CHANGE_PCT."""
    return min_change_number(what)(text) / 100
