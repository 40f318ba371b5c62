"""The one number grammar of nqprof: a number typed by a user (an option, an environment
variable, a strategy parameter) is a plain decimal, finite and in its range.

An integer is ``[+-]digits``; a real number is a decimal with an optional exponent
(``0.5``, ``2e3``). Surrounding blanks are ignored; nothing else is a number: no ``inf``,
``nan``, ``0x10``, ``1_000``, ``1.5.2``, non-ASCII digits or empty text. A value that
parses but lies outside its range (``1e308``, ``10**30``, a negative count) is an
:class:`~nqprof.errors.InputError` naming what it is, its range and the text, in one line.

:class:`Integer` and :class:`Real` are the parsers the options declare (``Integer(1, 1024,
"the number of workers")``); :func:`add_number` registers such an option with an
``add_argument`` callable and marks it, so that the command line turns every number
option's text into its value, or its one-line error, before a command starts
(:func:`nqprof.cli.main`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .errors import InputError

_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_REAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
#: Digits an integer may have: more is out of every range nqprof has (and of what int()
#: converts without a limit).
MAX_DIGITS = 40
#: Characters of a bad text that an error message quotes.
SHOWN = 60


def shown(text: object) -> str:
    """``text`` as an error message quotes it: repr'd (one line), cut after SHOWN characters."""
    value = str(text)
    return repr(value if len(value) <= SHOWN else value[:SHOWN] + "...")


def integer_text(text: object) -> int:
    """The integer ``text`` spells in nqprof's grammar; ValueError if it is none."""
    value = str(text).strip()
    if not _INTEGER.fullmatch(value) or len(value.lstrip("+-")) > MAX_DIGITS:
        raise ValueError(f"not an integer: {shown(text)}")
    return int(value)


def real_text(text: object) -> float:
    """The real number ``text`` spells in nqprof's grammar (inf where it overflows, as
    ``1e400``); ValueError if it is none."""
    value = str(text).strip()
    if not _REAL.fullmatch(value):
        raise ValueError(f"not a number: {shown(text)}")
    return float(value)


#: Texts of infinity: not numbers in nqprof's grammar, but too large for every range too.
_INFINITY = ("inf", "+inf", "infinity", "+infinity")


@dataclass(frozen=True)
class Integer:
    """An integer in ``lo..hi`` (or one of ``choices``); ``what`` names it in errors (None:
    the option's flag, filled in by :func:`add_number`)."""

    lo: int
    hi: int
    what: str | None = None
    choices: tuple[int, ...] | None = None

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        return f"an integer in {self.lo}..{self.hi}"

    def __call__(self, text: object) -> int:
        try:
            value = integer_text(text)
        except ValueError:
            value = None
        if (
            value is None
            or not self.lo <= value <= self.hi
            or (self.choices and value not in self.choices)
        ):
            raise InputError(
                f"{self.what or 'the value'} must be {self.describe()}, got {shown(text)}"
            )
        return value


@dataclass(frozen=True)
class Real:
    """A real number above ``lo`` (``lo`` itself too unless ``above``) and at most ``hi``, in
    ``unit`` (``seconds``); ``what`` as for :class:`Integer`; ``why`` says why ``hi``."""

    lo: float
    hi: float
    what: str | None = None
    unit: str = ""
    above: bool = True
    why: str = ""

    def describe(self) -> str:
        of = f" of {self.unit}" if self.unit else ""
        if self.lo == 0 and self.above:
            return f"a positive number{of}"
        return f"a number{of} {'>' if self.above else '>='} {self.lo:g}"

    def __call__(self, text: object) -> float:
        what = self.what or "the value"
        try:
            value = real_text(text)
        except ValueError:
            value = math.inf if str(text).strip().lower() in _INFINITY else math.nan
        if value > self.hi:
            unit = f" {self.unit}" if self.unit else ""
            why = f" ({self.why})" if self.why else ""
            raise InputError(f"{what} must be at most {self.hi:g}{unit}{why}, got {shown(text)}")
        if not (value > self.lo if self.above else value >= self.lo):  # nan too
            raise InputError(f"{what} must be {self.describe()}, got {shown(text)}")
        return value


def add_number(
    add: Callable[..., Any], *flags: str, number: Callable[[str], Any], **kwargs: Any
) -> Any:
    """Register an option whose text ``number`` turns into its value (an :class:`Integer`,
    a :class:`Real`, whose errors then name the flag, or a list parser raising InputError)
    with an ``add_argument`` callable; the value stays text until the command line converts
    it (:func:`nqprof.cli.main`: the action carries ``number``)."""
    if isinstance(number, (Integer, Real)) and number.what is None:
        number = replace(number, what=flags[0])
    action = add(*flags, **kwargs)
    action.number = number
    return action
