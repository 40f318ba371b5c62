"""Verdicts a user can act on: a case whose floor is wider than the smallest change to catch
is cannot-tell, never same; a change beyond a wide floor is still called; the boundary, a
floor equal to the change to catch, is the same. On synthetic samples only: no clock."""

import json
import math
import re

import pytest

from nqprof.analysis import comparing, stats
from nqprof.analysis.comparing import compare
from nqprof.analysis.history import load_history
from nqprof.analysis.verdicts import FAILING, VERDICTS, parse_failing, parse_min_change
from nqprof.cli import main
from nqprof.errors import InputError
from nqprof.problem import known_count
from nqprof.spread import PRIOR_DF, unit_priors, unit_squares


def spread_rounds(low: float, high: float, copies: int = 10, scale: float = 1.0) -> list[float]:
    """Rounds that cycle low, 1, high (times ``scale``): a median of ``scale``, a relative
    interquartile range of high - low and no drift (each quarter holds the same rounds)."""
    return [scale * v for v in (low, 1.0, high)] * copies


def test_a_tight_a_a_pair_is_the_same():
    a = spread_rounds(0.999, 1.001)
    b = spread_rounds(0.999, 1.001, scale=1.001)
    d = stats.decide(a, b, min_effect=0.10, min_change=0.10)
    assert d.verdict == "same" and d.floor == 0.10 and d.min_change == 0.10


def test_wide_rounds_and_a_small_change_cannot_tell():
    """Rounds whose IQR is 60% of their median and a true change of 2%: a floor of 30%
    could hide any change of 10%."""
    a = spread_rounds(0.7, 1.3)
    b = spread_rounds(0.7, 1.3, scale=1.02)
    assert stats.relative_iqr(a) == pytest.approx(0.6)
    d = stats.decide(a, b, min_effect=0.10, min_change=0.10)
    assert d.verdict == "cannot-tell" and d.floor == pytest.approx(0.3)
    assert d.change == pytest.approx(0.02) and d.terms["spread"] == pytest.approx(0.3)
    # the same pair where the user wants only changes of 30% or more caught: the same
    assert stats.decide(a, b, min_effect=0.10, min_change=0.30).verdict == "same"


@pytest.mark.parametrize("factor, verdict", [(3.0, "slower"), (1 / 3, "faster")])
def test_a_change_beyond_a_wide_floor_is_still_called(factor, verdict):
    """A real 3x change behind a floor of 40% (rounds that spread by 80%) is slower (or
    faster), not cannot-tell: the rounds show it whatever change was to be caught."""
    a = spread_rounds(0.6, 1.4)
    b = spread_rounds(0.6, 1.4, scale=factor)
    d = stats.decide(a, b, min_effect=0.10, min_change=0.10)
    assert d.floor == pytest.approx(0.4) and d.p < stats.ALPHA
    assert d.verdict == verdict


def test_a_floor_equal_to_the_change_to_catch_is_the_same():
    """The boundary: a floor equal to the smallest change to catch can tell (same); one the
    least bit wider cannot. Rounds of 0.875, 1 and 1.125 make a floor of exactly 0.125
    (half an IQR of 0.25, all three binary fractions)."""
    a = spread_rounds(0.875, 1.125, copies=8)
    assert stats.floor_of(a, a, 0.05) == 0.125  # exactly
    assert stats.decide(a, a, min_change=0.125).verdict == "same"
    assert stats.decide(a, a, min_change=0.125 * (1 - 1e-6)).verdict == "cannot-tell"
    assert stats.decide(a, a, min_change=0.125 * (1 + 1e-6)).verdict == "same"
    # a floor from the minimum effect, on the change to catch and past it by float rounding
    tight = [1.0] * 20
    assert stats.decide(tight, tight, min_effect=0.1, min_change=0.1).verdict == "same"
    above = math.nextafter(0.1, 1.0)  # the next float: rounding, not a wider floor
    assert stats.decide(tight, tight, min_effect=above, min_change=0.1).verdict == "same"
    assert stats.decide(tight, tight, min_effect=0.1001, min_change=0.1).verdict == "cannot-tell"
    assert stats.wider_than(0.1001, 0.1) and not stats.wider_than(0.1, 0.1)


def test_too_few_rounds_comes_before_cannot_tell():
    wide = spread_rounds(0.5, 1.5, copies=1)  # three rounds a side: the test cannot reach p
    assert stats.decide(wide, wide, min_change=0.05).verdict == "too-few-rounds"


def test_without_a_change_to_catch_the_minimum_effect_is_it():
    """decide() called as before (no min_change): a floor wider than the minimum effect
    given is cannot-tell."""
    a = spread_rounds(0.7, 1.3)
    assert stats.decide(a, a).verdict == "cannot-tell" and stats.decide(a, a).min_change == 0.05
    assert stats.decide([1.0] * 10, [1.0] * 10).verdict == "same"


# -- compare: the change to catch by kind, --min-change, --fail-on cannot-tell --------------------


def _save(storage, index, cases, sources=None):
    """Saves run ``index`` of ``cases``: {(strategy, n): (device kind, samples)}
    (``sources``: {strategy: its source hash}, where given)."""
    benches = []
    for (strategy, n), (kind, times) in cases.items():
        benches.append(
            {
                "name": f"test_nq[{strategy}-N{n}]",
                "params": None,
                "options": {"timer": "nqprof.worker_clock"},
                "extra_info": {
                    "strategy": strategy,
                    "n": n,
                    "params": {},
                    "count": known_count(n),
                    "verified": True,
                    "device_kind": kind,
                    "samples_compute": times,
                    "samples_wall": times,
                    **({"source_hash": sources[strategy]} if sources else {}),
                },
                "stats": {"median": sorted(times)[len(times) // 2], "rounds": len(times)},
            }
        )
    run = {
        "datetime": f"2026-01-01T12:{index:02d}:00+00:00",
        "benchmarks": benches,
        "machine_info": {},
        "commit_info": {},
    }
    path = storage / "machine" / f"{index:04d}_run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run))


@pytest.fixture
def runs(tmp_path):
    """Two runs of a GPU case and a CPU case whose rounds spread by 14% (a floor of 7%, 10%
    for the CPU case, its kind's minimum), moved by 1%; and a CPU case whose rounds spread by
    60% that got three times slower."""
    storage = tmp_path / "storage"
    spread = spread_rounds(0.93, 1.07)
    moved = spread_rounds(0.93, 1.07, scale=1.01)
    _save(
        storage,
        1,
        {
            ("fast", 12): ("gpu", spread),
            ("serial", 12): ("cpu", spread),
            ("multicore", 12): ("cpu", spread_rounds(0.7, 1.3)),
        },
    )
    _save(
        storage,
        2,
        {
            ("fast", 12): ("gpu", moved),
            ("serial", 12): ("cpu", moved),
            ("multicore", 12): ("cpu", spread_rounds(0.7, 1.3, scale=3.0)),
        },
    )
    return storage


def test_the_change_to_catch_is_by_kind_unless_given(runs):
    """By default a GPU case must catch 5% and a CPU case 10%: the GPU case's floor of 7%
    cannot tell, the CPU case's floor of 10% (its kind's minimum) can. --min-change 7
    applies to both: the GPU case is the same. The 3x slowdown is slower either way."""
    df = load_history(runs)
    result = compare(df, "0001", "0002").set_index(["strategy", "n"])
    assert result.loc[("fast", 12), "verdict"] == "cannot-tell"
    assert result.loc[("fast", 12), "floor_pct"] == pytest.approx(7.0)
    assert result.loc[("fast", 12), "min_change_pct"] == pytest.approx(5.0)
    assert result.loc[("fast", 12), "why"] == (
        "floor ±7.0% > 5%: spread of the rounds ±7.0% (half the IQR): a quieter host"
    )
    assert result.loc[("serial", 12), "verdict"] == "same"
    assert result.loc[("serial", 12), "floor_pct"] == pytest.approx(10.0)
    assert result.loc[("serial", 12), "min_change_pct"] == pytest.approx(10.0)
    assert result.loc[("serial", 12), "why"] == ""
    assert result.loc[("multicore", 12), "verdict"] == "slower"
    assert result.loc[("multicore", 12), "floor_pct"] == pytest.approx(30.0)

    given = compare(df, "0001", "0002", min_change=0.07).set_index(["strategy", "n"])
    assert given.loc[("fast", 12), "verdict"] == "same"
    assert set(given["min_change_pct"].round(9)) == {7.0}
    tighter = compare(df, "0001", "0002", min_change=0.02).set_index(["strategy", "n"])
    assert list(tighter["verdict"]) == ["cannot-tell", "cannot-tell", "slower"]
    assert tighter.loc[("serial", 12), "why"] == (
        "floor ±10.0% > 2%: nqprof calls no change under 10% for a CPU case: "
        "min-change 10% or more; spread of the rounds ±7.0% (half the IQR): a quieter host"
    )


def test_compare_counts_and_explains_cannot_tell_and_gates_on_it(runs, capsys):
    assert main(["compare", "--storage", str(runs)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"fast\s+12\s.*±7\.0%\s+\S+\s+cannot-tell", out)
    assert "\n1 same, 1 slower, 1 cannot-tell\n" in out
    assert (
        "cannot-tell: the floor is wider than the smallest change to catch (--min-change: 5% "
        "for GPU cases, 10% for CPU cases), so a change that size could hide under it:\n"
        "  fast N=12: floor ±7.0% > 5%: spread of the rounds ±7.0% (half the IQR): a quieter host\n"
    ) in out

    assert main(["compare", "--storage", str(runs), "--fail-on", "cannot-tell"]) == 1
    err = capsys.readouterr().err
    assert "nqprof: compare failed: 1 cannot-tell (--fail-on cannot-tell)" in err
    assert (
        main(["compare", "--storage", str(runs), "--min-change", "10", "--fail-on", "cannot-tell"])
        == 0
    )
    out = capsys.readouterr().out
    assert "\n2 same, 1 slower\n" in out and "cannot-tell" not in out
    assert main(["compare", "--storage", str(runs), "--min-change", "2"]) == 0
    out = capsys.readouterr().out
    assert "\n1 slower, 2 cannot-tell\n" in out and "(--min-change 2%)" in out


@pytest.mark.parametrize(
    "bad, why",
    [
        *((bad, "must be a positive number") for bad in ("0", "-1", "nan", "ten", "", "5%")),
        *((bad, "must be at most 1000") for bad in ("inf", "1001", "1e308")),
    ],
)
def test_a_bad_min_change_is_one_line(runs, capsys, bad, why):
    assert main(["compare", "--storage", str(runs), "--min-change", bad]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"nqprof: error: --min-change {why}") and line.endswith(f"got {bad!r}")


def test_the_option_values():
    assert parse_min_change("10") == 0.1 and parse_min_change(" 7.5 ") == 0.075
    assert parse_min_change("1000") == 10.0
    for bad in ("0", "-3", "nan", "inf", "x", "", "1000.5", "7.5%", "0x10", "1_000"):
        with pytest.raises(InputError, match=r"^--x must be (a positive number|at most 1000)"):
            parse_min_change(bad, "--x")
    assert parse_failing("slower, cannot-tell,slower") == ["slower", "cannot-tell"]
    assert "cannot-tell" in FAILING and "cannot-tell" in VERDICTS and "same" not in FAILING
    for bad in ("", ",", "same", "slower,worse"):
        with pytest.raises(InputError, match="takes a comma list of slower, faster, cannot-tell"):
            parse_failing(bad)


@pytest.mark.parametrize(
    "cpu, remedy",
    [
        (True, "worker processes disagree ±60.5%: more rounds, or a quieter host"),
        (
            False,
            "its units disagree ±60.5% (each worker's draw: its context, where its allocations "
            "land): about 6 units a run would narrow it to 10% (NQPROF_GPU_SESSIONS=3, or auto)",
        ),
    ],
)
def test_worker_processes_that_disagree_are_named_with_their_remedy(cpu, remedy):
    """Two worker processes a run, 10% apart in one run: Student's interval on their medians
    is the floor (60%), named with what narrows it for the case's kind: for a GPU case more
    units (its units' offsets are each worker's draw; more rounds in the same units keep
    them), as many as Student's interval needs at their variance: with k units a run the
    half-width is t(0.995, 2(k - 1)) x sd x sqrt(2 / k), 13.3% at k = 4, 10.6% at 5, 9.1%
    at 6, so 6 units, 3 sessions in each of the two worker processes."""
    from nqprof.analysis.comparing import cannot_tell_why

    procs = [0, 1] * 10
    d = stats.decide(
        [1.0, 1.1] * 10, [1.0, 1.0] * 10, processes_a=procs, processes_b=procs, min_change=0.1
    )
    assert d.verdict == "cannot-tell" and d.terms["processes"] == pytest.approx(0.6047, abs=1e-3)
    why = cannot_tell_why(d, {"kind": 0.05}, cpu, "fast", None)
    assert why == "floor ±60.5% > 10%: " + remedy
    assert d.units == 6


def test_the_units_a_floor_needs_are_the_fewest_that_reach_it():
    """spread.units_for_floor against the floor itself: runs of the returned k units whose
    log medians vary as the given runs' do reach the floor, runs of k - 1 do not."""
    import math

    from nqprof.spread import between_process_floor, floor_and_variance, units_for_floor

    procs = [0, 1] * 10
    a, b = [1.0, 1.1] * 10, [1.0, 1.0] * 10
    k = units_for_floor(floor_and_variance(a, b, procs, procs)[1], 0.10)
    variance = math.log(1.1) ** 2 / 2 / 2  # the pooled variance of the log unit medians
    assert floor_and_variance(a, b, procs, procs)[1] == pytest.approx(variance)

    def runs_of(logs: list[float]) -> tuple[list[float], list[int]]:
        samples = [math.exp(x) for x in logs for _ in range(3)]
        return samples, [u for u in range(len(logs)) for _ in range(3)]

    d = math.sqrt(variance * 5 / 6)  # six units at -d, +d: a pooled variance of `variance`
    six, six_units = runs_of([-d, d] * 3)
    e = math.sqrt(variance)  # five units at -e, -e, 0, e, e: the same
    five, five_units = runs_of([-e, -e, 0.0, e, e])
    assert k == 6
    assert between_process_floor(six, six, six_units, six_units) <= 0.10
    assert between_process_floor(five, five, five_units, five_units) > 0.10
    # no units to tell it from; more than the most; a floor already reached
    assert floor_and_variance(a, b, None, None)[1] is None
    assert units_for_floor(None, 0.10) is None
    wide = floor_and_variance([1.0, 3.0] * 10, b, procs, procs)[1]
    assert units_for_floor(wide, 0.05, most=8) == 9
    assert units_for_floor(variance, 0.61) == 2


def test_units_beyond_every_setting_are_said_so():
    from nqprof.analysis.comparing import more_units

    assert more_units(None, 0.05) == "more units, NQPROF_GPU_SESSIONS=auto"
    assert more_units(9, 0.05).endswith("(NQPROF_GPU_SESSIONS=5)")  # auto adds up to 8
    assert more_units(8, 0.05).endswith("(NQPROF_GPU_SESSIONS=4, or auto)")
    assert more_units(33, 0.05).startswith("more than 32 units a run would be needed for 5%")


def test_exact_counts_are_decided_without_a_floor():
    """Counts that do not move between runs of the same code (instructions under Valgrind):
    no floor, no test; the change against the smallest change to catch decides."""
    from nqprof.analysis.stats import decide_exact

    assert decide_exact(1000, 1000, 0.10).verdict == "same"
    assert decide_exact(1000, 1099, 0.10).verdict == "same"
    assert decide_exact(1000, 1101, 0.10).verdict == "slower"
    assert decide_exact(1000, 899, 0.10).verdict == "faster"
    d = decide_exact(1000, 1020, 0.01)
    assert (d.verdict, round(d.change, 6), d.floor, d.p) == ("slower", 0.02, 0.0, None)
    assert decide_exact(0, 5, 0.1).verdict == "too-few-rounds"


def _aa_false_verdicts(seed: int, pairs: int, sigma: float, shared: bool = False) -> float:
    """The share of synthetic A/A pairs called faster or slower: two runs of two units
    (worker processes or sessions) of 20 tight rounds each, every unit's time offset by a
    draw of sd ``sigma`` (log scale): drawn per unit, or (``shared``) once per run, the units
    of a run repeating it (what a repeated memory layout did: docs/results/placement-h200)."""
    import random

    rng = random.Random(seed)

    def run() -> tuple[list[float], list[int]]:
        common = rng.gauss(0, sigma)
        samples, units = [], []
        for unit in range(2):
            offset = common if shared else rng.gauss(0, sigma)
            samples += [math.exp(offset + rng.gauss(0, 0.001)) for _ in range(20)]
            units += [unit] * 20
        return samples, units

    called = 0
    for _ in range(pairs):
        (a, pa), (b, pb) = run(), run()
        d = stats.decide(a, b, processes_a=pa, processes_b=pb)
        called += d.verdict in ("faster", "slower")
    return called / pairs


@pytest.mark.parametrize("sigma", [0.03, 0.10])
def test_units_that_draw_their_offsets_anew_make_a_false_verdict_as_rarely_as_alpha(sigma):
    """The floor's between-unit term is Student's interval on the units' medians: with
    independent unit offsets, an A/A pair is called faster or slower about as often as
    ALPHA (1%) says, also where the offsets are ten times the rounds' spread. A z quantile in
    place of Student's t, an interval not split between the two tails or one degree of
    freedom too many would each call 1.8% or more of these pairs (seeded: no chance here)."""
    assert stats.ALPHA == 0.01
    assert _aa_false_verdicts(7, 1000, sigma) <= 0.015


def test_units_that_repeat_their_run_s_offset_defeat_the_floor():
    """The floor assumes each unit draws its offset anew; where a run's units repeat one
    offset, their agreement reads as no noise and A/A pairs are called faster or slower far
    more often than ALPHA: why every GPU session draws its layout (strategies.placement)."""
    assert _aa_false_verdicts(7, 300, 0.03, shared=True) > 0.10


def _units(medians: list[float], rounds: int = 20) -> tuple[list[float], list[int]]:
    """Rounds of units with the given medians (each unit's rounds tight about its median)."""
    samples, units = [], []
    for u, m in enumerate(medians):
        samples += [m * (1 + 1e-4 * (i % 3 - 1)) for i in range(rounds)]
        units += [u] * rounds
    return samples, units


def test_two_units_that_agree_by_chance_take_their_like_cases_variance():
    """devgraph N=12 on an H200: two units of 82.1 and 81.9 us in one run, 77.0 and 77.0 us
    in the next. Alone their agreement made a floor of ±1.4% and a false "faster" (-6.1%).
    With the variance of devgraph's units at N=8..13 (2.7%) as a prior, the floor is wider
    than the change and the case is cannot-tell."""
    (a, pa), (b, pb) = _units([82.11, 81.89]), _units([76.96, 77.02])
    alone = stats.decide(a, b, processes_a=pa, processes_b=pb)
    assert alone.terms["processes"] == pytest.approx(0.014, abs=0.001)
    assert alone.verdict == "faster"
    prior = (0.027**2, 40)
    d = stats.decide(a, b, processes_a=pa, processes_b=pb, prior=prior)
    # moderated: (own squares + 4 * prior) / (2 + 4), Student's t with 6 degrees of freedom
    ss, df = unit_squares(a, b, pa, pb)
    assert df == 2
    want = math.expm1(stats.t_quantile(0.995, 6) * math.sqrt((ss + 4 * 0.027**2) / 6))
    assert d.terms["processes"] == pytest.approx(want)
    assert d.verdict == "cannot-tell" and d.floor > abs(d.change)


def test_a_case_of_many_units_keeps_mostly_its_own_variance():
    """The prior weighs PRIOR_DF degrees of freedom at most: eight units a run that agree
    to 0.1% are not widened to a noisy prior's floor."""
    meds = [100 * (1 + 0.001 * (u % 3 - 1)) for u in range(8)]
    (a, pa), (b, pb) = _units(meds), _units(meds)
    noisy = (0.05**2, 100)
    floor = stats.floor_terms(a, b, processes_a=pa, processes_b=pb, prior=noisy)["processes"]
    assert PRIOR_DF == 4
    assert floor == pytest.approx(
        math.expm1(
            stats.t_quantile(0.995, 18)
            * math.sqrt((unit_squares(a, b, pa, pb)[0] + 4 * 0.05**2) / 18 / 4)
        )
    )
    assert floor < 0.05


def test_unit_priors_pool_the_same_group_within_the_span():
    cases = [
        ("fast", 4e-6, 0.0, 2),  # the case itself: never its own prior
        ("fast", 5e-6, 0.004, 2),  # within 4x
        ("fast", 15.9e-6, 0.002, 4),  # within 4x
        ("fast", 17e-6, 1.0, 2),  # past the span
        ("devgraph", 4e-6, 1.0, 2),  # another strategy
        ("fast", 4e-6, 5.0, 0),  # no units of its own
    ]
    prior = unit_priors(cases)[0]
    assert prior == (pytest.approx(0.006 / 6), 6)
    assert unit_priors([("x", 1.0, 0.1, 2)]) == [None]


def _suite_false_verdicts(seed: int, suites: int, sigma: float, with_prior: bool) -> float:
    """The share of a synthetic suite's cases (nine cases of one strategy, two units a run,
    each unit's offset a draw of sd ``sigma``) that an A/A pair calls faster or slower."""
    import random

    rng = random.Random(seed)
    called = total = 0
    for _ in range(suites):
        pairs = [
            [_units([math.exp(rng.gauss(0, sigma)) for _ in range(2)]) for _ in range(2)]
            for _ in range(9)
        ]
        rows = [("s", 1.0, *unit_squares(a, b, pa, pb)) for (a, pa), (b, pb) in pairs]
        priors = unit_priors(rows) if with_prior else [None] * len(rows)
        for ((a, pa), (b, pb)), prior in zip(pairs, priors, strict=True):
            d = stats.decide(a, b, processes_a=pa, processes_b=pb, prior=prior)
            called += d.verdict in ("faster", "slower")
            total += 1
    return called / total


def test_a_prior_from_like_cases_makes_false_verdicts_rarer():
    """Units of sd 5% (devgraph's small cases move 2.7%): alone, two units a run call 0.85%
    of A/A cases faster or slower; with the prior pooled from the suite's other cases of the
    strategy, under 0.3% (seeded: no chance here). A prior that never reached the floor,
    or one that replaced the case's own squares, would leave the first rate or fail the
    test above."""
    alone = _suite_false_verdicts(1, 300, 0.05, with_prior=False)
    pooled = _suite_false_verdicts(1, 300, 0.05, with_prior=True)
    assert alone > 0.006
    assert pooled < 0.003


# -- CPU cases that moved together between the runs -----------------------------------------


def _cpu_suite(storage, moves: dict[tuple[str, int], float], sources=(None, None)):
    """Two runs of serial, multicore and serial-d4 at N=8..12, rounds tight (0.1%); run
    two's times moved by ``moves`` (a relative change, by case; 0 where absent)."""
    cases = [(s, n) for s in ("serial", "multicore", "serial-d4") for n in range(8, 13)]
    for index, src in zip((1, 2), sources, strict=True):
        scale = {c: 1.0 if index == 1 else 1.0 + moves.get(c, 0.0) for c in cases}
        _save(
            storage,
            index,
            {c: ("cpu", spread_rounds(0.999, 1.001, scale=scale[c])) for c in cases},
            sources=src,
        )
    return compare(load_history(storage), "0001", "0002").set_index(["strategy", "n"])


def test_cpu_cases_that_all_moved_together_cannot_tell(tmp_path):
    """An A/A pair on a host whose CPU speed moved between the runs: every CPU case 23% to
    37% slower (an H200 host's second run of the default suite moved every CPU case 6% to
    67%). The median move, 30%, is the host's: every case's floor is at least twice it, and
    none is called slower; each says why."""
    cases = [(s, n) for s in ("serial", "multicore", "serial-d4") for n in range(8, 13)]
    moves = {c: 0.23 + 0.01 * i for i, c in enumerate(cases)}
    result = _cpu_suite(tmp_path / "s", moves)
    assert set(result["verdict"]) == {"cannot-tell"}
    assert result["floor_pct"].min() >= 2 * 29.5
    assert "CPU cases moved +30% together between the runs" in result.loc[("serial", 8), "why"]


def test_a_cpu_case_that_moved_alone_is_still_slower(tmp_path):
    """One CPU case 30% slower while the others held: the median move is 0, the floor its
    kind's 10%, and the case is slower; the rest are the same."""
    result = _cpu_suite(tmp_path / "s", {("serial", 10): 0.30})
    assert result.loc[("serial", 10), "verdict"] == "slower"
    assert result.loc[("serial", 10), "floor_pct"] == pytest.approx(10.0)
    assert set(result.drop(index=("serial", 10))["verdict"]) == {"same"}


def test_a_strategy_s_common_move_counts_only_where_its_code_held(tmp_path):
    """serial's five cases all 30% slower, multicore's and serial-d4's steady: the median of
    all fifteen moved 0%, serial's own median 30%. Where serial's sources are the same in
    both runs, its move is the host's (a host moves each strategy's work by its own
    amount): cannot-tell. Where its sources changed, its common move may be the change
    itself: slower."""
    moves = {("serial", n): 0.30 for n in range(8, 13)}
    held = _cpu_suite(
        tmp_path / "held",
        moves,
        sources=({"serial": "s1", "multicore": "m", "serial-d4": "d"},) * 2,
    )
    assert set(held.loc["serial", "verdict"]) == {"cannot-tell"}
    assert set(held.loc["multicore", "verdict"]) == {"same"}
    changed = _cpu_suite(
        tmp_path / "changed",
        moves,
        sources=(
            {"serial": "s1", "multicore": "m", "serial-d4": "d"},
            {"serial": "s2", "multicore": "m", "serial-d4": "d"},
        ),
    )
    assert set(changed.loc["serial", "verdict"]) == {"slower"}


# -- CPU cases that the host moved one by one between the runs -------------------------------


def _medians(moves: dict[tuple[str, int], float]) -> tuple[dict, dict]:
    """Two runs' CPU cases as :func:`comparing.cases_of_run` gives them: medians 1 in run
    one, 1 + move in run two."""

    def case(median: float) -> dict:
        return {"kind": "cpu", "instructions": None, "median": median, "source_hash": None}

    return (
        {k: case(1.0) for k in moves},
        {k: case(1.0 + m) for k, m in moves.items()},
    )


def test_the_scatter_bound_is_eight_robust_spreads_past_the_common_move():
    """Eight CPU cases moved by log changes 0.1 +- (0.01, 0.02, 0.03, 0.04): their common
    move is 0.1 (the median), their median absolute deviation 0.025, so each bound is
    exp(0.1 + t(0.995, 2) x 0.025 / sqrt(2/3)) - 1, t = 9.925 (about 8 robust spreads)."""
    logs = [0.1 + s * d for d in (0.01, 0.02, 0.03, 0.04) for s in (1, -1)]
    moves = {("serial", 8 + i): math.expm1(v) for i, v in enumerate(logs)}
    a, b = _medians(moves)
    together = comparing.cpu_cases_move(a, b)
    bound = comparing.cpu_cases_scatter(a, b, together)
    t = comparing.t_quantile(0.995, 2)
    assert t == pytest.approx(9.925, abs=1e-3)
    expected = math.expm1(0.1 + t * 0.025 / math.sqrt(2 / 3))
    assert set(bound) == set(moves)
    assert all(v == pytest.approx(expected, rel=1e-9) for v in bound.values())


def test_fewer_than_eight_cpu_cases_give_no_scatter():
    moves = {("serial", n): 0.01 * n for n in range(8, 15)}
    a, b = _medians(moves)
    assert comparing.cpu_cases_scatter(a, b, comparing.cpu_cases_move(a, b)) == {}
    moves[("serial", 15)] = 0.0
    a, b = _medians(moves)
    assert len(comparing.cpu_cases_scatter(a, b, comparing.cpu_cases_move(a, b))) == 8


def test_cpu_cases_the_host_moved_one_by_one_cannot_tell(tmp_path):
    """An A/A pair on a host whose speed moved case by case (an H100 host's: -43% to +112%,
    each run's workers agreeing): fifteen cases scattered by +-5% to +-20% about no common
    move and one 60% slower. Each case's rounds are tight and its units agree, so without
    the scatter the 60% would be slower; its bound is wider: cannot-tell, and why says so."""
    cases = [(s, n) for s in ("serial", "multicore", "serial-d4") for n in range(8, 13)]
    moves = {c: (0.05 + 0.01 * i) * (1 if i % 2 else -1) for i, c in enumerate(cases)}
    moves[("serial", 9)] = 0.60
    result = _cpu_suite(tmp_path / "s", moves)
    assert result.loc[("serial", 9), "verdict"] == "cannot-tell"
    assert "the host moved CPU cases one by one" in result.loc[("serial", 9), "why"]
    assert "of 15 CPU cases" in result.loc[("serial", 9), "why"]
    assert not set(result["verdict"]) & {"slower", "faster"}


def test_a_change_far_beyond_the_scatter_is_still_slower(tmp_path):
    """The same host, quieter (+-1% to +-2% case by case), and serial N=10 three times
    slower: past every bound, slower."""
    cases = [(s, n) for s in ("serial", "multicore", "serial-d4") for n in range(8, 13)]
    moves = {c: (0.01 + 0.001 * i) * (1 if i % 2 else -1) for i, c in enumerate(cases)}
    moves[("serial", 10)] = 2.0
    result = _cpu_suite(tmp_path / "s", moves)
    assert result.loc[("serial", 10), "verdict"] == "slower"
