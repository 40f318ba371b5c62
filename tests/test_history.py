"""Saved benchmark histories: loading (from a committed two-run history made by
`pytest bench/ --nq-strategy=serial,multicore --nq-n=8:10 --benchmark-autosave`), corrupted
files, noise-aware comparison, the history/compare/plot commands and their figures."""

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from nqprof.analysis import (  # noqa: E402
    comparing,
    figures,
    history,
    stats,  # noqa: E402
)
from nqprof.analysis.comparing import compare
from nqprof.analysis.history import HistoryWarning, load_history  # noqa: E402
from nqprof.cli import main  # noqa: E402
from nqprof.errors import InputError  # noqa: E402
from nqprof.problem import known_count  # noqa: E402

DATA = Path(__file__).parent / "data"
STORAGE = DATA / "benchmarks"
CORRUPT = DATA / "corrupt-run.json"
RUNS = sorted(STORAGE.rglob("*.json"))
CASES = [(s, n) for s in ("serial", "multicore") for n in (8, 9, 10)]


@pytest.fixture
def storage(tmp_path):
    """A writable copy of the committed history; returns (folder, path of its first run)."""
    root = tmp_path / "benchmarks"
    shutil.copytree(STORAGE, root)
    return root, root / RUNS[0].relative_to(STORAGE)


def _edit_run(path: Path, out: Path, edit) -> Path:
    """Save the run at ``path`` as ``out`` after ``edit(benchmarks_by_(strategy, n))``."""
    data = json.loads(path.read_text())
    edit({(b["extra_info"]["strategy"], b["extra_info"]["n"]): b for b in data["benchmarks"]})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data))
    return out


def _set_stats(bench, median, iqr=0.0, stddev=0.0, rounds=10):
    bench["stats"].update(median=median, iqr=iqr, stddev=stddev, rounds=rounds)


# -- loading -------------------------------------------------------------------------------


def test_committed_fixture_is_two_real_runs():
    assert len(RUNS) == 2
    for path in RUNS:
        data = json.loads(path.read_text())
        assert sorted(
            (b["extra_info"]["strategy"], b["extra_info"]["n"]) for b in data["benchmarks"]
        ) == sorted(CASES)


def test_history_has_one_row_per_benchmark_per_run():
    df = load_history(STORAGE)
    assert len(df) == 2 * len(CASES)
    assert df["run"].nunique() == 2 and df["datetime"].is_monotonic_increasing
    assert list(df["run"].unique()) == [
        p.relative_to(STORAGE).with_suffix("").as_posix() for p in RUNS
    ]
    assert sorted(zip(df["strategy"], df["n"], strict=True)) == sorted(CASES * 2)
    assert (df["extra.count"] == df["n"].map(known_count)).all() and df["extra.verified"].all()
    assert (df["median"] > 0).all() and (df["rounds"] >= 5).all()
    # the resolved parameters: flattened into param.* columns and a canonical text; the
    # case's identity is the parameters the user gave (none in these runs)
    multicore = df[df["strategy"] == "multicore"]
    assert (
        multicore["param.depth"].notna().all()
        and multicore["resolved"].str.startswith("depth=").all()
    )
    assert df["params"].eq("").all() and df.loc[df["strategy"] == "serial", "resolved"].eq("").all()
    # extra_info flattened; machine_info from the nqprof hook (made on a CPU-only machine)
    assert {"extra.gpu_s", "extra.source_hash", "extra.device_kind", "extra.notes"} <= set(
        df.columns
    )
    assert df["extra.gpu_s"].isna().all()
    # an older run: compute samples are the worker's wall times, wall is pytest-benchmark's host
    # clock
    assert (df["compute.rounds"] == df["extra.wall_times"].map(len)).all()
    assert (df["wall.median"] == df["median"]).all()
    assert {"machine.gpu", "machine.cuda_toolkit", "machine.node", "commit"} <= set(df.columns)
    assert (
        df["machine.gpu"].isna().all() and df["machine.gpu_status"].str.startswith("CPU only").all()
    )


def test_compute_statistics_come_from_the_gpu_times(storage):
    root, first = storage

    def add_gpu_times(benches):
        benches["serial", 8]["extra_info"]["gpu_times"] = [3.0, 1.0, 2.0, 4.0, 5.0]

    _edit_run(first, first.with_name("0009_gpu.json"), add_gpu_times)
    df = load_history(root)
    row = df[
        df["run"].str.endswith("0009_gpu") & (df["strategy"] == "serial") & (df["n"] == 8)
    ].iloc[0]
    assert (row["compute.median"], row["compute.rounds"], row["compute.iqr"]) == (3.0, 5, 2.5)
    assert row["compute.samples"] == [3.0, 1.0, 2.0, 4.0, 5.0]


def test_a_corrupted_file_is_named_and_the_others_still_load(storage, capsys):
    root, first = storage
    bad = first.with_name("0003_corrupt.json")
    shutil.copy(CORRUPT, bad)
    with pytest.warns(HistoryWarning, match=re.escape(str(bad))):
        df = load_history(root)
    assert len(df) == 2 * len(CASES)
    with pytest.raises(InputError, match=re.escape(str(bad))):
        load_history(root, strict=True)

    assert main(["history", str(root)]) == 0
    out, err = capsys.readouterr()
    assert f"nqprof: warning: skipped {bad}: not a readable pytest-benchmark run" in err
    assert "2 runs, 12 benchmarks" in out
    assert main(["compare", "--storage", str(root), "--strict"]) == 2
    assert str(bad) in capsys.readouterr().err


def test_a_json_file_that_is_not_a_run_is_skipped(storage):
    root, first = storage
    other = first.with_name("notes.json")
    other.write_text('{"hello": "world"}')
    with pytest.warns(HistoryWarning, match=r"notes\.json: .*missing key 'datetime'"):
        assert len(load_history(root)) == 2 * len(CASES)


def test_missing_or_empty_storage_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no benchmark storage folder"):
        load_history(tmp_path / "nope")
    with pytest.raises(InputError, match="no saved benchmarks"):
        load_history(tmp_path)


def test_runs_are_named_by_number_file_or_path():
    df = load_history(STORAGE)
    full = df["run"].iloc[0]
    assert history.resolve_run(df, "0001") == full
    assert history.resolve_run(df, full.rsplit("/", 1)[-1]) == full
    assert history.resolve_run(df, full) == full
    with pytest.raises(InputError, match="no saved run '0042'"):
        history.resolve_run(df, "0042")
    with pytest.raises(InputError, match="names several runs"):
        history.resolve_run(df, "000")


# -- comparing -------------------------------------------------------------------------------


def _rounds(center, spread=0.01, count=20, seed=0):
    """``count`` round times around ``center``, relative spread ``spread`` (seeded)."""
    import random

    rng = random.Random(seed)
    return [center * (1 + spread * rng.uniform(-1, 1)) for _ in range(count)]


def test_the_rank_test_is_exact_for_small_samples():
    # all of B above all of A: the smallest p these sizes allow
    assert stats.mann_whitney_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert stats.mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)
    assert stats.mann_whitney_p([1, 3, 5, 7], [2, 4, 6, 8]) == pytest.approx(0.6857142857)
    assert stats.min_p_value(5, 5) == pytest.approx(2 / 252) and stats.min_p_value(
        4, 5
    ) == pytest.approx(2 / 126)
    assert stats.min_p_value(1000, 1000) == 0.0  # C(2000, 1000) is past a float
    assert stats.decide([1.0] * 1000, [1.2] * 1000).verdict == "slower"
    # ties and large samples: the normal approximation, symmetric in its arguments
    a, b = _rounds(1.0, count=40, seed=1), _rounds(1.02, count=40, seed=2)
    assert stats.mann_whitney_p(a, b) == pytest.approx(stats.mann_whitney_p(b, a))
    assert stats.mann_whitney_p([1.0] * 30, [1.0] * 30) == 1.0


def test_verdicts_need_significance_and_an_effect_above_the_floor():
    a = _rounds(1.0)
    assert stats.decide(a, _rounds(1.10, seed=1)).verdict == "slower"
    assert stats.decide(a, _rounds(0.90, seed=1)).verdict == "faster"
    # significant but inside the 5% floor: same
    small = stats.decide(a, _rounds(1.03, seed=1))
    assert small.p < stats.ALPHA and small.verdict == "same"
    # a large change in the medians that the ranks do not support, behind a floor far wider
    # than 5% (rounds that spread by 90%): cannot-tell, never same
    noisy = stats.decide(
        _rounds(1.0, spread=0.9, count=6, seed=3), _rounds(1.1, spread=0.9, count=6, seed=4)
    )
    assert noisy.verdict == "cannot-tell" and noisy.p >= stats.ALPHA and noisy.floor > 0.5


def test_the_floor_and_the_minimum_rounds_are_boundaries():
    base = [1.0] * 10
    at_floor = [1.0 + stats.MIN_EFFECT] * 10  # exactly on the floor: not a change
    above = [1.0 + stats.MIN_EFFECT * 1.02] * 10
    assert stats.decide(base, at_floor).verdict == "same"
    assert stats.decide(base, above).verdict == "slower"
    # five rounds a side can reach ALPHA, four cannot
    assert stats.decide([1.0] * 5, [2.0] * 5).verdict == "slower"
    assert stats.decide([1.0] * 4, [2.0] * 5).verdict == "too-few-rounds"
    assert stats.decide([], [2.0] * 5).verdict == "too-few-rounds"


def test_a_run_that_drifts_raises_its_own_floor():
    drifting = [1.0] * 10 + [1.12] * 10  # the second half 12% slower than the first
    assert stats.drift(drifting) == pytest.approx(0.12)
    d = stats.decide(drifting, [1.15] * 20)
    assert d.floor == pytest.approx(0.12) and d.verdict == "cannot-tell"  # wider than 5%
    assert stats.decide(drifting, [1.15] * 20, min_change=0.15).verdict == "same"
    assert stats.decide([1.0] * 20, [1.15] * 20).verdict == "slower"
    # the drift looks at every quarter: one slow quarter in the middle counts
    assert stats.drift([1.0] * 5 + [1.3] * 5 + [1.0] * 10) == pytest.approx(0.3)


def test_the_spread_between_worker_processes_raises_the_floor():
    """A CPU case's rounds run in several processes in turn; a process that got a slow core
    is noise of the run, not a change of the code."""
    a = [1.0, 1.3, 1.0] * 10
    procs = [0, 1, 2] * 10
    assert stats.process_spread(a, procs) == pytest.approx(0.3)
    assert stats.process_spread(a, None) == 0.0 and stats.process_spread(a, [0] * 30) == 0.0
    b = [1.2] * 30
    assert stats.decide(a, b, processes_a=procs).verdict == "cannot-tell"  # floor 30% > 5%
    assert stats.decide(a, b, processes_a=procs, min_change=0.3).verdict == "same"
    assert stats.decide([1.0] * 30, b, processes_a=procs).verdict == "slower"


def test_students_t_from_the_incomplete_beta_function():
    # the 0.995 quantiles of a printed table, and the distribution's symmetry
    for df, q in [(1, 63.657), (2, 9.925), (4, 4.604), (10, 3.169), (30, 2.750)]:
        assert stats.t_quantile(0.995, df) == pytest.approx(q, abs=1e-3)
    assert stats.t_quantile(0.975, 5) == pytest.approx(2.571, abs=1e-3)
    assert stats.t_cdf(0.0, 3) == pytest.approx(0.5)
    assert stats.t_cdf(-2.0, 7) == pytest.approx(1 - stats.t_cdf(2.0, 7))


def test_the_processes_of_both_runs_give_one_interval():
    """Where both runs used several processes, the floor is Student's interval on their
    process medians, the variance pooled: two processes 10% apart in one run and none in
    the other leave 60% undecided (2 degrees of freedom at p < 0.01)."""
    procs = [0, 1] * 10
    a = [1.0, 1.1] * 10
    b = [1.0, 1.0] * 10
    # logs 0 and ln 1.1: squares ln(1.1)^2 / 2, pooled over 2 df, se = sqrt(pooled (1/2 + 1/2))
    assert stats.between_process_floor(a, b, procs, procs) == pytest.approx(0.6047, abs=1e-3)
    assert stats.between_process_floor(a, b, procs, procs) == stats.between_process_floor(
        b, a, procs, procs
    )
    # processes that agree leave the floor to the rest; one run's processes alone: their range
    assert stats.between_process_floor(b, b, procs, procs) == 0.0
    assert stats.between_process_floor(a, b, procs, None) == pytest.approx(0.1)
    # three processes a side that agree within 1%: a 20% change is called
    three = [0, 1, 2] * 10
    agree = [1.0, 1.01, 0.995] * 10
    assert stats.floor_of(agree, [x * 1.2 for x in agree], 0.05, three, three) < 0.1
    assert (
        stats.decide(agree, [x * 1.2 for x in agree], processes_a=three, processes_b=three).verdict
        == "slower"
    )


def test_cpu_cases_have_the_larger_floor(tmp_path, monkeypatch):
    """A change of 7%: a verdict for a GPU case, the same for a CPU case (whose times move
    between runs with the host)."""
    monkeypatch.setattr(comparing, "TOGETHER_MIN_CASES", 10**6)  # every case moves alike here:
    # the common move's own term is tested in test_stats_verdicts
    root = tmp_path / "benchmarks"

    def make(center, kind):
        def edit(benches):
            for i, bench in enumerate(benches.values()):
                _with_samples(bench, _rounds(center, seed=i))
                bench["extra_info"]["device_kind"] = kind

        return edit

    for kind in ("gpu", "cpu"):
        _edit_run(RUNS[0], root / kind / "0001_a.json", make(1e-3, kind))
        _edit_run(RUNS[0], root / kind / "0002_b.json", make(1.07e-3, kind))
    gpu, cpu = (compare(load_history(root / kind), "0001", "0002") for kind in ("gpu", "cpu"))
    assert set(gpu["verdict"]) == {"slower"} and set(gpu["floor_pct"].round(6)) == {
        100 * stats.MIN_EFFECT
    }
    assert set(cpu["verdict"]) == {"same"} and set(cpu["floor_pct"].round(6)) == {
        100 * stats.MIN_EFFECT_CPU
    }


def test_a_strategys_declared_floor_is_used(tmp_path, monkeypatch):
    """A case saved with its strategy's min_effect (multicore: 0.20) gets that floor when
    it is above its kind's, whichever run carries it; a smaller one does not lower it."""
    monkeypatch.setattr(comparing, "TOGETHER_MIN_CASES", 10**6)  # every case moves alike here:
    # the common move's own term is tested in test_stats_verdicts
    root = tmp_path / "benchmarks"

    def make(center, min_effect=None):
        def edit(benches):
            for i, bench in enumerate(benches.values()):
                _with_samples(bench, _rounds(center, seed=i))
                bench["extra_info"]["device_kind"] = "cpu"
                if min_effect is not None:
                    bench["extra_info"]["min_effect"] = min_effect

        return edit

    for name, (in_a, in_b) in {"declared": (None, 0.2), "smaller": (0.01, 0.01)}.items():
        _edit_run(RUNS[0], root / name / "0001_a.json", make(1e-3, in_a))
        _edit_run(RUNS[0], root / name / "0002_b.json", make(1.15e-3, in_b))
    declared, smaller = (
        compare(load_history(root / name), "0001", "0002") for name in ("declared", "smaller")
    )
    # a floor of 20% cannot tell whether the CPU case moved by 10% (the change to catch)
    assert set(declared["verdict"]) == {"cannot-tell"}
    assert set(declared["floor_pct"].round(6)) == {20.0}
    assert list(declared["why"]) == [
        f"floor ±20.0% > 10%: {s}'s own floor ±20.0% (its times move between runs): "
        "min-change 20% or more"
        for s in declared["strategy"]
    ]
    at_its_floor = compare(load_history(root / "declared"), "0001", "0002", min_change=0.2)
    assert set(at_its_floor["verdict"]) == {"same"} and not at_its_floor["why"].any()
    assert set(smaller["verdict"]) == {"slower"} and set(smaller["floor_pct"].round(6)) == {
        100 * stats.MIN_EFFECT_CPU
    }
    from nqprof.strategies import get

    assert get("multicore").min_effect == 0.2 and get("serial").min_effect is None


def test_a_host_that_moved_the_cpu_probe_raises_cpu_floors(tmp_path, monkeypatch):
    """Runs on two hosts whose CPU speed probes differ by 30%: a CPU case that moved 40%
    is the same (floor 2 x 30%), a GPU case that moved 40% is slower (the probe is a CPU's)."""
    monkeypatch.setattr(comparing, "TOGETHER_MIN_CASES", 10**6)  # every case moves alike here:
    # the common move's own term is tested in test_stats_verdicts
    root = tmp_path / "benchmarks"

    def make(center, kind, probe):
        def edit(benches):
            for i, bench in enumerate(benches.values()):
                _with_samples(bench, _rounds(center, seed=i))
                bench["extra_info"]["device_kind"] = kind
                bench["extra_info"]["conditions"] = {"cpu": {"probe_s": probe}}

        return edit

    for kind in ("gpu", "cpu"):
        _edit_run(RUNS[0], root / kind / "0001_a.json", make(1e-3, kind, 5e-4))
        _edit_run(RUNS[0], root / kind / "0002_b.json", make(1.4e-3, kind, 6.5e-4))
    gpu, cpu = (compare(load_history(root / kind), "0001", "0002") for kind in ("gpu", "cpu"))
    assert set(gpu["verdict"]) == {"slower"} and set(gpu["floor_pct"].round(6)) == {
        100 * stats.MIN_EFFECT
    }
    # what the host moved is no change of the code, and hides one of 10%: cannot-tell
    assert set(cpu["verdict"]) == {"cannot-tell"} and set(cpu["floor_pct"].round(6)) == {60.0}
    assert all("CPU speed probe" in c for c in cpu["conditions"]) and not any(gpu["conditions"])
    assert all(
        w.startswith("floor ±60.0% > 10%: the host's CPU speed moved +30% between the runs")
        for w in cpu["why"]
    )
    back = compare(load_history(root / "cpu"), "0002", "0001")  # a faster host: the same floor
    assert set(back["verdict"]) == {"cannot-tell"} and set(back["floor_pct"].round(6)) == {
        round(200 * (5 / 6.5 - 1) * -1, 6)
    }


def test_rounds_in_two_modes_raise_the_floor():
    """A median that can jump between two modes (a CPU pool's thread start-up) is no
    evidence of a change: half the relative IQR is in the floor."""
    bimodal = [1.0, 3.0] * 20
    assert stats.relative_iqr(bimodal) == pytest.approx(2.0 / 2.0)
    d = stats.decide(bimodal, [1.3, 3.3] * 20)
    assert d.floor == pytest.approx(0.5) and d.verdict == "cannot-tell"
    assert d.terms["spread"] == pytest.approx(0.5)
    assert stats.relative_iqr([1.0, 2.0, 3.0]) == 0.0 and stats.drift([1.0] * 7) == 0.0


def _with_samples(bench, times, wall=None):
    bench["extra_info"]["samples_compute"] = list(times)
    bench["extra_info"]["samples_wall"] = list(wall or [t * 1.5 for t in times])


def test_compare_two_saved_runs(tmp_path, capsys):
    root = tmp_path / "benchmarks"

    def baseline(benches):
        for i, bench in enumerate(benches.values()):
            _with_samples(bench, _rounds(1e-3, seed=i))

    def changes(benches):
        for i, bench in enumerate(benches.values()):
            _with_samples(bench, _rounds(1e-3, seed=100 + i))
        _with_samples(benches["serial", 8], _rounds(1.5e-3, seed=7))  # slower
        _with_samples(benches["serial", 9], _rounds(0.5e-3, seed=8))  # faster
        _with_samples(
            benches["serial", 10], _rounds(1e-3, seed=9)[:1]
        )  # one round: too few to tell
        benches["multicore", 9]["extra_info"]["source_hash"] = "edited"
        benches["multicore", 8]["extra_info"]["params"]["depth"] = 7  # a default moved
        benches["multicore", 8]["extra_info"]["params"]["grain"] = 3  # a parameter nqprof gained
        del benches["multicore", 10]["extra_info"]["strategy"]  # not an nqprof benchmark any more

    a = _edit_run(RUNS[0], root / "machine" / "0001_a.json", baseline)
    b = _edit_run(RUNS[0], root / "machine" / "0002_b.json", changes)
    df = load_history(root)
    result = compare(df, "0001", "0002").set_index(["strategy", "n"])
    assert result.loc[("serial", 8), "verdict"] == "slower"
    assert result.loc[("serial", 8), "change_pct"] == pytest.approx(50.0, abs=2)
    assert result.loc[("serial", 9), "verdict"] == "faster"
    assert result.loc[("serial", 10), "verdict"] == "too-few-rounds"
    assert result.loc[("multicore", 8), "verdict"] == "same"
    assert result.loc[("multicore", 8), "changed"] == "depth 4 -> 7"  # grain is new, not a change
    assert (
        result.loc[("multicore", 9), "verdict"] == "same"
        and result.loc[("multicore", 9), "changed"] == "source"
    )
    assert result.loc[("multicore", 10), "verdict"] == "only-a"
    # the reverse direction swaps faster and slower
    back = compare(df, "0002", "0001").set_index(["strategy", "n"])
    assert (back.loc[("serial", 8), "verdict"], back.loc[("serial", 9), "verdict"]) == (
        "faster",
        "slower",
    )
    # the wall metric reads the round trips
    wall = compare(df, "0001", "0002", "wall").set_index(["strategy", "n"])
    assert wall.loc[("serial", 8), "median_b"] == pytest.approx(
        1.5 * result.loc[("serial", 8), "median_b"]
    )
    assert compare(df, "0001", "0002", "gpu").equals(compare(df, "0001", "0002"))  # the older name

    assert main(["compare", "--storage", str(root)]) == 0  # the last two runs
    out = capsys.readouterr().out
    assert f"A: {a.relative_to(root).with_suffix('').as_posix()}" in out
    assert f"B: {b.relative_to(root).with_suffix('').as_posix()}" in out
    assert re.search(r"serial\s+8\s+\S+ ms\s+\S+ ms\s+\+\d+\.\d%\s+±10\.0%\s+<1e-4\s+slower", out)
    assert (
        "2 same, 1 faster, 1 slower, 1 too-few-rounds, 1 only-a; 1 changed-params, 1 changed-source"
        in out
    )

    # a CI gate: --fail-on exits 1 when a benchmark gets one of the named verdicts or changes
    assert main(["compare", "--storage", str(root), "--fail-on", "slower"]) == 1
    assert "nqprof: compare failed: 1 slower (--fail-on slower)" in capsys.readouterr().err
    assert main(["compare", "--storage", str(root), "--fail-on", "slower,changed-source"]) == 1
    assert "1 slower, 1 changed-source" in capsys.readouterr().err
    assert main(["compare", "--storage", str(root), "--fail-on", "changed-params"]) == 1
    assert (
        main(["compare", "0001", "0001", "--storage", str(root), "--fail-on", "slower,faster"]) == 0
    )
    with pytest.raises(SystemExit):
        main(["compare", "--storage", str(root), "--fail-on", "worse"])


def test_cases_keep_their_identity_when_parameters_are_added():
    """The published H200 runs: the second gained parameters (launch=, timeline=, chunk=,
    config=) in every CDP record; every (strategy, N) both have is compared."""
    published = Path(__file__).parent.parent / "docs" / "results" / "benchmarks"
    df = load_history(published)
    result = compare(df, "h200-cuda13.0-0001", "h200-cuda13.0-0002")
    both = result[~result["verdict"].isin(["only-a", "only-b"])]
    a = {(r["strategy"], r["n"]) for r in df[df["run"].str.endswith("0001")].to_dict("records")}
    b = {(r["strategy"], r["n"]) for r in df[df["run"].str.endswith("0002")].to_dict("records")}
    assert set(zip(both["strategy"], both["n"], strict=True)) == a & b
    assert len(a & b) > 50


def test_compare_the_committed_runs(capsys):
    df = load_history(STORAGE)
    result = compare(df, "0001", "0002")
    assert sorted(zip(result["strategy"], result["n"], strict=True)) == sorted(CASES)
    # CPU runs of a few rounds on a busy machine: their floors (13 to 2597%) are wider than
    # the 10% a CPU comparison must catch, so none is the same
    assert set(result["verdict"]) == {"cannot-tell"}
    assert (result["floor_pct"] > 10).all() and result["why"].str.startswith("floor ±").all()
    assert result["change_pct"].to_numpy() == pytest.approx(
        100 * (result["median_b"] / result["median_a"] - 1).to_numpy()
    )
    assert main(["compare", "0001", "0002", "--storage", str(STORAGE)]) == 0
    assert main(["compare", "0001", "--storage", str(STORAGE)]) == 2
    assert "compare takes two runs or none" in capsys.readouterr().err


def test_compare_warns_when_the_gpu_differs(storage, capsys):
    root, first = storage
    data = json.loads(first.read_text())
    data["machine_info"]["nqprof"].update(gpu="NVIDIA H200", cuda_toolkit="13.0")
    data["datetime"] = "2100-01-01T00:00:00+00:00"
    first.with_name("0003_gpu.json").write_text(json.dumps(data))
    assert main(["compare", "--storage", str(root)]) == 0
    err = capsys.readouterr().err
    assert "nqprof: warning: the runs differ in gpu: None -> 'NVIDIA H200'" in err


# -- the commands -----------------------------------------------------------------------------


def test_history_command_lists_rows_and_writes_csv(tmp_path, capsys):
    assert main(["history", str(STORAGE)]) == 0
    out = capsys.readouterr().out
    assert "2 runs, 12 benchmarks" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(("0001 ", "0002 "))]
    assert len(rows) == 12 and {r[1] for r in rows} == {"serial", "multicore"}

    csv = tmp_path / "history.csv"
    assert main(["history", str(STORAGE), "--csv", str(csv)]) == 0
    table = pd.read_csv(csv)
    assert len(table) == 12 and "extra.count" in table and "param.depth" in table
    assert all(isinstance(json.loads(cell), list) for cell in table["extra.wall_times"])


@pytest.mark.slow
def test_plot_writes_png_figures(tmp_path, capsys):
    out_dir = tmp_path / "figures"
    assert main(["plot", "--storage", str(STORAGE), "-o", str(out_dir)]) == 0
    written = capsys.readouterr().out.split()
    figures = [out_dir / "time_vs_n.png", out_dir / "speedup_over_serial.png"]
    assert [str(f) for f in figures] == [w for w in written if w.endswith(".png")]
    for figure in figures:
        data = figure.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


@pytest.mark.slow
def test_plot_lines_are_strategy_and_parameters(storage):
    root, first = storage

    def other_depth(benches):
        benches["multicore", 9]["extra_info"]["params"]["depth"] = 2

    _edit_run(first, first.with_name("0003_depth.json"), other_depth)
    df = load_history(root)
    part = history.latest_cases(df, ["0003"])
    # depth differs only between N (a default that depends on N): one line per strategy
    assert sorted(figures._lines(part)) == ["multicore", "serial"]
    # a swept parameter (two depths at the same N) splits the strategy into lines
    swept = pd.concat(
        [
            part,
            part[part["strategy"] == "multicore"].assign(**{"param.depth": 7, "params": "depth=7"}),
        ]
    )
    lines = figures._lines(swept)
    assert sorted(lines) == [
        "multicore (depth=2)",
        "multicore (depth=4)",
        "multicore (depth=7)",
        "serial",
    ]
    assert list(lines["multicore (depth=7)"]["n"]) == sorted(
        part[part["strategy"] == "multicore"]["n"]
    )
    assert figures.history_figures(df, root / "figures", ["0003"])[0].stat().st_size > 10_000


def test_history_shows_a_rate_column_where_runs_recorded_their_work(storage, capsys):
    """--rate nodes adds nodes a second beside the times, as each run recorded it; runs
    saved before records stated their work show '-'."""
    root, first = storage

    def work(by):
        by[("multicore", 9)]["extra_info"]["work"] = {
            "solutions_per_s": 3.5e6,
            "nodes": 2_000_000,
            "nodes_per_s": 2.5e9,
        }

    _edit_run(first, first, work)
    assert main(["history", str(root), "--rate", "nodes"]) == 0
    out = capsys.readouterr().out
    header = next(line.split() for line in out.splitlines() if line.split()[:1] == ["run"])
    assert header.index("nodes/s") == header.index("wall") + 1
    rows = [line for line in out.splitlines() if " multicore " in f" {line} "]
    assert len(rows) == 6 and sum("2.5 G" in row for row in rows) == 1
    assert sum(row.split()[-4] == "-" for row in rows) == 5  # recorded before: no rate
    assert "nodes/s: over the compute median" in out
    assert main(["history", str(root), "--rate", "solutions"]) == 0
    assert "3.5 M" in capsys.readouterr().out
    assert main(["history", str(root)]) == 0
    assert "/s" not in capsys.readouterr().out.split("\n\n")[1]


def test_compare_shows_both_runs_rates_where_they_recorded_their_work(storage, capsys):
    """compare --rate nodes: A's and B's nodes a second, each the nodes the run recorded over
    its own median; '-' where a run recorded none; the instruction metric has no rate."""
    from nqprof.analysis.comparing import compare
    from nqprof.analysis.history import load_history

    root, first = storage
    second = root / RUNS[1].relative_to(STORAGE)

    def work(nodes):
        def edit(by):
            by[("multicore", 9)]["extra_info"]["work"] = {"nodes": nodes}

        return edit

    _edit_run(first, first, work(1_000_000))
    _edit_run(second, second, work(1_000_000))
    result = compare(load_history(root), "0001", "0002")
    row = result[(result["strategy"] == "multicore") & (result["n"] == 9)].iloc[0]
    assert row["rate_nodes_a"] == pytest.approx(1_000_000 / row["median_a"])
    assert row["rate_nodes_b"] == pytest.approx(1_000_000 / row["median_b"])
    assert row["rate_solutions_a"] == pytest.approx(352 / row["median_a"])
    other = result[(result["strategy"] == "serial") & (result["n"] == 9)].iloc[0]
    assert pd.isna(other["rate_nodes_a"]) and other["rate_solutions_b"] > 0
    assert main(["compare", "--storage", str(root), "--rate", "nodes"]) == 0
    out = capsys.readouterr().out
    header = next(line.split() for line in out.splitlines() if line.split()[:1] == ["strategy"])
    assert header[header.index("B") + 1 : header.index("B") + 5] == ["A", "nodes/s", "B", "nodes/s"]
    from nqprof.result import rate_text

    (line,) = [x for x in out.splitlines() if x.split()[:2] == ["multicore", "9"]]
    assert rate_text(row["rate_nodes_a"]) in line and rate_text(row["rate_nodes_b"]) in line
    (plain,) = [x for x in out.splitlines() if x.split()[:2] == ["serial", "9"]]
    assert plain.count(" - ") >= 2  # no nodes recorded
