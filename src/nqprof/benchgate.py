"""pytest's statistical gate: ``--nq-compare-fail=VERDICT[,VERDICT...]``.

With ``--benchmark-compare``, pytest-benchmark picks saved runs to compare this session
with; the gate decides nqprof's verdicts (:func:`nqprof.analysis.comparing.compare`, the
verdicts of ``nqprof compare``) of this session's cases against each, prints the table
``nqprof compare`` prints in pytest's summary, and fails the session (exit code 1) where a
case got one of the verdicts listed. ``--nq-min-change=PCT``: the smallest change the
verdicts must be able to catch, as ``nqprof compare --min-change``.

What it compares is what pytest-benchmark would save: this session's cases through its
public ``pytest_benchmark_generate_json`` hook (from each case's ``benchmark.stats``), the
saved runs as its ``pytest_benchmark_compare_machine_info`` hook hands them over.
Imported only where the gate is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from .errors import InputError
from .options import COMPARE_FAIL_DEST, COMPARE_FAIL_OPTION, MIN_CHANGE_DEST, MIN_CHANGE_OPTION

#: The names of the two runs in the comparison's history.
SAVED, SESSION = "saved", "this session"


@dataclass(frozen=True)
class Gate:
    #: the verdicts and changes that fail the session
    failing: tuple[str, ...]
    #: the smallest relative change to catch; None: by the case's kind
    min_change: float | None


@dataclass(frozen=True)
class Outcome:
    """One comparison of this session with a saved run: the lines to print, and what failed
    the gate (None where nothing did)."""

    lines: list[str]
    failed: str | None


def gate_of(config) -> Gate | None:
    """The gate the options ask for (None without --nq-compare-fail); a usage error, in one
    line, for a bad value or a gate without --benchmark-compare."""
    from .analysis.verdicts import parse_failing, parse_min_change

    failing_text = config.getoption(COMPARE_FAIL_DEST, None)
    change_text = config.getoption(MIN_CHANGE_DEST, None)
    try:
        failing = parse_failing(failing_text) if failing_text is not None else None
    except InputError as exc:
        raise pytest.UsageError(f"{COMPARE_FAIL_OPTION} {exc}") from None
    try:
        min_change = (
            parse_min_change(change_text, MIN_CHANGE_OPTION) if change_text is not None else None
        )
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    if failing is None:
        if min_change is not None:
            raise pytest.UsageError(
                f"{MIN_CHANGE_OPTION} sets what {COMPARE_FAIL_OPTION}'s verdicts must catch: "
                f"give {COMPARE_FAIL_OPTION} too"
            )
        return None
    if not config.getoption("benchmark_compare", None):
        raise pytest.UsageError(
            f"{COMPARE_FAIL_OPTION} compares with the run --benchmark-compare picks: give "
            "--benchmark-compare too"
        )
    return Gate(tuple(failing), min_change)


def session_run(config, stats: list, machine_facts: dict[str, Any]) -> dict[str, Any]:
    """This session's cases as pytest-benchmark would save them (its generate_json hook:
    the cases that failed are left out), with nqprof's machine facts."""
    from .machine import MACHINE_KEY

    return config.hook.pytest_benchmark_generate_json(
        config=config,
        benchmarks=stats,
        include_data=False,
        machine_info={MACHINE_KEY: machine_facts},
        commit_info={},
    )


def saved_label(saved: dict[str, Any]) -> str:
    """``the run saved 2026-11-24T05:02:45 (commit 9807272)``."""
    import re

    commit = str((saved.get("commit_info") or {}).get("id") or "")
    if re.fullmatch(r"[0-9a-f]{12,}", commit):
        commit = commit[:7]
    when = str(saved.get("datetime", "?"))[:19]
    return f"the run saved {when}" + (f" (commit {commit})" if commit else "")


def compare_with(
    saved: dict[str, Any], current: dict[str, Any], gate: Gate, metric: str
) -> Outcome:
    """This session (``current``, a run's JSON) against one saved run, as nqprof compare
    decides: the lines it prints, and what failed the gate."""
    from .analysis.comparing import compare
    from .analysis.history import history_frame, saved_run_rows
    from .cli.history import compare_lines, condition_lines, failed_message

    head = f"nqprof: this session against {saved_label(saved)}, metric {metric}:"
    try:
        rows = saved_run_rows(saved, SAVED) + saved_run_rows(current, SESSION)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return Outcome([head, f"the saved run is not one nqprof can read ({exc!r})"], None)
    if not rows:
        return Outcome([head, "no nqprof benchmarks to compare"], None)
    df = history_frame(rows)
    if not {SAVED, SESSION} <= set(df["run"]):
        return Outcome([head, "no nqprof benchmarks to compare"], None)
    result = compare(df, SAVED, SESSION, metric, gate.min_change)
    if result.empty:
        return Outcome([head, "no nqprof benchmarks to compare"], None)
    lines = [
        head,
        *condition_lines(result),
        *compare_lines(result, gate.min_change, MIN_CHANGE_OPTION),
    ]
    return Outcome(lines, failed_message(result, list(gate.failing), COMPARE_FAIL_OPTION))


def outcomes(
    config, gate: Gate, saved_runs: list, stats: list, metric: str, machine_facts
) -> list[Outcome]:
    """The gate's comparisons of this session's cases (``stats``: pytest-benchmark's
    Metadata of each) with each saved run --benchmark-compare picked."""
    if not saved_runs:
        return [
            Outcome(
                [
                    f"nqprof: {COMPARE_FAIL_OPTION}: --benchmark-compare found no saved run "
                    "to compare with: nothing compared"
                ],
                None,
            )
        ]
    if not stats:
        return [
            Outcome(
                [
                    f"nqprof: {COMPARE_FAIL_OPTION}: no nqprof case of this session was timed: "
                    "nothing compared"
                ],
                None,
            )
        ]
    current = session_run(config, stats, machine_facts)
    return [compare_with(saved, current, gate, metric) for saved in saved_runs]
