"""Comparing two saved runs: per case both medians, the change, the floor below which a
change is never called one, the rank test, the verdict (:mod:`nqprof.analysis.stats`), what
changed besides the time and the conditions that differed; :func:`compare` is ``nqprof
compare``'s and the pytest gate's."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from .. import conditions
from ..machinediff import machine_differences
from ..spread import (
    medians_squares,
    process_medians,
    t_quantile,
    unit_priors,
    unit_squares,
)
from . import stats as decide_stats
from .history import (
    CASE_COLUMNS,
    gpu_model,
    list_or_none,
    or_none,
    resolve_metric,
    resolve_run,
)


def cases_of_run(df, run: str, metric: str) -> dict[tuple, dict[str, Any]]:
    """The nqprof benchmarks of one run by case: samples, median, resolved parameters,
    source hash."""
    part = df[(df["run"] == run) & df["strategy"].notna()]
    out: dict[tuple, dict[str, Any]] = {}
    for row in part.to_dict("records"):
        key = tuple(row[c] for c in CASE_COLUMNS)
        out[key] = {
            "samples": row.get(f"{metric}.samples"),
            "processes": row.get("processes"),
            "kind": or_none(row.get("extra.device_kind")),
            "min_effect": or_none(row.get("extra.min_effect")),
            "median": row.get(f"{metric}.median"),
            "params": row.get("extra.params") or {},
            "source_hash": or_none(row.get("extra.source_hash")),
            "instructions": or_none(row.get("extra.instructions.count"))
            if metric == "instructions"
            else None,
            "toolkit": or_none(row.get("machine.cuda_toolkit")),
            "gpu": or_none(row.get("machine.gpu")),
            "conditions": row.get("extra.conditions")
            if isinstance(row.get("extra.conditions"), dict)
            else {},
            "work": {
                "solutions": or_none(row.get("extra.count")),
                "nodes": or_none(row.get("extra.work.nodes")),
            }
            if metric in TIME_METRICS
            else {},
        }
    return out


#: The metrics whose medians are seconds (a rate is work over them).
TIME_METRICS = ("compute", "wall")
#: What a rate counts (``nqprof compare --rate``): the columns rate_<what>_a and _b.
RATES = ("solutions", "nodes")


def rates(case: dict[str, Any] | None) -> dict[str, float | None]:
    """Solutions and nodes a second of a case of :func:`cases_of_run` (None where the run
    recorded no such work, or the metric is no time)."""
    median = case and or_none(case["median"])
    work = case["work"] if case else {}
    return {
        what: work[what] / median if median and work.get(what) is not None else None
        for what in RATES
    }


#: A CPU case's floor is at least this many times the CPU speed probe's move between two
#: runs: on two H200 hosts where serial N=11 (the probe's search) differed by 62%,
#: serial's times moved by 15% (N=16) to 66% (N=12), and serial-d4's and multicore's by -8%
#: to +48%: the host moves different work by different amounts.
HOST_FACTOR = 2.0


#: The fewest CPU cases timed in both runs whose median change tells what moved them all
#: (:func:`cpu_cases_move`).
TOGETHER_MIN_CASES = 4


def is_cpu(ra: dict[str, Any], rb: dict[str, Any]) -> bool:
    """Whether a case is a CPU case: either run ran it on the CPU."""
    return "cpu" in (ra["kind"], rb["kind"])


def _cpu_moves(a: dict[tuple, dict[str, Any]], b: dict[tuple, dict[str, Any]]) -> dict:
    """The log change of the median of each CPU case both runs timed (not by instructions)."""
    moves: dict[tuple, float] = {}
    for k, ra in a.items():
        rb = b.get(k)
        if rb is None or not is_cpu(ra, rb) or ra["instructions"]:
            continue
        if or_none(ra["median"]) and or_none(rb["median"]):
            moves[k] = math.log(rb["median"] / ra["median"])
    return moves


def cpu_cases_move(
    a: dict[tuple, dict[str, Any]], b: dict[tuple, dict[str, Any]]
) -> dict[tuple, float]:
    """What moved each CPU case both runs timed (:func:`cases_of_run`) together with
    others between the runs: the median relative change of all those CPU cases, or, where
    it is larger, of its strategy's (whose sources neither run changed). A change of the code
    moves the cases it touches and leaves the median of the rest; a host whose CPU speed
    moved between the runs moves every one, each strategy's work by its own amount (an
    H200 host's second run of the default suite: every CPU case 6% to 67% slower, serial
    by a median of 18%, serial-d4 by 52%, all by 31%, while the CPU speed probe's median
    moved -3%). A median of fewer than TOGETHER_MIN_CASES cases is not taken."""
    moves = _cpu_moves(a, b)

    def median_of(keys: list[tuple]) -> float:
        if len(keys) < TOGETHER_MIN_CASES:
            return 0.0
        return decide_stats.median([moves[k] for k in keys])

    everything = median_of(list(moves))
    groups: dict[tuple, list[tuple]] = {}
    for k in moves:
        groups.setdefault(k[:2], []).append(k)
    common = {}
    for group, keys in groups.items():
        held = all(a[j]["source_hash"] == b[j]["source_hash"] for j in keys)
        # where its code changed, its cases' common move may be the change itself
        ours = median_of(keys) if held else 0.0
        common[group] = math.expm1(max(everything, ours, key=abs))
    return {k: common[k[:2]] for k in moves}


#: The fewest CPU cases timed in both runs whose scatter about their common move tells how
#: far the host moves one case alone between two runs (:func:`cpu_cases_scatter`).
SCATTER_MIN_CASES = 8
#: The degrees of freedom of Student's t that bounds the scatter: over 36 pairs of runs of
#: 8 to 27 CPU cases on H100, H200 and 2-core hosts (843 cases), a case's move about the
#: common one passed 3, 4, 6 and 8 robust spreads in 5.2%, 2.5%, 0.83% and 0.36% of cases;
#: t with 2 degrees of freedom at the same median gives 6.8%, 4.0%, 1.8% and 1.05%, with 3
#: fewer than seen (4.2%, 2.0%, 0.65%, 0.28%), a normal distribution 0.27% past 3 and
#: almost none past 4 (tools/cpu_scatter_tails.py, docs/results/cpu-scatter).
SCATTER_DF = 2


def _units_variance(ra: dict[str, Any], rb: dict[str, Any]) -> tuple[float, int]:
    """The variance of a case's log median between two runs that its units alone (its
    worker processes) predict, their pooled variance over both runs times 1/ka + 1/kb, and
    its degrees of freedom ((0, 0) where a run has fewer than two units)."""
    ma = process_medians(ra.get("samples") or [], list_or_none(ra.get("processes")))
    mb = process_medians(rb.get("samples") or [], list_or_none(rb.get("processes")))
    ss, df = medians_squares(ma, mb)
    return (ss / df * (1 / len(ma) + 1 / len(mb)), df) if df else (0.0, 0)


def _chi2_median_ratio(df: float) -> float:
    """The median of chi-squared over its degrees of freedom (Wilson and Hilferty)."""
    return (1 - 2 / (9 * df)) ** 3


def units_predict(
    a: dict[tuple, dict[str, Any]], b: dict[tuple, dict[str, Any]], keys: list
) -> float:
    """The variance between the runs that the typical case's units predict: the median
    over ``keys`` of :func:`_units_variance`, over the median of chi-squared at their
    typical degrees of freedom (a median of variances falls short of their mean by that);
    0 where none has units."""
    pairs = [_units_variance(a[k], b[k]) for k in keys]
    pairs = [(v, d) for v, d in pairs if d]
    if not pairs:
        return 0.0
    df = decide_stats.median([d for _, d in pairs])
    return decide_stats.median([v for v, _ in pairs]) / _chi2_median_ratio(df)


def _case_changed(ra: dict[str, Any], rb: dict[str, Any]) -> bool:
    """Whether a case's sources or parameters differ between the runs."""
    return ra.get("source_hash") != rb.get("source_hash") or bool(
        param_changes(ra.get("params") or {}, rb.get("params") or {})
    )


def cpu_cases_scatter(
    a: dict[tuple, dict[str, Any]], b: dict[tuple, dict[str, Any]], together: dict[tuple, float]
) -> dict[tuple, float]:
    """How far the host may move a CPU case alone between the runs, beyond what the case's
    own worker processes show, from the CPU cases both runs timed whose sources and
    parameters held (a change may be what moved the others). Their changes scatter about
    what moved them together (``together``, :func:`cpu_cases_move`) with a robust variance
    (the median absolute deviation over NORMAL_MAD, squared); the typical case's units
    predict part of it (:func:`units_predict`). Where the rest is beyond chance
    (:func:`beyond_chance`), it is the host's: the scale of Student's t with SCATTER_DF
    degrees of freedom at the same median absolute deviation, and each
    case's bound is exp(|its common move| + t x scale) - 1, t the two-sided stats.ALPHA
    quantile, as each case's own interval has it. A case's run is a second or so of the
    host's time, and two runs draw the host's speed anew for each case: on an H100 host,
    three runs of the default suite moved CPU cases by -43% to +112% while each run's worker
    processes agreed, and neither the CPU speed probe nor the workers' probes followed them
    (docs/results/cpu-scatter). On a quiet host the units explain the scatter and there is
    no bound. The median absolute deviation stands while fewer than half the cases move.
    Empty under SCATTER_MIN_CASES cases that held."""
    moves = _cpu_moves(a, b)
    held = [k for k in moves if not _case_changed(a[k], b[k])]  # a change may be the move
    if len(held) < SCATTER_MIN_CASES:
        return {}
    centre = {k: math.log1p(together.get(k, 0.0)) for k in moves}
    mad = decide_stats.median([abs(moves[k] - centre[k]) for k in held])
    total = (mad / NORMAL_MAD) ** 2
    predicted = units_predict(a, b, held)
    if predicted > 0 and total <= predicted * beyond_chance(len(held)):
        return {}  # no more scatter than the units predict, within the estimate's chance
    host = total - predicted
    scale = math.sqrt(host) * NORMAL_MAD / math.sqrt(2 / 3)  # |t|'s median at 2 df: sqrt(2/3)
    t = t_quantile(1 - decide_stats.ALPHA / 2, SCATTER_DF)
    return {k: math.expm1(abs(centre[k]) + t * scale) for k in moves}


#: The median of a standard normal's absolute value (1 / 1.4826).
NORMAL_MAD = 0.6745
#: A variance from the median absolute deviation of m normal values is worth about this
#: many times m degrees of freedom (its efficiency beside the sample variance's).
MAD_EFFICIENCY = 0.37


def beyond_chance(cases: int, alpha: float = decide_stats.ALPHA) -> float:
    """How many times the units' predicted variance the cases' robust variance must be
    before it tells more than chance: the (1 - alpha) quantile of chi-squared over its
    degrees of freedom, MAD_EFFICIENCY x ``cases`` of them (Wilson and Hilferty's cube)."""
    k = MAD_EFFICIENCY * cases
    z = NormalDist().inv_cdf(1 - alpha)
    return (1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3


def min_effect_parts(
    ra: dict[str, Any],
    rb: dict[str, Any],
    cpu: bool,
    together: float | None = None,
    scatter: float | None = None,
) -> dict[str, float]:
    """What the minimum effect of a case is the largest of: ``kind``, its kind's (``cpu``:
    either run ran it on the CPU); ``declared``, the larger one its strategy declared when
    either run was saved (Strategy.min_effect), where one did; ``host``, for a CPU case,
    HOST_FACTOR times what the CPU speed probe moved between the runs
    (conditions.probe_change): what the host alone moved; ``together``, for a CPU case,
    HOST_FACTOR times what moved the comparison's CPU cases together
    (:func:`cpu_cases_move`, given as ``together``); ``scatter``, for a CPU case, how far
    the host moved one case alone between the runs (:func:`cpu_cases_scatter`)."""
    parts = {"kind": decide_stats.MIN_EFFECT_CPU if cpu else decide_stats.MIN_EFFECT}
    declared = [float(r["min_effect"]) for r in (ra, rb) if r.get("min_effect") is not None]
    if declared:
        parts["declared"] = max(declared)
    host = conditions.probe_change(ra["conditions"], rb["conditions"]) if cpu else None
    if host is not None:
        parts["host"] = HOST_FACTOR * abs(host)
    if cpu and together is not None:
        parts["together"] = HOST_FACTOR * abs(together)
    if cpu and scatter is not None:
        parts["scatter"] = scatter
    return parts


def min_effect_of(ra: dict[str, Any], rb: dict[str, Any], cpu: bool) -> float:
    """The minimum effect of a case: the largest of :func:`min_effect_parts`."""
    return max(min_effect_parts(ra, rb, cpu).values())


def default_min_change(cpu: bool) -> float:
    """The smallest change a comparison must catch where none is given: 5% for a GPU case,
    10% for a CPU case (``cpu``: either run ran it on the CPU)."""
    return decide_stats.MIN_CHANGE_CPU if cpu else decide_stats.MIN_CHANGE


def _pct_text(value: float) -> str:
    return f"{100 * value:.1f}%"


def more_units(units: int | None, wanted: float) -> str:
    """What more units would do for a GPU case whose units disagree: how many each run
    would need for ``wanted`` (decision.units, spread.units_for_floor) and the setting that
    gives them ($NQPROF_GPU_SESSIONS sessions in each worker process; auto where it may add
    that many)."""
    from ..runners import AUTO_UNITS_MAX, GPU_PROCESSES, SESSIONS_VARIABLE
    from ..spread import MOST_UNITS

    if units is None:
        return f"more units, {SESSIONS_VARIABLE}=auto"
    if units > MOST_UNITS:
        return (
            f"more than {MOST_UNITS} units a run would be needed for {100 * wanted:g}% "
            f"at this spread: min-change wider, or a quieter case"
        )
    sessions = -(-units // GPU_PROCESSES)
    auto = ", or auto" if units <= AUTO_UNITS_MAX else ""
    return (
        f"about {units} units a run would narrow it to {100 * wanted:g}% "
        f"({SESSIONS_VARIABLE}={sessions}{auto})"
    )


def cannot_tell_why(
    decision,
    parts: dict[str, float],
    cpu: bool,
    strategy: str,
    probe: float | None,
    together: float | None = None,
    cases: int | None = None,
) -> str:
    """Why a cannot-tell case's floor is wider than the smallest change to catch, and what
    would narrow it: ``floor ±37.9% > 10%: `` and each term of the floor that is wider than
    the change to catch, widest first (``decision``: its stats.Decision; ``parts``: its
    min_effect_parts; ``probe``: the CPU speed probe's move between the runs;
    ``together``: what moved the CPU cases all together, cpu_cases_move; ``cases``: how
    many CPU cases the scatter, cpu_cases_scatter, stands on)."""
    wanted, terms = decision.min_change, dict(decision.terms or {})
    reasons: list[tuple[float, str]] = []
    terms.pop("minimum", None)
    # the minimum effect's parts, each that is wider than the change to catch
    for name, value in parts.items():
        if not decide_stats.wider_than(value, wanted):
            continue
        pct = _pct_text(value)
        if name == "host" and probe is not None:
            text = (
                f"the host's CPU speed moved {100 * probe:+.0f}% between the runs (the CPU speed "
                f"probe; ±{pct} is twice that): both runs on one quiet host"
            )
        elif name == "together" and together is not None:
            text = (
                f"CPU cases moved {100 * together:+.0f}% together between the runs (the median "
                f"of all, or of {strategy}'s; ±{pct} is twice that): both runs on one quiet "
                "host, or --nq-cpu-metric=instructions"
            )
        elif name == "scatter":
            text = (
                f"the host moved CPU cases one by one between the runs (±{pct} bounds "
                f"what the scatter of {cases or 'the'} CPU cases' changes about their common "
                "move carries one case alone): both runs on one quiet host, or "
                "--nq-cpu-metric=instructions"
            )
        elif name == "declared":
            text = (
                f"{strategy}'s own floor ±{pct} (its times move between runs): "
                f"min-change {100 * value:g}% or more"
            )
        else:
            text = (
                f"nqprof calls no change under {100 * value:g}% for a "
                f"{'CPU' if cpu else 'GPU'} case: min-change {100 * value:g}% or more"
            )
        reasons.append((value, text))
    what = {
        "drift": "drift within a run {}: more rounds, or a host whose speed holds",
        "spread": "spread of the rounds {} (half the IQR): a quieter host",
        # a GPU case's units differ by what each worker draws, its context and where its
        # allocations land (docs/benchmarking.md, nqprof.strategies.rotation): more rounds
        # in the same units do not narrow that, more units do
        "processes": (
            "worker processes disagree {}: more rounds, or a quieter host"
            if cpu
            else "its units disagree {} (each worker's draw: its context, where its "
            "allocations land): " + more_units(decision.units, wanted)
        ),
    }
    for name, value in terms.items():
        if decide_stats.wider_than(value, wanted):
            reasons.append((value, what[name].format("±" + _pct_text(value))))
    reasons.sort(key=lambda r: -r[0])
    head = f"floor ±{_pct_text(decision.floor)} > {100 * wanted:g}%"
    return head + (": " + "; ".join(text for _, text in reasons) if reasons else "")


def param_changes(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """``["depth 5 -> 6"]``: parameters both runs had, with other values. Parameters only
    one run has (nqprof gained or lost a parameter) are not a change of the case."""
    return [f"{k} {a[k]} -> {b[k]}" for k in a if k in b and str(a[k]) != str(b[k])]


def dimension_changes(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """``["toolkit 12.6 -> 13.0", "GPU H100 -> H200"]``: the CUDA toolkit and GPU model of two
    runs of a GPU case where both runs recorded them and they differ, named as a changed
    parameter is (the model's full names where the short ones are the same)."""
    out = []
    if a.get("toolkit") and b.get("toolkit") and str(a["toolkit"]) != str(b["toolkit"]):
        out.append(f"toolkit {a['toolkit']} -> {b['toolkit']}")
    if a.get("gpu") and b.get("gpu") and a["gpu"] != b["gpu"]:
        short = gpu_model(a["gpu"]), gpu_model(b["gpu"])
        ga, gb = short if short[0] != short[1] else (a["gpu"], b["gpu"])
        out.append(f"GPU {ga} -> {gb}")
    return out


def unit_priors_of(a: dict[tuple, dict[str, Any]], b: dict[tuple, dict[str, Any]]) -> dict:
    """Each case both runs timed: the prior for its units' variance
    (:func:`nqprof.spread.unit_priors`), from its test's and strategy's other cases."""
    keys = [k for k in a if k in b and a[k]["samples"] and b[k]["samples"]]
    rows = []
    for k in keys:
        ra, rb = a[k], b[k]
        ss, df = unit_squares(
            ra["samples"],
            rb["samples"],
            list_or_none(ra["processes"]),
            list_or_none(rb["processes"]),
        )
        med = decide_stats.median(ra["samples"]) * decide_stats.median(rb["samples"])
        rows.append((k[:2], med**0.5, ss, df))
    return dict(zip(keys, unit_priors(rows), strict=True))


def compare(df, run_a: str, run_b: str, metric: str = "compute", min_change: float | None = None):
    """Per test, strategy, N and given parameters: both medians, the change in percent, the
    floor below which a change is never called one, the rank test's p-value, the verdict
    (same / faster / slower / cannot-tell / too-few-rounds, see
    :mod:`nqprof.analysis.stats`; only-a / only-b where a benchmark is in one run only), what
    changed besides the time (parameter values as run, kernel sources) and the conditions that
    differed (a case's own, and on every CPU case the host's CPU speed probe where it moved
    between the runs: that phrase, once, is also in ``attrs["run_conditions"]``).

    ``min_change``: the smallest relative change the comparison must be able to catch
    (default :func:`default_min_change`, by the case's kind): a case that is not faster or
    slower and whose floor is wider is cannot-tell, ``why`` naming what widened its floor
    and what would narrow it."""
    import pandas as pd

    metric = resolve_metric(metric)
    a, b = (
        cases_of_run(df, resolve_run(df, run_a), metric),
        cases_of_run(df, resolve_run(df, run_b), metric),
    )
    priors = unit_priors_of(a, b)
    moved = cpu_cases_move(a, b)
    scattered = cpu_cases_scatter(a, b, moved)
    rows: list[dict[str, Any]] = []
    cpu_rows: list[dict[str, Any]] = []
    probes: dict[str, list] = {"a": [], "b": []}
    for key in list(a) + [k for k in b if k not in a]:
        row = dict(zip(CASE_COLUMNS, key, strict=True))
        ra, rb = a.get(key), b.get(key)
        row["median_a"] = or_none(ra["median"]) if ra else None
        row["median_b"] = or_none(rb["median"]) if rb else None
        for side, case in (("a", ra), ("b", rb)):
            row.update({f"rate_{what}_{side}": v for what, v in rates(case).items()})
        row.update(
            change_pct=None,
            floor_pct=None,
            p=None,
            min_change_pct=None,
            changed="",
            conditions="",
            why="",
        )
        if ra and rb:
            cpu = is_cpu(ra, rb)
            together = moved.get(key)
            parts = min_effect_parts(ra, rb, cpu, together, scattered.get(key))
            wanted = default_min_change(cpu) if min_change is None else min_change
            if ra["instructions"] and rb["instructions"]:  # counts: exact, never cannot-tell
                d = decide_stats.decide_exact(ra["instructions"], rb["instructions"], wanted)
            else:
                d = decide_stats.decide(
                    ra["samples"] or [],
                    rb["samples"] or [],
                    min_effect=max(parts.values()),
                    processes_a=list_or_none(ra["processes"]),
                    processes_b=list_or_none(rb["processes"]),
                    min_change=wanted,
                    prior=priors.get(key),
                )
            changes = [] if cpu else dimension_changes(ra, rb)
            changes += param_changes(ra["params"], rb["params"])
            if ra["source_hash"] != rb["source_hash"]:
                changes.append("source")
            row.update(
                verdict=d.verdict,
                change_pct=None if d.change is None else 100.0 * d.change,
                floor_pct=None if d.floor is None else 100.0 * d.floor,
                p=d.p,
                min_change_pct=100.0 * d.min_change,
                changed="; ".join(changes),
                conditions="; ".join(conditions.differences(ra["conditions"], rb["conditions"])),
            )
            if cpu:
                cpu_rows.append(row)
                for side, r in (("a", ra), ("b", rb)):
                    probes[side].append((r["conditions"].get("cpu") or {}).get("probe_s"))
            if d.verdict == "cannot-tell":
                probe = conditions.probe_change(ra["conditions"], rb["conditions"])
                row["why"] = cannot_tell_why(
                    d, parts, cpu, key[1], probe, together, len(scattered) or None
                )
        else:
            row["verdict"] = "only-a" if ra else "only-b"
        rows.append(row)
    # the host's CPU speed probe, once for the runs: on every CPU case's row, named once
    probe = conditions.probe_difference(probes["a"], probes["b"])
    for row in cpu_rows if probe else ():
        row["conditions"] = "; ".join(filter(None, [row["conditions"], probe]))
    columns = [
        *CASE_COLUMNS,
        "median_a",
        "median_b",
        "change_pct",
        "floor_pct",
        "p",
        "verdict",
        "changed",
        "conditions",
        "min_change_pct",
        "why",
        *(f"rate_{what}_{side}" for what in RATES for side in "ab"),
    ]
    result = pd.DataFrame(rows, columns=columns)
    #: conditions of the runs rather than of a case (each also in its cases' ``conditions``)
    result.attrs["run_conditions"] = [probe] if probe else []
    return result


#: The phrases of ``changed`` that name a dimension rather than a parameter, by change.
_DIMENSIONS = {"changed-toolkit": "toolkit ", "changed-gpu": "GPU "}


def change_counts(result) -> dict[str, int]:
    """How many benchmarks of a comparison changed parameters, sources, toolkit, GPU model."""
    phrases = result["changed"].fillna("").map(lambda t: [p for p in t.split("; ") if p])

    def param(p: str) -> bool:
        return p != "source" and not p.startswith(tuple(_DIMENSIONS.values()))

    return {
        "changed-params": int(phrases.map(lambda ps: any(param(p) for p in ps)).sum()),
        "changed-source": int(phrases.map(lambda ps: "source" in ps).sum()),
        **{
            change: int(phrases.map(lambda ps, s=start: any(p.startswith(s) for p in ps)).sum())
            for change, start in _DIMENSIONS.items()
        },
    }


def machine_warnings(df, run_a: str, run_b: str) -> list[str]:
    """The GPU / toolkit / driver / CPU differences between two runs (empty if none)."""

    def first(run: str):
        return df[df["run"] == resolve_run(df, run)].iloc[0]

    def machine(row) -> dict[str, Any]:
        return {
            "nqprof": {
                k.split(".", 1)[1]: or_none(v) for k, v in row.items() if k.startswith("machine.")
            }
        }

    ra, rb = first(run_a), first(run_b)
    out = machine_differences(machine(ra), machine(rb))
    cpu_a, cpu_b = or_none(ra.get("machine.cpu")), or_none(rb.get("machine.cpu"))
    if cpu_a and cpu_b and cpu_a != cpu_b and not any(d.startswith("cpu:") for d in out):
        out.append(f"cpu: {cpu_a!r} -> {cpu_b!r}")
    return out
