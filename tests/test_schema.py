"""The record's schema version (nqprof.result.SCHEMA_VERSION) and the one reader that takes an
older saved record up to it (nqprof.analysis.history.upgraded)."""

import json

import pytest

from nqprof.analysis.history import samples, upgraded
from nqprof.errors import InputError
from nqprof.result import SCHEMA_VERSION, Measurement, RunRecord


def _bench(extra, **more):
    return {"name": "test_nqueens[fast-N8]", "extra_info": extra, "stats": {}, **more}


def test_a_record_is_written_with_the_schema_version():
    ms = [Measurement(count=92, wall_s=1e-3, gpu_s=5e-4) for _ in range(3)]
    record = RunRecord.from_measurements("fake", 8, {}, 92, ms, {})
    assert SCHEMA_VERSION == 2 and json.loads(record.to_json())["schema"] == SCHEMA_VERSION


def test_a_current_record_reads_as_written():
    extra = {"schema": 2, "samples_compute": [1.0, 2.0], "case": {"given": {"depth": 3}}}
    assert upgraded(_bench(extra)) == extra


def test_a_schema_1_record_is_taken_up():
    """nqprof 0.1's GPU record: the rounds as gpu_times, the parameters the fixture's."""
    bench = _bench(
        {"strategy": "fast", "gpu_times": [3.0, 4.0], "wall_times": [9.0], "params": {"d": 5}},
        params={"nqbench": {"params": {"d": 4}}},
    )
    got = upgraded(bench)
    assert got["schema"] == 2 and got["samples_compute"] == [3.0, 4.0]
    assert got["case"] == {"given": {"d": 4}}
    assert samples(bench)["compute"] == [3.0, 4.0] and samples(bench)["wall"] is None
    # a CPU record of then: wall_times its rounds; the host clock's kept data its wall times
    cpu = _bench(
        {"strategy": "serial", "wall_times": [7.0], "params": {}},
        options={"timer": "time.perf_counter"},
        stats={"data": [8.0, 9.0]},
    )
    assert samples(cpu) == {"compute": [7.0], "wall": [8.0, 9.0], "instructions": [7.0]}
    assert bench["extra_info"].get("schema") is None  # the saved record is left as it was


def test_a_newer_record_is_refused_with_one_line():
    with pytest.raises(InputError, match="record schema 3 .* reads up to 2"):
        upgraded(_bench({"schema": SCHEMA_VERSION + 1}))


def test_a_benchmark_of_another_plugin_keeps_pytest_benchmark_s_own_rounds():
    """A benchmark without nqprof's record: its wall times are pytest-benchmark's kept data
    where its clock was the host's, and it gains no record fields."""
    plain = _bench({}, options={"timer": "time.perf_counter"}, stats={"data": [1.0, 2.0]})
    assert upgraded(plain) == {"samples_wall": [1.0, 2.0]}
    assert samples(plain) == {"compute": None, "wall": [1.0, 2.0], "instructions": None}
    assert upgraded(_bench({}, stats={})) == {}
