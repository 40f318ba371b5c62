"""pytest-benchmark's own options for how a benchmark is timed, as nqprof's cases take them.

nqprof times a case by its one round rule (:mod:`nqprof.rounds`), not by pytest-benchmark's
calibrated loops. pytest-benchmark's ``--benchmark-min-rounds``, ``--benchmark-max-time`` and
``--benchmark-precision`` (with ``--benchmark-confidence``), and the same keywords of
``@pytest.mark.benchmark``, bound that rule (:meth:`~nqprof.rounds.RoundRule.bounded`). Its
options that cannot apply to a case nqprof times (one call per round, never calibrated, in a
worker process, by the round's own clock) are refused, once, naming what rules instead.

Only options given explicitly count (on the command line, in ``PYTEST_ADDOPTS`` or the ini
file's ``addopts``): pytest-benchmark's defaults (5 rounds, 1 s) are not nqprof's rule.
"""

from __future__ import annotations

import os
import shlex

import pytest

from .benchadapter import benchmarking
from .errors import InputError
from .options import CLUSTER_DEST, CLUSTER_OPTION, FIXTURE, ROUNDS, settings_of
from .rounds import RoundRule

#: pytest-benchmark's options (and the benchmark mark's keywords) that bound nqprof's round
#: rule: RoundRule.bounded's argument of each.
BOUNDS = {
    "--benchmark-min-rounds": "min_rounds",
    "--benchmark-max-time": "max_time",
    "--benchmark-precision": "precision",
    "--benchmark-confidence": "confidence",
}
_ROUNDS_RULE = f"{ROUNDS.flag} sets their rounds"
#: pytest-benchmark's options (and the mark's keywords) that do not apply to nqprof's cases,
#: and what rules them instead.
REFUSED = {
    "--benchmark-min-time": (
        "min_time",
        f"nqprof takes one call per round and never calibrates: {_ROUNDS_RULE}",
    ),
    "--benchmark-calibration-precision": (
        "calibration_precision",
        f"nqprof takes one call per round and never calibrates: {_ROUNDS_RULE}",
    ),
    "--benchmark-timer": (
        "timer",
        "nqprof's clock is each round's compute time: --nq-timer chooses it",
    ),
    "--benchmark-warmup": ("warmup", "--nq-warmup sets nqprof's untimed rounds"),
    "--benchmark-warmup-iterations": (
        "warmup_iterations",
        "--nq-warmup sets nqprof's untimed rounds",
    ),
    "--benchmark-disable-gc": (
        "disable_gc",
        "nqprof's rounds run in worker processes, beyond pytest's garbage "
        "collector: nothing to disable",
    ),
}


def given_flags(config) -> set[str]:
    """Which of pytest-benchmark's timing options this session was given explicitly."""
    args = [
        *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
        *config.getini("addopts"),
        *map(str, config.invocation_params.args),
    ]
    flags = (*BOUNDS, *REFUSED)
    return {flag for flag in flags for arg in args if arg == flag or arg.startswith(flag + "=")}


def _mark_keywords(item) -> dict:
    marker = item.get_closest_marker("benchmark")
    return dict(marker.kwargs) if marker else {}


def check(config, items) -> None:
    """A :class:`pytest.UsageError`, once, where this session's nqprof cases were given a
    timing option that does not apply to them, or bounds beside a fixed ``--nq-rounds`` or
    with ``--nq-cluster``."""
    cases = [item for item in items if FIXTURE in getattr(item, "fixturenames", ())]
    if not cases or not benchmarking(config):
        return
    given = given_flags(config)
    refused = [f"{flag}: {why}" for flag, (_, why) in REFUSED.items() if flag in given]
    refused_keys = {key: why for key, why in REFUSED.values()}
    # a confidence alone bounds nothing: pytest-benchmark's precision is off without one
    bounding = {flag: key for flag, key in BOUNDS.items() if key != "confidence"}
    bounded = [flag for flag in bounding if flag in given]
    for item in cases:
        keywords = _mark_keywords(item)
        refused += [
            f"@pytest.mark.benchmark({key}=...) of {item.nodeid}: {refused_keys[key]}"
            for key in keywords
            if key in refused_keys
        ]
        bounded += [
            f"@pytest.mark.benchmark({key}=...) of {item.nodeid}"
            for key in keywords
            if key in bounding.values()
        ]
    if refused:
        raise pytest.UsageError("nqprof's cases do not take " + "; ".join(refused))
    if not bounded:
        return
    try:
        rounds = settings_of(config).rounds
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    if rounds is not None:
        raise pytest.UsageError(
            f"{bounded[0]} bounds nqprof's auto round rule, but {ROUNDS.flag}={rounds} "
            "times exactly that many rounds: give one of them"
        )
    if config.getoption(CLUSTER_DEST, None):
        raise pytest.UsageError(
            f"{bounded[0]}: the cases of {CLUSTER_OPTION} take nqprof's round rule "
            f"({ROUNDS.flag} sets their rounds)"
        )


def rule_for(config, item) -> RoundRule | None:
    """The round rule of ``item``'s case where pytest-benchmark's bounds were given (its
    mark's keywords over the command line's); None: the --nq-rounds rule."""
    given = given_flags(config)
    bounds = {
        BOUNDS[flag]: config.getoption(flag.lstrip("-").replace("-", "_"))
        for flag in BOUNDS
        if flag in given
    }
    bounds.update(
        {key: value for key, value in _mark_keywords(item).items() if key in BOUNDS.values()}
    )
    confidence = bounds.pop("confidence", None)
    if not bounds:  # a confidence alone bounds nothing
        return None
    if confidence is None:  # pytest-benchmark 4 has no --benchmark-confidence
        confidence = config.getoption("benchmark_confidence", None)
    return RoundRule().bounded(confidence=confidence, **bounds)
