"""The ideal CDP time, without launch overhead (Wang and Yalamanchili's Fig. 4).

For a CDP strategy at N, three builds of the same kernels (``launch`` parameter,
CDP_LAUNCH_MODE in kernels/cdp.cuh):

* ``real``: the run itself (its count verified), time T, L device launches in all;
* ``empty``: every child launch replaced by the launch of an empty grid of the same shape
  (t1); the children's work does not run, so only the host grid's own launches (L1, the
  grids of generation 1) happen;
* ``none``: the same with no launch at all (t2).

t1 - t2 is what the host grid's L1 launches cost. Their formula, ideal = T - (t1 - t2),
takes out only those; nqprof also scales the cost per launch to the whole tree:
ideal (all) = T - L x (t1 - t2) / L1. The variants are checked to have done the same parent
work as the real run (the same grids and boards in generation 1). The speedups are over
the best non-CDP strategy measured at the same N (feinbube by default).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, NqprofError
from ..result import RunRecord
from . import check_kind, record_machine

KIND = "nqprof-characterize-ideal"
VARIANTS = ("real", "empty", "none")
#: The non-CDP baseline by default: the host-seeded kernel the CDP papers compare with.
DEFAULT_BASELINES = ("feinbube",)


def default_strategies() -> list[str]:
    """Every CDP strategy that records its grids on the device (strategies.timeline_cdp)."""
    from ..strategies import timeline_cdp

    return timeline_cdp()


def measure_variant(
    strategy: str,
    n: int,
    params: dict[str, Any],
    launch: str,
    repeats: int,
    warmup: int,
    timeout: float,
) -> RunRecord:
    """One build variant in a watchdog worker. ``real`` is verified against the known
    count; the others cannot be (their children do not run): their device failures still
    fail the run (the session checks its accounting)."""
    from ..runner import RoundLoop, solve
    from ..runners import UnverifiedRunner
    from ..strategies import get

    if launch == "real":
        return solve(
            strategy,
            n,
            {**params, "launch": "real"},
            repeats=repeats,
            warmup=warmup,
            timeout=timeout,
        )
    strat = get(strategy)
    values = strat.resolve(n, {**params, "launch": launch})
    with UnverifiedRunner(strat, n, values, timeout) as runner:  # the round loop, unverified
        loop = RoundLoop(runner, repeats, warmup)
        loop.run()
        return loop.record(runner.info())


def _variant_entry(record: RunRecord | None, error: str | None = None) -> dict[str, Any]:
    if record is None:
        return {"error": error}
    gen1 = next((g for g in record.generations if g.get("generation") == 1), None)
    return {
        "gpu_s": record.gpu_s,
        "gpu_times": record.gpu_times,
        "count": record.count,
        "verified": record.verified,
        "launches": record.device_failures.get("launches"),
        "gen1": gen1,
        "generations": record.generations,
        "params": record.params,
        "rounds": record.rounds,
        "conditions": record.conditions,
        "error": None,
    }


def measure(
    strategies: Sequence[str],
    ns: Sequence[int],
    params: dict[str, Any] | None = None,
    baselines: Sequence[str] = DEFAULT_BASELINES,
    repeats: int = 3,
    warmup: int = 1,
    timeout: float = 300,
    progress=None,
    variant: Callable[..., RunRecord] = measure_variant,
) -> dict[str, Any]:
    """Every strategy x N x variant, and every baseline x N. Returns the JSON document."""
    from ..runner import solve

    params = dict(params or {})
    runs, base, machine = [], [], {}
    for n in ns:
        for b in baselines:
            if progress is not None:
                progress.case(f"ideal baseline {b} N={n}")
            try:
                rec = solve(b, n, {}, repeats=repeats, warmup=warmup, timeout=timeout)
                base.append(
                    {
                        "strategy": b,
                        "n": n,
                        "seconds": rec.gpu_s if rec.gpu_s is not None else rec.wall_s,
                        "rounds": rec.rounds,
                        "conditions": rec.conditions,
                        "error": None,
                    }
                )
            except NqprofError as exc:
                base.append({"strategy": b, "n": n, "seconds": None, "error": str(exc)})
        for s in strategies:
            entry = {"strategy": s, "n": n, "variants": {}}
            for launch in VARIANTS:
                if progress is not None:
                    progress.case(f"ideal {s} N={n} launch={launch}")
                try:
                    rec = variant(s, n, params, launch, repeats, warmup, timeout)
                except NqprofError as exc:
                    entry["variants"][launch] = _variant_entry(None, f"{type(exc).__name__}: {exc}")
                    continue
                machine = record_machine(rec)
                entry["variants"][launch] = _variant_entry(rec)
            runs.append(entry)
    return {
        "kind": KIND,
        "machine": machine,
        "settings": {"repeats": repeats, "warmup": warmup, "params": params},
        "runs": runs,
        "baselines": base,
    }


# --- results ------------------------------------------------------------------------------


@dataclass
class IdealResult:
    strategy: str
    n: int
    measured: float | None  # T, the real run's GPU time (s)
    t1: float | None
    t2: float | None
    launches: int | None  # L, device launches of the real run
    host_launches: int | None  # L1, the grids of generation 1
    same_parent_work: bool
    baseline: tuple[str, float] | None  # the best non-CDP strategy at this N and its time
    errors: list[str]

    @property
    def overhead(self) -> float | None:
        return None if self.t1 is None or self.t2 is None else self.t1 - self.t2

    @property
    def per_launch(self) -> float | None:
        if self.overhead is None or not self.host_launches:
            return None
        return self.overhead / self.host_launches

    @property
    def ideal_paper(self) -> float | None:
        """T - (t1 - t2): their formula."""
        return (
            None
            if self.measured is None or self.overhead is None
            else self.measured - self.overhead
        )

    @property
    def ideal(self) -> float | None:
        """T - L x (t1 - t2) / L1: the cost per launch scaled to every launch of the run."""
        if self.measured is None or self.per_launch is None or self.launches is None:
            return None
        return self.measured - self.per_launch * self.launches

    def speedup(self, seconds: float | None) -> float | None:
        if self.baseline is None or seconds is None or seconds <= 0:
            return None
        return self.baseline[1] / seconds


def load(doc: dict[str, Any]) -> list[IdealResult]:
    check_kind(doc, KIND, "ideal characterization")
    try:
        return [_result(run, doc.get("baselines", [])) for run in doc["runs"]]
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"malformed ideal characterization: {exc!r}") from None


def _result(run: dict[str, Any], baselines: list[dict[str, Any]]) -> IdealResult:
    v = run["variants"]
    errors = [f"{k}: {v[k]['error']}" for k in VARIANTS if k in v and v[k].get("error")]
    errors += [f"{k}: not measured" for k in VARIANTS if k not in v]
    real, empty, none = (v.get(k) or {} for k in VARIANTS)
    if real and not real.get("error") and not real.get("verified"):
        errors.append(f"real: count {real.get('count')} not verified")
    gen1 = real.get("gen1") or {}
    same = all(
        other.get("gen1")
        and (other["gen1"]["grids"], other["gen1"]["boards"])
        == (gen1.get("grids"), gen1.get("boards"))
        for other in (empty, none)
    )
    ok = [b for b in baselines if b["n"] == run["n"] and b.get("seconds")]
    best = min(ok, key=lambda b: b["seconds"]) if ok else None
    good = not errors
    return IdealResult(
        strategy=run["strategy"],
        n=run["n"],
        measured=real.get("gpu_s") if good else None,
        t1=empty.get("gpu_s") if good else None,
        t2=none.get("gpu_s") if good else None,
        launches=real.get("launches"),
        host_launches=gen1.get("grids"),
        same_parent_work=same,
        baseline=(best["strategy"], best["seconds"]) if best else None,
        errors=errors,
    )


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def table(results: Sequence[IdealResult]) -> tuple[list[str], list[list], list[str]]:
    header = [
        "strategy",
        "N",
        "measured (ms)",
        "t1 empty (ms)",
        "t2 none (ms)",
        "t1-t2 (ms)",
        "L1",
        "L",
        "per launch (us)",
        "ideal paper (ms)",
        "ideal all (ms)",
        "best non-CDP (ms)",
        "speedup measured",
        "speedup ideal paper",
        "speedup ideal all",
    ]
    rows, notes = [], []
    for r in results:
        base = "-" if r.baseline is None else f"{r.baseline[0]} {r.baseline[1] * 1e3:.3f}"
        row = [
            r.strategy,
            r.n,
            _ms(r.measured),
            _ms(r.t1),
            _ms(r.t2),
            _ms(r.overhead),
            "-" if r.host_launches is None else f"{r.host_launches:,}",
            "-" if r.launches is None else f"{r.launches:,}",
            "-" if r.per_launch is None else f"{r.per_launch * 1e6:.3f}",
            _ms(r.ideal_paper),
            _ms(r.ideal),
            base,
            _x(r.speedup(r.measured)),
            _x(r.speedup(r.ideal_paper)),
            _x(r.speedup(r.ideal)),
        ]
        for e in r.errors:
            notes.append(f"[{len(notes) + 1}] {r.strategy} N={r.n}: {e}")
            row[2] = f"no measurement [{len(notes)}]" if row[2] == "-" else row[2]
        if r.ideal is not None and r.ideal <= 0:
            notes.append(
                f"[{len(notes) + 1}] {r.strategy} N={r.n}: L launches at the host grid's cost per "
                "launch add up to more than the measured time (deeper "
                "launches overlap with work): ideal all does not hold here"
            )
            row[10] += f" [{len(notes)}]"
        if not r.errors and not r.same_parent_work:
            notes.append(
                f"[{len(notes) + 1}] {r.strategy} N={r.n}: the variants' generation 1 differs from "
                "the real run's (not the same parent work): t1 - t2 is not comparable"
            )
            row[5] += f" [{len(notes)}]"
        rows.append(row)
    notes.append(
        "t1 - t2: what the host grid's L1 launches cost; ideal paper = measured - (t1 - t2) "
        "(their formula); ideal all = measured - L x (t1 - "
        "t2) / L1 (the cost per launch over all L launches)"
    )
    return header, rows, notes


def series(results: Sequence[IdealResult]) -> list[tuple[str, float | None, float | None]]:
    """(label, speedup measured, speedup ideal all) per run, for the Fig. 4 bars."""
    return [(f"{r.strategy} N={r.n}", r.speedup(r.measured), r.speedup(r.ideal)) for r in results]
