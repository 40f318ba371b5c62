"""tools/nvbench_compare.py reads NVBench's JSON as NVBench writes it (the GPU run is on an
H200 host; this checks the reading and the case list here)."""

import json

import pytest


@pytest.fixture
def tool(load_tool):
    return load_tool("nvbench_compare")


def _summary(tag, value, kind="float64"):
    return {"tag": tag, "name": tag, "data": [{"name": "value", "type": kind, "value": str(value)}]}


def test_reads_the_median_per_case(tool, tmp_path):
    states = [
        {
            "axis_values": [{"name": "case", "type": "string", "value": "fast/12"}],
            "summaries": [
                _summary("nv/cold/time/gpu/mean", 2e-5),
                _summary("nv/cold/time/gpu/median", 1.9e-5),
                _summary("nv/cold/sample_size", 812, "int64"),
                _summary("nv/cold/time/gpu/stdev/relative", 0.004),
            ],
        },
        {  # an older NVBench without the median: the mean, said so
            "axis_values": [{"name": "case", "type": "string", "value": "cdp-bp/10"}],
            "summaries": [_summary("nv/cold/time/gpu/mean", 3e-4)],
        },
        {
            "axis_values": [{"name": "case", "type": "string", "value": "feinbube/16"}],
            "is_skipped": True,
            "skip_reason": "timed out",
            "summaries": [],
        },
    ]
    path = tmp_path / "nvbench.json"
    path.write_text(json.dumps({"benchmarks": [{"name": "nqprof_case", "states": states}]}))
    got = tool.read_nvbench(path)
    assert got["fast/12"]["seconds"] == pytest.approx(1.9e-5)
    assert got["fast/12"]["statistic"] == "median" and got["fast/12"]["samples"] == 812
    assert got["cdp-bp/10"]["seconds"] == pytest.approx(3e-4)
    assert got["cdp-bp/10"]["statistic"] == "mean"
    assert got["feinbube/16"]["seconds"] is None and got["feinbube/16"]["skipped"]


def test_cases(tool):
    assert tool.parse_cases("feinbube,fast", "10:12") == [
        ("feinbube", 10),
        ("feinbube", 11),
        ("feinbube", 12),
        ("fast", 10),
        ("fast", 11),
        ("fast", 12),
    ]


def test_every_case_gets_its_own_nvbench_time(tool):
    """Each case is matched with NVBench's reading of that case (a first run matched every
    case after the first with nothing)."""
    cases = [("fast", 12), ("fast", 13), ("cdp-bp", 12)]
    results = {f"{s}/{n}": {"nqprof": {"seconds": 1e-5 * (i + 1), "rounds": 20}}
               for i, (s, n) in enumerate(cases)}  # fmt: skip
    nvbench = {f"{s}/{n}": {"seconds": 1.1e-5 * (i + 1), "samples": 800, "noise": 0.004}
               for i, (s, n) in enumerate(cases)}  # fmt: skip
    calls = {key: {"calls": 801, "regions": 801, "wrong": []} for key in nvbench}
    failed = []
    rows = tool.combine(cases, results, calls, nvbench, failed)
    assert failed == []
    assert [row[8] for row in rows] == ["1.100", "1.100", "1.100"]
    assert [row[-1] for row in rows] == ["-", "-", "-"]  # no cold rounds measured
    assert [results[k]["ratio"] for k in nvbench] == pytest.approx([1.1, 1.1, 1.1])
    # a case NVBench did not time, or whose rounds counted wrong, is named
    del nvbench["fast/13"]
    calls["cdp-bp/12"]["wrong"] = [3]
    failed = []
    tool.combine(cases, results, calls, nvbench, failed)
    assert failed == [
        "fast/13: no NVBench time (missing)",
        "cdp-bp/12: NVBench's rounds counted [3] (expected the known count)",
    ]


def test_the_cold_rounds_get_their_own_ratio(tool):
    """nqprof's timer in the NVBench child, as it times and after an L2 flush, is set beside
    NVBench's cold median: columns of their own, the cold one's ratio, and a wrong count in
    those rounds fails the case."""
    cases = [("fast", 12), ("fast", 13)]
    results = {f"{s}/{n}": {"nqprof": {"seconds": 1e-5, "rounds": 20}} for s, n in cases}
    nvbench = {f"{s}/{n}": {"seconds": 2e-5, "samples": 800, "noise": 0.004} for s, n in cases}
    calls = {key: {"calls": 9, "regions": 9, "wrong": []} for key in nvbench}
    calls["fast/12"]["cold"] = {"seconds": 1.6e-5, "wrong": []}
    calls["fast/12"]["warm"] = {"seconds": 1.1e-5, "wrong": []}
    calls["fast/13"]["cold"] = {"seconds": 2e-5, "wrong": [7]}
    failed = []
    rows = tool.combine(cases, results, calls, nvbench, failed)
    assert [row[8] for row in rows] == ["2.000", "2.000"]
    assert [row[-1] for row in rows] == ["1.250", "1.000"]
    assert [row[-3] for row in rows] == ["11.0 us", "-"]
    assert results["fast/12"]["cold_ratio"] == pytest.approx(1.25)
    assert failed == [
        "fast/13: nqprof's cold rounds in the NVBench child counted [7] (expected the known count)"
    ]
