"""``pytest --nq-cpu-metric=instructions``: CPU cases compared by instructions, not time.

With the option, each CPU case, after its timed rounds, has one round's instructions
counted under Valgrind's callgrind (:mod:`nqprof.instructions`), and pytest-benchmark is
handed that count as every round's "time" at one nanosecond per instruction
(:data:`~nqprof.instructions.SECONDS_PER_INSTRUCTION`): what it prints, saves and compares
(``--benchmark-compare-fail=median:5%``) for CPU cases is then their instructions, which a
host's clock speed does not move, and an A/A comparison of them is exactly 0%. Their times
stay in extra_info (``samples_compute``, ``samples_wall``), the count in its
``instructions``; their group is ``N=.., instructions``. GPU cases keep their times.

One Valgrind process serves the session's CPU cases (:class:`~nqprof.instructions.Counter`):
its start (seconds) is paid on the first CPU case, and it ends with the session.
"""

from __future__ import annotations

import pytest

from .options import CPU_METRIC

_COUNTER = pytest.StashKey[object]()


class _Session:
    """Ends the session's Valgrind process with the session."""

    def __init__(self, counter):
        self.counter = counter

    def pytest_unconfigure(self, config) -> None:
        self.counter.close()


def configure(config) -> None:
    """--nq-cpu-metric's value, a usage error naming it if bad; with instructions, a usage
    error where there is no Valgrind, else the session's Counter (started on first use)."""
    from .errors import InputError, UnavailableError

    try:
        metric = CPU_METRIC.value(config.getoption(CPU_METRIC.dest, None))
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    if metric != "instructions":
        return
    from .instructions import Counter
    from .options import settings_of

    try:
        counter = Counter(settings_of(config).timeout)
    except (UnavailableError, InputError) as exc:
        raise pytest.UsageError(f"{CPU_METRIC.flag}=instructions: {exc}") from None
    config.stash[_COUNTER] = counter
    config.pluginmanager.register(_Session(counter), "nqprof-cpu-metric")


def counter_of(config):
    """The session's :class:`~nqprof.instructions.Counter`; None without
    ``--nq-cpu-metric=instructions``."""
    return config.stash.get(_COUNTER, None)


def summary_line(config, timer: str) -> str | None:
    """The terminal summary's line on what the benchmark numbers are, where CPU cases
    report instructions; None where they report time."""
    if counter_of(config) is None:
        return None
    gpu = "CUDA events" if timer == "compute" else "the host round trip around each round"
    return (
        f"nqprof: CPU cases report instructions ({CPU_METRIC.flag}=instructions): one "
        "round's, counted under Valgrind's callgrind, as every round's time at 1 ns per "
        "instruction (their times are in extra_info); GPU cases report time "
        f"({gpu})"
    )
