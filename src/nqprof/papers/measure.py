"""Measuring a paper's runs with nqprof, written once for every paper: one run's outcome
(or why there is none), a sequence of runs with progress that stops a strategy's larger N
after a timeout, and the cells and series that tables and figures are built from."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    CountMismatchError,
    DeviceFailureError,
    InputError,
    NqprofError,
    UnavailableError,
    WatchdogError,
)
from ..progress import Progress
from ..result import RunRecord


@dataclass
class Outcome:
    """One measured run, or why there is none."""

    strategy: str
    n: int
    params: dict[str, Any] = field(default_factory=dict)
    seconds: float | None = None  # GPU event time where there is one, else wall time
    error: str | None = None  # a short reason ("timeout", "does not fit", ...)
    detail: str | None = None  # the full message
    record: RunRecord | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def reason(exc: NqprofError) -> str:
    """A short label for a failed run."""
    if isinstance(exc, WatchdogError):
        return "timeout" if "within" in str(exc) else "worker died"
    if isinstance(exc, DeviceFailureError):
        return "device failure"
    if isinstance(exc, CountMismatchError):
        return "wrong count"
    if isinstance(exc, InputError):
        return "does not fit" if "does not fit" in str(exc) else "invalid"
    return "failed"


def measure(
    strategy: str,
    n: int,
    params: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    repeats: int = 1,
    solve: Callable[..., RunRecord] | None = None,
) -> Outcome:
    """Run once (``repeats`` rounds) through the runner; failures become the outcome's
    error. A machine without what the strategy needs raises :class:`UnavailableError`."""
    if solve is None:
        from ..options import DEFAULT_TIMEOUT
        from ..runner import solve as solve_run

        solve, timeout = solve_run, DEFAULT_TIMEOUT if timeout is None else timeout
    params = dict(params or {})
    try:
        record = solve(strategy, n, params, repeats=repeats, timeout=timeout)
    except UnavailableError:
        raise
    except NqprofError as exc:
        return Outcome(strategy, n, params, error=reason(exc), detail=str(exc))
    seconds = record.gpu_s if record.gpu_s is not None else record.wall_s
    return Outcome(strategy, n, params, seconds=seconds, record=record)


def sweep(
    runs: Iterable[tuple[str, int, dict[str, Any]]],
    run: Callable[[str, int, dict[str, Any]], Outcome],
    progress: Progress | None = None,
) -> list[Outcome]:
    """Run each (strategy, N, params) in order (ascending N per strategy). After a timeout
    the larger N of the same strategy and parameters are skipped: they would take longer."""
    runs = list(runs)
    progress = progress or Progress(enabled=False)
    progress.total = len(runs)
    out: list[Outcome] = []
    stopped: dict[tuple, int] = {}
    for strategy, n, params in runs:
        progress.case(f"{strategy} N={n} {params or ''}".rstrip())
        key = (strategy, tuple(sorted(params.items())))
        if key in stopped:
            out.append(
                Outcome(strategy, n, params, error="skipped", detail=f"N={stopped[key]} timed out")
            )
            continue
        o = run(strategy, n, params)
        if o.error == "timeout":
            stopped[key] = n
        progress.finish_case(f"{o.seconds:.4f} s" if o.ok else f"{o.error}: {o.detail}")
        out.append(o)
    return out


def figure_runs(strategies: Sequence[str], ns: Sequence[int]):
    return [(s, n, {}) for s in strategies for n in ns]


def ms_cell(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}"


class Footnotes:
    """Numbered reasons for the cells that hold no measurement."""

    def __init__(self):
        self.lines: list[str] = []

    def cell(self, o: Outcome | None) -> str:
        if o is None:
            return "-"
        if o.ok:
            return ms_cell(o.seconds)
        self.lines.append(
            f"[{len(self.lines) + 1}] {o.strategy} N={o.n} {o.params}: {o.error}: {o.detail}"
        )
        return f"{o.error} [{len(self.lines)}]"


def figure_series(outcomes: Iterable[Outcome]) -> dict[str, list[tuple[int, float]]]:
    """Strategy -> [(N, seconds)] of the successful runs, ascending N."""
    series: dict[str, list[tuple[int, float]]] = {}
    for o in outcomes:
        if o.ok and o.seconds is not None:
            series.setdefault(o.strategy, []).append((o.n, o.seconds))
    return {k: sorted(v) for k, v in series.items()}
