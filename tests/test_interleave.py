"""Interleaved A/B (nqprof ab): the paired verdict on synthetic pairs, and the interleaving
itself with a scripted strategy whose rounds report given times (no clock)."""

import math
import random

import pytest
from cli_process import nqprof
from inner_pytest import inner_pytest

from nqprof.analysis.paired import decide_pairs, rank_depth

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("n, k", [(7, 0), (8, 1), (10, 1), (20, 4), (40, 12)])
def test_rank_depth_is_the_sign_tests_at_one_percent(n, k):
    assert rank_depth(n) == k
    if k:  # k is the deepest whose two tails stay within alpha
        tail = sum(math.comb(n, i) for i in range(k)) / 2**n
        deeper = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
        assert 2 * tail <= 0.01 < 2 * deeper


def _pairs(change, noise, drift=1.0, n=20, seed=1):
    """n pairs of a host that drifts by ``drift`` a pair (both arms alike) with independent
    log-normal noise of ``noise`` on every round; B is A times 1 + change."""
    rng = random.Random(seed)
    a, b = [], []
    for i in range(n):
        host = 0.02 * drift**i
        a.append(host * math.exp(rng.gauss(0, noise)))
        b.append(host * (1 + change) * math.exp(rng.gauss(0, noise)))
    return a, b


def test_a_five_percent_slowdown_is_caught_and_an_a_a_is_same():
    assert decide_pairs(*_pairs(0.05, 0.01), min_change=0.05).verdict == "slower"
    assert decide_pairs(*_pairs(-0.05, 0.01), min_change=0.05).verdict == "faster"
    assert decide_pairs(*_pairs(0.0, 0.01), min_change=0.05).verdict == "same"


def test_the_pairs_cancel_a_drift_that_swamps_the_change():
    """The host gets 3% slower every pair (80% over the session): B's 5% shows all the same,
    where the two runs' samples, unpaired, overlap entirely."""
    a, b = _pairs(0.05, 0.005, drift=1.03)
    assert min(b) < max(a)  # unpaired, no threshold could tell
    d = decide_pairs(a, b, min_change=0.05)
    assert d.verdict == "slower" and 0.04 < d.change < 0.06, d


def test_noisy_pairs_cannot_tell_and_say_so():
    d = decide_pairs(*_pairs(0.0, 0.2), min_change=0.05)
    assert d.verdict == "cannot-tell" and d.low < -0.05 and d.high > 0.05, d


def test_too_few_pairs():
    d = decide_pairs([1.0] * 7, [1.1] * 7, min_change=0.05)
    assert d.verdict == "too-few-pairs" and d.low is None and d.change == pytest.approx(0.1)


def test_the_estimate_must_reach_half_the_change_to_catch():
    """A real but small change (1%, interval clear of 0, within the change to catch) is the
    same for a user who wants 5% caught; at exactly half of it, slower."""
    a = [1.0] * 20
    assert decide_pairs(a, [1.01] * 20, min_change=0.05).verdict == "same"
    assert decide_pairs(a, [1.0251] * 20, min_change=0.05).verdict == "slower"
    assert decide_pairs(a, [1.0249] * 20, min_change=0.05).verdict == "same"


def test_ten_trials_catch_five_percent_nine_times_and_never_cry_wolf():
    """The trial of issue 44 on synthetic pairs: per-round noise of 2% and a drifting host,
    10 seeded trials of 20 pairs each way."""
    caught = sum(
        decide_pairs(*_pairs(0.05, 0.02, drift=1.01, seed=s), min_change=0.05).verdict == "slower"
        for s in range(10)
    )
    wolf = [
        decide_pairs(*_pairs(0.0, 0.02, drift=1.01, seed=100 + s), min_change=0.05).verdict
        for s in range(10)
    ]
    assert caught >= 9 and not {"slower", "faster"} & set(wolf), (caught, wolf)


def test_bad_input():
    with pytest.raises(ValueError):
        decide_pairs([1.0], [1.0, 2.0], min_change=0.05)
    with pytest.raises(ValueError):
        decide_pairs([1.0], [1.0], min_change=0.0)


def test_interleave_alternates_the_order_and_verifies(monkeypatch):
    """Two worker processes of the scripted strategy: B reports 1.05 times A's times, the host
    drifts 2% a round of each arm; rounds alternate A B, B A; the pairs say slower by 5%."""
    from fake_strategies import SCRIPTED

    from nqprof.interleave import Arm, interleave

    a = Arm(SCRIPTED, {"drift": 1020})
    b = Arm(SCRIPTED, {"drift": 1020, "factor": 1050})
    result = interleave(8, a, b, pairs=12, warmup=1, timeout=60)
    # the order alternates from the first pair on: the warm-up pair was A B
    assert result.order == ["ba", "ab"] * 6
    assert result.stopped == "12 pairs, as asked" and len(result.trips_a) == 12
    assert "cpu" in result.conditions  # nqprof's round loop: the pairs' conditions
    assert len(result.samples_a) == len(result.samples_b) == 12
    for x, y in zip(result.samples_a, result.samples_b, strict=True):
        assert y / x == pytest.approx(1.05)
    assert result.samples_a[-1] / result.samples_a[0] == pytest.approx(1.02**11)
    assert result.decision.verdict == "slower"
    assert result.decision.change == pytest.approx(0.05)
    doc = result.to_dict()
    assert doc["a"]["params"]["factor"] == 1000 and doc["b"]["params"]["factor"] == 1050
    assert doc["conditions"] == result.conditions


def test_the_pair_rule_stops_at_a_settled_verdict_or_its_cap():
    """Auto pairs: none before AUTO_FIRST, then a look every AUTO_STEP; a settled verdict
    stops them, cannot-tell goes on to the cap of pairs or seconds; a count stops at itself."""
    from nqprof.interleave import AUTO_FIRST, AUTO_MAX_PAIRS, AUTO_STEP, PairRule

    slower = [(1.0 + 0.001 * (i % 3), 1.2 + 0.001 * (i % 3)) for i in range(AUTO_MAX_PAIRS)]
    same = [(1.0 + 0.01 * (i % 7), 1.0 + 0.01 * ((i * 3) % 7)) for i in range(AUTO_MAX_PAIRS)]
    rule = PairRule(None, 0.05)
    assert not rule.done(slower[: AUTO_FIRST - 1], 1.0)
    assert rule.done(slower[:AUTO_FIRST], 1.0) and rule.stopped.startswith(f"{AUTO_FIRST} pairs")
    rule = PairRule(None, 0.05)
    assert not rule.done(slower[: AUTO_FIRST + 1], 1.0)  # between two looks
    noisy = PairRule(None, 0.001)  # a change this small cannot be told from these pairs
    assert not noisy.done(same[:AUTO_FIRST], 1.0)
    assert not noisy.done(same[: AUTO_FIRST + AUTO_STEP], 1.0)
    assert noisy.done(same[: AUTO_FIRST + AUTO_STEP], 1e9) and "still cannot tell" in noisy.stopped
    capped = PairRule(None, 0.001)
    assert capped.done(same, 1.0) and capped.stopped.startswith(f"{AUTO_MAX_PAIRS} pairs")
    fixed = PairRule(7, 0.05)
    assert not fixed.done(slower[:6], 0.0) and fixed.done(slower[:7], 0.0)
    assert fixed.describe() == "7 pairs, as asked" and fixed.split(2) == [fixed]


def _ab(*args):
    return nqprof("ab", *args)


@pytest.mark.parametrize(
    "args, message",
    [
        (["10", "-s", "serial"], "ab needs a second variant"),
        (["10", "-s", "serial", "--vs", "depth=2"], "depth"),
        (["10", "-s", "serial", "--vs-strategy", "serial", "--pairs", "7"], "--pairs"),
        (["10", "-s", "serial", "--vs-strategy", "serial", "--min-change", "0"], "--min-change"),
        (["10", "-s", "serial", "--vs-strategy", "serial", "--fail-on", "worse"], "--fail-on"),
    ],
)
def test_ab_bad_input_is_one_line_exit_2(args, message):
    done = _ab(*args)
    assert done.returncode == 2, done.stderr
    first = done.stderr.strip().splitlines()[0]
    assert first.startswith("nqprof: error:") and message in first, done.stderr
    assert "Traceback" not in done.stderr


def test_ab_runs_an_a_a_of_serial():
    done = _ab("8", "-s", "serial", "--vs-strategy", "serial", "--pairs", "8", "-q")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("A          serial N=8: median ")
    assert lines[1].startswith("B          serial N=8: median ")
    assert lines[3].startswith("verdict    ") and "8 pairs" in lines[3]


@pytest.fixture
def scripted_pytest(pytester, request, register_strategy):
    """An inner pytest over a one-test nqbench suite, the scripted double registered."""
    from fake_strategies import SCRIPTED

    register_strategy(SCRIPTED)
    return inner_pytest(pytester, request, "--nq-n=8")


def test_pytest_nq_vs_runs_each_case_as_an_a_b_and_fails_on_a_listed_verdict(scripted_pytest):
    """--nq-vs=factor=1050: B reports 1.05 times A's scripted times (drifting 1% a round):
    the summary says slower by 5%, and --nq-vs-fail=slower fails the session though its test
    passed; the same with factor=1000 (an A/A) says same and passes."""
    args = ("--nq-strategy=scripted", "--nq-param=drift=1010", "--nq-vs-fail=slower")
    slower = scripted_pytest(*args, "--nq-vs=factor=1050")
    slower.assert_outcomes(passed=1)
    assert slower.ret == pytest.ExitCode.TESTS_FAILED
    slower.stdout.fnmatch_lines(
        [
            "nqprof ab: scripted N=8 (*) vs factor=1050: slower: +5.0% (99% interval +5.0% .. "
            "+5.0%, 20 pairs; change to catch 5%)",
            "nqprof ab: failed: scripted N=8 (*) (slower) (--nq-vs-fail)",
        ]
    )
    same = scripted_pytest(*args, "--nq-vs=scripted.factor=1000")
    assert same.ret == pytest.ExitCode.OK
    same.stdout.fnmatch_lines(["nqprof ab: scripted N=8 (*) vs factor=1000: same: +0.0% *"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--nq-strategy=scripted", "--nq-vs=bogus=1"], "no selected strategy takes bogus"),
        (["--nq-strategy=scripted", "--nq-vs=factor"], "--nq-vs takes ?STRATEGY.?KEY=VALUE, got"),
        (["--nq-strategy=scripted", "--nq-vs-fail=slower"], "--nq-vs-fail needs --nq-vs"),
        (["--nq-strategy=scripted", "--nq-vs=factor=2", "--nq-vs-fail=worse"], "got 'worse'"),
    ],
)
def test_pytest_nq_vs_bad_input_is_a_usage_error(scripted_pytest, args, message):
    result = scripted_pytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: *{message}*"])


def test_the_verdicts_ab_and_nq_vs_fail_take_are_the_paired_verdicts_but_same():
    from nqprof.analysis.paired import VERDICTS
    from nqprof.options import AB_FAILING

    assert AB_FAILING == tuple(v for v in VERDICTS if v != "same")


def test_ab_takes_pairs_not_rounds():
    done = _ab("8", "-s", "serial", "--vs-strategy", "serial", "--rounds", "3")
    assert done.returncode == 2 and "--rounds" in done.stderr.splitlines()[0], done.stderr


@pytest.mark.slow
def test_the_trials_tool_runs_its_double_in_a_worker():
    """tools/ab_trials.py as a user runs it: its strategy double (defined in the script) must
    reach the worker process, which cannot import a script's __main__. What the verdicts are
    is the business of the tests above (rounds of microseconds on a busy machine can say
    cannot-tell); here every trial must end in one of them and the tally must count them."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    tool = Path(__file__).resolve().parent.parent / "tools" / "ab_trials.py"
    args = ["--trials", "1", "--n", "6", "--reps", "2", "--busy", "0", "--pairs", "20"]
    done = subprocess.run(
        [sys.executable, str(tool), *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = "(slower|faster|same|cannot-tell)"
    assert re.search(rf"^A/B trial 1: {verdicts}: ", done.stdout, re.M), done.stdout
    assert re.search(rf"^A/A trial 1: {verdicts}: ", done.stdout, re.M), done.stdout
    assert re.search(r"^A/B: [01] of 1 caught as slower; A/A: [01] of 1 gave", done.stdout, re.M)
