"""pytest --nq-vs: every selected case as an interleaved A/B (:mod:`nqprof.interleave`, as
``nqprof ab`` runs one): A is the case, B the case with the ``--nq-vs`` parameters changed;
their rounds are taken in turn in one worker, pytest-benchmark records A's rounds, the pair's
verdict goes into the case's extra_info (``ab``) and pytest's summary, and ``--nq-vs-fail``
fails the session (exit code 1) on the verdicts it lists.

    pytest bench/ --nq-strategy=multicore --nq-n=12:13 --nq-vs=depth=3 --nq-vs-fail=slower
"""

from __future__ import annotations

from typing import Any

import pytest

from .errors import InputError
from .options import AB_FAILING, parse_ab_failing

VS_OPTION, VS_DEST = "--nq-vs", "nq_vs"
VS_FAIL_OPTION, VS_FAIL_DEST = "--nq-vs-fail", "nq_vs_fail"
_RESULTS = pytest.StashKey[list]()


def add_options(group) -> None:
    group.addoption(
        VS_OPTION,
        dest=VS_DEST,
        action="append",
        default=None,
        metavar="[STRATEGY.]KEY=VALUE",
        help="run each case of a strategy that takes KEY as an interleaved A/B (nqprof ab): B is "
        "the case with KEY=VALUE, their rounds in turn in one worker; the verdict per case in "
        "the summary and extra_info (repeatable)",
    )
    group.addoption(
        VS_FAIL_OPTION,
        dest=VS_FAIL_DEST,
        default=None,
        metavar="VERDICTS",
        help=f"with {VS_OPTION}: fail the session (exit code 1) if a case's A/B verdict is one "
        f"of these (a comma list of {', '.join(AB_FAILING)})",
    )


def _pairs(config) -> list[tuple[str | None, str, str]]:
    out = []
    for item in config.getoption(VS_DEST) or []:
        key, eq, value = item.partition("=")
        strategy, _, name = key.rpartition(".")
        if not eq or not name or not value:
            raise pytest.UsageError(f"{VS_OPTION} takes [STRATEGY.]KEY=VALUE, got {item!r}")
        out.append((strategy or None, name, value))
    return out


def check(config, strategies) -> None:
    """A usage error, before anything runs, for a malformed --nq-vs, one that no selected
    strategy takes, or a bad --nq-vs-fail."""
    pairs = _pairs(config)
    failing = config.getoption(VS_FAIL_DEST)
    if failing is not None:
        if not pairs:
            raise pytest.UsageError(f"{VS_FAIL_OPTION} needs {VS_OPTION}")
        try:
            parse_ab_failing(failing, VS_FAIL_OPTION)
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None
    for strategy, name, value in pairs:
        takers = [
            s
            for s in strategies
            if (strategy in (None, s.name)) and name in {p.name for p in s.params}
        ]
        if not takers:
            raise pytest.UsageError(
                f"{VS_OPTION} {strategy or ''}{'.' if strategy else ''}"
                f"{name}={value}: no selected strategy takes {name}"
            )


def overrides_for(config, strategy) -> dict[str, str]:
    """The --nq-vs parameters ``strategy`` takes (empty: its cases run as usual)."""
    names = {p.name for p in strategy.params}
    return {
        name: value
        for s, name, value in _pairs(config)
        if s in (None, strategy.name) and name in names
    }


def run(bench) -> Any:
    """``bench``'s case as an interleaved A/B against its ``vs`` parameters; pytest-benchmark
    gets A's rounds."""
    from .interleave import Arm, interleave
    from .problem import known_count
    from .result import RunRecord
    from .rounds import median

    config = bench.config
    a = Arm(bench.strategy, dict(bench.case.given))
    b = Arm(bench.strategy, {**dict(bench.case.given), **bench.vs})
    result = interleave(
        bench.case.n, a, b, warmup=bench.settings.warmup, timeout=bench.settings.timeout
    )
    samples, gpu = result.samples_a, bench.strategy.needs_gpu
    record = RunRecord(
        strategy=bench.strategy.name,
        n=bench.case.n,
        params=dict(bench.params),
        count=known_count(bench.case.n),
        expected=known_count(bench.case.n),
        verified=True,  # interleave verified every round of both arms
        wall_s=median(samples),
        gpu_s=median(samples) if gpu else None,
        rounds=len(samples),
        wall_times=list(samples),
        gpu_times=list(samples) if gpu else [],
        samples=list(samples),
        round_trips=list(result.trips_a),
        notes=[f"interleaved A/B: {result.decision.text()}"],
    )
    bench.finish(record, "interleaved A/B (nqprof ab): A's rounds", ab=result.to_dict())
    vs = ", ".join(f"{k}={v}" for k, v in bench.vs.items())
    config.stash.setdefault(_RESULTS, []).append((bench.label, vs, result.decision))
    return record


def summary_lines(config) -> list[str]:
    return [
        f"nqprof ab: {label} vs {vs}: {decision.text()}"
        for label, vs, decision in config.stash.get(_RESULTS, [])
    ]


def failed(config) -> list[str]:
    """The cases whose verdict --nq-vs-fail lists."""
    given = config.getoption(VS_FAIL_DEST)
    failing = set(parse_ab_failing(given, VS_FAIL_OPTION)) if given else set()
    return [
        f"{label} ({decision.verdict})"
        for label, _, decision in config.stash.get(_RESULTS, [])
        if decision.verdict in failing
    ]
