"""The one place nqprof reaches past pytest-benchmark's public hooks and fixture API: a
fixture handed nqprof's measured rounds (its timer replaced by :class:`ReplayClock`), a
fixture marked used by a run that stopped early, and whether a session benchmarks at all.
Each names the attribute it relies on, and :func:`check_version` says where the installed
pytest-benchmark is one nqprof was not tested with (:data:`TESTED`: tox runs the CPU suite
on the oldest and the newest)."""

from __future__ import annotations

from .errors import UnavailableError

#: The pytest-benchmark major versions nqprof is tested with.
TESTED = (4, 5)


def check_version() -> str | None:
    """A line to warn with where the installed pytest-benchmark's major version is not one
    of :data:`TESTED` (None where it is, or where none is installed)."""
    try:  # its own attribute: importlib.metadata would cost every pytest start its imports
        import pytest_benchmark

        found = str(pytest_benchmark.__version__)
    except (ImportError, AttributeError):  # not installed: the plugin says so where it matters
        return None
    major = int(found.split(".", 1)[0]) if found.split(".", 1)[0].isdigit() else None
    if major in TESTED:
        return None
    return (
        f"nqprof is tested with pytest-benchmark {' and '.join(map(str, TESTED))}.x, not "
        f"{found}: nqprof.benchadapter relies on its fixture's timer and its session"
    )


class ReplayClock:
    """A clock for pytest-benchmark whose consecutive (start, end) readings differ by the
    given durations, one pair per round: the fixture then records exactly those times."""

    def __init__(self, durations: list[float], name: str):
        self._durations = list(durations)
        self.__name__ = name
        self._end = 0.0
        self._started = False

    def __call__(self) -> float:
        if self._started:
            self._started = False
            return self._end
        self._started = True
        self._end = self._durations.pop(0)
        return 0.0

    def __repr__(self) -> str:
        return self.__name__


def replay(benchmark, durations: list[float], name: str) -> None:
    """Hand ``durations`` (seconds, one per round) to a pytest-benchmark fixture as its
    rounds; with benchmarks disabled (``--benchmark-disable``, xdist) nothing is recorded."""
    if getattr(benchmark, "disabled", False):
        benchmark.pedantic(lambda: None)
        return
    if not hasattr(benchmark, "_timer"):
        untested = check_version()
        raise UnavailableError(
            "nqprof needs pytest-benchmark's fixture timer (pytest-benchmark >= 4)"
            + (f"; {untested}" if untested else "")
        )
    benchmark._timer = ReplayClock(durations, name)
    benchmark.pedantic(lambda: None, rounds=len(durations), warmup_rounds=0, iterations=1)


def used(benchmark) -> None:
    """Mark a pytest-benchmark fixture used by a run that stopped before it handed its rounds
    over (Ctrl-C, a failure): pytest-benchmark warns at teardown of a fixture that was never
    called ("Benchmark fixture was not used at all"), and nqprof calls it only after the
    rounds, where a plain benchmark's own call is under way from the start."""
    if hasattr(benchmark, "_mode") and not benchmark._mode:
        benchmark._mode = "nqbench.run(...)"


def benchmarking(config) -> bool:
    """Whether pytest-benchmark times this session's benchmarks (not disabled, nor skipped)."""
    session = getattr(config, "_benchmarksession", None)
    return session is not None and not session.disabled and not session.skip
