"""The options that select and run benchmark cases, defined once for the pytest plugin
(``--nq-strategy``, ``--nq-n``, ...) and the command line (``nqprof sweep --strategy ...``,
``nqprof solve --rounds ...``), the way pytest-benchmark shares its options between its
plugin and its CLI.

Everything here is pure: texts in, values out, :class:`~nqprof.errors.InputError` naming the
option on a bad value (a number in :mod:`nqprof.numeric`'s grammar and in a finite range: a
timeout of at most a week, at most MAX_FIXED_ROUNDS rounds). The cases an option set
selects come from :func:`case_grid`; a pytest session's parsed options from
:func:`settings_of`. Environment variables (``NQPROF_TIMEOUT``) are read when a value is
needed, never at import.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .numeric import Integer, Real
from .problem import parse_n_list, split_list
from .rounds import AUTO_TEXT, DEFAULT_WARMUP

#: Seconds a worker may take for one step (open, or one round) before it is killed, unless
#: NQPROF_TIMEOUT or --timeout says otherwise.
DEFAULT_TIMEOUT = 600.0
TIMEOUT_VARIABLE = "NQPROF_TIMEOUT"
#: The longest timeout: a week, which every wait of a run takes (a pipe's poll counts in
#: milliseconds in a C int, about 24 days; threading's TIMEOUT_MAX is larger).
MAX_TIMEOUT = 7 * 24 * 3600.0
#: The most timed (or warm-up) rounds a case can be given.
MAX_FIXED_ROUNDS = 100_000
#: The pytest fixture that runs one case, and the plugin's cluster option.
FIXTURE = "nqbench"
CLUSTER_OPTION, CLUSTER_DEST = "--nq-cluster", "nq_cluster"
#: The plugin's compare gate (nqprof.benchgate): the verdicts that fail a session, and the
#: smallest change, in percent, they must catch.
COMPARE_FAIL_OPTION, COMPARE_FAIL_DEST = "--nq-compare-fail", "nq_compare_fail"
MIN_CHANGE_OPTION, MIN_CHANGE_DEST = "--nq-min-change", "nq_min_change"
#: The verdicts of an interleaved A/B (nqprof.analysis.paired) that `nqprof ab --fail-on`
#: and the plugin's --nq-vs-fail take: every one but same (a test keeps them alike).
AB_FAILING = ("slower", "faster", "cannot-tell", "too-few-pairs")


def parse_ab_failing(text: str, flag: str) -> list[str]:
    """``flag``'s comma list of :data:`AB_FAILING` verdicts; InputError naming it otherwise."""
    out = [v.strip() for v in str(text).split(",") if v.strip()]
    if not out or any(v not in AB_FAILING for v in out):
        raise InputError(f"{flag} takes a comma list of {', '.join(AB_FAILING)}, got {text!r}")
    return out


#: The plugin's number options besides OPTIONS' (checked as every number option is).
PLUGIN_NUMBER_FLAGS = (MIN_CHANGE_OPTION,)
#: A scheduler address: [PROTOCOL://]HOST:PORT, as Dask's Client takes it.
_ADDRESS = re.compile(
    r"^(?:(?P<proto>[a-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.\-_]*)"
    r":(?P<port>\d{1,5})$",
    re.ASCII,
)
PROTOCOLS = ("tcp", "tls", "ucx", "ws", "wss")
#: What a round's statistic can be (nqprof.runner): compute (CUDA events for GPU runs, the
#: worker's clock around the computation for CPU runs) or wall (the host round trip).
TIMERS = ("compute", "wall")
#: What pytest-benchmark compares for CPU cases (the plugin's --nq-cpu-metric): their time
#: (the timer's), or the instructions of one round under Valgrind (nqprof.instructions).
CPU_METRICS = ("time", "instructions")


def default_timeout() -> float:
    """$NQPROF_TIMEOUT, else DEFAULT_TIMEOUT; an InputError naming the variable if bad."""
    text = os.environ.get(TIMEOUT_VARIABLE)
    if text is None:
        return DEFAULT_TIMEOUT
    try:
        return parse_timeout(text)
    except InputError as exc:
        raise InputError(f"{TIMEOUT_VARIABLE}: {exc}") from None


def describe(strategy: str, n: int, params: dict[str, Any]) -> str:
    """``dp3 N=17 (block=128, depth=4)``: how errors name a run."""
    ps = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"{strategy} N={n}" + (f" ({ps})" if ps else "")


#: N values benchmarked when no N list is given (inclusive), for every strategy, so that
#: the speedup over serial covers every N: serial needs seconds at N=16, a GPU strategy
#: milliseconds (docs/results/defaults-h200.md), and the whole default suite finishes in
#: minutes.
DEFAULT_N: tuple[int, int] = (8, 16)


# -- parsers -----------------------------------------------------------------------------


def _names() -> list[str]:
    from .strategies import names

    return names()


def parse_strategies(text: str) -> list[str]:
    """``all`` or a comma list of registered strategy names."""
    items = split_list(text, "the strategy list")
    if items == ["all"]:
        return _names()
    unknown = [item for item in items if item not in _names()]
    if unknown:
        raise InputError(
            f"unknown strategy {', '.join(map(repr, unknown))} (known: all, {', '.join(_names())})"
        )
    return list(dict.fromkeys(items))


def parse_n_values(text: str) -> list[int]:
    """``8:12,14`` -> ``[8, 9, 10, 11, 12, 14]`` (see :func:`nqprof.problem.parse_n_list`)."""
    return parse_n_list(text)


def parse_param_axis(text: str) -> tuple[str, str, list[str]]:
    """``feinbube.depth=4,5`` -> ``("feinbube", "depth", ["4", "5"])``."""
    target, sep, values = str(text).partition("=")
    strategy, dot, key = target.strip().partition(".")
    if not sep or not dot or not strategy or not key:
        raise InputError(
            f"a parameter axis is written [strategy.]key=value[,value...], got {text!r}"
        )
    if strategy not in _names():
        raise InputError(
            f"unknown strategy {strategy!r} in {text!r} (known: {', '.join(_names())})"
        )
    return (
        strategy,
        key.strip(),
        list(dict.fromkeys(split_list(values, f"the values of {target.strip()}"))),
    )


def parse_params(items: Sequence[str] | None) -> dict[str, str]:
    """``["depth=5", "block=64"]`` -> ``{"depth": "5", "block": "64"}`` (one strategy's
    values); a key given twice is an error, not the last one winning."""
    params: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise InputError(f"--param takes key=value, got {item!r}")
        if key in params:
            given = [
                f"{key}={v}" for v in (params[key], value)
            ]  # as typed, or quoted if not printable
            raise InputError(
                f"--param {key!r} is given twice "
                f"({', '.join(g if g.isprintable() else repr(g) for g in given)})"
            )
        params[key] = value
    return params


#: The timeout's grammar: seconds, more than none and at most MAX_TIMEOUT.
TIMEOUT_SECONDS = Real(0, MAX_TIMEOUT, "the timeout", unit="seconds", why="a week")
ROUND_COUNT = Integer(1, MAX_FIXED_ROUNDS, "the number of rounds (or auto)")
WARMUP_COUNT = Integer(0, MAX_FIXED_ROUNDS, "the number of warm-up rounds")


def parse_timeout(text: str) -> float:
    """Seconds in 0 < t <= MAX_TIMEOUT (inf is no timeout nqprof can wait for)."""
    return TIMEOUT_SECONDS(text)


def parse_rounds(text: str) -> int | None:
    """``auto`` (None) or a number of timed rounds in 1..MAX_FIXED_ROUNDS."""
    return None if str(text).strip() == "auto" else ROUND_COUNT(text)


def parse_warmup(text: str) -> int:
    return WARMUP_COUNT(text)


def parse_timer(text: str) -> str:
    value = str(text).strip()
    if value not in TIMERS:
        raise InputError(f"the timer is one of {', '.join(TIMERS)}, got {text!r}")
    return value


def parse_cpu_metric(text: str) -> str:
    value = str(text).strip()
    if value not in CPU_METRICS:
        raise InputError(f"the CPU metric is one of {', '.join(CPU_METRICS)}, got {text!r}")
    return value


def solve_params(items, strategy: str) -> dict[str, str]:
    """``--param [STRATEGY.]KEY=VALUE`` of one run: the prefix, where given, must be the run's
    strategy; a key given twice, or a list of values, is an error (a sweep takes lists)."""
    plain = []
    for item in items or ():
        target, sep, value = str(item).partition("=")
        name, dot, key = target.strip().rpartition(".")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value or (dot and not name.strip()):
            raise InputError(f"--param takes [STRATEGY.]KEY=VALUE, got {item!r}")
        if dot and name.strip() != strategy:
            raise InputError(
                f"--param {item!r}: names strategy {name.strip()!r}, but the run is {strategy} (-s)"
            )
        if "," in value:
            raise InputError(
                f"--param {item!r}: one run takes one value (a list of values is for nqprof sweep)"
            )
        plain.append(f"{key}={value}")
    return parse_params(plain)


def sweep_params(items, strategies: list[str], flag: str = "--param") -> list[str]:
    """``[STRATEGY.]KEY=V[,V...]`` axes (of a sweep, or of the plugin's ``--nq-param``) as
    ``STRATEGY.KEY=...``: an axis without a strategy applies to each selected strategy that
    has the parameter (an error if none has it); an axis of a strategy that is not selected
    would apply to no case, and is an error too."""
    from .strategies import get

    axes = []
    for item in items or ():
        target, sep, values = str(item).partition("=")
        if sep and "." not in target and target.strip():
            key = target.strip()
            having = []
            for name in strategies:
                try:
                    strategy = get(name)
                except ImportError:
                    continue
                if any(p.name == key for p in strategy.params):
                    having.append(name)
            if not having:
                raise InputError(
                    f"{flag} {item!r}: no selected strategy ({', '.join(strategies)}) has a "
                    f"parameter {key!r}"
                )
            axes += [f"{name}.{key}={values}" for name in having]
            continue
        name = target.partition(".")[0].strip()
        if sep and name in _names() and name not in strategies:
            raise InputError(
                f"{flag} {item!r}: {name} is not a selected strategy (selected: "
                f"{', '.join(strategies)})"
            )
        axes.append(item)
    return axes


def parse_cluster_address(text: str) -> str:
    """``local`` or a scheduler address ``[PROTOCOL://]HOST:PORT`` (``--cluster`` of solve,
    ``--nq-cluster`` of the plugin); InputError otherwise (the caller names the option)."""
    value = str(text).strip()
    if value == "local":
        return value
    m = _ADDRESS.match(value)
    if not m or (m["proto"] and m["proto"] not in PROTOCOLS) or not 1 <= int(m["port"]) <= 65535:
        raise InputError(
            f"takes local or a scheduler address [PROTOCOL://]HOST:PORT "
            f"(PROTOCOL: {', '.join(PROTOCOLS)}; e.g. tcp://host:8786), got {text!r}"
        )
    return value


# -- the options -------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One option: its name (``--nq-NAME`` in pytest, ``--NAME`` on the command line), the
    function turning its text into a value, its default text (None: no default, see the
    help; a callable: the text is computed when needed, its errors name their source) and
    help."""

    name: str
    parse: Callable[[str], Any]
    default: str | Callable[[], str] | None
    metavar: str
    help: str
    repeatable: bool = False
    #: Its value is a number or a list of numbers (tools/bad_inputs.py feeds it bad ones).
    numeric: bool = False

    @property
    def flag(self) -> str:
        """The plugin's flag, ``--nq-NAME``."""
        return self.flag_for("--nq-")

    def flag_for(self, prefix: str) -> str:
        return prefix + self.name

    @property
    def dest(self) -> str:
        """The plugin's destination name (``nq_strategy``)."""
        return self.flag.lstrip("-").replace("-", "_")

    def value(self, text: str | list[str] | None, prefix: str = "--nq-") -> Any:
        """The parsed value of ``text`` (the default if None); errors name the flag."""
        if text is None:
            text = self.default() if callable(self.default) else self.default
        try:
            if self.repeatable:
                return [self.parse(item) for item in text or ()]
            return None if text is None else self.parse(text)
        except InputError as exc:
            raise InputError(f"{self.flag_for(prefix)}: {exc}") from None

    def add_to(
        self,
        add: Callable[..., Any],
        prefix: str = "--nq-",
        *aliases: str,
        default: str | None = None,
        dest: str | None = None,
        help: str | None = None,
    ) -> Any:
        """Register with an ``add_argument``/``addoption`` callable; the value stays text
        (parse it with :meth:`value`), so that a bad value is nqprof's one-line error. A
        ``default`` other than the option's own is stated in the help instead of it; ``help``
        replaces the option's help where a command gives its values another meaning. An
        argparse action carries the option (``action.option``)."""
        text = help or self.help
        if default is not None:
            text = re.sub(r"\(default: [^()]*(\([^()]*\)[^()]*)*\)$", f"(default: {default})", text)
        action = add(
            self.flag_for(prefix),
            *aliases,
            dest=dest or self.dest,
            action="append" if self.repeatable else "store",
            default=default,
            metavar=self.metavar,
            help=text.replace("%", "%%"),
        )
        if action is not None:
            action.option = self
        return action


STRATEGY = Option(
    "strategy",
    parse_strategies,
    "all",
    "LIST",
    "strategies: a comma list of names, or all (default: all)",
)
N_VALUES = Option(
    "n",
    parse_n_values,
    None,
    "LIST",
    "board sizes: a comma list of N and inclusive ranges low:high, e.g. 8:12,14 (default: "
    f"{DEFAULT_N[0]}:{DEFAULT_N[1]} cut to each strategy's own range, from its smallest N "
    "(min_n, bench_min_n) to its bench_max_n)",
    numeric=True,
)
PARAM_AXIS = Option(
    "param",
    parse_param_axis,
    None,
    "[STRATEGY.]KEY=V1[,V2...]",
    "a parameter axis (repeatable) of a selected strategy: without STRATEGY it applies to each "
    "selected strategy that has KEY; the cases are the cartesian product of the axes, "
    "combinations a strategy rejects are skipped with the reason",
    repeatable=True,
)
TIMEOUT = Option(
    "timeout",
    parse_timeout,
    lambda: str(default_timeout()),
    "SECONDS",
    f"seconds one step of a run (prepare, or one round) may take before its worker is killed, "
    f"at most {MAX_TIMEOUT:g} (a week) (default: ${TIMEOUT_VARIABLE}, else {DEFAULT_TIMEOUT:g})",
    numeric=True,
)
ROUNDS = Option(
    "rounds",
    parse_rounds,
    "auto",
    "N|auto",
    f"timed rounds per case, a number up to {MAX_FIXED_ROUNDS} or {AUTO_TEXT} (default: auto)",
    numeric=True,
)
WARMUP = Option(
    "warmup",
    parse_warmup,
    str(DEFAULT_WARMUP),
    "N",
    # three: nqprof.runners.CPU_PROCESSES (tests/test_cli.py checks they agree)
    "untimed (but verified) rounds in each worker process of a case before its timed ones: a "
    "CPU case's three processes take the rounds in turn, so 1 is three untimed rounds before "
    "the first timed one; each GPU process warms up before its share (its first launch pays "
    f"for lazy loading) (default: {DEFAULT_WARMUP})",
    numeric=True,
)
TIMER = Option(
    "timer",
    parse_timer,
    "compute",
    "compute|wall",
    "what a round's time is: compute = CUDA-event time for GPU cases, the worker's own clock "
    "around the computation for CPU cases; wall = the host round trip around the round, "
    "worker pipe included (default: compute)",
)

#: The plugin's alone (not in OPTIONS: `nqprof solve --instructions` counts one case's).
CPU_METRIC = Option(
    "cpu-metric",
    parse_cpu_metric,
    "time",
    "time|instructions",
    "what pytest-benchmark records and compares for CPU cases: time (the timer's), or "
    "instructions: the instructions one round executes, counted once under Valgrind's "
    "callgrind, as every round's time at 1 ns per instruction (a host's clock speed does not "
    "move it; needs valgrind, about 50x slower than a round); GPU cases keep their times "
    "(default: time)",
)

#: The options that select and run cases: the plugin's --nq-* options, and `nqprof sweep`'s.
OPTIONS: tuple[Option, ...] = (STRATEGY, N_VALUES, PARAM_AXIS, TIMEOUT, ROUNDS, WARMUP, TIMER)


# -- the selected cases ------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """The parsed case options (of a pytest session, or of `nqprof sweep`)."""

    strategies: tuple[str, ...]
    #: None: DEFAULT_N
    n_values: tuple[int, ...] | None
    #: strategy -> parameter -> values to try
    axes: dict[str, dict[str, tuple[str, ...]]]
    timeout: float
    #: None: auto
    rounds: int | None
    warmup: int
    timer: str = "compute"

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategies": list(self.strategies),
            "n": list(self.n_values) if self.n_values else "default",
            "axes": {s: {k: list(v) for k, v in keys.items()} for s, keys in self.axes.items()},
            "timeout": self.timeout,
            "rounds": self.rounds or "auto",
            "warmup": self.warmup,
            "timer": self.timer,
        }


def _check_axis_key(strategy: str, key: str) -> None:
    """A misspelt parameter is a usage error; a strategy that cannot be loaded here is
    left to collection, which skips its cases with the reason."""
    from .strategies import get

    try:
        strat = get(strategy)
    except ImportError:
        return
    strat.param(key)


def parse_settings(raw: dict[str, Any], prefix: str = "--nq-") -> Settings:
    """Settings from the options' raw texts (``dest -> text``, a list for repeatable
    options); :class:`InputError` naming the option (``prefix`` + name) on a bad value, or
    on a parameter axis that no selected strategy takes (:func:`sweep_params`)."""
    values = {
        opt.name: opt.value(raw.get(opt.dest), prefix) for opt in OPTIONS if opt is not PARAM_AXIS
    }
    given_axes = sweep_params(
        raw.get(PARAM_AXIS.dest), values["strategy"], PARAM_AXIS.flag_for(prefix)
    )
    values["param"] = PARAM_AXIS.value(given_axes, prefix)
    axes: dict[str, dict[str, tuple[str, ...]]] = {}
    for strategy, key, choices in values["param"]:
        try:
            _check_axis_key(strategy, key)
        except InputError as exc:
            raise InputError(f"{PARAM_AXIS.flag_for(prefix)}: {exc}") from None
        if key in axes.setdefault(strategy, {}):
            raise InputError(f"{PARAM_AXIS.flag_for(prefix)}: {strategy}.{key} is given twice")
        axes[strategy][key] = tuple(choices)
    n_values = values["n"]
    return Settings(
        strategies=tuple(values["strategy"]),
        n_values=tuple(n_values) if n_values else None,
        axes=axes,
        timeout=values["timeout"],
        rounds=values["rounds"],
        warmup=values["warmup"],
        timer=values["timer"],
    )


_SETTINGS_KEY = None


def settings_of(config) -> Settings:
    """The parsed ``--nq-*`` options of a pytest session, parsed on first use (so that a run
    without nqprof benchmarks never reads them, nor NQPROF_TIMEOUT); InputError if bad."""
    global _SETTINGS_KEY
    import pytest

    if _SETTINGS_KEY is None:
        _SETTINGS_KEY = pytest.StashKey[Settings]()
    settings = config.stash.get(_SETTINGS_KEY, None)
    if settings is None:
        settings = parse_settings({opt.dest: config.getoption(opt.dest) for opt in OPTIONS})
        config.stash[_SETTINGS_KEY] = settings
    return settings


def given_explicitly(config) -> bool:
    """Whether any ``--nq-*`` case option was given on this pytest command line."""
    return any(config.getoption(opt.dest) not in (None, []) for opt in OPTIONS)


# -- cases -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One benchmark: a strategy, N and the parameters given on the command line (the
    strategy's defaults fill in the rest)."""

    strategy: str
    n: int
    given: tuple[tuple[str, str], ...] = ()

    @property
    def id(self) -> str:
        """``serial-N12``, ``feinbube-N16-depth=5-block=128``."""
        return "-".join([self.strategy, f"N{self.n}", *(f"{k}={v}" for k, v in self.given)])

    def to_param(self) -> dict[str, Any]:
        """The parametrization value: plain JSON, as pytest-benchmark saves it."""
        return {"strategy": self.strategy, "n": self.n, "params": dict(self.given)}

    @classmethod
    def from_param(cls, value: dict[str, Any]) -> Case:
        return cls(value["strategy"], int(value["n"]), tuple(value.get("params", {}).items()))


def default_n_values(strategy) -> list[int]:
    lo, hi = DEFAULT_N
    first = max(lo, strategy.min_n, strategy.bench_min_n)
    return list(range(first, min(hi, strategy.bench_max_n) + 1))


def case_grid(settings: Settings) -> list[tuple[Case, Any, str | None]]:
    """Every case the settings select, in order: ``(case, strategy, why_skipped)``.

    ``strategy`` is None when it cannot be loaded here (``why_skipped`` says why); a
    combination the strategy rejects carries the validation message as ``why_skipped``.
    An axis value that every case rejects is a typo, not a skip: :class:`InputError`."""
    from .strategies import get

    grid: list[tuple[Case, Any, str | None]] = []
    for name in settings.strategies:
        try:
            strategy = get(name)
        except ImportError as exc:
            grid.append((Case(name, 0), None, f"strategy {name} cannot be loaded here: {exc}"))
            continue
        axes = settings.axes.get(name, {})
        accepted: dict[tuple[str, str], bool] = {
            (k, v): False for k, vs in axes.items() for v in vs
        }
        rejected: dict[tuple[str, str], str] = {}
        for n in settings.n_values or default_n_values(strategy):
            for combo in itertools.product(*axes.values()):
                case = Case(name, n, tuple(zip(axes, combo, strict=True)))
                try:
                    strategy.resolve(n, dict(case.given))
                except InputError as exc:
                    grid.append((case, strategy, f"{describe(name, n, dict(case.given))}: {exc}"))
                    for pair in case.given:
                        rejected.setdefault(pair, str(exc))
                else:
                    grid.append((case, strategy, None))
                    for pair in case.given:
                        accepted[pair] = True
        bad = [(k, v) for (k, v), ok in accepted.items() if not ok]
        if bad:
            key, value = bad[0]
            raise InputError(
                f"{name}.{key}={value} is rejected by every "
                f"case it is in: {rejected.get((key, value))}"
            )
    return grid
