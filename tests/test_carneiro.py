"""Carneiro et al.'s Table 2 on the CPU: the N ranges, serial times from a benchmark history
(and where each came from), the table builder from recorded outcomes, the figure, and the
command's errors."""

import json

import pytest

from nqprof.cli import main
from nqprof.errors import InputError
from nqprof.papers import carneiro
from nqprof.papers.measure import Outcome
from nqprof.strategies import get

HISTORY = "docs/results/benchmarks/h200-cuda13.0-0001.json"


def test_ranges():
    assert [r.ns() for r in carneiro.parse_ranges("10-12, 13-15,16")] == [
        [10, 11, 12],
        [13, 14, 15],
        [16],
    ]
    for bad in ("12-10", "a-b", "", "10-40"):
        with pytest.raises(InputError, match="--ranges"):
            carneiro.parse_ranges(bad)


def test_every_implementation_is_a_registered_strategy():
    assert set(carneiro.TABLE2_STRATEGIES) == set(carneiro.PAPER_TABLE2)
    for name in carneiro.TABLE2_STRATEGIES.values():
        get(name)


def test_serial_from_history(tmp_path):
    got = carneiro.serial_from_history(HISTORY, range(10, 19))
    assert sorted(got) == [10, 11, 12, 13, 14, 15, 16]  # the published run stops at 16
    assert (
        got[16].seconds == pytest.approx(2.7965, rel=1e-3)
        and "h200-cuda13.0-0001.json" in got[16].source
    )
    # the newest run wins; a folder is searched
    data = json.loads(open(HISTORY).read())
    data["datetime"] = "2030-01-01T00:00:00"
    for b in data["benchmarks"]:
        b["extra_info"]["wall_s"] = 1.0
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "newer.json").write_text(json.dumps(data))
    (tmp_path / "m" / "older.json").write_text(open(HISTORY).read())
    assert carneiro.serial_from_history(tmp_path, [16])[16].seconds == 1.0
    with pytest.raises(InputError, match="no benchmark history"):
        carneiro.serial_from_history(tmp_path / "none", [16])
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(InputError, match="not a pytest-benchmark JSON file"):
        carneiro.serial_from_history(tmp_path / "bad.json", [16])


def test_the_published_history_has_every_serial_time_of_table2():
    """The published Table 2 (docs/results/carneiro-table2-h200.md) took all its serial times from
    docs/results/benchmarks: N<=16 from the newest suite run, N=17 and 18 from their own run."""
    got = carneiro.serial_from_history("docs/results/benchmarks", range(10, 19))
    assert sorted(got) == list(range(10, 19))
    assert all("h200-cuda13.0-0002.json" in got[n].source for n in range(10, 17))
    assert all("serial-17-18.json" in got[n].source for n in (17, 18))
    assert (
        20 < got[17].seconds < 40 and 150 < got[18].seconds < 300
    )  # 27.9 s and 203.0 s as published
    ranges = carneiro.parse_ranges("10-12,13-15,16-18")
    assert not [r for r in carneiro.table2_runs(ranges, serial_known=got) if r[0] == "serial"]


def test_runs_skip_serial_from_the_history():
    ranges = carneiro.parse_ranges("10-11,16-17")
    runs = carneiro.table2_runs(ranges, serial_known=[10, 11, 16])
    assert [r for r in runs if r[0] == "serial"] == [("serial", 17, {})]
    assert len(runs) == 1 + 6 * 4


def ok(strategy, n, seconds):
    return Outcome(strategy, n, {}, seconds=seconds)


def test_table2_builder():
    ranges = carneiro.parse_ranges("10-11,16-17")
    history = {
        10: carneiro.SerialTime(1.0, "history x.json"),
        16: carneiro.SerialTime(100.0, "history x.json"),
    }
    outcomes = [
        ok("serial", 11, 4.0),
        ok("serial", 17, 800.0),
        ok("dp2", 10, 0.5),
        ok("dp2", 11, 1.0),
        ok("dp2", 16, 10.0),
        ok("dp2", 17, 40.0),
        ok("bp-dfs", 10, 0.1),
        Outcome("bp-dfs", 11, {}, error="device failure", detail="boom"),
        ok("multicore", 16, 5.0),
    ]
    header, rows, notes = carneiro.table2(outcomes, ranges, history)
    assert header == [
        "implementation",
        "strategy",
        "paper 10-12",
        "here 10-11",
        "paper 13-15",
        "here 16-17",
        "paper all",
        "here all",
    ]
    by = {r[1]: r for r in rows}
    assert by["dp2"] == [
        "DP2",
        "dp2",
        "1.30",
        "3.00",
        "3.26",
        "15.00",
        "2.99",
        "9.00",
    ]  # (2+4)/2, (10+20)/2
    assert by["bp-dfs"][3] == "10.00 [1]" and by["bp-dfs"][5] == "-"
    assert by["multicore"][5] == "20.00" and by["cdp-bp"][3] == "-"
    assert "serial N=10,16: history x.json" in notes and "serial N=11,17: measured here" in notes
    assert any("N-Queens only" in line for line in notes)
    assert notes[-1] == "[1] bp-dfs N=11: device failure: boom"


def test_table2_says_which_serial_times_are_missing():
    _, rows, notes = carneiro.table2([ok("dp2", 12, 1.0)], carneiro.parse_ranges("12-12"), {})
    assert rows[0][3] == "-" and "serial N=12: no time" in " ".join(notes)


@pytest.mark.slow
def test_speedup_figure(tmp_path):
    pytest.importorskip("matplotlib")
    from nqprof.analysis.figures import speedup_vs_n

    series = carneiro.speedup_series(
        [ok("serial", 10, 2.0), ok("cdp-bp", 10, 1.0), ok("cdp-bp", 11, 1.0)]
    )
    assert series == {"cdp-bp": [(10, 2.0)]}
    path = speedup_vs_n(series, str(tmp_path / "s.png"))
    assert (tmp_path / "s.png").stat().st_size > 1000 and path.endswith("s.png")


def test_report_lists_table2_as_available(capsys):
    assert main(["report", "carneiro"]) == 0
    assert "available: nqprof report carneiro table2" in capsys.readouterr().out


def test_report_table2_needs_a_gpu(monkeypatch, capsys):
    monkeypatch.setattr("nqprof.cuda.device.gpu_available", lambda: (False, "no GPU here"))
    assert main(["report", "carneiro", "table2", "--history", HISTORY]) == 2
    assert "no GPU on this machine" in capsys.readouterr().err
